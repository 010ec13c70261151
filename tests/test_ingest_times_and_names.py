"""Times with an impossible UTC offset and blank names are quarantined in every lane (black-box F2, F3).

DuckDB reads ``+25:00`` or ``+99:99`` as an offset of a day or more, which moved
a check by days; RFC 3339 allows hours 00-23 and minutes 00-59 (``+24:00`` is
not an offset either, and Python refuses it too). A verdict whose step is ``""``
loaded as a step with an empty name that no decision could ever label.
"""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

import calibrate.ingest as ing
from calibrate.ingest import statements
from calibrate.store import connect

Q = {"ask": "q", "kind": "yes_no", "answer": 0.9, "result": "pass"}
NOT_A_TIME = "is not an ISO 8601 time"
BAD_OFFSETS = ["+25:00", "+99:99", "+24:00", "-24:00", "+05:60", "-00:99", "+2400", "+25"]


def _check(at: str) -> dict:
    return {"verdict": "pass", "advisory": True, "model": "m", "questions": [Q], "at": at}


def _verdict(run: str, at: str = "2026-09-01T10:00:00Z", **over) -> dict:
    return {"run": run, "process": "p", "step": "s", "attempt": 1, "check": _check(at)} | over


def _ingest(tmp_path: Path, files: dict[str, str], *, fast: bool = True, monkeypatch=None):
    folder = tmp_path / "in"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    if monkeypatch is not None:
        monkeypatch.setattr(ing, "TYPED_LANE_ENABLED", fast)
        monkeypatch.setattr(ing, "TYPED_LANE_MIN_BYTES", 0)
    con = connect(tmp_path / "s.duckdb")
    report = ing.ingest(con, [folder])
    return con, report


def _reasons(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r for (r,) in con.execute("SELECT reason FROM quarantine ORDER BY reason").fetchall()]


def _python_utc(local: str, sign: str, hh: int, mm: int) -> datetime:
    offset = timedelta(hours=hh, minutes=mm) * (1 if sign == "+" else -1)
    return datetime.fromisoformat(local).replace(tzinfo=UTC) - offset


def test_every_offset_within_rfc3339_is_read_and_none_beyond():
    """hh:mm for hh, mm in 00..99, both signs: read iff hh <= 23 and mm <= 59, to the right instant."""
    con = duckdb.connect()
    con.execute(statements.load("ingest_records.sql")["macros"])
    local = "2026-09-01T10:00:00"
    texts = [
        (f"{local}{sign}{hh:02d}:{mm:02d}", sign, hh, mm)
        for sign in "+-"
        for hh in range(100)
        for mm in range(100)
    ]
    got = con.execute(
        "SELECT t, iso_time(t) FROM unnest(?::VARCHAR[]) AS u(t)", [[t for t, *_ in texts]]
    ).fetchall()
    read = dict(got)
    for text, sign, hh, mm in texts:
        if hh <= 23 and mm <= 59:
            assert read[text] == _python_utc(local, sign, hh, mm), text
        else:
            assert read[text] is None, text
    # The other forms of an offset, and times without one.
    for text, ok in [
        (f"{local}+05", True), (f"{local}+0530", True), (f"{local}+05:30:15", True),
        (f"{local}.123-12:00", True), (f"{local}Z", True), (local, True), ("2026-12-25", True),
        ("2026-09-01T10:00+25", False), (f"{local}+2400", False), (f"{local}+05:30:60", False),
        (f"{local}+25:00 ", False),
    ]:  # fmt: skip
        value = con.execute("SELECT iso_time(?)", [text]).fetchone()[0]
        assert (value is not None) == ok, text


@pytest.mark.parametrize("form", ["jsonl", "json"])
def test_a_check_with_an_impossible_offset_is_quarantined(tmp_path, form):
    records = [_verdict("ok", "2026-09-01T10:00:00+23:59")]
    records += [_verdict(f"x-{i}", f"2026-09-01T10:00:00{o}") for i, o in enumerate(BAD_OFFSETS)]
    if form == "jsonl":
        files = {"v.jsonl": "".join(json.dumps(r) + "\n" for r in records)}
    else:
        files = {"v.json": json.dumps(records)}
    con, report = _ingest(tmp_path, files)
    t = report.totals
    assert (t["read"], t["loaded"], t["quarantined"]) == (9, 1, 8)
    reasons = _reasons(con)
    assert len(reasons) == 8 and all('$.check: "at" ' in r and NOT_A_TIME in r for r in reasons)
    (at,) = con.execute("SELECT checked_at FROM checks").fetchone()
    assert at == datetime(2026, 8, 31, 10, 1, tzinfo=UTC)


def _decision_rows(offsets: list[str]) -> list[list[str]]:
    rows = [["run", "process", "step", "attempt", "decision", "by", "at", "note"]]
    rows.append(["ok", "p", "s", "1", "approved", "ana", "2026-09-01T11:00:00+14:00", ""])
    rows += [
        [f"x-{i}", "p", "s", "1", "approved", "ana", f"2026-09-01T11:00:00{o}", ""]
        for i, o in enumerate(offsets)
    ]
    return rows


@pytest.mark.parametrize("fast", [True, False], ids=["direct rows", "record pipeline"])
def test_a_decision_with_an_impossible_offset_is_quarantined_in_a_table(
    tmp_path, monkeypatch, fast
):
    path = tmp_path / "d.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\n").writerows(_decision_rows(BAD_OFFSETS))
    con, report = _ingest(tmp_path, {"d.csv": path.read_text()}, fast=fast, monkeypatch=monkeypatch)
    t = report.totals
    assert (t["read"], t["loaded"], t["quarantined"]) == (9, 1, 8)
    assert all(NOT_A_TIME in r for r in _reasons(con))


