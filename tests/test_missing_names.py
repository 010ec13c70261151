"""Names a record did not give are shown as such, never as "None", "nan" or "-" (black-box run)."""

from __future__ import annotations

import json
import shutil

from typer.testing import CliRunner

from calibrate.cli import app
from calibrate.textsafe import NO_MODEL, NO_PROCESS, shown_name


def test_shown_name():
    assert shown_name(None, NO_PROCESS) == NO_PROCESS
    assert shown_name(float("nan"), NO_MODEL) == NO_MODEL
    assert shown_name("", NO_MODEL) == NO_MODEL
    assert shown_name("gpt", NO_MODEL) == "gpt"


def test_a_check_without_process_or_model_in_status_and_report(tmp_path, examples_dir):
    src = tmp_path / "examples"
    shutil.copytree(examples_dir, src)
    lines = (src / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    no_process = {**first, "run": "n-1", "process": None}
    no_model = json.loads(json.dumps({**first, "run": "n-2"}))
    no_model["check"].pop("model", None)
    (src / "nulls.jsonl").write_text(json.dumps(no_process) + "\n" + json.dumps(no_model) + "\n")
    db = str(tmp_path / "s.duckdb")
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", "--db", db, "--quiet", str(src)]).exit_code in (0, 1)
    status = runner.invoke(app, ["status", "--db", db])
    assert status.exit_code == 0, status.output
    assert "None /" not in status.stdout and NO_PROCESS in status.stdout
    assert NO_MODEL in status.stdout
    out = tmp_path / "rep"
    res = runner.invoke(app, ["report", "--db", db, "--out", str(out), "--format", "md,html"])
    assert res.exit_code == 0, res.output
    for name in ("report.md", "report.html"):
        text = (out / name).read_text(encoding="utf-8")
        assert "nan/" not in text and "None/" not in text and "<td>nan</td>" not in text
