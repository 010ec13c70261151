"""The decision for one checked step: :func:`assess_step`, which builds a :class:`~calibrate.analysis.readiness_result.StepReadiness`.

The evidence for a step is its **current evaluator model** (the model of its
latest check) and its **current question wording** (the questions of the
ingested process file, else those of the latest check): thresholds learnt on
one model or wording say nothing about another, so nothing is pooled. Checks
left out are counted and said. An enforced step (``advisory: false``) is
weighed with its monitor (:class:`Enforcement`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis import agreement as agreement_mod
from calibrate.analysis import approvers as approvers_mod
from calibrate.analysis.approval_pattern import approval_pattern
from calibrate.analysis.audit import SequentialAuditPlan, plan_audit
from calibrate.analysis.audit_fixed import AuditPlan, audit_plan
from calibrate.analysis.drift import drift_test
from calibrate.analysis.enforced_step import Enforcement, judge_enforced
from calibrate.analysis.needed import NeededLabels, best_observed_coverage, coverage_denominator
from calibrate.analysis.observed_rates import (
    automation_bias,
    recorded_rates,
    replayed_rates,
    replayed_verdicts,
)
from calibrate.analysis.plain import num as _num
from calibrate.analysis.rate import Rate
from calibrate.analysis.readiness_criteria import distrusts_evaluator, step_criteria
from calibrate.analysis.readiness_decision import capital, decide_readiness, needed_text
from calibrate.analysis.readiness_result import StepReadiness
from calibrate.analysis.stats import measurably_above
from calibrate.analysis.step_data import (
    after_switch_labels,
    answer_rows,
    category_codes,
    distinct_pairs,
    isin,
    latest_questions,
)
from calibrate.analysis.step_evidence import (
    ModelChange,
    Volume,
    detect_model_change,
    disagreement_drivers,
    hours_saved_per_month,
    labels_needed,
    recent_volume,
)
from calibrate.analysis.threshold_view import ThresholdView, check_items, suggested_questions
from calibrate.defaults import RECERTIFY_MIN_LABELS, ReadinessOptions
from calibrate.profile import FAIL, PASS, UNSURE, Limits, Question

#: Without a certificate, at least this share more labels is asked for (see assess_step).
NEEDED_FLOOR = 0.1


def current_wording(
    subs: pd.DataFrame, answers: pd.DataFrame, questions: Sequence[Question]
) -> pd.Series:
    """Whether each check was asked the current questions (boolean, indexed like ``subs``).

    The current questions are those of the process file (``questions``), else
    those of the latest check. A check matches when it answered exactly that
    set of ``ask`` texts; an ``error`` verdict (no answers) matches.
    """
    if questions:
        current = frozenset(q.ask for q in questions)
    else:
        timed = answers.sort_values("at", kind="stable") if "at" in answers else answers
        last = timed["check_id"].iloc[-1] if len(timed) else None
        current = (
            frozenset(timed.loc[timed["check_id"] == last, "ask"])
            if last is not None
            else frozenset()
        )
    # Counts per check instead of a set per check: it matches when every distinct ask
    # it answered is current and it answered all of them.
    rows = answer_rows(subs["check_id"], answers["check_id"]) if len(answers) else np.zeros(0, int)
    ask_code, asks = category_codes(answers["ask"]) if len(answers) else (rows, pd.Index([]))
    keep = (rows >= 0) & (ask_code >= 0)
    check, ask = distinct_pairs(rows[keep], ask_code[keep], len(asks))
    is_current = np.array([a in current for a in asks], bool)
    n = np.bincount(check, minlength=len(subs))
    known = np.bincount(check, weights=is_current[ask], minlength=len(subs))
    # A check without answers (an error verdict) matches: it was asked the current questions.
    match = (n == 0) | ((n == known) & (known == len(current)))
    return pd.Series(match, index=subs.index)


def assess_step(
    subs: pd.DataFrame,
    answers: pd.DataFrame,
    *,
    thresholds: ThresholdView | Mapping[str, Any],
    questions: Sequence[Question] = (),
    options: ReadinessOptions | None = None,
    has_approve_step: bool = False,
    calibration: Sequence[Any] = (),
    enforcement: Enforcement | None = None,
    keep_after_switch: bool = False,
    limits: Limits | None = None,
) -> StepReadiness:
    """The decision for one checked step, from its checks, answers and threshold search.

    Parameters
    ----------
    subs : pandas.DataFrame
        The step's checks, all models, as :func:`calibrate.dataset.submissions`.
    answers : pandas.DataFrame
        The step's answers, as :func:`calibrate.dataset.answers`.
    thresholds : ThresholdView or mapping
        The threshold search on the current model and wording: a
        :class:`ThresholdView` or a step object of ``calibrate thresholds
        --format json`` (issue 5).
    questions : sequence of Question
        The step's questions as the process file defines them (may be empty).
    options : ReadinessOptions, optional
    has_approve_step : bool, default=False
        Whether people's decisions come from an ``approve`` step (a signature
        may be required), which makes pre-screening a candidate pattern.
    calibration : sequence of QuestionCalibration
        Kept for the report's figures.
    enforcement : Enforcement, optional
        The step is already enforced: the pattern and the first reason say
        whether to keep it so (:func:`enforced_pattern`), and the audit plan is
        the monitor's, at the enforced thresholds.
    keep_after_switch : bool, default=False
        Keep the labels of checks recorded ``advisory: false`` (``--with-escalations``).
    limits : Limits, optional
        The server defaults, for today's thresholds of questions no process file
        names (check-1's when ``None``), as the threshold search reads them.

    Returns
    -------
    StepReadiness
    """
    opts = options or ReadinessOptions()
    tv = (
        thresholds
        if isinstance(thresholds, ThresholdView)
        else ThresholdView.from_mapping(thresholds)
    )
    if subs.empty:
        raise ValueError("assess_step needs at least one check of the step")
    process, step = str(subs["process"].iloc[0]), str(subs["step"].iloc[0])
    change = detect_model_change(subs)
    model = change.current
    model_col = subs["model"].astype(object).where(subs["model"].notna(), "(unknown model)")
    cur_model = subs[(model_col == model).to_numpy()]
    ans_model = answers[isin(answers["check_id"], cur_model["check_id"])]
    wording = current_wording(cur_model, ans_model, questions)
    cur = cur_model[wording.to_numpy(dtype=bool)]
    ans = ans_model[isin(ans_model["check_id"], cur["check_id"])]

    # Labeled checks, as `calibrate thresholds` counts them under the same keys; the `_checks`
    # keys count every check (the report's text says "checks by other models").
    def n_labeled(frame: pd.DataFrame) -> int:
        return int(frame["label"].notna().sum()) if "label" in frame else 0

    left_out = {
        "other_models": n_labeled(subs) - n_labeled(cur_model),
        "other_wording": n_labeled(cur_model) - n_labeled(cur),
        "other_models_checks": int(len(subs) - len(cur_model)),
        "other_wording_checks": int(len(cur_model) - len(cur)),
    }
    # The labeled figures read what the certification reads: reviews of every verdict. Audit
    # labels are the monitor's (and the agreement tables', which keep their source apart).
    after = after_switch_labels(cur)
    reviews = cur.assign(label=cur["label"].mask(after)) if after.any() else cur
    # What the search read: with --with-escalations the labels after the switch too (counted
    # in n_labeled); every observed rate below still reads the reviews alone, as the search's
    # today's figures do: a rate pooled with a sample the enforced check selected or drew
    # estimates nothing (outside review D2: "6.3% (74 of 1179)" beside report.json's 26 of 745).
    reviewed = cur if keep_after_switch else reviews
    labeled = reviewed[reviewed["label"].notna()]
    n_labeled = int((labeled["verdict"] != "error").sum())
    rev_labeled = reviews[reviews["label"].notna()]
    n_kept = int(after.sum()) if keep_after_switch else 0
    # Said where an observed rate is shown, when some labels were left out of it.
    over = (
        f"over the {len(rev_labeled)} reviews of every verdict (advisory: true)" if n_kept else ""
    )

    # Rates of the evaluator's health, over every check of the current model.
    error = Rate(int((cur["verdict"] == "error").sum()), int(len(cur)))
    truncation = Rate(int(cur["truncated"].astype(bool).sum()), int(len(cur)))
    # Drift reads reviews of every verdict only: labels the enforced check selected (kept by
    # --with-escalations) would test its selection, not the evaluator (a NO on a biased sample).
    drift = drift_test(
        rev_labeled["at"], rev_labeled["verdict"], rev_labeled["label"], level=opts.drift_level
    )
    volume = recent_volume(reviewed, days=opts.recent_days)

    # The suggestion (or today's thresholds) replayed on the labeled history: a point
    # estimate beside the bound.
    current_qs = list(questions) or questions_from_answers(ans, limits)
    try:
        suggested_qs = (
            suggested_questions(tv.check, current_qs) if tv.status == "ok" and tv.check else []
        )
    except Exception:  # noqa: BLE001 - a malformed suggestion must not sink the report
        suggested_qs = []
    lab_ans = ans[ans["label"].notna() & isin(ans["check_id"], rev_labeled["check_id"])]
    observed = {
        "suggested": replayed_rates(lab_ans, suggested_qs, rev_labeled) if suggested_qs else None,
        "current": replayed_rates(lab_ans, current_qs, rev_labeled) if current_qs else None,
        "recorded": recorded_rates(rev_labeled),
    }
    source = next((k for k in ("suggested", "current", "recorded") if observed[k]), None)
    point = {**observed[source], "source": source} if source else None

    # The suggestion's shares; without one (the search's `expected` is then empty), today's.
    shares = tv.expected or tv.current
    auto_pass = _num(shares.get("auto_pass"))
    auto_fail = _num(shares.get("auto_fail"))
    if auto_pass is None and suggested_qs and observed["suggested"]:
        auto_pass, auto_fail = (
            observed["suggested"]["auto_pass"],
            observed["suggested"]["auto_fail"],
        )
    coverage = (auto_pass or 0.0) + (auto_fail or 0.0) if auto_pass is not None else None

    # Without a certificate the search reports the best single-candidate bounds: shown, never passed.
    certified = tv.status == "ok" and tv.certified is not None
    bounds = tv.certified if certified else tv.best_bounds
    if drift.undecided and certified and suggested_qs:
        # Today's thresholds decide nothing to compare in a half (every verdict unsure, say):
        # no number of labels changes that (outside review G5). The certified thresholds are
        # tested instead, replayed on the same labeled checks: their search read no time, so
        # under exchangeability the split at the median time is as random for them.
        codes = replayed_verdicts(lab_ans, suggested_qs, rev_labeled)
        if codes is not None:
            replayed = drift_test(
                rev_labeled["at"], _VERDICT_WORDS[codes], rev_labeled["label"],
                level=opts.drift_level,
            )  # fmt: skip
            drift = replace(replayed, verdicts="suggested")
    fp_upper = _num(bounds.get("false_pass_upper"))
    ff_upper = _num(bounds.get("false_fail_upper"))
    plenty = n_labeled >= opts.min_labels
    # The search's best share over a sample the enforced check selected estimates nothing either.
    best_cov = None if n_kept else best_observed_coverage(tv.raw, alpha=opts.alpha, beta=opts.beta)
    # The denominators the shares are of, so that no figure goes without its n.
    # (The search's expected shares carry their own n: with labels after the switch kept, today's
    # are over the reviews alone.)
    cov_n = int(shares.get("n") or tv.n_labeled or n_labeled)
    if coverage is not None and cov_n:
        # The share as the count its text shows (111 of 400 is 27.8%, not a float sum's 27.7%).
        coverage = round(coverage * cov_n) / cov_n
    best_n = coverage_denominator(tv.raw, alpha=opts.alpha, beta=opts.beta)
    if best_cov is not None:
        right_way = best_cov >= opts.min_coverage
    else:
        right_way = _points_right_way(point, opts)
    # The search's own estimate found no total of labels that would certify a useful check:
    # more labels would not help (unless there are too few to judge at all).
    no_total = tv.status == "insufficient_data" and tv.needed is not None and tv.needed.more is None
    # A sample the enforced check selected (--with-escalations) shows nothing either way.
    poor = (
        plenty
        and tv.status != "selected_sample"
        and (tv.status == "unattainable" or not right_way or no_total)
    )

    # Labels needed: the search's own estimate; without one, what the bounds need.
    estimate, hopeless, needed = _labels_to_ask(
        tv, point, right_way=right_way, n_labeled=n_labeled, opts=opts
    )

    criteria = step_criteria(
        opts=opts, n_labeled=n_labeled, tv=tv, fp_upper=fp_upper, ff_upper=ff_upper,
        coverage=coverage, drift=drift, change=change, error=error, truncation=truncation,
        poor=poor, plenty=plenty, point=point, certified=certified, best_cov=best_cov,
        cov_n=cov_n, best_n=best_n,
        never_fails=certified and bool(tv.certified.get("never_fails")), over=over,
    )  # fmt: skip
    decide_args = dict(change=change, drift=drift, tv=tv, poor=poor, point=point, opts=opts,
                       best_cov=best_cov, right_way=right_way, cov_n=cov_n,
                       best_n=best_n)  # fmt: skip
    decision, reasons = decide_readiness(criteria, **decide_args)
    without_change = None
    if change.changed:
        rest = [c for c in criteria if c.name != "evaluator_models"]
        without_change, _ = decide_readiness(rest, **decide_args)
        if change.changed_at is not None and not change.interleaved:
            how = f"re-run with --since {_since_arg(cur_model, subs, change)}"
        else:
            how = f"re-run with --model {model}"  # no clean cut in time to start from
        reasons.append(
            f"On {model} alone ({n_labeled} labeled) the other criteria give "
            f"{without_change.replace('_', ' ')}: {how} to judge the new model on its own."
        )

    verdict = None
    evidence_decision = decision
    if enforcement is not None:
        # The verdict is on the check in force; the evidence's decision stays beside it.
        verdict = judge_enforced(
            decision, reasons, enforcement, n_labeled=cov_n, in_force=observed["current"],
            certified=certified, delta=opts.delta, alpha=opts.alpha, beta=opts.beta,
        )  # fmt: skip
        decision, reasons = verdict.decision, verdict.reasons
        if enforcement.alarm and evidence_decision == "READY":
            # Labels before the rise certify nothing now: re-certification needs new ones.
            needed = max(needed or 0, RECERTIFY_MIN_LABELS)
    # A NO for the model change alone, where the current model on its own would be NOT_YET:
    # more labels of that model help, and the search on it (as `calibrate thresholds`, which
    # reads the current model alone) says how many.
    needed_on_current = decision == "NO" and without_change == "NOT_YET"
    if decision == "READY":
        needed = 0
    elif decision == "NO" and not needed_on_current:
        needed = None
    needed_days = None
    if needed and np.isfinite(volume.labeled_per_week) and volume.labeled_per_week > 0:
        needed_days = needed / (volume.labeled_per_week / 7)
    # The estimate is the number asked for unless the minimum of labeled checks asks for more.
    if estimate is not None and needed == estimate.more:
        estimate = estimate.at_rate(volume.labeled_per_week)
    else:
        estimate = None
    said = []
    if (decision == "NOT_YET" or needed_on_current) and hopeless is not None:
        said.append(f"the threshold search's estimate: {hopeless.sentence()}.")
    if (decision == "NOT_YET" or needed_on_current) and needed:
        text = needed_text(needed, needed_days)
        said.append(
            estimate.sentence() + "." if estimate is not None else text[:1].lower() + text[1:]
        )
    # Where the decision is NO, the labels are the current model's: said so.
    reasons += [capital(f"on {model} alone, {x}" if needed_on_current else x) for x in said]

    # After the switch: audit and hours saved.
    audit, sequential, hours, prescreen_hours = _after_switch(
        certified=certified, auto_pass=auto_pass, auto_fail=auto_fail, volume=volume,
        enforcement=enforcement, in_force=observed["current"], opts=opts,
    )  # fmt: skip

    # The labels the evidence reads (reviews; audits are in Since the switch): every check counts
    # in the unsure and error shares, labeled or not.
    agree = agreement_mod.agreement(reviews, by=[])
    # Weeks by where their labels come from: reviews of every verdict before the switch, audit
    # draws after it (rates flagged where the draw's probabilities differ).
    by_week = agreement_mod.agreement(subs, by=["model", "week", "labels"])
    # The same split per model: an audit draw's labels are not pooled with advisory reviews.
    by_model = agreement_mod.agreement(subs, by=["model", "labels"])
    appr = approvers_mod.approvers(reviews) if len(rev_labeled) else None
    bias = automation_bias(reviews, appr)
    drivers = disagreement_drivers(lab_ans, top=8)
    distrust = distrusts_evaluator(criteria)
    if verdict is not None:
        pattern = {**verdict.pattern, "approve_step": has_approve_step}
    else:
        pattern = approval_pattern(
            decision=decision, has_approve_step=has_approve_step, opts=opts,
            ff_upper=ff_upper if certified and not distrust else None,
            auto_fail=auto_fail, prescreen_hours=prescreen_hours,
            audit_pays=sequential is None or sequential.pays,
        )  # fmt: skip
        if decision == "READY" and pattern["recommended"] != "replace":
            # The approver signs every pass: only what pre-screening saves is saved.
            hours = prescreen_hours if pattern["recommended"] == "pre-screen" else 0.0
    return StepReadiness(
        process=process,
        step=step,
        model=model,
        decision=decision,
        reasons=reasons,
        criteria=criteria,
        needed_labels=needed,
        needed_days=needed_days,
        # Only a certificate offers a suggestion (otherwise today's check stands, as
        # current_check), and an alarm none: the labels it would come from predate the rise.
        suggested_check=(
            check_items(suggested_qs) if suggested_qs else _as_items(tv.check, current_qs)
        )
        if tv.status == "ok" and not (enforcement is not None and enforcement.alarm)
        else [],
        current_check=check_items(current_qs),
        thresholds=tv,
        audit=audit,
        sequential_audit=sequential,
        hours_saved_per_month=hours,
        prescreen_hours_per_month=prescreen_hours,
        pattern=pattern,
        drift=drift,
        model_change=change,
        volume=volume,
        n_labeled=n_labeled,
        left_out=left_out,
        observed=observed,
        error=error,
        truncation=truncation,
        automation_bias=bias,
        has_approve_step=has_approve_step,
        decision_on_current_model=without_change,
        agreement=agree,
        by_week=by_week,
        by_model=by_model,
        approvers=appr,
        drivers=drivers,
        calibration=list(calibration),
        needed=estimate,
        enforcement=enforcement,
        evidence_decision=evidence_decision,
        enforced_verdict=verdict,
    )


#: A replayed verdict code as the word a recorded verdict has (drift_test reads words).
_VERDICT_WORDS = np.array(["", "", ""], dtype=object)
_VERDICT_WORDS[[PASS, FAIL, UNSURE]] = ["pass", "fail", "unsure"]


def _labels_to_ask(
    tv: ThresholdView, point: dict[str, Any] | None, *, right_way: bool, n_labeled: int,
    opts: ReadinessOptions,
) -> tuple[NeededLabels | None, NeededLabels | None, int | None]:  # fmt: skip
    """The more labels to ask for, before the decision and an enforced step's verdict weigh in.

    The search's own estimate (it reruns the search on resampled data); without
    one, what both bounds need to reach their limits at the observed rates.
    Returns ``(estimate, hopeless, needed)``: the search's estimate when it
    names a total, its estimate when it found none (more labels would not
    help), and the number to ask for (``None``: more labels would not help).
    """
    estimate = tv.needed if tv.status == "insufficient_data" and tv.needed is not None else None
    hopeless = estimate if estimate is not None and estimate.more is None else None
    estimate = estimate if estimate is not None and estimate.more is not None else None
    needed = estimate.more if estimate is not None else tv.needed_labels
    if needed is None and point is not None and right_way and hopeless is None:
        totals = [
            labels_needed(
                k_false_pass=point[key]["k"], n_pass=point[key]["n"], n_labeled=max(n_labeled, 1),
                alpha=limit, delta=opts.delta,
            )
            for key, limit in (("false_pass", opts.alpha), ("false_fail", opts.beta))
            if point[key]["n"] > 0
        ]  # fmt: skip
        if totals and all(t is not None for t in totals):
            needed = max(0, max(totals) - n_labeled)
    if needed is not None and tv.status != "ok" and estimate is None:
        # The search certifies along a path and can stop early on a few unlucky labels, so
        # an estimate at the observed rates is a lower bound: ask for at least a tenth more.
        needed = max(needed, math.ceil(NEEDED_FLOOR * n_labeled), 1)
    if n_labeled < opts.min_labels:
        # Too thin to judge: at least the floor, more if the bound needs it.
        needed = max(needed or 0, opts.min_labels - n_labeled)
    if tv.status == "selected_sample":
        needed = None  # more labels of a sample the check selected would not make it random
    return estimate, hopeless, needed


def _after_switch(
    *, certified: bool, auto_pass: float | None, auto_fail: float | None, volume: Volume,
    enforcement: Enforcement | None, in_force: dict[str, Any] | None, opts: ReadinessOptions,
) -> tuple[AuditPlan | None, SequentialAuditPlan | None, float, float]:  # fmt: skip
    """After the switch: the audit plans and the hours saved a month.

    ``auto_pass`` and ``auto_fail`` are the suggestion's shares; an enforced
    step saves what the check in force decides alone (``in_force``, today's
    thresholds replayed). Returns ``(audit, sequential, hours,
    prescreen_hours)``: the fixed-sample and the sequential audit plans, the
    hours saved replacing the approval and pre-screening (``nan`` when
    nothing certified can be planned).
    """
    audit = None
    sequential = None
    hours = float("nan")
    prescreen_hours = float("nan")
    plannable = certified and auto_pass is not None and np.isfinite(volume.checks_per_week)
    if enforcement is not None:
        # One plan for an enforced step: the monitor's, at the thresholds in force and the
        # passes it has seen (none while it alarms: the step goes back to advisory).
        sequential = enforcement.monitor.plan
    elif plannable:
        # Only a certified suggestion has shares worth planning on.
        audit = audit_plan(
            alpha=opts.alpha, passes_per_week=volume.checks_per_week * auto_pass,
            weeks=opts.audit_weeks, factor=opts.audit_factor, level=opts.audit_level,
            power=opts.audit_power,
        )  # fmt: skip
        # The audit the monitor's sequential test needs: what the report plans and the hours count.
        sequential = plan_audit(
            passes_per_week=volume.checks_per_week * auto_pass, alpha=opts.alpha,
            delta=opts.delta, weeks=opts.audit_weeks, factor=opts.audit_factor,
            power=opts.audit_power,
        )  # fmt: skip
    # An enforced step saves what the check in force decides alone (its thresholds replayed).
    in_force = in_force if enforcement is not None and in_force else None
    if in_force is not None:
        auto_pass, auto_fail = in_force["auto_pass"], in_force["auto_fail"]
    if plannable:
        rate = sequential.rate if sequential is not None and sequential.rate is not None else 1.0
        hours = hours_saved_per_month(
            checks_per_month=volume.checks_per_month, auto_pass=auto_pass,
            auto_fail=auto_fail or 0.0, audit_rate=rate,
            minutes_per_review=opts.minutes_per_review,
        )  # fmt: skip
        prescreen_hours = hours_saved_per_month(
            checks_per_month=volume.checks_per_month, auto_pass=0.0, auto_fail=auto_fail or 0.0,
            audit_rate=None, minutes_per_review=opts.minutes_per_review,
        )  # fmt: skip
    return audit, sequential, hours, prescreen_hours


def questions_from_answers(ans: pd.DataFrame, limits: Limits | None = None) -> list[Question]:
    """Today's questions when no process file lists them: the latest check's, as the search reads them.

    Only when a process file names every one of them with thresholds calibrate
    knows; otherwise ``[]``: today's thresholds are unknown, and the server's
    defaults (``limits``) would be a guess the recorded verdicts may contradict.
    """
    if ans.empty:
        return []
    # Outside review: a question no process file names has no thresholds calibrate knows (the
    # server's defaults are a guess the recorded results may contradict): then today's check is
    # not shown or replayed at all, rather than invented; the recorded verdicts stand in.
    if "in_process_file" not in ans or not ans["in_process_file"].fillna(False).astype(bool).any():
        return []
    named = ans[ans["in_process_file"].fillna(False).astype(bool)]["ask"].unique()
    questions, known = latest_questions(ans, limits or Limits())
    if not all(known) or any(q.ask not in set(named) for q in questions):
        return []
    return questions


def _as_items(
    check: Sequence[Mapping[str, Any]], current: Sequence[Question]
) -> list[dict[str, Any]]:
    """QUESTION dicts with the answer texts of ``current`` restored (as the search gives them, else)."""
    try:
        return check_items(suggested_questions(check, current))
    except Exception:  # noqa: BLE001 - keep the search's own dicts when they cannot be parsed
        return [dict(q) for q in check]


def _since_arg(cur_model: pd.DataFrame, subs: pd.DataFrame, change: ModelChange) -> str:
    """A ``--since`` value that starts the window at the model change (to the second when safe)."""
    first = pd.Timestamp(change.changed_at)
    floor = first.floor("s")
    others = subs[~isin(subs["check_id"], cur_model["check_id"])]
    before = pd.to_datetime(others["at"], utc=True)
    safe = before.isna().all() or bool((before.dropna() < floor).all())
    stamp = floor if safe else first
    return stamp.strftime("%Y-%m-%dT%H:%M:%S") + ("" if safe else f".{stamp.microsecond:06d}") + "Z"


def _points_right_way(point: dict[str, Any] | None, opts: ReadinessOptions) -> bool:
    """Whether the observed (point) rates already meet the limits, so more labels would help."""
    if not point or not point["false_pass"]["n"]:
        return False
    # A rate points the wrong way only when measurably above its limit (outside review: 1 of 3
    # false passes, observed above 5%, made a NO); coverage reads the answers alone.
    wrong = any(
        r["n"] and measurably_above(r["k"], r["n"], limit, delta=opts.delta)
        for r, limit in ((point["false_pass"], opts.alpha), (point["false_fail"], opts.beta))
    )
    return not wrong and point["coverage"] >= opts.min_coverage
