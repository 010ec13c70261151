"""``calibrate ingest``: load exports into the store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn
from typer.core import TyperCommand

from calibrate.cli.app import app, err, handle_errors
from calibrate.cli.options import DbOption, Format, format_option, require_format
from calibrate.cli.render import echo_json, terminal_safe
from calibrate.errors import UsageError
from calibrate.ingest import (
    DEFAULT_MAX_LINE_BYTES,
    IngestReport,
    discover,
    ingest,
    skipped_result,
)
from calibrate.store import DEFAULT_WAIT_SECONDS, connect, default_path

PROGRESS_MIN_BYTES = 8 * 1024 * 1024


def _counts(
    read: int, loaded: int, new: int, quarantined: int, withdrawn: int, pending: int = 0
) -> str:
    text = f"read {read}, loaded {loaded} ({new} new), quarantined {quarantined}"
    text += f", pending {pending}" if pending else ""
    return text + (f", withdrawn {withdrawn}" if withdrawn else "")


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


IngestFormat = format_option(Format.table, Format.json)


class _IngestCommand(TyperCommand):
    """``ingest`` with its usage line as the other commands' read: ``PATH...``, not ``{paths}...``."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [self.options_metavar, "PATH..."]


@app.command("ingest", cls=_IngestCommand)
@handle_errors
def ingest_command(
    ctx: typer.Context,
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Export files or folders (walked recursively).",
            metavar="PATH...",
            show_default=False,
        ),
    ],
    db: DbOption = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 1 if any record was quarantined.")
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar and no per-file lines.")
    ] = False,
    fmt: IngestFormat = Format.table,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            hidden=True,
            help="The same as --format json (older name); not with another --format.",
        ),
    ] = False,
    max_line_bytes: Annotated[
        int,
        typer.Option(
            "--max-line-bytes",
            min=1024,
            help="Quarantine lines longer than this without reading them whole (at least 1024).",
        ),
    ] = DEFAULT_MAX_LINE_BYTES,
    wait: Annotated[
        float,
        typer.Option("--wait", min=0, help="Seconds to wait while another process uses the store."),
    ] = DEFAULT_WAIT_SECONDS,
) -> None:
    """Load run documents, verdict lines, decision tables, process files and limits into the store.

    Every record is loaded or quarantined with a reason, or is pending (a
    decision table's row whose decision is blank: not decided yet); per file
    the command prints read = loaded + quarantined + pending. Re-ingesting a
    file changes nothing; ingesting it again once filled in loads its rows.

    --format json prints files (one entry per file: path, kind, status, the
    counts), skipped (each file that is no export kind, with path and reason:
    nothing read or stored) and totals (the sums of the counts, and skipped,
    the number of files skipped).
    """
    require_format(fmt, "ingest", Format.table, Format.json)
    given = getattr(ctx.get_parameter_source("fmt"), "name", "DEFAULT") != "DEFAULT"
    if as_json and fmt is not Format.json and given:
        # Two forms asked for in one call: which is meant cannot be told (exit 2, as any usage error).
        raise UsageError(f"--json is --format json: it cannot go with --format {fmt.value}")
    as_json = as_json or fmt is Format.json
    # A path that does not exist is an error before the store is touched, and a store that
    # does not exist yet is created only when there is something to load into it.
    sources = discover(list(paths))
    target = db if db is not None else default_path()
    if all(src.kind == "skipped" for src in sources) and not target.exists():
        _print(IngestReport([skipped_result(src) for src in sources]), as_json, quiet)
        if not quiet and not as_json:
            err.print(f"nothing to load: no store created at {terminal_safe(target)}", markup=False)
        return
    con = connect(db, wait=wait)
    try:
        with Progress(
            "[progress.description]{task.description}", BarColumn(), DownloadColumn(), TimeRemainingColumn(),
            console=err, transient=True, disable=quiet,
        ) as bar:  # fmt: skip

            def progress(path: Path, size: int):
                if size < PROGRESS_MIN_BYTES:
                    return None
                task = bar.add_task(terminal_safe(path.name), total=size)
                return lambda done: bar.advance(task, done)

            report = ingest(con, list(paths), max_line_bytes=max_line_bytes, progress=progress)
    finally:
        con.close()
    _print(report, as_json, quiet)
    if strict and report.totals["quarantined"]:
        # Said even with --quiet: an exit code alone does not say what failed.
        n = report.totals["quarantined"]
        err.print(
            f"error: --strict: {n} record{'s' if n != 1 else ''} quarantined "
            "(`calibrate status --quarantine` lists them)",
            markup=False,
        )
        raise typer.Exit(1)


def _print(report: IngestReport, as_json: bool, quiet: bool) -> None:
    """The per-file lines and totals on stdout (or the JSON form); hints on stderr."""
    if as_json:
        echo_json(report.to_dict())
    elif not quiet:
        skipped = report.skipped
        for f in report.files:
            if f.status != "skipped":
                label = "unchanged" if f.status == "unchanged" else f.kind
                counts = _counts(f.read, f.loaded, f.new, f.quarantined, f.withdrawn, f.pending)
                typer.echo(f"{label:<10} {terminal_safe(f.path)}: {counts}")
        t = report.totals
        total = _counts(
            t["read"], t["loaded"], t["new"], t["quarantined"], t["withdrawn"], t["pending"]
        )
        # Files that are no export kind are neither read nor quarantined: counted apart, and
        # listed (a diagnostic, on stderr) under their own heading, not among the records.
        typer.echo(f"total: {total}" + (f"; {_files(len(skipped))} skipped" if skipped else ""))
        if skipped:
            err.print("skipped files (not an export kind: nothing read or stored):", markup=False)
            for f in skipped:
                err.print(f"  {terminal_safe(f.path)}: {terminal_safe(f.note)}", markup=False)
        if t["quarantined"]:
            err.print("see `calibrate status --quarantine` for the reasons", markup=False)
        if t["pending"]:
            n = t["pending"]
            err.print(
                f"pending: {n} row{'s' if n != 1 else ''} without a decision, not loaded; fill in "
                "their decision and ingest the file again",
                markup=False,
            )
        if t["withdrawn"]:
            err.print(
                "newer versions of files withdrew what they no longer hold: see `calibrate status --withdrawn`",
                markup=False,
            )
