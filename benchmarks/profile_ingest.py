"""Time the ingest record pipeline statement by statement, and try edited SQL on a copy.

Usage::

    python -m benchmarks.profile_ingest --runs 100000
    python -m benchmarks.profile_ingest --runs 100000 --sql my_ingest_records.sql --compare

Loads the cached export's ``runs.jsonl`` into a fresh store the way
:func:`calibrate.ingest.ingest_file` does (stage the lines, then run each named
statement of ``calibrate/sql/ingest_records.sql`` in one transaction), printing
wall and CPU time per statement, the commit, and the store's row counts.
``--sql`` runs an edited copy of the pipeline instead (same ``-- name:``
format); ``--compare`` then also loads with the original and checks that both
stores hold exactly the same rows, so a proposed optimisation is measured and
shown to change nothing before anyone applies it.
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

# A proposed replacement for calibrate.ingest.lines.SPLIT_SQL: unnest the split
# list instead of indexing it once per line from a range join.
SPLIT_UNNEST = """
INSERT INTO stage_lines
SELECT ?::BIGINT + i AS rec, ?::BIGINT + i AS line_no, NULL, line
FROM (SELECT generate_subscripts(parts, 1) AS i, unnest(parts) AS line
      FROM (SELECT string_split(?, chr(10)) AS parts))
