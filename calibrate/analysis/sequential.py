"""Anytime-valid tests and confidence sequences for a rate, by betting.

The monitor after the switch looks at the audits again and again (every week,
or whenever someone runs ``calibrate monitor``). A fixed-sample test loses its
level under repeated looks; these keep it, by Ville's inequality.

**The e-process.** Observations ``z_1, z_2, ...`` are nonnegative, with
``E[z_t | past] <= m`` under the null ``H0: rate <= m``. The wealth of a
gambler who bets ``lambda_t`` on "the rate exceeds m",

    K_t = prod_{s <= t} (1 + lambda_s (z_s - m)),   0 <= lambda_s < 1/m predictable,

is a nonnegative supermartingale under H0 (each factor is >= 1 - lambda_s m > 0
because z_s >= 0, and has conditional mean <= 1). Ville's inequality:
``P(sup_t K_t >= 1/delta) <= delta``. So an alarm raised the first time K
reaches ``1/delta`` is false with probability at most ``delta``, however
often, and whenever, anyone looks. The nonnegativity needs only ``z >= 0``:
inverse-probability weights, however large, keep every factor positive.

**The bet.** aGRAPA (Waudby-Smith & Ramdas 2023, §B): ``lambda_t =
(mu_t - m) / (s2_t + (mu_t - m)^2)`` clipped to ``[0, c/m]`` with ``c = 1/2``
(so no single observation can take more than half the wealth), where
``mu_t`` and ``s2_t`` are the mean and variance of the past observations (all
of them, or the last ``memory``), shrunk towards ``m`` by ``n0 = 1/m``
pseudo-observations so the first bets are small. Any predictable rule keeps
the guarantee; this one only decides the power.

**The confidence sequence.** For every ``m`` of a grid, the same bet on
either side: ``K+_t(m)`` (the rate is above ``m``, ``lambda`` in
``[0, c/m]``) and ``K-_t(m) = prod (1 - lambda_s (z_s - m))`` (below ``m``,
``lambda`` in ``[0, c/(b_s - m)]`` where ``b_s`` is the largest value
``z_s`` can take, known before it is seen). At time ``t``, ``m`` is excluded
while either is at or above ``2/delta``; the ``m`` not excluded form a
``1 - delta`` confidence sequence: by Ville's inequality on both processes at
the true rate it covers the rate at every time at once (Waudby-Smith &
Ramdas 2023, Thm 3, the hedged capital process). No running intersection:
when the rate changes, a rate excluded earlier can come back, so the
sequence follows the change instead of collapsing. Its lower end above ``m``
implies the one-sided alarm, not the reverse (the alarm spends all of
``delta`` on one side).

Every function is vectorised across streams (rows) and time (columns).

References
----------
Waudby-Smith, I. and Ramdas, A. (2023). Estimating means of bounded random
variables by betting. *JRSS B* 86(1), 1–27. arXiv:2010.09686.
Ville, J. (1939). *Étude critique de la notion de collectif.* Gauthier-Villars.
Shin, J., Ramdas, A. and Rinaldo, A. (2023). E-detectors: a nonparametric
framework for sequential change detection. arXiv:2203.03532.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

#: No single bet risks more than this share of the wealth.
BET_CAP = 0.5


def _running(
    z: np.ndarray, m: float | np.ndarray, memory: float | np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Predictable shrunk mean and variance: index ``t`` uses ``z[..., :t]`` only.

    ``m`` is a number or a column (one null per row of ``z``). ``memory``
    (items, a number or one per time) limits the estimate to the last
    ``memory`` observations, so the bet follows a change late in a long
    stream; ``None`` uses all of the past.
    """
    m = np.asarray(m, dtype=float)
    n0 = np.clip(1.0 / np.maximum(m, 1e-6), 2.0, 1000.0)
    size = z.shape[-1]
    t = np.arange(size)
    start = np.zeros(size, dtype=np.int64)
    if memory is not None:
        window = np.broadcast_to(np.asarray(memory, dtype=float), (size,))
        start = np.maximum(0, t - np.ceil(window).astype(np.int64))
    pad = [(0, 0)] * (z.ndim - 1) + [(1, 0)]
    total = np.pad(np.cumsum(z, axis=-1), pad)  # total[..., i] = sum of z[..., :i]
    count = (t - start).astype(float)
    mu = (n0 * m + total[..., t] - total[..., start]) / (n0 + count)
    # Squared deviations from the mean known before each observation, shrunk the same way.
    dev = np.pad(np.cumsum((z - mu) ** 2, axis=-1), pad)
    s2 = (n0 * np.maximum(m * (1 - m), 1e-6) + dev[..., t] - dev[..., start]) / (n0 + count)
    return mu, s2


