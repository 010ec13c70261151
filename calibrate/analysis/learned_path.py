"""A path learned on the search part of the labels: the search over several thresholds.

Block coordinate ascent on the Lagrangian of "decide the most within alpha
and beta" proposes configurations on the search part; their Pareto front,
ordered by observed risk, is the path the certification part tests
(:func:`joint_path`). Below a thousand labels a second path joins it
(:func:`answers_path`): the same search on every labeled row with each label
replaced by the badness the evaluator's own stated probabilities predict, so
its order reads no label and every label can test it. ``docs/method.md`` says
it in words.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis import certify
from calibrate.analysis.paths import Path, describe_config
from calibrate.analysis.step_data import StepData, can_fail, replay_cached, rubric_levels
from calibrate.profile import FAIL, PASS, UNSURE, Kind, Question

# The gains' stacked sums and the rest's worst result read the codes as indices and maxima.
assert (PASS, FAIL, UNSURE) == (0, 1, 2)

# ----- learned paths: block coordinate ascent on a Lagrangian, on the search part

#: Quantiles of the search part tried per continuous threshold.
_N_PASS_VALUES = 40
_N_FAIL_VALUES = 20
_N_CONF_VALUES = 32
#: Multipliers of the Lagrangian tried, loose to strict: an error costs about ``weight`` decisions.
_WEIGHTS = np.geomspace(1.0, 1e4, 16)
#: Options whose result codes are computed at once.
_CHUNK = 16
_FAIL_WEIGHTS = np.r_[0.0, np.geomspace(1.0, 1e4, 9)]


@dataclass
class _Options:
    """Every threshold combination tried for one question, with its result codes on the search part.

    Search rows whose codes agree under every option form one *bucket*, so the
    codes are kept per bucket and a gain is a sum over buckets: one pass over the
    rows per call (``bincount``) instead of one per option.
    """

    q: int
    options: list[dict[str, float]]
    codes: np.ndarray  # (n_options, n_buckets) int8
    bucket: np.ndarray  # (n_search,) the bucket of each search row
    is_pass: np.ndarray = field(init=False)  # float64 indicators per bucket
    is_fail: np.ndarray = field(init=False)
    decided: np.ndarray = field(init=False)
    stacked: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.is_pass = (self.codes == PASS).astype(float)
        self.is_fail = (self.codes == FAIL).astype(float)
        self.decided = self.is_pass + self.is_fail
        # [passes | fails | decided] side by side: a gain is one product with three sums stacked.
        self.stacked = np.hstack([self.is_pass, self.is_fail, self.decided])

    @classmethod
    def of(cls, q: int, options: list[dict[str, float]], codes: np.ndarray) -> _Options:
        """Distinct options (the first, loosest, of each set deciding alike) over bucketed rows."""
        bucket, columns = _buckets(codes)
        # Options that decide the search part identically are one candidate; keep the first.
        _, first = np.unique(columns, axis=0, return_index=True)
        keep = np.sort(first)
        return cls(q, [options[k] for k in keep], columns[keep], bucket)

    def row_codes(self, k: int) -> np.ndarray:
        """Result codes of option ``k`` on every search row."""
        return self.codes[k][self.bucket]

    def gains(self, rest: np.ndarray, value_pass: np.ndarray, value_fail: np.ndarray) -> np.ndarray:
        """The objective of every option with the other questions' worst result ``rest`` held.

        The verdict is the worst result: where the rest passes, this question decides; where the
        rest fails, the verdict fails unless this question is unsure; where it is unsure, nothing.
        """
        m = self.codes.shape[1]
        where = self._where(rest)
        by_pass = np.bincount(where, weights=value_pass, minlength=3 * m)
        by_fail = np.bincount(where, weights=value_fail, minlength=3 * m)
        return self.stacked @ np.concatenate([by_pass[:m], by_fail[: 2 * m]])

    def gains_many(self, rest: np.ndarray, values_pass: np.ndarray, values_fail: np.ndarray
                   ) -> np.ndarray:  # fmt: skip
        """:meth:`gains` for several pairs of values at once: columns of ``(n, k)`` arrays."""
        m = self.codes.shape[1]
        where = self._where(rest)
        k = values_pass.shape[1]
        sums = np.zeros((3 * m, k))
        for c in range(k):
            vp, vf = values_pass[:, c], values_fail[:, c]
            if vp.any():
                sums[:m, c] = np.bincount(where, weights=vp, minlength=3 * m)[:m]
            if vf.any():
                sums[m:, c] = np.bincount(where, weights=vf, minlength=3 * m)[: 2 * m]
        return self.stacked @ sums

    def _where(self, rest: np.ndarray) -> np.ndarray:
        # Each row's bucket, offset by what the rest does there: the stacked sums are passed where
        # the rest passes (PASS = 0), failed where it passes, decided where it fails (FAIL = 1).
        return self.bucket + self.codes.shape[1] * rest.astype(np.intp)


def _buckets(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group the columns (rows of the data) of ``codes`` that are equal: each row's bucket and the codes per bucket."""
    if codes.shape[1] == 0:
        return np.zeros(0, np.intp), codes
    cols = np.ascontiguousarray(codes.T)
    keys = cols.view(np.dtype((np.void, cols.dtype.itemsize * cols.shape[1]))).ravel()
    _, first, bucket = np.unique(keys, return_index=True, return_inverse=True)
    return bucket.ravel(), np.ascontiguousarray(codes[:, first])


