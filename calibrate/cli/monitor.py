"""``calibrate monitor``: is each enforced check still keeping its promise?"""

from __future__ import annotations

from typing import Annotated

import typer

from calibrate.cli.app import app, handle_errors
from calibrate.cli.options import (
    AlphaOption,
    BetaOption,
    DbOption,
    DeltaOption,
    Format,
    ProcessOption,
    StepOption,
    check_levels,
    format_option,
    parse_time,
    require_enforced,
    require_format,
)
from calibrate.cli.render import echo_json, terminal_safe
from calibrate.lazy import lazy_module
from calibrate.store import connect
from calibrate.textsafe import NO_MODEL, shown_name, step_name

monitoring = lazy_module("calibrate.analysis.monitor")


MonitorFormat = format_option(Format.table, Format.json)


@app.command("monitor")
@handle_errors
def monitor_command(
    process: ProcessOption = None,
    step: StepOption = None,
    alpha: AlphaOption = 0.05,
    beta: BetaOption = 0.2,
    delta: DeltaOption = 0.1,
    fmt: MonitorFormat = Format.table,
    fail_on_alarm: Annotated[
        bool,
        typer.Option(
            "--fail-on-alarm",
            help="Exit 1 when any step is in alarm or stale (after printing), so a script can gate on it.",
        ),
    ] = False,
    until: Annotated[
        str | None,
        typer.Option(
            "--until",
            help="Read the monitor as it stood then (ISO 8601): checks, draws and audit "
            "decisions before this time. No --since: the test runs from the switch.",
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Per enforced step and model: an anytime-valid alarm on audited false passes and fails.

    The false-pass test is an e-process by betting on the audit decisions
    (weighted by inverse inclusion probability): an alarm is false with
    probability at most delta however often monitor is run, per enforcement
    period. Status per step: ok, alarm (with the change back to advisory:
    true), warning (label-free signs, no certificate), no_audits (with the
    audit rate needed) or stale (a drawn check has waited 14 days or more for
    its decision: the monitor reads nothing past it). While drawn checks await
    a decision, the action says to record them first; for drawn checks whose
    decisions are all dated before the draw (no audits), it says so and how to
    correct them. Each enforcement period (a second switch after a return to
    advisory, or a process version with other thresholds) is a test of its
    own; earlier periods are shown as history, and an earlier alarm stands
    until 100 advisory checks after it are labeled. A return to advisory
    begins a period only when at least 7 days pass between the enforced
    verdicts around it; a shorter one continues the period, and a note says so.

    --until reads the test as it stood at a time (a prefix of the stream in
    the order it was learned, so the e-process keeps its level); there is no
    --since, since a window starting later would restart the test at each run
    (see docs/method.md).

    Exit code 0 whatever the status; with --fail-on-alarm, 1 when any step is
    in alarm, stale included (the output is printed first, in either format).
    """
    require_format(fmt, "monitor", Format.table, Format.json)
    as_of = parse_time(until, "--until")
    check_levels(alpha, delta, beta)
    con = connect(db, read_only=True)
    try:
        require_enforced(con, process, step)
        result = monitoring.monitor_store(
            con, process=process, step=step, alpha=alpha, beta=beta, delta=delta, until=as_of
        )
    finally:
        con.close()
    if fmt is Format.json:
        echo_json(result.to_dict())
    else:
        print_table(result, alpha=alpha, beta=beta, delta=delta)
    if fail_on_alarm and any(s.status in ("alarm", "stale") for s in result.steps):
        raise typer.Exit(1)


def print_table(
    result: monitoring.MonitorReport, *, alpha: float, beta: float, delta: float
) -> None:
    """The monitor for a person: per step its status, rates, e-values, warnings and action."""
    if not result.steps:
        typer.echo("no enforced steps: no check recorded with advisory: false")
        return
    for s in result.steps:
        # OK and WARNING mean no alarm: not a rate shown within its limit.
        status = {"ok": "OK (no alarm)", "warning": "WARNING (no alarm)"}.get(
            s.status, s.status.upper()
        )
        typer.echo(
            terminal_safe(
                f"{step_name(s.process, s.step)} · {shown_name(s.model, NO_MODEL)}: {status}"
            )
        )
        since = f"{s.enforced_since:%Y-%m-%d}" if s.enforced_since else "-"
        period = f" (enforcement period {s.period}, a test of its own)" if s.period > 1 else ""
        typer.echo(f"  enforced since {since}{period}")
        for e in s.earlier:
            typer.echo(terminal_safe(f"  {monitoring.earlier_period_text(e)}"))
        for note in s.notes:
            typer.echo(terminal_safe(f"  note: {note}"))
        for name, m, limit in (
            ("false passes", s.false_pass, alpha),
            ("false fails", s.false_fail, beta),
        ):
            if m is None:
                continue
            waiting = f", {m.waiting} decided waiting behind the first" if m.waiting else ""
            if m.audited == 0:
                typer.echo(f"  {name}: no audits yet (pending {m.pending}{waiting})")
            else:
                alarm = (
                    f"; crossed at {m.e_value_at_alarm:.3g} on {m.alarm_at:%Y-%m-%d}, "
                    f"peak {m.e_value_peak:.3g}"
                    if m.alarm_at
                    else ""
                )
                cs = f"{1 - delta:.0%} confidence sequence"
                typer.echo(
                    f"  {name}: {m.rate_text('audited', '.3f', f'{cs} {m.lower:.3f}–{m.upper:.3f}')} vs "
                    f"{limit:g}; e-value today {m.e_value:.3g} (alarm at {1 / delta:g}{alarm}); "
                    f"pending {m.pending}{waiting}"
                    + (f"; {note}" if (note := m.interval_note()) else "")
                )
            for line in m.audit_quality():
                typer.echo(f"    {line}")
        e = s.escalations
        if e["decided"]:
            typer.echo(
                f"  escalations (the unsure region, not a sample): {e['n']}, {e['accepted']} of "
                f"{e['decided']} decided accepted ({e['share_accepted']:.2f}; exact "
                f"Clopper-Pearson 95% interval {e['lower']:.2f}–{e['upper']:.2f})"
            )
        else:
            typer.echo(f"  escalations (the unsure region, not a sample): {e['n']}, none decided")
        for w in s.warnings:
            typer.echo(terminal_safe(f"  ! {w}"))
        if s.action:
            typer.echo("")
            for line in s.action.splitlines():
                typer.echo(terminal_safe(f"  {line}"))
