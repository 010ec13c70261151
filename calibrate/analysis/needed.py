"""How many labels until the search certifies a useful check: estimated by running the search.

When the threshold search certifies nothing for lack of labels
(``insufficient_data``), the owner is told how many labels to collect. The
number must come true *for the search as it is*: a path walked with
fallback tests stops on a few unlucky labels, so solving one binomial bound
at the observed error rate (when a *single* test would pass) promised far
too few labels (issue 17).

The estimate
------------
The labeled rows of the step are resampled to larger totals ``m``
(:func:`calibrate.analysis.resample.resample`: the Bayesian bootstrap [1]_,
Dirichlet weights on today's rows make one plausible population and ``m``
rows are drawn from it; when the search at ``m`` learns a path on a split,
every drawn row gets a new label from a logistic model of the label given
the answers fitted on that population, so that the path is not learned on
copies of the rows that certify it) on a geometric grid (each
twice the last, from twice today's labels up to :data:`MAX_LABELS`, then
two halvings of the first gap on the log scale). At each total the real
search (:func:`calibrate.analysis.threshold_search.find_thresholds`, the same
code path ``calibrate thresholds`` runs) is run on ``resamples`` resampled
datasets, and a resample *succeeds* when the search certifies a check that
decides at least ``share`` of the submissions alone (pass or fail, without a
person). The estimate is the smallest total on the grid at which at least
``probability`` of the resamples succeed; ``unattainable`` when none up to
the cap does. The cap (a hundred times today's labels) is screened first:
``unattainable`` at once when the failures there put ``probability`` out of
reach (3 of 10 at 0.8; a single failing resample said it until 2026-12,
though each resample is its own world, whose rates vary by today's standard
error), and any success there goes on to the grid. A total is given up on as soon as its failures make the
probability out of reach (sequential early stopping), so most totals cost
three searches. The total found is then confirmed by a second batch of
``resamples``, drawn after it was chosen: it is kept when that batch alone
reaches ``probability`` (else the next total up the grid is tried), since the
first total to reach it is the least of several noisy counts, whose own
chance is lower than its count says. The count reported, ``k of resamples``,
is the second batch's: it took no part in choosing the total.

Reading it: "with about ``total`` labels in total, the search certifies a
check deciding at least ``share`` alone in ``k`` of ``resamples`` resampled
cases". The resamples never go beyond what today's labels show, so the
estimate inherits today's luck: a step whose rare errors were not yet seen
looks better than it is (measured: with 60-100 labels of a yes/no question,
fresh datasets at the advised total certified in about half the cases where
8 in 10 were advised; a rubric whose best threshold errs just inside the
limit, or a step where nothing truly certifies, got a number from a lucky
150-300 labels). ``benchmarks/needed_check.py`` measures how often
fresh datasets at the advised total really certify, per regime of the
power study.

Every resample and every total has its own seed, derived from ``seed``:
the estimate is deterministic.

References
----------
.. [1] Rubin, D. B. (1981). The Bayesian bootstrap. The Annals of Statistics
   9(1), 130-134.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis.resample import features, resample
from calibrate.analysis.step_data import StepData
from calibrate.analysis.threshold_search import find_thresholds
from calibrate.defaults import NEEDED_PROBABILITY, NEEDED_SHARE

__all__ = [
    "DEFAULT_PROBABILITY", "DEFAULT_RESAMPLES", "DEFAULT_SHARE", "MAX_LABELS", "NeededLabels",
    "best_observed_coverage", "coverage_denominator", "estimate_needed", "useful",
]  # fmt: skip

#: The probability the advised total carries by default: the search certifies in 8 of 10 cases.
DEFAULT_PROBABILITY = NEEDED_PROBABILITY
#: Resampled datasets per total.
DEFAULT_RESAMPLES = 10
#: The share of submissions a useful check decides alone (readiness' ``min_coverage``).
DEFAULT_SHARE = NEEDED_SHARE
#: No estimate beyond this many labels: ``unattainable`` (the same cap as the search's).
MAX_LABELS = 1_000_000
#: No total beyond this many times today's labels is tried (nor beyond MAX_LABELS).
CAP_FACTOR = 100
#: Halvings (on the log scale) of the gap below the first total that succeeds.
REFINE = 2


@dataclass(frozen=True)
class NeededLabels:
    """The labels a step needs for the search to certify a useful check, with the odds it carries.

    Attributes
    ----------
    status : {"insufficient_data", "unattainable"}
        ``unattainable`` when no total up to ``max_labels`` reaches ``probability``.
    n_labeled : int
        Today's labels.
    total : int or None
        Labels in total (today's included); ``None`` when unattainable.
    probability : float
        The share of resampled datasets asked for (``0.8``: 8 in 10).
    certified, resamples : int
        At ``total``: how many of the resampled datasets were certified with a
        useful check, out of how many.
    share : float
        What "useful" means: the check decides at least this share alone.
    max_labels : int
    per_week : float or None
        The step's labeled checks per week, when known (it times the wait).
    """

    status: str
    n_labeled: int
    total: int | None
    probability: float
    certified: int
    resamples: int
    share: float
    max_labels: int = MAX_LABELS
    per_week: float | None = None

    @property
    def more(self) -> int | None:
        """Labels still to collect (``None`` when unattainable)."""
        return None if self.total is None else max(0, self.total - self.n_labeled)

    @property
    def weeks(self) -> float | None:
        """Weeks of labeling left at ``per_week``, or ``None`` when it is unknown."""
        if self.more is None or not self.per_week or not math.isfinite(self.per_week):
            return None
        return self.more / self.per_week

    def at_rate(self, per_week: float | None) -> NeededLabels:
        """The same estimate timed at ``per_week`` labeled checks a week."""
        ok = per_week is not None and math.isfinite(per_week) and per_week > 0
        return NeededLabels(**{**self.__dict__, "per_week": float(per_week) if ok else None})

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> NeededLabels | None:
        """Back from :meth:`to_dict` (``None`` when ``doc`` carries no probability: no estimate)."""
        try:
            total = doc.get("total")
            more = doc.get("more")
            prob = doc.get("probability")
            if prob is None or (total is not None and more is None):
                return None
            total = None if total is None else int(total)
            return cls(
                status=str(doc.get("status") or ("unattainable" if total is None else
                                                 "insufficient_data")),
                n_labeled=0 if total is None else total - int(more),
                total=total, probability=float(prob),
                certified=int(doc.get("certified") or 0),
                resamples=int(doc.get("resamples") or DEFAULT_RESAMPLES),
                share=float(doc.get("share") if doc.get("share") is not None else DEFAULT_SHARE),
            )  # fmt: skip
        except (TypeError, ValueError):
            return None

    def to_dict(self) -> dict[str, Any]:
        """``{"total", "more", "probability", "weeks"}`` plus ``certified``, ``resamples``, ``share``.

        ``total`` and ``more`` are ``null`` when the status is ``unattainable``.
        """
        weeks = self.weeks
        return {
            "total": self.total,
            "more": self.more,
            "probability": self.probability,
            "weeks": None if weeks is None else round(weeks, 1),
            "certified": self.certified,
            "resamples": self.resamples,
            "share": self.share,
            "status": self.status,
        }

    def sentence(self) -> str:
        """The estimate in words, the same in the YAML comment and the report.

        Examples
        --------
        >>> NeededLabels("insufficient_data", 600, 1873, 0.8, 8, 10, 0.5, per_week=55).sentence()
        "with about 1,900 labels in total (1,273 more), the search certifies a check deciding ≥ 50% alone in 8 of 10 resampled cases; at this step's 55 labels a week, about 23 more weeks"
        """
        if self.total is None:
            return (
                f"no total up to {self.max_labels:,} labels makes the search certify a check "
                f"deciding ≥ {self.share:.0%} alone in {self.probability:.0%} of resampled cases"
            )
        more = f" ({self.more:,} more)" if self.more else ""
        text = (
            f"with about {_about(self.total):,} labels in total{more}, the search certifies a "
            f"check deciding ≥ {self.share:.0%} alone in {self.certified} of {self.resamples} "
            "resampled cases"
        )
        weeks = self.weeks
        if weeks is None or self.per_week is None:
            return text
        rate = f"{self.per_week:,.0f}" if self.per_week >= 10 else f"{self.per_week:.1f}"
        when = (
            f"about {weeks:.0f} more weeks" if weeks >= 1.5 else f"about {7 * weeks:.0f} more days"
        )
        return text + f"; at this step's {rate} labels a week, {when}"


def _about(total: int) -> int:
    """``total`` to two significant digits (the estimate is no finer)."""
    if total < 100:
        return int(total)
    digits = int(math.floor(math.log10(total))) - 1
    return int(round(total, -digits))


def useful(result: Any, share: float) -> bool:
    """Whether a search result certified a check deciding at least ``share`` of its data alone."""
    if result.status != "ok" or result.expected is None or not result.expected.n:
        return False
    sh = result.expected.shares()
    return (sh["auto_pass"] or 0.0) + (sh["auto_fail"] or 0.0) >= share - 1e-12


def best_observed_coverage(raw: Any, *, alpha: float, beta: float) -> float | None:
    """The largest share decided alone among searched thresholds whose observed rates meet the limits.

    A point estimate, not a certificate: it says whether more labels could
    help (the evidence points the right way) or not. Reads the candidates of a
    :class:`calibrate.analysis.threshold_result.StepThresholds`: for a joint
    path, each candidate's ``(n_pass + n_fail) / n_total`` where its
    false-pass rate is below ``alpha`` and its false-fail rate below
    ``beta``; ``n_total`` is the rows that path's candidates were counted on
    (a learned path's certification part, a fixed or answers path's every
    label), so a share is never above 1; for a single yes/no question, the
    best pass share plus the best fail share (the two thresholds are
    searched apart), at most 1. ``None`` when the result holds no
    candidates. :func:`coverage_denominator` gives the rows it is a share of.
    """
    best = _best_coverage(raw, alpha=alpha, beta=beta)
    return None if best is None else best[0]


def coverage_denominator(raw: Any, *, alpha: float = 1.0, beta: float = 1.0) -> int:
    """The labeled checks :func:`best_observed_coverage` at ``alpha`` and ``beta`` is a share of.

    The rows the best candidate was counted on (0 without candidates); for a
    single yes/no question whose two sides were counted on different rows
    (a learned start certifies the passes on a part), the smaller.
    """
    best = _best_coverage(raw, alpha=alpha, beta=beta)
    return 0 if best is None else best[1]


def _best_coverage(raw: Any, *, alpha: float, beta: float) -> tuple[float, int] | None:
    # Each candidate's share of the rows its path counted (the frame's n_total; a result
    # without it: n_certify for joint candidates, n_labeled for a yes/no question's sides).
    # Outside review: all labels over a learned path's half read "at best 199.1%".
    frame = getattr(raw, "candidates", None)
    if not isinstance(frame, pd.DataFrame) or frame.empty or "side" not in frame:
        return None
    joint = (frame["side"] == "joint").any()
    fallback = int(getattr(raw, "n_certify" if joint else "n_labeled", 0) or 0)
    n = (
        frame["n_total"].fillna(fallback)
        if "n_total" in frame
        else pd.Series(fallback, frame.index)
    )
    n = n.astype(float).where(n > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        fp = frame["false_pass"] / frame["n_pass"]
        ff = frame["false_fail"] / frame["n_fail"]
    fp_ok = (frame["n_pass"] == 0) | (fp < alpha)
    ff_ok = (frame["n_fail"] == 0) | (ff < beta) | (beta >= 1.0)
    if joint:
        rows = (frame["side"] == "joint") & n.notna()
        if not rows.any():
            return None
        ok = rows & fp_ok & ff_ok
        if not ok.any():
            return 0.0, int(n[rows].min())
        cov = ((frame["n_pass"] + frame["n_fail"]) / n)[ok]
        i = cov.idxmax()
        return float(cov[i]), int(n[i])
    sides = []
    for side, count, side_ok in (("pass", "n_pass", fp_ok), ("fail", "n_fail", ff_ok)):
        rows = (frame["side"] == side) & (frame[count] > 0) & side_ok & n.notna()
        share = (frame[count] / n)[rows]
        sides.append((float(share.max()), int(n[share.idxmax()])) if rows.any() else None)
    dens = [s[1] for s in sides if s is not None]
    if not dens:
        return (0.0, fallback) if fallback > 0 else None
    return min(1.0, sum(s[0] for s in sides if s is not None)), min(dens)


def estimate_needed(
    data: StepData,
    *,
    alpha: float,
    delta: float,
    beta: float,
    share: float = DEFAULT_SHARE,
    probability: float = DEFAULT_PROBABILITY,
    resamples: int = DEFAULT_RESAMPLES,
    max_labels: int = MAX_LABELS,
    seed: int = 0,
    result: Any = None,
    **search: Any,
) -> NeededLabels | None:
    """The smallest total at which the search certifies a useful check in ``probability`` of resamples.

    Parameters
    ----------
    data : StepData
        The step's labeled rows, as the search reads them.
    alpha, delta, beta : float
        The search's limits.
    share : float, default=0.5
        A useful check decides at least this share of submissions alone.
    probability : float, default=0.8
        The share of resampled datasets that must be certified (``0.5``: a median).
    resamples : int, default=10
        Resampled datasets per total.
    max_labels : int, default=:data:`MAX_LABELS`
    seed : int, default=0
        Seed of the resampling (and the search's own split seed).
    result : StepThresholds, optional
        The search on ``data`` itself: when even its best observed thresholds
        within the limits decide less than ``share``, the answer is
        ``unattainable`` without resampling (the bootstrap's population is
        today's labeled rows; no total makes it decide more).
    **search
        Passed to :func:`~calibrate.analysis.threshold_search.find_thresholds`
        (``relearn_lists``, ``search_fraction``).

    Returns
    -------
    NeededLabels or None
        ``None`` when there is nothing to resample (no labeled row).

    Examples
    --------
    >>> import numpy as np
    >>> from calibrate.profile import Kind, Question
    >>> rng = np.random.default_rng(0)
    >>> ok = rng.random(120) < 0.8
    >>> p = np.where(ok, rng.beta(8, 1.2, 120), rng.beta(2, 3, 120))
    >>> data = StepData("proc", "step", "m", [Question("ok?", Kind.YES_NO, pass_p=0.9)],
    ...                 [True], np.arange(120).astype(str), ok, [p], [np.full(120, np.nan)],
    ...                 np.zeros(120, bool))
    >>> est = estimate_needed(data, alpha=0.05, delta=0.1, beta=0.3)
    >>> est.status, est.total > 120, est.certified >= 8
    ('insufficient_data', True, True)
    """
    if not 0.0 < probability <= 1.0:
        raise ValueError(f"probability must be in (0, 1], got {probability!r}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples!r}")
    if data.n == 0:
        return None
    best = None if result is None else best_observed_coverage(result, alpha=alpha, beta=beta)
    # The estimate reads the data, these settings and ``best`` alone: a step estimated again in
    # this process (the report, then the enforced advice or a notebook) reuses it.
    key = (data.fingerprint(), alpha, delta, beta, share, probability, resamples, max_labels,
           seed, result is None, best, tuple(sorted(search.items())))  # fmt: skip
    if key not in _ESTIMATES:
        if len(_ESTIMATES) >= _ESTIMATES_KEPT:
            del _ESTIMATES[next(iter(_ESTIMATES))]  # the oldest
        _ESTIMATES[key] = _estimate(
            data, alpha=alpha, delta=delta, beta=beta, share=share, probability=probability,
            resamples=resamples, max_labels=max_labels, seed=seed, best=best, search=search,
        )  # fmt: skip
    return _ESTIMATES[key]  # frozen: shared safely


#: Estimates kept in this process, by data and settings (oldest dropped first).
_ESTIMATES: dict[tuple[Any, ...], NeededLabels] = {}
_ESTIMATES_KEPT = 64


def _estimate(
    data: StepData, *, alpha: float, delta: float, beta: float, share: float,
    probability: float, resamples: int, max_labels: int, seed: int, best: float | None,
    search: dict[str, Any],
) -> NeededLabels:  # fmt: skip
    """:func:`estimate_needed` on a step with labels; ``best`` its best observed coverage."""
    n = data.n
    need = math.ceil(probability * resamples - 1e-9)
    base = dict(n_labeled=n, probability=probability, resamples=resamples, share=share,
                max_labels=max_labels)  # fmt: skip
    # Beyond a hundred times today's labels a resample says little about the step: the cap, the
    # same in every "no total up to ..." said of this step.
    cap = int(min(max_labels, CAP_FACTOR * n))
    none = NeededLabels("unattainable", total=None, certified=0,
                        **{**base, "max_labels": cap})  # type: ignore[arg-type]  # fmt: skip
    if best is not None and best < share:
        return none

    outcomes: dict[int, list[bool]] = {}
    relearn = bool(search.get("relearn_lists"))
    x = features(data)  # the label model's inputs, the same in every resample

    def succeeds(rng: np.random.Generator, m: int) -> bool:
        """Whether the search certifies a useful check on one resample of ``m`` rows."""
        sample = resample(rng, data, m, relearn_lists=relearn, x=x)
        res = find_thresholds(sample, alpha=alpha, delta=delta, beta=beta, seed=seed,
                              judge_unattainable=False, min_decided=share, **search)  # fmt: skip
        return useful(res, share)

    def run(m: int) -> int:
        """Successes at total ``m``; stops early once ``need`` is out of or in reach."""
        rng = np.random.default_rng([seed, 17, m])
        seen = outcomes.setdefault(m, [])
        for r in range(resamples):
            # Drawn even when known: resample r is the same every time.
            if r == len(seen):
                seen.append(succeeds(rng, m))
            else:
                resample(rng, data, m, relearn_lists=relearn, x=x)
            wins = sum(seen[: r + 1])
            if resamples - (r + 1 - wins) < need or wins >= need:
                break
        return sum(seen)

    def confirm(m: int) -> int:
        """Successes at total ``m`` in a second batch of ``resamples``, drawn apart from :func:`run`'s.

        Run whole when it can reach ``need`` (its count is the one reported); given up, with
        the count so far, once its failures put ``need`` out of reach.
        """
        rng = np.random.default_rng([seed, 19, m])
        wins = 0
        for r in range(resamples):
            wins += succeeds(rng, m)
            if resamples - (r + 1 - wins) < need:
                break
        return wins

    # At the cap a resample's search is nearly decided by its world's rates, but each world is
    # drawn anew and its rates vary by today's standard error: one failure there is not
    # "no total reaches `probability`". As at any total, `unattainable` takes the failures that
    # put `need` of `resamples` out of reach; a success ends the screen at once.
    tries = resamples - need + 1
    if cap <= n or not _screen(data, cap, seed=seed, alpha=alpha, delta=delta, beta=beta,
                               share=share, search=search, tries=tries):  # fmt: skip
        return none
    max_labels = cap
    lo, hi = float(n), None
    m = 2 * n
    while True:
        m = min(m, max_labels)
        if m <= n:
            return none
        if run(m) >= need:
            hi = float(m)
            break
        if m >= max_labels:
            return none
        lo, m = float(m), 2 * m
    for _ in range(REFINE):
        mid = int(math.ceil(math.sqrt(lo * hi)))
        if mid <= lo or mid >= hi:
            break
        if run(mid) >= need:
            hi = float(mid)
        else:
            lo = float(mid)
    # The first total where `need` of `resamples` succeeded is the least of several noisy counts:
    # its own chance is lower than the count says (three questions, 150 labels, alpha = 0.1: 8 of
    # 10 at 505 labels, 60 of 80 on more resamples). So a second batch, drawn after the total was
    # chosen, decides and is the count reported; when it falls short, the next total up the grid.
    step = 2.0 ** (1.0 / 2**REFINE)
    total = int(hi)
    while True:
        wins = confirm(total)
        if wins >= need:
            return NeededLabels("insufficient_data", total=total, certified=wins,
                                **base)  # type: ignore[arg-type]  # fmt: skip
        if total >= max_labels:
            return none
        total = min(int(math.ceil(total * step)), max_labels)


def _screen(data: StepData, m: int, *, seed: int, alpha: float, delta: float, beta: float,
            share: float, search: dict[str, Any], tries: int = 1) -> bool:  # fmt: skip
    """Whether a resample of ``m`` rows is certified with a useful check in one of ``tries``.

    The cap's screen: ``False`` only when all ``tries`` resamples (each its own world) fail.
    """
    for r in range(max(tries, 1)):
        # The first resample keeps the seed a single screen had, so its outcome is unchanged.
        key = [seed, 17, 0, m] if r == 0 else [seed, 17, 0, m, r]
        sample = resample(np.random.default_rng(key), data, m,
                          relearn_lists=bool(search.get("relearn_lists")))  # fmt: skip
        res = find_thresholds(sample, alpha=alpha, delta=delta, beta=beta, seed=seed,
                              judge_unattainable=False, min_decided=share, **search)  # fmt: skip
        if useful(res, share):
            return True
    return False
