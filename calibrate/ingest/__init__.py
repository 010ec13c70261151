"""Ingest exports into the store: every record loaded or quarantined, one transaction per file.

>>> from calibrate.ingest import ingest  # doctest: +SKIP
>>> report = ingest(con, ["exports/"])  # doctest: +SKIP
>>> t = report.totals  # doctest: +SKIP
>>> t["read"] == t["loaded"] + t["quarantined"] + t["pending"]  # doctest: +SKIP
True
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

import duckdb
import numpy as np

from calibrate.errors import CalibrateError, ProcessFileError, StoreError, UsageError
from calibrate.ingest import lines as _lines
from calibrate.ingest import process_files, statements
from calibrate.ingest.sources import Source, discover, json_file_kind
from calibrate.ingest.tables import (
    UTF16_BOMS,
    UTF16_NO_BOM_REASON,
    Unreadable,
    stage_csv,
    stage_parquet,
    utf16_without_bom,
)

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
#: The ``files.kind`` values a source kind can end up as (a .json file is records or limits).
STORED_KINDS = {"json": ["json", "limits"]}
#: Bad lines whose reason is refined with Python's JSON message; the rest keep the short reason.
REFINE_LIMIT = 1000
#: Why a text file other than a CSV (which is read as UTF-16) is refused whole when UTF-16.
UTF16_REASON = "file is UTF-16 encoded; calibrate reads UTF-8: save it as UTF-8"

__all__ = ["FileResult", "IngestReport", "discover", "ingest", "ingest_file", "skipped_result"]


@dataclass
class FileResult:
    """What happened to one file. ``read == loaded + quarantined + pending`` always.

    ``pending`` counts the records whose decision is blank (a decision table's
    rows not decided yet, as an audit draw's CSV is before it is filled in):
    neither loaded nor quarantined; filled in, a newer version of the file loads them.
    """

    path: str
    kind: str
    status: str  # loaded | unchanged | skipped
    read: int = 0
    loaded: int = 0
    new: int = 0
    quarantined: int = 0
    note: str = ""
    #: Checks and decisions an older version of the file contributed that this one withdrew.
    withdrawn: int = 0
    pending: int = 0


@dataclass
class IngestReport:
    """The outcome of one ``ingest`` call, file by file."""

    files: list[FileResult] = field(default_factory=list)

    @property
    def totals(self) -> dict[str, int]:
        """Sums of read, loaded, new, quarantined, withdrawn and pending over the files; files skipped."""
        keys = ("read", "loaded", "new", "quarantined", "withdrawn", "pending")
        sums = {k: sum(getattr(f, k) for f in self.files) for k in keys}
        return sums | {"skipped": len(self.skipped)}

    @property
    def skipped(self) -> list[FileResult]:
        """The files that are no export kind: nothing was read from them or stored."""
        return [f for f in self.files if f.status == "skipped"]

    def to_dict(self) -> dict:
        """A JSON-ready form: every file, the skipped files apart (path and reason), the totals."""
        return {
            "files": [asdict(f) for f in self.files],
            "skipped": [{"path": f.path, "reason": f.note} for f in self.skipped],
            "totals": self.totals,
        }


RECORD_PIPELINE = statements.load("ingest_records.sql")
TYPED_LANE = statements.load("ingest_typed.sql")
FILE_VERSIONS = statements.load("ingest_versions.sql")
#: Beyond this share of records the typed lane cannot take, the whole file takes the record pipeline.
TYPED_LANE_MAX_SLOW_SHARE = 0.5
#: Smaller files take the record pipeline whole: the lane's fixed cost is not worth it there.
TYPED_LANE_MIN_BYTES = 4 * 1024 * 1024
#: Off: every record takes the record pipeline, also a decision table's rows (the tests load
#: both ways and compare).
TYPED_LANE_ENABLED = True


#: Bytes hashed at a time; a line within one block is at most this long.
READ_BLOCK = 8 * 1024 * 1024


class FileScan(NamedTuple):
    """What one pass over a file's bytes tells: its digest, its lines, a bound on their length."""

    sha256: str
    lines: int  # a last line without a newline counts
    line_bound: int  # no line is longer (bytes before its newline)


def _scan(path: Path) -> FileScan:
    h = hashlib.sha256()
    newlines = longest = run = 0
    last = b""
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(READ_BLOCK), b""):
            h.update(block)
            newlines += block.count(b"\n")
            first = block.find(b"\n")
            if first < 0:
                run += len(block)
            else:
                longest = max(longest, run + first)
                run = len(block) - block.rfind(b"\n") - 1
            last = block[-1:]
    # A line within one block is at most a block long; one across blocks was measured.
    bound = max(longest, run, READ_BLOCK)
    return FileScan(h.hexdigest(), newlines + (1 if last not in (b"", b"\n") else 0), bound)


