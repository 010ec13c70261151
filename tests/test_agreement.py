"""Tests of calibrate.analysis.agreement and the agreement statistics in stats.py.

References are scikit-learn (kappa), statsmodels (Wilson intervals, kappa's
standard error, the two-proportion z test) and synthetic data with known rates.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa
from statsmodels.stats.proportion import proportion_confint, proportions_ztest

from calibrate.analysis.agreement import (
    AGREEMENT_COLUMNS,
    DEFAULT_BY,
    QUESTION_UNIT,
    agreement,
    agreement_records,
)
from calibrate.analysis.approvers import approvers
from calibrate.analysis.bootstrap import bootstrap_ci
from calibrate.analysis.corrected import corrected_pass_rate, corrected_records
from calibrate.analysis.kappa import cohen_kappa
from calibrate.analysis.stats import (
    rogan_gladen,
    two_proportion_test,
    wilson_interval,
)

T0 = pd.Timestamp("2026-10-05T08:00:00Z")  # a Monday
VERDICTS = np.array(["pass", "fail", "unsure", "error"], dtype=object)


def frame(verdict, label, **cols) -> pd.DataFrame:
    """A DataFrame shaped like calibrate.dataset.submissions() output."""
    n = len(verdict)
    base = {
        "check_id": [f"c{i}" for i in range(n)],
        "run_id": [f"r{i}" for i in range(n)],
        "process": "p",
        "version": "1",
        "step": "s",
        "attempt": 1,
        "verdict": list(verdict),
        "advisory": True,
        "model": "m1",
        "at": T0,
        "is_latest": True,
        "decided_by": "ann",
        "label": pd.array(list(label), dtype="boolean"),
        "conflict": False,
        "n_decisions": 1,
    }
    base.update(cols)
    df = pd.DataFrame(base)
    if "decided_at" not in cols:
        df["decided_at"] = df["at"] + pd.Timedelta(minutes=10)
    return df


def synth(
    n: int,
    rng: np.random.Generator,
    *,
    prevalence: float,
    given_acc=(0.80, 0.05, 0.12, 0.03),
    given_not=(0.10, 0.70, 0.17, 0.03),
    labeled: bool = True,
    **cols,
) -> pd.DataFrame:
    """Submissions with known P(verdict | label): (pass, fail, unsure, error) per truth."""
    acc = rng.random(n) < prevalence
    u = rng.random(n)
    cum_acc, cum_not = np.cumsum(given_acc), np.cumsum(given_not)
    code = np.where(
        acc, np.searchsorted(cum_acc, u, side="right"), np.searchsorted(cum_not, u, side="right")
    )
    label = acc.tolist() if labeled else [pd.NA] * n
    return frame(VERDICTS[np.minimum(code, 3)], label, **cols)


def truth(prevalence, given_acc=(0.80, 0.05, 0.12, 0.03), given_not=(0.10, 0.70, 0.17, 0.03)):
    """The population values of every figure, from the generator's parameters."""
    pi = prevalence
    ap, af, au, ae = given_acc
    np_, nf, nu, ne = given_not
    a, b, c, d = pi * ap, (1 - pi) * np_, pi * af, (1 - pi) * nf  # decided 2x2 cells
    tot = a + b + c + d
    p_o = (a + d) / tot
    p_e = ((a + b) * (a + c) + (c + d) * (b + d)) / tot**2
    return {
        "false_pass_rate": b / (a + b),
        "false_fail_rate": c / (c + d),
        "unsure_rate": pi * au + (1 - pi) * nu,
        "error_rate": pi * ae + (1 - pi) * ne,
        "tpr": ap,
        "tnr": 1 - np_,
        "agree": p_o,
        "kappa": (p_o - p_e) / (1 - p_e),
    }


CI = {
    "false_pass_rate": "false_pass",
    "false_fail_rate": "false_fail",
    "unsure_rate": "unsure",
    "error_rate": "error",
    "tpr": "tpr",
    "tnr": "tnr",
    "agree": "agree",
    "kappa": "kappa",
}


# -- reference implementations ------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k", [2, 3])
def test_cohen_kappa_matches_sklearn_and_statsmodels(seed, k):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, 300)
    b = np.where(rng.random(300) < 0.6, a, rng.integers(0, k, 300))
    res = cohen_kappa(a, b)
    assert res.kappa == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    table = np.zeros((k, k))
    np.add.at(table, (a, b), 1)
    ref = cohens_kappa(table)
    assert res.se == pytest.approx(ref.std_kappa, rel=1e-9)
    assert (res.low, res.high) == pytest.approx((ref.kappa_low, ref.kappa_upp), rel=1e-9)


def test_cohen_kappa_perfect_agreement_interval_has_width():
    y = np.array([0] * 40 + [1] * 30)
    res = cohen_kappa(y, y)
    assert res.kappa == 1.0 and res.se == 0.0
    lo, hi = proportion_confint(70, 70, method="wilson")
    p_e = (40 / 70) ** 2 + (30 / 70) ** 2
    assert res.low == pytest.approx((lo - p_e) / (1 - p_e)) and res.low < 0.95
    assert res.high == 1.0


def test_cohen_kappa_undefined_and_strings():
    res = cohen_kappa(["x"] * 5, ["x"] * 5)
    assert np.isnan(res.kappa) and np.isnan(res.low) and res.n == 5
    assert np.isnan(cohen_kappa([], []).kappa)
    assert cohen_kappa(["a", "a", "b", "b"], ["a", "b", "b", "b"]).kappa == pytest.approx(0.5)
    with pytest.raises(ValueError, match="equal length"):
        cohen_kappa([1, 2], [1])


def test_agreement_kappa_equals_sklearn_on_decided_verdicts():
    rng = np.random.default_rng(3)
    df = synth(500, rng, prevalence=0.7)
    row = agreement(df).iloc[0]
    decided = df[df["verdict"].isin(["pass", "fail"])]
    expected = cohen_kappa_score(decided["verdict"] == "pass", decided["label"].astype(bool))
    assert row["kappa"] == pytest.approx(expected, abs=1e-12)
    assert row["kappa_reason"] == ""


def test_wilson_bounds_are_exact_at_the_edges():
    """No floating noise (5.6e-17 for a lower bound of 0) reaches JSON or CSV (issue 18)."""
    n = np.arange(1, 301)
    low, _ = wilson_interval(np.zeros_like(n), n)
    _, high = wilson_interval(n, n)
    assert (low == 0.0).all() and (high == 1.0).all()


def test_rates_use_wilson_intervals_like_statsmodels():
    rng = np.random.default_rng(4)
    row = agreement(synth(300, rng, prevalence=0.6)).iloc[0]
    pairs = [
        ("false_pass", row["pass_not_acceptable"], row["n_pass"]),
        ("false_fail", row["fail_acceptable"], row["n_fail"]),
        ("unsure", row["n_unsure"], row["n_checks"]),
        ("error", row["n_error"], row["n_checks"]),
        ("tpr", row["pass_acceptable"], row["n_acceptable"]),
        ("tnr", row["n_not_acceptable"] - row["pass_not_acceptable"], row["n_not_acceptable"]),
        ("agree", row["pass_acceptable"] + row["fail_not_acceptable"], row["n_decided"]),
    ]
    for name, k, n in pairs:
        lo, hi = proportion_confint(int(k), int(n), alpha=0.05, method="wilson")
        assert (row[f"{name}_low"], row[f"{name}_high"]) == pytest.approx((lo, hi), abs=1e-12), name


def test_two_proportion_test_matches_statsmodels():
    k1, n1, k2, n2 = (
        np.array([10, 3, 40]),
        np.array([100, 50, 400]),
        np.array([25, 7, 30]),
        np.array([100, 60, 380]),
    )
    ours = two_proportion_test(k1, n1, k2, n2)
    for i in range(3):
        ref = proportions_ztest([k1[i], k2[i]], [n1[i], n2[i]])[1]
        assert ours[i] == pytest.approx(ref, rel=1e-10)
    assert float(two_proportion_test(0, 10, 0, 20)) == 1.0
    assert np.isnan(two_proportion_test(0, 0, 1, 2))


def test_bootstrap_ci_vectorised_equals_loop_and_is_sane():
    rng = np.random.default_rng(5)
    x = rng.normal(10, 2, 200)
    loop = bootstrap_ci(np.mean, x, n_boot=400, seed=7)
    vec = bootstrap_ci(lambda s: s.mean(axis=-1), x, n_boot=400, seed=7, vectorized=True)
    assert loop == pytest.approx(vec, rel=1e-12)
    se = x.std(ddof=1) / np.sqrt(len(x))
    # Percentile interval of a mean is close to the normal one.
    assert loop[0] == pytest.approx(x.mean() - 1.96 * se, abs=0.25 * se * 1.96)
    assert loop[1] == pytest.approx(x.mean() + 1.96 * se, abs=0.25 * se * 1.96)


