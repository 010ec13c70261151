"""The monitor's statistics, checked by simulation (vectorised across streams).

* False alarms: over stable enforced streams of 26 weeks, the monitor run after every week's
  audits alarms on at most delta of them (plus Monte-Carlo slack), at the worst null
  (false-pass rate exactly alpha) and with stratified weights; a naive fixed-sample binomial
  test repeated every week does not keep delta.
* Detection: a doubling of the false-pass rate is caught within the planned weeks with at least
  the planned probability.
* The weighted (Horvitz-Thompson) estimate is unbiased under a stratified draw.
* The confidence sequence covers the rate at every time with probability at least 1 - delta.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibrate.analysis.audit import detection_probability, plan_audit
from calibrate.analysis.monitor import rate_monitor, share_warning
from calibrate.analysis.sequential import (
    confidence_sequence,
    first_crossing,
    log_wealth,
    memory_for,
    naive_binomial_alarms,
)

ALPHA, DELTA = 0.05, 0.1
WEEKS, PER_WEEK, RATE = 26, 60, 0.3
STREAMS = 1000


def upper_95(k: int, n: int) -> float:
    """Exact one-sided 95% upper bound on a Monte-Carlo share."""
    return float(stats.beta.ppf(0.95, k + 1, n - k)) if k < n else 1.0


def lower_95(k: int, n: int) -> float:
    return float(stats.beta.ppf(0.05, k, n - k + 1)) if k > 0 else 0.0


def stratified_streams(rng, true_rates, *, streams=STREAMS, weeks=WEEKS, per_week=PER_WEEK):
    """Passes in three bands with different error rates; by-band Poisson audits at RATE overall.

    Returns z (streams x passes), the band's inclusion probability per pass, the error flags,
    the audit flags, and the index of the last pass of each week.
    """
    n = weeks * per_week
    band = rng.integers(0, 3, size=(streams, n))  # near, middle, far: a third each
    pi_of = np.array([2.0, 1.0, 0.5]) * RATE / (3.5 / 3)
    pi = pi_of[band]
    bad = rng.random((streams, n)) < np.asarray(true_rates)[band]
    drawn = rng.random((streams, n)) < pi
    z = np.where(drawn & bad, 1.0 / pi, 0.0)
    weekly = np.arange(1, weeks + 1) * per_week - 1
    return z, pi, bad, drawn, weekly


def test_false_alarms_stay_below_delta_under_weekly_looks():
    rng = np.random.default_rng(15)
    # The worst null: the overall false-pass rate is exactly alpha, concentrated near the threshold.
    rates = np.array([0.09, 0.04, 0.02])
    assert rates.mean() == pytest.approx(ALPHA)
    z, pi, bad, drawn, weekly = stratified_streams(rng, rates)
    log_k = log_wealth(z, ALPHA, memory=memory_for(ALPHA, RATE))  # as the monitor bets
    # monitor after every week's audits: an alarm at any look is the e-value at or above 1/delta
    # at some time up to that look (the path is append-only; earlier looks see a prefix).
    ever = np.maximum.accumulate(log_k, axis=1)[:, weekly] >= np.log(1 / DELTA)
    alarmed = int(ever[:, -1].sum())
    assert (ever[:, -1] == (first_crossing(log_k, DELTA) >= 0)).all()
    assert alarmed / STREAMS <= DELTA
    assert upper_95(alarmed, STREAMS) <= DELTA + 0.02
    # The naive audit of the report before: one exact binomial test at level delta, repeated
    # every week on the audits so far (unweighted). It exceeds delta under repeated looks.
    k = np.cumsum(drawn & bad, axis=1)[:, weekly]
    n = np.cumsum(drawn, axis=1)[:, weekly]
    uniform = rng.random((STREAMS, WEEKS * PER_WEEK)) < RATE
    ub = rng.random((STREAMS, WEEKS * PER_WEEK)) < ALPHA
    naive = naive_binomial_alarms(
        np.cumsum(uniform & ub, axis=1)[:, weekly], np.cumsum(uniform, axis=1)[:, weekly],
        ALPHA, delta=DELTA,
    )  # fmt: skip
    assert lower_95(int(naive.sum()), STREAMS) > DELTA
    assert k.shape == n.shape


def test_false_alarms_below_delta_when_the_rate_is_below_alpha():
    rng = np.random.default_rng(16)
    z, *_ = stratified_streams(rng, np.array([0.05, 0.02, 0.01]))
    log_k = log_wealth(z, ALPHA, memory=memory_for(ALPHA, RATE))
    alarmed = int((first_crossing(log_k, DELTA) >= 0).sum())
    assert upper_95(alarmed, STREAMS) <= DELTA


def test_a_doubling_is_caught_within_the_planned_weeks():
    plan = plan_audit(passes_per_week=PER_WEEK * 4, alpha=ALPHA, delta=DELTA, weeks=8)
    assert plan.rate is not None and plan.pays and plan.achieved >= plan.power
    # Fresh streams (another seed than the plan's), uniform audits at the planned rate.
    p = detection_probability(
        plan.rate, passes_per_week=PER_WEEK * 4, weeks=8, alpha=ALPHA, delta=DELTA,
        true_rate=2 * ALPHA, streams=600, seed=99,
    )[0]  # fmt: skip
    caught = round(p * 600)
    # At least the planned probability, up to Monte-Carlo error at the planned rate.
    assert upper_95(caught, 600) >= plan.power
    assert p >= plan.power - 0.05


def test_a_late_shift_is_caught_as_soon_as_an_early_one():
    # 13 stable weeks at 0.02, then a rise to 0.10; the bet looks back a bounded window, so the
    # months of good audits do not hold it at zero (a bet on the whole past would).
    rng = np.random.default_rng(22)
    streams, per_week, rate = 600, 60, 0.3
    caught = {}
    for stable in (0, 13):
        n = (stable + 8) * per_week
        p = np.where(np.arange(n) < stable * per_week, 0.02, 2 * ALPHA)
        z = np.where(
            (rng.random((streams, n)) < rate) & (rng.random((streams, n)) < p), 1 / rate, 0.0
        )
        for name, memory in (("window", memory_for(ALPHA, rate)), ("all", None)):
            first = first_crossing(log_wealth(z, ALPHA, memory=memory), DELTA)
            caught[name, stable] = float((first >= stable * per_week).mean())
    assert caught["window", 13] >= caught["window", 0] - 0.15
    assert caught["all", 13] < 0.05 < caught["window", 13]


def test_low_volume_says_the_audit_does_not_pay():
    plan = plan_audit(passes_per_week=5, alpha=ALPHA, delta=DELTA, weeks=4)
    assert not plan.pays
    assert "pre-screening" in plan.text()
    # The bundled sample's READY step passes about 55 a week: no rate catches a doubling in 4
    # weeks, and the plan names the longer window at which auditing half the passes does.
    plan = plan_audit(passes_per_week=55, alpha=ALPHA, delta=DELTA, weeks=4)
    assert plan.rate is None and plan.longer_weeks is not None
    assert f"within {plan.longer_weeks} weeks" in plan.text()
    p = detection_probability(0.5, passes_per_week=55, weeks=plan.longer_weeks, alpha=ALPHA,
                              delta=DELTA, true_rate=2 * ALPHA, seed=5)[0]  # fmt: skip
    assert p >= plan.power - 0.07


def test_weighted_estimate_is_unbiased_under_a_stratified_draw():
    rng = np.random.default_rng(17)
    rates = np.array([0.2, 0.05, 0.01])
    z, pi, bad, drawn, _ = stratified_streams(rng, rates, weeks=4)
    truth = bad.mean(axis=1)  # each stream's own false-pass rate among its passes
    ht = z.mean(axis=1)
    diff = ht - truth
    se = diff.std(ddof=1) / np.sqrt(len(diff))
    assert abs(diff.mean()) < 3 * se
    # The unweighted share of audited passes is biased: the near band is over-sampled.
    naive = (drawn & bad).sum(axis=1) / drawn.sum(axis=1)
    assert naive.mean() - truth.mean() > 10 * se


def test_confidence_sequence_covers_at_every_time():
    rng = np.random.default_rng(18)
    true = 0.08
    misses = 0
    streams = 200
    for _ in range(streams):
        drawn = rng.random(600) < 0.4
        z = np.where(drawn & (rng.random(600) < true), 1 / 0.4, 0.0)
        cs = confidence_sequence(z, 1 / 0.4, delta=DELTA)
        misses += bool(((cs.lower > true) | (cs.upper < true)).any())
    assert upper_95(misses, streams) <= DELTA + 0.05
    assert cs.lower[-1] < true < cs.upper[-1] or misses


def test_nonnegative_with_large_weights():
    z = np.r_[np.zeros(50), 1e6, np.zeros(50)]
    log_k = log_wealth(z, ALPHA)
    assert np.isfinite(log_k).all()
    with pytest.raises(ValueError, match="negative"):
        log_wealth(np.array([-1.0]), ALPHA)


def stream_frame(drawn, bad, pi, decided=True):
    n = len(drawn)
    at = pd.date_range("2026-11-01", periods=n, freq="h", tz="UTC")
    label = np.where(drawn, ~bad, None).astype(object)
    if not decided:
        label[np.flatnonzero(drawn)[len(np.flatnonzero(drawn)) // 2]] = None
    return pd.DataFrame(
        {"drawn": drawn, "inclusion_p": pi, "label": label, "at": at,
         "decided_at": at + pd.Timedelta(days=1)}
    )  # fmt: skip


def test_rate_monitor_alarms_and_stops_at_a_pending_review():
    rng = np.random.default_rng(19)
    drawn = rng.random(800) < 0.5
    bad = rng.random(800) < 0.2
    s = stream_frame(drawn, bad, np.full(800, 0.5))
    m = rate_monitor(s, limit=ALPHA, delta=DELTA, error_label=False)
    assert m.alarm and m.e_value >= 1 / DELTA
    assert m.audited == drawn.sum() and m.bad == (drawn & bad).sum()
    assert m.rate == pytest.approx((drawn & bad).sum() / drawn.sum())
    assert m.lower < m.rate < m.upper
    # The alarm time is a decision time of an audited bad pass.
    assert m.alarm_at in set(s.loc[drawn & bad, "decided_at"])
    half = rate_monitor(stream_frame(drawn, bad, np.full(800, 0.5), decided=False),
                        limit=ALPHA, delta=DELTA, error_label=False)  # fmt: skip
    assert half.pending == 1 and half.audited < m.audited


def test_share_warning_is_label_free_and_valid():
    rng = np.random.default_rng(20)
    ref = rng.random(3000) < 0.2
    same = [share_warning(rng.random(800) < 0.2, int(ref.sum()), 3000, delta=DELTA)[0]
            for _ in range(100)]  # fmt: skip
    assert sum(same) <= 10
    moved = share_warning(rng.random(800) < 0.35, int(ref.sum()), 3000, delta=DELTA)
    assert moved[0]


def test_confidence_sequence_follows_a_shift():
    # 0.02 for 600 passes, then 0.13: the sequence at the end still holds the stream's estimate
    # (a running intersection would have shut out the higher rates during the good months).
    rng = np.random.default_rng(23)
    n = 1200
    p = np.where(np.arange(n) < 600, 0.02, 0.13)
    drawn = rng.random(n) < 0.5
    bad = rng.random(n) < p
    m = rate_monitor(stream_frame(drawn, bad, np.full(n, 0.5)), limit=ALPHA, delta=DELTA,
                     error_label=False)  # fmt: skip
    assert m.lower <= m.rate <= m.upper
    assert m.upper >= 0.09


def test_the_alarm_quotes_the_value_that_crossed_not_todays():
    from calibrate.analysis.monitor import crossing

    # Errors early, then a long run of good audits: the e-value crosses, peaks, falls back.
    n_bad, n_good = 12, 400
    at = pd.date_range("2026-11-01", periods=n_bad + n_good, freq="h", tz="UTC")
    stream = pd.DataFrame(
        {"drawn": True, "inclusion_p": 1.0, "label": [False] * n_bad + [True] * n_good,
         "decided_at": at, "at": at, "design_rate": 1.0}
    )  # fmt: skip
    m = rate_monitor(stream, limit=ALPHA, delta=DELTA, error_label=False)
    assert m.alarm
    assert m.e_value_at_alarm >= 1 / DELTA and m.e_value_peak >= m.e_value_at_alarm
    assert m.e_value < m.e_value_peak
    first = m.path[m.path["e_value"] >= 1 / DELTA].iloc[0]
    assert m.e_value_at_alarm == pytest.approx(first["e_value"])
    assert m.alarm_at == first["at"]
    text = crossing(m, DELTA)
    assert f"reached {m.e_value_at_alarm:.3g}" in text and f"today {m.e_value:.3g}" in text
    doc = m.to_dict()
    assert doc["e_value_at_alarm"] == m.e_value_at_alarm and doc["e_value_peak"] == m.e_value_peak


def _bad_first_step(n_bad: int, n_good: int, step_id: str = "s"):
    """The monitor of one step whose audited passes hold their mistakes first."""
    from calibrate.analysis.monitor import monitor_step

    at = pd.date_range("2026-11-01", periods=n_bad + n_good, freq="h", tz="UTC")
    stream = pd.DataFrame(
        {"drawn": True, "inclusion_p": 1.0, "label": [False] * n_bad + [True] * n_good,
         "decided_at": at, "at": at, "design_rate": 1.0, "verdict": "pass"}
    )  # fmt: skip
    enforced = stream.assign(check_id=[f"c{i}" for i in range(len(stream))], audited=True)
    answers = pd.DataFrame(columns=["check_id", "ask", "kind", "p", "name", "level"])
    return monitor_step(
        process="p", step=step_id, model="m", enforced=enforced, pass_stream=stream,
        fail_stream=stream.iloc[:0], reference=enforced.iloc[:0], certified_model="m",
        unsure_now=np.zeros(0, bool), unsure_ref=np.zeros(0, bool), enforced_answers=answers,
        reference_answers=answers, alpha=ALPHA, beta=0.2, delta=DELTA,
    )  # fmt: skip


@pytest.mark.parametrize("step_id", ["chk #1: a", "match_invoice", "- [x]: {y}", "yes", "0.5"])
def test_the_alarm_action_pastes_the_step_id_as_itself(step_id):
    import yaml

    step = _bad_first_step(12, 40, step_id)
    assert step.status == "alarm"
    block = "\n".join(step.action.split("\n")[1:])
    assert yaml.safe_load(block) == [{"id": step_id, "advisory": True}]


def test_the_alarm_action_says_when_the_sequence_still_holds_alpha():
    """The action quotes the confidence sequence; where it still holds alpha beside an alarm
    (one-sided test at 1/delta, two-sided sequence at 2/delta) the action says why, as the
    rate lines do."""
    step = _bad_first_step(12, 200)  # the alarm stands, the sequence ends at 0.02-0.10
    assert step.status == "alarm" and step.false_pass.lower <= ALPHA
    assert step.false_pass.interval_note() in step.action


def _unaudited_step(per_week: float, *, weeks: int = 8, plan_weeks: int = 4):
    """The monitor of an enforced step whose passes no draw has offered yet."""
    from calibrate.analysis.monitor import monitor_step

    n = int(per_week * weeks)
    at = pd.date_range("2026-11-01", periods=n, freq=pd.Timedelta(weeks=weeks) / n, tz="UTC")
    enforced = pd.DataFrame(
        {"check_id": [f"c{i}" for i in range(n)], "at": at, "verdict": "pass", "audited": False,
         "label": pd.NA, "drawn": False, "inclusion_p": np.nan}
    )  # fmt: skip
    stream = pd.DataFrame(
        {"drawn": True, "inclusion_p": 1.0, "label": True, "decided_at": at, "at": at,
         "design_rate": 1.0, "verdict": "pass"}
    ).iloc[:0]  # fmt: skip
    answers = pd.DataFrame(columns=["check_id", "ask", "kind", "p", "name", "level"])
    return monitor_step(
        process="p", step="s", model="m", enforced=enforced, pass_stream=stream,
        fail_stream=stream, reference=enforced.iloc[:0], certified_model="m",
        unsure_now=np.zeros(0, bool), unsure_ref=np.zeros(0, bool), enforced_answers=answers,
        reference_answers=answers, alpha=ALPHA, beta=0.2, delta=DELTA, plan_weeks=plan_weeks,
    )  # fmt: skip


@pytest.mark.parametrize("per_week", [55, 0.5])
def test_no_audits_gives_one_advice_the_rate_it_names(per_week):
    # An audit that does not pay read "draw --rate 1" and then "an audit does not pay at this
    # volume: keep the approval as pre-screening": two advices at odds. On an enforced step the
    # monitor names one rate, and its paragraph argues for that rate alone.
    step = _unaudited_step(per_week)
    plan = step.plan
    assert step.status == "no_audits" and not plan.pays
    rate = 0.5 if plan.longer_weeks is not None else 1.0
    assert plan.enforced_rate == rate
    assert f"--rate {rate:g} --out" in step.action
    assert "pre-screening" not in step.action and "does not pay at this volume:" not in step.action
    assert plan.text(enforced=True) in step.action
    if plan.longer_weeks is not None:
        assert f"catches it within {plan.longer_weeks} weeks" in step.action
    else:
        assert "a person reviews every pass" in step.action
    # Before the switch the plan still weighs pre-screening against a longer window.
    assert "pre-screening" in plan.text()


def test_a_weighted_rate_is_named_so_beside_its_counts():
    """Outside review D5: after a by-band draw (inclusion 0.6 and 0.1) the line read "17 of 131
    audited (7.1%; ...)", 7.1% the weighted rate while 17/131 is 13.0%. It is now named a
    weighted rate; after a uniform draw the counts and the rate agree and read as before."""
    from calibrate.analysis.rate_monitor import rate_monitor
    from calibrate.report.switch import _rate_line

    n, rng = 400, np.random.default_rng(0)
    at = pd.date_range("2026-01-01", periods=n, freq="h", tz="UTC")

    def stream(pi):
        drawn = rng.random(n) < pi
        ok = np.where(pi == 0.6, rng.random(n) > 0.15, rng.random(n) > 0.01)
        label = [bool(o) if d else None for d, o in zip(drawn, ok, strict=True)]
        return pd.DataFrame({"drawn": drawn, "inclusion_p": pi, "label": label,
                             "decided_at": at, "at": at})  # fmt: skip

    band = rate_monitor(stream(np.where(np.arange(n) % 2 == 0, 0.6, 0.1)), limit=0.05,
                        delta=0.05, error_label=False)  # fmt: skip
    assert band.weighted and band.to_dict()["weighted"] is True
    assert abs(band.rate - band.bad / band.audited) > 0.01
    line = _rate_line("False passes", band, limit=0.05, delta=0.05)
    assert line.startswith(
        f"False passes: weighted rate {band.rate:.1%} ({band.bad} of {band.audited} audited, "
        "weighted by 1/inclusion_p; 95% confidence sequence"
    )
    assert f"{band.bad} of {band.audited} audited ({band.rate:.1%}" not in line
    uniform = rate_monitor(stream(np.full(n, 0.5)), limit=0.05, delta=0.05, error_label=False)
    assert not uniform.weighted and uniform.rate == pytest.approx(uniform.bad / uniform.audited)
    line = _rate_line("False passes", uniform, limit=0.05, delta=0.05)
    assert f"{uniform.bad} of {uniform.audited} audited (rate {uniform.rate:.1%};" in line
    assert "weighted" not in line
