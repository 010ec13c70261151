"""Stage table-shaped exports (CSV, Parquet) as one JSON record per row.

CSV is parsed with Python's :mod:`csv` module in strict mode, not DuckDB's
``read_csv``: DuckDB's dialect sniffer gives up on a file with one ragged row
(and then reads every row as one column), and after an unterminated quote it
can drop the rest of the file without a reject. Python's reader is driven by
``list()`` in C, so the fast path has no Python loop per row; ragged, blank and
badly encoded rows are found with vectorised NumPy operations. Only a file
with a quoting error takes a slower path that re-reads it row by row, so that
one stray quote quarantines its own row rather than the file.

Every parsed row becomes a record in ``stage_lines`` (a JSON object keyed by
the header) or a quarantined record in ``pre_bad``; nothing is dropped.

What spreadsheet and shell exports vary in is read from the file, not guessed
from its body: a UTF-16 byte order mark (Windows PowerShell 5 redirection), a
``;``, tab or ``|`` delimiter (told from the header line alone) and the case of
the header's names (``RUN`` is ``run``).
"""

from __future__ import annotations

import csv
import io
import itertools
import re
from pathlib import Path

import duckdb
import numpy as np

from calibrate.ingest import statements

RAW_PREVIEW = 2000
#: The columns of a decision table (docs/formats.md); a CSV with only these loads its good rows directly.
DECISION_COLUMNS = ("run", "process", "step", "attempt", "decision", "by", "at", "note")
#: The top-level record fields the record pipeline reads (ingest_records.sql, step "fields"):
#: a header name that is one of these in another case or with blanks around is made this name.
KNOWN_COLUMNS = frozenset((*DECISION_COLUMNS, "version", "check", "steps", "handoff"))
#: A row is a record only with one of these (a decision, a verdict line, a run document).
KIND_COLUMNS = ("decision", "check", "steps")
#: Tried in this order when the header read with commas is one field (docs/formats.md).
OTHER_DELIMITERS = (";", "\t", "|")
#: Byte order marks of UTF-16 (little-, big-endian); Python's "utf-16" codec reads either.
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
#: Why a file whose text is UTF-16 without a byte order mark is refused whole: its NUL bytes do
#: not show in a terminal or an editor, so the names it holds would seem right and be wrong.
UTF16_NO_BOM_REASON = (
    "file looks like UTF-16 without a byte order mark (every other byte is a NUL byte); "
    "calibrate reads UTF-8 (and a CSV also UTF-16 with a byte order mark): save it as UTF-8"
)
#: Why a CSV whose header holds a NUL byte (other than in the UTF-16 pattern) is refused whole.
NUL_HEADER_REASON = (
    "the CSV header holds NUL bytes (0x00), which do not show on screen: "
    "is the file UTF-16 without a byte order mark? save it as UTF-8"
)


