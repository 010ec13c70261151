"""``calibrate simulate``: write a synthetic export with known ground truth."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from calibrate.cli.app import app, handle_errors
from calibrate.cli.render import echo_json
from calibrate.lazy import lazy_module

simulation = lazy_module("calibrate.simulate")


@app.command("simulate")
@handle_errors
def simulate_command(
    out: Annotated[
        Path, typer.Option("--out", help="Folder to write the export into.", file_okay=False)
    ],
    runs: Annotated[int, typer.Option("--runs", min=1, help="Number of runs.")] = 2000,
    seed: Annotated[int, typer.Option("--seed", help="Random seed; same seed, same files.")] = 0,
) -> None:
    """Write run documents, a decision CSV, process files and limits from a known generative model.

    The ground truth (true acceptability per submission) goes to OUT/.truth/,
    which `calibrate ingest` never reads.
    """
    manifest = simulation.simulate(out, runs=runs, seed=seed)
    echo_json(manifest)
