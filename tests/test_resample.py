"""Resampled datasets for the labels-needed estimate: which searches get new labels, and the label model."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from sklearn.linear_model import LogisticRegression
from test_thresholds import RUBRIC, YesNoModel, step_data_of, three_questions, yes_no_data

from calibrate.analysis import resample as rs
from calibrate.analysis import thresholds as th


def _logistic_data(n: int = 400, seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4))
    y = rng.random(n) < 1 / (1 + np.exp(-(0.3 + x @ [1.0, -0.5, 0.0, 2.0])))
    return x, y.astype(float), rng.dirichlet(np.ones(n)) * n


def test_the_unpenalised_fit_is_statsmodels_weighted_logit():
    x, y, w = _logistic_data()
    coef, prob = rs.ridge_logistic(x, y, w, 0.0)
    ref = sm.GLM(y, sm.add_constant(x), family=sm.families.Binomial(), freq_weights=w).fit()
    np.testing.assert_allclose(coef, ref.params, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(prob, ref.fittedvalues, atol=1e-8)


def test_the_ridge_fit_is_scikit_learns():
    x, y, w = _logistic_data()
    _, prob = rs.ridge_logistic(x, y, w, 1.0 / rs.MODEL_C)
    ref = LogisticRegression(C=rs.MODEL_C, tol=1e-12, max_iter=10_000).fit(x, y, sample_weight=w)
    np.testing.assert_allclose(prob, ref.predict_proba(x)[:, 1], atol=1e-6)


def test_separable_labels_stay_finite():
    x = np.linspace(-1, 1, 50)[:, None]
    coef, prob = rs.ridge_logistic(x, (x[:, 0] > 0).astype(float), np.ones(50), 1.0)
    assert np.isfinite(coef).all() and ((prob > 0) & (prob < 1)).all()


@pytest.mark.parametrize(
    ("kind", "n", "method"),
    [
        ("yes_no", 400, "fixed_sequence"),
        ("rubric", 200, "fixed_paths"),
        ("rubric", 300, "fixed_and_learned_paths"),
        ("three", 200, "answers_and_learned_paths"),
    ],
)
def test_learns_alone_says_what_the_search_does(kind, n, method):
    rng = np.random.default_rng([5, n])
    if kind == "yes_no":
        data = yes_no_data(YesNoModel(), n, rng)
    else:
        three = three_questions(n, rng)
        data = three if kind == "three" else step_data_of(
            [RUBRIC], [three.answer[2]], [three.confidence[2]], three.acceptable
        )  # fmt: skip
    res = th.find_thresholds(data, alpha=0.1, delta=0.1, beta=0.3)
    assert res.method == method
    assert rs.learns_alone(data, n) == (method in ("learned_path", "answers_and_learned_paths"))


def test_a_learned_path_gets_new_labels_and_fixed_paths_keep_todays():
    rng = np.random.default_rng(11)
    data = three_questions(200, rng)
    row = {cid: k for k, cid in enumerate(data.check_id)}
    out = rs.resample(np.random.default_rng(1), data, 4000)
    src = np.array([row[c] for c in out.check_id])
    # Today's answers, copied ...
    np.testing.assert_array_equal(out.answer[0], data.answer[0][src])
    # ... with labels drawn anew: copies of one row disagree, as rows answered alike do.
    mixed = [np.unique(out.acceptable[src == k]).size == 2 for k in np.unique(src)]
    assert np.mean(mixed) > 0.2
    assert abs(out.acceptable.mean() - data.acceptable.mean()) < 0.1
    # One yes/no question: fixed paths, every label as it was.
    yn = yes_no_data(YesNoModel(), 200, rng)
    out = rs.resample(np.random.default_rng(1), yn, 4000)
    src = np.array([int(c) for c in out.check_id])
    np.testing.assert_array_equal(out.acceptable, yn.acceptable[src])


def test_the_label_model_follows_the_answers():
    data = three_questions(600, np.random.default_rng(2))
    prob = rs.label_model(data, np.full(data.n, 1 / data.n))
    # The answers separate the labels: the model ranks acceptable rows above the others.
    hi, lo = prob[data.acceptable], prob[~data.acceptable]
    assert (hi[:, None] > lo[None, :]).mean() > 0.85
    assert abs(prob.mean() - data.acceptable.mean()) < 0.01
    # One label class: the world's share.
    same = step_data_of(data.questions, data.answer, data.confidence, np.ones(data.n, bool))
    np.testing.assert_array_equal(rs.label_model(same, np.full(data.n, 1 / data.n)), 1.0)
