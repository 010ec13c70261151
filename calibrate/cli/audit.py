"""``calibrate audit draw``: a stored random sample of enforced checks for a person to review."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from calibrate.cli.app import app, handle_errors
from calibrate.cli.options import DbOption, require_enforced
from calibrate.cli.render import echo_json
from calibrate.errors import UsageError
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
        typer.Option("--seed", min=0, help="Seed of the draw; a fresh one is stored if absent."),
    ] = None,
    show_answers: Annotated[
        bool,
        typer.Option(
            "--show-answers",
            help="Put each check's verdict and answers in the CSV (the review is then not blind).",
        ),
    ] = False,
    db: DbOption = None,
) -> None:
    """Draw enforced checks (advisory: false) that no earlier draw considered, store the draw, write a CSV.

    Only checks of the step's current enforcement period are offered: after a
    return to advisory and a second switch, or under other thresholds, the
    earlier period is history (see `calibrate monitor`).

    The CSV is a decision table (run, process, step, attempt, decision, by, at,
    note) with the decisions blank, followed by read-only context (check time,
    model, draw, time of the draw, inclusion probability). The review is blind:
    the check's verdict and answers are not in it unless --show-answers (a
    reviewer who sees them tends to agree with them). Fill in decision, by and
    at, then `calibrate ingest` the file: decisions on drawn checks are audits
    because the store holds the draw. Prints the draw's design as JSON.

    The draw is stored and the CSV written together, or neither. A draw that
    picks none of its eligible checks (a small rate) is stored too, with a CSV
    of the header alone: its checks count as considered and not drawn, as the
    monitor's weights need, and the next draw offers only newer checks (a
    note on stderr says so). No eligible check: nothing stored, an error,
    exit 2.
    """
    wanted = tuple(v.strip() for v in verdicts.split(",") if v.strip())
    # Before anything: a draw whose CSV cannot be written must not be stored; the design is
    # checked here too, so that its errors name the options rather than the API's arguments.
    audits.check_writable(out)
    audits.check_design(rate=rate, per_week=per_week, verdicts=wanted, cli=True)
    con = connect(db)
    try:
        require_enforced(con, process, step)
        result = audits.draw(
            con, process=process, step=step, rate=rate, per_week=per_week, verdicts=wanted,
            by_band=by_band, seed=seed, out=out, show_answers=show_answers,
        )  # fmt: skip
    finally:
        con.close()
    if result.draw_id is None:
        raise UsageError(
            f"no eligible checks: no {'/'.join(result.verdicts)} check recorded with advisory: "
            "false in the current enforcement period that no earlier draw considered; nothing "
            "stored, no CSV written"
        )
    if result.n_drawn == 0:
        typer.echo(empty_draw_note(result), err=True)
    echo_json({**result.to_dict(), "out": str(out)})


def empty_draw_note(result: audits.Draw) -> str:
    """What a stored draw that picked none of its eligible checks means."""
    return (
        f"the draw picked none of the {result.n_eligible} eligible checks (rate {result.rate:g}, "
        f"{result.rate * result.n_eligible:.2g} expected): stored as draw {result.draw_id}, the "
        "checks considered and not drawn (each enters the monitor's stream as an undrawn "
        "check, z = 0, as sampling with the stored probability needs), the CSV holds no rows; "
        "the next draw offers only checks recorded since"
    )
