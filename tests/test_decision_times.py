"""Decisions timed before their check or in the future: flagged, and no review time built on them.

Black-box run (bb5, finding 1): decisions recorded an hour before their checks gave
``median_review_s: -3600`` and an automation-bias hint; ``status --flags`` flagged nothing.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from calibrate.cli import app

runner = CliRunner()


def _export(path, *, decided_offset_h: int, n: int = 25, future: int = 0) -> None:
    lines = []
    for i in range(n):
        at = f"2026-10-{1 + i % 20:02d}T10:00:00Z"
        lines.append({"run": f"r{i}", "process": "p", "step": "s", "attempt": 1,
                      "check": {"verdict": "pass", "advisory": True, "model": "m", "at": at,
                                "questions": [{"ask": "ok?", "kind": "yes_no", "answer": 0.97,
                                               "result": "pass"}]}})  # fmt: skip
        hour = 10 + decided_offset_h
        decided = f"2026-10-{1 + i % 20:02d}T{hour:02d}:00:00Z" if i >= future else "2027-06-01"
        lines.append({"run": f"r{i}", "process": "p", "step": "s", "attempt": 1,
                      "decision": "approved", "by": "ana", "at": decided})  # fmt: skip
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def _store(tmp_path, **kw) -> str:
    src, db = tmp_path / "v.jsonl", str(tmp_path / "s.duckdb")
    _export(src, **kw)
    assert runner.invoke(app, ["ingest", "--db", db, "-q", str(src)]).exit_code == 0
    return db


def test_a_decision_before_its_check_has_no_review_time_and_no_hint(tmp_path):
    db = _store(tmp_path, decided_offset_h=-1)
    out = runner.invoke(app, ["agreement", "--db", db, "--approvers", "--format", "json"])
    assert out.exit_code == 0, out.output
    (row,) = json.loads(out.stdout)
    assert row["n_before_check"] == 25 and row["n_timed"] == 0
    assert row["median_review_s"] is None and row["flag"] is False
    assert "25 decisions timed before the check" in row["note"]


def test_decisions_after_their_check_keep_their_review_time(tmp_path):
    db = _store(tmp_path, decided_offset_h=0)
    out = runner.invoke(app, ["agreement", "--db", db, "--approvers", "--format", "json"])
    (row,) = json.loads(out.stdout)
    assert row["n_before_check"] == 0 and row["n_timed"] == 25 and row["median_review_s"] == 0.0
    assert row["flag"] is True  # every pass approved at once: the hint stands


def test_status_flags_decisions_before_their_check_and_in_the_future(tmp_path):
    db = _store(tmp_path, decided_offset_h=-1, future=3)
    out = runner.invoke(app, ["status", "--db", db, "--flags", "--format", "json"])
    assert out.exit_code == 0, out.output
    flags = json.loads(out.stdout)["flags"]
    assert flags["decided_before_check"] == 22 and flags["decided_in_future"] == 3


def test_a_decision_dated_by_its_day_alone_is_before_its_check_only_when_its_day_is(tmp_path):
    """A date alone is stored as midnight UTC: on the check's own day it is no clock skew."""
    src, db = tmp_path / "v.jsonl", str(tmp_path / "s.duckdb")
    lines = []
    for i, day in enumerate(["2026-10-05", "2026-10-05", "2026-10-04"]):
        lines.append({"run": f"r{i}", "process": "p", "step": "s", "attempt": 1,
                      "check": {"verdict": "pass", "advisory": True, "model": "m",
                                "at": "2026-10-05T10:00:00Z",
                                "questions": [{"ask": "ok?", "kind": "yes_no", "answer": 0.97,
                                               "result": "pass"}]}})  # fmt: skip
        lines.append({"run": f"r{i}", "process": "p", "step": "s", "attempt": 1,
                      "decision": "approved", "by": "ana", "at": day})  # fmt: skip
    src.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    assert runner.invoke(app, ["ingest", "--db", db, "-q", str(src)]).exit_code == 0
    flags = json.loads(
        runner.invoke(app, ["status", "--db", db, "--flags", "--format", "json"]).stdout
    )["flags"]
    assert flags["decided_before_check"] == 1  # the day before, not the two on the day
    (row,) = json.loads(
        runner.invoke(app, ["agreement", "--db", db, "--approvers", "--format", "json"]).stdout
    )
    assert (row["n_timed"], row["n_before_check"], row["median_review_s"]) == (0, 1, None)
