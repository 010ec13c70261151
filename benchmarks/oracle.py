"""The best configuration on the true generative model, and the peer procedures of the power study.

Both search a grid of check-1 configurations by counting, not by replaying
one configuration at a time: a question's options only see which *bucket* a
submission's answer falls in (between two grid thresholds, and which level or
name), so a configuration's counts are a contraction of the table of bucket
counts with one 0/1 matrix per question (``P[option, bucket]`` passes,
``N[option, bucket]`` is decided: pass or fail). The verdict is the worst
question (check-1 §3): a submission passes when every question passes and is
decided when no question is unsure, so for ``J`` questions

    n_pass[o1, ..., oJ] = sum_b W[b1, ..., bJ] P1[o1, b1] ... PJ[oJ, bJ]

and likewise for the decided count and, with the true acceptability as the
weight, for the acceptable ones among them. Everything the oracle reports is
then replayed through :func:`calibrate.profile.decide` by
:func:`benchmarks.regimes.true_rates`.

* :func:`oracle`: among the configurations of a fine grid (one question) or a
  coarse product grid (three questions), the one that auto-passes the most
  with true false-pass rate ``<= alpha`` and true false-fail rate ``<= beta``
  (the most decided among ties), from the *expected* rates on a large sample.
  For one yes/no question it is exact over every distinct answer.
* :func:`peer`: the peer of calibrate in each question set (see its doc).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from benchmarks.regimes import CHOICE_NAMES, Sample, true_rates
from calibrate.analysis import fallback_walk
from calibrate.profile import Kind, Question

#: The peer walk of Jung et al.: 5,000 thresholds from 1 down to 0, at least 30 decisions each.
PEER_GRID, PEER_SKIP_BELOW = 5000, 30
#: The three-question peer (Learn-then-Test with Holm) on a grid fixed before any label is seen.
PEER_PASS_P = (0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.999, 1.0)
PEER_CONF = (0.0, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999, 1.0)


@dataclass
class Block:
    """One question's options on a grid: bucket of every row, pass/decided matrices, the options."""

    bucket: np.ndarray  # (rows,) int
    n_buckets: int
    passes: np.ndarray  # (options, buckets) float
    decided: np.ndarray  # (options, buckets) float
    options: list[Question]


def _thresholds(values: np.ndarray, k: int, extra: Sequence[float] = (), *,
                mass: bool = False) -> np.ndarray:  # fmt: skip
    """Up to ``k`` thresholds at quantiles of the distinct ``values`` (all if fewer) plus ``extra``.

    With ``mass``, also ``k`` quantiles of the values themselves: where an
    evaluator heaps its confidences on a few values, quantiles of the
    distinct values alone leave wide gaps in the share passed.
    """
    finite = values[np.isfinite(values)]
    u = np.unique(finite)
    if u.size > k:
        grid = np.linspace(0, 1, k)
        heaps = np.quantile(finite, grid, method="nearest") if mass else []
        u = np.unique(np.r_[np.quantile(u, grid, method="nearest"), heaps])
    return np.unique(np.r_[u, np.asarray(extra, float)])


def _yes_no_block(q: Question, p: np.ndarray, pass_grid: np.ndarray, fail_grid: np.ndarray,
                  *, fails: bool = True) -> Block:  # fmt: skip
    grid = np.unique(np.r_[pass_grid, fail_grid])
    bucket = np.searchsorted(grid, p, side="right")  # thresholds <= p
    b = np.arange(grid.size + 1)
    rows_p, rows_n, opts = [], [], []
    for a in pass_grid:
        ga = int(np.searchsorted(grid, a)) + 1  # p >= a  <=>  bucket >= ga
        passed = b >= ga
        fail_options = [f for f in fail_grid if f < a] + [a] if fails else [0.0]
        for f in fail_options:
            gf = int(np.searchsorted(grid, f))  # p < f  <=>  bucket <= gf
            failed = (b <= gf) & ~passed if f > 0 else np.zeros_like(passed)
            rows_p.append(passed)
            rows_n.append(passed | failed)
            opts.append(replace(q, pass_p=float(a), fail_p=float(f)))
    return Block(bucket, grid.size + 1, np.array(rows_p, float), np.array(rows_n, float), opts)


