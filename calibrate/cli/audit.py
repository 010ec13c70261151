"""``calibrate audit draw``: a stored random sample of enforced checks for a person to review."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from calibrate.cli.app import app, err, handle_errors
from calibrate.cli.options import DbOption
from calibrate.cli.render import echo_json
from calibrate.lazy import lazy_module
from calibrate.store import connect

audits = lazy_module("calibrate.audit")

audit_app = typer.Typer(
    help="Audit the check after the switch: random draws of enforced checks for a person.",
    no_args_is_help=True,
)
app.add_typer(audit_app, name="audit")


@audit_app.command("draw")
@handle_errors
def draw_command(
    process: Annotated[str, typer.Option("--process", help="The enforced process.")],
    step: Annotated[str, typer.Option("--step", help="Its checked step.")],
    out: Annotated[
        Path, typer.Option("--out", help="CSV to write the drawn checks to.", dir_okay=False)
    ],
    rate: Annotated[
        float | None,
        typer.Option("--rate", help="Share of the eligible checks to draw, in (0, 1]."),
    ] = None,
    per_week: Annotated[
        float | None,
        typer.Option("--per-week", help="Instead of --rate: checks per week of the eligible span."),
    ] = None,
    verdicts: Annotated[
        str, typer.Option("--verdicts", help="Verdicts to draw from, comma-separated: pass, fail.")
    ] = "pass",
    by_band: Annotated[
        bool,
        typer.Option(
            "--by-band",
            help="Stratify by answer band: near the threshold 2x, far 0.5x the middle band's rate.",
        ),
    ] = False,
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="Seed of the draw; a fresh one is stored if absent."),
    ] = None,
    db: DbOption = None,
) -> None:
    """Draw enforced checks (advisory: false) that no earlier draw considered, store the draw, write a CSV.

    The CSV is a decision table (run, process, step, attempt, decision, by, at,
    note) with the decisions blank, followed by read-only context (verdict,
    check time, model, answers, draw, time of the draw, inclusion probability). Fill in decision,
    by and at, then `calibrate ingest` the file: decisions on drawn checks are
    audits because the store holds the draw. Prints the draw's design as JSON.
    """
    wanted = tuple(v.strip() for v in verdicts.split(",") if v.strip())
    con = connect(db)
    try:
        result = audits.draw(
            con, process=process, step=step, rate=rate, per_week=per_week, verdicts=wanted,
            by_band=by_band, seed=seed,
        )  # fmt: skip
    finally:
        con.close()
    audits.write_csv(result, out)
    if result.n_eligible == 0:
        err.print("no eligible checks: none recorded with advisory: false that no draw considered")
    echo_json({**result.to_dict(), "out": str(out)})