def test_bootstrap_ci_unpaired_and_nan_cases():
    rng = np.random.default_rng(6)
    a, b = rng.normal(1, 1, 300), rng.normal(0, 1, 100)
    lo, hi = bootstrap_ci(lambda x, y: x.mean(-1) - y.mean(-1), a, b, paired=False, vectorized=True)
    assert lo < a.mean() - b.mean() < hi
    assert all(np.isnan(bootstrap_ci(np.mean, np.array([]))))
    # A statistic undefined on most resamples has no interval.
    assert all(np.isnan(bootstrap_ci(lambda s: np.nan, np.arange(5.0), n_boot=50)))
    with pytest.raises(ValueError, match="one length"):
        bootstrap_ci(np.mean, a, b)


# -- ground truth by simulation ----------------------------------------------


def test_large_synthetic_set_lands_inside_intervals():
    rng = np.random.default_rng(11)
    df = synth(30_000, rng, prevalence=0.7)
    # 99.9% intervals: eight figures from one fixed draw should all cover the truth.
    row = agreement(df, confidence=0.999).iloc[0]
    for col, value in truth(0.7).items():
        lo, hi = row[f"{CI[col]}_low"], row[f"{CI[col]}_high"]
        assert lo <= value <= hi, (col, lo, value, hi)
        assert hi - lo < 0.05, col  # and they are informative at this size


def test_interval_coverage_by_simulation():
    # 300 independent groups of 400: each 95% interval should cover its truth ~95% of the time.
    rng = np.random.default_rng(12)
    reps = 300
    df = pd.concat(
        [synth(400, rng, prevalence=0.65, process=f"rep{r:03d}") for r in range(reps)],
        ignore_index=True,
    )
    out = agreement(df, by="process")
    assert len(out) == reps
    for col, value in truth(0.65).items():
        covered = ((out[f"{CI[col]}_low"] <= value) & (value <= out[f"{CI[col]}_high"])).mean()
        assert 0.90 <= covered <= 0.99, (col, covered)


def test_rogan_gladen_function():
    assert float(rogan_gladen(0.62, 0.9, 0.8)) == pytest.approx(0.6)
    assert np.isnan(rogan_gladen(0.5, 0.5, 0.5))  # no better than chance
    assert float(rogan_gladen(0.05, 0.9, 0.8)) == 0.0  # clipped
    assert float(rogan_gladen(0.05, 0.9, 0.8, clip=False)) == pytest.approx(-0.15 / 0.7)


def decided_prevalence(pi, given_acc=(0.80, 0.05, 0.12, 0.03), given_not=(0.10, 0.70, 0.17, 0.03)):
    """The acceptable share among submissions with a pass or fail verdict (what is estimated)."""
    acc, not_acc = pi * (given_acc[0] + given_acc[1]), (1 - pi) * (given_not[0] + given_not[1])
    return acc / (acc + not_acc)


def test_corrected_pass_rate_recovers_known_prevalence():
    rng = np.random.default_rng(13)
    lab = synth(6000, rng, prevalence=0.75)
    unl = synth(6000, rng, prevalence=0.55, labeled=False)
    unl["check_id"] = "u" + unl["check_id"]
    df = pd.concat([lab, unl], ignore_index=True)
    row = corrected_pass_rate(df, n_boot=1000).iloc[0]
    target = decided_prevalence(0.55)
    assert row["n_labeled"] + row["n_labeled_undecided"] == 6000 and row["n_unlabeled"] == 6000
    assert row["n_unlabeled_decided"] == int((unl["verdict"].isin(["pass", "fail"])).sum())
    assert row["low"] <= target <= row["high"]
    assert row["estimate"] == pytest.approx(target, abs=0.03)
    # The check's raw pass rate is far from the truth; the correction is the point.
    assert abs(row["apparent_pass_rate"] - target) > 0.03 > abs(row["estimate"] - target) * 2
    assert row["note"] == ""


def test_corrected_pass_rate_coverage():
    rng = np.random.default_rng(14)
    parts = []
    for r in range(150):
        lab = synth(600, rng, prevalence=0.7, process=f"rep{r:03d}")
        unl = synth(400, rng, prevalence=0.5, labeled=False, process=f"rep{r:03d}")
        parts += [lab, unl]
    out = corrected_pass_rate(pd.concat(parts, ignore_index=True), by="process", n_boot=400)
    target = decided_prevalence(0.5)
    covered = ((out["low"] <= target) & (target <= out["high"])).mean()
    assert covered >= 0.88, covered


def test_corrected_pass_rate_notes():
    rng = np.random.default_rng(15)
    lab = synth(200, rng, prevalence=0.7)
    out = corrected_pass_rate(lab).iloc[0]
    assert np.isnan(out["estimate"]) and out["note"] == "no unlabeled submissions"
    unl = synth(50, rng, prevalence=0.5, labeled=False)
    # A check that passes everything cannot be corrected: TPR + TNR = 1.
    flat = synth(200, rng, prevalence=0.7, given_acc=(1, 0, 0, 0), given_not=(1, 0, 0, 0))
    out = corrected_pass_rate(pd.concat([flat, unl], ignore_index=True)).iloc[0]
    assert np.isnan(out["estimate"]) and "does not tell" in out["note"]
    with pytest.raises(ValueError, match="cannot group unlabeled"):
        corrected_pass_rate(lab, by=["approver"])


def test_corrected_pass_rate_withholds_what_it_cannot_estimate():
    """Unlabeled submissions that are all unsure are not 0% acceptable: no estimate (issue 18)."""
    rng = np.random.default_rng(17)
    lab = synth(400, rng, prevalence=0.7)
    unsure = synth(
        40, rng, prevalence=0.7, labeled=False, given_acc=(0, 0, 1, 0), given_not=(0, 0, 1, 0)
    )
    out = corrected_pass_rate(pd.concat([lab, unsure], ignore_index=True)).iloc[0]
    assert out["n_unlabeled"] == 40 and out["n_unlabeled_decided"] == 0
    assert np.isnan(out["estimate"]) and np.isnan(out["low"]) and np.isnan(out["high"])
    assert "none of the 40 unlabeled submissions has a pass or fail verdict" in out["note"]
    # Every resample at the bound (a perfect check on the labels, only passes unlabeled): no
    # zero-width interval.
    perfect = synth(200, rng, prevalence=0.7, given_acc=(1, 0, 0, 0), given_not=(0, 1, 0, 0))
    passes = synth(30, rng, prevalence=1.0, labeled=False, given_acc=(1, 0, 0, 0))
    out = corrected_pass_rate(pd.concat([perfect, passes], ignore_index=True), n_boot=200).iloc[0]
    assert out["estimate"] == 1.0 and np.isnan(out["low"]) and np.isnan(out["high"])
    assert "no interval" in out["note"]


def test_corrected_pass_rate_ignores_superseded_checks():
    rng = np.random.default_rng(16)
    lab = synth(100, rng, prevalence=0.7)
    old = synth(30, rng, prevalence=0.7, labeled=False, is_latest=False)
    out = corrected_pass_rate(pd.concat([lab, old], ignore_index=True)).iloc[0]
    assert out["n_unlabeled"] == 0


