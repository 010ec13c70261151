"""Facts that disagree with each other but are each valid: flagged, never rejected.

The server's record is the fact; these flags tell a person where the records
and the process file disagree (check-1 §2-3). They are computed from the store
on demand, so they do not depend on the order in which files were ingested.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from calibrate import dataset
from calibrate.profile import RESULT_CODES, decide

FLAG_DESCRIPTIONS = {
    "verdict_not_worst": "verdict is not the worst of its questions' results",
    "result_contradicts_thresholds": "a recorded result is not what its process version's thresholds give",
    "choice_not_in_one_of": "a choice answer is not among the process file's one_of names",
    "level_beyond_ladder": "a rubric level is beyond the process file's levels",
    "at_in_future": "a check's time is after the moment the store was read",
    "at_missing": "a check has no time",
    "decision_without_check": "a decision names a submission with no recorded check",
    "decided_in_future": "a decision's time is after the moment the store was read",
    "decided_before_check": "a decision is timed before the first check of its submission (clock skew, or recorded ahead of the verdict)",
    "conflicting_decisions": "a check has two different decisions (the latest is used; a drawn check: the first after its draw)",
    "checks_at_same_time": "a submission has two checks recorded at the same time, with different verdicts or models (one record is likely wrong; a decision labels only one)",
}

#: Each SQL flag as the flagged rows: the submission (run, step, attempt) and what is off.
#: ``flag_counts`` counts these rows; ``flag_rows`` lists them.
_SQL_FLAGS = {
    "verdict_not_worst": """
        SELECT c.run_id, c.step, c.attempt, 'verdict ' || c.verdict || ', worst question result '
               || CASE a.w WHEN 2 THEN 'unsure' WHEN 1 THEN 'fail' ELSE 'pass' END AS detail
        FROM checks c JOIN (
            SELECT check_id, max(CASE result WHEN 'unsure' THEN 2 WHEN 'fail' THEN 1 WHEN 'pass' THEN 0 END) AS w
            FROM answers GROUP BY check_id) a USING (check_id)
        WHERE c.verdict IN ('pass', 'fail', 'unsure')
          AND a.w IS NOT NULL AND a.w <> CASE c.verdict WHEN 'unsure' THEN 2 WHEN 'fail' THEN 1 ELSE 0 END""",
    "choice_not_in_one_of": """
        SELECT c.run_id, c.step, c.attempt, 'answer ' || to_json(a.name) || ' to ' || to_json(a.ask) AS detail
        FROM answers a JOIN questions q USING (question_id) JOIN checks c USING (check_id)
        WHERE a.kind = 'choice' AND q.one_of IS NOT NULL AND json_type(q.one_of, '$.' || to_json(a.name)) IS NULL""",
    "level_beyond_ladder": """
        SELECT c.run_id, c.step, c.attempt,
               'level ' || a.level || ' of ' || len(q.levels) || ' to ' || to_json(a.ask) AS detail
        FROM answers a JOIN questions q USING (question_id) JOIN checks c USING (check_id)
        WHERE a.kind = 'rubric' AND q.levels IS NOT NULL AND a.level >= len(q.levels)""",
    "at_in_future": """
        SELECT run_id, step, attempt, 'at ' || strftime(checked_at, '%Y-%m-%dT%H:%M:%SZ') AS detail
        FROM checks WHERE checked_at > now()""",
    "at_missing": "SELECT run_id, step, attempt, 'no time' AS detail FROM checks WHERE checked_at IS NULL",
    "decision_without_check": """
        SELECT s.run_id, s.step, s.attempt, s.decisions AS detail
        FROM (SELECT run_id, step, attempt, string_agg(DISTINCT decision, ', ' ORDER BY decision) AS decisions
              FROM decisions GROUP BY ALL) s
        WHERE NOT EXISTS (SELECT 1 FROM checks c WHERE c.run_id = s.run_id AND c.step = s.step AND c.attempt = s.attempt)""",
    "decided_in_future": """
        SELECT run_id, step, attempt, decision || ' at ' || strftime(decided_at, '%Y-%m-%dT%H:%M:%SZ') AS detail
        FROM decisions WHERE decided_at > now()""",
    "decided_before_check": """
        SELECT d.run_id, d.step, d.attempt,
               d.decision || ' at ' || strftime(d.decided_at, '%Y-%m-%dT%H:%M:%SZ') || ', first check at '
               || strftime(c.first_at, '%Y-%m-%dT%H:%M:%SZ') AS detail
        FROM decisions d
        JOIN (SELECT run_id, step, attempt, min(checked_at) AS first_at FROM checks GROUP BY ALL) c
          USING (run_id, step, attempt)
        -- A date alone (stored as midnight UTC) is the whole day, as the audit_labels view reads
        -- it (the same test, free of the session's time zone): before the check only when its
        -- day is.
        WHERE CASE WHEN epoch_us(d.decided_at) % 86400000000 = 0
                   THEN d.decided_at + INTERVAL 1 DAY <= c.first_at
                   ELSE d.decided_at < c.first_at END""",
    "conflicting_decisions": """
        SELECT c.run_id, c.step, c.attempt, l.n_decisions || ' decisions, the latest ' || l.decision AS detail
        FROM check_labels l JOIN checks c USING (check_id) WHERE l.conflict""",
    "checks_at_same_time": """
        SELECT run_id, step, attempt,
               count(*) || ' checks at ' || strftime(checked_at, '%Y-%m-%dT%H:%M:%SZ') || ': '
               || string_agg(verdict || coalesce(' (' || to_json(model) || ')', ''), ', '
                             ORDER BY verdict, model) AS detail
        FROM checks WHERE checked_at IS NOT NULL
        GROUP BY run_id, step, attempt, checked_at HAVING count(*) > 1""",
}


def contradicting_results(frame: pd.DataFrame) -> np.ndarray:
    """Boolean mask of answers whose recorded result the thresholds in force would not give.

    ``frame`` has the columns of :func:`calibrate.dataset.answers`; answers of
    questions no process file names are never flagged.
    """
    mask = np.zeros(len(frame), dtype=bool)
    if frame.empty:
        return mask
    known = frame["in_process_file"].fillna(False).astype(bool) & frame["result"].notna()
    for _, group in frame[known].groupby("question_id", sort=False):
        question = dataset.question_from_row(group.iloc[0].to_dict())
        answer = {"yes_no": group["p"], "choice": group["name"], "rubric": group["level"]}[
            question.kind.value
        ]
        expected = decide(question, answer.to_numpy(), group["confidence"].to_numpy(dtype=float))
        recorded = group["result"].map(RESULT_CODES).to_numpy()
        mask[frame.index.get_indexer(group.index)] = expected != recorded
    return mask


def flag_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Count of each flag in the store; see :data:`FLAG_DESCRIPTIONS`."""
    out = {
        name: int(con.execute(f"SELECT count(*) FROM ({sql})").fetchone()[0])  # noqa: S608 - fixed SQL
        for name, sql in _SQL_FLAGS.items()
    }
    out["result_contradicts_thresholds"] = contradiction_count(con)
    return {name: out[name] for name in FLAG_DESCRIPTIONS}


def contradiction_count(con: duckdb.DuckDBPyConnection) -> int:
    """How many answers' recorded results their thresholds would not give, read lean.

    Each answer is judged against the thresholds of the process version its
    check was recorded under, when that version's file was ingested, else
    against today's; where every check is of today's version this is what
    :func:`contradicting_results` flags on ``labeled_answers``.

    The rule sees an answer only through its question, kind, value, confidence
    and recorded result, so DuckDB counts each distinct combination once and
    the rule runs on those: a few thousand rows instead of every answer
    (loading the answers took 6 GiB and half a minute at a million runs).
    As in the view, an answer counts once per recorded check row and once per
    process-file row of its question; a question's thresholds are those of
    its first position.
    """
    atoms = _contradicting_atoms(con)
    return 0 if atoms is None else int(atoms["n"].sum())


def _contradicting_atoms(con: duckdb.DuckDBPyConnection) -> pd.DataFrame | None:
    """The distinct (question, check version, kind, answer, confidence, result) the rule contradicts.

    A check is judged against the thresholds of the process version it was
    recorded under when that version's file was ingested, else against
    today's (the newest version's).
    """
    atoms = con.execute(
        """WITH copies AS (SELECT question_id, count(*) AS m FROM question_thresholds GROUP BY ALL)
           SELECT a.question_id, c.version, a.kind, a.p, a.name, a.level, a.confidence, a.result,
                  count(*) * any_value(q.m) AS n
           FROM answers a JOIN checks c USING (check_id) JOIN copies q USING (question_id)
           WHERE a.result IS NOT NULL
           GROUP BY a.question_id, c.version, a.kind, a.p, a.name, a.level, a.confidence,
                    a.result"""
    ).df()
    if atoms.empty:
        return None
    columns = """question_id, ask, pass_p, fail_p, pass_names, unsure_names, pass_level,
                 min_confidence, one_of, levels"""
    today = con.execute(
        f"SELECT {columns} FROM question_thresholds ORDER BY process, step, position"  # noqa: S608
    ).df()
    today = today.drop_duplicates("question_id").set_index("question_id")
    versions = con.execute(
        f"""SELECT process_version, {columns} FROM question_version_thresholds
            WHERE process_version IS NOT NULL ORDER BY process, step, position"""  # noqa: S608
    ).df()
    versions = versions.drop_duplicates(["question_id", "process_version"])
    versions = versions.set_index(["question_id", "process_version"])
    flagged = np.zeros(len(atoms), dtype=bool)
    groups = atoms.groupby(["question_id", "version", "kind"], sort=False, dropna=False)
    for (qid, version, kind), group in groups:
        own = (qid, version) in versions.index if isinstance(version, str) else False
        settings = versions.loc[(qid, version)] if own else today.loc[qid]
        question = dataset.question_from_row({**settings.to_dict(), "kind": kind})
        answer = {"yes_no": group["p"], "choice": group["name"], "rubric": group["level"]}[
            question.kind.value
        ]
        expected = decide(question, answer.to_numpy(), group["confidence"].to_numpy(dtype=float))
        recorded = group["result"].map(RESULT_CODES).to_numpy()
        flagged[atoms.index.get_indexer(group.index)] = expected != recorded
    return atoms[flagged] if flagged.any() else None


def flag_rows(con: duckdb.DuckDBPyConnection, limit: int = 50) -> list[dict[str, object]]:
    """The flagged records, up to ``limit`` per flag, in :data:`FLAG_DESCRIPTIONS` order.

    Each is ``{flag, run_id, step, attempt, detail}``: the submission and what
    is off (record text in ``detail`` is JSON-quoted).
    """
    out: list[dict[str, object]] = []
    keys = ("run_id", "step", "attempt", "detail")
    for name in FLAG_DESCRIPTIONS:
        if name == "result_contradicts_thresholds":
            rows = _contradiction_rows(con, limit)
        else:
            sql = f"SELECT * FROM ({_SQL_FLAGS[name]}) ORDER BY ALL LIMIT ?"  # noqa: S608 - fixed SQL
            rows = con.execute(sql, [limit]).fetchall()
        out += [{"flag": name, **dict(zip(keys, row, strict=True))} for row in rows]
    return out


def _contradiction_rows(con: duckdb.DuckDBPyConnection, limit: int) -> list[tuple]:
    atoms = _contradicting_atoms(con)
    if atoms is None:
        return []
    con.register("flag_atoms", atoms.drop(columns="n"))
    try:
        return con.execute(
            """SELECT c.run_id, c.step, c.attempt,
                      'result ' || a.result || ' to ' || to_json(a.ask) AS detail
               FROM answers a JOIN checks c USING (check_id)
               SEMI JOIN flag_atoms f ON a.question_id = f.question_id AND a.kind = f.kind
                    AND c.version IS NOT DISTINCT FROM f.version
                    AND a.p IS NOT DISTINCT FROM f.p AND a.name IS NOT DISTINCT FROM f.name
                    AND a.level IS NOT DISTINCT FROM f.level
                    AND a.confidence IS NOT DISTINCT FROM f.confidence AND a.result = f.result
               ORDER BY ALL LIMIT ?""",
            [limit],
        ).fetchall()
    finally:
        con.unregister("flag_atoms")
