"""Can ``advisory`` be dropped? A decision per checked step, with every criterion behind it.

For each checked step and its current evaluator model the decision is one of

* ``READY``: drop ``advisory`` with the suggested thresholds;
* ``NOT_YET``: the evidence points the right way but is too thin: keep
  collecting, and here is how many more labeled checks (and how many
  days or weeks at the step's recent volume) the bound needs;
* ``NO``: even with plenty of data the check cannot reach ``alpha`` with
  useful coverage, or it drifted, or the evaluator model changed mid-window,
  or the evaluator errs or is truncated too often: say which, and which
  questions drive the disagreements.

Every criterion is a :class:`Criterion` ``{name, value, limit, ok}`` so the
decision can be audited; the limits are fields of :class:`ReadinessOptions`
with documented defaults.

The evidence for a step is its **current evaluator model** (the model of its
latest check) and its **current question wording** (the questions of the
ingested process file, else those of the latest check): thresholds learnt on
one model or wording say nothing about another, so nothing is pooled. Checks
left out are counted and said.

All functions here are pure over the DataFrames of
:func:`calibrate.dataset.submissions` and :func:`calibrate.dataset.answers`,
except :func:`assess_store`, which reads a store and coordinates. Nothing
prints and nothing draws; :mod:`calibrate.report.render` does that.

References
----------
.. [1] Agresti, A. (2013). Categorical Data Analysis, 3rd ed., §3.1 (the
   two-proportion z test) and §3.5 (Fisher's exact test). Wiley.
.. [2] Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or
   fiducial limits illustrated in the case of the binomial. Biometrika 26(4),
   404-413.
.. [3] Angelopoulos, A. N., Bates, S., Candès, E. J., Jordan, M. I. and Lei, L.
   (2021). Learn then Test: calibrating predictive algorithms to achieve risk
   control. arXiv:2110.01052.
.. [4] Goddard, K., Roudsari, A. and Wyatt, J. C. (2012). Automation bias: a
   systematic review of frequency, effect mediators, and mitigators. JAMIA
   19(1), 121-127.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis import agreement as agreement_mod
from calibrate.analysis.audit import SequentialAuditPlan, plan_audit
from calibrate.analysis.audit_fixed import (  # noqa: F401 - re-exported: the fixed-sample audit
    AUDIT_METHOD,
    AuditPlan,
    audit_plan,
    audit_sample_size,
)
from calibrate.analysis.drift import (  # noqa: F401 - re-exported
    DRIFT_METHOD,
    Drift,
    DriftTest,
    drift_test,
    one_sided_increase,
)
from calibrate.analysis.monitor import MonitorReport, StepMonitor, monitor_store
from calibrate.analysis.needed import NeededLabels, best_observed_coverage, coverage_denominator
from calibrate.analysis.rate import Rate, limit_pct, pct_against
from calibrate.analysis.rate import plain as _plain
from calibrate.analysis.stats import (
    MIN_N,
    binomial_upper_bound,
    wilson_interval,
)
from calibrate.analysis.step_data import (
    _answer_rows,
    _codes,
    _distinct_pairs,
    isin,
)
from calibrate.defaults import DEFAULT_N_BOOT, ReadinessOptions
from calibrate.profile import FAIL, PASS, UNSURE, Kind, Question, decide

#: The three decisions, best first (the order the report sorts by).
DECISIONS = ("READY", "NOT_YET", "NO")
#: Average days in a month, for "hours saved per month".
DAYS_PER_MONTH = 365.25 / 12
#: A labels-needed estimate beyond this many is reported as unreachable.
MAX_LABELS = 1_000_000
#: Without a certificate, at least this share more labels is asked for (see assess_step).
NEEDED_FLOOR = 0.1


# --------------------------------------------------------------------------- options


# ReadinessOptions lives in calibrate.defaults (the command line shows its defaults at start-up).


# --------------------------------------------------------------------------- small results


@dataclass(frozen=True)
class Criterion:
    """One line of the decision: a value against its limit.

    Attributes
    ----------
    name : str
        Stable identifier, e.g. ``"false_pass_upper"``.
    value, limit : float, int, str or None
        The measured value (``None`` when it cannot be measured) and its limit.
    ok : bool
        Whether the value meets the limit; a value that cannot be measured does not.
    blocks : {"NOT_YET", "NO"}
        The decision this criterion forces when it is not ok.
    label : str
        The criterion in words, for the faces.
    detail : str
        The evidence in words, with ``n`` and the interval where it is a rate.
    """

    name: str
    value: float | int | str | None
    limit: float | int | str | None
    ok: bool
    blocks: str
    label: str
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": _plain(self.value),
            "limit": _plain(self.limit),
            "ok": bool(self.ok),
            "blocks": self.blocks,
            "label": self.label,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class ModelChange:
    """Which evaluator models answered a step's checks in the window, and when the latest took over."""

    current: str | None
    models: tuple[dict[str, Any], ...]
    changed_at: str | None
    previous: str | None
    interleaved: bool

    @property
    def changed(self) -> bool:
        return len(self.models) > 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "current": self.current,
            "changed": self.changed,
            "changed_at": self.changed_at,
            "previous": self.previous,
            "interleaved": self.interleaved,
            "models": [dict(m) for m in self.models],
        }


@dataclass(frozen=True)
class Volume:
    """A step's recent volume (current model): checks and labels per week."""

    days: float
    checks: int
    labeled: int

    @property
    def checks_per_week(self) -> float:
        return self.checks / self.days * 7 if self.days > 0 else float("nan")

    @property
    def labeled_per_week(self) -> float:
        return self.labeled / self.days * 7 if self.days > 0 else float("nan")

    @property
    def checks_per_month(self) -> float:
        return self.checks_per_week / 7 * DAYS_PER_MONTH

    def to_dict(self) -> dict[str, Any]:
        return {
            "days": round(self.days, 2),
            "checks": self.checks,
            "labeled": self.labeled,
            "checks_per_week": _plain(self.checks_per_week),
            "labeled_per_week": _plain(self.labeled_per_week),
        }


# --------------------------------------------------------------------------- statistics


def labels_needed(
    *, k_false_pass: int, n_pass: int, n_labeled: int, alpha: float, delta: float,
    max_labels: int = MAX_LABELS,
) -> int | None:  # fmt: skip
    """Labeled submissions (in total) for the certified false-pass bound to reach ``alpha``.

    Assumes the observed false-pass rate ``r = k_false_pass / n_pass`` and
    pass share ``s = n_pass / n_labeled`` stay as they are: with ``N``
    labeled submissions there are ``s N`` passes of which ``r s N`` are
    false, and the exact (Clopper-Pearson) upper bound at ``1 - delta`` is
    :func:`~calibrate.analysis.stats.binomial_upper_bound`. Returns the
    smallest ``N >= n_labeled`` whose bound is at most ``alpha``. A search
    that holds out part of the labels to certify (or tests along a path)
    needs somewhat more, so read this as a lower estimate.

    Returns
    -------
    int or None
        ``None`` when the observed rate is at or above ``alpha`` (more labels
        cannot help), when nothing passes, or when more than ``max_labels``
        would be needed.

    References
    ----------
    .. [1] Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or
       fiducial limits illustrated in the case of the binomial. Biometrika
       26(4), 404-413.

    Examples
    --------
    >>> labels_needed(k_false_pass=0, n_pass=10, n_labeled=20, alpha=0.05, delta=0.1)
    90
    """
    if n_pass <= 0 or n_labeled <= 0:
        return None
    r = k_false_pass / n_pass
    if r >= alpha:
        return None
    s = n_pass / n_labeled
    grid = np.unique(np.geomspace(max(n_labeled, 1), max_labels, 400).astype(np.int64))
    bound = _bound_at(grid, r, s, delta)
    hit = np.flatnonzero(bound <= alpha)
    if hit.size == 0:
        return None
    hi = int(grid[hit[0]])
    lo = int(grid[hit[0] - 1]) if hit[0] > 0 else n_labeled
    fine = np.arange(lo, hi + 1, dtype=np.int64)
    fb = _bound_at(fine, r, s, delta)
    return int(fine[np.flatnonzero(fb <= alpha)[0]])


def _bound_at(total: np.ndarray, r: float, s: float, delta: float) -> np.ndarray:
    passes = np.floor(s * total)
    false = np.floor(r * passes)
    return binomial_upper_bound(false, passes, delta=delta)


def replay(answers: pd.DataFrame, questions: Sequence[Question]) -> pd.Series:
    """Verdict codes of each check under ``questions`` (the decision rule of check-1 §3).

    Parameters
    ----------
    answers : pandas.DataFrame
        Rows of :func:`calibrate.dataset.answers` (columns ``check_id``,
        ``ask``, ``p``, ``name``, ``level``, ``confidence``).
    questions : sequence of Question
        The thresholds to apply, matched to answers by ``ask``.

    Returns
    -------
    pandas.Series
        ``PASS``/``FAIL``/``UNSURE`` per ``check_id``: the worst question.
        Checks missing an answer to one of the questions are left out.
    """
    if answers.empty or not questions:
        return pd.Series(dtype="int8", name="verdict")
    # Integer codes for checks and questions; a loop per question, vectorised over answers.
    ask_code, asks = _codes(answers["ask"])
    check_code, checks = _codes(answers["check_id"])
    got_check, got_code = [], []
    for q in questions:
        sel = np.flatnonzero(ask_code == asks.get_loc(q.ask)) if q.ask in asks else np.zeros(0, int)
        rows = answers.iloc[sel]
        if q.kind is Kind.YES_NO:
            ans = pd.to_numeric(rows["p"], errors="coerce").to_numpy(dtype=float)
            codes = decide(q, ans)
            # A yes/no answer without a probability cannot pass.
            codes = np.where(np.isnan(ans), UNSURE, codes)
        elif q.kind is Kind.CHOICE:
            codes = decide(q, rows["name"].astype(object).to_numpy(), _conf(rows))
        else:
            lv = pd.to_numeric(rows["level"], errors="coerce").to_numpy(dtype=float)
            codes = np.where(np.isnan(lv), UNSURE, decide(q, lv, _conf(rows)))
        got_check.append(check_code[sel])
        got_code.append(np.asarray(codes, dtype=np.int64))
    cc, code = np.concatenate(got_check), np.concatenate(got_code)
    code, cc = code[cc >= 0], cc[cc >= 0]
    # The worst question per check, checks in order of first appearance (as groupby(sort=False)).
    worst_code = np.full(len(checks), -1, np.int64)
    np.maximum.at(worst_code, cc, code)
    size = np.bincount(cc, minlength=len(checks))
    seen, first = np.unique(cc, return_index=True)
    order = seen[np.argsort(first, kind="stable")]
    order = order[size[order] == len(questions)]
    index = pd.Index(np.asarray(checks[order], dtype=object), dtype="str", name="check_id")
    return pd.Series(worst_code[order].astype("int8"), index=index, name="verdict")


