"""Read the labeled view out of the store, with the filters every command shares.

Everything downstream of ingest reads through this module: the analysis
functions receive plain DataFrames and never touch SQL or files.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime

import duckdb
import numpy as np
import pandas as pd

from calibrate.arguments import argument_name
from calibrate.errors import UsageError
from calibrate.profile import Kind, Limits, Question

#: Columns of :func:`submissions` (one row per recorded check).
SUBMISSION_COLUMNS = [
    "check_id", "run_id", "process", "version", "step", "attempt", "verdict", "advisory",
    "model", "at", "recorded_in", "truncated", "n_questions", "is_latest", "decision",
    "decided_by", "decided_at", "note", "label", "conflict", "n_decisions", "audited", "draw_id",
    "inclusion_p", "left_out",
]  # fmt: skip


def parse_when(value: object, name: str = "time") -> datetime | None:
    """A filter time: a ``datetime``, a ``date`` or ISO 8601 text; one without an offset is UTC.

    Raises
    ------
    ValueError
        Any other value, naming the accepted forms.
    """
    if value is None:
        return None
    parsed = value
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            parsed = None
    elif isinstance(value, date) and not isinstance(value, datetime):
        parsed = datetime(value.year, value.month, value.day)
    if not isinstance(parsed, datetime):
        raise ValueError(
            f"{name} {value!r} is not a time: give a datetime, a date or ISO 8601 text "
            "('2026-10-01' or '2026-10-01T09:00:00Z'; without an offset it is UTC)"
        )
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def check_window(since: datetime | None, until: datetime | None, *, cli: bool = False) -> None:
    """Refuse a ``since`` later than ``until``: a window that cannot hold a check is a mistake.

    A window that holds no check is not: it is an empty result. The message names the Python
    arguments (``since``), or the options (``--since``) with ``cli``.

    Raises
    ------
    UsageError
        A ``ValueError`` naming both times.
    """
    if since is not None and until is not None and since > until:
        raise UsageError(
            f"{argument_name('since', cli=cli)} {since.isoformat()} is later than "
            f"{argument_name('until', cli=cli)} {until.isoformat()}: the window holds nothing "
            "(checks at or after the one and before the other)"
        )


@dataclass(frozen=True)
class Filters:
    """Which checks to look at.

    Parameters
    ----------
    process, step, model : str, optional
        Keep only this process, checked step, evaluator model.
    since, until : datetime, date or str, optional
        Keep checks whose ``at`` is at or after ``since`` and before ``until``.
        A ``date`` or ISO 8601 text (``"2026-10-01"``, ``"2026-10-01T09:00:00Z"``)
        is read as a time; one without an offset is UTC (:func:`parse_when`).
        Stored as an aware ``datetime``.
    advisory_only : bool, default=False
        Keep only checks recorded with ``advisory: true``.
    escalations : bool, default=False
        Keep the decisions a person made after the switch (``advisory:
        false``) on checks no audit draw offered: escalations, the unsure
        region the check itself selected. By default their decisions are
        left out, so that every label-based figure learns from checks decided
        under ``advisory: true`` plus audit decisions (:func:`left_out_count`
        counts them); the checks themselves stay, unlabeled, so that rates
        over all checks (unsure, error, coverage, counts of checks) still
        count them.

    Raises
    ------
    ValueError
        ``since`` or ``until`` that is no time (naming the accepted forms),
        ``since`` later than ``until``, or a name that is not a string. A name
        the store lacks is refused where the filters are read
        (:func:`submissions`, ...), naming the names it has.
    """

    process: str | None = None
    step: str | None = None
    model: str | None = None
    # Text or a date is accepted and stored as an aware datetime (__post_init__).
    since: datetime | date | str | None = None
    until: datetime | date | str | None = None
    advisory_only: bool = False
    escalations: bool = False

    def __post_init__(self) -> None:
        # Validated here, so that a bad value is one clear error and not DuckDB's SQL text.
        for name in ("since", "until"):
            object.__setattr__(self, name, parse_when(getattr(self, name), name))
        check_window(self.since, self.until)
        for name in ("process", "step", "model"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"Filters({name}=...) must be a string, got {value!r}")

    def where(self) -> tuple[str, list[object]]:
        """A SQL ``WHERE`` clause over the labeled views and its bound parameters."""
        clauses: list[str] = ["TRUE"]
        params: list[object] = []
        for column, value in (
            ("process", self.process),
            ("step", self.step),
            ("model", self.model),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if self.since is not None:
            clauses.append('"at" >= ?')
            params.append(self.since)
        if self.until is not None:
            clauses.append('"at" < ?')
            params.append(self.until)
        if self.advisory_only:
            clauses.append("advisory")
        return " AND ".join(clauses), params

    def source(self, view: str) -> str:
        """The ``FROM`` source of ``view`` (``labeled`` or ``labeled_answers``) under these filters.

        Without ``escalations`` the decision of a left-out check reads as no
        decision (:data:`UNDECIDED`): the check is kept, unlabeled. Filter
        with :meth:`where` on this source, not on the view, so that
        ``label IS NOT NULL`` means a label the filters keep.
        """
        if view not in _VIEW_DECISION_COLUMNS:
            raise ValueError(
                f"unknown view {view!r}: choose from {', '.join(_VIEW_DECISION_COLUMNS)}"
            )
        if self.escalations:
            return view
        masks = ", ".join(
            f"CASE WHEN left_out THEN {UNDECIDED[c]} ELSE {c} END AS {c}"
            for c in _VIEW_DECISION_COLUMNS[view]
        )
        return f"(SELECT * REPLACE ({masks}) FROM {view})"  # noqa: S608 - fixed names


#: How a person's decision reads on a check whose decision the filters leave out (an
#: escalation after the switch): as on a check nobody decided. Only the label-based figures
#: drop it; the check still counts wherever all checks do (unsure rate, coverage).
UNDECIDED = {
    "decision": "NULL", "decided_by": "NULL", "decided_at": "NULL", "note": "NULL",
    "label": "NULL", "conflict": "false", "n_decisions": "0",
}  # fmt: skip
#: The decision columns each labeled view carries.
_VIEW_DECISION_COLUMNS = {
    "labeled": ("decision", "decided_by", "decided_at", "note", "label", "conflict", "n_decisions"),
    "labeled_answers": ("decision", "decided_by", "decided_at", "label", "conflict"),
}


def submissions(
    con: duckdb.DuckDBPyConnection, filters: Filters | None = None, *, labeled_only: bool = False
) -> pd.DataFrame:
    """One row per recorded check with the person's decision and label.

    ``label`` is ``True`` (acceptable), ``False`` (not acceptable) or missing
    (no decision, an earlier check of the same attempt that no person saw, or
    a decision the filters leave out: ``left_out``).

    Raises
    ------
    UsageError
        A ``ValueError``: a process, step or model the store lacks, naming those it has
        (a window with no checks is an empty frame).
    """
    filters = filters or Filters()
    require_known_names(con, filters)
    where, params = filters.where()
    if labeled_only:
        where += " AND label IS NOT NULL"
    sql = f'SELECT * FROM {filters.source("labeled")} WHERE {where} ORDER BY "at", check_id'  # noqa: S608 - clause is built from fixed column names
    return con.execute(sql, params).df()


def answers(
    con: duckdb.DuckDBPyConnection, filters: Filters | None = None, *, labeled_only: bool = False
) -> pd.DataFrame:
    """One row per answered question, with its check's label and today's thresholds.

    Threshold columns (``pass_p``, ``fail_p``, ``pass_names``, ``unsure_names``,
    ``pass_level``, ``min_confidence``) come from the newest ingested version
    of the process file and the limits (a check recorded under an older
    version had that version's: the ``question_version_thresholds`` view holds
    them); they are missing for a question no process file names.
    The decision columns read as in :func:`submissions`, and so do unknown names (raises).
    """
    filters = filters or Filters()
    require_known_names(con, filters)
    where, params = filters.where()
    if labeled_only:
        where += " AND label IS NOT NULL"
    sql = f'SELECT * FROM {filters.source("labeled_answers")} WHERE {where} ORDER BY "at", check_id, position'  # noqa: S608
    return con.execute(sql, params).df()


@contextmanager
def labels_snapshot(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Within the block, every view reads one snapshot of ``check_labels`` on ``con``.

    ``check_labels`` (each decision matched to its check, then folded per
    check) is the costly part of the ``labeled`` views: at a million runs it
    takes 1.6 CPU s each time a query reads them, which a report does about
    ten times. The snapshot is a temporary table behind a temporary view of
    the same name, which DuckDB's search path puts before the store's view,
    so the other views' text is unchanged. Use it only on a connection nothing writes to meanwhile (a
    command's read-only one): the snapshot would not see a new decision.
    """
    # A read-only connection holds today's views as temporary ones (calibrate.store): the
    # snapshot is taken from them and stands in for check_labels until the block ends.
    row = con.execute(
        "SELECT sql FROM duckdb_views() WHERE temporary AND view_name = 'check_labels'"
    ).fetchone()
    con.execute("CREATE TEMP TABLE check_labels_snapshot AS SELECT * FROM check_labels")
    if row is not None:
        con.execute("DROP VIEW temp.main.check_labels")
    con.execute("CREATE TEMP VIEW check_labels AS SELECT * FROM temp.main.check_labels_snapshot")
    try:
        yield
    finally:
        con.execute("DROP VIEW IF EXISTS temp.main.check_labels")
        con.execute("DROP TABLE IF EXISTS temp.main.check_labels_snapshot")
        if row is not None:
            con.execute(row[0])


