-- The typed lane: a JSON-lines file of run documents, parsed once by DuckDB's
-- own reader into typed columns (in parallel), and turned into candidate rows.
--
-- It only takes records it can load exactly as the record pipeline
-- (ingest_records.sql) would; every other record is a "slow" record that the
-- record pipeline reads from its raw line, with every rule and reason it has.
-- The reader is strict: a line that is not JSON, a duplicate key, or a value
-- whose shape is not the expected one (a check that is a string, a question
-- that is a number) fails the read, and then the whole file goes through the
-- record pipeline. A key repeated where the reader reads it (a field of the record, a
-- step, a history entry, an escalation, a handoff, a check or a question, or a step
-- named twice) is such a failure, and the record pipeline quarantines that record;
-- a repeated key it does not read (DuckDB ignores it) the record pipeline ignores too.
-- Leaves are read as JSON, so their types are checked here
-- with the record pipeline's own tests (json_type), never coerced.
--
-- Inputs: the file path (bound as $1) and the macros of ingest_records.sql.
-- Outputs: the lane's rows c_runs, c_checks, c_answers, c_decisions and the
-- records it leaves to the record pipeline, c_slow. The views f_recs, f_checks,
-- f_answers and f_decisions show the rows of the records the lane keeps; the
-- record pipeline reads them beside its own rows. (The CSV loader writes
-- decision rows into c_decisions the same way.)

-- name: empty
-- The lane's outputs, empty: made for every file, so that the record pipeline can always read them.
CREATE OR REPLACE TEMP TABLE c_slow (rec BIGINT);
CREATE OR REPLACE TEMP TABLE c_runs (rec BIGINT, run_id VARCHAR, process_name VARCHAR, version_text VARCHAR);
CREATE OR REPLACE TEMP TABLE c_checks (
    rec BIGINT, line_no BIGINT, path VARCHAR, run_id VARCHAR, process_name VARCHAR, version_text VARCHAR,
    step VARCHAR, attempt_raw BIGINT, verdict VARCHAR, advisory BOOLEAN, model VARCHAR, at_ts TIMESTAMPTZ,
    recorded_in VARCHAR, is_truncated BOOLEAN, truncation JSON, n_questions BIGINT, priority INTEGER,
    bad BOOLEAN, check_id VARCHAR);
CREATE OR REPLACE TEMP TABLE c_answers (
    rec BIGINT, path VARCHAR, position INTEGER, ask VARCHAR, kind VARCHAR, p DOUBLE, name VARCHAR, level INTEGER,
    confidence DOUBLE, result VARCHAR, bad BOOLEAN);
CREATE OR REPLACE TEMP TABLE c_decisions (
    rec BIGINT, line_no BIGINT, path VARCHAR, run_id VARCHAR, process_name VARCHAR, step VARCHAR, attempt BIGINT,
    decision VARCHAR, decided_by VARCHAR, at_ts TIMESTAMPTZ, note VARCHAR, source VARCHAR,
    decision_json JSON, at_json JSON, at_text VARCHAR, decision_id VARCHAR);
CREATE OR REPLACE TEMP VIEW f_recs AS SELECT * FROM c_runs ANTI JOIN c_slow USING (rec);
CREATE OR REPLACE TEMP VIEW f_checks AS SELECT * FROM c_checks ANTI JOIN c_slow USING (rec);
CREATE OR REPLACE TEMP VIEW f_answers AS SELECT * FROM c_answers ANTI JOIN c_slow USING (rec);
CREATE OR REPLACE TEMP VIEW f_decisions AS SELECT * FROM c_decisions ANTI JOIN c_slow USING (rec);