def test_corrected_pass_rate_reads_reviews_not_labels_after_the_switch():
    """An audit draw by band over-samples the passes near the thresholds, where the false passes
    are: counted unweighted beside the reviews, its labels moved TNR from 0.80 to 0.64, and
    the drawn checks left the set estimated. Audit labels, escalations and other decisions after
    the switch are left out of TPR/TNR and counted; their checks stay, unlabeled. Fails on the
    old code."""
    # Reviews of every verdict (advisory: true): TPR 720/800 = 0.9, TNR 160/200 = 0.8.
    reviews = frame(["pass"] * 720 + ["fail"] * 80 + ["pass"] * 40 + ["fail"] * 160,
                    [True] * 800 + [False] * 200)  # fmt: skip
    # After the switch: 700 passes, 300 fails, 40 escalated unsure verdicts. A by-band draw takes
    # every near pass (100, half not acceptable) and a quarter of the far ones (150 of 600).
    n = 1040
    verdict = ["pass"] * 700 + ["fail"] * 300 + ["unsure"] * 40
    label = [pd.NA] * n
    label[:100] = [True, False] * 50
    label[100:250] = [True] * 150
    label[250:255] = [False] * 5  # decisions on far passes no draw drew
    label[1000:] = [True] * 40  # the escalations, as --with-escalations reads them
    after = frame(verdict, label, advisory=False, audited=False, inclusion_p=np.nan,
                  left_out=False)  # fmt: skip
    after["check_id"] = "a" + after["check_id"]
    after.loc[:249, "audited"] = True
    after.loc[:99, "inclusion_p"] = 1.0
    after.loc[100:599, "inclusion_p"] = 0.25
    after.loc[250:254, "left_out"] = True
    after.loc[1000:, "left_out"] = True
    out = corrected_pass_rate(pd.concat([reviews, after], ignore_index=True), n_boot=300).iloc[0]
    assert out["tpr"] == pytest.approx(0.9) and out["tnr"] == pytest.approx(0.8)
    assert out["n_labeled"] == 1000
    assert (out["left_out_audits"], out["left_out_escalations"], out["left_out_undrawn"]) == (
        250, 40, 5,
    )  # fmt: skip
    # Every check after the switch is estimated, drawn or not: the pass rate is the check's.
    assert out["n_unlabeled"] == 1040 and out["n_unlabeled_decided"] == 1000
    assert out["apparent_pass_rate"] == pytest.approx(0.7)
    # The 600 passes the draw offered rest on its audits weighted by 1/inclusion_p (50/1 + 150/0.25
    # acceptable of 100/1 + 150/0.25), the other 100 passes and the fails on the correction.
    rg = (0.7 + 0.8 - 1) / (0.9 + 0.8 - 1)
    implied = {"pass": 0.9 * rg / 0.7, "fail": 0.1 * rg / 0.3}
    share = (50 + 150 / 0.25) / (100 + 150 / 0.25)
    assert out["audit_pass_rate"] == pytest.approx(share) and out["audit_pass_weighted"]
    assert out["estimate"] == pytest.approx(
        (600 * share + 100 * implied["pass"] + 300 * implied["fail"]) / 1000
    )
    # TPR/TNR the same as with those labels never recorded (the filters' default reads them as
    # none), which leaves the estimate Rogan-Gladen's.
    blank = after.assign(label=pd.array([pd.NA] * n, dtype="boolean"), audited=False)
    ref = corrected_pass_rate(pd.concat([reviews, blank], ignore_index=True), n_boot=300).iloc[0]
    for col in ("tpr", "tnr", "apparent_pass_rate"):
        assert out[col] == ref[col], col
    assert ref["estimate"] == pytest.approx(rg)
    (rec,) = corrected_records(corrected_pass_rate(pd.concat([reviews, after]), n_boot=50))
    assert rec["left_out"] == {"audits": 250, "escalations": 40, "undrawn": 5}
    with pytest.raises(ValueError, match="cannot group unlabeled"):
        corrected_pass_rate(reviews, by=["process", "labels"])


def _drifted(n_audited_bad: int = 60):
    """Reviews with TPR 0.9, TNR 0.8; after the switch 800 passes, half drawn uniformly (400
    audited, ``n_audited_bad`` of them not acceptable), and 200 fails no draw offered."""
    reviews = frame(["pass"] * 720 + ["fail"] * 80 + ["pass"] * 40 + ["fail"] * 160,
                    [True] * 800 + [False] * 200)  # fmt: skip
    label = [pd.NA] * 1000
    label[:400] = [False] * n_audited_bad + [True] * (400 - n_audited_bad)
    after = frame(["pass"] * 800 + ["fail"] * 200, label, advisory=False, audited=False,
                  inclusion_p=np.nan, left_out=False)  # fmt: skip
    after["check_id"] = "a" + after["check_id"]
    after.loc[:399, "audited"] = True
    after.loc[:799, "inclusion_p"] = 0.5
    return pd.concat([reviews, after], ignore_index=True)


def test_corrected_rate_reads_the_audits_where_a_draw_offered_a_verdict_alike():
    """The check got worse after the switch: the uniform audit of its passes reads 85%
    acceptable where the reviews' TPR/TNR imply 96.4%. The old estimate (Rogan-Gladen on the
    reviews alone, 0.857) held the passes at the implied share and said nothing. Now the
    passes rest on their audits, the fails (no draw) on the correction, and the output says
    which and names both figures. Fails on the old code."""
    out = corrected_pass_rate(_drifted(), n_boot=400).iloc[0]
    q, tpr, tnr = 0.8, 0.9, 0.8
    rg = (q + tnr - 1) / (tpr + tnr - 1)
    implied_fail = (1 - tpr) * rg / (1 - q)
    assert out["estimate"] == pytest.approx(0.8 * 340 / 400 + 0.2 * implied_fail)
    assert out["estimate"] < rg - 0.05
    # The audits refute the correction the 200 undrawn fails rest on, and no audit of fails
    # stands in: no interval (outside review D2), said in the note.
    assert np.isnan(out["low"]) and np.isnan(out["high"])
    assert (
        "no interval: the fails rest on the reviews' TPR/TNR, which the audits refute"
        in (out["note"])
    )
    assert (out["audit_pass_used"], out["n_pass_offered"], out["audit_pass_n"]) == (True, 800, 400)
    assert not out["audit_fail_used"]
    assert out["rests_on"] == (
        "800 passes on 400 audit labels (a draw offered them alike); "
        "200 fails on the reviews' TPR/TNR"
    )
    assert "audits of passes read 85.0% (340 of 400" in out["note"]
    assert f"implies {min(tpr * rg / q, 1):.1%}" in out["note"]
    (rec,) = corrected_records(corrected_pass_rate(_drifted(), n_boot=50))
    assert rec["audits"]["pass"]["k"] == 340 and rec["audits"]["pass"]["used"] is True
    # Audits that agree with the correction leave no note and barely move the estimate.
    calm = corrected_pass_rate(_drifted(n_audited_bad=14), n_boot=50).iloc[0]
    assert "audits of passes" not in calm["note"]
    assert calm["low"] < calm["estimate"] < calm["high"]


def test_corrected_rate_weights_the_audits_of_a_draw_at_several_probabilities():
    """A draw that offered the passes at two probabilities (as ``--by-band`` does): the old code
    left its audits unused and held the passes at the share Rogan-Gladen implies (0.857, resting
    on the reviews). Now they rest on the audits' Hajek share, sum(y/pi) / sum(1/pi), with a
    Wilson interval at the effective size, checked here against a computation label by label.
    Fails on the old code."""
    df = _drifted()
    df.loc[df["check_id"].isin([f"ac{i}" for i in range(200)]), "inclusion_p"] = 0.9
    out = corrected_pass_rate(df, n_boot=400).iloc[0]
    # The 400 audit labels: 60 not acceptable and 140 acceptable at 0.9, 200 acceptable at 0.5.
    y = np.r_[np.zeros(60), np.ones(340)]
    w = 1 / np.r_[np.full(200, 0.9), np.full(200, 0.5)]
    share = (w * y).sum() / w.sum()
    assert share == pytest.approx((140 / 0.9 + 200 / 0.5) / (200 / 0.9 + 200 / 0.5))
    # The effective size from the linearised variance (527.4 here), capped at the 400 labels
    # and at Kish's size (369.8).
    kish = w.sum() ** 2 / (w**2).sum()
    n_eff = min(400, kish, share * (1 - share) / ((w**2 * (y - share) ** 2).sum() / w.sum() ** 2))
    assert n_eff == kish
    low, high = (float(x) for x in wilson_interval(share * n_eff, n_eff))
    q, tpr, tnr = 0.8, 0.9, 0.8
    rg = (q + tnr - 1) / (tpr + tnr - 1)
    implied_fail = (1 - tpr) * rg / (1 - q)
    assert out["estimate"] == pytest.approx(0.8 * share + 0.2 * implied_fail)
    # The audits refute the correction the undrawn fails rest on: no interval (D2).
    assert np.isnan(out["low"]) and "no interval: the fails rest on" in out["note"]
    assert (out["audit_pass_used"], out["audit_pass_weighted"], out["n_pass_offered"]) == (
        True, True, 800,
    )  # fmt: skip
    assert (out["audit_pass_rate_low"], out["audit_pass_rate_high"]) == pytest.approx((low, high))
    assert out["rests_on"] == (
        "800 passes on 400 audit labels weighted by 1/inclusion_p (draws offered them at 2 "
        "probabilities); 200 fails on the reviews' TPR/TNR"
    )
    assert f"audits of passes read weighted rate {share:.1%} (340 of 400 acceptable" in out["note"]
    (rec,) = corrected_records(corrected_pass_rate(df, n_boot=50))
    assert rec["audits"]["pass"] == {
        "used": True, "n_offered": 800, "k": 340, "n": 400, "n_pending": 0,
        "rate": pytest.approx(share), "rate_bounds": pytest.approx([share, share]),
        "ci": pytest.approx([low, high]), "n_effective": pytest.approx(n_eff), "weighted": True,
    }  # fmt: skip
    assert rec["audits"]["fail"]["weighted"] is False and rec["audits"]["fail"]["n"] == 0
    # One probability: the share is k / n and its interval Wilson's, named unweighted.
    (alike,) = corrected_records(corrected_pass_rate(_drifted(), n_boot=50))
    assert alike["audits"]["pass"]["rate"] == pytest.approx(340 / 400)
    assert alike["audits"]["pass"]["ci"] == pytest.approx(
        [float(x) for x in wilson_interval(340, 400)]
    )
    assert alike["audits"]["pass"]["weighted"] is False


