"""``calibrate report`` and ``calibrate demo`` through Typer's CliRunner."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest
from typer.testing import CliRunner

from calibrate.cli import app
from calibrate.demo import run_demo
from calibrate.simulate import simulate

runner = CliRunner()
SCHEMA = json.loads(resources.files("calibrate.schemas").joinpath("report.schema.json").read_text())


@pytest.fixture(scope="module")
def sample_report(sample_store, tmp_path_factory):
    out = tmp_path_factory.mktemp("sample-report")
    result = runner.invoke(
        app, ["report", "--db", str(sample_store), "--out", str(out), "--write", "json"]
    )
    return result, out


def test_report_on_the_sample(sample_report):
    result, out = sample_report
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "report.json").read_text(encoding="utf-8"))
    jsonschema.validate(doc, SCHEMA)
    steps = {s["step"]: s for s in doc["steps"]}
    assert set(steps) == {"check_vendor", "match_invoice", "review_expense"}
    # The sample swaps the vendor step's evaluator part-way: the report must see it.
    vendor = steps["check_vendor"]
    assert vendor["model"] == "evaluator-b-2026-09"
    crit = {c["name"]: c for c in vendor["criteria"]}
    assert crit["evaluator_models"]["value"] == 2 and not crit["evaluator_models"]["ok"]
    assert vendor["decision"] == "NO"
    assert not (out / "report.html").exists()  # only the format asked for


def test_stdout_lists_every_step_in_80_columns(sample_report):
    result, _ = sample_report
    lines = result.stdout.splitlines()
    heads = [ln for ln in lines if not ln.startswith(" ")]
    assert len(heads) == 3
    assert all(ln.split()[0] in ("READY", "NOT", "NO") for ln in heads)
    assert all(len(ln) <= 80 for ln in heads)
    assert "wrote json" in result.stderr


def test_filters_narrow_the_report(sample_store, tmp_path):
    result = runner.invoke(
        app,
        ["report", "--db", str(sample_store), "--out", str(tmp_path), "--write", "json",
         "--process", "invoice-matching", "--alpha", "0.1", "--minutes-per-review", "12"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert [s["process"] for s in doc["steps"]] == ["invoice-matching"]
    assert doc["options"]["alpha"] == 0.1 and doc["options"]["minutes_per_review"] == 12
    assert doc["options"]["filters"]["process"] == "invoice-matching"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--write", "html,pdf"], "--write html,pdf: unknown report format 'pdf'; choose from"),
        (["--format", "csv"], "--format csv: report prints table or json"),
        (["--format", "html,pdf"], "report prints table or json"),
        # Every refusal names the option as typed (not the Python field, min_coverage).
        (["--alpha", "1.5"], "error: --alpha must be in (0, 0.5) (the audit after the switch"),
        (["--min-coverage", "2"], "error: --min-coverage must be in [0, 1], got 2.0"),
        (["--min-labels", "0"], "error: --min-labels must be at least 1"),
        (["--drift-level", "1"], "error: --drift-level must be in (0, 1)"),
        (["--max-error-rate", "-1"], "error: --max-error-rate must be in [0, 1]"),
        (["--max-truncation-rate", "3"], "error: --max-truncation-rate must be in [0, 1]"),
        (["--minutes-per-review", "-1"], "error: --minutes-per-review must be >= 0"),
        (["--audit-weeks", "0"], "error: --audit-weeks must be at least 1"),
        (["--alpha", "0.6"], "error: --alpha must be in (0, 0.5) (the audit after the switch"),
        (["--beta", "1.5"], "error: --beta must be in (0, 1] (1: false fails uncontrolled)"),
        (["--process", "no-such-process"], "--process 'no-such-process' matches no check"),
    ],
)
def test_bad_options_exit_2_with_one_line(sample_store, tmp_path, args, message):
    result = runner.invoke(
        app, ["report", "--db", str(sample_store), "--out", str(tmp_path), *args]
    )
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_missing_store_exits_2(tmp_path):
    result = runner.invoke(
        app, ["report", "--db", str(tmp_path / "none.duckdb"), "--out", str(tmp_path)]
    )
    assert result.exit_code == 2 and "calibrate ingest" in result.stderr


def test_demo_writes_the_three_files(tmp_path):
    sample = tmp_path / "sample"
    simulate(sample, runs=400, seed=3)
    out = tmp_path / "reports"
    result = runner.invoke(
        app,
        ["demo", "--db", str(tmp_path / "demo.duckdb"), "--sample", str(sample), "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    for name in ("report.html", "report.md", "report.json"):
        assert (out / name).stat().st_size > 0
    assert any(p.suffix == ".png" for p in (out / "figures").iterdir())
    assert "wrote html" in result.stdout
    doc = json.loads((out / "report.json").read_text(encoding="utf-8"))
    jsonschema.validate(doc, SCHEMA)
    # One line per step names its decision.
    for step in doc["steps"]:
        assert any(
            step["step"] in ln and ln.split()[0] in ("READY", "NOT", "NO")
            for ln in result.stdout.splitlines()
        )


def test_run_demo_returns_decisions(tmp_path):
    sample = tmp_path / "sample"
    simulate(sample, runs=150, seed=4)
    lines = run_demo(db=tmp_path / "d.duckdb", sample=sample, out=tmp_path / "r", formats="json")
    assert lines[-1].startswith("wrote json")
    assert (tmp_path / "r" / "report.json").exists()


def test_format_json_prints_the_report_and_an_older_format_list_still_writes(
    sample_store, tmp_path
):
    """--format means what is printed, as in every command; the files are --write (issue 18)."""
    res = runner.invoke(
        app, ["report", "--db", str(sample_store), "--out", str(tmp_path / "a"), "--format", "json",
              "--write", "json", "--process", "invoice-matching"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout)
    written = json.loads((tmp_path / "a" / "report.json").read_text(encoding="utf-8"))
    assert printed["steps"] == written["steps"]
    old = runner.invoke(
        app, ["report", "--db", str(sample_store), "--out", str(tmp_path / "b"), "--format", "md",
              "--process", "invoice-matching"],
    )  # fmt: skip
    assert old.exit_code == 0, old.output
    assert "--format md is now --write md" in old.stderr
    assert (tmp_path / "b" / "report.md").exists() and not (tmp_path / "b" / "report.json").exists()
    assert old.stdout.startswith("READY")


def test_beta_one_leaves_false_fails_uncontrolled_as_thresholds_does(sample_store, tmp_path):
    """report --beta 1 was refused while thresholds and monitor accept it (outside review); with
    false fails uncontrolled no step is recommended to pre-screen on its fails."""
    out = tmp_path / "rep"
    result = runner.invoke(app, ["report", "--db", str(sample_store), "--beta", "1", "--out", str(out),
                                 "--write", "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert doc["options"]["beta"] == 1.0
    jsonschema.validate(doc, SCHEMA)
    assert all(s["pattern"]["recommended"] != "pre-screen" for s in doc["steps"])


def test_threshold_notes_are_one_string_a_note(sample_report):
    """Outside review: report.json carried a step's threshold notes joined by "; " (which a note
    holds itself) in one entry of `notes`. A step's `threshold_notes` lists them, and `notes` has
    one entry a note. Fails on the old code."""
    result, out = sample_report
    doc = json.loads((out / "report.json").read_text(encoding="utf-8"))
    invoice = next(s for s in doc["steps"] if s["step"] == "match_invoice")
    notes = invoice["threshold_notes"]
    (doubtful,) = [n for n in notes if "more likely no than yes" in n]
    assert len(notes) >= 2 and "; " in doubtful and "95% CI" in doubtful
    for note in notes:
        assert f"invoice-matching/match_invoice: {note}" in doc["notes"]
