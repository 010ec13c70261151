"""The lean load: the smallest load of calibrate's tables that keeps the typed lane's rules.

Usage::

    python -m benchmarks.ingest_bound --runs 1000000 [--repeat 2]

Measures, in one process and on the same cached export, interleaved:

1. **floor**: the benchmark's floor step (DuckDB ``read_json`` of ``runs.jsonl``
   with ``steps`` as JSON, plus ``read_csv`` of the decision table, into a
   fresh file);
2. **lean load** (``benchmarks/lean_sql.py``): the file's SHA-256 and line
   count (ingest needs both), the typed lane's read (the same SQL as
   ``calibrate ingest``: every leaf as JSON, into a temp table of run
   documents), then one statement for the verdicts and one for the decisions,
   straight from the documents (no table of steps; the questions stay nested
   in their verdict), each carrying its natural key and **one flag for every
   rule the lane applies** (checks, questions, attempts, decisions), the bad
   records, the duplicate keys settled, and one insert per table (checks,
   answers, runs, decisions; keys the store already holds skipped), in one
   transaction, then the decision table in a second one.

What it leaves out, so that it is a bound on this way of loading rather than
a replacement: it quarantines nothing (the records it flags would go to the
record pipeline, as in the lane; the benchmark's export has none), keeps no
``holds`` and no file versions, and does not start an interpreter (the
command's start-up, about 0.6 s, comes on top).

Prints, per statement, the median wall and CPU seconds, and the totals with
their ratios to the floor.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import inputs, workers
from benchmarks.lean_sql import DECISION_TABLE, LEAN_LOAD
from benchmarks.run import DEFAULT_CACHE


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _timed(times: dict[str, tuple[float, float]], name: str, fn) -> None:  # noqa: ANN001
    wall, cpu = time.perf_counter(), _cpu()
    fn()
    times[name] = (time.perf_counter() - wall, _cpu() - cpu)


def lean_load(folder: Path, db: Path, memory: str | None = None) -> dict[str, tuple[float, float]]:
    """Run the lean load into a fresh store at ``db``; (wall, CPU) seconds per statement and in all."""
    import calibrate.ingest as ing
    from calibrate.store import connect

    wall0, cpu0 = time.perf_counter(), _cpu()
    times: dict[str, tuple[float, float]] = {}
    runs_jsonl = folder / "runs.jsonl"
    con = connect(db)
    con.execute("SET memory_limit = ?", [memory or ing.INGEST_MEMORY_LIMIT])
    con.execute("SET preserve_insertion_order = true")
    con.execute(ing.RECORD_PIPELINE["macros"])
    _timed(times, "sha256 and line count", lambda: ing._scan(runs_jsonl))
    _timed(times, "typed read", lambda: con.execute(ing.TYPED_LANE["read"], [str(runs_jsonl)]))
    con.execute("BEGIN TRANSACTION")
    for name, sql in LEAN_LOAD.items():
        _timed(times, name, lambda sql=sql: con.execute(sql))
    _timed(times, "commit", lambda: con.execute("COMMIT"))
    con.execute("DROP TABLE t_doc; DROP VIEW p_new_check")
    con.execute("DROP TABLE p_verdict; DROP TABLE p_dec")
    con.execute("BEGIN TRANSACTION")
    csv = str(folder / "decisions.csv")
    _timed(times, "decision table", lambda: con.execute(DECISION_TABLE, [csv]))
    con.execute("COMMIT")
    con.close()
    times["total"] = (time.perf_counter() - wall0, _cpu() - cpu0)
    return times


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    p.add_argument("--memory", help="DuckDB's memory limit for the lean load (default: ingest's)")
    args = p.parse_args(argv)
    inputs.ensure(args.cache, args.runs, seed=args.seed)
    folder = inputs.export_dir(args.cache, args.runs, args.seed)
    floors, leans = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            cpu = _cpu()
            wall = workers.floor(str(folder), f"{tmp}/floor-{i}.duckdb")["seconds"]
            floors.append((wall, _cpu() - cpu))
            leans.append(lean_load(folder, Path(tmp) / f"lean-{i}.duckdb", args.memory))
    fw = statistics.median(f[0] for f in floors)
    fc = statistics.median(f[1] for f in floors)
    print(f"{args.runs:,} runs, {args.repeat} repeats, median seconds   wall    CPU")
    print(f"floor (read_json + read_csv)              {fw:7.2f} {fc:7.2f}")
    for name in leans[0]:
        w = statistics.median(t[name][0] for t in leans)
        c = statistics.median(t[name][1] for t in leans)
        if name == "total":
            print(f"lean load in all                          {w:7.2f} {c:7.2f}"
                  f"  = {w / fw:.2f}× the floor by wall, {c / fc:.2f}× by CPU")  # fmt: skip
        else:
            print(f"  {name:<39} {w:7.2f} {c:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
