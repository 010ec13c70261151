"""Suggest check-1 thresholds with a certified bound on false passes and false fails.

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
(:func:`calibrate.analysis.certify.fallback`): checkpoints placed by the
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
  walk's first checkpoint is learned on a stratified fifth of them and the
  passes are certified on the rest.
* **Anything else.** The path must be learned
  (:mod:`calibrate.analysis.learned_path`): a stratified random part of the
  labels (seeded; :func:`search_share`) proposes candidates by block
  coordinate ascent on the Lagrangian of "decide the most within alpha and
  beta" and orders their Pareto front by observed risk; the rest certifies.
  Each candidate is a whole configuration, tested for both rates at once by
  the intersection-union test (p-value = the larger of the two, [3]_), so no
  share of ``delta`` is lost to the pairing.

No configuration may qualify: the result then says ``"insufficient_data"``
(too few labels to certify) or ``"unattainable"`` (every candidate measured
on enough decisions is measurably outside the limits: more labels would not
help). The classification only reads what grows with ``alpha``, so a looser
limit never reads worse. :func:`search_step` then estimates the labels
needed by rerunning the search on resampled data
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from calibrate.analysis import fixed_paths
from calibrate.analysis import needed as needed_mod
from calibrate.analysis.learned_path import (
    answers_path,
    answers_path_applies,
    certification_part,
    joint_path,
)
from calibrate.analysis.paths import (
    NEVER_FAILING_BELOW,
    Path,
    fail_within,
    loosened,
    preferred,
    with_never_failing,
    yes_no_paths,
)
from calibrate.analysis.stats import MIN_N
from calibrate.analysis.step_data import (  # re-exported: the search's public vocabulary
    SEARCH_ANSWER_COLUMNS,
    SEARCH_CHECK_COLUMNS,
    UNKNOWN_MODEL,
    Rates,
    StepData,
    can_fail,
    isin,
    latest_model,
    read_columns,
    replay,
    replay_cached,
    share_check_codes,
    step_data,
    store_step_answers,
    verdict_codes,
)
from calibrate.defaults import (
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    DEFAULT_DELTA,
    MIN_DECIDED,
    NEEDED_MIN_LABELS,
    TRADEOFF_ALPHAS,
)
from calibrate.profile import Kind, Limits, Question
from calibrate.textsafe import NO_MODEL, shown_name, step_name

__all__ = [
    "SEARCH_ANSWER_COLUMNS", "SEARCH_CHECK_COLUMNS", "STATUSES", "UNKNOWN_MODEL", "Path", "Rates",
    "StepData", "StepThresholds", "ThresholdsReport", "TradeoffDisplay", "can_fail",
    "find_thresholds", "isin", "latest_model", "read_columns", "replay", "search_share",
    "search_step", "share_check_codes", "step_data", "store_step_answers", "suggest_from_store",
    "suggest_thresholds", "tradeoff", "verdict_codes", "with_needed",
]  # fmt: skip

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
#: A labels-needed estimate beyond this many is "unattainable", not "insufficient".
MAX_LABELS = needed_mod.MAX_LABELS
#: One rubric or choice question: below this many labels only the fixed paths run (a split
#: would leave too few labels to learn an order from or to certify it with).
FIXED_ONLY_BELOW = 250
#: One choice question with relearned lists: below this many labels its given lists run as fixed
#: paths beside the learned path (each at half of delta); from here the learned path runs alone.
LEARNED_ONLY_FROM = 1000
#: Several questions: below this many labels a path ordered by the answers alone (no label,
#: :func:`~calibrate.analysis.learned_path.answers_path`) runs beside the learned path, tested on
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
#: Statuses of a step's search.
STATUSES = ("ok", "insufficient_data", "unattainable", "selected_sample")


# --------------------------------------------------------------------------- validation


def _validate(alpha: float, delta: float, beta: float) -> None:
    for name, value, closed in (
        ("alpha", alpha, False),
        ("delta", delta, False),
        ("beta", beta, True),
    ):
        ok = isinstance(value, int | float) and math.isfinite(value)
        ok = ok and (0.0 < value <= 1.0 if closed else 0.0 < value < 1.0)
        if not ok:
            span = "(0, 1]" if closed else "(0, 1)"
            raise ValueError(f"{name} must be a number in {span}, got {value!r}")


# --------------------------------------------------------------------------- the result


@dataclass
class StepThresholds:
    """The certified threshold search for one step and model: inspectable afterwards.

    Attributes
    ----------
    process, step, model : str
    status : {"ok", "insufficient_data", "unattainable", "selected_sample"}
        ``"selected_sample"``: the labels include checks decided after the switch (kept by
        ``--with-escalations``), which the enforced check selected: nothing is certified.
    alpha, delta, beta : float
    method : str
        ``"fixed_sequence"`` (one yes/no question, all labels certify),
        ``"fixed_sequence_learned_start"`` (the same from
        :data:`~calibrate.analysis.paths.LEARNED_START_FROM` labels, the pass
        walk's start learned on ``n_search`` of them, the passes certified on
        ``n_certify``, the fails on all),
        ``"fixed_paths"`` (one rubric or choice question under
        :data:`FIXED_ONLY_BELOW` labels: a path per pass level, all labels
        certify), ``"fixed_and_learned_paths"`` (the same at half of delta,
        with a learned path at the other half; ``n_search`` is 0 when a fixed
        path certified the suggestion), ``"learned_path"`` (search part +
        certification part) or ``"answers_and_learned_paths"`` (several
        questions below :data:`ANSWERS_PATH_BELOW` labels: a path ordered by
        the answers alone, tested on every label at :data:`ANSWERS_SHARE` of
        delta, beside the learned path at the rest; ``n_search`` is 0 when
        the answers path certified the suggestion, and the candidates'
        ``path`` says which path each belongs to: 0 the answers path, 1 the
        learned one).
    suggested : list of Question or None
        The certified configuration, or ``None``.
    current : list of Question
        Today's questions and thresholds.
    certified : dict or None
        Only when the status is ``ok``: ``false_pass_upper``,
        ``false_fail_upper`` (``alpha`` and ``beta``; ``None`` when the
        suggestion never fails: there is no false-fail rate to bound),
        ``never_fails`` and ``confidence``, what holds with probability
        ``confidence``. ``None`` otherwise: nothing is certified.
    best_bounds : dict
        ``false_pass_upper``, ``false_fail_upper``, ``confidence``: the lowest
        one-sided bounds a single candidate reached, each at its path's
        level, each side from its own candidate (not the suggestion's
        bounds). A diagnostic, **not a certificate** (the minimum over many
        candidates is optimistic), and marked so: ``certificate`` is
        ``False``.
    expected, current_rates : Rates or None
        The labeled history replayed under the suggestion / today's thresholds.
    candidates : pandas.DataFrame
        Every candidate on every path with counts, exact p-values, bounds, and
        whether it was tested, certified and chosen.
    needed_labels : NeededLabels or None
        When the status is ``insufficient_data`` and :func:`search_step` ran
        the estimate: the labels (in total, same model) at which the search
        certifies a check deciding at least a stated share alone, with the
        probability it carries (:mod:`calibrate.analysis.needed`).
    n_labeled, n_search, n_certify : int
    left_out : dict
    notes : list of str
    monitor_alarm : str or None
        On an enforced step whose monitor alarms (:func:`suggest_from_store`
        reads it): why. The audits then say the work has moved away from the
        labels the search reads, so its certificate, about the work those
        labels came from, is no reason to keep or loosen the check.
    """

    process: str
    step: str
    model: str
    status: str
    alpha: float
    delta: float
    beta: float
    method: str
    suggested: list[Question] | None
    current: list[Question]
    certified: dict[str, float] | None
    best_bounds: dict[str, float | None]
    expected: Rates | None
    current_rates: Rates | None
    candidates: pd.DataFrame
    needed_labels: needed_mod.NeededLabels | None
    n_labeled: int
    n_search: int
    n_certify: int
    left_out: dict[str, int]
    notes: list[str]
    settings: dict[str, Any] = field(default_factory=dict, repr=False)
    data: StepData | None = field(default=None, repr=False)
    monitor_alarm: str | None = None

    @property
    def check(self) -> list[Question]:
        """The questions to paste: the suggestion, or today's when nothing is certified."""
        return self.suggested if self.suggested is not None else self.current

    def check_items(self) -> list[dict[str, Any]]:
        """QUESTION objects: check-1's own keys plus ``kind`` (``one_of``/``levels`` left out)."""
        out = []
        for q in self.check:
            item: dict[str, Any] = {"ask": q.ask, "kind": q.kind.value}
            if q.kind is Kind.YES_NO:
                item["pass"] = q.pass_p
                item["fail"] = q.fail_p
            elif q.kind is Kind.CHOICE:
                item["pass"] = list(q.pass_names)
                item["unsure"] = list(q.unsure_names)
                item["confidence"] = q.confidence
            else:
                item["pass"] = q.pass_level
                item["confidence"] = q.confidence
            out.append(item)
        return out

    def to_dict(self) -> dict[str, Any]:
        """The step object of ``calibrate thresholds --format json`` (issue 5's schema).

        Adds ``needed_labels`` (``{"total", "more", "probability", "weeks", ...}``
        of :meth:`NeededLabels.to_dict`, or ``null``) and ``note``, which the
        readiness assessment reads.
        """
        # Every rate with its counts: a share of ``n``, a false-pass rate of ``n_pass``, ...
        shares = _counted_shares(self.expected)
        cur = self.current_rates
        # Each observed rate with its interval (95% Clopper-Pearson, as the table prints it).
        ci = cur.intervals() if cur is not None else {}
        current = {
            "false_pass_rate": cur.false_pass_rate if cur is not None else None,
            "false_pass_ci": list(ci["false_pass"]) if ci.get("false_pass") else None,
            "k_false_pass": cur.false_pass if cur is not None else None,
            "false_fail_rate": cur.false_fail_rate if cur is not None else None,
            "false_fail_ci": list(ci["false_fail"]) if ci.get("false_fail") else None,
            "k_false_fail": cur.false_fail if cur is not None else None,
            **_counted_shares(cur),
        }
        needed = (
            self.needed_labels.to_dict()
            if self.needed_labels is not None and self.status == "insufficient_data"
            else None
        )
        return {
            "process": self.process,
            "step": self.step,
            "model": self.model,
            "n_labeled": self.n_labeled,
            "left_out": {k: int(v) for k, v in self.left_out.items()},
            "status": self.status,
            "check": self.check_items(),
            "certified": dict(self.certified) if self.certified is not None else None,
            "best_bounds": dict(self.best_bounds),
            "expected": shares,
            "current": current,
            "needed_labels": needed,
            "monitor_alarm": self.monitor_alarm,
            "note": "; ".join(self.notes),
        }

    def tradeoff(self, alphas: Sequence[float] = TRADEOFF_ALPHAS) -> pd.DataFrame:
        """For each ``alpha``: the status, the certified bound and the share decided alone."""
        if self.data is None:
            raise ValueError("this result holds no data to recompute the trade-off")
        return tradeoff(self.data, alphas=alphas, **self.settings)

    def tradeoff_display(self, alphas: Sequence[float] = TRADEOFF_ALPHAS) -> TradeoffDisplay:
        """The trade-off as a :class:`TradeoffDisplay` with this search's point marked."""
        cur = self.current_rates
        current_point = None
        if cur is not None and cur.n and cur.false_pass_rate is not None:
            current_point = (cur.false_pass_rate, (cur.n_pass + cur.n_fail) / cur.n)
        return TradeoffDisplay(
            self.tradeoff(alphas),
            alpha=self.alpha,
            delta=self.delta,
            title=f"{step_name(self.process, self.step)} · model {shown_name(self.model, NO_MODEL)}",
            current=current_point,
        )


