"""Calibration: does "the evaluator said 0.9" mean "acceptable 90% of the time"?

A threshold such as ``pass: 0.9`` only means something if a yes-probability of
0.9 is followed by an acceptable submission about 90% of the time. This module
measures that, per question and evaluator model, and fits a monotone map from
the evaluator's number to the observed acceptance probability.

The split follows scikit-learn's calibration module: pure functions compute
(:func:`bin_edges`, :func:`reliability_bins`, :func:`reliability_curve`,
:func:`fit_recalibrator`, :func:`calibrate_answers`) and return result objects
whose ``plot(ax=None)`` draws them through :mod:`calibrate.analysis.calibration_display`, so
the report and the notebooks draw the same figures. Nothing here prints.

What is calibrated, by question kind
------------------------------------
- **yes/no**: the yes-probability ``p`` against the person's label
  (acceptable = 1).
- **choice**: the evaluator's confidence against whether its implied call was
  right, where the call is "passes" (the answer is in the ``pass`` list) and it
  is right when it passes exactly when the submission was acceptable. The pass
  list comes from the process file when it was ingested, else it is learnt as
  the answer names accepted more than half the time (and the result says so).
  Acceptance rate per answer name, with intervals.
- **rubric**: as for choice, with "the level is at or above the ``pass``
  level" as the call (learnt, when no process file gave it, as the level that
  makes the call agree with the labels most often). Acceptance rate per level,
  with a flag on levels accepted significantly less often than a lower level.

Recalibration maps the evaluator's number to P(acceptable). For yes/no the
number is ``p`` over all answers; for choice and rubric it is the confidence
of the answers whose call is *pass*, so the map answers "a passing answer given
with confidence 0.9 is accepted x% of the time", which is what the threshold
search needs.

References
----------
.. [1] Naeini, M. P., Cooper, G. F. and Hauskrecht, M. (2015). Obtaining well
   calibrated probabilities using Bayesian binning. AAAI. (ECE, MCE)
.. [2] Guo, C., Pleiss, G., Sun, Y. and Weinberger, K. Q. (2017). On
   calibration of modern neural networks. ICML.
.. [3] Brier, G. W. (1950). Verification of forecasts expressed in terms of
   probability. Monthly Weather Review 78(1), 1-3.
.. [4] Platt, J. (1999). Probabilistic outputs for support vector machines and
   comparisons to regularized likelihood methods.
.. [5] Zadrozny, B. and Elkan, C. (2002). Transforming classifier scores into
   accurate multiclass probability estimates. KDD. (isotonic calibration)
.. [6] Niculescu-Mizil, A. and Caruana, R. (2005). Predicting good
   probabilities with supervised learning. ICML.
.. [7] Efron, B. and Tibshirani, R. J. (1993). An Introduction to the
   Bootstrap. Chapman & Hall. (percentile intervals)
.. [8] Holm, S. (1979). A simple sequentially rejective multiple test
   procedure. Scandinavian Journal of Statistics 6(2), 65-70.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sp_stats

from calibrate.analysis.stats import MIN_N, bootstrap_ci, bootstrap_counts_ci, wilson_interval
from calibrate.defaults import DEFAULT_BINS, DEFAULT_N_BOOT, DEFAULT_SEED
from calibrate.errors import UsageError

#: Binning strategies, as scikit-learn's ``calibration_curve`` names them.
STRATEGIES = ("uniform", "quantile")
#: Recalibration methods; ``auto`` picks by cross-validated log loss.
METHODS = ("auto", "isotonic", "sigmoid")
#: Optional extra groupings; the evaluator model is always a group.
GROUP_BY = ("model", "week")
#: Probabilities are clipped to [eps, 1 - eps] for log loss, as scikit-learn does.
LOG_LOSS_EPS = float(np.finfo(float).eps)
#: Clip before the logit so that 0 and 1 stay finite features for Platt scaling.
LOGIT_EPS = 1e-6
#: Level of the test that flags non-monotone rubric levels.
MONOTONE_ALPHA = 0.05
MONOTONE_RULE = (
    "a level is flagged when its acceptance rate is lower than a lower level's by a "
    "one-sided Fisher exact test, Holm-adjusted over all level pairs, at alpha 0.05"
)

_ANSWER_COLUMNS = ("process", "step", "question_id", "ask", "kind", "model", "label")
#: Per-row columns read when present.
_ROW_COLUMNS = ("position", "p", "name", "level", "confidence", "in_process_file")
#: The process file's settings, the same on every row of a question.
_SETTING_COLUMNS = ("pass_names", "one_of", "pass_level", "levels")


# --------------------------------------------------------------------------- validation


def _check_binning(n_bins: int, strategy: str) -> None:
    if strategy not in STRATEGIES:
        raise UsageError(f"strategy must be one of {', '.join(STRATEGIES)}; got {strategy!r}")
    if isinstance(n_bins, bool) or not isinstance(n_bins, int | np.integer) or n_bins < 1:
        raise UsageError(f"n_bins must be a positive integer; got {n_bins!r}")


def _check_xy(y_prob: Any, y_true: Any) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(y_prob, dtype=float).ravel()
    y = np.asarray(y_true).ravel()
    if p.shape != y.shape:
        raise ValueError(f"y_prob and y_true differ in length: {p.size} and {y.size}")
    if not np.all(np.isfinite(p)):
        raise ValueError("y_prob has missing or infinite values")
    if p.size and (p.min() < 0 or p.max() > 1):
        raise ValueError("y_prob has values outside [0, 1]")
    if y.dtype == bool:
        y = y.astype(float)
    else:
        y = y.astype(float)
        if not np.all(np.isin(y, (0.0, 1.0))):
            raise ValueError("y_true must hold only 0/1 or False/True")
    return p, y


# --------------------------------------------------------------------------- binning


def bin_edges(y_prob: Any, *, n_bins: int = DEFAULT_BINS, strategy: str = "uniform") -> np.ndarray:
    """Edges of the reliability bins, exactly as scikit-learn's ``calibration_curve`` draws them.

    Parameters
    ----------
    y_prob : array-like of shape (n,)
        Predicted probabilities in [0, 1] (only used by ``quantile``).
    n_bins : int, default=10
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        ``uniform``: equal widths on [0, 1]. ``quantile``: edges at the
        percentiles of ``y_prob``, so each bin holds about the same count;
        coinciding edges make zero-width bins. With no data, uniform edges.

    Returns
    -------
    ndarray of shape (n_bins + 1,)

    Notes
    -----
    A value equal to an inner edge belongs to the lower bin (bins are
    ``(lo, hi]``, the first one ``[lo, hi]``), as in scikit-learn.

    Examples
    --------
    >>> bin_edges([0.2, 0.9], n_bins=4).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    _check_binning(n_bins, strategy)
    p = np.asarray(y_prob, dtype=float).ravel()
    if strategy == "quantile" and p.size:
        # Same expression as scikit-learn so that the edges agree to the last bit.
        return np.percentile(p, np.linspace(0, 1, n_bins + 1) * 100)
    return np.linspace(0.0, 1.0, n_bins + 1)