"""


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def pipeline_from(path: Path | None) -> list[tuple[str, str]]:
    """The named statements of the original pipeline, or of an edited copy."""
    from calibrate.ingest import RECORD_PIPELINE

    if path is None:
        return RECORD_PIPELINE
    out = []
    for block in path.read_text(encoding="utf-8").split("-- name: ")[1:]:
        name, _, body = block.partition("\n")
        out.append((name.strip(), body.strip()))
    return out


def load(
    runs_jsonl: Path,
    db: Path,
    pipeline: list[tuple[str, str]],
    *,
    settings: list[str],
    batch_bytes: int | None = None,
    split_unnest: bool = False,
    quiet: bool = False,
) -> dict[str, float]:
    """Stage and run ``pipeline`` into a fresh store at ``db``; return seconds per statement.

    With ``batch_bytes``, the file is staged and run through the pipeline in
    batches of about that many bytes of whole lines, inside the one transaction,
    instead of all at once: a prototype of bounded-memory ingest.
    """
    from calibrate.ingest import DEFAULT_MAX_LINE_BYTES
    from calibrate.ingest import lines as staging
    from calibrate.store import connect

    con = connect(db)
    saved_split = staging.SPLIT_SQL
    if split_unnest:
        staging.SPLIT_SQL = SPLIT_UNNEST
    for statement in settings:
        con.execute(statement)
    times: dict[str, float] = {}
    show = not quiet

    def tick(name: str, t: float, c: float) -> None:
        times[name] = times.get(name, 0.0) + time.perf_counter() - t
        if show:
            print(
                f"{name:<20} {time.perf_counter() - t:8.2f} s   cpu {_cpu() - c:8.2f} s", flush=True
            )

    def run_pipeline() -> None:
        for name, sql in pipeline:
            t, c = time.perf_counter(), _cpu()
            con.execute(sql).fetchall() if name == "counts" else con.execute(sql)
            tick(name, t, c)

    t_all, c_all = time.perf_counter(), _cpu()
    con.execute("BEGIN TRANSACTION")
    con.execute(
        "CREATE OR REPLACE TEMP TABLE s_ctx AS SELECT 1::INTEGER AS file_id, ?::VARCHAR AS path",
        [str(runs_jsonl)],
    )
    if batch_bytes is None:
        t, c = time.perf_counter(), _cpu()
        staging.create_stage(con)
        staging.stage_lines(con, runs_jsonl, max_line_bytes=DEFAULT_MAX_LINE_BYTES)
        tick("stage_lines", t, c)
        run_pipeline()
    else:
        # Whole lines in batches; record numbers stay global so line numbers stay right.
        t, c = time.perf_counter(), _cpu()
        show, line_base = False, 0
        saved, staging.CHUNK_BYTES = staging.CHUNK_BYTES, batch_bytes
        try:
            for chunk, _overlong in staging._chunks(runs_jsonl, DEFAULT_MAX_LINE_BYTES):
                staging.create_stage(con)
                con.execute(staging.SPLIT_SQL, [line_base, line_base, chunk.decode("utf-8")])
                line_base += chunk.count(b"\n") + 1
                run_pipeline()
        finally:
            staging.CHUNK_BYTES = saved
        show = not quiet
        tick(f"{batch_bytes >> 20} MiB batches", t, c)
    t, c = time.perf_counter(), _cpu()
    con.execute("COMMIT")
    tick("commit", t, c)
    times["total"] = time.perf_counter() - t_all
    times["cpu"] = _cpu() - c_all
    if show:
        print(f"{'total':<20} {times['total']:8.2f} s   cpu {times['cpu']:8.2f} s")
        print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")
        sql = "SELECT count(*) FROM {}"  # fixed table names, not input
        counts = {name: con.execute(sql.format(name)).fetchone()[0] for name in TABLES}
        print("rows:", ", ".join(f"{k} {v:,}" for k, v in counts.items()))
    con.close()
    staging.SPLIT_SQL = saved_split
    return times


def same_rows(a: Path, b: Path) -> list[str]:
    """Tables whose rows differ between two stores (as multisets, ignoring order)."""
    import duckdb

    con = duckdb.connect()
    con.execute(f"ATTACH '{a}' AS a (READ_ONLY)")
    con.execute(f"ATTACH '{b}' AS b (READ_ONLY)")
    differ = []
    for name in TABLES:
        n = con.execute(
            f"SELECT count(*) FROM ((FROM a.{name} EXCEPT ALL FROM b.{name}) UNION ALL (FROM b.{name} EXCEPT ALL FROM a.{name}))"  # noqa: S608
        ).fetchone()[0]
        if n:
            differ.append(f"{name} ({n} rows differ)")
    con.close()
    return differ


def main(argv: list[str] | None = None) -> int:
    """Profile one load; optionally compare an edited pipeline with the original."""
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.profile_ingest", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--runs", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    p.add_argument(
        "--sql", type=Path, default=None, help="an edited copy of ingest_records.sql to run instead"
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        help="a DuckDB statement to run first, e.g. \"SET memory_limit='1GB'\"",
    )
    p.add_argument(
        "--compare",
        action="store_true",
        help="also load with the original pipeline and compare the rows",
    )
    p.add_argument(
        "--split-unnest", action="store_true", help="stage lines with the proposed unnest split"
    )
    p.add_argument(
        "--batch-mib",
        type=int,
        default=None,
        help="stage and run the pipeline in batches of this many MiB",
    )
    args = p.parse_args(argv)
    inputs.ensure(args.cache, args.runs, seed=args.seed)
    runs_jsonl = inputs.export_dir(args.cache, args.runs, args.seed) / "runs.jsonl"
    with tempfile.TemporaryDirectory(dir=args.cache) as tmp:
        db = Path(tmp) / "edited.duckdb"
        print(f"pipeline: {args.sql or 'calibrate/sql/ingest_records.sql'} on {runs_jsonl}")
        batch = args.batch_mib << 20 if args.batch_mib else None
        times = load(
            runs_jsonl,
            db,
            pipeline_from(args.sql),
            settings=args.set,
            batch_bytes=batch,
            split_unnest=args.split_unnest,
        )
        if args.compare:
            print("\noriginal pipeline:")
            ref = Path(tmp) / "original.duckdb"
            base = load(runs_jsonl, ref, pipeline_from(None), settings=args.set)
            differ = same_rows(ref, db)
            print(f"\nedited {times['total']:.2f} s (CPU {times['cpu']:.2f} s) against original "
                  f"{base['total']:.2f} s (CPU {base['cpu']:.2f} s); "
                  + ("rows identical" if not differ else "ROWS DIFFER: " + ", ".join(differ)))  # fmt: skip
            return 1 if differ else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