def _counted_shares(rates: Rates | None) -> dict[str, float | int | None]:
    """Shares of the labeled checks with their counts (``n``, ``n_pass``, ``n_fail``)."""
    if rates is None:
        return dict.fromkeys(("auto_pass", "auto_fail", "unsure", "n", "n_pass", "n_fail"))
    return {**rates.shares(), "n": rates.n, "n_pass": rates.n_pass, "n_fail": rates.n_fail}


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
        From :func:`step_data`.
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
        Seed of the stratified split.
    judge_unattainable : bool, default=True
        When nothing is certified, tell ``unattainable`` from
        ``insufficient_data`` on a set of candidates that does not move with
        ``alpha`` (a learned path's fronts at :data:`REFERENCE_ALPHAS`: a few
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
    _validate(alpha, delta, beta)
    if search_fraction is None:
        search_fraction = search_share(data.n)
    settings = dict(delta=delta, beta=beta, relearn_lists=relearn_lists,
                    search_fraction=search_fraction, seed=seed)  # fmt: skip
    notes = list(data.notes)
    current_rates = replay_cached(data.questions, data) if all(data.known) and data.n else None
    if not all(data.known):
        notes.append(
            "today's thresholds of some questions are unknown (no process file): no replay"
        )
    single = len(data.questions) == 1 and data.questions[0].kind is Kind.YES_NO
    frames: list[pd.DataFrame] = []
    suggested: list[Question] | None = None
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
        frames.append(f_pass)
        f_fail = None
        if beta < 1.0:
            _, f_fail = fail_path.run(alpha=alpha, beta=beta)
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
        # (union bound; the learned path gets the rest).
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
            notes.append(
                "the suggested check never fails on the answers seen (a choice answer outside its "
                "declared names would fail under check-1): what it does not pass goes to a person"
            )
    else:
        # Nothing certified: too few labels, or no candidate good enough however many labels.
        # The classification reads only what grows with alpha (candidates measurably outside the
        # limits), so a looser limit never reads worse. How many labels would do is estimated
        # apart (calibrate.analysis.needed, by search_step): it reruns this search on resamples.
        certified = None
        sides = ("pass",) if single else ("pass", "fail")
        rows = (
            candidates[candidates["side"] == "pass"]
            if single and not candidates.empty
            else candidates
        )
        if not judge_unattainable:
            rows = rows.iloc[:0]  # not judged: insufficient_data whenever nothing is certified
        elif learned_delta is not None:
            # A learned path's candidates depend on alpha; read instead the fronts learned at a
            # fixed ladder of limits (and the fixed paths' candidates), so that the set judged
            # is the same at every alpha and a looser one can only make fewer of them worse.
            fixed_rows = rows[rows["path"] < n_fixed] if n_fixed else rows.iloc[:0]
            reference = _reference_candidates(
                data, delta=learned_delta, beta=beta, relearn_lists=relearn_lists,
                search_fraction=search_fraction, seed=seed,
            )  # fmt: skip
            rows = pd.concat([fixed_rows, reference], ignore_index=True)
        worse = _measurably_worse(rows, alpha=alpha, beta=beta, delta=delta, sides=sides)
        status = "unattainable" if worse else "insufficient_data"
    expected = replay_cached(suggested, data) if suggested is not None else current_rates
    # Marked in itself: a script reading the JSON finds it beside `certified` (black-box run).
    best_bounds = {**_best_bounds(candidates), "confidence": 1 - delta, "certificate": False}
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
        candidates=candidates,
        needed_labels=None,
        n_labeled=data.n,
        n_search=n_search,
        n_certify=n_cert,
        left_out=dict(data.left_out),
        notes=notes,
        settings=settings,
        data=data,
    )


