"""Candidate paths of the threshold search, strictest first, and the walk along one.

A :class:`Path` holds the counts of its candidates on the data that
certifies them and runs the fallback walk of :mod:`calibrate.analysis.certify`
on them. One yes/no question has two paths known before any label is seen
(:func:`yes_no_paths`); anything else has a path learned on a split of the
labels (:mod:`calibrate.analysis.learned_path`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from calibrate.analysis import certify, fallback_walk, score_paths
from calibrate.analysis.step_data import StepData, can_fail, replay_cached
from calibrate.profile import Kind, Question

# --------------------------------------------------------------------------- candidates and the path

#: What a fail is worth beside a pass when the search picks among certified candidates: a pass
#: completes the work with no one involved; a fail saves the person's review, but the work comes
#: back to be redone (and a false fail throws good work away).
FAIL_WORTH = 0.5


def worth(n_pass: np.ndarray | float, n_fail: np.ndarray | float) -> np.ndarray:
    """The work a candidate saves: its passes plus :data:`FAIL_WORTH` times its fails."""
    return np.asarray(n_pass, float) + FAIL_WORTH * np.asarray(n_fail, float)


def preferred(
    n_pass: np.ndarray, n_fail: np.ndarray, n_total: float, *, min_decided: float = 0.0
) -> int:
    """The candidate the search suggests among certified ones (their counts, in path order).

    Among the candidates deciding at least ``min_decided`` of ``n_total``
    alone (all of them when none does), the one saving the most work
    (:func:`worth`), then passing the most, then the last (the loosest).
    Every certified candidate holds at once, so the choice may read anything.

    Parameters
    ----------
    n_pass, n_fail : numpy.ndarray
        Passes and fails of each certified candidate.
    n_total : float
        Submissions the counts are out of.
    min_decided : float, default=0.0
        Share of ``n_total`` a useful check decides alone (readiness'
        ``min_coverage``): a check deciding less is chosen only when no
        certified one decides as much.

    Returns
    -------
    int
        Index of the chosen candidate.
    """
    n_pass, n_fail = np.asarray(n_pass, float), np.asarray(n_fail, float)
    useful = n_pass + n_fail >= min_decided * n_total - 1e-9
    saved = np.where(useful if useful.any() else True, worth(n_pass, n_fail), -1.0)
    passed = np.where(saved == saved.max(), n_pass, -1.0)
    return int(np.flatnonzero(passed == passed.max())[-1])


@dataclass
class Path:
    """Candidates in fixed-sequence order (strictest first) with their counts on the certification data.

    One ``Path`` is tested as one sequence. ``tests`` says which rates it
    certifies: ``("pass",)``, ``("fail",)`` or ``("pass", "fail")`` (jointly,
    by the intersection-union test).
    """

    side: str
    tests: tuple[str, ...]
    n_pass: np.ndarray
    false_pass: np.ndarray
    n_fail: np.ndarray
    false_fail: np.ndarray
    never_fails: np.ndarray
    describe: list[str]
    delta: float
    configs: list[list[Question]] | None = None
    thresholds: np.ndarray | None = None  # one-score paths: the grid threshold per candidate
    below: np.ndarray | None = None  # one-score paths: the interval deciding alike, (below, above]
    above: np.ndarray | None = None
    n_total: int = 0
    #: Share of the limit the first checkpoint is placed for (:func:`fallback_walk.power_start`).
    power_share: float = fallback_walk.POWER_SHARE
    #: The first checkpoint's count when learned on a search part
    #: (:func:`fallback_walk.learned_start`).
    start: float | None = None
    #: Labels that learned the start (0: every label certifies).
    n_search: int = 0
    #: Candidates that share the later checkpoints' weight
    #: (:func:`fallback_walk.checkpoint_weights`):
    #: :data:`fallback_walk.SPREAD` on a learned path and on a rubric/choice question's fixed paths
    #: (from :data:`fallback_walk.SPREAD_FROM` labels), 0 elsewhere.
    spread: int = 0
    #: One yes/no question's pass path: the false-pass rate its yes-probabilities predict at each
    #: candidate (:func:`score_paths.predicted_false_pass`, answers only), which vouches for a later
    #: first checkpoint and drops hopeless later ones; ``None`` elsewhere (counts only).
    predicted: np.ndarray | None = None

    def __post_init__(self) -> None:
        # A check the rule says never fails, yet fails labeled rows (a choice answer outside its
        # declared names fails under check-1), is tested on its fails like any other.
        self.never_fails = np.asarray(self.never_fails, bool) & (np.asarray(self.n_fail) == 0)

    def pvalues(self, *, alpha: float, beta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Exact p-values: for false passes, for false fails, and the one tested (their max)."""
        pp = certify.binomial_pvalues(self.false_pass, self.n_pass, limit=alpha)
        pf = certify.binomial_pvalues(self.false_fail, self.n_fail, limit=beta)
        pf = np.where(self.never_fails | (beta >= 1.0), 0.0, pf)
        zero = np.zeros_like(pp)
        p = np.maximum(pp if "pass" in self.tests else zero, pf if "fail" in self.tests else zero)
        return pp, pf, p

    def testable(self, *, alpha: float, beta: float) -> np.ndarray:
        """Candidates some outcome could reject at the path's level: the others are stepped over.

        A candidate with fewer than :func:`~calibrate.analysis.certify.min_count`
        decisions on a tested side cannot be rejected whatever its labels;
        which ones these are depends on the counts alone.
        """
        ok = np.ones(self.n_pass.shape, bool)
        if "pass" in self.tests:
            ok &= self.n_pass >= certify.min_count(alpha, self.delta)
        if "fail" in self.tests and beta < 1.0:
            ok &= self.never_fails | (self.n_fail >= certify.min_count(beta, self.delta))
        return ok

    def testable_at_any_alpha(self, *, beta: float) -> np.ndarray:
        """The part of :meth:`testable` that does not move with alpha: candidates that pass
        something and, when they fail anything, fail enough to be tested at ``beta``."""
        return self.testable(alpha=1.0, beta=beta) & (self.n_pass > 0)

    def weights(self, *, alpha: float, beta: float) -> np.ndarray:
        """Fallback weights (summing to the path's level) on the testable candidates.

        Checkpoints are placed by the decisions the path's main test counts
        (passes, or fails on a fail path), see
        :func:`~calibrate.analysis.fallback_walk.checkpoint_weights`.
        """
        tested = self.testable(alpha=alpha, beta=beta)
        if self.side == "fail":
            counts, limit = self.n_fail, beta
        else:
            counts, limit = self.n_pass, alpha
        return fallback_walk.checkpoint_weights(
            counts,
            limit=limit,
            level=self.delta,
            testable=tested,
            power_share=self.power_share,
            start=self.start,
            spread=self.spread,
            predicted=self.predicted if self.side == "pass" else None,
        )

    def run(
        self, *, alpha: float, beta: float, min_decided: float = 0.0
    ) -> tuple[int | None, pd.DataFrame]:
        """The fallback walk along the path; the chosen index and every candidate's numbers.

        Every rejected candidate is certified (all at once, with probability
        at least ``1 - delta`` of the path); the one chosen is
        :func:`preferred` on the certification data (deciding at least
        ``min_decided`` of it where one does, then the most work saved).
        """
        pp, pf, p = self.pvalues(alpha=alpha, beta=beta)
        tested = self.testable(alpha=alpha, beta=beta)
        weights = self.weights(alpha=alpha, beta=beta)
        order = np.flatnonzero(tested)
        _, lv, rej = fallback_walk.fallback(p[order], weights[order])
        levels = np.zeros(p.shape)
        certified = np.zeros(p.shape, bool)
        levels[order], certified[order] = lv, rej
        chosen = None
        if certified.any():
            idx = np.flatnonzero(certified)
            n_total = self.n_total or float(np.max(self.n_pass + self.n_fail))
            k = preferred(self.n_pass[idx], self.n_fail[idx], n_total, min_decided=min_decided)
            chosen = int(idx[k])
        frame = pd.DataFrame(
            {
                "side": self.side,
                "position": np.arange(p.size),
                "thresholds": self.describe,
                "n_pass": self.n_pass,
                "false_pass": self.false_pass,
                "n_fail": self.n_fail,
                "false_fail": self.false_fail,
                "false_pass_upper": certify.upper_bound(
                    self.false_pass, self.n_pass, delta=self.delta
                ),
                "false_fail_upper": np.where(
                    self.never_fails,
                    0.0,
                    certify.upper_bound(self.false_fail, self.n_fail, delta=self.delta),
                ),
                "p_false_pass": pp,
                "p_false_fail": pf,
                "p_value": p,
                "weight": weights,
                "level": levels,
                "tested": tested,
                "certified": certified,
                "chosen": np.arange(p.size) == (chosen if chosen is not None else -1),
            }
        )
        return chosen, frame