def left_out_count(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> int:
    """Labeled checks that ``filters`` leave out as decided after the switch (no audit drew them).

    Zero when ``filters.escalations`` keeps them; :func:`left_out_counts` splits them.
    """
    return sum(left_out_counts(con, filters).values())


def left_out_counts(
    con: duckdb.DuckDBPyConnection, filters: Filters | None = None
) -> dict[str, int]:
    """The labeled checks ``filters`` leave out after the switch, by what they are.

    Returns
    -------
    dict
        ``escalations``: decided unsure (or error) verdicts, the region the enforced
        check sent to a person; ``undrawn``: decisions on enforced pass or fail checks that no
        audit draw drew (a sample of nothing known). Both zero when ``filters.escalations``
        keeps them.
    """
    filters = filters or Filters()
    if filters.escalations:
        return {"escalations": 0, "undrawn": 0}
    where, params = filters.where()  # the checks stay; their decisions read as none
    sql = f"""SELECT count(*) FILTER (verdict NOT IN ('pass', 'fail')),
                     count(*) FILTER (verdict IN ('pass', 'fail'))
              FROM labeled WHERE {where} AND left_out"""  # noqa: S608 - fixed names
    esc, undrawn = con.execute(sql, params).fetchone()
    return {"escalations": int(esc), "undrawn": int(undrawn)}


def audit_label_count(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> int:
    """Labels ``filters`` keep on checks recorded ``advisory: false``: the audit decisions.

    Without ``filters.escalations`` every other decision after the switch reads as none
    (:meth:`Filters.source`), so these are the decisions on checks an audit draw drew: the
    labels the certification and the calibration curves leave out by default.
    """
    filters = filters or Filters()
    where, params = filters.where()
    sql = f"""SELECT count(*) FROM {filters.source("labeled")}
              WHERE {where} AND label IS NOT NULL AND advisory IS NOT DISTINCT FROM false"""  # noqa: S608 - fixed names
    return int(con.execute(sql, params).fetchone()[0])


def limits(con: duckdb.DuckDBPyConnection) -> Limits:
    """The server defaults in force: the latest ingested limits file, else check-1's."""
    row = con.execute(
        "SELECT check_pass, check_fail, check_confidence FROM current_limits"
    ).fetchone()
    return Limits(check_pass=row[0], check_fail=row[1], check_confidence=row[2])


def process_questions(
    con: duckdb.DuckDBPyConnection, process: str | None = None, step: str | None = None
) -> dict[tuple[str, str], list[Question]]:
    """Questions of each checked step as the ingested process files define them.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        An open store.
    process, step : str, optional
        Only this process, step.

    Returns
    -------
    dict
        ``{(process, step): [Question, ...]}`` in the file's order, with server
        defaults filled in; empty where no ingested process file defines the
        checked steps selected.

    Raises
    ------
    UsageError
        A ``ValueError``: a ``process`` or ``step`` that neither a process file nor a
        recorded check names, naming those the store has (as :class:`Filters`).
    """
    sql = "SELECT * FROM question_thresholds WHERE (? IS NULL OR process = ?) AND (? IS NULL OR step = ?) ORDER BY process, step, position"
    rows = con.execute(sql, [process, process, step, step]).df()
    if rows.empty and (process is not None or step is not None):
        # A misspelt name read as "no process file" (black-box F11); a checked step whose
        # process file was never ingested stays an empty answer.
        require_known_names(con, Filters(process=process, step=step))
    out: dict[tuple[str, str], list[Question]] = {}
    for rec in rows.to_dict("records"):
        out.setdefault((rec["process"], rec["step"]), []).append(question_from_row(rec))
    return out


def step_advisory(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], bool]:
    """Whether each checked step's current process version says ``advisory: true``.

    Returns
    -------
    dict
        ``{(process, step): advisory}`` for the steps an ingested process file
        defines (check-1 §2: without the key a check is enforced, ``False``).
    """
    rows = con.execute(
        "SELECT process, step, bool_or(coalesce(advisory, false)) FROM questions GROUP BY ALL"
    ).fetchall()
    return {(process, step): bool(advisory) for process, step, advisory in rows}


def _none(value: object) -> object:
    if value is None:
        return None
    if isinstance(value, float) and np.isnan(value):
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    return value


def question_from_row(rec: dict) -> Question:
    """Build a :class:`Question` from a row of ``question_thresholds``/``labeled_answers``."""
    kind = Kind(rec["kind"])
    one_of = _none(rec.get("one_of"))
    levels = (
        _none(rec.get("levels")) if not isinstance(rec.get("levels"), np.ndarray) else rec["levels"]
    )
    pass_names = rec.get("pass_names")
    unsure_names = rec.get("unsure_names")
    conf = _none(rec.get("min_confidence"))
    pass_level = _none(rec.get("pass_level"))
    return Question(
        ask=rec["ask"],
        kind=kind,
        pass_p=_none(rec.get("pass_p")),
        fail_p=_none(rec.get("fail_p")),
        pass_names=tuple(pass_names)
        if pass_names is not None and _none(pass_names) is not None
        else (),
        unsure_names=tuple(unsure_names)
        if unsure_names is not None and _none(unsure_names) is not None
        else (),
        pass_level=int(pass_level) if pass_level is not None else None,
        confidence=float(conf) if conf is not None else None,
        one_of=json.loads(one_of) if isinstance(one_of, str) else dict(one_of or {}),
        levels=tuple(levels) if levels is not None else (),
    )


# --------------------------------------------------------------------------- narrow reads
# Every column of the labeled views as pandas objects costs gigabytes at a million runs
# (a Python string per row and cell, a list per row for the thresholds); an analysis
# that reads only its columns, with text as categoricals, needs a fraction of that.

#: Columns of :func:`answers` (one row per answered question).
ANSWER_COLUMNS = [
    "check_id", "run_id", "process", "version", "step", "attempt", "verdict", "advisory",
    "model", "at", "decision", "decided_by", "decided_at", "label", "conflict", "is_latest",
    "audited", "inclusion_p", "left_out",
    "position", "question_id", "ask", "kind", "p", "name", "level", "confidence", "result",
    "in_process_file", "pass_p", "fail_p", "pass_names", "unsure_names", "pass_level",
    "min_confidence", "one_of", "levels",
]  # fmt: skip
_NARROW_VIEWS = {
    "labeled": (SUBMISSION_COLUMNS, '"at", check_id'),
    "labeled_answers": (ANSWER_COLUMNS, '"at", check_id, position'),
}
#: Rows per Arrow batch of :func:`view_columns`: bounds the text held before encoding.
NARROW_BATCH_ROWS = 1 << 18


def view_columns(
    con: duckdb.DuckDBPyConnection,
    view: str,
    columns: list[str] | tuple[str, ...],
    filters: Filters | None = None,
    *,
    labeled_only: bool = False,
    ordered: bool = True,
    text: Sequence[str] = (),
) -> pd.DataFrame:
    """Only ``columns`` of the ``labeled`` or ``labeled_answers`` view, text as categoricals.

    The rows are those of :func:`submissions` (``view="labeled"``) or
    :func:`answers` (``view="labeled_answers"``) with the same filters, in the
    same order unless ``ordered=False`` (cheaper when the caller only
    aggregates).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    view : {"labeled", "labeled_answers"}
    columns : sequence of str
        Column names of the view (:data:`SUBMISSION_COLUMNS` or
        :data:`ANSWER_COLUMNS`); list columns are not supported.
    filters : Filters, optional
    labeled_only : bool, default=False
        Keep only rows with a label.
    ordered : bool, default=True
        Keep the row order of :func:`submissions` / :func:`answers`.
    text : sequence of str, default=()
        Text columns to return as plain text rather than categoricals: an
        identifier nearly every row has its own of (``check_id``) costs more
        as a dictionary than it saves.

    Returns
    -------
    DataFrame
        Text columns are ``category`` with the categories sorted, so that they
        group and sort as the text does; booleans with missing values are
        ``boolean``; integers with missing values are ``float64``.

    Raises
    ------
    ValueError
        An unknown view or column. (A name the store lacks is an empty frame here, where a
        caller reads the steps of a process one by one; the public readers refuse it.)
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if view not in _NARROW_VIEWS:
        raise ValueError(f"unknown view {view!r}: choose from {', '.join(_NARROW_VIEWS)}")
    allowed, order = _NARROW_VIEWS[view]
    bad = [c for c in columns if c not in allowed or c in ("pass_names", "unsure_names", "levels")]
    if bad or not columns:
        raise ValueError(f"cannot read columns {bad or columns} of {view}")
    filters = filters or Filters()
    where, params = filters.where()
    if labeled_only:
        where += " AND label IS NOT NULL"
    keys = [k.strip('"') for k in order.split(", ")] if ordered else []
    wanted = list(dict.fromkeys([*columns, *keys]))
    select = ", ".join(f'"{c}"' for c in wanted)
    # Unordered: an ORDER BY in DuckDB sorts every selected string along (1.2 GiB at a
    # million runs); the rows are put in order below on the key columns alone.
    sql = f"SELECT {select} FROM {filters.source(view)} WHERE {where}"  # noqa: S608 - names checked above
    # A result the caller left unread would block con.sql(); execute() replaces it, as
    # answers() and submissions() do.
    con.execute("SELECT 1").fetchall()
    reader = con.sql(sql, params=params).to_arrow_reader(NARROW_BATCH_ROWS)
    batches = []
    for batch in reader:
        # Encode each batch's text at once, so that no column of per-row strings piles up;
        # copy the other columns, as any column kept from DuckDB's batch keeps all of it.
        arrays = [
            pc.dictionary_encode(col)
            if _is_text(col.type) and name not in keys and name not in text
            else pa.concat_arrays([col])
            for name, col in zip(batch.schema.names, batch.columns, strict=True)
        ]
        batches.append(pa.RecordBatch.from_arrays(arrays, names=batch.schema.names))
    table = pa.Table.from_batches(batches, schema=batches[0].schema) if batches else None
    if table is None:
        table = reader.schema.empty_table()
    else:
        table = table.unify_dictionaries()
    if keys:
        # DuckDB's ORDER BY: ascending, text by bytes, missing values last.
        ranks = pc.sort_indices(
            table.select(keys), sort_keys=[(k, "ascending", "at_end") for k in keys]
        )
        table = table.select(list(columns)).take(ranks)
    frame = table.to_pandas(types_mapper={pa.bool_(): pd.BooleanDtype()}.get)
    for name in frame.columns:
        col = frame[name]
        if isinstance(col.dtype, pd.CategoricalDtype):
            frame[name] = col.cat.reorder_categories(sorted(col.cat.categories))
        elif _is_text(table.schema.field(name).type) and name not in text:
            frame[name] = col.astype("category")  # a sort key, or no rows: not encoded above
        elif isinstance(col.dtype, pd.BooleanDtype) and not col.isna().any():
            frame[name] = col.astype(bool)
    release_cache(con)
    return frame


def release_cache(con: duckdb.DuckDBPyConnection) -> None:
    """Have DuckDB give back the memory it keeps after a query (hundreds of MB after the views).

    Lowering the memory limit evicts what the buffer pool holds; the limit is then restored.
    """

    def limit() -> str:
        return con.execute("SELECT current_setting('memory_limit')").fetchone()[0]

    try:
        before = limit()
        con.execute("SET memory_limit = '64MB'")
        # The default exactly; another limit as DuckDB prints it (its own text, not record text).
        con.execute("RESET memory_limit")
        if limit() != before:
            con.execute(f"SET memory_limit = '{before}'")
    except duckdb.Error:
        pass  # nothing to give back, or a limit that cannot be lowered: keep it


def _is_text(arrow_type: object) -> bool:
    import pyarrow as pa

    return bool(
        pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or pa.types.is_string_view(arrow_type)
    )


def question_settings(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, object]]:
    """Thresholds and answer lists of every question a process file names, by question id.

    Returns
    -------
    dict
        ``{question_id: {"pass_names", "one_of", "pass_level", "levels"}}`` as
        :func:`answers` carries them on each row (missing values as ``None``);
        a question listed twice keeps its first position.
    """
    rows = con.execute(
        """SELECT question_id, pass_names, one_of, pass_level, levels FROM question_thresholds
           ORDER BY process, step, position"""
    ).fetchall()
    out: dict[str, dict[str, object]] = {}
    for qid, pass_names, one_of, pass_level, levels in rows:
        out.setdefault(
            qid,
            {
                "pass_names": pass_names,
                "one_of": one_of,
                "pass_level": pass_level,
                "levels": levels,
            },
        )
    return out


def checked_steps(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The names of every checked step in the store, sorted (several processes may share one)."""
    rows = con.execute("SELECT DISTINCT step FROM checks ORDER BY step").fetchall()
    return [row[0] for row in rows]


def unknown_name(
    con: duckdb.DuckDBPyConnection, filters: Filters, *, cli: bool = False
) -> str | None:
    """Why a name ``filters`` selects on is one no check carries, naming those the store has.

    ``None`` when every name (``process``, ``step``, ``model``) is known together, also when
    no name is given: a window (``since``, ``until``) with no checks is an empty result, not
    a mistake. A misspelt ``process`` is reported with the processes there are; a ``step`` with
    the steps of the chosen process; a ``model`` with the models of the chosen process and step.
    The message names the Python argument (``process``), or the option (``--process``) with
    ``cli``.
    """
    named = [
        (column, value)
        for column, value in (("process", filters.process), ("step", filters.step),
                              ("model", filters.model))
        if value is not None
    ]  # fmt: skip
    if not named:
        return None
    known = con.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM checks WHERE {' AND '.join(f'{c} = ?' for c, _ in named)} LIMIT 1)",  # noqa: S608 - fixed names
        [v for _, v in named],
    ).fetchone()[0]
    if known:
        return None
    scope, scope_params = "TRUE", []
    for column, value in named:
        names = [
            r[0]
            for r in con.execute(
                f"SELECT DISTINCT {column} FROM checks WHERE {scope} AND {column} IS NOT NULL ORDER BY 1",  # noqa: S608
                scope_params,
            ).fetchall()
        ]
        if value not in names:
            listed = ", ".join(names) if names else "none"
            plural = {"process": "processes"}.get(column, f"{column}s")
            return f"{argument_name(column, cli=cli)} {value!r} matches no check; {plural} in the store: {listed}"
        scope += f" AND {column} = ?"
        scope_params.append(value)
    return None