def _bin_ids(p: np.ndarray, edges: np.ndarray) -> np.ndarray:
    return np.searchsorted(edges[1:-1], p)


def reliability_bins(
    y_prob: Any,
    y_true: Any,
    *,
    n_bins: int = DEFAULT_BINS,
    strategy: str = "uniform",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Per-bin mean prediction, observed rate, count and Wilson interval.

    Parameters
    ----------
    y_prob : array-like of shape (n,)
        Predicted probabilities in [0, 1].
    y_true : array-like of shape (n,)
        Outcomes, 1/True = acceptable.
    n_bins : int, default=10
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        See :func:`bin_edges`.
    confidence : float, default=0.95
        Level of the interval on each bin's observed rate.

    Returns
    -------
    DataFrame
        One row per bin with columns ``lo``, ``hi``, ``mean_predicted``,
        ``observed``, ``n``, ``accepted``, ``ci_low``, ``ci_high``. Empty bins
        are kept with ``n == 0`` and NaN rates (they show as gaps), except the
        zero-width bins of coinciding quantile edges, which are dropped. The
        non-empty rows equal scikit-learn's ``calibration_curve`` output.

    References
    ----------
    .. [1] Wilson, E. B. (1927). Probable inference, the law of succession,
       and statistical inference. JASA 22(158), 209-212.

    Examples
    --------
    >>> b = reliability_bins([0.1, 0.2, 0.8, 0.9], [0, 1, 1, 1], n_bins=2)
    >>> b[["mean_predicted", "observed", "n"]].round(2).values.tolist()
    [[0.15, 0.5, 2.0], [0.85, 1.0, 2.0]]
    """
    p, y = _check_xy(y_prob, y_true)
    edges = bin_edges(p, n_bins=n_bins, strategy=strategy)
    return _bins_table(p, y, edges, strategy=strategy, confidence=confidence)


def _bin_sums(p: np.ndarray, y: np.ndarray, ids: np.ndarray, n_bins: int):
    n = np.bincount(ids, minlength=n_bins).astype(float)
    s_p = np.bincount(ids, weights=p, minlength=n_bins)
    s_y = np.bincount(ids, weights=y, minlength=n_bins)
    return n, s_p, s_y


def _bins_table(
    p: np.ndarray, y: np.ndarray, edges: np.ndarray, *, strategy: str, confidence: float
) -> pd.DataFrame:
    nb = len(edges) - 1
    n, s_p, s_y = _bin_sums(p, y, _bin_ids(p, edges), nb)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_pred = np.where(n > 0, s_p / n, np.nan)
        observed = np.where(n > 0, s_y / n, np.nan)
    lo, hi = wilson_interval(np.round(s_y), n, confidence=confidence)
    table = pd.DataFrame(
        {
            "lo": edges[:-1],
            "hi": edges[1:],
            "mean_predicted": mean_pred,
            "observed": observed,
            "n": n.astype(int),
            "accepted": np.round(s_y).astype(int),
            "ci_low": lo,
            "ci_high": hi,
        }
    )
    if strategy == "quantile":
        table = table[(table["n"] > 0) | (table["hi"] > table["lo"])]
    return table.reset_index(drop=True)


# --------------------------------------------------------------------------- scores


def calibration_errors(
    y_prob: Any, y_true: Any, *, n_bins: int = DEFAULT_BINS, strategy: str = "uniform"
) -> tuple[float, float]:
    """Expected and maximum calibration error over the reliability bins.

    ECE is the count-weighted mean over non-empty bins of
    ``|observed - mean_predicted|``; MCE is the largest such gap. Both depend
    on the binning, which is why every figure states it.

    Returns
    -------
    (ece, mce) : tuple of float
        NaN with no data.

    References
    ----------
    .. [1] Naeini, M. P., Cooper, G. F. and Hauskrecht, M. (2015). Obtaining
       well calibrated probabilities using Bayesian binning. AAAI.

    Examples
    --------
    >>> ece, mce = calibration_errors([0.9, 0.9, 0.1, 0.1], [1, 0, 0, 0], n_bins=2)
    >>> round(ece, 3), round(mce, 3)
    (0.25, 0.4)
    """
    p, y = _check_xy(y_prob, y_true)
    edges = bin_edges(p, n_bins=n_bins, strategy=strategy)
    return _ece_mce(p, y, edges)


def _ece_mce(p: np.ndarray, y: np.ndarray, edges: np.ndarray) -> tuple[float, float]:
    if p.size == 0:
        return math.nan, math.nan
    n, s_p, s_y = _bin_sums(p, y, _bin_ids(p, edges), len(edges) - 1)
    # n_b * |observed_b - predicted_b| == |sum of y - sum of p| in the bin.
    gap = np.abs(s_y - s_p)
    ece = float(gap.sum() / p.size)
    nonempty = n > 0
    mce = float((gap[nonempty] / n[nonempty]).max())
    return ece, mce


def brier_score(y_prob: Any, y_true: Any) -> float:
    """Mean squared difference between probability and outcome (NaN with no data).

    References
    ----------
    .. [1] Brier, G. W. (1950). Verification of forecasts expressed in terms of
       probability. Monthly Weather Review 78(1), 1-3.

    Examples
    --------
    >>> brier_score([0.9, 0.2], [1, 0])
    0.025
    """
    p, y = _check_xy(y_prob, y_true)
    return float(np.mean((p - y) ** 2)) if p.size else math.nan


def log_loss(y_prob: Any, y_true: Any, *, eps: float = LOG_LOSS_EPS) -> float:
    """Mean negative log-likelihood, with ``p`` clipped to ``[eps, 1 - eps]``.

    The default ``eps`` is the machine epsilon, as in scikit-learn, so an
    evaluator that says 1.0 about a rejected submission costs about 36 nats.

    Examples
    --------
    >>> round(log_loss([0.9, 0.2], [1, 0]), 4)
    0.1643
    """
    p, y = _check_xy(y_prob, y_true)
    if not p.size:
        return math.nan
    p = np.clip(p, eps, 1 - eps)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))


def auroc(y_prob: Any, y_true: Any) -> tuple[float, str | None]:
    """Area under the ROC curve of ``y_prob`` for separating 1 from 0, and why it is missing.

    Returns
    -------
    (auroc, note) : tuple
        ``note`` is ``None`` when the area is defined, else the reason it is NaN
        (no labels, or only one class seen).

    Examples
    --------
    >>> auroc([0.9, 0.8, 0.3], [1, 0, 0])
    (1.0, None)
    >>> auroc([0.9, 0.8], [1, 1])
    (nan, 'only acceptable submissions: AUROC needs both outcomes')
    """
    p, y = _check_xy(y_prob, y_true)
    if not p.size:
        return math.nan, "no labels"
    n1 = int(y.sum())
    if n1 == y.size:
        return math.nan, "only acceptable submissions: AUROC needs both outcomes"
    if n1 == 0:
        return math.nan, "only not-acceptable submissions: AUROC needs both outcomes"
    # Mann-Whitney U from mid-ranks: the same number as roc_auc_score, without sklearn's checks.
    ranks = sp_stats.rankdata(p)
    n0 = y.size - n1
    u = ranks[y == 1].sum() - n1 * (n1 + 1) / 2
    return float(u / (n1 * n0)), None


def bootstrap_ece_interval(
    y_prob: Any,
    y_true: Any,
    *,
    edges: np.ndarray,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = 0.95,
    random_state: int | None = DEFAULT_SEED,
) -> tuple[float, float]:
    """Bias-corrected bootstrap interval on the ECE, with the bins held at ``edges``.

    Answers are resampled with replacement; for each resample the ECE is
    recomputed over the same bins (the binning of the full sample is held
    fixed, so the interval is conditional on it). The ECE is biased upwards
    (noise alone makes bins miss the diagonal) and so are its resamples, so
    the percentiles of the resamples sit above the true ECE and never reach 0
    for a calibrated evaluator. The interval is therefore the basic
    (reverse-percentile) bootstrap interval [1]_, ``2 ece - q_high`` to
    ``2 ece - q_low``, which subtracts the bias the resamples show, clipped at
    0 and widened to include the ECE itself. Simulated against the population
    ECE (10 bins; 200 samples each at n = 100, 500, 2000): coverage of a 95%
    interval 0.86-0.95 for ECEs of 0.10-0.12 (percentile method: 0.67-0.95),
    0.83-0.90 for an ECE of 0.03 (percentile: 0-0.69), and it reaches 0 for a
    calibrated evaluator in 56-63% of samples (percentile: never).

    The ECE of a resample depends only on how often each distinct ``(p, y)``
    pair was drawn, so when the pairs are few (at most :data:`COMPACT_SHARE`
    of the rows, e.g. probabilities given to three decimals) their counts are
    drawn directly from the multinomial a row resample induces
    (:func:`calibrate.analysis.stats.bootstrap_counts_ci`): the same
    distribution at a cost of pairs, not rows, per resample. Otherwise rows
    are resampled by :func:`calibrate.analysis.stats.bootstrap_ci`,
    vectorised: each chunk of resamples is binned with one ``bincount``.

    Notes
    -----
    Read a low ECE on few labels as "no evidence of miscalibration", not as
    proof of calibration: even corrected, the interval covers less than its
    level when the true ECE is near 0.

    References
    ----------
    .. [1] Davison, A. C. and Hinkley, D. V. (1997). Bootstrap Methods and
       their Application. Cambridge University Press, section 5.2.

    Returns
    -------
    (low, high) : tuple of float
        NaN with no data.
    """
    p, y = _check_xy(y_prob, y_true)
    if p.size == 0 or n_boot < 1:
        return math.nan, math.nan
    nb = len(edges) - 1
    distinct = _Distinct.of(p, y)
    if distinct.compact:
        # Few distinct (p, y) pairs (probabilities given to a few decimals): a resample
        # is a draw of their counts, K per resample instead of n, same distribution.
        contrib = np.zeros((distinct.size, nb))
        contrib[np.arange(distinct.size), _bin_ids(distinct.p, edges)] = distinct.y - distinct.p
        percentiles = bootstrap_counts_ci(
            lambda c: np.abs(c @ contrib).sum(axis=1) / p.size,
            distinct.counts,
            n_boot=n_boot,
            confidence=confidence,
            seed=random_state,
        )
        return _bias_corrected(percentiles, p, y, edges)

    def ece_rows(ids: np.ndarray, pb: np.ndarray, yb: np.ndarray) -> np.ndarray:
        # One row per resample: bin every row at once with a single bincount.
        b, n = ids.shape
        flat = (np.arange(b)[:, None] * nb + ids).ravel()
        s_p = np.bincount(flat, weights=pb.ravel(), minlength=b * nb).reshape(b, nb)
        s_y = np.bincount(flat, weights=yb.ravel(), minlength=b * nb).reshape(b, nb)
        return np.abs(s_y - s_p).sum(axis=1) / n

    percentiles = bootstrap_ci(
        ece_rows,
        _bin_ids(p, edges),
        p,
        y,
        n_boot=n_boot,
        confidence=confidence,
        seed=random_state,
        vectorized=True,
    )
    return _bias_corrected(percentiles, p, y, edges)


def _bias_corrected(
    percentiles: tuple[float, float], p: np.ndarray, y: np.ndarray, edges: np.ndarray
) -> tuple[float, float]:
    """The basic bootstrap interval from the resamples' percentiles, clipped at 0, holding the ECE."""
    q_low, q_high = percentiles
    if not (math.isfinite(q_low) and math.isfinite(q_high)):
        return math.nan, math.nan
    ece = _ece_mce(p, y, edges)[0]  # the very number the curve reports
    return max(0.0, 2 * ece - q_high), max(ece, 2 * ece - q_low)


#: Work on the distinct (value, outcome) pairs when there are at most this share of the rows:
#: a multinomial draw per pair costs about four times a resampled row.
COMPACT_SHARE = 0.25


@dataclass(frozen=True)
class _Distinct:
    """The distinct ``(p, y)`` pairs of a sample, their counts, and each row's pair."""

    p: np.ndarray
    y: np.ndarray
    counts: np.ndarray
    row: np.ndarray

    @property
    def size(self) -> int:
        return int(self.counts.size)

    @property
    def compact(self) -> bool:
        """Whether the pairs are few enough that working on them pays."""
        return self.size <= COMPACT_SHARE * self.row.size

    @classmethod
    def of(cls, p: np.ndarray, y: np.ndarray) -> _Distinct:
        n = p.size
        order = np.lexsort((p, y))  # one sort, O(n log n)
        ps, ys = p[order], y[order]
        new = np.ones(n, dtype=bool)
        new[1:] = (ps[1:] != ps[:-1]) | (ys[1:] != ys[:-1])
        starts = np.flatnonzero(new)
        row = np.empty(n, dtype=np.intp)
        row[order] = np.cumsum(new) - 1
        counts = np.diff(np.append(starts, n))
        return cls(p=ps[starts], y=ys[starts], counts=counts, row=row)


# --------------------------------------------------------------------------- the curve


@dataclass(eq=False)
class ReliabilityCurve:
    """A reliability curve with its scores. Build it with :func:`reliability_curve`.

    Attributes
    ----------
    bins : DataFrame
        See :func:`reliability_bins`.
    n, n_positive : int
        Number of labeled points and of outcomes equal to 1.
    n_bins, strategy : int, str
        The binning every score below is computed over.
    ece, ece_ci, mce : float, (float, float), float
        Expected calibration error (count-weighted), its bootstrap interval, and
        the maximum calibration error.
    brier, log_loss : float
        Proper scores of the raw numbers.
    auroc : float
        Area under the ROC curve; NaN with ``auroc_note`` saying why.
    x_label, y_label : str
        What the axes are (``yes-probability`` vs ``acceptance rate`` for
        yes/no, ``confidence`` vs ``share of correct calls`` for choice and
        rubric).
    """

    bins: pd.DataFrame
    n: int
    n_positive: int
    n_bins: int
    strategy: str
    ece: float
    ece_ci: tuple[float, float]
    mce: float
    brier: float
    log_loss: float
    auroc: float
    auroc_note: str | None = None
    x_label: str = "yes-probability"
    y_label: str = "acceptance rate"
    confidence: float = 0.95

    @property
    def too_few(self) -> bool:
        """Fewer labels than :data:`~calibrate.analysis.stats.MIN_N`: show "too few", not numbers."""
        return self.n < MIN_N

    @property
    def binning(self) -> str:
        """The binning in words, e.g. ``"uniform, 10 bins"``."""
        return f"{self.strategy}, {self.n_bins} bins"

    def bins_records(self) -> list[dict[str, Any]]:
        """Bins as JSON-ready dicts ``{lo, hi, mean_predicted, observed, n, ci}`` (NaN -> None)."""
        b = self.bins
        return [
            {
                "lo": _num(lo),
                "hi": _num(hi),
                "mean_predicted": _num(mp),
                "observed": _num(ob),
                "n": int(n),
                "ci": [_num(cl), _num(ch)],
            }
            for lo, hi, mp, ob, n, cl, ch in zip(
                b["lo"],
                b["hi"],
                b["mean_predicted"],
                b["observed"],
                b["n"],
                b["ci_low"],
                b["ci_high"],
                strict=True,
            )
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready scores and bins (NaN becomes ``None``)."""
        return {
            "n": self.n,
            "too_few": self.too_few,
            "strategy": self.strategy,
            "n_bins": self.n_bins,
            "x": self.x_label,
            "y": self.y_label,
            "bins": self.bins_records(),
            "ece": _num(self.ece),
            "ece_ci": [_num(self.ece_ci[0]), _num(self.ece_ci[1])],
            "mce": _num(self.mce),
            "brier": _num(self.brier),
            "log_loss": _num(self.log_loss),
            "auroc": _num(self.auroc),
            "auroc_note": self.auroc_note,
        }

    def plot(
        self,
        ax: Any = None,
        *,
        hist_ax: Any = None,
        recalibrator: Recalibrator | None = None,
        title: str | None = None,
    ) -> ReliabilityCurve:
        """Draw the reliability diagram; see :class:`~calibrate.analysis.calibration_display.ReliabilityDisplay`.

        Returns ``self``; the display is kept as ``self.display_``.
        """
        from calibrate.analysis.calibration_display import ReliabilityDisplay

        self.display_ = ReliabilityDisplay.from_curve(self, recalibrator=recalibrator, title=title)
        self.display_.plot(ax=ax, hist_ax=hist_ax)
        return self


def reliability_curve(
    y_prob: Any,
    y_true: Any,
    *,
    n_bins: int = DEFAULT_BINS,
    strategy: str = "uniform",
    confidence: float = 0.95,
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int | None = DEFAULT_SEED,
    x_label: str = "yes-probability",
    y_label: str = "acceptance rate",
) -> ReliabilityCurve:
    """Reliability curve of probabilities against 0/1 outcomes, with ECE, MCE, Brier, log loss, AUROC.

    Parameters
    ----------
    y_prob : array-like of shape (n,)
        Predicted probabilities in [0, 1] (the yes-probability, or a confidence).
    y_true : array-like of shape (n,)
        1/True where the prediction came true (acceptable, or a correct call).
    n_bins : int, default=10
        Number of bins for the curve, ECE and MCE.
    strategy : {"uniform", "quantile"}, default="uniform"
        See :func:`bin_edges`.
    confidence : float, default=0.95
        Level of the per-bin Wilson intervals and of the ECE interval.
    n_boot : int, default=1000
        Bootstrap resamples for the ECE interval (0 to skip).
    random_state : int or None, default=0
        Seed of the bootstrap, so the same data give the same interval.
    x_label, y_label : str
        Axis names carried to the figures.

    Returns
    -------
    ReliabilityCurve

    References
    ----------
    .. [1] Niculescu-Mizil, A. and Caruana, R. (2005). Predicting good
       probabilities with supervised learning. ICML. (reliability diagrams)
    .. [2] Naeini, M. P., Cooper, G. F. and Hauskrecht, M. (2015). AAAI. (ECE)

    Examples
    --------
    >>> c = reliability_curve([0.9, 0.8, 0.3, 0.2], [1, 1, 0, 1], n_bins=2, n_boot=0)
    >>> round(c.brier, 4), c.n, c.too_few
    (0.195, 4, True)
    """
    p, y = _check_xy(y_prob, y_true)
    edges = bin_edges(p, n_bins=n_bins, strategy=strategy)
    ece, mce = _ece_mce(p, y, edges)
    area, note = auroc(p, y)
    return ReliabilityCurve(
        bins=_bins_table(p, y, edges, strategy=strategy, confidence=confidence),
        n=int(p.size),
        n_positive=int(y.sum()),
        n_bins=int(n_bins),
        strategy=strategy,
        ece=ece,
        ece_ci=bootstrap_ece_interval(
            p, y, edges=edges, n_boot=n_boot, confidence=confidence, random_state=random_state
        ),
        mce=mce,
        brier=brier_score(p, y),
        log_loss=log_loss(p, y),
        auroc=area,
        auroc_note=note,
        x_label=x_label,
        y_label=y_label,
        confidence=confidence,
    )


# --------------------------------------------------------------------------- recalibration


@dataclass(frozen=True)
class RecalibrationCV:
    """Held-out evaluation of a recalibration map.

    ``*_before`` score the evaluator's raw numbers, ``*_after`` the chosen
    map's out-of-fold predictions (each point predicted by a map fit without
    it), both over the same points and the same binning. The method is chosen
    on the same folds, so ``*_after`` is slightly optimistic (a choice between
    two).
    """

    n_splits: int
    n_bins: int
    strategy: str
    log_loss: dict[str, float]
    ece_before: float
    ece_after: float
    brier_before: float
    brier_after: float


@dataclass(eq=False)
class Recalibrator:
    """A monotone map from the evaluator's number to the observed acceptance probability.

    Build it with :func:`fit_recalibrator`. ``predict(0.9)`` answers "the
    evaluator said 0.9: how often is that accepted?".

    Attributes
    ----------
    method : {"isotonic", "sigmoid", "none"}
        ``none`` when no map could be fit (see ``reason``); ``predict`` then
        returns its input unchanged, i.e. the evaluator's number at face value.
    n, n_positive : int
        Points the map was fit on, and how many were acceptable.
    cv : RecalibrationCV or None
        Held-out before/after scores; ``None`` when no map was fit.
    reason : str or None
        Why no map was fit.
    """

    method: str
    n: int
    n_positive: int
    cv: RecalibrationCV | None = None
    reason: str | None = None
    model: Any = field(default=None, repr=False)

    @property
    def fitted(self) -> bool:
        """Whether a map was fit (``method`` is not ``"none"``)."""
        return self.method != "none"

    @property
    def too_few(self) -> bool:
        """Fit on fewer than :data:`~calibrate.analysis.stats.MIN_N` points."""
        return self.n < MIN_N

    def predict(self, p: Any) -> np.ndarray:
        """Acceptance probability for each evaluator number in ``p`` (clipped into [0, 1])."""
        x = np.clip(np.asarray(p, dtype=float), 0.0, 1.0)
        if self.method == "none":
            return x
        flat = x.ravel()
        out = np.full(flat.shape, np.nan)
        ok = np.isfinite(flat)  # a missing number stays missing
        out[ok] = _predict(self.method, self.model, flat[ok])
        return out.reshape(x.shape)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: method, before/after scores, reason (NaN -> None)."""
        cv = self.cv
        return {
            "method": self.method,
            "n": self.n,
            "reason": self.reason,
            "n_splits": cv.n_splits if cv else None,
            "cv_log_loss": {k: _num(v) for k, v in cv.log_loss.items()} if cv else None,
            "ece_before": _num(cv.ece_before) if cv else None,
            "ece_after": _num(cv.ece_after) if cv else None,
            "brier_before": _num(cv.brier_before) if cv else None,
            "brier_after": _num(cv.brier_after) if cv else None,
        }


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, LOGIT_EPS, 1 - LOGIT_EPS)
    return np.log(p) - np.log1p(-p)


