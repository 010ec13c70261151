"""A record that repeats a key calibrate reads is ambiguous: quarantined in every lane (black-box F1).

Python's ``json`` keeps a repeated key's last value and DuckDB's JSON functions
its first, so the same record text loaded as ``approved`` from a ``.jsonl`` file
and ``rejected`` from a ``.json`` file. Which value the exporter meant cannot be
told: the record is quarantined with the key and where it is repeated, whatever
the file's form, at every level that is read (the record, ``steps``, a step, a
history entry, an escalation, a handoff, a check, a question).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calibrate.ingest import ingest
from calibrate.store import connect

CHECK = (
    '{"verdict":"pass","advisory":true,"model":"m",'
    '"questions":[{"ask":"q","kind":"yes_no","answer":0.9,"result":"pass"}],'
    '"at":"2026-09-01T10:00:00Z"}'
)
VERDICT = '{"run":"r1","process":"p","step":"s","attempt":1,"check":%s}'
DECISION = '{"run":"r1","step":"s","attempt":1,"decision":"approved","at":"2026-09-01T11:00:00Z"%s}'
RUN = (
    '{"run":"r1","process":"p","steps":{"s":%s,"approve":{"reviews":"s","decision":"approved"}}%s}'
)
STEP = '{"check":' + CHECK + "%s}"

AMBIGUOUS = {
    "decision": (DECISION % ',"decision":"rejected"', 'record repeats the key "decision"'),
    "escaped decision": (
        DECISION % ',"decisio\\u006e":"rejected"',
        'record repeats the key "decision"',
    ),
    "decision run": (DECISION % ',"run":"r2"', 'record repeats the key "run"'),
    "verdict line run": (
        VERDICT.replace('"run":"r1"', '"run":"x-8","run":"x-9"') % CHECK,
        'record repeats the key "run"',
    ),
    "verdict line step": (
        (VERDICT % CHECK).replace(',"check"', ',"step":"t","check"', 1),
        'record repeats the key "step"',
    ),
    "check verdict": (
        VERDICT % CHECK.replace('"verdict":"pass"', '"verdict":"pass","verdict":"fail"'),
        '$.check repeats the key "verdict"',
    ),
    "question answer": (
        VERDICT % CHECK.replace('"answer":0.9', '"answer":0.9,"answer":0.1'),
        '$.check.questions[0] repeats the key "answer"',
    ),
    "run id": (RUN % (STEP % "", ',"run":"r2"'), 'record repeats the key "run"'),
    "step named twice": (
        (RUN % (STEP % "", "")).replace('"steps":{', '"steps":{"s":null,', 1),
        '$.steps repeats the key "s"',
    ),
    "approve decision": (
        (RUN % (STEP % "", "")).replace(
            '"decision":"approved"', '"decision":"approved","decision":"rejected"'
        ),
        '$.steps.approve repeats the key "decision"',
    ),
    "step check": (
        RUN % (STEP % (',"check":' + CHECK.replace("pass", "fail")), ""),
        '$.steps.s repeats the key "check"',
    ),
    "check in a step": (
        RUN % (STEP.replace('"at":', '"at":"2026-09-02T10:00:00Z","at":') % "", ""),
        '$.steps.s.check repeats the key "at"',
    ),
    "history entry": (
        RUN
        % (
            STEP
            % (',"history":[{"check":' + CHECK + ',"decision":"returned","decision":"approved"}]'),
            "",
        ),
        '$.steps.s.history[0] repeats the key "decision"',
    ),
    "escalation": (
        RUN
        % (
            STEP % ',"escalation":{"resolution":"completed","resolution":"failed","by":"ana"}',
            "",
        ),
        '$.steps.s.escalation repeats the key "resolution"',
    ),
    "handoff": (
        RUN % (STEP % "", ',"handoff":{"step":"s","step":"approve","check":' + CHECK + "}"),
        '$.handoff repeats the key "step"',
    ),
}


def _write(folder: Path, form: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if form == "jsonl":
        path = folder / "records.jsonl"
        path.write_text(text + "\n", encoding="utf-8")
    elif form == "json array":
        path = folder / "records.json"
        path.write_text("[" + text + "]\n", encoding="utf-8")
    else:
        path = folder / "record.json"
        path.write_text(text + "\n", encoding="utf-8")
    return path


def _ingest(tmp_path: Path, form: str, text: str):
    path = _write(tmp_path / "in", form, text)
    con = connect(tmp_path / "s.duckdb")
    (result,) = ingest(con, [path]).files
    reasons = [r for (r,) in con.execute("SELECT reason FROM quarantine").fetchall()]
    stored = {
        t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # noqa: S608 - fixed names
        for t in ("checks", "decisions")
    }
    con.close()
    return result, reasons, stored


@pytest.mark.parametrize("form", ["jsonl", "json array", "json document"])
@pytest.mark.parametrize("case", sorted(AMBIGUOUS))
def test_a_repeated_key_quarantines_its_record_in_every_form(tmp_path, case, form):
    text, said = AMBIGUOUS[case]
    result, reasons, stored = _ingest(tmp_path, form, text)
    assert (result.read, result.loaded, result.quarantined, result.pending) == (1, 0, 1, 0)
    (reason,) = reasons
    assert said + ": which of its values is meant is ambiguous" in reason
    assert stored == {"checks": 0, "decisions": 0}


def test_the_finding_same_text_is_refused_from_jsonl_and_json_alike(tmp_path):
    """F1's repro: the same decision text loaded as approved (.jsonl) or rejected (.json)."""
    d = '{"run":"%s","step":"s","attempt":1,"decision":"approved","at":"2026-09-01T11:00:00Z","decision":"rejected"}'
    v = VERDICT % CHECK
    (tmp_path / "v.jsonl").write_text(v + "\n" + v.replace('"r1"', '"r2"') + "\n")
    (tmp_path / "d.jsonl").write_text(d % "r1" + "\n")
    (tmp_path / "d.json").write_text("[" + d % "r2" + "]\n")
    con = connect(tmp_path / "s.duckdb")
    t = ingest(con, [tmp_path]).totals
    assert (t["read"], t["loaded"], t["quarantined"]) == (4, 2, 2)
    assert con.execute("SELECT count(*) FROM decisions").fetchone()[0] == 0


