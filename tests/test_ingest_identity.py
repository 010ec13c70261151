"""What identifies a run, a check and a decision: conflicts are quarantined or flagged, never merged.

Also the records that are neither (a decision table's blank decisions: pending) and files whose
text ingest cannot read as it looks (UTF-16 without a byte order mark).
"""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import calibrate.ingest as ing
from calibrate.cli import app
from calibrate.cli.options import left_out_text
from calibrate.consistency import flag_counts, flag_rows
from calibrate.status import store_status
from calibrate.store import connect

HEADER = ["run", "process", "step", "attempt", "decision", "by", "at", "note"]


def _verdict_line(examples_dir: Path) -> dict:
    return json.loads((examples_dir / "verdicts.jsonl").read_text().splitlines()[0])


def _write_lines(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _write_csv(path: Path, rows: list[list[str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\n").writerows([HEADER, *rows])
    return path


@pytest.fixture(params=[True, False], ids=["lane", "pipeline"])
def lane(request, monkeypatch) -> bool:
    """Both ways of loading: the typed lane (and DuckDB's reader for decision tables), or not."""
    monkeypatch.setattr(ing, "TYPED_LANE_ENABLED", request.param)
    monkeypatch.setattr(ing, "TYPED_LANE_MIN_BYTES", 0)
    return request.param


def test_a_record_naming_another_process_for_a_stored_run_is_quarantined(
    tmp_path, examples_dir, lane
):
    """Fails on the old code: it loaded as "(0 new)", merged into the other process's run."""
    a = _verdict_line(examples_dir)
    run_id, step = a["run"], a["step"]
    b = copy.deepcopy(a)
    b["process"] = "other-process"
    con = connect(":memory:")
    ing.ingest(con, [_write_lines(tmp_path / "a.jsonl", [a])])
    report = ing.ingest(con, [_write_lines(tmp_path / "b.jsonl", [b])])
    f = report.files[0]
    assert (f.read, f.loaded, f.quarantined) == (1, 0, 1)
    reason, raw = con.execute("SELECT reason, raw FROM quarantine").fetchone()
    assert f'run "{run_id}" is a run of process "vendor-onboarding" in ' in reason
    assert str(tmp_path / "a.jsonl") in reason and 'names process "other-process"' in reason
    assert json.loads(raw)["process"] == "other-process"
    assert con.execute("SELECT DISTINCT process FROM checks").fetchall() == [("vendor-onboarding",)]
    # A decision naming the other process labels nothing; one naming the run's process (or none) does.
    rows = [
        [run_id, "vendor-onboarding", step, "1", "approved", "ana", "2026-10-20T10:00:00Z", ""],
        [run_id, "other-process", step, "1", "rejected", "bob", "2026-10-20T11:00:00Z", ""],
    ]
    report = ing.ingest(con, [_write_csv(tmp_path / "dec.csv", rows)])
    f = report.files[0]
    assert (f.read, f.loaded, f.quarantined) == (2, 1, 1)
    line, reason, raw = con.execute(
        "SELECT json_path, reason, raw FROM quarantine WHERE path LIKE '%dec.csv'"
    ).fetchone()
    assert line == "row 3" and 'names process "other-process"' in reason and "rejected" in raw
    status = store_status(con)
    assert status["conflicts"] == 0 and status["labeled_checks"] == 1
    assert con.execute("SELECT decision FROM labeled").fetchall() == [("approved",)]


def test_a_mistyped_decision_table_ingested_first_quarantines_no_run(tmp_path, examples_dir, lane):
    """Outside review: a decision table ingested before the runs (a folder reads decisions.csv
    first) quarantined the server's run for good; the run loads and the decision labels nothing."""
    a = _verdict_line(examples_dir)
    run_id, step = a["run"], a["step"]
    con = connect(":memory:")
    row = [run_id, "other-process", step, "1", "rejected", "bob", "2026-10-20T11:00:00Z", ""]
    first = ing.ingest(con, [_write_csv(tmp_path / "dec.csv", [row])]).files[0]
    assert (first.read, first.loaded, first.quarantined) == (1, 1, 0)
    then = ing.ingest(con, [_write_lines(tmp_path / "a.jsonl", [a])]).files[0]
    assert (then.read, then.loaded, then.quarantined) == (1, 1, 0)
    assert con.execute("SELECT DISTINCT process FROM checks").fetchall() == [("vendor-onboarding",)]
    assert con.execute("SELECT count(*) FROM labeled WHERE decision IS NOT NULL").fetchone() == (0,)


def test_a_run_named_with_two_processes_in_one_file_is_quarantined_whole(
    tmp_path, examples_dir, lane
):
    """Fails on the old code: one of the processes was kept, the other silently dropped."""
    runs = [json.loads(line) for line in (examples_dir / "runs.jsonl").read_text().splitlines()]
    other = copy.deepcopy(runs[0])
    other["process"] = "other-process"
    con = connect(":memory:")
    report = ing.ingest(con, [_write_lines(tmp_path / "runs.jsonl", [*runs, other])])
    f = report.files[0]
    assert (f.read, f.quarantined) == (len(runs) + 1, 2)
    reasons = con.execute("SELECT DISTINCT reason FROM quarantine").fetchall()
    assert reasons == [
        (
            f'run "{runs[0]["run"]}" is named with two processes in this file ("other-process", '
            '"vendor-onboarding"): a run id names one run of one process; correct "process" or '
            '"run" in the records that are wrong',
        )
    ]
    assert con.execute(
        "SELECT count(*) FROM runs WHERE run_id = ?", [runs[0]["run"]]
    ).fetchone() == (0,)


def test_a_newer_version_of_the_same_file_may_change_a_runs_process(tmp_path, examples_dir):
    a = _verdict_line(examples_dir)
    path = _write_lines(tmp_path / "a.jsonl", [a])
    con = connect(":memory:")
    ing.ingest(con, [path])
    _write_lines(path, [{**a, "process": "renamed"}])
    f = ing.ingest(con, [path]).files[0]
    assert (f.loaded, f.quarantined) == (1, 0)
    assert con.execute("SELECT process FROM runs").fetchall() == [("renamed",)]


def test_two_verdicts_for_one_submission_at_the_same_time_are_flagged(tmp_path, examples_dir):
    """Fails on the old code: both were stored (one unlabeled) with no flag."""
    a = _verdict_line(examples_dir)
    c = copy.deepcopy(a)
    c["check"]["questions"][0].update(answer=0.5, result="fail")
    c["check"]["verdict"] = "fail"
    con = connect(":memory:")
    ing.ingest(
        con, [_write_lines(tmp_path / "a.jsonl", [a]), _write_lines(tmp_path / "c.jsonl", [c])]
    )
    assert flag_counts(con)["checks_at_same_time"] == 1
    (row,) = [r for r in flag_rows(con) if r["flag"] == "checks_at_same_time"]
    assert row["run_id"] == a["run"] and row["detail"].startswith("2 checks at ")
    assert "fail" in row["detail"] and "pass" in row["detail"]


def _pending_table(tmp_path: Path, examples_dir: Path, filled: int) -> Path:
    lines = (examples_dir / "verdicts.jsonl").read_text().splitlines()
    rows = []
    for i, line in enumerate(lines):
        r = json.loads(line)
        decided = ["approved", "auditor", "2026-12-31"] if i < filled else ["", "", ""]
        rows.append([r["run"], r["process"], r["step"], str(r.get("attempt", 1)), *decided, ""])
    return _write_csv(tmp_path / "audit.csv", rows)


def test_blank_decisions_are_pending_not_quarantined(tmp_path, examples_dir, lane):
    """Fails on the old code: blank rows were quarantined and --strict exited 1."""
    db = tmp_path / "s.duckdb"
    con = connect(db)
    ing.ingest(con, [examples_dir / "verdicts.jsonl"])
    n = len((examples_dir / "verdicts.jsonl").read_text().splitlines())
    path = _pending_table(tmp_path, examples_dir, filled=1)
    f = ing.ingest(con, [path]).files[0]
    assert (f.read, f.loaded, f.quarantined, f.pending) == (n, 1, 0, n - 1)
    assert f.read == f.loaded + f.quarantined + f.pending
    again = ing.ingest(con, [path]).files[0]
    assert (again.status, again.pending) == ("unchanged", n - 1)
    con.close()
    _pending_table(tmp_path, examples_dir, filled=0)  # a blank string is pending too
    path.write_text(path.read_text().replace(",,,\n", ", ,,\n", 1))
    result = CliRunner().invoke(app, ["ingest", "--strict", "--db", str(db), str(path)])
    assert result.exit_code == 0, result.output
    assert f"pending {n}" in result.stdout
    assert f"pending: {n} rows without a decision, not loaded" in result.stderr
    # Filled in, the file's next version loads them.
    _pending_table(tmp_path, examples_dir, filled=n)
    con = connect(db)
    f = ing.ingest(con, [path]).files[0]
    assert (f.loaded, f.quarantined, f.pending) == (n, 0, 0)
    assert con.execute("SELECT count(*) FROM quarantine").fetchone() == (0,)


def test_a_json_record_with_a_null_decision_is_pending(tmp_path):
    con = connect(":memory:")
    path = _write_lines(
        tmp_path / "d.jsonl", [{"run": "r", "step": "s", "attempt": 1, "decision": None}]
    )
    f = ing.ingest(con, [path]).files[0]
    assert (f.read, f.loaded, f.quarantined, f.pending) == (1, 0, 0, 1)


@pytest.mark.parametrize("name", ["dec.csv", "verdicts.jsonl", "run.json", "process.yaml"])
@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_byte_order_mark_is_named(tmp_path, examples_dir, name, codec):
    """Fails on the old code for the CSV: "header names none of decision ... (found: ... "decision" ...)"."""
    text = (
        ",".join(HEADER) + "\nr-0101,vendor-onboarding,check_vendor,1,approved,zoë,2026-10-21,\n"
        if name.endswith(".csv")
        else (examples_dir / "verdicts.jsonl").read_text().splitlines()[0] + "\n"
    )
    path = tmp_path / name
    path.write_bytes(text.encode(codec))
    con = connect(":memory:")
    f = ing.ingest(con, [path]).files[0]
    assert (f.read, f.quarantined) == (1, 1)
    reason, raw = con.execute("SELECT reason, raw FROM quarantine").fetchone()
    assert reason.startswith("file looks like UTF-16 without a byte order mark")
    assert "\x00" not in raw and raw.startswith(text[:5])


def test_a_csv_header_with_nul_bytes_says_so(tmp_path):
    path = tmp_path / "dec.csv"
    path.write_bytes(b"run,process,step,attempt,deci\x00sion\nr,p,s,1,approved\n")
    con = connect(":memory:")
    ing.ingest(con, [path])
    (reason,) = con.execute("SELECT reason FROM quarantine").fetchone()
    assert "NUL bytes" in reason


def test_a_step_id_used_twice_in_a_process_file_is_quarantined(tmp_path):
    """Fails on the old code: both steps' questions were stored under the one id."""
    path = tmp_path / "p.yaml"
    path.write_text(
        "process: p\nversion: 1\nsteps:\n"
        "  - id: s\n    check: The first.\n"
        "  - id: s\n    check: The second.\n"
        "  - id: t\n    check: Another.\n"
    )
    con = connect(":memory:")
    f = ing.ingest(con, [path]).files[0]
    assert (f.read, f.loaded, f.quarantined) == (3, 1, 2)
    reasons = [
        r for (r,) in con.execute("SELECT reason FROM quarantine ORDER BY json_path").fetchall()
    ]
    assert reasons[0] == (
        'steps[0].check: step id "s" is used by steps[0], steps[1]: a step id names one step of '
        "a process; rename the others"
    )
    assert con.execute("SELECT step FROM questions").fetchall() == [("t",)]


def test_status_counts_files_once_and_says_their_versions(tmp_path, examples_dir):
    """Fails on the old code: "files" counted every version."""
    a = _verdict_line(examples_dir)
    path = _write_lines(tmp_path / "a.jsonl", [a])
    db = tmp_path / "s.duckdb"
    con = connect(db)
    ing.ingest(con, [path])
    _write_lines(path, [a, {**a, "run": "other"}])
    ing.ingest(con, [path])
    status = store_status(con)
    con.close()
    assert (status["files"], status["file_versions"]) == (1, 2)
    result = CliRunner().invoke(app, ["status", "--db", str(db)])
    assert "files 1 (2 versions)" in result.stdout


def test_left_out_text_says_one_decision():
    text = left_out_text({"escalations": 1, "undrawn": 0})
    assert text.startswith(
        "1 decision left out of the labeled figures: 1 escalation after the switch"
    )
