"""The store: creation, schema version, read-only opening, locking."""

from __future__ import annotations

import duckdb
import pytest

from calibrate.errors import StoreError
from calibrate.store import SCHEMA_VERSION, connect, default_path, schema_version


def _store_altered(path, sql: str) -> None:
    """A calibrate store at ``path`` that something other than calibrate then changed."""
    connect(path).close()
    raw = duckdb.connect(str(path))
    raw.execute(sql)
    raw.close()


def test_new_store_has_schema_version(tmp_path):
    con = connect(tmp_path / "a.duckdb")
    assert schema_version(con) == SCHEMA_VERSION


def test_newer_schema_refused(tmp_path):
    path = tmp_path / "a.duckdb"
    _store_altered(path, "UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="newer"):
        connect(path)


def test_foreign_duckdb_file_refused(tmp_path):
    path = tmp_path / "other.duckdb"
    raw = duckdb.connect(str(path))
    raw.execute("CREATE TABLE t (x INTEGER)")
    raw.close()
    with pytest.raises(StoreError, match="not a calibrate store"):
        connect(path)


def test_read_only_missing_store(tmp_path):
    with pytest.raises(StoreError, match="no store"):
        connect(tmp_path / "missing.duckdb", read_only=True)


def test_env_var_sets_default(monkeypatch, tmp_path):
    monkeypatch.setenv("CALIBRATE_DB", str(tmp_path / "env.duckdb"))
    assert default_path() == tmp_path / "env.duckdb"


def test_a_version_2_store_is_migrated_when_opened_for_writing(tmp_path):
    """A store written before the holds and withdrawn tables: read-only says how, writing migrates."""
    path = tmp_path / "old.duckdb"
    connect(path).close()
    raw = duckdb.connect(str(path))
    raw.execute("DROP TABLE holds; DROP TABLE withdrawn")
    raw.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    raw.close()
    with pytest.raises(StoreError, match="open it once for writing"):
        connect(path, read_only=True)
    con = connect(path)
    assert schema_version(con) == SCHEMA_VERSION == 4
    assert con.execute("SELECT count(*) FROM withdrawn").fetchone()[0] == 0
    con.close()
    connect(path, read_only=True).close()


def test_read_only_connection_reads_todays_views_over_stale_stored_ones(tmp_path):
    # A store written by an older calibrate of the same schema holds that version's views; a
    # read-only connection cannot replace them, so it must shadow them with today's.
    path = tmp_path / "s.duckdb"
    _store_altered(path, "CREATE OR REPLACE VIEW check_labels AS SELECT 'stale' AS check_id")
    con = connect(path, read_only=True)
    assert con.execute("SELECT count(*) FROM check_labels").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM audit_labels").fetchone()[0] == 0
    con.close()
    raw = duckdb.connect(str(path), read_only=True)  # the stored view is untouched
    assert raw.execute("SELECT check_id FROM check_labels").fetchall() == [("stale",)]
    raw.close()


def test_latest_decision_ties_do_not_depend_on_ingest_order(tmp_path):
    # Two decisions on one check at the same time: the label is the same whichever came first.
    labels = []
    for order in ((1, 2), (2, 1)):
        con = connect(tmp_path / f"t{order[0]}.duckdb")
        con.execute("INSERT INTO files (file_id, path, sha256, kind, ingested_at, n_read, n_loaded, "
                    "n_new, n_quarantined) VALUES (1, 'x', 'h', 'csv', now(), 2, 2, 2, 0)")  # fmt: skip
        con.execute("INSERT INTO checks (check_id, run_id, process, step, attempt, verdict, "
                    "checked_at, recorded_in, truncated, n_questions) VALUES "
                    "('c', 'r', 'p', 's', 1, 'pass', '2026-11-01', 'steps.check', false, 0)")  # fmt: skip
        rows = {1: ("a1", "rejected", "bob"), 2: ("a2", "approved", "ann")}
        for k in order:
            did, decision, who = rows[k]
            con.execute(
                "INSERT INTO decisions (decision_id, run_id, process, step, attempt, decision, "
                "decided_by, decided_at, file_id, source) VALUES (?, 'r', 'p', 's', 1, ?, ?, "
                "'2026-11-02', 1, 'table')", [did, decision, who],
            )  # fmt: skip
        labels.append(con.execute("SELECT decision, decided_by FROM check_labels").fetchall())
        con.close()
    assert labels[0] == labels[1] == [("approved", "ann")]