def require_known_names(con: duckdb.DuckDBPyConnection, filters: Filters | None) -> None:
    """Refuse ``filters`` naming a process, step or model the store lacks (see :func:`unknown_name`).

    Raises
    ------
    UsageError
        A ``ValueError``, naming the names the store has.
    """
    reason = unknown_name(con, filters) if filters is not None else None
    if reason:
        raise UsageError(reason)


def matches_any(con: duckdb.DuckDBPyConnection, filters: Filters) -> bool:
    """Whether any recorded check matches ``filters`` (names, window and ``advisory_only``)."""
    # The checks table under the labeled view's names: no window over every check to run.
    where, params = filters.where()
    sql = f"""SELECT count(*) FROM (
                  SELECT 1 FROM (SELECT process, step, model, checked_at AS "at", advisory FROM checks)
                  WHERE {where} LIMIT 1)"""  # noqa: S608 - the clause is built from fixed names
    return bool(con.execute(sql, params).fetchone()[0])


def unmatched_filters(
    con: duckdb.DuckDBPyConnection, filters: Filters, *, cli: bool = False
) -> str | None:
    """Why ``filters`` match no recorded check, naming what the store has; ``None`` when some match.

    A name filtered on that no check carries (a misspelt ``process``) is
    reported with the names that exist (:func:`unknown_name`); otherwise the
    filters together match nothing. The message names the Python argument
    (``process``), or the option (``--process``) with ``cli``.
    """
    if matches_any(con, filters):
        return None
    return unknown_name(con, filters, cli=cli) or (
        "no check matches these filters together (see `calibrate status` for what the store holds)"
    )
