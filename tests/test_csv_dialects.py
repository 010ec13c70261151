"""CSV dialects a person's tools write: header case, `;`/tab/`|` delimiters, UTF-16 (PowerShell 5).

Each variant of a decision table must load exactly the rows the plain
comma-separated, lower-case, UTF-8 table loads, with the direct decision path
on and off.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

import calibrate.ingest as ing
from calibrate.ingest import ingest
from calibrate.store import connect

HEADER = ["run", "process", "step", "attempt", "decision", "by", "at", "note"]
ROWS = [
    ["r1", "p", "s", "1", "approved", "ana", "2026-10-02T10:00:00Z", ""],
    ["r2", "p", "s", "2", "returned", "ben", "2026-10-02T11:00:00Z", 'says "cleared"; late, again'],
    ["r3", "p", "s", "1", "rejected", "ana", "2026-10-02T12:00:00Z", "line one\nline two"],
    ["r4", "p", "s", "1", "maybe", "ana", "2026-10-02T12:00:00Z", ""],  # quarantined: unknown
    ["r5", "p", "", "1", "approved", "ana", "2026-10-02T12:00:00Z", ""],  # quarantined: no step
]
UTF16_REASON = "file is UTF-16 encoded; calibrate reads UTF-8: save it as UTF-8"


def table(header: list[str], rows: list[list[str]], delimiter: str = ",", eol: str = "\n") -> str:
    buf = io.StringIO()
    csv.writer(buf, delimiter=delimiter, lineterminator=eol).writerows([header, *rows])
    return buf.getvalue()


def load(path: Path, *, direct: bool, monkeypatch) -> dict:
    """Ingest one file; return its counts, its decisions and its quarantine reasons."""
    monkeypatch.setattr(ing, "TYPED_LANE_ENABLED", direct)
    con = connect(":memory:")
    try:
        f = ingest(con, [path]).files[0]
        return {
            "counts": (f.read, f.loaded, f.quarantined),
            "decisions": con.execute(
                "SELECT * EXCLUDE (file_id) FROM decisions ORDER BY ALL"
            ).fetchall(),
            "quarantine": con.execute(
                "SELECT line_no, json_path, reason FROM quarantine ORDER BY ALL"
            ).fetchall(),
        }
    finally:
        con.close()


@pytest.fixture(params=[True, False], ids=["direct", "pipeline"])
def direct(request) -> bool:
    return request.param


@pytest.fixture
def baseline(tmp_path, direct, monkeypatch) -> dict:
    path = tmp_path / "base" / "d.csv"
    path.parent.mkdir()
    path.write_text(table(HEADER, ROWS), encoding="utf-8")
    got = load(path, direct=direct, monkeypatch=monkeypatch)
    assert got["counts"] == (5, 3, 2)
    assert len(got["decisions"]) == 3
    return got


@pytest.mark.parametrize(
    "header",
    [
        ["RUN", "Process", "STEP", "Attempt", "Decision", "BY", "At", "NOTE"],
        [" Run", "PROCESS ", "Step", " ATTEMPT ", "\tdecision", "By", "AT", "Note"],
    ],
    ids=["upper", "mixed-and-spaces"],
)
def test_header_names_match_whatever_their_case(tmp_path, baseline, direct, monkeypatch, header):
    path = tmp_path / "d.csv"
    path.write_text(table(header, ROWS), encoding="utf-8")
    assert load(path, direct=direct, monkeypatch=monkeypatch) == baseline


@pytest.mark.parametrize("delimiter", [";", "\t", "|"], ids=["semicolon", "tab", "pipe"])
def test_delimiter_told_from_the_header(tmp_path, baseline, direct, monkeypatch, delimiter):
    path = tmp_path / "d.csv"
    path.write_text(table(HEADER, ROWS, delimiter), encoding="utf-8")
    assert load(path, direct=direct, monkeypatch=monkeypatch) == baseline


def test_semicolon_with_upper_case_header_and_blank_lines_first(
    tmp_path, baseline, direct, monkeypatch
):
    path = tmp_path / "d.csv"
    text = "\n\n" + table([h.upper() for h in HEADER], ROWS, ";")
    path.write_text(text, encoding="utf-8")
    got = load(path, direct=direct, monkeypatch=monkeypatch)
    # The blank lines before the header are not records, but rows are numbered as a spreadsheet
    # shows them: two rows further down.
    shifted = [(n, f"row {int(p.split()[1]) + 2}", r) for n, p, r in baseline["quarantine"]]
    assert got == {**baseline, "quarantine": shifted}


def test_one_column_header_with_a_semicolon_in_its_name_stays_comma_separated(
    tmp_path, monkeypatch
):
    """Split only when a known column comes out: "a;b" is one unknown column."""
    path = tmp_path / "d.csv"
    path.write_text("a;b\nx;y\n", encoding="utf-8")
    got = load(path, direct=True, monkeypatch=monkeypatch)
    assert got["counts"] == (1, 0, 1)
    assert '(found: "a;b")' in got["quarantine"][0][2]


@pytest.mark.parametrize(
    "bom, codec, eol",
    [(b"\xff\xfe", "utf-16-le", "\r\n"), (b"\xfe\xff", "utf-16-be", "\n")],
    ids=["le-crlf", "be-lf"],
)
def test_utf16_csv_loads_the_same_rows(tmp_path, baseline, direct, monkeypatch, bom, codec, eol):
    path = tmp_path / "d.csv"
    path.write_bytes(bom + table(HEADER, ROWS, eol=eol).encode(codec))
    assert load(path, direct=direct, monkeypatch=monkeypatch) == baseline


def test_powershell_export_upper_case_tab_utf16(tmp_path, baseline, direct, monkeypatch):
    path = tmp_path / "d.csv"
    text = table([h.capitalize() for h in HEADER], ROWS, "\t", "\r\n")
    path.write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    assert load(path, direct=direct, monkeypatch=monkeypatch) == baseline


def test_invalid_utf16_csv_is_one_record(tmp_path, monkeypatch):
    path = tmp_path / "d.csv"
    path.write_bytes(
        b"\xff\xfe" + "run,decision\n".encode("utf-16-le") + b"\x00\xd8"
    )  # lone surrogate
    got = load(path, direct=True, monkeypatch=monkeypatch)
    assert got["counts"] == (1, 0, 1)
    assert "UTF-16" in got["quarantine"][0][2]


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".ndjson"])
def test_utf16_json_is_one_quarantined_record(tmp_path, monkeypatch, suffix):
    lines = [
        '{"run": "r1", "step": "s", "attempt": 1, "decision": "approved", "by": "ana"}',
        '{"run": "r2", "step": "s", "attempt": 1, "decision": "rejected", "by": "ana"}',
        "",
        '{"run": "r3", "step": "s", "attempt": 1, "decision": "approved", "by": "ana"}',
    ]
    path = tmp_path / f"d{suffix}"
    path.write_bytes(b"\xff\xfe" + "\r\n".join(lines).encode("utf-16-le"))
    monkeypatch.setattr(ing, "TYPED_LANE_MIN_BYTES", 0)  # the typed lane must not take it either
    con = connect(":memory:")
    report = ingest(con, [path])
    f = report.files[0]
    assert (f.read, f.loaded, f.quarantined) == (1, 0, 1)
    assert f.note == UTF16_REASON
    rows = con.execute("SELECT json_path, raw, reason FROM quarantine").fetchall()
    assert len(rows) == 1
    json_path, raw, reason = rows[0]
    assert (json_path, reason) == ("$", UTF16_REASON)
    assert raw.startswith('{"run": "r1"')  # the preview is readable text
    assert con.execute("SELECT count(*) FROM decisions").fetchone()[0] == 0
    assert ingest(con, [path]).files[0].status == "unchanged"


@pytest.mark.parametrize(
    "header",
    [
        "run,step,attempt,decision,RUN",
        "run,step,attempt,Decision, decision ",
        "run;step;attempt;decision;Run",
    ],
    ids=["upper", "spaces", "semicolon"],
)
def test_header_naming_a_column_twice_after_case_is_refused(tmp_path, monkeypatch, header):
    path = tmp_path / "d.csv"
    sep = ";" if ";" in header else ","
    path.write_text(header + "\n" + sep.join(["r1", "s", "1", "approved", "r2"]) + "\n")
    got = load(path, direct=True, monkeypatch=monkeypatch)
    assert got["counts"] == (1, 0, 1)
    assert "twice" in got["quarantine"][0][2]


def test_unknown_columns_keep_their_names(tmp_path, monkeypatch):
    """Only known names are made lower-case: an extra "Channel" column stays as written."""
    path = tmp_path / "d.csv"
    path.write_text("RUN,STEP,ATTEMPT,DECISION,Channel\nr1,s,1,approved,web\n")
    monkeypatch.setattr(ing, "TYPED_LANE_ENABLED", True)
    con = connect(":memory:")
    f = ingest(con, [path]).files[0]
    assert (f.read, f.loaded, f.quarantined) == (1, 1, 0)
    assert con.execute("SELECT run_id, step, attempt, decision FROM decisions").fetchall() == [
        ("r1", "s", 1, "approved")
    ]


def test_header_naming_no_record_column_says_what_it_found(tmp_path, direct, monkeypatch):
    path = tmp_path / "d.csv"
    path.write_text('Run Id,Step Name,"Result"\nr1,s,approved\n\nr2,s\n')
    got = load(path, direct=direct, monkeypatch=monkeypatch)
    assert got["counts"] == (2, 0, 2)  # every non-blank row is a record, with one reason
    reasons = {r[2] for r in got["quarantine"]}
    assert len(reasons) == 1
    reason = reasons.pop()
    assert "decision" in reason
    assert '(found: "Run Id", "Step Name", "Result")' in reason