def test_a_decision_with_an_impossible_offset_is_quarantined_everywhere_else(tmp_path):
    run = {
        "run": "r-run",
        "process": "p",
        "steps": {
            "s": {"check": _check("2026-09-01T10:00:00Z")},
            "approve": {"reviews": "s", "decision": "approved", "at": "2026-09-01T11:00:00+25:00"},
        },
    }
    record = {"run": "r-rec", "step": "s", "attempt": 1, "decision": "rejected"}
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "run.jsonl").write_text(json.dumps(run) + "\n")
    (folder / "d.jsonl").write_text(json.dumps(record | {"at": "2026-09-01T11:00:00+99:99"}) + "\n")
    rows = _decision_rows(["-24:00"])
    table = duckdb.connect()
    columns = ", ".join(f'"{c}" VARCHAR' for c in rows[0])
    table.execute(f"CREATE TABLE t ({columns})")
    table.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows[1:])
    table.execute(f"COPY t TO '{folder / 'd.parquet'}' (FORMAT parquet)")
    table.close()
    con = connect(tmp_path / "s.duckdb")
    by_file = {Path(f.path).name: f for f in ing.ingest(con, [folder]).files}
    assert {n: (f.read, f.loaded, f.quarantined) for n, f in by_file.items()} == {
        "run.jsonl": (1, 0, 1),
        "d.jsonl": (1, 0, 1),
        "d.parquet": (2, 1, 1),
    }
    reasons = _reasons(con)
    assert len(reasons) == 3 and all(NOT_A_TIME in r for r in reasons)
    assert any(r.startswith('$.steps.approve: "at" "2026-09-01T11:00:00+25:00"') for r in reasons)


BLANK_NAMES = {
    "verdict step empty": (_verdict("r1", step=""), 'verdict line has no "step"'),
    "verdict step blank": (_verdict("r1", step=" \t"), 'verdict line has no "step"'),
    "run blank": (_verdict("  "), 'record has no "run" id'),
    "process empty": (_verdict("r1", process=""), '"process" is blank'),
    "process blank": (_verdict("r1", process="   "), '"process" is blank'),
    "run document step id empty": (
        {"run": "r1", "process": "p", "steps": {"": {"check": _check("2026-09-01T10:00:00Z")}}},
        "$.steps has a step whose id is blank",
    ),
    "run document process blank": (
        {"run": "r1", "process": " ", "steps": {"s": {"check": _check("2026-09-01T10:00:00Z")}}},
        '"process" is blank',
    ),
    "handoff step empty": (
        {
            "run": "r1",
            "process": "p",
            "steps": {"s": {"status": "running"}},
            "handoff": {"step": "", "check": _check("2026-09-01T10:00:00Z")},
        },
        'handoff has no "step"',
    ),
    "decision step blank": (
        {"run": "r1", "step": "  ", "attempt": 1, "decision": "approved"},
        "decision names no checked step",
    ),
    "decision run blank": (
        {"run": " ", "step": "s", "attempt": 1, "decision": "approved"},
        'record has no "run" id',
    ),
}


@pytest.mark.parametrize("form", ["jsonl", "json"])
@pytest.mark.parametrize("case", sorted(BLANK_NAMES))
def test_a_blank_name_quarantines_its_record(tmp_path, case, form):
    record, said = BLANK_NAMES[case]
    text = json.dumps(record) + "\n" if form == "jsonl" else json.dumps([record])
    con, report = _ingest(tmp_path, {f"r.{form}": text})
    t = report.totals
    assert (t["read"], t["loaded"], t["quarantined"]) == (1, 0, 1)
    (reason,) = _reasons(con)
    assert said in reason
    assert con.execute("SELECT count(*) FROM checks").fetchone()[0] == 0


def test_the_finding_a_verdict_for_an_empty_step_is_quarantined_as_its_decision_is(tmp_path):
    files = {
        "v.jsonl": json.dumps(_verdict("x-16", step="")) + "\n",
        "d.csv": "run,step,attempt,decision,at\nx-16,,1,approved,2026-09-01T11:00:00Z\n",
    }
    con, report = _ingest(tmp_path, files)
    assert report.totals["quarantined"] == 2 and report.totals["loaded"] == 0
    assert con.execute("SELECT count(*) FROM checks WHERE step = ''").fetchone()[0] == 0


@pytest.mark.parametrize("fast", [True, False], ids=["direct rows", "record pipeline"])
def test_blank_cells_of_a_decision_table(tmp_path, monkeypatch, fast):
    """A cell of blanks names nothing; an empty process cell is no process (the row loads)."""
    rows = [
        ["run", "process", "step", "attempt", "decision", "by", "at", "note"],
        ["r1", "", "s", "1", "approved", "ana", "", ""],  # no process: loads
        ["r2", "p", "s", "1", "approved", "ana", "", ""],
        ["  ", "p", "s", "1", "approved", "ana", "", ""],
        ["r3", "  ", "s", "1", "approved", "ana", "", ""],
        ["r4", "p", " ", "1", "approved", "ana", "", ""],
    ]
    path = tmp_path / "d.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    con, report = _ingest(tmp_path, {"d.csv": path.read_text()}, fast=fast, monkeypatch=monkeypatch)
    t = report.totals
    assert (t["read"], t["loaded"], t["quarantined"]) == (5, 2, 3)
    reasons = _reasons(con)
    assert [r.split(" (")[0].split(":")[0] for r in reasons] == [
        '"process" is blank',
        "decision names no checked step",
        'record has no "run" id',
    ]
