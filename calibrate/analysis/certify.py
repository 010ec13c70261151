"""Certify a rate along an ordered path of candidates: exact binomial tests in fixed sequence.

The pure statistical pipeline behind :mod:`calibrate.analysis.threshold_search`.
Every function takes and returns arrays; nothing here knows about check-1.

The chain, in the order the search uses it:

1. :func:`stratified_split` splits the labeled submissions into a search part
   and a certification part (only when the path must be learned).
2. :func:`score_path` sorts one score (errors and others apart) and counts at every
   distinct threshold (``O(n log n)``).
3. :func:`binomial_pvalues` gives the exact p-value of ``H0: rate > limit``
   for each candidate; :func:`first_testable` finds where a test can succeed
   at all (:func:`min_count`).
4. :func:`fixed_sequence` walks the candidates from strictest to loosest and
   stops at the first one it cannot reject.
5. :func:`labels_needed` answers "how many labels until the bound reaches the
   limit at the observed rate" when nothing could be certified.

References
----------
.. [1] Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or
   fiducial limits illustrated in the case of the binomial. Biometrika 26(4).
.. [2] Maurer, W., Hothorn, L. A. and Lehmacher, W. (1995). Multiple
   comparisons in drug clinical trials and preclinical assays: a-priori
   ordered hypotheses. Biometrie in der chemisch-pharmazeutischen Industrie 6.
.. [3] Angelopoulos, A. N., Bates, S., Candès, E. J., Jordan, M. I. and Lei, L.
   (2021). Learn then Test: calibrating predictive algorithms to achieve risk
   control. arXiv:2110.01052.
.. [4] Jung, J., Brahman, F. and Choi, Y. (2024). Trust or Escalate: LLM
   judges with provable guarantees for human agreement. arXiv:2407.18370.
.. [5] Berger, R. L. (1982). Multiparameter hypothesis testing and acceptance
   sampling. Technometrics 24(4), 295-300 (the intersection-union test).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from calibrate.analysis.stats import binomial_tail_pvalue, binomial_upper_bound

#: Decimal places tried first when a threshold is written into a process file.
THRESHOLD_DECIMALS = 3


def _check_level(value: float, name: str, *, closed_right: bool = False) -> float:
    ok = 0.0 < value <= 1.0 if closed_right else 0.0 < value < 1.0
    if not (isinstance(value, int | float) and math.isfinite(value) and ok):
        span = "(0, 1]" if closed_right else "(0, 1)"
        raise ValueError(f"{name} must be a number in {span}, got {value!r}")
    return float(value)


def min_count(limit: float, delta: float) -> int:
    """The fewest decisions at which a rate can be certified ``<= limit`` at all.

    With ``n`` decisions and no error the exact p-value is ``(1 - limit) ** n``;
    below this ``n`` it exceeds ``delta`` whatever the labels say, so a test
    there cannot succeed.

    Examples
    --------
    >>> min_count(0.05, 0.1)
    45
    """
    limit = _check_level(limit, "limit", closed_right=True)
    delta = _check_level(delta, "delta")
    if limit >= 1.0:
        return 1
    return max(1, math.ceil(math.log(delta) / math.log1p(-limit) - 1e-12))


def binomial_pvalues(errors: Any, n: Any, *, limit: float) -> np.ndarray:
    """Exact p-values of ``H0: rate > limit`` (``P(Bin(n, limit) <= errors)``; 1 where ``n == 0``).

    Conditional on the ``n`` submissions a fixed configuration decides, their
    errors are ``Binomial(n, rate)`` when submissions are exchangeable, so the
    p-value is exact, not asymptotic.
    """
    k, m = np.asarray(errors), np.asarray(n)
    if k.ndim != 1 or k.shape != m.shape:
        return binomial_tail_pvalue(k, m, alpha=limit)
    # Along a path neighbouring candidates mostly share their counts: one cdf per run of them.
    first, inverse = _runs(k, m)
    return binomial_tail_pvalue(k[first], m[first], alpha=limit)[inverse]


def _runs(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each run of equal consecutive rows starts, and each row's run (1-d columns)."""
    change = np.zeros(columns[0].size, bool)
    change[:1] = True
    for c in columns:
        change[1:] |= c[1:] != c[:-1]
    first = np.flatnonzero(change)
    return first, np.cumsum(change) - 1


