"""Injection: text from records reaches SQL only as data and the terminal only as plain text.

Every name and text in an export is untrusted (check-1 §6). Here process and
step names, model names, questions, answer names, approver names and notes
carry SQL, HTML, Markdown, ANSI escapes and newlines. They must go through
ingest and ``status`` (table and JSON) without changing a query, be stored
byte for byte, and never reach the terminal as a control sequence.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from calibrate.cli import app
from calibrate.consistency import flag_counts
from calibrate.store import connect

runner = CliRunner()

ESC = "\x1b"
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")
#: Each payload attacks one kind of output.
PAYLOADS = {
    "sql_quote": "'; DROP TABLE checks; --",
    "sql_double_quote": '" OR 1=1; DELETE FROM decisions; --',
    "sql_paren": "Robert'); DELETE FROM answers WHERE ('1'='1",
    "html": "<script>alert('x')</script><img src=x onerror=alert(1)>",
    "markdown": "[click](javascript:alert(1)) ![pixel](https://evil.example/p.png) | a | b |",
    "ansi": "\x1b[31mred\x1b[0m \x1b]8;;https://evil.example\x07link\x1b]8;;\x07 \x1b[2J\x1b[H",
    "c1_csi": "\x9b31m eight-bit CSI \x9b0m",
    "newlines": "line one\nline two\r\nline three\n| --- |",
    "formula": '=HYPERLINK("https://evil.example","ok")',
    "backslash": 'back\\slash \\" quote \\n not a newline',
    "template": "{{ 7*7 }} {% for x in y %} ${7*7} %s {0}",
    "bidi": "safe \u202eexe.txt\u202c",
    "json_path": '$.a"b[0].*',
}
NAMES = list(PAYLOADS)


def _process_file(process: str, step: str, asks: list[str], names: list[str]) -> str:
    doc = {
        "process": process,
        "version": 1,
        "steps": [
            {
                "id": step,
                "agent": "Do the thing.",
                "advisory": True,
                "check": [
                    {"ask": asks[0], "pass": 0.9, "fail": 0.5},
                    {
                        "ask": asks[1],
                        "one_of": {n: f"means {n}" for n in names},
                        "pass": [names[0]],
                        "unsure": [names[1]],
                    },
                ],  # fmt: skip
            }
        ],
    }
    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)


@pytest.fixture(scope="module")
def injected(tmp_path_factory) -> dict:
    """An export whose every text field is a payload, ingested through the CLI."""
    root = tmp_path_factory.mktemp("inject")
    export = root / "export"
    export.mkdir()
    process, step = PAYLOADS["sql_quote"], PAYLOADS["ansi"]
    asks = [PAYLOADS["html"], PAYLOADS["markdown"]]
    names = [PAYLOADS["c1_csi"], PAYLOADS["backslash"], PAYLOADS["json_path"], PAYLOADS["formula"]]
    (export / "process.yaml").write_text(
        _process_file(process, step, asks, names), encoding="utf-8"
    )
    lines, decisions = [], []
    for i, (key, text) in enumerate(PAYLOADS.items()):
        run = f"{text}#{i}"
        # Every answer name is used, so the one_of lookups meet quotes, backslashes and $.[]*.
        name = names[i % len(names)]
        result = {names[0]: "pass", names[1]: "unsure"}.get(name, "fail")
        check = {
            "verdict": result, "advisory": True, "model": text, "at": f"2026-10-{1 + i % 28:02d}T10:00:00Z",
            "questions": [
                {"ask": asks[0], "kind": "yes_no", "answer": 0.95, "result": "pass"},
                {"ask": asks[1], "kind": "choice", "answer": name, "confidence": 0.9, "result": result},
            ],
        }  # fmt: skip
        lines.append(
            {
                "run": run,
                "process": process,
                "version": "1",
                "step": step,
                "attempt": 1,
                "check": check,
            }
        )
        decisions.append({"run": run, "process": process, "step": step, "attempt": 1, "decision": "approved",
                          "by": text, "at": "2026-10-29T10:00:00Z", "note": f"{key}: {text}"})  # fmt: skip
    body = "\n".join(json.dumps(r, ensure_ascii=False) for r in lines + decisions) + "\n"
    # A bad line full of payloads, so reasons and raw text in the quarantine carry them too.
    body += json.dumps(
        {
            "run": PAYLOADS["ansi"],
            "step": PAYLOADS["newlines"],
            "check": {"verdict": PAYLOADS["ansi"]},
        }
    )
    body += "\n" + PAYLOADS["ansi"] + PAYLOADS["sql_quote"] + "\n"
    evil_name = export / "evil\x1b[31mname'; --.jsonl"
    evil_name.write_text(body, encoding="utf-8")
    db = root / "s.duckdb"
    result = runner.invoke(app, ["ingest", "--db", str(db), str(export)])
    return {"db": db, "result": result, "process": process, "step": step, "asks": asks, "names": names,
            "runs": [r["run"] for r in lines], "decisions": decisions, "file": evil_name}  # fmt: skip


def test_ingest_output_is_plain(injected):
    result = injected["result"]
    assert result.exit_code == 0, result.output
    assert ESC not in result.output and "\x9b" not in result.output
    assert "quarantined 2" in result.output


def test_tables_intact_and_text_round_trips(injected):
    con = connect(injected["db"], read_only=True)
    try:
        tables = {
            t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }
        assert {
            "runs",
            "checks",
            "answers",
            "decisions",
            "questions",
            "quarantine",
            "files",
            "meta",
        } <= tables
        n = len(PAYLOADS)
        assert con.execute("SELECT count(*) FROM checks").fetchone()[0] == n
        assert con.execute("SELECT count(*) FROM answers").fetchone()[0] == 2 * n
        assert con.execute("SELECT count(*) FROM decisions").fetchone()[0] == n
        assert con.execute("SELECT count(*) FROM quarantine").fetchone()[0] == 2
        # Byte for byte, as written.
        got_runs = sorted(r for (r,) in con.execute("SELECT run_id FROM checks").fetchall())
        assert got_runs == sorted(injected["runs"])
        assert {(p, s) for p, s in con.execute("SELECT process, step FROM checks").fetchall()} == {
            (injected["process"], injected["step"])
        }
        assert sorted(m for (m,) in con.execute("SELECT model FROM checks").fetchall()) == sorted(
            PAYLOADS.values()
        )
        assert sorted(
            a for (a,) in con.execute("SELECT DISTINCT ask FROM answers").fetchall()
        ) == sorted(injected["asks"])
        got_names = {
            n for (n,) in con.execute("SELECT name FROM answers WHERE kind = 'choice'").fetchall()
        }
        assert got_names == set(injected["names"])
        stored = sorted(con.execute("SELECT run_id, decided_by, note FROM decisions").fetchall())
        assert stored == sorted((d["run"], d["by"], d["note"]) for d in injected["decisions"])
        q = con.execute(
            "SELECT process, step, ask, one_of FROM questions ORDER BY position"
        ).fetchall()
        assert [(p, s, a) for p, s, a, _ in q] == [
            (injected["process"], injected["step"], a) for a in injected["asks"]
        ]
        assert list(json.loads(q[1][3])) == injected["names"]
        # Every submission is labeled: the payload keys joined as data, not as SQL.
        assert con.execute("SELECT count(*) FROM labeled WHERE label").fetchone()[0] == n
        # Names with quotes and backslashes are found among one_of (no false flag).
        assert flag_counts(con) == {k: 0 for k in flag_counts(con)}
    finally:
        con.close()


@pytest.mark.parametrize("args", [["status"], ["status", "--quarantine"], ["status", "--quarantine", "--format", "json"],
                                  ["status", "--format", "json"]])  # fmt: skip
def test_status_never_prints_control_sequences(injected, args):
    result = runner.invoke(app, [*args, "--db", str(injected["db"])])
    assert result.exit_code == 0, result.output
    assert ESC not in result.output
    if "json" not in args:
        # No C0 control but the newline, no DEL and no C1 control (an 8-bit terminal reads \x9b as ESC [).
        assert not CONTROL.search(result.output), CONTROL.findall(result.output)


def test_status_json_round_trips_names(injected):
    result = runner.invoke(
        app, ["status", "--db", str(injected["db"]), "--format", "json", "--quarantine"]
    )
    info = json.loads(result.stdout)
    assert {(p["process"], p["step"]) for p in info["processes"]} == {
        (injected["process"], injected["step"])
    }
    assert sorted(p["model"] for p in info["processes"]) == sorted(PAYLOADS.values())
    assert {r["path"] for r in info["quarantine"]} == {str(injected["file"])}
    assert any(PAYLOADS["ansi"] in r["raw"] for r in info["quarantine"])


def test_table_status_shows_names_defanged(injected):
    """The table shows the text without its escapes: readable, not executed."""
    out = runner.invoke(app, ["status", "--db", str(injected["db"])]).output
    assert "red" in out  # the words of the ANSI payload survive, the escapes do not
    assert PAYLOADS["sql_quote"] in out  # quotes are only text in a terminal


def test_quarantine_reasons_quote_values_safely(injected):
    con = connect(injected["db"], read_only=True)
    try:
        reasons = [r for (r,) in con.execute("SELECT reason FROM quarantine").fetchall()]
    finally:
        con.close()
    assert len(reasons) == 2
    # A value quoted in a reason is JSON-encoded: the escape shows as \u001b, not as a control character.
    assert all(ESC not in r for r in reasons)


def test_textsafe_defangs_every_payload():
    """The shared helpers other faces use: terminal, Markdown and CSV."""
    textsafe = pytest.importorskip("calibrate.textsafe")
    for text in PAYLOADS.values():
        plain = textsafe.strip_control(text)
        assert ESC not in plain and "\x9b" not in plain and "\n" not in plain
        md = textsafe.escape_markdown(text)
        # Every character that could start markup is backslash-escaped, and the value stays on one line.
        assert "\n" not in md
        assert not re.search(r"(?<!\\)[<>\[\]()|`*_!]", md.replace("\\\\", "")), md
        cell = textsafe.csv_cell(text)
        assert not str(cell).startswith(("=", "+", "-", "@"))


def test_file_name_with_escapes(tmp_path):
    """A file name is text from outside too: it is printed without its escapes."""
    path = Path(tmp_path) / "x\x1b]0;pwned\x07\x1b[2J.jsonl"
    path.write_text('{"run": "r1", "step": "s", "check": {"verdict": "error"}}\n', encoding="utf-8")
    result = runner.invoke(app, ["ingest", "--db", str(tmp_path / "s.duckdb"), str(path)])
    assert result.exit_code == 0, result.output
    assert ESC not in result.output and "\x07" not in result.output


# The analysis commands and the report, run on the same store: the same text must stay inert.
ANALYSIS_COMMANDS = [
    ["agreement"],
    ["agreement", "--format", "json"],
    ["thresholds"],
    ["thresholds", "--format", "json"],
    ["thresholds", "--format", "yaml"],
]


@pytest.mark.parametrize("args", ANALYSIS_COMMANDS, ids=[" ".join(a) for a in ANALYSIS_COMMANDS])
def test_analysis_commands_print_no_escapes(injected, args):
    result = runner.invoke(app, [*args, "--db", str(injected["db"])])
    assert result.exit_code == 0, result.output
    assert ESC not in result.output and "Traceback" not in result.output
    if "json" not in args:
        assert not CONTROL.search(result.output), CONTROL.findall(result.output)


@pytest.fixture(scope="module")
def report_dir(injected, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report")
    result = runner.invoke(app, ["report", "--db", str(injected["db"]), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert ESC not in result.output
    return out


def test_report_html_runs_nothing(report_dir):
    html = (report_dir / "report.html").read_text(encoding="utf-8")
    assert "<script" not in html.lower()  # neither ours nor the payload's, as a tag
    assert "<img src=x" not in html and 'href="javascript' not in html.lower()
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html  # shown, escaped


def test_report_markdown_is_escaped(report_dir):
    md = (report_dir / "report.md").read_text(encoding="utf-8")
    assert ESC not in md
    fenced = False
    for line in md.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and not line.startswith("```"):
            # Outside code blocks no payload markup survives unescaped.
            assert not re.search(r"(?<!\\)<script|(?<!\\)\]\(javascript", line), line
    assert not fenced


def test_report_json_round_trips_names(report_dir, injected):
    text = (report_dir / "report.json").read_text(encoding="utf-8")
    assert ESC not in text  # JSON escapes it as \u001b
    assert injected["process"] in json.dumps(json.loads(text), ensure_ascii=False)


def test_report_html_has_no_control_characters(report_dir):
    html = (report_dir / "report.html").read_text(encoding="utf-8")
    assert not CONTROL.search(html.replace("\n", " ")), CONTROL.findall(html)[:5]