@dataclass
class _Layout:
    """How the questions of a step map onto thresholds (learned on the search part)."""

    blocks: list[_Options]
    rank_names: dict[int, list[str]]  # relearned choice: names ordered worst to best
    relearn: set[int]
    levels: dict[int, int]  # rubric: number of levels
    score: dict[int, np.ndarray]  # per question, the score its pass rule reads (all rows)
    fixed: dict[int, np.ndarray]  # kept-list choice: result code by answer name (all rows)
    observed: dict[tuple[int, str], np.ndarray]  # distinct search-part values, for short decimals


def _grid(values: np.ndarray, k: int) -> np.ndarray:
    u = np.unique(values[np.isfinite(values)])
    if u.size > k:
        u = np.unique(np.quantile(u, np.linspace(0, 1, k), method="nearest"))
    return u


def _question_codes(
    layout: _Layout, data: StepData, rows: np.ndarray, q: int, t: Mapping[str, Any]
) -> np.ndarray:
    """Result codes of question ``q`` on ``rows`` for thresholds ``t``; values may be arrays (vectorised).

    The same rule as :func:`calibrate.profile.decide` (tested against it), written over scores so that
    many candidate thresholds are evaluated in one pass.
    """
    kind = data.questions[q].kind
    conf = data.confidence[q][rows]
    if kind is Kind.YES_NO:
        p = layout.score[q][rows]
        a, b = np.asarray(t["pass"], float)[..., None], np.asarray(t["fail"], float)[..., None]
        with np.errstate(invalid="ignore"):
            out = np.where(p >= a, PASS, np.where(p < np.minimum(a, b), FAIL, UNSURE))
        return out.astype(np.int8)
    c = np.asarray(t["confidence"], float)[..., None]
    with np.errstate(invalid="ignore"):
        low = ~(conf >= c)  # a missing confidence is below any threshold
    if kind is Kind.RUBRIC:
        lv = layout.score[q][rows]
        level = np.asarray(t["level"], float)[..., None]
        out = np.where(lv >= level, PASS, FAIL)
    elif q in layout.relearn:
        r = layout.score[q][rows]
        k, kf = (
            np.asarray(t["rank"], float)[..., None],
            np.asarray(t["rank_fail"], float)[..., None],
        )
        with np.errstate(invalid="ignore"):
            out = np.where(r >= k, PASS, np.where(r < np.minimum(k, kf), FAIL, UNSURE))
    else:
        out = np.broadcast_to(layout.fixed[q][rows], low.shape)
    return np.where(low, UNSURE, out).astype(np.int8)


