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
This module holds the curve and the per-question and per-group results; its
parts are :mod:`~calibrate.analysis.calibration_scores` (bins, ECE/MCE,
Brier, log loss, AUROC, bootstrap), :mod:`~calibrate.analysis.recalibration`
(the maps) and :mod:`~calibrate.analysis.category_rates` (choice and rubric
acceptance rates), whose public names are re-exported here.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis.calibration_scores import (  # noqa: F401 - re-exported
    LOG_LOSS_EPS,
    STRATEGIES,
    Distinct,
    auroc,
    bin_edges,
    bins_table,
    bootstrap_ece_interval,
    brier_score,
    calibration_errors,
    check_binning,
    check_xy,
    ece_mce,
    log_loss,
    reliability_bins,
)
from calibrate.analysis.category_rates import (  # noqa: F401 - re-exported
    MONOTONE_ALPHA,
    category_rates,
    learn_pass_level,
    learn_pass_names,
    non_monotone_levels,
)
from calibrate.analysis.plain import num as _num
from calibrate.analysis.recalibration import (  # noqa: F401 - re-exported
    LOGIT_EPS,
    METHODS,
    RecalibrationCV,
    Recalibrator,
    fit_recalibrator,
)
from calibrate.analysis.stats import MIN_N
from calibrate.analysis.step_data import after_switch_labels
from calibrate.defaults import DEFAULT_BINS, DEFAULT_N_BOOT, DEFAULT_SEED
from calibrate.errors import UsageError

#: Optional extra groupings; the evaluator model is always a group.
GROUP_BY = ("model", "week")
#: What :func:`calibrate_answers` does with the labels of checks recorded ``advisory: false``:
#: ``leave_out`` them (counted), keep the ``audits`` when every label of a curve was drawn with
#: one probability, or ``keep`` every one (``--with-escalations``: a sample the check selected).
AFTER_SWITCH = ("leave_out", "audits", "keep")
#: Two inclusion probabilities closer than this are one.
_SAME_P = 1e-9
MONOTONE_RULE = (
    "a level is flagged when its acceptance rate is lower than a lower level's by a "
    "one-sided Fisher exact test, Holm-adjusted over all level pairs, at alpha 0.05"
)

