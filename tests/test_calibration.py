"""Tests of calibrate.analysis.calibration and the reliability figures in calibrate.report.plots.

References: scikit-learn (``calibration_curve``, ``brier_score_loss``,
``log_loss``, ``roc_auc_score``), statsmodels (Wilson intervals, Holm) and data
simulated here with a known, over-confident evaluator.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, roc_auc_score
from sklearn.metrics import log_loss as sk_log_loss
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from calibrate.analysis import calibration, calibration_scores, recalibration
from calibrate.analysis.calibration import (
    bin_edges,
    bootstrap_ece_interval,
    calibrate_answers,
    calibrate_store,
    calibration_errors,
    category_rates,
    fit_recalibrator,
    learn_pass_level,
    non_monotone_levels,
    recalibrators,
    reliability_bins,
)
from calibrate.analysis.question_calibration import choice_calibration, rubric_calibration
from calibrate.analysis.reliability import reliability_curve
from calibrate.dataset import Filters
from calibrate.errors import UsageError
from calibrate.report.plots import (
    ReliabilityDisplay,
    figure_stem,
    question_figure,
    safe_text,
    slugify,
    step_figure,
)
from calibrate.store import connect

T0 = pd.Timestamp("2026-10-05T08:00:00Z")  # a Monday


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def logit(p):
    return np.log(p) - np.log1p(-p)


def overconfident(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """An evaluator over-confident by construction: P(acceptable | p) = sigmoid(0.5 logit p)."""
    p = sigmoid(rng.normal(0.5, 2.5, n))
    y = rng.random(n) < sigmoid(0.5 * logit(p))
    return p, y


def _ece(p, y, n_bins=10):
    return calibration_errors(p, y, n_bins=n_bins, strategy="uniform")[0]


# --------------------------------------------------------------------------- a store built row by row


def _insert(con, table: str, df: pd.DataFrame) -> None:
    con.register("_rows", df)
    try:
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _rows")  # noqa: S608 - fixed names
    finally:
        con.unregister("_rows")


def build_store(subs: pd.DataFrame, answers: pd.DataFrame, questions: pd.DataFrame | None = None):
    """An in-memory store: ``subs`` has id, model, at, label; ``answers`` has id and answer columns."""
    con = connect(":memory:")
    n = len(subs)
    _insert(con, "checks", pd.DataFrame({
        "check_id": subs["id"], "run_id": subs["id"], "process": "proc", "version": "1",
        "step": "s1", "attempt": 1, "verdict": "pass", "advisory": True, "model": subs["model"],
        "checked_at": subs["at"], "recorded_in": "steps.check", "truncated": False,
        "n_questions": answers["question_id"].nunique(),
    }))  # fmt: skip
    labeled = subs[subs["label"].notna()]
    _insert(con, "decisions", pd.DataFrame({
        "decision_id": "d" + labeled["id"], "run_id": labeled["id"], "process": "proc",
        "step": "s1", "attempt": 1,
        "decision": np.where(labeled["label"].astype(bool), "approved", "rejected"),
        "decided_by": "ana", "decided_at": labeled["at"] + pd.Timedelta("1h"), "source": "table",
    }))  # fmt: skip
    ans = answers.rename(columns={"id": "check_id"}).copy()
    ans["result"] = "pass"
    _insert(con, "answers", ans)
    if questions is not None:
        _insert(con, "questions", questions)
    assert n == con.execute("SELECT count(*) FROM checks").fetchone()[0]
    return con


def three_questions(
    n: int, rng: np.random.Generator, *, models=("m1",)
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Submissions with one yes/no, one choice and one rubric question, labels known."""
    ids = np.array([f"r{i}" for i in range(n)], dtype=object)
    p, label = overconfident(n, rng)
    model = np.array(models, dtype=object)[np.arange(n) % len(models)]
    at = T0 + pd.to_timedelta(np.arange(n) * 2, unit="h")
    subs = pd.DataFrame({"id": ids, "model": model, "at": at, "label": label})
    names = np.where(label, rng.choice(["states", "hedges"], n, p=[0.85, 0.15]),
                     rng.choice(["states", "hedges", "unclear"], n, p=[0.2, 0.5, 0.3]))  # fmt: skip
    level = np.clip(label.astype(int) * 2 + rng.integers(-1, 2, n), 0, 2)
    conf = rng.uniform(0.55, 1.0, n)
    answers = pd.concat([
        pd.DataFrame({"id": ids, "position": 0, "question_id": "q-yes", "ask": "Is it right?",
                      "kind": "yes_no", "p": p}),
        pd.DataFrame({"id": ids, "position": 1, "question_id": "q-choice", "ask": "What does it do?",
                      "kind": "choice", "name": names, "confidence": conf}),
        pd.DataFrame({"id": ids, "position": 2, "question_id": "q-rubric", "ask": "How complete?",
                      "kind": "rubric", "level": level, "confidence": conf[::-1].copy()}),
    ])  # fmt: skip
    return subs, answers


