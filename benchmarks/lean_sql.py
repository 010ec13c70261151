"""The lean load's statements (benchmarks/ingest_bound.py): one statement per table after the read."""

from __future__ import annotations

#: Every verdict with its questions nested, its key and one flag for the lane's check rules.
VERDICTS = """CREATE OR REPLACE TEMP TABLE p_verdict AS
WITH s AS (
    SELECT rowid + 1 AS rec, json_id(run) AS run_id, json_id(process) AS process_name,
           CASE WHEN json_type(version) IN ('VARCHAR', 'UBIGINT', 'BIGINT', 'DOUBLE') THEN (version->>'$') END
               AS version_text,
           unnest(map_keys(steps)) AS step, unnest(map_values(steps)) AS sd
    FROM t_doc WHERE steps IS NOT NULL
), v AS (
    SELECT rec, run_id, process_name, version_text, step,
           unnest(list_concat(
               CASE WHEN sd."check" IS NOT NULL THEN
                   [{'path': '.check', 'recorded_in': 'steps.check', 'priority': 2,
                     'attempt': step_attempt(sd), 'v': sd."check"}] END,
               CASE WHEN sd.escalation."check" IS NOT NULL THEN
                   [{'path': '.escalation.check', 'recorded_in': 'escalation.check', 'priority': 1,
                     'attempt': step_attempt(sd), 'v': sd.escalation."check"}] END,
               CASE WHEN len(sd.history) > 0 THEN list_filter(list_transform(sd.history, lambda h, i:
                   {'path': '.history[' || (i - 1) || '].check', 'recorded_in': 'history', 'priority': 3,
                    'attempt': hist_attempt(h, i), 'v': h."check"}), lambda x: x.v IS NOT NULL) END)) AS x,
           coalesce(list_bool_or(list_transform(sd.history, lambda h:
               h.attempt IS NOT NULL AND json_type(h.attempt) <> 'NULL' AND json_attempt(h.attempt) IS NULL)), false)
               OR step_attempt(sd) IS NULL AS bad_attempt
    FROM s
), c AS (
    SELECT rec, run_id, process_name, version_text, '$.steps.' || step || x.path AS path, step,
           x.attempt AS attempt_raw, x.recorded_in, x.priority, x.v, bad_attempt
    FROM v
    UNION ALL
    SELECT rowid + 1, json_id(run), json_id(process),
           CASE WHEN json_type(version) IN ('VARCHAR', 'UBIGINT', 'BIGINT', 'DOUBLE') THEN (version->>'$') END,
           '$.handoff.check', json_string(handoff.step),
           coalesce(step_attempt(steps[json_string(handoff.step)]), 1), 'handoff.check', 4, handoff."check", false
    FROM t_doc WHERE steps IS NOT NULL AND handoff."check" IS NOT NULL
)
SELECT rec, run_id, process_name, version_text, path, step, attempt_raw, verdict, advisory, model, at_ts,
       recorded_in, is_truncated, CASE WHEN is_truncated THEN v.truncated END AS truncation, n_questions, priority,
       v.questions,
       check_key(run_id, step, attempt_raw, at_ts, verdict, model) AS check_id,
       verdict_bad(v, verdict, at_ts, attempt_raw, recorded_in, step) OR bad_attempt AS bad
FROM (SELECT *, unnest(verdict_fields(v)) FROM c)"""

