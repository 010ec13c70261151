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
    assert n_eff < 50
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
