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
    """Write ``files`` into ``tmp_path / "in"`` (beside what is there) and ingest that folder."""
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


def _reviewed_run(decision: str, at: str) -> dict:
    """A run document whose approve step decides on its checked step."""
    return {
        "run": "r-run",
        "process": "p",
        "steps": {
            "s": {"check": _check("2026-09-01T10:00:00Z")},
            "approve": {"reviews": "s", "decision": decision, "at": at},
        },
    }


def test_a_decision_with_an_impossible_offset_is_quarantined_everywhere_else(tmp_path):
    run = _reviewed_run("approved", "2026-09-01T11:00:00+25:00")
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


# --- The time grammar and Unicode blanks, alike in every form of file and both lanes (black-box G8, G9).

#: ISO 8601 / RFC 3339 forms calibrate reads, and the instant each is (UTC).
TIME_FORMS = {
    "2026-10-20T10:00:00Z": datetime(2026, 10, 20, 10, tzinfo=UTC),
    "2026-10-20t10:00:00z": datetime(2026, 10, 20, 10, tzinfo=UTC),  # RFC 3339 section 5.6
    "2026-10-20 10:00:00.25+02:00": datetime(2026, 10, 20, 8, 0, 0, 250000, tzinfo=UTC),
    "2026-10-20T10:00:00,5Z": datetime(2026, 10, 20, 10, 0, 0, 500000, tzinfo=UTC),
    "2026-10-20T10:00-0130": datetime(2026, 10, 20, 11, 30, tzinfo=UTC),
    "20261020T100000Z": datetime(2026, 10, 20, 10, tzinfo=UTC),  # basic
    "20261020t100000,25z": datetime(2026, 10, 20, 10, 0, 0, 250000, tzinfo=UTC),
    "20261020T1000+02": datetime(2026, 10, 20, 8, tzinfo=UTC),
    "20261020": datetime(2026, 10, 20, tzinfo=UTC),
    "2026-10-20 10:00:00 UTC": datetime(2026, 10, 20, 10, tzinfo=UTC),  # as BigQuery writes it
    "\u00a02026-10-20T10:00:00Z\u202f": datetime(2026, 10, 20, 10, tzinfo=UTC),  # blanks around
    "\t2026-10-21\n": datetime(2026, 10, 21, tzinfo=UTC),
    "2026-10-21T24:00:00Z": datetime(2026, 10, 22, tzinfo=UTC),  # ISO 8601: the day's end
    "0001-01-01T00:00:00Z": datetime(1, 1, 1, tzinfo=UTC),  # the first instant a reader holds
}
#: Not read: no digits after the dot, week and ordinal dates, mixed basic and extended forms,
#: an hour alone, zone names, a date with an offset, DuckDB's special values, years out of range.
NOT_TIMES = [
    "2026-10-20T10:00:00.Z", "2026-10-20T10:00:00.", "2026-W43-2", "2026-293", "2026-10-20T10Z",
    "20261020T10:00:00Z", "2026-1020", "2026-10-20T10:00:00 Europe/Paris", "2026-10-20Z",
    "2026-10-20T1:2:3Z", "epoch", "infinity", "2026-10-20T10:00:00+0530:00",
    # Outside the years 0001-9999 in UTC (DuckDB stores 0000 as 1 BC; Python cannot read it).
    "0000-01-01T00:00:00Z", "00000101", "9999-12-31T23:00:00-05:00", "0001-01-01T00:30:00+01:00",
    "2026-06-30T23:59:60Z",  # a leap second
]  # fmt: skip
READS = "calibrate reads (YYYY-MM-DD[Thh:mm[:ss[.f]]]"


def test_the_time_grammar():
    con = duckdb.connect()
    con.execute(statements.load("ingest_records.sql")["macros"])
    for text, when in TIME_FORMS.items():
        assert con.execute("SELECT iso_time(?)", [text]).fetchone()[0] == when, text
    for text in NOT_TIMES:
        assert con.execute("SELECT iso_time(?)", [text]).fetchone()[0] is None, text


