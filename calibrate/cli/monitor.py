"""``calibrate monitor``: is each enforced check still keeping its promise?"""

from __future__ import annotations

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
    require_format,
)
from calibrate.cli.render import echo_json, terminal_safe
from calibrate.lazy import lazy_module
from calibrate.store import connect

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
    db: DbOption = None,
) -> None:
    """Per enforced step and model: an anytime-valid alarm on audited false passes and fails.

    The false-pass test is an e-process by betting on the audit decisions
    (weighted by inverse inclusion probability): an alarm is false with
    probability at most delta however often monitor is run. Status per step:
    ok, alarm (with the change back to advisory: true), warning (label-free
    signs, no certificate) or no_audits (with the audit rate needed).
    """
    require_format(fmt, "monitor", Format.table, Format.json)
    check_levels(alpha, delta, beta)
    con = connect(db, read_only=True)
    try:
        result = monitoring.monitor_store(
            con, process=process, step=step, alpha=alpha, beta=beta, delta=delta
        )
    finally:
        con.close()
    if fmt is Format.json:
        echo_json(result.to_dict())
        return
    if not result.steps:
        typer.echo("no enforced steps: no check recorded with advisory: false")
        return
    for s in result.steps:
        # OK and WARNING mean no alarm: not a rate shown within its limit.
        status = {"ok": "OK (no alarm)", "warning": "WARNING (no alarm)"}.get(
            s.status, s.status.upper()
        )
        typer.echo(terminal_safe(f"{s.process} / {s.step} · {s.model or '-'}: {status}"))
        since = f"{s.enforced_since:%Y-%m-%d}" if s.enforced_since else "-"
        typer.echo(f"  enforced since {since}")
        for name, m, limit in (
            ("false passes", s.false_pass, alpha),
            ("false fails", s.false_fail, beta),
        ):
            if m is None:
                continue
            if m.audited == 0:
                typer.echo(f"  {name}: no audits yet (pending {m.pending})")
                continue
            alarm = f", alarm {m.alarm_at:%Y-%m-%d}" if m.alarm_at else ""
            typer.echo(
                f"  {name}: {m.bad} of {m.audited} audited, rate {m.rate:.3f} "
                f"({1 - delta:.0%} confidence sequence {m.lower:.3f}–{m.upper:.3f}) vs {limit:g}; "
                f"e-value {m.e_value:.3g} (alarm at {1 / delta:g}{alarm}); pending {m.pending}"
                + (
                    f"; the upper end is above {limit:g}: no alarm does not show the rate within it"
                    if not m.alarm_at and m.upper > limit
                    else ""
                )
            )
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
