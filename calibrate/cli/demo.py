"""``calibrate demo``: ingest the bundled sample and run the main job."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from calibrate.cli.app import app, err, handle_errors
from calibrate.cli.options import DbOption
from calibrate.lazy import lazy_module

demo_job = lazy_module("calibrate.demo")


@app.command("demo")
@handle_errors
def demo_command(
    db: DbOption = None,
    sample: Annotated[
        Path | None,
        typer.Option("--sample", help="Sample export folder. Default: the bundled data/sample."),
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Where the report goes.")] = Path("reports"),
) -> None:
    """Ingest the bundled sample into the store and write the report."""
    lines = demo_job.run_demo(
        db=db, sample=sample, out=out, log=lambda msg: err.print(msg, markup=False)
    )
    for line in lines:
        typer.echo(line)
