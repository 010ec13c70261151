"""The answers path: the learned path's search on every labeled row, its labels predicted.

Below a thousand labels a second path joins the learned one
(:func:`answers_path`): the search of
:func:`calibrate.analysis.learned_path.joint_path` run on every labeled row
with each label replaced by the badness the evaluator's own stated
probabilities predict (:func:`predicted_acceptable`), so its order reads no
label and every label can test it. ``docs/method.md`` says it in words.
"""

from __future__ import annotations

import numpy as np

from calibrate.analysis.learned_options import Cells, option_layout
from calibrate.analysis.learned_path import front_path
from calibrate.analysis.paths import Path
from calibrate.analysis.step_data import StepData
from calibrate.profile import Kind


def _stated_pass(data: StepData, i: int) -> np.ndarray:
    """Per row, the probability the evaluator states that question ``i`` is in its pass state.

    A yes/no question: the yes-probability. A rubric question: its
    confidence when the level is at least today's pass level, else one
    minus it; a choice question the same with today's pass names. A missing
    answer or confidence: 0.5. Answers and today's thresholds only.
    """
    q, ans = data.questions[i], data.answer[i]
    conf = data.confidence[i].astype(float)
    if q.kind is Kind.YES_NO:
        stated = ans.astype(float)
    elif q.kind is Kind.RUBRIC:
        stated = np.where(ans.astype(float) >= q.pass_level, conf, 1.0 - conf)
    else:
        stated = np.where(np.isin(ans, list(q.pass_names)), conf, 1.0 - conf)
    return np.clip(np.nan_to_num(np.asarray(stated, float), nan=0.5), 0.0, 1.0)


def _geometric_mean(parts: list[np.ndarray]) -> np.ndarray:
    return np.exp(np.log(np.maximum(np.vstack(parts), 1e-12)).mean(axis=0))


def predicted_acceptable(data: StepData) -> np.ndarray:
    """Per labeled row, how acceptable the evaluator's own answers say it is (no label read).

    The geometric mean over the questions of the stated probability that
    each is in its pass state under today's thresholds (:func:`_stated_pass`):
    between the product (the questions independent) and the least of them,
    it neither drowns three questions' doubts in one another nor reads only
    the worst.

    Parameters
    ----------
    data : StepData
        A step whose questions' thresholds are known (:func:`answers_path_applies`).

    Returns
    -------
    numpy.ndarray
        One number in [0, 1] per labeled row.
    """
    return _geometric_mean([_stated_pass(data, i) for i in range(len(data.questions))])


def _name_order(data: StepData) -> np.ndarray | None:
    """Per row, what orders a relearned choice list without labels: the other questions' verdict.

    The geometric mean of the yes/no and rubric questions' stated pass
    probabilities, so a name given where the rest looks bad ranks low; ``None``
    when every question is a choice.
    """
    parts = [
        _stated_pass(data, i)
        for i, q in enumerate(data.questions)
        if q.kind in (Kind.YES_NO, Kind.RUBRIC)
    ]
    return _geometric_mean(parts) if parts else None


def answers_path_applies(data: StepData) -> bool:
    """Whether :func:`answers_path` can run: several questions, each one's pass state known.

    Today's thresholds say which state of a choice or rubric question passes, so the
    stated probabilities predict a verdict (:func:`predicted_acceptable`); a yes/no
    question's pass state is its yes, whatever its thresholds.

    Parameters
    ----------
    data : StepData

    Returns
    -------
    bool
    """
    return len(data.questions) > 1 and all(
        k or q.kind is Kind.YES_NO for q, k in zip(data.questions, data.known, strict=True)
    )


def answers_path(
    data: StepData, *, alpha: float, delta: float, beta: float, relearn_lists: bool
) -> Path:
    """A path ordered by the answers alone, counted on every labeled row.

    The search of :func:`calibrate.analysis.learned_path.joint_path` (the
    Lagrangian's candidates, their one-question deviations, the front by
    risk) run on every labeled row with each row's label replaced by its
    predicted badness, one minus
    :func:`predicted_acceptable`; a relearned choice list is ordered by the
    other questions' stated probabilities instead of the labels. So the path
    and its order read answers and counts only, never a label, and every
    label can test it: the fixed-sequence walk on it holds at ``delta`` as a
    path fixed before the labels does. Where the evaluator's probabilities
    mean what they say, the path is ordered as well as a learned one and
    tested on twice the labels; where they do not, it orders badly and
    certifies little, and the learned path beside it
    (:func:`calibrate.analysis.threshold_search.find_thresholds`) still runs.

    Parameters
    ----------
    data : StepData
        Every labeled row; :func:`answers_path_applies` must hold.
    alpha, delta, beta : float
        The limits, and this path's share of the level.
    relearn_lists : bool
        Choice lists searched too (their names ordered as above).

    Returns
    -------
    Path
        A joint path with its configurations, its counts on every labeled row.
    """
    key = ("answers", relearn_lists)
    if key not in data.cache:
        every = np.arange(data.n)
        order_by = _name_order(data) if relearn_lists else None
        layout = option_layout(data, every, relearn_lists=relearn_lists and order_by is not None,
                         order_by=order_by)  # fmt: skip
        bad = 1.0 - predicted_acceptable(data)
        data.cache[key] = (layout, Cells.predicted(layout, bad, data.forced_unsure))
    layout, cells = data.cache[key]
    return front_path(data, layout, cells, data, alpha=alpha, delta=delta, beta=beta, scale=1.0)