def _two_probabilities(near, far):
    """Reviews with TPR 0.9, TNR 0.8, then passes a draw offered at two probabilities: ``near``
    and ``far`` are ``(checks, inclusion_p, audited, acceptable)``."""
    reviews = frame(["pass"] * 720 + ["fail"] * 80 + ["pass"] * 40 + ["fail"] * 160,
                    [True] * 800 + [False] * 200)  # fmt: skip
    parts = []
    for n, p, m, k in (near, far):
        part = frame(["pass"] * n, [True] * k + [False] * (m - k) + [pd.NA] * (n - m),
                     advisory=False, audited=[True] * m + [False] * (n - m), inclusion_p=p,
                     left_out=False)  # fmt: skip
        parts.append(part)
    after = pd.concat(parts, ignore_index=True)
    after["check_id"] = [f"a{i}" for i in range(len(after))]
    return pd.concat([reviews, after], ignore_index=True)


def test_corrected_interval_carries_the_weighted_audits_uncertainty():
    """Where every decided check rests on a by-band draw's audits, the bootstrap (each stratum
    redrawn on its own) gives about the audits' own interval: the old code gave Rogan-Gladen's
    from the reviews, unrelated to the audits. Fails on the old code."""
    # 1000 passes after the switch: 100 near ones at 0.8 (80 audited, 60 acceptable), 900 far
    # ones at 0.1 (90 audited, 85 acceptable).
    df = _two_probabilities((100, 0.8, 80, 60), (900, 0.1, 90, 85))
    out = corrected_pass_rate(df, n_boot=2000).iloc[0]
    share = (60 / 0.8 + 85 / 0.1) / (80 / 0.8 + 90 / 0.1)
    assert out["estimate"] == pytest.approx(share) and out["audit_pass_rate"] == pytest.approx(
        share
    )
    assert "on the reviews" not in out["rests_on"]
    width = out["high"] - out["low"]
    assert width == pytest.approx(out["audit_pass_rate_high"] - out["audit_pass_rate_low"], rel=0.3)


def _drawn_both(pass_p=None, fail_labels=None):
    """Reviews with TPR 0.9, TNR 0.8; after the switch 800 passes and 200 fails. Passes 0-499
    offered at 0.8 (0-399 audited: 60 not acceptable, 340 acceptable), fails all offered at 0.5
    (100 audited, 43 acceptable); ``pass_p`` overrides the passes' probabilities."""
    reviews = frame(["pass"] * 720 + ["fail"] * 80 + ["pass"] * 40 + ["fail"] * 160,
                    [True] * 800 + [False] * 200)  # fmt: skip
    label = [pd.NA] * 1000
    label[:400] = [False] * 60 + [True] * 340
    label[800:900] = fail_labels or [True] * 43 + [False] * 57
    after = frame(["pass"] * 800 + ["fail"] * 200, label, advisory=False, audited=False,
                  inclusion_p=np.nan, left_out=False)  # fmt: skip
    after["check_id"] = "a" + after["check_id"]
    after.loc[:399, "audited"] = True
    after.loc[800:899, "audited"] = True
    after.loc[:499, "inclusion_p"] = 0.8
    after.loc[800:, "inclusion_p"] = 0.5
    if pass_p is not None:
        after.loc[:799, "inclusion_p"] = pass_p
    return pd.concat([reviews, after], ignore_index=True)


def test_corrected_rate_holds_checks_after_the_last_draw_at_the_refuting_audits():
    """Outside review D2: the audits of passes read 85% where the reviews' correction implies
    96.4% (the note said the check changed), yet the 300 passes recorded after the last draw
    stayed at 96.4%, under an interval that ignored it (27.5% coverage in the reviewer's
    simulation). They are now held at the audit share, and rests_on says so. Fails on the old
    code."""
    out = corrected_pass_rate(_drawn_both(), n_boot=400).iloc[0]
    fail_share = 43 / 100
    assert out["estimate"] == pytest.approx((800 * 340 / 400 + 200 * fail_share) / 1000)
    assert out["low"] < out["estimate"] < out["high"]
    assert out["n_pass_offered"] == 500 and out["n_fail_offered"] == 200
    assert "the check changed since the reviews" in out["note"]
    assert "the 300 passes no draw offered are held at the passes' audit share too" in out["note"]
    assert out["rests_on"] == (
        "500 passes on 400 audit labels (a draw offered them alike); 300 passes no draw offered "
        "(after the last draw, or unreviewed before the switch) held at the passes' audit share "
        "(the audits refute the reviews' TPR/TNR; assumed unchanged since the last draw); "
        "200 fails on 100 audit labels (a draw offered them alike)"
    )


def test_corrected_rate_bounds_the_share_while_drawn_audits_are_pending():
    """Outside review D3: drawn checks still awaiting a decision were dropped silently and the
    decided ones weighted as the draw, which they need not be (the reviewers choose which to
    decide first; 93.9% [91.0, 96.5] against a truth of 82.8% in the reviewer's simulation).
    Now they are counted per verdict, the estimate is the range with them all not acceptable
    and all acceptable, the interval covers both, and nothing calls the draw "alike". Fails on
    the old code."""
    df = _drawn_both()
    pend = df["check_id"].isin([f"ac{i}" for i in range(100, 140)])  # 40 acceptable ones
    df.loc[pend, "label"] = pd.NA
    out = corrected_pass_rate(df, n_boot=400).iloc[0]
    assert int(out["audit_pass_n_pending"]) == 40 and int(out["audit_fail_n_pending"]) == 0
    assert (out["audit_pass_n"], out["audit_pass_acceptable"]) == (360, 300)
    assert np.isnan(out["estimate"]) and np.isnan(out["audit_pass_rate"])
    lo, hi = 300 / 400, 340 / 400
    assert (out["audit_pass_rate_min"], out["audit_pass_rate_max"]) == pytest.approx((lo, hi))
    assert out["audit_pass_rate_low"] == pytest.approx(float(wilson_interval(300, 400)[0]))
    assert out["audit_pass_rate_high"] == pytest.approx(float(wilson_interval(340, 400)[1]))
    ends = [(800 * x + 200 * 43 / 100) / 1000 for x in (lo, hi)]
    assert (out["estimate_min"], out["estimate_max"]) == pytest.approx(ends)
    assert out["low"] < ends[0] and ends[1] < out["high"]
    assert "40 drawn passes still await an audit decision" in out["note"]
    assert "alike" not in out["rests_on"].split(";")[0]
    assert "and 40 drawn still pending" in out["rests_on"]
    (rec,) = corrected_records(corrected_pass_rate(df, n_boot=50))
    assert rec["audits"]["pass"]["n_pending"] == 40 and rec["estimate"] is None
    assert rec["estimate_bounds"] == pytest.approx(ends)
    assert rec["audits"]["pass"]["rate_bounds"] == pytest.approx([lo, hi])


def test_corrected_rate_does_not_fill_a_probability_no_audit_reached():
    """Outside review D4: checks a draw offered at a probability that yielded no audit (here
    200 passes at 0.004) were held at the other probability's audit share and called "offered
    alike". They are now not covered by the audits: they rest as the checks no draw offered,
    named in rests_on. Fails on the old code."""
    df = _drawn_both(pass_p=np.r_[np.full(500, 0.8), np.full(300, 0.004)])
    # Audits that agree with the correction: 386 of 400 passes acceptable.
    df.loc[df["check_id"].isin([f"ac{i}" for i in range(14, 60)]), "label"] = True
    out = corrected_pass_rate(df, n_boot=200).iloc[0]
    q, tpr, tnr = 0.8, 0.9, 0.8
    rg = (q + tnr - 1) / (tpr + tnr - 1)
    implied_pass = tpr * rg / q
    assert "changed" not in out["note"]
    assert out["n_pass_offered"] == 500 and not out["audit_pass_weighted"]
    assert out["estimate"] == pytest.approx(
        (500 * 386 / 400 + 300 * implied_pass + 200 * 43 / 100) / 1000
    )
    assert out["rests_on"].startswith(
        "500 passes on 400 audit labels (a draw offered them alike); 300 passes offered at a "
        "probability no audit reached (inclusion_p 0.004) on the reviews' TPR/TNR"
    )


def test_corrected_interval_lets_a_stratum_whose_labels_agree_vary():
    """Outside review D1: the bootstrap redrew each probability's labels at its plug-in share, so
    a low-probability stratum whose few labels all agree never varied, though it carries most of
    the weight (86-91% coverage at a nominal 95%). Its share is now drawn from the Jeffreys
    posterior of its labels. Fails on the old code."""
    # 2000 passes: 500 at 0.3 (150 audited, 140 acceptable), 1500 at 0.01 (15 audited, all
    # acceptable).
    df = _two_probabilities((500, 0.3, 150, 140), (1500, 0.01, 15, 15))
    out = corrected_pass_rate(df, n_boot=2000).iloc[0]
    share = (140 / 0.3 + 15 / 0.01) / (150 / 0.3 + 15 / 0.01)
    assert out["estimate"] == pytest.approx(share)
    # The far stratum's 15 agreeing labels say its share is above about 0.85, not 1: the
    # interval reaches well below the near stratum's 93%.
    assert out["low"] < 0.9
    assert out["high"] - out["low"] > 0.08