def _fit(method: str, x: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None) -> Any:
    """Fit one map; ``weight`` counts how often each point occurs (the same fit as repeating it)."""
    if method == "isotonic":
        from sklearn.isotonic import IsotonicRegression

        return IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip").fit(
            x, y, sample_weight=weight
        )
    from sklearn.linear_model import LogisticRegression

    # Platt scaling on the log-odds; the default L2 penalty keeps it finite when the
    # classes are separable, which is common with few labels.
    fit = LogisticRegression().fit(_logit(x)[:, None], y.astype(int), sample_weight=weight)
    slope, intercept = float(fit.coef_[0, 0]), float(fit.intercept_[0])
    if slope < 0:
        # The map must not fall as the evaluator's number rises: a number that points the
        # wrong way carries no usable information, so the map is the base rate.
        rate = np.clip(np.average(y, weights=weight), LOGIT_EPS, 1 - LOGIT_EPS)
        slope, intercept = 0.0, float(np.log(rate) - np.log1p(-rate))
    return slope, intercept


def _predict(method: str, model: Any, x: np.ndarray) -> np.ndarray:
    if method == "isotonic":
        return np.clip(model.predict(x), 0.0, 1.0)
    slope, intercept = model
    return 1.0 / (1.0 + np.exp(-(slope * _logit(x) + intercept)))


