"""``calibrate monitor``: is an enforced check still keeping its promise?

Per enforced step and evaluator model, since its first ``advisory: false``
check:

* **false passes** (:mod:`calibrate.analysis.rate_monitor`): the anytime-valid test of "false-pass rate <= alpha" on
  the audited passes (:mod:`calibrate.analysis.sequential`). The stream is
  every pass an audit draw considered, in the draws' order (draw, then check
  time): a drawn pass contributes ``z = X / pi`` (``X = 1`` when the person
  found it not acceptable, ``pi`` its stored inclusion probability), a pass
  not drawn ``z = 0``. Poisson sampling makes ``E[z | past] = E[X | past]``
  whatever the strata, so under H0 the wealth is a supermartingale and an
  alarm at ``1/delta`` is false with probability at most ``delta`` however
  often anyone looks. The stream stops before the first drawn pass still
  awaiting its decision (reviews may come in late; the time the path stands
  at is reported). Beside it: audited, bad, the weighted rate (Hájek:
  ``sum(X/pi) / sum(1/pi)`` over the audited, ``bad/audited`` when
  uniform) and a ``1 - delta`` confidence sequence.
* **false fails**: the same on audited fails against beta.
* **escalations**: how many unsure verdicts a person decided and the share
  accepted. They are the unsure region, never a sample of the check.
* **label-free warnings**, no certificate: the unsure share and each
  question's answer categories now against the certification window (the
  advisory checks of the certified model, replayed under today's
  thresholds), each a two-sided e-process against the reference's exact
  interval, valid under repeated looks.
* **a new evaluator model**: an alarm, since the certificate was for another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from calibrate.analysis.audit import SequentialAuditPlan, plan_audit
from calibrate.analysis.drift import share_warning
from calibrate.analysis.monitor_data import read_frames, short_return_text, short_returns
from calibrate.analysis.rate_monitor import (  # noqa: F401 - RateMonitor, design_bound re-exported
    RateMonitor,
    design_bound,
    rate_monitor,
)
from calibrate.arguments import argument_name, check_levels
from calibrate.defaults import RECERTIFY_MIN_LABELS, STALE_AFTER_DAYS, check_readiness_options
from calibrate.errors import UsageError
from calibrate.profile import RESULT_NAMES
from calibrate.textsafe import yaml_block

#: Answer bins of a yes/no question: quintiles of the certification window's probabilities.
YES_NO_BINS = 5


@dataclass(frozen=True)
class StepMonitor:
    """What ``calibrate monitor`` says about one enforced step and evaluator model."""

    process: str
    step: str
    model: str | None
    enforced_since: datetime | None
    status: str  # ok | alarm | warning | no_audits | stale (an audit decision overdue)
    false_pass: RateMonitor
    false_fail: RateMonitor | None
    escalations: dict[str, Any]
    warnings: list[str]
    action: str | None
    plan: SequentialAuditPlan | None = None
    #: The enforcement period monitored (1, 2, ... per step; ``enforced_since`` is its start).
    period: int = 1
    #: Earlier periods of the step (:func:`_earlier_periods`): shown, no part of the status.
    earlier: tuple[dict[str, Any], ...] = ()
    #: The ``warnings`` that restate a rate's alarm (its crossing, count and interval): a page
    #: showing the rates beside the warnings shows these facts once, with the rate.
    rate_alarms: tuple[str, ...] = ()
    #: ``action`` without what a page shows beside it: the reason (one of ``warnings``) and the
    #: audit plan (``plan``). The terminal prints ``action`` whole.
    brief_action: str | None = None
    #: What the period's bounds rest on that the numbers do not show: a return to advisory too
    #: short to begin a new period (:func:`calibrate.analysis.monitor_data.short_returns`).
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "process": self.process, "step": self.step, "model": self.model,
            "enforced_since": self.enforced_since.isoformat() if self.enforced_since else None,
            "status": self.status, "false_pass": self.false_pass.to_dict(),
            "false_fail": self.false_fail.to_dict() if self.false_fail else None,
            "escalations": self.escalations, "warnings": list(self.warnings),
            "action": self.action, "audit_plan": self.plan.to_dict() if self.plan else None,
            "period": self.period, "earlier_periods": [_iso(e) for e in self.earlier],
            "notes": list(self.notes),
        }  # fmt: skip


def _iso(value: Any) -> Any:
    """``value`` with its datetimes (in dicts too) as ISO text."""
    if isinstance(value, dict):
        return {k: _iso(v) for k, v in value.items()}
    return value.isoformat() if isinstance(value, datetime) else value


def _escalations(enforced: pd.DataFrame) -> dict[str, Any]:
    esc = enforced[(enforced["verdict"] == "unsure") & ~enforced["audited"].astype(bool)]
    decided = esc[esc["label"].notna()]
    n = int(len(decided))
    acc = int(decided["label"].astype(bool).sum())
    if n:
        lo, hi = stats.binomtest(acc, n).proportion_ci(method="exact")
        share, lo, hi = acc / n, float(lo), float(hi)
    else:
        share = lo = hi = None
    return {"n": int(len(esc)), "decided": n, "accepted": acc, "share_accepted": share,
            "lower": lo, "upper": hi}  # fmt: skip


def _answer_categories(ans: pd.DataFrame, ref: pd.DataFrame) -> dict[str, tuple[np.ndarray, str]]:
    """Per question and category: (indicator per enforced check of ``ans``, label)."""
    out: dict[str, tuple[np.ndarray, str]] = {}
    for ask, now in ans.groupby("ask", sort=True, observed=True):
        base = ref[ref["ask"] == ask]
        if base.empty:
            continue
        kind = str(now["kind"].iloc[0])
        if kind == "yes_no":
            edges = np.unique(np.quantile(base["p"].dropna(), np.linspace(0, 1, YES_NO_BINS + 1)))
            inner = edges[1:-1]

            def cat(p: pd.Series, inner: np.ndarray = inner) -> np.ndarray:
                return np.searchsorted(inner, p.to_numpy(dtype=float), side="right")

            cats_now, cats_ref = cat(now["p"]), cat(base["p"])
            cuts = [0.0, *inner.tolist(), 1.0]
            names = [
                f"yes-probability in [{a:.3g}, {b:.3g}{']' if i == len(inner) else ')'}"
                for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:], strict=True))
            ]
        else:
            col = "name" if kind == "choice" else "level"
            keys = sorted(set(base[col].dropna().astype(str)) | set(now[col].dropna().astype(str)))
            cats_now = pd.Categorical(now[col].astype(str), categories=keys).codes
            cats_ref = pd.Categorical(base[col].astype(str), categories=keys).codes
            names = [f"answer {k}" for k in keys]
        for i, name in enumerate(names):
            out[f"{ask}\x00{name}"] = (cats_now == i, (cats_ref == i))
    return out


def monitor_step(
    *,
    process: str,
    step: str,
    model: str | None,
    enforced: pd.DataFrame,
    pass_stream: pd.DataFrame,
    fail_stream: pd.DataFrame,
    reference: pd.DataFrame,
    certified_model: str | None,
    unsure_now: np.ndarray,
    unsure_ref: np.ndarray,
    enforced_answers: pd.DataFrame,
    reference_answers: pd.DataFrame,
    alpha: float,
    beta: float,
    delta: float,
    plan_weeks: int = 8,
) -> StepMonitor:
    """Assemble the monitor of one enforced step and model from its frames.

    Parameters
    ----------
    process, step, model : str
    enforced : DataFrame
        The step's checks recorded with ``advisory: false`` of this model
        (``at``, ``verdict``, ``audited``, ``label``).
    pass_stream, fail_stream : DataFrame
        The considered passes and fails in stream order (:func:`rate_monitor`).
    reference : DataFrame
        The certification window's checks (advisory, the certified model).
    certified_model : str or None
        The model of the certification window.
    unsure_now, unsure_ref : ndarray of bool
        Unsure under today's thresholds, per enforced check (time order) and
        per reference check.
    enforced_answers, reference_answers : DataFrame
        Answers (``check_id``, ``ask``, ``kind``, ``p``, ``name``, ``level``)
        of the enforced checks in time order and of the reference checks.
    alpha, beta, delta : float
        beta = 1 leaves false fails unmonitored.
    plan_weeks : int, default=8
        Weeks within which the audit plan catches a doubling.

    Returns
    -------
    StepMonitor
    """
    since = pd.to_datetime(enforced["at"], utc=True).min() if len(enforced) else None
    fp = rate_monitor(pass_stream, limit=alpha, delta=delta, error_label=False)
    ff = (
        rate_monitor(fail_stream, limit=beta, delta=delta, error_label=True)
        if beta < 1 and len(fail_stream)
        else None
    )
    warnings: list[str] = []
    alarms: list[str] = []
    if certified_model is None:
        warnings.append("no checks recorded with advisory: true: nothing certified this step")
    elif model != certified_model:
        alarms.append(
            f"a new evaluator model ({model}) on an enforced step: the certificate was for "
            f"{certified_model}"
        )
    rate_alarms: list[str] = []
    if fp.alarm:
        rate_alarms.append(
            f"false passes: {crossing(fp, delta)}; "
            + fp.rate_text(
                "audited passes not acceptable",
                ".3f",
                f"{1 - delta:.0%} confidence sequence {fp.lower:.3f}–{fp.upper:.3f}",
            )  # fmt: skip
            + (f"; {note}" if (note := fp.interval_note()) else "")
        )
    if ff is not None and ff.alarm:
        rate_alarms.append(
            f"false fails: {crossing(ff, delta)}; {ff.bad} of {ff.audited} audited fails acceptable"
        )
    alarms += rate_alarms
    label_free = "(label-free, no certificate: a sign to audit more, not a verdict on the check)"
    if len(unsure_ref) and len(unsure_now):
        warn, now, (lo, hi) = share_warning(
            unsure_now, int(unsure_ref.sum()), len(unsure_ref), delta=delta
        )
        if warn:
            warnings.append(
                f"unsure share {now:.3f} (n = {len(unsure_now)}) against {lo:.3f}–{hi:.3f} in the "
                f"certification window (n = {len(unsure_ref)}) {label_free}"
            )
    cats = _answer_categories(enforced_answers, reference_answers)
    for key, (now_x, ref_x) in cats.items():
        warn, now, (lo, hi) = share_warning(
            now_x, int(ref_x.sum()), len(ref_x), delta=delta / max(1, len(cats))
        )
        if warn:
            ask, name = key.split("\x00")
            warnings.append(
                f"answers to {ask!r}: {name} share {now:.3f} (n = {len(now_x)}) against "
                f"{lo:.3f}–{hi:.3f} in the certification window {label_free}"
            )
    passes = enforced[enforced["verdict"] == "pass"]
    plan = None
    if fp.audited == 0 or not alarms:
        weeks_seen = _weeks(enforced["at"])
        plan = plan_audit(passes_per_week=len(passes) / weeks_seen, alpha=alpha, delta=delta,
                          weeks=plan_weeks)  # fmt: skip
    if alarms:
        status = "alarm"
        action = restore_advisory_text(step, "; ".join(alarms))
        brief = restore_advisory_text(step, None)
        warnings = alarms + warnings
    elif fp.audited == 0 and not fp.pending:
        status = "no_audits"
        command = (
            f"`calibrate audit draw --process {process} --step {step} --rate {_rate_arg(plan)} "
            "--out audit.csv`"
        )
        action = f"No audited passes yet: draw an audit ({command}). " + (
            plan.text(enforced=True) if plan else ""
        )
        # A page says "no audit yet" in the rate's line and the plan in its own.
        brief = f"Draw an audit ({command})" + (", as the audit plan below says." if plan else ".")
    else:
        status = "no_audits" if fp.audited == 0 else "warning" if warnings else "ok"
        # Drawn checks awaiting a decision: a new draw would find them used up, so the next
        # step is to record them, not to draw again.
        action = brief = pending_text([m for m in (fp, ff) if m is not None])
        overdue = _overdue_since([m for m in (fp, ff) if m is not None], enforced["at"])
        if overdue is not None:
            status = "stale"
            warnings = [
                f"the oldest pending audit was drawn {overdue:%Y-%m-%d}, at least "
                f"{STALE_AFTER_DAYS} days before the step's latest check: the monitor has read "
                "nothing new since, so its silence says nothing about the check now",
                *warnings,
            ]
    return StepMonitor(
        process=process, step=step, model=model,
        enforced_since=since.to_pydatetime() if since is not None else None, status=status,
        false_pass=fp, false_fail=ff, escalations=_escalations(enforced), warnings=warnings,
        action=action, plan=plan, rate_alarms=tuple(rate_alarms), brief_action=brief,
    )  # fmt: skip


def _overdue_since(monitors: Sequence[RateMonitor], at: pd.Series) -> datetime | None:
    """When the oldest pending draw was made, if at least :data:`STALE_AFTER_DAYS` before ``at``'s
    latest (the step's latest enforced check: the store's own clock, not the wall's)."""
    drawn = [d["drawn_at"] for m in monitors for d in m.pending_draws if d["drawn_at"] is not None]
    latest = pd.to_datetime(at, utc=True).max()
    if not drawn or pd.isna(latest):
        return None
    oldest = pd.to_datetime(pd.Series(drawn), utc=True).min()
    stale = latest - oldest >= pd.Timedelta(days=STALE_AFTER_DAYS)
    return oldest.to_pydatetime() if stale else None


def pending_text(monitors: Sequence[RateMonitor]) -> str | None:
    """What to do about drawn checks still awaiting an audit decision, or ``None`` when none are.

    A drawn check with no decision at all is to be reviewed. One whose decisions are all dated
    before its draw is recorded but has no audit: the text says so and how to correct it, never
    to record what is already recorded.
    """
    pending = sum(m.pending for m in monitors)
    if not pending:
        return None
    draws: dict[int, dict[str, Any]] = {}
    for m in monitors:
        for d in m.pending_draws:
            into = draws.setdefault(
                d["draw_id"], {"drawn_at": d["drawn_at"], "none": 0, "early": 0}
            )
            early = d["decided_before_draw"]
            into["early"] += early
            into["none"] += d["pending"] - early

    def where(kind: str, fmt: str) -> str:
        return ", ".join(
            f"draw {k}" + (f", {d['drawn_at']:{fmt}}" if d["drawn_at"] is not None else "")
            for k, d in sorted(draws.items())
            if d[kind]
        )

    early = sum(d["early"] for d in draws.values())
    parts = []
    if pending - early:
        parts.append(
            f"{pending - early} drawn checks await a decision ({where('none', '%Y-%m-%d')}): "
            "record them before drawing again."
        )
    if early:
        parts.append(
            f"{early} drawn checks have decisions, but all dated before their draw "
            f"({where('early', '%Y-%m-%d %H:%M UTC')}): those are not audits. If they were made "
            "for the draw, correct their `at` to when the review was made (at or after the "
            "draw; a date alone counts from the draw's day on) or leave it blank, and ingest "
            "the file again; otherwise a reviewer decides each drawn check anew."
        )
    text = " ".join(parts)
    waiting = sum(m.waiting for m in monitors)
    if waiting:
        text += (
            f" {waiting} decided audits wait behind the first pending one: the monitor reads "
            "each stream up to its first pending audit, so they count once it is decided."
        )
    return text


def crossing(m: RateMonitor, delta: float) -> str:
    """The alarm in words: the value that crossed ``1/delta`` and when, then today's value.

    Today's e-value may have fallen back since the crossing; the alarm stands (Ville's
    inequality bounds the chance of ever crossing), so the crossing value is the one quoted.
    """
    return (
        f"the e-value reached {m.e_value_at_alarm:.3g} ≥ 1/δ = {1 / delta:g} on "
        f"{m.alarm_at:%Y-%m-%d} (peak {m.e_value_peak:.3g}, today {m.e_value:.3g})"
    )


def _rate_arg(plan: SequentialAuditPlan | None) -> str:
    """The ``--rate`` the plan asks of an enforced step (:attr:`~SequentialAuditPlan.enforced_rate`)."""
    return f"{plan.enforced_rate:g}" if plan is not None else "1"


def _weeks(at: pd.Series) -> float:
    times = pd.to_datetime(at, utc=True).dropna()
    if times.empty:
        return 1.0
    return max(1.0, (times.max() - times.min()).total_seconds() / (7 * 86400))


@dataclass(frozen=True)
class MonitorReport:
    """Every enforced step's monitor, with the levels used."""

    alpha: float
    beta: float
    delta: float
    steps: list[StepMonitor]

    def to_dict(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "beta": self.beta, "delta": self.delta,
                "steps": [s.to_dict() for s in self.steps]}  # fmt: skip


def _require_model(
    con: Any, model: str, checks: pd.DataFrame, process: str | None, step: str | None
) -> None:
    """Refuse a ``model`` no check of the scope carries, naming those the store has.

    An unknown model read as "nothing enforced" (an empty report). ``checks`` (the enforced
    steps' checks) names one recorded without a model
    :data:`~calibrate.analysis.step_data.UNKNOWN_MODEL`, accepted as the name of those; a
    model only advisory checks carry is known (its report has no steps).
    """
    from calibrate.dataset import Filters, unknown_name

    if model in set(checks["model"].dropna().astype(str)):
        return
    reason = unknown_name(con, Filters(process=process, step=step, model=model))
    if reason is not None:
        raise UsageError(reason)


def monitor_store(
    con: Any,
    *,
    process: str | None = None,
    step: str | None = None,
    alpha: float = 0.05,
    beta: float = 0.2,
    delta: float = 0.1,
    plan_weeks: int = 8,
    model: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> MonitorReport:
    """Monitor every enforced step of the store (or one process / step).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    process, step : str, optional
    model : str, optional
        Only this evaluator model's checks.
    since, until : datetime or str, optional
        The report's window (as :class:`calibrate.dataset.Filters` keeps it; a string is
        parsed as there). ``until`` reads
        the monitor as it stood then: only checks recorded before it (an e-process read at a
        time fixed in advance keeps its level). ``since`` is for display only: each e-process
        path keeps its points from it on, while the tests, the status and every count run from
        the switch, so that a report run every week over the last weeks extends one test
        instead of starting a new one each time, and an alarm raised before the window stands.
    alpha, beta, delta : float
        The limits the check was certified for and the monitor's level.
    plan_weeks : int, default=8
        Weeks within which the audit plan catches a doubling.

    Returns
    -------
    MonitorReport

    Raises
    ------
    UsageError
        A ``ValueError``: a level outside (0, 1) (``beta`` may be 1), ``plan_weeks`` below 1,
        or a ``process`` / ``step`` / ``model`` that matches no recorded check (naming those
        the store has). One that names checks but no enforced step gives a report with no steps.
    """
    from calibrate.analysis.step_evidence import replay
    from calibrate.dataset import Filters, parse_when, process_questions, unmatched_filters

    # As Filters reads them: a date string, a naive time (UTC) or an aware one.
    since, until = parse_when(since, "since"), parse_when(until, "until")
    # The audit plan looks for a rise to 2 x alpha (plan_audit's factor, the report's default):
    # alpha's one range and wording, as assess_store's.
    check_readiness_options({"alpha": alpha})
    check_levels(alpha, delta, beta)
    if plan_weeks < 1:
        raise UsageError(f"plan_weeks must be at least 1, got {plan_weeks}")
    if process is not None or step is not None:
        reason = unmatched_filters(con, Filters(process=process, step=step))
        if reason is not None:
            raise UsageError(reason)

    # Every model's checks: the certification reference is the step's advisory checks whatever
    # their model (a model other than the certified one is an alarm), so only the enforced
    # checks are narrowed to ``model`` (report --model dropped that alarm; outside review).
    checks, answers, streams = read_frames(con, process, step, until=until)
    every = checks[checks["enforced"]]
    if model is not None:
        _require_model(con, model, checks, process, step)
        every = every[(every["model"] == model).to_numpy()]
    earlier = _earlier_periods(every[~every["current"]], streams, alpha=alpha, beta=beta,
                               delta=delta)  # fmt: skip
    short = short_returns(checks)
    out: list[StepMonitor] = []
    for (proc, stp, model), enforced in every[every["current"]].groupby(
        ["process", "step", "model"], sort=True, observed=True
    ):
        period = int(enforced["period"].iloc[0])
        ref = _reference(checks, every, proc, stp, period)
        certified = None if ref.empty else ref["model"].iloc[-1]
        ref = ref[ref["model"] == certified]
        questions = process_questions(con, proc, stp).get((proc, stp))
        ans_now = answers[answers["check_id"].isin(enforced["check_id"])]
        ans_ref = answers[answers["check_id"].isin(ref["check_id"])]
        unsure_now = _unsure(replay, ans_now, enforced, questions)
        unsure_ref = _unsure(replay, ans_ref, ref, questions)
        mine = streams[(streams["process"] == proc) & (streams["step"] == stp)
                       & (streams["model"] == model) & (streams["period"] == period)]  # fmt: skip
        step_monitor = monitor_step(
            process=proc,
            step=stp,
            model=model,
            enforced=enforced,
            pass_stream=mine[mine["verdict"] == "pass"],
            fail_stream=mine[mine["verdict"] == "fail"],
            reference=ref,
            certified_model=certified,
            unsure_now=unsure_now,
            unsure_ref=unsure_ref,
            enforced_answers=ans_now,
            reference_answers=ans_ref,
            alpha=alpha,
            beta=beta,
            delta=delta,
            plan_weeks=plan_weeks,
        )
        history = earlier.get((proc, stp), ())
        step_monitor = _standing_alarm(step_monitor, history, checks, proc, stp)
        # Said where a period runs on past advisory checks (outside review G13: nothing said why).
        start = pd.to_datetime(enforced["at"], utc=True).min()
        mine_short = [r for r in short.get((proc, stp), ()) if r["before"] >= start]
        notes = (short_return_text(mine_short),) if mine_short else ()
        out.append(replace(step_monitor, period=period, earlier=history, notes=notes))
    if since is not None:
        out = [_windowed(s, since) for s in out]
    return MonitorReport(alpha=alpha, beta=beta, delta=delta, steps=out)


def _reference(
    checks: pd.DataFrame, every: pd.DataFrame, process: str, step: str, period: int
) -> pd.DataFrame:
    """The advisory checks that certified a period: after the step's earlier periods, before it.

    Failing those, the advisory checks before the period, then every advisory check of the step.
    """
    adv = checks[checks["advisory"] & (checks["process"] == process) & (checks["step"] == step)]
    mine = every[(every["process"] == process) & (every["step"] == step)]
    at = pd.to_datetime(adv["at"], utc=True)
    start = pd.to_datetime(mine.loc[mine["period"] == period, "at"], utc=True).min()
    end = pd.to_datetime(mine.loc[mine["period"] < period, "at"], utc=True).max()
    before = adv[(at < start).to_numpy()] if not pd.isna(start) else adv
    window = before[(at[before.index] > end).to_numpy()] if not pd.isna(end) else before
    return next((f for f in (window, before) if not f.empty), adv)


def _earlier_periods(
    enforced: pd.DataFrame, streams: pd.DataFrame, *, alpha: float, beta: float, delta: float
) -> dict[tuple[str, str], tuple[dict[str, Any], ...]]:
    """Per step, its earlier enforcement periods' tests (history: they drive no status).

    Each entry: ``period``, ``model``, ``since``, ``until`` (its first and last enforced
    check), ``alarm``, and the false-pass (and false-fail) ``audited``, ``bad``, ``alarm_at``,
    ``e_value_peak``.
    """
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for (proc, stp, period, model), group in enforced.groupby(
        ["process", "step", "period", "model"], sort=True, observed=True
    ):
        mine = streams[(streams["process"] == proc) & (streams["step"] == stp)
                       & (streams["period"] == period) & (streams["model"] == model)]  # fmt: skip
        at = pd.to_datetime(group["at"], utc=True)
        entry: dict[str, Any] = {
            "period": int(period), "model": model,
            "since": None if pd.isna(at.min()) else at.min().to_pydatetime(),
            "until": None if pd.isna(at.max()) else at.max().to_pydatetime(),
        }  # fmt: skip
        tests = {"false_pass": (alpha, False, "pass"), "false_fail": (beta, True, "fail")}
        for name, (limit, error_label, verdict) in tests.items():
            rows = mine[mine["verdict"] == verdict]
            if name == "false_fail" and (beta >= 1 or rows.empty):
                continue
            m = rate_monitor(rows, limit=limit, delta=delta, error_label=error_label)
            entry[name] = {"audited": m.audited, "bad": m.bad, "alarm_at": m.alarm_at,
                           "e_value_peak": m.e_value_peak}  # fmt: skip
        entry["alarm"] = any(
            entry[k]["alarm_at"] is not None for k in ("false_pass", "false_fail") if k in entry
        )
        out.setdefault((str(proc), str(stp)), []).append(entry)
    return {k: tuple(v) for k, v in out.items()}


def _standing_alarm(s: StepMonitor, history: Sequence[dict[str, Any]], checks: pd.DataFrame,
                    process: str, step: str) -> StepMonitor:  # fmt: skip
    """``s``, or an alarm when an earlier period alarmed and the check was not labeled again since.

    A later period is a new test, but a return to advisory alone clears nothing: the earlier
    alarm stands until at least :data:`RECERTIFY_MIN_LABELS` checks recorded with ``advisory:
    true`` after it are labeled, so that the certificate the new period rests on can read
    evidence the alarm has not already contradicted.
    """
    alarms = [
        min(e[k]["alarm_at"] for k in ("false_pass", "false_fail")
            if k in e and e[k]["alarm_at"] is not None)
        for e in history if e["alarm"]
    ]  # fmt: skip
    if not alarms or s.status == "alarm":
        return s
    last = pd.to_datetime(pd.Series(alarms), utc=True).max()
    mine = checks[(checks["process"] == process) & (checks["step"] == step) & checks["advisory"]]
    after = (pd.to_datetime(mine["at"], utc=True) > last).to_numpy() & mine[
        "label"
    ].notna().to_numpy()
    n_after = int(after.sum())
    if n_after >= RECERTIFY_MIN_LABELS:
        return s
    why = (
        f"an earlier enforcement period alarmed on {last:%Y-%m-%d} and only {n_after} checks "
        f"recorded with advisory: true have been labeled since (at least {RECERTIFY_MIN_LABELS} "
        "to certify the check again): the alarm stands"
    )
    return replace(
        s, status="alarm", warnings=[why, *s.warnings], action=restore_advisory_text(step, why),
        brief_action=restore_advisory_text(step, None), plan=None,
    )  # fmt: skip


def restore_advisory_text(step: str, why: str | None) -> str:
    """The action of an alarm: put ``advisory: true`` back, with the paste-ready YAML.

    ``why`` is the alarm in words; ``None`` refers to the alarm shown above the action instead
    (the report lists it among the warnings: said once).
    """
    reason = why if why is not None else "the alarm above"
    return (
        "Restore advisory: true on this step, so a person decides again while the check is "
        f"re-examined ({reason}). In the process file:\n" + restore_advisory_yaml(step)
    )


def restore_advisory_yaml(step: str) -> str:
    """The step's entry of a process file with ``advisory: true`` back: what a return pastes.

    It needs the step id alone, not the thresholds (its ``check:`` keys stay as they are), so
    it holds where calibrate does not know them (no process file ingested).
    """
    # Quoted as YAML needs: a step id is record text (`chk #1: a`).
    return yaml_block([{"id": step, "advisory": True}], indent=2).rstrip("\n")


def earlier_period_text(e: dict[str, Any]) -> str:
    """One earlier enforcement period (an entry of :attr:`StepMonitor.earlier`) in words."""
    span = " to ".join(f"{e[k]:%Y-%m-%d}" if e[k] else "-" for k in ("since", "until"))
    fp = e["false_pass"]
    if e["alarm"]:
        when = min(e[k]["alarm_at"] for k in ("false_pass", "false_fail")
                   if k in e and e[k]["alarm_at"] is not None)  # fmt: skip
        what = f"ALARM on {when:%Y-%m-%d}"
    else:
        what = "no alarm"
    return (
        f"earlier period {e['period']} ({span}, {e['model']}): {what}, {fp['bad']} of "
        f"{fp['audited']} audited passes not acceptable; history, not today's status"
    )


def _windowed(s: StepMonitor, since: datetime) -> StepMonitor:
    """``s`` with its e-process paths shown from ``since`` on; nothing else changes."""

    def cut(m: RateMonitor | None) -> RateMonitor | None:
        if m is None or m.path.empty:
            return m
        keep = (pd.to_datetime(m.path["at"], utc=True) >= pd.Timestamp(since)).to_numpy()
        return replace(m, path=m.path[keep].reset_index(drop=True))

    return replace(s, false_pass=cut(s.false_pass), false_fail=cut(s.false_fail))


def enforced_steps(con: Any) -> list[tuple[str, str]]:
    """The store's enforced steps: those with a pass or unsure verdict recorded with ``advisory: false``.

    Returns
    -------
    list of (process, step)
        Sorted.
    """
    return [
        (str(p), str(s))
        for p, s in con.execute(
            "SELECT DISTINCT process, step FROM checks WHERE advisory IS NOT DISTINCT FROM false"
            " AND verdict IN ('pass', 'unsure') AND process IS NOT NULL ORDER BY 1, 2"
        ).fetchall()
    ]


def unenforced_reason(
    con: Any, process: str | None, step: str | None, *, cli: bool = False
) -> str | None:
    """Why ``process`` / ``step`` select no enforced step, naming what the store has; ``None`` if some.

    First the names themselves (:func:`calibrate.dataset.unmatched_filters`: a name no check
    carries, with the names the store has); then whether any step they select is enforced (a
    pass or unsure verdict recorded with ``advisory: false``), with the enforced steps. Both
    ``None``: every step may be chosen, so ``None``. The message names the Python arguments, or
    the options (``--process``) with ``cli``.
    """
    from calibrate.dataset import Filters, unmatched_filters

    if process is None and step is None:
        return None
    reason = unmatched_filters(con, Filters(process=process, step=step), cli=cli)
    if reason is not None:
        return reason
    steps = enforced_steps(con)
    if any((process in (None, p)) and (step in (None, s)) for p, s in steps):
        return None
    asked = " ".join(
        f"{argument_name(name, cli=cli)} {value!r}"
        for name, value in (("process", process), ("step", step))
        if value
    )
    known = ", ".join(f"{p} / {s}" for p, s in steps) or "none"
    return (
        f"{asked}: no enforced step (no pass or unsure verdict recorded with advisory: false); "
        f"enforced steps in the store: {known}"
    )


def _unsure(replay: Any, ans: pd.DataFrame, checks: pd.DataFrame, questions: Sequence | None):
    """Unsure under today's thresholds per check of ``checks`` (recorded verdicts without them)."""
    recorded = checks["verdict"].to_numpy(dtype=object) == "unsure"
    error = checks["verdict"].to_numpy(dtype=object) == "error"
    if not questions:
        return recorded | error
    codes = replay(ans, questions).reindex(checks["check_id"].astype(str)).to_numpy(dtype=float)
    replayed = codes == RESULT_NAMES.index("unsure")
    return np.where(np.isnan(codes), recorded, replayed) | error