def test_corrected_rates_count_what_they_use_and_carry_intervals():
    """TPR/TNR are measured among pass/fail verdicts, yet n_labeled and the labeled acceptable
    share counted the reviewed unsure verdicts too (170 labeled, 58.8%, for 70 and 71.4%); and
    no rate had an interval. Fails on the old code."""
    lab = frame(["pass"] * 40 + ["fail"] * 10 + ["pass"] * 5 + ["fail"] * 15 + ["unsure"] * 100,
                [True] * 50 + [False] * 20 + [True] * 50 + [False] * 50)  # fmt: skip
    unl = frame(["pass"] * 60 + ["fail"] * 40, [pd.NA] * 100)
    unl["check_id"] = "u" + unl["check_id"]
    out = corrected_pass_rate(pd.concat([lab, unl], ignore_index=True), n_boot=100).iloc[0]
    assert (out["n_labeled"], out["n_acceptable"], out["n_not_acceptable"]) == (70, 50, 20)
    assert out["n_labeled_undecided"] == 100
    assert out["labeled_acceptable_rate"] == pytest.approx(50 / 70)
    for name, k, n in (("tpr", 40, 50), ("tnr", 15, 20), ("apparent_pass_rate", 60, 100)):
        low, high = (float(x) for x in wilson_interval(k, n))
        assert (out[f"{name}_low"], out[f"{name}_high"]) == pytest.approx((low, high)), name
    (rec,) = corrected_records(corrected_pass_rate(pd.concat([lab, unl]), n_boot=50))
    assert rec["tpr_ci"] == pytest.approx([float(x) for x in wilson_interval(40, 50)])


def test_corrected_rate_has_no_interval_without_an_estimate():
    """TPR + TNR <= 1: no estimate, and the old code still reported the interval [0, 1] of
    the resamples with TPR + TNR > 1. Fails on the old code."""
    lab = frame(["pass"] * 30 + ["fail"] * 30 + ["pass"] * 30 + ["fail"] * 30,
                [True] * 60 + [False] * 60)  # fmt: skip
    unl = frame(["pass"] * 50 + ["fail"] * 50, [pd.NA] * 100)
    unl["check_id"] = "u" + unl["check_id"]
    out = corrected_pass_rate(pd.concat([lab, unl], ignore_index=True)).iloc[0]
    assert np.isnan(out["estimate"]) and np.isnan(out["low"]) and np.isnan(out["high"])
    assert "no estimate and no interval" in out["note"]


# -- edge cases ---------------------------------------------------------------


def test_group_with_no_labels():
    df = frame(["pass", "fail", "unsure"], [pd.NA] * 3, decided_by=None)
    row = agreement(df).iloc[0]
    assert row["n"] == 0 and row["n_checks"] == 3
    assert np.isnan(row["agree"]) and np.isnan(row["false_pass_rate"]) and np.isnan(row["kappa"])
    assert np.isnan(row["false_pass_low"])
    assert row["unsure_rate"] == pytest.approx(1 / 3)  # needs no label
    assert "no labels" in row["note"]


def test_all_pass_group_kappa_undefined_and_said_so():
    df = frame(["pass"] * 30, [True] * 25 + [False] * 5)
    row = agreement(df).iloc[0]
    assert np.isnan(row["kappa"]) and np.isnan(row["kappa_low"])
    assert "every decided verdict is pass" in row["kappa_reason"]
    assert row["false_pass_rate"] == pytest.approx(5 / 30)
    assert row["tnr"] == 0.0
    rec = agreement_records(agreement(df))[0]
    assert rec["kappa"] is None and "undefined" in rec["kappa_reason"]


def test_error_only_group():
    df = frame(["error"] * 25, [True] * 20 + [False] * 5)
    row = agreement(df).iloc[0]
    assert row["n_error"] == 25 and row["error_rate"] == 1.0
    assert row["error_acceptable"] == 20 and row["error_not_acceptable"] == 5
    assert row["n_decided"] == 0 and np.isnan(row["agree"])
    assert row["kappa_reason"] == "no labeled pass or fail verdicts"
    assert row["tpr"] == 0.0 and row["tnr"] == 1.0  # error never lets work through


def test_conflicts_counted():
    df = frame(["pass", "fail", "pass"], [True, False, True], conflict=[True, False, True])
    row = agreement(df).iloc[0]
    assert row["conflicts"] == 2
    assert "2 with conflicting decisions" in row["note"]


def test_too_few_labels_note():
    row = agreement(frame(["pass"] * 5 + ["fail"] * 5, [True] * 5 + [False] * 5)).iloc[0]
    assert "too few labels (n<20)" in row["note"]
    assert row["kappa"] == 1.0


def test_empty_input_gives_empty_frame_with_columns():
    out = agreement(frame([], []))
    assert out.empty and list(out.columns) == [*DEFAULT_BY, *AGREEMENT_COLUMNS]


# -- grouping -----------------------------------------------------------------


def test_default_grouping_keeps_models_apart_and_pooling_is_said():
    df = frame(["pass", "fail"] * 20, [True, False] * 20, model=["m1", "m2"] * 20)
    out = agreement(df)
    assert list(out["model"]) == ["m1", "m2"] and (out["n_models"] == 1).all()
    pooled = agreement(df, by=["step"]).iloc[0]
    assert pooled["n_models"] == 2 and "pools 2 models" in pooled["note"]


def test_corrected_pass_rate_says_when_it_pools_models_as_agreement_does():
    """``corrected_pass_rate(by="step")`` mixed two models' TPR/TNR with no n_models and no note."""
    rng = np.random.default_rng(31)
    parts = []
    for model in ("m1", "m2"):
        lab = synth(300, rng, prevalence=0.7, model=model)
        unl = synth(100, rng, prevalence=0.6, labeled=False, model=model)
        unl["check_id"] = f"u{model}" + unl["check_id"]
        parts += [lab, unl]
    df = pd.concat(parts, ignore_index=True)
    pooled = corrected_pass_rate(df, by=["step"], n_boot=50).iloc[0]
    assert pooled["n_models"] == 2 == agreement(df, by=["step"]).iloc[0]["n_models"]
    assert pooled["note"].startswith("pools 2 models: TPR/TNR mix their reviews")
    (rec,) = corrected_records(corrected_pass_rate(df, by=["step"], n_boot=50))
    assert rec["n_models"] == 2 and "pools 2 models" in rec["note"]
    apart = corrected_pass_rate(df, n_boot=50)  # the default keeps models apart
    assert list(apart["n_models"]) == [1, 1] and not apart["note"].str.contains("pools").any()


def test_crossed_and_time_groups():
    at = T0 + pd.to_timedelta(np.arange(40) * 12, unit="h")  # 20 days from a Monday
    df = frame(["pass", "fail"] * 20, [True, False] * 20, at=at, step=["a", "b"] * 20)
    weeks = agreement(df, by=["week"])
    assert list(weeks["week"]) == ["2026-10-05", "2026-10-12", "2026-10-19"]
    assert weeks["n"].sum() == 40
    assert list(agreement(df, by=["month"])["month"]) == ["2026-10"]
    crossed = agreement(df, by=["step", "day"])
    assert len(crossed) == 40 and set(crossed["step"]) == {"a", "b"}
    overall = agreement(df, by=[])
    assert len(overall) == 1 and overall.iloc[0]["n"] == 40


def test_approver_group_and_missing_keys_kept():
    df = frame(["pass"] * 4, [True, True, pd.NA, True], decided_by=["ann", "bob", None, "ann"])
    out = agreement(df, by="approver")
    assert out["approver"].isna().sum() == 1
    assert dict(zip(out["approver"].fillna("-"), out["n"], strict=True)) == {
        "ann": 2,
        "bob": 1,
        "-": 0,
    }


def test_unknown_group_key_names_allowed_values():
    with pytest.raises(ValueError, match="allowed: process, version, step"):
        agreement(frame(["pass"], [True]), by=["weekday"])
    with pytest.raises(ValueError, match="answers"):
        agreement(frame(["pass"], [True]), by=["question"])


def test_question_level_uses_result_against_submission_label():
    subs = frame(["fail", "pass"], [True, True])
    ans = pd.DataFrame(
        {
            "check_id": ["c0", "c0", "c1", "c1"],
            "process": "p",
            "step": ["s", "s", "s", "s"],
            "model": "m1",
            "at": T0,
            "ask": ["Q1", "Q2", "Q1", "Q2"],
            "result": ["pass", "fail", "pass", None],
            "label": pd.array([True] * 4, dtype="boolean"),
            "conflict": False,
            "decided_by": "ann",
        }
    )
    out = agreement(subs, by=["question"], answers=ans)
    assert list(out.columns[:3]) == ["process", "step", "question"]
    q1, q2 = out.iloc[0], out.iloc[1]
    assert q1["question"] == "Q1" and q1["pass_acceptable"] == 2 and q1["n"] == 2
    assert q2["fail_acceptable"] == 1 and q2["n"] == 1  # the answer without a result is left out
    assert q2["false_fail_rate"] == 1.0
    assert QUESTION_UNIT in q1["note"]
    assert QUESTION_UNIT in out.attrs["unit"]