def utf16_without_bom(head: bytes) -> str | None:
    """The codec of text that is UTF-16 without a byte order mark, from its first bytes; else None.

    Text files start with ASCII (a CSV header, ``{``, a YAML key): in UTF-16
    that is a NUL byte beside each of the first characters, which UTF-8 text
    never has.
    """
    pairs = head[: min(len(head), 8) // 2 * 2]
    if len(pairs) < 4 or head[:2] in UTF16_BOMS:
        return None
    even, odd = pairs[0::2], pairs[1::2]
    if not any(odd) and all(0 < b < 0x80 for b in even):
        return "utf-16-le"
    if not any(even) and all(0 < b < 0x80 for b in odd):
        return "utf-16-be"
    return None


#: Surrogate escapes stand for bytes that were not valid UTF-8.
_UNDECODABLE = re.compile("[\udc80-\udcff]")


class Unreadable(Exception):
    """The file as a whole cannot be read; it is quarantined as one record."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def stage_csv(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    *,
    max_line_bytes: int,
    direct_decisions: bool = True,
) -> None:
    """Load a CSV file's rows into ``stage_lines``; unusable rows go to ``pre_bad``.

    Records are numbered as a spreadsheet numbers its rows (``row N``, the
    header row counted), since a quoted newline makes CSV rows and file lines
    differ. A row whose cells are all blank is no record (as a blank line). In a decision table
    (only the columns of :data:`DECISION_COLUMNS`), with ``direct_decisions``,
    the rows that pass every rule of the record pipeline go straight to the
    ``c_decisions`` candidates (as that pipeline would load them); only the
    others are staged.

    The text is UTF-8, or UTF-16 after a UTF-16 byte order mark; the delimiter
    is told from the header line (:func:`_delimiter`) and known header names
    match in any case. A header naming none of :data:`KIND_COLUMNS` quarantines
    every row with one reason that lists the names found.

    Raises
    ------
    Unreadable
        The header cannot be parsed or names a column twice, or the file starts
        with a UTF-16 byte order mark but is not valid UTF-16.
    """
    data = path.read_bytes()
    if utf16_without_bom(data[:8]):
        raise Unreadable(UTF16_NO_BOM_REASON)
    if direct_decisions and _stage_decision_table_directly(con, path, data, max_line_bytes):
        return
    undecodable = False
    if data[:2] in UTF16_BOMS:
        try:
            text = data.decode("utf-16")  # the BOM tells the byte order and is dropped
        except UnicodeDecodeError as exc:
            raise Unreadable(
                f"file starts with a UTF-16 byte order mark but is not valid UTF-16: "
                f"{exc.reason} at byte {exc.start}"
            ) from None
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            # Keep going: the bad bytes become surrogates and only their rows are quarantined.
            text = data.decode("utf-8-sig", "surrogateescape")
            undecodable = True
    delimiter = _delimiter(text)
    rows, numbers, errors = _read_rows(text, max_line_bytes, delimiter)
    # The header is the first row with any text (blank lines before it are not records).
    h = next((i for i, r in enumerate(rows) if any(cell.strip() for cell in r)), None)
    if h is None or any(n < numbers[h] for n, _, _ in errors):
        if errors:
            raise Unreadable(f"the CSV header cannot be parsed: {errors[0][2]}")
        return
    names = _column_names(rows[h])
    if any("\x00" in n for n in names):
        raise Unreadable(NUL_HEADER_REASON)
    if undecodable and any(_UNDECODABLE.search(n) for n in names):
        raise Unreadable("the CSV header is not valid UTF-8")
    # Rows are numbered as a spreadsheet shows them (the first row is 1, the header's or a
    # blank one's before it; a quoted newline stays in its row), so "row 21" is row 21 there.
    bad: list[tuple[int, str, str]] = [(int(n + 1), raw, reason) for n, raw, reason in errors]
    rows, numbers = rows[h + 1 :], numbers[h + 1 :] + 1
    if not rows:
        _insert_bad(con, bad)
        return
    if not set(KIND_COLUMNS) & set(names):
        # No row can be a record: say so once, in every row's reason, rather than one
        # "neither a run document ... nor a decision" per row.
        _quarantine_rows(con, bad, rows, numbers, _no_kind_reason(names), delimiter)
        return

    # Rows have different lengths, so work on all cells in one flat array with per-row
    # offsets: every test below is one vectorised pass (or a map of a C function), not a
    # Python loop per row.
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    flat = np.empty(int(lengths.sum()), dtype=object)
    flat[:] = list(itertools.chain.from_iterable(rows))
    stops = np.cumsum(lengths)
    starts = stops - lengths

    def per_row(cell_flags: np.ndarray) -> np.ndarray:
        total = np.concatenate(([0], np.cumsum(cell_flags, dtype=np.int64)))
        return total[stops] - total[starts]

    # A row is blank when all its cells are blank: when its cells joined are blank.
    blank = ~np.fromiter(map(bool, map(str.strip, map("".join, rows))), dtype=bool, count=len(rows))
    ragged = ~blank & (lengths != len(names))
    broken = np.zeros(len(rows), dtype=bool)
    if undecodable:
        has_bad = np.fromiter(
            map(bool, map(_UNDECODABLE.search, flat)), dtype=bool, count=len(flat)
        )
        broken = ~blank & (per_row(has_bad) > 0)
    for i in np.flatnonzero(ragged & ~broken):
        bad.append((int(numbers[i]), _csv_line(rows[i], delimiter),
                    f"row has {lengths[i]} fields but the header names {len(names)} columns"))  # fmt: skip
    for i in np.flatnonzero(broken):
        bad.append((int(numbers[i]), _preview(rows[i], delimiter), "row is not valid UTF-8"))
    _insert_bad(con, bad)

    good = ~(blank | ragged | broken)
    if not good.any():
        return
    cells = flat[np.repeat(good, lengths)].reshape(-1, len(names))
    cells[cells == ""] = None  # an empty cell is a missing value, as in DuckDB's CSV reader
    _stage_cells(con, names, cells, numbers[good], direct_decisions=direct_decisions)


#: Beyond Python's ``str.strip`` whitespace that RE2's ``\\s`` does not know; a row of only these is blank.
_BLANK_CELLS = r"[\s\x0b\x1c-\x1f\x85\p{Z}]*"


def _stage_decision_table_directly(
    con: duckdb.DuckDBPyConnection, path: Path, data: bytes, max_line_bytes: int
) -> bool:
    """Read a plain decision table with DuckDB's reader instead of Python's; False: not taken.

    Taken only where both readers must give the same rows: UTF-8 without a byte
    order mark, no quote, and a carriage return only before every newline (so a
    row is a line and a cell is the text between delimiters), a header on the first line naming
    only :data:`DECISION_COLUMNS` (``decision`` among them), no line longer than
    ``max_line_bytes``, and every line after the header a row of as many cells
    as the header names, not all blank. Anything else (a ragged, blank or
    undecodable row) leaves the file to the Python reader, which says why.
    """
    if data[:3] == b"\xef\xbb\xbf" or data[:2] in UTF16_BOMS or b'"' in data:
        return False
    n_cr = data.count(b"\r")
    if n_cr and (n_cr != data.count(b"\r\n") or n_cr < data.count(b"\n")):
        return (
            False  # a carriage return only as every line's end (Python's csv module writes those)
        )
    end = data.find(b"\n")
    if end <= 0:
        return False
    try:
        header = data[:end].decode("utf-8")
        delimiter = _delimiter(header)
        names = _column_names(next(csv.reader([header], delimiter=delimiter)))
    except (UnicodeDecodeError, csv.Error, Unreadable):
        return False
    if not set(names) <= set(DECISION_COLUMNS) or "decision" not in names:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    # Every line after the header has as many cells as the header (no quotes: one per delimiter).
    body = np.frombuffer(data, dtype=np.uint8)[end + 1 :]
    if len(body) and body[-1] != 10:
        body = np.concatenate((body, [10]))
    ends = np.flatnonzero(body == 10)
    n_rows = len(ends)
    if n_rows == 0:
        return False
    cuts = np.searchsorted(np.flatnonzero(body == ord(delimiter)), ends)
    if np.any(np.diff(cuts, prepend=0) != len(names) - 1):
        return False
    if max(end, int(np.diff(ends, prepend=-1).max()) - 1) > max_line_bytes:
        return False
    columns = [f"c{i}" for i in range(len(names))]
    spec = "{" + ", ".join(f"{c}: 'VARCHAR'" for c in columns) + "}"
    cells = ", ".join(columns)
    try:
        # Rows in file order, so row_number() + 1 is the row's line (the header is line 1).
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE csv_direct AS
                SELECT row_number() OVER () + 1 AS rec, * FROM read_csv(?, delim = ?, header = true,
                    auto_detect = false, strict_mode = true, columns = {spec})""",  # noqa: S608 - c0, c1, ...
            [str(path), delimiter],
        )
        blank_or_missing = con.execute(
            f"""SELECT count(*) <> ? OR coalesce(bool_or(regexp_full_match(concat({cells}), ?)), false)
                FROM csv_direct""",  # noqa: S608 - c0, c1, ...
            [n_rows, _BLANK_CELLS],
        ).fetchone()[0]
    except duckdb.Error:
        blank_or_missing = True
    if blank_or_missing:
        con.execute("DROP TABLE IF EXISTS csv_direct")
        return False
    con.execute(f"CREATE OR REPLACE TEMP VIEW csv_rows AS SELECT rec, {cells} FROM csv_direct")  # noqa: S608
    try:
        _stage_rows(con, names, direct_decisions=True)
    finally:
        con.execute("DROP VIEW IF EXISTS csv_rows; DROP TABLE IF EXISTS csv_direct")
    return True


