"""Enforcement periods: a return to advisory and a second switch, or other thresholds, start a new
test; the earlier period's alarm stays as history and no longer drives the status."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from calibrate import audit
from calibrate.analysis.monitor import monitor_store
from calibrate.analysis.monitor_data import periods, short_returns
from calibrate.ingest import ingest
from calibrate.simulate import simulate
from calibrate.simulate_enforced import review_audit
from calibrate.store import connect

STEP = {"process": "invoice-matching", "step": "match_invoice"}


def frame(rows):
    """Checks of one step in time order: (day, verdict, advisory, enforced, signature)."""
    df = pd.DataFrame(rows, columns=["day", "verdict", "advisory", "enforced", "signature"])
    df["at"] = pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(df.pop("day"), unit="D")
    df["process"], df["step"] = "p", "s"
    return df


def test_periods_split_at_a_second_switch_and_at_other_thresholds_only():
    e, a = (False, True), (True, False)  # (advisory, enforced)
    rows = [
        (0, "pass", *a, "v1"),
        (1, "pass", *e, "v1"),
        (1.5, "pass", *a, "v1"),  # a run still in flight: no return to advisory
        (2, "fail", *e, "v1"),
        (2.5, "pass", *e, "v1"),
        (3, "pass", *a, "v1"),  # back to advisory ...
        (5, "fail", *e, "v0"),  # a blocking fail in the advisory window begins nothing
        (20, "pass", *e, "v1"),  # ... and a second switch: period 2
        (21, "pass", *e, "v2"),  # other thresholds: period 3
        (22, "fail", *e, "v2"),
        (23, "unsure", *e, "v1"),
    ]
    period, current = periods(frame(rows))
    assert period.tolist() == [0, 1, 0, 1, 1, 0, 1, 2, 3, 3, 2]
    assert current.tolist() == [False] * 7 + [True, False, False, True]


@pytest.fixture(scope="module")
def reswitched(tmp_path_factory):
    """Period 1: a shift and its alarm; back to advisory, re-certified, enforced again, no shift."""
    root = tmp_path_factory.mktemp("reswitch")
    a, b = root / "A", root / "B"
    simulate(a, runs=2000, seed=1, enforce_weeks=12, shift_week=4, shift=0.8)
    info = json.loads((a / ".truth" / "enforcement.json").read_text())
    end_a = pd.Timestamp(info["enforced_from"]) + pd.Timedelta(weeks=info["weeks"], days=2)
    simulate(b, runs=2000, seed=2, enforce_weeks=12, start=end_a.to_pydatetime())
    info_b = json.loads((b / ".truth" / "enforcement.json").read_text())
    con = connect(root / "s.duckdb")
    ingest(con, [a])
    when = (end_a - pd.Timedelta(days=1)).to_pydatetime()
    audit.draw(con, **STEP, rate=0.5, seed=3, out=root / "a.csv", now=when)
    review_audit(root / "a.csv", a / ".truth", root / "ra.csv")
    ingest(con, [root / "ra.csv"])
    (first,) = monitor_store(con).steps
    ingest(con, [b])
    when = (pd.Timestamp(info_b["enforced_from"]) + pd.Timedelta(weeks=13)).to_pydatetime()
    audit.draw(con, **STEP, rate=0.5, seed=4, out=root / "b.csv", now=when)
    review_audit(root / "b.csv", b / ".truth", root / "rb.csv")
    ingest(con, [root / "rb.csv"])
    yield con, first, info_b
    con.close()


def test_a_second_switch_is_a_new_test_with_the_old_alarm_as_history(reswitched):
    con, first, info_b = reswitched
    assert first.status == "alarm" and first.period == 1
    (step,) = monitor_store(con).steps
    # The old alarm no longer drives the status (it said alarm forever before).
    assert step.status != "alarm" and step.period == 2
    assert step.false_pass.alarm_at is None and step.false_pass.audited > 100
    assert step.enforced_since >= pd.Timestamp(info_b["enforced_from"])
    (old,) = step.earlier
    assert old["period"] == 1 and old["alarm"]
    assert old["false_pass"]["alarm_at"] == first.false_pass.alarm_at
    assert old["false_pass"]["audited"] == first.false_pass.audited
    doc = step.to_dict()
    assert doc["period"] == 2 and doc["earlier_periods"][0]["alarm"] is True


def test_the_report_shows_the_period_and_the_earlier_alarm_as_history(reswitched, tmp_path):
    from calibrate.analysis import readiness as rd
    from calibrate.report import render

    con, first, _ = reswitched
    report = rd.assess_store(con, store="s", n_boot=20)
    render.write_report(report, tmp_path, formats="md,html")
    for name in ("report.md", "report.html"):
        # The line holds record text (the model), escaped: Markdown's backslashes read away.
        text = (tmp_path / name).read_text(encoding="utf-8").replace("\\", "")
        assert "enforcement period 2, a test of its own" in text
        assert f"ALARM on {first.false_pass.alarm_at:%Y-%m-%d}" in text
        assert "history, not today" in text


@pytest.fixture(scope="module")
def alarmed(tmp_path_factory):
    """The README's shift: enforced, audited, the monitor alarms (period 1). Returns the export."""
    root = tmp_path_factory.mktemp("alarmed")
    out = root / "exp"
    simulate(out, runs=2000, seed=1, enforce_weeks=12, shift_week=4, shift=0.8)
    info = json.loads((out / ".truth" / "enforcement.json").read_text())
    end = pd.Timestamp(info["enforced_from"]) + pd.Timedelta(weeks=info["weeks"], days=2)
    return root, out, end.to_pydatetime()


