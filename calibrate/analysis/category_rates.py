"""Acceptance rate per answer of a choice or level of a rubric, and what they imply.

The pass list or pass level a process file did not give is learnt from the
labels; rubric levels accepted significantly less often than a lower level are
flagged (one-sided Fisher exact tests, Holm-adjusted).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sp_stats

from calibrate.analysis.stats import wilson_interval

#: Level of the test that flags non-monotone rubric levels.
MONOTONE_ALPHA = 0.05

# --------------------------------------------------------------------------- choice and rubric


def category_rates(
    category: Any, y_true: Any, *, categories: Sequence[Any] | None = None, confidence: float = 0.95
) -> pd.DataFrame:
    """Acceptance rate per answer name or level, with Wilson intervals.

    Parameters
    ----------
    category : array-like of shape (n,)
        The answer name (choice) or level (rubric) of each labeled answer.
    y_true : array-like of shape (n,)
        1/True = acceptable.
    categories : sequence, optional
        Every category to list, seen or not (e.g. the process file's names or
        ``range(n_levels)``); unseen ones get ``n == 0`` and NaN rates.
    confidence : float, default=0.95

    Returns
    -------
    DataFrame
        Columns ``answer``, ``n``, ``accepted``, ``rate``, ``ci_low``, ``ci_high``,
        sorted by ``categories`` order, then by the seen values.

    Examples
    --------
    >>> category_rates(["a", "a", "b"], [1, 0, 1])[["answer", "n", "rate"]].values.tolist()
    [['a', 2, 0.5], ['b', 1, 1.0]]
    """
    cat = pd.Series(np.asarray(category, dtype=object).ravel())
    y = pd.Series(np.asarray(y_true, dtype=float).ravel())
    grouped = y.groupby(cat, sort=True).agg(["size", "sum"])
    order = list(categories) if categories is not None else []
    order += [c for c in grouped.index if c not in set(order)]
    grouped = grouped.reindex(order, fill_value=0)
    n = grouped["size"].to_numpy(dtype=float)
    k = grouped["sum"].to_numpy(dtype=float)
    lo, hi = wilson_interval(k, n, confidence=confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(n > 0, k / n, np.nan)
    return pd.DataFrame(
        {
            "answer": list(grouped.index),
            "n": n.astype(int),
            "accepted": k.astype(int),
            "rate": rate,
            "ci_low": lo,
            "ci_high": hi,
        }
    )


def learn_pass_names(rates: pd.DataFrame) -> tuple[str, ...]:
    """Answer names accepted more than half the time: the pass list that best matches the labels."""
    return tuple(str(a) for a in rates.loc[rates["rate"] > 0.5, "answer"])


def learn_pass_level(level: Any, y_true: Any) -> int:
    """The rubric ``pass`` level whose call (``level >= pass``) agrees with the labels most often.

    Ties go to the higher (stricter) level. Vectorised over candidate levels
    with cumulative counts.

    Examples
    --------
    >>> learn_pass_level([0, 1, 1, 2, 2], [0, 0, 1, 1, 1])
    2
    """
    lv = np.asarray(level, dtype=int).ravel()
    y = np.asarray(y_true, dtype=float).ravel()
    if lv.size == 0:
        return 0
    top = int(lv.max()) + 1
    acc = np.bincount(lv, weights=y, minlength=top)
    rej = np.bincount(lv, minlength=top) - acc
    # Pass level L: correct = acceptable at levels >= L + not acceptable at levels < L.
    acc_at_or_above = np.concatenate([np.cumsum(acc[::-1])[::-1], [0.0]])
    rej_below = np.concatenate([[0.0], np.cumsum(rej)])
    correct = acc_at_or_above + rej_below
    best = np.flatnonzero(correct == correct.max())
    return int(best.max())


def non_monotone_levels(rates: pd.DataFrame, *, alpha: float = MONOTONE_ALPHA) -> pd.DataFrame:
    """Pairs of rubric levels where the higher level is accepted significantly less often.

    For every pair of seen levels ``i < j`` a one-sided Fisher exact test of
    "rate(j) < rate(i)"; p-values are Holm-adjusted over all pairs tested, and a
    pair is flagged when the adjusted p-value is below ``alpha``.

    Parameters
    ----------
    rates : DataFrame
        Output of :func:`category_rates` over levels (``answer`` holds the level).
    alpha : float, default=0.05

    Returns
    -------
    DataFrame
        Every tested pair with columns ``lower``, ``higher``, ``rate_lower``,
        ``rate_higher``, ``p_value``, ``p_adjusted``, ``flagged``.

    References
    ----------
    .. [1] Fisher, R. A. (1922). On the interpretation of chi-squared from
       contingency tables. JRSS 85(1), 87-94.
    .. [2] Holm, S. (1979). A simple sequentially rejective multiple test
       procedure. Scandinavian Journal of Statistics 6(2), 65-70.
    """
    seen = rates[rates["n"] > 0].sort_values("answer")
    levels = seen["answer"].to_numpy()
    acc = seen["accepted"].to_numpy()
    rej = (seen["n"] - seen["accepted"]).to_numpy()
    rate = seen["rate"].to_numpy()
    rows = []
    for i in range(len(levels)):  # at most 45 pairs: a loop per pair, not per record
        for j in range(i + 1, len(levels)):
            table = [[acc[i], rej[i]], [acc[j], rej[j]]]
            pv = sp_stats.fisher_exact(table, alternative="greater").pvalue
            rows.append((levels[i], levels[j], rate[i], rate[j], float(pv)))
    out = pd.DataFrame(rows, columns=["lower", "higher", "rate_lower", "rate_higher", "p_value"])
    out["p_adjusted"] = _holm(out["p_value"].to_numpy())
    out["flagged"] = out["p_adjusted"] < alpha
    return out


def _holm(pv: np.ndarray) -> np.ndarray:
    m = pv.size
    if m == 0:
        return pv.astype(float)
    order = np.argsort(pv, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate(pv[order] * (m - np.arange(m))))
    out = np.empty(m)
    out[order] = adjusted
    return out
