"""Ingest: every input form, idempotency, quarantine, label mapping and conflicts."""

from __future__ import annotations

import json
import shutil

import duckdb
import pandas as pd
import pytest

from calibrate.ingest import ingest
from calibrate.status import store_status
from calibrate.store import connect

TABLES = ["runs", "checks", "answers", "decisions", "questions", "limits", "quarantine"]


def counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}  # noqa: S608


def test_examples_load_with_expected_rows(examples_dir):
    con = connect(":memory:")
    report = ingest(con, [examples_dir])
    t = report.totals
    assert t["read"] == t["loaded"] + t["quarantined"]
    assert t["quarantined"] == 0
    c = counts(con)
    # 6 run documents hold 7 checks (r-0003 has a history attempt); 2 verdict lines add 2.
    assert c["checks"] == 9
    assert c["decisions"] == 7
    assert c["questions"] == 4
    labels = dict(
        con.execute(
            "SELECT run_id || '#' || attempt, label FROM labeled WHERE is_latest"
        ).fetchall()
    )
    assert labels["r-0001#1"] is True
    assert labels["r-0002#1"] is False
    assert labels["r-0003#1"] is False and labels["r-0003#2"] is True
    assert labels["r-0004#1"] is False  # completed with the person's own output = replaced
    assert labels["r-0005#1"] is None  # blocking fail in handoff, no decision yet
    assert labels["r-0102#1"] is False  # returned
    recorded = dict(
        con.execute("SELECT run_id || '#' || attempt, recorded_in FROM checks").fetchall()
    )
    assert recorded["r-0003#1"] == "history"
    assert recorded["r-0004#1"] == "escalation.check"
    assert recorded["r-0005#1"] == "handoff.check"
    assert recorded["r-0101#1"] == "verdict line"
    truncated = con.execute("SELECT truncated FROM checks WHERE run_id = 'r-0006'").fetchone()[0]
    assert truncated is True
    note = con.execute("SELECT note FROM decisions WHERE run_id = 'r-0102'").fetchone()[0]
    assert note == 'Summary says "cleared" but the EU list search is missing.'


def test_round_trip_counts_equal_generator(tmp_path):
    from calibrate.simulate import simulate

    manifest = simulate(tmp_path / "sim", runs=300, seed=3)
    con = connect(tmp_path / "s.duckdb")
    ingest(con, [tmp_path / "sim"])
    info = store_status(con)
    for key in ("runs", "checks", "answers", "decisions", "labeled_checks", "unlabeled_checks"):
        assert info[key] == manifest[key], key
    assert info["quarantined"] == 0
    truth = pd.read_csv(tmp_path / "sim" / ".truth" / "truth.csv")
    assert len(truth) == info["checks"]


def test_same_rows_whichever_form(tmp_path, examples_dir):
    """Verdict lines as JSONL, a JSON array, Parquet; decisions as CSV, JSONL, Parquet."""
    verdicts = [
        json.loads(line) for line in (examples_dir / "verdicts.jsonl").read_text().splitlines()
    ]
    decisions = pd.read_csv(examples_dir / "decisions.csv", dtype=str, keep_default_na=False)
    forms = {}
    base = connect(":memory:")
    ingest(base, [examples_dir / "verdicts.jsonl", examples_dir / "decisions.csv"])
    expect_checks = base.execute(
        "SELECT * EXCLUDE (file_id, line_no, json_path) FROM checks ORDER BY check_id"
    ).fetchall()
    expect_answers = base.execute("SELECT * FROM answers ORDER BY check_id, position").fetchall()
    expect_dec = base.execute(
        "SELECT * EXCLUDE (file_id, line_no, json_path, source) FROM decisions ORDER BY decision_id"
    ).fetchall()

    d = tmp_path / "json"
    d.mkdir()
    (d / "verdicts.json").write_text(json.dumps(verdicts))
    (d / "decisions.jsonl").write_text(
        "\n".join(json.dumps(r) for r in decisions.to_dict("records"))
    )
    forms["json"] = d
    p = tmp_path / "parquet"
    p.mkdir()
    con = duckdb.connect()
    vframe = pd.DataFrame([{**v, "check": json.dumps(v["check"])} for v in verdicts])
    con.register("v", vframe)
    con.execute(f"COPY v TO '{p / 'verdicts.parquet'}' (FORMAT parquet)")
    con.register("d", decisions)
    con.execute(f"COPY d TO '{p / 'decisions.parquet'}' (FORMAT parquet)")
    forms["parquet"] = p
    for name, folder in forms.items():
        store = connect(":memory:")
        report = ingest(store, [folder])
        assert report.totals["quarantined"] == 0, (name, report)
        got_checks = store.execute(
            "SELECT * EXCLUDE (file_id, line_no, json_path) FROM checks ORDER BY check_id"
        ).fetchall()
        assert [r[:-1] for r in got_checks] == [r[:-1] for r in expect_checks], name
        assert (
            store.execute("SELECT * FROM answers ORDER BY check_id, position").fetchall()
            == expect_answers
        )
        got_dec = store.execute(
            "SELECT * EXCLUDE (file_id, line_no, json_path, source) FROM decisions ORDER BY decision_id"
        ).fetchall()
        assert got_dec == expect_dec, name


