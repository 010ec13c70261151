"""calibrate.analysis.stats: the rules stated once, checked against scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from calibrate.analysis.stats import MIN_N, hajek, hajek_interval, measurably_above, wilson_interval


@pytest.mark.parametrize("delta", [0.05, 0.1, 0.2])
def test_measurably_above_is_the_exact_lower_bound_above_the_limit(delta):
    """The one-sided Clopper-Pearson lower bound at 1 - delta is the two-sided exact interval's
    lower end at 1 - 2 delta: scipy's binomtest, on at least MIN_N decisions."""
    ns = (1, 5, MIN_N - 1, MIN_N, MIN_N + 1, 47, 120, 400)
    limits = (0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.9, 1.0)
    ks, nn, ll, expected = [], [], [], []
    for n in ns:
        for k in {0, 1, 2, n // 20, n // 10, n // 5, n // 3, n // 2, n - 1, n} & set(range(n + 1)):
            low = binomtest(k, n).proportion_ci(confidence_level=1 - 2 * delta, method="exact").low
            for limit in limits:
                if abs(low - limit) < 1e-9:
                    continue  # a tie within floating noise says nothing about the rule
                ks.append(k), nn.append(n), ll.append(limit)
                expected.append(n >= MIN_N and low > limit)
    got = measurably_above(ks, nn, ll, delta=delta)
    assert got.dtype == bool and got.shape == (len(expected),)
    assert got.tolist() == expected
    assert 50 < sum(expected) < len(expected) - 50  # both answers occur on the grid


def test_measurably_above_broadcasts_and_refuses_impossible_counts():
    assert measurably_above(30, 100, [0.1, 0.2, 0.3], delta=0.1).tolist() == [True, True, False]
    assert measurably_above(0, 0, 0.0, delta=0.1).tolist() is False
    assert measurably_above([19, 19], [19, 19], 0.5, delta=0.1, min_n=10).tolist() == [True, True]
    with pytest.raises(ValueError, match="0 <= k <= n"):
        measurably_above(5, 4, 0.1, delta=0.1)
    assert isinstance(measurably_above(np.array([3]), np.array([50]), 0.01, delta=0.1), np.ndarray)


def test_hajek_interval_is_wilson_at_the_effective_size():
    """The Hajek share's interval, checked against a computation label by label: the linearised
    variance's effective size where it is below the labels' count, Kish's where every label
    agrees, and Wilson's interval of k of n at one probability."""
    # 30 labels at 0.5 (10 acceptable), 20 at 0.1 (15 acceptable).
    y = np.r_[np.ones(10), np.zeros(20), np.ones(15), np.zeros(5)]
    w = 1 / np.r_[np.full(30, 0.5), np.full(20, 0.1)]
    p = (w * y).sum() / w.sum()
    assert float(hajek([10, 15], [30, 20], [0.5, 0.1])) == pytest.approx(p)
    assert float(hajek(y, 1, 1 / w)) == pytest.approx(p)
    n_eff = p * (1 - p) / ((w**2 * (y - p) ** 2).sum() / w.sum() ** 2)
    kish = w.sum() ** 2 / (w**2).sum()
    assert kish < n_eff < 50  # the linearised size, capped at Kish's
    n_eff = kish
    low, high, got = hajek_interval([10, 15], [30, 20], [0.5, 0.1])
    assert got == pytest.approx(n_eff)
    assert (low, high) == pytest.approx([float(x) for x in wilson_interval(p * n_eff, n_eff)])
    # Every label acceptable: no variance to read, Kish's size.
    low, high, got = hajek_interval([30, 20], [30, 20], [0.5, 0.1])
    assert got == pytest.approx(w.sum() ** 2 / (w**2).sum()) and high == 1.0
    # One probability: k / n with Wilson's interval.
    low, high, got = hajek_interval([7, 5], [10, 10], [0.3, 0.3])
    assert got == 20 and (low, high) == pytest.approx([float(x) for x in wilson_interval(12, 20)])
    assert np.isnan(hajek_interval([0], [0], [0.5])[0]) and np.isnan(float(hajek([0], [0], [0.5])))


def test_hajek_interval_caps_the_effective_size_at_kish():
    """Outside review D1: a low-probability stratum of few labels that agree with the majority
    adds little to the linearised variance, so its size ran up to the labels' count (155 here)
    where the weights allow about 19 (Kish's), and the interval covered 85-87% at a nominal 95%
    in the reviewer's simulation of draws at 0.3 and 0.01. Fails on the old code."""
    # 150 labels at 0.3 (140 acceptable), then 5 at 0.01, all acceptable.
    y = np.r_[np.ones(140), np.zeros(10), np.ones(5)]
    w = 1 / np.r_[np.full(150, 0.3), np.full(5, 0.01)]
    p = (w * y).sum() / w.sum()
    linearised = p * (1 - p) / ((w**2 * (y - p) ** 2).sum() / w.sum() ** 2)
    kish = w.sum() ** 2 / (w**2).sum()
    assert kish < 20 < 155 < linearised
    low, high, got = hajek_interval([140, 5], [150, 5], [0.3, 0.01])
    assert got == pytest.approx(kish)
    assert (low, high) == pytest.approx([float(x) for x in wilson_interval(p * kish, kish)])
    assert low < 0.85  # the old interval at 155 labels began at 0.92
