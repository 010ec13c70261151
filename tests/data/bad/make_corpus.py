"""Write tests/data/bad/: small files, one kind of bad input each, and expected.json.

Run it after adding a case: ``python tests/data/bad/make_corpus.py``. The files are
committed; this script documents how each was made (some are hard to type by hand:
invalid UTF-8, a BOM, CRLF, an alias bomb).
"""

import json
from pathlib import Path

OUT = Path(__file__).resolve().parent
OUT.mkdir(parents=True, exist_ok=True)
(OUT / "context").mkdir(exist_ok=True)

PROCESS = """\
# The process file every corpus case is ingested with (the thresholds in force).
process: corpus
version: 1
steps:
  - id: check_it
    agent: Screen the vendor and attach the report.
    advisory: true
    check:
      - ask: The verdict matches the report.
        pass: 0.9
        fail: 0.5
      - ask: What does the summary do?
        one_of:
          states: States the verdict.
          hedges: Avoids a verdict.
          unclear: Cannot tell.
        pass: [states]
        unsure: [unclear]
        confidence: 0.8
      - ask: How complete is the screening?
        levels:
          - Neither list.
          - One list.
          - Both lists.
        pass: 2
        confidence: 0.8
  - id: approve_it
    approve: Review the screening.
"""
(OUT / "context" / "process-corpus.yaml").write_text(PROCESS)
(OUT / "context" / "limits.json").write_text(
    '{"limits": {"checkPass": 0.9, "checkConfidence": 0.8}}\n'
)

Q1 = {"ask": "The verdict matches the report.", "kind": "yes_no", "answer": 0.95, "result": "pass"}
Q2 = {
    "ask": "What does the summary do?",
    "kind": "choice",
    "answer": "states",
    "confidence": 0.9,
    "result": "pass",
}
Q3 = {
    "ask": "How complete is the screening?",
    "kind": "rubric",
    "answer": 2,
    "confidence": 0.9,
    "result": "pass",
}


def rec(run, questions=None, verdict="pass", **over):
    check = {
        "verdict": verdict,
        "advisory": True,
        "model": "m1",
        "questions": [Q1, Q2, Q3] if questions is None else questions,
        "at": "2026-10-01T10:00:00Z",
    }
    for k in ("at", "model", "advisory", "truncated"):
        if k in over:
            check[k] = over.pop(k)
    r = {
        "run": run,
        "process": "corpus",
        "version": "1",
        "step": "check_it",
        "attempt": 1,
        "check": check,
    }
    r.update(over)
    return r


def line(r):
    return json.dumps(r, ensure_ascii=False)


def good(run):
    return line(rec(run))


def q(**kw):
    """Q1 with changes."""
    return {**Q1, **kw}


(OUT / "context" / "verdicts-context.jsonl").write_text(
    "".join(good(f"ctx-{i}") + "\n" for i in (1, 2, 3))
)

cases = []


def case(
    name,
    content,
    *,
    read,
    loaded,
    quarantined,
    outcome,
    reason=None,
    flags=None,
    new=None,
    note="",
    **extra,
):
    if content is not None:
        data = content if isinstance(content, bytes) else content.encode("utf-8")
        (OUT / name).write_bytes(data)
    entry = {
        "file": name,
        "fault": note,
        "outcome": outcome,
        "read": read,
        "loaded": loaded,
        "quarantined": quarantined,
    }
    if new is not None:
        entry["new"] = new
    if reason:
        entry["reason"] = reason
    entry["flags"] = flags or {}
    entry.update(extra)
    cases.append(entry)