def ingest(
    con: duckdb.DuckDBPyConnection,
    paths: list[str | Path],
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    progress: Callable[[Path, int], Callable[[int], None] | None] | None = None,
) -> IngestReport:
    """Load files and folders of exports into the store.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        A store opened for writing (:func:`calibrate.store.connect`).
    paths : list of path-like
        Files and folders; folders are walked recursively, hidden entries skipped.
    max_line_bytes : int, default=64 MiB
        A longer line is quarantined without being read into memory whole.
    progress : callable, optional
        ``progress(path, size)`` may return a callback that receives bytes done.

    Returns
    -------
    IngestReport
        Per file: read, loaded, new and quarantined record counts.

    Raises
    ------
    UsageError
        A path does not exist or a file cannot be read.
    StoreError
        The store could not take a file (out of memory or disk, opened
        read-only); that file's transaction is rolled back, earlier files stay.

    Notes
    -----
    Each file loads in one transaction: all of its good records or nothing.
    A file that cannot be parsed at all (not UTF-8 in a ``.json``, UTF-16 in a
    JSON, JSON-lines or YAML file, not Parquet, a CSV header naming a column
    twice) is one quarantined record.
    A file whose latest ingested version has the same content (SHA-256) is
    skipped. A newer version of a file replaces what its older versions
    contributed: the checks, decisions and runs it no longer holds, or holds
    with other content, are withdrawn (unless another file holds them too) and
    logged in the ``withdrawn`` table; a file that grew adds only its new
    records, because every row has a natural key.
    """
    report = IngestReport()
    sources = discover(paths)
    with _bounded_memory(con):
        for source in sources:
            report.files.append(
                ingest_file(con, source, max_line_bytes=max_line_bytes, progress=progress)
            )
    return report


