"""The label model fitted on a search part (answer_model.fitted_badness) and the path it orders."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from sklearn.linear_model import LogisticRegression

from benchmarks import regimes
from calibrate.analysis import answer_model, learned_path


def _three(n=600, seed=3):
    return regimes.draw("three", "calibrated", n, seed).step_data()


def test_fitted_badness_is_scikit_learns_logistic_regression_on_the_rows():
    data = _three()
    rows = np.arange(0, data.n, 3)
    bad = answer_model.fitted_badness(data, rows)
    x = answer_model.features(data)
    ref = LogisticRegression(C=answer_model.MODEL_C, tol=1e-12, max_iter=10_000)
    ref.fit(x[rows], ~data.acceptable[rows])
    np.testing.assert_allclose(bad, ref.predict_proba(x)[:, 1], rtol=1e-5, atol=1e-8)


def test_the_fitted_order_reads_no_certification_label():
    data = _three()
    kw = dict(alpha=0.1, delta=0.1, beta=0.3, relearn_lists=False, search_fraction=0.5, seed=0)
    path, search, cert = learned_path.fitted_path(data, **kw)
    # Every certification label flipped: the model, the candidates and their order are the same,
    # only the counts the tests read change.
    flipped = data.acceptable.copy()
    flipped[cert] = ~flipped[cert]
    other = replace(data, acceptable=flipped)
    # The split is stratified by label, so flipped labels would split otherwise: the same parts.
    other.cache[("split", 0.5, 0)] = (search, cert)
    bad = answer_model.fitted_badness(data, search)
    np.testing.assert_array_equal(answer_model.fitted_badness(other, search), bad)
    path2, search2, _ = learned_path.fitted_path(other, **kw)
    np.testing.assert_array_equal(search2, search)
    assert path2.describe == path.describe and len(path.describe) > 3
    np.testing.assert_array_equal(path2.n_pass, path.n_pass)
    assert not np.array_equal(path2.false_pass, path.false_pass)


def test_one_label_class_in_the_search_part_falls_back_to_the_labels_order():
    data = _three()
    rows = np.flatnonzero(data.acceptable)[:200]
    assert answer_model.fitted_badness(data, rows) is None
    good = replace(data, acceptable=np.ones(data.n, bool))
    kw = dict(alpha=0.1, delta=0.1, beta=0.3, relearn_lists=False, search_fraction=0.5, seed=0)
    fitted, _, _ = learned_path.fitted_path(good, **kw)
    joint, _, _ = learned_path.joint_path(replace(good), **kw)
    assert fitted.describe == joint.describe