# --- JSON lines: the line itself -------------------------------------------------------
g = good("r-trunc-3")
case(
    "truncated_last_line.jsonl",
    good("r-trunc-1") + "\n" + good("r-trunc-2") + "\n" + g[: len(g) // 2],
    read=3,
    loaded=2,
    quarantined=1,
    outcome="quarantined",
    reason="the last line may have been cut off",
    note="the export was cut off mid-record (full disk, killed writer)",
)
case(
    "not_json_line.jsonl",
    good("r-nj-1") + "\nthis is not JSON\n" + good("r-nj-2") + "\n",
    read=3,
    loaded=2,
    quarantined=1,
    outcome="quarantined",
    reason="not valid JSON",
    note="a line that is not JSON",
)
case(
    "concatenated_no_newline.jsonl",
    good("r-cat-1") + good("r-cat-2") + "\n" + good("r-cat-3") + "\n",
    read=2,
    loaded=1,
    quarantined=1,
    outcome="quarantined",
    reason="not valid JSON",
    note="two records on one line (files concatenated by hand)",
)
case(
    "json_array_record.jsonl",
    good("r-arr-1") + "\n" + json.dumps([rec("r-arr-2")]) + "\n",
    read=2,
    loaded=1,
    quarantined=1,
    outcome="quarantined",
    reason="expected an object",
    note="a JSON array where a record was expected",
)
case(
    "record_scalar.jsonl",
    good("r-sc-1") + '\n42\n"text"\nnull\ntrue\n',
    read=5,
    loaded=1,
    quarantined=4,
    outcome="quarantined",
    reason="expected an object",
    note="a number, string, null or boolean where a record was expected",
)
case(
    "neither_kind.jsonl",
    good("r-nk-1") + '\n{"run": "r-nk-2", "status": "done"}\n',
    read=2,
    loaded=1,
    quarantined=1,
    outcome="quarantined",
    reason="neither a run document",
    note="an object that is neither a run, a verdict line nor a decision",
)
case(
    "bom.jsonl",
    "\ufeff" + good("r-bom-1") + "\n" + good("r-bom-2") + "\n",
    read=2,
    loaded=2,
    quarantined=0,
    outcome="loaded",
    note="a UTF-8 byte-order mark before the first record",
)
case(
    "invalid_utf8.jsonl",
    (good("r-u8-1") + "\n").encode()
    + b'{"run": "r-u8-\xff\xfe", "step": "check_it"}\n'
    + (good("r-u8-2") + "\n").encode(),
    read=3,
    loaded=2,
    quarantined=1,
    outcome="quarantined",
    reason="not valid UTF-8",
    note="bytes that are not UTF-8 (one line only)",
)
case(
    "crlf.jsonl",
    good("r-crlf-1") + "\r\n" + good("r-crlf-2") + "\r\n",
    read=2,
    loaded=2,
    quarantined=0,
    outcome="loaded",
    note="Windows line ends (CRLF)",
)
case("empty.jsonl", "", read=0, loaded=0, quarantined=0, outcome="empty", note="an empty file")
case(
    "blank_lines.jsonl",
    "\n  \n\t\r\n\n",
    read=0,
    loaded=0,
    quarantined=0,
    outcome="empty",
    note="only blank lines (spaces, tabs, CR)",
)
case(
    "ten_mb_line.jsonl",
    None,
    read=3,
    loaded=2,
    quarantined=1,
    outcome="quarantined",
    reason="longer than --max-line-bytes",
    generate="ten_mb_line",
    max_line_bytes=1048576,
    note="a 10 MB single line (generated by the test, not committed), with --max-line-bytes 1 MiB",
)
case(
    "duplicate_record.jsonl",
    good("r-dup-1") + "\n" + good("r-dup-1") + "\n",
    read=2,
    loaded=2,
    quarantined=0,
    new=1,
    outcome="loaded",
    expect_rows={"sql": "SELECT count(*) FROM checks WHERE run_id = 'r-dup-1'", "rows": [[1]]},
    note="the same record twice (re-sent): loaded once",
)
case(
    "unknown_fields.jsonl",
    line(
        {
            **rec("r-uf-1"),
            "server": "eu-2",
            "check": {
                **rec("r-uf-1")["check"],
                "latency_ms": 412,
                "questions": [{**Q1, "tokens": 9}, Q2, Q3],
            },
        }
    )
    + "\n",
    read=1,
    loaded=1,
    quarantined=0,
    outcome="loaded",
    note="fields a newer server adds (ignored)",
)


# --- answers ------------------------------------------------------------------------------
def one_good_then_bad(name, ok_run, bad_lines, reason, note):
    """A file of one good verdict line and records that are each quarantined for ``reason``."""
    case(
        name,
        "\n".join([good(ok_run), *bad_lines]) + "\n",
        read=1 + len(bad_lines),
        loaded=1,
        quarantined=len(bad_lines),
        outcome="quarantined",
        reason=reason,
        note=note,
    )


def bad_q(name, runs, questions_list, reason, note, verdict="pass"):
    bad = [line(rec(f"r-{runs}-{i}", qs, verdict)) for i, qs in enumerate(questions_list)]
    one_good_then_bad(name, f"r-{runs}-ok", bad, reason, note)


bad_q(
    "answer_nan.jsonl",
    "nan",
    [[q(answer=float("nan")), Q2, Q3]],
    "not a finite number",
    "answer NaN",
)
bad_q(
    "answer_infinity.jsonl",
    "inf",
    [[q(answer=float("inf")), Q2, Q3], [q(answer=float("-inf")), Q2, Q3]],
    "not a finite number",
    "answer +Infinity and -Infinity",
)
bad_q(
    "answer_string.jsonl",
    "str",
    [[q(answer="0.95"), Q2, Q3]],
    "is not a number",
    "a string where the yes-probability belongs",
)
bad_q(
    "answer_out_of_range.jsonl",
    "oor",
    [[q(answer=1.5), Q2, Q3], [q(answer=-0.2), Q2, Q3]],
    "outside [0, 1]",
    "a yes-probability outside [0, 1]",
)
bad_q(
    "answer_missing.jsonl",
    "am",
    [[{k: v for k, v in Q1.items() if k != "answer"}, Q2, Q3]],
    'has no "answer"',
    "a question without an answer",
)
bad_q(
    "confidence_out_of_range.jsonl",
    "conf",
    [[Q1, {**Q2, "confidence": 1.2}, Q3], [Q1, Q2, {**Q3, "confidence": -0.1}]],
    "is outside [0, 1]",
    "confidence outside [0, 1]",
)
bad_q(
    "rubric_level_negative.jsonl",
    "lvn",
    [[Q1, Q2, {**Q3, "answer": -1, "result": "fail"}]],
    "non-negative integer level",
    "a rubric level below 0",
    verdict="fail",
)
bad_q(
    "rubric_level_not_integer.jsonl",
    "lvf",
    [[Q1, Q2, {**Q3, "answer": 1.5}], [Q1, Q2, {**Q3, "answer": 2**40}]],
    "non-negative integer level",
    "a rubric level that is not a (32-bit) integer",
)
bad_q(
    "unknown_kind.jsonl",
    "uk",
    [[q(kind="scale"), Q2, Q3]],
    "unknown kind",
    "an unknown question kind",
)
bad_q(
    "missing_ask.jsonl",
    "ma",
    [[{k: v for k, v in Q1.items() if k != "ask"}, Q2, Q3]],
    'has no "ask"',
    "a question without its ask",
)
bad_q(
    "duplicate_questions.jsonl",
    "dq",
    [[Q1, Q1, Q2, Q3]],
    "asked twice",
    "the same question twice in one check",
)
bad_q(
    "result_unknown.jsonl",
    "ru",
    [[q(result="maybe"), Q2, Q3]],
    "is not pass, fail or unsure",
    "a result that is not pass, fail or unsure",
)

# --- loaded but flagged (the server's record is the fact) ------------------------------------
case(
    "rubric_level_beyond_ladder.jsonl",
    good("r-lvb-ok") + "\n" + line(rec("r-lvb-1", [Q1, Q2, {**Q3, "answer": 5}])) + "\n",
    read=2,
    loaded=2,
    quarantined=0,
    outcome="flagged",
    flags={"level_beyond_ladder": 1},
    note="a rubric level beyond the process file's 3-level ladder",
)
case(
    "choice_not_in_one_of.jsonl",
    good("r-ch-ok")
    + "\n"
    + line(rec("r-ch-1", [Q1, {**Q2, "answer": "maybe", "result": "fail"}, Q3], "fail"))
    + "\n",
    read=2,
    loaded=2,
    quarantined=0,
    outcome="flagged",
    flags={"choice_not_in_one_of": 1},
    note="a choice answer not among the process file's one_of names",
)
case(
    "result_contradicts_thresholds.jsonl",
    good("r-rc-ok") + "\n" + line(rec("r-rc-1", [q(answer=0.3), Q2, Q3])) + "\n",
    read=2,
    loaded=2,
    quarantined=0,
    outcome="flagged",
    flags={"result_contradicts_thresholds": 1},
    note="a result that the thresholds in force would not give (p 0.3 recorded as pass)",
)
case(
    "verdict_not_worst.jsonl",
    good("r-vw-ok") + "\n" + line(rec("r-vw-1", verdict="fail")) + "\n",
    read=2,
    loaded=2,
    quarantined=0,
    outcome="flagged",
    flags={"verdict_not_worst": 1},
    note="a verdict that is not the worst of its questions",
)
case(
    "at_future.jsonl",
    good("r-fut-ok") + "\n" + line(rec("r-fut-1", at="2999-01-01T00:00:00Z")) + "\n",
    read=2,
    loaded=2,
    quarantined=0,
    outcome="flagged",
    flags={"at_in_future": 1},
    note="a check time in the future",
)
case(
    "at_missing.jsonl",
    good("r-atm-ok") + "\n" + line(rec("r-atm-1", at=None)) + "\n",
    read=2,
    loaded=2,
    quarantined=0,
    outcome="flagged",
    flags={"at_missing": 1},
    note="a check without a time",
)

# --- check-level faults -------------------------------------------------------------------------
case(
    "at_unparsable.jsonl",
    "\n".join(
        [
            good("r-atu-ok"),
            line(rec("r-atu-1", at="yesterday")),
            line(rec("r-atu-2", at="2026-13-45T99:00:00Z")),
            line(rec("r-atu-3", at="infinity")),
            line(rec("r-atu-4", at=1760000000)),
        ]
    )
    + "\n",
    read=5,
    loaded=1,
    quarantined=4,
    outcome="quarantined",
    reason="is not an ISO 8601 time",
    note='"at" unparsable, out of range, "infinity" or a number',
)
case(
    "verdict_missing.jsonl",
    good("r-vm-ok")
    + "\n"
    + json.dumps({"run": "r-vm-1", "step": "check_it", "check": {"questions": [Q1]}})
    + "\n",
    read=2,
    loaded=1,
    quarantined=1,
    outcome="quarantined",
    reason='has no "verdict"',
    note="a check without a verdict",
)
case(
    "verdict_unknown.jsonl",
    good("r-vu-ok") + "\n" + line(rec("r-vu-1", verdict="maybe")) + "\n",
    read=2,
    loaded=1,
    quarantined=1,
    outcome="quarantined",
    reason="unknown verdict",
    note="a verdict that check-1 does not define",
)
case(
    "model_not_string.jsonl",
    good("r-mn-ok") + "\n" + line(rec("r-mn-1", model={"name": "m1"})) + "\n",
    read=2,
    loaded=1,
    quarantined=1,
    outcome="quarantined",
    reason='"model" must be a string',
    note="a model that is not a string (would otherwise pool models silently)",
)
case(
    "attempt_out_of_range.jsonl",
    "\n".join(
        [good("r-att-ok")]
        + [line(rec(f"r-att-{i}", attempt=a)) for i, a in enumerate([0, -1, 2**40, "1", 1.5])]
    )
    + "\n",
    read=6,
    loaded=1,
    quarantined=5,
    outcome="quarantined",
    reason="attempt must be a positive integer",
    note="attempt 0, negative, beyond 32 bits, a string or a fraction",
)
case(
    "handoff_without_step.jsonl",
    json.dumps(
        {"run": "r-ho-1", "process": "corpus", "steps": {}, "handoff": {"check": rec("x")["check"]}}
    )
    + "\n",
    read=1,
    loaded=0,
    quarantined=1,
    outcome="quarantined",
    reason='handoff has no "step"',
    note="a blocking fail in handoff that does not name its step",
)


# --- decisions ------------------------------------------------------------------------------------
def dec(run, decision, by="ana", at="2026-10-02T10:00:00Z", **over):
    return json.dumps(
        {
            "run": run,
            "process": "corpus",
            "step": "check_it",
            "attempt": 1,
            "decision": decision,
            "by": by,
            "at": at,
            **over,
        }
    )


case(
    "decision_unseen_run.jsonl",
    dec("r-never-seen", "approved") + "\n",
    read=1,
    loaded=1,
    quarantined=0,
    outcome="flagged",
    flags={"decision_without_check": 1},
    note="a decision for a run that was never seen",
)
case(
    "decision_unknown_kind.jsonl",
    dec("ctx-1", "approved") + "\n" + dec("ctx-2", "maybe") + "\n",
    read=2,
    loaded=1,
    quarantined=1,
    outcome="quarantined",
    reason="unknown decision",
    note="a decision of an unknown kind",
)
case(
    "decisions_conflicting.jsonl",
    dec("ctx-1", "approved", "ana", "2026-10-02T10:00:00Z")
    + "\n"
    + dec("ctx-1", "rejected", "ben", "2026-10-02T11:00:00Z")
    + "\n",
    read=2,
    loaded=2,
    quarantined=0,
    outcome="flagged",
    flags={"conflicting_decisions": 1},
    expect_rows={"sql": "SELECT label FROM labeled WHERE run_id = 'ctx-1'", "rows": [[False]]},
    note="two conflicting decisions on one submission (the latest wins, flagged)",
)
case(
    "decision_at_unparsable.jsonl",
    dec("ctx-1", "approved") + "\n" + dec("ctx-2", "approved", at="soon") + "\n",
    read=2,
    loaded=1,
    quarantined=1,
    outcome="quarantined",
    reason="is not an ISO 8601 time",
    note="a decision time that is not a time",
)


one_good_then_bad(
    "at_offset_impossible.jsonl",
    "r-ato-ok",
    [
        line(rec("r-ato-1", at="2026-10-01T10:00:00+25:00")),
        line(rec("r-ato-2", at="2026-10-01T10:00:00+99:99")),
        line(rec("r-ato-3", at="2026-10-01T10:00:00-24:00")),
        dec("ctx-1", "approved", at="2026-10-02T10:00:00+05:60"),
    ],
    "is not an ISO 8601 time",
    "a UTC offset beyond RFC 3339's (hours 00-23, minutes 00-59), which would move the time by days",
)
# A key written twice: Python's json keeps the last value, DuckDB the first.
_REPEATED = [
    dec("ctx-1", "approved")[:-1] + ', "decision": "rejected"}',
    line(rec("r-rk-1")).replace('"verdict": "pass"', '"verdict": "pass", "verdict": "fail"', 1),
    line(rec("r-rk-2")).replace('"answer": 0.95', '"answer": 0.95, "answer": 0.05', 1),
]
one_good_then_bad(
    "repeated_key.jsonl",
    "r-rk-ok",
    _REPEATED,
    "which of its values is meant is ambiguous",
    "a record that repeats a key (the decision, a verdict, an answer)",
)
case(
    "repeated_key.json",
    "["
    + ",\n".join([good("r-rkj-ok"), *(r.replace("r-rk-", "r-rkj-") for r in _REPEATED)])
    + "]\n",
    read=4,
    loaded=1,
    quarantined=3,
    outcome="quarantined",
    reason="which of its values is meant is ambiguous",
    note="the same records in a .json array (read by Python's json, not DuckDB's)",
)
one_good_then_bad(
    "blank_names.jsonl",
    "r-bn-ok",
    [
        line(rec("r-bn-1", step="")),
        line(rec("  ")),
        line(rec("r-bn-2", process=" ")),
        json.dumps(
            {"run": "r-bn-3", "process": "corpus", "steps": {"": {"check": rec("x")["check"]}}}
        ),
    ],
    "blank",
    "a run, process or step named with an empty or blank string",
)

HEADER = "run,process,step,attempt,decision,by,at,note\n"
case(
    "csv_missing_column.csv",
    "run,process,step,decision,by,at\nctx-1,corpus,check_it,approved,ana,2026-10-02T10:00:00Z\n"
    "ctx-2,corpus,check_it,rejected,ben,2026-10-02T10:00:00Z\n",
    read=2,
    loaded=0,
    quarantined=2,
    outcome="quarantined",
    reason="no attempt",
    note="a CSV without the attempt column",
)
case(
    "csv_extra_column.csv",
    "run,process,step,attempt,decision,by,at,note,channel\n"
    "ctx-1,corpus,check_it,1,approved,ana,2026-10-02T10:00:00Z,,web\n"
    "ctx-2,corpus,check_it,1,rejected,ben,2026-10-02T10:00:00Z,late,mail\n",
    read=2,
    loaded=2,
    quarantined=0,
    outcome="loaded",
    note="a CSV with a column calibrate does not know (ignored)",
)
case(
    "csv_quoted_newlines.csv",
    HEADER
    + 'ctx-1,corpus,check_it,1,rejected,ana,2026-10-02T10:00:00Z,"Line one,\nline ""two""\n"\n'
    "ctx-2,corpus,check_it,1,approved,ben,2026-10-02T10:00:00Z,\n",
    read=2,
    loaded=2,
    quarantined=0,
    outcome="loaded",
    expect_rows={
        "sql": "SELECT note FROM decisions WHERE run_id = 'ctx-1'",
        "rows": [['Line one,\nline "two"\n']],
    },
    note="a CSV note with quoted newlines, commas and quotes",
)
case(
    "csv_ragged_rows.csv",
    HEADER + "ctx-1,corpus,check_it,1,approved,ana,2026-10-02T10:00:00Z,,surplus\n"
    "ctx-2,corpus,check_it,1,approved\nctx-3,corpus,check_it,1,approved,ana,2026-10-02T10:00:00Z,\n",
    read=3,
    loaded=1,
    quarantined=2,
    outcome="quarantined",
    reason="fields but the header names",
    note="CSV rows with more or fewer fields than the header",
)
case(
    "csv_unterminated_quote.csv",
    HEADER + "ctx-1,corpus,check_it,1,approved,ana,2026-10-02T10:00:00Z,fine\n"
    'ctx-2,corpus,check_it,1,approved,ana,2026-10-02T10:00:00Z,"never closed\nctx-3,corpus,check_it,1,approved,ana,2026-10-02T10:00:00Z,\n',
    read=2,
    loaded=1,
    quarantined=1,
    outcome="quarantined",
    reason="never closed",
    note="a CSV quote that is never closed (the rest of the file is one quarantined record)",
)
case(
    "csv_invalid_utf8.csv",
    HEADER.encode() + b"ctx-1,corpus,check_it,1,approved,ana,2026-10-02T10:00:00Z,\n"
    b"ctx-2,corpus,check_it,1,approved,\xe9ve,2026-10-02T10:00:00Z,\n",
    read=2,
    loaded=1,
    quarantined=1,
    outcome="quarantined",
    reason="not valid UTF-8",
    note="a CSV row in Latin-1",
)
case(
    "csv_duplicate_header.csv",
    "run,step,attempt,decision,run\nctx-1,check_it,1,approved,ctx-2\n",
    read=1,
    loaded=0,
    quarantined=1,
    outcome="quarantined",
    reason="twice",
    note="a CSV header naming a column twice",
)

# --- process files and limits -------------------------------------------------------------------------
case(
    "yaml_tab_indent.yaml",
    "process: p\nsteps:\n\t- id: s\n\t  check: Is it right?\n",
    read=1,
    loaded=0,
    quarantined=1,
    outcome="quarantined",
    reason="not valid YAML",
    note="a process file indented with tabs",
)
bomb = ["process: bomb", 'l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
for i in range(1, 9):
    bomb.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
bomb += ["steps:", "  - id: s", "    check: *l8"]
case(
    "yaml_alias_bomb.yaml",
    "\n".join(bomb) + "\n",
    read=1,
    loaded=0,
    quarantined=1,
    outcome="quarantined",
    reason="alias bomb",
    note="billion laughs: 72 aliases that expand to 387 million values",
)
case(
    "yaml_wrong_shape_check.yaml",
    "process: shapes\nversion: 1\nsteps:\n  - id: good\n    check: Is it right?\n  - id: bad\n    check: 42\n",
    read=2,
    loaded=1,
    quarantined=1,
    outcome="quarantined",
    reason="steps[1].check",
    note="a check: of the wrong shape (a number) beside a good one",
)
case(
    "yaml_python_tag.yaml",
    "process: p\nsteps: !!python/object/apply:os.system ['echo pwned']\n",
    read=1,
    loaded=0,
    quarantined=1,
    outcome="quarantined",
    reason="not valid YAML",
    note="a YAML tag that would run code under an unsafe loader",
)
case(
    "yaml_deep_nesting.yaml",
    "process: p\nsteps: " + "[" * 5000 + "]" * 5000 + "\n",
    read=1,
    loaded=0,
    quarantined=1,
    outcome="quarantined",
    reason="nested too deeply",
    note="YAML nested 5000 deep (PyYAML slows down quadratically with depth)",
)
case(
    "yaml_recursive_alias.yaml",
    "process: p\nsteps:\n  - id: s\n    check: &c\n      - Is it right\n      - *c\n",
    read=1,
    loaded=0,
    quarantined=1,
    outcome="quarantined",
    reason="refers to itself",
    note="a YAML alias inside itself",
)
case(
    "limits_out_of_range.json",
    '{"limits": {"checkPass": 1.5}}\n',
    read=1,
    loaded=0,
    quarantined=1,
    outcome="quarantined",
    reason="outside [0, 1]",
    note="describe.limits with checkPass 1.5",
)

# --- whole files ----------------------------------------------------------------------------------------
case(
    "json_deep_nesting.json",
    "[" * 5000 + "]" * 5000,
    read=1,
    loaded=0,
    quarantined=1,
    outcome="quarantined",
    reason="nested too deeply",
    note="a .json document nested 5000 deep",
)
doc = json.dumps([rec("r-jt-1"), rec("r-jt-2")], indent=2)
case(
    "json_truncated_document.json",
    doc[: len(doc) * 2 // 3],
    read=1,
    loaded=0,
    quarantined=1,
    outcome="quarantined",
    reason="file is not valid JSON",
    note="a pretty-printed .json document cut off",
)
case(
    "json_invalid_utf8.json",
    b'[{"run": "r-\xff"}]',
    read=1,
    loaded=0,
    quarantined=1,
    outcome="quarantined",
    reason="not valid UTF-8",
    note="a .json document with bytes that are not UTF-8",
)
case(
    "not_parquet.parquet",
    b"PAR1 this is not really parquet",
    read=1,
    loaded=0,
    quarantined=1,
    outcome="quarantined",
    reason="not a readable Parquet file",
    note="a .parquet file that is not Parquet",
)

manifest = {
    "about": (
        "One small file per kind of bad input. Each is ingested after the files in context/ "
        "(a process file, limits and three good checks, runs ctx-1..ctx-3) into a fresh store; "
        "read/loaded/quarantined are that file's counts, reason must appear in every quarantine "
        "reason of the file, and flags are the consistency flags (calibrate.consistency) that must "
        "be non-zero afterwards (every other flag stays 0)."
    ),
    "context": [
        "context/process-corpus.yaml",
        "context/limits.json",
        "context/verdicts-context.jsonl",
    ],
    "cases": cases,
}
(OUT / "expected.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
if __name__ == "__main__":
    print(len(cases), "cases written to", OUT)
