"""Open, create and check the DuckDB store.

The store is one DuckDB file. Its path is, in order of precedence, the
``path`` argument (the CLI's ``--db``), the ``CALIBRATE_DB`` environment
variable, or ``calibrate.duckdb`` in the working directory.
"""

from __future__ import annotations

import os
import re
import time
from importlib import resources
from pathlib import Path

import duckdb

from calibrate.errors import StoreBusyError, StoreError

SCHEMA_VERSION = 4
DEFAULT_DB = "calibrate.duckdb"
ENV_VAR = "CALIBRATE_DB"
#: How long :func:`connect` waits for another process to release the store.
DEFAULT_WAIT_SECONDS = 5.0


def default_path() -> Path:
    """The store path when none is given: ``$CALIBRATE_DB`` or ``./calibrate.duckdb``."""
    return Path(os.environ.get(ENV_VAR) or DEFAULT_DB)


def _sql(name: str) -> str:
    return resources.files("calibrate.sql").joinpath(name).read_text(encoding="utf-8")


def connect(
    path: str | os.PathLike[str] | None = None,
    *,
    read_only: bool = False,
    wait: float = DEFAULT_WAIT_SECONDS,
) -> duckdb.DuckDBPyConnection:
    """Open the store, creating it (and its schema) when writing to a new file.

    Parameters
    ----------
    path : path-like, optional
        The DuckDB file; ``":memory:"`` for a throw-away store. Defaults to
        :func:`default_path`.
    read_only : bool, default=False
        Open without taking the write lock, so several readers can share the
        file while nothing writes. A missing file is an error in this mode.
    wait : float, default=5.0
        Seconds to keep retrying while another process holds the file (one
        writer, or readers when opening for writing); 0 fails at once.

    Returns
    -------
    duckdb.DuckDBPyConnection

    Raises
    ------
    StoreBusyError
        Another process still holds the file after ``wait`` seconds (or this
        process holds it open in the other mode).
    StoreError
        The file is missing (read-only), is not a DuckDB file, or has a schema
        this version of calibrate cannot read.
    """
    target = str(path) if path is not None else str(default_path())
    if target != ":memory:":
        p = Path(target)
        if read_only and not p.exists():
            raise StoreError(f"no store at {target}: run `calibrate ingest` first")
        if p.exists() and p.is_dir():
            raise StoreError(f"{target} is a directory, not a DuckDB file")
        if p.is_file() and not _is_duckdb_file(p):
            # Checked before DuckDB opens it: DuckDB would attach a SQLite file (and fetch
            # an extension to do so) and then call it a DuckDB file that is not a store.
            raise StoreError(f"{target} is not a DuckDB file: give --db a calibrate store")
        if not read_only and not p.parent.exists():
            raise StoreError(f"cannot create {target}: folder {p.parent} does not exist")
    con = _open(target, read_only=read_only, wait=wait)
    try:
        # Times are stored and compared in UTC whatever the machine's zone.
        con.execute("SET TimeZone = 'UTC'")
        _prepare(con, read_only=read_only, target=target)
    except Exception:
        con.close()
        raise
    return con


def require_writable(con: duckdb.DuckDBPyConnection, what: str) -> None:
    """Refuse a connection opened read-only before ``what`` tries to store anything.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        An open store.
    what : str
        What would be stored, for the message ("an audit draw").

    Raises
    ------
    StoreError
        The store is open read-only, saying to open it for writing (DuckDB's own
        message named the first statement refused, a ``SELECT``).
    """
    row = con.execute(
        "SELECT readonly, coalesce(path, database_name) FROM duckdb_databases() "
        "WHERE database_name = current_database()"
    ).fetchone()
    if row is not None and row[0]:
        raise StoreError(
            f"{row[1]} is open read-only and {what} is stored: open the store for writing "
            "(calibrate.connect(path), without read_only=True); nothing was stored"
        )


#: Where a DuckDB database file says what it is: bytes 8 to 12 of its header.
DUCKDB_MAGIC = (8, b"DUCK")