# --------------------------------------------------------------------------- against scikit-learn


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("n_bins", [5, 10, 13])
def test_bins_equal_sklearn_calibration_curve(strategy, n_bins):
    rng = np.random.default_rng(n_bins)
    p = rng.beta(2, 1, 500)
    p[:20] = np.round(p[:20], 1)  # values on the edges go to the lower bin, as in sklearn
    y = rng.random(500) < p
    prob_true, prob_pred = calibration_curve(y, p, n_bins=n_bins, strategy=strategy)
    bins = reliability_bins(p, y, n_bins=n_bins, strategy=strategy)
    seen = bins[bins["n"] > 0]
    np.testing.assert_allclose(seen["observed"], prob_true, rtol=1e-12)
    np.testing.assert_allclose(seen["mean_predicted"], prob_pred, rtol=1e-12)
    assert seen["n"].sum() == 500
    # ECE is the count-weighted gap over the same bins.
    ece, mce = calibration_errors(p, y, n_bins=n_bins, strategy=strategy)
    gaps = np.abs(prob_true - prob_pred)
    assert ece == pytest.approx(np.sum(seen["n"].to_numpy() * gaps) / 500, rel=1e-12)
    assert mce == pytest.approx(gaps.max(), rel=1e-12)


def test_scores_equal_sklearn():
    rng = np.random.default_rng(3)
    p, y = overconfident(800, rng)
    p[:5] = [0.0, 1.0, 1.0, 0.0, 1.0]  # exact 0 and 1 exercise the clipping
    curve = reliability_curve(p, y, n_boot=0)
    assert curve.brier == pytest.approx(brier_score_loss(y, p), rel=1e-12)
    assert curve.log_loss == pytest.approx(sk_log_loss(y, y_proba=p, labels=[0, 1]), rel=1e-10)
    assert curve.auroc == pytest.approx(roc_auc_score(y, p), rel=1e-12)
    assert curve.auroc_note is None


