"""Atomicity: ``calibrate ingest`` killed with SIGKILL mid-file leaves all of that file or none of it.

Each file loads in one DuckDB transaction. A killed process never commits, and
DuckDB's write-ahead log replays only committed transactions when the store is
next opened, so the store holds the file's records either all (the kill came
after the commit) or not at all; a rerun then completes it.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from calibrate.ingest import ingest
from calibrate.store import connect

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path("/proc/self/fd").is_dir(), reason="needs /proc to see when ingest opens the store"
    ),
]

ROOT = Path(__file__).resolve().parent.parent
RUNS = 8_000  # about 5 MB of run documents: a few seconds of ingest to kill into
KILLS = 3

#: One fingerprint per table: row count and an order-independent hash of every row.
FINGERPRINT = {
    table: f"SELECT count(*), coalesce(sum(hash(t)), 0) FROM (SELECT * {exclude} FROM {table}) t"  # noqa: S608
    for table, exclude in [
        ("runs", "EXCLUDE (file_id)"), ("checks", "EXCLUDE (file_id, line_no, json_path)"), ("answers", ""),
        ("decisions", "EXCLUDE (file_id, line_no, json_path)"), ("questions", "EXCLUDE (file_id)"),
        ("limits", "EXCLUDE (file_id)"),
    ]
}  # fmt: skip


def fingerprint(path: Path) -> dict[str, tuple[int, int]]:
    con = connect(path, wait=30)
    try:
        out = {t: tuple(con.execute(sql).fetchone()) for t, sql in FINGERPRINT.items()}
        out["files"] = (con.execute("SELECT count(*) FROM files").fetchone()[0], 0)
        return out
    finally:
        con.close()


def start_ingest(store: Path, export: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen(
        [sys.executable, "-m", "calibrate", "ingest", "--db", str(store), "--quiet", "--wait", "60", str(export)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def wait_until_open(proc: subprocess.Popen, store: Path, timeout: float = 120) -> float:
    """Block until ``proc`` has the store file open (ingest has begun); returns that moment."""
    target = str(store.resolve())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return time.monotonic()
        try:
            fds = os.listdir(f"/proc/{proc.pid}/fd")
            if any(os.path.realpath(f"/proc/{proc.pid}/fd/{fd}") == target for fd in fds):
                return time.monotonic()
        except (FileNotFoundError, PermissionError):
            pass
        time.sleep(0.01)
    proc.kill()
    raise AssertionError("ingest never opened the store")


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> Path:
    from calibrate.simulate import simulate

    out = tmp_path_factory.mktemp("atomic") / "sim"
    simulate(out, runs=RUNS, seed=21)
    return out / "runs.jsonl"


def test_sigkill_leaves_all_or_none_and_rerun_completes(export, tmp_path):
    # A clean, complete ingest: the reference, and how long the work takes.
    reference = tmp_path / "reference.duckdb"
    con = connect(reference)
    began = time.monotonic()
    ingest(con, [export])
    duration = time.monotonic() - began
    con.close()
    full = fingerprint(reference)
    assert full["checks"][0] > 5_000 and full["files"][0] == 1
    empty = {t: (0, 0) for t in FINGERPRINT} | {"files": (0, 0)}

    rng = random.Random(20261006)
    delays = [rng.uniform(0.05, 0.9) * duration for _ in range(KILLS)]
    delays += [0.1 * duration] * 3  # spares, used only if every random kill came after the commit
    store = tmp_path / "killed-0.duckdb"
    outcomes = []
    for i, delay in enumerate(delays):
        if i >= KILLS and any(kind == "none" for _, _, kind in outcomes):
            break
        proc = start_ingest(store, export)
        opened = wait_until_open(proc, store)
        time.sleep(max(0.0, opened + delay - time.monotonic()))
        proc.send_signal(signal.SIGKILL)
        code = proc.wait(timeout=60)
        state = fingerprint(store)  # opening replays the log; a torn store would fail here
        assert state in (empty, full), f"partial store after a kill at {delay:.2f} s: {state}"
        outcomes.append((round(delay, 2), code, "all" if state == full else "none"))
        if state == full:  # the kill came too late: kill the next ingest on a fresh store
            store = tmp_path / f"killed-{i + 1}.duckdb"
    # At least one kill must have landed inside the transaction.
    assert any(kind == "none" and code == -signal.SIGKILL for _, code, kind in outcomes), outcomes

    proc = start_ingest(store, export)
    assert proc.wait(timeout=600) == 0, proc.stderr.read().decode()
    assert fingerprint(store) == full