def fit_recalibrator(
    y_prob: Any,
    y_true: Any,
    *,
    method: str = "auto",
    n_splits: int = 5,
    n_bins: int = DEFAULT_BINS,
    strategy: str = "uniform",
    random_state: int | None = DEFAULT_SEED,
) -> Recalibrator:
    """Fit a monotone map from the evaluator's number to P(acceptable), checked on held-out folds.

    Two maps are compared: isotonic regression (a free monotone step function)
    and Platt/sigmoid scaling (a logistic regression on ``logit(p)``, with
    scikit-learn's default L2 penalty, C = 1: it keeps the fit finite when the
    outcomes are separable, and shrinks the slope on few labels, e.g. 1.7
    against an unpenalised 4.2 at n = 30; the two agree from about n = 1000). With
    ``method="auto"`` the one with the lower cross-validated log loss is kept.
    Folds are stratified; ``k`` is ``n_splits`` or fewer when either outcome has
    fewer than ``n_splits`` points. The kept map is then refit on all points.
    When the distinct ``(p, y)`` pairs are few (at most :data:`COMPACT_SHARE`
    of the points) each map is fit on the pairs weighted by their counts in
    the training folds: the same objective (the isotonic fit is identical to
    the last bit, the logistic one up to the order of its sums).

    Parameters
    ----------
    y_prob : array-like of shape (n,)
        The evaluator's numbers in [0, 1].
    y_true : array-like of shape (n,)
        1/True = acceptable.
    method : {"auto", "isotonic", "sigmoid"}, default="auto"
        The map, or ``auto`` to choose by cross-validated log loss.
    n_splits : int, default=5
        Largest number of folds.
    n_bins, strategy : int, str
        Binning of the before/after ECE.
    random_state : int or None, default=0
        Seed of the fold assignment.

    Returns
    -------
    Recalibrator
        ``method == "none"`` (and ``predict`` the identity) when either outcome
        has fewer than two points: nothing can be learnt or checked.

    References
    ----------
    .. [1] Platt, J. (1999). Probabilistic outputs for support vector machines.
    .. [2] Zadrozny, B. and Elkan, C. (2002). Transforming classifier scores
       into accurate multiclass probability estimates. KDD.
    .. [3] Niculescu-Mizil, A. and Caruana, R. (2005). Predicting good
       probabilities with supervised learning. ICML.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=400)
    >>> y = rng.uniform(size=400) < 0.2 + 0.6 * p
    >>> r = fit_recalibrator(p, y)
    >>> r.method in ("isotonic", "sigmoid"), bool(0.6 < r.predict(0.9) < 0.85)
    (True, True)
    """
    if method not in METHODS:
        raise UsageError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    _check_binning(n_bins, strategy)
    p, y = _check_xy(y_prob, y_true)
    n, n1 = int(p.size), int(y.sum())
    minority = min(n1, n - n1)
    if minority < 2:
        reason = (
            "no labels"
            if n == 0
            else f"{minority} {'acceptable' if n1 <= n - n1 else 'not-acceptable'} "
            "point(s): a map needs at least two of each outcome"
        )
        return Recalibrator(method="none", n=n, n_positive=n1, reason=reason)

    from sklearn.model_selection import StratifiedKFold

    k = min(n_splits, minority)
    candidates = ("isotonic", "sigmoid") if method == "auto" else (method,)
    oof = {m: np.empty(n) for m in candidates}
    folds = StratifiedKFold(n_splits=k, shuffle=True, random_state=random_state)
    distinct = _Distinct.of(p, y)
    for train, test in folds.split(p, y):
        for m in candidates:
            oof[m][test] = _fit_predict(m, p, y, train, test, distinct)
    scores = {m: log_loss(oof[m], y) for m in candidates}
    chosen = min(candidates, key=lambda m: (scores[m], m != "sigmoid"))  # ties: the smoother map
    edges = bin_edges(p, n_bins=n_bins, strategy=strategy)
    edges_after = bin_edges(oof[chosen], n_bins=n_bins, strategy=strategy)
    cv = RecalibrationCV(
        n_splits=k,
        n_bins=int(n_bins),
        strategy=strategy,
        log_loss=scores,
        ece_before=_ece_mce(p, y, edges)[0],
        ece_after=_ece_mce(oof[chosen], y, edges_after)[0],
        brier_before=brier_score(p, y),
        brier_after=brier_score(oof[chosen], y),
    )
    model = (
        _fit(chosen, distinct.p, distinct.y, distinct.counts)
        if distinct.compact
        else _fit(chosen, p, y)
    )
    return Recalibrator(method=chosen, n=n, n_positive=n1, cv=cv, model=model)