-- name: read
-- Rows are stored in file order (insertion order is preserved), so rowid + 1 is the line
-- number; the loader checks that the reader skipped no line (a blank one) before relying on it.
CREATE OR REPLACE TEMP TABLE t_doc AS
    SELECT * FROM read_json($1, format = 'newline_delimited', records = true, maximum_object_size = 67108864,
        columns = {
            run: 'JSON', process: 'JSON', version: 'JSON',
            steps: 'MAP(VARCHAR, STRUCT(
                "check" STRUCT(verdict JSON, advisory JSON, model JSON, "at" JSON, truncated JSON,
                               questions STRUCT(ask JSON, kind JSON, answer JSON, confidence JSON, result JSON)[]),
                history STRUCT(attempt JSON, decision JSON, "by" JSON, "at" JSON, note JSON,
                               "check" STRUCT(verdict JSON, advisory JSON, model JSON, "at" JSON, truncated JSON,
                                              questions STRUCT(ask JSON, kind JSON, answer JSON, confidence JSON, result JSON)[]))[],
                escalation STRUCT(resolution JSON, output JSON, "by" JSON, "at" JSON, note JSON,
                                  "check" STRUCT(verdict JSON, advisory JSON, model JSON, "at" JSON, truncated JSON,
                                                 questions STRUCT(ask JSON, kind JSON, answer JSON, confidence JSON, result JSON)[])),
                decision JSON, reviews JSON, "by" JSON, "at" JSON, note JSON, attempt JSON))',
            handoff: 'STRUCT(step JSON, "check" STRUCT(verdict JSON, advisory JSON, model JSON, "at" JSON, truncated JSON,
                             questions STRUCT(ask JSON, kind JSON, answer JSON, confidence JSON, result JSON)[]))'
        });

-- name: runs
-- Run documents: the records this lane can take (the others are not run documents).
INSERT INTO c_runs
SELECT rowid + 1 AS rec,
    json_id(run) AS run_id,
    json_id(process) AS process_name,
    CASE WHEN json_type(version) IN ('VARCHAR', 'UBIGINT', 'BIGINT', 'DOUBLE') THEN (version->>'$') END AS version_text
FROM t_doc WHERE steps IS NOT NULL;

-- name: steps
-- One row per step, with its record's run fields and its current attempt: its own "attempt",
-- else one past its history (an entry without an attempt counts as its position).
CREATE OR REPLACE TEMP TABLE t_step AS
SELECT *,
       step_attempt(sd) AS current_attempt,
       -- An attempt in the history that is not a positive integer: the record pipeline says why.
       coalesce(list_bool_or(list_transform(sd.history, lambda h:
           h.attempt IS NOT NULL AND json_type(h.attempt) <> 'NULL' AND json_attempt(h.attempt) IS NULL)), false)
           AS bad_attempt
FROM (
    SELECT r.rec, r.run_id, r.process_name, r.version_text,
           unnest(map_keys(d.steps)) AS step, generate_subscripts(map_keys(d.steps), 1) AS ordinal,
           unnest(map_values(d.steps)) AS sd
    FROM t_doc d JOIN c_runs r ON r.rec = d.rowid + 1
);
-- What else is read from the documents, so that they can go now (half of the lane's memory:
-- beyond the cap DuckDB spills what is left to disk). Records that are not run documents
-- (verdict lines, decisions, anything else) go to the record pipeline.
CREATE OR REPLACE TEMP TABLE t_handoff AS
SELECT c.*, d.handoff FROM t_doc d JOIN c_runs c ON c.rec = d.rowid + 1 WHERE d.handoff."check" IS NOT NULL;
INSERT INTO c_slow SELECT rowid + 1 FROM t_doc WHERE steps IS NULL;
DROP TABLE t_doc;

-- name: history
CREATE OR REPLACE TEMP TABLE t_hist AS
SELECT rec, run_id, process_name, version_text, step, (generate_subscripts(sd.history, 1) - 1)::INTEGER AS idx,
       unnest(sd.history) AS hd
FROM t_step WHERE len(sd.history) > 0;

-- name: checks
-- Every verdict object, wherever it was recorded, as the record pipeline's checks_raw lists them.
-- A view: read twice (typed columns, questions), it costs less than storing the verdicts again.
CREATE OR REPLACE TEMP VIEW t_check AS
SELECT s.rec, s.run_id, s.process_name, s.version_text, '$.steps.' || s.step || '.check' AS path, s.step,
       s.current_attempt AS attempt_raw, 'steps.check' AS recorded_in, 2 AS priority, s.sd."check" AS v
FROM t_step s
WHERE s.sd."check" IS NOT NULL
UNION ALL
SELECT s.rec, s.run_id, s.process_name, s.version_text, '$.steps.' || s.step || '.escalation.check', s.step,
       s.current_attempt, 'escalation.check', 1, s.sd.escalation."check"
