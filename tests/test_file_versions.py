"""A newer version of a file replaces what its older version contributed (issue 18, item 2).

Decisions and checks the new version changes or no longer holds are withdrawn,
the latest version of a file wins, a return to earlier content is a new
version, and ``status`` says what was withdrawn; the same file twice changes
nothing, and a grown file adds only its new records.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import calibrate.ingest as ing
from calibrate.ingest import ingest
from calibrate.status import store_status, withdrawn_rows
from calibrate.store import connect

HEADER = "run,process,step,attempt,decision,by,at,note\n"
Q = {"ask": "Is it right?", "kind": "yes_no", "answer": 0.95, "result": "pass"}


def _verdict(run: str, answer: float = 0.95, **extra) -> str:
    check = {
        "verdict": "pass",
        "advisory": True,
        "model": "m1",
        "questions": [{**Q, "answer": answer}],
        "at": "2026-10-01T10:00:00Z",
    }
    return json.dumps(
        {"run": run, "process": "p", "version": "1", "step": "s", "attempt": 1, "check": check}
        | extra
    )


def _decisions(rows: list[str]) -> str:
    return HEADER + "".join(f"{r}\n" for r in rows)


def _labels(con) -> dict[str, tuple]:
    return {
        run: (decision, conflict)
        for run, decision, conflict in con.execute(
            "SELECT run_id, decision, conflict FROM labeled"
        ).fetchall()
    }


@pytest.fixture(params=[True, False], ids=["fast paths", "record pipeline"])
def lanes(request, monkeypatch):
    """Both ways in: the typed lane and direct table rows, or the record pipeline alone."""
    monkeypatch.setattr(ing, "TYPED_LANE_ENABLED", request.param)
    monkeypatch.setattr(ing, "TYPED_LANE_MIN_BYTES", 0)
    return request.param


def test_a_corrected_decision_replaces_the_old_one_and_a_return_restores_it(tmp_path, lanes):
    (tmp_path / "v.jsonl").write_text("".join(_verdict(f"r{i}") + "\n" for i in range(3)))
    table = tmp_path / "d.csv"
    approved = [f"r{i},p,s,1,approved,ana,2026-10-02T10:00:00Z," for i in range(3)]
    table.write_text(_decisions(approved))
    con = connect(tmp_path / "s.duckdb")
    ingest(con, [tmp_path])
    assert _labels(con)["r1"] == ("approved", False)

    corrected = [*approved]
    corrected[1] = "r1,p,s,1,rejected,ana,2026-10-02T10:00:00Z,"
    table.write_text(_decisions(corrected))
    again = ingest(con, [table]).files[0]
    assert (again.status, again.withdrawn) == ("loaded", 1)
    assert _labels(con)["r1"] == ("rejected", False)  # replaced, not a conflict
    assert con.execute("SELECT count(*) FROM decisions").fetchone()[0] == 3
    info = store_status(con)
    assert info["withdrawn"] == {"checks": 0, "decisions": 1, "runs": 0}
    assert info["conflicts"] == 0
    (gone,) = withdrawn_rows(con)
    assert (gone["kind"], gone["run_id"], gone["step"], gone["attempt"]) == (
        "decision",
        "r1",
        "s",
        1,
    )
    assert gone["what"] == "approved" and gone["path"] == str(table.resolve())

    # Back to the first content (its hash matches an older version): a new version all the same.
    table.write_text(_decisions(approved))
    back = ingest(con, [table]).files[0]
    assert (back.status, back.withdrawn) == ("loaded", 1)
    assert _labels(con)["r1"] == ("approved", False)
    assert store_status(con)["withdrawn"]["decisions"] == 2

    # The same file twice changes nothing.
    before = store_status(con)
    assert ingest(con, [table]).files[0].status == "unchanged"
    assert store_status(con) == before


def test_a_row_dropped_from_a_file_is_withdrawn_and_read_is_loaded_plus_quarantined(
    tmp_path, lanes
):
    path = tmp_path / "v.jsonl"
    path.write_text("".join(_verdict(f"r{i}") + "\n" for i in range(4)))
    con = connect(tmp_path / "s.duckdb")
    ingest(con, [path])
    assert con.execute("SELECT count(*) FROM checks").fetchone()[0] == 4
    # r3 is gone, r2 has a changed answer (the same check, other content), one line is bad.
    path.write_text(
        _verdict("r0") + "\n" + _verdict("r1") + "\n" + _verdict("r2", 0.97) + "\n" + "{oops\n"
    )
    f = ingest(con, [path]).files[0]
    assert (f.read, f.loaded, f.quarantined) == (4, 3, 1)
    assert f.read == f.loaded + f.quarantined
    assert f.withdrawn == 2  # r3's check withdrawn; r2's replaced by its new content
    assert sorted(r[0] for r in con.execute("SELECT run_id FROM checks").fetchall()) == [
        "r0",
        "r1",
        "r2",
    ]
    assert con.execute(
        "SELECT p FROM answers JOIN checks USING (check_id) WHERE run_id = 'r2'"
    ).fetchall() == [(0.97,)]
    assert con.execute("SELECT count(*) FROM runs WHERE run_id = 'r3'").fetchone()[0] == 0
    reasons = {(r["run_id"], r["kind"]): r["reason"] for r in withdrawn_rows(con)}
    assert reasons[("r3", "check")] == "no longer in the file"
    assert reasons[("r2", "check")] == "changed in the file"
    assert ("r3", "run") in reasons


def test_a_grown_file_adds_only_its_new_records_and_withdraws_nothing(tmp_path, lanes):
    path = tmp_path / "v.jsonl"
    path.write_text("".join(_verdict(f"r{i}") + "\n" for i in range(3)))
    con = connect(tmp_path / "s.duckdb")
    ingest(con, [path])
    with path.open("a") as fh:
        fh.write(_verdict("r3") + "\n")
    grown = ingest(con, [path]).files[0]
    assert (grown.read, grown.new, grown.withdrawn) == (4, 1, 0)
    assert store_status(con)["withdrawn"] == {"checks": 0, "decisions": 0, "runs": 0}


def test_a_record_another_file_still_holds_is_kept(tmp_path, lanes):
    """Overlapping exports: a record dropped from one file stays while another file says it."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(_verdict("r0") + "\n" + _verdict("r1") + "\n")
    b.write_text(_verdict("r1") + "\n" + _verdict("r2") + "\n")
    da, db = tmp_path / "a.csv", tmp_path / "b.csv"
    da.write_text(_decisions(["r1,p,s,1,approved,ana,2026-10-02T10:00:00Z,"]))
    db.write_text(_decisions(["r1,p,s,1,approved,ana,2026-10-02T10:00:00Z,"]))
    con = connect(tmp_path / "s.duckdb")
    ingest(con, [a, b, da, db])
    a.write_text(_verdict("r0") + "\n")  # r1 left a.jsonl, but b.jsonl still holds it
    da.write_text(HEADER)  # the decision left a.csv; b.csv still holds it
    ingest(con, [a, da])
    assert sorted(r[0] for r in con.execute("SELECT run_id FROM checks").fetchall()) == [
        "r0",
        "r1",
        "r2",
    ]
    assert _labels(con)["r1"] == ("approved", False)
    assert store_status(con)["withdrawn"] == {"checks": 0, "decisions": 0, "runs": 0}
    # Now b.jsonl and b.csv drop it too: withdrawn, as no file holds it any more.
    b.write_text(_verdict("r2") + "\n")
    db.write_text(HEADER)
    ingest(con, [b, db])
    assert sorted(r[0] for r in con.execute("SELECT run_id FROM checks").fetchall()) == ["r0", "r2"]
    assert con.execute("SELECT count(*) FROM decisions").fetchone()[0] == 0
    assert store_status(con)["withdrawn"] == {"checks": 1, "decisions": 1, "runs": 1}


