"""``calibrate agreement`` through Typer's CliRunner, on a store built row by row."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from calibrate.cli import app
from calibrate.store import connect

runner = CliRunner()
T0 = pd.Timestamp("2026-10-05T08:00:00Z")
HOSTILE_STEP = '=HYPERLINK("http://x")\x1b[31m'


def _insert(con, table: str, df: pd.DataFrame) -> None:
    con.register("_rows", df)
    try:
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _rows")  # noqa: S608 - fixed table names
    finally:
        con.unregister("_rows")


def _group(
    rng, prefix, n, *, step, model, prevalence=0.7, p_pass=(0.85, 0.1), approver="ana", delay_s=600
):
    """Checks, answers and decisions of ``n`` submissions of one step and model."""
    acc = rng.random(n) < prevalence
    u = rng.random(n)
    p = np.where(acc, p_pass[0], p_pass[1])
    verdict = np.where(u < p, "pass", np.where(u < p + 0.6 * (1 - p), "fail", "unsure"))
    ids = [f"{prefix}{i}" for i in range(n)]
    at = T0 + pd.to_timedelta(np.arange(n) * 3, unit="h")
    checks = pd.DataFrame(
        {
            "check_id": ids, "run_id": ids, "process": "proc", "version": "1", "step": step,
            "attempt": 1, "verdict": verdict, "advisory": True, "model": model, "checked_at": at,
            "recorded_in": "steps.check", "truncated": False, "n_questions": 2,
        }
    )  # fmt: skip
    ans = pd.concat(
        [
            pd.DataFrame({"check_id": ids, "position": 0, "question_id": f"{step}-q0", "ask": "Is it right?",
                          "kind": "yes_no", "p": 0.5, "result": verdict}),
            pd.DataFrame({"check_id": ids, "position": 1, "question_id": f"{step}-q1", "ask": "Is it complete?",
                          "kind": "yes_no", "p": 0.5, "result": np.where(acc, "pass", "fail")}),
        ]
    )  # fmt: skip
    decisions = pd.DataFrame(
        {
            "decision_id": [f"d{i}" for i in ids], "run_id": ids, "process": "proc", "step": step,
            "attempt": 1, "decision": np.where(acc, "approved", "rejected"), "decided_by": approver,
            "decided_at": at + pd.Timedelta(seconds=delay_s), "source": "table",
        }
    )  # fmt: skip
    return checks, ans, decisions


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(0)
    parts = [
        _group(rng, "a", 120, step="review", model="m1"),
        _group(
            rng, "b", 80, step="review", model="m2", approver="eli", delay_s=5, p_pass=(0.9, 0.05)
        ),
        _group(rng, "c", 8, step=HOSTILE_STEP, model="m1"),
    ]
    # eli follows the check: decisions equal the check's verdict.
    checks_b, _, dec_b = parts[1]
    dec_b["decision"] = np.where(checks_b["verdict"] == "pass", "approved", "rejected")
    path = tmp_path_factory.mktemp("cli") / "store.duckdb"
    con = connect(path)
    for i, table in enumerate(("checks", "answers", "decisions")):
        _insert(con, table, pd.concat([p[i] for p in parts], ignore_index=True))
    # A conflicting second decision on one submission.
    _insert(
        con,
        "decisions",
        pd.DataFrame(
            {"decision_id": ["dx"], "run_id": ["a0"], "process": ["proc"], "step": ["review"], "attempt": [1],
             "decision": ["returned"], "decided_by": ["ben"], "decided_at": [T0 + pd.Timedelta(days=1)],
             "source": ["table"]}
        ),
    )  # fmt: skip
    con.close()
    return path


def run(store, *args):
    return runner.invoke(app, ["agreement", "--db", str(store), *args])


def test_json_has_issue_keys(store):
    res = run(store, "--format", "json")
    assert res.exit_code == 0, res.output
    records = json.loads(res.stdout)
    assert isinstance(records, list) and len(records) == 3
    keys = {
        "process", "step", "model", "n", "agree", "kappa", "kappa_ci", "false_pass_rate", "false_pass_ci",
        "false_fail_rate", "false_fail_ci", "unsure_rate", "tpr", "tnr", "counts",
    }  # fmt: skip
    for rec in records:
        assert keys <= rec.keys()
        assert set(rec["counts"]) == {"pass", "fail", "unsure", "error"}
        assert all(set(v) == {"acceptable", "not_acceptable"} for v in rec["counts"].values())
    m1 = next(r for r in records if r["model"] == "m1" and r["step"] == "review")
    assert m1["n"] == 120 and m1["conflicts"] == 1
    assert "Wilson" in m1["interval_method"]


def test_table_fits_80_columns_and_says_too_few(store):
    for args in ([], ["--by", "step,question"], ["--approvers"], ["--corrected"], ["--by", "week"]):
        res = run(store, *args)
        assert res.exit_code == 0, (args, res.output)
        width = max(len(line) for line in res.stdout.splitlines())
        assert width <= 80, (args, width)
        assert "\x1b" not in res.stdout
    out = run(store).stdout
    assert "too few (n=" in out  # the 8-submission group
    assert "Wilson score 95%" in out
    assert "false pass" in out and "false fail" in out


def test_question_level_says_whole_submission(store):
    res = run(store, "--by", "question", "--format", "json")
    assert res.exit_code == 0, res.output
    records = json.loads(res.stdout)
    assert {r["question"] for r in records} == {"Is it right?", "Is it complete?"}
    assert all("the person judged the whole submission" in r["note"] for r in records)
    assert "the person judged the whole submission" in run(store, "--by", "question").stdout


def test_filters_and_pooling_note(store):
    res = run(store, "--model", "m2", "--format", "json")
    assert [r["model"] for r in json.loads(res.stdout)] == ["m2"]
    pooled = json.loads(run(store, "--by", "step", "--format", "json").stdout)
    review = next(r for r in pooled if r["step"] == "review")
    assert review["n_models"] == 2 and "pools 2 models" in review["note"]
    late = run(store, "--since", "2030-01-01", "--format", "json")  # an empty window: no error
    assert late.exit_code == 0 and json.loads(late.stdout) == []
    assert "no check matches these filters (--since 2030-01-01T00:00:00+00:00)" in late.stderr


def test_csv_neutralises_formulas(store):
    res = run(store, "--format", "csv")
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    steps = {r["step"] for r in rows}
    assert "review" in steps
    hostile = next(s for s in steps if s != "review")
    assert hostile.startswith("'=")
    assert all(r["interval_method"].startswith("Wilson") for r in rows)


def test_approvers_view_flags_follower(store):
    res = run(store, "--approvers", "--format", "json")
    assert res.exit_code == 0, res.output
    by_name = {r["approver"]: r for r in json.loads(res.stdout)}
    assert by_name["eli"]["flag"] and "automation bias" in by_name["eli"]["flag_reason"]
    assert not by_name["ana"]["flag"] and by_name["ana"]["flag_reason"] is None
    assert by_name["ana"]["median_review_s"] == pytest.approx(600.0)
    table = run(store, "--approvers").stdout
    assert "hint" in table and "eli" in table
    strict = json.loads(run(store, "--approvers", "--flag-seconds", "1", "--format", "json").stdout)
    assert not any(r["flag"] for r in strict)


def test_corrected_view_json(store):
    res = run(store, "--corrected", "--format", "json")
    assert res.exit_code == 0, res.output
    rec = json.loads(res.stdout)[0]
    assert {
        "estimate",
        "ci",
        "tpr",
        "tnr",
        "apparent_pass_rate",
        "n_unlabeled",
        "note",
    } <= rec.keys()
    assert rec["note"] == "no unlabeled submissions"


def test_corrected_view_gives_each_rate_its_n_and_interval(store):
    """TPR, TNR and the acceptable share were printed bare, over a count that included the
    reviewed unsure verdicts TPR/TNR leave out. Fails on the old code."""
    rec = json.loads(run(store, "--corrected", "--format", "json").stdout)[0]
    assert rec["n_labeled"] == rec["n_acceptable"] + rec["n_not_acceptable"]
    assert len(rec["tpr_ci"]) == 2 and "audits" in rec and "rests_on" in rec
    text = run(store, "--corrected").stdout
    assert f"TPR {rec['tpr']:.1%} ({round(rec['tpr'] * rec['n_acceptable'])} of" in text
    assert f"among the {rec['n_labeled']} reviews with a pass or fail verdict" in text


def test_missing_store_exits_2(tmp_path):
    res = runner.invoke(app, ["agreement", "--db", str(tmp_path / "nope.duckdb")])
    assert res.exit_code == 2
    assert "no store" in res.output


def test_bad_options_exit_2(store):
    res = run(store, "--by", "step,weekday")
    assert res.exit_code == 2 and "allowed: process" in res.output
    res = run(store, "--approvers", "--corrected")
    assert res.exit_code == 2
    res = run(store, "--corrected", "--by", "question")
    assert res.exit_code == 2 and "cannot group" in res.output


def test_approvers_say_how_many_models_a_row_pools(tmp_path):
    # One approver deciding on two evaluator models' checks: as `--by approver` does, the row
    # says it pools them (text and JSON); split by model, it says nothing.
    rng = np.random.default_rng(1)
    parts = [
        _group(rng, "a", 40, step="review", model="m1"),
        _group(rng, "b", 30, step="other", model="m2"),
    ]
    path = tmp_path / "two-models.duckdb"
    con = connect(path)
    for i, table in enumerate(("checks", "answers", "decisions")):
        _insert(con, table, pd.concat([p[i] for p in parts], ignore_index=True))
    con.close()
    (ana,) = json.loads(run(path, "--approvers", "--format", "json").stdout)
    assert ana["approver"] == "ana" and ana["n"] == 70
    assert ana["n_models"] == 2 and ana["note"] == "pools 2 models"
    (by_approver,) = json.loads(run(path, "--by", "approver", "--format", "json").stdout)
    assert by_approver["note"].endswith(ana["note"])
    assert "note: ana: pools 2 models" in run(path, "--approvers").stdout
    split = json.loads(run(path, "--approvers", "--by", "model", "--format", "json").stdout)
    assert [(r["model"], r["n_models"], r["note"]) for r in split] == [("m1", 1, ""), ("m2", 1, "")]
