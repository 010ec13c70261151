"""Label-free paths for one rubric or one choice question: counts, the rule, the choice among paths."""

from __future__ import annotations

import numpy as np
import pytest

from calibrate.analysis import fixed_paths as fp
from calibrate.analysis import step_data as sd
from calibrate.analysis import threshold_search
from calibrate.analysis import thresholds as th
from calibrate.profile import Kind, Question, parse_check

RUBRIC = Question(
    "How complete is the screening?", Kind.RUBRIC, pass_level=2, confidence=0.8,
    levels=("Neither list.", "One list.", "Both lists, terms stated."),
)  # fmt: skip
CHOICE = Question(
    "What does the summary do?", Kind.CHOICE, pass_names=("states",), unsure_names=("unclear",),
    confidence=0.8, one_of={"states": "States it.", "hedges": "Hedges.", "unclear": "Cannot tell."},
)  # fmt: skip


def _data(q: Question, answer: np.ndarray, conf: np.ndarray, ok: np.ndarray, forced: np.ndarray):
    n = ok.size
    return th.StepData("p", "s", "m", [q], [True], np.arange(n).astype(str), ok, [answer], [conf],
                       forced)  # fmt: skip


def _rubric(n: int, rng: np.random.Generator, *, missing: bool = True) -> th.StepData:
    ok = rng.random(n) < 0.7
    level = np.clip(np.round(np.where(ok, 1.6, 0.6) + rng.normal(0, 0.6, n)), 0, 2)
    conf = np.round(rng.beta(5, 1.5, n), 2)  # ties, as real confidences have
    forced = rng.random(n) < 0.05 if missing else np.zeros(n, bool)
    if missing:
        conf[rng.random(n) < 0.05] = np.nan
        level[forced] = np.nan
    return _data(RUBRIC, level, conf, ok, forced)


def _choice(n: int, rng: np.random.Generator) -> th.StepData:
    ok = rng.random(n) < 0.7
    names = np.where(ok, "states", rng.choice(["hedges", "unclear", "states"], n)).astype(object)
    names[rng.random(n) < 0.03] = None
    conf = np.round(rng.beta(5, 1.5, n), 2)
    return _data(CHOICE, names, conf, ok, np.zeros(n, bool))


@pytest.mark.parametrize("make", [_rubric, _choice])
def test_counts_are_the_rule_replayed(make):
    data = make(400, np.random.default_rng(3))
    paths = fp.fixed_paths(data, delta=0.1)
    # A choice: its lists, and the same pass list with "hedges" unsure (a check that never fails).
    assert len(paths) == (3 if data.questions[0].kind is Kind.RUBRIC else 2)
    for path in paths:
        assert path.delta == pytest.approx(0.1 / len(paths))
        assert (np.diff(path.n_pass) >= 0).all() and (np.diff(path.n_fail) >= 0).all()
        for i, config in enumerate(path.configs):
            r = sd.replay(config, data)
            got = (path.n_pass[i], path.false_pass[i], path.n_fail[i], path.false_fail[i])
            assert got == (r.n_pass, r.false_pass, r.n_fail, r.false_fail), config
            # A missing answer fails under check-1 whatever the lists say.
            assert path.never_fails[i] == (not sd.can_fail(config) and r.n_fail == 0)


def test_one_rubric_question_certifies_on_every_label():
    data = _rubric(1500, np.random.default_rng(5), missing=False)
    small = data.subset(np.arange(threshold_search.FIXED_ONLY_BELOW - 1))
    # Pass from level 1: about 21% false passes and 17% false fails in this model.
    res = th.find_thresholds(small, alpha=0.3, delta=0.1, beta=0.5)
    assert res.method == "fixed_paths" and (res.n_search, res.n_certify) == (0, small.n)
    assert res.status == "ok"
    (q,) = res.suggested
    assert q.levels == RUBRIC.levels and parse_check([q.to_check_item()]) == res.suggested
    # The suggestion is the certified candidate deciding the most over all the paths.
    cert = res.candidates[res.candidates["certified"]]
    chosen = res.candidates[res.candidates["chosen"]]
    decided = cert["n_pass"] + cert["n_fail"]
    assert (chosen["n_pass"] + chosen["n_fail"]).max() == decided.max()
    assert sorted(res.candidates["path"].unique()) == [0, 1, 2]
    # Each path was walked at its share of delta.
    assert res.candidates.groupby("path")["weight"].sum().max() <= 0.1 / 3 + 1e-12
    # With more labels a learned path joins at half of delta, the fixed ones share the other half.
    res = th.find_thresholds(data, alpha=0.25, delta=0.1, beta=0.3)
    assert res.method == "fixed_and_learned_paths" and res.status == "ok"
    weights = res.candidates.groupby("path")["weight"].sum()
    assert sorted(weights.index) == [0, 1, 2, 3]
    assert weights.iloc[:3].max() <= 0.05 / 3 + 1e-12 and weights.iloc[3] <= 0.05 + 1e-12
    learned = res.candidates["path"] == 3
    won = res.candidates.loc[res.candidates["chosen"], "path"].iloc[0]
    assert (res.n_search > 0) == (won == 3) and learned.any()


