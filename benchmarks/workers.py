"""Benchmark steps that are not ``calibrate`` commands, each run in its own process.

``python -m benchmarks.workers <step> [args]`` does one step and prints one JSON
line on stdout: ``{"seconds": <time inside the step>, ...}``. Running each step
as a child process gives it its own peak resident memory, read by the parent
from ``wait4``. Exit code 3 means "skipped" (the code under test does not exist
yet), with the reason as ``{"skipped": "..."}``.

Steps
-----
floor EXPORT DB
    DuckDB alone: ``read_json`` of ``runs.jsonl`` into one table, the top-level
    keys as columns and ``steps``/``handoff`` as JSON, plus ``read_csv`` of
    ``decisions.csv``, into a fresh DuckDB file. No validation, no normalisation.
naive EXPORT
    What an analyst would write: ``json.loads`` per line, a Python loop to pick
    the verdicts and decisions out of each run, ``pandas.json_normalize`` into
    checks and answers frames, ``pandas.read_csv`` for the decision table.
thresholds-toolkit N SEED / thresholds-baseline N SEED
    The toolkit's certified threshold search and the peer baseline (Jung et al.
    2024, fixed-sequence testing over a 5,000-point grid) on the same ``N``
    labeled single-question submissions.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

SKIPPED = 3
ALPHA = 0.05  # the false-pass rate to certify
BETA = 0.2  # the false-fail rate to certify
DELTA = 0.1  # 1 - confidence of the certificate, split between the two
SEPARATION, OVERCONFIDENCE = 1.0, 1.6  # the single-question data's evaluator


class Skip(Exception):
    """The code this step measures does not exist (yet)."""


def floor(export: str, db: str) -> dict[str, Any]:
    """Load the run documents and the decision table with DuckDB alone."""
    import duckdb

    folder = Path(export)
    t0 = time.perf_counter()
    con = duckdb.connect(db)
    con.execute(
        """CREATE TABLE runs AS SELECT * FROM read_json(?, format = 'newline_delimited',
               columns = {run: 'VARCHAR', process: 'VARCHAR', version: 'VARCHAR', steps: 'JSON', handoff: 'JSON'})""",
        [str(folder / "runs.jsonl")],
    )
    con.execute(
        "CREATE TABLE decisions AS SELECT * FROM read_csv(?, header = true, all_varchar = true)",
        [str(folder / "decisions.csv")],
    )
    n = con.execute("SELECT count(*) FROM runs").fetchone()[0]
    con.close()
    return {"seconds": time.perf_counter() - t0, "rows": n}


def _checks_of(doc: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The verdict objects and decisions in one run document, the straightforward way."""
    key = {"run": doc.get("run"), "process": doc.get("process"), "version": doc.get("version")}
    checks: list[dict[str, Any]] = []
    decisions: list[dict[str, Any]] = []
    for step, s in (doc.get("steps") or {}).items():
        if not isinstance(s, dict):
            continue
        for h in s.get("history") or []:
            if "check" in h:
                checks.append({**key, "step": step, "attempt": h.get("attempt"), **h["check"]})
            if "decision" in h:
                decisions.append({**key, "step": step, "attempt": h.get("attempt"), "decision": h["decision"],
                                  "by": h.get("by"), "at": h.get("at")})  # fmt: skip
        if "check" in s:
            checks.append(
                {**key, "step": step, "attempt": len(s.get("history") or []) + 1, **s["check"]}
            )
        esc = s.get("escalation")
        if isinstance(esc, dict):
            decisions.append(
                {
                    **key,
                    "step": step,
                    "decision": esc.get("resolution"),
                    "by": esc.get("by"),
                    "at": esc.get("at"),
                }
            )
        if "decision" in s:
            decisions.append(
                {
                    **key,
                    "step": s.get("reviews"),
                    "decision": s["decision"],
                    "by": s.get("by"),
                    "at": s.get("at"),
                }
            )
    handoff = doc.get("handoff")
    if isinstance(handoff, dict) and "check" in handoff:
        checks.append({**key, "step": handoff.get("step"), **handoff["check"]})
    return checks, decisions


def naive(export: str) -> dict[str, Any]:
    """json.loads per line, a loop per run, pandas.json_normalize; no validation."""
    import pandas as pd

    folder = Path(export)
    t0 = time.perf_counter()
    with open(folder / "runs.jsonl", encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh if line.strip()]
    checks: list[dict[str, Any]] = []
    decisions: list[dict[str, Any]] = []
    for doc in docs:
        c, d = _checks_of(doc)
        checks.extend(c)
        decisions.extend(d)
    runs = pd.json_normalize(docs, max_level=0)
    checks_df = pd.json_normalize(checks)
    answers_df = pd.json_normalize(
        [c for c in checks if c.get("questions")],
        record_path="questions",
        meta=["run", "process", "step", "attempt", "verdict", "model", "at"],
        record_prefix="q.",
        errors="ignore",  # a handoff verdict has no attempt
    )
    decisions_df = pd.concat(
        [pd.json_normalize(decisions), pd.read_csv(folder / "decisions.csv")], ignore_index=True
    )
    for frame in (checks_df, decisions_df):
        frame["at"] = pd.to_datetime(frame["at"], utc=True, format="ISO8601")
    return {
        "seconds": time.perf_counter() - t0,
        "rows": len(runs),
        "checks": len(checks_df),
        "answers": len(answers_df),
        "decisions": len(decisions_df),
    }