def _conf(rows: pd.DataFrame) -> np.ndarray | None:
    if "confidence" not in rows:
        return None
    return pd.to_numeric(rows["confidence"], errors="coerce").to_numpy(dtype=float)


def disagreement_drivers(answers: pd.DataFrame, *, top: int | None = None) -> pd.DataFrame:
    """The answers most often followed by a person's rejection, per question.

    Each labeled answer is bucketed: a yes/no answer by its recorded result
    (``yes`` at or above ``pass``, ``unsure`` between ``fail`` and ``pass``,
    ``no`` in the fail range: below ``fail``, or below ``pass`` without one), a choice by the
    chosen name, a rubric by its level. For each question and bucket:
    ``n`` answers, ``rejected`` (the person found the submission not
    acceptable) with its rate and Wilson interval, and ``disagreements``: the
    rejections that followed a *passing* answer plus the acceptances that
    followed a *failing* one. Sorted by ``disagreements``, then rejection
    rate: the top rows name the questions to rewrite.

    The person judged the whole submission, not the question: a question
    whose passing answer is often rejected is lenient on what people care
    about, or asks about something else.

    Returns
    -------
    pandas.DataFrame
        Columns ``position``, ``ask``, ``kind``, ``answer``, ``result``, ``n``,
        ``rejected``, ``rejected_rate``, ``rejected_low``, ``rejected_high``,
        ``disagreements``.
    """
    cols = ["position", "ask", "kind", "answer", "result", "n", "rejected", "rejected_rate",
            "rejected_low", "rejected_high", "disagreements"]  # fmt: skip
    data = answers[answers["label"].notna()]
    if data.empty:
        return pd.DataFrame(columns=cols)
    # The buckets are a function of a few columns with few values: label one row of each
    # distinct combination, and count the rows per combination with integer codes.
    cols_in = [c for c in ("position", "ask", "kind", "result", "name", "level") if c in data]
    combo = np.zeros(len(data), np.int64)
    for c in cols_in:
        codes, uniques = pd.factorize(data[c], use_na_sentinel=False)
        combo = combo * (len(uniques) + 1) + codes
    _, first, inverse = np.unique(combo, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # combinations in order of first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    inverse = rank[inverse.ravel()]
    frame = _driver_keys(data.iloc[first[order]])
    y = data["label"].astype(bool).to_numpy()
    res = frame["result"].to_numpy()
    wrong = np.where((res == "pass")[inverse], ~y, (res == "fail")[inverse] & y)
    frame["n"] = np.bincount(inverse, minlength=len(frame))
    frame["rejected"] = np.bincount(inverse, weights=~y, minlength=len(frame)).astype(int)
    frame["disagreements"] = np.bincount(inverse, weights=wrong, minlength=len(frame)).astype(int)
    out = (
        frame.groupby(["position", "ask", "kind", "answer", "result"], sort=False)[
            ["n", "rejected", "disagreements"]
        ]
        .sum()
        .reset_index()
    )
    low, high = wilson_interval(out["rejected"].to_numpy(), out["n"].to_numpy())
    out["rejected_rate"] = out["rejected"] / out["n"]
    out["rejected_low"] = low
    out["rejected_high"] = high
    out = out.sort_values(["disagreements", "rejected_rate", "n"], ascending=[False, False, False])
    out = out[cols].reset_index(drop=True)
    return out.head(top) if top else out


def _driver_keys(data: pd.DataFrame) -> pd.DataFrame:
    """The bucket of each answer row: ``position``, ``ask``, ``kind``, ``answer`` and ``result``."""
    kind = data["kind"].astype(str).to_numpy()
    result = data["result"].astype(object).where(data["result"].notna(), "unknown").astype(str)
    # A yes/no answer is bucketed by what today's thresholds made of its probability.
    yes_no_names = result.map({"pass": "yes (p at or above pass)", "fail": "no (p in the fail range)",
                               "unsure": "unsure (p between fail and pass)"}).fillna("no answer")  # fmt: skip
    level = pd.to_numeric(data["level"], errors="coerce")
    answer = np.where(
        kind == "yes_no",
        yes_no_names.to_numpy(dtype=object),
        np.where(
            kind == "choice",
            data["name"].astype(object).fillna("(none)").to_numpy(dtype=object),
            ("level " + level.astype("Int64").astype(str)).to_numpy(dtype=object),
        ),
    )
    return pd.DataFrame(
        {
            "position": pd.to_numeric(data["position"], errors="coerce")
            .fillna(0)
            .astype(int)
            .to_numpy(),
            "ask": data["ask"].astype(str).to_numpy(),
            "kind": kind,
            "answer": answer,
            "result": result.to_numpy(),
        }
    )


def detect_model_change(subs: pd.DataFrame) -> ModelChange:
    """Which evaluator models answered these checks, and when the current one took over.

    The current model is the model of the latest check. ``changed_at`` is the
    time of its first check; ``interleaved`` is true when another model still
    answered after that (two models in use at once).
    """
    data = subs[["model", "at", "label"]].copy()
    data["model"] = data["model"].astype(object).where(data["model"].notna(), "(unknown model)")
    data["at"] = pd.to_datetime(data["at"], utc=True)
    timed = data[data["at"].notna()].sort_values("at", kind="stable")
    if data.empty:
        return ModelChange(None, (), None, None, False)
    current = str(timed["model"].iloc[-1]) if len(timed) else str(data["model"].iloc[-1])
    g = data.groupby("model", sort=False)
    models = []
    for name, grp in g:
        models.append(
            {
                "model": str(name),
                "checks": int(len(grp)),
                "labeled": int(grp["label"].notna().sum()),
                "first_at": _iso(grp["at"].min()),
                "last_at": _iso(grp["at"].max()),
            }
        )
    models.sort(key=lambda m: (m["first_at"] or "", m["model"]))
    if len(models) == 1:
        return ModelChange(current, tuple(models), None, None, False)
    first_current = timed.loc[timed["model"] == current, "at"].min() if len(timed) else pd.NaT
    before = timed[timed["at"] < first_current]
    previous = str(before["model"].iloc[-1]) if len(before) else None
    interleaved = bool(((timed["at"] > first_current) & (timed["model"] != current)).any())
    return ModelChange(current, tuple(models), _iso(first_current), previous, interleaved)


def recent_volume(subs: pd.DataFrame, *, days: int = 28) -> Volume:
    """Checks and labels over the last ``days`` days of ``subs`` (or its whole span if shorter).

    Only the latest check of each attempt counts (an earlier, blocked check
    of the same attempt is not a separate submission).
    """
    latest = subs[subs["is_latest"].astype("boolean").fillna(True).to_numpy(dtype=bool)]
    at = pd.to_datetime(latest["at"], utc=True)
    at = at[at.notna()]
    if at.empty:
        return Volume(0.0, 0, 0)
    end = at.max()
    start = max(at.min(), end - pd.Timedelta(days=days))
    span_days = max((end - start).total_seconds() / 86400.0, 1.0)
    sel = (at >= start).reindex(latest.index, fill_value=False).to_numpy(dtype=bool)
    recent = latest[sel]
    return Volume(span_days, int(len(recent)), int(recent["label"].notna().sum()))


def hours_saved_per_month(
    *, checks_per_month: float, auto_pass: float, auto_fail: float, audit_rate: float | None,
    minutes_per_review: float,
) -> float:  # fmt: skip
    """Hours of review saved per month once the check acts alone.

    Today a person reviews every submission. After the switch a person sees
    the unsure ones and the audited share of the passes; the passes and
    fails the check decides alone are saved::

        saved = checks_per_month x (auto_pass x (1 - audit_rate) + auto_fail) x minutes / 60
    """
    if not all(np.isfinite(x) for x in (checks_per_month, auto_pass, auto_fail)):
        return float("nan")
    audited = audit_rate if audit_rate is not None else 0.0
    reviews = checks_per_month * (auto_pass * (1 - audited) + auto_fail)
    return float(reviews * minutes_per_review / 60.0)


# --------------------------------------------------------------------------- the thresholds result


@dataclass
class ThresholdView:
    """What readiness needs from the threshold search, in the JSON shape of issue 5.

    Attributes
    ----------
    status : {"ok", "unattainable", "insufficient_data"}
    check : list of dict
        The suggested questions in check-1's keys plus ``kind`` (QUESTION).
    certified : dict or None
        ``false_pass_upper``, ``false_fail_upper``, ``confidence`` when the
        status is ``ok``; ``None`` otherwise (nothing is certified).
    best_bounds : dict
        The lowest bounds a single candidate reached: a diagnostic, not a
        certificate.
    expected : dict
        ``auto_pass``, ``auto_fail``, ``unsure``: shares under the suggestion.
    current : dict
        The labeled history replayed under today's thresholds.
    n_labeled : int
    needed_labels : int or None
        The search's own estimate of the labels still needed (``more``), when it gives one.
    needed : NeededLabels or None
        That estimate whole (total, probability, resamples certified), when
        the search ran it (:mod:`calibrate.analysis.needed`).
    display_factory : callable or None
        Builds the trade-off display (an object with ``plot(ax=None)``), when
        the search offers one; see :meth:`make_display`.
    raw : object
        The search's own result, for the faces.
    """

    status: str
    check: list[dict[str, Any]]
    certified: dict[str, Any] | None
    expected: dict[str, Any]
    current: dict[str, Any]
    best_bounds: dict[str, Any] = field(default_factory=dict)
    n_labeled: int = 0
    needed_labels: int | None = None
    needed: NeededLabels | None = None
    display_factory: Callable[[], Any] | None = None
    note: str = ""
    raw: Any = None

    def make_display(self) -> Any:
        """The trade-off display, or ``None`` when the search offers none."""
        return self.display_factory() if self.display_factory is not None else None

    @classmethod
    def from_mapping(
        cls,
        doc: Mapping[str, Any],
        *,
        display_factory: Callable[[], Any] | None = None,
        raw: Any = None,
    ) -> ThresholdView:
        """Build from a step object of ``calibrate thresholds --format json``."""
        needed = doc.get("needed_labels")
        estimate = NeededLabels.from_dict(needed) if isinstance(needed, Mapping) else None
        if isinstance(needed, Mapping):  # {"total": .., "more": .., "probability": ..}
            needed = needed.get("more", needed.get("additional", needed.get("total")))
        return cls(
            status=str(doc.get("status", "insufficient_data")),
            check=[dict(q) for q in (doc.get("check") or [])],
            certified=dict(doc["certified"]) if doc.get("certified") else None,
            best_bounds=dict(doc.get("best_bounds") or {}),
            expected=dict(doc.get("expected") or {}),
            current=dict(doc.get("current") or {}),
            n_labeled=int(doc.get("n_labeled") or 0),
            needed_labels=int(needed)
            if isinstance(needed, int | float) and np.isfinite(needed)
            else None,
            needed=estimate,
            display_factory=display_factory,
            note=str(doc.get("note") or doc.get("reason") or ""),
            raw=raw if raw is not None else doc,
        )


def suggested_questions(
    check: Sequence[Mapping[str, Any]], current: Sequence[Question]
) -> list[Question]:
    """Turn QUESTION dicts back into :class:`Question` objects, keeping texts from ``current``.

    A choice keeps its ``one_of`` descriptions and a rubric its ``levels``
    texts from the current question of the same ``ask`` when the suggestion
    leaves them out.
    """
    by_ask = {q.ask: q for q in current}
    out = []
    for item in check:
        body = {k: v for k, v in item.items() if k != "kind"}
        cur = by_ask.get(str(item.get("ask")))
        kind = str(item.get("kind") or (cur.kind.value if cur else "yes_no"))
        if kind == "choice" and "one_of" not in body:
            names = dict(cur.one_of) if cur and cur.one_of else {}
            for n in [*_listify(body.get("pass")), *_listify(body.get("unsure"))]:
                names.setdefault(str(n), str(n))
            if len(names) < 2:
                names.setdefault("(other)", "any other answer")
            body["one_of"] = names
        if kind == "rubric" and "levels" not in body:
            levels = list(cur.levels) if cur and cur.levels else [f"level {i}" for i in range(10)]
            body["levels"] = levels
        if kind == "yes_no" and body.get("fail") is None:
            body.pop("fail", None)
        if body.get("confidence") is None:
            body.pop("confidence", None)
        out.append(Question.from_check_item(body))
    return out


def _listify(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


def check_items(questions: Sequence[Question]) -> list[dict[str, Any]]:
    """Questions as QUESTION dicts: check-1's keys plus ``kind`` (the JSON shape of issue 5)."""
    out = []
    for q in questions:
        item = q.to_check_item()
        body: dict[str, Any] = {"ask": item.pop("ask"), "kind": q.kind.value}
        body.update(item)
        out.append(body)
    return out


# --------------------------------------------------------------------------- the step


@dataclass(frozen=True)
class Enforcement:
    """A step already enforced: the question is no longer whether to drop ``advisory``.

    Parameters
    ----------
    monitor : StepMonitor
        ``calibrate monitor`` on the step's checks recorded with ``advisory:
        false`` in the report's window.
    in_process_file : bool or None, default=None
        Whether the current process version says ``advisory: false`` (``None``:
        no process file names the step).
    """

    monitor: StepMonitor
    in_process_file: bool | None = None

    @property
    def alarm(self) -> bool:
        """Whether the monitor alarms (its alarm says: return the step to advisory)."""
        return self.monitor.status == "alarm"

    @property
    def since(self) -> str:
        """The day of the first enforced check in the window, ``YYYY-MM-DD``."""
        at = self.monitor.enforced_since
        return f"{at:%Y-%m-%d}" if at is not None else "an unknown day"


#: The two things to do with an enforced step (:func:`enforced_pattern`).
KEEP_ENFORCED, RETURN_TO_ADVISORY = "keep enforced", "return to advisory"
#: What each monitor status says, in a sentence's middle.
_MONITOR_WORDS = {
    "ok": "the monitor has no alarm",
    "warning": "the monitor has no alarm, only label-free warnings",
    "no_audits": "the monitor has no audited passes yet",
    "alarm": "the monitor alarms",
}


def enforced_pattern(decision: str, enforcement: Enforcement) -> tuple[str, dict[str, Any]]:
    """What to do with a step already enforced, and the sentence that leads its reasons.

    Keep it enforced only when the evidence would drop ``advisory`` today
    (READY) and the monitor does not alarm; otherwise put ``advisory: true``
    back: an alarm says the check got worse since the switch, NO says it cannot
    meet the limits, NOT YET that nothing certifies its thresholds.

    Returns
    -------
    (str, dict)
        The leading reason, and the pattern ``{"recommended", "why",
        "approve_step", "enforced"}`` (``recommended`` is
        :data:`KEEP_ENFORCED` or :data:`RETURN_TO_ADVISORY`).
    """
    m = enforcement.monitor
    since = f"Enforced since {enforcement.since} (advisory: false)"
    monitor = _MONITOR_WORDS.get(m.status, f"the monitor says {m.status}")
    back = (
        "put advisory: true back on this step, so that a person decides every submission "
        "again, and drop it again once the step is READY"
    )
    if enforcement.alarm:
        alarm = m.warnings[0] if m.warnings else "see Since the switch"
        lead = f"{since}; the monitor alarms ({alarm}): return it to advisory."
        why = f"The monitor alarms on the enforced check: {back}."
    elif decision == "READY":
        lead = f"{since}; the evidence certifies the check and {monitor}: keep it enforced."
        why = (
            "Keep advisory: false and keep auditing passes as planned, so that the monitor "
            "catches a rise of the false-pass rate. The plan is for the thresholds in force: "
            "with new ones pasted, `calibrate monitor` plans it again at their passes."
        )
        if m.status == "no_audits":
            why += " Draw the first audit now (see Since the switch)."
    elif decision == "NO":
        lead = (
            f"{since}, but the evidence says the check cannot meet the limits (see below), "
            f"although {monitor}: return it to advisory."
        )
        why = f"The labeled evidence does not support the enforced check: {back}."
    else:
        lead = (
            f"{since}, but nothing certifies its thresholds yet and {monitor}, which certifies "
            "nothing: return it to advisory until the step is READY."
        )
        why = f"Nothing certifies the enforced thresholds yet: {back}."
    rec = KEEP_ENFORCED if decision == "READY" and not enforcement.alarm else RETURN_TO_ADVISORY
    return lead, {"recommended": rec, "why": why, "enforced": True}


@dataclass
class StepReadiness:
    """The decision for one checked step and its current evaluator model, with the evidence.

    The JSON face is :meth:`to_dict`; the DataFrames and result objects
    (agreement tables, calibration, the threshold search) are kept for the
    report's tables and figures.
    """

    process: str
    step: str
    model: str | None
    decision: str
    reasons: list[str]
    criteria: list[Criterion]
    needed_labels: int | None
    needed_days: float | None
    suggested_check: list[dict[str, Any]]
    current_check: list[dict[str, Any]]
    thresholds: ThresholdView
    audit: AuditPlan | None
    hours_saved_per_month: float
    prescreen_hours_per_month: float
    pattern: dict[str, Any]
    drift: Drift
    model_change: ModelChange
    volume: Volume
    n_labeled: int
    left_out: dict[str, int]
    observed: dict[str, Any]
    error: Rate
    truncation: Rate
    automation_bias: dict[str, Any]
    has_approve_step: bool
    decision_on_current_model: str | None = None
    # evidence kept for the faces
    agreement: pd.DataFrame | None = None
    by_week: pd.DataFrame | None = None
    by_model: pd.DataFrame | None = None
    approvers: pd.DataFrame | None = None
    drivers: pd.DataFrame | None = None
    calibration: list[Any] = field(default_factory=list)
    #: The audit the monitor's sequential test needs (:func:`calibrate.analysis.audit.plan_audit`).
    sequential_audit: SequentialAuditPlan | None = None
    #: The search's labels-needed estimate, timed at the step's labeling rate, when it is the
    #: number asked for (``needed_labels`` is then its ``more``).
    needed: NeededLabels | None = None
    #: Set when the step is already enforced: the report speaks of keeping it so or not.
    enforcement: Enforcement | None = None

    def enforced_dict(self) -> dict[str, Any] | None:
        """``enforced`` of report.json: since when, what the monitor says, what to do."""
        e = self.enforcement
        if e is None:
            return None
        return {
            "since": e.monitor.enforced_since.isoformat() if e.monitor.enforced_since else None,
            "in_process_file": e.in_process_file,
            "monitor_status": e.monitor.status,
            "recommended": self.pattern.get("recommended"),
        }

    def needed_dict(self) -> dict[str, Any] | None:
        """``needed_labels`` of report.json: ``{"total", "more", "probability", "weeks", ...}``.

        The search's estimate when it is the number asked for; otherwise the
        number asked for with ``probability`` ``null`` (the minimum of labeled
        checks, or the bound solved at the observed rates); ``null`` when more
        labels cannot help (NO).
        """
        if self.needed_labels is None:
            return None
        if self.needed is not None:
            return self.needed.to_dict()
        weeks = self.needed_days / 7 if self.needed_days is not None else None
        return {
            "total": self.n_labeled + self.needed_labels,
            "more": self.needed_labels,
            "probability": None,
            "weeks": None if weeks is None else round(weeks, 1),
        }

    @property
    def audit_rate(self) -> float | None:
        """The share of passes to audit: the sequential plan's (1 when none suffices)."""
        if self.sequential_audit is not None:
            rate = self.sequential_audit.rate
            return rate if rate is not None else 1.0
        return self.audit.rate if self.audit is not None else None

    @property
    def sort_key(self) -> tuple[int, float]:
        """READY first, then NOT_YET, then NO; within each the most hours saved first."""
        hours = self.hours_saved_per_month if np.isfinite(self.hours_saved_per_month) else -1.0
        return DECISIONS.index(self.decision), -hours

    def to_dict(self) -> dict[str, Any]:
        """The step object of report.json (``report.schema.json``)."""
        t = self.thresholds
        return {
            "process": self.process,
            "step": self.step,
            "model": self.model,
            "decision": self.decision,
            "reasons": list(self.reasons),
            "criteria": [c.to_dict() for c in self.criteria],
            "needed_labels": self.needed_dict(),
            "needed_days": _plain(self.needed_days),
            "suggested_check": self.suggested_check,
            "current_check": self.current_check,
            "certified": (
                {k: _plain(v) for k, v in t.certified.items()} if t.certified is not None else None
            ),
            "best_bounds": {k: _plain(v) for k, v in t.best_bounds.items()},
            "expected": {k: _plain(v) for k, v in t.expected.items()},
            "current": {k: _plain(v) for k, v in t.current.items()},
            "status": t.status,
            "audit_rate": _plain(self.audit_rate),
            "audit": self.audit.to_dict() if self.audit else None,
            "sequential_audit": self.sequential_audit.to_dict() if self.sequential_audit else None,
            "hours_saved_per_month": _plain(self.hours_saved_per_month),
            "prescreen_hours_per_month": _plain(self.prescreen_hours_per_month),
            "pattern": self.pattern,
            "enforced": self.enforced_dict(),
            "n_labeled": self.n_labeled,
            "left_out": dict(self.left_out),
            "observed": _plain_tree(self.observed),
            "error_rate": self.error.to_dict(),
            "truncation_rate": self.truncation.to_dict(),
            "drift": self.drift.to_dict(),
            "model_change": self.model_change.to_dict(),
            "decision_on_current_model": self.decision_on_current_model,
            "volume": self.volume.to_dict(),
            "automation_bias": _plain_tree(self.automation_bias),
            "agreement": agreement_mod.agreement_records(self.agreement)
            if self.agreement is not None
            else [],
            "drivers": _records(self.drivers),
        }


def current_wording(
    subs: pd.DataFrame, answers: pd.DataFrame, questions: Sequence[Question]
) -> pd.Series:
    """Whether each check was asked the current questions (boolean, indexed like ``subs``).

    The current questions are those of the process file (``questions``), else
    those of the latest check. A check matches when it answered exactly that
    set of ``ask`` texts; an ``error`` verdict (no answers) matches.
    """
    if questions:
        current = frozenset(q.ask for q in questions)
    else:
        timed = answers.sort_values("at", kind="stable") if "at" in answers else answers
        last = timed["check_id"].iloc[-1] if len(timed) else None
        current = (
            frozenset(timed.loc[timed["check_id"] == last, "ask"])
            if last is not None
            else frozenset()
        )
    # Counts per check instead of a set per check: it matches when every distinct ask
    # it answered is current and it answered all of them.
    rows = _answer_rows(subs["check_id"], answers["check_id"]) if len(answers) else np.zeros(0, int)
    ask_code, asks = _codes(answers["ask"]) if len(answers) else (rows, pd.Index([]))
    keep = (rows >= 0) & (ask_code >= 0)
    check, ask = _distinct_pairs(rows[keep], ask_code[keep], len(asks))
    is_current = np.array([a in current for a in asks], bool)
    n = np.bincount(check, minlength=len(subs))
    known = np.bincount(check, weights=is_current[ask], minlength=len(subs))
    # A check without answers (an error verdict) matches: it was asked the current questions.
    match = (n == 0) | ((n == known) & (known == len(current)))
    return pd.Series(match, index=subs.index)


def assess_step(
    subs: pd.DataFrame,
    answers: pd.DataFrame,
    *,
    thresholds: ThresholdView | Mapping[str, Any],
    questions: Sequence[Question] = (),
    options: ReadinessOptions | None = None,
    has_approve_step: bool = False,
    calibration: Sequence[Any] = (),
    enforcement: Enforcement | None = None,
) -> StepReadiness:
    """The decision for one checked step, from its checks, answers and threshold search.

    Parameters
    ----------
    subs : pandas.DataFrame
        The step's checks, all models, as :func:`calibrate.dataset.submissions`.
    answers : pandas.DataFrame
        The step's answers, as :func:`calibrate.dataset.answers`.
    thresholds : ThresholdView or mapping
        The threshold search on the current model and wording: a
        :class:`ThresholdView` or a step object of ``calibrate thresholds
        --format json`` (issue 5).
    questions : sequence of Question
        The step's questions as the process file defines them (may be empty).
    options : ReadinessOptions, optional
    has_approve_step : bool, default=False
        Whether people's decisions come from an ``approve`` step (a signature
        may be required), which makes pre-screening a candidate pattern.
    calibration : sequence of QuestionCalibration
        Kept for the report's figures.
    enforcement : Enforcement, optional
        The step is already enforced: the pattern and the first reason say
        whether to keep it so (:func:`enforced_pattern`), and the audit plan is
        the monitor's, at the enforced thresholds.

    Returns
    -------
    StepReadiness
    """
    opts = options or ReadinessOptions()
    tv = (
        thresholds
        if isinstance(thresholds, ThresholdView)
        else ThresholdView.from_mapping(thresholds)
    )
    if subs.empty:
        raise ValueError("assess_step needs at least one check of the step")
    process, step = str(subs["process"].iloc[0]), str(subs["step"].iloc[0])
    change = detect_model_change(subs)
    model = change.current
    model_col = subs["model"].astype(object).where(subs["model"].notna(), "(unknown model)")
    cur_model = subs[(model_col == model).to_numpy()]
    ans_model = answers[isin(answers["check_id"], cur_model["check_id"])]
    wording = current_wording(cur_model, ans_model, questions)
    cur = cur_model[wording.to_numpy(dtype=bool)]
    ans = ans_model[isin(ans_model["check_id"], cur["check_id"])]
    left_out = {
        "other_models": int(len(subs) - len(cur_model)),
        "other_wording": int(len(cur_model) - len(cur)),
    }
    labeled = cur[cur["label"].notna()]
    n_labeled = int((labeled["verdict"] != "error").sum())

    # Rates of the evaluator's health, over every check of the current model.
    error = Rate(int((cur["verdict"] == "error").sum()), int(len(cur)))
    truncation = Rate(int(cur["truncated"].astype(bool).sum()), int(len(cur)))
    drift = drift_test(labeled["at"], labeled["verdict"], labeled["label"], level=opts.drift_level)
    volume = recent_volume(cur, days=opts.recent_days)

    # The suggestion (or today's thresholds) replayed on the labeled history: a point
    # estimate beside the bound.
    current_qs = list(questions) or _questions_from_answers(ans)
    try:
        suggested_qs = (
            suggested_questions(tv.check, current_qs) if tv.status == "ok" and tv.check else []
        )
    except Exception:  # noqa: BLE001 - a malformed suggestion must not sink the report
        suggested_qs = []
    lab_ans = ans[ans["label"].notna()]
    y = labeled.set_index("check_id")["label"].astype(bool)
    observed = {
        "suggested": _replay_rates(lab_ans, suggested_qs, y) if suggested_qs else None,
        "current": _replay_rates(lab_ans, current_qs, y) if current_qs else None,
        "recorded": _recorded_rates(labeled),
    }
    source = next((k for k in ("suggested", "current", "recorded") if observed[k]), None)
    point = {**observed[source], "source": source} if source else None

    auto_pass = _num(tv.expected.get("auto_pass"))
    auto_fail = _num(tv.expected.get("auto_fail"))
    if auto_pass is None and suggested_qs and observed["suggested"]:
        auto_pass, auto_fail = (
            observed["suggested"]["auto_pass"],
            observed["suggested"]["auto_fail"],
        )
    coverage = (auto_pass or 0.0) + (auto_fail or 0.0) if auto_pass is not None else None

    # Without a certificate the search reports the best single-candidate bounds: shown, never passed.
    certified = tv.status == "ok" and tv.certified is not None
    bounds = tv.certified if certified else tv.best_bounds
    fp_upper = _num(bounds.get("false_pass_upper"))
    ff_upper = _num(bounds.get("false_fail_upper"))
    plenty = n_labeled >= opts.min_labels
    best_cov = best_observed_coverage(tv.raw, alpha=opts.alpha, beta=opts.beta)
    # The denominators the shares are of, so that no figure goes without its n.
    cov_n = int(tv.n_labeled or n_labeled)
    best_n = coverage_denominator(tv.raw)
    if best_cov is not None:
        right_way = best_cov >= opts.min_coverage
    else:
        right_way = _points_right_way(point, opts)
    poor = plenty and (tv.status == "unattainable" or not right_way)

    # Labels needed: the search's own estimate (it reruns the search on resampled data); without
    # one, what both bounds need to reach their limits at the observed rates.
    estimate = tv.needed if tv.status == "insufficient_data" and tv.needed is not None else None
    hopeless = estimate if estimate is not None and estimate.more is None else None
    estimate = estimate if estimate is not None and estimate.more is not None else None
    needed = estimate.more if estimate is not None else tv.needed_labels
    if needed is None and point is not None and right_way and hopeless is None:
        totals = [
            labels_needed(
                k_false_pass=point[key]["k"], n_pass=point[key]["n"], n_labeled=max(n_labeled, 1),
                alpha=limit, delta=opts.delta,
            )
            for key, limit in (("false_pass", opts.alpha), ("false_fail", opts.beta))
            if point[key]["n"] > 0
        ]  # fmt: skip
        if totals and all(t is not None for t in totals):
            needed = max(0, max(totals) - n_labeled)
    if needed is not None and tv.status != "ok" and estimate is None:
        # The search certifies along a path and can stop early on a few unlucky labels, so
        # an estimate at the observed rates is a lower bound: ask for at least a tenth more.
        needed = max(needed, math.ceil(NEEDED_FLOOR * n_labeled), 1)
    if not plenty:
        # Too thin to judge: at least the floor, more if the bound needs it.
        needed = max(needed or 0, opts.min_labels - n_labeled)

    criteria = _criteria(
        opts=opts, n_labeled=n_labeled, tv=tv, fp_upper=fp_upper, ff_upper=ff_upper,
        coverage=coverage, drift=drift, change=change, error=error, truncation=truncation,
        poor=poor, plenty=plenty, point=point, certified=certified, best_cov=best_cov,
        cov_n=cov_n, best_n=best_n,
    )  # fmt: skip
    decide_args = dict(change=change, drift=drift, tv=tv, poor=poor, point=point, opts=opts,
                       best_cov=best_cov, right_way=right_way, cov_n=cov_n,
                       best_n=best_n)  # fmt: skip
    decision, reasons = _decide(criteria, **decide_args)
    without_change = None
    if change.changed:
        rest = [c for c in criteria if c.name != "evaluator_models"]
        without_change, _ = _decide(rest, **decide_args)
        if change.changed_at is not None and not change.interleaved:
            how = f"re-run with --since {_since_arg(cur_model, subs, change)}"
        else:
            how = f"re-run with --model {model}"  # no clean cut in time to start from
        reasons.append(
            f"On {model} alone ({n_labeled} labeled) the other criteria give "
            f"{without_change.replace('_', ' ')}: {how} to judge the new model on its own."
        )

    if decision == "READY":
        needed = 0
    elif decision == "NO":
        needed = None
    needed_days = None
    if needed and np.isfinite(volume.labeled_per_week) and volume.labeled_per_week > 0:
        needed_days = needed / (volume.labeled_per_week / 7)
    # The estimate is the number asked for unless the minimum of labeled checks asks for more.
    if estimate is not None and needed == estimate.more:
        estimate = estimate.at_rate(volume.labeled_per_week)
    else:
        estimate = None
    if decision == "NOT_YET" and hopeless is not None:
        reasons.append(f"The threshold search's estimate: {hopeless.sentence()}.")
    if decision == "NOT_YET" and needed:
        reasons.append(
            _capital(estimate.sentence()) + "."
            if estimate is not None
            else _needed_text(needed, needed_days)
        )

    # After the switch: audit and hours saved.
    audit = None
    sequential = None
    hours = float("nan")
    prescreen_hours = float("nan")
    plannable = certified and auto_pass is not None and np.isfinite(volume.checks_per_week)
    if enforcement is not None:
        # One plan for an enforced step: the monitor's, at the thresholds in force and the
        # passes it has seen (none while it alarms: the step goes back to advisory).
        sequential = enforcement.monitor.plan
    elif plannable:
        # Only a certified suggestion has shares worth planning on.
        audit = audit_plan(
            alpha=opts.alpha, passes_per_week=volume.checks_per_week * auto_pass,
            weeks=opts.audit_weeks, factor=opts.audit_factor, level=opts.audit_level,
            power=opts.audit_power,
        )  # fmt: skip
        # The audit the monitor's sequential test needs: what the report plans and the hours count.
        sequential = plan_audit(
            passes_per_week=volume.checks_per_week * auto_pass, alpha=opts.alpha,
            delta=opts.delta, weeks=opts.audit_weeks, factor=opts.audit_factor,
            power=opts.audit_power,
        )  # fmt: skip
    if plannable:
        rate = sequential.rate if sequential is not None and sequential.rate is not None else 1.0
        hours = hours_saved_per_month(
            checks_per_month=volume.checks_per_month, auto_pass=auto_pass,
            auto_fail=auto_fail or 0.0, audit_rate=rate,
            minutes_per_review=opts.minutes_per_review,
        )  # fmt: skip
        prescreen_hours = hours_saved_per_month(
            checks_per_month=volume.checks_per_month, auto_pass=0.0, auto_fail=auto_fail or 0.0,
            audit_rate=None, minutes_per_review=opts.minutes_per_review,
        )  # fmt: skip

    agree = agreement_mod.agreement(cur, by=[])
    # Weeks by where their labels come from: reviews of every verdict before the switch, audit
    # draws after it (rates flagged where the draw's probabilities differ).
    by_week = agreement_mod.agreement(subs, by=["model", "week", "labels"])
    # The same split per model: an audit draw's labels are not pooled with advisory reviews.
    by_model = agreement_mod.agreement(subs, by=["model", "labels"])
    appr = agreement_mod.approvers(cur) if len(labeled) else None
    bias = _automation_bias(cur, appr)
    drivers = disagreement_drivers(ans, top=8)
    distrust = any(
        not c.ok
        and (
            c.name.startswith("drift_")
            or c.name in ("evaluator_models", "error_rate", "truncation_rate")
        )
        for c in criteria
    )
    if enforcement is not None:
        lead, pattern = enforced_pattern(decision, enforcement)
        pattern["approve_step"] = has_approve_step
        reasons.insert(0, lead)
    else:
        pattern = _pattern(
            decision=decision, has_approve_step=has_approve_step, opts=opts,
            ff_upper=ff_upper if certified and not distrust else None,
            auto_fail=auto_fail, prescreen_hours=prescreen_hours,
        )  # fmt: skip
    return StepReadiness(
        process=process,
        step=step,
        model=model,
        decision=decision,
        reasons=reasons,
        criteria=criteria,
        needed_labels=needed,
        needed_days=needed_days,
        suggested_check=check_items(suggested_qs)
        if suggested_qs
        else _as_items(tv.check, current_qs),
        current_check=check_items(current_qs),
        thresholds=tv,
        audit=audit,
        sequential_audit=sequential,
        hours_saved_per_month=hours,
        prescreen_hours_per_month=prescreen_hours,
        pattern=pattern,
        drift=drift,
        model_change=change,
        volume=volume,
        n_labeled=n_labeled,
        left_out=left_out,
        observed=observed,
        error=error,
        truncation=truncation,
        automation_bias=bias,
        has_approve_step=has_approve_step,
        decision_on_current_model=without_change,
        agreement=agree,
        by_week=by_week,
        by_model=by_model,
        approvers=appr,
        drivers=drivers,
        calibration=list(calibration),
        needed=estimate,
        enforcement=enforcement,
    )


def _questions_from_answers(ans: pd.DataFrame) -> list[Question]:
    """The questions as the answers' threshold columns describe them (no process file)."""
    from calibrate.dataset import question_from_row

    if ans.empty:
        return []
    first = ans.sort_values("position", kind="stable").drop_duplicates("ask")
    out = []
    for rec in first.to_dict("records"):
        try:
            q = question_from_row(rec)
        except Exception:  # noqa: BLE001 - a question without thresholds is shown as asked
            continue
        if q.kind is Kind.YES_NO and q.pass_p is None:
            continue
        out.append(q)
    return out


def _as_items(
    check: Sequence[Mapping[str, Any]], current: Sequence[Question]
) -> list[dict[str, Any]]:
    """QUESTION dicts with the answer texts of ``current`` restored (as the search gives them, else)."""
    try:
        return check_items(suggested_questions(check, current))
    except Exception:  # noqa: BLE001 - keep the search's own dicts when they cannot be parsed
        return [dict(q) for q in check]


def _since_arg(cur_model: pd.DataFrame, subs: pd.DataFrame, change: ModelChange) -> str:
    """A ``--since`` value that starts the window at the model change (to the second when safe)."""
    first = pd.Timestamp(change.changed_at)
    floor = first.floor("s")
    others = subs[~isin(subs["check_id"], cur_model["check_id"])]
    before = pd.to_datetime(others["at"], utc=True)
    safe = before.isna().all() or bool((before.dropna() < floor).all())
    stamp = floor if safe else first
    return stamp.strftime("%Y-%m-%dT%H:%M:%S") + ("" if safe else f".{stamp.microsecond:06d}") + "Z"


def _points_right_way(point: dict[str, Any] | None, opts: ReadinessOptions) -> bool:
    """Whether the observed (point) rates already meet the limits, so more labels would help."""
    if not point or not point["false_pass"]["n"]:
        return False
    fp = point["false_pass"]["rate"]
    ff = point["false_fail"]["rate"]
    return (
        fp is not None
        and fp < opts.alpha
        and (ff is None or ff < opts.beta)
        and point["coverage"] >= opts.min_coverage
    )


def _recorded_rates(labeled: pd.DataFrame) -> dict[str, Any] | None:
    if labeled.empty:
        return None
    v = labeled["verdict"].astype(str).to_numpy()
    y = labeled["label"].astype(bool).to_numpy()
    return _rates_from(v == "pass", v == "fail", y)


def _replay_rates(
    lab_ans: pd.DataFrame, qs: Sequence[Question], y: pd.Series
) -> dict[str, Any] | None:
    codes = replay(lab_ans, qs)
    if codes.empty:
        return None
    # The label of each replayed check, looked up by integer codes rather than a text index.
    at = _answer_rows(pd.Series(y.index), pd.Series(codes.index))
    yy = np.where(at >= 0, y.to_numpy(dtype=bool)[np.maximum(at, 0)], True)
    c = codes.to_numpy()
    return _rates_from(c == PASS, c == FAIL, yy)


def _rates_from(passed: np.ndarray, failed: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    n = int(len(y))
    fp = Rate(int((passed & ~y).sum()), int(passed.sum()))
    ff = Rate(int((failed & y).sum()), int(failed.sum()))
    return {
        "n": n,
        "false_pass": fp.to_dict(),
        "false_fail": ff.to_dict(),
        "auto_pass": float(passed.mean()) if n else float("nan"),
        "auto_fail": float(failed.mean()) if n else float("nan"),
        "coverage": float((passed | failed).mean()) if n else 0.0,
    }


def _criteria(
    *, opts: ReadinessOptions, n_labeled: int, tv: ThresholdView, fp_upper: float | None,
    ff_upper: float | None, coverage: float | None, drift: Drift, change: ModelChange,
    error: Rate, truncation: Rate, poor: bool, plenty: bool, point: dict[str, Any] | None,
    certified: bool = True, best_cov: float | None = None, cov_n: int = 0, best_n: int = 0,
) -> list[Criterion]:  # fmt: skip
    thin = "NO" if poor else "NOT_YET"
    conf = 1 - opts.delta
    which = _SOURCE_WORDS.get(point.get("source") if point else None, "today's")
    out = [
        Criterion(
            "labeled_submissions", n_labeled, opts.min_labels, n_labeled >= opts.min_labels,
            "NOT_YET", "labeled checks on the current model and wording",
            f"{n_labeled} labeled (error verdicts excluded); at least {opts.min_labels} needed",
        ),
        Criterion(
            "false_pass_upper", fp_upper, opts.alpha,
            certified and fp_upper is not None and fp_upper <= opts.alpha,
            thin, f"certified false-pass bound ({conf:.0%} confidence)",
            _bound_detail(fp_upper, point and point["false_pass"], "false passes", tv.status, which),
        ),
        Criterion(
            "false_fail_upper", ff_upper, opts.beta,
            certified and ff_upper is not None and ff_upper <= opts.beta,
            thin, f"certified false-fail bound ({conf:.0%} confidence)",
            _bound_detail(ff_upper, point and point["false_fail"], "false fails", tv.status, which),
        ),
        Criterion(
            "coverage", coverage, opts.min_coverage,
            coverage is not None and coverage >= opts.min_coverage,
            "NO" if plenty and tv.status == "ok" else thin,
            "share decided without a person (pass + fail)",
            ("no thresholds to measure" if coverage is None else
             f"{share_text(coverage, cov_n)} expected under the "
             f"{'suggested' if certified else 'current'} thresholds")
            + ("" if best_cov is None else
               f"; at best {best_text(f'{best_cov:.1%}', best_n)}, among the searched thresholds "
               "with observed error rates within the limits"),
        ),
    ]  # fmt: skip
    for t in drift.tests:
        name = f"drift_{t.rate}"
        out.append(
            Criterion(
                name,
                _plain(t.p_value),
                t.level,
                t.testable and not t.drifted,
                "NO" if t.testable else "NOT_YET",
                f"no rise in the {t.rate.replace('_', '-')} rate (one-sided p-value)",
                (
                    f"earlier {t.earlier.text()} vs recent {t.recent.text()}; {t.method} test"
                    if t.testable
                    else "not testable: a half of the window has none"
                ),
            )  # fmt: skip
        )
    models_detail = ", ".join(
        f"{m['model']} ({m['checks']} checks from {m['first_at']})" for m in change.models
    )
    out.append(
        Criterion(
            "evaluator_models",
            len(change.models),
            1,
            len(change.models) <= 1,
            "NO",
            "one evaluator model throughout the window",
            models_detail or "no checks",
        )
    )
    out.append(
        Criterion(
            "error_rate",
            _plain(error.rate),
            opts.max_error_rate,
            error.n > 0 and error.rate <= opts.max_error_rate,
            # A rate over a handful of checks is noise: wait rather than refuse.
            "NO" if error.n >= MIN_N else "NOT_YET",
            "share of error verdicts (the evaluator did not answer)",
            # Above its limit, the rate's digits keep "above the limit" true in print.
            error.text_against(opts.max_error_rate, ">")
            if error.n and error.rate > opts.max_error_rate
            else error.text(),
        )
    )
    out.append(
        Criterion(
            "truncation_rate",
            _plain(truncation.rate),
            opts.max_truncation_rate,
            truncation.n > 0 and truncation.rate <= opts.max_truncation_rate,
            "NO" if truncation.n >= MIN_N else "NOT_YET",
            "share of checks with truncated run data",
            # Above its limit, the rate's digits keep "above the limit" true in print.
            truncation.text_against(opts.max_truncation_rate, ">")
            if truncation.n and truncation.rate > opts.max_truncation_rate
            else truncation.text(),
        )
    )
    return out


_SOURCE_WORDS = {"suggested": "the suggested", "current": "today's", "recorded": "the recorded"}


def _bound_detail(
    bound: float | None, observed: dict[str, Any] | None, what: str, status: str, which: str
) -> str:
    parts = []
    if bound is None:
        parts.append(f"no bound ({status.replace('_', ' ')})")
    elif status == "ok":
        parts.append(f"certified at most {bound:.1%}")
    else:
        parts.append(
            f"best bound of a single candidate {bound:.1%} ({status.replace('_', ' ')}; not a certificate)"
        )
    if observed:
        r = Rate(observed["k"], observed["n"])
        parts.append(f"observed {what} under {which} thresholds: {r.text()}")
    return "; ".join(parts)


def _decide(
    criteria: Sequence[Criterion], *, change: ModelChange, drift: Drift, tv: ThresholdView,
    poor: bool, point: dict[str, Any] | None, opts: ReadinessOptions,
    best_cov: float | None = None, right_way: bool = True, cov_n: int = 0, best_n: int = 0,
) -> tuple[str, list[str]]:  # fmt: skip
    failing = [c for c in criteria if not c.ok]
    hard = [c for c in failing if c.blocks == "NO"]
    reasons: list[str] = []
    names = {c.name for c in hard}
    if "evaluator_models" in names:
        word = "interleaved with" if change.interleaved else "replaced"
        reasons.append(
            f"The evaluator model changed mid-window: {change.current} {word} {change.previous} "
            f"on {change.changed_at}. Agreement and thresholds measured on one model say nothing "
            "about another."
        )
    for t in drift.tests:
        if f"drift_{t.rate}" in names:
            what = "false-pass rate" if t.rate == "false_pass" else "disagreement rate"
            reasons.append(
                f"Drift: the {what} rose from {t.earlier.text()} in the earlier half to "
                f"{t.recent.text()} in the recent half (one-sided {t.method} test, "
                f"p = {t.p_value:.2g} <= {t.level:.3g})."
            )
    n_lab = next(c.value for c in criteria if c.name == "labeled_submissions")
    if poor and names & {"false_pass_upper", "false_fail_upper", "coverage"}:
        reasons.append(
            _poor_reason(n_lab, tv=tv, point=point, opts=opts, best_cov=best_cov, best_n=best_n)
        )
    elif "coverage" in names:
        cov = next(c for c in criteria if c.name == "coverage")
        if cov.value is None:
            reasons.append(f"Coverage cannot be measured ({cov.detail}).")
        else:
            v, lim = pct_against(cov.value, opts.min_coverage, "<")
            reasons.append(
                f"The check would decide only {v} of submissions alone (< {lim}): it saves "
                "little; sharpen the questions so fewer answers are unsure."
            )
    for c in hard:
        if c.name in ("error_rate", "truncation_rate"):
            reasons.append(
                f"{c.label[0].upper()}{c.label[1:]} is {c.detail}, above the limit "
                f"{limit_pct(c.limit)}."
            )
    if hard:
        return "NO", reasons
    soft = [c for c in failing if c.blocks == "NOT_YET"]
    if soft:
        for c in soft:
            if c.name == "labeled_submissions":
                reasons.append(f"Too few labels yet: {c.value} labeled checks, {c.limit} needed.")
            elif c.name in ("false_pass_upper", "false_fail_upper") and tv.status == "ok":
                limit = opts.alpha if c.name == "false_pass_upper" else opts.beta
                what = "false-pass" if c.name == "false_pass_upper" else "false-fail"
                if c.value is None:
                    reasons.append(f"No certified {what} bound.")
                else:
                    v, lim = pct_against(c.value, limit, ">")
                    reasons.append(f"The certified {what} bound is {v}, above {lim}.")
            elif c.name == "coverage":
                reasons.append(f"Coverage cannot be measured yet ({c.detail}).")
            elif c.name in ("error_rate", "truncation_rate"):
                what = "error verdicts" if c.name == "error_rate" else "truncations"
                reasons.append(f"Too few checks to judge the share of {what} yet: {c.detail}.")
            elif c.name.startswith("drift_"):
                line = "Drift cannot be tested yet: a half of the window has no labeled verdicts."
                if line not in reasons:
                    reasons.append(line)
        bounds = [c for c in soft if c.name in ("false_pass_upper", "false_fail_upper")]
        if bounds and tv.status != "ok":
            best = " and ".join(
                f"{_pct(c.value)} on false {'passes' if c.name == 'false_pass_upper' else 'fails'} "
                f"(limit {limit_pct(c.limit)})"
                for c in bounds
            )
            reasons.append(
                f"Nothing can be certified yet ({tv.status.replace('_', ' ')}): the best bounds a "
                f"single candidate reaches are {best}."
            )
        evidence = _evidence_reason(
            point, opts=opts, best_cov=best_cov, right_way=right_way, best_n=best_n
        )
        if evidence:
            reasons.append(evidence)
        return "NOT_YET", reasons
    fp = next(c for c in criteria if c.name == "false_pass_upper")
    cov = next(c for c in criteria if c.name == "coverage")
    reasons.append(
        f"With the suggested thresholds, at most {_pct(fp.value)} of what the check passes would "
        f"have been rejected ({1 - opts.delta:.0%} confidence), and it decides "
        f"{share_text(cov.value, cov_n)} of submissions without a person."
    )
    reasons.append(
        "No drift between the earlier and the recent half; one evaluator model; errors and truncations within limits."
    )
    return "READY", reasons


def _poor_reason(
    n_lab: Any, *, tv: ThresholdView, point: dict[str, Any] | None, opts: ReadinessOptions,
    best_cov: float | None, best_n: int = 0,
) -> str:  # fmt: skip
    """Why more labels would not help: each figure with the comparison it meets."""
    problems = []
    if tv.status == "unattainable":
        problems.append(
            "every candidate the threshold search measured is measurably outside the limits"
        )
    if best_cov is not None and best_cov < opts.min_coverage:
        v, lim = pct_against(best_cov, opts.min_coverage, "<", digits=0)
        problems.append(
            f"of all thresholds searched, those whose observed error rates meet the limits "
            f"decide at most {best_text(v, best_n)} alone (< {lim})"
        )
    if point:
        where = _SOURCE_WORDS.get(point.get("source"), "today's")
        for key, limit, what in (
            ("false_pass", opts.alpha, "passes"),
            ("false_fail", opts.beta, "fails"),
        ):
            r = point[key]
            if r["n"] and r["rate"] is not None and r["rate"] >= limit:
                problems.append(
                    f"under {where} thresholds false {what} are "
                    f"{Rate(r['k'], r['n']).text_against(limit, '>=')}, "
                    f"at or above {limit_pct(limit)} already"
                )
        if point["coverage"] < opts.min_coverage:
            v, lim = pct_against(point["coverage"], opts.min_coverage, "<", digits=0)
            problems.append(f"under {where} thresholds it would decide only {v} alone (< {lim})")
    return (
        f"Even with {n_lab} labels the check cannot meet the limits with useful coverage"
        + (": " + "; ".join(problems) if problems else "")
        + ". Rewrite the questions that drive the disagreements."
    )


def _evidence_reason(
    point: dict[str, Any] | None, *, opts: ReadinessOptions, best_cov: float | None,
    right_way: bool, best_n: int = 0,
) -> str | None:  # fmt: skip
    """Whether the evidence so far points the right way, with the figure that says so."""
    if best_cov is not None:
        op = ">=" if right_way else "<"
        v, lim = pct_against(best_cov, opts.min_coverage, op, digits=0)
        direction = "points the right way" if right_way else "does not point the right way yet"
        return (
            f"So far the evidence {direction}: thresholds the search tried whose observed error "
            f"rates meet the limits decide up to {best_text(v, best_n)} alone ({op} {lim})."
        )
    if not point or not point["false_pass"]["n"]:
        return None
    fp = point["false_pass"]
    where = _SOURCE_WORDS.get(point.get("source"), "today's")
    rate = Rate(fp["k"], fp["n"])
    if right_way:
        # _points_right_way: the observed rate is below alpha (and the rest within its limits).
        return (
            f"So far the evidence points the right way: under {where} thresholds false passes "
            f"are {rate.text_against(opts.alpha, '<')}, below {limit_pct(opts.alpha)}."
        )
    return (
        f"So far the evidence does not point the right way yet: under {where} thresholds false "
        f"passes are {rate.text()}."
    )


def share_text(share: float | None, n: int) -> str:
    """A share of ``n`` labeled checks as its count, n and 95% Wilson interval (bare without n)."""
    if share is None:
        return "–"
    if n <= 0:
        return f"{share:.1%}"
    return Rate(round(share * n), n).text()


def best_text(figure: str, n: int) -> str:
    """The best share over the searched thresholds, with its n and why it has no interval."""
    if n <= 0:
        return figure
    # A maximum over many candidates: a Wilson interval around it would claim too much.
    return (
        f"{figure} (of the {n} labeled checks it was measured on; the largest over the search, "
        "a point estimate: no interval)"
    )


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _needed_text(needed: int, days: float | None) -> str:
    if days is None:
        return f"About {needed} more labeled checks are needed (no recent volume to time it)."
    when = f"{days:.0f} days" if days < 14 else f"{days / 7:.1f} weeks"
    return f"About {needed} more labeled checks are needed: {when} at the recent volume."


def _pattern(
    *, decision: str, has_approve_step: bool, ff_upper: float | None, opts: ReadinessOptions,
    auto_fail: float | None, prescreen_hours: float,
) -> dict[str, Any]:  # fmt: skip
    """Replace the approval, pre-screen it (check-1 §4), or keep approving as today.

    Pre-screening drops ``advisory`` but keeps the approve step: only the
    check's fails act alone (sent back before a person sees them), so it
    needs a certified false-fail bound and trust in the evaluator (no drift,
    one model, errors and truncations within limits), but no false-pass bound:
    the approver still signs every pass.
    """
    ff_ok = ff_upper is not None and ff_upper <= opts.beta and (auto_fail or 0) > 0
    if decision == "READY":
        rec = "replace"
        why = (
            "Drop advisory and, where policy allows, delete the approve step. Where policy "
            "requires a signature, pre-screen instead: keep the approve step; fails go back to "
            "the agent before a person sees them and the approver spends time where the check "
            "was unsure."
        )
    elif ff_ok:
        rec = "pre-screen"
        why = (
            "The check cannot replace the approval yet, but its fails are trustworthy (certified "
            f"false-fail bound {_pct(ff_upper)} <= {opts.beta:.0%}): keep the approve step and "
            "drop advisory so that fails go back to the agent before an approver sees them "
            f"(saves about {prescreen_hours:.1f} hours a month); the approver still signs every pass."
        )
    else:
        rec = "keep advisory"
        why = "Keep advisory: true and keep approving every submission until the check qualifies."
    if not has_approve_step and rec != "keep advisory":
        why += " (Decisions for this step come from a decision table, not an approve step.)"
    return {"recommended": rec, "why": why, "approve_step": has_approve_step}


def _automation_bias(cur: pd.DataFrame, appr: pd.DataFrame | None) -> dict[str, Any]:
    """Approver flags and the agreement without the flagged approvers' decisions."""
    note = (
        "Approvers saw the check's verdict before deciding (check-1 §3), so measured agreement "
        "may be inflated by automation bias; audit reviewers should not see the verdict."
    )
    if appr is None or appr.empty:
        return {"note": note, "flagged": [], "without_flagged": None}
    flagged = appr[appr["flag"].astype(bool)]
    names = [str(a) for a in flagged["approver"].tolist()]
    out: dict[str, Any] = {
        "note": note,
        "flagged": [
            {"approver": str(r.approver), "reason": str(r.flag_reason), "n": int(r.n)}
            for r in flagged.itertuples(index=False)
        ],
        "without_flagged": None,
    }
    if names:
        rest = cur[~cur["decided_by"].astype(object).isin(names).to_numpy()]
        row = agreement_mod.agreement(rest, by=[]).iloc[0] if len(rest) else None
        if row is not None:
            out["without_flagged"] = {
                "n": int(row["n"]),
                "agree": Rate(
                    int(row["pass_acceptable"] + row["fail_not_acceptable"]), int(row["n_decided"])
                ).to_dict(),
                "false_pass": Rate(int(row["pass_not_acceptable"]), int(row["n_pass"])).to_dict(),
            }
    return out


# --------------------------------------------------------------------------- the store


@dataclass
class ReadinessReport:
    """Every step's decision, with what produced it (the content of report.json)."""

    generated_at: str
    store: str
    options: ReadinessOptions
    filters: dict[str, Any]
    steps: list[StepReadiness]
    notes: list[str] = field(default_factory=list)
    #: ``calibrate monitor`` on the enforced steps (:class:`~calibrate.analysis.monitor.MonitorReport`).
    since_switch: MonitorReport | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{generated_at, store, options, steps: [...]}`` (see ``report.schema.json``)."""
        return {
            "generated_at": self.generated_at,
            "store": self.store,
            "options": self.options.to_dict() | {"filters": self.filters},
            "steps": [s.to_dict() for s in self.steps],
            "notes": list(self.notes),
            "since_the_switch": [s.to_dict() for s in self.since_switch.steps]
            if self.since_switch is not None
            else [],
        }


def approve_steps(con: Any) -> set[tuple[str, str]]:
    """(process, step) pairs whose decisions came from an ``approve`` step."""
    rows = con.execute(
        "SELECT DISTINCT process, step FROM decisions WHERE source = 'approve step'"
    ).fetchall()
    return {(str(p), str(s)) for p, s in rows}


#: Columns :func:`assess_store` reads: of the checks, and of the answers (thresholds per question).
REPORT_CHECK_COLUMNS = ("check_id", "process", "step", "verdict", "advisory", "model", "at",
                        "truncated", "is_latest", "decided_by", "decided_at", "label", "conflict",
                        "audited", "inclusion_p")  # fmt: skip
REPORT_ANSWER_COLUMNS = ("check_id", "process", "step", "model", "at", "label", "position",
                         "question_id", "ask", "kind", "p", "name", "level", "confidence", "result",
                         "in_process_file")  # fmt: skip


def assess_store(
    con: Any,
    filters: Any = None,
    *,
    options: ReadinessOptions | None = None,
    alpha: float | None = None,
    delta: float | None = None,
    beta: float | None = None,
    store: str = "",
    n_boot: int = DEFAULT_N_BOOT,
    now: datetime | None = None,
) -> ReadinessReport:
    """Assess every checked step in a store (read-only is enough).

    Reads the checks and answers through :mod:`calibrate.dataset` with the
    shared ``filters``, runs the threshold search and the calibration per step
    on its current model and wording, and calls :func:`assess_step`.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    filters : calibrate.dataset.Filters, optional
    options : ReadinessOptions, optional
        Every setting of the assessment (``calibrate.ReadinessOptions()`` by default).
    alpha, delta, beta : float, optional
        The guarantee's levels, overriding those of ``options``: false passes
        at most ``alpha``, false fails at most ``beta``, each bound failing
        with probability at most ``delta``.
    store : str, optional
        The store's name, recorded in the report; by default the file ``con``
        has open (``:memory:`` for a store in memory).
    n_boot : int, default=:data:`calibrate.defaults.DEFAULT_N_BOOT`
        Bootstrap resamples for the calibration error intervals.
    now : datetime, optional
        The report's time stamp (default: now, UTC).

    Returns
    -------
    ReadinessReport
        Steps sorted READY first, then by hours of review saved.
    """
    from calibrate.analysis.calibration import calibrate_answers
    from calibrate.dataset import Filters, left_out_counts, question_settings, step_advisory

    opts = options or ReadinessOptions()
    levels = {
        k: v for k, v in (("alpha", alpha), ("delta", delta), ("beta", beta)) if v is not None
    }
    if levels:
        opts = replace(opts, **levels)
    if not store:
        row = con.execute(
            "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchone()
        store = (row[0] if row else None) or ":memory:"
    filters = filters or Filters()
    settings = question_settings(con)
    # The same window and names as the rest of the report (--since/--until, --model).
    since = monitor_store(
        con, process=filters.process, step=filters.step, alpha=opts.alpha, beta=opts.beta,
        delta=opts.delta, plan_weeks=opts.audit_weeks, model=filters.model,
        since=filters.since, until=filters.until,
    )  # fmt: skip
    advisory = step_advisory(con)
    steps: list[StepReadiness] = []
    notes: list[str] = []
    for inp in read_step_inputs(con, filters):
        tv = search_thresholds(inp.subs_current, inp.answers_current, questions=inp.questions,
                               options=opts, limits=inp.limits)  # fmt: skip
        calib = (
            calibrate_answers(inp.answers_current, n_boot=n_boot, settings=settings)
            if inp.answers_current["label"].notna().any()
            else []
        )
        steps.append(
            assess_step(
                inp.subs,
                inp.answers,
                thresholds=tv,
                questions=inp.questions,
                options=opts,
                has_approve_step=inp.has_approve_step,
                calibration=calib,
                enforcement=_enforcement(since, advisory, inp),
            )  # fmt: skip
        )
        # Decisions after the switch that no audit drew: not a sample of the check, left out
        # and counted, escalations apart from decisions on undrawn enforced passes and fails.
        left = left_out_counts(con, replace(filters, process=inp.process, step=inp.step))
        steps[-1].left_out["escalations_after_switch"] = left["escalations"]
        steps[-1].left_out["undrawn_after_switch"] = left["undrawn"]
        if tv.note:
            notes.append(f"{inp.process}/{inp.step}: {tv.note}")
    steps.sort(key=lambda r: r.sort_key)
    stamp = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    return ReadinessReport(
        stamp, store, opts, _filters_dict(filters), steps, notes, since_switch=since
    )


def _enforcement(
    monitor: MonitorReport, advisory: Mapping[tuple[str, str], bool], inp: StepInputs
) -> Enforcement | None:
    """The step's enforcement in the window, unless its process file put ``advisory: true`` back.

    Of several monitored models an alarm wins (a new model on an enforced step
    alarms), then the step's current model.
    """
    in_file = advisory.get((inp.process, inp.step))
    if in_file is True:
        return None  # returned to advisory: whether to drop it is the question again
    mine = [m for m in monitor.steps if (m.process, m.step) == (inp.process, inp.step)]
    if not mine:
        return None
    models = inp.subs_current["model"].dropna() if "model" in inp.subs_current else []
    current = str(models.iloc[0]) if len(models) else None
    mine.sort(key=lambda m: (m.status != "alarm", m.model != current))
    return Enforcement(mine[0], in_process_file=None if in_file is None else not in_file)


@dataclass(frozen=True)
class StepInputs:
    """What :func:`assess_store` reads for one checked step, before any limit is applied.

    ``subs`` and ``answers`` hold the step's checks and answers (every model;
    answers of the current model only); ``subs_current`` and
    ``answers_current`` the current model and wording, which the threshold
    search reads. Rerunning :func:`search_thresholds` and :func:`assess_step`
    on these at other limits gives the report's decision at those limits.
    """

    process: str
    step: str
    subs: pd.DataFrame
    answers: pd.DataFrame
    subs_current: pd.DataFrame
    answers_current: pd.DataFrame
    questions: list[Question]
    has_approve_step: bool
    limits: Any


def read_step_inputs(con: Any, filters: Any = None) -> Iterator[StepInputs]:
    """The inputs of each checked step in a store, one step at a time (see :class:`StepInputs`)."""
    from calibrate.analysis.step_data import read_columns, share_check_codes, store_step_answers
    from calibrate.dataset import Filters, process_questions
    from calibrate.dataset import answers as read_answers
    from calibrate.dataset import limits as read_limits

    filters = filters or Filters()
    # Only the columns the assessment reads, text as categoricals, and the answers one step at
    # a time: every column of every answer as Python objects took 8 GiB at a million runs.
    subs = read_columns(con, "labeled", REPORT_CHECK_COLUMNS, filters)
    questions = process_questions(con)
    server_limits = read_limits(con)
    approvals = approve_steps(con)
    for (process, step), s in subs.groupby(
        ["process", "step"], sort=True, dropna=False, observed=True
    ):
        qs = questions.get((process, step), [])
        change = detect_model_change(s)
        # Only the current model's answers: the assessment reads no other model's.
        a = store_step_answers(con, filters, process, step, REPORT_ANSWER_COLUMNS,
                               labeled_only=False, model=change.current)  # fmt: skip
        if not qs and a["in_process_file"].any():
            # Today's questions come from the rows' thresholds: every column is needed.
            a = read_answers(con, replace(filters, process=process, step=step))
        a, s = share_check_codes(a, s)
        model_col = s["model"].astype(object).where(s["model"].notna(), "(unknown model)")
        s_cur = s[(model_col == change.current).to_numpy()]
        a_cur = a[isin(a["check_id"], s_cur["check_id"])]
        keep = current_wording(s_cur, a_cur, qs)
        s_cur = s_cur[keep.to_numpy(dtype=bool)]
        a_cur = a_cur[isin(a_cur["check_id"], s_cur["check_id"])]
        yield StepInputs(str(process), str(step), s, a, s_cur, a_cur, list(qs),
                         (str(process), str(step)) in approvals, server_limits)  # fmt: skip


def search_thresholds(
    subs: pd.DataFrame,
    answers: pd.DataFrame,
    *,
    questions: Sequence[Question],
    options: ReadinessOptions,
    limits: Any = None,
) -> ThresholdView:
    """Run the certified threshold search (issue 5) on one step's current model and wording.

    Calls :func:`calibrate.analysis.thresholds.search_step` with the
    options' ``alpha``, ``delta`` and ``beta``; the trade-off display is
    built only when a face asks for it (it reruns the search per alpha).
    """
    from calibrate.analysis import thresholds as th

    usable = answers["label"].notna().to_numpy() & isin(answers["check_id"], subs["check_id"])
    if not usable.any():
        # Nothing labeled was answered (no labels yet, or only error verdicts): nothing to search.
        qs = list(questions) or _questions_from_answers(answers)
        return ThresholdView(
            "insufficient_data", check_items(qs), None, {}, {}, n_labeled=0,
            note="no labeled answers on the current model and wording: nothing to search",
        )  # fmt: skip
    result = th.search_step(
        subs, answers, questions=list(questions), alpha=options.alpha, delta=options.delta,
        beta=options.beta, limits=limits, needed_share=options.min_coverage,
    )  # fmt: skip
    return _view_of(result)


def _view_of(result: Any) -> ThresholdView:
    """A :class:`ThresholdView` of a search result (``to_dict()`` in issue 5's shape)."""
    if isinstance(result, ThresholdView):
        return result
    doc = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    factory = getattr(result, "tradeoff_display", None)
    view = ThresholdView.from_mapping(
        doc, display_factory=factory if callable(factory) else None, raw=result
    )
    estimate = getattr(result, "needed_labels", None)
    if isinstance(estimate, NeededLabels):
        view.needed = estimate  # the object itself: it knows today's labels when total is null
    return view


def _filters_dict(filters: Any) -> dict[str, Any]:
    out = {}
    for key in ("process", "step", "model", "since", "until", "advisory_only", "escalations"):
        value = getattr(filters, key, None)
        out[key] = value.isoformat() if isinstance(value, datetime) else value
    return out


# --------------------------------------------------------------------------- plain values


def _iso(value: Any) -> str | None:
    if value is None or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return None
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return pd.Timestamp(value).isoformat()


def _num(value: Any) -> float | None:
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _pct(value: Any) -> str:
    v = _num(value)
    return "–" if v is None else f"{v:.1%}"


def _plain_tree(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_tree(v) for v in value]
    return _plain(value)


def _records(df: pd.DataFrame | None) -> list[dict[str, Any]]:
    if df is None or df.empty:
        return []
    return json.loads(df.to_json(orient="records"))
