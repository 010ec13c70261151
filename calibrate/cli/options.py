"""Options shared by several commands, defined once so every command behaves alike."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from calibrate import arguments
from calibrate.defaults import ReadinessOptions, check_readiness_options
from calibrate.errors import UsageError
from calibrate.lazy import lazy_module

if TYPE_CHECKING:
    from calibrate.dataset import Filters

dataset = lazy_module("calibrate.dataset")
monitoring = lazy_module("calibrate.analysis.monitor")

DbOption = Annotated[
    Path | None,
    typer.Option(
        "--db",
        help="DuckDB store file. Default: $CALIBRATE_DB, else ./calibrate.duckdb.",
        dir_okay=False,
        show_default=False,
    ),
]


class Format(StrEnum):
    """What ``--format`` prints on stdout, with one meaning for every command.

    ``table``: text for a person; ``json``: the whole result for a script;
    ``csv``: the result's rows, one per line; ``yaml``: a paste-ready
    ``check:`` block. A command that has no such form refuses it (exit 2).
    """

    table = "table"
    json = "json"
    csv = "csv"
    yaml = "yaml"


def format_option(*forms: Format) -> object:
    """The shared ``--format`` option of a command that prints ``forms``.

    ``--help`` and docs/cli.md list only ``forms`` (the metavar); any other form is still
    parsed, so that :func:`require_format` refuses it in one line naming what the command prints.
    """
    names = ", ".join(f.value for f in forms)
    return Annotated[
        Format,
        typer.Option(
            "--format",
            case_sensitive=False,
            metavar="[" + "|".join(f.value for f in forms) + "]",
            help=f"What to print on stdout: {names} (the same meaning in every command).",
        ),
    ]


def require_format(fmt: Format, command: str, *forms: Format, why: str = "") -> None:
    """Refuse a ``--format`` the command cannot honour, naming the ones it can (exit 2)."""
    if fmt not in forms:
        names = " or ".join(f.value for f in forms)
        raise UsageError(f"--format {fmt.value}: {command} {why or f'prints {names}'}")


ProcessOption = Annotated[str | None, typer.Option("--process", help="Only this process.")]
StepOption = Annotated[str | None, typer.Option("--step", help="Only this checked step.")]
ModelOption = Annotated[str | None, typer.Option("--model", help="Only this evaluator model.")]
SinceOption = Annotated[
    str | None, typer.Option("--since", help="Only checks at or after this date/time (ISO 8601).")
]
UntilOption = Annotated[
    str | None, typer.Option("--until", help="Only checks before this date/time (ISO 8601).")
]
AdvisoryOnlyOption = Annotated[
    bool, typer.Option("--advisory-only", help="Only checks recorded with advisory: true.")
]


def parse_time(value: str | None, option: str) -> datetime | None:
    """Parse an ISO 8601 date or time; naive values are taken as UTC (as :class:`Filters` does)."""
    try:
        return dataset.parse_when(value, option)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def make_filters(
    process: str | None = None,
    step: str | None = None,
    model: str | None = None,
    since: str | None = None,
    until: str | None = None,
    advisory_only: bool = False,
    escalations: bool = False,
) -> Filters:
    """Build :class:`~calibrate.dataset.Filters` from the shared options.

    A ``--since`` later than ``--until`` is refused (exit 2), naming the options.
    """
    start, end = parse_time(since, "--since"), parse_time(until, "--until")
    dataset.check_window(start, end, cli=True)
    return dataset.Filters(
        process=process,
        step=step,
        model=model,
        since=start,
        until=end,
        advisory_only=advisory_only,
        escalations=escalations,
    )


EscalationsOption = Annotated[
    bool,
    typer.Option(
        "--with-escalations",
        help="Also read the decisions made after the switch (advisory: false): a sample the "
        "enforced check selected, left out by default; with it nothing is certified (status "
        "selected_sample). A step still enforced is judged by its monitor either way: the "
        "report sets the flag aside for it and says so.",
    ),
]


def require_known(con: object, filters: Filters) -> bool:
    """Refuse a name the store lacks (exit 2); say on stderr when the filters match no check.

    A ``--process``, ``--step`` or ``--model`` no check carries is a typo: refused, naming
    the names the store has. Known names in a ``--since``/``--until`` window (or with
    ``--advisory-only``) that holds no check are a question with an empty answer: a note on
    stderr, and the command prints its empty result (exit 0).

    Returns
    -------
    bool
        Whether any recorded check matches ``filters``.
    """
    from calibrate.cli.app import err

    reason = dataset.unknown_name(con, filters, cli=True)
    if reason is not None:
        raise UsageError(reason)
    if dataset.matches_any(con, filters):
        return True
    err.print(f"note: {empty_text(filters)}", markup=False, soft_wrap=True)
    return False


def empty_text(filters: Filters) -> str:
    """That no check matches ``filters``, naming the window and options that leave none."""
    given = [
        f"{option} {value.isoformat() if isinstance(value, datetime) else value}"
        for option, value in (
            ("--process", filters.process), ("--step", filters.step), ("--model", filters.model),
            ("--since", filters.since), ("--until", filters.until),
        )
        if value is not None
    ]  # fmt: skip
    if filters.advisory_only:
        given.append("--advisory-only")
    within = f" ({', '.join(given)})" if given else ""
    return f"no check matches these filters{within}: an empty result"


def require_enforced(con: object, process: str | None, step: str | None) -> None:
    """Refuse a ``--process`` / ``--step`` with no enforced step, naming the enforced ones (exit 2).

    First the names themselves (as :func:`require_known`); then whether any step they select is
    enforced (a pass or unsure verdict recorded with ``advisory: false``).
    """
    reason = monitoring.unenforced_reason(con, process, step, cli=True)
    if reason is not None:
        raise UsageError(reason)


def note_left_out(con: object, filters: Filters) -> None:
    """Say on stderr how many labeled checks the filters leave out after the switch, and which."""
    from calibrate.cli.app import err

    n = dataset.left_out_counts(con, filters)
    if sum(n.values()):
        err.print(left_out_text(n), markup=False, soft_wrap=True)


def left_out_text(n: dict[str, int]) -> str:
    """``n`` from :func:`calibrate.dataset.left_out_counts` in words."""
    parts = []
    if n["escalations"]:
        parts.append(
            f"{n['escalations']} escalation{'s' if n['escalations'] != 1 else ''} after the "
            "switch (the unsure region the enforced "
            "check selected)"
        )
    if n["undrawn"]:
        parts.append(
            f"{n['undrawn']} decision{'s' if n['undrawn'] != 1 else ''} on enforced pass/fail "
            "checks that no audit draw drew"
        )
    total = sum(n.values())
    return (
        f"{total} decision{'s' if total != 1 else ''} left out of the labeled figures: "
        f"{' and '.join(parts)}; "
        "the checks still count in the rates over all checks; --with-escalations keeps the "
        "decisions"
    )


# The guarantee's three levels, shared by `thresholds`, `report` and `monitor` (defaults from the
# thresholds module). Each help names the range `check_levels` accepts.
_FACTOR = ReadinessOptions.audit_factor
AlphaOption = Annotated[
    float,
    typer.Option(
        "--alpha",
        help="Limit on the false-pass rate P(not acceptable | pass), in "
        f"(0, {1 / _FACTOR:g}): the audit after the switch is sized to detect a rise to "
        f"{_FACTOR:g} x alpha.",
    ),
]
DeltaOption = Annotated[
    float,
    typer.Option(
        "--delta",
        help="The certified bounds may fail with probability at most delta, in (0, 1).",
    ),
]
BetaOption = Annotated[
    float,
    typer.Option(
        "--beta",
        help="Limit on the false-fail rate P(acceptable | fail), in (0, 1]; 1 = uncontrolled.",
    ),
]


def check_levels(alpha: float, delta: float, beta: float) -> None:
    """Refuse levels outside their ranges, naming the option: ``--alpha`` in (0, 0.5) (the
    audit after the switch looks for 2 x alpha), ``--delta`` in (0, 1), ``--beta`` in (0, 1]."""
    # Alpha's whole range first: "(0, 1)" for 1, then "below 0.5" for 0.99, disagreed.
    check_readiness_options({"alpha": alpha}, cli=True)
    arguments.check_levels(alpha, delta, beta, cli=True)
