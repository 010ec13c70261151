"""The evidence read off one step's labeled checks, besides the threshold search.

Replaying the labeled history under other thresholds (:func:`replay`), the
questions behind the disagreements (:func:`disagreement_drivers`), which
evaluator models answered and when the latest took over
(:func:`detect_model_change`), the step's recent volume and the work a check
saves (:func:`recent_volume`, :func:`hours_saved_per_month`), and the labels
the exact bound needs at an observed rate (:func:`labels_needed`). Pure
functions over the DataFrames of :func:`calibrate.dataset.submissions` and
:func:`calibrate.dataset.answers`; :mod:`calibrate.analysis.step_readiness`
weighs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis.plain import iso as _iso
from calibrate.analysis.rate import plain as _plain
from calibrate.analysis.stats import (
    binomial_upper_bound,
    wilson_interval,
)
from calibrate.analysis.step_data import (
    category_codes,
)
from calibrate.profile import UNSURE, Kind, Question, decide

#: Average days in a month, for "hours saved per month".
DAYS_PER_MONTH = 365.25 / 12
#: A labels-needed estimate beyond this many is reported as unreachable.
MAX_LABELS = 1_000_000


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
    ask_code, asks = category_codes(answers["ask"])
    check_code, checks = category_codes(answers["check_id"])
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