#: Below this many labels a learned path's failing candidates are preceded by their never-failing
#: twins (:func:`with_never_failing`). On a few hundred labels a learned candidate fails 8 to 40
#: submissions, whose false-fail test cannot pass on one or two false fails (0.3 with 15 fails
#: and 2 wrong: p = 0.13), while its passes pass easily. From 1,500 labels the fails are
#: testable and the twins, first on the path, only delay the candidates that fail.
NEVER_FAILING_BELOW = 1000


def never_failing(questions: Sequence[Question]) -> list[Question] | None:
    """The same check with every ``fail`` it could give made ``unsure``; ``None`` when it cannot be.

    A yes/no question gets ``fail: 0``; a choice question lists every name
    it does not pass as unsure; a rubric question never fails only at
    ``pass: 0`` (its levels below the pass level always fail), so a rubric
    passing above level 0 has no such twin. The passes are unchanged.

    Examples
    --------
    >>> q = Question("Acceptable?", Kind.YES_NO, pass_p=0.9, fail_p=0.2)
    >>> never_failing([q])[0].fail_p
    0.0
    >>> never_failing([Question("How good?", Kind.RUBRIC, pass_level=2, confidence=0.5)]) is None
    True
    """
    out = []
    for q in questions:
        if q.kind is Kind.YES_NO:
            out.append(replace(q, fail_p=0.0))
        elif q.kind is Kind.CHOICE and q.one_of:
            out.append(replace(q, unsure_names=tuple(n for n in q.one_of if n not in q.pass_names)))
        else:
            out.append(q)
    return None if can_fail(out) else out