def _time_files(folder: Path) -> dict[str, tuple[int, int]]:
    """Every form of "at" in a check of each form of file, and in a decision; (read, loaded) of each."""
    texts = list(TIME_FORMS) + NOT_TIMES
    verdicts = [_verdict(f"t{i}", text) for i, text in enumerate(texts)]
    (folder / "v.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    (folder / "v.json").write_text(json.dumps([v | {"run": "j" + v["run"]} for v in verdicts]))
    docs = [
        {"run": f"d{i}", "process": "p", "steps": {"s": {"check": _check(text)}}}
        for i, text in enumerate(texts)
    ]
    (folder / "runs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    table = duckdb.connect()
    table.execute(
        "CREATE TABLE t AS SELECT 'q' || i AS run, 'p' AS process, 's' AS step, 1 AS attempt,"
        ' c AS "check" FROM unnest(?::VARCHAR[]) WITH ORDINALITY AS u(c, i)',
        [[json.dumps(_check(text)) for text in texts]],
    )
    table.execute(f"COPY t TO '{folder / 'v.parquet'}' (FORMAT parquet)")
    table.close()
    with open(folder / "d.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["run", "process", "step", "attempt", "decision", "by", "at", "note"])
        writer.writerows(
            [f"t{i}", "p", "s", "1", "approved", "ana", t, ""] for i, t in enumerate(texts)
        )
    n, good = len(texts), len(TIME_FORMS)
    return {name: (n, good) for name in ("v.jsonl", "v.json", "runs.jsonl", "v.parquet", "d.csv")}


@pytest.mark.parametrize("fast", [True, False], ids=["fast lanes", "record pipeline"])
def test_every_time_form_is_read_alike_in_every_file_and_lane(tmp_path, monkeypatch, fast):
    folder = tmp_path / "in"
    folder.mkdir()
    expected = _time_files(folder)
    con, report = _ingest(tmp_path, {}, fast=fast, monkeypatch=monkeypatch)
    assert {Path(f.path).name: (f.read, f.loaded) for f in report.files} == expected
    whens = set(TIME_FORMS.values())
    times = con.execute("SELECT DISTINCT checked_at FROM checks").fetchall()
    assert {t for (t,) in times} == whens
    assert {
        t for (t,) in con.execute("SELECT DISTINCT decided_at FROM decisions").fetchall()
    } == whens
    reasons = _reasons(con)
    assert len(reasons) == 5 * len(NOT_TIMES)
    assert all(NOT_A_TIME in r and READS in r and "no week or ordinal dates" in r for r in reasons)
    assert any('"at" "2026-W43-2" is not' in r for r in reasons)


BLANKS = ["\u00a0", "\u202f", "\u3000", "\u2003", "\t", " \u00a0"]


@pytest.mark.parametrize("fast", [True, False], ids=["fast lanes", "record pipeline"])
def test_unicode_blanks_around_a_decision_are_blanks_in_every_lane(tmp_path, monkeypatch, fast):
    """A no-break space after a spreadsheet paste is a blank: ``Approved\\u00a0`` is approved."""
    rows = [["run", "process", "step", "attempt", "decision", "by", "at", "note"]]
    rows += [
        [f"c{i}", "p", "s", f"1{b}", f"{b}Approved{b}", "ana", "", ""] for i, b in enumerate(BLANKS)
    ]
    # A decision of only blanks is none: pending.
    rows.append(["pending", "p", "s", "1", "\u00a0\u3000", "ana", "", ""])
    folder = tmp_path / "in"
    folder.mkdir()
    with open(folder / "d.csv", "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    records = [
        {"run": f"j{i}", "step": "s", "attempt": 1, "decision": f"Rejected{b}"}
        for i, b in enumerate(BLANKS)
    ]
    (folder / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    run = _reviewed_run("approved\u00a0", "2026-09-01T11:00:00Z")
    (folder / "runs.jsonl").write_text(json.dumps(run) + "\n")
    con, report = _ingest(tmp_path, {}, fast=fast, monkeypatch=monkeypatch)
    assert {
        Path(f.path).name: (f.read, f.loaded, f.quarantined, f.pending) for f in report.files
    } == {
        "d.csv": (len(BLANKS) + 1, len(BLANKS), 0, 1),
        "d.jsonl": (len(BLANKS), len(BLANKS), 0, 0),
        "runs.jsonl": (1, 1, 0, 0),
    }
    got = con.execute("SELECT decision, count(*) FROM decisions GROUP BY ALL ORDER BY 1").fetchall()
    assert got == [("approved", len(BLANKS) + 1), ("rejected", len(BLANKS))]


@pytest.mark.parametrize("fast", [True, False], ids=["direct rows", "record pipeline"])
def test_an_invisible_character_in_a_decision_is_shown_in_its_reason(tmp_path, monkeypatch, fast):
    """A zero-width space is no blank: the reason writes it out, so that a person sees what is wrong."""
    files = {"d.csv": "run,step,attempt,decision\nr1,s,1,Approved\u200b\nr2,s,1,appro\u00a0ved\n"}
    con, report = _ingest(tmp_path, files, fast=fast, monkeypatch=monkeypatch)
    assert report.totals["quarantined"] == 2
    assert [r.split(" (")[0] for r in _reasons(con)] == [
        'unknown decision "Approved\\u200b"',
        'unknown decision "appro\\u00a0ved"',
    ]


@pytest.mark.parametrize("form", ["jsonl", "json"])
def test_a_name_of_only_unicode_blanks_names_nothing(tmp_path, form):
    records = [_verdict("r1", step="\u00a0"), _verdict("\u3000"), _verdict("r2", process="\u202f")]
    text = (
        "".join(json.dumps(r) + "\n" for r in records) if form == "jsonl" else json.dumps(records)
    )
    con, report = _ingest(tmp_path, {f"r.{form}": text})
    assert (report.totals["read"], report.totals["quarantined"]) == (3, 3)
    reasons = " | ".join(_reasons(con))
    assert (
        'has no "step"' in reasons
        and 'has no "run" id' in reasons
        and '"process" is blank' in reasons
    )