def test_a_decision_written_twice_once_blank_is_quarantined_not_pending(tmp_path):
    for i, (first, second) in enumerate(
        [('""', '"approved"'), ("null", '"approved"'), ('"approved"', '""')]
    ):
        text = (
            '{"run":"r1","step":"s","attempt":1,"decision":' + first + ',"decision":' + second + "}"
        )
        result, reasons, _ = _ingest(tmp_path / str(i), "jsonl", text)
        assert (result.read, result.loaded, result.quarantined, result.pending) == (1, 0, 1, 0)
        assert reasons == [
            'record repeats the key "decision": which of its values is meant is ambiguous'
        ]


@pytest.mark.parametrize("form", ["jsonl", "json array"])
@pytest.mark.parametrize(
    "text",
    [
        # Keys calibrate does not read: nothing is ambiguous about what it stores.
        (VERDICT % CHECK)[:-1] + ',"comment":"a","comment":"b"}',
        VERDICT % CHECK.replace('"model":"m"', '"model":"m","why":1,"why":2'),
        RUN % (STEP % ',"status":"running","status":"completed"', ""),
        # A run document reads none of a verdict line's or a decision's top-level keys.
        RUN % (STEP % "", ',"decision":"approved","decision":"rejected"'),
    ],
    ids=["verdict line", "check", "step", "run document"],
)
def test_a_repeated_key_that_is_not_read_loads(tmp_path, form, text):
    result, reasons, stored = _ingest(tmp_path, form, text)
    assert (result.quarantined, reasons) == (0, [])
    assert result.loaded == 1 and stored["checks"] == 1


def test_a_json_document_is_read_as_written(tmp_path):
    """The .json loader hands the record pipeline each record's pairs as written, in order."""
    from calibrate.ingest import _parse_json_document

    ok, doc = _parse_json_document('[{"b": 1, "a": {"x": 1, "x": 2}, "b": 3}]')
    assert ok and json.dumps(doc[0]) == '{"b": 1, "a": {"x": 1, "x": 2}, "b": 3}'
    assert doc[0]["b"] == 3  # read as a dict, Python's usual last value