def test_a_copy_of_a_file_elsewhere_holds_its_records(tmp_path):
    first, copy = tmp_path / "one" / "v.jsonl", tmp_path / "two" / "v.jsonl"
    for p in (first, copy):
        p.parent.mkdir()
        p.write_text(_verdict("r0") + "\n")
    con = connect(tmp_path / "s.duckdb")
    ingest(con, [first])
    f = ingest(con, [copy]).files[0]
    assert (f.status, f.new) == ("loaded", 0)  # read, so that it holds r0 too
    first.write_text(_verdict("r1") + "\n")
    ingest(con, [first])
    assert sorted(r[0] for r in con.execute("SELECT run_id FROM checks").fetchall()) == ["r0", "r1"]


def test_a_file_that_can_no_longer_be_read_withdraws_what_it_held(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps([json.loads(_verdict("r0"))]))
    con = connect(tmp_path / "s.duckdb")
    ingest(con, [path])
    path.write_bytes(b'[{"run": "r0", \xff')
    f = ingest(con, [path]).files[0]
    assert (f.read, f.quarantined, f.withdrawn) == (1, 1, 1)
    assert con.execute("SELECT count(*) FROM checks").fetchone()[0] == 0


def test_status_cli_lists_what_was_withdrawn(tmp_path):
    from typer.testing import CliRunner

    from calibrate.cli import app

    table = tmp_path / "d.csv"
    table.write_text(_decisions(["r1,p,s,1,approved,ana,2026-10-02T10:00:00Z,"]))
    db = tmp_path / "s.duckdb"
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", "--db", str(db), str(table)]).exit_code == 0
    table.write_text(_decisions(["r1,p,s,1,rejected,ana,2026-10-02T10:00:00Z,"]))
    out = runner.invoke(app, ["ingest", "--db", str(db), str(table)])
    assert out.exit_code == 0 and "withdrawn" in out.output
    res = runner.invoke(app, ["status", "--db", str(db), "--withdrawn"])
    assert res.exit_code == 0, res.output
    assert "withdrawn by newer versions of files: 1 decision" in res.output
    # A corrected decision says so (a row the file dropped reads "no longer in the file").
    assert "r1 / s / attempt 1: decision approved (replaced in the file)" in res.output
    assert Path(table.name).name in res.output