# -- approver view ------------------------------------------------------------


def test_approver_view_flags_fast_close_follower_only():
    rng = np.random.default_rng(21)
    n = 200
    truth_acc = rng.random(n) < 0.7
    verdict = np.where(
        rng.random(n) < 0.8,
        np.where(truth_acc, "pass", "fail"),
        np.where(truth_acc, "fail", "pass"),
    )
    follower = frame(verdict, verdict == "pass", decided_by="eli")
    follower["decided_at"] = follower["at"] + pd.to_timedelta(rng.integers(3, 15, n), unit="s")
    careful = frame(verdict, truth_acc, decided_by="ana")
    careful["decided_at"] = careful["at"] + pd.to_timedelta(rng.integers(120, 3600, n), unit="s")
    few = frame(["pass"] * 5, [True] * 5, decided_by="bo")
    few["decided_at"] = few["at"] + pd.Timedelta(seconds=2)
    out = approvers(pd.concat([follower, careful, few], ignore_index=True)).set_index("approver")
    assert out.loc["eli", "flag"] and not out.loc["ana", "flag"]
    assert not out.loc["bo", "flag"] and "too few" in out.loc["bo", "note"]
    assert (
        "automation bias" in out.loc["eli", "flag_reason"]
        and "hint" in out.loc["eli", "flag_reason"]
    )
    assert out.loc["eli", "agree"] == 1.0
    expected = (careful["decided_at"] - careful["at"]).dt.total_seconds().median()
    assert out.loc["ana", "median_review_s"] == pytest.approx(expected)
    assert out.loc["ana", "approval_rate"] == pytest.approx(truth_acc.mean())
    lo, hi = proportion_confint(int(truth_acc.sum()), n, method="wilson")
    assert (out.loc["ana", "approval_low"], out.loc["ana", "approval_high"]) == pytest.approx(
        (lo, hi)
    )
    # Thresholds are options: a stricter time limit clears the follower.
    assert not approvers(follower, review_below_s=2.0).iloc[0]["flag"]


def test_approver_view_extra_keys():
    df = frame(["pass", "fail"] * 10, [True, False] * 10, step=["a", "b"] * 10)
    out = approvers(df, by=["step"])
    assert list(out.columns[:2]) == ["approver", "step"] and len(out) == 2


# -- JSON shape ---------------------------------------------------------------


def test_records_have_issue_keys_and_are_strict_json():
    rng = np.random.default_rng(31)
    df = pd.concat([synth(100, rng, prevalence=0.7), frame(["pass"] * 3, [pd.NA] * 3, model="m2")])
    records = agreement_records(agreement(df))
    text = json.dumps(records, allow_nan=False)
    assert len(json.loads(text)) == 2
    required = {
        "process", "step", "model", "n", "agree", "kappa", "kappa_ci", "false_pass_rate",
        "false_pass_ci", "false_fail_rate", "false_fail_ci", "unsure_rate", "tpr", "tnr", "counts",
    }  # fmt: skip
    for rec in records:
        assert required <= rec.keys()
        assert set(rec["counts"]) == {"pass", "fail", "unsure", "error"}
        for cell in rec["counts"].values():
            assert set(cell) == {"acceptable", "not_acceptable"}
    first = records[0]
    assert sum(sum(c.values()) for c in first["counts"].values()) == first["n"]
    # Every rate with its numerator and denominator (the unsure and error rates are of all checks).
    for rec in records:
        for rate, k in (("unsure_rate", "n_unsure"), ("error_rate", "n_error")):
            assert rec[rate] == pytest.approx(rec[k] / rec["n_checks"])
    assert (
        len(first["kappa_ci"]) == 2 and first["kappa_ci"][0] < first["kappa"] < first["kappa_ci"][1]
    )
    assert records[1]["n"] == 0 and records[1]["agree"] is None


# -- ground truth from calibrate simulate -------------------------------------


def _population_pass_rates(n: int = 20_000) -> dict[tuple[str, str, bool], float]:
    """P(verdict pass | truth) per (step, model) from the simulator's own evaluator model."""
    from calibrate.profile import Limits, parse_check
    from calibrate.simulate import _models, _Sim

    sim = _Sim(1, 123)
    rates = {}
    for sm in _models():
        if any(ev.drift for _, ev in sm.evaluators):
            continue  # a drifting evaluator has no single true rate
        questions = parse_check(sm.check, Limits())
        for start, ev in sm.evaluators:
            for acceptable in (True, False):
                frac = np.full(n, start + 0.01)
                _, verdict, _, _ = sim.answers_for(sm, questions, np.full(n, acceptable), frac)
                rates[(sm.step, ev.name, acceptable)] = float(np.mean(verdict == 0))
    return rates


def test_simulated_sample_tpr_tnr_cover_generator_truth(sample_store, sample_dir):
    from calibrate.dataset import submissions
    from calibrate.store import connect

    con = connect(sample_store, read_only=True)
    try:
        subs = submissions(con, labeled_only=True)
    finally:
        con.close()
    truth_df = pd.read_csv(sample_dir / ".truth" / "truth.csv")
    merged = subs.merge(
        truth_df.rename(columns={"run": "run_id"})[["run_id", "step", "attempt", "acceptable"]],
        on=["run_id", "step", "attempt"],
        how="left",
        validate="one_to_one",
    )
    assert merged["acceptable"].notna().all()
    # Against the true acceptability (not the approvers' noisy labels), TPR and TNR
    # are the generator's P(pass | truth), diluted by ~1% error verdicts.
    merged["label"] = merged["acceptable"].astype(bool)
    out = agreement(merged, confidence=0.99)
    pop = _population_pass_rates()
    mc = 3 * np.sqrt(0.25 / 20_000)  # Monte Carlo slack of the population value
    checked = 0
    for row in out.to_dict("records"):
        key = (row["step"], row["model"])
        if (*key, True) not in pop:
            continue
        p_acc, p_not = pop[(*key, True)], pop[(*key, False)]
        assert row["tpr_low"] <= p_acc + mc and row["tpr_high"] >= 0.99 * p_acc - mc, (
            key,
            row["tpr"],
            p_acc,
        )
        tnr_true = (1 - p_not, 1 - 0.99 * p_not)
        assert row["tnr_low"] <= tnr_true[1] + mc and row["tnr_high"] >= tnr_true[0] - mc, (
            key,
            row["tnr"],
        )
        checked += 1
    assert checked >= 3


def test_simulated_sample_flags_the_rubber_stamp_approver(sample_store):
    from calibrate.dataset import submissions
    from calibrate.simulate import RUBBER_STAMP
    from calibrate.store import connect

    con = connect(sample_store, read_only=True)
    try:
        subs = submissions(con)
    finally:
        con.close()
    out = approvers(subs)
    assert set(out.loc[out["flag"], "approver"]) == {RUBBER_STAMP}


