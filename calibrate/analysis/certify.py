"""Certify a rate along an ordered path of candidates: exact binomial tests and bounds.

The pure statistical pipeline behind :mod:`calibrate.analysis.threshold_search`.
Every function takes and returns arrays; nothing here knows about check-1.

The chain, in the order the search uses it:

1. :func:`random_split` splits the labeled submissions into a search part
   and a certification part (only when the path must be learned).
2. :func:`calibrate.analysis.score_paths.score_path` counts at every
   distinct threshold of one score.
3. :func:`binomial_pvalues` gives the exact p-value of ``H0: rate > limit``
   for each candidate; :func:`first_testable` finds where a test can succeed
   at all (:func:`min_count`).
4. :func:`fixed_sequence` walks the candidates from strictest to loosest and
   stops at the first one it cannot reject; the fallback walk, which carries
   on past a failure at fixed checkpoints, is
   :mod:`calibrate.analysis.fallback_walk`'s.
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

import math
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from calibrate.analysis.stats import binomial_tail_pvalue, binomial_upper_bound
from calibrate.errors import UsageError

#: Decimal places tried first when a threshold is written into a process file.
THRESHOLD_DECIMALS = 3


def checked_level(value: float, name: str, *, closed_right: bool = False) -> float:
    """``value`` as a float, after checking it is a level or a rate limit in ``(0, 1)``.

    ``closed_right`` admits 1 (a limit of 1 bounds nothing but is valid).

    Raises
    ------
    UsageError
        A ``ValueError``, when ``value`` is not a finite number in the interval, naming ``name``.
    """
    ok = 0.0 < value <= 1.0 if closed_right else 0.0 < value < 1.0
    if not (isinstance(value, int | float) and math.isfinite(value) and ok):
        span = "(0, 1]" if closed_right else "(0, 1)"
        # As every public function words a bad level (calibrate.arguments.check_unit).
        raise UsageError(f"{name} must be in {span}, got {value}")
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
    limit = checked_level(limit, "limit", closed_right=True)
    delta = checked_level(delta, "delta")
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
    first, inverse = equal_runs(k, m)
    return binomial_tail_pvalue(k[first], m[first], alpha=limit)[inverse]


def equal_runs(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each run of equal consecutive rows starts, and each row's run (1-d columns).

    Along a path neighbouring candidates mostly share their counts: a costly
    function of the rows is computed once per run (at ``first``) and spread
    back with ``inverse``, giving the same values.

    Returns
    -------
    first : ndarray of int
        The first row of each run.
    inverse : ndarray of int
        Each row's run.
    """
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


def random_split(n: int, *, search_fraction: float,
                 seed: int | np.random.Generator | None = 0) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Split ``n`` labeled rows at random into a search part and a certification part.

    The first ``round(search_fraction * n)`` rows of a permutation drawn with
    ``seed`` are the search part. No label is read: given the search part,
    the certification part is an independent sample of the submissions, so
    an exact test on it is exact whatever the search part chose. (Until
    2026-12 each label class was split apart, which tied the two parts'
    shares of bad rows to each other, outside the proof.)

    Returns
    -------
    search, certify : ndarray of int
        Sorted indices.
    """
    if not 0.0 < search_fraction < 1.0:
        raise ValueError(f"search_fraction must be in (0, 1), got {search_fraction!r}")
    order = np.random.default_rng(seed).permutation(int(n))
    s = np.sort(order[: int(round(search_fraction * n))])
    # The complement by a mask: setdiff1d hashes both sides (a third of a 100k-label search).
    rest = np.ones(int(n), bool)
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
