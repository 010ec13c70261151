"""Paths known before any label is seen, for one rubric or one choice question.

A single rubric question has two settings, the ``pass`` level and the
``confidence``; a single choice question with its lists given has one, the
``confidence``. For each pass level (or the given lists) the confidence
threshold alone orders the candidates from strict (high) to loose (low), and
that order depends on the answers and confidences only, never on the labels.
So these paths need no learning split: every label certifies. The level is
spread over the paths (Bonferroni, equal shares: the labels may not choose
which path gets more), each path runs the fallback walk with both rates
tested at once, and the preferred candidate among all certified ones is
suggested (:func:`calibrate.analysis.paths.preferred`). With probability at
least ``1 - delta`` every certified candidate of every path is within both
limits.

Counts come from one sort and cumulative sums per path (the rule of
:func:`calibrate.profile.decide`, written over sorted confidences; the tests
replay every candidate through the rule itself).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from calibrate.analysis import fallback_walk, score_paths
from calibrate.analysis.paths import Path, describe_config, loosest_pass
from calibrate.analysis.step_data import StepData, can_fail, rubric_levels
from calibrate.profile import FAIL, PASS, UNSURE, Kind, Question


def applies(data: StepData) -> bool:
    """Whether the step's check is one rubric question, or one choice question with known lists.

    Relearned choice lists need a path learned on a split; the process
    file's lists still give fixed paths beside it (and alone when the labels
    are too few to learn lists from).
    """
    if len(data.questions) != 1:
        return False
    q = data.questions[0]
    if q.kind is Kind.RUBRIC:
        return True
    return q.kind is Kind.CHOICE and data.known[0]


def n_levels(data: StepData) -> int:
    """Levels of the single rubric question (:func:`~calibrate.analysis.step_data.rubric_levels`)."""
    return rubric_levels(data.questions[0], data.answer[0])


def fixed_paths(data: StepData, *, delta: float, beta: float | None = None) -> list[Path]:
    """One path over the confidence threshold per pass level (rubric) or for the given lists (choice).

    A rubric gets a path for every ``pass`` level from 0 (everything
    confident passes) to the top level; a choice gets its given lists and,
    when those fail some names, the same ``pass`` list with every other name
    unsure (a check that never fails). Each holds ``delta / K`` for ``K``
    paths. Candidates are the confidence thresholds of
    :data:`score_paths.GRID_SIZE` points from 1 down to 0.

    Given ``beta``, a path none of whose candidates could be rejected at its
    share at any alpha (nothing passed, or too few fails to test at ``beta``,
    on every candidate: counts only, never labels or alpha) gets no share:
    ``delta`` is spread over the other paths, and only those are returned
    (all of them when none is left). Alpha plays no part, so a looser alpha
    never takes a share from a path (issue 18).
    """
    q = data.questions[0]
    conf = np.asarray(data.confidence[0], float)
    usable = ~data.forced_unsure & ~np.isnan(conf)
    if q.kind is Kind.RUBRIC:
        k = n_levels(data)
        level = np.asarray(data.answer[0], float)
        with np.errstate(invalid="ignore"):
            codes = [np.where(level >= L, PASS, FAIL) for L in range(k)]
        texts = tuple(q.levels) if q.levels else tuple(f"level {i}" for i in range(k))
        makers = [
            lambda c, L=L: replace(q, pass_level=L, confidence=c, levels=texts) for L in range(k)
        ]
    else:
        # The given lists, and where they fail some names, the same pass list with every other
        # name unsure: a check that fails nothing needs no false-fail test, which few fails
        # cannot pass. Both are read from the process file, never from the labels.
        variants = [q]
        others = tuple(n for n in q.one_of if n not in q.pass_names)
        if set(others) - set(q.unsure_names):
            variants.append(replace(q, unsure_names=others))
        answers = np.asarray(data.answer[0], dtype=object)
        codes = [v.decide(answers) for v in variants]  # before the confidence
        makers = [lambda c, v=v: replace(v, confidence=c) for v in variants]
    # From SPREAD_FROM labels the later checkpoints' share is spread along each path too (counts
    # and positions only): the last doubling mark may sit just short of the best candidates.
    spread = fallback_walk.spread_for(data.n)
    paths = [
        _one_path(code, conf, usable, data, make, delta / len(codes), spread)
        for code, make in zip(codes, makers, strict=True)
    ]
    if beta is None:
        return paths
    # Which paths can test anything depends on their share, and dropping one raises the others'
    # share: repeat until every path left can. Labels play no part: shares are fixed before a test.
    live = paths
    while True:
        keep = [p for p in live if p.testable_at_any_alpha(beta=beta).any()]
        if not keep:
            for p in paths:
                p.delta = delta / len(paths)
            return paths
        if len(keep) == len(live):
            return live
        live = keep
        for p in live:
            p.delta = delta / len(live)


def _one_path(
    code: np.ndarray,
    conf: np.ndarray,
    usable: np.ndarray,
    data: StepData,
    make: Callable[[float], Question],
    delta: float,
    spread: int = 0,
) -> Path:
    # The same grid for both sides, so candidate i of the pass counts is candidate i of the fail counts.
    bad = ~data.acceptable
    scores = {v: np.where(usable & (code == v), conf, np.nan) for v in (PASS, FAIL)}
    grid = np.linspace(0.0, 1.0, score_paths.GRID_SIZE)
    passed = score_paths.score_path(scores[PASS], bad, descending=True, grid=grid)
    failed = score_paths.score_path(scores[FAIL], ~bad, descending=True, grid=grid)
    decided = score_paths.score_path(
        np.where(usable & (code != UNSURE), conf, np.nan), bad, descending=True, grid=grid
    )
    keep = _distinct(passed.n, failed.n)
    thresholds = passed.threshold[keep]
    below, above = decided.below[keep], decided.above[keep]
    confidence = np.array([loosest_pass(t, b) for t, b in zip(thresholds, below, strict=True)])
    configs = [[make(float(c))] for c in confidence]
    return Path(
        side="joint",
        tests=("pass", "fail"),
        n_pass=passed.n[keep],
        false_pass=passed.errors[keep],
        n_fail=failed.n[keep],
        false_fail=failed.errors[keep],
        never_fails=np.full(keep.size, not can_fail([make(0.5)])),
        describe=[describe_config(cfg) for cfg in configs],
        delta=delta,
        configs=configs,
        thresholds=thresholds,
        below=below,
        above=above,
        n_total=data.n,
        spread=spread,
    )


def _distinct(n_pass: np.ndarray, n_fail: np.ndarray) -> np.ndarray:
    # Grid points deciding the same submissions carry the same test: keep the first (strictest) of
    # each run, so the path holds one candidate per distinct decision set.
    change = np.r_[True, (np.diff(n_pass) != 0) | (np.diff(n_fail) != 0)]
    return np.flatnonzero(change)