FROM t_step s
WHERE s.sd.escalation."check" IS NOT NULL
UNION ALL
SELECT h.rec, h.run_id, h.process_name, h.version_text, '$.steps.' || h.step || '.history[' || h.idx || '].check', h.step,
       hist_attempt(h.hd, h.idx + 1),
       'history', 3, h.hd."check"
FROM t_hist h
WHERE h.hd."check" IS NOT NULL
UNION ALL
SELECT r.rec, r.run_id, r.process_name, r.version_text, '$.handoff.check',
       json_string(r.handoff.step),
       coalesce((SELECT a.current_attempt FROM t_step a
                 WHERE a.rec = r.rec AND a.step = (r.handoff.step->>'$') AND json_type(r.handoff.step) = 'VARCHAR'), 1),
       'handoff.check', 4, r.handoff."check"
FROM t_handoff r;

-- name: checks_typed
INSERT INTO c_checks
SELECT c.rec, c.rec, c.path, c.run_id, c.process_name, c.version_text, c.step, c.attempt_raw,
       c.verdict, c.advisory, c.model, c.at_ts, c.recorded_in, c.is_truncated,
       CASE WHEN c.is_truncated THEN c.v.truncated END, c.n_questions, c.priority,
       -- The record pipeline's bad_checks rules, as one flag (its reasons come from that pipeline).
       verdict_bad(c.v, c.verdict, c.at_ts, c.attempt_raw, c.recorded_in, c.step),
       check_key(c.run_id, c.step, c.attempt_raw, c.at_ts, c.verdict, c.model)
FROM (SELECT *, unnest(verdict_fields(v)) FROM t_check) c;

-- name: questions
-- Each answer with the record pipeline's bad_questions rules as one flag (computed with the
-- typed columns, once: a filter over them would compute each column again for every rule).
-- The answers table's columns (but the ids), as s_staged_answers gives the record pipeline's.
INSERT INTO c_answers
SELECT rec, path, position, ask, kind,
       unnest(answer_values(kind, answer_type, answer_num, answer_text, confidence_num, result_type, result_text)),
       question_bad(q_null, ask, kind, answer_type, answer_num, answer_text, confidence_type, confidence_num,
                    result_type, result_text)
FROM (
    SELECT rec, path, position, q IS NULL AS q_null, unnest(question_leaves(q))
    FROM (
        SELECT rec, path, (generate_subscripts(v.questions, 1) - 1)::INTEGER AS position, unnest(v.questions) AS q
        FROM t_check WHERE len(v.questions) > 0
    )
);

-- name: bad_questions
-- The records any rule flags (a record may be listed more than once). A question asked twice in
-- one check is found by a hash of its place and text: a collision only sends a good record to the
-- record pipeline, which loads it as this lane would.
INSERT INTO c_slow
SELECT rec FROM c_answers WHERE bad
UNION ALL
SELECT rec FROM c_answers WHERE ask IS NOT NULL GROUP BY rec, hash(path, ask) HAVING count(*) > 1
UNION ALL
SELECT rec FROM c_checks WHERE bad
UNION ALL
SELECT rec FROM t_step WHERE bad_attempt OR current_attempt IS NULL OR blank_name(step)
UNION ALL
-- Runs without a usable id, or with a blank process.
SELECT rec FROM c_runs WHERE blank_name(run_id) OR (process_name IS NOT NULL AND blank_name(process_name));