def test_bin_intervals_are_wilson():
    rng = np.random.default_rng(4)
    p, y = overconfident(300, rng)
    bins = reliability_bins(p, y, n_bins=8)
    seen = bins[bins["n"] > 0]
    lo, hi = proportion_confint(seen["accepted"], seen["n"], alpha=0.05, method="wilson")
    np.testing.assert_allclose(seen["ci_low"], lo, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(seen["ci_high"], hi, rtol=1e-9, atol=1e-12)
    assert (seen["ci_low"] <= seen["observed"]).all() and (
        seen["observed"] <= seen["ci_high"]
    ).all()


def test_holm_matches_statsmodels():
    rates = category_rates(
        np.repeat([0, 1, 2, 3], 60),
        np.concatenate([np.r_[np.ones(30), np.zeros(30)], np.r_[np.ones(50), np.zeros(10)],
                        np.r_[np.ones(20), np.zeros(40)], np.r_[np.ones(45), np.zeros(15)]]),
    )  # fmt: skip
    table = non_monotone_levels(rates)
    expected = multipletests(table["p_value"], method="holm")[1]
    np.testing.assert_allclose(table["p_adjusted"], expected, rtol=1e-12)


# --------------------------------------------------------------------------- known truth by simulation


def test_overconfident_evaluator_is_detected_and_recalibrated():
    rng = np.random.default_rng(7)
    p, y = overconfident(4000, rng)
    curve = reliability_curve(p, y, n_bins=10, n_boot=200)
    top = curve.bins.iloc[-1]
    bottom = curve.bins.iloc[0]
    # Over-confident: below the diagonal at the top, above it at the bottom, significantly.
    assert top["ci_high"] < top["mean_predicted"]
    assert bottom["ci_low"] > bottom["mean_predicted"]
    assert curve.ece_ci[0] <= curve.ece <= curve.ece_ci[1]
    assert curve.ece > 0.05

    recal = fit_recalibrator(p, y)
    assert recal.method in ("isotonic", "sigmoid")
    assert recal.cv.log_loss[recal.method] == min(recal.cv.log_loss.values())
    assert recal.cv.ece_after < recal.cv.ece_before
    assert recal.cv.brier_after < recal.cv.brier_before
    # "The evaluator said 0.9" really means sigmoid(0.5 * logit(0.9)) = 0.75.
    assert recal.predict(0.9) == pytest.approx(sigmoid(0.5 * logit(0.9)), abs=0.05)

    # Measured on fresh held-out data from the same evaluator, not on the fitting sample.
    p_new, y_new = overconfident(4000, np.random.default_rng(8))
    before, after = _ece(p_new, y_new), _ece(recal.predict(p_new), y_new)
    assert after < before / 2
    truth = sigmoid(0.5 * logit(p_new))
    assert np.mean(np.abs(recal.predict(p_new) - truth)) < np.mean(np.abs(p_new - truth)) / 2


@pytest.mark.parametrize("method", ["isotonic", "sigmoid"])
def test_recalibration_maps_are_monotone(method):
    rng = np.random.default_rng(11)
    p, y = overconfident(600, rng)
    recal = fit_recalibrator(p, y, method=method)
    grid = np.linspace(0, 1, 501)
    out = recal.predict(grid)
    assert recal.method == method
    assert np.all(np.diff(out) >= -1e-12)
    assert out.min() >= 0 and out.max() <= 1
    assert recal.predict(np.array([[0.2, 0.9]])).shape == (1, 2)
    assert np.isnan(recal.predict([np.nan, 0.5])[0])


@pytest.mark.parametrize("n", [12, 600])
def test_the_sigmoid_map_is_scikit_learns_platt_fit(n):
    """Platt scaling solved by Newton steps lands on scikit-learn's LogisticRegression optimum
    (default C = 1, run to a tight tolerance), weighted and separable cases included."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(n)
    p, y = overconfident(n, rng)
    recal = fit_recalibrator(p, y, method="sigmoid")
    x = recalibration._logit(p)[:, None]
    ref = LogisticRegression(tol=1e-12, max_iter=10_000).fit(x, y.astype(int))
    grid = np.linspace(0.01, 0.99, 25)
    want = ref.predict_proba(recalibration._logit(grid)[:, None])[:, 1]
    np.testing.assert_allclose(recal.predict(grid), want, atol=1e-6)
    w = rng.integers(1, 5, n).astype(float)
    slope, intercept = recalibration._fit("sigmoid", p, y, w)
    ref = LogisticRegression(tol=1e-12, max_iter=10_000).fit(x, y.astype(int), sample_weight=w)
    assert (slope, intercept) == pytest.approx((ref.coef_[0, 0], ref.intercept_[0]), abs=1e-5)
    separable = np.r_[np.zeros(n // 2), np.ones(n - n // 2)]
    slope, intercept = recalibration._fit("sigmoid", np.sort(p), separable)
    assert np.isfinite([slope, intercept]).all() and slope > 0


def test_anti_informative_numbers_give_a_flat_sigmoid_map():
    rng = np.random.default_rng(12)
    p = rng.uniform(size=400)
    y = rng.random(400) < 1 - p  # the number points the wrong way
    recal = fit_recalibrator(p, y, method="sigmoid")
    out = recal.predict(np.linspace(0, 1, 11))
    assert np.ptp(out) < 1e-12
    assert out[0] == pytest.approx(y.mean(), abs=1e-6)


def test_few_labels_use_fewer_folds():
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99])
    y = np.array([0, 0, 1, 1, 1, 1, 1, 0, 1, 1])
    recal = fit_recalibrator(p, y)
    assert recal.cv.n_splits == 3  # three not-acceptable labels: at most 3 stratified folds
    assert recal.too_few


# --------------------------------------------------------------------------- degenerate inputs


def test_all_answers_one():
    y = np.r_[np.ones(30), np.zeros(10)]
    p = np.ones(40)
    for strategy in ("uniform", "quantile"):
        curve = reliability_curve(p, y, strategy=strategy, n_boot=100)
        seen = curve.bins[curve.bins["n"] > 0]
        assert len(seen) == 1
        assert seen["mean_predicted"].iloc[0] == 1.0
        assert seen["observed"].iloc[0] == 0.75
        assert curve.ece == pytest.approx(0.25) and curve.mce == pytest.approx(0.25)
        prob_true, prob_pred = calibration_curve(y, p, n_bins=10, strategy=strategy)
        np.testing.assert_allclose(seen["observed"], prob_true)
        assert curve.log_loss == pytest.approx(sk_log_loss(y, y_proba=p, labels=[0, 1]), rel=1e-10)
        assert curve.auroc == 0.5  # a constant score cannot rank
    recal = fit_recalibrator(p, y)
    assert recal.fitted
    assert recal.predict(1.0) == pytest.approx(0.75, abs=0.02)


def test_a_bin_with_no_data():
    rng = np.random.default_rng(5)
    p = np.r_[rng.uniform(0, 0.3, 50), rng.uniform(0.7, 1, 50)]
    y = rng.random(100) < p
    curve = reliability_curve(p, y, n_bins=10, n_boot=50)
    empty = curve.bins[curve.bins["n"] == 0]
    assert list(empty.index) == [3, 4, 5, 6]
    assert empty[["mean_predicted", "observed", "ci_low", "ci_high"]].isna().all().all()
    records = curve.bins_records()
    assert records[4] == {"lo": 0.4, "hi": 0.5, "mean_predicted": None, "observed": None,
                          "n": 0, "ci": [None, None]}  # fmt: skip
    json.dumps(curve.to_dict(), allow_nan=False)
    prob_true, _ = calibration_curve(y, p, n_bins=10)
    assert len(prob_true) == 6


def test_one_class_only():
    p = np.linspace(0.5, 1, 25)
    curve = reliability_curve(p, np.ones(25), n_boot=50)
    assert np.isnan(curve.auroc) and "only acceptable" in curve.auroc_note
    recal = fit_recalibrator(p, np.ones(25))
    assert recal.method == "none" and not recal.fitted and "two of each" in recal.reason
    np.testing.assert_array_equal(recal.predict(p), p)  # face value, said so by method "none"
    assert recal.to_dict()["ece_after"] is None


def test_no_data():
    curve = reliability_curve([], [], n_boot=10)
    assert (
        curve.n == 0 and curve.too_few and np.isnan(curve.ece) and curve.auroc_note == "no labels"
    )
    assert fit_recalibrator([], []).reason == "no labels"


def test_choice_with_a_single_answer_seen():
    rng = np.random.default_rng(6)
    names = np.array(["states"] * 40, dtype=object)
    y = rng.random(40) < 0.8
    res = choice_calibration(names, rng.uniform(0.6, 1, 40), y, all_names=["states", "hedges"])
    rates = res["rates"]
    assert rates["answer"].tolist() == ["states", "hedges"]
    assert rates["n"].tolist() == [40, 0] and np.isnan(rates["rate"].iloc[1])
    assert res["pass_names"] == ("states",) and res["pass_source"] == "learnt"
    assert res["curve"].n == 40
    # Every answer passes, so the call is right exactly when the submission was acceptable.
    assert res["curve"].n_positive == int(y.sum())
    lo, hi = proportion_confint(int(y.sum()), 40, method="wilson")
    assert rates["ci_low"].iloc[0] == pytest.approx(lo) and rates["ci_high"].iloc[
        0
    ] == pytest.approx(hi)


def test_choice_pass_list_from_the_process_file_is_kept():
    names = np.array(["a"] * 30 + ["b"] * 30, dtype=object)
    y = np.r_[np.zeros(30), np.ones(30)]  # "a" is never accepted, yet the file says it passes
    res = choice_calibration(names, np.full(60, 0.9), y, pass_names=["a"])
    assert res["pass_source"] == "process file" and res["pass_names"] == ("a",)
    assert res["curve"].n_positive == 0  # every call was wrong
    learnt = choice_calibration(names, np.full(60, 0.9), y)
    assert learnt["pass_names"] == ("b",) and learnt["curve"].n_positive == 60


def test_fewer_than_twenty_labels_are_marked():
    rng = np.random.default_rng(9)
    subs, answers = three_questions(12, rng)
    results = calibrate_answers(_labeled_answers(subs, answers), n_boot=50)
    assert len(results) == 3
    for q in results:
        assert q.too_few and q.to_dict()["too_few"]
        fig = question_figure(q)
        texts = [t.get_text() for ax in fig.axes for t in ax.texts]
        assert any("too few labels" in t for t in texts)
    fig = step_figure(results)
    assert sum("too few labels" in t.get_text() for ax in fig.axes for t in ax.texts) == 3


# --------------------------------------------------------------------------- rubric levels


def test_non_monotone_level_is_flagged():
    level = np.repeat([0, 1, 2], 100)
    y = np.r_[np.zeros(80), np.ones(20), np.ones(90), np.zeros(10), np.ones(30), np.zeros(70)]
    res = rubric_calibration(level, np.full(300, 0.9), y, pass_level=2, n_boot=0)
    flagged = res["non_monotone"][res["non_monotone"]["flagged"]]
    assert flagged[["lower", "higher"]].values.tolist() == [[1, 2]]
    assert res["pass_source"] == "process file"


def test_monotone_levels_are_not_flagged():
    rng = np.random.default_rng(10)
    level = rng.integers(0, 4, 400)
    y = rng.random(400) < np.array([0.1, 0.4, 0.7, 0.9])[level]
    res = rubric_calibration(level, rng.uniform(0.5, 1, 400), y, n_levels=5, n_boot=0)
    assert not res["non_monotone"]["flagged"].any()
    assert res["rates"]["answer"].tolist() == [0, 1, 2, 3, 4]  # level 4 never seen, still listed
    assert res["pass_level"] == 2 and res["pass_source"] == "learnt"


def test_learn_pass_level_maximises_agreement():
    rng = np.random.default_rng(13)
    level = rng.integers(0, 5, 300)
    y = rng.random(300) < np.array([0.05, 0.2, 0.45, 0.8, 0.95])[level]
    best = learn_pass_level(level, y)
    agree = [np.mean((level >= L) == y) for L in range(6)]
    assert agree[best] == max(agree)


# --------------------------------------------------------------------------- groups, from the store


def _labeled_answers(subs, answers, questions=None, filters=None):
    con = build_store(subs, answers, questions)
    try:
        from calibrate.dataset import answers as read_answers

        return read_answers(con, filters, labeled_only=True)
    finally:
        con.close()


def test_models_are_never_pooled_and_weeks_split():
    rng = np.random.default_rng(14)
    subs, answers = three_questions(120, rng, models=("m1", "m2"))
    label = subs["label"].astype("boolean")
    label[:10] = pd.NA  # unlabeled submissions are left out
    subs["label"] = label
    df = _labeled_answers(subs, answers)
    results = calibrate_answers(df, n_boot=20)
    assert [(q.question_id, q.model) for q in results] == [
        ("q-yes", "m1"), ("q-yes", "m2"), ("q-choice", "m1"), ("q-choice", "m2"),
        ("q-rubric", "m1"), ("q-rubric", "m2"),
    ]  # fmt: skip
    assert sum(q.n for q in results if q.question_id == "q-yes") == 110
    by_week = calibrate_answers(df, by=["week"], n_boot=0)
    weeks = {q.week for q in by_week}
    assert weeks == {"2026-10-05", "2026-10-12"}  # 240 hours from a Monday
    assert all(q.week in weeks for q in by_week) and len(by_week) == 12
    assert sum(q.n for q in by_week) == 3 * 110
    maps = recalibrators(results)
    assert maps[("q-yes", "m2", None)] is results[1].recalibrator


def test_pass_lists_from_the_process_file(tmp_path):
    rng = np.random.default_rng(15)
    subs, answers = three_questions(80, rng)
    questions = pd.DataFrame({
        "question_id": ["q-choice", "q-rubric"], "process": "proc", "process_version": "1",
        "step": "s1", "position": [1, 2], "ask": ["What does it do?", "How complete?"],
        "kind": ["choice", "rubric"], "pass_names": [["states", "unclear"], None],
        "pass_level": [None, 1], "one_of": [json.dumps({"states": "s", "hedges": "h", "unclear": "u",
                                                         "other": "o"}), None],
        "levels": [None, ["none", "some", "all"]],
    })  # fmt: skip
    df = _labeled_answers(subs, answers, questions)
    res = {q.question_id: q for q in calibrate_answers(df, n_boot=0)}
    choice, rubric = res["q-choice"], res["q-rubric"]
    assert choice.pass_source == "process file" and choice.pass_names == ("states", "unclear")
    assert choice.rates["answer"].tolist()[:4] == ["states", "hedges", "unclear", "other"]
    assert rubric.pass_source == "process file" and rubric.pass_level == 1
    assert rubric.level_texts == ("none", "some", "all")
    assert res["q-yes"].pass_source is None
    d = choice.to_dict()
    assert d["pass_names"] == ["states", "unclear"] and d["pass_source"] == "process file"
    assert {a["name"] for a in d["answers"] if a["passes"]} == {"states", "unclear"}
    json.dumps([q.to_dict() for q in res.values()], allow_nan=False)


def test_calibrate_store_applies_filters():
    rng = np.random.default_rng(16)
    subs, answers = three_questions(60, rng, models=("m1", "m2"))
    con = build_store(subs, answers)
    try:
        results = calibrate_store(con, Filters(model="m2"), n_boot=0)
    finally:
        con.close()
    assert {q.model for q in results} == {"m2"} and all(q.n == 30 for q in results)


def test_choice_map_is_fit_on_passing_answers():
    rng = np.random.default_rng(17)
    subs, answers = three_questions(200, rng)
    q = {q.question_id: q for q in calibrate_answers(_labeled_answers(subs, answers), n_boot=0)}
    choice = q["q-choice"]
    n_passing = int(choice.rates.loc[choice.rates["passes"], "n"].sum())
    assert choice.recalibrator.n == n_passing < choice.n


def test_bad_options_name_the_allowed_values():
    with pytest.raises(UsageError, match="uniform, quantile"):
        bin_edges([0.5], strategy="kmeans")
    with pytest.raises(UsageError, match="model, week"):
        calibrate_answers(pd.DataFrame(columns=["label"]), by=["approver"])
    with pytest.raises(UsageError, match="auto, isotonic, sigmoid"):
        fit_recalibrator([0.5], [1], method="beta")
    with pytest.raises(ValueError, match="outside"):
        reliability_bins([1.2], [1])


def test_bootstrap_interval_is_reproducible():
    rng = np.random.default_rng(18)
    p, y = overconfident(300, rng)
    a = reliability_curve(p, y, n_boot=300, random_state=1).ece_ci
    b = reliability_curve(p, y, n_boot=300, random_state=1).ece_ci
    assert a == b and a[0] < a[1]


# --------------------------------------------------------------------------- figures


def test_display_draws_on_given_or_new_axes():
    rng = np.random.default_rng(19)
    p, y = overconfident(200, rng)
    curve = reliability_curve(p, y, n_boot=0)
    recal = fit_recalibrator(p, y)
    assert curve.plot(recalibrator=recal) is curve
    disp = curve.display_
    assert disp.figure_ is disp.ax_.figure and disp.hist_ax_ is not None
    labels = [line.get_label() for line in disp.ax_.get_lines()]
    assert "perfectly calibrated" in labels and any("recalibration map" in s for s in labels)
    heights = [patch.get_height() for patch in disp.hist_ax_.patches]
    assert heights == curve.bins["n"].tolist()

    from matplotlib.figure import Figure

    ax = Figure().add_subplot()
    out = ReliabilityDisplay.from_curve(curve).plot(ax=ax)
    assert out.ax_ is ax and out.hist_ax_ is None


def test_untrusted_text_is_made_safe():
    assert safe_text("pay $5 or $6") == r"pay \$5 or \$6"
    assert "\x1b" not in safe_text("a\x1b[2Jb")
    for text in ("../../etc/passwd", "CON", "", "a/b\\c:d*e?f", "\u202eevil", "x" * 500):
        stem = figure_stem(text, "k")
        assert "/" not in stem and "\\" not in stem and not stem.startswith(".")
        assert len(stem) <= 51 and stem.isascii()
    assert slugify("") == "question"
    assert figure_stem("Same?", "q1") != figure_stem("Same?", "q2")


# --------------------------------------------------------------------------- few distinct values


def rounded(n: int, rng: np.random.Generator, decimals: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """An over-confident evaluator whose probabilities are given to ``decimals`` places."""
    p, y = overconfident(n, rng)
    return np.round(p, decimals), y


def test_distinct_pairs_rebuild_the_rows():
    rng = np.random.default_rng(21)
    p, y = rounded(3000, rng)
    d = calibration.Distinct.of(p, y.astype(float))
    assert d.compact and d.counts.sum() == p.size and d.size <= 2 * 101
    np.testing.assert_array_equal(d.p[d.row], p)
    np.testing.assert_array_equal(d.y[d.row], y)
    assert len(set(zip(d.p.tolist(), d.y.tolist(), strict=True))) == d.size


def test_counts_bootstrap_has_the_row_bootstrap_distribution(monkeypatch):
    # Drawing the counts of distinct (p, y) pairs is the row bootstrap in another form:
    # with many resamples both give the same interval up to Monte-Carlo noise.
    rng = np.random.default_rng(22)
    p, y = rounded(4000, rng)
    edges = bin_edges(p)
    compact = bootstrap_ece_interval(p, y, edges=edges, n_boot=4000, random_state=3)
    monkeypatch.setattr(calibration_scores, "COMPACT_SHARE", 0.0)
    rows = bootstrap_ece_interval(p, y, edges=edges, n_boot=4000, random_state=4)
    width = rows[1] - rows[0]
    assert width > 0
    assert abs(compact[0] - rows[0]) < 0.1 * width
    assert abs(compact[1] - rows[1]) < 0.1 * width


def test_counts_bootstrap_covers_the_ece():
    rng = np.random.default_rng(23)
    p, y = rounded(2000, rng)
    ece = calibration_errors(p, y)[0]
    low, high = bootstrap_ece_interval(p, y, edges=bin_edges(p), n_boot=500)
    assert low < ece <= high


def test_recalibrator_on_distinct_pairs_equals_the_row_fit(monkeypatch):
    rng = np.random.default_rng(24)
    p, y = rounded(3000, rng)
    fits = {}
    for share in (calibration_scores.COMPACT_SHARE, 0.0):
        monkeypatch.setattr(calibration_scores, "COMPACT_SHARE", share)
        fits[share] = {m: fit_recalibrator(p, y, method=m) for m in ("isotonic", "sigmoid")}
    compact, rows = fits[calibration_scores.COMPACT_SHARE], fits[0.0]
    grid = np.linspace(0, 1, 101)
    # Isotonic regression merges equal x with summed weights: identical to the last bit.
    np.testing.assert_array_equal(compact["isotonic"].predict(grid), rows["isotonic"].predict(grid))
    assert compact["isotonic"].cv == rows["isotonic"].cv
    # The logistic fit minimises the same weighted sum, added in another order.
    np.testing.assert_allclose(compact["sigmoid"].model, rows["sigmoid"].model, rtol=1e-9)
    assert compact["sigmoid"].cv.log_loss["sigmoid"] == pytest.approx(
        rows["sigmoid"].cv.log_loss["sigmoid"], rel=1e-12
    )


def test_calibrate_store_equals_calibrate_answers_on_the_whole_view():
    rng = np.random.default_rng(25)
    subs, answers = three_questions(400, rng, models=("m1", "m2"))
    answers = answers.reset_index(drop=True)
    # Few distinct values, so that the compact paths run too.
    answers["p"] = np.round(answers["p"], 1)
    answers["confidence"] = np.round(answers["confidence"], 1)
    con = build_store(subs, answers)
    try:
        from calibrate.dataset import answers as read_answers

        whole = calibrate_answers(read_answers(con, labeled_only=True), n_boot=50)
        lean = calibrate_store(con, n_boot=50)
    finally:
        con.close()
    assert [q.to_dict() for q in lean] == [q.to_dict() for q in whole]


def _population_ece(f, a: float, b: float) -> float:
    """The ECE over 10 uniform bins of an evaluator with P(y | p) = f(p), p ~ Beta(a, b)."""
    from scipy import integrate
    from scipy import stats as sp

    def gap(lo: float, hi: float) -> float:
        return integrate.quad(lambda t: (f(t) - t) * sp.beta.pdf(t, a, b), lo, hi)[0]

    return sum(abs(gap(k / 10, (k + 1) / 10)) for k in range(10))


def _ece_intervals(f, n: int, runs: int, seed: int) -> list[tuple[float, float]]:
    rng = np.random.default_rng(seed)
    out = []
    for r in range(runs):
        p = rng.beta(2, 2, n)
        y = (rng.random(n) < f(p)).astype(float)
        out.append(
            bootstrap_ece_interval(p, y, edges=np.linspace(0, 1, 11), n_boot=300, random_state=r)
        )
    return out


def test_the_ece_interval_covers_the_population_ece():
    # Known truth: P(acceptable | p) = p^1.5, p ~ Beta(2, 2): a population ECE of 0.119.
    true = _population_ece(lambda t: t**1.5, 2, 2)
    assert 0.11 < true < 0.13
    intervals = _ece_intervals(lambda t: t**1.5, 1000, 60, seed=31)
    coverage = np.mean([lo <= true <= hi for lo, hi in intervals])
    assert coverage >= 0.85


def test_the_ece_interval_reaches_zero_for_a_calibrated_evaluator():
    # The ECE is biased upwards; uncorrected percentiles never reached 0 (found by the review).
    intervals = _ece_intervals(lambda t: t, 500, 40, seed=32)
    assert np.mean([lo == 0.0 for lo, _ in intervals]) >= 0.35


def test_step_figure_says_what_each_line_is():
    """The report's small multiples carry one legend naming the recalibration map (issue 18)."""
    rng = np.random.default_rng(21)
    subs, answers = three_questions(300, rng)
    results = calibrate_answers(_labeled_answers(subs, answers), n_boot=0)
    fig = step_figure(results)
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert "perfectly calibrated" in labels
    assert any(label.startswith("recalibration map") for label in labels)


def _switched_answers(rng, *, n_review=300, n_audit=200, audit_p=(0.2, 0.8)):
    """Reviews of every verdict, then audit-draw labels at ``audit_p`` (one per stratum)."""
    n = n_review + n_audit
    p = np.r_[rng.uniform(0, 1, n_review), rng.uniform(0.9, 1, n_audit)]
    label = rng.random(n) < p
    after = np.r_[np.zeros(n_review, bool), np.ones(n_audit, bool)]
    strata = np.asarray(audit_p, dtype=float)[np.arange(n_audit) % len(audit_p)]
    return pd.DataFrame({
        "process": "proc", "step": "s", "question_id": "q1", "ask": "Is it right?",
        "kind": "yes_no", "model": "m", "position": 0, "p": p, "label": label,
        "advisory": ~after, "audited": after,
        "inclusion_p": np.r_[np.full(n_review, np.nan), strata],
    })  # fmt: skip


def test_audit_draw_labels_are_left_out_of_the_curves_and_counted():
    # A stratified draw among the enforced check's passes: unweighted beside the reviews it
    # bent the curve towards the draw. By default the curves read the reviews alone.
    df = _switched_answers(np.random.default_rng(5))
    (q,) = calibrate_answers(df, n_boot=0)
    (reviews,) = calibrate_answers(df[df["advisory"]], n_boot=0)
    assert (q.n, q.n_audits, q.left_out, q.selected_sample) == (300, 0, {"audits": 200}, False)
    assert q.curve.ece == reviews.curve.ece and q.curve.auroc == reviews.curve.auroc
    rec = q.to_dict()
    assert rec["left_out"] == {"audits": 200} and rec["n_audits"] == 0
    # --with-escalations: every label kept, marked as a sample the check selected.
    (kept,) = calibrate_answers(df, n_boot=0, after_switch="keep")
    assert (kept.n, kept.n_audits, kept.selected_sample) == (500, 200, True)


def test_audit_labels_are_read_only_when_every_label_was_seen_alike():
    df = _switched_answers(np.random.default_rng(6))
    with pytest.raises(UsageError, match=r"different probabilities or frames \(1 for 300 advisory"):
        calibrate_answers(df, n_boot=0, after_switch="audits")
    # Outside review: reviews beside an audit at probability 1 are refused too (the draw covers
    # only the enforced check's passes; the other verdicts had probability 0).
    every = _switched_answers(np.random.default_rng(6), audit_p=(1.0,))
    with pytest.raises(UsageError, match="frames"):
        calibrate_answers(every, n_boot=0, after_switch="audits")
    # The audits of one uniform draw alone weigh alike: Horvitz-Thompson weights cancel.
    uniform = _switched_answers(np.random.default_rng(6), audit_p=(0.3,))
    (q,) = calibrate_answers(uniform[~uniform["advisory"]], n_boot=0, after_switch="audits")
    assert (q.n, q.n_audits, q.left_out) == (200, 200, {"audits": 0})
    with pytest.raises(UsageError, match="after_switch"):
        calibrate_answers(df, after_switch="weighted")