def _conf_buckets(conf: np.ndarray, conf_grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bucket of each confidence (a missing one is below every threshold) and, per bucket, >= grid."""
    cb = np.where(np.isnan(conf), 0, np.searchsorted(conf_grid, np.nan_to_num(conf), side="right"))
    above = np.arange(conf_grid.size + 1)[None, :] >= (np.arange(conf_grid.size) + 1)[:, None]
    return cb, above  # above[g, bucket]: conf >= conf_grid[g]


def _rubric_block(q: Question, level: np.ndarray, conf: np.ndarray, conf_grid: np.ndarray,
                  levels: Sequence[int]) -> Block:  # fmt: skip
    n_levels = len(q.levels)
    cb, above = _conf_buckets(conf, conf_grid)
    nc = conf_grid.size + 1
    lv = np.clip(np.nan_to_num(level, nan=0).astype(int), 0, n_levels - 1)
    bucket = lv * nc + cb
    b_level = np.repeat(np.arange(n_levels), nc)
    rows_p, rows_n, opts = [], [], []
    for L in levels:
        for g, c in enumerate(conf_grid):
            sure = np.tile(above[g], n_levels)
            rows_p.append(sure & (b_level >= L))
            rows_n.append(sure)
            opts.append(replace(q, pass_level=int(L), confidence=float(c)))
    return Block(bucket, n_levels * nc, np.array(rows_p, float), np.array(rows_n, float), opts)


def _choice_block(q: Question, names: np.ndarray, conf: np.ndarray, conf_grid: np.ndarray,
                  assignments: Sequence[tuple[str, ...]]) -> Block:  # fmt: skip
    """``assignments``: per option the role of every answer name ('P', 'F' or 'U')."""
    all_names = list(q.one_of)
    cb, above = _conf_buckets(conf, conf_grid)
    nc = conf_grid.size + 1
    index = {name: i for i, name in enumerate(all_names)}
    # A name outside one_of (or missing) is treated as an unknown answer: a fail under check-1.
    nm = np.array([index.get(v, len(all_names)) for v in names], dtype=int)
    bucket = nm * nc + cb
    k = len(all_names) + 1
    b_name = np.repeat(np.arange(k), nc)
    rows_p, rows_n, opts = [], [], []
    for roles in assignments:
        role = np.array(list(roles) + ["F"])  # the unknown answer fails
        for g, c in enumerate(conf_grid):
            sure = np.tile(above[g], k)
            rows_p.append(sure & (role[b_name] == "P"))
            rows_n.append(sure & (role[b_name] != "U"))
            opts.append(
                replace(
                    q,
                    pass_names=tuple(n for n, r in zip(all_names, roles, strict=True) if r == "P"),
                    unsure_names=tuple(
                        n for n, r in zip(all_names, roles, strict=True) if r == "U"
                    ),
                    confidence=float(c),
                )
            )
    return Block(bucket, k * nc, np.array(rows_p, float), np.array(rows_n, float), opts)


def contract(blocks: Sequence[Block], weights: Sequence[np.ndarray]) -> list[np.ndarray]:
    """For each weight vector over rows: (sum over passed, sum over decided) per option tuple."""
    shape = tuple(b.n_buckets for b in blocks)
    flat = np.ravel_multi_index(tuple(b.bucket for b in blocks), shape)
    out = []
    for w in weights:
        table = np.bincount(flat, weights=w, minlength=int(np.prod(shape))).reshape(shape)
        for attr in ("passes", "decided"):
            t = table
            for b in blocks:  # contract the leading bucket axis, append the option axis
                t = np.tensordot(t, getattr(b, attr), axes=([0], [1]))
            out.append(t)
    return out


@dataclass
class Best:
    """The oracle's configuration and its expected shares and rates on the big sample."""

    questions: list[Question] | None
    auto_pass: float
    decided: float
    false_pass: float
    false_fail: float
    n_options: int

    def describe(self) -> str:
        return describe(self.questions) if self.questions else "nothing passes"


def describe(questions: Sequence[Question] | None) -> str:
    """A short description of a configuration."""
    if not questions:
        return "-"
    parts = []
    for q in questions:
        if q.kind is Kind.YES_NO:
            fail = "" if not q.fail_p else f" fail {q.fail_p:g}"
            parts.append(f"pass {q.pass_p:g}{fail}")
        elif q.kind is Kind.RUBRIC:
            parts.append(f"level>={q.pass_level} conf {q.confidence:g}")
        else:
            unsure = f" unsure {'/'.join(q.unsure_names)}" if q.unsure_names else ""
            parts.append(f"{'/'.join(q.pass_names) or '-'}{unsure} conf {q.confidence:g}")
    return "; ".join(parts)


def _choose(n_pass: np.ndarray, n_dec: np.ndarray, bad_pass: np.ndarray, good_fail: np.ndarray,
            *, alpha: float, beta: float, tol: float = 1e-12) -> int | None:  # fmt: skip
    n_fail = n_dec - n_pass
    with np.errstate(invalid="ignore", divide="ignore"):
        ok_pass = (n_pass <= 0) | (bad_pass <= alpha * n_pass + tol)
        ok_fail = (n_fail <= 0) | (good_fail <= beta * n_fail + tol)
    feasible = ok_pass & ok_fail & (n_pass > 0)
    if not feasible.any():
        return None
    score = np.where(feasible, n_pass + 1e-6 * n_dec / max(float(n_dec.max()), 1.0), -np.inf)
    return int(np.argmax(score))


def _best_of_blocks(blocks: Sequence[Block], sample: Sample, alpha: float, beta: float) -> Best:
    w, q = np.ones(sample.n), sample.p_accept
    n_pass, n_dec, good_pass, good_dec = contract(blocks, [w, q])
    k = _choose(n_pass.ravel(), n_dec.ravel(), (n_pass - good_pass).ravel(),
                (good_dec - good_pass).ravel(), alpha=alpha, beta=beta)  # fmt: skip
    n_options = int(n_pass.size)
    if k is None:
        return Best(None, 0.0, 0.0, 0.0, 0.0, n_options)
    idx = np.unravel_index(k, n_pass.shape)
    questions = [b.options[i] for b, i in zip(blocks, idx, strict=True)]
    return _replayed(questions, sample, n_options)


def _replayed(questions: list[Question], sample: Sample, n_options: int) -> Best:
    r = true_rates(questions, sample)
    return Best(questions, r["auto_pass"], r["decided"], r["false_pass"], r["false_fail"],
                n_options)  # fmt: skip


def _yes_no_exact(sample: Sample, alpha: float, beta: float) -> Best:
    """One yes/no question: every distinct answer as pass and as fail threshold (exact)."""
    p, q = sample.answer[0].astype(float), sample.p_accept
    values, inv = np.unique(p, return_inverse=True)
    cnt = np.bincount(inv, minlength=values.size).astype(float)
    good = np.bincount(inv, weights=q, minlength=values.size)
    # Pass at values[i]: rows with p >= values[i].
    n_pass = np.cumsum(cnt[::-1])[::-1]
    bad_pass = n_pass - np.cumsum(good[::-1])[::-1]
    ok = bad_pass <= alpha * n_pass + 1e-12
    if not ok.any():
        return Best(None, 0.0, 0.0, 0.0, 0.0, values.size)
    i = int(np.argmax(np.where(ok, n_pass, -1)))
    a = float(values[i])
    # Fail below values[j] (j <= i): rows with p < values[j]; j = 0 fails nothing.
    n_fail = np.r_[0.0, np.cumsum(cnt)[:-1]]
    good_fail = np.r_[0.0, np.cumsum(good)[:-1]]
    okf = (good_fail <= beta * n_fail + 1e-12) & (np.arange(values.size) <= i)
    j = int(np.argmax(np.where(okf, n_fail, -1)))
    fail = float(values[j]) if j > 0 else 0.0
    questions = [replace(sample.questions[0], pass_p=a, fail_p=fail)]
    return _replayed(questions, sample, values.size**2)


def _assignments(names: Sequence[str]) -> list[tuple[str, ...]]:
    """Every role of every name (pass, fail, unsure) with at least one name passing."""
    return [r for r in itertools.product("PFU", repeat=len(names)) if "P" in r]


def oracle_blocks(sample: Sample, *, coarse: bool) -> list[Block]:
    """The grid of configurations the oracle searches (fine for one question, coarse for several)."""
    k_p, k_f, k_c = (12, 8, 8) if coarse else (400, 400, 200)
    blocks = []
    for q, ans, conf in zip(sample.questions, sample.answer, sample.confidence, strict=True):
        if q.kind is Kind.YES_NO:
            p = ans.astype(float)
            top = (0.99, 0.999, 1.0)
            blocks.append(_yes_no_block(q, p, _thresholds(p, k_p, top), _thresholds(p, k_f)))
        elif q.kind is Kind.RUBRIC:
            grid = _thresholds(conf, k_c, (0.0,), mass=not coarse)
            blocks.append(_rubric_block(q, ans.astype(float), conf, grid, range(len(q.levels))))
        else:
            grid = _thresholds(conf, k_c if coarse else 120, (0.0,), mass=not coarse)
            blocks.append(_choice_block(q, ans, conf, grid, _assignments(list(q.one_of))))
    return blocks


def oracle(sample: Sample, *, alpha: float, beta: float, blocks: list[Block] | None = None) -> Best:
    """The configuration auto-passing the most with true false-pass <= alpha, false-fail <= beta.

    ``sample`` is a large fresh draw of the regime; rates are expected rates
    (from ``p_accept``). ``blocks`` (from :func:`oracle_blocks`) may be given
    to share the grid between several alphas.
    """
    if len(sample.questions) == 1 and sample.questions[0].kind is Kind.YES_NO:
        return _yes_no_exact(sample, alpha, beta)
    if blocks is None:
        blocks = oracle_blocks(sample, coarse=len(sample.questions) > 1)
    return _best_of_blocks(blocks, sample, alpha, beta)


def _expected_counts(sample: Sample, n_labels: int,
                     blocks: list[Block] | None) -> tuple[np.ndarray, ...]:  # fmt: skip
    """Per configuration of the oracle's grid, on ``n_labels`` labels at the expected shares.

    Returns the auto-pass share, then the passes, false passes, fails and
    false fails expected among ``n_labels`` labeled submissions.
    """
    if len(sample.questions) == 1 and sample.questions[0].kind is Kind.YES_NO:
        # Every distinct answer as the pass threshold, nothing failed (fail: 0 is a check too).
        values, inv = np.unique(sample.answer[0].astype(float), return_inverse=True)
        n_pass = np.cumsum(np.bincount(inv, minlength=values.size)[::-1])[::-1].astype(float)
        good_pass = np.cumsum(np.bincount(inv, sample.p_accept, values.size)[::-1])[::-1]
        n_dec, good_dec = n_pass, good_pass
    else:
        if blocks is None:
            blocks = oracle_blocks(sample, coarse=len(sample.questions) > 1)
        w, q = np.ones(sample.n), sample.p_accept
        n_pass, n_dec, good_pass, good_dec = (x.ravel() for x in contract(blocks, [w, q]))
    scale = n_labels / sample.n
    return (n_pass / sample.n, n_pass * scale, (n_pass - good_pass) * scale,
            (n_dec - n_pass) * scale, (good_dec - good_pass) * scale)  # fmt: skip


def attainable(sample: Sample, *, alpha: float, beta: float, n_labels: int, delta: float,
               blocks: list[Block] | None = None) -> float:  # fmt: skip
    """What a single exact test on ``n_labels`` labels typically certifies: a reach, not a bound.

    Among the oracle's grid of configurations, those whose expected counts on
    ``n_labels`` labels (passes ``n * share``, false passes at the true rate;
    the same for fails) would pass one exact one-sided Clopper-Pearson test
    at the full ``delta`` for both rates; the largest auto-pass among them.
    A search tests many candidates at less than ``delta`` each, so it
    usually certifies less; in a lucky dataset (counts below expectation) it
    can certify more, and so can a grid finer than the oracle's coarse one
    for several questions. Where the oracle lies far above this value, the
    labels rather than the method are what limit a typical dataset.
    """
    share, m_p, k_p, m_f, k_f = _expected_counts(sample, n_labels, blocks)

    def upper(k: np.ndarray, m: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(m > 0, stats.beta.ppf(1 - delta, k + 1, np.maximum(m - k, 1e-9)), 0.0)

    ok = (share > 0) & (upper(k_p, m_p) <= alpha) & ((m_f < 1e-9) | (upper(k_f, m_f) <= beta))
    return float(share[ok].max()) if ok.any() else 0.0


def _test_power(m: np.ndarray, k: np.ndarray, limit: float, level: float) -> np.ndarray:
    """:func:`calibrate.analysis.fallback_walk.exact_test_power` on ``m`` decisions (rounded down)
    with ``k`` expected errors among them."""
    m = np.floor(m)
    rate = np.clip(np.divide(k, m, out=np.zeros_like(k), where=m > 0), 0.0, 1.0)
    return fallback_walk.exact_test_power(m, rate, limit=limit, level=level)


def oracle_test_power(sample: Sample, *, alpha: float, beta: float, n_labels: int, delta: float,
                      at_least: float, blocks: list[Block] | None = None) -> float:  # fmt: skip
    """The largest chance, over the oracle's grid, that one exact test certifies a check passing ``at_least``.

    Among the oracle's grid of configurations auto-passing at least
    ``at_least`` of submissions, the largest probability that one exact
    one-sided test of each rate at the full ``delta``, on ``n_labels``
    labels, certifies it: false passes and false fails binomial at their true
    rates, on the expected counts held fixed (the two sides are independent
    given the counts). The configuration is chosen knowing the truth and
    tested alone. A heuristic reference, not a bound: configurations off the
    grid, random counts (the exact test's power is saw-toothed in the count:
    a few points either way) and procedures that test several configurations
    can exceed it. Where it lies below a criterion's share of datasets, the
    labels rather than the method are the likely limit.
    """
    share, m_p, k_p, m_f, k_f = _expected_counts(sample, n_labels, blocks)
    keep = (share >= at_least - 1e-12) & (share > 0)
    if not keep.any():
        return 0.0
    side_pass = _test_power(m_p[keep], k_p[keep], alpha, delta)
    side_fail = np.where(m_f[keep] < 1.0, 1.0, _test_power(m_f[keep], k_f[keep], beta, delta))
    return float((side_pass * side_fail).max())


# --------------------------------------------------------------------------- the peer


def fixed_sequence_walk(score: np.ndarray, acceptable: np.ndarray, *, alpha: float, delta: float,
                        n_grid: int = PEER_GRID, skip_below: int = PEER_SKIP_BELOW) -> float | None:  # fmt: skip
    """Jung et al.'s one-sided walk, counted at once: the loosest threshold it certifies, or None.

    The same procedure as
    :func:`calibrate.analysis.baselines.jung_fixed_sequence_baseline` with
    ``beta=None`` (thresholds ``linspace(1, 0, n_grid)``, ``p >= t`` passes,
    thresholds passing fewer than ``skip_below`` stepped over, stop at the
    first whose exact one-sided binomial test at ``delta`` fails), written
    with sorting and cumulative counts; ``tests/test_search_validity.py``
    checks that the two agree.
    """
    grid = np.linspace(1.0, 0.0, n_grid)
    order = np.argsort(-score, kind="stable")
    s, bad = score[order], ~acceptable[order]
    cum_bad = np.r_[0, np.cumsum(bad)]
    n = np.searchsorted(-s, -grid, side="right")  # rows with score >= t
    k = cum_bad[n]
    testable = n >= skip_below
    ok = stats.binom.cdf(k, n, alpha) <= delta
    stop = np.flatnonzero(testable & ~ok)
    last = stop[0] if stop.size else n_grid
    certified = np.flatnonzero(testable[:last] & ok[:last])
    return float(grid[certified[-1]]) if certified.size else None


def _peer_single(sample: Sample, *, alpha: float, delta: float) -> list[Question] | None:
    """One question: the walk over the confidence threshold per pass level / pass list, Bonferroni."""
    q, ans, conf = sample.questions[0], sample.answer[0], sample.confidence[0]
    if q.kind is Kind.YES_NO:
        t = fixed_sequence_walk(ans.astype(float), sample.acceptable, alpha=alpha, delta=delta)
        return None if t is None else [replace(q, pass_p=t, fail_p=0.0)]
    if q.kind is Kind.RUBRIC:
        choices = [(L, ans >= L) for L in range(1, len(q.levels))]
    else:
        lists = [CHOICE_NAMES[: i + 1] for i in range(len(CHOICE_NAMES) - 1)]
        choices = [(names, np.isin(ans, list(names))) for names in lists]
    best, most = None, -1
    c = np.nan_to_num(conf.astype(float), nan=-1.0)
    for key, inside in choices:
        score = np.where(inside, c, -1.0)  # never passes outside the level / list
        t = fixed_sequence_walk(score, sample.acceptable, alpha=alpha, delta=delta / len(choices))
        if t is None:
            continue
        n_pass = int((score >= t).sum())
        if n_pass > most:
            most = n_pass
            if q.kind is Kind.RUBRIC:
                best = [replace(q, pass_level=int(key), confidence=t)]
            else:
                others = tuple(n for n in q.one_of if n not in key)
                best = [replace(q, pass_names=tuple(key), unsure_names=others, confidence=t)]
    return best


def peer_blocks(sample: Sample) -> list[Block]:
    """The fixed grid of the multi-question peer: pass thresholds only, nothing else fails."""
    blocks = []
    conf_grid = np.asarray(PEER_CONF)
    for q, ans, conf in zip(sample.questions, sample.answer, sample.confidence, strict=True):
        if q.kind is Kind.YES_NO:
            grid = np.asarray(PEER_PASS_P)
            blocks.append(_yes_no_block(q, ans.astype(float), grid, grid, fails=False))
        elif q.kind is Kind.RUBRIC:
            levels = range(max(1, len(q.levels) - 3), len(q.levels))
            blocks.append(_rubric_block(q, ans.astype(float), conf, conf_grid, levels))
        else:
            names = list(q.one_of)
            lists = [CHOICE_NAMES[: i + 1] for i in range(len(CHOICE_NAMES) - 1)]
            roles = [tuple("P" if n in keep else "U" for n in names) for keep in lists]
            blocks.append(_choice_block(q, ans, conf, conf_grid, roles))
    return blocks


def holm(pvalues: np.ndarray, delta: float) -> np.ndarray:
    """Holm's step-down procedure at family-wise level ``delta``: which hypotheses are rejected."""
    p = np.asarray(pvalues, float).ravel()
    m = p.size
    order = np.argsort(p, kind="stable")
    ok = p[order] <= delta / (m - np.arange(m))
    n_rej = m if ok.all() else int(np.argmin(ok))
    out = np.zeros(m, bool)
    out[order[:n_rej]] = True
    return out


def _peer_ltt(sample: Sample, *, alpha: float, delta: float) -> list[Question] | None:
    """Several questions: Learn-then-Test with Holm over a grid fixed in advance (one-sided)."""
    blocks = peer_blocks(sample)
    ok = sample.acceptable.astype(float)
    n_pass, _, good_pass, _ = contract(blocks, [np.ones(sample.n), ok])
    n = n_pass.ravel()
    bad = n - good_pass.ravel()
    pv = np.where(n > 0, stats.binom.cdf(bad, np.maximum(n, 1), alpha), 1.0)
    rejected = holm(pv, delta)
    if not rejected.any():
        return None
    k = int(np.argmax(np.where(rejected, n, -1)))
    idx = np.unravel_index(k, n_pass.shape)
    return [b.options[i] for b, i in zip(blocks, idx, strict=True)]


def peer(sample: Sample, *, alpha: float, delta: float) -> list[Question] | None:
    """The peer procedure's certified configuration on the labels of ``sample``, or ``None``.

    * one yes/no question: the one-sided fixed-sequence walk of Jung et al.
      (5,000 thresholds, at least 30 decisions, the full ``delta``);
      everything it does not pass goes to a person;
    * one rubric or choice question: the same walk over the confidence
      threshold for each pass level (1..4) or pass list (``meets``;
      ``meets``/``partly``), ``delta`` split among them (Bonferroni), keeping
      the one that passes the most labeled submissions (the other names are
      unsure; a rubric's lower levels fail, as check-1 has it);
    * several questions: Learn-then-Test with Holm's procedure over a grid of
      pass thresholds fixed in advance (yes/no pass in :data:`PEER_PASS_P`,
      the choice pass list, the rubric's top three pass levels, confidence in
      :data:`PEER_CONF`), exact one-sided binomial p-values for the false-pass
      rate, keeping the rejected configuration that passes the most.

    The peer controls the false-pass rate only.
    """
    if len(sample.questions) == 1:
        return _peer_single(sample, alpha=alpha, delta=delta)
    return _peer_ltt(sample, alpha=alpha, delta=delta)


def as_sample(sample: Sample, idx: np.ndarray) -> Sample:
    """Rows ``idx`` of a sample."""
    return Sample(
        sample.qset, sample.evaluator, sample.questions, [a[idx] for a in sample.answer],
        [c[idx] for c in sample.confidence], sample.p_accept[idx], sample.acceptable[idx],
    )  # fmt: skip