def with_never_failing(
    path: Path, data: StepData, *, min_decided: float = 0.0, full: StepData | None = None
) -> Path:
    """The path with, first, the never-failing twin of each of its candidates that fails.

    A twin (:func:`never_failing`) passes what its candidate passes and
    leaves its fails unsure, so it needs no false-fail test: where a
    candidate's few fails cannot pass theirs, its twin can still be
    certified on its passes. The twins come first, in the path's order (the
    first of any that repeat), then the path's own candidates: a twin's
    test is never harder than its candidate's (the same passes, no fails),
    so the walk reaches the candidates that fail when every twin is
    rejected, and otherwise certifies what their passes allow. The twins
    and the order read the configurations and their counts on ``data``
    (the certification part), never a label, so the weights are still fixed
    before the tests. A twin passing fewer than ``min_decided`` of the
    path's ``n_total`` is left out: it decides only what it passes, and a
    certified check deciding that little would be suggested where, without
    it, more labels were asked for (a count, so no label either).

    Parameters
    ----------
    path : Path
        A joint path with its configurations (a learned path).
    data : StepData
        The data the path's counts come from.
    min_decided : float, default=0.0
        The least share of ``path.n_total`` a twin must pass.
    full : StepData, optional
        Every labeled row (search part included). A twin that fails any of
        them (a choice answer outside its ``one_of`` fails under check-1
        whatever the lists say) is left out: its rule does not make it never
        fail, and an exemption from the false-fail test read off the
        certification part alone would be claimed for fails the labeled data
        already show. Answers only, no label.

    Returns
    -------
    Path
        The longer path (``path`` itself when no candidate has a twin).
    """
    if path.configs is None:
        return path
    seen = {repr(c) for c, nf in zip(path.configs, path.never_fails, strict=True) if nf}
    twins, rates = [], []
    for config, nf in zip(path.configs, path.never_fails, strict=True):
        twin = None if nf else never_failing(config)
        if twin is None or repr(twin) in seen:
            continue
        seen.add(repr(twin))
        if full is not None and replay_cached(twin, full).n_fail > 0:
            continue
        r = replay_cached(twin, data)
        if r.n_pass >= min_decided * path.n_total - 1e-9:
            twins.append(twin)
            rates.append(r)
    if not twins:
        return path
    # A twin fails nothing unless its rule says it never fails yet fails a row (Path re-checks).
    counts = {
        k: np.r_[np.array([getattr(r, k) for r in rates], int), getattr(path, k)]
        for k in ("n_pass", "false_pass", "n_fail", "false_fail")
    }
    return replace(
        path,
        **counts,
        never_fails=np.r_[np.ones(len(twins), bool), path.never_fails],
        describe=[describe_config(t) for t in twins] + list(path.describe),
        configs=[*twins, *path.configs],
    )


