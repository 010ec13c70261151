"""A decision left out of the labeled figures (an escalation after the switch) keeps its check.

Leaving the label out is right (escalations are the unsure region the enforced
check selected, not a sample); dropping the check from the rates over all
checks is not: the unsure rate of an enforced step read 0% with every
escalated unsure verdict gone.
"""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from calibrate.cli import app
from calibrate.dataset import Filters, answers, left_out_count, submissions, view_columns
from calibrate.ingest import ingest
from calibrate.simulate import simulate
from calibrate.store import connect

runner = CliRunner()
PROCESS = "invoice-matching"


@pytest.fixture(scope="module")
def enforced_db(tmp_path_factory):
    root = tmp_path_factory.mktemp("leftout")
    simulate(root / "exp", runs=1500, seed=11, enforce_weeks=6)
    db = root / "s.duckdb"
    con = connect(db)
    ingest(con, [root / "exp"])
    con.close()
    return db


def _agreement(db, *extra):
    out = runner.invoke(
        app, ["agreement", "--db", str(db), "--process", PROCESS, "--format", "json", *extra]
    )
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    rows = rows["rows"] if isinstance(rows, dict) and "rows" in rows else rows
    assert len(rows) == 1
    return rows[0]


def test_left_out_checks_stay_unlabeled(enforced_db):
    con = connect(enforced_db, read_only=True)
    f = Filters(process=PROCESS)
    esc = left_out_count(con, f)
    assert esc > 5
    kept = submissions(con, f)
    every = submissions(con, Filters(process=PROCESS, escalations=True))
    # The same checks either way; only the left-out decisions read as none.
    assert len(kept) == len(every)
    out = kept[kept["left_out"]]
    assert len(out) == esc and out["label"].isna().all() and out["decision"].isna().all()
    assert (~out["conflict"].astype(bool)).all() and (out["n_decisions"] == 0).all()
    assert kept["label"].notna().sum() == every["label"].notna().sum() - esc
    # labeled_only means a label the filters keep, in every read.
    labeled = submissions(con, f, labeled_only=True)
    assert not labeled["left_out"].any() and len(labeled) == kept["label"].notna().sum()
    narrow = view_columns(con, "labeled", ["check_id", "label", "left_out"], f)
    assert len(narrow) == len(kept) and narrow["label"].isna().sum() == kept["label"].isna().sum()
    ans = answers(con, f)
    assert ans.loc[ans["left_out"].astype(bool), "label"].isna().all()
    every_ans = answers(con, Filters(process=PROCESS, escalations=True))
    assert ans["check_id"].nunique() == every_ans["check_id"].nunique()
    con.close()


def test_unsure_rate_counts_escalated_checks(enforced_db):
    con = connect(enforced_db, read_only=True)
    n_checks, n_unsure = con.execute(
        "SELECT count(*), count(*) FILTER (verdict = 'unsure') FROM checks WHERE process = ?",
        [PROCESS],
    ).fetchone()
    con.close()
    honest = _agreement(enforced_db)
    every = _agreement(enforced_db, "--with-escalations")
    assert honest["n_checks"] == every["n_checks"] == n_checks
    assert n_unsure > 0
    assert honest["unsure_rate"] == every["unsure_rate"] == pytest.approx(n_unsure / n_checks)
    assert honest["n"] < every["n"]


def test_more_left_out_decisions_do_not_change_the_count_of_checks(enforced_db, tmp_path):
    db = tmp_path / "more.duckdb"
    db.write_bytes(enforced_db.read_bytes())
    before = _agreement(db)
    con = connect(db)
    rows = con.execute(
        """SELECT run_id, process, step, attempt FROM labeled
           WHERE process = ? AND advisory = false AND verdict IN ('pass', 'fail')
             AND decision IS NULL AND NOT audited ORDER BY check_id LIMIT 30""",
        [PROCESS],
    ).fetchall()
    assert len(rows) == 30
    path = tmp_path / "decisions.csv"
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["run", "process", "step", "attempt", "decision", "by", "at", "note"])
        for run, process, step, attempt in rows:
            w.writerow([run, process, step, attempt, "approved", "zoe", "", ""])
    ingest(con, [path])
    con.close()
    after = _agreement(db)
    assert after["n_checks"] == before["n_checks"]
    assert after["n"] == before["n"] and after["unsure_rate"] == before["unsure_rate"]


def test_the_search_says_when_enforced_labels_are_a_selected_sample(enforced_db):
    """Kept by --with-escalations, escalations are a sample the check selected, and the search's
    notes say so; left out (the default), no enforced label of that kind is read."""
    from calibrate.analysis.thresholds import suggest_from_store

    con = connect(enforced_db, read_only=True)
    try:
        with_esc = suggest_from_store(con, Filters(process=PROCESS, escalations=True))
        default = suggest_from_store(con, Filters(process=PROCESS))
    finally:
        con.close()
    notes = " ".join(n for r in with_esc.steps for n in r.notes)
    assert "were not drawn by an audit" in notes and "not a random one" in notes
    assert "not drawn by an audit" not in " ".join(n for r in default.steps for n in r.notes)


def test_a_labels_snapshot_reads_as_the_views_do(enforced_db):
    """The report's snapshot of check_labels (dataset.labels_snapshot) changes no figure."""
    from datetime import UTC, datetime

    from calibrate.analysis.readiness import assess_store
    from calibrate.dataset import labels_snapshot

    now = datetime(2027, 1, 1, tzinfo=UTC)
    con = connect(enforced_db, read_only=True)
    try:
        live = assess_store(con, n_boot=20, now=now).to_dict()
        n_live = left_out_count(con, Filters())
        with labels_snapshot(con):
            tables = con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE temporary"
            ).fetchall()
            assert ("check_labels_snapshot",) in tables
            pinned = assess_store(con, n_boot=20, now=now).to_dict()
            n_pinned = left_out_count(con, Filters())
            # The views read the snapshot, not the store's view: a change to it shows through.
            one = con.execute("SELECT check_id FROM labeled WHERE label LIMIT 1").fetchone()[0]
            con.execute(
                "UPDATE temp.main.check_labels_snapshot SET decision = 'rejected' WHERE check_id = ?",
                [one],
            )
            assert not con.execute(
                "SELECT label FROM labeled WHERE check_id = ?", [one]
            ).fetchone()[0]
        gone = con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchone()[0]
        restored = con.execute(
            "SELECT count(*) FROM duckdb_views() WHERE temporary AND view_name = 'check_labels'"
        ).fetchone()[0]
        assert restored == 1 and con.execute("SELECT count(*) FROM check_labels").fetchone()[0]
    finally:
        con.close()
    assert n_live > 0 and n_pinned == n_live
    assert json.dumps(pinned, sort_keys=True, default=str) == json.dumps(
        live, sort_keys=True, default=str
    )
    assert gone == 0  # the views read the store again after the block
    # ... today's views: the temporary check_labels view of a read-only connection is back.
