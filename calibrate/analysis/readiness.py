"""Can ``advisory`` be dropped? A decision per checked step, with every criterion behind it.

For each checked step and its current evaluator model the decision is one of

* ``READY``: drop ``advisory`` with the suggested thresholds;
* ``NOT_YET``: the evidence points the right way but is too thin: keep
  collecting, and here is how many more labeled checks (and how many
  days or weeks at the step's recent volume) the bound needs;
* ``NO``: even with plenty of data the check cannot reach ``alpha`` with
  useful coverage, or it drifted, or the evaluator model changed mid-window,
  or the evaluator errs or is truncated too often: say which, and which
  questions drive the disagreements.

This module reads a store and coordinates (:func:`assess_store`,
:func:`search_thresholds`, :func:`read_step_inputs`). The parts, each pure
over the DataFrames of :func:`calibrate.dataset.submissions` and
:func:`calibrate.dataset.answers`:

* :mod:`calibrate.analysis.step_readiness`: one step's decision
  (:func:`assess_step`);
* :mod:`calibrate.analysis.readiness_result`: that decision with its
  evidence and its JSON face (:class:`StepReadiness`);
* :mod:`calibrate.analysis.enforced_step`: an enforced step
  (:class:`Enforcement`), kept so or returned to advisory;
* :mod:`calibrate.analysis.readiness_criteria`: the criteria one step's
  decision reads, each a value against its limit;
* :mod:`calibrate.analysis.readiness_decision`: the criterion
  (:class:`Criterion`), the decision the criteria force and the reasons in words;
* :mod:`calibrate.analysis.approval_pattern`: what to do with an advisory
  step's approval (replace it, pre-screen it, keep approving);
* :mod:`calibrate.analysis.observed_rates`: the rates observed on the labeled
  checks (recorded, replayed, without flagged approvers);
* :mod:`calibrate.analysis.step_evidence`: replay, disagreement drivers, model
  change, volume and work saved, labels needed by the exact bound;
* :mod:`calibrate.analysis.threshold_view`: what readiness reads of a
  threshold search (:class:`ThresholdView`).

Their public names are re-exported here. Nothing prints and nothing draws;
:mod:`calibrate.report.render` does that. The limits are fields of
:class:`calibrate.defaults.ReadinessOptions` with documented defaults.

References
----------
.. [1] Agresti, A. (2013). Categorical Data Analysis, 3rd ed., §3.1 (the
   two-proportion z test) and §3.5 (Fisher's exact test). Wiley.
.. [2] Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or
   fiducial limits illustrated in the case of the binomial. Biometrika 26(4),
   404-413.
.. [3] Angelopoulos, A. N., Bates, S., Candès, E. J., Jordan, M. I. and Lei, L.
   (2021). Learn then Test: calibrating predictive algorithms to achieve risk
   control. arXiv:2110.01052.
.. [4] Goddard, K., Roudsari, A. and Wyatt, J. C. (2012). Automation bias: a
   systematic review of frequency, effect mediators, and mitigators. JAMIA
   19(1), 121-127.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from calibrate.analysis.audit_fixed import (  # noqa: F401 - re-exported: the fixed-sample audit
    AUDIT_METHOD,
    AuditPlan,
    audit_plan,
    audit_sample_size,
)
from calibrate.analysis.drift import (  # noqa: F401 - re-exported
    DRIFT_METHOD,
    Drift,
    DriftTest,
    drift_test,
    one_sided_increase,
)
from calibrate.analysis.enforced_step import Enforcement, enforced_pattern  # noqa: F401 - re-exported
from calibrate.analysis.monitor import MonitorReport, monitor_store
from calibrate.analysis.needed import NeededLabels
from calibrate.analysis.readiness_decision import DECISIONS, Criterion  # noqa: F401 - re-exported
from calibrate.analysis.readiness_result import StepReadiness  # noqa: F401 - re-exported
from calibrate.analysis.step_data import (
    isin,
)
from calibrate.analysis.step_evidence import (  # noqa: F401 - re-exported
    ModelChange,
    Volume,
    detect_model_change,
    disagreement_drivers,
    hours_saved_per_month,
    labels_needed,
    recent_volume,
    replay,
)
from calibrate.analysis.step_readiness import (  # noqa: F401 - re-exported
    assess_step,
    current_wording,
    questions_from_answers,
)
from calibrate.analysis.threshold_view import (  # noqa: F401 - re-exported
    ThresholdView,
    check_items,
    suggested_questions,
)
from calibrate.defaults import DEFAULT_N_BOOT, ReadinessOptions
from calibrate.profile import Question
from calibrate.textsafe import NO_MODEL, NO_PROCESS, NO_STEP, shown_name, step_name

# --------------------------------------------------------------------------- the store


@dataclass
class ReadinessReport:
    """Every step's decision, with what produced it (the content of report.json)."""

    generated_at: str
    store: str
    options: ReadinessOptions
    filters: dict[str, Any]
    steps: list[StepReadiness]
    notes: list[str] = field(default_factory=list)
    #: ``calibrate monitor`` on the enforced steps (:class:`~calibrate.analysis.monitor.MonitorReport`).
    since_switch: MonitorReport | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{generated_at, store, options, steps: [...]}`` (see ``report.schema.json``)."""
        return {
            "generated_at": self.generated_at,
            "store": self.store,
            "options": self.options.to_dict() | {"filters": self.filters},
            # Each step with the threshold search's notes, one string a note (its thresholds part).
            "steps": [
                s.to_dict() | {"threshold_notes": list(s.thresholds.notes)} for s in self.steps
            ],
            "notes": list(self.notes),
            "since_the_switch": [s.to_dict() for s in self.since_switch.steps]
            if self.since_switch is not None
            else [],
        }


def approve_steps(con: Any) -> set[tuple[str, str]]:
    """(process, step) pairs whose decisions came from an ``approve`` step."""
    rows = con.execute(
        "SELECT DISTINCT process, step FROM decisions WHERE source = 'approve step'"
    ).fetchall()
    return {(str(p), str(s)) for p, s in rows}


#: Columns :func:`assess_store` reads: of the checks, and of the answers (thresholds per question).
REPORT_CHECK_COLUMNS = ("check_id", "process", "step", "verdict", "advisory", "model", "at",
                        "truncated", "is_latest", "decided_by", "decided_at", "label", "conflict",
                        "audited", "inclusion_p")  # fmt: skip
REPORT_ANSWER_COLUMNS = ("check_id", "process", "step", "model", "at", "label", "position",
                         "question_id", "ask", "kind", "p", "name", "level", "confidence", "result",
                         "in_process_file", "advisory")  # fmt: skip
#: The report's note when no checked step has a check under its filters (an empty window).
NO_STEPS = "No checked step has a check under these filters: nothing to decide."


def assess_store(
    con: Any,
    filters: Any = None,
    *,
    options: ReadinessOptions | None = None,
    alpha: float | None = None,
    delta: float | None = None,
    beta: float | None = None,
    store: str = "",
    n_boot: int = DEFAULT_N_BOOT,
    now: datetime | None = None,
    with_calibration: bool = True,
) -> ReadinessReport:
    """Assess every checked step in a store (read-only is enough).

    Reads the checks and answers through :mod:`calibrate.dataset` with the
    shared ``filters``, runs the threshold search and the calibration per step
    on its current model and wording, and calls :func:`assess_step`.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    filters : calibrate.dataset.Filters, optional
    options : ReadinessOptions, optional
        Every setting of the assessment (``calibrate.ReadinessOptions()`` by default).
    alpha, delta, beta : float, optional
        The guarantee's levels, overriding those of ``options``: false passes
        at most ``alpha``, false fails at most ``beta``, each bound failing
        with probability at most ``delta``.
    store : str, optional
        The store's name, recorded in the report; by default the file ``con``
        has open (``:memory:`` for a store in memory).
    n_boot : int, default=:data:`calibrate.defaults.DEFAULT_N_BOOT`
        Bootstrap resamples for the calibration error intervals.
    now : datetime, optional
        The report's time stamp (default: now, UTC).
    with_calibration : bool, default=True
        ``False`` leaves the calibration curves out (several times faster; no decision
        rests on them): the notebooks' :func:`calibrate.notebook_support.assess_steps`.

    Returns
    -------
    ReadinessReport
        Steps sorted READY first, then by hours of review saved.
    """
    from calibrate.analysis.calibration import calibrate_answers
    from calibrate.dataset import Filters, left_out_counts, question_settings, step_advisory

    opts = options or ReadinessOptions()
    levels = {
        k: v for k, v in (("alpha", alpha), ("delta", delta), ("beta", beta)) if v is not None
    }
    if levels:
        opts = replace(opts, **levels)
    if not store:
        row = con.execute(
            "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchone()
        store = (row[0] if row else None) or ":memory:"
    filters = filters or Filters()
    settings = question_settings(con)
    # The same names as the rest of the report (--model). --until reads the monitor as it stood
    # then; --since only cuts the e-process paths shown: the tests run from the switch.
    since = monitor_store(
        con, process=filters.process, step=filters.step, alpha=opts.alpha, beta=opts.beta,
        delta=opts.delta, plan_weeks=opts.audit_weeks, model=filters.model,
        since=filters.since, until=filters.until,
    )  # fmt: skip
    advisory = step_advisory(con)
    steps: list[StepReadiness] = []
    notes: list[str] = []
    for inp in read_step_inputs(con, filters):
        name = step_name(inp.process, inp.step, sep="/")
        enforcement = _enforcement(since, advisory, inp)
        # The verdict on a check in force rests on the reviews of every verdict and the monitor:
        # labels the enforced check itself selected or drew (--with-escalations) would turn a
        # stable step's KEEP ENFORCED into RETURN TO ADVISORY on a sample that estimates nothing
        # (outside review D6). There the flag is set aside, and said so.
        keep = filters.escalations and enforcement is None
        if filters.escalations and not keep:
            notes.append(
                f"{name}: enforced, so --with-escalations does not apply to it: its verdict and "
                "figures rest on the reviews of every verdict (advisory: true), as without the "
                "flag; the labels after the switch are the monitor's (Since the switch)"
            )
        tv = search_thresholds(inp.subs_current, inp.answers_current, questions=inp.questions,
                               options=opts, limits=inp.limits,
                               keep_after_switch=keep)  # fmt: skip
        if tv.status == "selected_sample":
            notes.append(
                f"{name}: the labels after the switch kept by --with-escalations feed the "
                "threshold search alone; every observed rate (the criteria, today's row, the "
                "per-question table, approvers, automation bias) is over the reviews of every "
                "verdict (advisory: true): the enforced check selected or drew the others, and a "
                "rate over them estimates nothing"
            )
        calib = (
            calibrate_answers(
                inp.answers_current,
                n_boot=n_boot,
                settings=settings,
                after_switch="keep" if keep else "leave_out",
            )
            if with_calibration and inp.answers_current["label"].notna().any()
            else []
        )
        steps.append(
            assess_step(
                inp.subs,
                inp.answers,
                thresholds=tv,
                questions=inp.questions,
                options=opts,
                has_approve_step=inp.has_approve_step,
                calibration=calib,
                enforcement=enforcement,
                keep_after_switch=keep,
                limits=inp.limits,
            )  # fmt: skip
        )
        # Decisions after the switch that no audit drew: not a sample of the check, left out
        # and counted, escalations apart from decisions on undrawn enforced passes and fails.
        left = left_out_counts(con, replace(filters, process=inp.process, step=inp.step))
        steps[-1].left_out["escalations_after_switch"] = left["escalations"]
        steps[-1].left_out["undrawn_after_switch"] = left["undrawn"]
        # Audit labels: the monitor's, not the certification's (step_data._audit_labels).
        searched = getattr(tv.raw, "left_out", None)
        steps[-1].left_out["audits_after_switch"] = int((searched or {}).get("audits", 0))
        # One entry a note: a note may hold "; ", so joined ones could not be split apart.
        notes += [f"{name}: {n}" for n in tv.notes]
    if filters.since is not None and since.steps:
        notes.append(
            "Since the switch: the monitor's tests, status and counts run over every audit "
            "since the switch whatever --since (a window would restart the test at each "
            "report); --since only cuts the e-value path shown."
        )
    if not steps:
        notes.append(NO_STEPS)
    steps.sort(key=lambda r: r.sort_key)
    stamp = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    return ReadinessReport(
        stamp, store, opts, _filters_dict(filters), steps, notes, since_switch=since
    )


def _enforcement(
    monitor: MonitorReport, advisory: Mapping[tuple[str, str], bool], inp: StepInputs
) -> Enforcement | None:
    """The step's enforcement in the window, unless its process file put ``advisory: true`` back.

    Of several monitored models an alarm wins (a new model on an enforced step
    alarms), then the step's current model.
    """
    in_file = advisory.get((inp.process, inp.step))
    if in_file is True:
        return None  # returned to advisory: whether to drop it is the question again
    mine = [m for m in monitor.steps if (m.process, m.step) == (inp.process, inp.step)]
    if not mine:
        return None
    models = inp.subs_current["model"].dropna() if "model" in inp.subs_current else []
    current = str(models.iloc[0]) if len(models) else None
    mine.sort(key=lambda m: (m.status != "alarm", m.model != current))
    return Enforcement(mine[0], in_process_file=None if in_file is None else not in_file)


@dataclass(frozen=True)
class StepInputs:
    """What :func:`assess_store` reads for one checked step, before any limit is applied.

    ``subs`` and ``answers`` hold the step's checks and answers (every model;
    answers of the current model only); ``subs_current`` and
    ``answers_current`` the current model and wording, which the threshold
    search reads. Rerunning :func:`search_thresholds` and :func:`assess_step`
    on these at other limits gives the report's decision at those limits.
    """

    process: str
    step: str
    subs: pd.DataFrame
    answers: pd.DataFrame
    subs_current: pd.DataFrame
    answers_current: pd.DataFrame
    questions: list[Question]
    has_approve_step: bool
    limits: Any


def read_step_inputs(con: Any, filters: Any = None) -> Iterator[StepInputs]:
    """The inputs of each checked step in a store, one step at a time (see :class:`StepInputs`)."""
    from calibrate.analysis.step_data import read_columns, share_check_codes, store_step_answers
    from calibrate.dataset import Filters, process_questions
    from calibrate.dataset import answers as read_answers
    from calibrate.dataset import limits as read_limits

    filters = filters or Filters()
    # Only the columns the assessment reads, text as categoricals, and the answers one step at
    # a time: every column of every answer as Python objects took 8 GiB at a million runs.
    subs = read_columns(con, "labeled", REPORT_CHECK_COLUMNS, filters)
    questions = process_questions(con)
    server_limits = read_limits(con)
    approvals = approve_steps(con)
    for (process, step), s in subs.groupby(
        ["process", "step"], sort=True, dropna=False, observed=True
    ):
        qs = questions.get((process, step), [])
        change = detect_model_change(s)
        # Only the current model's answers: the assessment reads no other model's.
        a = store_step_answers(con, filters, process, step, REPORT_ANSWER_COLUMNS,
                               labeled_only=False, model=change.current)  # fmt: skip
        if not qs and a["in_process_file"].any():
            # Today's questions come from the rows' thresholds: every column is needed.
            a = read_answers(con, replace(filters, process=process, step=step))
        a, s = share_check_codes(a, s)
        model_col = s["model"].astype(object).where(s["model"].notna(), NO_MODEL)
        s_cur = s[(model_col == change.current).to_numpy()]
        a_cur = a[isin(a["check_id"], s_cur["check_id"])]
        keep = current_wording(s_cur, a_cur, qs)
        s_cur = s_cur[keep.to_numpy(dtype=bool)]
        a_cur = a_cur[isin(a_cur["check_id"], s_cur["check_id"])]
        # A check recorded without a process is its own group, named so (str(NaN) read "nan").
        process, step = shown_name(process, NO_PROCESS), shown_name(step, NO_STEP)
        yield StepInputs(process, step, s, a, s_cur, a_cur, list(qs),
                         (process, step) in approvals, server_limits)  # fmt: skip


def search_thresholds(
    subs: pd.DataFrame,
    answers: pd.DataFrame,
    *,
    questions: Sequence[Question],
    options: ReadinessOptions,
    limits: Any = None,
    keep_after_switch: bool = False,
) -> ThresholdView:
    """Run the certified threshold search (issue 5) on one step's current model and wording.

    Calls :func:`calibrate.analysis.threshold_steps.search_step` with the
    options' ``alpha``, ``delta`` and ``beta``; the trade-off display is
    built only when a face asks for it (it reruns the search per alpha).
    """
    from calibrate.analysis.threshold_steps import search_step

    usable = answers["label"].notna().to_numpy() & isin(answers["check_id"], subs["check_id"])
    if not usable.any():
        # Nothing labeled was answered (no labels yet, or only error verdicts): nothing to search.
        qs = list(questions) or questions_from_answers(answers, limits)
        return ThresholdView(
            "insufficient_data", check_items(qs), None, {}, {}, n_labeled=0,
            notes=["no labeled answers on the current model and wording: nothing to search"],
        )  # fmt: skip
    result = search_step(
        subs, answers, questions=list(questions), alpha=options.alpha, delta=options.delta,
        beta=options.beta, limits=limits, needed_share=options.min_coverage,
        keep_after_switch=keep_after_switch,
    )  # fmt: skip
    return _view_of(result)


def _view_of(result: Any) -> ThresholdView:
    """A :class:`ThresholdView` of a search result (``to_dict()`` in issue 5's shape)."""
    if isinstance(result, ThresholdView):
        return result
    doc = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    factory = getattr(result, "tradeoff_display", None)
    view = ThresholdView.from_mapping(
        doc, display_factory=factory if callable(factory) else None, raw=result
    )
    estimate = getattr(result, "needed_labels", None)
    if isinstance(estimate, NeededLabels):
        view.needed = estimate  # the object itself: it knows today's labels when total is null
    return view


def _filters_dict(filters: Any) -> dict[str, Any]:
    out = {}
    for key in ("process", "step", "model", "since", "until", "advisory_only", "escalations"):
        value = getattr(filters, key, None)
        out[key] = value.isoformat() if isinstance(value, datetime) else value
    return out
