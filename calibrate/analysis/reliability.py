"""The reliability curve of probabilities against outcomes, with its scores.

:func:`reliability_curve` bins the numbers, scores them (ECE with its
bootstrap interval, MCE, Brier, log loss, AUROC: the arithmetic is
:mod:`calibrate.analysis.calibration_scores`') and returns a
:class:`ReliabilityCurve`, whose ``plot(ax=None)`` draws it through
:mod:`calibrate.analysis.calibration_display`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from calibrate.analysis.calibration_scores import (
    auroc,
    bin_edges,
    bins_table,
    bootstrap_ece_interval,
    brier_score,
    check_xy,
    ece_mce,
    log_loss,
)
from calibrate.analysis.plain import num as _num
from calibrate.analysis.stats import MIN_N
from calibrate.defaults import DEFAULT_BINS, DEFAULT_N_BOOT, DEFAULT_SEED

if TYPE_CHECKING:
    from calibrate.analysis.recalibration import Recalibrator


@dataclass(eq=False)
class ReliabilityCurve:
    """A reliability curve with its scores. Build it with :func:`reliability_curve`.

    Attributes
    ----------
    bins : DataFrame
        See :func:`~calibrate.analysis.calibration_scores.reliability_bins`.
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
        See :func:`~calibrate.analysis.calibration_scores.bin_edges`.
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
    p, y = check_xy(y_prob, y_true)
    edges = bin_edges(p, n_bins=n_bins, strategy=strategy)
    ece, mce = ece_mce(p, y, edges)
    area, note = auroc(p, y)
    return ReliabilityCurve(
        bins=bins_table(p, y, edges, strategy=strategy, confidence=confidence),
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