def test_single_run_json_file(tmp_path, examples_dir):
    first = (examples_dir / "runs.jsonl").read_text().splitlines()[2]
    (tmp_path / "r.json").write_text(json.dumps(json.loads(first), indent=2))
    con = connect(":memory:")
    report = ingest(con, [tmp_path / "r.json"])
    assert report.totals == {
        "read": 1,
        "loaded": 1,
        "new": 1,
        "quarantined": 0,
        "withdrawn": 0,
        "pending": 0,
        "skipped": 0,
    }
    assert con.execute("SELECT count(*) FROM checks").fetchone()[0] == 2


def test_idempotent_and_grown_file(tmp_path, sample_dir):
    folder = tmp_path / "exp"
    shutil.copytree(sample_dir, folder)
    con = connect(tmp_path / "s.duckdb")
    ingest(con, [folder])
    first = store_status(con)
    again = ingest(con, [folder])
    assert all(f.status in ("unchanged", "skipped") for f in again.files)
    assert store_status(con) == first

    runs = (folder / "runs.jsonl").read_text().splitlines(keepends=True)
    half = tmp_path / "grow" / "runs.jsonl"
    half.parent.mkdir()
    half.write_text("".join(runs[:100]))
    con2 = connect(tmp_path / "g.duckdb")
    ingest(con2, [half])
    n_checks = con2.execute("SELECT count(*) FROM checks").fetchone()[0]
    half.write_text("".join(runs[:150]))
    grown = ingest(con2, [half])
    assert grown.files[0].read == 150 and grown.files[0].new == 50
    whole = connect(":memory:")
    sub = tmp_path / "exact" / "runs.jsonl"
    sub.parent.mkdir()
    sub.write_text("".join(runs[:150]))
    ingest(whole, [sub])
    assert (
        con2.execute("SELECT count(*) FROM checks").fetchone()[0]
        == whole.execute("SELECT count(*) FROM checks").fetchone()[0]
    )
    assert con2.execute("SELECT count(*) FROM checks").fetchone()[0] > n_checks


GOOD_Q = {"ask": "Is it right?", "kind": "yes_no", "answer": 0.95, "result": "pass"}


def verdict_line(run: str, questions: list, **check) -> str:
    body = {
        "verdict": "pass",
        "advisory": True,
        "model": "m1",
        "questions": questions,
        "at": "2026-10-01T10:00:00Z",
    }
    body.update(check)
    return json.dumps(
        {"run": run, "process": "p", "version": "1", "step": "s", "attempt": 1, "check": body}
    )


