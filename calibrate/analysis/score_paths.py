"""Counts along a one-score path: decisions and errors at every threshold of a fixed grid.

Each label class is sorted once (:func:`sorted_parts`) and every grid point is
a binary search in the sorted parts (:func:`path_from_parts`,
:func:`score_path`), giving the :class:`ScorePath` the exact tests walk. The
evaluator's own yes-probabilities predict a false-pass rate at each threshold
without a label (:func:`predicted_false_pass`), which may place checkpoints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

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
    label, so it may place checkpoints
    (:func:`~calibrate.analysis.fallback_walk.checkpoint_weights`). For an
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
