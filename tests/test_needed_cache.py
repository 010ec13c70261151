"""The labels-needed estimate is kept per data and settings in the process, and only that."""

from __future__ import annotations

import numpy as np

from calibrate.analysis import needed
from calibrate.analysis.step_data import StepData
from calibrate.profile import Kind, Question


def _data(seed: int = 0, n: int = 120) -> StepData:
    rng = np.random.default_rng(seed)
    ok = rng.random(n) < 0.8
    p = np.where(ok, rng.beta(8, 1.2, n), rng.beta(2, 3, n))
    return StepData("proc", "step", "m", [Question("ok?", Kind.YES_NO, pass_p=0.9)], [True],
                    np.arange(n).astype(str), ok, [p], [np.full(n, np.nan)], np.zeros(n, bool))  # fmt: skip


def test_the_same_data_and_settings_are_estimated_once(monkeypatch):
    calls = []
    real = needed.find_thresholds
    monkeypatch.setattr(needed, "find_thresholds", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = needed.estimate_needed(_data(), alpha=0.05, delta=0.1, beta=0.3)
    searches = len(calls)
    again = _data()
    again.notes.append("a note does not change the rows")
    again.left_out["other_models"] = 7
    second = needed.estimate_needed(again, alpha=0.05, delta=0.1, beta=0.3)
    assert searches > 0 and len(calls) == searches
    assert second == first


def test_other_labels_or_settings_are_estimated_anew(monkeypatch):
    calls = []
    real = needed.find_thresholds
    monkeypatch.setattr(needed, "find_thresholds", lambda *a, **k: calls.append(1) or real(*a, **k))
    base = _data()
    needed.estimate_needed(base, alpha=0.05, delta=0.1, beta=0.3)
    counted = len(calls)
    flipped = _data()
    flipped.acceptable[0] = not flipped.acceptable[0]
    needed.estimate_needed(flipped, alpha=0.05, delta=0.1, beta=0.3)
    assert len(calls) > counted
    counted = len(calls)
    needed.estimate_needed(base, alpha=0.05, delta=0.1, beta=0.3, seed=1)
    assert len(calls) > counted
    counted = len(calls)
    moved = _data()
    moved.questions[0] = Question("ok?", Kind.YES_NO, pass_p=0.95)
    needed.estimate_needed(moved, alpha=0.05, delta=0.1, beta=0.3)
    assert len(calls) > counted


def test_fingerprint_tells_missing_answers_from_text():
    a, b = _data(), _data()
    a.answer[0] = np.array(["x", None, "nan"], dtype=object)
    b.answer[0] = np.array(["x", "None", float("nan")], dtype=object)
    assert a.fingerprint() != b.fingerprint()
    assert _data().fingerprint() == _data().fingerprint()
