"""Calibration: does "the evaluator said 0.9" mean "acceptable 90% of the time"?

A threshold such as ``pass: 0.9`` only means something if a yes-probability of
0.9 is followed by an acceptable submission about 90% of the time. This module
measures that, per question and evaluator model, and fits a monotone map from
the evaluator's number to the observed acceptance probability.

The split follows scikit-learn's calibration module: pure functions compute
(:func:`bin_edges`, :func:`reliability_bins`,
:func:`~calibrate.analysis.reliability.reliability_curve`,
:func:`fit_recalibrator`, :func:`calibrate_answers`) and return result objects
whose ``plot(ax=None)`` draws them through :mod:`calibrate.analysis.calibration_display`, so
the report and the notebooks draw the same figures. Nothing here prints.
This module groups the labeled answers of a store, per question and
evaluator model (and week), into results (:func:`calibrate_answers`,
:func:`calibrate_store`); its parts are
:mod:`~calibrate.analysis.question_calibration` (one question's result, by
kind), :mod:`~calibrate.analysis.reliability` (the curve),
:mod:`~calibrate.analysis.calibration_scores` (bins, ECE/MCE, Brier, log
loss, AUROC, bootstrap), :mod:`~calibrate.analysis.recalibration` (the maps)
and :mod:`~calibrate.analysis.category_rates` (choice and rubric acceptance
rates), the public names of the last three re-exported here.

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
from calibrate.analysis.draw_design import is_audited
from calibrate.analysis.question_calibration import (
    QuestionCalibration,
    choice_calibration,
    rubric_calibration,
    yes_no_calibration,
)
from calibrate.analysis.recalibration import (  # noqa: F401 - re-exported
    LOGIT_EPS,
    METHODS,
    RecalibrationCV,
    Recalibrator,
    fit_recalibrator,
)
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

_ANSWER_COLUMNS = ("process", "step", "question_id", "ask", "kind", "model", "label")
#: Per-row columns read when present.
_ROW_COLUMNS = ("position", "p", "name", "level", "confidence", "in_process_file")
#: Where a label comes from: a review of every verdict (``advisory``) or an audit draw.
_SOURCE_COLUMNS = ("advisory", "audited", "inclusion_p")
#: The process file's settings, the same on every row of a question.
_SETTING_COLUMNS = ("pass_names", "one_of", "pass_level", "levels")

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
        audited = is_audited(df)
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
