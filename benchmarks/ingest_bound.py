"""How fast today's typed-lane statements can load the normalised tables, doing nothing else.

Usage::

    python -m benchmarks.ingest_bound --runs 1000000 [--repeat 3]

Measures, in one run and on the same cached export, interleaved:

1. **floor**: the benchmark's floor step (DuckDB ``read_json`` of ``runs.jsonl``
   with ``steps`` as JSON, plus ``read_csv`` of the decision table, into a
   fresh file);
2. **bare load**: today's typed read (the same SQL as ``calibrate ingest``:
   every leaf as JSON, into a temp table of whole run documents), then one row
   per step, one per verdict (approve steps' checks and history entries), their
   answers, the runs and the approve-step decisions, with md5 keys, inserted
   into a fresh store and committed. No validation, no settling of duplicate
   keys, no quarantine; escalations, handoff checks and the decision table are
   skipped.

What it bounds: ``calibrate ingest`` **as built from these statements** (a
temp table of whole documents, then wide staging tables). It is **not** a
bound on the store's layout: issue 16 measured a typed read with native leaf
types plus four ``CREATE TABLE ... AS SELECT ... unnest(...)`` statements at
1.4× the floor, and the third round's conclusion that the layout caps ingest
at 2.9× the floor does not hold (reports/benchmarks.md, fourth round).

Prints the median wall time of each and their ratio. Each repeat runs in this
process, one after the other (no child processes: the point is the ratio, and
both sides pay the same interpreter).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import inputs, workers
from benchmarks.run import DEFAULT_CACHE

#: The bare load after the typed read, statement by statement (calibrate's own tables).
BARE_LOAD = {
    "steps": """CREATE TEMP TABLE t_step AS
        SELECT rowid + 1 AS rec, run->>'$' AS run_id, process->>'$' AS process_name,
               version->>'$' AS version_text, unnest(map_keys(steps)) AS step,
               unnest(map_values(steps)) AS sd
        FROM t_doc WHERE steps IS NOT NULL""",
    "verdicts": """CREATE TEMP TABLE t_verdict AS
        SELECT *, md5(concat_ws(chr(31), run_id, step, '1', coalesce(at_text, ''), verdict,
                                coalesce(model, ''))) AS check_id
        FROM (
            SELECT rec, run_id, process_name, version_text, step, 'steps.check' AS recorded_in,
                   sd."check".verdict->>'$' AS verdict, sd."check".model->>'$' AS model,
                   sd."check"."at"->>'$' AS at_text, sd."check".questions AS questions
            FROM t_step WHERE sd."check" IS NOT NULL
            UNION ALL
            SELECT rec, run_id, process_name, version_text, step, 'history',
                   h."check".verdict->>'$', h."check".model->>'$', h."check"."at"->>'$',
                   h."check".questions
            FROM (SELECT rec, run_id, process_name, version_text, step, unnest(sd.history) AS h
                  FROM t_step WHERE len(sd.history) > 0)
            WHERE h."check" IS NOT NULL
        )""",
    "insert checks": """INSERT INTO checks
        SELECT check_id, run_id, process_name, version_text, step, 1, verdict, NULL, model,
               try_cast(at_text AS TIMESTAMPTZ), recorded_in, false, NULL, len(questions), 1, rec, '$'
        FROM t_verdict""",
    "insert answers": """INSERT INTO answers
        SELECT check_id, position,
               md5(concat_ws(chr(31), coalesce(process_name, ''), step, q.ask->>'$')),
               q.ask->>'$', q.kind->>'$', try_cast(q.answer->>'$' AS DOUBLE), NULL, NULL,
               try_cast(q.confidence->>'$' AS DOUBLE), q.result->>'$'
        FROM (SELECT check_id, process_name, step, unnest(questions) AS q,
                     generate_subscripts(questions, 1) - 1 AS position FROM t_verdict)""",
    "insert runs": """INSERT INTO runs
        SELECT run->>'$', process->>'$', version->>'$', 1 FROM t_doc WHERE steps IS NOT NULL""",
    "insert decisions": """INSERT INTO decisions
        SELECT md5(concat_ws(chr(31), run_id, step, '1', sd.decision->>'$',
                             coalesce(sd.by->>'$', ''), coalesce(sd."at"->>'$', ''))),
               run_id, process_name, step, 1, sd.decision->>'$', sd.by->>'$',
               try_cast(sd."at"->>'$' AS TIMESTAMPTZ), sd.note->>'$', 'approve step', 1, rec, '$'
        FROM t_step WHERE sd.decision IS NOT NULL""",
}


def bare_load(runs_jsonl: Path, db: Path) -> dict[str, float]:
    """Run the bare load into a fresh store at ``db``; wall seconds per statement and in all."""
    import calibrate.ingest as ing
    from calibrate.store import connect

    t0 = time.perf_counter()
    con = connect(db)
    con.execute(f"SET memory_limit = '{ing.INGEST_MEMORY_LIMIT}'")
    con.execute("SET preserve_insertion_order = true")
    times = {}
    start = time.perf_counter()
    con.execute(ing.TYPED_LANE["read"], [str(runs_jsonl)])
    times["typed read"] = time.perf_counter() - start
    con.execute("BEGIN TRANSACTION")
    for name, sql in BARE_LOAD.items():
        start = time.perf_counter()
        con.execute(sql)
        times[name] = time.perf_counter() - start
    start = time.perf_counter()
    con.execute("COMMIT")
    con.close()
    times["commit"] = time.perf_counter() - start
    times["total"] = time.perf_counter() - t0
    return times


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = p.parse_args(argv)
    inputs.ensure(args.cache, args.runs, seed=args.seed)
    folder = inputs.export_dir(args.cache, args.runs, args.seed)
    floors, bares = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            floors.append(workers.floor(str(folder), f"{tmp}/floor-{i}.duckdb")["seconds"])
            bares.append(bare_load(folder / "runs.jsonl", Path(tmp) / f"bare-{i}.duckdb"))
    floor = statistics.median(floors)
    total = statistics.median(b["total"] for b in bares)
    print(f"{args.runs:,} runs, {args.repeat} repeats, median wall seconds")
    print(f"floor (read_json + read_csv)          {floor:7.2f}")
    for name in bares[0]:
        if name != "total":
            print(f"  bare load: {name:<25} {statistics.median(b[name] for b in bares):7.2f}")
    print(f"bare load (no validation, no dedupe)  {total:7.2f}  = {total / floor:.2f}× the floor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
