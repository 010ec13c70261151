"""The typed lane and the direct decision-table rows load exactly what the record pipeline loads.

Every file is ingested twice, with the fast paths on and off, and every table
of the two stores is compared row for row (the ingest time aside).
"""

from __future__ import annotations

import copy
import csv
import hashlib
import json
from pathlib import Path

import duckdb
import pytest

import calibrate.ingest as ing
import calibrate.ingest.tables as tables
from calibrate.store import connect

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"
BAD = ROOT / "tests" / "data" / "bad"
TABLES = {
    "runs": "*",
    "checks": "*",
    "answers": "*",
    "decisions": "*",
    "quarantine": "*",
    "files": "* EXCLUDE (ingested_at)",
    "holds": "*",
    "withdrawn": "* EXCLUDE (withdrawn_at)",
}


def _load(
    tmp_path: Path, paths: list[Path], *, fast: bool, monkeypatch, versions=(None,)
) -> tuple[Path, list[dict]]:
    monkeypatch.setattr(ing, "TYPED_LANE_ENABLED", fast)
    monkeypatch.setattr(ing, "TYPED_LANE_MIN_BYTES", 0)
    db = tmp_path / ("fast.duckdb" if fast else "slow.duckdb")
    con = connect(db)
    reports = []
    try:
        for write in versions:  # each writes the next version of the files, then they are ingested
            if write is not None:
                write()
            reports.append(ing.ingest(con, paths).to_dict())
    finally:
        con.close()
    return db, reports


def _differences(
    tmp_path: Path, paths: list[Path], monkeypatch, versions=(None,)
) -> dict[str, tuple[int, int, int]]:
    fast_db, fast_report = _load(
        tmp_path, paths, fast=True, monkeypatch=monkeypatch, versions=versions
    )
    slow_db, slow_report = _load(
        tmp_path, paths, fast=False, monkeypatch=monkeypatch, versions=versions
    )
    assert fast_report == slow_report
    con = duckdb.connect()
    con.execute(f"ATTACH '{fast_db}' AS f (READ_ONLY)")
    con.execute(f"ATTACH '{slow_db}' AS s (READ_ONLY)")
    out = {}
    for table, cols in TABLES.items():
        only_fast = con.execute(
            f"SELECT count(*) FROM (SELECT {cols} FROM f.{table} EXCEPT ALL SELECT {cols} FROM s.{table})"  # noqa: S608
        ).fetchone()[0]
        only_slow = con.execute(
            f"SELECT count(*) FROM (SELECT {cols} FROM s.{table} EXCEPT ALL SELECT {cols} FROM f.{table})"  # noqa: S608
        ).fetchone()[0]
        total = con.execute(f"SELECT count(*) FROM s.{table}").fetchone()[0]  # noqa: S608
        out[table] = (total, only_fast, only_slow)
    con.close()
    return out


def _assert_same(diff: dict[str, tuple[int, int, int]]) -> None:
    bad = {t: d for t, d in diff.items() if d[1] or d[2]}
    assert not bad, f"tables differ (total, only fast, only slow): {bad}"


def _checked_step(doc: dict) -> dict:
    return next(s for s in doc["steps"].values() if isinstance(s.get("check"), dict))


def _approve_step(doc: dict) -> dict | None:
    return next((s for s in doc["steps"].values() if "decision" in s), None)


