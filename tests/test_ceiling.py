"""The Neyman-Pearson ceiling of the power study (benchmarks/ceiling.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from benchmarks import ceiling, regimes
from benchmarks import oracle as orc
from calibrate.profile import PASS, decide

DELTA, BETA = 0.1, 0.3


def _exact_np_power(groups: list[tuple[float, float, float]], n: int, delta: float) -> float:
    """The randomised likelihood-ratio test's power, enumerated over every outcome.

    ``groups``: (share of rows, q under P, q under Q); the first group is not moved.
    """
    (_, _, _), (p1, q1, a1), (p2, q2, a2) = groups
    z = [(np.log(q / a), np.log((1 - q) / (1 - a))) for _, q, a in groups[1:]]
    llr, prob = [], []
    for n1 in range(n + 1):
        for n2 in range(n + 1 - n1):
            m = stats.multinomial.pmf([n - n1 - n2, n1, n2], n, [1 - p1 - p2, p1, p2])
            b1, b2 = np.meshgrid(np.arange(n1 + 1), np.arange(n2 + 1), indexing="ij")
            pb = stats.binom.pmf(b1, n1, q1) * stats.binom.pmf(b2, n2, q2)
            llr.append(
                (b1 * z[0][0] + (n1 - b1) * z[0][1] + b2 * z[1][0] + (n2 - b2) * z[1][1]).ravel()
            )
            prob.append((m * pb).ravel())
    llr_, p_ = np.concatenate(llr), np.concatenate(prob)
    q_ = p_ * np.exp(-llr_)
    order = np.argsort(-llr_)
    size, power = np.cumsum(q_[order]), np.cumsum(p_[order])
    k = int(np.searchsorted(size, delta))
    before_q = size[k - 1] if k else 0.0
    before_p = power[k - 1] if k else 0.0
    return float(before_p + p_[order][k] * (delta - before_q) / q_[order][k])


def test_np_power_agrees_with_the_enumerated_likelihood_ratio_test():
    # Three kinds of rows, two of them moved: the Monte-Carlo power of llr_draws + np_power against
    # every outcome of 30 labeled submissions enumerated (randomised at the boundary).
    groups = [(0.3, 0.2, 0.2), (0.5, 0.05, 0.12), (0.2, 0.3, 0.5)]
    rows = np.repeat(np.arange(3), [30, 50, 20])
    q = np.array([g[1] for g in groups])[rows]
    q_alt = np.array([g[2] for g in groups])[rows]
    exact = _exact_np_power(groups, 30, DELTA)
    assert 0.3 < exact < 0.9
    draws = ceiling.llr_draws(q, q_alt, 30, 40_000, np.random.default_rng(1))
    assert ceiling.np_power(draws, DELTA) == pytest.approx(exact, abs=0.012)


def _one_question_rates(sample: regimes.Sample, q_alt: np.ndarray, config) -> tuple[float, float]:
    """Share passed and mean of ``q_alt`` over it, by check-1's own decide."""
    passed = decide(config, sample.answer[0], sample.confidence[0]) == PASS
    return float(passed.mean()), float(q_alt[passed].mean()) if passed.any() else 0.0


@pytest.mark.parametrize("qset", ["yes_no", "rubric"])
def test_every_configuration_of_s_violates_under_each_alternative(qset):
    sample = regimes.draw(qset, "calibrated", 20_000, np.random.default_rng(3))
    alpha = 0.1
    best = orc.oracle(sample, alpha=alpha, beta=BETA)
    at_least = 0.8 * best.auto_pass
    regions = ceiling.regions_of(sample)
    alts, already = ceiling.alternatives(sample, regions, alpha=alpha, at_least=at_least)
    assert not already and {a.name for a in alts} >= {"tilt inter", "tilt lf"}
    q0 = sample.questions[0]
    if qset == "yes_no":
        configs = [replace(q0, pass_p=float(a), fail_p=0.0) for a in np.unique(sample.answer[0])]
    else:
        conf = np.unique(sample.confidence[0])
        configs = [replace(q0, pass_level=L, confidence=float(c))
                   for L in range(5) for c in conf[:: max(1, conf.size // 150)]]  # fmt: skip
    checked = 0
    for config in configs:
        share, before = _one_question_rates(sample, 1 - sample.p_accept, config)
        if share < at_least:
            continue
        checked += 1
        for a in alts:
            assert _one_question_rates(sample, a.q_alt, config)[1] > alpha, (a.name, config)
        assert np.all(np.r_[[a.q_alt >= 1 - sample.p_accept - 1e-15 for a in alts]])
    assert checked > 50


def test_three_questions_every_grid_configuration_violates():
    sample = regimes.draw("three", "calibrated", 20_000, np.random.default_rng(4))
    alpha = 0.1
    blocks = orc.oracle_blocks(sample, coarse=True)
    best = orc.oracle(sample, alpha=alpha, beta=BETA, blocks=blocks)
    at_least = 0.9 * best.auto_pass
    alts, _ = ceiling.alternatives(sample, ceiling.regions_of(sample, blocks), alpha=alpha,
                                   at_least=at_least)  # fmt: skip
    assert alts
    for a in alts:  # counted by the oracle's own contraction
        n_pass, _, bad_pass, _ = orc.contract(blocks, [np.ones(sample.n), a.q_alt])
        share = n_pass.ravel() / sample.n
        in_s = share >= at_least
        assert in_s.sum() > 100
        assert np.all(bad_pass.ravel()[in_s] > alpha * n_pass.ravel()[in_s]), a.name


@pytest.mark.parametrize(("qset", "alpha"), [("yes_no", 0.05), ("rubric", 0.1)])
def test_ceiling_is_at_least_the_single_test(qset, alpha):
    # One exact test chosen in advance is a valid procedure: its power cannot beat the ceiling
    # (a Monte-Carlo slack of 2 points; the single test is itself an approximation).
    sample = regimes.draw(qset, "calibrated", 50_000, np.random.default_rng(5))
    best = orc.oracle(sample, alpha=alpha, beta=BETA)
    shares = [bar * best.auto_pass for bar in (0.8, 0.9)]
    found = ceiling.power_ceiling(sample, alpha=alpha, n_labels=[1500], delta=DELTA,
                                  shares=shares, replicates=4000)  # fmt: skip
    for share, c in zip(shares, found, strict=True):
        single = orc.oracle_test_power(sample, alpha=alpha, beta=BETA, n_labels=1500, delta=DELTA,
                                       at_least=share)  # fmt: skip
        assert c.power[1500] >= single - 0.02, (share, c.family[1500])
        assert c.power[1500] < 1.0  # not trivial
    assert found[1].power[1500] <= found[0].power[1500] + 0.02  # a larger share is no easier
