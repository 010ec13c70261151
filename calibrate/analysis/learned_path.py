"""A path learned on the search part of the labels: the search over several thresholds.

Block coordinate ascent on the Lagrangian of "decide the most within alpha
and beta" proposes configurations on the search part; their Pareto front,
ordered by observed risk, is the path the certification part tests
(:func:`joint_path`). The options it searches are
:mod:`calibrate.analysis.learned_options`'; the same search ordered by the
answers instead of the labels is :mod:`calibrate.analysis.answers_path`.
``docs/method.md`` says it in words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from calibrate.analysis import certify, fallback_walk
from calibrate.analysis.answer_model import fitted_badness
from calibrate.analysis.learned_options import (
    Cells,
    Layout,
    Options,
    candidate_questions,
    never_fails,
    option_layout,
)
from calibrate.analysis.paths import Path, describe_config
from calibrate.analysis.step_data import StepData, can_fail, replay_cached
from calibrate.profile import FAIL, PASS, UNSURE

# The rest's worst result reads the codes as maxima.
assert (PASS, FAIL, UNSURE) == (0, 1, 2)

# ----- learned paths: block coordinate ascent on a Lagrangian, on the search part

#: Multipliers of the Lagrangian tried, loose to strict: an error costs about ``weight`` decisions.
_WEIGHTS = np.geomspace(1.0, 1e4, 16)
_FAIL_WEIGHTS = np.r_[0.0, np.geomspace(1.0, 1e4, 9)]


def _worst(codes: list[np.ndarray], forced: np.ndarray) -> np.ndarray:
    """The worst result of the other questions per row (unsure where an answer is forced)."""
    rest = np.zeros(forced.size, np.int8)
    for c in codes:
        np.maximum(rest, c, out=rest)
    rest[forced] = UNSURE
    return rest


def _ascend(
    blocks: Sequence[Options], values: tuple[np.ndarray, np.ndarray], forced: np.ndarray,
    choice: list[int], *, rounds: int = 4,
) -> list[int]:  # fmt: skip
    """Block coordinate ascent: each question in turn gets its best combination of thresholds.

    ``values`` holds what a passed and a failed submission are worth (an
    unsure one is worth nothing); see :func:`joint_path`. Each question's
    thresholds are chosen together (so a pass and a fail threshold move as
    one) with the other questions held; a tie keeps the current option.
    """
    value_pass, value_fail = values
    current = [b.row_codes(k) for b, k in zip(blocks, choice, strict=True)]
    for _ in range(rounds):
        changed = False
        for j, block in enumerate(blocks):
            rest = _worst(current[:j] + current[j + 1 :], forced)
            gain = block.gains(rest, value_pass, value_fail)
            near_best = gain >= gain.max() - 1e-4
            if near_best[choice[j]]:
                continue  # a tie keeps the current option: moves must pay on the search part
            choice[j] = int(np.argmax(near_best))
            current[j] = block.row_codes(choice[j])
            changed = True
        if not changed:
            break
    return choice


def _neighbourhood(
    blocks: Sequence[Options], solutions: list[tuple[int, ...]], bad: np.ndarray,
    forced: np.ndarray, count: np.ndarray,
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:  # fmt: skip
    """The solutions and all their one-question deviations, with counts on the search part.

    ``bad``, ``forced`` and ``count`` describe the cells of search rows (see
    :class:`Cells`; ``bad`` is a label, or the share of a cell's rows
    predicted bad). Returns the distinct option tuples (one row each, an
    option index per question) and ``(n_pass, false_pass, n_fail, false_fail)``.
    """
    ones = count.astype(float)
    zero = np.zeros_like(ones)
    values_pass = np.column_stack([ones, ones * bad, zero, zero])
    values_fail = np.column_stack([zero, zero, ones, ones * (1.0 - bad)])
    all_keys: list[np.ndarray] = []
    all_counts: list[np.ndarray] = []
    for sol in solutions:
        current = [bl.row_codes(k) for bl, k in zip(blocks, sol, strict=True)]
        for j, block in enumerate(blocks):
            rest = _worst(current[:j] + current[j + 1 :], forced)
            m = len(block.options)
            keys = np.tile(np.asarray(sol, np.intp), (m, 1))
            keys[:, j] = np.arange(m)
            all_keys.append(keys)
            all_counts.append(block.gains_many(rest, values_pass, values_fail))
    keys = np.concatenate(all_keys) if all_keys else np.zeros((0, len(blocks)), np.intp)
    arr = np.concatenate(all_counts) if all_counts else np.zeros((0, 4))
    # Distinct option tuples in the order first met (a tie in the front's sort keeps that order),
    # each tuple read as one number in mixed radix (the options per question).
    sizes = [len(b.options) for b in blocks]
    if math.prod(sizes) < 2**62:
        radix = np.cumprod([1] + sizes[:-1], dtype=np.int64)
        _, first = np.unique(keys @ radix, return_index=True)
    else:  # the mixed-radix number would overflow: rows compared as they are
        _, first = np.unique(keys, axis=0, return_index=True)
    first = np.sort(first)
    # Sums of predicted shares differ in the last bits with the summation order (BLAS, machine):
    # rounded, candidates equal in exact arithmetic tie alike on almost any machine.
    arr = np.round(arr[first], 9)
    return keys[first], (arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3])


def split(data: StepData, *, search_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The search and certification parts' row indices (at random, no label read), made once."""
    key = ("split", search_fraction, seed)
    if key not in data.cache:
        data.cache[key] = certify.random_split(data.n, search_fraction=search_fraction, seed=seed)
    return data.cache[key]