def _fit_predict(
    method: str,
    p: np.ndarray,
    y: np.ndarray,
    train: np.ndarray,
    test: np.ndarray,
    distinct: _Distinct,
) -> np.ndarray:
    """Out-of-fold predictions for ``test`` from a map fit on ``train``.

    With few distinct ``(p, y)`` pairs the map is fit on the pairs weighted by
    how often each occurs in ``train`` (the same objective as the rows; the
    isotonic fit is identical to the last bit) and predicted once per pair.
    """
    if not distinct.compact:
        return _predict(method, _fit(method, p[train], y[train]), p[test])
    weight = np.bincount(distinct.row[train], minlength=distinct.size)
    used = weight > 0
    model = _fit(method, distinct.p[used], distinct.y[used], weight[used].astype(float))
    return _predict(method, model, distinct.p)[distinct.row[test]]


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


# --------------------------------------------------------------------------- per question


@dataclass(eq=False)
class QuestionCalibration:
    """Calibration of one question for one evaluator model (and week, when grouped by week).

    Attributes
    ----------
    process, step, question_id, ask, kind, model, week : str
        The group. ``week`` (Monday, ISO date) is ``None`` unless grouped by week.
    n : int
        Labeled answers in the group.
    n_missing : int
        Labeled answers without a usable number (no probability, name or level).
    curve : ReliabilityCurve
        yes/no: yes-probability vs acceptable. choice/rubric: confidence vs
        "the call was correct" (answers without a confidence are left out).
    recalibrator : Recalibrator
        yes/no: from ``p``; choice/rubric: from the confidence of passing answers.
    rates : DataFrame or None
        choice/rubric: acceptance rate per answer name / level
        (:func:`category_rates`) with a ``passes`` column.
    pass_names, pass_level : tuple of str / int or None
        The call used for choice / rubric.
    pass_source : {"process file", "learnt"} or None
        Where the call came from.
    non_monotone : DataFrame or None
        rubric: :func:`non_monotone_levels`.
    """

    process: str
    step: str
    question_id: str
    ask: str
    kind: str
    model: str
    n: int
    curve: ReliabilityCurve
    recalibrator: Recalibrator
    week: str | None = None
    n_missing: int = 0
    rates: pd.DataFrame | None = None
    pass_names: tuple[str, ...] | None = None
    pass_level: int | None = None
    pass_source: str | None = None
    non_monotone: pd.DataFrame | None = None
    level_texts: tuple[str, ...] = ()

    @property
    def too_few(self) -> bool:
        """Fewer than :data:`~calibrate.analysis.stats.MIN_N` labels behind the curve."""
        return self.curve.too_few

    @property
    def key(self) -> str:
        """A stable identity of the group (question, model, week), used to name files."""
        return "\x1f".join([self.question_id, self.model, self.week or ""])

    @property
    def flagged_levels(self) -> list[int]:
        """Rubric levels accepted significantly less often than some lower level."""
        if self.non_monotone is None or self.non_monotone.empty:
            return []
        return sorted(
            {int(v) for v in self.non_monotone.loc[self.non_monotone["flagged"], "higher"]}
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready result: the keys of ``calibrate curves --format json`` (NaN -> None)."""
        out: dict[str, Any] = {
            "process": self.process,
            "step": self.step,
            "question_id": self.question_id,
            "ask": self.ask,
            "kind": self.kind,
            "model": self.model,
        }
        if self.week is not None:
            out["week"] = self.week
        out["n_missing"] = self.n_missing
        out.update(self.curve.to_dict())
        out["n"] = self.n
        out["n_curve"] = self.curve.n
        out["recalibration"] = self.recalibrator.to_dict()
        if self.rates is not None:
            out["answers" if self.kind == "choice" else "levels"] = [
                {
                    ("name" if self.kind == "choice" else "level"): (
                        str(r.answer) if self.kind == "choice" else int(r.answer)
                    ),
                    "n": int(r.n),
                    "accepted": int(r.accepted),
                    "rate": _num(r.rate),
                    "ci": [_num(r.ci_low), _num(r.ci_high)],
                    "passes": bool(r.passes),
                    "too_few": bool(r.n < MIN_N),
                }
                for r in self.rates.itertuples(index=False)
            ]
        if self.kind == "choice":
            out["pass_names"] = list(self.pass_names or ())
        if self.kind == "rubric":
            out["pass_level"] = self.pass_level
            out["non_monotone_levels"] = self.flagged_levels
            out["monotone_rule"] = MONOTONE_RULE
        if self.kind != "yes_no":
            out["pass_source"] = self.pass_source
        return out

    def plot(self, ax: Any = None, *, hist_ax: Any = None) -> QuestionCalibration:
        """Draw this question's reliability diagram with its recalibration map; returns ``self``."""
        # The map is drawn for yes/no only: for choice and rubric the curve's y (a correct
        # call) is not the map's y (acceptance of passing answers).
        recal = self.recalibrator if self.kind == "yes_no" else None
        self.curve.plot(ax=ax, hist_ax=hist_ax, recalibrator=recal, title=self.ask)
        self.display_ = self.curve.display_
        return self


def _common(
    kind: str, *, n_bins: int, strategy: str, n_boot: int, random_state: int | None
) -> dict[str, Any]:
    labels = (
        {"x_label": "yes-probability", "y_label": "acceptance rate"}
        if kind == "yes_no"
        else {"x_label": "confidence", "y_label": "share of correct calls"}
    )
    return {
        "n_bins": n_bins,
        "strategy": strategy,
        "n_boot": n_boot,
        "random_state": random_state,
        **labels,
    }


def yes_no_calibration(
    p: Any,
    y_true: Any,
    *,
    n_bins: int = DEFAULT_BINS,
    strategy: str = "uniform",
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int | None = DEFAULT_SEED,
) -> tuple[ReliabilityCurve, Recalibrator]:
    """Reliability curve of the yes-probability against acceptable, and its recalibration map."""
    curve = reliability_curve(
        p,
        y_true,
        **_common(
            "yes_no", n_bins=n_bins, strategy=strategy, n_boot=n_boot, random_state=random_state
        ),
    )
    recal = fit_recalibrator(p, y_true, n_bins=n_bins, strategy=strategy, random_state=random_state)
    return curve, recal


def choice_calibration(
    names: Any,
    confidence: Any,
    y_true: Any,
    *,
    pass_names: Sequence[str] | None = None,
    all_names: Sequence[str] | None = None,
    n_bins: int = DEFAULT_BINS,
    strategy: str = "uniform",
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int | None = DEFAULT_SEED,
) -> dict[str, Any]:
    """Acceptance per answer name, confidence-vs-accuracy, and the passing-confidence map.

    Parameters
    ----------
    names : array-like of shape (n,)
        The chosen answer names.
    confidence : array-like of shape (n,)
        The evaluator's confidence (NaN where missing; left out of the curve).
    y_true : array-like of shape (n,)
        1/True = acceptable.
    pass_names : sequence of str, optional
        The process file's ``pass`` list; learnt with :func:`learn_pass_names`
        when ``None``.
    all_names : sequence of str, optional
        Every answer name of the question, listed even when never chosen.

    Returns
    -------
    dict
        ``rates``, ``pass_names``, ``pass_source``, ``curve``, ``recalibrator``.
    """
    names = np.asarray(names, dtype=object).ravel()
    y = np.asarray(y_true, dtype=float).ravel()
    rates = category_rates(names, y, categories=all_names)
    if pass_names is None:
        pass_names, source = learn_pass_names(rates), "learnt"
    else:
        pass_names, source = tuple(pass_names), "process file"
    rates["passes"] = rates["answer"].isin(pass_names)
    passes = pd.Series(names).isin(list(pass_names)).to_numpy()  # hashed: no sort of objects
    return _call_calibration(
        passes,
        confidence,
        y,
        rates=rates,
        n_bins=n_bins,
        strategy=strategy,
        n_boot=n_boot,
        random_state=random_state,
    ) | {"pass_names": tuple(pass_names), "pass_source": source}


def rubric_calibration(
    level: Any,
    confidence: Any,
    y_true: Any,
    *,
    pass_level: int | None = None,
    n_levels: int | None = None,
    n_bins: int = DEFAULT_BINS,
    strategy: str = "uniform",
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int | None = DEFAULT_SEED,
    alpha: float = MONOTONE_ALPHA,
) -> dict[str, Any]:
    """Acceptance per level (with non-monotone flags), confidence-vs-accuracy, and the map.

    The call is "passes at the current ``pass`` level" (``level >= pass_level``);
    without a process file the level is learnt with :func:`learn_pass_level`.

    Returns
    -------
    dict
        ``rates``, ``pass_level``, ``pass_source``, ``non_monotone``, ``curve``,
        ``recalibrator``.
    """
    lv = np.asarray(level, dtype=float).ravel().astype(int)
    y = np.asarray(y_true, dtype=float).ravel()
    categories = range(n_levels) if n_levels else None
    rates = category_rates(lv, y, categories=categories)
    rates["answer"] = rates["answer"].astype(int)
    if pass_level is None:
        pass_level, source = learn_pass_level(lv, y), "learnt"
    else:
        pass_level, source = int(pass_level), "process file"
    rates["passes"] = rates["answer"] >= pass_level
    return _call_calibration(
        lv >= pass_level,
        confidence,
        y,
        rates=rates,
        n_bins=n_bins,
        strategy=strategy,
        n_boot=n_boot,
        random_state=random_state,
    ) | {
        "pass_level": pass_level,
        "pass_source": source,
        "non_monotone": non_monotone_levels(rates, alpha=alpha),
    }


def _call_calibration(
    passes: np.ndarray,
    confidence: Any,
    y: np.ndarray,
    *,
    rates: pd.DataFrame,
    n_bins: int,
    strategy: str,
    n_boot: int,
    random_state: int | None,
) -> dict[str, Any]:
    conf = np.asarray(confidence, dtype=float).ravel()
    has_conf = np.isfinite(conf)
    correct = passes == (y == 1)
    curve = reliability_curve(
        conf[has_conf],
        correct[has_conf],
        **_common(
            "choice", n_bins=n_bins, strategy=strategy, n_boot=n_boot, random_state=random_state
        ),
    )
    # The map the threshold search needs: how often a *passing* answer given with
    # confidence c is accepted.
    mask = has_conf & passes
    recal = fit_recalibrator(
        conf[mask], y[mask], n_bins=n_bins, strategy=strategy, random_state=random_state
    )
    return {"rates": rates, "curve": curve, "recalibrator": recal}


# --------------------------------------------------------------------------- groups


def _first(series: pd.Series) -> Any:
    values = series.dropna()
    return values.iloc[0] if len(values) else None


def _as_list(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return [value]
    if isinstance(value, dict):
        return [str(k) for k in value]
    return [str(v) for v in value]


def _week(at: pd.Series) -> pd.Series:
    at = pd.to_datetime(at, utc=True)
    monday = at.dt.normalize() - pd.to_timedelta(at.dt.day_of_week, unit="D")
    # Format each distinct Monday once, not once per row; a missing time is "unknown".
    codes, mondays = pd.factorize(monday)
    names = np.append(mondays.strftime("%Y-%m-%d").to_numpy(dtype=object), "unknown")
    return pd.Series(names[codes], index=at.index, dtype=object)


def calibrate_answers(
    answers: pd.DataFrame,
    *,
    n_bins: int = DEFAULT_BINS,
    strategy: str = "uniform",
    by: Sequence[str] = (),
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int | None = DEFAULT_SEED,
    settings: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[QuestionCalibration]:
    """Calibration of every question, per evaluator model (never pooled), optionally per week.

    Parameters
    ----------
    answers : DataFrame
        Rows of :func:`calibrate.dataset.answers`; unlabeled rows are ignored.
    n_bins : int, default=10
    strategy : {"uniform", "quantile"}, default="uniform"
    by : sequence of {"model", "week"}, default=()
        Extra groupings. The evaluator model is a group whether or not it is
        named here, because thresholds learnt on one model say nothing about
        another; ``week`` adds the Monday of the check's week.
    n_boot : int, default=1000
        Bootstrap resamples for the ECE interval.
    random_state : int or None, default=0
    settings : mapping, optional
        The process file's ``pass_names``, ``one_of``, ``pass_level`` and
        ``levels`` per question id (:func:`calibrate.dataset.question_settings`),
        for a frame that does not carry them on every row; by default they are
        read from the frame's columns.

    Returns
    -------
    list of QuestionCalibration
        Ordered by process, step, question position, model, week. Groups with
        no labeled answer are left out.
    """
    _check_binning(n_bins, strategy)
    bad = [b for b in by if b not in GROUP_BY]
    if bad:
        raise UsageError(f"cannot group by {', '.join(bad)}: choose from {', '.join(GROUP_BY)}")
    missing = [c for c in _ANSWER_COLUMNS if c not in answers.columns]
    if missing:
        raise ValueError(f"answers frame lacks columns {missing}")
    needed = [*_ANSWER_COLUMNS, *_ROW_COLUMNS, "at", *_SETTING_COLUMNS]
    df = answers.loc[answers["label"].notna(), [c for c in needed if c in answers.columns]].copy()
    if df.empty:
        return []
    df["label"] = df["label"].astype(bool)
    # A missing model is its own group, never folded into a named one.
    df["model"] = df["model"].astype(object).where(df["model"].notna(), "(unknown model)")
    keys = ["process", "step", "question_id", "model"]
    if "week" in by:
        df["week"] = _week(df["at"]) if "at" in df.columns else "unknown"
        keys.append("week")
    if "position" not in df.columns:
        df["position"] = 0
    out: list[QuestionCalibration] = []
    opts = {"n_bins": n_bins, "strategy": strategy, "n_boot": n_boot, "random_state": random_state}
    groups = df.groupby(keys, sort=False, dropna=False, observed=True)
    for key, g in groups:  # a loop per group, not per record
        group = dict(zip(keys, key, strict=True))
        out.append(_one_question(g, group, opts, settings))
    # Questions in the order the check asks them; models and weeks in name/time order.
    first_pos = df.groupby("question_id", observed=True)["position"].min().to_dict()
    out.sort(
        key=lambda q: (
            q.process,
            q.step,
            first_pos.get(q.question_id, 0),
            q.question_id,
            q.model,
            q.week or "",
        )
    )
    return out


def _one_question(
    g: pd.DataFrame,
    group: dict[str, Any],
    opts: dict[str, Any],
    settings: Mapping[str, Mapping[str, Any]] | None = None,
) -> QuestionCalibration:
    kind = str(_first(g["kind"]))
    y = g["label"].to_numpy(dtype=bool)
    in_file = bool(g["in_process_file"].fillna(False).any()) if "in_process_file" in g else False

    def setting(name: str) -> Any:
        # The process file's value as the rows carry it: the same on every row of a question.
        if settings is not None:
            return settings.get(str(group["question_id"]), {}).get(name) if in_file else None
        return _first(g[name]) if name in g else None

    common = {
        "process": str(group["process"]),
        "step": str(group["step"]),
        "question_id": str(group["question_id"]),
        "ask": str(_first(g["ask"])),
        "kind": kind,
        "model": str(group["model"]),
        "week": group.get("week"),
        "n": int(len(g)),
    }
    if kind == "yes_no":
        p = pd.to_numeric(g["p"], errors="coerce").to_numpy(dtype=float)
        ok = np.isfinite(p)
        curve, recal = yes_no_calibration(p[ok], y[ok], **opts)
        return QuestionCalibration(
            **common, n_missing=int((~ok).sum()), curve=curve, recalibrator=recal
        )
    conf = pd.to_numeric(g.get("confidence"), errors="coerce").to_numpy(dtype=float)
    if kind == "choice":
        names = g["name"]
        ok = names.notna().to_numpy()
        pass_names = _as_list(setting("pass_names")) if in_file else None
        all_names = _as_list(setting("one_of"))
        res = choice_calibration(
            names[ok].astype(str).to_numpy(),
            conf[ok],
            y[ok],
            pass_names=pass_names or None,
            all_names=all_names,
            **opts,
        )
        return QuestionCalibration(**common, n_missing=int((~ok).sum()), **res)
    if kind == "rubric":
        lv = pd.to_numeric(g["level"], errors="coerce").to_numpy(dtype=float)
        ok = np.isfinite(lv)
        pass_level = setting("pass_level") if in_file else None
        texts = _as_list(setting("levels"))
        res = rubric_calibration(
            lv[ok],
            conf[ok],
            y[ok],
            pass_level=int(pass_level) if pass_level is not None else None,
            n_levels=len(texts) if texts else None,
            **opts,
        )
        return QuestionCalibration(
            **common, n_missing=int((~ok).sum()), level_texts=tuple(texts or ()), **res
        )
    raise ValueError(f"unknown question kind {kind!r}: expected yes_no, choice or rubric")


def recalibrators(
    results: Sequence[QuestionCalibration],
) -> dict[tuple[str, str, str | None], Recalibrator]:
    """The recalibration maps of :func:`calibrate_answers` results, by (question_id, model, week).

    For the threshold search and the report: ``maps[(qid, model, None)].predict(0.9)``
    is how often the evaluator's 0.9 is accepted.
    """
    return {(q.question_id, q.model, q.week): q.recalibrator for q in results}


def calibrate_store(
    con: Any,
    filters: Any = None,
    **kwargs: Any,
) -> list[QuestionCalibration]:
    """:func:`calibrate_answers` over the labeled answers of a store, with the shared filters.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        An open store (read-only is enough).
    filters : calibrate.dataset.Filters, optional
    **kwargs
        Passed to :func:`calibrate_answers`.
    """
    from dataclasses import replace

    from calibrate.dataset import Filters, checked_steps, question_settings, view_columns

    # Only the columns the analysis reads, text as categoricals, the thresholds once per
    # question: the whole view as pandas objects took 6 GiB at a million runs. One step
    # at a time: every group lies within a step, and DuckDB then labels one step's checks
    # at once (peak 1.2 -> 0.9 GiB at a million runs).
    filters = filters or Filters()
    columns = [*_ANSWER_COLUMNS, *_ROW_COLUMNS]
    if "week" in kwargs.get("by", ()):
        columns.append("at")
    settings = question_settings(con)
    # With no checks at all, one read of nothing still checks the options.
    steps = [filters.step] if filters.step is not None else checked_steps(con) or [None]
    out: list[QuestionCalibration] = []
    for step in steps:
        rows = view_columns(
            con, "labeled_answers", columns, replace(filters, step=step), labeled_only=True
        )
        out += calibrate_answers(rows, settings=settings, **kwargs)
        del rows
    # Each step's results are in order already; a stable sort puts the steps in order.
    out.sort(key=lambda q: (q.process, q.step))
    return out


def _num(x: Any) -> float | None:
    """A float for JSON, with NaN and infinities as ``None``."""
    if x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None
