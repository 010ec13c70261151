"""Read the labeled view out of the store, with the filters every command shares.

Everything downstream of ingest reads through this module: the analysis
functions receive plain DataFrames and never touch SQL or files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

import duckdb
import numpy as np
import pandas as pd

from calibrate.profile import Kind, Limits, Question

#: Columns of :func:`submissions` (one row per recorded check).
SUBMISSION_COLUMNS = [
    "check_id", "run_id", "process", "version", "step", "attempt", "verdict", "advisory",
    "model", "at", "recorded_in", "truncated", "n_questions", "is_latest", "decision",
    "decided_by", "decided_at", "note", "label", "conflict", "n_decisions",
]  # fmt: skip


@dataclass(frozen=True)
class Filters:
    """Which checks to look at.

    Parameters
    ----------
    process, step, model : str, optional
        Keep only this process, checked step, evaluator model.
    since, until : datetime, optional
        Keep checks whose ``at`` is at or after ``since`` and before ``until``.
    advisory_only : bool, default=False
        Keep only checks recorded with ``advisory: true``.
    """

    process: str | None = None
    step: str | None = None
    model: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    advisory_only: bool = False

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


def submissions(
    con: duckdb.DuckDBPyConnection, filters: Filters | None = None, *, labeled_only: bool = False
) -> pd.DataFrame:
    """One row per recorded check with the person's decision and label.

    ``label`` is ``True`` (acceptable), ``False`` (not acceptable) or missing
    (no decision, or an earlier check of the same attempt that no person saw).
    """
    where, params = (filters or Filters()).where()
    if labeled_only:
        where += " AND label IS NOT NULL"
    sql = f'SELECT * FROM labeled WHERE {where} ORDER BY "at", check_id'  # noqa: S608 - clause is built from fixed column names
    return con.execute(sql, params).df()


def answers(
    con: duckdb.DuckDBPyConnection, filters: Filters | None = None, *, labeled_only: bool = False
) -> pd.DataFrame:
    """One row per answered question, with its check's label and the thresholds in force.

    Threshold columns (``pass_p``, ``fail_p``, ``pass_names``, ``unsure_names``,
    ``pass_level``, ``min_confidence``) come from the ingested process file and
    limits; they are missing for a question no process file names.
    """
    where, params = (filters or Filters()).where()
    if labeled_only:
        where += " AND label IS NOT NULL"
    sql = f'SELECT * FROM labeled_answers WHERE {where} ORDER BY "at", check_id, position'  # noqa: S608
    return con.execute(sql, params).df()


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

    Returns
    -------
    dict
        ``{(process, step): [Question, ...]}`` in the file's order, with server
        defaults filled in.
    """
    sql = "SELECT * FROM question_thresholds WHERE (? IS NULL OR process = ?) AND (? IS NULL OR step = ?) ORDER BY process, step, position"
    rows = con.execute(sql, [process, process, step, step]).df()
    out: dict[tuple[str, str], list[Question]] = {}
    for rec in rows.to_dict("records"):
        out.setdefault((rec["process"], rec["step"]), []).append(question_from_row(rec))
    return out


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
