"""Time ``calibrate ingest`` of a run-document file statement by statement.

Usage::

    python -m benchmarks.profile_ingest --runs 100000 [--record-pipeline-only] [--explain NAME]

Loads the cached export's ``runs.jsonl`` into a fresh store the way
:func:`calibrate.ingest.ingest_file` does: the typed lane
(``calibrate/sql/ingest_typed.sql``) reads the file, then the record pipeline
(``calibrate/sql/ingest_records.sql``) runs on the records the lane left over
and inserts everything, in one transaction. Prints wall and CPU seconds per
statement (CPU counts every thread of this process) and the store's row counts.
``--record-pipeline-only`` stages every line for the record pipeline instead,
as ingest does when the typed lane cannot read a file. ``--explain NAME`` prints
DuckDB's profile (operator tree with times) of the statements of that name.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import inputs
from benchmarks.run import DEFAULT_CACHE

TABLES = ("runs", "checks", "answers", "decisions", "quarantine")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Timer:
    """Wall and CPU seconds of named steps, in the order they ran."""

    def __init__(self, con=None, explain: str | None = None) -> None:  # noqa: ANN001
        self.rows: list[tuple[str, float, float]] = []
        self.con, self.explain = con, explain

    def __call__(self, name: str, fn):  # noqa: ANN001, ANN204 - a tiny helper
        explain = self.explain is not None and name.endswith(f": {self.explain}")
        if explain:
            self.con.execute("SET enable_profiling = 'query_tree'")
        wall, cpu = time.perf_counter(), _cpu()
        out = fn()
        self.rows.append((name, time.perf_counter() - wall, _cpu() - cpu))
        if explain:
            self.con.execute("SET enable_profiling = 'no_output'")
        return out


def profile(runs_jsonl: Path, db: Path, *, lane: bool, explain: str | None = None) -> Timer:
    """Load ``runs_jsonl`` into a fresh store at ``db``, timing every statement."""
    import calibrate.ingest as ing
    from calibrate.ingest import lines as staging
    from calibrate.store import connect

    con = connect(db)
    timer = Timer(con, explain)
    n_lines = timer("sha256 and line count", lambda: ing._scan(runs_jsonl)).lines
    con.execute(ing.RECORD_PIPELINE["macros"])
    con.execute(ing.TYPED_LANE["empty"])
    slow = None
    if lane:
        con.execute("SET preserve_insertion_order = true")
        timer("lane: read", lambda: con.execute(ing.TYPED_LANE["read"], [str(runs_jsonl)]))
        for name, sql in ing.TYPED_LANE.items():
            if name not in ("empty", "read", "csv_decisions"):
                timer(f"lane: {name}", lambda sql=sql: con.execute(sql))
        slow = con.execute("SELECT DISTINCT rec FROM c_slow ORDER BY rec").fetchnumpy()["rec"]
        print(f"the lane left {len(slow)} of {n_lines} records to the record pipeline")
    con.execute("BEGIN TRANSACTION")
    staging.create_stage(con)
    if slow is None:
        timer(
            "stage all lines",
            lambda: staging.stage_lines(con, runs_jsonl, max_line_bytes=ing.DEFAULT_MAX_LINE_BYTES),
        )
    else:
        timer("stage left lines", lambda: staging.stage_selected_lines(con, runs_jsonl, slow))
    con.execute("CREATE OR REPLACE TEMP TABLE s_ctx AS SELECT 1::INTEGER AS file_id, 'x' AS path")
    ing.run_record_pipeline(
        con, runs_jsonl, replaces=False, step=lambda name, fn: timer(f"pipeline: {name}", fn)
    )
    timer("commit", lambda: con.execute("COMMIT"))
    counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}  # noqa: S608
    con.close()
    print("rows:", ", ".join(f"{t} {n:,}" for t, n in counts.items()))
    return timer


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    p.add_argument(
        "--record-pipeline-only",
        action="store_true",
        help="Stage every line for the record pipeline (no typed lane).",
    )
    p.add_argument("--explain", help="Print DuckDB's profile of the statements of this name.")
    args = p.parse_args(argv)
    inputs.ensure(args.cache, args.runs, seed=args.seed)
    folder = inputs.export_dir(args.cache, args.runs, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        timer = profile(
            folder / "runs.jsonl",
            Path(tmp) / "store.duckdb",
            lane=not args.record_pipeline_only,
            explain=args.explain,
        )
    width = max(len(n) for n, _, _ in timer.rows)
    total_wall = sum(w for _, w, _ in timer.rows)
    total_cpu = sum(c for _, _, c in timer.rows)
    print(f"{'statement':<{width}}  {'wall s':>8}  {'CPU s':>8}")
    for name, wall, cpu in sorted(timer.rows, key=lambda r: -r[2]):
        print(f"{name:<{width}}  {wall:8.2f}  {cpu:8.2f}")
    print(f"{'total':<{width}}  {total_wall:8.2f}  {total_cpu:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
