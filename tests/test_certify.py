"""The statistical pipeline of the threshold search, against SciPy/statsmodels and brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from calibrate.analysis import certify, fallback_walk, score_paths
from calibrate.analysis.stats import binomial_upper_bound


@pytest.mark.parametrize(
    "alpha,delta", [(0.05, 0.1), (0.05, 0.05), (0.2, 0.05), (0.01, 0.1), (1.0, 0.1)]
)
def test_min_count_is_the_first_n_a_zero_error_test_rejects(alpha, delta):
    n = certify.min_count(alpha, delta)
    assert stats.binom.cdf(0, n, alpha) <= delta
    if n > 1:
        assert stats.binom.cdf(0, n - 1, alpha) > delta


def test_binomial_pvalues_are_the_exact_tail():
    k = np.array([0, 3, 10, 0])
    n = np.array([50, 100, 100, 0])
    got = certify.binomial_pvalues(k, n, limit=0.05)
    want = [stats.binomtest(int(a), int(b), 0.05, alternative="less").pvalue if b else 1.0
            for a, b in zip(k, n, strict=True)]  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-10)


@given(n=st.integers(1, 400), frac=st.floats(0, 1), delta=st.sampled_from([0.01, 0.05, 0.1, 0.2]))
def test_upper_bound_matches_root_finding_and_statsmodels(n, frac, delta):
    k = int(round(frac * n))
    closed = float(certify.upper_bound(k, n, delta=delta))
    root = certify.upper_bound_root(k, n, delta=delta)
    assert closed == pytest.approx(root, abs=1e-8)
    # statsmodels' two-sided Clopper-Pearson interval at 1 - 2 delta has the same upper end.
    _, hi = proportion_confint(k, n, alpha=2 * delta, method="beta")
    assert closed == pytest.approx(hi if k < n else 1.0, abs=1e-8)
    # The duality the walk relies on: bound <= limit exactly when the p-value <= delta.
    for limit in (0.02, 0.05, 0.2):
        p = float(certify.binomial_pvalues(k, n, limit=limit))
        if abs(closed - limit) > 1e-9:
            assert (closed <= limit) == (p <= delta)


def test_upper_bound_on_long_paths_equals_the_direct_computation():
    rng = np.random.default_rng(0)
    n = rng.integers(0, 300, 5000)
    k = rng.binomial(n, 0.1)
    np.testing.assert_array_equal(
        certify.upper_bound(k, n, delta=0.05), binomial_upper_bound(k, n, delta=0.05)
    )


def test_fixed_sequence_stops_at_the_first_failure():
    p = [0.5, 0.01, 0.02, 0.2, 0.01]
    assert certify.fixed_sequence(p, delta=0.05) is None  # the first fails: nothing
    assert certify.fixed_sequence(p, delta=0.05, testable=[False, True, True, True, True]) == 2
    assert certify.fixed_sequence([0.01, 0.01], delta=0.05) == 1
    assert certify.fixed_sequence([], delta=0.05) is None
    assert certify.fixed_sequence(p, delta=0.05, testable=[False] * 5) is None


def test_first_testable_is_monotone_from_the_first_count_reached():
    got = certify.first_testable([10, 50, 30, 80], limit=0.05, delta=0.1)
    assert got.tolist() == [False, True, True, True]


@given(
    scores=st.lists(
        st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5, 0.75, 0.9, 1.0, np.nan]), min_size=1, max_size=40
    ),
    errs=st.lists(st.booleans(), min_size=40, max_size=40),
    descending=st.booleans(),
)
def test_score_path_matches_brute_force(scores, errs, descending):
    s = np.array(scores, float)
    e = np.array(errs[: s.size], bool)
    grid = np.linspace(0, 1, 21)
    path = score_paths.score_path(s, e, descending=descending, grid=grid)
    for t, n, k, lo, hi in zip(
        path.threshold, path.n, path.errors, path.below, path.above, strict=True
    ):
        decided = (s >= t) if descending else (s < t)  # nan compares False: never decided
        assert n == decided.sum() and k == (decided & e).sum()
        finite = s[~np.isnan(s)]
        assert lo == (finite[finite < t].max() if (finite < t).any() else -np.inf)
        assert hi == (finite[finite >= t].min() if (finite >= t).any() else np.inf)
        # Every threshold in (below, above] decides the same submissions.
        for t2 in (np.nextafter(lo, np.inf) if np.isfinite(lo) else t, min(hi, 2.0)):
            if np.isfinite(t2):
                same = (s >= t2) if descending else (s < t2)
                assert (same == decided).all()
    assert (
        (np.diff(path.threshold) <= 0).all() if descending else (np.diff(path.threshold) >= 0).all()
    )


@given(
    low=st.floats(-0.5, 1.0), width=st.floats(1e-9, 1.0), prefer=st.sampled_from(["low", "high"])
)
def test_nice_threshold_stays_in_the_interval(low, width, prefer):
    high = low + width
    x = certify.nice_threshold(low, high, prefer=prefer)
    assert low < x <= high
    short = certify.nice_threshold(low, high, prefer=prefer, max_decimals=4)
    if short is not None:
        assert low < short <= high
        assert round(short, 4) == short


def test_nice_threshold_prefers_the_loose_end_with_few_places():
    assert certify.nice_threshold(0.41, 0.93, prefer="low") == 0.411
    assert certify.nice_threshold(0.41, 0.93, prefer="high") == 0.93
    assert certify.nice_threshold(0.9, 0.90004, prefer="low") == 0.90001
    with pytest.raises(ValueError, match="empty interval"):
        certify.nice_threshold(0.5, 0.5, prefer="low")
    with pytest.raises(ValueError, match="'low' or 'high'"):
        certify.nice_threshold(0.1, 0.5, prefer="middle")


def test_random_split_reads_no_label_and_is_seeded():
    s, c = certify.random_split(100, search_fraction=0.5, seed=3)
    assert sorted(np.r_[s, c].tolist()) == list(range(100)) and s.size == 50
    s2, _ = certify.random_split(100, search_fraction=0.5, seed=3)
    assert (s == s2).all()
    s3, _ = certify.random_split(100, search_fraction=0.5, seed=4)
    assert not (s == s3).all()
    assert certify.random_split(101, search_fraction=0.27, seed=0)[0].size == 27
    with pytest.raises(ValueError, match="search_fraction"):
        certify.random_split(100, search_fraction=1.0)


@pytest.mark.parametrize("rate", [0.0, 0.01, 0.02, 0.04])
def test_labels_needed_solves_the_bound(rate):
    n = certify.labels_needed(rate, limit=0.05, delta=0.1)
    assert math.isfinite(n)
    assert float(certify._bound_at(rate, n, 0.1)) <= 0.05 + 1e-9
    if n > 1:
        assert float(certify._bound_at(rate, n - 1, 0.1)) > 0.05 - 1e-6
    # A whole number of errors at that rate certifies too (rounding aside).
    k = math.floor(rate * n)
    assert float(certify.upper_bound(k, n, delta=0.1)) <= 0.05 + 1e-3


def test_labels_needed_is_infinite_at_or_above_the_limit():
    assert certify.labels_needed(0.05, limit=0.05, delta=0.1) == math.inf
    assert certify.labels_needed(0.3, limit=0.05, delta=0.1) == math.inf
    assert certify.labels_needed(0.0, limit=0.05, delta=0.1) == certify.min_count(0.05, 0.1)


def test_levels_are_validated():
    with pytest.raises(ValueError, match="delta"):
        certify.min_count(0.05, 1.5)
    with pytest.raises(ValueError, match="limit"):
        certify.min_count(0.0, 0.1)


def _fallback_by_definition(p, w):
    """Wiens (2003) as written: a_j = w_j + a_{j-1} if H_{j-1} was rejected, else w_j."""
    levels, rejected, carried = np.zeros(p.size), np.zeros(p.size, bool), 0.0
    for j in range(p.size):
        level = carried + w[j]
        levels[j] = level
        rejected[j] = level > 0 and p[j] <= level
        carried = level if rejected[j] else 0.0
    return levels, rejected


@given(st.lists(st.tuples(st.floats(0, 1), st.sampled_from([0.0, 0.0, 0.01, 0.05])), max_size=40))
def test_fallback_is_the_procedure_as_defined(pairs):
    p = np.array([a for a, _ in pairs], float)
    w = np.array([b for _, b in pairs], float)
    chosen, levels, rejected = fallback_walk.fallback(p, w)
    want_levels, want_rejected = _fallback_by_definition(p, w)
    np.testing.assert_array_equal(rejected, want_rejected)
    tested = want_levels > 0
    np.testing.assert_allclose(levels[tested], want_levels[tested])
    assert chosen == (int(np.flatnonzero(rejected)[-1]) if rejected.any() else None)


def test_fallback_controls_the_familywise_error_at_the_sum_of_weights():
    """All nulls true, exact (uniform) p-values, dependent along the path: P(any rejection) <= sum(w)."""
    rng = np.random.default_rng(5)
    w = fallback_walk.checkpoint_weights(np.arange(1, 401), limit=0.1, level=0.1)
    runs = 20_000
    # Positively dependent p-values, as along a path of nested pass sets.
    z = np.cumsum(rng.normal(size=(runs, 400)), axis=1) / np.sqrt(np.arange(1, 401))
    p = stats.norm.cdf(z)
    hits = np.array([fallback_walk.fallback(row, w)[0] is not None for row in p])
    upper = stats.beta.ppf(0.99, hits.sum() + 1, runs - hits.sum())
    assert hits.mean() <= 0.1 and upper <= 0.1 + 0.01, hits.mean()


def test_checkpoints_are_fixed_by_counts_and_sum_to_the_level():
    n = np.r_[np.zeros(10), np.arange(1, 991)]
    w = fallback_walk.checkpoint_weights(n, limit=0.1, level=0.085)
    assert w.sum() == pytest.approx(0.085)
    first = np.flatnonzero(w)[0]
    assert n[first] >= certify.min_count(0.1, 0.085) and w[first] >= 0.5 * 0.085
    # Later checkpoints sit at twice the count of the one before.
    marks = n[np.flatnonzero(w)]
    assert np.all(marks[1:] >= 2 * marks[:-1] - 1)


def test_predicted_rate_is_the_mean_doubt_of_the_passes():
    rng = np.random.default_rng(3)
    p = np.r_[rng.random(500), np.nan, 1.0, 1.0]
    t = np.array([1.0, 0.9, 0.5, 0.0])
    got = score_paths.predicted_false_pass(p, t)
    q = p[~np.isnan(p)]
    want = [np.mean(1 - q[q >= x]) if (q >= x).any() else 0.0 for x in t]
    np.testing.assert_allclose(got, want)


def test_predicted_rate_vouches_for_a_later_start_and_drops_hopeless_marks():
    n = np.arange(1, 1501)
    plain = fallback_walk.checkpoint_weights(n, limit=0.05, level=0.085, power_share=0.8)
    first = np.flatnonzero(plain)[0]
    # Counts alone: the start is capped at a third of the path, one later mark at twice it.
    assert n[first] == 500 and np.flatnonzero(plain).size == 2
    # Answers predicting a low rate all the way to power_start: the first checkpoint goes there,
    # and holds the whole level (its double is past the path).
    s = fallback_walk.power_start(0.05, 0.085, share=0.8)
    low = fallback_walk.checkpoint_weights(
        n, limit=0.05, level=0.085, power_share=0.8, predicted=np.full(n.size, 0.005)
    )
    assert n[np.flatnonzero(low)].tolist() == [s] and low.sum() == pytest.approx(0.085)
    # A predicted rate over a quarter of the limit before power_start: the start stays capped,
    # but the later mark, where the prediction is far past the limit, is dropped.
    rising = 0.12 * n / n[-1]
    calibrated = fallback_walk.checkpoint_weights(
        n, limit=0.05, level=0.085, power_share=0.8, predicted=rising
    )
    assert np.flatnonzero(calibrated).tolist() == [first]
    assert calibrated.sum() == pytest.approx(0.085)
    # A prediction that leaves every later mark a chance keeps the counts' layout.
    kept = fallback_walk.checkpoint_weights(
        n, limit=0.05, level=0.085, power_share=0.8, predicted=np.full(n.size, 0.02)
    )
    np.testing.assert_array_equal(kept, plain)


def test_spread_checkpoints_keep_the_first_and_the_level():
    # A learned path's passes grow little: from 300 to 1,100 the doublings give one later mark.
    n = np.linspace(300, 1100, 40).round()
    plain = fallback_walk.checkpoint_weights(n, limit=0.2, level=0.1)
    spread = fallback_walk.checkpoint_weights(n, limit=0.2, level=0.1, spread=6)
    assert spread.sum() == pytest.approx(plain.sum()) == pytest.approx(0.1)
    first = np.flatnonzero(plain)[0]
    assert np.flatnonzero(spread)[0] == first and spread[first] == plain[first]
    later = np.flatnonzero(spread)[1:]
    # The later marks keep a checkpoint, and the loose end of the path gets some.
    assert set(np.flatnonzero(plain)[1:]) <= set(later) and later[-1] == n.size - 1
    assert 6 <= later.size <= 6 + np.flatnonzero(plain).size - 1
    np.testing.assert_allclose(spread[later], spread[later][0])
    # No later checkpoint (every mark falls on the first candidate): nothing to spread.
    short = np.linspace(1000, 1100, 20).round()
    alone = fallback_walk.checkpoint_weights(short, limit=0.2, level=0.1)
    assert np.flatnonzero(alone).size == 1
    np.testing.assert_array_equal(
        fallback_walk.checkpoint_weights(short, limit=0.2, level=0.1, spread=6), alone
    )


def test_spread_checkpoints_walk_past_a_failure_midway():
    # One candidate midway cannot be rejected (a few fails against beta); everything after it can.
    n = np.linspace(300, 1100, 40).round()
    p = np.full(n.size, 1e-4)
    plain = fallback_walk.checkpoint_weights(n, limit=0.2, level=0.1)
    p[np.flatnonzero(plain)[-1] + 1] = 0.9
    chosen_plain, _, _ = fallback_walk.fallback(p, plain)
    chosen, _, rejected = fallback_walk.fallback(
        p, fallback_walk.checkpoint_weights(n, limit=0.2, level=0.1, spread=6)
    )
    assert chosen_plain == np.flatnonzero(plain)[-1]
    assert chosen == n.size - 1 and rejected.sum() == n.size - np.flatnonzero(plain)[0] - 1