def test_choice_with_relearned_lists_keeps_the_given_lists_beside_the_learned_path():
    data = _choice(1200, np.random.default_rng(8))
    res = th.find_thresholds(data.subset(np.arange(600)), alpha=0.1, delta=0.1, beta=0.3)
    assert res.method == "fixed_and_learned_paths"
    # Relearned lists: the learned path (the last) runs at every size, beside the given lists
    # until LEARNED_ONLY_FROM labels, alone from there.
    for n in (150, 600):
        res = th.find_thresholds(data.subset(np.arange(n)), alpha=0.1, delta=0.1, beta=0.3,
                                 relearn_lists=True)  # fmt: skip
        assert res.method == "fixed_and_learned_paths" and res.candidates["path"].nunique() >= 2
    assert threshold_search.LEARNED_ONLY_FROM <= 1200
    res = th.find_thresholds(data, alpha=0.1, delta=0.1, beta=0.3, relearn_lists=True)
    assert res.method == "learned_path" and res.n_search > 0


def test_an_undeclared_choice_answer_fails_and_is_tested():
    # Every declared name passes or is unsure, yet the evaluator also answers a name outside
    # one_of, which fails under check-1: the fail side must be tested, not taken as empty.
    q = Question("Which?", Kind.CHOICE, pass_names=("good",), unsure_names=("meh",),
                 confidence=0.5, one_of={"good": "Good.", "meh": "Meh."})  # fmt: skip
    rng = np.random.default_rng(4)
    n = 200
    ok = rng.random(n) < 0.7
    names = np.where(rng.random(n) < 0.3, "other", np.where(ok, "good", "meh")).astype(object)
    data = _data(q, names, rng.uniform(0.6, 1.0, n), ok, np.zeros(n, bool))
    res = th.find_thresholds(data, alpha=0.15, delta=0.1, beta=0.1)
    if res.status == "ok":
        r = sd.replay(res.suggested, data)
        assert r.n_fail == 0 or res.certified["false_fail_upper"] == 0.1
        assert r.false_fail / max(r.n_fail, 1) <= 0.1 + 0.1  # 67 of 72 before the fix
    for path in fp.fixed_paths(data, delta=0.1):
        assert not path.never_fails[path.n_fail > 0].any()


def test_rubric_paths_stop_at_the_declared_levels():
    data = _rubric(300, np.random.default_rng(6), missing=False)
    data.answer[0][:5] = 3.0  # above the three declared levels
    paths = fp.fixed_paths(data, delta=0.1)
    assert len(paths) == len(RUBRIC.levels)
    for path in paths:
        assert parse_check([path.configs[-1][0].to_check_item()]) == path.configs[-1]


def test_a_path_that_can_test_nothing_gets_no_share_of_delta():
    # Level 2 passes: no answer reaches it with confidence, so its path has no testable candidate;
    # the other two split delta. Which paths are dropped is read from counts, never from labels.
    rng = np.random.default_rng(8)
    data = _rubric(300, rng, missing=False)
    data.answer[0][data.answer[0] == 2] = 1.0
    paths = fp.fixed_paths(data, delta=0.1, beta=0.3)
    assert [p.configs[0][0].pass_level for p in paths] == [0, 1]
    assert all(p.delta == pytest.approx(0.05) for p in paths)
    flipped = _data(
        RUBRIC, data.answer[0], data.confidence[0], ~data.acceptable, data.forced_unsure
    )
    again = fp.fixed_paths(flipped, delta=0.1, beta=0.3)
    assert [p.delta for p in again] == [p.delta for p in paths]
    # Eight labels: only the path that never fails (pass from level 0) could test anything at
    # some alpha (its fails need no test); it holds delta. Alpha plays no part (issue 18).
    few = _rubric(8, rng, missing=False)
    kept = fp.fixed_paths(few, delta=0.1, beta=0.3)
    assert [p.configs[0][0].pass_level for p in kept] == [0] and kept[0].delta == 0.1
    # Nothing passed anywhere: every path kept at its equal share (the status says why).
    none = _data(RUBRIC, few.answer[0], np.full(8, np.nan), few.acceptable, few.forced_unsure)
    kept = fp.fixed_paths(none, delta=0.1, beta=0.3)
    assert len(kept) == 3 and all(p.delta == pytest.approx(0.1 / 3) for p in kept)


