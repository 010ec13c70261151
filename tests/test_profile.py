"""Property tests of check-1's decision rule (calibrate/profile.py), boundaries included."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from calibrate.errors import ProcessFileError
from calibrate.profile import (
    FAIL,
    PASS,
    UNSURE,
    Kind,
    Limits,
    Question,
    decide,
    decide_choice,
    decide_rubric,
    decide_yes_no,
    parse_check,
    result_names,
    worst,
)

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
units = st.lists(unit, min_size=1, max_size=30)
NAMES = ["states", "hedges", "unclear", "other"]


def expected_yes_no(p: float, pass_p: float, fail_p: float | None) -> int:
    """check-1 §2, written out: p >= pass passes; with fail, p < fail fails, between is unsure."""
    if p >= pass_p:
        return PASS
    if fail_p is None:
        return FAIL
    return FAIL if p < fail_p else UNSURE


@given(p=units, pass_p=unit, fail_p=st.one_of(st.none(), unit))
def test_yes_no_matches_the_profile(p, pass_p, fail_p):
    assume(fail_p is None or fail_p <= pass_p)
    got = decide_yes_no(p, pass_p=pass_p, fail_p=fail_p)
    assert got.tolist() == [expected_yes_no(x, pass_p, fail_p) for x in p]


@given(pass_p=unit, fail_p=unit)
def test_yes_no_boundaries(pass_p, fail_p):
    assume(fail_p < pass_p)
    # p == pass passes; p == fail is unsure (fail <= p < pass); just below fail fails.
    below_fail = math.nextafter(fail_p, -math.inf)
    got = decide_yes_no([pass_p, fail_p, below_fail], pass_p=pass_p, fail_p=fail_p)
    assert got[0] == PASS
    assert got[1] == UNSURE
    if below_fail >= 0:
        assert got[2] == FAIL
    # Without fail, just below pass fails.
    below_pass = math.nextafter(pass_p, -math.inf)
    assert decide_yes_no([below_pass], pass_p=pass_p)[0] == (FAIL if below_pass < pass_p else PASS)


@given(
    names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=20),
    conf=st.lists(unit, min_size=20, max_size=20),
    pass_names=st.lists(st.sampled_from(NAMES[:3]), min_size=1, max_size=2, unique=True),
    min_confidence=st.one_of(st.none(), unit),
)
def test_choice_matches_the_profile(names, conf, pass_names, min_confidence):
    unsure_names = [n for n in NAMES[:3] if n not in pass_names][:1]
    conf = conf[: len(names)]
    got = decide_choice(
        names, conf, pass_names=pass_names, unsure_names=unsure_names, min_confidence=min_confidence
    )
    for name, c, code in zip(names, conf, got.tolist(), strict=True):
        if min_confidence is not None and c < min_confidence:
            assert code == UNSURE
        elif name in pass_names:
            assert code == PASS
        elif name in unsure_names:
            assert code == UNSURE
        else:
            assert code == FAIL  # any other answer fails


@given(c=unit)
def test_confidence_equal_to_threshold_is_not_unsure(c):
    assert decide_choice(["states"], [c], pass_names=["states"], min_confidence=c)[0] == PASS
    assert decide_rubric([2], [c], pass_level=2, min_confidence=c)[0] == PASS
    below = math.nextafter(c, -math.inf)
    if below >= 0 and below < c:
        assert (
            decide_choice(["states"], [below], pass_names=["states"], min_confidence=c)[0] == UNSURE
        )
        assert decide_rubric([2], [below], pass_level=2, min_confidence=c)[0] == UNSURE


@given(
    levels=st.lists(st.integers(min_value=0, max_value=9), min_size=1, max_size=20),
    conf=st.lists(unit, min_size=20, max_size=20),
    pass_level=st.integers(min_value=0, max_value=9),
    min_confidence=st.one_of(st.none(), unit),
)
def test_rubric_matches_the_profile(levels, conf, pass_level, min_confidence):
    conf = conf[: len(levels)]
    got = decide_rubric(levels, conf, pass_level=pass_level, min_confidence=min_confidence)
    for lv, c, code in zip(levels, conf, got.tolist(), strict=True):
        if min_confidence is not None and c < min_confidence:
            assert code == UNSURE
        else:
            assert code == (PASS if lv >= pass_level else FAIL)


def test_missing_confidence_is_below_any_threshold():
    got = decide_choice(
        ["states", "states"], [np.nan, 0.9], pass_names=["states"], min_confidence=0.5
    )
    assert got.tolist() == [UNSURE, PASS]
    got = decide_rubric([2, 2], [np.nan, 0.9], pass_level=1, min_confidence=0.0)
    assert got.tolist() == [UNSURE, PASS]


@given(
    st.lists(
        st.lists(st.sampled_from([PASS, FAIL, UNSURE]), min_size=3, max_size=3),
        min_size=1,
        max_size=20,
    )
)
def test_worst_question_order(rows):
    got = worst(rows).tolist()
    for row, v in zip(rows, got, strict=True):
        # unsure outranks fail, fail outranks pass
        if UNSURE in row:
            assert v == UNSURE
        elif FAIL in row:
            assert v == FAIL
        else:
            assert v == PASS
        assert worst([row[::-1]])[0] == v  # order of the questions does not matter


def test_worst_and_names():
    assert worst([[PASS, PASS], [PASS, FAIL], [FAIL, UNSURE], [UNSURE, PASS]]).tolist() == [
        0,
        1,
        2,
        2,
    ]
    assert result_names([PASS, FAIL, UNSURE]).tolist() == ["pass", "fail", "unsure"]


@settings(max_examples=60)
@given(
    pass_p=unit,
    fail_p=st.one_of(st.none(), unit),
    level=st.integers(min_value=0, max_value=2),
    conf=st.one_of(st.none(), unit),
    p=units,
)
def test_decide_dispatches_by_kind(pass_p, fail_p, level, conf, p):
    assume(fail_p is None or fail_p <= pass_p)
    yn = Question("ok?", Kind.YES_NO, pass_p=pass_p, fail_p=fail_p)
    assert decide(yn, p).tolist() == decide_yes_no(p, pass_p=pass_p, fail_p=fail_p).tolist()
    assert yn.decide(p).tolist() == decide(yn, p).tolist()
    rb = Question("how?", Kind.RUBRIC, pass_level=level, confidence=conf, levels=("a", "b", "c"))
    lv = [int(x * 2.999) for x in p]
    assert (
        decide(rb, lv, p).tolist()
        == decide_rubric(lv, p, pass_level=level, min_confidence=conf).tolist()
    )


@given(pass_p=unit, fail_p=st.one_of(st.none(), unit), c=unit, level=st.integers(0, 2))
def test_check_items_round_trip(pass_p, fail_p, c, level):
    assume(fail_p is None or fail_p <= pass_p)
    qs = [
        Question("yes no?", Kind.YES_NO, pass_p=pass_p, fail_p=fail_p),
        Question(
            "choice?",
            Kind.CHOICE,
            pass_names=("a",),
            unsure_names=("b",),
            confidence=c,
            one_of={"a": "A", "b": "B", "z": "Z"},
        ),  # fmt: skip
        Question("rubric?", Kind.RUBRIC, pass_level=level, confidence=c, levels=("x", "y", "z")),
    ]
    again = parse_check([q.to_check_item() for q in qs], Limits(check_fail=None))
    assert again == qs


def test_defaults_fill_absent_keys():
    limits = Limits(check_pass=0.8, check_fail=0.3, check_confidence=0.6)
    (q,) = parse_check("Is it fine?", limits)
    assert (q.kind, q.pass_p, q.fail_p) == (Kind.YES_NO, 0.8, 0.3)
    (c,) = parse_check([{"ask": "which?", "one_of": {"a": "A", "b": "B"}, "pass": ["a"]}], limits)
    assert c.confidence == 0.6
    with pytest.raises(ProcessFileError, match="above 'pass'"):
        parse_check([{"ask": "x", "pass": 0.4, "fail": 0.5}])


def test_limits_with_fail_above_pass_are_refused():
    with pytest.raises(ProcessFileError, match="checkFail 0.6 is above checkPass 0.4"):
        Limits.from_json({"limits": {"checkPass": 0.4, "checkFail": 0.6}})
    assert Limits.from_json({"limits": {"checkPass": 0.6, "checkFail": 0.6}}).check_fail == 0.6


def test_remarks_name_a_question_switched_off_or_a_band_too_narrow_to_matter():
    from calibrate.profile import Kind, Question

    off = Question("How complete?", Kind.RUBRIC, pass_level=0, confidence=0.0)
    assert "no longer affects the verdict" in off.remarks()[0]
    assert Question("How complete?", Kind.RUBRIC, pass_level=0, confidence=0.8).remarks() == []
    narrow = Question("Matches?", Kind.YES_NO, pass_p=0.15401, fail_p=0.154)
    assert "almost every answer is decided" in narrow.remarks()[0]
    assert Question("Matches?", Kind.YES_NO, pass_p=0.9, fail_p=0.5).remarks() == []
    every = Question("Does?", Kind.CHOICE, pass_names=("a", "b"), one_of={"a": "A", "b": "B"})
    assert "no longer affects the verdict" in every.remarks()[0]