def bets(
    z: np.ndarray, m: float, *, cap: float = BET_CAP, memory: float | np.ndarray | None = None
) -> np.ndarray:
    """The aGRAPA bets on "the rate exceeds m", predictable and in ``[0, cap/m]``.

    Parameters
    ----------
    z : ndarray, shape (..., T)
        Nonnegative observations in time order.
    m : float
        The null rate, in (0, 1).
    cap : float, default=0.5
    memory : float or ndarray, optional
        How many past observations the estimates behind the bet look back
        over (:func:`memory_for`); all of them when ``None``.

    Returns
    -------
    ndarray, shape (..., T)
    """
    mu, s2 = _running(np.asarray(z, dtype=float), m, memory)
    gap = mu - m
    return np.clip(gap / (s2 + gap**2), 0.0, cap / m)


def log_wealth(
    z: np.ndarray, m: float, *, cap: float = BET_CAP, memory: float | np.ndarray | None = None
) -> np.ndarray:
    """``log K_t`` of the e-process against ``rate <= m`` (module docstring).

    Parameters
    ----------
    z : ndarray, shape (..., T)
        Nonnegative observations, ``E[z_t | past] <= m`` under the null.
    m : float
    cap : float, default=0.5
    memory : float or ndarray, optional
        Passed to :func:`bets`.

    Returns
    -------
    ndarray, shape (..., T)
        The log wealth after each observation.

    Examples
    --------
    >>> z = np.r_[np.zeros(30), np.ones(10)]
    >>> bool(np.exp(log_wealth(z, 0.05)[-1]) > 10)
    True
    """
    z = np.asarray(z, dtype=float)
    if np.any(z < 0):
        raise ValueError("z has negative values; the e-process needs z >= 0")
    lam = bets(z, m, cap=cap, memory=memory)
    return np.cumsum(np.log1p(lam * (z - m)), axis=-1)


#: The bet's estimates look back over the checks that hold this many errors at the null rate.
MEMORY_ERRORS = 3.0


def memory_for(m: float, rate: float | np.ndarray) -> np.ndarray:
    """How many past checks the monitor's bet looks back over: ``MEMORY_ERRORS / (m * rate)``.

    ``rate`` is the audit draw's design rate (known before any review), so the
    window holds about :data:`MEMORY_ERRORS` audited errors at the null rate
    ``m``: short enough that a change after months of stable audits is bet on
    within weeks, long enough that noise rarely moves the bet under the null.
    It only decides power; validity does not depend on it.
    """
    return np.ceil(MEMORY_ERRORS / (m * np.maximum(np.asarray(rate, dtype=float), 1e-9)))


def first_crossing(log_k: np.ndarray, delta: float) -> np.ndarray:
    """Index of the first time ``K >= 1/delta`` per stream, -1 if never."""
    hit = log_k >= np.log(1.0 / delta)
    first = np.argmax(hit, axis=-1)
    return np.where(hit.any(axis=-1), first, -1)


#: Grid of rates the confidence sequence is computed on: fine near 0, where rates of interest lie.
RATE_GRID = np.unique(np.r_[np.geomspace(1e-4, 0.05, 60), np.linspace(0.05, 0.999, 191)])


@dataclass(frozen=True)
class ConfidenceSequence:
    """A ``1 - delta`` confidence sequence for a rate, at every time of a stream.

    Attributes
    ----------
    lower, upper : ndarray
        The sequence's ends after each observation asked for.
    delta : float
    """

    lower: np.ndarray
    upper: np.ndarray
    delta: float


