"""Rates from counts: intervals, bounds and binomial tests, vectorised over arrays of counts.

Every rate calibrate shows a person goes through one of these functions, so
the method behind each interval is stated in one place: the Wilson and exact
intervals, the exact one-sided bound and tail p-value, whether a rate is
measurably above a limit, the two-proportion test, and a rate corrected for
an imperfect classifier (Rogan-Gladen), and a share from labels drawn at
unequal inclusion probabilities (Hajek). Agreement between two raters is
:mod:`calibrate.analysis.kappa`'s; resampled intervals are
:mod:`calibrate.analysis.bootstrap`'s.

References
----------
.. [1] Wilson, E. B. (1927). Probable inference, the law of succession, and
   statistical inference. JASA 22(158), 209-212.
.. [2] Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or
   fiducial limits illustrated in the case of the binomial. Biometrika 26(4).
"""

from __future__ import annotations

from typing import Any

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


def hajek(k: Any, m: Any, pi: Any) -> np.ndarray:
    """The Hajek estimate of a share from a sample drawn with inclusion probabilities ``pi``.

    ``sum(k / pi) / sum(m / pi)`` along the last axis [1]_: ``k`` of the ``m``
    sampled units drawn with probability ``pi`` have the property, one entry
    a unit (``k`` in {0, 1}, ``m = 1``) or a stratum of one probability. With
    one probability it is ``k / m``. Vectorised over the leading axes.

    Returns
    -------
    numpy.ndarray
        The share; NaN where nothing was sampled.

    References
    ----------
    .. [1] Hajek, J. (1971). Comment on a paper by D. Basu. In Godambe, V. P.
       and Sprott, D. A. (eds.), Foundations of Statistical Inference, p. 236.
       Holt, Rinehart and Winston.

    Examples
    --------
    >>> round(float(hajek([30, 5], [40, 10], [0.5, 0.1])), 4)  # (60 + 50) / (80 + 100)
    0.6111
    """
    k, m, pi = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (k, m, pi)))
    num = (k / pi).sum(axis=-1)
    den = (m / pi).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


def hajek_interval(
    k: Any, m: Any, pi: Any, *, confidence: float = 0.95
) -> tuple[float, float, float]:
    """Wilson interval of the :func:`hajek` share at the sample's effective size.

    The strata (or units) of one estimate, as :func:`hajek` takes them. The
    linearised variance of the ratio with weights ``w = 1 / pi`` [1]_::

        v = sum w**2 * (k * (1 - p)**2 + (m - k) * p**2) / sum(m * w)**2

    (with replacement: no finite-population correction, so it errs wide)
    gives the effective size ``n_eff = p (1 - p) / v`` [2]_, and the interval
    is :func:`wilson_interval` of ``p * n_eff`` of ``n_eff``. ``n_eff`` is
    capped at Kish's size ``sum(m w)**2 / sum(m w**2)`` (which stands in where
    ``p`` is 0 or 1, ``v = 0``) and at ``sum(m)``: no design is read as worth
    more labels than its weights or its count allow. Without the Kish cap a
    low-probability stratum of few labels that happen to agree with the
    majority adds little to ``v`` and the linearised size runs far above what
    its weight allows (the small-count failure [2]_; 85-87% coverage at a
    nominal 95% in an outside review's simulation of two uniform draws at 0.3
    and 0.01, 96% with the cap). With one probability ``n_eff = sum(m)`` and
    the interval is ``wilson_interval(k, m)``.

    Returns
    -------
    (low, high, n_eff) : tuple of float
        NaN where nothing was sampled.

    References
    ----------
    .. [1] Sarndal, C.-E., Swensson, B. and Wretman, J. (1992). Model Assisted
       Survey Sampling, section 5.7. Springer.
    .. [2] Korn, E. L. and Graubard, B. I. (1998). Confidence intervals for
       proportions with small expected number of positive counts estimated
       from survey data. Survey Methodology 24(2), 193-201.

    Examples
    --------
    >>> [round(x, 4) for x in hajek_interval([8], [10], [0.3])]
    [0.4902, 0.9433, 10.0]
    """
    k, m, pi = np.broadcast_arrays(*(np.atleast_1d(np.asarray(x, dtype=float)) for x in (k, m, pi)))
    n = float(m.sum())
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    p = float(hajek(k, m, pi))
    w = 1.0 / pi
    total = float((m * w).sum())
    v = float((w**2 * (k * (1 - p) ** 2 + (m - k) * p**2)).sum()) / total**2
    kish = total**2 / float((m * w**2).sum())
    n_eff = min(p * (1 - p) / v, kish) if v > 0 else kish
    # Floating noise must not make one probability's size differ from its count.
    n_eff = min(n, n_eff * (1 + 1e-12))
    low, high = wilson_interval(p * n_eff, n_eff, confidence=confidence)
    return float(low), float(high), n_eff
