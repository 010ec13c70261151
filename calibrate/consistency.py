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
    "result_contradicts_thresholds": "a recorded result is not what the process file's thresholds give",
    "choice_not_in_one_of": "a choice answer is not among the process file's one_of names",
    "level_beyond_ladder": "a rubric level is beyond the process file's levels",
    "at_in_future": "a check's time is after the moment the store was read",
    "at_missing": "a check has no time",
    "decision_without_check": "a decision names a submission with no recorded check",
    "conflicting_decisions": "a submission has two different decisions (the latest is used)",
}

_SQL_FLAGS = {
    "verdict_not_worst": """
        SELECT count(*) FROM checks c JOIN (
            SELECT check_id, max(CASE result WHEN 'unsure' THEN 2 WHEN 'fail' THEN 1 WHEN 'pass' THEN 0 END) AS w
            FROM answers GROUP BY check_id) a USING (check_id)
        WHERE c.verdict IN ('pass', 'fail', 'unsure')
          AND a.w IS NOT NULL AND a.w <> CASE c.verdict WHEN 'unsure' THEN 2 WHEN 'fail' THEN 1 ELSE 0 END""",
    "choice_not_in_one_of": """
        SELECT count(*) FROM answers a JOIN questions q USING (question_id)
        WHERE a.kind = 'choice' AND q.one_of IS NOT NULL AND json_type(q.one_of, '$.' || to_json(a.name)) IS NULL""",
    "level_beyond_ladder": """
        SELECT count(*) FROM answers a JOIN questions q USING (question_id)
        WHERE a.kind = 'rubric' AND q.levels IS NOT NULL AND a.level >= len(q.levels)""",
    "at_in_future": "SELECT count(*) FROM checks WHERE checked_at > now()",
    "at_missing": "SELECT count(*) FROM checks WHERE checked_at IS NULL",
    "decision_without_check": """
        SELECT count(*) FROM submission_labels s
        WHERE NOT EXISTS (SELECT 1 FROM checks c WHERE c.run_id = s.run_id AND c.step = s.step AND c.attempt = s.attempt)""",
    "conflicting_decisions": "SELECT count(*) FROM submission_labels WHERE conflict",
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
    out = {name: int(con.execute(sql).fetchone()[0]) for name, sql in _SQL_FLAGS.items()}
    # Only answers a process file can contradict, and only the columns the rule reads:
    # loading every column of every answer cost 6 GiB at 1M runs.
    frame = con.execute(
        """SELECT question_id, ask, kind, p, name, level, confidence, result, in_process_file,
                  pass_p, fail_p, pass_names, unsure_names, pass_level, min_confidence, one_of, levels
           FROM labeled_answers WHERE in_process_file AND result IS NOT NULL"""
    ).df()
    out["result_contradicts_thresholds"] = int(contradicting_results(frame).sum())
    return {name: out[name] for name in FLAG_DESCRIPTIONS}