BAD_LINES = {
    "not valid JSON": '{"run": "r-x", "step": ',
    "outside [0, 1]": verdict_line("r1", [{**GOOD_Q, "answer": 1.7}]),
    "not a number": verdict_line("r2", [{**GOOD_Q, "answer": "high"}]),
    "not a finite number": verdict_line("r3", [{**GOOD_Q, "answer": float("nan")}]),
    'unknown kind "scale"': verdict_line("r4", [{**GOOD_Q, "kind": "scale"}]),
    'has no "ask"': verdict_line("r5", [{k: v for k, v in GOOD_Q.items() if k != "ask"}]),
    'has no "answer"': verdict_line("r6", [{k: v for k, v in GOOD_Q.items() if k != "answer"}]),
    'has no "verdict"': json.dumps({"run": "r7", "step": "s", "check": {"questions": [GOOD_Q]}}),
    # A null question among good ones (found by the property test: it failed the whole file).
    "questions[1] is not an object": verdict_line("r7b", [GOOD_Q, None]),
    "confidence 1.5": verdict_line(
        "r8", [{"ask": "c?", "kind": "choice", "answer": "a", "confidence": 1.5, "result": "pass"}]
    ),
    "non-negative integer level": verdict_line(
        "r9", [{"ask": "r?", "kind": "rubric", "answer": -1, "confidence": 0.9, "result": "fail"}]
    ),
    "expected an object": "[1, 2, 3]",
    "asked twice": verdict_line("r10", [GOOD_Q, GOOD_Q]),
    "is not an ISO 8601 time": verdict_line("r11", [GOOD_Q], at="yesterday"),
}


def test_bad_records_quarantined_with_reasons(tmp_path):
    lines = [verdict_line("good-1", [GOOD_Q])]
    lines += list(BAD_LINES.values())
    lines.append(verdict_line("good-2", [GOOD_Q]))
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    con = connect(":memory:")
    report = ingest(con, [path])
    f = report.files[0]
    assert f.read == len(lines)
    assert f.quarantined == len(BAD_LINES)
    assert f.loaded == 2 and f.read == f.loaded + f.quarantined
    rows = con.execute("SELECT line_no, reason, raw FROM quarantine ORDER BY line_no").fetchall()
    assert [r[0] for r in rows] == list(range(2, 2 + len(BAD_LINES)))
    for (line_no, reason, raw), (needle, line) in zip(rows, BAD_LINES.items(), strict=True):
        assert needle in reason, (line_no, reason)
        assert raw == line
    assert sorted(r[0] for r in con.execute("SELECT run_id FROM checks").fetchall()) == [
        "good-1",
        "good-2",
    ]


def test_a_bad_attempt_is_said_at_its_own_field(tmp_path):
    # A verdict line's attempt is top-level ($.attempt), not a field of its check; a run
    # document's is its step's, or its history entry's.
    run = json.loads(verdict_line("r3", [GOOD_Q]))
    body = run.pop("check")
    doc = {
        "run": "r3",
        "process": "p",
        "steps": {
            "s": {"attempt": -1, "check": body},
            "t": {"history": [{"attempt": 1.5, "check": body}]},
        },
    }
    lines = [verdict_line("r1", [GOOD_Q]), verdict_line("r2", [GOOD_Q]), json.dumps(doc)]
    lines[0] = lines[0].replace('"attempt": 1', '"attempt": 0')
    lines[1] = lines[1].replace('"attempt": 1', '"attempt": "2"')
    (tmp_path / "v.jsonl").write_text("\n".join(lines) + "\n")
    con = connect(":memory:")
    ingest(con, [tmp_path])
    reasons = [
        r[0] for r in con.execute("SELECT reason FROM quarantine ORDER BY line_no").fetchall()
    ]
    assert reasons == [
        "$.attempt must be a positive integer, not 0",
        '$.attempt must be a positive integer, not "2"',
        "$.steps.s.attempt must be a positive integer, not -1; "
        "$.steps.t.history[0].attempt must be a positive integer, not 1.5",
    ]


def test_label_mapping_and_conflicts(tmp_path):
    lines = [verdict_line(f"r{i}", [GOOD_Q]) for i in range(7)]
    (tmp_path / "v.jsonl").write_text("\n".join(lines) + "\n")
    kinds = ["approved", "completed", "rejected", "returned", "replaced", "failed"]
    rows = [f"r{i},p,s,1,{k},ana,2026-10-02T10:00:00Z," for i, k in enumerate(kinds)]
    rows += [
        "r6,p,s,1,approved,ana,2026-10-02T10:00:00Z,",
        "r6,p,s,1,rejected,ben,2026-10-02T11:00:00Z,late",
    ]
    (tmp_path / "d.csv").write_text(
        "run,process,step,attempt,decision,by,at,note\n" + "\n".join(rows) + "\n"
    )
    con = connect(":memory:")
    ingest(con, [tmp_path])
    got = dict(con.execute("SELECT run_id, label FROM labeled").fetchall())
    assert [got[f"r{i}"] for i in range(6)] == [True, True, False, False, False, False]
    assert got["r6"] is False  # the latest decision wins
    assert con.execute(
        "SELECT conflict, n_decisions FROM labeled WHERE run_id = 'r6'"
    ).fetchone() == (True, 2)
    assert store_status(con)["conflicts"] == 1


