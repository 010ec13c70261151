"""A ceiling on what any valid procedure certifies: a Neyman-Pearson bound (power study).

The argument
------------
Let ``S`` be the configurations whose true auto-pass share is at least
``at_least`` (``f x`` the oracle's). Take an alternative law ``Q`` of the
labels given the answers (the answers' law unchanged, so ``S`` is the same
set under ``Q``) under which every configuration of ``S`` has a true
false-pass rate above ``alpha``. A procedure valid at ``delta`` for every
law certifies a configuration of ``S`` under ``Q`` with probability at most
``delta`` (each such certificate is a violation), so the event "certifies
something in ``S``" is a test of ``Q`` of size ``<= delta``. By the
Neyman-Pearson lemma its probability under the true law ``P`` is at most the
power of the likelihood-ratio test of ``Q`` against ``P`` at level ``delta``
(randomised) on ``n`` iid labeled submissions. Every such ``Q`` gives a valid
ceiling; :func:`power_ceiling` takes the least over a few families.

The world is the big sample of a regime, as for the oracle: answers drawn
from its rows, a row's label "not acceptable" with probability
``q = 1 - p_accept`` (approver noise included). ``S`` is exact over every
distinct answer for one question (yes/no: the pass threshold; rubric: the
pass level and the confidence threshold; choice: the pass names and the
confidence threshold, whatever the other names do), so there it covers every
configuration; for several questions it is the oracle's coarse grid, and a
configuration off that grid is not covered. Only the false-pass side is
raised: every configuration of ``S`` must violate by false passes, which is
sufficient (a yes/no or choice pass region has a variant failing nothing, so
it is also needed there; counting configurations that violate by false fails
could only lower the ceiling, e.g. for a rubric, whose lower levels fail).

The families of ``Q`` (each raises ``q``, so a configuration already above
``alpha`` stays above):

* ``mix union`` / ``mix inter``: ``q + eps (1 - q)`` on the union (the
  intersection) of the pass regions of the configurations of ``S`` at or
  below ``alpha``, ``eps`` the least that lifts them all above ``alpha``;
* ``tilt union`` / ``tilt inter``: the logistic tilt ``logit q + t`` on the
  same regions (locally the least-informative way to raise a mean of
  Bernoulli labels);
* ``tilt lf``: the least-favourable tilt ``logit q + s w(x)``, ``w`` the
  weights of the least-informative local shift (a quadratic programme over
  the binding configurations, solved by adding the most violated one at a
  time), ``s`` the least that lifts every configuration above ``alpha``.

The power of the likelihood-ratio test is measured by Monte Carlo under
``P`` alone: the log-likelihood ratio ``L`` of ``n`` draws, and the size of
"``L > k``" under ``Q`` as ``E_P[exp(-L); L > k]`` (importance weights, exact
in expectation); the boundary draw is taken in part (randomisation).

Usage::

    python -m benchmarks.ceiling          # the headline cells of reports/power.md, with the single test
    python -m benchmarks.ceiling --all    # every cell of the power criterion (oracle parts only)
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from benchmarks.oracle import Block
from benchmarks.regimes import Sample
from calibrate.profile import Kind

#: Monte-Carlo replicates of the log-likelihood ratio: the ranking of the families, the final power.
RANK_REPLICATES, REPLICATES = 600, 8000
#: Where every alternative ranks at least this high, the ranking's least is the ceiling (far above
#: the criterion's bars; not measured afresh).
SURE = 0.995
#: Draws per chunk (memory).
CHUNK_DRAWS = 4_000_000


# --------------------------------------------------------------------------- configurations


@dataclass
class Regions:
    """The pass regions of a family of configurations over the rows of a sample.

    ``mean(w)`` is, per configuration, the mean over rows of ``w`` times the
    indicator of its pass region; ``cover(keep)`` the union and intersection
    of the kept configurations' regions; ``weight(idx, lam)`` the row
    weights ``sum_j lam_j 1[row in region idx_j]``.
    """

    n_rows: int
    mean: Callable[[np.ndarray], np.ndarray]
    cover: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
    weight: Callable[[np.ndarray, np.ndarray], np.ndarray]


def prefix_regions(
    n_rows: int, sets: Sequence[np.ndarray], scores: Sequence[np.ndarray]
) -> Regions:
    """Regions "row in set j and score >= u", for every set and every distinct score ``u``.

    ``sets``: per set, its rows among ``n_rows``; ``scores``: their scores (finite).
    """
    orders, ends = [], []
    for rows, score in zip(sets, scores, strict=True):
        order = np.argsort(-score, kind="stable")
        s = score[order]
        orders.append(rows[order])
        ends.append(np.searchsorted(-s, -np.unique(s), side="right"))  # rows with score >= u
    offsets = np.cumsum([0] + [e.size for e in ends])

    def mean(w: np.ndarray) -> np.ndarray:
        sums = [np.r_[0.0, np.cumsum(w[o])][e] for o, e in zip(orders, ends, strict=True)]
        return np.concatenate(sums) / w.size

    def cover(keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        union, inter = np.zeros(n_rows, bool), np.ones(n_rows, bool)
        for j, (o, e) in enumerate(zip(orders, ends, strict=True)):
            k = e[keep[offsets[j] : offsets[j + 1]]]
            if k.size:
                union[o[: k.max()]] = True
                inside = np.zeros(n_rows, bool)
                inside[o[: k.min()]] = True
                inter &= inside
        return union, inter & union

    def weight(idx: np.ndarray, lam: np.ndarray) -> np.ndarray:
        out = np.zeros(n_rows)
        for j, (o, e) in enumerate(zip(orders, ends, strict=True)):
            sel = (idx >= offsets[j]) & (idx < offsets[j + 1])
            if sel.any():
                at = np.zeros(o.size + 1)
                np.add.at(at, e[idx[sel] - offsets[j]], lam[sel])
                out[o] += np.cumsum(at[::-1])[::-1][1:]  # position p is inside prefix e iff p < e
        return out

    return Regions(n_rows, mean, cover, weight)


def block_regions(blocks: Sequence[Block]) -> Regions:
    """The regions of a product grid of question blocks (the oracle's grid for several questions)."""
    n_rows = int(blocks[0].bucket.size)
    shape = tuple(int(b.passes.shape[0]) for b in blocks)
    buckets = tuple(b.n_buckets for b in blocks)
    flat = np.ravel_multi_index(tuple(b.bucket for b in blocks), buckets)

    def mean(w: np.ndarray) -> np.ndarray:
        t = np.bincount(flat, weights=w, minlength=int(np.prod(buckets))).reshape(buckets)
        for b in blocks:  # contract the leading bucket axis, append the option axis
            t = np.tensordot(t, b.passes, axes=([0], [1]))
        return t.ravel() / n_rows

    def rows_of(t: np.ndarray) -> np.ndarray:
        for b in blocks:  # contract the leading option axis, append the bucket axis
            t = np.tensordot(t, b.passes, axes=([0], [0]))
        return t[tuple(b.bucket for b in blocks)]

    def cover(keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        count = rows_of(keep.reshape(shape).astype(float))
        return count > 0.5, count > keep.sum() - 0.5

    def weight(idx: np.ndarray, lam: np.ndarray) -> np.ndarray:
        out = np.zeros(n_rows)
        for k, w in zip(idx, lam, strict=True):
            inside = np.ones(n_rows)
            for b, o in zip(blocks, np.unravel_index(int(k), shape), strict=True):
                inside *= b.passes[o, b.bucket]
            out += w * inside
        return out

    return Regions(n_rows, mean, cover, weight)


def regions_of(sample: Sample, blocks: Sequence[Block] | None = None) -> Regions:
    """Every configuration's pass region: exact for one question, else the oracle's grid ``blocks``."""
    if len(sample.questions) > 1:
        if blocks is None:
            from benchmarks.oracle import oracle_blocks

            blocks = oracle_blocks(sample, coarse=True)
        return block_regions(blocks)
    q, ans, conf = sample.questions[0], sample.answer[0], sample.confidence[0]
    if q.kind is Kind.YES_NO:
        return prefix_regions(sample.n, [np.arange(sample.n)], [ans.astype(float)])
    ok = np.isfinite(conf.astype(float))  # a missing confidence passes nothing
    if q.kind is Kind.RUBRIC:
        level = np.nan_to_num(ans.astype(float), nan=-1.0)
        masks = [ok & (level >= L) for L in range(len(q.levels))]
    else:
        names = list(q.one_of)
        masks = [ok & np.isin(ans, list(c)) for r in range(1, len(names) + 1)
                 for c in itertools.combinations(names, r)]  # fmt: skip
    sets = [np.flatnonzero(m) for m in masks]
    return prefix_regions(sample.n, sets, [conf[s].astype(float) for s in sets])


# --------------------------------------------------------------------------- alternatives


@dataclass
class Alternative:
    """A law of the labels under which every configuration of ``S`` violates ``alpha``."""

    name: str
    q_alt: np.ndarray  # per row: P(label not acceptable) under Q


def tilted(q: np.ndarray, t: np.ndarray | float) -> np.ndarray:
    """``expit(logit q + t)``, keeping ``q`` in {0, 1} where it is."""
    e = np.exp(np.clip(t, -700, 700))
    return q * e / (1.0 - q + q * e)


def _least(lift: Callable[[float], np.ndarray], need: Callable[[np.ndarray], float],
           hi: float) -> float | None:  # fmt: skip
    """The least ``s`` in (0, hi] with ``need(lift(s)) > 0`` (``need`` increasing and continuous)."""
    if need(lift(hi)) <= 0:
        return None
    root = optimize.brentq(lambda t: need(lift(t)), 0.0, hi, xtol=1e-12, rtol=1e-10)
    for _ in range(50):  # just above the root, where every margin is strictly positive
        root = min(hi, root * (1 + 1e-8) + 1e-12)
        if need(lift(root)) > 0:
            return root
    return hi


def _nonnegative_qp(m: np.ndarray, d: np.ndarray, start: np.ndarray) -> np.ndarray:
    """``argmin_{x >= 0} x m x / 2 - d x`` (``m`` positive semi-definite)."""
    res = optimize.minimize(lambda x: 0.5 * x @ m @ x - d @ x, start, jac=lambda x: m @ x - d,
                            bounds=[(0, None)] * d.size, method="L-BFGS-B")  # fmt: skip
    return np.asarray(res.x)


def _least_favourable(regions: Regions, q: np.ndarray, gap: np.ndarray, live: np.ndarray,
                      rounds: int = 30) -> np.ndarray | None:  # fmt: skip
    """Row weights ``w`` of the least-informative local shift ``q (1 - q) w`` lifting ``live``.

    Minimises ``E[q (1 - q) w^2]`` subject to ``E[q (1 - q) w 1_A] >= gap_A``
    for the live configurations ``A``; by the KKT conditions ``w`` is a
    non-negative combination of their indicators, found by adding the most
    violated configuration to the active set and solving its dual.
    """
    v = q * (1 - q)
    diag = regions.mean(v)
    cand = np.flatnonzero(live)
    if cand.size == 0 or (diag[cand] <= 0).any():
        return None
    active = [int(cand[np.argmax(gap[cand] / np.sqrt(diag[cand]))])]
    cols = [regions.mean(v * regions.weight(np.array(active), np.ones(1)))]
    lam = np.zeros(1)
    for _ in range(rounds):
        m = np.array([c[active] for c in cols]).T  # m[i, j] = E[v 1_{A_i} 1_{A_j}]
        d = gap[active]
        lam = _nonnegative_qp(m, d, np.r_[lam, 0.0][: len(active)])
        slack = np.column_stack(cols) @ lam - gap
        worst = int(cand[np.argmin(slack[cand] / np.sqrt(diag[cand]))])
        if slack[worst] >= -1e-3 * gap[cand].max() or worst in active:
            break
        active.append(worst)
        cols.append(regions.mean(v * regions.weight(np.array([worst]), np.ones(1))))
    return regions.weight(np.array(active), lam)


def alternatives(sample: Sample, regions: Regions, *, alpha: float,
                 at_least: float) -> tuple[list[Alternative], bool]:  # fmt: skip
    """The alternatives of every family that can lift ``S`` above ``alpha``.

    Returns the alternatives and whether ``S`` is already above ``alpha``
    under the true law (then ``Q = P`` and the ceiling is ``delta``).
    """
    q = 1.0 - sample.p_accept
    share = regions.mean(np.ones(sample.n))
    in_s = (share >= at_least - 1e-12) & (share > 0)
    gap = alpha * share - regions.mean(q)  # E[q' 1_A] must exceed alpha P(A): raise by > gap
    live = in_s & (gap >= 0)
    if not live.any():
        return [], True
    union, inter = regions.cover(live)

    def margin(q_alt: np.ndarray) -> float:
        return float(np.min((regions.mean(q_alt) - alpha * share)[live]))

    out = []
    for where, rows in (("union", union), ("inter", inter)):
        if not rows.any():
            continue
        lift = regions.mean((1 - q) * rows)[live]
        if (lift > 0).all():
            eps = float(np.max(gap[live] / lift)) * (1 + 1e-9) + 1e-15
            if eps < 1:
                out.append(Alternative(f"mix {where}", np.where(rows, q + eps * (1 - q), q)))
        s = _least(lambda t, r=rows: tilted(q, t * r), margin, 30.0)
        if s is not None:
            out.append(Alternative(f"tilt {where}", tilted(q, s * rows)))
    w = _least_favourable(regions, q, gap, live)
    if w is not None and w.max() > 0:
        w = w / w.max()
        s = _least(lambda t: tilted(q, t * w), margin, 30.0)
        if s is not None:
            out.append(Alternative("tilt lf", tilted(q, s * w)))
    return out, False


# --------------------------------------------------------------------------- the power


def llr_draws(q: np.ndarray, q_alt: np.ndarray, n: int, replicates: int,
              rng: np.random.Generator) -> np.ndarray:  # fmt: skip
    """``replicates`` draws under P of log dP/dQ on ``n`` iid labeled submissions (rows uniform)."""
    moved = np.flatnonzero(q_alt != q)
    out = np.zeros(replicates)
    if moved.size == 0:
        return out
    qm, am = q[moved], q_alt[moved]
    with np.errstate(divide="ignore", invalid="ignore"):
        z_bad, z_good = np.log(qm / am), np.log1p(-qm) - np.log1p(-am)
    m = rng.binomial(n, moved.size / q.size, size=replicates)  # draws landing on moved rows
    per = max(1, CHUNK_DRAWS // max(n, 1))
    for start in range(0, replicates, per):
        mm = m[start : start + per]
        rows = rng.integers(0, moved.size, int(mm.sum()))
        bad = rng.random(rows.size) < qm[rows]
        z = np.where(bad, z_bad[rows], z_good[rows])
        out[start : start + per] = np.bincount(np.repeat(np.arange(mm.size), mm), weights=z,
                                               minlength=mm.size)  # fmt: skip
    return out


def np_power(llr: np.ndarray, delta: float) -> float:
    """The power of the randomised test "reject Q for large L" at size ``delta``, from P-draws of L.

    The size of "``L > k``" is ``E_P[exp(-L); L > k]``; the draws are taken
    from the largest down until their weights reach ``delta``, the last in part.
    """
    s = np.sort(llr)[::-1]
    size = np.cumsum(np.exp(-s)) / s.size
    k = int(np.searchsorted(size, delta, side="right"))  # draws wholly inside the rejection region
    if k >= s.size:
        return 1.0
    before = size[k - 1] if k else 0.0
    part = (delta - before) / (size[k] - before) if size[k] > before else 0.0
    return float((k + part) / s.size)


@dataclass
class Ceiling:
    """The ceiling at each label count, the family that gives it, and its Monte-Carlo error."""

    power: dict[int, float]
    family: dict[int, str]
    se: dict[int, float]


def power_ceiling(sample: Sample, *, alpha: float, n_labels: Sequence[int], delta: float,
                  shares: Sequence[float], blocks: Sequence[Block] | None = None,
                  regions: Regions | None = None, seed: int = 0,
                  replicates: int = REPLICATES) -> list[Ceiling]:  # fmt: skip
    """Upper bounds on P(a valid procedure certifies a configuration passing >= each of ``shares``).

    For each share, over the alternatives of :func:`alternatives` for it and
    for every smaller share (an alternative lifting a larger ``S`` lifts a
    smaller one), the least Neyman-Pearson power at level ``delta`` on ``n``
    labels, for each ``n`` of ``n_labels`` (see the module doc for the
    argument and what ``S`` covers). The alternatives are ranked on
    :data:`RANK_REPLICATES` draws and the best measured afresh on
    ``replicates`` (so the estimate is unbiased), unless every one ranks
    above :data:`SURE`; ``se`` is the binomial standard error.
    """
    regions = regions or regions_of(sample, blocks)
    q = 1.0 - sample.p_accept
    rng = np.random.default_rng(seed)
    found = {s: alternatives(sample, regions, alpha=alpha, at_least=s) for s in shares}
    out = []
    for share in shares:
        alts = [a for s, (al, _) in found.items() if s <= share for a in al]
        already = any(found[s][1] for s in found if s <= share)
        c = Ceiling({}, {}, {})
        for n in n_labels:
            if already or not alts:
                c.power[n], c.family[n] = (delta, "P itself") if already else (1.0, "none")
                c.se[n] = 0.0
                continue
            rank = [np_power(llr_draws(q, a.q_alt, n, RANK_REPLICATES, rng), delta) for a in alts]
            best, reps = alts[int(np.argmin(rank))], RANK_REPLICATES
            p = min(rank)
            if p < SURE:
                p, reps = np_power(llr_draws(q, best.q_alt, n, replicates, rng), delta), replicates
            c.power[n], c.family[n] = p, best.name
            c.se[n] = float(np.sqrt(max(p * (1 - p), 1 / reps) / reps))
        out.append(c)
    return out


# --------------------------------------------------------------------------- the command


def _report_cells(path: str) -> list[tuple[str, str, int, float]]:
    """The cells of the first headline table of a power report (question set, evaluator, n, alpha)."""
    cells, inside = [], False
    for line in open(path, encoding="utf-8"):  # noqa: SIM115
        line = line.strip()
        if line.startswith("1. **Power"):
            inside = True
        elif inside and line.startswith("2. **"):
            break
        elif inside and line.startswith("|") and not line.startswith(("| question", "|---")):
            q, e, n, a = (x.strip() for x in line.strip("|").split("|")[:4])
            cells.append((q, e, int(n.replace(",", "")), float(a)))
    return cells


def _all_cells(seed: int, big: int) -> int:
    """Print the ceiling of every cell of the power criterion and count those out of reach."""
    from benchmarks import power, regimes

    print("| question set | evaluator | labels | alpha | oracle | single test: >= 0.8x | >= 0.9x "
          "| ceiling: >= 0.8x | >= 0.9x | standard error |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    cells = out = 0
    for qset in regimes.QUESTION_SETS:
        for ev in regimes.EVALUATORS:
            for o in power.run_oracle(qset, ev, power.ALPHAS, seed, big):
                for n in (m for m in power.LABELS if f"ceiling_0.8_{m}" in o):
                    c8, c9 = o[f"ceiling_0.8_{n}"], o[f"ceiling_0.9_{n}"]
                    se = max(o[f"ceiling_se_0.8_{n}"], o[f"ceiling_se_0.9_{n}"])
                    cells += 1
                    out += int(c8 < 0.90 or c9 < 0.50)
                    print(f"| {qset} | {ev} | {n:,} | {o['alpha']:g} | {100 * o['oracle_pass']:.0f}% "
                          f"| {100 * o[f'single_test_0.8_{n}']:.0f}% "
                          f"| {100 * o[f'single_test_0.9_{n}']:.0f}% | {100 * c8:.1f}% "
                          f"| {100 * c9:.1f}% | {100 * se:.1f} |", flush=True)  # fmt: skip
    print(f"\n{out} of {cells} cells out of reach for every valid method (ceiling < 90% at 0.8x "
          "or < 50% at 0.9x)")  # fmt: skip
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Print the ceiling next to the single-test reference for the cells of a power report."""
    from benchmarks import oracle as orc
    from benchmarks import power, regimes

    ap = argparse.ArgumentParser(prog="python -m benchmarks.ceiling", description=main.__doc__)
    ap.add_argument("--report", default=str(power.ROOT / "reports" / "power.md"))
    ap.add_argument("--big", type=int, default=power.BIG)
    ap.add_argument("--seed", type=int, default=power.SEED)
    ap.add_argument(
        "--all",
        action="store_true",
        help="every cell of the power criterion, through power.run_oracle (no search)",
    )
    args = ap.parse_args(argv)
    if args.all:
        return _all_cells(args.seed, args.big)
    cells = _report_cells(args.report)
    print("| question set | evaluator | labels | alpha | oracle | single test: >= 0.8x | >= 0.9x "
          "| ceiling: >= 0.8x | >= 0.9x | standard error | family |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (qset, ev), group in itertools.groupby(sorted(cells), key=lambda c: c[:2]):
        sample = regimes.draw(qset, ev, args.big, power._big_seed(qset, ev, args.seed))
        blocks = None if qset == "yes_no" else orc.oracle_blocks(sample, coarse=qset == "three")
        regions = regions_of(sample, blocks if qset == "three" else None)
        for _, _, n, alpha in group:
            best = orc.oracle(sample, alpha=alpha, beta=power.BETA, blocks=blocks)
            shares = [bar * best.auto_pass for bar in power.REACH_BARS]
            single = [orc.oracle_test_power(sample, alpha=alpha, beta=power.BETA, n_labels=n,
                                            delta=power.DELTA, at_least=s, blocks=blocks)
                      for s in shares]  # fmt: skip
            found = power_ceiling(sample, alpha=alpha, n_labels=[n], delta=power.DELTA,
                                  shares=shares, regions=regions, seed=args.seed)  # fmt: skip
            ceil, fam = [c.power[n] for c in found], [c.family[n] for c in found]
            se = max(c.se[n] for c in found)
            print(f"| {qset} | {ev} | {n:,} | {alpha:g} | {100 * best.auto_pass:.0f}% "
                  f"| {100 * single[0]:.0f}% | {100 * single[1]:.0f}% | {100 * ceil[0]:.1f}% "
                  f"| {100 * ceil[1]:.1f}% | {100 * se:.1f} | {' / '.join(fam)} |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
