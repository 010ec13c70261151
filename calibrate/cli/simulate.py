"""``calibrate simulate``: write a synthetic export with known ground truth."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer

from calibrate.cli.app import app, err, handle_errors
from calibrate.cli.render import echo_json
from calibrate.errors import UsageError
from calibrate.lazy import lazy_module

simulation = lazy_module("calibrate.simulate")
enforcement = lazy_module("calibrate.simulate_enforced")


@app.command("simulate")
@handle_errors
def simulate_command(
    out: Annotated[
        Path, typer.Option("--out", help="Folder to write the export into.", file_okay=False)
    ],
    runs: Annotated[int, typer.Option("--runs", min=1, help="Number of runs.")] = 2000,
    seed: Annotated[
        int, typer.Option("--seed", min=0, help="Random seed; same seed, same files.")
    ] = 0,
    enforce_weeks: Annotated[
        int,
        typer.Option(
            "--enforce-weeks",
            min=0,
            help="Continue invoice-matching this many weeks with advisory: false (check-1 §3).",
        ),
    ] = 0,
    shift_week: Annotated[
        float | None,
        typer.Option(
            "--shift-week", min=0, help="Weeks after the switch at which the evaluator shifts."
        ),
    ] = None,
    shift: Annotated[
        float,
        typer.Option(
            "--shift",
            min=0,
            max=1,
            help="From --shift-week, the share of bad work the evaluator takes for acceptable.",
        ),
    ] = 0.5,
    start: Annotated[
        datetime | None,
        typer.Option(
            "--start",
            formats=["%Y-%m-%d"],
            help="First day of the advisory window (UTC). Default 2026-08-03, so that the same "
            "arguments give the same files on any day.",
            show_default=False,
        ),
    ] = None,
    review: Annotated[
        Path | None,
        typer.Option(
            "--review",
            exists=True,
            dir_okay=False,
            help="Instead of simulating: fill this audit CSV's decisions from OUT/.truth.",
        ),
    ] = None,
) -> None:
    """Write run documents, a decision CSV, process files and limits from a known generative model.

    The ground truth (true acceptability per submission) goes to OUT/.truth/,
    which `calibrate ingest` never reads. With --enforce-weeks the step then
    runs enforced (a pass completes, a fail goes back to the agent, an unsure
    verdict is escalated), optionally with a shift at --shift-week; with
    --review, the simulated audit reviewer fills a CSV from `calibrate audit
    draw` and writes OUT/reviewed-<name>.csv.
    """
    if review is not None:
        truth = out / ".truth"
        if not (truth / "truth.csv").exists():
            raise UsageError(f"no ground truth in {truth}: simulate into {out} first")
        result = enforcement.review_audit(review, truth, out / f"reviewed-{review.name}", seed=seed)
        if not result["reviewed"]:
            raise UsageError(
                f"none of the {result['not_found']} drawn checks of {review} is in {truth}: "
                "review a draw from a store of this export"
            )
        if result["not_found"]:
            err.print(
                f"warning: {result['not_found']} drawn checks have no ground truth in {truth}: "
                "left blank", markup=False, soft_wrap=True,
            )  # fmt: skip
        echo_json(result)
        return
    if shift_week is not None and shift_week >= enforce_weeks:
        raise UsageError(
            f"--shift-week {shift_week:g} falls outside the enforced weeks "
            f"(--enforce-weeks {enforce_weeks}): the shift happens after the switch"
        )
    manifest = simulation.simulate(
        out, runs=runs, seed=seed, enforce_weeks=enforce_weeks, shift_week=shift_week,
        shift=shift if shift_week is not None else 0.0,
        start=start.replace(tzinfo=UTC) if start is not None else None,
    )  # fmt: skip
    begin, end = (datetime.fromisoformat(manifest["period"][k].replace("Z", "+00:00"))
                  for k in ("from", "to"))  # fmt: skip
    if end > datetime.now(UTC):
        # Checks dated after the store is read are flagged by every analysis (at_in_future).
        weeks = math.ceil((end - datetime.now(UTC)) / timedelta(weeks=1))
        earlier = begin - timedelta(weeks=weeks)
        err.print(
            f"warning: the simulated records run to {end:%Y-%m-%d}, after today; "
            f"`--start {earlier:%Y-%m-%d}` ends them by today",
            markup=False, soft_wrap=True,
        )  # fmt: skip
    echo_json(manifest)