def test_unknown_decision_and_missing_column(tmp_path):
    (tmp_path / "v.jsonl").write_text(verdict_line("r1", [GOOD_Q]) + "\n")
    (tmp_path / "d.csv").write_text(
        "run,process,step,attempt,decision,by,at,note\nr1,p,s,1,maybe,ana,2026-10-02T10:00:00Z,\n"
    )
    (tmp_path / "e.csv").write_text("run,process,step,decision,by\nr1,p,s,approved,ana\n")
    con = connect(":memory:")
    report = ingest(con, [tmp_path])
    reasons = [r[0] for r in con.execute("SELECT reason FROM quarantine ORDER BY path").fetchall()]
    assert any(r.startswith("unknown decision") for r in reasons)
    assert any("no attempt" in r for r in reasons)
    # A table row is named by its row number, not by a JSON path that means nothing there.
    assert not any(r.startswith("$") for r in reasons)
    assert report.totals["read"] == report.totals["loaded"] + report.totals["quarantined"]


@pytest.mark.parametrize(
    "content, reason",
    [
        ("process: p\nsteps:\n\t- id: s\n", "not valid YAML"),
        (
            "a: &a [1,1,1,1,1,1,1,1,1]\n"
            + "".join(f"b{i}: &b{i} [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n" for i in range(20)),
            "alias",
        ),
        ("process: p\nsteps:\n  - id: s\n    check: 42\n", "check"),
        # check-1 §2: advisory only beside a check; an unsure list only on a choice question.
        ("process: p\nsteps:\n  - id: s\n    advisory: true\n", "allowed only beside 'check'"),
        (
            "process: p\nsteps:\n  - id: s\n    check:\n      - ask: Done?\n        unsure: [a]\n",
            "only a choice question",
        ),
    ],
)
def test_bad_process_files(tmp_path, content, reason):
    path = tmp_path / "p.yaml"
    path.write_text(content)
    con = connect(":memory:")
    report = ingest(con, [path])
    assert report.files[0].quarantined == 1
    assert reason in con.execute("SELECT reason FROM quarantine").fetchone()[0]


def test_hidden_and_unknown_files_skipped(tmp_path, sample_dir):
    con = connect(":memory:")
    report = ingest(con, [sample_dir])
    assert not any(".truth" in f.path for f in report.files)
    (tmp_path / "notes.txt").write_text("hello")
    report = ingest(con, [tmp_path])
    assert report.files[0].status == "skipped"


def test_invalid_utf8_and_bom_and_crlf(tmp_path):
    good = verdict_line("r1", [GOOD_Q]).encode()
    path = tmp_path / "x.jsonl"
    path.write_bytes(
        b"\xef\xbb\xbf"
        + good
        + b"\r\n"
        + b'{"run": "\xff\xfe"}\r\n'
        + verdict_line("r2", [GOOD_Q]).encode()
    )
    con = connect(":memory:")
    report = ingest(con, [path])
    assert (report.files[0].read, report.files[0].loaded, report.files[0].quarantined) == (3, 2, 1)
    assert "not valid UTF-8" in con.execute("SELECT reason FROM quarantine").fetchone()[0]


