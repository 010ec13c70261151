"""Percentile bootstrap intervals: of any statistic of rows, and of one of value counts only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

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
