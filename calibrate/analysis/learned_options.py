"""The option space of a learned path: every threshold combination tried per question.

For each question of a step: the thresholds tried on the search rows
(quantiles of its scores and confidences) and their result codes there,
grouped into buckets (:class:`Options`); how the questions map onto
thresholds (:class:`Layout`, :func:`option_layout`); the search rows grouped
into cells that every candidate treats alike (:class:`Cells`); and a
candidate, one option per question, read back as check-1 questions with
short decimals (:func:`candidate_questions`, :func:`never_fails`). The search
over this space is :mod:`calibrate.analysis.learned_path`'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis import certify
from calibrate.analysis.step_data import StepData, can_fail, rubric_levels
from calibrate.profile import FAIL, PASS, UNSURE, Kind, Question

# The gains' stacked sums read the codes as indices.
assert (PASS, FAIL, UNSURE) == (0, 1, 2)

#: Quantiles of the search part tried per continuous threshold.
_N_PASS_VALUES = 40
_N_FAIL_VALUES = 20
_N_CONF_VALUES = 32
#: Options whose result codes are computed at once.
_CHUNK = 16


@dataclass
class Options:
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
    def of(cls, q: int, options: list[dict[str, float]], codes: np.ndarray) -> Options:
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
class Layout:
    """How the questions of a step map onto thresholds (learned on the search part)."""

    blocks: list[Options]
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
    layout: Layout, data: StepData, rows: np.ndarray, q: int, t: Mapping[str, Any]
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


def option_layout(
    data: StepData, search: np.ndarray, *, relearn_lists: bool, order_by: np.ndarray | None = None
) -> Layout:
    """How each question's thresholds map onto options, read on the rows ``search``.

    A relearned choice list orders its names, worst first, by the mean of
    ``order_by`` over the rows giving each name (default: the labels,
    ``data.acceptable``); given a label-free ``order_by``, the layout reads no
    label.

    Parameters
    ----------
    data : StepData
        The step, every labeled row.
    search : numpy.ndarray
        Indices of the rows the options are read on (the search part).
    relearn_lists : bool
        Whether choice lists are searched too (else only those not known).
    order_by : numpy.ndarray, optional
        Per row, what orders a relearned choice list's names.

    Returns
    -------
    Layout
        The options of every question, with their result codes on ``search``.
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
    layout = Layout([], rank_names, relearn, levels, score, fixed, observed)
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
        layout.blocks.append(Options.of(i, opts, codes))
    return layout


def _short(value: float, observed: np.ndarray, *, prefer: str) -> float:
    """A short decimal making the same decisions on the search part as ``value``."""
    if not math.isfinite(value):
        return value
    below = observed[observed < value]
    low = float(below[-1]) if below.size else value - 1.0
    return certify.nice_threshold(low, value, prefer=prefer) if low < value else value


def candidate_questions(data: StepData, layout: Layout, choice: Sequence[int]) -> list[Question]:
    """The questions of one candidate, with short decimals and check-1's bounds.

    Parameters
    ----------
    data : StepData
        The step the layout was read on.
    layout : Layout
        Its option space.
    choice : sequence of int
        One option index per block of ``layout``.

    Returns
    -------
    list of Question
        The step's questions with the candidate's thresholds.
    """
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


@dataclass
class Cells:
    """The search rows grouped into cells that every candidate treats alike.

    Rows with the same bucket in every question, the same label and the same
    forced-unsure flag get the same verdict under every candidate, so the
    search sums over cells weighted by their row counts instead of over rows.
    """

    blocks: list[Options]  # the layout's blocks with ``bucket`` per cell
    bad: np.ndarray
    forced: np.ndarray
    count: np.ndarray

    @classmethod
    def of(cls, layout: Layout, bad: np.ndarray, forced: np.ndarray) -> Cells:
        keys = np.column_stack(
            [b.bucket for b in layout.blocks] + [bad.astype(np.intp), forced.astype(np.intp)]
        )
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        count = np.bincount(inverse.ravel(), minlength=first.size)
        blocks = [replace(b, bucket=b.bucket[first]) for b in layout.blocks]
        return cls(blocks, bad[first], forced[first], count)

    @classmethod
    def predicted(cls, layout: Layout, bad: np.ndarray, forced: np.ndarray) -> Cells:
        """Cells without labels: ``bad`` per row is a predicted probability, averaged per cell."""
        keys = np.column_stack([b.bucket for b in layout.blocks] + [forced.astype(np.intp)])
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        count = np.bincount(inverse, minlength=first.size)
        share = np.bincount(inverse, weights=bad, minlength=first.size) / count
        blocks = [replace(b, bucket=b.bucket[first]) for b in layout.blocks]
        return cls(blocks, share, forced[first], count)


def never_fails(data: StepData, layout: Layout, keys: np.ndarray) -> np.ndarray:
    """Per candidate: whether no submission could get ``fail`` (as :func:`can_fail`, by option).

    Parameters
    ----------
    data : StepData
        The step of ``layout``.
    layout : Layout
        The options of every question (:func:`option_layout`).
    keys : numpy.ndarray
        One row per candidate, one option index per block of ``layout``.

    Returns
    -------
    numpy.ndarray of bool
        Per candidate, whether it never fails.
    """
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