def test_overlong_line_quarantined(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text(
        verdict_line("r1", [GOOD_Q])
        + "\n"
        + '{"run": "'
        + "x" * 5000
        + '"}\n'
        + verdict_line("r2", [GOOD_Q])
        + "\n"
    )
    con = connect(":memory:")
    report = ingest(con, [path], max_line_bytes=2048)
    assert (report.files[0].read, report.files[0].quarantined) == (3, 1)
    line_no, reason = con.execute("SELECT line_no, reason FROM quarantine").fetchone()
    assert line_no == 2 and "max-line-bytes" in reason


@pytest.mark.parametrize(
    ("older", "newer"), [("1.9", "1.10"), ("v9", "v10"), ("2", "10"), ("2026-09-30", "2026-10-01")]
)
@pytest.mark.parametrize("newer_first", [True, False])
def test_a_newer_process_version_wins_in_natural_order(tmp_path, older, newer, newer_first):
    def process_file(version: str, threshold: float) -> str:
        return (
            f"process: p\nversion: '{version}'\nsteps:\n  - id: s\n    agent: Do it.\n"
            f"    check:\n      - ask: Is it done?\n        pass: {threshold}\n"
        )

    files = [("old", process_file(older, 0.7)), ("new", process_file(newer, 0.95))]
    con = connect(tmp_path / "s.duckdb")
    for name, text in reversed(files) if newer_first else files:
        path = tmp_path / f"process-{name}.yaml"
        path.write_text(text)
        ingest(con, [path])
    assert con.execute("SELECT process_version, pass_p FROM questions").fetchall() == [
        (newer, 0.95)
    ]


def test_a_returned_escalation_and_the_next_approval_label_two_checks(tmp_path):
    # check-1 §3: a person returns an unsure submission, the same attempt continues, and its
    # next check is approved. Each decision is on the check before it, so no conflict.
    def check(verdict: str, p: float, at: str) -> dict:
        question = {"ask": "Q1", "kind": "yes_no", "answer": p, "result": verdict}
        return {"verdict": verdict, "model": "m1", "questions": [question], "at": at}

    run = {
        "run": "rt1",
        "process": "vp",
        "steps": {
            "chk": {
                "check": check("pass", 0.96, "2026-10-08T15:00:00Z"),
                "escalation": {
                    "check": check("unsure", 0.6, "2026-10-08T13:00:00Z"),
                    "resolution": "returned",
                    "by": "carla",
                    "at": "2026-10-08T13:20:00Z",
                },
            },
            "appr": {
                "reviews": "chk",
                "decision": "approved",
                "by": "dan",
                "at": "2026-10-08T16:00:00Z",
            },  # fmt: skip
        },
    }
    (tmp_path / "runs.jsonl").write_text(json.dumps(run) + "\n")
    con = connect(":memory:")
    ingest(con, [tmp_path])
    rows = con.execute(
        'SELECT verdict, decision, decided_by, label, conflict, is_latest FROM labeled ORDER BY "at"'
    ).fetchall()
    assert rows == [
        ("unsure", "returned", "carla", False, False, False),
        ("pass", "approved", "dan", True, False, True),
    ]
    assert store_status(con)["conflicts"] == 0


def test_a_fixed_or_completed_record_leaves_the_quarantine(tmp_path):
    path = tmp_path / "v.jsonl"
    good, bad = verdict_line("r1", [GOOD_Q]), verdict_line("r2", [{**GOOD_Q, "answer": "0.95"}])
    con = connect(tmp_path / "s.duckdb")
    # A bad answer and a last line cut off while the writer was still appending.
    path.write_text(good + "\n" + bad + "\n" + verdict_line("r3", [GOOD_Q])[:40])
    first = ingest(con, [path]).totals
    assert (first["loaded"], first["quarantined"]) == (1, 2)
    path.write_text(
        good + "\n" + verdict_line("r2", [GOOD_Q]) + "\n" + verdict_line("r3", [GOOD_Q])
    )
    again = ingest(con, [path]).totals
    assert (again["read"], again["loaded"], again["quarantined"]) == (3, 3, 0)
    assert store_status(con)["quarantined"] == 0
    # Still bad in a later version: listed once, for that version.
    path.write_text(good + "\n" + bad + "\n")
    ingest(con, [path])
    assert con.execute("SELECT count(*) FROM quarantine").fetchone()[0] == 1


def test_a_verdict_line_that_carries_a_decision_loads_both(tmp_path):
    line = json.loads(verdict_line("c1", [GOOD_Q]))
    del line["attempt"]  # 1 for the check and for the decision
    line.update(decision="rejected", by="ana", at="2026-10-01T11:00:00Z", note="missing list")
    wrong = {**line, "run": "c2", "decision": "maybe"}
    (tmp_path / "v.jsonl").write_text(json.dumps(line) + "\n" + json.dumps(wrong) + "\n")
    con = connect(":memory:")
    totals = ingest(con, [tmp_path]).totals
    assert (totals["loaded"], totals["quarantined"]) == (1, 1)
    assert con.execute(
        "SELECT run_id, step, attempt, decision, decided_by, note, source FROM decisions"
    ).fetchall() == [("c1", "s", 1, "rejected", "ana", "missing list", "verdict line")]
    assert con.execute("SELECT run_id, label FROM labeled").fetchall() == [("c1", False)]
    reason = con.execute("SELECT reason FROM quarantine").fetchone()[0]
    assert "maybe" in reason


def test_whole_numbers_written_as_floats_are_levels_and_attempts(tmp_path):
    # pandas and Arrow write an integer column with a missing value as floats (2.0):
    # a whole number is a level or an attempt; 2.5 still is not.
    rubric = {"ask": "How complete?", "kind": "rubric", "confidence": 0.9, "result": "pass"}
    lines = [
        verdict_line("f1", [{**rubric, "answer": 2.0}], attempt=1),
        verdict_line("f2", [{**rubric, "answer": 2.5}]),
    ]
    first = json.loads(lines[0])
    first["attempt"] = 2.0
    lines[0] = json.dumps(first)
    (tmp_path / "v.jsonl").write_text("\n".join(lines) + "\n")
    pd.DataFrame(
        {
            "run": ["f1", "f3"],
            "step": ["s", "s"],
            "attempt": [2.0, None],
            "decision": ["approved"] * 2,
        }
    ).to_parquet(tmp_path / "d.parquet")
    (tmp_path / "d.csv").write_text(
        "run,step,attempt,decision\nf4,s,1.0,approved\nf5,s,1.5,approved\n"
    )
    con = connect(":memory:")
    ingest(con, [tmp_path])
    assert con.execute("SELECT run_id, attempt, level FROM labeled_answers").fetchall() == [
        ("f1", 2, 2)
    ]
    assert con.execute("SELECT label FROM labeled WHERE run_id = 'f1'").fetchone() == (True,)
    assert sorted(con.execute("SELECT run_id, attempt FROM decisions").fetchall()) == [
        ("f1", 2),
        ("f4", 1),
    ]
    quarantined = con.execute("SELECT reason FROM quarantine ORDER BY path, line_no").fetchall()
    assert len(quarantined) == 3  # the 2.5 level, the missing attempt, the 1.5 attempt


def _approved_run(run: str, reviews: str | None = None) -> dict:
    approve = {"decision": "approved", "by": "dan", "at": "2026-10-08T16:00:00Z"}
    if reviews is not None:
        approve["reviews"] = reviews
    check = json.loads(verdict_line(run, [GOOD_Q]))["check"]
    # Keys sorted (as json.dumps(sort_keys=True) or jq -S write them): the approve step first.
    return {"run": run, "process": "p", "steps": {"appr": approve, "chk": {"check": check}}}


def test_an_approve_step_before_the_only_checked_step_reviews_it(tmp_path):
    docs = [_approved_run("k1"), _approved_run("k2", reviews="nope")]
    (tmp_path / "runs.jsonl").write_text(
        "".join(json.dumps(d, sort_keys=True) + "\n" for d in docs)
    )
    con = connect(":memory:")
    ingest(con, [tmp_path])
    assert con.execute("SELECT run_id, step, label FROM labeled").fetchall() == [
        ("k1", "chk", True)
    ]
    reason = con.execute("SELECT reason FROM quarantine").fetchone()[0]
    assert reason == '$.steps.appr: "reviews" names "nope", which is not a step of this run'


def test_a_step_that_is_not_an_object_quarantines_its_run(tmp_path):
    run = _approved_run("s1")
    run["steps"]["later"] = "hi"
    empty = _approved_run("s2")
    empty["steps"]["later"] = None  # nothing recorded for the step yet
    (tmp_path / "runs.jsonl").write_text(json.dumps(run) + "\n" + json.dumps(empty) + "\n")
    con = connect(":memory:")
    totals = ingest(con, [tmp_path]).totals
    assert (totals["loaded"], totals["quarantined"]) == (1, 1)
    assert con.execute("SELECT reason FROM quarantine").fetchone()[0] == (
        "$.steps.later is not an object"
    )


def test_files_of_one_name_in_two_folders_keep_their_own_quarantine(tmp_path, monkeypatch):
    # Relative names are stored absolute: b/v.jsonl, given as "v.jsonl" from b, is not a new
    # version of a/v.jsonl given the same way (whose quarantine it would have replaced).
    bad = verdict_line("r2", [{**GOOD_Q, "answer": "0.95"}])
    con = connect(tmp_path / "s.duckdb")
    for folder, run in (("a", "r1"), ("b", "r3")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "v.jsonl").write_text(verdict_line(run, [GOOD_Q]) + "\n" + bad + "\n")
        monkeypatch.chdir(tmp_path / folder)
        ingest(con, ["v.jsonl"])
    paths = con.execute("SELECT path FROM quarantine ORDER BY path").fetchall()
    assert paths == [(str(tmp_path / "a" / "v.jsonl"),), (str(tmp_path / "b" / "v.jsonl"),)]


def test_a_csv_quoting_error_in_text_that_is_not_utf8_is_quarantined(tmp_path):
    # The cut-out raw text held a surrogate escape that DuckDB refused: the whole file failed.
    path = tmp_path / "d.csv"
    path.write_bytes(
        b'run,step,attempt,decision\nr1,s,1,approved\nr\xff2,s,1,"approved\nr3,s,1,x\n'
    )
    con = connect(":memory:")
    totals = ingest(con, [path]).totals
    assert (totals["read"], totals["loaded"], totals["quarantined"]) == (2, 1, 1)
    raw, reason = con.execute("SELECT raw, reason FROM quarantine").fetchone()
    assert "\ufffd" in raw and "never closed" in reason


@pytest.mark.parametrize("fast", [True, False], ids=["direct rows", "record pipeline"])
def test_table_rows_as_a_spreadsheet_shows_them_blank_rows_and_decisions_in_any_case(
    tmp_path, monkeypatch, fast
):
    """Issue 18: row numbers, blank rows in CSV and Parquet alike, `Approved` is approved."""
    import calibrate.ingest as ing

    monkeypatch.setattr(ing, "TYPED_LANE_ENABLED", fast)
    rows = [
        "run,process,step,attempt,decision,by,at,note",
        "r1,p,s,1,Approved,ana,2026-10-02T10:00:00Z,",  # spreadsheet row 2
        ",,,,,,,",  # row 3: blank, no record
        'r2,p,s,1, REJECTED ,ana,2026-10-02T10:00:00Z,"two\nlines"',  # row 4 (one row, two lines)
        "r3,p,s,1,maybe,ana,2026-10-02T10:00:00Z,",  # row 5
        "r4,p,s,1,approved\t,ana,2026-10-02T10:00:00Z,",  # row 6: a cell's trailing tab
    ]
    path = tmp_path / "d.csv"
    path.write_text("\n".join(rows) + "\n")
    con = connect(":memory:")
    (f,) = ingest(con, [path]).files
    assert (f.read, f.loaded, f.quarantined) == (4, 3, 1)
    assert con.execute("SELECT json_path FROM quarantine").fetchall() == [("row 5",)]
    got = dict(con.execute("SELECT run_id, decision FROM decisions").fetchall())
    assert got == {"r1": "approved", "r2": "rejected", "r4": "approved"}
    # The same table as Parquet: the blank row is no record there either; rows keep their number.
    frame = pd.read_csv(path, dtype=str, keep_default_na=False).replace("", None)
    parquet = tmp_path / "d.parquet"
    frame.to_parquet(parquet)
    con = connect(":memory:")
    (f,) = ingest(con, [parquet]).files
    assert (f.read, f.loaded, f.quarantined) == (4, 3, 1)
    assert con.execute("SELECT json_path FROM quarantine").fetchall() == [("row 4",)]


def test_a_check_is_judged_against_its_own_process_version(tmp_path):
    """Version 1 passes at 0.7, version 2 at 0.95: a version-1 check that passed at 0.8 is right,
    whichever file is ingested last, and a version-2 check that passed at 0.8 is flagged."""
    from calibrate.consistency import contradiction_count, flag_rows

    def process_file(version: str, threshold: float) -> str:
        return (
            f"process: p\nversion: '{version}'\nsteps:\n  - id: s\n    agent: Do it.\n"
            f"    check:\n      - ask: Is it right?\n        pass: {threshold}\n"
        )

    answer = {**GOOD_Q, "answer": 0.8, "result": "pass"}
    lines = [verdict_line("r1", [answer]), json.loads(verdict_line("r2", [answer]))]
    lines[1]["version"] = "2"
    runs = tmp_path / "runs.jsonl"
    runs.write_text(lines[0] + "\n" + json.dumps(lines[1]) + "\n")
    con = connect(tmp_path / "s.duckdb")
    for version, threshold in (("2", 0.95), ("1", 0.7)):
        path = tmp_path / f"process-v{version}.yaml"
        path.write_text(process_file(version, threshold))
        assert ingest(con, [path]).files[0].new == 1  # each version's questions are stored
    ingest(con, [runs])
    assert con.execute("SELECT process_version, pass_p FROM questions").fetchall() == [("2", 0.95)]
    assert sorted(
        con.execute("SELECT process_version, pass_p FROM question_versions").fetchall()
    ) == [("1", 0.7), ("2", 0.95)]
    assert contradiction_count(con) == 1
    flagged = [r for r in flag_rows(con) if r["flag"] == "result_contradicts_thresholds"]
    assert [r["run_id"] for r in flagged] == ["r2"]


def test_each_bad_number_gets_its_own_reason(tmp_path):
    # A decision's attempt too large was "decision has no attempt"; a confidence of 1.5 "is not
    # a number". Each fault of a number is said as it is, at its field.
    (tmp_path / "v.jsonl").write_text(
        "\n".join([
            verdict_line("r1", [GOOD_Q]).replace('"attempt": 1', '"attempt": 99999999999'),
            verdict_line("r2", [{"ask": "c?", "kind": "choice", "answer": "a", "confidence": 1.5,
                                 "result": "pass"}]),
            verdict_line("r3", [{"ask": "r?", "kind": "rubric", "answer": 2**40, "confidence": 0.9,
                                 "result": "pass"}]),
            json.dumps({"run": "r1", "process": "p", "step": "s", "attempt": 2**40,
                        "decision": "approved"}),
            json.dumps({"run": "r1", "process": "p", "step": "s", "attempt": -3,
                        "decision": "approved"}),
            json.dumps({"run": "r1", "process": "p", "step": "s", "decision": "approved"}),
        ]) + "\n"
    )  # fmt: skip
    (tmp_path / "d.csv").write_text(
        "run,process,step,attempt,decision\nr1,p,s,99999999999,approved\nr1,p,s,1.5,approved\n"
    )
    con = connect(":memory:")
    ingest(con, [tmp_path])
    reasons = dict(
        con.execute(
            "SELECT regexp_extract(path, '[^/]+$') || ':' || coalesce(line_no::VARCHAR, json_path),"
            " reason FROM quarantine"
        ).fetchall()
    )
    too_large = "must be a positive integer up to 2147483647 (too large), not "
    assert reasons == {
        "v.jsonl:1": f"$.attempt {too_large}99999999999",
        "v.jsonl:2": "$.check.questions[0]: confidence 1.5 is outside [0, 1]",
        "v.jsonl:3": "$.check.questions[0]: answer 1099511627776 is too large: a rubric answer "
        "is a non-negative integer level up to 2147483647",
        "v.jsonl:4": f"$.attempt {too_large}1099511627776",
        "v.jsonl:5": "$.attempt must be a positive integer, not -3",
        "v.jsonl:6": "decision has no attempt (a positive integer)",
        "d.csv:row 2": f'attempt {too_large}"99999999999"',
        "d.csv:row 3": 'attempt must be a positive integer, not "1.5"',
    }