# Each mutation changes one leaf, so the strict reader still takes the line; the
# lane must then leave the record to the record pipeline (or load it the same way).
def _mutations() -> list:
    def chk(f):
        def apply(doc):
            f(_checked_step(doc)["check"])

        return apply

    def q0(f):
        def apply(doc):
            f(_checked_step(doc)["check"]["questions"][0])

        return apply

    def approve(f):
        def apply(doc):
            step = _approve_step(doc)
            if step is not None:
                f(step)

        return apply

    return [
        chk(lambda c: c.update(verdict="maybe")),
        chk(lambda c: c.update(verdict=None)),
        chk(lambda c: c.update(at="yesterday")),
        chk(lambda c: c.update(at=12)),
        chk(lambda c: c.update(model=7)),
        chk(lambda c: c.update(advisory="yes")),
        chk(lambda c: c.update(questions=[])),
        chk(lambda c: c.update(questions=None)),
        chk(lambda c: c.update(verdict="unsure", questions=[])),
        # valid: the evaluator did not answer
        chk(lambda c: c.update(verdict="error", questions=None)),
        chk(lambda c: c.update(truncated={"bytes": 10})),  # valid: loaded, flagged truncated
        chk(lambda c: c.update(truncated=False)),
        chk(lambda c: c["questions"].append(copy.deepcopy(c["questions"][0]))),
        q0(lambda q: q.update(answer=1.5)),
        q0(lambda q: q.update(answer="0.4")),
        q0(lambda q: q.update(answer=None)),
        q0(lambda q: q.pop("ask")),
        q0(lambda q: q.update(ask="   ")),
        q0(lambda q: q.update(kind="scale")),
        q0(lambda q: q.update(confidence=2)),
        q0(lambda q: q.update(confidence="high")),
        q0(lambda q: q.update(result="maybe")),
        q0(lambda q: q.update(result=1)),
        approve(lambda s: s.update(decision="ok")),
        approve(lambda s: s.update(at="soon")),
        approve(lambda s: s.update(at=5)),
        approve(lambda s: s.update(reviews="no-such-step")),
        approve(lambda s: s.update(note="  see <b>ticket</b> ")),
        lambda doc: doc.update(run=""),
        lambda doc: doc.update(run=42),  # a numeric run id is accepted
        lambda doc: doc.update(version=2.5),
        lambda doc: _checked_step(doc).update(attempt=0),
        lambda doc: _checked_step(doc).update(attempt=3),
        lambda doc: _checked_step(doc).update(attempt=2.0),  # a whole number written as a float
        lambda doc: _checked_step(doc).update(attempt=2.5),
        lambda doc: _checked_step(doc).update(
            history=[{"attempt": 1.0, "check": copy.deepcopy(_checked_step(doc)["check"])}]
        ),
        chk(lambda c: c["questions"].append({"ask": "Level?", "kind": "rubric", "answer": 2.0})),
        chk(lambda c: c["questions"].append({"ask": "Level?", "kind": "rubric", "answer": 1.5})),
        lambda doc: _checked_step(doc).update(
            history=[{"attempt": "two", "check": copy.deepcopy(_checked_step(doc)["check"])}]
        ),
        lambda doc: _checked_step(doc).update(
            escalation={
                "check": copy.deepcopy(_checked_step(doc)["check"]),
                "resolution": "completed",
                "output": "own",
                "by": "zoe",
                "at": "2026-08-04T00:00:00Z",
            }
        ),
        lambda doc: doc.update(handoff={"check": copy.deepcopy(_checked_step(doc)["check"])}),
        _approve_first,
        lambda doc: doc["steps"].update(later=None),  # a step with nothing recorded yet
        # Blank names and impossible UTC offsets (black-box F2, F3).
        lambda doc: doc.update(run="  "),
        lambda doc: doc.update(process=""),
        lambda doc: doc.update(
            steps={"" if k == next(iter(doc["steps"])) else k: v for k, v in doc["steps"].items()}
        ),  # fmt: skip
        chk(lambda c: c.update(at="2026-08-03T00:00:00+25:00")),
        chk(lambda c: c.update(at="2026-08-03T00:00:00-00:99")),
        approve(lambda s: s.update(at="2026-08-04T00:00:00+24:00")),
    ]


def _approve_first(doc: dict) -> None:
    """Steps in another key order: approve steps first, without "reviews"."""
    steps = doc["steps"]
    for step in steps.values():
        if isinstance(step, dict):
            step.pop("reviews", None)
    doc["steps"] = dict(sorted(steps.items(), key=lambda kv: "decision" not in kv[1]))