def _is_duckdb_file(path: Path) -> bool:
    offset, magic = DUCKDB_MAGIC
    try:
        with open(path, "rb") as fh:
            head = fh.read(offset + len(magic))
    except OSError:
        return True  # let DuckDB say why it cannot open it
    return head[offset:] == magic


def _open(target: str, *, read_only: bool, wait: float) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect`` with a bounded wait for the file lock.

    DuckDB lets one process write or several read a file; the lock is an OS
    file lock, so it is released even when the holder is killed.
    """
    deadline = time.monotonic() + max(0.0, wait)
    pause = 0.05
    while True:
        try:
            return duckdb.connect(target, read_only=read_only)
        except duckdb.IOException as exc:
            message = str(exc)
            if "lock" not in message.lower():
                raise StoreError(f"cannot open store {target}: {message.splitlines()[0]}") from exc
            if time.monotonic() >= deadline:
                holder = re.search(r"\(PID (\d+)\)", message)
                who = f" (PID {holder.group(1)})" if holder else ""
                waited = f" after waiting {wait:g} s" if wait > 0 else ""
                raise StoreBusyError(
                    f"store {target} is in use by another process{who}{waited}; wait for it to finish and retry"
                ) from None
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, 0.5)
        except duckdb.ConnectionException as exc:
            if "different configuration" in str(exc):
                mode = "read-only" if not read_only else "for writing"
                raise StoreBusyError(
                    f"store {target} is already open {mode} in this process; close that connection first"
                ) from None
            raise StoreError(f"cannot open store {target}: {str(exc).splitlines()[0]}") from exc
        except duckdb.Error as exc:
            raise StoreError(f"cannot open store {target}: {str(exc).splitlines()[0]}") from exc


def _prepare(con: duckdb.DuckDBPyConnection, *, read_only: bool, target: str) -> None:
    has_meta = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta'"
    ).fetchone()[0]
    if not has_meta:
        n_tables = con.execute("SELECT count(*) FROM information_schema.tables").fetchone()[0]
        if n_tables:
            raise StoreError(f"{target} is a DuckDB file but not a calibrate store")
        if read_only:
            raise StoreError(f"{target} is empty: run `calibrate ingest` first")
        con.execute(_sql("schema.sql"))
        con.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
    version = int(con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{target} has schema version {version}, newer than this calibrate "
            f"understands ({SCHEMA_VERSION}); upgrade calibrate"
        )
    if version < SCHEMA_VERSION:
        if read_only:
            raise StoreError(
                f"{target} has schema version {version}; open it once for writing "
                f"(e.g. `calibrate ingest` with no new files) to migrate it to {SCHEMA_VERSION}"
            )
        _migrate(con, version)
    con.execute(_views(read_only=read_only))


def _views(*, read_only: bool) -> str:
    # The views always match the code. A read-only connection cannot replace the stored ones,
    # so it creates them as temporary views and macros, which shadow the stored ones for that
    # connection (a store written by an older calibrate of the same schema then reads as this
    # one does). Dropping views retired from the store is left to a writer.
    text = _sql("views.sql")
    if not read_only:
        return text
    text = re.sub(r"^DROP VIEW[^;]*;", "", text, flags=re.MULTILINE)
    return re.sub(
        r"^CREATE OR REPLACE (VIEW|MACRO)", r"CREATE OR REPLACE TEMP \1", text, flags=re.MULTILINE
    )


def _migrate(con: duckdb.DuckDBPyConnection, version: int) -> None:
    # Each step moves the schema one version forward inside one transaction. Versions 2 to 4
    # only added tables, and schema.sql creates only what is missing, so it is their migration.
    # (A store migrated to 4 holds older process versions only once their files are ingested
    # again; until then a check is judged against the newest version, as before.)
    migrations: dict[int, str] = {v: _sql("schema.sql") for v in (1, 2, 3)}
    while version < SCHEMA_VERSION:
        step = migrations.get(version)
        if step is None:
            raise StoreError(
                f"no migration from schema version {version}; re-ingest into a new store"
            )
        con.execute("BEGIN")
        con.execute(step)
        version += 1
        con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(version)])
        con.execute("COMMIT")


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    """The schema version recorded in an open store."""
    return int(con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
