"""Nothing certified: too few labels, or a limit no number of labels would reach?

When the threshold search (:func:`calibrate.analysis.threshold_search.find_thresholds`)
certifies nothing, its status is ``"unattainable"`` when every candidate
measured on enough decisions is measurably outside the limits
(:func:`calibrate.analysis.stats.measurably_above`): more labels would not
help. Otherwise it is ``"insufficient_data"``. The judgment reads only what
grows with ``alpha``, on a set of candidates that does not move with it, so a
looser limit never reads worse.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from calibrate.analysis.learned_path import joint_path
from calibrate.analysis.stats import MIN_N, measurably_above
from calibrate.analysis.step_data import StepData

__all__ = ["REFERENCE_ALPHAS", "judged_unattainable", "measurably_worse", "reference_candidates"]

#: Limits at which learned fronts are laid out to judge ``unattainable`` when nothing is certified:
#: fixed, so the candidates judged do not move with alpha.
REFERENCE_ALPHAS = (0.01, 0.03, 0.05, 0.1, 0.2, 0.3)


def judged_unattainable(
    candidates: pd.DataFrame, data: StepData, *, alpha: float, beta: float, delta: float,
    single: bool, learned_delta: float | None, n_fixed: int, relearn_lists: bool,
    search_fraction: float, seed: int,
) -> bool:  # fmt: skip
    """Whether a search that certified nothing reads ``unattainable``.

    Parameters
    ----------
    candidates : pandas.DataFrame
        Every candidate the search tested (its ``candidates``).
    data : StepData
    alpha, beta, delta : float
        The search's limits and level.
    single : bool
        One yes/no question: only its pass path is judged.
    learned_delta : float or None
        The learned path's share of ``delta`` when one ran: its candidates
        are replaced by the fronts learned at :data:`REFERENCE_ALPHAS`.
    n_fixed : int
        Fixed paths run beside the learned one (numbered first in ``path``):
        their candidates are judged as they are.
    relearn_lists, search_fraction, seed
        The learned path's settings.
    """
    sides = ("pass",) if single else ("pass", "fail")
    rows = (
        candidates[candidates["side"] == "pass"] if single and not candidates.empty else candidates
    )
    if learned_delta is not None:
        # A learned path's candidates depend on alpha; read instead the fronts learned at a
        # fixed ladder of limits (and the fixed paths' candidates), so that the set judged
        # is the same at every alpha and a looser one can only make fewer of them worse.
        fixed_rows = rows[rows["path"] < n_fixed] if n_fixed else rows.iloc[:0]
        reference = reference_candidates(
            data, delta=learned_delta, beta=beta, relearn_lists=relearn_lists,
            search_fraction=search_fraction, seed=seed,
        )  # fmt: skip
        rows = pd.concat([fixed_rows, reference], ignore_index=True)
    return measurably_worse(rows, alpha=alpha, beta=beta, delta=delta, sides=sides)


def reference_candidates(
    data: StepData, *, delta: float, beta: float, relearn_lists: bool, search_fraction: float,
    seed: int,
) -> pd.DataFrame:  # fmt: skip
    """Counts on the certification part of the fronts learned at :data:`REFERENCE_ALPHAS`."""
    key = ("reference_fronts", delta, beta, relearn_lists, search_fraction, seed)
    if key not in data.cache:
        frames = []
        for a in REFERENCE_ALPHAS:
            path, _, _ = joint_path(
                data, alpha=a, delta=delta, beta=beta, relearn_lists=relearn_lists,
                search_fraction=search_fraction, seed=seed,
            )  # fmt: skip
            frames.append(
                pd.DataFrame(
                    {
                        "side": "joint",
                        "n_pass": path.n_pass,
                        "false_pass": path.false_pass,
                        "n_fail": np.where(path.never_fails, 0, path.n_fail),
                        "false_fail": np.where(path.never_fails, 0, path.false_fail),
                    }
                )
            )
        data.cache[key] = pd.concat(frames, ignore_index=True)
    return data.cache[key]


def measurably_worse(
    frame: pd.DataFrame, *, alpha: float, beta: float, delta: float, sides: Sequence[str]
) -> bool:
    """Whether every candidate measured on ``MIN_N`` decisions is measurably outside the limits.

    Measurably: :func:`~calibrate.analysis.stats.measurably_above`, the
    one-sided Clopper-Pearson *lower* bound at ``1 - delta`` of a tested rate
    above its limit. Then more labels would not help, and the status is
    ``unattainable``; a rate merely observed above the limit on a few dozen
    decisions is not evidence enough. A looser limit can only make fewer
    candidates measurably worse.
    """
    if frame.empty:
        return False
    outside = np.zeros(len(frame), bool)
    measured = np.ones(len(frame), bool)
    for side in sides:
        if side == "fail" and beta >= 1.0:
            continue
        n_col, k_col, limit = (
            ("n_pass", "false_pass", alpha) if side == "pass" else ("n_fail", "false_fail", beta)
        )
        n = frame[n_col].to_numpy(float)
        k = frame[k_col].to_numpy(float)
        measured &= (n >= MIN_N) | (n == 0)
        outside |= measurably_above(k, n, limit, delta=delta)
    measured &= (frame["n_pass"].to_numpy() + frame["n_fail"].to_numpy()) >= MIN_N
    return bool(measured.any() and outside[measured].all())