def _prepared(
    data: StepData, *, search_fraction: float, seed: int, relearn_lists: bool,
    fitted: bool = False,
) -> tuple[np.ndarray, np.ndarray, Layout, Cells]:  # fmt: skip
    """The split, the layout and the cells of a learned path: they do not depend on alpha or beta.

    The cells hold the search rows' labels, or with ``fitted`` the chance each
    is not acceptable (:func:`~calibrate.analysis.answer_model.fitted_badness`,
    fitted on the search part); the labels when there is nothing to fit.
    """
    key = ("joint", search_fraction, seed, relearn_lists, fitted)
    if key not in data.cache:
        search, cert = split(data, search_fraction=search_fraction, seed=seed)
        bad = fitted_badness(data, search) if fitted else None
        if bad is None:
            layout = option_layout(data, search, relearn_lists=relearn_lists)
            cells = Cells.of(layout, ~data.acceptable[search], data.forced_unsure[search])
        else:
            # A relearned choice list orders its names by the fitted chance too, not by labels.
            layout = option_layout(data, search, relearn_lists=relearn_lists, order_by=1.0 - bad)
            cells = Cells.predicted(layout, bad[search], data.forced_unsure[search])
        data.cache[key] = (search, cert, layout, cells)
    return data.cache[key]


def _pareto_front(
    order: np.ndarray, coverage: np.ndarray, n_pass: np.ndarray, risk: np.ndarray
) -> np.ndarray:
    """The candidates kept from ``order`` (by risk): each decides more than every one before it,
    or as many, passes more than the last kept and is within the limits (``risk <= 1``).

    Vectorised form of the walk "keep ``k`` when ``coverage[k] > best`` or (``coverage[k] ==
    best`` and ``n_pass[k] > last kept's`` and ``risk[k] <= 1``)": ``best`` is the running
    maximum of the coverage before ``k`` (a candidate not kept never exceeds it), and within a
    run of equal ``best`` the last kept passes is the running maximum of the passes of the run's
    first candidate and of its candidates within the limits (one not kept passes no more).
    """
    cov, passes = coverage[order], n_pass[order]
    if cov.size == 0:
        return order
    best = np.maximum.accumulate(np.r_[-1.0, cov[:-1]])
    more = cov > best
    tie = (cov == best) & (risk[order] <= 1)
    run = np.cumsum(more)  # the run each candidate belongs to (a new one at each `more`)
    # Passes as dense integer ranks (exact), -1 where a candidate cannot set the run's mark.
    rank = np.unique(passes, return_inverse=True)[1].ravel().astype(np.int64)
    mark = np.where(more | tie, rank, -1)
    span = int(rank.max()) + 2
    running = np.maximum.accumulate(run * span + mark + 1) - run * span - 1
    before = np.r_[-1, running[:-1]]
    return order[more | (tie & (rank > before))]


