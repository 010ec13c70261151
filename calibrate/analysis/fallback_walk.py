"""The fallback walk along a path of candidates, and where its checkpoints put the level.

A path's level is spread over checkpoints fixed before any test is run
(:func:`checkpoint_weights`: doubling counts from :func:`power_start`, or a
start learned on a search part of the labels, :func:`learned_start`, and
checkpoints the evaluator's own probabilities call hopeless dropped, read
with :func:`exact_test_power`); :func:`fallback` then tests the candidates in
order, each chain of rejections handing its level on. The exact tests
themselves are :mod:`calibrate.analysis.certify`'s.

References
----------
.. [1] Wiens, B. L. (2003). A fixed sequence Bonferroni procedure for testing
   multiple endpoints. Pharmaceutical Statistics 2(3), 211-215.
.. [2] Wiens, B. L. and Dmitrienko, A. (2005). The fallback procedure for
   evaluating a single family of hypotheses. Journal of Biopharmaceutical
   Statistics 15(6), 929-942.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from scipy import stats

from calibrate.analysis.certify import checked_level, equal_runs, min_count

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
#: On a learned path, and on the paths fixed before the labels of one rubric or choice
#: question, the later checkpoints' share is spread over their marks and this many candidates
#: evenly placed along the path after the first checkpoint. A learned path's passes grow little
#: (from a few hundred to the certification part's size), so the doublings leave the loose end,
#: where the targets of a loose limit sit, without a checkpoint, and one failure midway (often a
#: candidate whose few fails fail the false-fail test) ended the walk there. A fixed path's last
#: doubling mark can sit just short of the best candidates: a rubric with confident mistakes at
#: its top, 12,000 labels, alpha = 0.1, the mark's candidate missed (p 0.001003 at level 0.001)
#: and seven looser ones at p ~ 1e-6 had no level at all (4 of 10 datasets certified; 7 of 10
#: spread).
SPREAD = 6
#: ... from this many labels. On fewer, the certification part is small, a later checkpoint's
#: test needs its whole share, and split six ways it passes nothing (three questions from an
#: overconfident judge at 300 labels and alpha = 0.1: median certified auto-pass 79% -> 51%).
SPREAD_FROM = 1000
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


def spread_for(n_labels: int) -> int:
    """The ``spread`` of :func:`checkpoint_weights` for a path of a step with ``n_labels`` labels."""
    return SPREAD if n_labels >= SPREAD_FROM else 0


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
    limit = checked_level(limit, "limit", closed_right=True)
    level = checked_level(level, "level")
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
    default: every candidate with at least
    :func:`~calibrate.analysis.certify.min_count` decisions at the full
    ``level``). ``power_share`` is the share of the limit handed to
    :func:`power_start`; ``start``, when given (:func:`learned_start`), is
    the first checkpoint's count instead. With ``spread`` (a learned path,
    :data:`SPREAD`) and later checkpoints at all, their share is
    split equally over them and ``spread`` more candidates evenly placed
    (by position) among the testable ones after the first checkpoint; the
    first keeps its weight. With ``predicted`` (the rate the evaluator's own
    probabilities predict at each candidate,
    :func:`~calibrate.analysis.score_paths.predicted_false_pass`),
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
    ``P(Bin(m, limit) <= errors) <= level``
    (:func:`~calibrate.analysis.certify.binomial_pvalues`). No
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
        first, inverse = equal_runs(m, rate)
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
    first, inverse = equal_runs(*(np.ravel(c) for c in cols))
    n_c, n_s, k_s = (np.ravel(c)[first] for c in cols)
    rate = stats.beta.ppf(START_RATE_QUANTILE, k_s + 1, np.maximum(n_s - k_s, 0) + 1)
    value = (n_c * exact_test_power(n_c, rate, limit=limit, level=level))[inverse]
    value = value.reshape(cols[0].shape)
    if not np.any(value > 0):
        return None
    return float(np.maximum.accumulate(n_cert)[int(np.argmax(value))])