_ANSWER_COLUMNS = ("process", "step", "question_id", "ask", "kind", "model", "label")
#: Per-row columns read when present.
_ROW_COLUMNS = ("position", "p", "name", "level", "confidence", "in_process_file")
#: Where a label comes from: a review of every verdict (``advisory``) or an audit draw.
_SOURCE_COLUMNS = ("advisory", "audited", "inclusion_p")
#: The process file's settings, the same on every row of a question.
_SETTING_COLUMNS = ("pass_names", "one_of", "pass_level", "levels")

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
    n_audits : int
        Labels among ``n`` decided on audit draws after the switch (only with
        ``after_switch="audits"`` or ``"keep"``).
    left_out : dict
        ``audits``: labels of checks recorded ``advisory: false`` (audit
        draws) left out of the group (``after_switch="leave_out"``).
    selected_sample : bool
        The group holds decisions made after the switch kept whole
        (``after_switch="keep"``): a sample the enforced check selected, so
        its numbers describe that sample, not the check.
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
    n_audits: int = 0
    left_out: dict[str, int] = field(default_factory=lambda: {"audits": 0})
    selected_sample: bool = False

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
        out["n_audits"] = self.n_audits
        out["left_out"] = dict(self.left_out)
        out["selected_sample"] = self.selected_sample
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
    after_switch: str = "leave_out",
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
    after_switch : {"leave_out", "audits", "keep"}, default="leave_out"
        The labels of checks recorded ``advisory: false`` (the frame's
        ``advisory`` column; without it every label is a review). After the
        switch a person sees only what an audit draw offers, among the
        enforced check's own passes (or fails), at probabilities a stratified
        draw makes unequal: not a sample of every submission, so counted
        unweighted beside the reviews they would bend the curve, the ECE and
        the AUROC towards the draw. ``leave_out`` (as the threshold search):
        the curves read the reviews of every verdict, and each result counts
        what it left out in ``left_out["audits"]``. ``audits``: audit-draw
        labels (``audited``) are kept where every label of a curve had one
        inclusion probability (a review counts as 1, an audit its
        ``inclusion_p``), so that the Horvitz-Thompson weights ``1 /
        inclusion_p`` are equal and the unweighted figures are the weighted
        ones; a curve whose labels were drawn at different probabilities is
        refused (weighted bins would need design-based intervals, which
        these are not); other labels after the switch are left out.
        ``keep``: every label is kept (``Filters(escalations=True)``), and a
        group holding labels after the switch is marked ``selected_sample``.

    Returns
    -------
    list of QuestionCalibration
        Ordered by process, step, question position, model, week. Groups with
        no labeled answer are left out (so are their left-out labels).

    Raises
    ------
    UsageError
        An unknown grouping or ``after_switch``; with ``after_switch="audits"``, a curve
        whose labels were drawn at different inclusion probabilities.

    References
    ----------
    .. [1] Horvitz, D. G. and Thompson, D. J. (1952). A generalization of
       sampling without replacement from a finite universe. JASA 47(260),
       663-685.
    """
    check_binning(n_bins, strategy)
    bad = [b for b in by if b not in GROUP_BY]
    if bad:
        raise UsageError(f"cannot group by {', '.join(bad)}: choose from {', '.join(GROUP_BY)}")
    missing = [c for c in _ANSWER_COLUMNS if c not in answers.columns]
    if missing:
        raise ValueError(f"answers frame lacks columns {missing}")
    if after_switch not in AFTER_SWITCH:
        raise UsageError(f"after_switch {after_switch!r}: choose from {', '.join(AFTER_SWITCH)}")
    needed = [*_ANSWER_COLUMNS, *_ROW_COLUMNS, "at", *_SETTING_COLUMNS, *_SOURCE_COLUMNS]
    df = answers.loc[answers["label"].notna(), [c for c in needed if c in answers.columns]].copy()
    if df.empty:
        return []
    df["label"] = df["label"].astype(bool)
    after, left = _after_switch(df, after_switch)
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
    df["__after"], df["__left"] = after, left
    groups = df.groupby(keys, sort=False, dropna=False, observed=True)
    for key, g in groups:  # a loop per group, not per record
        group = dict(zip(keys, key, strict=True))
        kept = g[~g["__left"].to_numpy(bool)]
        if kept.empty:
            continue  # only left-out labels: no curve (the faces count them over the filters)
        if after_switch == "audits":
            _require_one_probability(kept, group)
        q = _one_question(kept, group, opts, settings)
        q.n_audits = int(kept["__after"].sum())
        q.left_out = {"audits": int(g["__left"].sum())}
        q.selected_sample = after_switch == "keep" and q.n_audits > 0
        out.append(q)
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


def _after_switch(df: pd.DataFrame, after_switch: str) -> tuple[np.ndarray, np.ndarray]:
    """Per labeled row: recorded ``advisory: false`` (after the switch), and left out."""
    after = after_switch_labels(df)
    if after_switch == "keep":
        return after, np.zeros(len(df), bool)
    if after_switch == "audits" and "audited" in df.columns:
        audited = df["audited"].astype("boolean").fillna(False).to_numpy(bool)
        return after & audited, after & ~audited
    return np.zeros(len(df), bool), after


def _require_one_probability(g: pd.DataFrame, group: Mapping[str, Any]) -> None:
    """Refuse a curve whose labels were drawn at different inclusion probabilities.

    A review of every verdict was seen with probability 1, an audit label with its draw's
    ``inclusion_p``: only when all are equal do the Horvitz-Thompson weights cancel.
    """
    after = g["__after"].to_numpy(bool)
    if not after.any():
        return
    raw = (
        pd.to_numeric(g["inclusion_p"], errors="coerce").to_numpy(float)
        if "inclusion_p" in g.columns
        else np.full(len(g), np.nan)
    )
    pi = np.where(after, raw, 1.0)
    n_review = int((~after).sum())
    # A draw covers only the verdicts the enforced check let through (its passes, or fails): the
    # other verdicts after the switch had probability 0, so reviews of every verdict and audits
    # never share one population, even at equal probabilities (outside review).
    if not n_review and np.isfinite(pi).all() and pi.max() - pi.min() <= _SAME_P:
        return
    known = pi[after & np.isfinite(pi)]
    drawn = (
        f"{known.min():.3g}" if known.size and np.ptp(known) <= _SAME_P
        else f"{known.min():.3g} to {known.max():.3g}" if known.size
        else "unknown"
    )  # fmt: skip
    reviews = f"1 for {n_review} advisory reviews and " if n_review else ""
    raise UsageError(
        f"--with-audits: the labels of {str(group['process'])!r} / {str(group['step'])!r} "
        f"(model {str(group['model'])!r}, question id {group['question_id']}) were seen with different "
        f"probabilities or frames ({reviews}{drawn} for {int(after.sum())} audit-draw labels, "
        "which cover only the verdicts the draw was taken from): pooled, the curve would be "
        "neither the check's nor the draw's. Read the audits of one uniform draw alone (--since "
        "the switch; the curve is then over that draw's verdicts only), or leave them out (the "
        "default)"
    )


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
    # What the filters kept of the decisions after the switch: all of them with escalations.
    kwargs.setdefault("after_switch", "keep" if filters.escalations else "leave_out")
    columns = [*_ANSWER_COLUMNS, *_ROW_COLUMNS, *_SOURCE_COLUMNS]
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