def front_path(
    data: StepData, layout: Layout, cells: Cells, counted: StepData, *, alpha: float,
    delta: float, beta: float, scale: float,
) -> Path:  # fmt: skip
    """The candidates of ``cells``, their Pareto front by risk, counted on ``counted``.

    The search of :func:`joint_path` and of
    :func:`calibrate.analysis.answers_path.answers_path` (whose cells hold
    predicted shares of bad rows instead of labels).

    Parameters
    ----------
    data : StepData
        The step whose questions the candidates configure.
    layout : Layout
        Its option space (:func:`~calibrate.analysis.learned_options.option_layout`).
    cells : Cells
        The rows searched, grouped by how every candidate treats them.
    counted : StepData
        The rows the path's candidates are counted on (replayed).
    alpha, delta, beta : float
        The limits and the level the front must be testable at.
    scale : float
        Turns the cells' counts into the counts predicted on ``counted``.

    Returns
    -------
    Path
        A joint path, strictest first, with its configurations.
    """
    bad, forced, count = cells.bad, cells.forced, cells.count
    b = min(beta, 1.0)
    found: dict[tuple[int, ...], None] = {}
    # Option 0 of every question passes everything and fails nothing.
    loosest = [0] * len(cells.blocks)
    # w_fail = None: a fail costs one row instead of earning one, so the ascent avoids fails where
    # it can (a check that never fails needs no false-fail test, which few labels cannot pass).
    for w_fail in [*_FAIL_WEIGHTS, None] if beta < 1.0 else (0.0,):
        choice = list(loosest)
        for w_pass in _WEIGHTS:
            # What a search row is worth, times the rows of its cell.
            fail_value = -np.ones(bad.size) if w_fail is None else 1.0 + w_fail * (b - (1.0 - bad))
            values = (
                (1.0 + w_pass * (alpha - bad)).astype(np.float32) * count,
                fail_value.astype(np.float32) * count,
            )
            choice = _ascend(cells.blocks, values, forced, choice)
            found.setdefault(tuple(choice), None)
    # Around each solution, every one-question deviation is a candidate too: the Lagrangian only
    # reaches the convex hull of what is achievable, the deviations fill in between.
    keys, stats_ = _neighbourhood(cells.blocks, list(found), bad, forced, count)
    n_p, e_p, n_f, e_f = stats_
    with np.errstate(invalid="ignore", divide="ignore"):
        risk = np.nan_to_num(e_p / n_p) / alpha
        if beta < 1.0:
            risk = np.maximum(risk, np.nan_to_num(e_f / n_f) / beta)
    coverage = n_p + n_f
    # Keep only candidates the certification part could test: as many passes, and fails unless
    # the candidate never fails, as an exact test needs, at the counts the search part predicts.
    # A path of untestable candidates certifies nothing, whatever their observed risk.
    testable = n_p * scale >= certify.min_count(alpha, delta)
    if beta < 1.0:
        can = n_f * scale >= certify.min_count(b, delta)
        testable &= can | never_fails(data, layout, keys)
    if not testable.any():
        testable[:] = True  # nothing testable: keep the full front (status says why)
    # Ordered by risk; a candidate stays if it decides more than every less risky one, or, within
    # the limits on the search part, as many and passes more (more of it without rework).
    order = np.lexsort((-n_p, -coverage, risk))
    front = _pareto_front(order[testable[order]], coverage, n_p, risk)
    configs = [candidate_questions(data, layout, keys[k]) for k in front]
    counts = np.array(
        [
            (r.n_pass, r.false_pass, r.n_fail, r.false_fail)
            for r in (replay_cached(cfg, counted) for cfg in configs)
        ],
        dtype=int,
    ).reshape(-1, 4)
    return Path(
        side="joint",
        tests=("pass", "fail"),
        n_pass=counts[:, 0],
        false_pass=counts[:, 1],
        n_fail=counts[:, 2],
        false_fail=counts[:, 3],
        never_fails=np.array([not can_fail(c) for c in configs], bool),
        describe=[describe_config(c) for c in configs],
        delta=delta,
        configs=configs,
        n_total=counted.n,
        power_share=fallback_walk.PASS_POWER_SHARE,
        spread=fallback_walk.spread_for(data.n),
    )


def certification_part(
    data: StepData, cert: np.ndarray, *, search_fraction: float, seed: int
) -> StepData:
    """The rows ``cert`` of ``data`` as their own data, made once per split (the search's cache)."""
    key = ("certify", search_fraction, seed)
    if key not in data.cache:
        data.cache[key] = data.subset(cert)
    return data.cache[key]


def joint_path(
    data: StepData,
    *,
    alpha: float,
    delta: float,
    beta: float,
    relearn_lists: bool,
    search_fraction: float,
    seed: int,
    fitted: bool = False,
) -> tuple[Path, np.ndarray, np.ndarray]:
    """Learn a joint path on the search part and count it on the certification part.

    Candidates: for a grid of Lagrange multipliers ``(w_pass, w_fail)``, block
    coordinate ascent on the search part maximises
    ``sum_pass (1 + w_pass (alpha - bad)) + sum_fail (1 + w_fail (beta - good))``,
    the Lagrangian of "decide the most with at most ``alpha`` false passes and
    ``beta`` false fails", warm-started along ``w_pass``; every one-question
    deviation from those solutions is a candidate too (the Lagrangian reaches
    only the convex hull). Path: the distinct candidates ordered by their
    observed risk on the search part,
    ``max(false-pass rate / alpha, false-fail rate / beta)``, keeping each only
    if it decides more than every less risky one (a Pareto front, strictest
    first).

    With ``fitted``, ``bad`` is not a search row's label but the chance it is
    not acceptable given its answers
    (:func:`~calibrate.analysis.answer_model.fitted_badness`, a
    ridge-penalised logistic regression fitted on the search part's labels):
    a few parameters pooled over all the search rows rank the candidates,
    where the labels alone give each candidate's rate from the few bad labels
    among its own passes. Either way everything that builds the path reads the
    search part alone, so the certification part tests it as a path fixed in
    advance. A search part with too few rows of either label, or no varying
    answer, falls back to its labels.
    """
    search, cert, layout, cells = _prepared(data, search_fraction=search_fraction, seed=seed,
                                            relearn_lists=relearn_lists, fitted=fitted)  # fmt: skip
    cert_data = certification_part(data, cert, search_fraction=search_fraction, seed=seed)
    path = front_path(
        data, layout, cells, cert_data, alpha=alpha, delta=delta, beta=beta,
        scale=cert.size / max(search.size, 1),
    )  # fmt: skip
    return path, search, cert
