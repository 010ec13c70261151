"""The threshold search over many steps: per step, from DataFrames or from a store.

:func:`search_step` runs :func:`~calibrate.analysis.threshold_search.find_thresholds`
on one step's checks and answers and, when nothing is certified for lack of
labels, attaches the labels-needed estimate (:func:`with_needed`).
:func:`suggest_thresholds` and :func:`suggest_from_store` run it for every
checked step and gather the results in a :class:`ThresholdsReport`, whose
``to_dict()`` is the JSON of ``calibrate thresholds``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from calibrate.analysis.needed import DEFAULT_PROBABILITY, DEFAULT_SHARE, estimate_needed
from calibrate.analysis.step_data import (
    SEARCH_ANSWER_COLUMNS,
    SEARCH_CHECK_COLUMNS,
    latest_model,
    read_columns,
    step_data,
    store_step_answers,
)
from calibrate.analysis.threshold_result import StepThresholds
from calibrate.analysis.threshold_search import find_thresholds, validate_limits
from calibrate.defaults import (
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    DEFAULT_DELTA,
    MIN_DECIDED,
    NEEDED_MIN_LABELS,
)
from calibrate.profile import Limits, Question

__all__ = [
    "ThresholdsReport", "search_step", "suggest_from_store", "suggest_thresholds", "with_needed",
]  # fmt: skip


def search_step(
    subs: pd.DataFrame,
    answers: pd.DataFrame,
    *,
    questions: Sequence[Question] = (),
    alpha: float = DEFAULT_ALPHA,
    delta: float = DEFAULT_DELTA,
    beta: float = DEFAULT_BETA,
    model: str | None = None,
    limits: Limits | None = None,
    relearn_lists: bool = False,
    search_fraction: float | None = None,
    seed: int = 0,
    needed_share: float | None = DEFAULT_SHARE,
    needed_probability: float = DEFAULT_PROBABILITY,
    keep_after_switch: bool = False,
) -> StepThresholds:
    """Search one step's checks and answers: :func:`~calibrate.analysis.step_data.step_data`, then :func:`find_thresholds`.

    Labels of checks recorded with ``advisory: false`` (audit draws) are left
    out of the certification unless ``keep_after_switch``
    (:func:`calibrate.analysis.step_data.after_switch_labels`).

    When nothing is certified for lack of labels, the labels needed are
    estimated by rerunning the search on resampled data
    (:func:`calibrate.analysis.needed.estimate_needed`): the smallest total
    at which it certifies a check deciding at least ``needed_share`` alone in
    ``needed_probability`` of the resamples (or ``unattainable`` when no
    total up to the cap does). ``needed_share=None`` skips the estimate.
    The search prefers candidates deciding ``needed_share`` alone (default
    :data:`~calibrate.defaults.MIN_DECIDED` when it is ``None``).
    """
    data = step_data(
        subs, answers, questions=questions, model=model, limits=limits,
        keep_after_switch=keep_after_switch,
    )  # fmt: skip
    result = find_thresholds(
        data, alpha=alpha, delta=delta, beta=beta, relearn_lists=relearn_lists,
        search_fraction=search_fraction, seed=seed,
        min_decided=MIN_DECIDED if needed_share is None else needed_share,
    )  # fmt: skip
    if needed_share is not None and result.status == "insufficient_data":
        with_needed(result, share=needed_share, probability=needed_probability)
    return result


def with_needed(
    result: StepThresholds,
    *,
    share: float = DEFAULT_SHARE,
    probability: float = DEFAULT_PROBABILITY,
) -> StepThresholds:
    """Attach the labels-needed estimate to an ``insufficient_data`` result (in place; returned).

    Below :data:`calibrate.defaults.NEEDED_MIN_LABELS` labeled checks there is
    no estimate (``needed_labels`` stays ``None``) and a note says why.

    When no total up to the cap reaches ``probability``, the estimate's own
    status is ``unattainable`` (``total`` null) and a note says so; the
    step's status stays ``insufficient_data`` (it reads only what grows with
    alpha).
    """
    if result.status != "insufficient_data" or result.data is None:
        return result
    if result.n_labeled < NEEDED_MIN_LABELS:
        result.notes.append(
            f"too few labels ({result.n_labeled}) to estimate how many are needed: resamples of so "
            f"few rows only repeat them; label at least {NEEDED_MIN_LABELS} checks first"
        )
        return result
    s = result.settings
    est = estimate_needed(
        result.data, alpha=result.alpha, delta=result.delta, beta=result.beta, share=share,
        probability=probability, seed=s.get("seed", 0), result=result,
        relearn_lists=s.get("relearn_lists", False),
    )  # fmt: skip
    result.needed_labels = est
    if est is not None and est.total is None:
        result.notes.append(est.sentence())
    return result


@dataclass
class ThresholdsReport:
    """The search over every checked step: ``to_dict()`` is the JSON of ``calibrate thresholds``."""

    alpha: float
    delta: float
    beta: float
    steps: list[StepThresholds]

    def to_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "delta": self.delta,
            "beta": self.beta,
            "steps": [s.to_dict() for s in self.steps],
        }


def suggest_thresholds(
    subs: pd.DataFrame,
    answers: pd.DataFrame,
    *,
    questions: Mapping[tuple[str, str], Sequence[Question]] | None = None,
    alpha: float = DEFAULT_ALPHA,
    delta: float = DEFAULT_DELTA,
    beta: float = DEFAULT_BETA,
    model: str | None = None,
    limits: Limits | None = None,
    relearn_lists: bool = False,
    search_fraction: float | None = None,
    seed: int = 0,
    keep_after_switch: bool = False,
) -> ThresholdsReport:
    """Run :func:`search_step` for every (process, step) in ``subs``, each on its latest model.

    Parameters
    ----------
    subs, answers : pandas.DataFrame
        As :func:`calibrate.dataset.submissions` / :func:`calibrate.dataset.answers`
        (all checks, labeled or not: the latest model is read from them).
    questions : mapping, optional
        ``{(process, step): [Question, ...]}`` from
        :func:`calibrate.dataset.process_questions`: today's thresholds, the
        ``current`` figures' and the starting point of a fixed path.
    alpha : float, default=:data:`calibrate.defaults.DEFAULT_ALPHA`
        Limit on the false-pass rate, in (0, 1).
    delta : float, default=:data:`calibrate.defaults.DEFAULT_DELTA`
        The certificate may fail with probability at most ``delta``, in (0, 1).
    beta : float, default=:data:`calibrate.defaults.DEFAULT_BETA`
        Limit on the false-fail rate, in (0, 1]; ``1`` leaves false fails uncontrolled.
    model : str, optional
        Search this evaluator model's checks; default each step's latest model
        (models are never pooled).
    limits : Limits, optional
        The store's limits (:func:`calibrate.dataset.limits`): a rubric's scale, say.
    relearn_lists : bool, default=False
        Relearn the ``pass``/``unsure`` lists of choice questions instead of
        keeping the process file's.
    search_fraction : float, optional
        Share of the labels that learns the path when it must be learned, in (0, 1);
        default :func:`~calibrate.analysis.threshold_search.search_share`.
    seed : int, default=0
        Seed of the split and of the labels-needed resamples.
    keep_after_switch : bool, default=False
        Keep labels of checks recorded with ``advisory: false`` (see :func:`search_step`).

    Returns
    -------
    ThresholdsReport
        The levels and one :class:`~calibrate.analysis.threshold_result.StepThresholds`
        per (process, step), sorted; ``to_dict()`` is the JSON of
        ``calibrate thresholds --format json`` (docs/formats.md).

    Raises
    ------
    UsageError
        A ``ValueError``: ``alpha`` or ``delta`` outside (0, 1), ``beta`` outside (0, 1].
    """
    validate_limits(alpha, delta, beta)

    def step_answers(process: Any, step: Any, _checks: pd.DataFrame) -> pd.DataFrame:
        if answers.empty:
            return answers
        return answers[(answers["process"] == process) & (answers["step"] == step)]

    return _search_steps(
        subs, step_answers, questions=questions or {}, alpha=alpha, delta=delta, beta=beta,
        model=model, limits=limits, relearn_lists=relearn_lists, search_fraction=search_fraction,
        seed=seed, keep_after_switch=keep_after_switch,
    )  # fmt: skip


def _search_steps(
    subs: pd.DataFrame,
    step_answers: Any,
    *,
    questions: Mapping[tuple[str, str], Sequence[Question]],
    alpha: float,
    delta: float,
    beta: float,
    **kwargs: Any,
) -> ThresholdsReport:
    """:func:`search_step` per (process, step) of ``subs``; ``step_answers(process, step, checks)`` gives its answers."""
    steps = []
    if not subs.empty:
        for (process, step), s in subs.groupby(
            ["process", "step"], sort=True, dropna=False, observed=True
        ):
            steps.append(
                search_step(
                    s,
                    step_answers(process, step, s),
                    questions=questions.get((process, step), ()),
                    alpha=alpha,
                    delta=delta,
                    beta=beta,
                    **kwargs,
                )  # fmt: skip
            )
    return ThresholdsReport(alpha, delta, beta, steps)


def suggest_from_store(con: Any, filters: Any = None, **kwargs: Any) -> ThresholdsReport:
    """Read a store through :mod:`calibrate.dataset` and run the search of :func:`suggest_thresholds`.

    Reads only the columns the search needs, and the answers one step at a time.
    Each enforced step whose monitor alarms at these limits says so
    (``monitor_alarm`` and a note).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        An open store (:func:`calibrate.store.connect`; read-only is enough).
    filters : Filters, optional
        Which checks: process, step, model, window; ``escalations`` (``--with-escalations``)
        sets ``keep_after_switch``. Default every check.
    **kwargs
        The keywords of :func:`suggest_thresholds` (``alpha``, ``delta``, ``beta``,
        ``model``, ``relearn_lists``, ``search_fraction``, ``seed``,
        ``keep_after_switch``); ``questions`` and ``limits`` are the store's.

    Returns
    -------
    ThresholdsReport
        As :func:`suggest_thresholds`; ``to_dict()`` equals
        ``calibrate thresholds --format json`` on the same store and options.

    Raises
    ------
    UsageError
        A ``ValueError``: a level out of range (as :func:`suggest_thresholds`), or
        ``filters`` naming a process, step or model the store lacks (naming those it has).
    """
    from calibrate.dataset import Filters, answers, limits, process_questions

    filters = filters or Filters()
    # --with-escalations keeps every decision after the switch, audits included.
    kwargs = {"alpha": DEFAULT_ALPHA, "delta": DEFAULT_DELTA, "beta": DEFAULT_BETA,
              "keep_after_switch": bool(filters.escalations), **kwargs}  # fmt: skip
    validate_limits(kwargs["alpha"], kwargs["delta"], kwargs["beta"])
    subs = read_columns(con, "labeled", SEARCH_CHECK_COLUMNS, filters)
    qs = process_questions(con, filters.process, filters.step)

    def step_answers(process: Any, step: Any, checks: pd.DataFrame) -> pd.DataFrame:
        # Only the searched model's answers are read: the search looks at no other.
        model = kwargs.get("model") or latest_model(checks)
        rows = store_step_answers(con, filters, process, step, SEARCH_ANSWER_COLUMNS,
                                  labeled_only=True, model=model)  # fmt: skip
        if not qs.get((process, step)) and rows["in_process_file"].any():
            # Today's questions come from the rows' thresholds: every column is needed.
            rows = answers(con, replace(filters, process=process, step=step), labeled_only=True)
        return rows

    report = _search_steps(subs, step_answers, questions=qs, limits=limits(con), **kwargs)
    _read_monitor(con, report, filters)
    return report


def _read_monitor(con: Any, report: ThresholdsReport, filters: Any) -> None:
    """Mark each enforced step whose monitor alarms at the report's limits (``monitor_alarm``).

    The search reads the labels of the advisory window; an alarm says the audits of the
    enforced check contradict them (the work moved, or the check did), so what they certify
    is about work that is no longer today's (black-box run: `thresholds` certified and
    loosened an alarmed check, 11.1% false passes in 434 audits, without a word).
    """
    from calibrate.analysis.monitor import monitor_store

    until = getattr(filters, "until", None)
    for s in report.steps:
        if s.status == "selected_sample":
            continue
        monitored = monitor_store(
            con, process=s.process, step=s.step, alpha=report.alpha, beta=report.beta,
            delta=report.delta, until=until,
        ).steps  # fmt: skip
        alarms = [m for m in monitored if m.status == "alarm"]
        if alarms:
            why = "; ".join(w for m in alarms for w in m.warnings[:1])
            s.monitor_alarm = why
            s.notes.append(
                f"the monitor alarms on the enforced check ({why}): these labels predate what the "
                "audits show; return the step to advisory and collect new labels before changing "
                "its thresholds"
            )