def test_after_any_sequence_of_versions_the_store_is_what_the_latest_says(
    tmp_path, sample_dir, lanes
):
    """Versions that drop, change and add records, and a return to the first: the store equals a
    fresh ingest of the latest version (provenance aside)."""
    from tests.test_reliability import _content

    runs = (sample_dir / "runs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:200]
    rows = (sample_dir / "decisions.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    changed = []
    for line in runs[::3]:
        doc = json.loads(line)
        for step in doc["steps"].values():
            if isinstance(step.get("check"), dict) and step["check"].get("questions"):
                step["check"]["questions"][0]["answer"] = 0.42
        changed.append(json.dumps(doc) + "\n")
    versions = [
        (runs, rows[:100]),
        (
            changed + runs[250:],
            [rows[0], *(r.replace(",approved,", ",returned,") for r in rows[1:60])],
        ),
        (runs[:150], rows[:30] + rows[90:140]),
        (runs, rows[:100]),  # the first content again
    ]
    folder = tmp_path / "exp"
    folder.mkdir()
    con = connect(tmp_path / "s.duckdb")
    for i, (r, d) in enumerate(versions):
        (folder / "runs.jsonl").write_text("".join(r), encoding="utf-8")
        (folder / "decisions.csv").write_text("".join(d), encoding="utf-8")
        report = ingest(con, [folder])
        assert all(f.read == f.loaded + f.quarantined for f in report.files)
        fresh = connect(tmp_path / f"fresh-{i}.duckdb")
        ingest(fresh, [folder])
        assert _content(con) == _content(fresh), f"after version {i + 1}"
        fresh.close()
    assert store_status(con)["withdrawn"]["decisions"] > 50
