"""The certified threshold search of one step: :func:`find_thresholds`, its paths and its limits.

The question this module answers for one checked step and one evaluator
model: *which thresholds let the check decide as many submissions as possible
on its own, while, with probability at least 1 - delta over the labeled
sample,*

* the **false-pass rate** P(not acceptable | verdict pass) is at most ``alpha``, and
* the **false-fail rate** P(acceptable | verdict fail) is at most ``beta``?

Both rates are at the submission level, where the person's decision lives,
and the verdict is the worst question (check-1 §3), so every question of the
step is searched jointly. The decision rule is :func:`calibrate.profile.decide`
and :func:`calibrate.profile.worst`; every candidate is replayed through it.

The method (``docs/method.md`` says it in plain words)
-------------------------------------------------------
A *path* of candidate configurations is ordered from strictest to loosest and
walked with exact binomial tests by the fallback procedure [5]_
(:func:`calibrate.analysis.fallback_walk.fallback`): checkpoints placed by the
counts hold shares of ``delta``, a rejection hands its level on, a failure
ends a run but not the walk. Every rejected candidate is certified at once;
the one suggested decides enough alone and then saves the most work
(:func:`calibrate.analysis.paths.preferred`; Learn-then-Test [1]_, as in
Trust-or-Escalate [2]_, with the fallback walk in place of the plain
fixed-sequence walk).

* **One yes/no question.** The path is known before looking at any label
  (a fixed grid of thresholds on the yes-probability,
  :func:`calibrate.analysis.paths.yes_no_paths`), so every label certifies;
  counting is one sort and cumulative sums. The pass threshold and the fail
  threshold are tested on two separate paths, ``PASS_SHARE`` (85%) of
  ``delta`` to the passes and the rest to the fails (Bonferroni), so both
  bounds hold together with probability ``1 - delta``. From
  :data:`~calibrate.analysis.paths.LEARNED_START_FROM` labels the pass
  walk's first checkpoint is learned on a random fifth of them and the
  passes are certified on the rest.
* **Anything else.** The path must be learned
  (:mod:`calibrate.analysis.learned_path`): a random part of the
  labels (seeded; :func:`search_share`) proposes candidates by block
  coordinate ascent on the Lagrangian of "decide the most within alpha and
  beta" and orders their Pareto front by observed risk; the rest certifies.
  Each candidate is a whole configuration, tested for both rates at once by
  the intersection-union test (p-value = the larger of the two, [3]_), so no
  share of ``delta`` is lost to the pairing.

No configuration may qualify: the result then says ``"insufficient_data"``
(too few labels to certify) or ``"unattainable"`` (every candidate measured
on enough decisions is measurably outside the limits: more labels would not
help; :mod:`calibrate.analysis.unattainable`). The classification only reads
what grows with ``alpha``, so a looser limit never reads worse.
:func:`~calibrate.analysis.threshold_steps.search_step` then estimates the
labels needed by rerunning the search on resampled data
(:mod:`calibrate.analysis.needed`); when no total up to the cap makes it
certify a useful check, the estimate says ``"unattainable"``.

Assumptions: past and future submissions of the step are exchangeable (no
drift, the same evaluator model, people who judge without seeing the verdict).
The tests condition on the number of submissions a candidate decides, and the
checkpoints depend on those counts only (see ``docs/method.md``).

Treatment of incomplete answers: an ``error`` verdict or an answer with no
value is human work under any thresholds and counts as ``unsure``. A check
asked another set of questions than today's (a question added, dropped or
reworded) was another version of the check: it is left out and counted.

References
----------
.. [1] Angelopoulos, A. N., Bates, S., Candès, E. J., Jordan, M. I. and Lei, L.
   (2021). Learn then Test: calibrating predictive algorithms to achieve risk
   control. arXiv:2110.01052.
.. [2] Jung, J., Brahman, F. and Choi, Y. (2024). Trust or Escalate: LLM
   judges with provable guarantees for human agreement. arXiv:2407.18370.
.. [3] Berger, R. L. (1982). Multiparameter hypothesis testing and acceptance
   sampling. Technometrics 24(4), 295-300.
.. [4] Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or
   fiducial limits illustrated in the case of the binomial. Biometrika 26(4).
.. [5] Wiens, B. L. and Dmitrienko, A. (2005). The fallback procedure for
   evaluating a single family of hypotheses. Journal of Biopharmaceutical
   Statistics 15(6), 929-942.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis import fixed_paths
from calibrate.analysis.answers_path import answers_path, answers_path_applies
from calibrate.analysis.learned_path import certification_part, joint_path
from calibrate.analysis.paths import (
    NEVER_FAILING_BELOW,
    Path,
    fail_within,
    loosened,
    preferred,
    with_never_failing,
    yes_no_paths,
)
from calibrate.analysis.rate import Rate
from calibrate.analysis.step_data import StepData, can_fail, replay_cached
from calibrate.analysis.threshold_result import StepThresholds, lowest_bounds
from calibrate.analysis.unattainable import judged_unattainable
from calibrate.defaults import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_DELTA, MIN_DECIDED
from calibrate.errors import UsageError
from calibrate.profile import Kind, Question

__all__ = ["find_thresholds", "search_share", "validate_limits"]

#: Share of the labels that learns the path when it must be learned (the rest certifies): half
#: of a small sample, but never more labels than SEARCH_LABELS once a quarter is that many.
SEARCH_FRACTION = 0.5
SEARCH_LABELS = 400
SEARCH_FRACTION_MIN = 0.25


def search_share(n: int) -> float:
    """The share of ``n`` labels that learns a path: ``0.5`` up to 800, then down to ``0.25``.

    A path needs a few hundred labels to be ordered well; beyond that, every
    label certifies more where it counts (the bound's margin shrinks as
    ``1 / sqrt(n)`` of the certification part).
    """
    if n <= 0:
        return SEARCH_FRACTION
    return float(min(SEARCH_FRACTION, max(SEARCH_FRACTION_MIN, SEARCH_LABELS / n)))


#: Share of delta the pass path of a single yes/no question gets; its fail path gets the rest.
#: Passes are where a check saves work and where a wrong certificate costs most; a fail
#: threshold far inside beta (the common case: the lowest answers are nearly all rejected)
#: certifies on few decisions even at a small level.
PASS_SHARE = 0.85
#: One rubric or choice question: below this many labels only the fixed paths run (a split
#: would leave too few labels to learn an order from or to certify it with).
FIXED_ONLY_BELOW = 250
#: One choice question with relearned lists: below this many labels its given lists run as fixed
#: paths beside the learned path (each at half of delta); from here the learned path runs alone.
LEARNED_ONLY_FROM = 1000
#: Several questions: below this many labels a path ordered by the answers alone (no label,
#: :func:`~calibrate.analysis.answers_path.answers_path`) runs beside the learned path, tested on
#: every label. Measured on the power study's seeds (three questions, 40 datasets a cell, 150 and
#: 300 labels): the summed mean certified auto-pass of 32 cells rose by 1.86, 21 cells up, none
#: down. At 1,500 labels (20 datasets a cell), where the learned path's certification part is
#: large, it cost two of 11 cells of the power criterion, so from here the learned path runs
#: alone (between 1,000 and 1,500 not measured).
ANSWERS_PATH_BELOW = 1000
#: The answers path's share of delta (union bound with the learned path, which gets the rest):
#: where the evaluator's stated probabilities order the submissions well, its exact test on
#: every label beats the learned path's on a part of them even at 0.3 of the level; where they
#: mislead, the learned path keeps most of its level. (At 300 labels, 20 datasets a cell: 0.5
#: gave +0.90 over 16 cells, 12 up, 1 down, against +0.77, 10 up, none down.)
ANSWERS_SHARE = 0.3


#: A yes-probability below this says "more likely no than yes": a suggested pass threshold
#: under it gets a note on the doubtful answers it passes.
DOUBTFUL_BELOW = 0.5


def doubtful_passes(
    data: StepData, pass_path: Path, certified: np.ndarray, i: int, written: float
) -> tuple[str, dict[str, Any]] | None:
    """A note when the suggested pass threshold passes answers the evaluator itself doubts.

    The certificate bounds the false passes of all the passes together, so the
    loosest certified threshold may pass answers scored below
    :data:`DOUBTFUL_BELOW` as long as the whole stays within alpha. A person
    pasting it should know how those answers fared in the labels, and which
    stricter threshold, certified by the same walk, leaves them to a person.

    Parameters
    ----------
    data : StepData
        The labeled rows of the one yes/no question.
    pass_path : Path
        Its pass path; ``certified`` flags its candidates the walk certified.
    i : int
        The candidate suggested, written as ``written``.

    Returns
    -------
    (str, dict) or None
        The note, and its facts for the JSON (``doubtful_passes``): ``below`` (the
        mark), ``n_labeled`` labeled answers scored in ``[pass, below)`` of which
        ``rejected`` were not acceptable, and ``stricter_pass``, the loosest threshold
        at or above the mark the same walk certified (``None`` when none), with the
        labeled checks it passes (``stricter_n_pass`` of ``stricter_n``).
    """
    if written >= DOUBTFUL_BELOW:
        return None
    p = np.where(data.forced_unsure, np.nan, data.answer[0].astype(float))
    with np.errstate(invalid="ignore"):
        rows = (p >= written) & (p < DOUBTFUL_BELOW)
    seen = Rate(int((rows & ~data.acceptable).sum()), int(rows.sum()))
    fared = (
        f"{seen.k} of the {seen.n} labeled ones were rejected (too few for a rate)"
        if seen.n and seen.too_few
        else f"{seen.text()} of the labeled ones were rejected"
        if seen.n
        else f"none of the {data.n} labeled answers had such a score, so the certificate covers "
        "them only as far as they stay that rare"
    )
    text = (
        f"pass: {written:g} passes answers the evaluator scores below {DOUBTFUL_BELOW:g} (more "
        f"likely no than yes): {fared}; the certificate bounds the false passes of all the "
        "passes together, not of these"
    )
    facts: dict[str, Any] = {
        "below": DOUBTFUL_BELOW, "n_labeled": seen.n, "rejected": seen.k,
        "stricter_pass": None, "stricter_n_pass": None, "stricter_n": None,
    }  # fmt: skip
    stricter = np.flatnonzero(certified & (pass_path.thresholds >= DOUBTFUL_BELOW))
    if stricter.size:
        j = int(stricter.max())  # the loosest certified candidate at or above the mark
        t = max(loosened(pass_path, j), DOUBTFUL_BELOW)
        share = Rate(int(pass_path.n_pass[j]), int(pass_path.n_total))
        text += (
            f". pass: {t:g}, certified by the same walk, leaves them to a person; it passes "
            f"{share.text()} of the labeled checks alone"
        )
        facts.update(stricter_pass=float(t), stricter_n_pass=share.k, stricter_n=share.n)
    return text, facts


def validate_limits(alpha: float, delta: float, beta: float) -> None:
    """Raise ``UsageError`` (a ``ValueError``) unless ``alpha`` and ``delta`` are in (0, 1) and
    ``beta`` in (0, 1]."""
    for name, value, closed in (
        ("alpha", alpha, False),
        ("delta", delta, False),
        ("beta", beta, True),
    ):
        ok = isinstance(value, int | float) and math.isfinite(value)
        ok = ok and (0.0 < value <= 1.0 if closed else 0.0 < value < 1.0)
        if not ok:
            span = "(0, 1]" if closed else "(0, 1)"
            # As every public function words a bad level (calibrate.arguments.check_unit).
            raise UsageError(f"{name} must be in {span}, got {value}")


def find_thresholds(
    data: StepData,
    *,
    alpha: float = DEFAULT_ALPHA,
    delta: float = DEFAULT_DELTA,
    beta: float = DEFAULT_BETA,
    relearn_lists: bool = False,
    search_fraction: float | None = None,
    seed: int = 0,
    judge_unattainable: bool = True,
    min_decided: float = MIN_DECIDED,
) -> StepThresholds:
    """Search the thresholds of one step with a certified bound on false passes and false fails.

    Guarantee: when ``status == "ok"``, with probability at least
    ``1 - delta`` over the labeled sample, the suggested configuration's
    false-pass rate is at most ``alpha`` and its false-fail rate at most
    ``beta`` (both at once), provided future submissions are exchangeable with
    the labeled ones. Among the certified candidates, those deciding at
    least ``min_decided`` of the labeled submissions alone are preferred
    (all of them when none does); of these the one saving the most work is
    chosen (its passes plus :data:`~calibrate.analysis.paths.FAIL_WORTH`
    times its fails), then the one passing the most. No candidate may
    qualify.

    Parameters
    ----------
    data : StepData
        From :func:`~calibrate.analysis.step_data.step_data`.
    alpha : float, default=0.05
        Limit on the false-pass rate.
    delta : float, default=0.1
        The guarantee may fail with probability at most ``delta``.
    beta : float, default=0.2
        Limit on the false-fail rate; ``1`` leaves false fails uncontrolled.
    relearn_lists : bool, default=False
        Relearn the ``pass``/``unsure`` lists of choice questions instead of
        keeping the process file's.
    search_fraction : float, optional
        Share of the labels that learns the path when it must be learned;
        default :func:`search_share` of the number of labels (0.5 up to 800
        labels, then 400 labels, at least a quarter).
    seed : int, default=0
        Seed of the random split.
    judge_unattainable : bool, default=True
        When nothing is certified, tell ``unattainable`` from
        ``insufficient_data`` on a set of candidates that does not move with
        ``alpha`` (a learned path's fronts at
        :data:`~calibrate.analysis.unattainable.REFERENCE_ALPHAS`: a few
        more searches). ``False`` skips that: the status is then
        ``insufficient_data`` whenever nothing is certified, for callers that
        read only whether a check is certified (the labels-needed resamples).
    min_decided : float, default=0.5
        Share of submissions a useful check decides alone (readiness'
        ``min_coverage``), preferred among certified candidates. One yes/no
        question's two walks choose apart and do not read it.

    Returns
    -------
    StepThresholds

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> ok = rng.random(600) < 0.7
    >>> p = np.where(ok, rng.beta(8, 1.2, 600), rng.beta(2, 3, 600))
    >>> data = StepData("proc", "step", "m", [Question("ok?", Kind.YES_NO, pass_p=0.9)],
    ...                 [True], np.arange(600).astype(str), ok, [p], [np.full(600, np.nan)],
    ...                 np.zeros(600, bool))
    >>> res = find_thresholds(data, alpha=0.05, delta=0.1, beta=0.2)
    >>> res.status, res.certified["false_pass_upper"]
    ('ok', 0.05)
    """
    validate_limits(alpha, delta, beta)
    if search_fraction is None:
        search_fraction = search_share(data.n)
    settings = dict(delta=delta, beta=beta, relearn_lists=relearn_lists,
                    search_fraction=search_fraction, seed=seed)  # fmt: skip
    notes = list(data.notes)
    # Today's thresholds replayed on the reviews of every verdict alone: labels kept from after
    # the switch (--with-escalations) are a sample the enforced check selected or drew, and a
    # rate over them pooled with the reviews estimates nothing (agreement withholds it too).
    reviews = data.subset(np.flatnonzero(data.reviewed)) if data.enforced_labels else data
    current_rates = (
        replay_cached(data.questions, reviews) if all(data.known) and reviews.n else None
    )
    current_note = today_note(reviews.n, data.enforced_labels)
    if not all(data.known):
        notes.append(
            "today's thresholds of some questions are unknown (no process file): no replay"
        )
    single = len(data.questions) == 1 and data.questions[0].kind is Kind.YES_NO
    frames: list[pd.DataFrame] = []
    suggested: list[Question] | None = None
    doubtful: dict[str, Any] | None = None  # the suggested pass threshold's doubtful answers
    learned_delta: float | None = None  # the learned path's share of delta, when one ran
    n_fixed = 0  # fixed paths run beside it (their frames are numbered first)
    n_search, n_cert = 0, data.n
    relearn = relearn_lists and len(data.questions) == 1 and data.questions[0].kind is Kind.CHOICE
    # Relearned choice lists on enough labels: the learned path alone (the given lists add little).
    fixed = (
        not single and fixed_paths.applies(data) and not (relearn and data.n >= LEARNED_ONLY_FROM)
    )
    method = "fixed_sequence" if single else "learned_path"
    # One yes/no question: two paths, delta split between them (Bonferroni), most of it to the
    # passes. A joint path: one test of both rates at once (intersection-union), the full delta.
    if data.n and single:
        d_pass = PASS_SHARE * delta if beta < 1.0 else delta
        d_fail = (1.0 - PASS_SHARE) * delta
        pass_path, fail_path = yes_no_paths(
            data, delta_pass=d_pass, delta_fail=d_fail, alpha=alpha, seed=seed
        )
        if pass_path.n_search:
            method = "fixed_sequence_learned_start"
            n_search, n_cert = pass_path.n_search, pass_path.n_total
        i_pass, f_pass = pass_path.run(alpha=alpha, beta=beta)
        # In place, not a copy: the fail frame's `chosen` is set below and must reach `frames`.
        f_pass["n_total"] = pass_path.n_total or data.n
        frames.append(f_pass)
        f_fail = None
        if beta < 1.0:
            _, f_fail = fail_path.run(alpha=alpha, beta=beta)
            f_fail["n_total"] = fail_path.n_total or data.n
            frames.append(f_fail)
        if i_pass is not None:
            a = loosened(pass_path, i_pass)
            if beta >= 1.0 or f_fail is None:
                fail = None  # false fails are not controlled: everything below pass fails
            else:
                # The check fails p < min(fail, pass): the fail set must be a certified one, so
                # the fail threshold is the certified one failing the most at or below the pass.
                i_fail = fail_within(fail_path, f_fail["certified"].to_numpy(), a)
                f_fail["chosen"] = f_fail["position"] == (-1 if i_fail is None else i_fail)
                if i_fail is None:
                    fail = 0.0  # no fail threshold is certified there: never fail, ask a person
                else:
                    b = loosened(fail_path, i_fail)
                    fail = None if b >= a else b
            suggested = [replace(data.questions[0], pass_p=a, fail_p=fail)]
            doubt = doubtful_passes(data, pass_path, f_pass["certified"].to_numpy(), i_pass, a)
            if doubt:
                notes.append(doubt[0])
                doubtful = doubt[1]
    elif data.n and fixed:
        # One rubric or choice question: paths known before the labels, every label certifies.
        # With enough labels a path learned on a split joins them at half of delta (union
        # bound): it can step round a cluster of confident mistakes that a fixed path walks into.
        # Relearned choice lists always need the learned path; the given lists are the prior.
        union = data.n >= FIXED_ONLY_BELOW or relearn
        method = "fixed_and_learned_paths" if union else "fixed_paths"
        paths = fixed_paths.fixed_paths(data, delta=delta / 2 if union else delta, beta=beta)
        n_given = len(paths)
        if union:
            learned_delta, n_fixed = delta / 2, n_given
            path, n_search, n_cert = _learned_path(
                data, alpha=alpha, delta=delta / 2, beta=beta, relearn_lists=relearn_lists,
                search_fraction=search_fraction, seed=seed, min_decided=min_decided,
            )  # fmt: skip
            paths = [*paths, path]
        winner, suggested = _union_choice(paths, data, frames, alpha=alpha, beta=beta,
                                          min_decided=min_decided)  # fmt: skip
        if winner is not None and winner < n_given:
            n_search, n_cert = 0, data.n  # certified by a fixed path, on every label
    elif data.n:
        # Several questions: a path learned on a split. Below ANSWERS_PATH_BELOW labels a path
        # ordered by the answers alone joins it, tested on every label at ANSWERS_SHARE of delta
        # (union bound; the learned path gets the rest). With several questions the learned path
        # is ordered by the label model fitted on its search part (one relearned choice list keeps
        # the labels' own order: the fitted order certified less there, docs/method.md).
        with_answers = data.n < ANSWERS_PATH_BELOW and answers_path_applies(data)
        answers_delta = ANSWERS_SHARE * delta if with_answers else 0.0
        learned_delta = delta - answers_delta
        paths = []
        if with_answers:
            method = "answers_and_learned_paths"
            a_path = answers_path(data, alpha=alpha, delta=answers_delta, beta=beta,
                                  relearn_lists=relearn_lists)  # fmt: skip
            if beta < 1.0 and data.n < NEVER_FAILING_BELOW:
                a_path = with_never_failing(a_path, data, min_decided=min_decided, full=data)
            paths.append(a_path)
        path, n_search, n_cert = _learned_path(
            data, alpha=alpha, delta=learned_delta, beta=beta, relearn_lists=relearn_lists,
            search_fraction=search_fraction, seed=seed, min_decided=min_decided,
            fitted=len(data.questions) > 1,
        )  # fmt: skip
        paths.append(path)
        winner, suggested = _union_choice(paths, data, frames, alpha=alpha, beta=beta,
                                          min_decided=min_decided, number=with_answers)  # fmt: skip
        if with_answers and winner == 0:
            n_search, n_cert = 0, data.n  # certified by the answers path, on every label
    candidates = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if fixed and (suggested is None or data.enforced_labels):
        n_search, n_cert = 0, data.n  # nothing certified: read from the fixed paths, every label
    if data.enforced_labels:
        # Labels kept from after the switch (--with-escalations): the enforced check chose which
        # submissions a person saw, so no test on them is exact. Nothing is certified, suggested
        # or judged unattainable; the candidates stay, as a diagnostic (best_bounds).
        status, certified, suggested = "selected_sample", None, None
        notes.append(
            f"{data.enforced_labels} labeled checks were decided after the switch (kept by "
            "--with-escalations): the enforced check chose which of them a person saw, so they "
            "are no random sample of the submissions and nothing is certified on them; run "
            "without --with-escalations for a certificate"
        )
    elif suggested is not None:
        status = "ok"
        # Never fails by its rule, and fails no labeled row (an answer outside a choice's declared
        # names fails under check-1 whatever the lists say). Read from the suggestion itself on
        # every labeled row, answers only: the chosen rows of paths that lost do not count.
        fail_never = not can_fail(suggested) and replay_cached(suggested, data).n_fail == 0
        certified = {
            "false_pass_upper": alpha,
            # A check that never fails has no false-fail rate to bound: no number stands for one.
            "false_fail_upper": None if fail_never else (1.0 if beta >= 1.0 else beta),
            "never_fails": fail_never,
            "confidence": 1 - delta,
        }
        if fail_never:
            # The parenthesis only where it can happen: a step with a choice question.
            outside = (
                " (a choice answer outside its declared names would fail under check-1)"
                if any(q.kind is Kind.CHOICE for q in data.questions)
                else ""
            )
            notes.append(
                f"the suggested check never fails on the answers seen{outside}: what it does "
                "not pass goes to a person"
            )
    else:
        # Nothing certified: too few labels, or no candidate good enough however many labels.
        # The classification reads only what grows with alpha (candidates measurably outside the
        # limits), so a looser limit never reads worse. How many labels would do is estimated
        # apart (calibrate.analysis.needed, by search_step): it reruns this search on resamples.
        certified = None
        # Not judged: insufficient_data whenever nothing is certified.
        worse = judge_unattainable and judged_unattainable(
            candidates, data, alpha=alpha, beta=beta, delta=delta, single=single,
            learned_delta=learned_delta, n_fixed=n_fixed, relearn_lists=relearn_lists,
            search_fraction=search_fraction, seed=seed,
        )  # fmt: skip
        status = "unattainable" if worse else "insufficient_data"
    # Only a suggestion has expected shares: today's are current_rates (as report.json's).
    expected = replay_cached(suggested, data) if suggested is not None else None
    # Marked in itself: a script reading the JSON finds it beside `certified` (black-box run).
    best_bounds = {**lowest_bounds(candidates), "confidence": 1 - delta, "certificate": False}
    return StepThresholds(
        process=data.process,
        step=data.step,
        model=data.model,
        status=status,
        alpha=alpha,
        delta=delta,
        beta=beta,
        method=method,
        suggested=suggested,
        current=list(data.questions),
        certified=certified,
        best_bounds=best_bounds,
        expected=expected,
        current_rates=current_rates,
        current_note=current_note,
        candidates=candidates,
        needed_labels=None,
        n_labeled=data.n,
        n_search=n_search,
        n_certify=n_cert,
        left_out=dict(data.left_out),
        notes=notes,
        settings=settings,
        data=data,
        # Only while the suggestion stands (a selected sample suggests nothing).
        doubtful_passes=doubtful if suggested is not None else None,
    )


def today_note(n_reviews: int, n_after_switch: int) -> str:
    """Which labels today's figures are over, when some were left out of them (else empty)."""
    if not n_after_switch:
        return ""
    over = (
        f"over the {n_reviews} reviews of every verdict (advisory: true) alone"
        if n_reviews
        else "withheld: no review of every verdict (advisory: true) to read them from"
    )
    return (
        f"today's figures {over}: the {n_after_switch} labels after the switch are a sample the "
        "enforced check selected or drew, on which a rate estimates nothing"
    )


