"""The bad-input corpus (tests/data/bad/) and idempotency under repetition.

Each corpus file holds one kind of bad input; ``expected.json`` says what
ingest must do with it: load it, flag it (loaded, and a consistency flag says
where records and the process file disagree) or quarantine it with a reason.
In every case ``loaded + quarantined = read``: nothing is lost.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from calibrate.consistency import FLAG_DESCRIPTIONS, flag_counts
from calibrate.errors import StoreError, UsageError
from calibrate.ingest import DEFAULT_MAX_LINE_BYTES, ingest
from calibrate.store import connect

BAD = Path(__file__).parent / "data" / "bad"
MANIFEST = json.loads((BAD / "expected.json").read_text(encoding="utf-8"))
CASES = MANIFEST["cases"]
CONTENT_TABLES = {
    "runs": "run_id",
    "checks": "check_id",
    "answers": "check_id, position",
    "decisions": "decision_id",
    "questions": "question_id",
    "limits": "check_pass",
}


def _ten_mb_line(path: Path) -> None:
    """Two good verdict lines around one valid 10 MB record (a runaway field)."""
    good = (BAD / "crlf.jsonl").read_text(encoding="utf-8").splitlines()
    huge = json.loads(good[0])
    huge["run"] = "r-huge"
    huge["check"]["padding"] = "x" * (10 * 1024 * 1024)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(good[0] + "\n" + json.dumps(huge) + "\n" + good[1] + "\n")


GENERATORS = {"ten_mb_line": _ten_mb_line}


@pytest.fixture(scope="module")
def context_store(tmp_path_factory) -> Path:
    """A store holding the corpus context: the process file, limits and three good checks."""
    path = tmp_path_factory.mktemp("corpus") / "context.duckdb"
    con = connect(path)
    report = ingest(con, [BAD / name for name in MANIFEST["context"]])
    assert report.totals["quarantined"] == 0
    assert not any(flag_counts(con).values())
    con.close()
    return path


def _source(case: dict, tmp_path: Path) -> Path:
    if "generate" in case:
        path = tmp_path / case["file"]
        GENERATORS[case["generate"]](path)
        return path
    return BAD / case["file"]


def test_corpus_is_complete():
    """At least 25 kinds, every committed file has an expected outcome, and every outcome a file."""
    assert len(CASES) >= 25
    listed = {c["file"] for c in CASES if "generate" not in c}
    present = {p.name for p in BAD.iterdir() if p.is_file()} - {"expected.json", "make_corpus.py"}
    assert listed == present
    assert {c["outcome"] for c in CASES} == {"loaded", "flagged", "quarantined", "empty"}
    for c in CASES:
        assert c["read"] == c["loaded"] + c["quarantined"], c["file"]
        assert set(c["flags"]) <= set(FLAG_DESCRIPTIONS), c["file"]
        assert (c["outcome"] == "quarantined") == bool(c["quarantined"]), c["file"]
        assert (c["outcome"] == "flagged") == bool(c["flags"]), c["file"]
        assert c["outcome"] != "quarantined" or c.get("reason"), c["file"]


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_bad_input_outcome(case, context_store, tmp_path):
    db = tmp_path / "store.duckdb"
    shutil.copy(context_store, db)
    con = connect(db)
    source = _source(case, tmp_path)
    report = ingest(
        con, [source], max_line_bytes=case.get("max_line_bytes", DEFAULT_MAX_LINE_BYTES)
    )
    (f,) = report.files
    assert f.status == "loaded"
    assert (f.read, f.loaded, f.quarantined) == (case["read"], case["loaded"], case["quarantined"])
    assert f.read == f.loaded + f.quarantined
    if "new" in case:
        assert f.new == case["new"]

    reasons = [
        r
        for (r,) in con.execute(
            "SELECT reason FROM quarantine WHERE path = ?", [str(source)]
        ).fetchall()
    ]
    assert len(reasons) == case["quarantined"]
    for reason in reasons:
        assert case["reason"] in reason, reason

    flags = flag_counts(con)
    expected = {name: case["flags"].get(name, 0) for name in FLAG_DESCRIPTIONS}
    assert flags == expected

    if "expect_rows" in case:
        rows = [list(r) for r in con.execute(case["expect_rows"]["sql"]).fetchall()]
        assert rows == case["expect_rows"]["rows"]
    # The same file again changes nothing, bad records included.
    (again,) = ingest(con, [source]).files
    assert again.status == "unchanged" and (again.read, again.quarantined) == (
        f.read,
        f.quarantined,
    )
    assert con.execute("SELECT count(*) FROM quarantine WHERE path = ?", [str(source)]).fetchone()[
        0
    ] == len(reasons)
    # Raw text is kept (truncated) for every quarantined record, so a person can fix it.
    assert con.execute("SELECT count(*) FROM quarantine WHERE raw IS NULL").fetchone()[0] == 0
    assert (con.execute("SELECT max(strlen(raw)) FROM quarantine").fetchone()[0] or 0) <= 70_000


def test_ten_mb_line_loads_under_the_default_limit(tmp_path):
    """The 10 MB record is valid: with the default --max-line-bytes it loads, and only its known fields are kept."""
    path = tmp_path / "big.jsonl"
    _ten_mb_line(path)
    con = connect(":memory:")
    (f,) = ingest(con, [path]).files
    assert (f.read, f.loaded, f.quarantined) == (3, 3, 0)
    assert con.execute("SELECT count(*) FROM checks WHERE run_id = 'r-huge'").fetchone()[0] == 1


def _content(con) -> dict[str, list[tuple]]:
    """What the store says, without where it came from (file ids, line numbers)."""
    out = {}
    for table, order in CONTENT_TABLES.items():
        cols = [
            c for (c,) in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
                [table],
            ).fetchall()
            if c not in ("file_id", "line_no", "json_path")
        ]  # fmt: skip
        select = ", ".join(f'"{c}"' for c in cols)
        sql = f"SELECT {select} FROM {table} ORDER BY {order}, {select}"  # noqa: S608 - catalog names
        out[table] = con.execute(sql).fetchall()
    out["quarantine"] = con.execute("SELECT count(*) FROM quarantine").fetchall()
    return out


def test_idempotent_in_pieces_and_whole_in_any_order(tmp_path, sample_dir):
    """The same export three times, in pieces and whole, in any order: the same store."""
    runs = (sample_dir / "runs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:150]
    decisions = (sample_dir / "decisions.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    whole = tmp_path / "whole"
    whole.mkdir()
    (whole / "runs.jsonl").write_text("".join(runs), encoding="utf-8")
    (whole / "decisions.csv").write_text("".join(decisions), encoding="utf-8")
    for name in ("process-vendor-onboarding.yaml", "process-invoice-matching.yaml", "process-expense-review.yaml",
                 "limits.json"):  # fmt: skip
        shutil.copy(sample_dir / name, whole / name)
    pieces = []
    for i, (a, b) in enumerate([(0, 60), (40, 110), (100, 150)]):  # overlapping pieces
        p = tmp_path / "pieces" / f"runs-{i}.jsonl"
        p.parent.mkdir(exist_ok=True)
        p.write_text("".join(runs[a:b]), encoding="utf-8")
        pieces.append(p)
    half = len(decisions) // 2
    d1, d2 = tmp_path / "pieces" / "dec-1.csv", tmp_path / "pieces" / "dec-2.csv"
    d1.write_text("".join(decisions[: half + 5]), encoding="utf-8")
    d2.write_text(decisions[0] + "".join(decisions[half:]), encoding="utf-8")
    pieces += [d1, d2]

    reference = connect(":memory:")
    ingest(reference, [whole])
    expected = _content(reference)
    assert expected["checks"] and expected["decisions"] and expected["questions"]

    rng = random.Random(9)
    for trial in range(2):
        order = [whole, *pieces, whole]
        rng.shuffle(order)
        con = connect(tmp_path / f"trial-{trial}.duckdb")
        for item in order:
            report = ingest(con, [item])
            assert report.totals["quarantined"] == 0
        assert _content(con) == expected, f"order {[p.name for p in order]}"


def test_store_error_mid_file_stores_nothing(tmp_path, sample_dir):
    """Out of memory (or disk) in the middle of a file: one clear error, none of the file, store still usable."""
    con = connect(tmp_path / "s.duckdb")
    con.execute("SET memory_limit = '2MB'")
    con.execute("SET temp_directory = ''")  # no spilling: the pipeline runs out of memory
    with pytest.raises(StoreError, match="nothing from it was stored"):
        ingest(con, [sample_dir / "runs.jsonl"])
    assert con.execute("SELECT count(*) FROM checks").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM files").fetchone()[0] == 0
    con.execute("RESET memory_limit")
    (f,) = ingest(con, [sample_dir / "runs.jsonl"]).files
    assert f.status == "loaded" and f.quarantined == 0
    assert con.execute("SELECT count(*) FROM checks").fetchone()[0] > 0


def test_read_only_store_refuses_ingest_cleanly(tmp_path, sample_dir):
    path = tmp_path / "s.duckdb"
    connect(path).close()
    con = connect(path, read_only=True)
    with pytest.raises(StoreError, match="nothing from it was stored"):
        ingest(con, [sample_dir / "limits.json"])
    con.close()


def test_file_that_vanishes_is_a_usage_error(tmp_path):
    from calibrate.ingest import Source, ingest_file

    con = connect(":memory:")
    with pytest.raises(UsageError, match="cannot read"):
        ingest_file(con, Source(tmp_path / "gone.jsonl", "records"))