def _stage_cells(
    con: duckdb.DuckDBPyConnection,
    names: list[str],
    cells: np.ndarray,
    recs: np.ndarray,
    *,
    direct_decisions: bool,
) -> None:
    """Stage well-formed rows as JSON objects keyed by the header; a decision table's good rows load directly.

    The cells reach DuckDB as NumPy arrays (columns ``c0``, ``c1``, ..., each
    read as text whatever values it holds), and the header's names as bound
    keys of ``json_object``: nothing from the file is SQL text.
    """
    columns = [f"c{i}" for i in range(len(names))]
    # DuckDB scans a dict of NumPy arrays in place (an Arrow table would cost pyarrow's and
    # pandas' imports, about a second); an object column of only empty cells has type NULL.
    arrays = {"rec": np.asarray(recs, dtype=np.int64)} | {
        c: np.ascontiguousarray(cells[:, i]) for i, c in enumerate(columns)
    }
    con.register("csv_arrays", arrays)
    as_text = ", ".join(f"{c}::VARCHAR AS {c}" for c in columns)
    con.execute(f"CREATE OR REPLACE TEMP VIEW csv_rows AS SELECT rec, {as_text} FROM csv_arrays")  # noqa: S608 - c0, c1, ...
    try:
        _stage_rows(con, names, direct_decisions=direct_decisions)
    finally:
        con.execute("DROP VIEW IF EXISTS csv_rows")
        con.unregister("csv_arrays")