def _layout(
    data: StepData, search: np.ndarray, *, relearn_lists: bool, order_by: np.ndarray | None = None
) -> _Layout:
    """How each question's thresholds map onto options, read on the rows ``search``.

    A relearned choice list orders its names, worst first, by the mean of
    ``order_by`` over the rows giving each name (default: the labels,
    ``data.acceptable``); given a label-free ``order_by``, the layout reads no
    label.
    """
    rank_names: dict[int, list[str]] = {}
    relearn: set[int] = set()
    levels: dict[int, int] = {}
    score: dict[int, np.ndarray] = {}
    fixed: dict[int, np.ndarray] = {}
    observed: dict[tuple[int, str], np.ndarray] = {}
    option_sets: list[tuple[int, list[dict[str, float]]]] = []
    for i, q in enumerate(data.questions):
        ans, conf = data.answer[i], data.confidence[i].astype(float)
        if q.kind is Kind.YES_NO:
            p = ans.astype(float)
            score[i] = p
            ps = p[search]
            observed[(i, "pass")] = observed[(i, "fail")] = np.unique(ps[np.isfinite(ps)])
            a_vals = np.r_[-np.inf, _grid(ps, _N_PASS_VALUES), np.inf]
            b_vals = np.r_[-np.inf, _grid(ps, _N_FAIL_VALUES)]
            opts = []
            for a in a_vals:
                opts += [{"pass": a, "fail": b} for b in b_vals if b < a]
                opts.append({"pass": a, "fail": np.inf})  # fail below pass: no unsure band
            option_sets.append((i, opts))
            continue
        cs = conf[search]
        observed[(i, "confidence")] = np.unique(cs[np.isfinite(cs)])
        c_vals = np.r_[-np.inf, _grid(cs, _N_CONF_VALUES)]
        if q.kind is Kind.RUBRIC:
            lv = ans.astype(float)
            levels[i] = rubric_levels(q, lv)
            score[i] = lv
            opts = [{"level": float(L), "confidence": c} for L in range(levels[i]) for c in c_vals]
        elif relearn_lists or not data.known[i]:
            relearn.add(i)
            s_names = ans[search]
            s_ok = (data.acceptable if order_by is None else order_by)[search]
            have = np.array([v is not None for v in s_names], bool)
            seen = pd.Series(s_ok[have]).groupby(pd.Series(s_names[have], dtype=object)).mean()
            # Worst first; ties by name so the order is reproducible.
            order = sorted(seen.index, key=lambda n: (seen[n], str(n)))
            rank_names[i] = [str(n) for n in order]
            pos = {n: k for k, n in enumerate(rank_names[i])}
            score[i] = np.array([float(pos[v]) if v in pos else np.nan for v in ans], dtype=float)
            r = len(order)
            opts = [
                {"rank": float(k), "rank_fail": float(kf), "confidence": c}
                for k in range(r + 1)
                for kf in range(k + 1)
                for c in c_vals
            ]
        else:
            code = np.full(ans.shape, FAIL, dtype=np.int8)
            code[np.isin(ans, list(q.pass_names))] = PASS
            code[np.isin(ans, list(q.unsure_names))] = UNSURE
            code[np.array([v is None for v in ans], bool)] = UNSURE
            fixed[i] = code
            opts = [{"confidence": c} for c in c_vals]
        option_sets.append((i, opts))
    layout = _Layout([], rank_names, relearn, levels, score, fixed, observed)
    for i, opts in option_sets:
        keys = opts[0].keys()
        arrays = {k: np.array([o[k] for o in opts], float) for k in keys}
        # A few options at a time: the rule's intermediates are eight bytes per row and option.
        codes = np.concatenate(
            [
                _question_codes(
                    layout, data, search, i, {k: v[j : j + _CHUNK] for k, v in arrays.items()}
                )
                for j in range(0, len(opts), _CHUNK)
            ]
        )
        layout.blocks.append(_Options.of(i, opts, codes))
    return layout


def _worst(codes: list[np.ndarray], forced: np.ndarray) -> np.ndarray:
    """The worst result of the other questions per row (unsure where an answer is forced)."""
    rest = np.zeros(forced.size, np.int8)
    for c in codes:
        np.maximum(rest, c, out=rest)
    rest[forced] = UNSURE
    return rest