def test_the_learned_path_offers_no_pass_level_past_the_declared_ones():
    # A pass level equal to the number of levels passes nothing and cannot be written in a process
    # file. "Fail everything confident" scores well where few submissions are acceptable; it is
    # no option of the search at all (before, only the rule "passes must be testable" kept it out).
    from calibrate.analysis.learned_path import joint_path

    rng = np.random.default_rng(9)
    ok = rng.random(600) < 0.1
    level = rng.integers(0, 3, 600).astype(float)
    data = _data(RUBRIC, level, np.round(rng.beta(5, 1.5, 600), 2), ok, np.zeros(600, bool))
    path, _, _ = joint_path(data, alpha=0.1, delta=0.1, beta=0.3, relearn_lists=False,
                            search_fraction=0.5, seed=0)  # fmt: skip
    for config in path.configs:
        assert config[0].pass_level < len(RUBRIC.levels)
        assert parse_check([config[0].to_check_item()]) == config


def _clean_joint_path(n_pass, n_fail, *, n_total):
    """A joint path whose candidates have no labeled error (all certified when testable)."""
    from calibrate.analysis.paths import Path

    k = len(n_pass)
    return Path(
        side="joint", tests=("pass", "fail"), n_pass=np.array(n_pass), false_pass=np.zeros(k, int),
        n_fail=np.array(n_fail), false_fail=np.zeros(k, int), never_fails=np.zeros(k, bool),
        describe=[f"c{i}" for i in range(k)], delta=0.1, n_total=n_total,
    )  # fmt: skip


def test_the_suggestion_saves_the_most_work_not_the_most_decisions():
    """Among certified candidates a fail counts half a pass: the work still comes back."""
    from calibrate.analysis.paths import FAIL_WORTH

    path = _clean_joint_path([60, 60, 90, 80], [10, 40, 12, 30], n_total=200)
    chosen, frame = path.run(alpha=0.1, beta=0.3)
    assert frame["certified"].all()
    assert FAIL_WORTH == 0.5
    # "d" decides the most (110), "c" saves the most work (90 + 6 = 96 against 80 + 15 = 95).
    assert chosen == 2 and frame["chosen"].tolist() == [False, False, True, False]


def test_a_useful_check_is_preferred_to_more_work_saved():
    """Among certified candidates those deciding min_decided alone come first (readiness reads it)."""
    from calibrate.analysis.paths import preferred

    path = _clean_joint_path([60, 80, 70, 90], [50, 25, 40, 8], n_total=200)
    # "d" saves the most work (94) but decides 98 of 200; "b" (92.5) decides 105, "c" (90) 110.
    chosen, frame = path.run(alpha=0.1, beta=0.3)
    assert frame["certified"].all() and chosen == 3
    assert path.run(alpha=0.1, beta=0.3, min_decided=0.5)[0] == 1
    # When no candidate decides that much, the most work saved wins as before.
    assert path.run(alpha=0.1, beta=0.3, min_decided=0.9)[0] == 3
    # Ties in work saved go to the most passes, then to the last (the loosest).
    assert preferred(np.array([10, 20, 20]), np.array([20, 0, 0]), 100) == 2


def test_a_fixed_paths_later_checkpoints_reach_its_loose_end(monkeypatch):
    """From SPREAD_FROM labels a fixed path's later share is spread along it, as a learned path's.

    A rubric whose confident mistakes sit at its top, 12,000 labels, alpha = 0.1: the last
    doubling mark of the level-2 path just missed (p 0.001003 at 0.001) and the seven looser
    candidates, at p ~ 1e-6, had no level; spread, the walk reaches them.
    """
    from benchmarks import regimes
    from calibrate.analysis import fallback_walk

    data = regimes.draw("rubric", "confident_errors", 12_000, [99, 12_000, 2]).step_data()
    kw = {"alpha": 0.1, "delta": 0.1, "beta": 0.3}
    spread = threshold_search.find_thresholds(data, **kw)
    paths = fp.fixed_paths(data, delta=0.05, beta=0.3)
    assert all(p.spread == fallback_walk.SPREAD for p in paths)
    fixed = spread.candidates[spread.candidates["path"] < len(paths)]
    assert spread.status == "ok" and fixed["certified"].sum() >= 7
    monkeypatch.setattr(fallback_walk, "SPREAD_FROM", 10**9)
    # At the doublings no fixed path certifies anything (the learned path beside them may).
    doubled = threshold_search.find_thresholds(data, **kw).candidates
    assert not doubled[doubled["path"] < len(paths)]["certified"].any()