def confidence_sequence(
    z: np.ndarray,
    bound: np.ndarray | float,
    *,
    delta: float,
    grid: np.ndarray = RATE_GRID,
    cap: float = BET_CAP,
    times: np.ndarray | None = None,
) -> ConfidenceSequence:
    """The hedged-capital confidence sequence of one stream (module docstring).

    Parameters
    ----------
    z : ndarray, shape (T,)
        Nonnegative observations whose conditional mean is the rate.
    bound : ndarray of shape (T,) or float
        The largest value each ``z_t`` can take (``1/pi_t`` for a check with
        inclusion probability ``pi_t``), known before ``z_t`` is seen: the
        bet may depend on ``pi_t`` but not on whether the check was drawn,
        so the bound of a check not drawn is ``1/pi_t`` too.
    delta : float
        The sequence misses the rate at some time with probability at most
        ``delta``.
    grid : ndarray
        Candidate rates in (0, 1).
    cap : float, default=0.5
    times : ndarray of int, optional
        The times (indices) to give the ends at; every time when ``None``.

    Returns
    -------
    ConfidenceSequence
        The ends at each of ``times``; where no grid rate is kept, 0 and 1.
    """
    z = np.asarray(z, dtype=float)
    n = z.size
    b = np.broadcast_to(np.asarray(bound, dtype=float), (n,))
    level = np.log(2.0 / delta)
    at = np.arange(n) if times is None else np.asarray(times, dtype=np.int64)
    # kept[j, i]: grid rate j is not excluded at time at[i] (neither wealth at 2/delta then).
    kept = np.ones((grid.size, at.size), dtype=bool)
    # Grid rates in chunks (rows) against the whole stream (columns), a few million cells each.
    rows = max(1, int(4e6 // max(n, 1)))
    for start in range(0, grid.size if n else 0, rows):
        m = grid[start : start + rows, None]
        mu, s2 = _running(np.broadcast_to(z, (m.shape[0], n)), m)
        gap = mu - m
        up = np.clip(gap / (s2 + gap**2), 0.0, cap / m)
        down = np.clip(-gap / (s2 + gap**2), 0.0, cap / np.maximum(b - m, 1e-12))
        down = np.where(b > m, down, 0.0)
        hi = np.cumsum(np.log1p(up * (z - m)), axis=1)[:, at] >= level
        lo = np.cumsum(np.log1p(-down * (z - m)), axis=1)[:, at] >= level
        kept[start : start + rows] = ~hi & ~lo
    kept = kept.T
    any_kept = kept.any(axis=1)
    lower = np.where(any_kept, np.where(kept, grid[None, :], np.inf).min(axis=1), 0.0)
    upper = np.where(any_kept, np.where(kept, grid[None, :], -np.inf).max(axis=1), 1.0)
    # The grid's neighbours bound the true ends: widen to the next grid point outwards.
    lo_idx = np.searchsorted(grid, lower) - 1
    hi_idx = np.searchsorted(grid, upper, side="right")
    lower = np.where(any_kept & (lo_idx >= 0), grid[np.clip(lo_idx, 0, grid.size - 1)], 0.0)
    upper = np.where(any_kept & (hi_idx < grid.size), grid[np.clip(hi_idx, 0, grid.size - 1)], 1.0)
    return ConfidenceSequence(lower=lower, upper=upper, delta=delta)


def naive_binomial_alarms(
    bad: np.ndarray, audited: np.ndarray, m: float, *, delta: float
) -> np.ndarray:
    """Whether a fixed-sample exact binomial test, repeated at each look, ever alarms.

    The test the report used before: at each look, alarm when
    ``P(Binomial(n, m) >= k) <= delta`` for the ``k`` bad of ``n`` audited so
    far. Its level holds for one look only.

    Parameters
    ----------
    bad, audited : ndarray, shape (streams, looks)
        Cumulative counts at each look.
    m : float
    delta : float

    Returns
    -------
    ndarray of bool, shape (streams,)
    """
    p = stats.binom.sf(np.asarray(bad) - 1, np.asarray(audited), m)
    return ((p <= delta) & (np.asarray(audited) > 0)).any(axis=-1)