#: From this many labels, one yes/no question's pass walk learns where it starts on a split.
LEARNED_START_FROM = 3000
#: The share of the labels that learns the start (the rest certifies the passes).
LEARNED_START_SHARE = 0.2


def yes_no_paths(
    data: StepData, *, delta_pass: float, delta_fail: float, alpha: float | None = None,
    seed: int = 0,
) -> tuple[Path, Path]:  # fmt: skip
    """The two one-score paths of a single yes/no question, on a fixed grid.

    Each candidate's threshold is then loosened as far as it can go without
    changing a decision on the labeled data, and written as a short decimal.
    Every label certifies the fail path. From :data:`LEARNED_START_FROM`
    labels (and with ``alpha`` given) the pass path's first checkpoint is
    learned on a random :data:`LEARNED_START_SHARE` of them
    (:func:`fallback_walk.learned_start`), and the rest certify the passes: a start
    read from counts alone suits an error rate rising along the path, not one
    that is flat near ``alpha`` or high at the very top (confident mistakes).
    The pass path carries the false-pass rate the answers predict
    (:func:`score_paths.predicted_false_pass`, no label), which its checkpoints
    read (:func:`fallback_walk.checkpoint_weights`).
    """
    # An answer forced unsure (an error verdict, an incomplete answer) is never decided.
    p = np.where(data.forced_unsure, np.nan, data.answer[0].astype(float))
    bad = ~data.acceptable
    split = alpha is not None and data.n >= LEARNED_START_FROM
    key = ("learned_start_paths", seed)
    if split and key not in data.cache:  # the split and its counts do not depend on alpha or delta
        search, cert = certify.random_split(data.n, search_fraction=LEARNED_START_SHARE, seed=seed)
        # Each part's classes sorted once: the parts' paths and, added up, every label's.
        parts = [score_paths.sorted_parts(p[i], bad[i]) for i in (search, cert)]
        data.cache[key] = (
            search.size,
            score_paths.path_from_parts(parts[:1], descending=True),
            score_paths.path_from_parts(parts[1:], descending=True),
        )
        data.cache.setdefault("sorted_parts", parts)
    if "score_paths" not in data.cache:  # the grid paths do not depend on alpha, beta or delta
        parts = data.cache.get("sorted_parts") or [score_paths.sorted_parts(p, bad)]
        swapped = [(good, errors) for errors, good in parts]  # a fail's error is an acceptable one
        data.cache["score_paths"] = (
            score_paths.path_from_parts(parts, descending=True),
            score_paths.path_from_parts(swapped, descending=False),
        )
    up, down = data.cache["score_paths"]
    if "predicted_pass" not in data.cache:  # answers only: the same on every part and at any alpha
        data.cache["predicted_pass"] = score_paths.predicted_false_pass(p, up.threshold)
    fail_path = _one_score_path(down, "fail", delta_fail, data.n)
    if not split:
        path = _one_score_path(up, "pass", delta_pass, data.n)
        path.predicted = data.cache["predicted_pass"]
        return path, fail_path
    n_search, on_search, on_cert = data.cache[key]
    path = _one_score_path(on_cert, "pass", delta_pass, data.n - n_search)
    path.predicted = data.cache["predicted_pass"]
    path.n_search = n_search
    path.start = fallback_walk.learned_start(
        on_cert.n, on_search.n, on_search.errors, limit=alpha,
        level=fallback_walk.START_LEVEL_SHARE * delta_pass,
    )  # fmt: skip
    return path, fail_path


