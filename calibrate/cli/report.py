"""``calibrate report``: can ``advisory`` be dropped? A decision per checked step, in HTML, Markdown and JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from calibrate.cli.app import app, err, handle_errors
from calibrate.cli.options import (
    AdvisoryOnlyOption,
    AlphaOption,
    BetaOption,
    DbOption,
    DeltaOption,
    EscalationsOption,
    Format,
    ModelOption,
    ProcessOption,
    SinceOption,
    StepOption,
    UntilOption,
    make_filters,
    note_left_out,
    require_known,
)
from calibrate.cli.render import echo_json
from calibrate.defaults import ReadinessOptions, check_readiness_options
from calibrate.errors import UsageError
from calibrate.lazy import lazy_module
from calibrate.store import connect, default_path

#: The option defaults are the library's, so the CLI and the API cannot disagree.
DEFAULTS = ReadinessOptions()
readiness = lazy_module("calibrate.analysis.readiness")


@app.command("report")
@handle_errors
def report_command(
    db: DbOption = None,
    out: Annotated[
        Path, typer.Option("--out", help="Folder to write the report into.", file_okay=False)
    ] = Path("reports"),
    write: Annotated[
        str, typer.Option("--write", help="Comma-separated files to write: html, md, json.")
    ] = "html,md,json",
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help=(
                "What to print on stdout: table or json (the same meaning in every command; "
                "the files are --write)."
            ),
        ),
    ] = "table",
    alpha: AlphaOption = DEFAULTS.alpha,
    delta: DeltaOption = DEFAULTS.delta,
    beta: BetaOption = DEFAULTS.beta,
    min_coverage: Annotated[
        float,
        typer.Option("--min-coverage", help="Least share decided without a person (pass + fail)."),
    ] = DEFAULTS.min_coverage,
    min_labels: Annotated[
        int,
        typer.Option("--min-labels", help="Least labeled checks on the current model and wording."),
    ] = DEFAULTS.min_labels,
    drift_level: Annotated[
        float,
        typer.Option(
            "--drift-level",
            help="Level of the drift test (earlier vs recent half), split over its two tests (false passes, false fails: each at half, Bonferroni; the criteria show that limit).",
        ),
    ] = DEFAULTS.drift_level,
    max_error_rate: Annotated[
        float, typer.Option("--max-error-rate", help="Largest share of error verdicts.")
    ] = DEFAULTS.max_error_rate,
    max_truncation_rate: Annotated[
        float, typer.Option("--max-truncation-rate", help="Largest share of truncated checks.")
    ] = DEFAULTS.max_truncation_rate,
    minutes_per_review: Annotated[
        float,
        typer.Option("--minutes-per-review", help="A person's minutes per reviewed submission."),
    ] = DEFAULTS.minutes_per_review,
    audit_weeks: Annotated[
        int,
        typer.Option(
            "--audit-weeks", help="Detect a doubled false-pass rate within this many weeks."
        ),
    ] = DEFAULTS.audit_weeks,
    process: ProcessOption = None,
    step: StepOption = None,
    model: ModelOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    advisory_only: AdvisoryOnlyOption = False,
    with_escalations: EscalationsOption = False,
) -> None:
    """Decide per checked step whether advisory can be dropped: READY, NOT YET or NO, with the evidence."""
    from calibrate.dataset import labels_snapshot
    from calibrate.report.render import parse_formats, report_json, summary_lines, write_report

    fmt, write = _stdout_format(fmt, write)
    try:
        fmts = parse_formats(write)
    except ValueError as exc:
        raise UsageError(f"--write {write}: {exc}") from None
    settings = dict(
        alpha=alpha, delta=delta, beta=beta, min_coverage=min_coverage, min_labels=min_labels,
        drift_level=drift_level, max_error_rate=max_error_rate,
        max_truncation_rate=max_truncation_rate, minutes_per_review=minutes_per_review,
        audit_weeks=audit_weeks,
    )  # fmt: skip
    # Checked here so that a refusal names the option (--min-coverage), not the field.
    check_readiness_options(settings, cli=True)
    options = ReadinessOptions(**settings)
    filters = make_filters(process, step, model, since, until, advisory_only, with_escalations)
    path = db if db is not None else default_path()
    con = connect(path, read_only=True)
    try:
        require_known(con, filters)
        # The report reads the labeled views some ten times; read-only, so one snapshot serves.
        with labels_snapshot(con):
            note_left_out(con, filters)
            err.print(f"assessing the checked steps in {path} …", markup=False)
            report = readiness.assess_store(con, filters, options=options, store=str(path))
    finally:
        con.close()
    written = write_report(report, out, formats=fmts)
    if fmt is Format.json:
        echo_json(report_json(report))
    else:
        for line in summary_lines(report) or [readiness.NO_STEPS]:
            typer.echo(line)
    for fmt, p in written.items():
        err.print(f"wrote {fmt}: {p}", markup=False)


def _stdout_format(value: str, write: str) -> tuple[Format, str]:
    """``--format`` as every command reads it; an older list of files (``html,md``) is ``--write``.

    ``--format`` once named the files to write; a value that is a list of
    them, or ``html`` or ``md``, is still taken so, with a note on stderr.
    """
    name = value.strip().lower()
    if name in (Format.table, Format.json):
        return Format(name), write
    parts = [p.strip().lower() for p in value.split(",") if p.strip()]
    if parts and all(p in ("html", "md", "markdown", "json") for p in parts):
        err.print(
            f"note: --format {value} is now --write {value} (--format says what is printed)",
            markup=False,
        )
        return Format.table, value
    raise UsageError(
        f"--format {value}: report prints table or json (the files to write are --write html,md,json)"
    )
