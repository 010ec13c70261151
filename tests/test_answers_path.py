"""The answers path: several questions below ANSWERS_PATH_BELOW labels (docs/method.md).

A path ordered by the evaluator's own stated probabilities, never by a label,
tested on every label at ANSWERS_SHARE of delta beside the learned path.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from benchmarks import regimes
from calibrate.analysis import answers_path as ap
from calibrate.analysis import threshold_search
from calibrate.analysis import thresholds as th
from calibrate.analysis.paths import describe_config
from calibrate.profile import Kind


def _overconfident_three(n: int = 300, seed: int = 3) -> th.StepData:
    return regimes.draw("three", "overconfident", n, [7, seed]).step_data()


def test_predicted_acceptable_reads_the_stated_probabilities():
    data = _overconfident_three(150)
    got = ap.predicted_acceptable(data)
    assert got.shape == (data.n,) and ((got >= 0) & (got <= 1)).all()
    kinds = [q.kind for q in data.questions]
    assert kinds == [Kind.YES_NO, Kind.CHOICE, Kind.RUBRIC]
    # Row by row: the geometric mean of each question's stated probability of its pass state.
    i = int(np.flatnonzero(np.isfinite(data.confidence[1]) & np.isfinite(data.confidence[2]))[0])
    yes, choice, rubric = data.questions
    p = float(data.answer[0][i])
    c1, c2 = float(data.confidence[1][i]), float(data.confidence[2][i])
    s1 = c1 if data.answer[1][i] in choice.pass_names else 1 - c1
    s2 = c2 if float(data.answer[2][i]) >= rubric.pass_level else 1 - c2
    assert got[i] == pytest.approx((p * s1 * s2) ** (1 / 3))


def test_answers_path_never_reads_a_label():
    data = _overconfident_three()
    path = ap.answers_path(data, alpha=0.1, delta=0.03, beta=0.3, relearn_lists=True)
    shuffled = replace(data, acceptable=np.random.default_rng(0).permutation(data.acceptable))
    again = ap.answers_path(shuffled, alpha=0.1, delta=0.03, beta=0.3, relearn_lists=True)
    assert again.describe == path.describe and len(path.describe) > 1  # the same path, in order
    assert (again.n_pass == path.n_pass).all()  # the same decisions on every row ...
    assert (again.false_pass != path.false_pass).any()  # ... tested on other labels


def test_answers_path_certifies_on_every_label(monkeypatch):
    # Three questions from an overconfident judge at 300 labels: the answers order the submissions
    # as well as 150 labels do, and every one of the 300 labels tests them.
    data = _overconfident_three()
    res = th.find_thresholds(data, alpha=0.1, delta=0.1, beta=0.3, relearn_lists=True)
    assert res.status == "ok" and res.method == "answers_and_learned_paths"
    assert res.n_search == 0 and res.n_certify == data.n  # the answers path certified it
    assert set(res.candidates["path"]) == {0, 1}
    # Each path's walk marks its own choice; the suggestion is the answers path's.
    chosen = res.candidates[res.candidates["chosen"] & (res.candidates["path"] == 0)]
    assert list(chosen["thresholds"]) == [describe_config(res.suggested)]
    assert res.expected.n_pass / data.n > 0.8
    monkeypatch.setattr(
        threshold_search, "ANSWERS_PATH_BELOW", 0
    )  # the learned path alone, at the full delta
    alone = th.find_thresholds(_overconfident_three(), alpha=0.1, delta=0.1, beta=0.3,
                               relearn_lists=True)  # fmt: skip
    assert alone.method == "learned_path" and alone.n_search > 0
    # Ordered by the label model fitted on its 150 search labels over all 300 rows' answers, the
    # learned path alone certifies as much here (ordered by the 150 labels' own counts: < 60%).
    assert alone.status == "ok" and alone.expected.n_pass / data.n > 0.8


def test_learned_path_alone_from_the_bound():
    data = regimes.draw("three", "calibrated", threshold_search.ANSWERS_PATH_BELOW, 1).step_data()
    res = th.find_thresholds(data, alpha=0.15, delta=0.1, beta=0.3, relearn_lists=True)
    assert res.method == "learned_path" and "path" not in res.candidates