-- name: decisions
-- Decisions from approve steps, history and escalations, as the record pipeline's decisions_raw.
CREATE OR REPLACE TEMP VIEW t_dec AS
WITH checked AS (
    SELECT s.rec, s.step, s.ordinal FROM t_step s
    WHERE s.sd."check" IS NOT NULL OR len(s.sd.history) > 0 OR s.sd.escalation IS NOT NULL
),
-- Only the fields the decision needs travel on (not the step's whole value), and the steps
-- that name the step they review skip the search for it.
approvals AS (
    SELECT s.rec, s.run_id, s.process_name, s.step, s.ordinal, json_string(s.sd.reviews) AS named,
           s.sd.decision AS decision_json, s.sd.by AS by_json, s.sd."at" AS at_json, s.sd.note AS note_json
    FROM t_step s
    WHERE s.sd.decision IS NOT NULL
),
reviewed AS (
    SELECT *, named AS reviewed FROM approvals WHERE named IS NOT NULL
    UNION ALL
    SELECT s.*,
           coalesce(
               (SELECT arg_max(c.step, c.ordinal) FROM checked c WHERE c.rec = s.rec AND c.ordinal < s.ordinal),
               -- Keys written in another order (sorted): the run's only checked step.
               (SELECT any_value(c.step) FROM checked c WHERE c.rec = s.rec HAVING count(*) = 1)
           )
    FROM approvals s
    WHERE named IS NULL
)
SELECT ap.rec, ap.run_id, ap.process_name, '$.steps.' || ap.step AS path, ap.reviewed AS step,
       (SELECT a.current_attempt FROM t_step a WHERE a.rec = ap.rec AND a.step = ap.reviewed) AS attempt,
       ap.decision_json, ap.by_json, ap.at_json, ap.note_json,
       'approve step' AS source
FROM reviewed ap
UNION ALL
SELECT h.rec, h.run_id, h.process_name, '$.steps.' || h.step || '.history[' || h.idx || ']', h.step,
       hist_attempt(h.hd, h.idx + 1),
       h.hd.decision, h.hd.by, h.hd."at", h.hd.note, 'history'
FROM t_hist h WHERE h.hd.decision IS NOT NULL
UNION ALL
SELECT s.rec, s.run_id, s.process_name, '$.steps.' || s.step || '.escalation', s.step, s.current_attempt,
       CASE (s.sd.escalation.resolution->>'$')
           WHEN 'completed' THEN CASE WHEN (s.sd.escalation.output->>'$') = 'own' THEN '"replaced"' ELSE '"completed"' END
           ELSE s.sd.escalation.resolution END::JSON,
       s.sd.escalation.by, s.sd.escalation."at", s.sd.escalation.note, 'escalation'
FROM t_step s
WHERE s.sd.escalation.resolution IS NOT NULL;

-- name: decisions_typed
INSERT INTO c_decisions
SELECT *, decision_key(run_id, step, attempt, decision, decided_by, at_ts)
FROM (
    SELECT d.rec, d.rec, d.path, d.run_id, d.process_name, d.step, d.attempt,
           decision_name(json_string(decision_json)) AS decision,
           json_id(by_json) AS decided_by,
           iso_time(nullif(json_string(at_json), '')) AS at_ts,
           nullif(json_string(note_json), '') AS note,
           d.source, d.decision_json, d.at_json,
           nullif(json_string(at_json), '') AS at_text
    FROM t_dec d
);

-- name: bad_decisions
-- The record pipeline's bad_decisions rules.
INSERT INTO c_slow
SELECT DISTINCT rec FROM c_decisions
WHERE coalesce(coalesce(decision, '') NOT IN ('approved', 'rejected', 'returned', 'completed', 'replaced', 'failed')
   OR blank_name(step)
   OR attempt IS NULL OR attempt < 1 OR attempt > 2147483647
   OR (at_text IS NOT NULL AND at_ts IS NULL)
   OR (at_json IS NOT NULL AND json_type(at_json) <> 'VARCHAR'), true)
EXCEPT SELECT rec FROM c_slow;

-- name: csv_decisions
-- A decision table (CSV): its rows as the record pipeline would load them, for the rows that
-- pass every rule that pipeline applies to a decision record; the loader stages the others.
-- Input: the temp view csv_cells(rec, run, process, step, attempt, decision, by, at, note),
-- cells as text, an empty cell NULL.
INSERT INTO c_decisions
SELECT rec, NULL, '$', run, process, step, attempt, decision, "by", at_ts, nullif(note, ''), 'table', NULL, NULL, NULL,
       decision_key(run, step, attempt, decision, "by", at_ts)
FROM (
    SELECT * REPLACE (decision_name(decision) AS decision),
           text_attempt(attempt_text) AS attempt,
           iso_time(nullif("at", '')) AS at_ts
    FROM (SELECT * EXCLUDE (attempt), attempt AS attempt_text FROM csv_cells)
)
WHERE coalesce(NOT blank_name(run)
      AND (process IS NULL OR NOT blank_name(process))
      AND decision IN ('approved', 'rejected', 'returned', 'completed', 'replaced', 'failed')
      AND NOT blank_name(step)
      AND attempt IS NOT NULL
      AND (nullif("at", '') IS NULL OR at_ts IS NOT NULL), false);
