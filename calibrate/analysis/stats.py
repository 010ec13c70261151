"""Intervals and bounds on rates, vectorised over arrays of counts.

Every rate calibrate shows a person goes through one of these functions, so
the method behind each interval is stated in one place.

References
----------
.. [1] Wilson, E. B. (1927). Probable inference, the law of succession, and
   statistical inference. JASA 22(158), 209-212.
.. [2] Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or
   fiducial limits illustrated in the case of the binomial. Biometrika 26(4).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from scipy import stats

from calibrate.defaults import MIN_N  # noqa: F401 - re-exported here: below it a rate shows as "too few"


def _counts(k: Any, n: Any) -> tuple[np.ndarray, np.ndarray]:
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    if np.any(k < 0) or np.any(k > n):
        raise ValueError("counts must satisfy 0 <= k <= n")
    return k, n


def wilson_interval(k: Any, n: Any, *, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided Wilson score interval for a binomial proportion ``k / n``.

    Returns ``(low, high)``; both are NaN where ``n == 0``. The bounds are
    exactly 0 where ``k == 0`` and 1 where ``k == n`` (the formula's value;
    computed, it leaves floating noise such as ``1.4e-17``).

    Examples
    --------
    >>> lo, hi = wilson_interval(8, 10)
    >>> round(float(lo), 4), round(float(hi), 4)
    (0.4902, 0.9433)
    """
    k, n = _counts(k, n)
    z = stats.norm.ppf(0.5 + confidence / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        denom = 1 + z**2 / n
        centre = (p + z**2 / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
        low, high = np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)
    low, high = np.where(k == 0, 0.0, low), np.where(k == n, 1.0, high)
    empty = n == 0
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


def clopper_pearson_interval(
    k: Any, n: Any, *, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided exact (Clopper-Pearson) interval for ``k / n``; NaN where ``n == 0``."""
    k, n = _counts(k, n)
    a = 1 - confidence
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k > 0, stats.beta.ppf(a / 2, k, n - k + 1), 0.0)
        high = np.where(k < n, stats.beta.ppf(1 - a / 2, k + 1, n - k), 1.0)
    empty = n == 0
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


def binomial_upper_bound(k: Any, n: Any, *, delta: float) -> np.ndarray:
    """Exact one-sided upper confidence bound on a rate: ``P(rate <= bound) >= 1 - delta``.

    The Clopper-Pearson upper limit: the largest ``r`` with
    ``P(Binomial(n, r) <= k) >= delta``. It is 1 where ``n == 0`` (nothing is
    known) and where ``k == n``.

    Examples
    --------
    >>> round(float(binomial_upper_bound(0, 59, delta=0.05)), 4)
    0.0495
    """
    k, n = _counts(k, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        bound = stats.beta.ppf(1 - delta, k + 1, n - k)
    return np.where((n == 0) | (k >= n), 1.0, bound)


def binomial_tail_pvalue(k: Any, n: Any, *, alpha: float) -> np.ndarray:
    """Exact p-value of ``H0: rate > alpha`` after seeing ``k`` errors in ``n``: ``P(Bin(n, alpha) <= k)``.

    Small values are evidence that the rate is at most ``alpha``. It is 1 where ``n == 0``.
    """
    k, n = _counts(k, n)
    return np.where(n == 0, 1.0, stats.binom.cdf(k, n, alpha))


def measurably_above(k: Any, n: Any, limit: Any, *, delta: float, min_n: int = MIN_N) -> np.ndarray:
    """Whether a rate ``k / n`` is measurably above ``limit``: evidence, not a mere observation.

    Measurably: on at least ``min_n`` decisions, the one-sided exact
    (Clopper-Pearson [2]_) lower bound at ``1 - delta`` (the lower end of
    the two-sided exact interval at ``1 - 2 delta``) is above the limit. A
    rate observed above the limit on a few dozen decisions is not enough.

    Parameters
    ----------
    k, n : array_like
        Errors and decisions, broadcast together (``0 <= k <= n``).
    limit : array_like
        The limit on the rate (never exceeded where it is ``>= 1``).
    delta : float
        The bound holds with probability at least ``1 - delta``.
    min_n : int, default=:data:`calibrate.defaults.MIN_N`
        Fewer decisions are never measurably above.

    Returns
    -------
    numpy.ndarray of bool

    Examples
    --------
    >>> measurably_above([4, 12, 12], [100, 100, 19], 0.05, delta=0.1).tolist()
    [False, True, False]
    """
    k, n = _counts(k, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(k > 0, stats.beta.ppf(delta, np.maximum(k, 1), n - k + 1), 0.0)
    return (n >= min_n) & (lower > np.asarray(limit, dtype=float))


# -- agreement and comparison -------------------------------------------------


class KappaResult(NamedTuple):
    """Cohen's kappa with its large-sample interval.

    Attributes
    ----------
    kappa : float
        The estimate; NaN when undefined (chance agreement is 1, e.g. both
        raters gave one and the same category every time) or ``n == 0``.
    low, high : float
        The two-sided interval ``kappa ± z * se``, clipped to ``[-1, 1]``; NaN
        when ``kappa`` is NaN or ``n < 2``.
    se : float
        Fleiss-Cohen-Everitt large-sample standard error (non-null variance).
    n : int
        Number of pairs.
    """

    kappa: float
    low: float
    high: float
    se: float
    n: int


def cohen_kappa(y1: Any, y2: Any, *, confidence: float = 0.95) -> KappaResult:
    """Cohen's (unweighted) kappa between two raters with an analytic interval.

    ``kappa = (p_o - p_e) / (1 - p_e)`` where ``p_o`` is the observed agreement
    and ``p_e`` the agreement expected from the two raters' marginals. The
    categories are the union of values seen in ``y1`` and ``y2``.

    The interval uses the large-sample (non-null) variance of Fleiss, Cohen and
    Everitt [1]_::

        var = ( sum_i p_ii [1 - (p_i. + p_.i)(1 - k)]^2
              + (1 - k)^2 sum_{i != j} p_ij (p_.i + p_j.)^2
              - [k - p_e (1 - k)]^2 ) / (n (1 - p_e)^2)

    It is an asymptotic interval: with few pairs or kappa near 1 it can be too
    narrow; prefer :func:`bootstrap_ci` there. At perfect agreement the
    variance is 0; the interval is then the Wilson interval of ``p_o`` mapped
    through ``(p_o - p_e) / (1 - p_e)`` with the marginals fixed, so that it
    never has zero width.

    Parameters
    ----------
    y1, y2 : array-like of shape (n,)
        The two raters' categories (any hashable, comparable values; no NaN).
    confidence : float, default=0.95
        Two-sided confidence level of the interval.

    Returns
    -------
    KappaResult
        ``(kappa, low, high, se, n)``; ``kappa`` matches
        :func:`sklearn.metrics.cohen_kappa_score` where defined.

    References
    ----------
    .. [1] Fleiss, J. L., Cohen, J. and Everitt, B. S. (1969). Large sample
       standard errors of kappa and weighted kappa. Psychological Bulletin
       72(5), 323-327.
    .. [2] Cohen, J. (1960). A coefficient of agreement for nominal scales.
       Educational and Psychological Measurement 20(1), 37-46.

    Examples
    --------
    >>> r = cohen_kappa(["a", "a", "b", "b"], ["a", "b", "b", "b"])
    >>> round(r.kappa, 4)
    0.5
    """
    a = np.asarray(y1)
    b = np.asarray(y2)
    if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"y1 and y2 must be 1-d of equal length, got {a.shape} and {b.shape}")
    n = int(a.size)
    nan = float("nan")
    if n == 0:
        return KappaResult(nan, nan, nan, nan, 0)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    _, codes = np.unique(np.concatenate([a, b]), return_inverse=True)
    k = int(codes.max()) + 1
    table = np.bincount(codes[:n] * k + codes[n:], minlength=k * k).reshape(k, k) / n
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    p_o = float(np.trace(table))
    p_e = float(rows @ cols)
    if np.isclose(p_e, 1.0):
        # One category used by both raters throughout: agreement beyond chance is undefined.
        return KappaResult(nan, nan, nan, nan, n)
    kappa = (p_o - p_e) / (1 - p_e)
    diag = np.diag(table)
    term1 = float(np.sum(diag * (1 - (rows + cols) * (1 - kappa)) ** 2))
    off = table.copy()
    np.fill_diagonal(off, 0.0)
    # (p_.i + p_j.) for cell (i, j): column total of i plus row total of j.
    term2 = (1 - kappa) ** 2 * float(np.sum(off * (cols[:, None] + rows[None, :]) ** 2))
    term3 = (kappa - p_e * (1 - kappa)) ** 2
    var = max(term1 + term2 - term3, 0.0) / (n * (1 - p_e) ** 2)
    se = float(np.sqrt(var))
    if n < 2:
        return KappaResult(float(kappa), nan, nan, se, n)
    if se == 0.0:
        # Perfect agreement: the large-sample variance vanishes and would give a
        # zero-width interval. Map the Wilson interval of p_o through kappa's
        # formula with the marginals held fixed instead.
        lo_o, hi_o = wilson_interval(round(p_o * n), n, confidence=confidence)
        low = max((float(lo_o) - p_e) / (1 - p_e), -1.0)
        high = min((float(hi_o) - p_e) / (1 - p_e), 1.0)
        return KappaResult(float(kappa), float(low), float(high), se, n)
    z = stats.norm.ppf(0.5 + confidence / 2)
    low, high = max(kappa - z * se, -1.0), min(kappa + z * se, 1.0)
    return KappaResult(float(kappa), float(low), float(high), se, n)


#: Above this many resampled values per batch, bootstrap replicates are computed in chunks.
_BOOT_CHUNK = 4_000_000


def bootstrap_ci(
    statistic: Callable[..., Any],
    *arrays: Any,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    paired: bool = True,
    vectorized: bool = False,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic(*arrays)``.

    Parameters
    ----------
    statistic : callable
        ``statistic(*samples) -> float``. With ``vectorized=True`` it receives
        arrays of shape ``(b, n_i)`` (one resample per row) and must return
        shape ``(b,)``, reducing along the last axis; this is much faster.
    *arrays : array-like of shape (n_i,)
        The data. With ``paired=True`` (default) they must have one length and
        are resampled with the same indices (rows of one table); with
        ``paired=False`` each is resampled on its own (independent samples).
    n_boot : int, default=1000
        Number of bootstrap resamples.
    confidence : float, default=0.95
        Two-sided confidence level.
    seed : int, Generator or None, default=0
        Seed of the resampling, for reproducible intervals.
    paired : bool, default=True
        Resample the arrays together (True) or independently (False).
    vectorized : bool, default=False
        Whether ``statistic`` accepts a batch of resamples (see above).

    Returns
    -------
    (low, high) : tuple of float
        The ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` percentiles
        of the finite bootstrap replicates. Both NaN when it cannot be
        computed: no array given, an empty array, or fewer than half of the
        replicates finite (the statistic is mostly undefined on resamples).
        Replicates that are NaN (e.g. kappa on a resample with one category)
        are otherwise dropped, which makes the interval conditional on the
        statistic being defined.

    Notes
    -----
    The percentile method [1]_ is simple and transformation-respecting but can
    under-cover with small samples or skewed statistics.

    References
    ----------
    .. [1] Efron, B. and Tibshirani, R. J. (1993). An Introduction to the
       Bootstrap, ch. 13. Chapman & Hall.

    Examples
    --------
    >>> x = np.arange(100.0)
    >>> lo, hi = bootstrap_ci(np.mean, x, vectorized=False, n_boot=200)
    >>> bool(lo < 49.5 < hi)
    True
    """
    nan = (float("nan"), float("nan"))
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    data = [np.asarray(x) for x in arrays]
    if not data or any(x.ndim != 1 for x in data):
        if any(x.ndim != 1 for x in data):
            raise ValueError("every array must be 1-d")
        return nan
    sizes = [x.shape[0] for x in data]
    if paired and len(set(sizes)) != 1:
        raise ValueError(f"paired arrays must have one length, got {sizes}")
    if min(sizes) == 0:
        return nan
    rng = np.random.default_rng(seed)
    reps = np.empty(n_boot, dtype=float)
    if vectorized:
        chunk = max(1, _BOOT_CHUNK // max(sum(sizes), 1))
        for start in range(0, n_boot, chunk):
            b = min(chunk, n_boot - start)
            if paired:
                idx = rng.integers(0, sizes[0], size=(b, sizes[0]))
                samples = [x[idx] for x in data]
            else:
                samples = [x[rng.integers(0, len(x), size=(b, len(x)))] for x in data]
            reps[start : start + b] = np.asarray(statistic(*samples), dtype=float).reshape(b)
    else:
        for i in range(n_boot):
            if paired:
                idx = rng.integers(0, sizes[0], size=sizes[0])
                samples = [x[idx] for x in data]
            else:
                samples = [x[rng.integers(0, len(x), size=len(x))] for x in data]
            reps[i] = float(statistic(*samples))
    return _percentile_interval(reps, confidence)


def _percentile_interval(reps: np.ndarray, confidence: float) -> tuple[float, float]:
    """Percentiles of the finite replicates; NaN when fewer than half are finite."""
    finite = reps[np.isfinite(reps)]
    if finite.size < max(1, reps.size / 2):
        return float("nan"), float("nan")
    a = (1 - confidence) / 2
    low, high = np.quantile(finite, [a, 1 - a])
    return float(low), float(high)


def bootstrap_counts_ci(
    statistic: Callable[[np.ndarray], Any],
    counts: Any,
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> tuple[float, float]:
    """Percentile bootstrap of a statistic that depends on the data only through value counts.

    The data are ``K`` distinct values (rows, atoms) with multiplicities
    ``counts`` summing to ``n``. Resampling ``n`` rows with replacement
    gives each distinct value a count, and those counts are
    ``Multinomial(n, counts / n)``; drawing them directly gives exactly the
    distribution of the row bootstrap for any statistic that sees the data
    only through how often each distinct value occurs (a mean, binned sums,
    the ECE over fixed bins), at a cost of ``K`` instead of ``n`` per
    resample. The interval equals :func:`bootstrap_ci`'s up to Monte-Carlo
    noise (a different random stream).

    Parameters
    ----------
    statistic : callable
        ``statistic(c) -> ndarray of shape (b,)`` for a batch ``c`` of
        resampled counts of shape ``(b, K)``.
    counts : array-like of int, shape (K,)
        How often each distinct value occurs in the data.
    n_boot : int, default=1000
        Number of bootstrap resamples.
    confidence : float, default=0.95
        Two-sided confidence level.
    seed : int, Generator or None, default=0
        Seed of the resampling.

    Returns
    -------
    (low, high) : tuple of float
        As :func:`bootstrap_ci`: NaN with no data or when fewer than half of
        the replicates are finite.

    References
    ----------
    .. [1] Efron, B. and Tibshirani, R. J. (1993). An Introduction to the
       Bootstrap, ch. 6 and 13. Chapman & Hall.

    Examples
    --------
    >>> values = np.array([0.0, 1.0])
    >>> lo, hi = bootstrap_counts_ci(lambda c: c @ values / c.sum(axis=1), [60, 40], n_boot=500)
    >>> bool(lo < 0.4 < hi)
    True
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    c = np.asarray(counts)
    if c.ndim != 1 or np.any(c < 0) or np.any(c != np.round(c)):
        raise ValueError("counts must be a 1-d array of non-negative integers")
    n = int(c.sum())
    if n == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    pvals = c.astype(float) / n
    reps = np.empty(n_boot, dtype=float)
    chunk = max(1, _BOOT_CHUNK // c.size)
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        drawn = rng.multinomial(n, pvals, size=b)
        reps[start : start + b] = np.asarray(statistic(drawn), dtype=float).reshape(b)
    return _percentile_interval(reps, confidence)


def two_proportion_test(k1: Any, n1: Any, k2: Any, n2: Any) -> np.ndarray:
    """Two-sided z test that two binomial proportions are equal (pooled variance).

    ``z = (k1/n1 - k2/n2) / sqrt(p (1 - p) (1/n1 + 1/n2))`` with the pooled
    ``p = (k1 + k2) / (n1 + n2)``; the p-value is ``2 * (1 - Phi(|z|))``.
    Vectorised over arrays of counts.

    Parameters
    ----------
    k1, n1 : array-like of int
        Successes and trials of the first sample (e.g. false passes before).
    k2, n2 : array-like of int
        Successes and trials of the second sample (e.g. false passes after).

    Returns
    -------
    numpy.ndarray
        Two-sided p-values (0-d for scalar input). NaN where ``n1`` or ``n2``
        is 0; 1.0 where the pooled proportion is 0 or 1 (both samples all
        failures or all successes: no evidence of a difference). Same as
        ``statsmodels.stats.proportion.proportions_ztest`` otherwise.

    Notes
    -----
    A large-sample test: with expected counts below about 5 in a cell, prefer
    an exact test (Fisher's).

    References
    ----------
    .. [1] Agresti, A. (2013). Categorical Data Analysis, 3rd ed., §3.1.
       Wiley.

    Examples
    --------
    >>> round(float(two_proportion_test(10, 100, 25, 100)), 4)
    0.0052
    """
    k1, n1 = _counts(k1, n1)
    k2, n2 = _counts(k2, n2)
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = (k1 + k2) / (n1 + n2)
        se = np.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
        z = (k1 / n1 - k2 / n2) / se
        p = 2 * stats.norm.sf(np.abs(z))
    p = np.where(se == 0, 1.0, p)
    return np.where((n1 == 0) | (n2 == 0), np.nan, p)


def rogan_gladen(apparent: Any, tpr: Any, tnr: Any, *, clip: bool = True) -> np.ndarray:
    """True prevalence from an imperfect classifier's apparent positive rate.

    ``pi = (q + tnr - 1) / (tpr + tnr - 1)`` where ``q`` is the share the
    classifier calls positive, ``tpr = P(call + | truly +)`` and
    ``tnr = P(call - | truly -)``. Vectorised.

    Parameters
    ----------
    apparent : array-like of float
        Apparent positive rate ``q`` in ``[0, 1]``.
    tpr, tnr : array-like of float
        The classifier's sensitivity and specificity.
    clip : bool, default=True
        Clip the estimate to ``[0, 1]`` (the raw estimate leaves it when
        ``q`` falls outside ``[1 - tnr, tpr]``, by sampling noise).

    Returns
    -------
    numpy.ndarray
        The estimate; NaN where ``tpr + tnr <= 1`` (the classifier is no
        better than chance, so nothing can be corrected) or an input is NaN.

    References
    ----------
    .. [1] Rogan, W. J. and Gladen, B. (1978). Estimating prevalence from the
       results of a screening test. American Journal of Epidemiology 107(1),
       71-76.
    .. [2] Lang, Z. and Reiczigel, J. (2014). Confidence limits for prevalence
       of disease adjusted for estimated sensitivity and specificity.
       Preventive Veterinary Medicine 113(1), 13-22.

    Examples
    --------
    >>> round(float(rogan_gladen(0.62, 0.9, 0.8)), 4)
    0.6
    """
    q = np.asarray(apparent, dtype=float)
    se = np.asarray(tpr, dtype=float)
    sp = np.asarray(tnr, dtype=float)
    j = se + sp - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        est = (q + sp - 1) / j
    est = np.where(j > 0, est, np.nan)
    return np.clip(est, 0.0, 1.0) if clip else est