def _ascend(
    blocks: Sequence[_Options], values: tuple[np.ndarray, np.ndarray], forced: np.ndarray,
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


def _short(value: float, observed: np.ndarray, *, prefer: str) -> float:
    """A short decimal making the same decisions on the search part as ``value``."""
    if not math.isfinite(value):
        return value
    below = observed[observed < value]
    low = float(below[-1]) if below.size else value - 1.0
    return certify.nice_threshold(low, value, prefer=prefer) if low < value else value


def _config(data: StepData, layout: _Layout, choice: Sequence[int]) -> list[Question]:
    """The questions of one candidate, with short decimals and check-1's bounds."""
    theta = {b.q: b.options[k] for b, k in zip(layout.blocks, choice, strict=True)}
    out: list[Question] = []

    def unit(i: int, key: str, prefer: str) -> float:
        v = theta[i][key]
        if v == -np.inf:
            return 0.0
        if v == np.inf:
            return 1.0
        return float(min(max(_short(v, layout.observed[(i, key)], prefer=prefer), 0.0), 1.0))

    for i, q in enumerate(data.questions):
        t = theta[i]
        if q.kind is Kind.YES_NO:
            a = unit(i, "pass", "low")
            if t["fail"] == np.inf:
                fail = None
            else:
                b = unit(i, "fail", "high")
                fail = None if b >= a else b
            out.append(replace(q, pass_p=a, fail_p=fail))
        elif q.kind is Kind.RUBRIC:
            n_levels = layout.levels[i]
            texts = q.levels or tuple(f"level {k}" for k in range(n_levels))
            out.append(replace(q, pass_level=int(t["level"]), confidence=unit(i, "confidence", "low"),
                               levels=tuple(texts)))  # fmt: skip
        elif i in layout.relearn:
            order = layout.rank_names[i]
            k, kf = int(t["rank"]), int(min(t["rank_fail"], t["rank"]))
            names = list(q.one_of) if q.one_of else []
            names += [n for n in order if n not in names]
            pass_names = tuple(order[k:])
            fail_names = set(order[:kf])
            unsure = tuple(n for n in names if n not in pass_names and n not in fail_names)
            one_of = dict(q.one_of) if q.one_of else {}
            for n in names:
                one_of.setdefault(n, n)
            out.append(replace(q, pass_names=pass_names, unsure_names=unsure,
                               confidence=unit(i, "confidence", "low"), one_of=one_of))  # fmt: skip
        else:
            out.append(replace(q, confidence=unit(i, "confidence", "low")))
    return out


def _neighbourhood(
    blocks: Sequence[_Options], solutions: list[tuple[int, ...]], bad: np.ndarray,
    forced: np.ndarray, count: np.ndarray,
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:  # fmt: skip
    """The solutions and all their one-question deviations, with counts on the search part.

    ``bad``, ``forced`` and ``count`` describe the cells of search rows (see
    :class:`_Cells`; ``bad`` is a label, or the share of a cell's rows
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


@dataclass
class _Cells:
    """The search rows grouped into cells that every candidate treats alike.

    Rows with the same bucket in every question, the same label and the same
    forced-unsure flag get the same verdict under every candidate, so the
    search sums over cells weighted by their row counts instead of over rows.
    """

    blocks: list[_Options]  # the layout's blocks with ``bucket`` per cell
    bad: np.ndarray
    forced: np.ndarray
    count: np.ndarray

    @classmethod
    def of(cls, layout: _Layout, bad: np.ndarray, forced: np.ndarray) -> _Cells:
        keys = np.column_stack(
            [b.bucket for b in layout.blocks] + [bad.astype(np.intp), forced.astype(np.intp)]
        )
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        count = np.bincount(inverse.ravel(), minlength=first.size)
        blocks = [replace(b, bucket=b.bucket[first]) for b in layout.blocks]
        return cls(blocks, bad[first], forced[first], count)

    @classmethod
    def predicted(cls, layout: _Layout, bad: np.ndarray, forced: np.ndarray) -> _Cells:
        """Cells without labels: ``bad`` per row is a predicted probability, averaged per cell."""
        keys = np.column_stack([b.bucket for b in layout.blocks] + [forced.astype(np.intp)])
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        count = np.bincount(inverse, minlength=first.size)
        share = np.bincount(inverse, weights=bad, minlength=first.size) / count
        blocks = [replace(b, bucket=b.bucket[first]) for b in layout.blocks]
        return cls(blocks, share, forced[first], count)


def _never_fail(data: StepData, layout: _Layout, keys: np.ndarray) -> np.ndarray:
    """Per candidate: whether no submission could get ``fail`` (as :func:`can_fail`, by option)."""
    out = np.ones(len(keys), bool)
    if not len(keys):
        return out
    idx = np.asarray(keys, dtype=np.intp).reshape(len(keys), -1)
    for j, block in enumerate(layout.blocks):
        q = data.questions[block.q]
        if q.kind is Kind.YES_NO:
            # Fails below min(pass, fail); never when that is -inf or when pass is -inf.
            opt = [min(o["pass"], o["fail"]) == -np.inf for o in block.options]
        elif q.kind is Kind.RUBRIC:
            opt = [o["level"] <= 0 for o in block.options]
        elif block.q in layout.relearn:
            opt = [min(o["rank_fail"], o["rank"]) <= 0 for o in block.options]
        else:
            opt = [not can_fail([q])] * len(block.options)
        out &= np.asarray(opt, bool)[idx[:, j]]
    return out


def _prepared(
    data: StepData, *, search_fraction: float, seed: int, relearn_lists: bool
) -> tuple[np.ndarray, np.ndarray, _Layout, _Cells]:
    """The split, the layout and the cells of a learned path: they do not depend on alpha or beta."""
    key = ("joint", search_fraction, seed, relearn_lists)
    if key not in data.cache:
        search, cert = certify.stratified_split(
            data.acceptable, search_fraction=search_fraction, seed=seed
        )
        layout = _layout(data, search, relearn_lists=relearn_lists)
        cells = _Cells.of(layout, ~data.acceptable[search], data.forced_unsure[search])
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


def _front_path(
    data: StepData, layout: _Layout, cells: _Cells, counted: StepData, *, alpha: float,
    delta: float, beta: float, scale: float,
) -> Path:  # fmt: skip
    """The candidates of ``cells``, their Pareto front by risk, counted on ``counted``.

    The search of :func:`joint_path` (and of :func:`answers_path`, whose
    cells hold predicted shares of bad rows instead of labels). ``scale``
    turns the cells' counts into the counts predicted on ``counted``.
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
        testable &= can | _never_fail(data, layout, keys)
    if not testable.any():
        testable[:] = True  # nothing testable: keep the full front (status says why)
    # Ordered by risk; a candidate stays if it decides more than every less risky one, or, within
    # the limits on the search part, as many and passes more (more of it without rework).
    order = np.lexsort((-n_p, -coverage, risk))
    front = _pareto_front(order[testable[order]], coverage, n_p, risk)
    configs = [_config(data, layout, keys[k]) for k in front]
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
        power_share=certify.PASS_POWER_SHARE,
        spread=certify.LEARNED_SPREAD if data.n >= certify.LEARNED_SPREAD_FROM else 0,
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
    """
    search, cert, layout, cells = _prepared(data, search_fraction=search_fraction, seed=seed,
                                            relearn_lists=relearn_lists)  # fmt: skip
    cert_data = certification_part(data, cert, search_fraction=search_fraction, seed=seed)
    path = _front_path(
        data, layout, cells, cert_data, alpha=alpha, delta=delta, beta=beta,
        scale=cert.size / max(search.size, 1),
    )  # fmt: skip
    return path, search, cert


# ----- the answers path: the same search on every labeled row, its labels predicted by the answers


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
    """Whether :func:`answers_path` can run: several questions, every one's thresholds known.

    Today's thresholds say which state of each question passes, so the
    stated probabilities predict a verdict (:func:`predicted_acceptable`).

    Parameters
    ----------
    data : StepData

    Returns
    -------
    bool
    """
    return len(data.questions) > 1 and all(data.known)


def answers_path(
    data: StepData, *, alpha: float, delta: float, beta: float, relearn_lists: bool
) -> Path:
    """A path ordered by the answers alone, counted on every labeled row.

    The search of :func:`joint_path` (the Lagrangian's candidates, their
    one-question deviations, the front by risk) run on every labeled row
    with each row's label replaced by its predicted badness, one minus
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
        layout = _layout(data, every, relearn_lists=relearn_lists and order_by is not None,
                         order_by=order_by)  # fmt: skip
        bad = 1.0 - predicted_acceptable(data)
        data.cache[key] = (layout, _Cells.predicted(layout, bad, data.forced_unsure))
    layout, cells = data.cache[key]
    return _front_path(data, layout, cells, data, alpha=alpha, delta=delta, beta=beta, scale=1.0)