def _mixed_file(tmp_path: Path) -> tuple[Path, int]:
    """Sample run documents, every mutation applied to some, and other kinds of record."""
    docs = [json.loads(line) for line in (SAMPLE / "runs.jsonl").read_text().splitlines()[:400]]
    lines = []
    mutations = _mutations()
    for i, doc in enumerate(docs):
        if i % 7 == 3:
            mutations[(i // 7) % len(mutations)](doc)
        lines.append(json.dumps(doc))
    # A verdict line repeating a run document's check (the same natural key), and a decision record.
    first = docs[0]
    step_id = next(k for k, s in first["steps"].items() if isinstance(s.get("check"), dict))
    lines.append(
        json.dumps(
            {"run": first["run"], "step": step_id, "check": first["steps"][step_id]["check"]}
        )
    )
    lines.append(
        json.dumps(
            {"run": first["run"], "step": step_id, "attempt": 1, "decision": "approved", "by": "x"}
        )
    )
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, len(lines)


def test_mixed_file_loads_the_same_both_ways(tmp_path, monkeypatch):
    path, n = _mixed_file(tmp_path)
    diff = _differences(tmp_path, [path, SAMPLE / "process-expense-review.yaml"], monkeypatch)
    _assert_same(diff)
    assert diff["checks"][0] > 300 and diff["quarantine"][0] > 20


def test_the_typed_lane_takes_the_clean_records_and_leaves_the_rest(tmp_path):
    path, n = _mixed_file(tmp_path)
    con = duckdb.connect()
    slow = ing._typed_lane(con, path, n)
    assert slow is not None, "the strict reader should take this file"
    taken = con.execute("SELECT count(*) FROM f_recs").fetchone()[0]
    # the two last lines are not run documents; most mutated ones are left over
    assert {n - 1, n} <= set(slow.tolist())
    assert 20 < len(slow) < 80 and taken + len(slow) == n


@pytest.mark.parametrize(
    "content",
    [
        "{}\n\n{}\n",  # a blank line: row numbers would not be line numbers
        '{"run": "a", "steps": {"s": {"check": "not an object"}}}\n',  # a shape the reader refuses
        '{"run": "a", "run": "b", "steps": {}}\n',  # a duplicate key
        "not json\n",
    ],
)
def test_files_the_reader_cannot_take_whole_go_to_the_record_pipeline(tmp_path, content):
    path = tmp_path / "x.jsonl"
    path.write_text(content)
    con = duckdb.connect()
    assert ing._typed_lane(con, path, content.count("\n")) is None
    assert con.execute("SELECT count(*) FROM f_recs").fetchone()[0] == 0


#: Repeats of a key calibrate reads, written into a sample line's text (black-box F1); the typed
#: lane's reader refuses a file that holds one, and the record pipeline quarantines the record.
READ_KEY_REPEATS = [
    ('{"run":', '{"run":"other","run":'),
    ('"verdict":"', '"verdict":"error","verdict":"'),
    ('"kind":"', '"kind":"rubric","kind":"'),
    ('"check":{', '"attempt":2,"attempt":1,"check":{'),
    ('"decision":"', '"decision":"rejected","decision":"'),
]
#: Repeats of keys it does not read: nothing to tell apart, the lane takes them.
UNREAD_KEY_REPEATS = [
    ('"status":"', '"status":"running","status":"'),
    ('{"run":', '{"exported_by":"a","exported_by":"b","run":'),
]


def _repeats_file(tmp_path: Path, repeats: list[tuple[str, str]]) -> tuple[Path, int, int]:
    lines = (SAMPLE / "runs.jsonl").read_text(encoding="utf-8").splitlines()[:300]
    changed = 0
    for i in range(3, len(lines), 10):
        old, new = repeats[(i // 10) % len(repeats)]
        if old in lines[i]:
            lines[i] = lines[i].replace(old, new, 1)
            changed += 1
    path = tmp_path / "repeats.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, len(lines), changed


def test_a_repeated_key_that_is_read_is_quarantined_both_ways(tmp_path, monkeypatch):
    path, n, changed = _repeats_file(tmp_path, READ_KEY_REPEATS)
    assert ing._typed_lane(duckdb.connect(), path, n) is None  # the reader refuses the file
    diff = _differences(tmp_path, [path], monkeypatch)
    _assert_same(diff)
    assert changed > 20 and diff["quarantine"][0] == changed


def test_a_repeated_key_that_is_not_read_loads_the_same_both_ways(tmp_path, monkeypatch):
    path, n, changed = _repeats_file(tmp_path, UNREAD_KEY_REPEATS)
    con = duckdb.connect()
    slow = ing._typed_lane(con, path, n)
    assert slow is not None and len(slow) == 0  # the lane takes every record
    diff = _differences(tmp_path, [path], monkeypatch)
    _assert_same(diff)
    assert changed > 20 and diff["quarantine"][0] == 0


def test_bad_corpus_loads_the_same_both_ways(tmp_path, monkeypatch):
    _assert_same(_differences(tmp_path, [BAD], monkeypatch))


def test_sample_loads_the_same_both_ways(tmp_path, monkeypatch):
    _assert_same(_differences(tmp_path, [SAMPLE], monkeypatch))


def test_decision_table_with_good_and_bad_rows_loads_the_same_both_ways(tmp_path, monkeypatch):
    rows = [
        ["run", "process", "step", "attempt", "decision", "by", "at", "note"],
        ["r1", "p", "s", "1", "approved", "ana", "2026-08-03T00:00:00Z", ""],
        ["r2", "p", "s", "1", "rejected", "ben", "", "looks off"],
        ["r3", "p", "s", "1.5", "approved", "ana", "", ""],  # attempt not an integer
        ["r4", "p", "s", "1", "maybe", "ana", "", ""],  # unknown decision
        ["", "p", "s", "1", "approved", "ana", "", ""],  # no run
        ["r5", "p", "", "1", "approved", "ana", "", ""],  # no step
        ["r6", "p", "s", "1", "approved", "ana", "tomorrow", ""],  # bad time
        ["r7", "p", "s", " 2 ", "returned", "", "2026-08-03", "=cmd()"],
        ["r1", "p", "s", "1", "approved", "ana", "2026-08-03T00:00:00Z", ""],  # duplicate row
        ["r8", "p", "s", "1", "", "ana", "", ""],  # no decision: pending, not quarantined
    ]
    path = tmp_path / "decisions.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    diff = _differences(tmp_path, [path], monkeypatch)
    _assert_same(diff)
    assert diff["decisions"][0] == 3 and diff["quarantine"][0] == 5


def test_a_line_longer_than_max_line_bytes_keeps_the_file_off_the_typed_lane(tmp_path, monkeypatch):
    limit = ing.READ_BLOCK  # the smallest --max-line-bytes the lane is used with
    big = json.dumps({"run": "big", "steps": {"s": {"note": "x" * (limit + 10)}}})
    path = tmp_path / "long.jsonl"
    path.write_text('{"run": "a", "steps": {}}\n' + big + "\n", encoding="utf-8")
    assert ing._scan(path).line_bound > limit
    monkeypatch.setattr(ing, "TYPED_LANE_MIN_BYTES", 0)
    con = connect(tmp_path / "s.duckdb")
    report = ing.ingest(con, [path], max_line_bytes=limit)
    assert report.totals == {
        "read": 2,
        "loaded": 1,
        "new": 0,
        "quarantined": 1,
        "withdrawn": 0,
        "pending": 0,
        "skipped": 0,
    }
    reason = con.execute("SELECT reason FROM quarantine").fetchone()[0]
    assert "longer than --max-line-bytes" in reason


def test_scan_counts_lines_and_bounds_their_length(tmp_path, monkeypatch):
    monkeypatch.setattr(ing, "READ_BLOCK", 8)
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"ab\n" + b"c" * 20 + b"\n" + b"tail")
    scan = ing._scan(path)
    assert scan.lines == 3 and scan.line_bound == 20
    assert scan.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_grown_file_adds_the_same_rows_both_ways(tmp_path, monkeypatch):
    lines = (SAMPLE / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    monkeypatch.setattr(ing, "TYPED_LANE_MIN_BYTES", 0)
    stores = {}
    for fast in (True, False):
        monkeypatch.setattr(ing, "TYPED_LANE_ENABLED", fast)
        folder = tmp_path / ("fast" if fast else "slow")
        folder.mkdir()
        path = folder / "runs.jsonl"
        con = connect(folder / "store.duckdb")
        path.write_text("\n".join(lines[:300]) + "\n", encoding="utf-8")
        first = ing.ingest(con, [path]).totals
        path.write_text("\n".join(lines[:450]) + "\n", encoding="utf-8")  # the file grew
        second = ing.ingest(con, [path]).totals
        rows = {
            t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # noqa: S608 - fixed names
            for t in ("runs", "checks", "answers", "decisions")
        }
        con.close()
        stores[fast] = (first, second, rows)
    assert stores[True] == stores[False]
    first, second, rows = stores[True]
    assert first["read"] == 300 and second["read"] == 450 and rows["runs"] == 450
    assert 0 < second["new"] <= 150


def test_newer_versions_of_files_replace_the_same_rows_both_ways(tmp_path, monkeypatch):
    """Versions that drop, change, add and restore records withdraw the same rows both ways."""
    path, _ = _mixed_file(tmp_path)
    first = path.read_text(encoding="utf-8").splitlines(keepends=True)
    docs = [json.loads(line) for line in first[:200]]
    for doc in docs[::5]:  # changed answers, notes and decisions: the same keys, other content
        questions = _checked_step(doc)["check"].get("questions")
        if isinstance(questions, list) and questions and isinstance(questions[0], dict):
            questions[0]["answer"] = 0.5
        approve = _approve_step(doc)
        if approve is not None:
            approve["note"] = "changed"
            approve["decision"] = (
                "rejected" if approve.get("decision") == "approved" else "approved"
            )
    second = [json.dumps(doc) + "\n" for doc in docs[::2]] + first[300:]  # some records dropped
    table = tmp_path / "decisions.csv"
    rows = (SAMPLE / "decisions.csv").read_text(encoding="utf-8").splitlines(keepends=True)

    def version(runs: list[str], decisions: list[str]):
        def write() -> None:
            path.write_text("".join(runs), encoding="utf-8")
            table.write_text("".join(decisions), encoding="utf-8")

        return write

    flipped = [r.replace(",approved,", ",rejected,") for r in rows[:60]]
    versions = [
        version(first, rows[:80]),
        version(second, [rows[0], *flipped[1:], *rows[100:120]]),
        version(first, rows[:80]),  # back to the first content
    ]
    diff = _differences(tmp_path, [path, table], monkeypatch, versions=versions)
    _assert_same(diff)
    assert diff["withdrawn"][0] > 100 and diff["holds"][0] == 0


@pytest.mark.parametrize(
    "extra",
    [
        [],
        [
            ["r9", "p", "s", "1", "approved", "ana", "", ""],
            [" ", " ", "", "", "", "", "", "\t"],
        ],  # blank row
        [["r9", "p", "s", "1", "approved"]],  # ragged row
        [["r9", "p", "s", "1", "approved", "ana", "", "a, b"]],  # a quoted cell
    ],
)
@pytest.mark.parametrize("ending", ["\n", "\r\n"])  # Python's csv module writes CRLF
def test_a_plain_decision_table_is_read_by_duckdb_and_loads_the_same(
    tmp_path, monkeypatch, extra, ending
):
    """DuckDB's CSV reader takes only plain tables; any other shape is left to Python's reader."""
    rows = [
        ["run", "process", "step", "attempt", "decision", "by", "at", "note"],
        ["r1", "p", "s", "1", " Approved ", "ana", "2026-08-03T00:00:00Z", "  spaced  "],
        ["r2", "p", "s", "1.0", "rejected", "", "", "=cmd()"],
        ["r3", "p", "s", "x", "approved", "ana", "", ""],
        ["r4", "", "s", "1", "maybe", "ana", "soon", ""],
        ["r5", "p", "s", "2", "approved", "ana", "2026-08-03", ""],
    ] + extra
    path = tmp_path / "decisions.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator=ending).writerows(rows)
    taken = []
    direct = tables._stage_decision_table_directly

    def spy(*args, **kwargs):
        taken.append(direct(*args, **kwargs))
        return taken[-1]

    monkeypatch.setattr(tables, "_stage_decision_table_directly", spy)
    diff = _differences(tmp_path, [path], monkeypatch)
    _assert_same(diff)
    assert taken == [not extra]
    assert diff["decisions"][0] == 3 + sum(len(r) == 8 and r[0] == "r9" for r in extra)
