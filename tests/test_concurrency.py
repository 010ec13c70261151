"""Concurrency: one writer at a time, readers share the store while nothing writes, never a torn store.

DuckDB takes an OS file lock: one process may write, or several may read.
``calibrate.store.connect`` retries for ``wait`` seconds (``ingest --wait``,
default 5) and then fails with StoreBusyError: "store ... is in use by another
process", exit code 3.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from calibrate.cli import app
from calibrate.errors import StoreBusyError
from calibrate.ingest import ingest
from calibrate.store import connect

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir(), reason="needs /proc to see a process open the store"
)

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()

FINGERPRINT = {
    table: f"SELECT count(*), coalesce(sum(hash(t)), 0) FROM (SELECT * {exclude} FROM {table}) t"  # noqa: S608
    for table, exclude in [
        ("checks", "EXCLUDE (file_id, line_no, json_path)"), ("answers", ""),
        ("decisions", "EXCLUDE (file_id, line_no, json_path)"), ("questions", "EXCLUDE (file_id)"),
    ]
}  # fmt: skip


def fingerprint(path: Path) -> dict[str, tuple[int, int]]:
    con = connect(path, read_only=True, wait=30)
    try:
        return {t: tuple(con.execute(sql).fetchone()) for t, sql in FINGERPRINT.items()}
    finally:
        con.close()


def said(text: str) -> str:
    """Output with rich's line wrapping undone, to look for a message in it."""
    return " ".join(text.split())


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def start_ingest(store: Path, *paths: Path, wait: float = 0) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "calibrate", "ingest", "--db", str(store), "--quiet", "--wait", str(wait),
         *map(str, paths)],
        cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def start_holder(store: Path, *, read_only: bool) -> subprocess.Popen:
    """A process (a notebook, say) that keeps the store open until its stdin closes."""
    code = (
        "import sys; from calibrate.store import connect; "
        f"con = connect({str(store)!r}, read_only={read_only}, wait=30); "
        "print('open', flush=True); sys.stdin.read(); con.close()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, env=_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout.readline().strip() == "open", proc.stderr.read()
    return proc


def release(proc: subprocess.Popen) -> None:
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0


def wait_until_open(proc: subprocess.Popen, store: Path, timeout: float = 120) -> None:
    target = str(store.resolve())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the ingest ended before it was seen holding the store"
        try:
            fds = os.listdir(f"/proc/{proc.pid}/fd")
            if any(os.path.realpath(f"/proc/{proc.pid}/fd/{fd}") == target for fd in fds):
                return
        except (FileNotFoundError, PermissionError):
            pass
        time.sleep(0.005)
    raise AssertionError("ingest never opened the store")


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> dict[str, Path]:
    """A big run export (seconds of ingest), its decisions, and the reference store of both."""
    from calibrate.simulate import simulate

    root = tmp_path_factory.mktemp("conc")
    simulate(root / "sim", runs=5000, seed=4)
    files = {"runs": root / "sim" / "runs.jsonl", "decisions": root / "sim" / "decisions.csv"}
    reference = root / "reference.duckdb"
    con = connect(reference)
    ingest(con, [files["runs"], files["decisions"]])
    con.close()
    return {**files, "reference": reference}


def test_second_writer_fails_clearly_or_waits(exports, tmp_path):
    """While an ingest writes: ``--wait 0`` fails at once with exit 3, ``--wait N`` waits its turn."""
    store = tmp_path / "s.duckdb"
    writer = start_ingest(store, exports["runs"])
    wait_until_open(writer, store)
    impatient = runner.invoke(
        app, ["ingest", "--db", str(store), "--wait", "0", str(exports["decisions"])]
    )
    try:
        connect(store, read_only=True, wait=0).close()
        reader_refused = ""
    except StoreBusyError as exc:  # readers are kept out while it writes, too
        reader_refused = str(exc)
    was_writing = writer.poll() is None
    patient = runner.invoke(
        app, ["ingest", "--db", str(store), "--wait", "600", str(exports["decisions"])]
    )
    assert patient.exit_code == 0, patient.output
    assert writer.wait(timeout=600) == 0, writer.stderr.read().decode()
    if was_writing:  # always, unless the machine is so slow that the writer finished in between
        assert impatient.exit_code == 3, impatient.output
        assert "is in use by another process" in said(impatient.output)
        assert "Traceback" not in impatient.output
        assert "in use by another process" in reader_refused
    assert fingerprint(store) == fingerprint(exports["reference"])


def test_two_ingests_started_together(exports, tmp_path):
    """Whoever loses the race exits 3 with the message; rerunning it gives the reference store."""
    store = tmp_path / "s.duckdb"
    procs = {name: start_ingest(store, exports[name]) for name in ("runs", "decisions")}
    codes = {name: p.wait(timeout=600) for name, p in procs.items()}
    for name, proc in procs.items():
        err = proc.stderr.read().decode()
        assert codes[name] in (0, 3), err
        assert "Traceback" not in err
        if codes[name] == 3:
            assert "is in use by another process" in said(err)
    for name, code in codes.items():
        if code != 0:
            rerun = runner.invoke(
                app, ["ingest", "--db", str(store), "--wait", "60", str(exports[name])]
            )
            assert rerun.exit_code == 0, rerun.output
    assert fingerprint(store) == fingerprint(exports["reference"])


def test_readers_share_the_store_while_nothing_writes(exports, tmp_path):
    store = tmp_path / "s.duckdb"
    con = connect(store)
    ingest(con, [exports["decisions"]])
    con.close()
    reader = start_holder(store, read_only=True)
    try:
        # A second reader in another process (this one) opens it, and status works.
        result = runner.invoke(app, ["status", "--db", str(store), "--format", "json"])
        assert result.exit_code == 0, result.output
        # A writer must not slip in under the readers.
        with pytest.raises(StoreBusyError, match="in use by another process"):
            connect(store, wait=0)
        busy = runner.invoke(
            app, ["ingest", "--db", str(store), "--wait", "0", str(exports["runs"])]
        )
        assert busy.exit_code == 3 and "in use by another process" in said(busy.output)
    finally:
        release(reader)
    # With the readers gone, the writer gets in.
    ok = runner.invoke(app, ["ingest", "--db", str(store), "--wait", "0", str(exports["runs"])])
    assert ok.exit_code == 0, ok.output
    assert fingerprint(store) == fingerprint(exports["reference"])


def test_reader_is_refused_while_a_writer_holds_the_store(tmp_path):
    store = tmp_path / "s.duckdb"
    connect(store).close()
    writer = start_holder(store, read_only=False)
    try:
        # A reader (status, report, a notebook) waits its `wait`, then says why it cannot read.
        with pytest.raises(
            StoreBusyError, match=r"in use by another process \(PID \d+\) after waiting 0.3 s"
        ):
            connect(store, read_only=True, wait=0.3)
    finally:
        release(writer)
    assert runner.invoke(app, ["status", "--db", str(store)]).exit_code == 0


def test_same_process_other_mode_is_a_clear_error(tmp_path):
    store = tmp_path / "s.duckdb"
    con = connect(store)
    try:
        with pytest.raises(StoreBusyError, match="already open for writing in this process"):
            connect(store, read_only=True)
    finally:
        con.close()
    connect(store, read_only=True).close()