def _learned_path(
    data: StepData, *, alpha: float, delta: float, beta: float, relearn_lists: bool,
    search_fraction: float, seed: int, min_decided: float, fitted: bool = False,
) -> tuple[Path, int, int]:  # fmt: skip
    """The learned path and the sizes of its search and certification parts.

    Ordered by the search part's labels (:func:`joint_path`), or with ``fitted``
    by a model of the label fitted on them.

    On fewer than :data:`NEVER_FAILING_BELOW` labels its never-failing twins
    come first (:func:`~calibrate.analysis.paths.with_never_failing`), only
    those passing at least ``min_decided`` of the certification part (a twin
    decides only what it passes). With false fails uncontrolled
    (``beta = 1``) no candidate has a false-fail test to spare.
    """
    path, search, cert = joint_path(
        data, alpha=alpha, delta=delta, beta=beta, relearn_lists=relearn_lists,
        search_fraction=search_fraction, seed=seed, fitted=fitted,
    )  # fmt: skip
    if beta < 1.0 and data.n < NEVER_FAILING_BELOW:
        cert_data = certification_part(data, cert, search_fraction=search_fraction, seed=seed)
        path = with_never_failing(path, cert_data, min_decided=min_decided, full=data)
    return path, search.size, cert.size


def _union_choice(
    paths: list[Path], data: StepData, frames: list[pd.DataFrame], *, alpha: float, beta: float,
    min_decided: float, number: bool = True,
) -> tuple[int | None, list[Question] | None]:  # fmt: skip
    """Walk each path at its own share of delta; the suggestion is the best certified by any.

    Every certified candidate of every path holds at once (union bound), so
    the choice among the paths may read anything: it reads every labeled
    submission (answers only), not the part that certified each, and
    :func:`preferred` decides, ties to the first path. Each path's
    candidates are appended to ``frames``, with its position in ``paths`` as
    ``path`` when ``number``.

    Returns
    -------
    (winner, suggested) : tuple
        The position of the path that certified the suggestion and the
        suggestion, or ``(None, None)``.
    """
    winners, counts, picks = [], [], []
    for k, path in enumerate(paths):
        chosen, frame = path.run(alpha=alpha, beta=beta, min_decided=min_decided)
        # Each path's counts are of its own rows (a learned path's of the certification part):
        # a share of them reads its own denominator.
        frame = frame.assign(n_total=path.n_total or data.n)
        frames.append(frame.assign(path=k) if number else frame)
        if chosen is not None:
            r = replay_cached(path.configs[chosen], data)
            winners.append(k)
            counts.append((r.n_pass, r.n_fail))
            picks.append(chosen)
    if not winners:
        return None, None
    # preferred() breaks ties towards the last: reversed, the first path wins them.
    n_pass, n_fail = np.array(counts[::-1], float).T
    j = len(winners) - 1 - preferred(n_pass, n_fail, data.n, min_decided=min_decided)
    return winners[j], paths[winners[j]].configs[picks[j]]
