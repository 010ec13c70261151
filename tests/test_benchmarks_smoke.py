"""A tiny run of the benchmark, so that it does not rot. It asserts no times."""

from __future__ import annotations

import json

from benchmarks import inputs, run


def test_benchmark_runs_end_to_end_and_writes_the_table(tmp_path):
    out = tmp_path / "reports" / "benchmarks.md"
    cache = tmp_path / "cache"
    code = run.main(
        [
            "--sizes", "2000", "--repeat", "1", "--threshold-sizes", "2000",
            "--only", "floor,ingest,naive,status,search-toolkit",
            "--out", str(out), "--cache", str(cache),
        ]
    )  # fmt: skip
    assert code == 0
    text = out.read_text(encoding="utf-8")
    # The table has a measured row for each load step, and the targets section is there.
    for label in (
        "floor: DuckDB read_json",
        "calibrate ingest",
        "naive: json.loads + json_normalize",
    ):
        row = next(line for line in text.splitlines() if f"| 2,000 | {label} |" in line)
        assert "| 1 |" in row, row  # one successful repeat
    assert "## Targets (issue 8)" in text
    assert "cores" in text and "DuckDB" in text
    # Every sample was recorded, and the cached export is complete and reusable.
    samples = json.loads((cache / "last-samples.json").read_text(encoding="utf-8"))
    assert {s["step"] for s in samples} >= {"floor", "ingest", "naive", "status", "search-toolkit"}
    assert all(s["status"] in ("ok", "skipped") for s in samples), samples
    assert inputs.cached(cache, 2000, 0)["runs"] == 2000


def test_replicated_export_renames_every_run(tmp_path):
    manifest = inputs.ensure(tmp_path, 4000, seed=1, replicate_above=1000, base_runs=2000)
    assert manifest["runs"] == 4000 and "copied 2x" in manifest["method"]
    folder = inputs.export_dir(tmp_path, 4000, 1)
    ids = [
        json.loads(line)["run"]
        for line in (folder / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert len(ids) == 4000 and len(set(ids)) == 4000
    decision_ids = [
        line.split(",", 1)[0] for line in (folder / "decisions.csv").read_text().splitlines()[1:]
    ]
    assert set(decision_ids) <= set(ids)