def _stage_rows(
    con: duckdb.DuckDBPyConnection, names: list[str], *, direct_decisions: bool
) -> None:
    """Stage the rows of the view ``csv_rows(rec, c0, c1, ...)``: a decision table's good rows directly."""
    columns = [f"c{i}" for i in range(len(names))]
    if direct_decisions and set(names) <= set(DECISION_COLUMNS) and "decision" in names:
        # A decision table: rows that pass every rule load directly; only the others are staged.
        position = {name: f"c{i}" for i, name in enumerate(names)}
        picked = ", ".join(
            f'{position[c]} AS "{c}"' if c in position else f'NULL::VARCHAR AS "{c}"'
            for c in DECISION_COLUMNS
        )
        con.execute(
            f"CREATE OR REPLACE TEMP VIEW csv_cells AS SELECT rec, {picked} FROM csv_rows"  # noqa: S608 - our own names
        )
        con.execute(statements.load("ingest_typed.sql")["csv_decisions"])
        con.execute("DROP VIEW csv_cells")
    pairs = ", ".join(f"?, {c}" for c in columns)
    con.execute(
        f"""INSERT INTO stage_lines
            SELECT rec, NULL, 'row ' || rec, json_object({pairs})::VARCHAR
            FROM csv_rows ANTI JOIN c_decisions d USING (rec)""",  # noqa: S608 - c0, c1, ...; keys are bound
        list(names),
    )