@pytest.mark.parametrize(("n", "noted"), [(50, True), (200, False)])
def test_a_small_sample_kappa_interval_is_noted_as_approximate(n, noted):
    # The large-sample interval covers about 90% at n = 30-50 (statistics review).
    verdict = ["pass", "fail"] * (n // 2)
    label = [True, False] * (n // 4) + [False, True] * (n // 4) + [True, False] * (n % 4 // 2)
    row = agreement(frame(verdict, label[:n])).iloc[0]
    assert np.isfinite(row["kappa"])
    assert ("kappa interval approximate (n<100)" in row["note"]) is noted


def test_audit_draws_at_unequal_rates_are_flagged_not_silently_pooled():
    base = {
        "process": "p", "step": "s", "model": "m", "at": pd.Timestamp("2026-10-06", tz="UTC"),
        "conflict": False, "decided_by": "ann", "advisory": False,
    }  # fmt: skip
    # By band: passes drawn at three probabilities.
    subs = pd.DataFrame({
        **base, "verdict": ["pass"] * 6, "label": [True, True, False, True, True, True],
        "audited": [True] * 6, "inclusion_p": [0.1, 0.1, 0.2, 0.2, 0.05, 0.05],
    })  # fmt: skip
    row = agreement(subs, by=["labels"]).iloc[0]
    assert row["labels"] == "audit draw" and bool(row["unequal_draws_pass"])
    assert "did not offer every pass alike" in row["note"]
    # Withheld, not shown unweighted; the counts stay.
    assert np.isnan(row["false_pass_rate"]) and np.isnan(row["false_pass_high"])
    assert int(row["n_pass"]) == 6
    same = agreement(subs.assign(inclusion_p=0.1), by=["labels"]).iloc[0]
    assert not bool(same["unequal_draws"]) and "unequal" not in same["note"]
    # The design, not the sample: an undrawn far-band pass at another probability counts.
    undrawn = pd.DataFrame({**base, "verdict": ["pass"], "label": [pd.NA], "audited": [False],
                            "inclusion_p": [0.4]})  # fmt: skip
    mixed = agreement(pd.concat([subs.assign(inclusion_p=0.1), undrawn]), by=["labels"])
    assert bool(mixed.set_index("labels").loc["audit draw", "unequal_draws_pass"])
    # A pass-only uniform draw: the false-pass rate holds, agreement does not (fails had 0).
    fails = pd.DataFrame({**base, "verdict": ["fail"] * 3, "label": [pd.NA] * 3,
                          "audited": [False] * 3, "inclusion_p": [np.nan] * 3})  # fmt: skip
    only = agreement(pd.concat([subs.assign(inclusion_p=0.1), fails]), by=["week"]).iloc[0]
    assert bool(only["unequal_draws"]) and not bool(only["unequal_draws_pass"])
    assert "false-pass rate holds" in only["note"]
    # A pass-only draw says nothing of the check's fails: TNR, TPR, agreement, kappa withheld.
    assert all(np.isnan(only[c]) for c in ("tnr", "tpr", "agree", "kappa", "false_fail_rate"))
    assert np.isfinite(only["false_pass_rate"])
    # Reviews pooled with audit draws: a reviewed check counts as drawn with probability 1.
    review = subs.assign(advisory=True, audited=False, inclusion_p=np.nan)
    pooled = agreement(pd.concat([review, subs.assign(inclusion_p=0.5)]), by=[]).iloc[0]
    assert bool(pooled["unequal_draws_pass"])
    assert not bool(agreement(review, by=[]).iloc[0]["unequal_draws"])
    # Without the draw columns nothing is claimed.
    plain = subs.drop(columns=["audited", "inclusion_p"])
    assert not bool(agreement(plain).iloc[0]["unequal_draws"])


def test_groups_a_draw_chose_withhold_their_unsure_and_error_shares():
    """``--by labels`` on a pass-only draw: the draw's group holds passes only, so its unsure and
    error shares read 0% (and what it left over-counts them): withheld, as the report's "set by
    the draw". Before, "unsure 0.0% [0.0, 0.9] of 434" was shown. The whole step keeps them."""
    base = {
        "process": "p", "step": "s", "model": "m", "at": pd.Timestamp("2026-10-06", tz="UTC"),
        "conflict": False, "decided_by": "ann", "advisory": False,
    }  # fmt: skip
    drawn = pd.DataFrame({**base, "verdict": ["pass"] * 30, "label": [True] * 28 + [False] * 2,
                          "audited": True, "inclusion_p": 0.5})  # fmt: skip
    left = pd.DataFrame({**base, "verdict": ["pass"] * 30 + ["fail", "unsure", "error"] * 10,
                         "label": pd.NA, "audited": False,
                         "inclusion_p": [0.5] * 30 + [np.nan] * 30})  # fmt: skip
    review = pd.DataFrame({**base, "advisory": True, "verdict": ["pass", "unsure"] * 15,
                           "label": True, "audited": False, "inclusion_p": np.nan})  # fmt: skip
    subs = pd.concat([drawn, left, review], ignore_index=True)
    rows = agreement(subs, by=["labels"]).set_index("labels")
    for group in ("audit draw", "advisory: false, not drawn"):
        row = rows.loc[group]
        assert all(np.isnan(row[c]) for c in ("unsure_rate", "unsure_high", "error_rate")), group
        assert "unsure and error shares withheld" in row["note"], group
        drew = group == "audit draw"
        assert (int(row["n_checks"]), int(row["n_unsure"])) == ((30, 0) if drew else (60, 10))
    assert np.isfinite(rows.loc["audit draw", "false_pass_rate"])  # a uniform pass draw keeps it
    reviewed = rows.loc["advisory review"]
    assert reviewed["unsure_rate"] == 0.5 and "unsure and error" not in reviewed["note"]
    whole = agreement(subs, by=["model"]).iloc[0]  # every check of the step: the check's shares
    assert whole["unsure_rate"] == pytest.approx(25 / 120) and whole["error_rate"] == 10 / 120
    assert "unsure and error" not in whole["note"]


def test_unequal_draws_without_an_advisory_column_reads_the_draws():
    subs = pd.DataFrame({
        "process": "p", "step": "s", "model": "m", "at": pd.Timestamp("2026-10-06", tz="UTC"),
        "verdict": ["pass", "pass"], "label": [True, False], "conflict": False, "decided_by": "a",
        "audited": [True, True], "inclusion_p": [0.1, 0.2],
    })  # fmt: skip
    row = agreement(subs).iloc[0]
    assert bool(row["unequal_draws_pass"]) and bool(row["unequal_draws"])


def test_checks_after_the_last_draw_are_outside_its_design():
    """A pass recorded after every check a draw considered had not arrived when the draw was made:
    it is not a pass the draw offered at probability 0, so the audit's false-pass rate holds."""
    base = {
        "process": "p", "step": "s", "model": "m", "conflict": False, "decided_by": "ann",
        "advisory": False,
    }  # fmt: skip
    early = pd.Timestamp("2026-10-06", tz="UTC")
    drawn = pd.DataFrame({
        **base, "at": early, "verdict": ["pass"] * 6, "label": [True] * 5 + [False],
        "audited": [True] * 6, "inclusion_p": [0.5] * 6,
    })  # fmt: skip
    offered = pd.DataFrame({**base, "at": early, "verdict": ["pass"] * 6, "label": [pd.NA] * 6,
                            "audited": [False] * 6, "inclusion_p": [0.5] * 6})  # fmt: skip
    late = pd.DataFrame({**base, "at": early + pd.Timedelta(days=9), "verdict": ["pass"] * 3,
                         "label": [pd.NA] * 3, "audited": [False] * 3,
                         "inclusion_p": [np.nan] * 3})  # fmt: skip
    row = agreement(pd.concat([drawn, offered, late]), by=["labels"]).set_index("labels")
    assert not bool(row.loc["audit draw", "unequal_draws_pass"])
    # A pass the draw could have offered but did not (recorded before its last check): unequal.
    skipped = late.assign(at=early)
    row = agreement(pd.concat([drawn, offered, skipped]), by=["labels"]).set_index("labels")
    assert bool(row.loc["audit draw", "unequal_draws_pass"])


def test_weekly_figure_of_a_step_with_no_labels_draws_no_empty_legend():
    # A step with checks but 0 labels has no line to name: matplotlib warned "No artists with
    # labels found to put in legend" (it leaked to stderr from `calibrate report`).
    import warnings

    from calibrate.analysis.displays import WeeklyDisplay

    none = [None] * 4
    for alpha in (None, 0.05):
        by_week = agreement(frame(["pass"] * 4, none), by=["model", "week"])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            display = WeeklyDisplay(by_week, alpha=alpha).plot()
        assert display.ax_[0].get_legend() is None
    labeled = agreement(frame(["pass"] * 4, [True] * 4), by=["model", "week"])
    assert WeeklyDisplay(labeled).plot().ax_[0].get_legend() is not None


def test_a_frame_without_the_columns_is_a_value_error_naming_them():
    """``agreement(pd.DataFrame())`` raised ``KeyError: 'verdict'`` from deep inside."""
    from calibrate.analysis.corrected import corrected_pass_rate

    with pytest.raises(ValueError, match="lacks the columns verdict, label, conflict, model"):
        agreement(pd.DataFrame())
    with pytest.raises(ValueError, match="must be a DataFrame such as calibrate.submissions"):
        agreement(None)
    with pytest.raises(ValueError, match="lacks the columns decided_at, at, decided_by"):
        approvers(pd.DataFrame({"verdict": ["pass"], "label": [True]}))
    with pytest.raises(ValueError, match="lacks the columns is_latest, model that corrected reads"):
        corrected_pass_rate(pd.DataFrame({"verdict": ["pass"], "label": [True]}), by=[])
    with pytest.raises(ValueError, match="answers lacks the column"):
        agreement(frame(["pass"], [True]), by=["question"], answers=pd.DataFrame({"x": [1]}))


def _enforced_step(**draws) -> pd.DataFrame:
    """One enforced step: reviews before the switch, then checks recorded with advisory: false.

    ``draws`` gives the inclusion probability of each verdict's draw (none: not offered); a
    blocking fail recorded with advisory: false before the switch, and unsure verdicts, are
    never offered.
    """
    rng = np.random.default_rng(5)
    base = {"process": "p", "step": "s", "model": "m", "conflict": False, "decided_by": "ann"}
    review = pd.DataFrame({
        **base, "at": T0, "advisory": True, "audited": False, "inclusion_p": np.nan,
        "verdict": ["pass"] * 40 + ["fail"] * 20 + ["unsure"] * 10,
        "label": [True] * 38 + [False] * 2 + [True] * 4 + [False] * 16 + [True] * 5 + [False] * 5,
    })  # fmt: skip
    before = pd.DataFrame({**base, "at": T0 + pd.Timedelta(days=1), "advisory": False,
                           "audited": False, "inclusion_p": np.nan, "verdict": "fail",
                           "label": pd.NA}, index=[0])  # fmt: skip
    after = []
    for verdict, n in (("pass", 80), ("fail", 40), ("unsure", 10)):
        p = draws.get(verdict, np.nan)
        drawn = rng.random(n) < (0.0 if np.isnan(p) else p)
        label = np.where(rng.random(n) < (0.9 if verdict == "pass" else 0.2), True, False)
        after.append(pd.DataFrame({
            **base, "at": T0 + pd.Timedelta(days=8), "advisory": False, "verdict": verdict,
            "inclusion_p": p, "audited": drawn, "label": pd.array(np.where(drawn, label, None),
                                                                   dtype="boolean"),
        }))  # fmt: skip
    return pd.concat([review, before, *after], ignore_index=True)


def test_a_fail_draw_beside_a_pass_draw_keeps_the_false_fail_rate():
    """Black-box run: after a pass draw and a fail draw at 0.5 each, agreement withheld the
    false-fail rate "(a pass-only draw)" while the monitor read it. False fails need only the
    fails offered alike (a blocking fail before the switch was offered by no draw: outside the
    design), agreement and kappa every pass and fail at one probability, TPR and TNR every
    verdict (no draw offers an unsure one)."""
    subs = _enforced_step(**{"pass": 0.5, "fail": 0.5})
    row = agreement(subs, by=["labels"]).set_index("labels").loc["audit draw"]
    assert row["n_fail"] > 0 and np.isfinite(row["false_fail_rate"])
    assert np.isfinite(row["false_pass_rate"]) and np.isfinite(row["agree"])
    assert np.isfinite(row["kappa"])
    # The unsure verdicts were offered with probability 0: TPR and TNR say nothing of the check.
    assert np.isnan(row["tpr"]) and np.isnan(row["tnr"]) and bool(row["unequal_draws_verdicts"])
    assert "pass-only" not in row["note"]
    assert "did not offer every verdict at one probability" in row["note"]
    assert "the false-pass rate and the false-fail rate hold" in row["note"]
    # Fails at another probability than the passes: each rate holds, agreement does not.
    other = agreement(_enforced_step(**{"pass": 0.5, "fail": 0.25}), by=["labels"])
    other = other.set_index("labels").loc["audit draw"]
    assert np.isfinite(other["false_fail_rate"]) and np.isfinite(other["false_pass_rate"])
    assert np.isnan(other["agree"]) and np.isnan(other["kappa"])
    assert "every pass and fail at one probability" in other["note"]
    # A pass-only draw: its fails (all offered with probability 0) hold no label to show.
    only = agreement(_enforced_step(**{"pass": 0.5}), by=["labels"])
    only = only.set_index("labels").loc["audit draw"]
    assert np.isfinite(only["false_pass_rate"]) and int(only["n_fail"]) == 0
    assert np.isnan(only["agree"]) and "the false-pass rate holds" in only["note"]


def _later(subs: pd.DataFrame, verdict: str, day: int, n: int, p: float) -> pd.DataFrame:
    """``subs`` with ``n`` more enforced checks of ``verdict`` on ``day``: considered by a draw
    at ``p`` (none drawn), or by no draw when ``p`` is NaN."""
    more = pd.DataFrame({
        "process": "p", "step": "s", "model": "m", "conflict": False, "decided_by": "ann",
        "at": T0 + pd.Timedelta(days=day), "advisory": False, "verdict": verdict,
        "inclusion_p": p, "audited": False, "label": pd.array([pd.NA] * n, dtype="boolean"),
    }, index=range(n))  # fmt: skip
    return pd.concat([subs, more], ignore_index=True)


def test_a_later_fail_draw_does_not_withhold_the_false_pass_rate():
    """Outside review D3: a pass draw, then passes arrive, then a fail draw. The cutoff ("had
    not arrived when the draws were made") was the last check any draw considered, so the fail
    draw turned the later passes into passes offered with probability 0 and withheld a
    false-pass rate shown without it. The cutoff is per verdict now; the later passes are left
    out of the rate either way, and the note counts them."""
    passes = _later(_enforced_step(**{"pass": 0.5}), "pass", 15, 30, np.nan)
    both = _later(passes, "fail", 20, 25, 0.5)
    rows = [_audit_row(df) for df in (passes, both)]
    assert [bool(r["unequal_draws_pass"]) for r in rows] == [False, False]
    assert rows[0]["false_pass_rate"] == rows[1]["false_pass_rate"]
    for row in rows:
        assert np.isfinite(row["false_pass_rate"])
        assert int(row["n_later_pass"]) == 30
        assert "30 passes after the last a draw considered" in row["note"]
        assert "left out of the false-pass rate" in row["note"]
    # No draw offered the 40 fails of day 8 at first (no rate over them to note); the fail
    # draw of day 20 came after them, which it did not consider: offered at 0, not later.
    assert [int(r["n_later_fail"]) for r in rows] == [40, 0]
    assert "fails after" not in rows[0]["note"] and bool(rows[1]["unequal_draws_fail"])
    # Agreement spans every draw's labels: the passes before the fail draw were offered at 0.
    assert np.isnan(rows[1]["agree"]) and bool(rows[1]["unequal_draws"])
    rec = [r for r in agreement_records(agreement(both, by=["labels"])) if r["n_later_pass"]]
    assert [r["labels"] for r in rec] == ["audit draw"] and rec[0]["false_pass_rate"] is not None
    # An unconsidered pass before the last pass a draw considered was offered at 0: withheld.
    early = _later(_later(passes, "pass", 5, 3, np.nan), "pass", 16, 5, 0.5)
    assert np.isnan(_audit_row(early)["false_pass_rate"])


def _audit_row(subs: pd.DataFrame) -> pd.Series:
    return agreement(subs, by=["labels"]).set_index("labels").loc["audit draw"]


def test_drawn_checks_awaiting_a_decision_are_counted_in_the_note():
    """Outside review D8: drawn checks no decision has reached were ignored; the rates are over
    the decided ones, which need not be a random part of the drawn (``calibrate monitor``
    stops its stream at the first pending one). The note and the JSON give their count."""
    subs = _enforced_step(**{"pass": 0.5})
    drawn = subs.index[subs["audited"].to_numpy(bool)]
    subs.loc[drawn[:7], "label"] = pd.NA
    row = _audit_row(subs)
    assert int(row["n_pending"]) == 7
    assert "7 drawn checks still await a decision" in row["note"]
    pooled = agreement(subs, by=["model"])
    assert agreement_records(pooled)[0]["n_pending"] == 7
    assert int(agreement(subs[~subs["audited"]], by=["model"]).iloc[0]["n_pending"]) == 0
    one = subs.copy()
    one.loc[drawn[7:], "label"] = True
    one.loc[drawn[:6], "label"] = True
    assert "1 drawn check still awaits a decision" in agreement(one, by=["model"]).iloc[0]["note"]


def test_labels_the_enforced_check_selected_withhold_every_conditioned_rate():
    """Black-box run: ``--by labels --with-escalations`` showed "TPR 0.0% [0.0, 16.1] of 20" on
    escalations alone (only unsure verdicts reach a person after the switch: a TPR of 0 by
    selection). Every rate conditioned on a verdict or a label is withheld where the group
    holds such labels, with the reason; the shares over all checks stay."""
    subs = _enforced_step(**{"pass": 0.5})
    escalated = (subs["advisory"] == False) & (subs["verdict"] == "unsure")  # noqa: E712
    subs.loc[escalated, "label"] = [True] * 8 + [False] * 2
    rows = agreement(subs, by=["labels"]).set_index("labels")
    left = rows.loc["advisory: false, not drawn"]
    assert int(left["n_selected"]) == 10 and int(left["n_acceptable"]) == 8
    assert all(np.isnan(left[c]) for c in ("tpr", "tnr", "agree", "false_pass_rate"))
    assert "10 labels the enforced check selected" in left["note"]
    assert int(rows.loc["advisory review", "n_selected"]) == 0
    assert np.isfinite(rows.loc["advisory review", "tpr"])
    # Pooled with the reviews (no audit label at all): withheld too, not read as a sample.
    pooled = agreement(subs[~subs["audited"]], by=["model"]).iloc[0]
    assert np.isnan(pooled["tpr"]) and int(pooled["n_selected"]) == 10
    assert np.isfinite(pooled["unsure_rate"])
    rec = agreement_records(agreement(subs[~subs["audited"]], by=["model"]))[0]
    assert rec["n_selected"] == 10 and rec["tpr"] is None and rec["tpr_ci"] == [None, None]