def fixed_sequence(pvalues: Any, *, delta: float, testable: Any = None) -> int | None:
    """Fixed-sequence testing: the last candidate rejected before the first failure.

    Candidates are in a fixed order, strictest first. Each is tested at the
    full level ``delta``; the walk stops at the first p-value above ``delta``.
    Candidates where ``testable`` is False are stepped over (they cannot be
    rejected, see :func:`first_testable`) and never returned.

    Parameters
    ----------
    pvalues : array-like of float
        One p-value per candidate, strictest first.
    delta : float
        The level.
    testable : array-like of bool, optional
        Which candidates are tested; default all.

    Returns
    -------
    int or None
        Index of the loosest certified candidate, or ``None``.

    Examples
    --------
    >>> fixed_sequence([0.01, 0.02, 0.5, 0.01], delta=0.05)
    1
    """
    p = np.asarray(pvalues, dtype=float)
    tested = np.ones(p.shape, bool) if testable is None else np.asarray(testable, bool)
    idx = np.flatnonzero(tested)
    if idx.size == 0:
        return None
    fails = p[idx] > delta
    # Vectorised walk: everything before the first failure is rejected.
    stop = int(np.argmax(fails)) if fails.any() else idx.size
    return int(idx[stop - 1]) if stop > 0 else None


#: Share of the observed limit at which the first checkpoint's test should just succeed.
POWER_SHARE = 0.5
#: The same on a path of passes (one yes/no question's pass walk, a learned path): a judge's
#: false-pass rate often sits at half the limit or above (approver noise alone is a few
#: percent), and a start placed for half the limit is then lost in about a third of the
#: datasets. Fixed rubric/choice paths keep POWER_SHARE: their false-fail side, which the
#: start does not read, grows along the path.
PASS_POWER_SHARE = 0.8
#: Weight of each checkpoint after the first, as a share of the path's level.
LATER_WEIGHT = 0.1
#: The first checkpoint keeps at least this share of the path's level.
FIRST_WEIGHT_MIN = 0.5
#: On a learned path, the later checkpoints' share is spread over their marks and this many
#: candidates evenly placed along the path after the first checkpoint: its passes grow little
#: (from a few hundred to the certification part's size), so the doublings leave the loose end,
#: where the targets of a loose limit sit, without a checkpoint, and one failure midway (often a
#: candidate whose few fails fail the false-fail test) ended the walk there.
LEARNED_SPREAD = 6
#: ... from this many labels. On fewer, the certification part is small, a later checkpoint's
#: test needs its whole share, and split six ways it passes nothing (three questions from an
#: overconfident judge at 300 labels and alpha = 0.1: median certified auto-pass 79% -> 51%).
LEARNED_SPREAD_FROM = 1000
#: Where the evaluator's own probabilities predict a rate (one yes/no question's pass path): the
#: first checkpoint may sit past the third of the path, at :func:`power_start` itself, when the
#: predicted rate is at most this share of the limit all the way there. An overconfident judge's
#: top answers hold a flat few percent of approver noise: its count-only start, capped at a third
#: of 1,500 labels, fell on 640 passes where 850 had the power. The prediction is optimistic for
#: such a judge, so it only vouches for the count-only start; it never chooses a count itself.
PREDICTED_START_SHARE = 0.25
#: A checkpoint after the first is dropped (its weight goes to the others) when an exact test at
#: the path's whole level, at the predicted rate, would succeed there with less than this chance:
#: a calibrated judge's later marks sit where the rate is far past the limit. The prediction is
#: optimistic for an overconfident judge, so what it calls hopeless is hopeless for the truth too.
HOPELESS_POWER = 0.05