def _delimiter(text: str) -> str:
    """The delimiter the header line uses: ``,`` unless the header shows another.

    Only the first non-blank line is looked at (a body can hold anything, which
    is why :class:`csv.Sniffer` is not used): read with commas it must be one
    field, and split on ``;``, tab or ``|`` (the first that works) it must give
    at least two names of which one is a :data:`KNOWN_COLUMNS` name. Otherwise
    a one-column CSV whose name holds a ``;`` would be split.
    """
    start = 0
    while True:
        end = text.find("\n", start)
        line = text[start:] if end < 0 else text[start:end]
        if line.strip() or end < 0:
            break
        start = end + 1
    try:
        if len(next(csv.reader([line]), [])) != 1:
            return ","
        for delimiter in OTHER_DELIMITERS:
            names = next(csv.reader([line], delimiter=delimiter), [])
            if len(names) >= 2 and any(n.strip().lower() in KNOWN_COLUMNS for n in names):
                return delimiter
    except csv.Error:
        pass  # a header the reader cannot parse: the comma reader reports it
    return ","


def _read_rows(
    text: str, max_line_bytes: int, delimiter: str = ","
) -> tuple[list[list[str]], np.ndarray, list[tuple[int, str, str]]]:
    """Parse CSV text: rows, their record numbers (header = 0) and quarantined rows."""
    previous = csv.field_size_limit()
    csv.field_size_limit(max(int(max_line_bytes), 1024))
    try:
        try:
            reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
            rows = list(reader)
            return rows, np.arange(len(rows), dtype=np.int64), []
        except csv.Error:
            return _read_rows_slowly(text, max_line_bytes, delimiter)
    finally:
        csv.field_size_limit(previous)


def _read_rows_slowly(
    text: str, max_line_bytes: int, delimiter: str = ","
) -> tuple[list[list[str]], np.ndarray, list[tuple[int, str, str]]]:
    """Row by row, for a file with a quoting error: the bad row is quarantined, the rest read."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line does not start another
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows: list[list[str]] = []
    numbers: list[int] = []
    errors: list[tuple[int, str, str]] = []
    number = 0  # every row the reader yields, or fails on, takes one number
    while True:
        start = reader.line_num  # lines consumed before this row
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            message = str(exc)
            stop = "end of data" in message or "field larger" in message
            end = len(lines) if stop else max(reader.line_num, start + 1)
            raw = "\n".join(lines[start:end])
            if len(raw) > RAW_PREVIEW:
                raw = raw[:RAW_PREVIEW] + " …[cut]"
            if "field larger" in message:
                reason = f"a field is longer than --max-line-bytes ({max_line_bytes} bytes)"
            elif "end of data" in message:
                reason = "a quoted field is never closed"
            else:
                reason = f"malformed CSV row: {message}"
            if stop and end > start + 1:
                reason += f"; lines {start + 1}-{end} (the rest of the file) were not read as rows"
            else:
                reason += f" (line {start + 1})"
            errors.append((number, raw, reason))
            number += 1
            if stop:
                break
            continue
        rows.append(row)
        numbers.append(number)
        number += 1
    return rows, np.asarray(numbers, dtype=np.int64), errors


def _column_names(header: list[str]) -> list[str]:
    """The header's names, trimmed; a known name in any case becomes its lower-case form."""
    names = [h.strip() or f"column{i + 1}" for i, h in enumerate(header)]
    # The record pipeline looks keys up case-sensitively: "RUN" must reach it as "run".
    names = [n.lower() if n.lower() in KNOWN_COLUMNS else n for n in names]
    seen: dict[str, str] = {}
    for n in names:
        key = n.lower()  # DuckDB column names are case-insensitive
        if key in seen:
            raise Unreadable(f"the CSV header names the column {n!r} twice")
        seen[key] = n
    return names


def _no_kind_reason(names: list[str], shown: int = 10) -> str:
    """Why no row of a CSV whose header names no kind column can be a record."""
    found = ", ".join(f'"{n[:40]}"' for n in names[:shown])
    if len(names) > shown:
        found += f", … ({len(names)} columns)"
    return (
        f"CSV header names none of {', '.join(KIND_COLUMNS)}: a decision table needs "
        f"run, step, attempt and decision (found: {found})"
    )