def single_question_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` labeled submissions of one yes/no question: (yes-probability, acceptable).

    The simulator's evaluator model (:mod:`calibrate.simulate`): truth with rate
    0.8, a signal of separation 1.0, an over-confident report (factor 1.6),
    rounded to 3 decimals as exports record it, so many submissions tie.
    """
    rng = np.random.default_rng(seed)
    acceptable = rng.random(n) < 0.8
    z = SEPARATION * np.where(acceptable, 1.0, -1.0) + rng.standard_normal(n)
    p_cal = np.clip(1.0 / (1.0 + np.exp(-2.0 * SEPARATION * z)), 1e-6, 1 - 1e-6)
    p = np.round(1.0 / (1.0 + np.exp(-OVERCONFIDENCE * (np.log(p_cal) - np.log1p(-p_cal)))), 3)
    return p, acceptable


# The two searches on the same data and the same test: false-pass rate at most
# ALPHA and false-fail rate at most BETA, delta split evenly between the two.
# Only the search call is timed; each returns its thresholds and which
# submissions they pass and fail, by its own convention.

Found = tuple[float | None, float | None, np.ndarray, np.ndarray]


def _toolkit_search(p: np.ndarray, y: np.ndarray) -> Found:
    try:
        from calibrate.analysis.thresholds import StepData, find_thresholds
        from calibrate.profile import Kind, Question, decide
    except ImportError as exc:
        raise Skip(
            f"calibrate.analysis.thresholds.find_thresholds is not there yet ({exc})"
        ) from None
    n = p.size
    data = StepData(
        "bench", "step", "model", [Question("ok?", Kind.YES_NO, pass_p=0.9)], [True],
        np.arange(n).astype(str), y, [p], [np.full(n, np.nan)], np.zeros(n, bool),
    )  # fmt: skip
    t0 = time.perf_counter()
    res = find_thresholds(data, alpha=ALPHA, delta=DELTA, beta=BETA)
    _TIMER["seconds"] = time.perf_counter() - t0
    if res.suggested is None:
        return None, None, np.zeros(n, bool), np.zeros(n, bool)
    q = res.suggested[0]
    # check-1: without a fail threshold, below the pass threshold fails.
    codes = decide(q, p, None)
    return q.pass_p, q.fail_p, codes == 0, codes == 1


def _baseline_search(p: np.ndarray, y: np.ndarray) -> Found:
    try:
        from calibrate.analysis.baselines import jung_fixed_sequence_baseline
    except ImportError as exc:
        raise Skip(
            f"calibrate.analysis.baselines.jung_fixed_sequence_baseline is not there yet ({exc})"
        ) from None
    t0 = time.perf_counter()
    res = jung_fixed_sequence_baseline(p, y, alpha=ALPHA, delta=DELTA, beta=BETA, n_grid=5000)
    _TIMER["seconds"] = time.perf_counter() - t0
    a, b = res.pass_threshold, res.fail_threshold
    passed = p >= a if a is not None else np.zeros(p.size, bool)
    failed = (p < b) & ~passed if b is not None else np.zeros(p.size, bool)  # None: nothing fails
    return a, b, passed, failed


_TIMER: dict[str, float] = {}


def thresholds(which: str, n: str, seed: str) -> dict[str, Any]:
    """Time one threshold search on the shared single-question data.

    Thresholds on a grid and thresholds at observed values can differ in the
    digits and still decide alike, so the two are compared by what they
    decide: ``decisions`` is a digest of which submissions pass and fail.
    """
    p, y = single_question_data(int(n), int(seed))
    search = _toolkit_search if which == "toolkit" else _baseline_search
    pass_t, fail_t, passed, failed = search(p, y)
    digest = hashlib.md5(np.packbits(passed).tobytes() + np.packbits(failed).tobytes()).hexdigest()[
        :12
    ]
    return {
        "seconds": _TIMER["seconds"],
        "n": int(n),
        "pass_threshold": pass_t,
        "fail_threshold": fail_t,
        "n_pass": int(passed.sum()),
        "n_fail": int(failed.sum()),
        "decisions": digest,
    }


STEPS = {
    "floor": floor,
    "naive": naive,
    "thresholds-toolkit": lambda n, seed: thresholds("toolkit", n, seed),
    "thresholds-baseline": lambda n, seed: thresholds("baseline", n, seed),
}


def main(argv: list[str]) -> int:
    """Run one step; print its JSON line."""
    if not argv or argv[0] not in STEPS:
        print(f"usage: python -m benchmarks.workers {{{'|'.join(STEPS)}}} ARGS", file=sys.stderr)
        return 2
    try:
        out = STEPS[argv[0]](*argv[1:])
    except Skip as exc:
        print(json.dumps({"skipped": str(exc)}))
        return SKIPPED
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
