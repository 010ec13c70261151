"""The loop after the switch, end to end through the CLI: simulate with enforcement (and a shift),
ingest, audit draw, the simulated reviewer's decisions, ingest again, monitor."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pandas as pd
import pytest
from typer.testing import CliRunner

from calibrate.analysis.monitor import MonitorReport, StepMonitor
from calibrate.analysis.rate_monitor import RateMonitor
from calibrate.cli import app
from calibrate.cli.monitor import print_table
from calibrate.cli.reference import cli_reference
from calibrate.report.switch import _rate_line

runner = CliRunner()


def loop(tmp_path, *shift: str, draw_args: tuple[str, ...] = ()) -> dict:
    out, db = tmp_path / "exp", str(tmp_path / "c.duckdb")
    sim = ["simulate", "--runs", "3000", "--seed", "1", "--enforce-weeks", "12", "--out", str(out)]
    assert runner.invoke(app, [*sim, *shift]).exit_code == 0
    assert runner.invoke(app, ["ingest", "--db", db, "--quiet", str(out)]).exit_code == 0
    audit_csv = tmp_path / "audit.csv"
    draw = runner.invoke(app, ["audit", "draw", "--db", db, "--process", "invoice-matching",
                               "--step", "match_invoice", "--rate", "0.5", "--seed", "3",
                               "--out", str(audit_csv), *draw_args])  # fmt: skip
    assert draw.exit_code == 0, draw.output
    review = runner.invoke(app, ["simulate", "--out", str(out), "--review", str(audit_csv)])
    assert review.exit_code == 0, review.output
    assert runner.invoke(app, ["ingest", "--db", db, "--quiet", str(out)]).exit_code == 0
    result = runner.invoke(app, ["monitor", "--db", db, "--format", "json"])
    assert result.exit_code == 0, result.output
    table = runner.invoke(app, ["monitor", "--db", db])
    assert table.exit_code == 0, table.output
    info = json.loads(result.stdout)
    info["table"] = table.stdout
    info["db"] = db
    info["truth"] = json.loads((out / ".truth" / "enforcement.json").read_text())
    return info


def step_of(info: dict) -> dict:
    (step,) = [s for s in info["steps"] if s["process"] == "invoice-matching"]
    return step


def test_alarm_after_a_shift(tmp_path):
    info = loop(tmp_path, "--shift-week", "4", "--shift", "0.8")
    step = step_of(info)
    assert step["status"] == "alarm"
    fp = step["false_pass"]
    assert fp["e_value"] >= 1 / info["delta"] and fp["alarm_at"] is not None
    assert fp["alarm_at"] > info["truth"]["shift_at"]
    assert fp["lower"] > 0 and fp["upper"] > info["alpha"]
    assert "advisory: true" in step["action"]
    assert "ALARM" in info["table"] and "advisory: true" in info["table"]
    # A script gates on the alarm with --fail-on-alarm: exit 1, the output printed all the same.
    gated = runner.invoke(app, ["monitor", "--db", info["db"], "--format", "json",
                                "--fail-on-alarm"])  # fmt: skip
    assert gated.exit_code == 1 and json.loads(gated.stdout)["steps"][0]["status"] == "alarm"
    assert set(info) >= {"alpha", "beta", "delta", "steps"}
    assert set(fp) >= {"audited", "bad", "rate", "lower", "upper", "e_value", "alarm_at"}
    assert step["escalations"]["n"] > 0
    # The report shows the section, in every format.
    rep = tmp_path / "rep"
    assert runner.invoke(app, ["report", "--db", info["db"], "--out", str(rep)]).exit_code == 0
    md = (rep / "report.md").read_text(encoding="utf-8")
    assert "## Since the switch" in md and "ALARM" in md and "figures/" in md
    assert "Since the switch" in (rep / "report.html").read_text(encoding="utf-8")
    doc = json.loads((rep / "report.json").read_text(encoding="utf-8"))
    assert [s["status"] for s in doc["since_the_switch"]] == ["alarm"]
    # The escalations decided after the switch are counted where the step's labels are.
    (inv,) = [s for s in doc["steps"] if s["process"] == "invoice-matching"]
    assert inv["left_out"]["escalations_after_switch"] == step["escalations"]["decided"] > 0
    assert "escalations after the switch" in md
    # A report over a window that starts after the alarm runs the same test from the switch: the
    # alarm stands, with the same e-values and counts (the window used to restart the test).
    since = (pd.Timestamp(fp["alarm_at"]) + pd.Timedelta(days=1)).isoformat()
    windowed = tmp_path / "windowed"
    run = runner.invoke(app, ["report", "--db", info["db"], "--out", str(windowed),
                              "--since", since])  # fmt: skip
    assert run.exit_code == 0, run.output
    doc = json.loads((windowed / "report.json").read_text(encoding="utf-8"))
    (since,) = [s for s in doc["since_the_switch"] if s["process"] == "invoice-matching"]
    assert since["status"] == "alarm"
    for key in ("audited", "bad", "e_value", "alarm_at", "e_value_peak"):
        assert since["false_pass"][key] == fp[key]
    assert any("whatever --since" in n for n in doc["notes"])
    # monitor --until reads the test as it stood then (the CLI had no --until; the API had).
    before = (pd.Timestamp(fp["alarm_at"]) - pd.Timedelta(days=1)).isoformat()
    then = runner.invoke(app, ["monitor", "--db", info["db"], "--format", "json",
                               "--until", before])  # fmt: skip
    assert then.exit_code == 0, then.output
    old = step_of(json.loads(then.stdout))
    assert old["status"] != "alarm" and old["false_pass"]["alarm_at"] is None
    assert 0 < old["false_pass"]["audited"] < fp["audited"]
    bad = runner.invoke(app, ["monitor", "--db", info["db"], "--until", "yesterday"])
    assert bad.exit_code == 2 and "--until 'yesterday' is not a time" in bad.stderr
    # The API takes the same text (it compared a string with timestamps and failed).
    from calibrate.analysis.monitor import monitor_store
    from calibrate.store import connect

    con = connect(info["db"], read_only=True)
    (api,) = [s for s in monitor_store(con, until=before).steps if s.process == "invoice-matching"]
    con.close()
    assert api.false_pass.audited == old["false_pass"]["audited"]


def test_ok_without_a_shift(tmp_path):
    info = loop(tmp_path)
    step = step_of(info)
    assert step["status"] in ("ok", "warning"), step
    assert step["false_pass"]["alarm_at"] is None
    assert step["false_pass"]["audited"] > 300
    assert runner.invoke(app, ["monitor", "--db", info["db"], "--fail-on-alarm"]).exit_code == 0
    # The sample's other steps record only blocking fails with advisory: false: not enforced.
    assert [s["process"] for s in info["steps"]] == ["invoice-matching"]


@pytest.mark.parametrize("fmt", ["yaml"])
def test_bad_format(tmp_path, fmt):
    result = runner.invoke(app, ["monitor", "--db", str(tmp_path / "x.duckdb"), "--format", fmt])
    assert result.exit_code == 2


def test_a_stratified_draw_alarms_after_a_shift_too(tmp_path):
    info = loop(tmp_path, "--shift-week", "4", "--shift", "0.8", draw_args=("--by-band",))
    step = step_of(info)
    assert step["status"] == "alarm"
    assert step["false_pass"]["alarm_at"] > info["truth"]["shift_at"]


def test_no_audits_says_which_rate_to_draw(tmp_path):
    out, db = tmp_path / "exp", str(tmp_path / "c.duckdb")
    sim = ["simulate", "--runs", "1500", "--seed", "2", "--enforce-weeks", "6", "--out", str(out)]
    assert runner.invoke(app, sim).exit_code == 0
    assert runner.invoke(app, ["ingest", "--db", db, "--quiet", str(out)]).exit_code == 0
    info = json.loads(runner.invoke(app, ["monitor", "--db", db, "--format", "json"]).stdout)
    step = step_of(info)
    assert step["status"] == "no_audits"
    assert (
        "calibrate audit draw --process invoice-matching --step match_invoice --rate"
        in step["action"]
    )
    assert step["audit_plan"]["passes_per_week"] > 0


@pytest.fixture(scope="module")
def enforced_db(tmp_path_factory):
    """A store with one enforced step and no audit yet."""
    tmp = tmp_path_factory.mktemp("enforced-db")
    out, db = tmp / "exp", str(tmp / "c.duckdb")
    sim = ["simulate", "--runs", "1500", "--seed", "2", "--enforce-weeks", "6", "--out", str(out)]
    assert runner.invoke(app, sim).exit_code == 0
    assert runner.invoke(app, ["ingest", "--db", db, "--quiet", str(out)]).exit_code == 0
    return db


@pytest.mark.parametrize(
    ("filters", "draw", "named"),
    [
        (["--process", "nope"], ["--step", "x"], "processes in the store: expense-review, invoice"),
        (["--step", "nope"], ["--process", "invoice-matching"], "steps in the store: "),
        (
            ["--process", "expense-review"],
            ["--step", "review_expense"],
            "enforced steps in the store: invoice-matching / match_invoice",
        ),
    ],
)
def test_filters_that_select_no_enforced_step_are_refused(
    enforced_db, filters, draw, named, tmp_path
):
    result = runner.invoke(app, ["monitor", "--db", enforced_db, *filters])
    assert result.exit_code == 2 and result.stderr.startswith("error: ")
    assert named in result.stderr
    # audit draw refuses them alike, and stores nothing.
    out = tmp_path / "e1.csv"
    drawn = runner.invoke(app, ["audit", "draw", "--db", enforced_db, *filters, *draw,
                                "--rate", "0.5", "--out", str(out)])  # fmt: skip
    assert drawn.exit_code == 2 and named in drawn.stderr and not out.exists()
    ok = runner.invoke(app, ["monitor", "--db", enforced_db, "--process", "invoice-matching"])
    assert ok.exit_code == 0 and "invoice-matching / match_invoice" in ok.stdout


def test_format_lists_only_what_monitor_prints():
    help_text = runner.invoke(app, ["monitor", "--help"], terminal_width=200).stdout
    assert "[table|json]" in help_text and "yaml" not in help_text and "csv" not in help_text
    from calibrate.cli.reference import cli_reference

    section = cli_reference().split("## `calibrate monitor`")[1].split("## ")[0]
    assert "| `--format` | table / json |" in section


def test_simulate_refuses_what_it_would_silently_ignore(tmp_path):
    """A shift outside the enforced weeks, a review of a file that is no draw, a draw of another
    export: one-line errors (exit 2), not a silent no-op or a traceback."""
    out = tmp_path / "exp"
    for args in (["--shift-week", "4"], ["--enforce-weeks", "2", "--shift-week", "10"]):
        r = runner.invoke(app, ["simulate", "--runs", "50", "--out", str(out), *args])
        assert r.exit_code == 2 and "outside the enforced weeks" in r.stderr, r.output
    assert runner.invoke(app, ["simulate", "--runs", "200", "--out", str(out)]).exit_code == 0
    decisions = next(out.rglob("*.csv"))
    r = runner.invoke(app, ["simulate", "--out", str(out), "--review", str(decisions)])
    assert r.exit_code == 2 and "is not an audit CSV" in r.stderr, r.output
    other = tmp_path / "audit.csv"
    other.write_text(
        "run,step,attempt,checked_at,decision,by,at\nr-x,s,1,2026-10-01T00:00:00Z,,,\n"
    )
    r = runner.invoke(app, ["simulate", "--out", str(out), "--review", str(other)])
    assert r.exit_code == 2 and "none of the 1 drawn checks" in r.stderr, r.output


def test_an_alarm_whose_confidence_sequence_holds_alpha_says_why(capsys):
    """The alarm is the one-sided test at 1/δ, the sequence two-sided at 2/δ: an alarm beside a
    sequence that still holds α (the tester's 0.036–0.165 against 0.05) says so, in the table,
    the JSON and the report; without an alarm the reverse note stays as it was."""

    def monitor(alarm: bool, lower: float, upper: float) -> RateMonitor:
        return RateMonitor(
            audited=434, bad=38, pending=0, rate=0.088, lower=lower, upper=upper, e_value=20.5,
            alarm_at=datetime(2026, 9, 1, tzinfo=UTC) if alarm else None, limit=0.05,
            path=pd.DataFrame(), e_value_at_alarm=20.5 if alarm else None, e_value_peak=20.5,
        )  # fmt: skip

    held = "the confidence sequence still holds 0.05: the alarm is the one-sided test at 1/δ"
    alarm = monitor(True, 0.036, 0.165)
    assert alarm.interval_note().startswith(held)
    assert alarm.to_dict()["note"] == alarm.interval_note()
    line = _rate_line("False passes", alarm, limit=0.05, delta=0.1)
    assert "Alarm on 2026-09-01" in line and f"T{held[1:]}" in line
    # Above alpha at the lower end: nothing to explain.
    assert monitor(True, 0.06, 0.165).interval_note() is None
    assert monitor(True, 0.06, 0.165).to_dict()["note"] is None
    # No alarm with the upper end above alpha: the note the report had, now in one place.
    quiet = monitor(False, 0.036, 0.165)
    assert quiet.interval_note() == (
        "the upper end is above 0.05: no alarm does not show the rate within it"
    )
    assert "The upper end is above 0.05: no alarm does not show the rate within it." in (
        _rate_line("False passes", quiet, limit=0.05, delta=0.1)
    )
    step = StepMonitor(
        process="p", step="s", model="m", enforced_since=None, status="alarm", false_pass=alarm,
        false_fail=None, escalations={"n": 0, "decided": 0}, warnings=[], action=None,
    )  # fmt: skip
    print_table(MonitorReport(0.05, 0.2, 0.1, [step]), alpha=0.05, beta=0.2, delta=0.1)
    out = capsys.readouterr().out
    assert "confidence sequence 0.036–0.165) vs 0.05" in out and held in out


def test_an_alpha_the_audit_plan_cannot_double_is_refused_naming_the_option(tmp_path):
    """monitor --alpha 0.6 ran and planned for a rise to 2 x alpha = 1.2 (outside review)."""
    result = runner.invoke(
        app, ["monitor", "--db", str(tmp_path / "none.duckdb"), "--alpha", "0.6"]
    )
    assert result.exit_code == 2 and "--alpha must be in (0, 0.5)" in result.stderr


@pytest.mark.parametrize("command", ["thresholds", "report", "monitor"])
def test_alpha_is_refused_with_one_range_whatever_the_value(tmp_path, command):
    """Outside review (G10): --alpha 1 said "must be in (0, 1)", --alpha 0.99 then "below 0.5"."""
    messages = set()
    for value in ("1", "0.99", "0", "nan"):
        result = runner.invoke(
            app, [command, "--db", str(tmp_path / "none.duckdb"), "--alpha", value]
        )
        assert result.exit_code == 2
        messages.add(result.stderr.split(", got")[0])
    assert messages == {
        "error: --alpha must be in (0, 0.5) (the audit after the switch is sized to detect a "
        "rise of the false-pass rate to 2 x alpha)"
    }
    # --help and docs/cli.md (generated from the same help) name the range.
    section = cli_reference().split(f"## `calibrate {command}`")[1].split("\n## ")[0]
    (row,) = [line for line in section.splitlines() if line.startswith("| `--alpha`")]
    assert "in (0, 0.5)" in row
