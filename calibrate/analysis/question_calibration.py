"""The calibration of one question, by kind: its curve, its map and its answers' acceptance.

A yes/no question's yes-probability against the label
(:func:`yes_no_calibration`); a choice or rubric question's confidence
against whether its call was right, with the acceptance rate per answer name
or level (:func:`choice_calibration`, :func:`rubric_calibration`). The result
of one group is a :class:`QuestionCalibration`;
:mod:`calibrate.analysis.calibration` groups a store's answers into them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis.category_rates import (
    MONOTONE_ALPHA,
    category_rates,
    learn_pass_level,
    learn_pass_names,
    non_monotone_levels,
)
from calibrate.analysis.plain import num as _num
from calibrate.analysis.recalibration import Recalibrator, fit_recalibrator
from calibrate.analysis.reliability import ReliabilityCurve, reliability_curve
from calibrate.analysis.stats import MIN_N
from calibrate.defaults import DEFAULT_BINS, DEFAULT_N_BOOT, DEFAULT_SEED

MONOTONE_RULE = (
    "a level is flagged when its acceptance rate is lower than a lower level's by a "
    "one-sided Fisher exact test, Holm-adjusted over all level pairs, at alpha 0.05"
)


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
