"""Reference procedures the threshold search is compared and timed against.

:func:`jung_fixed_sequence_baseline` is the fixed-sequence binomial procedure
of Jung, Brahman & Choi (2024) for one yes/no question, written the
straightforward way from the paper's description: a grid of thresholds
ordered from strictest to loosest, the exact binomial upper bound of each
found by root finding, and a walk that stops at the first threshold whose
bound exceeds the limit. It is deliberately not optimised (beyond not
recomputing a bound it has already found), so a benchmark can time it against
:func:`calibrate.analysis.threshold_search.find_thresholds`, which does the same job
with sorting and cumulative counts.

References
----------
.. [1] Jung, J., Brahman, F. and Choi, Y. (2024). Trust or Escalate: LLM
   judges with provable guarantees for human agreement. arXiv:2407.18370.
.. [2] Bauer, P. (1991). Multiple testing in clinical trials. Statistics in
   Medicine 10(6), 871-890 (fixed-sequence testing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibrate.analysis.certify import min_count, upper_bound_root


@dataclass(frozen=True)
class BaselineResult:
    """Thresholds chosen by the baseline and what they do on the data they were chosen on.

    Attributes
    ----------
    pass_threshold : float or None
        ``p >= pass_threshold`` passes; ``None`` when no threshold is certified.
    fail_threshold : float or None
        ``p < fail_threshold`` fails (capped at the pass threshold); ``None``
        when not searched or not certified (nothing fails).
    n_bounds : int
        Binomial bounds computed by root finding.
    coverage : float
        Share of the data decided (passed or failed) at the chosen thresholds.
    """

    pass_threshold: float | None
    fail_threshold: float | None
    n_bounds: int
    coverage: float


def _walk(
    scores: np.ndarray, errors: np.ndarray, grid: np.ndarray, *, passes: bool, limit: float,
    delta: float, skip_below: int, cache: dict[tuple[int, int], float],
) -> float | None:  # fmt: skip
    chosen = None
    for t in grid:
        decided = scores >= t if passes else scores < t
        n = int(decided.sum())
        if n < skip_below:
            continue  # no outcome here could be certified; the walk starts further on
        k = int(errors[decided].sum())
        if (k, n) not in cache:
            cache[(k, n)] = upper_bound_root(k, n, delta=delta)
        if cache[(k, n)] <= limit:
            chosen = float(t)
        else:
            break
    return chosen


def jung_fixed_sequence_baseline(
    p: Any,
    acceptable: Any,
    *,
    alpha: float = 0.05,
    delta: float = 0.1,
    beta: float | None = None,
    n_grid: int = 5000,
    skip_below: int | None = None,
) -> BaselineResult:
    """Fixed-sequence testing on a grid of thresholds for one yes/no question (Jung et al. 2024).

    The pass threshold ``t`` runs over ``n_grid`` evenly spaced values from 1
    down to 0. For each, the submissions with ``p >= t`` are counted with
    their not-acceptable ones, and the one-sided Clopper-Pearson bound at
    ``1 - delta`` is found by root finding on the binomial tail; the walk
    keeps going while the bound is at most ``alpha`` and stops at the first
    that is not. When ``beta`` is given, the fail threshold is walked the same
    way from 0 upwards (``p < t`` fails, acceptable ones are the errors), and
    ``delta`` is split evenly between the two walks (Bonferroni), as
    :func:`~calibrate.analysis.threshold_search.find_thresholds` does.

    Parameters
    ----------
    p : array-like of float
        Yes-probabilities.
    acceptable : array-like of bool
        The people's labels.
    alpha, delta : float
    beta : float, optional
        Also search a fail threshold with false-fail rate at most ``beta``.
    n_grid : int, default=5000
    skip_below : int, optional
        Thresholds deciding fewer submissions than this are stepped over. The
        default is the fewest at which any bound can reach the limit
        (:func:`~calibrate.analysis.certify.min_count`); on continuous
        scores, a walk that stopped at the very strict thresholds that pass
        one or two submissions would certify nothing. ``1`` steps over only
        the thresholds that decide nothing, the paper's literal reading.

    Returns
    -------
    BaselineResult

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> ok = rng.random(400) < 0.7
    >>> p = np.where(ok, rng.beta(8, 1.2, 400), rng.beta(2, 3, 400))
    >>> res = jung_fixed_sequence_baseline(p, ok, alpha=0.05, delta=0.1, n_grid=500)
    >>> res.pass_threshold is not None
    True
    """
    p = np.asarray(p, dtype=float)
    ok = np.asarray(acceptable, dtype=bool)
    if p.shape != ok.shape:
        raise ValueError("p and acceptable must have the same length")
    d_pass = delta / 2 if beta is not None else delta
    cache: dict[tuple[int, int], float] = {}
    down = np.linspace(1.0, 0.0, n_grid)
    start = min_count(alpha, d_pass) if skip_below is None else max(1, skip_below)
    a = _walk(p, ~ok, down, passes=True, limit=alpha, delta=d_pass, skip_below=start, cache=cache)
    n_bounds = len(cache)
    b = None
    if beta is not None and beta < 1.0:
        fail_cache: dict[tuple[int, int], float] = {}
        start_f = min_count(beta, delta / 2) if skip_below is None else max(1, skip_below)
        b = _walk(p, ok, down[::-1], passes=False, limit=beta, delta=delta / 2,
                  skip_below=start_f, cache=fail_cache)  # fmt: skip
        n_bounds += len(fail_cache)
        if b is not None and a is not None:
            b = min(b, a)
    passed = p >= a if a is not None else np.zeros(p.shape, bool)
    failed = p < b if b is not None else np.zeros(p.shape, bool)
    coverage = float((passed | failed).mean()) if p.size else math.nan
    return BaselineResult(a, b, n_bounds, coverage)