def _later_records(out, path, *, version, days, advisory_first, model=None):
    """Copies of the last 60 enforced checks of the step, moved ``days`` after the last one."""
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines() if line]
    enforced = [r for r in runs if r["process"] == STEP["process"]
                and r["steps"].get(STEP["step"], {}).get("check", {}).get("advisory") is False]  # fmt: skip
    last = max(pd.Timestamp(r["steps"][STEP["step"]]["check"]["at"]) for r in enforced)
    rows = []
    for i, r in enumerate(enforced[-60:]):
        check = dict(r["steps"][STEP["step"]]["check"])
        check["at"] = (last + pd.Timedelta(days=days, hours=3 * i)).isoformat()
        check["verdict"] = "pass" if check["verdict"] == "unsure" else check["verdict"]
        check["model"] = model or check["model"]
        step = {"status": "completed", "check": check}
        rows.append({**r, "run": f"later-{i}", "version": version, "steps": {STEP["step"]: step}})
    if advisory_first:  # one advisory check a day after the last enforced one: a return, unlabeled
        check = {**rows[0]["steps"][STEP["step"]]["check"], "advisory": True,
                 "at": (last + pd.Timedelta(days=1)).isoformat()}  # fmt: skip
        rows.insert(0, {**rows[0], "run": "later-advisory",
                        "steps": {STEP["step"]: {"status": "completed", "check": check}}})  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _monitor_after(con, out, tmp_path, *, days, advisory_first):
    """The monitor's one step after :func:`_later_records` (version 3) are ingested; closes ``con``."""
    later = tmp_path / "later" / "runs.jsonl"
    later.parent.mkdir()
    _later_records(out, later, version="3", days=days, advisory_first=advisory_first)
    ingest(con, [later])
    (step,) = monitor_store(con).steps
    con.close()
    return step


@pytest.mark.parametrize("advisory_first", [False, True], ids=["version-label", "brief-return"])
def test_an_alarm_is_not_escaped_without_new_labels(alarmed, tmp_path, advisory_first):
    """Outside review: a version label with no process file, or one unlabeled advisory check and a
    week's pause, began a new period and cleared the alarm (KEEP_ENFORCED on the same evidence)."""
    root, out, when = alarmed
    con = connect(tmp_path / "s.duckdb")
    ingest(con, [out])
    audit.draw(con, **STEP, rate=0.5, seed=3, out=tmp_path / "a.csv", now=when)
    review_audit(tmp_path / "a.csv", out / ".truth", tmp_path / "ra.csv")
    ingest(con, [tmp_path / "ra.csv"])
    (before,) = monitor_store(con).steps
    assert before.status == "alarm"
    step = _monitor_after(con, out, tmp_path, days=7.5, advisory_first=advisory_first)
    assert step.status == "alarm"
    if advisory_first:  # a new test, but the earlier alarm stands: nothing labeled since
        assert step.period == 2 and any("the alarm stands" in w for w in step.warnings)
    else:  # a version label alone keeps the thresholds last known: the same period
        assert step.period == 1 and not step.earlier


def test_a_new_model_on_the_enforced_step_alarms_with_or_without_a_model_filter(alarmed, tmp_path):
    """report --model X read the reference of X only, found no certification and dropped the
    new-model alarm (outside review); the reference is the step's advisory checks, any model."""
    _, out, _ = alarmed
    con = connect(tmp_path / "s.duckdb")
    ingest(con, [out])
    later = tmp_path / "later" / "runs.jsonl"
    later.parent.mkdir()
    _later_records(out, later, version="2", days=1, advisory_first=False, model="evaluator-z")
    ingest(con, [later])
    for model in (None, "evaluator-z"):
        (step,) = [s for s in monitor_store(con, model=model).steps if s.model == "evaluator-z"]
        assert step.status == "alarm" and "new evaluator model" in step.warnings[0], model
    con.close()