def _quarantine_rows(
    con: duckdb.DuckDBPyConnection,
    bad: list[tuple[int, str, str]],
    rows: list[list[str]],
    numbers: np.ndarray,
    reason: str,
    delimiter: str,
) -> None:
    """Quarantine every non-blank row with one reason (besides the rows already in ``bad``)."""
    for row, n in zip(rows, numbers, strict=True):
        if any(cell.strip() for cell in row):
            bad.append((int(n), _preview(row, delimiter), reason))
    _insert_bad(con, bad)


def _csv_line(row: list[str], delimiter: str = ",") -> str:
    buf = io.StringIO()
    csv.writer(buf, delimiter=delimiter, lineterminator="").writerow(row)
    out = buf.getvalue()
    return out if len(out) <= RAW_PREVIEW else out[:RAW_PREVIEW] + " …[cut]"


def _preview(row: list[str], delimiter: str) -> str:
    """A row as CSV text, bytes that were not UTF-8 shown as U+FFFD."""
    return _csv_line(row, delimiter).encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _insert_bad(con: duckdb.DuckDBPyConnection, bad: list[tuple[int, str, str]]) -> None:
    """Stage quarantined rows ``(record number, raw text, reason)`` in one insert."""
    if not bad:
        return
    recs, raws, reasons = zip(*bad, strict=True)
    # Text cut from a file with bytes that are not UTF-8 holds surrogate escapes, which
    # DuckDB refuses: show those bytes as U+FFFD (bad rows only, so few).
    raws = [raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for raw in raws]
    # Scanned as NumPy arrays (a file of bad rows is one insert, not one statement per row).
    con.register(
        "csv_bad",
        {
            "rec": np.asarray(recs, dtype=np.int64),
            "raw": np.asarray(raws, dtype=object),
            "reason": np.asarray(reasons, dtype=object),
        },
    )
    try:
        con.execute(
            """INSERT INTO pre_bad
               SELECT rec, NULL, 'row ' || rec, raw::VARCHAR, reason::VARCHAR FROM csv_bad"""
        )
    finally:
        con.unregister("csv_bad")


#: A row as a JSON object whose every value is null or blank text.
BLANK_ROW_JSON = r'\{("(?:[^"\\]|\\.)*":(?:null|"(?:\s|\\[tnr])*"),?)*\}'


def stage_parquet(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Load a Parquet file's rows into ``stage_lines``; a ``check`` text column is read as JSON.

    Raises
    ------
    Unreadable
        The file is not a Parquet file DuckDB can read.
    """
    try:
        columns = con.execute(
            "SELECT name, type FROM parquet_schema(?) WHERE name IN ('check')", [str(path)]
        ).fetchall()
        if columns and columns[0][1] in ("BYTE_ARRAY",):
            relation = (
                'SELECT * REPLACE (try_cast("check" AS JSON) AS "check") FROM read_parquet(?)'
            )
        else:
            relation = "SELECT * FROM read_parquet(?)"
        # A row of only nulls and blank text is no record, as a blank CSV row or line: it keeps
        # its number (row N is the file's Nth row) but is not staged.
        con.execute(
            f"""INSERT INTO stage_lines
                SELECT * FROM (
                    SELECT row_number() OVER () AS rec, NULL, 'row ' || row_number() OVER (),
                           to_json(t)::VARCHAR AS line
                    FROM ({relation}) t)
                WHERE NOT regexp_full_match(line, ?)""",  # noqa: S608 - relation is one of two fixed templates; the path is bound
            [str(path), BLANK_ROW_JSON],
        )
    except duckdb.Error as exc:
        raise Unreadable(f"not a readable Parquet file: {str(exc).splitlines()[0]}") from None
