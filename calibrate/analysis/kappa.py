"""Agreement between two raters beyond chance: Cohen's kappa with its interval."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from scipy import stats

from calibrate.analysis.stats import wilson_interval


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
    narrow; prefer :func:`calibrate.analysis.bootstrap.bootstrap_ci` there.
    At perfect agreement the variance is 0; the interval is then the Wilson
    interval of ``p_o`` mapped through ``(p_o - p_e) / (1 - p_e)`` with the
    marginals fixed, so that it never has zero width.

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