def test_a_draw_after_a_second_switch_offers_only_the_current_period(tmp_path):
    """Period 1's checks that no draw considered are history: a draw offers period 2's only."""
    a, b = tmp_path / "A", tmp_path / "B"
    simulate(a, runs=1200, seed=1, enforce_weeks=6)
    info = json.loads((a / ".truth" / "enforcement.json").read_text())
    end_a = pd.Timestamp(info["enforced_from"]) + pd.Timedelta(weeks=info["weeks"], days=2)
    simulate(b, runs=1200, seed=2, enforce_weeks=6, start=end_a.to_pydatetime())
    con = connect(tmp_path / "s.duckdb")
    ingest(con, [a, b])
    assert monitor_store(con).steps[0].period == 2
    elig = audit.eligible_checks(con, STEP["process"], STEP["step"], ("pass",))
    since_b = pd.Timestamp(
        json.loads((b / ".truth" / "enforcement.json").read_text())["enforced_from"]
    )
    assert len(elig) > 0
    assert (pd.to_datetime(elig["at"], utc=True) >= since_b - pd.Timedelta(days=1)).all()
    drawn = audit.draw(con, **STEP, rate=1.0, seed=5)
    assert drawn.n_eligible == len(elig)
    con.close()


def test_thresholds_on_an_alarmed_step_say_so(alarmed, tmp_path):
    """Black-box run: `thresholds` certified and loosened an enforced check whose monitor alarmed
    (11.1% false passes in 434 audits) without a word; the alarm is now in its text, YAML, JSON."""
    from typer.testing import CliRunner

    from calibrate.cli import app

    root, out, when = alarmed
    db = tmp_path / "s.duckdb"
    con = connect(db)
    ingest(con, [out])
    audit.draw(con, **STEP, rate=0.5, seed=3, out=tmp_path / "a.csv", now=when)
    review_audit(tmp_path / "a.csv", out / ".truth", tmp_path / "ra.csv")
    ingest(con, [tmp_path / "ra.csv"])
    con.close()
    runner = CliRunner()
    base = ["thresholds", "--db", str(db), "--process", STEP["process"], "--step", STEP["step"]]
    doc = json.loads(runner.invoke(app, [*base, "--format", "json"]).stdout)
    (step,) = doc["steps"]
    assert step["monitor_alarm"] and "return the step to advisory" in step["note"]
    for fmt in ("table", "yaml"):
        res = runner.invoke(app, [*base, "--format", fmt])
        assert res.exit_code == 0 and "MONITOR ALARM on the enforced check" in res.stdout


def test_advisory_checks_too_short_a_return_are_found_with_their_dates():
    e, a = (False, True), (True, False)  # (advisory, enforced)
    rows = [
        (0, "pass", *e, "v1"),
        (1, "pass", *e, "v1"),
        (3, "pass", *a, "v1"),  # back to advisory for two days ...
        (4, "fail", *a, "v1"),
        (5, "pass", *e, "v1"),  # ... and enforced again 4 days after the last: no new period
        (6, "pass", *a, "v1"),  # back again ...
        (14, "unsure", *e, "v1"),  # ... 9 days: a new period, no short return
    ]
    checks = frame(rows)
    assert periods(checks)[0].tolist() == [1, 1, 0, 0, 1, 0, 2]
    (short,) = short_returns(checks)[("p", "s")]
    assert short["advisory"] == 2
    day = pd.Timestamp("2026-01-01", tz="UTC")
    assert (short["first_at"], short["last_at"]) == (
        day + pd.Timedelta(days=3),
        day + pd.Timedelta(days=4),
    )
    assert (short["before"], short["resumed_at"]) == (
        day + pd.Timedelta(days=1),
        day + pd.Timedelta(days=5),
    )


def test_the_monitor_says_why_a_short_return_to_advisory_began_no_new_period(alarmed, tmp_path):
    """Outside review (G13): 150 advisory checks and a re-switch 2 days later continued period 1,
    and nothing said why (the README said a second switch starts a new test)."""
    root, out, _ = alarmed
    con = connect(tmp_path / "s.duckdb")
    ingest(con, [out])
    step = _monitor_after(con, out, tmp_path, days=3, advisory_first=True)
    assert step.period == 1
    (note,) = step.notes
    assert note.startswith("1 check recorded with advisory: true (")
    assert "began no new enforcement period" in note and "at least 7 days" in note
    assert step.to_dict()["notes"] == [note]