def _one_score_path(sp: score_paths.ScorePath, side: str, delta: float, n_total: int) -> Path:
    # One side's path: its decisions and errors counted, the other side's all zero.
    k = sp.n.size
    zeros = np.zeros(k, int)
    counts = (sp.n, sp.errors, zeros, zeros) if side == "pass" else (zeros, zeros, sp.n, sp.errors)
    return Path(
        side=side,
        tests=(side,),
        n_pass=counts[0],
        false_pass=counts[1],
        n_fail=counts[2],
        false_fail=counts[3],
        never_fails=np.full(k, side == "pass"),
        describe=[f"{side} {x:.4f}" for x in sp.threshold.tolist()],  # floats format faster
        delta=delta,
        thresholds=sp.threshold,
        below=sp.below,
        above=sp.above,
        n_total=n_total,
        # A fail rate usually sits far inside beta (the lowest answers are nearly all rejected).
        power_share=fallback_walk.PASS_POWER_SHARE if side == "pass" else fallback_walk.POWER_SHARE,
    )


def loosened(path: Path, i: int) -> float:
    """Candidate ``i``'s threshold as a short decimal making the same decisions on the labels.

    Every threshold in ``(below, above]`` decides the labeled submissions as
    the grid point does, so it carries the same test. The one written is the
    shortest decimal on the loose side of the grid point (between it and the
    next observed score), so the suggestion is never stricter than the grid
    point; it needs more than three places only when an observed score lies
    that close to the grid point.
    """
    t, below, above = (float(x[i]) for x in (path.thresholds, path.below, path.above))
    if path.side == "pass":
        return loosest_pass(t, below)
    high = min(above, 1.0)
    out = certify.nice_threshold(t - 1e-12, high, prefer="high") if high > t else t
    return float(min(max(out if out is not None else t, 0.0), 1.0))


def fail_within(path: Path, certified: np.ndarray, pass_p: float) -> int | None:
    """The certified fail candidate to pair with pass threshold ``pass_p``: the most fails, at or below it.

    A yes/no check fails ``p < min(fail, pass)``: with a fail threshold above
    the pass threshold it fails everything below the pass threshold, a set
    the fail walk need not have tested (its rate can exceed ``beta`` while a
    larger, certified set's does not). So only candidates whose written
    threshold (:func:`loosened`) is at most ``pass_p`` qualify; among them
    the loosest, which fails the most. ``None`` when none does: the check
    then never fails. Every certified candidate holds at once, so the choice
    may read the pass walk's outcome.

    Parameters
    ----------
    path : Path
        The fail path (thresholds ascending).
    certified : numpy.ndarray of bool
        Which of its candidates the fail walk certified.
    pass_p : float
        The suggested pass threshold.

    Returns
    -------
    int or None
        Index of the fail candidate, or ``None``.
    """
    idx = np.flatnonzero(np.asarray(certified, bool) & (np.asarray(path.thresholds) <= pass_p))
    # Fails grow along the path, so the loosest qualifying candidate fails the most; a grid point
    # at or below pass_p can loosen past it (up to the next observed score): step back from those.
    for i in idx[::-1]:
        if loosened(path, int(i)) <= pass_p:
            return int(i)
    return None


def loosest_pass(t: float, below: float) -> float:
    """The shortest decimal in ``(below, t]``, as low as it goes: a ``score >= t`` rule, loosened.

    Every threshold there decides the observed scores as ``t`` does.
    """
    low = max(below, -1e-9)
    out = certify.nice_threshold(low, t, prefer="low") if t > low else t
    return float(min(max(out if out is not None else t, 0.0), 1.0))


def describe_config(questions: Sequence[Question]) -> str:
    """A short label of a configuration for the candidates table, ``Q1 pass 0.9 fail 0.2; ...``."""
    parts = []
    for i, q in enumerate(questions, 1):
        if q.kind is Kind.YES_NO:
            parts.append(
                f"Q{i} pass {q.pass_p:g}" + ("" if q.fail_p is None else f" fail {q.fail_p:g}")
            )
        elif q.kind is Kind.RUBRIC:
            parts.append(f"Q{i} level>={q.pass_level} conf {q.confidence:g}")
        else:
            unsure = f" unsure {'/'.join(q.unsure_names)}" if q.unsure_names else ""
            parts.append(f"Q{i} {'/'.join(q.pass_names) or '-'}{unsure} conf {q.confidence:g}")
    return "; ".join(parts)