def _learned_path(
    data: StepData, *, alpha: float, delta: float, beta: float, relearn_lists: bool,
    search_fraction: float, seed: int, min_decided: float,
) -> tuple[Path, int, int]:  # fmt: skip
    """The learned path (:func:`joint_path`) and the sizes of its search and certification parts.

    On fewer than :data:`NEVER_FAILING_BELOW` labels its never-failing twins
    come first (:func:`~calibrate.analysis.paths.with_never_failing`), only
    those passing at least ``min_decided`` of the certification part (a twin
    decides only what it passes). With false fails uncontrolled
    (``beta = 1``) no candidate has a false-fail test to spare.
    """
    path, search, cert = joint_path(
        data, alpha=alpha, delta=delta, beta=beta, relearn_lists=relearn_lists,
        search_fraction=search_fraction, seed=seed,
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


#: Limits at which learned fronts are laid out to judge ``unattainable`` when nothing is certified:
#: fixed, so the candidates judged do not move with alpha.
REFERENCE_ALPHAS = (0.01, 0.03, 0.05, 0.1, 0.2, 0.3)


def _reference_candidates(
    data: StepData, *, delta: float, beta: float, relearn_lists: bool, search_fraction: float,
    seed: int,
) -> pd.DataFrame:  # fmt: skip
    """Counts on the certification part of the fronts learned at :data:`REFERENCE_ALPHAS`."""
    key = ("reference_fronts", delta, beta, relearn_lists, search_fraction, seed)
    if key not in data.cache:
        frames = []
        for a in REFERENCE_ALPHAS:
            path, _, _ = joint_path(
                data, alpha=a, delta=delta, beta=beta, relearn_lists=relearn_lists,
                search_fraction=search_fraction, seed=seed,
            )  # fmt: skip
            frames.append(
                pd.DataFrame(
                    {
                        "side": "joint",
                        "n_pass": path.n_pass,
                        "false_pass": path.false_pass,
                        "n_fail": np.where(path.never_fails, 0, path.n_fail),
                        "false_fail": np.where(path.never_fails, 0, path.false_fail),
                    }
                )
            )
        data.cache[key] = pd.concat(frames, ignore_index=True)
    return data.cache[key]


def _measurably_worse(
    frame: pd.DataFrame, *, alpha: float, beta: float, delta: float, sides: Sequence[str]
) -> bool:
    """Whether every candidate measured on ``MIN_N`` decisions is measurably outside the limits.

    Measurably: the one-sided Clopper-Pearson *lower* bound at ``1 - delta``
    of a tested rate is above its limit. Then more labels would not help,
    and the status is ``unattainable``; a rate merely observed above the
    limit on a few dozen decisions is not evidence enough. A looser limit
    can only make fewer candidates measurably worse.
    """
    if frame.empty:
        return False
    outside = np.zeros(len(frame), bool)
    measured = np.ones(len(frame), bool)
    for side in sides:
        if side == "fail" and beta >= 1.0:
            continue
        n_col, k_col, limit = (
            ("n_pass", "false_pass", alpha) if side == "pass" else ("n_fail", "false_fail", beta)
        )
        n = frame[n_col].to_numpy(float)
        k = frame[k_col].to_numpy(float)
        measured &= (n >= MIN_N) | (n == 0)
        with np.errstate(invalid="ignore"):
            lower = np.where(k > 0, stats.beta.ppf(delta, np.maximum(k, 1), n - k + 1), 0.0)
        outside |= (n >= MIN_N) & (lower > limit)
    measured &= (frame["n_pass"].to_numpy() + frame["n_fail"].to_numpy()) >= MIN_N
    return bool(measured.any() and outside[measured].all())


def _best_bounds(candidates: pd.DataFrame) -> dict[str, float | None]:
    """The lowest single-candidate bounds reached, each side from its own candidate: a
    diagnostic, not a certificate.

    The false-pass bound is the lowest over candidates that pass something, the false-fail
    bound the lowest over candidates that fail something (a candidate that fails nothing has
    no false-fail rate: it read 0 and won every joint comparison). ``None`` where none does.
    """
    out: dict[str, float | None] = {"false_pass_upper": None, "false_fail_upper": None}
    if candidates.empty:
        return out
    # Column arrays, not filtered frames: a mask over every column of 10k rows costs milliseconds.
    side = candidates["side"].to_numpy()
    for name, n_col, c in (
        ("pass", "n_pass", "false_pass_upper"),
        ("fail", "n_fail", "false_fail_upper"),
    ):
        values = candidates[c].to_numpy(float)[
            ((side == name) | (side == "joint")) & (candidates[n_col].to_numpy() > 0)
        ]
        if values.size:
            out[c] = float(pd.Series(values).min())  # NaN skipped, as a frame's min does
    return out


# --------------------------------------------------------------------------- many steps


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
    needed_share: float | None = needed_mod.DEFAULT_SHARE,
    needed_probability: float = needed_mod.DEFAULT_PROBABILITY,
    keep_after_switch: bool = False,
) -> StepThresholds:
    """:func:`step_data` then :func:`find_thresholds` for one step's checks and answers.

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
    share: float = needed_mod.DEFAULT_SHARE,
    probability: float = needed_mod.DEFAULT_PROBABILITY,
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
    est = needed_mod.estimate_needed(
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
        :func:`calibrate.dataset.process_questions`.
    keep_after_switch : bool, default=False
        Keep labels of checks recorded with ``advisory: false`` (see :func:`search_step`).
    """
    _validate(alpha, delta, beta)

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
    """
    from calibrate.dataset import Filters, answers, limits, process_questions

    filters = filters or Filters()
    # --with-escalations keeps every decision after the switch, audits included.
    kwargs = {"alpha": DEFAULT_ALPHA, "delta": DEFAULT_DELTA, "beta": DEFAULT_BETA,
              "keep_after_switch": bool(filters.escalations), **kwargs}  # fmt: skip
    _validate(kwargs["alpha"], kwargs["delta"], kwargs["beta"])
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


# --------------------------------------------------------------------------- the trade-off


def tradeoff(
    data: StepData,
    *,
    alphas: Sequence[float] = TRADEOFF_ALPHAS,
    delta: float = DEFAULT_DELTA,
    beta: float = DEFAULT_BETA,
    relearn_lists: bool = False,
    search_fraction: float | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """For each ``alpha``: status, certified bound and the shares decided without a person.

    Returns
    -------
    pandas.DataFrame
        Columns ``alpha``, ``status``, ``certified_false_pass`` (``alpha``
        when certified, else ``nan``), ``observed_false_pass`` (the replayed
        rate, with ``n_pass``), ``auto_pass``, ``auto_fail``, ``coverage``.
    """
    rows = []
    for a in alphas:
        r = find_thresholds(data, alpha=float(a), delta=delta, beta=beta, relearn_lists=relearn_lists,
                            search_fraction=search_fraction, seed=seed)  # fmt: skip
        ok = r.status == "ok"
        exp = r.expected if ok else None
        shares = exp.shares() if exp is not None else {"auto_pass": 0.0, "auto_fail": 0.0}
        rows.append(
            {
                "alpha": float(a),
                "status": r.status,
                "certified_false_pass": float(a) if ok else math.nan,
                "observed_false_pass": (
                    exp.false_pass_rate if exp and exp.false_pass_rate is not None else math.nan
                ),
                "n_pass": exp.n_pass if exp else 0,
                "auto_pass": shares["auto_pass"] or 0.0,
                "auto_fail": shares["auto_fail"] or 0.0,
                "coverage": (shares["auto_pass"] or 0.0) + (shares["auto_fail"] or 0.0),
            }
        )
    return pd.DataFrame(rows)


class TradeoffDisplay:
    """Certified false-pass bound against the share decided without a person.

    Parameters
    ----------
    frame : pandas.DataFrame
        From :func:`tradeoff`.
    alpha : float
        The suggested point (marked).
    delta : float
    title : str
    current : tuple of float, optional
        ``(false-pass rate, coverage)`` of today's thresholds, marked as a cross.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"alpha": [0.05, 0.1], "status": ["ok", "ok"],
    ...     "certified_false_pass": [0.05, 0.1], "observed_false_pass": [0.02, 0.06],
    ...     "n_pass": [300, 400], "auto_pass": [0.5, 0.6], "auto_fail": [0.1, 0.1],
    ...     "coverage": [0.6, 0.7]})
    >>> disp = TradeoffDisplay(frame, alpha=0.05).plot()
    >>> disp.ax_.get_xlabel()
    'certified false-pass bound (alpha)'
    """

    def __init__(
        self,
        frame: pd.DataFrame,
        *,
        alpha: float,
        delta: float = DEFAULT_DELTA,
        title: str = "",
        current: tuple[float, float] | None = None,
    ) -> None:
        self.frame = frame
        self.alpha = alpha
        self.delta = delta
        self.title = title
        self.current = current

    def plot(self, ax: Any = None) -> TradeoffDisplay:
        """Draw on ``ax`` (a new figure when ``None``); returns ``self`` with ``ax_`` and ``figure_``."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(7.5, 4), layout="constrained")
        f = self.frame
        ok = f["status"] == "ok"
        ax.plot(f["alpha"], f["coverage"].where(ok, 0.0), "o-", color="C0",
                label="decided without a person")  # fmt: skip
        ax.plot(f["alpha"], f["auto_pass"].where(ok, 0.0), "s--", color="C2", alpha=0.7,
                label="auto pass")  # fmt: skip
        if (~ok).any():
            ax.plot(f.loc[~ok, "alpha"], np.zeros(int((~ok).sum())), "x", color="C3",
                    label="nothing certified")  # fmt: skip
        here = f[np.isclose(f["alpha"], self.alpha)]
        if not here.empty:
            ax.axvline(self.alpha, color="0.5", lw=0.8, ls=":")
            # A suggestion exists only where something was certified; otherwise the line marks
            # the alpha asked for, said as such.
            if (here["status"] == "ok").any():
                ax.plot(here["alpha"], here["coverage"], "*", ms=16, color="C1",
                        label=f"suggested (alpha = {self.alpha:g})")  # fmt: skip
            else:
                ax.plot([], [], ls=":", color="0.5",
                        label=f"alpha = {self.alpha:g}: nothing certified")  # fmt: skip
        if self.current is not None:
            ax.plot([self.current[0]], [self.current[1]], "P", ms=10, color="C4",
                    label="today (observed false-pass rate)")  # fmt: skip
        ax.set_xlabel("certified false-pass bound (alpha)")
        ax.set_ylabel("share decided without a person")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(self.title or f"Trade-off at {1 - self.delta:.0%} confidence")
        # The legend sits outside the axes, so it never hides a point.
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", frameon=False)
        self.ax_ = ax
        self.figure_ = ax.figure
        return self
