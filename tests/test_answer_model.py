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
    x = answer_model.features(data, rows)
    ref = LogisticRegression(C=answer_model.MODEL_C, tol=1e-12, max_iter=10_000)
    ref.fit(x[rows], ~data.acceptable[rows])
    np.testing.assert_allclose(bad, ref.predict_proba(x)[:, 1], rtol=1e-5, atol=1e-8)


def test_the_fitted_order_reads_nothing_of_the_certification_part():
    data = _three()
    kw = dict(alpha=0.1, delta=0.1, beta=0.3, relearn_lists=False, search_fraction=0.5, seed=0)
    path, search, cert = learned_path.joint_path(data, fitted=True, **kw)
    # Every certification label flipped and every certification answer taken from another
    # dataset: the model's predictions on the search part, the candidates and their order are
    # the same, only the counts the tests read change.
    flipped = data.acceptable.copy()
    flipped[cert] = ~flipped[cert]
    elsewhere = _three(seed=4)
    answer = [a.copy() for a in data.answer]
    confidence = [c.copy() for c in data.confidence]
    for a, c, a2, c2 in zip(answer, confidence, elsewhere.answer, elsewhere.confidence,
                            strict=True):  # fmt: skip
        a[cert], c[cert] = a2[cert], c2[cert]
    other = replace(data, acceptable=flipped, answer=answer, confidence=confidence)
    # The split is stratified by label, so flipped labels would split otherwise: the same parts.
    other.cache[("split", 0.5, 0)] = (search, cert)
    bad = answer_model.fitted_badness(data, search)
    np.testing.assert_allclose(answer_model.fitted_badness(other, search)[search], bad[search])
    path2, search2, _ = learned_path.joint_path(other, fitted=True, **kw)
    np.testing.assert_array_equal(search2, search)
    assert path2.describe == path.describe and len(path.describe) > 3
    assert not np.array_equal(path2.n_pass, path.n_pass)


def test_one_label_class_in_the_search_part_falls_back_to_the_labels_order():
    data = _three()
    rows = np.flatnonzero(data.acceptable)[:200]
    assert answer_model.fitted_badness(data, rows) is None
    few = np.r_[rows, np.flatnonzero(~data.acceptable)[: answer_model.MIN_CLASS - 1]]
    assert answer_model.fitted_badness(data, few) is None
    good = replace(data, acceptable=np.ones(data.n, bool))
    kw = dict(alpha=0.1, delta=0.1, beta=0.3, relearn_lists=False, search_fraction=0.5, seed=0)
    fitted, _, _ = learned_path.joint_path(good, fitted=True, **kw)
    joint, _, _ = learned_path.joint_path(replace(good), **kw)
    assert fitted.describe == joint.describe
