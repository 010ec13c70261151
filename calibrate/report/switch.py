"""The report's "since the switch" section: ``calibrate monitor`` per enforced step.

Builds the template values and figures from a
:class:`~calibrate.analysis.monitor.MonitorReport`; record text (process,
step and model names, question text in warnings) is left for the templates
to escape, numbers are :class:`~calibrate.report.render.Md`-free plain text
built here.
"""

from __future__ import annotations

import base64
from typing import Any

from calibrate.analysis.monitor import earlier_period_text
from calibrate.report import plots
from calibrate.textsafe import NO_MODEL, shown_name, step_name

#: OK and WARNING mean no alarm, not a rate shown within its limit (the bound may be above it).
STATUS_WORDS = {
    "ok": "OK (no alarm)", "alarm": "ALARM", "warning": "WARNING (no alarm)",
    "no_audits": "NO AUDITS", "stale": "STALE (an audit overdue)",
}  # fmt: skip


def _rate_line(name: str, m: Any, *, limit: float, delta: float) -> str:
    if m is None:
        return f"{name}: not audited."
    # Decisions the audit-label rule set aside or chose between: recorded, so say where they went.
    ignored = "".join(f" {line[0].upper()}{line[1:]}." for line in m.audit_quality())
    if m.audited == 0:
        return f"{name}: no decided audits yet ({m.pending} drawn and pending).{ignored}"
    alarm = (
        f" Alarm on {m.alarm_at:%Y-%m-%d}: the e-value reached {m.e_value_at_alarm:.3g} "
        f"(peak {m.e_value_peak:.3g})."
        if m.alarm_at is not None
        else " No alarm."
    )
    cs = f"{1 - delta:.0%} confidence sequence"
    if note := m.interval_note():
        # No alarm with the bound above the limit, or an alarm with the limit still inside.
        alarm += f" {note[0].upper()}{note[1:]}."
    return (
        f"{name}: {m.rate_text('audited', '.1%', f'{cs} {m.lower:.1%}–{m.upper:.1%}')} "
        f"against {limit:g}; e-value today "
        f"{m.e_value:.3g}, alarm at {1 / delta:g}.{alarm}"
        + (f" {m.pending} drawn and still pending." if m.pending else "")
        + ignored
    )


def switch_view(monitor: Any, png: Any) -> list[dict[str, Any]]:
    """One entry per enforced step and model, with its figure as PNG bytes and base64.

    Parameters
    ----------
    monitor : MonitorReport or None
    png : callable
        Turns a matplotlib figure into PNG bytes (the report's own).

    Returns
    -------
    list of dict
        ``process, step, model, status, since, lines, escalations, warnings,
        action, key, figure, figure_b64``.
    """
    if monitor is None:
        return []
    out = []
    for s in monitor.steps:
        key = plots.step_key(s.process, s.step, s.model or "", "switch")
        figure = None
        if s.false_pass.audited:
            display = plots.MonitorDisplay(
                s.false_pass, delta=monitor.delta,
                title=f"{step_name(s.process, s.step)} · model {shown_name(s.model, NO_MODEL)} · false passes since the switch",
            ).plot()  # fmt: skip
            figure = png(display.figure_)
        e = s.escalations
        esc = (
            (
                f"{e['n']} escalated; {e['accepted']} of {e['decided']} decided were accepted "
                f"({e['share_accepted']:.0%}, exact Clopper-Pearson 95% interval {e['lower']:.0%}–{e['upper']:.0%}). "
                if e["decided"]
                else f"{e['n']} escalated, none decided yet. "
            )
            # That they are left out above is said once, under the section's heading.
            + "They are the unsure region, not a sample of the check."
        )
        action = s.brief_action or s.action or ""
        lines = [_rate_line("False passes", s.false_pass, limit=monitor.alpha, delta=monitor.delta)]
        if s.false_fail is not None:
            lines.append(
                _rate_line("False fails", s.false_fail, limit=monitor.beta, delta=monitor.delta)
            )
        out.append(
            {
                "process": s.process,
                "step": s.step,
                "model": s.model or "(unknown model)",
                "status": STATUS_WORDS[s.status],
                "since": f"{s.enforced_since:%Y-%m-%d}" if s.enforced_since else "–",
                "lines": lines,
                # Earlier enforcement periods: history, no part of the status (their text holds
                # the model's name: record text, escaped by the templates), then the advisory
                # checks too short a return to begin a period.
                "period": s.period,
                "earlier": [earlier_period_text(e) for e in s.earlier] + list(s.notes),
                "escalations": esc,
                # Each fact once: a rate's alarm is in its line above, the alarm's reason among
                # the warnings, the plan on its own line (the terminal's action holds all three).
                "warnings": [w for w in s.warnings if w not in s.rate_alarms],
                "action": action.split("\n")[0] or None,
                "action_yaml": "\n".join(action.split("\n")[1:]).strip("\n") or None,
                "plan": s.plan.text(enforced=True) if s.plan is not None else None,
                "key": key,
                "figure": figure,
                "figure_file": None,  # set by write_report when the figure is written
                "figure_b64": base64.b64encode(figure).decode("ascii") if figure else None,
            }  # fmt: skip
        )
    return out