#: Memory DuckDB may hold during ingest of a file-backed store; beyond it, staging spills to disk.
#: Measured at 1M runs: 1.0 GiB costs a fifth more time in spilling; 1.5 GiB peaks at 1.7 GiB RSS.
INGEST_MEMORY_LIMIT = "1.5 GiB"
_UNITS = {"bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def _setting_bytes(text: str) -> float:
    number, _, unit = text.partition(" ")
    return float(number) * _UNITS.get(unit, 1)


@contextlib.contextmanager
def _bounded_memory(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Cap DuckDB's memory while ingesting, and restore the setting afterwards.

    A file is staged in one transaction so that it loads all-or-nothing; the
    staging tables it replaces stay alive until COMMIT (for a rollback), so
    a large file needs several times its size in memory unless DuckDB may spill
    them to ``<store>.tmp/``. An in-memory store has nowhere to spill: no cap.
    """
    path = con.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchone()
    if not path or not path[0]:
        yield
        return
    previous = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    if _setting_bytes(previous) <= _setting_bytes(INGEST_MEMORY_LIMIT):
        yield  # already as tight or tighter: leave it
        return
    con.execute(f"SET memory_limit = '{INGEST_MEMORY_LIMIT}'")  # noqa: S608 - a constant
    try:
        yield
    finally:
        con.execute("SET memory_limit = ?", [previous])


def skipped_result(source: Source) -> FileResult:
    """What ingest reports for a file that is no export kind (nothing is read or stored)."""
    suffix = source.path.suffix or "no extension"
    return FileResult(str(source.path), "unknown", "skipped", note=f"not an export kind ({suffix})")


def ingest_file(
    con: duckdb.DuckDBPyConnection,
    source: Source,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    progress: Callable[[Path, int], Callable[[int], None] | None] | None = None,
) -> FileResult:
    """Load one file in one transaction; see :func:`ingest` (same errors)."""
    path = source.path
    if source.kind == "skipped":
        return skipped_result(source)
    try:
        scan = _scan(path)
        digest = scan.sha256
        size = path.stat().st_size
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    # Only the path's latest version counts: a return to earlier content is a new version, and a
    # copy elsewhere is read (so that it holds its records too). The same bytes read as another
    # kind are other records.
    seen = con.execute(
        """SELECT n_read, n_loaded, n_quarantined, kind, sha256 FROM files
           WHERE path = ? ORDER BY file_id DESC LIMIT 1""",
        [str(path)],
    ).fetchone()
    if (
        seen is not None
        and seen[4] == digest
        and seen[3] in STORED_KINDS.get(source.kind, [source.kind])
    ):
        # What was neither loaded nor quarantined was pending (the files log keeps no column for it).
        return FileResult(
            str(path), seen[3], "unchanged", seen[0], seen[1], 0, seen[2], "already ingested",
            pending=seen[0] - seen[1] - seen[2],
        )  # fmt: skip
    if source.kind in ("records", "json", "process") and _is_utf16(path):
        # Read as UTF-8, every line would be garbage with a reason of its own (and the
        # typed lane would count lines wrongly): one record that says what to do instead.
        return _whole_file_quarantine(con, path, digest, size, source.kind, UTF16_REASON)
    if source.kind in ("records", "json", "process") and _head_codec(path) != "utf-8":
        return _whole_file_quarantine(con, path, digest, size, source.kind, UTF16_NO_BOM_REASON)
    tick = progress(path, size) if progress is not None else None
    # Outside the file's transaction, so that its staging tables are freed as they are replaced.
    use_lane = (
        source.kind == "records"
        and TYPED_LANE_ENABLED
        and size >= TYPED_LANE_MIN_BYTES
        # every line within --max-line-bytes: the record pipeline quarantines a longer one
        and scan.line_bound <= max_line_bytes
    )
    slow_lines = _typed_lane(con, path, scan.lines) if use_lane else None
    con.execute("BEGIN TRANSACTION")
    try:
        file_id = con.execute("SELECT nextval('file_id_seq')").fetchone()[0]
        _forget_quarantine(con, path)
        kind = source.kind
        if kind in ("process",):
            result = _ingest_process(con, path, file_id)
        elif kind == "json":
            text = path.read_bytes().decode("utf-8-sig", errors="strict")
            if json_file_kind(text) == "limits":
                result = _ingest_limits(con, path, file_id, text)
            else:
                stager = lambda c, p: _stage_json_document(c, p, text, max_line_bytes)  # noqa: E731
                result = _ingest_records(con, path, file_id, "json", stager, max_line_bytes, tick)
        elif kind == "records" and slow_lines is not None:
            stager = lambda c, p: _lines.stage_selected_lines(c, p, slow_lines)  # noqa: E731
            result = _ingest_records(
                con, path, file_id, kind, stager, max_line_bytes, tick, lane=True
            )
            if tick is not None:
                tick(size)
        elif kind == "records":
            result = _ingest_records(con, path, file_id, kind, None, max_line_bytes, tick)
        elif kind == "csv":
            stager = lambda c, p: stage_csv(  # noqa: E731
                c, p, max_line_bytes=max_line_bytes, direct_decisions=TYPED_LANE_ENABLED
            )
            result = _ingest_records(con, path, file_id, kind, stager, max_line_bytes, tick)
        else:
            result = _ingest_records(con, path, file_id, kind, stage_parquet, max_line_bytes, tick)
        con.execute(
            "INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [file_id, str(path), digest, result.kind, size, datetime.now(UTC),
             result.read, result.loaded, result.new, result.quarantined],
        )  # fmt: skip
        con.execute("COMMIT")
        _drop_lane_tables(con)
    except UnicodeDecodeError as exc:
        _rollback(con)
        return _whole_file_quarantine(
            con,
            path,
            digest,
            size,
            source.kind,
            f"file is not valid UTF-8: {exc.reason} at byte {exc.start}",
        )
    except Unreadable as exc:
        _rollback(con)
        return _whole_file_quarantine(con, path, digest, size, source.kind, exc.reason)
    except OSError as exc:
        _rollback(con)
        raise UsageError(
            f"cannot read {path}: {exc.strerror or exc}; nothing from it was stored"
        ) from None
    except duckdb.Error as exc:
        # Out of memory or disk, or a store that cannot be written: the file's transaction is undone.
        _rollback(con)
        raise StoreError(
            f"could not store {path}: {_first_line(exc)}; nothing from it was stored"
        ) from exc
    except BaseException:
        _rollback(con)
        raise
    return result


def _is_utf16(path: Path) -> bool:
    """Whether a text file starts with a UTF-16 byte order mark (and then a character of text).

    Text in UTF-16 starts, after the mark, with an ASCII code unit (JSON and
    YAML start with ASCII); asking for it keeps bytes that only happen to
    start like the mark read as they are.
    """
    with open(path, "rb") as fh:
        head = fh.read(4)
    if len(head) == 2:
        return head in UTF16_BOMS
    if len(head) < 4:
        return False
    if head[:2] == b"\xff\xfe":
        return head[3] == 0 and head[2] < 0x80
    return head[:2] == b"\xfe\xff" and head[2] == 0 and head[3] < 0x80


def _head_codec(path: Path) -> str:
    """How the file's first bytes read: ``utf-16`` (a byte order mark), ``utf-16-le``/``-be`` (none), ``utf-8``."""
    with open(path, "rb") as fh:
        head = fh.read(8)
    if head[:2] in UTF16_BOMS:
        return "utf-16"
    return utf16_without_bom(head) or "utf-8"


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:
        pass  # no transaction left to undo (DuckDB already aborted it, or the database was invalidated)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _forget_quarantine(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Drop what earlier versions of this file quarantined: this version is read whole again.

    A record fixed since is then loaded and no longer listed; one still bad is
    quarantined again by this version, so the quarantine shows each file as it
    is now (the ``files`` log keeps every version's counts).
    """
    con.execute("DELETE FROM quarantine WHERE path = ?", [str(path)])


def _file_context(con: duckdb.DuckDBPyConnection, file_id: int, path: Path) -> None:
    """The file version being loaded, as the SQL pipelines read it (``s_ctx``)."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE s_ctx AS SELECT ?::INTEGER AS file_id, ?::VARCHAR AS path",
        [file_id, str(path)],
    )


def _has_older_version(con: duckdb.DuckDBPyConnection, path: Path) -> bool:
    return con.execute("SELECT count(*) FROM files WHERE path = ?", [str(path)]).fetchone()[0] > 0


def _replace_older_versions(
    con: duckdb.DuckDBPyConnection, path: Path, *, holds_nothing: bool
) -> None:
    """Withdraw what older versions of ``path`` held and this one does not (ingest_versions.sql).

    Runs inside the file's transaction, once per file, after the record
    pipeline has found the file's rows (or, ``holds_nothing``, for a file that
    could not be read at all), and only when the store has an older version.
    """
    for name, sql in FILE_VERSIONS.items():
        if name != "nothing_held" or holds_nothing:
            con.execute(sql)


def _n_withdrawn(con: duckdb.DuckDBPyConnection, file_id: int) -> int:
    return con.execute(
        "SELECT count(*) FROM withdrawn WHERE file_id = ? AND kind <> 'run'", [file_id]
    ).fetchone()[0]


def _whole_file_quarantine(
    con: duckdb.DuckDBPyConnection, path: Path, digest: str, size: int, kind: str, reason: str
) -> FileResult:
    """Record a file that could not be read at all as one quarantined record.

    It holds no records, so what its older versions held is withdrawn.
    """
    con.execute("BEGIN TRANSACTION")
    file_id = con.execute("SELECT nextval('file_id_seq')").fetchone()[0]
    _forget_quarantine(con, path)
    if kind not in ("process",) and _has_older_version(con, path):
        _file_context(con, file_id, path)
        _replace_older_versions(con, path, holds_nothing=True)
    # A UTF-16 file's preview is its text, not every other byte a NUL.
    codec = _head_codec(path)
    with open(path, "rb") as fh:
        raw = fh.read(2000).decode(codec, "replace")
    con.execute(
        "INSERT INTO quarantine VALUES (?, ?, NULL, '$', ?, ?)", [file_id, str(path), raw, reason]
    )
    con.execute(
        "INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, 1, 0, 0, 1)",
        [file_id, str(path), digest, kind, size, datetime.now(UTC)],
    )
    withdrawn = _n_withdrawn(con, file_id)
    con.execute("COMMIT")
    return FileResult(str(path), kind, "loaded", 1, 0, 0, 1, reason, withdrawn)


def _typed_lane(con: duckdb.DuckDBPyConnection, path: Path, n_lines: int) -> np.ndarray | None:
    """Load what DuckDB's typed reader can take of a JSON-lines file; return the other lines.

    Returns
    -------
    numpy.ndarray or None
        Sorted line numbers of the records left to the record pipeline (the
        lane's rows wait in the ``c_*`` tables, shown through the ``f_*``
        views to the record pipeline), or ``None`` when the
        whole file must take the record pipeline: the strict reader refused it
        (a line that is not JSON, a duplicate key, an unexpected shape), it
        skipped blank lines (so its row numbers are not line numbers), or most
        records were left over anyway.
    """
    con.execute(RECORD_PIPELINE["macros"])
    con.execute(TYPED_LANE["empty"])
    previous = con.execute("SELECT current_setting('preserve_insertion_order')").fetchone()[0]
    con.execute("SET preserve_insertion_order = true")  # rowid + 1 is then the line number
    try:
        con.execute(TYPED_LANE["read"], [str(path)])
    except duckdb.Error:
        _drop_lane_tables(con)
        return None
    finally:
        con.execute("SET preserve_insertion_order = ?", [bool(previous)])
    n_rows = con.execute("SELECT count(*) FROM t_doc").fetchone()[0]
    if n_rows != n_lines:
        _drop_lane_tables(con)
        return None
    for name, sql in TYPED_LANE.items():
        if name not in ("empty", "read", "csv_decisions"):  # the steps after the read, in order
            con.execute(sql)
    slow = con.execute("SELECT DISTINCT rec FROM c_slow ORDER BY rec").fetchnumpy()["rec"]
    if len(slow) > TYPED_LANE_MAX_SLOW_SHARE * max(n_rows, 1):
        _drop_lane_tables(con)
        return None
    _drop_tables(con, LANE_WORK_TABLES)  # the candidates stay, in the c_* tables
    return np.asarray(slow, dtype=np.int64)


#: The typed lane's working tables (its candidates are in c_* tables, see ingest_typed.sql).
LANE_WORK_TABLES = ("t_doc", "t_step", "t_hist", "t_handoff")


def _drop_tables(con: duckdb.DuckDBPyConnection, tables: tuple[str, ...]) -> None:
    con.execute("DROP VIEW IF EXISTS t_check; DROP VIEW IF EXISTS t_dec")  # views over these tables
    for table in tables:
        con.execute(f"DROP TABLE IF EXISTS {table}")  # noqa: S608 - fixed names


def _drop_lane_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the typed lane's working tables and empty its candidate tables."""
    _drop_tables(con, LANE_WORK_TABLES)
    con.execute(TYPED_LANE["empty"])


def _ingest_records(
    con, path, file_id, kind, stager, max_line_bytes, tick, *, lane: bool = False
) -> FileResult:
    """Stage a file's records and run the record pipeline; ``lane``: the typed lane took part of it."""
    con.execute(RECORD_PIPELINE["macros"])  # the CSV loader's decision rows use them too
    if not lane:
        # No typed lane for this file: no candidates yet (a decision table adds some).
        con.execute(TYPED_LANE["empty"])
    replaces = _has_older_version(con, path)
    _lines.create_stage(con)
    if stager is None:
        _lines.stage_lines(con, path, max_line_bytes=max_line_bytes, on_progress=tick)
    else:
        stager(con, path)
    _file_context(con, file_id, path)
    n_read, n_bad, n_pending, n_new = run_record_pipeline(con, path, replaces=replaces)
    _refine_json_errors(con, path)
    withdrawn = _n_withdrawn(con, file_id) if replaces else 0
    return FileResult(
        str(path), kind, "loaded", n_read, n_read - n_bad - n_pending, n_new, n_bad, "", withdrawn,
        n_pending,
    )  # fmt: skip


def _run_step(name: str, fn: Callable[[], object]) -> object:
    return fn()


def run_record_pipeline(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    *,
    replaces: bool,
    step: Callable[[str, Callable[[], object]], object] = _run_step,
) -> tuple[int, int, int]:
    """Run the record pipeline's statements on the staged file; return (read, quarantined, pending, new).

    ``step(name, fn)`` runs each statement (the profiler times them).
    """
    counts = None
    for name, sql in RECORD_PIPELINE.items():
        if name == "new_checks" and replaces:
            step("versions", lambda: _replace_older_versions(con, path, holds_nothing=False))
        try:
            if name == "counts":
                counts = step(name, lambda sql=sql: con.execute(sql).fetchone())
            else:
                step(name, lambda sql=sql: con.execute(sql))
            if name == "run_processes":
                _stage_lane_lines(con, path)
        except duckdb.Error as exc:
            raise StoreError(
                f"could not store {path}: ingest step {name!r} failed: {_first_line(exc)}; "
                "nothing from it was stored"
            ) from exc
    return counts


def _stage_lane_lines(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Stage the raw lines of the typed lane's records that the pipeline quarantined (few, if any).

    The lane reads records without staging their lines; one quarantined after all (its run
    named with another process) shows its line in the quarantine like any other record.
    """
    recs = con.execute("SELECT DISTINCT rec FROM s_clash WHERE lane ORDER BY rec").fetchnumpy()[
        "rec"
    ]
    if len(recs):
        _lines.stage_selected_lines(con, path, np.asarray(recs, dtype=np.int64))


def _refine_json_errors(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Replace "not valid JSON" with Python's precise message, for the first few bad lines only.

    Only lines DuckDB found invalid reach here, and at most :data:`REFINE_LIMIT`
    of them, so a file of garbage costs one bounded pass, not one per line.
    """
    rows = con.execute(
        """SELECT rowid, raw, line_no FROM quarantine WHERE path = ? AND reason = 'line is not valid JSON'
           ORDER BY line_no LIMIT ?""",
        [str(path), REFINE_LIMIT],
    ).fetchall()
    if not rows:
        return
    last = con.execute("SELECT max(line_no) FROM stage_lines").fetchone()[0]
    updates = []
    for rowid, raw, line_no in rows:
        try:
            json.loads(raw)
            continue  # Python accepts what DuckDB refused (e.g. a lone surrogate escape)
        except ValueError as exc:
            reason = f"line is not valid JSON: {exc}"
        except RecursionError:
            reason = "line is not valid JSON: nested too deeply"
        if line_no is not None and line_no == last:
            reason += " (the last line may have been cut off)"
        updates.append((reason, rowid))
    if updates:
        con.executemany("UPDATE quarantine SET reason = ? WHERE rowid = ?", updates)


class _Pairs(dict):
    """A JSON object as written: ``json.dumps`` writes its pairs back in order, a repeated key twice.

    Python's ``json`` keeps a repeated key's last value, DuckDB its first; written back whole,
    the record pipeline sees the repeat and quarantines the record, as it does a line's.
    """

    def __init__(self, pairs: list[tuple[str, object]]) -> None:
        super().__init__(pairs)
        self._pairs = pairs

    def items(self):  # noqa: D102 - what json.dumps iterates (its C encoder too)
        return self._pairs


def _parse_json_document(text: str) -> tuple[bool, object]:
    """``(True, document)`` or ``(False, error message)``; deep nesting is an error, not a crash.

    Objects keep their pairs as written (:class:`_Pairs`), a repeated key included.
    """
    try:
        return True, json.loads(text, object_pairs_hook=_Pairs)
    except ValueError as exc:
        return False, str(exc)
    except RecursionError:
        return False, "nested too deeply"


def _looks_like_json_lines(text: str) -> bool:
    """Whether a ``.json`` file that is not one document holds JSON objects, one per line."""
    checked = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        ok, value = _parse_json_document(line)
        if ok and isinstance(value, dict):
            return True
        checked += 1
        if checked >= 100:
            break
    return False


def _stage_json_document(
    con: duckdb.DuckDBPyConnection, path: Path, text: str, max_line_bytes: int
) -> None:
    ok, doc = _parse_json_document(text)
    if not ok:
        if _looks_like_json_lines(text):
            # Not one JSON document but JSON lines saved as .json: each line is a record.
            _lines.stage_lines(con, path, max_line_bytes=max_line_bytes)
            return
        raise Unreadable(f"file is not valid JSON: {doc}")
    try:
        if isinstance(doc, list):
            records = [(f"$[{i}]", json.dumps(item)) for i, item in enumerate(doc)]
        else:
            records = [("$", json.dumps(doc))]
    except RecursionError:
        raise Unreadable("file is not valid JSON: nested too deeply") from None
    _lines.stage_documents(con, records)


def _ingest_process(con: duckdb.DuckDBPyConnection, path: Path, file_id: int) -> FileResult:
    text = path.read_bytes().decode("utf-8-sig")
    try:
        parsed = process_files.parse_process(text)
    except ProcessFileError as exc:
        reason = f"process file: {exc}"
        _quarantine(con, file_id, path, "$", text[:2000], reason)
        return FileResult(str(path), "process", "loaded", 1, 0, 0, 1, reason)
    written = process_files.store_process(con, parsed, file_id)
    for json_path, raw, reason in parsed.bad:
        _quarantine(con, file_id, path, json_path, raw, reason)
    n_bad = len(parsed.bad)
    return FileResult(
        str(path),
        "process",
        "loaded",
        parsed.n_read,
        parsed.n_read - n_bad,
        written and parsed.n_read - n_bad,
        n_bad,
    )


def _ingest_limits(
    con: duckdb.DuckDBPyConnection, path: Path, file_id: int, text: str
) -> FileResult:
    try:
        limits = process_files.parse_limits(text)
    except CalibrateError as exc:
        reason = f"limits file: {exc}"
        _quarantine(con, file_id, path, "$", text[:2000], reason)
        return FileResult(str(path), "limits", "loaded", 1, 0, 0, 1, reason)
    process_files.store_limits(con, limits, text, file_id)
    return FileResult(str(path), "limits", "loaded", 1, 1, 1, 0)


def _quarantine(con, file_id: int, path: Path, json_path: str, raw: str, reason: str) -> None:
    con.execute(
        "INSERT INTO quarantine VALUES (?, ?, NULL, ?, ?, ?)",
        [file_id, str(path), json_path, raw, reason],
    )