def power_start(limit: float, level: float, *, share: float = POWER_SHARE) -> int:
    """Fewest decisions at which an observed rate of ``share * limit`` would be certified.

    The smallest ``n`` with ``P(Bin(n, limit) <= floor(share * limit * n)) <= level``:
    where a test at ``level`` has a fair chance when the true rate is well
    inside the limit. It depends on the limit and the level only, never on
    labels.

    Examples
    --------
    >>> power_start(0.1, 0.05)
    76
    >>> power_start(0.1, 0.05) >= min_count(0.1, 0.05)
    True
    """
    limit = _check_level(limit, "limit", closed_right=True)
    level = _check_level(level, "level")
    if limit >= 1.0:
        return 1
    return _power_start(limit, level, float(share))


@functools.lru_cache(maxsize=4096)
def _power_start(limit: float, level: float, share: float) -> int:
    # The search asks for the same few (limit, level) pairs on every path and
    # every resample; the scan is the costly part, so it runs once per pair.
    # The cdf is a sawtooth in n (the floor), so scan rather than bisect, in
    # growing blocks: small answers stay cheap.
    low, cap = 1, 200_000
    while low <= cap:
        n = np.arange(low, min(cap, max(2 * low, 1_000)) + 1)
        ok = stats.binom.cdf(np.floor(share * limit * n), n, limit) <= level
        if ok.any():
            return int(n[np.argmax(ok)])
        low = int(n[-1]) + 1
    return cap


