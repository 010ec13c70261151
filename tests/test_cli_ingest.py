"""CLI: ingest, status, simulate and their exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from calibrate.cli import app

runner = CliRunner()


def test_ingest_then_status_json(tmp_path, sample_dir):
    db = str(tmp_path / "s.duckdb")
    result = runner.invoke(app, ["ingest", "--db", db, str(sample_dir)])
    assert result.exit_code == 0, result.output
    assert "quarantined 0" in result.stdout
    result = runner.invoke(app, ["status", "--db", db, "--format", "json"])
    assert result.exit_code == 0
    info = json.loads(result.stdout)
    for key in ("runs", "checks", "answers", "decisions", "labeled_checks", "unlabeled_checks",
                "conflicts", "quarantined", "files", "processes", "schema_version"):  # fmt: skip
        assert key in info
    manifest = json.loads((sample_dir / ".truth" / "manifest.json").read_text())
    assert info["checks"] == manifest["checks"]
    assert set(info["processes"][0]) >= {
        "process",
        "step",
        "model",
        "checks",
        "labeled",
        "first_at",
        "last_at",
    }


def test_simulate_ingest_status(tmp_path):
    out = tmp_path / "sim"
    result = runner.invoke(app, ["simulate", "--runs", "200", "--seed", "5", "--out", str(out)])
    assert result.exit_code == 0
    manifest = json.loads(result.stdout)
    db = str(tmp_path / "s.duckdb")
    assert runner.invoke(app, ["ingest", "--db", db, "--quiet", str(out)]).exit_code == 0
    info = json.loads(runner.invoke(app, ["status", "--db", db, "--format", "json"]).stdout)
    assert info["checks"] == manifest["checks"] and info["decisions"] == manifest["decisions"]


def test_exit_codes(tmp_path):
    db = str(tmp_path / "s.duckdb")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert runner.invoke(app, ["ingest", "--db", db, str(bad)]).exit_code == 0
    bad2 = tmp_path / "bad2.jsonl"
    bad2.write_text("still not json\n")
    assert runner.invoke(app, ["ingest", "--db", db, "--strict", str(bad2)]).exit_code == 1
    missing = runner.invoke(app, ["ingest", "--db", db, str(tmp_path / "nope")])
    assert missing.exit_code == 2
    assert "no such file" in missing.output and "Traceback" not in missing.output
    assert runner.invoke(app, ["status", "--db", str(tmp_path / "none.duckdb")]).exit_code == 2


def test_env_var_store(tmp_path, sample_dir, monkeypatch):
    monkeypatch.setenv("CALIBRATE_DB", str(tmp_path / "env.duckdb"))
    assert runner.invoke(app, ["ingest", "--quiet", str(sample_dir / "limits.json")]).exit_code == 0
    assert (tmp_path / "env.duckdb").exists()


def test_a_failed_or_empty_ingest_creates_no_store(tmp_path, sample_dir):
    """A missing path, or nothing to load, leaves no empty store for status to read as zeros."""
    db = tmp_path / "s.duckdb"
    res = runner.invoke(app, ["ingest", "--db", str(db), str(tmp_path / "missing.jsonl")])
    assert res.exit_code == 2 and "no such file or folder" in res.stderr
    assert not db.exists()
    (tmp_path / "notes.txt").write_text("not an export")
    res = runner.invoke(app, ["ingest", "--db", str(db), str(tmp_path / "notes.txt")])
    assert res.exit_code == 0 and "no store created" in res.stderr
    assert not db.exists()
    res = runner.invoke(app, ["status", "--db", str(db)])
    assert res.exit_code == 2 and "no store" in res.stderr


def test_a_db_that_is_not_duckdb_says_so(tmp_path, sample_dir):
    import sqlite3

    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    for path in (other, text):
        before = path.read_bytes()
        for args in (["ingest", "--db", str(path), str(sample_dir / "limits.json")],
                     ["status", "--db", str(path)]):  # fmt: skip
            res = runner.invoke(app, args)
            assert res.exit_code == 2, res.output
            assert (
                res.stderr.strip()
                == f"error: {path} is not a DuckDB file: give --db a calibrate store"
            )
        assert path.read_bytes() == before


def test_a_filter_that_matches_nothing_is_one_error_everywhere(sample_store, tmp_path):
    """agreement, curves, thresholds and report: exit 2, one line on stderr naming what exists."""
    want = (
        "error: --process 'purchase-aproval' matches no check; processes in the store: "
        "expense-review, invoice-matching, vendor-onboarding"
    )
    for command in ("agreement", "curves", "thresholds", "report"):
        args = [command, "--db", str(sample_store), "--process", "purchase-aproval"]
        if command in ("curves", "report"):
            args += ["--out", str(tmp_path / command)]
        res = runner.invoke(app, args)
        assert res.exit_code == 2, (command, res.output)
        assert not res.stdout, command
        assert want in res.stderr.splitlines(), (command, res.stderr)
    res = runner.invoke(
        app,
        ["agreement", "--db", str(sample_store), "--process", "invoice-matching", "--step", "nope"],
    )
    assert "--step 'nope' matches no check; steps in the store: match_invoice" in res.stderr


def test_an_empty_window_is_an_empty_result_everywhere(sample_store, tmp_path):
    """A --since/--until window with no checks: exit 0, an empty result and a note on stderr.

    A nightly job on a quiet day must not fail (it exited 2 before); a --since later than
    --until stays an argument error, naming both options.
    """
    empty = {
        "agreement": [],
        "curves": [],
        "thresholds": {"alpha": 0.05, "delta": 0.1, "beta": 0.2, "steps": []},
    }
    for command in ("agreement", "curves", "thresholds", "report"):
        base = [command, "--db", str(sample_store), "--process", "invoice-matching"]
        if command in ("curves", "report"):
            base += ["--out", str(tmp_path / command)]
        for fmt in ("table", "json"):
            res = runner.invoke(app, [*base, "--since", "2030-01-01", "--format", fmt])
            assert res.exit_code == 0, (command, fmt, res.output)
            assert (
                "note: no check matches these filters (--process invoice-matching, "
                "--since 2030-01-01T00:00:00+00:00): an empty result"
            ) in res.stderr, (command, res.stderr)
            assert "error" not in res.stderr, (command, res.stderr)
            if fmt == "table":
                assert "these filters" in res.stdout, (command, res.stdout)
            elif command == "report":
                doc = json.loads(res.stdout)
                assert doc["steps"] == [] and doc["notes"] == [
                    "No checked step has a check under these filters: nothing to decide."
                ]
            else:
                assert json.loads(res.stdout) == empty[command], command
        res = runner.invoke(app, [*base, "--since", "2026-12-01", "--until", "2026-11-01"])
        assert res.exit_code == 2, (command, res.output)
        assert res.stderr.startswith(
            "error: --since 2026-12-01T00:00:00+00:00 is later than --until "
            "2026-11-01T00:00:00+00:00"
        ), (command, res.stderr)


def test_one_format_switch_with_one_meaning(sample_store, tmp_path, sample_dir):
    """--format everywhere; what a command cannot print is an error, never a silent omission."""
    db = ["--db", str(sample_store)]
    cases = {
        ("status", "--format", "csv"): "--format csv: status prints table or json",
        ("thresholds", "--format", "csv"): "csv is the trade-off's rows: add --tradeoff",
        ("thresholds", "--tradeoff", "--format", "yaml"): "a check: block has no trade-off",
        ("agreement", "--format", "yaml"): "--format yaml: agreement prints table or json or csv",
    }
    for args, message in cases.items():
        res = runner.invoke(app, [*args, *db])
        assert res.exit_code == 2 and message in res.stderr, (args, res.output)
    # thresholds --tradeoff --format json keeps the trade-off; csv prints its rows.
    res = runner.invoke(
        app, ["thresholds", *db, "--step", "match_invoice", "--tradeoff", "--format", "json"]
    )
    (step,) = json.loads(res.stdout)["steps"]
    assert step["tradeoff"] and {"alpha", "status", "coverage"} <= step["tradeoff"][0].keys()
    res = runner.invoke(
        app, ["thresholds", *db, "--step", "match_invoice", "--tradeoff", "--format", "csv"]
    )
    lines = res.stdout.splitlines()
    assert (
        lines[0].startswith("process,step,model,alpha,status")
        and len(lines) == len(step["tradeoff"]) + 1
    )
    res = runner.invoke(app, ["curves", *db, "--out", str(tmp_path / "c"), "--format", "csv"])
    assert res.exit_code == 0 and res.stdout.startswith("process,step,model,week,question_id")
    # ingest: --format json, and --json kept as a hidden alias.
    store = tmp_path / "s.duckdb"
    for flag in (["--format", "json"], ["--json"]):
        res = runner.invoke(
            app, ["ingest", "--db", str(store), *flag, str(sample_dir / "limits.json")]
        )
        assert res.exit_code == 0 and "totals" in json.loads(res.stdout)


def test_strict_quiet_says_why_and_diagnostics_are_not_wrapped_off_a_terminal(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"run": "r1", "step": \n')
    db = str(tmp_path / "s.duckdb")
    res = runner.invoke(app, ["ingest", "--db", db, "--strict", "-q", str(bad)])
    assert res.exit_code == 1
    assert (
        res.stderr
        == "error: --strict: 1 record quarantined (`calibrate status --quarantine` lists them)\n"
    )
    # A long diagnostic is one line in a pipe or a log (wrapped only on a terminal).
    long_name = tmp_path / ("x" * 120 + ".txt")
    long_name.write_text("not an export")
    res = runner.invoke(app, ["ingest", "--db", db, str(long_name)])
    (line,) = [ln for ln in res.stderr.splitlines() if long_name.name in ln]
    assert line.endswith("not an export kind (.txt)")


def test_skipped_files_are_listed_apart_from_the_quarantine(tmp_path):
    # A file that is no export kind is skipped: counted and listed under its own heading, never
    # among the quarantined records (which the status lists, and adds up to its count).
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "README.md").write_text("# notes")
    (folder / "gen.py").write_text("print(1)")
    (folder / "bad.jsonl").write_text('{"run": "r1", "step": \n{"run": "r2", "step": \n')
    db = str(tmp_path / "s.duckdb")
    res = runner.invoke(app, ["ingest", "--db", db, str(folder)])
    assert res.exit_code == 0
    assert res.stdout.splitlines()[-1] == (
        "total: read 2, loaded 0 (0 new), quarantined 2; 2 files skipped"
    )
    lines = res.stderr.splitlines()
    heading = lines.index("skipped files (not an export kind: nothing read or stored):")
    assert lines[heading + 1 : heading + 3] == [
        f"  {folder / 'README.md'}: not an export kind (.md)",
        f"  {folder / 'gen.py'}: not an export kind (.py)",
    ]
    text = runner.invoke(app, ["status", "--db", db, "--quarantine", "--limit", "1"]).stdout
    listed = text.split("quarantined records:")[1].splitlines()[1:]
    assert "quarantined 2 " in text and len(listed) == 2
    assert "bad.jsonl line" in listed[0] and listed[1] == "  … and 1 more (--limit lists more)"
    good = {"ask": "Q", "kind": "yes_no", "answer": 0.9, "result": "pass"}
    (folder / "bad.jsonl").write_text(
        json.dumps({"run": "r1", "step": "s", "check": {"verdict": "pass", "questions": [good]}})
    )
    clean = str(tmp_path / "clean.duckdb")
    assert runner.invoke(app, ["ingest", "--db", clean, "--strict", str(folder)]).exit_code == 0
    text = runner.invoke(app, ["status", "--db", clean, "--quarantine"]).stdout
    assert text.splitlines()[-1] == "quarantined records: none"


def test_ingest_json_lists_the_skipped_files(tmp_path):
    """--format json is the whole result: the skipped files too, with their reason (black-box F9)."""
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "README.md").write_text("# notes")
    (folder / "decisions.tsv").write_text("run\tdecision\n")
    good = {"ask": "Q", "kind": "yes_no", "answer": 0.9, "result": "pass"}
    (folder / "v.jsonl").write_text(
        json.dumps({"run": "r1", "step": "s", "check": {"verdict": "pass", "questions": [good]}})
    )
    db = tmp_path / "s.duckdb"
    res = runner.invoke(app, ["ingest", "--db", str(db), "--format", "json", str(folder)])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["skipped"] == [
        {"path": str(folder / "README.md"), "reason": "not an export kind (.md)"},
        {"path": str(folder / "decisions.tsv"), "reason": "not an export kind (.tsv)"},
    ]
    assert out["totals"]["skipped"] == 2 and out["totals"]["read"] == 1
    # Nothing to load (and no store yet): the same form.
    res = runner.invoke(
        app,
        [
            "ingest",
            "--db",
            str(tmp_path / "new.duckdb"),
            "--format",
            "json",
            str(folder / "README.md"),
        ],
    )
    out = json.loads(res.stdout)
    assert res.exit_code == 0 and out["totals"]["skipped"] == 1 and len(out["skipped"]) == 1


def test_status_lists_the_flagged_records(tmp_path):
    from pathlib import Path

    bad = Path(__file__).resolve().parent / "data" / "bad"
    db = str(tmp_path / "s.duckdb")
    files = [
        bad / n
        for n in ("verdict_not_worst.jsonl", "at_missing.jsonl", "decision_unseen_run.jsonl")
    ]
    assert runner.invoke(app, ["ingest", "--db", db, *map(str, files)]).exit_code == 0
    info = json.loads(
        runner.invoke(app, ["status", "--db", db, "--flags", "--format", "json"]).stdout
    )
    listed = {}
    for row in info["flag_rows"]:
        listed[row["flag"]] = listed.get(row["flag"], 0) + 1
        assert row["run_id"] and row["detail"]
    assert listed == {k: v for k, v in info["flags"].items() if v} and len(listed) == 3
    text = runner.invoke(app, ["status", "--db", db, "--flags"]).stdout
    assert "flagged records:" in text and "verdict_not_worst:" in text


def test_status_cuts_long_names_with_an_ellipsis_and_keeps_columns(tmp_path):
    good = {"ask": "Q", "kind": "yes_no", "answer": 0.9, "result": "pass"}
    step, model = "check_" + "x" * 40, "model-" + "y" * 30
    rec = {"run": "r1", "process": "p", "step": step}
    rec["check"] = {"verdict": "pass", "model": model, "questions": [good]}
    (tmp_path / "v.jsonl").write_text(json.dumps(rec) + "\n")
    db = str(tmp_path / "s.duckdb")
    assert runner.invoke(app, ["ingest", "--db", db, str(tmp_path / "v.jsonl")]).exit_code == 0
    lines = runner.invoke(app, ["status", "--db", db]).stdout.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("process / step"))
    row = lines[head + 1]
    assert row.startswith(f"p / {step[:33]}… {model[:21]}… ")
    assert len(row) == len(lines[head]) and row.endswith("      1        0")


def test_ingest_help_reads_like_the_other_commands():
    # The usage line named typer's placeholder ({paths}...); the byte limit's floor was unsaid.
    res = runner.invoke(app, ["ingest", "--help"], terminal_width=200)
    assert res.exit_code == 0
    assert "Usage: calibrate ingest [OPTIONS] PATH..." in res.stdout
    assert "{paths}" not in res.stdout and "(at least 1024)" in res.stdout
    missing = runner.invoke(app, ["ingest"])
    assert missing.exit_code == 2 and "Usage: calibrate ingest [OPTIONS] PATH..." in missing.output
    low = runner.invoke(app, ["ingest", "--max-line-bytes", "100", "x"])
    assert low.exit_code == 2


def test_json_and_another_format_are_refused_together(tmp_path, sample_dir):
    """``--json`` (the older --format json) with ``--format table`` is two forms: exit 2, nothing stored."""
    db = tmp_path / "s.duckdb"
    limits = str(sample_dir / "limits.json")
    for args in (["--json", "--format", "table"], ["--format", "TABLE", "--json"]):
        res = runner.invoke(app, ["ingest", "--db", str(db), *args, limits])
        assert res.exit_code == 2, res.output
        assert res.stdout == ""
        assert (
            res.stderr.strip() == "error: --json is --format json: it cannot go with --format table"
        )
        assert not db.exists()
    for args in (["--json"], ["--json", "--format", "json"], ["--format", "json"]):
        res = runner.invoke(app, ["ingest", "--db", str(db), *args, limits])
        assert res.exit_code == 0, res.output
        assert "totals" in json.loads(res.stdout)


def test_a_quarantined_process_or_limits_file_says_why_in_the_json(tmp_path):
    """Black-box bb5 finding 11: an empty YAML process file read "quarantined": 1, "note": ""."""
    (tmp_path / "d.yaml").write_text("", encoding="utf-8")
    (tmp_path / "c.json").write_text("", encoding="utf-8")
    out = runner.invoke(
        app, ["ingest", "--db", str(tmp_path / "s.duckdb"), str(tmp_path / "d.yaml"),
              str(tmp_path / "c.json"), "--format", "json"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    files = {Path(f["path"]).name: f for f in json.loads(out.stdout)["files"]}
    for name in ("d.yaml", "c.json"):
        assert files[name]["quarantined"] == 1 and files[name]["note"], name
    assert files["d.yaml"]["note"].startswith("process file: ")
