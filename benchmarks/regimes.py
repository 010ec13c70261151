"""Generative regimes for the power study of the threshold search (issue 14).

Each regime draws, for ``n`` submissions, what an evaluator answered to the
questions of a check, the true probability that an approver labels the
submission acceptable, and that label. The power study
(:mod:`benchmarks.power`) and the validity tests
(``tests/test_search_validity.py``) import it, so both measure on the same
worlds.

The story behind every regime
-----------------------------
A submission is one of four kinds:

* **easy, good** (share ``easy * easy_good``): plainly acceptable, and the
  evaluator says so at the top of its scale: a yes-probability of 0.99, 0.999
  or 1.0 (ties, as LLM judges give them), the top rubric levels, the best
  choice, each with confidence 0.99, 0.999 or 1.0;
* **easy, bad** (share ``easy * (1 - easy_good)``): plainly unacceptable, and
  the evaluator says so at the bottom of its scale, as sure;
* **trap** (share ``traps``): a confident mistake; a submission that is not
  acceptable (true probability ``TRAP_ACCEPT``) but looks polished, which the
  evaluator answers like an easy good one, mostly at 1.0, so the error rate
  is *higher* at the very top of the scale than just below it;
* **hard** (the rest): a latent quality ``z ~ N(0, 1)``; the true probability
  of being acceptable is ``Phi((z - Z0) / TAU)``; the evaluator reads
  ``s = z + sigma * e`` (one independent ``e`` per question, so the answers
  of several questions are correlated through ``z``), computes the exact
  posterior of what it is asked, and states it sharpened by ``sharpen``
  (``1`` is calibrated, ``> 1`` overconfident). Where the regime has an easy
  cluster, a hard answer is capped at ``HARD_CAP``: the evaluator keeps the
  top of its scale for the easy ones.

The approver flips the label with probability ``noise`` (their own
mistakes). What the check is judged against is the label, so the *true
acceptability probability* of a submission is
``q * (1 - noise) + (1 - q) * noise``: a rate computed with it is the expected
false-pass or false-fail rate the approvers would see.

The four evaluators (:data:`EVALUATORS`)
----------------------------------------
``calibrated``
    No easy cluster, ``sigma = 0.5``, stated probabilities are the exact
    posteriors; no approver noise.
``overconfident``
    75% easy (93% of them good), the hard rest read with ``sigma = 0.6`` and
    sharpened 2.5x; approver noise 3%. Most yes/no answers are at p >= 0.99
    and the only errors among them are the approvers' noise.
``confident_errors``
    60% easy, 5% traps answered at the top: the error rate among the top
    answers is not monotone in the score (highest at 1.0); noise 2%.
``near_chance``
    No easy cluster, ``sigma = 4`` (the answer carries little about the
    quality), sharpened 2x so the stated probabilities still spread out.

The question sets (:data:`QUESTION_SETS`)
-----------------------------------------
``yes_no``
    one yes/no question ("acceptable?"): its posterior is the probability of
    being acceptable.
``rubric``
    one rubric with five levels 0..4, cut from ``z`` at :data:`LEVEL_CUTS`;
    the evaluator answers its most likely level and that level's
    probability.
``choice``
    one choice among ``meets``, ``partly``, ``misses`` (cut from ``z`` at
    :data:`CHOICE_CUTS`) and ``unclear``, which the evaluator answers when its
    most likely name has a posterior below ``UNCLEAR_BELOW`` (confidence: one
    minus that posterior).
``three``
    the yes/no, a three-name choice (no ``unclear``) and the rubric on the
    same submissions.

Nothing here is tuned to a method: the numbers are set to look like LLM
judges (ties at the top, two-decimal answers below) and like the base rates
of a review queue (about 70% acceptable).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from calibrate.analysis.thresholds import StepData
from calibrate.profile import Kind, Question

#: Hard submissions: acceptable with probability Phi((z - Z0) / TAU).
Z0, TAU = -0.5, 0.4
#: Rubric levels 0..4 are z cut at these points.
LEVEL_CUTS = np.array([-1.5, -0.9, -0.3, 0.6])
#: Choice names from the best to the worst, cut from z, and the evaluator's own "unclear".
CHOICE_NAMES = ("meets", "partly", "misses")
CHOICE_CUTS = np.array([-0.7, 0.3])  # misses | partly | meets
UNCLEAR = "unclear"
UNCLEAR_BELOW = 0.5
#: What an easy answer says: ties at 0.99, 0.999 and 1.0 (a share TOP_TIES, in TOP_WEIGHTS), else
#: a value in between, 1 - 10**-u with u uniform on (2, 5), written with six decimals (as
#: log-probabilities give them). Exactly 1.0 is the rarest tie: the strict end of a threshold
#: path is thin, as in the judges issue 14 measured (p >= 0.998 passed 2%).
TOP_VALUES = np.array([0.99, 0.999, 1.0])
TOP_WEIGHTS = np.array([0.45, 0.45, 0.10])
TOP_TIES = 0.6
TRAP_VALUES = np.array([0.999, 1.0])
TRAP_WEIGHTS = np.array([0.4, 0.6])
#: True acceptability of a trap (before the approvers' noise).
TRAP_ACCEPT = 0.1
#: Where a regime has an easy cluster, a hard answer stays below the top.
HARD_CAP = 0.98


@dataclass(frozen=True)
class Evaluator:
    """How an evaluator answers and how noisy its approvers are (see the module doc)."""

    name: str
    easy: float = 0.0
    easy_good: float = 0.93
    traps: float = 0.0
    sigma: float = 0.5
    sharpen: float = 1.0
    noise: float = 0.0
    describe: str = ""


EVALUATORS: dict[str, Evaluator] = {
    e.name: e
    for e in (
        Evaluator("calibrated", describe="well calibrated, no easy cluster, no approver noise"),
        Evaluator(
            "overconfident", easy=0.75, sigma=0.6, sharpen=2.5, noise=0.03,
            describe="75% answered at p >= 0.99 (only approver noise, 3%, among them), "
            "the rest sharpened 2.5x",
        ),
        Evaluator(
            "confident_errors", easy=0.60, traps=0.05, sigma=0.6, sharpen=2.5, noise=0.02,
            describe="60% easy plus 5% confident mistakes at the very top (error rate not "
            "monotone in the score), approver noise 2%",
        ),
        Evaluator("near_chance", sigma=4.0, sharpen=2.0,
                  describe="answers carry little information, stated confidences spread out"),
    )
}  # fmt: skip

QUESTION_SETS = ("yes_no", "rubric", "choice", "three")
RUBRIC_LEVELS = 5


@dataclass
class Sample:
    """``n`` submissions of one regime: answers per question, true probabilities, labels.

    Attributes
    ----------
    questions : list of Question
        The check's questions with check-1's default thresholds (what a
        process file without tuned thresholds would say).
    answer, confidence : list of ndarray
        Per question, as :class:`~calibrate.analysis.thresholds.StepData`
        holds them (confidence ``nan`` for a yes/no question).
    p_accept : ndarray
        True probability that the label is "acceptable" (approver noise included).
    acceptable : ndarray of bool
        The label drawn from it.
    """

    qset: str
    evaluator: str
    questions: list[Question]
    answer: list[np.ndarray]
    confidence: list[np.ndarray]
    p_accept: np.ndarray
    acceptable: np.ndarray

    @property
    def n(self) -> int:
        return int(self.acceptable.size)

    def step_data(self, idx: np.ndarray | None = None) -> StepData:
        """The sample (or rows ``idx`` of it) as the threshold search takes it.

        A choice question's lists are its declared ones (today's thresholds,
        as a process file gives them: check-1 requires ``pass``); the study
        searches with ``relearn_lists=True``, so the search may relearn them.
        """
        idx = np.arange(self.n) if idx is None else np.asarray(idx)
        n = idx.size
        return StepData(
            process="power",
            step=f"{self.qset}/{self.evaluator}",
            model="simulated",
            questions=list(self.questions),
            known=[True] * len(self.questions),
            check_id=np.arange(n).astype(str),
            acceptable=self.acceptable[idx],
            answer=[a[idx] for a in self.answer],
            confidence=[c[idx] for c in self.confidence],
            forced_unsure=np.zeros(n, bool),
        )


def yes_no_question() -> Question:
    return Question("The submission is acceptable.", Kind.YES_NO, pass_p=0.9)


def rubric_question() -> Question:
    levels = ("unusable", "major gaps", "borderline", "good", "excellent")
    return Question("How good is the submission?", Kind.RUBRIC, pass_level=3, confidence=0.8,
                    levels=levels)  # fmt: skip


def choice_question(with_unclear: bool) -> Question:
    names = CHOICE_NAMES + ((UNCLEAR,) if with_unclear else ())
    one_of = {name: name for name in names}
    return Question(
        "Does the submission do what was asked?", Kind.CHOICE, pass_names=(CHOICE_NAMES[0],),
        unsure_names=(UNCLEAR,) if with_unclear else (), confidence=0.8, one_of=one_of,
    )  # fmt: skip


def questions_of(qset: str) -> list[Question]:
    """The questions of a question set (check-1 defaults as today's thresholds)."""
    if qset == "yes_no":
        return [yes_no_question()]
    if qset == "rubric":
        return [rubric_question()]
    if qset == "choice":
        return [choice_question(with_unclear=True)]
    if qset == "three":
        return [yes_no_question(), choice_question(with_unclear=False), rubric_question()]
    raise ValueError(f"unknown question set {qset!r}; known: {', '.join(QUESTION_SETS)}")


# --------------------------------------------------------------------------- drawing


def _sharpened(post: np.ndarray, k: float) -> np.ndarray:
    """Posterior probabilities (last axis) raised to ``k`` and renormalised."""
    if k == 1.0:
        return post
    w = np.power(np.clip(post, 1e-300, 1.0), k)
    return w / w.sum(axis=-1, keepdims=True)


def _interval_probs(mean: np.ndarray, sd: float, cuts: np.ndarray) -> np.ndarray:
    """P(z in each interval between ``cuts``) for z ~ N(mean, sd); shape (n, len(cuts) + 1)."""
    edges = np.r_[-np.inf, cuts, np.inf]
    cdf = special.ndtr((edges[None, :] - mean[:, None]) / sd)
    return np.clip(np.diff(cdf, axis=1), 0.0, 1.0)


def _stated(x: np.ndarray, ev: Evaluator) -> np.ndarray:
    """Round a hard answer as an LLM states it: two decimals, capped below the easy answers' top."""
    if ev.easy > 0 or ev.traps > 0:
        return np.clip(np.round(x, 2), 0.0, HARD_CAP)
    return np.round(x, 3)


def _top(rng: np.random.Generator, n: int) -> np.ndarray:
    """Easy answers' probabilities or confidences: ties at the atoms, else between them."""
    ties = TOP_VALUES[rng.choice(TOP_VALUES.size, size=n, p=TOP_WEIGHTS)]
    between = np.round(1.0 - 10.0 ** -rng.uniform(2.0, 5.0, size=n), 6)
    return np.where(rng.random(n) < TOP_TIES, ties, between)


def _trap(rng: np.random.Generator, n: int) -> np.ndarray:
    return TRAP_VALUES[rng.choice(TRAP_VALUES.size, size=n, p=TRAP_WEIGHTS)]


def draw(qset: str, evaluator: str | Evaluator, n: int, rng: Any) -> Sample:
    """Draw ``n`` submissions of ``qset`` answered by ``evaluator``.

    Parameters
    ----------
    qset : {"yes_no", "rubric", "choice", "three"}
    evaluator : str or Evaluator
        A name from :data:`EVALUATORS` or an :class:`Evaluator`.
    n : int
    rng : numpy Generator or seed

    Returns
    -------
    Sample

    Examples
    --------
    >>> s = draw("yes_no", "overconfident", 20_000, 0)
    >>> bool((s.answer[0] >= 0.99).mean() > 0.5)
    True
    >>> round(float(1 - s.p_accept[s.answer[0] >= 0.99].mean()), 3)
    0.03
    """
    ev = EVALUATORS[evaluator] if isinstance(evaluator, str) else evaluator
    rng = np.random.default_rng(rng)
    questions = questions_of(qset)
    # The kind of each submission: 0 hard, 1 easy good, 2 easy bad, 3 trap.
    probs = np.array([1 - ev.easy - ev.traps, ev.easy * ev.easy_good,
                      ev.easy * (1 - ev.easy_good), ev.traps])  # fmt: skip
    kind = rng.choice(4, size=n, p=probs / probs.sum())
    hard, good, bad, trap = (kind == k for k in range(4))
    z = rng.standard_normal(n)
    q = special.ndtr((z - Z0) / TAU)
    q[good], q[bad], q[trap] = 1.0, 0.0, TRAP_ACCEPT
    p_accept = q * (1 - ev.noise) + (1 - q) * ev.noise
    acceptable = rng.random(n) < p_accept
    # The evaluator's read of a hard submission: posterior of z given s = z + sigma * e.
    shrink = 1.0 / (1.0 + ev.sigma**2)
    post_sd = float(np.sqrt(ev.sigma**2 * shrink))
    answers: list[np.ndarray] = []
    confidences: list[np.ndarray] = []
    for question in questions:
        m = (z + ev.sigma * rng.standard_normal(n)) * shrink
        if question.kind is Kind.YES_NO:
            p_cal = special.ndtr((m - Z0) / np.sqrt(TAU**2 + post_sd**2))
            post = np.column_stack([1 - p_cal, p_cal])
            p = _stated(_sharpened(post, ev.sharpen)[:, 1], ev)
            p[good] = _top(rng, int(good.sum()))
            p[bad] = np.round(1.0 - _top(rng, int(bad.sum())), 6)
            p[trap] = _trap(rng, int(trap.sum()))
            answers.append(p)
            confidences.append(np.full(n, np.nan))
            continue
        top_conf = _top(rng, n)
        trap_conf = _trap(rng, n)
        easy = good | bad
        if question.kind is Kind.RUBRIC:
            post = _sharpened(_interval_probs(m, post_sd, LEVEL_CUTS), ev.sharpen)
            level = post.argmax(axis=1).astype(float)
            conf = _stated(post.max(axis=1), ev)
            level[good] = rng.choice([3.0, 4.0], size=int(good.sum()), p=[0.4, 0.6])
            level[bad] = rng.choice([0.0, 1.0], size=int(bad.sum()), p=[0.5, 0.5])
            level[trap] = 4.0
            conf[easy], conf[trap] = top_conf[easy], trap_conf[trap]
            answers.append(level)
            confidences.append(conf)
            continue
        # Choice: the posterior of the three named classes (best first).
        post = _sharpened(_interval_probs(m, post_sd, CHOICE_CUTS)[:, ::-1], ev.sharpen)
        best = post.argmax(axis=1)
        conf = post.max(axis=1)
        names = np.asarray(CHOICE_NAMES, dtype=object)[best]
        if UNCLEAR in question.one_of:
            unsure = conf < UNCLEAR_BELOW
            names[unsure] = UNCLEAR
            conf = np.where(unsure, 1.0 - conf, conf)
        conf = _stated(conf, ev)
        names[good] = CHOICE_NAMES[0]
        names[bad] = CHOICE_NAMES[-1]
        names[trap] = CHOICE_NAMES[0]
        conf[easy], conf[trap] = top_conf[easy], trap_conf[trap]
        answers.append(names)
        confidences.append(conf)
    return Sample(qset, ev.name, questions, answers, confidences, p_accept, acceptable)


# --------------------------------------------------------------------------- true rates


def true_rates(questions: list[Question], sample: Sample) -> dict[str, float]:
    """Expected shares and error rates of a configuration on a (large) sample.

    The verdict is check-1's (:func:`calibrate.profile.decide` and
    :func:`~calibrate.profile.worst`); the rates use the true acceptability
    probabilities, not the drawn labels: ``false_pass`` is the mean of
    ``1 - p_accept`` over the passed submissions, ``false_fail`` the mean of
    ``p_accept`` over the failed ones (``0`` when none is passed or failed).
    """
    from calibrate.profile import FAIL, PASS, decide, worst

    codes = worst(
        np.column_stack(
            [
                decide(q, a, c)
                for q, a, c in zip(questions, sample.answer, sample.confidence, strict=True)
            ]
        )
    )
    passed, failed = codes == PASS, codes == FAIL
    n_pass, n_fail = int(passed.sum()), int(failed.sum())
    return {
        "auto_pass": n_pass / sample.n,
        "auto_fail": n_fail / sample.n,
        "decided": (n_pass + n_fail) / sample.n,
        "false_pass": float((1 - sample.p_accept[passed]).mean()) if n_pass else 0.0,
        "false_fail": float(sample.p_accept[failed].mean()) if n_fail else 0.0,
    }