def checkpoint_weights(
    n: Any,
    *,
    limit: float,
    level: float,
    testable: Any = None,
    power_share: float = POWER_SHARE,
    start: float | None = None,
    spread: int = 0,
    predicted: Any = None,
) -> np.ndarray:
    """Fallback weights along a path: where each chain of tests starts, and with how much level.

    Checkpoints sit at counts ``s, 2s, 4s, ...`` up to the largest count on
    the path, where ``s`` is :func:`power_start` at the first checkpoint's
    share of ``level`` (capped at a third of the largest count, so that small
    samples get a start). The first checkpoint holds most of the level
    (``1 - 0.1 (K - 1)`` of it with ``K`` checkpoints, at least half); the
    later ones share the rest equally. A checkpoint's weight is
    put on the first candidate at or after it that ``testable`` allows (by
    default: every candidate with at least :func:`min_count` decisions at the
    full ``level``). ``power_share`` is the share of the limit handed to
    :func:`power_start`; ``start``, when given (:func:`learned_start`), is
    the first checkpoint's count instead. With ``spread`` (a learned path,
    :data:`LEARNED_SPREAD`) and later checkpoints at all, their share is
    split equally over them and ``spread`` more candidates evenly placed
    (by position) among the testable ones after the first checkpoint; the
    first keeps its weight. With ``predicted`` (the rate the evaluator's own
    probabilities predict at each candidate, :func:`predicted_false_pass`),
    the first checkpoint goes to :func:`power_start` itself rather than the
    cap when that count is on the path and the predicted rate stays within
    :data:`PREDICTED_START_SHARE` of the limit up to it, and a later
    checkpoint whose exact test at the whole ``level`` would succeed at the
    predicted rate with less than :data:`HOPELESS_POWER` is dropped.
    Everything here is a function of the counts, the order and the answers
    (and of labels the tests never see), so the weights are fixed before any
    test is run.

    Parameters
    ----------
    n : array-like of int
        Decisions per candidate, strictest first (made nondecreasing here).
    limit : float
        The rate limit the path is tested against (``alpha`` or ``beta``).
    level : float
        The path's share of ``delta``: the weights sum to it (or to less when
        no candidate can carry them).
    testable : array-like of bool, optional
        Candidates that may carry a weight.
    power_share : float, default=POWER_SHARE
        Share of the limit handed to :func:`power_start`.
    start : float, optional
        The first checkpoint's count, when learned (:func:`learned_start`).
    spread : int, default=0
        Candidates after the first checkpoint that share the later
        checkpoints' weight with them (0: only the doubling marks).
    predicted : array-like of float, optional
        The rate each candidate is predicted to have from the answers alone
        (no label); ``None`` places the checkpoints from the counts only.

    Returns
    -------
    ndarray of float
        One weight per candidate.

    Examples
    --------
    >>> w = checkpoint_weights(np.arange(1, 1001), limit=0.1, level=0.1)
    >>> round(float(w.sum()), 12), int(np.flatnonzero(w)[0]) + 1
    (0.1, 59)
    """
    counts = np.maximum.accumulate(np.asarray(n, dtype=float)) if np.size(n) else np.zeros(0)
    weights = np.zeros(counts.size)
    if counts.size == 0 or counts[-1] <= 0:
        return weights
    ok = counts >= min_count(limit, level) if testable is None else np.asarray(testable, bool)
    top = counts[-1]

    def at_or_after(count: float) -> int | None:
        idx = np.flatnonzero(ok & (counts >= count))
        return int(idx[0]) if idx.size else None

    rate = None if predicted is None else np.asarray(predicted, dtype=float)
    if rate is not None and rate.shape != counts.shape:
        raise ValueError(
            f"predicted has {rate.size} rates for a path of {counts.size} candidates: one each"
        )

    def hopeless(count: float) -> bool:
        # No test at the whole level would succeed there at the predicted rate (or none at all).
        j = at_or_after(count)
        return j is None or bool(
            exact_test_power(counts[j], rate[j], limit=limit, level=level) < HOPELESS_POWER
        )

    # The number of checkpoints fixes the first one's share, which fixes its start: iterate once.
    first_share = 1.0
    given = start
    for _ in range(3):
        if given is not None:
            start = max(float(given), 1.0)
        else:
            start = power_start(limit, first_share * level, share=power_share)
            cap = max(min_count(limit, first_share * level), int(top // 3))
            if rate is not None and cap < start <= top and at_or_after(start) is not None:
                # The answers vouch for the count-only start past the cap (no count of their own).
                reach = int(np.argmax(counts >= start))
                if rate[: reach + 1].max() <= PREDICTED_START_SHARE * limit:
                    cap = start
            start = min(start, cap)
        marks = [start * 2**i for i in range(64) if start * 2**i <= top]
        if rate is not None:
            marks = marks[:1] + [m for m in marks[1:] if not hopeless(m)]
        k = max(len(marks), 1)
        share = max(FIRST_WEIGHT_MIN, 1.0 - LATER_WEIGHT * (k - 1))
        if share == first_share:
            break
        first_share = share
    shares = [first_share] + [(1.0 - first_share) / (k - 1)] * (k - 1) if k > 1 else [1.0]
    for mark, w in zip(marks or [start], shares, strict=False):
        j = at_or_after(mark)
        if j is not None:
            weights[j] += w * level
    held = np.flatnonzero(weights)
    if spread > 0 and held.size > 1:
        # The later share, over the later marks and `spread` candidates placed evenly after the
        # first checkpoint (positions and counts only): a failure midway costs the candidates up
        # to the next checkpoint, not the rest of the path.
        first = int(held[0])
        rest = float(weights.sum() - weights[first])
        after = np.flatnonzero(ok & (np.arange(counts.size) > first))
        picks = np.linspace(0, after.size - 1, spread + 1)[1:].round().astype(int)
        later = np.union1d(held[1:], after[np.unique(picks)])
        weights[held[1:]] = 0.0
        weights[later] += rest / later.size
    return weights


def fallback(pvalues: Any, weights: Any) -> tuple[int | None, np.ndarray, np.ndarray]:
    """The fallback procedure along a fixed sequence: every candidate certified, at which level.

    Candidate ``j`` is tested at ``a_j = w_j + a_{j-1}`` when candidate
    ``j - 1`` was rejected, else at ``a_j = w_j`` (Wiens 2003): a rejection
    hands its level on, a failure ends that chain but not the walk, since the
    next checkpoint's weight starts a new one. It is a closed testing
    procedure built on weighted Bonferroni tests (Wiens and Dmitrienko 2005),
    so the family-wise error rate is at most ``sum(w)`` whatever the
    dependence between the tests: with that probability or more, every
    rejected candidate is truly within the limit, all at once.

    Parameters
    ----------
    pvalues : array-like of float
        One p-value per candidate, in the fixed order.
    weights : array-like of float
        The level each candidate brings (fixed before seeing the labels).

    Returns
    -------
    chosen : int or None
        The last rejected candidate, ``None`` if none was.
    levels : ndarray of float
        The level each candidate was tested at.
    rejected : ndarray of bool

    Examples
    --------
    >>> chosen, levels, rejected = fallback([0.5, 0.01, 0.02, 0.9, 0.01], [0.05, 0, 0.05, 0, 0])
    >>> chosen, rejected.tolist()
    (2, [False, False, True, False, False])
    """
    p = np.asarray(pvalues, dtype=float)
    w = np.asarray(weights, dtype=float)
    levels = np.zeros(p.size)
    rejected = np.zeros(p.size, bool)
    # Between two weighted candidates a run's level is constant, so each stretch is one vectorised
    # comparison: the walk costs one step per checkpoint, not one per candidate.
    starts = np.flatnonzero(w > 0)
    carried = 0.0
    for i, j in enumerate(starts):
        end = int(starts[i + 1]) if i + 1 < starts.size else p.size
        level = carried + w[j]
        fails = np.flatnonzero(p[j:end] > level)
        stop = j + int(fails[0]) if fails.size else end
        rejected[j:stop] = True
        levels[j : min(stop + 1, end)] = level
        carried = level if not fails.size else 0.0
    hits = np.flatnonzero(rejected)
    return (int(hits[-1]) if hits.size else None), levels, rejected


def exact_test_power(m: Any, rate: Any, *, limit: float, level: float) -> np.ndarray:
    """P(one exact binomial test at ``level`` certifies a rate within ``limit``) on ``m`` decisions.

    Errors are Binomial(``m``, ``rate``); the test rejects when
    ``P(Bin(m, limit) <= errors) <= level`` (:func:`binomial_pvalues`). No
    decision leaves nothing to test: probability 1.

    Examples
    --------
    >>> float(exact_test_power(1000, 0.0, limit=0.1, level=0.05))
    1.0
    >>> bool(exact_test_power(1000, 0.1, limit=0.1, level=0.05) <= 0.05)
    True
    """
    m = np.floor(np.asarray(m, dtype=float))
    rate = np.clip(np.asarray(rate, dtype=float), 0.0, 1.0)
    if m.ndim == 1 and m.shape == rate.shape:
        # The binomial quantile is the costly part (an iterative inverse): once per run of equal rows.
        first, inverse = _runs(m, rate)
        return _exact_test_power(m[first], rate[first], limit, level)[inverse]
    return _exact_test_power(m, rate, limit, level)


def _exact_test_power(m: np.ndarray, rate: np.ndarray, limit: float, level: float) -> np.ndarray:
    most = stats.binom.ppf(level, m, limit)  # smallest count whose cdf reaches the level
    most = np.where(stats.binom.cdf(most, m, limit) <= level, most, most - 1)
    return np.where(m > 0, stats.binom.cdf(most, m, rate), 1.0)


#: Quantile of a rate's posterior (uniform prior) read when a start is learned: a cautious rate,
#: since a start placed for a rate the certification part then exceeds loses most of the level.
START_RATE_QUANTILE = 0.9
#: Share of a path's level its first checkpoint is taken to hold when its start is learned (it
#: holds FIRST_WEIGHT_MIN to 0.9 of it, more when fewer checkpoints follow).
START_LEVEL_SHARE = 0.8


def learned_start(n_cert: Any, n_search: Any, errors_search: Any, *, limit: float,
                  level: float) -> float | None:  # fmt: skip
    """Decisions at which a path's first checkpoint goes, learned on a search part of the labels.

    For each candidate, the certification part's decisions ``n_cert`` (counts
    only, no labels) times the chance that an exact test at ``level`` passes
    there, at the :data:`START_RATE_QUANTILE` posterior quantile of the rate
    observed on the search part (``errors_search`` of ``n_search``); the start
    is the count where that product peaks. It reads no certification label,
    so the weights are still fixed before the certification part is tested.
    ``None`` when no candidate has a chance.

    Examples
    --------
    >>> n = np.array([100, 500, 1000, 2000])
    >>> learned_start(n, n // 4, np.array([0, 2, 5, 40]), limit=0.05, level=0.08)
    1000.0
    """
    n_cert = np.asarray(n_cert, dtype=float)
    n_s = np.asarray(n_search, dtype=float)
    k_s = np.asarray(errors_search, dtype=float)
    # Candidates on a grid share their counts in runs: each quantile once per run (same values).
    cols = np.broadcast_arrays(n_cert, n_s, k_s)
    first, inverse = _runs(*(np.ravel(c) for c in cols))
    n_c, n_s, k_s = (np.ravel(c)[first] for c in cols)
    rate = stats.beta.ppf(START_RATE_QUANTILE, k_s + 1, np.maximum(n_s - k_s, 0) + 1)
    value = (n_c * exact_test_power(n_c, rate, limit=limit, level=level))[inverse]
    value = value.reshape(cols[0].shape)
    if not np.any(value > 0):
        return None
    return float(np.maximum.accumulate(n_cert)[int(np.argmax(value))])


def first_testable(n: Any, *, limit: float, delta: float) -> np.ndarray:
    """Mask of candidates from the first with at least :func:`min_count` decisions onward.

    The strictest candidates decide too few submissions for any outcome to be
    rejected; a sequence that started there would stop at once. The walk
    therefore starts where the count first reaches :func:`min_count`. The
    counts depend on the scores only, never on the labels. The guarantee
    keeps its level when the error rate does not fall as the path loosens
    (see ``docs/method.md``).
    """
    n = np.asarray(n, dtype=float)
    need = min_count(limit, delta)
    reached = n >= need
    return np.maximum.accumulate(reached) if reached.size else reached


#: Thresholds on the fixed grid of a one-score path (as in Jung et al.'s experiments).
GRID_SIZE = 5000


@dataclass(frozen=True)
class ScorePath:
    """Counts at every threshold of a fixed grid for one score, strictest first.

    Attributes
    ----------
    threshold : ndarray
        The grid, in path order.
    n : ndarray of int
        Submissions the threshold decides (``score >= t`` for a pass rule,
        ``score < t`` for a fail rule).
    errors : ndarray of int
        Of those, the errors.
    below, above : ndarray
        The largest score below ``t`` and the smallest at or above it
        (``-inf``/``inf`` when there is none): every threshold in
        ``(below, above]`` decides the same submissions as ``t``.
    """

    threshold: np.ndarray
    n: np.ndarray
    errors: np.ndarray
    below: np.ndarray
    above: np.ndarray


def sorted_parts(score: Any, error: Any) -> tuple[np.ndarray, np.ndarray]:
    """The decided (non-``nan``) scores of the errors and of the others, each sorted.

    What every grid path on these submissions counts from (:func:`path_from_parts`):
    one sort of each class, with no permutation to carry along.
    """
    s = np.asarray(score, dtype=float)
    e = np.asarray(error, dtype=bool)
    keep = ~np.isnan(s)
    return np.sort(s[keep & e]), np.sort(s[keep & ~e])


def path_from_parts(parts: Any, *, descending: bool, grid: Any = None) -> ScorePath:
    """:func:`score_path` of the union of disjoint parts, each given by :func:`sorted_parts`.

    The counts at a threshold are the parts' counts added, its neighbours
    the nearest of the parts' neighbours, so a path on every label costs
    no sort once its parts (a split's search and certification parts) are
    sorted.
    """
    if grid is None:
        grid = np.linspace(0.0, 1.0, GRID_SIZE)
    t = np.sort(np.asarray(grid, dtype=float))
    t = t[::-1] if descending else t
    below = np.full(t.size, -np.inf)
    above = np.full(t.size, np.inf)
    k_all = np.zeros(t.size, np.int64)  # scores below t
    k_err = np.zeros(t.size, np.int64)  # errors below t
    n_all = n_err = 0
    for errors, others in parts:
        for a, is_error in ((errors, True), (others, False)):
            k = np.searchsorted(a, t, side="left")
            k_all += k
            n_all += a.size
            if is_error:
                k_err += k
                n_err += a.size
            if a.size:
                below = np.maximum(below, np.where(k > 0, a[np.maximum(k - 1, 0)], -np.inf))
                above = np.minimum(
                    above, np.where(k < a.size, a[np.minimum(k, a.size - 1)], np.inf)
                )
    if descending:
        n, errors_at = n_all - k_all, n_err - k_err
    else:
        n, errors_at = k_all, k_err
    return ScorePath(t, n.astype(int), errors_at.astype(int), below, above)


def score_path(score: Any, error: Any, *, descending: bool, grid: Any = None) -> ScorePath:
    """Count decisions and errors of one score at every threshold of a fixed grid.

    ``descending=True`` is a pass rule (``score >= t`` decides; the path runs
    from 1 down to 0), ``descending=False`` a fail rule (``score < t``; from 0
    up to 1). ``nan`` scores are never decided. The errors and the others are
    sorted apart and each grid point is a binary search in both:
    ``O(n log n + G log n)``, not ``O(n G)``.

    Examples
    --------
    >>> path = score_path([0.9, 0.5, 0.9, 0.2], [0, 1, 0, 1], descending=True, grid=[1.0, 0.6, 0.0])
    >>> path.n.tolist(), path.errors.tolist(), path.below.tolist()
    ([0, 2, 4], [0, 0, 2], [0.9, 0.5, -inf])
    """
    return path_from_parts([sorted_parts(score, error)], descending=descending, grid=grid)


def predicted_false_pass(score: Any, thresholds: Any) -> np.ndarray:
    """The false-pass rate the evaluator's own yes-probabilities predict for ``score >= t``.

    ``mean(1 - p | p >= t)`` at each threshold ``t`` (0 where nothing
    passes; ``nan`` scores are never decided): what a well-calibrated
    evaluator's pass set would hold. It reads the answers only, never a
    label, so it may place checkpoints (:func:`checkpoint_weights`). For an
    overconfident evaluator it is optimistic.

    Examples
    --------
    >>> predicted_false_pass([0.9, 0.7, 1.0, np.nan], [1.0, 0.8, 0.0]).round(3).tolist()
    [0.0, 0.05, 0.133]
    """
    s = np.asarray(score, dtype=float)
    s = np.sort(s[~np.isnan(s)])
    doubt = np.concatenate([[0.0], np.cumsum((1.0 - s)[::-1])])  # over the k highest answers
    k = s.size - np.searchsorted(s, np.asarray(thresholds, dtype=float), side="left")
    return np.where(k > 0, doubt[k] / np.maximum(k, 1), 0.0)


def nice_threshold(
    low: float,
    high: float,
    *,
    prefer: str,
    decimals: int = THRESHOLD_DECIMALS,
    max_decimals: int = 15,
) -> float | None:
    """A short decimal strictly above ``low`` and at most ``high``.

    Thresholds in the interval ``(low, high]`` make the same decisions on the
    labeled data; the one written into the process file should be easy to read
    and as loose as the interval allows. ``prefer="low"`` returns the smallest
    number with ``decimals`` places in the interval (a pass threshold: lower
    is looser), ``prefer="high"`` the largest (a fail threshold). More places
    are used only when the interval is narrower than ``10**-decimals``; past
    ``max_decimals`` places the answer is ``None``.

    Examples
    --------
    >>> nice_threshold(0.41, 0.93, prefer="low")
    0.411
    >>> nice_threshold(0.41, 0.93, prefer="high")
    0.93
    >>> nice_threshold(0.9312, 0.93125, prefer="low")
    0.93121
    >>> nice_threshold(0.9312, 0.93125, prefer="low", max_decimals=4) is None
    True
    """
    if prefer not in ("low", "high"):
        raise ValueError(f"prefer must be 'low' or 'high', got {prefer!r}")
    if not low < high:
        raise ValueError(f"empty interval ({low}, {high}]")
    for d in range(decimals, max_decimals + 1):
        scale = 10.0**d
        if prefer == "low":
            c = round((math.floor(low * scale) + 1) / scale, d)
            while c <= low:
                c = round(c + 1 / scale, d)
            if c <= high:
                return c
        else:
            c = round(math.floor(high * scale) / scale, d)
            while c > high:
                c = round(c - 1 / scale, d)
            if c > low:
                return c
    return None if max_decimals < 15 else float(high)


def stratified_split(
    labels: Any, *, search_fraction: float, seed: int | np.random.Generator | None = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Split indices into a search part and a certification part, stratified by label.

    Each label class is shuffled with ``seed`` and its first
    ``round(search_fraction * size)`` members go to the search part, so both
    parts keep the labeled acceptable share.

    Returns
    -------
    search, certify : ndarray of int
        Sorted indices.
    """
    y = np.asarray(labels, dtype=bool)
    if not 0.0 < search_fraction < 1.0:
        raise ValueError(f"search_fraction must be in (0, 1), got {search_fraction!r}")
    rng = np.random.default_rng(seed)
    search = []
    for cls in (False, True):
        idx = np.flatnonzero(y == cls)
        rng.shuffle(idx)
        search.append(idx[: int(round(search_fraction * idx.size))])
    s = np.sort(np.concatenate(search))
    # The complement by a mask: setdiff1d hashes both sides (a third of a 100k-label search).
    rest = np.ones(y.size, bool)
    rest[s] = False
    return s, np.flatnonzero(rest)


def upper_bound(errors: Any, n: Any, *, delta: float) -> np.ndarray:
    """Clopper-Pearson one-sided upper bound at ``1 - delta`` (1 where ``n == 0``).

    Computed once per distinct ``(errors, n)`` pair: along a path most
    neighbouring candidates share their counts.
    """
    k = np.asarray(errors)
    m = np.asarray(n)
    if k.ndim == 0 or k.size < 64:
        return binomial_upper_bound(k, m, delta=delta)
    kk, mm = k.ravel().astype(np.int64), m.ravel().astype(np.int64)
    key = kk * (int(mm.max(initial=0)) + 1) + mm
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    bounds = binomial_upper_bound(kk[first], mm[first], delta=delta)
    return bounds[inverse.ravel()].reshape(k.shape)


def _bound_at(rate: float, n: float, delta: float) -> float:
    # The bound with a real-valued n and k = rate * n (continuous in n, for root finding).
    k = rate * n
    if n - k <= 0:
        return 1.0
    return float(special.betaincinv(k + 1.0, n - k, 1.0 - delta))


def labels_needed(rate: float, *, limit: float, delta: float, max_n: float = 1e9) -> float:
    """How many decisions until the upper bound reaches ``limit`` if errors stay at ``rate``.

    Solves ``CP_upper(rate * n, n; 1 - delta) = limit`` for ``n``. Infinite
    when ``rate >= limit`` (no amount of data helps).

    Examples
    --------
    >>> labels_needed(0.0, limit=0.05, delta=0.1)
    45.0
    >>> round(labels_needed(0.02, limit=0.05, delta=0.1))
    111
    """
    if not math.isfinite(rate) or rate >= limit:
        return math.inf
    if rate <= 0:
        return float(min_count(limit, delta))
    f = lambda logn: _bound_at(rate, math.exp(logn), delta) - limit  # noqa: E731
    if f(math.log(max_n)) > 0:
        return math.inf
    lo = math.log(1.0)
    if f(lo) <= 0:
        return 1.0
    root = optimize.brentq(f, lo, math.log(max_n), xtol=1e-6)
    return float(math.ceil(math.exp(root) - 1e-9))


def upper_bound_root(errors: int, n: int, *, delta: float) -> float:
    """The Clopper-Pearson upper bound found by root finding on the binomial tail.

    The largest ``r`` with ``P(Bin(n, r) <= errors) >= delta``, found with
    Brent's method; the reference the closed form of :func:`upper_bound` is
    tested against, and what a straightforward implementation computes.
    """
    if n <= 0 or errors >= n:
        return 1.0
    f = lambda r: stats.binom.cdf(errors, n, r) - delta  # noqa: E731
    return float(optimize.brentq(f, 0.0, 1.0, xtol=1e-12))