#: Every decision (approve steps, history, escalations) with its key and one flag for the lane's rules.
DECISIONS = """CREATE OR REPLACE TEMP TABLE p_dec AS
WITH s AS (
    SELECT rowid + 1 AS rec, json_id(run) AS run_id, json_id(process) AS process_name, steps,
           unnest(map_keys(steps)) AS step, generate_subscripts(map_keys(steps), 1) AS ordinal,
           unnest(map_values(steps)) AS sd
    FROM t_doc WHERE steps IS NOT NULL
), a AS (
    SELECT rec, run_id, process_name, step, sd, steps,
           CASE WHEN sd.decision IS NOT NULL THEN coalesce(json_string(sd.reviews),
               list_last(list_filter(list_transform(map_values(steps)[1:ordinal - 1], lambda w, i:
                   CASE WHEN w."check" IS NOT NULL OR len(w.history) > 0 OR w.escalation IS NOT NULL
                        THEN map_keys(steps)[i] END), lambda k: k IS NOT NULL)),
               CASE WHEN len(list_filter(map_values(steps), lambda w:
                       w."check" IS NOT NULL OR len(w.history) > 0 OR w.escalation IS NOT NULL)) = 1
                    THEN list_filter(map_keys(steps), lambda k:
                       steps[k]."check" IS NOT NULL OR len(steps[k].history) > 0
                       OR steps[k].escalation IS NOT NULL)[1] END) END AS reviewed
    FROM s
    WHERE sd.decision IS NOT NULL OR len(sd.history) > 0 OR sd.escalation.resolution IS NOT NULL
), d AS (
    SELECT rec, run_id, process_name, unnest(list_concat(
        CASE WHEN sd.decision IS NOT NULL THEN
            [{'path': '$.steps.' || step, 'step': reviewed, 'attempt': CASE WHEN map_contains(steps, reviewed) THEN step_attempt(steps[reviewed]) END,
              'decision': sd.decision, 'by': sd.by, 'at': sd."at", 'note': sd.note, 'source': 'approve step'}] END,
        CASE WHEN len(sd.history) > 0 THEN list_filter(list_transform(sd.history, lambda h, i:
            {'path': '$.steps.' || step || '.history[' || (i - 1) || ']', 'step': step,
             'attempt': hist_attempt(h, i), 'decision': h.decision, 'by': h.by, 'at': h."at", 'note': h.note,
             'source': 'history'}), lambda x: x.decision IS NOT NULL) END,
        CASE WHEN sd.escalation.resolution IS NOT NULL THEN
            [{'path': '$.steps.' || step || '.escalation', 'step': step, 'attempt': step_attempt(sd),
              'decision': CASE (sd.escalation.resolution->>'$')
                  WHEN 'completed' THEN CASE WHEN (sd.escalation.output->>'$') = 'own' THEN '"replaced"'
                                             ELSE '"completed"' END
                  ELSE sd.escalation.resolution END::JSON,
              'by': sd.escalation.by, 'at': sd.escalation."at", 'note': sd.escalation.note,
              'source': 'escalation'}] END)) AS x
    FROM a
)
SELECT *, decision_key(run_id, step, attempt, decision, decided_by, at_ts) AS decision_id,
       coalesce(coalesce(decision, '') NOT IN ('approved', 'rejected', 'returned', 'completed', 'replaced', 'failed')
           OR coalesce(step, '') = ''
           OR attempt IS NULL OR attempt < 1 OR attempt > 2147483647
           OR (at_text IS NOT NULL AND at_ts IS NULL)
           OR (x_at IS NOT NULL AND json_type(x_at) <> 'VARCHAR'), true) AS bad
FROM (
    SELECT rec, run_id, process_name, x.path, x.step, x.attempt, x.source, x."at" AS x_at,
           decision_name(json_string(x.decision)) AS decision,
           json_id(x.by) AS decided_by,
           nullif(json_string(x."at"), '') AS at_text,
           iso_time(nullif(json_string(x."at"), '')) AS at_ts,
           nullif(json_string(x.note), '') AS note
    FROM d
)"""

#: The records with a question any of the lane's rules flags (typed columns once, then one flag;
#: nothing but the records is kept), and those that ask a question twice in one check.
QUESTION_RULES = """CREATE OR REPLACE TEMP TABLE p_qbad AS
SELECT DISTINCT rec FROM (
    SELECT rec, question_bad(q_null, ask, kind, answer_type, answer_num, answer_text, confidence_type,
                             confidence_num, result_type, result_text)
                OR count(ask) OVER (PARTITION BY rid, ask) > 1 AS b
    FROM (SELECT rec, rid, q IS NULL AS q_null, unnest(question_leaves(q))
          FROM (SELECT rec, rowid AS rid, unnest(questions) AS q FROM p_verdict))
) WHERE b"""

