"""``calibrate status``: what the store holds."""

from __future__ import annotations

from typing import Annotated

import typer

from calibrate.cli.app import app, handle_errors
from calibrate.cli.options import DbOption, Format, format_option, require_format
from calibrate.cli.render import clip, echo_json, terminal_safe
from calibrate.lazy import lazy_module
from calibrate.store import connect
from calibrate.textsafe import NO_MODEL, shown_name, step_name

consistency = lazy_module("calibrate.consistency")
store_status = lazy_module("calibrate.status")


StatusFormat = format_option(Format.table, Format.json)


@app.command("status")
@handle_errors
def status_command(
    db: DbOption = None,
    fmt: StatusFormat = Format.table,
    quarantine: Annotated[
        bool, typer.Option("--quarantine", help="List quarantined records and their reasons.")
    ] = False,
    flags: Annotated[
        bool, typer.Option("--flags", help="List the flagged records (loaded, but worth a look).")
    ] = False,
    withdrawn: Annotated[
        bool,
        typer.Option(
            "--withdrawn", help="List the checks and decisions newer versions of files withdrew."
        ),
    ] = False,
    limit: Annotated[
        int,
        typer.Option(
            "--limit",
            min=1,
            help="How many records to list (quarantined, withdrawn; flagged per flag).",
        ),
    ] = 50,
) -> None:
    """Counts of runs, checks, answers and decisions, labeled and not, per process, step and model."""
    require_format(fmt, "status", Format.table, Format.json)
    con = connect(db, read_only=True)
    try:
        info = store_status.store_status(con)
        rows = store_status.quarantine_rows(con, limit) if quarantine else []
        gone = store_status.withdrawn_rows(con, limit) if withdrawn else []
        flagged_rows = consistency.flag_rows(con, limit) if flags else []
    finally:
        con.close()
    if fmt is Format.json:
        if quarantine:
            info["quarantine"] = rows
        if withdrawn:
            info["withdrawn_rows"] = gone
        if flags:
            info["flag_rows"] = flagged_rows
        echo_json(info)
        return
    typer.echo(
        f"runs {info['runs']} · checks {info['checks']} ({info['labeled_checks']} labeled, "
        f"{info['unlabeled_checks']} unlabeled) · answers {info['answers']} · decisions {info['decisions']}"
    )
    typer.echo(
        f"conflicts {info['conflicts']} · quarantined {info['quarantined']} · {_files(info)} · "
        f"schema v{info['schema_version']}"
    )
    counts = [_plural(n, kind[:-1]) for kind, n in info["withdrawn"].items() if n]
    if counts:
        typer.echo(f"withdrawn by newer versions of files: {', '.join(counts)}")
    typer.echo("")
    typer.echo(f"{'process / step':<38} {'model':<22} {'checks':>7} {'labeled':>8}")
    for p in info["processes"]:
        name = clip(terminal_safe(step_name(p["process"], p["step"])), 38)
        model = clip(terminal_safe(shown_name(p["model"], NO_MODEL)), 22)
        typer.echo(f"{name:<38} {model:<22} {p['checks']:>7} {p['labeled']:>8}")
    audits = sum(p["labeled_audits"] for p in info["processes"])
    undrawn = sum(p["labeled_after_switch_undrawn"] for p in info["processes"])
    if audits or undrawn:
        typer.echo(
            f"  labeled counts {audits} audit decisions on drawn checks and {undrawn} decisions on "
            "enforced checks no draw drew (escalations): the threshold search reads the reviews "
            "of advisory checks alone, agreement keeps audits apart (--format json: labeled_reviews)"
        )
    flagged = {k: v for k, v in info["flags"].items() if v}
    if flagged:
        typer.echo("\nflags (loaded, but worth a look):")
        for name, count in flagged.items():
            typer.echo(f"  {count:>6}  {consistency.FLAG_DESCRIPTIONS[name]}")
        if not flags:
            typer.echo("  (`calibrate status --flags` lists them)")
    if flags:
        typer.echo("\nflagged records:")
        for r in flagged_rows:
            typer.echo(
                f"  {r['flag']}: {terminal_safe(r['run_id'])} / {terminal_safe(r['step'])} / "
                f"attempt {r['attempt']}: {terminal_safe(r['detail'])}"
            )
    if quarantine:
        # Only records the store quarantined: a file that is no export kind is skipped by
        # ingest (it says so there) and never stored. The list adds up to the count above.
        typer.echo("\nquarantined records:" + ("" if rows else " none"))
        for r in rows:
            where = f"line {r['line_no']}" if r["line_no"] is not None else (r["json_path"] or "")
            typer.echo(f"  {terminal_safe(r['path'])} {where}: {terminal_safe(r['reason'])}")
        if info["quarantined"] > len(rows):
            typer.echo(f"  … and {info['quarantined'] - len(rows)} more (--limit lists more)")
    if withdrawn:
        typer.echo("\nwithdrawn by newer versions of files:")
        for r in gone:
            where = terminal_safe(r["run_id"])
            if r["kind"] != "run":
                where += f" / {terminal_safe(r['step'])} / attempt {r['attempt']}"
            what = {"check": "verdict", "decision": "decision", "run": "run of"}[r["kind"]]
            typer.echo(
                f"  {where}: {what} {terminal_safe(r['what'] or '-')} ({r['reason']}) in {terminal_safe(r['path'])}"
            )


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _files(info: dict) -> str:
    """``files N``: the files ingested, and their versions when a file was ingested again changed."""
    text = f"files {info['files']}"
    if info["file_versions"] != info["files"]:
        text += f" ({info['file_versions']} versions)"
    return text