#: The lean load after the typed read, in order: candidates with their flags, then one insert per table.
LEAN_LOAD = {
    "verdicts": VERDICTS,
    "decisions": DECISIONS,
    "question rules": QUESTION_RULES,
    "bad records": """CREATE OR REPLACE TEMP TABLE p_bad AS
        SELECT rec FROM p_verdict WHERE bad
        UNION SELECT rec FROM p_qbad
        UNION SELECT rec FROM p_dec WHERE bad
        UNION SELECT rowid + 1 FROM t_doc WHERE steps IS NOT NULL AND coalesce(json_id(run), '') = ''""",
    "settle keys": """CREATE OR REPLACE TEMP TABLE p_lose AS
        SELECT vid FROM (SELECT rowid AS vid, rec, check_id, priority FROM p_verdict) ANTI JOIN p_bad USING (rec)
        QUALIFY row_number() OVER (PARTITION BY check_id ORDER BY priority, rec) > 1;
        CREATE OR REPLACE TEMP TABLE p_lose_dec AS
        SELECT did FROM (SELECT rowid AS did, rec, decision_id FROM p_dec) ANTI JOIN p_bad USING (rec)
        QUALIFY row_number() OVER (PARTITION BY decision_id ORDER BY rec) > 1;
        CREATE OR REPLACE TEMP VIEW p_new_check AS
        SELECT * FROM (SELECT rowid AS vid, * FROM p_verdict) ANTI JOIN p_bad USING (rec) ANTI JOIN p_lose USING (vid)
        ANTI JOIN (SELECT check_id FROM checks) USING (check_id);""",
    "insert answers": """INSERT INTO answers
        SELECT check_id, position, question_key(process_name, step, ask), ask, kind,
               unnest(answer_values(kind, answer_type, answer_num, answer_text, confidence_num, result_type,
                                    result_text))
        FROM (SELECT check_id, process_name, step, position, unnest(question_leaves(q))
              FROM (SELECT check_id, process_name, step, unnest(questions) AS q,
                           (generate_subscripts(questions, 1) - 1)::INTEGER AS position
                    FROM p_new_check WHERE n_questions > 0))""",
    "insert checks": """INSERT INTO checks
        SELECT check_id, run_id, process_name, version_text, step, attempt_raw, verdict, advisory, model, at_ts,
               recorded_in, is_truncated, truncation, n_questions, 1, rec, path
        FROM p_new_check""",
    "insert decisions": """INSERT INTO decisions
        SELECT decision_id, run_id, process_name, step, attempt, decision, decided_by, at_ts, note, source,
               1, rec, path
        FROM (SELECT rowid AS did, * FROM p_dec) ANTI JOIN p_bad USING (rec) ANTI JOIN p_lose_dec USING (did)
        ANTI JOIN (SELECT decision_id FROM decisions) USING (decision_id)""",
    "insert runs": """INSERT INTO runs
        SELECT run_id, any_value(process_name), any_value(version_text), 1
        FROM (SELECT rowid + 1 AS rec, json_id(run) AS run_id, json_id(process) AS process_name,
                     CASE WHEN json_type(version) IN ('VARCHAR', 'UBIGINT', 'BIGINT', 'DOUBLE')
                          THEN (version->>'$') END AS version_text
              FROM t_doc WHERE steps IS NOT NULL) ANTI JOIN p_bad USING (rec)
        ANTI JOIN (SELECT run_id FROM runs) USING (run_id)
        GROUP BY run_id""",
}

#: The decision table, as its own file and transaction: rows that pass the rules, one per key, new ones.
DECISION_TABLE = """INSERT INTO decisions
SELECT decision_key(run, step, attempt, decision, "by", at_ts), run, process, step, attempt, decision, "by", at_ts,
       nullif(note, ''), 'table', 2, NULL, '$'
FROM (
    SELECT * REPLACE (decision_name(decision) AS decision),
           text_attempt(attempt_text) AS attempt, iso_time(nullif("at", '')) AS at_ts
    FROM (SELECT * EXCLUDE (attempt), attempt AS attempt_text
          FROM read_csv($1, header = true, all_varchar = true))
)
WHERE coalesce(run <> ''
      AND decision IN ('approved', 'rejected', 'returned', 'completed', 'replaced', 'failed')
      AND coalesce(step, '') <> '' AND attempt IS NOT NULL
      AND (nullif("at", '') IS NULL OR at_ts IS NOT NULL), false)
  AND decision_key(run, step, attempt, decision, "by", at_ts) NOT IN (SELECT decision_id FROM decisions)
QUALIFY row_number() OVER (PARTITION BY decision_key(run, step, attempt, decision, "by", at_ts)) = 1"""
