-- A newer version of a file replaces what its older versions contributed.
-- Run by the loader inside the file's transaction when the store already holds a version of the
-- file's path, after the record pipeline (ingest_records.sql) has found what this version holds
-- (s_file_check with s_staged_answers, s_file_dec, s_file_run; empty for a file that can no longer be
-- read at all) and before it inserts anything. Every row has one owner, the file version in its
-- file_id; other files that hold it are in holds. A row an older version owns is
--   * kept when this version holds it with the same content (a grown file: nothing to do);
--   * withdrawn and replaced when this version holds it with other content (a changed answer, a
--     note): the latest version of a file wins, the pipeline inserts this version's row;
--   * handed over to another file that still holds it, when this version no longer does;
--   * withdrawn otherwise.
-- What is withdrawn is logged in withdrawn, which calibrate status reports.

-- name: nothing_held
-- What a file that could not be read holds: nothing (the loader runs this one for such files only).
CREATE OR REPLACE TEMP VIEW s_file_check AS
SELECT NULL::VARCHAR AS check_id, NULL::BIGINT AS rec, NULL::VARCHAR AS path, NULL::VARCHAR AS process_name, NULL::VARCHAR AS version_text,
       NULL::BOOLEAN AS advisory, NULL::VARCHAR AS recorded_in, NULL::BOOLEAN AS is_truncated,
       NULL::JSON AS truncation, NULL::BIGINT AS n_questions
LIMIT 0;
CREATE OR REPLACE TEMP VIEW s_staged_answers AS
SELECT NULL::BIGINT AS rec, NULL::VARCHAR AS path, NULL::INTEGER AS position, NULL::VARCHAR AS ask, NULL::VARCHAR AS kind,
       NULL::DOUBLE AS p, NULL::VARCHAR AS name, NULL::INTEGER AS level, NULL::DOUBLE AS confidence,
       NULL::VARCHAR AS result
LIMIT 0;
CREATE OR REPLACE TEMP VIEW s_file_dec AS
SELECT NULL::VARCHAR AS decision_id, NULL::VARCHAR AS process_name, NULL::VARCHAR AS note, NULL::VARCHAR AS source,
       NULL::VARCHAR AS run_id, NULL::VARCHAR AS step, NULL::INTEGER AS attempt
LIMIT 0;
CREATE OR REPLACE TEMP TABLE s_file_run AS
SELECT NULL::VARCHAR AS run_id, NULL::VARCHAR AS process_name, NULL::VARCHAR AS version_text
LIMIT 0;

-- name: older
CREATE OR REPLACE TEMP TABLE s_old AS
SELECT file_id FROM files WHERE path = (SELECT path FROM s_ctx);

-- name: gone
-- The older versions' rows that this version no longer holds, or holds with other content.
-- Content is every column but the key's, the row's place in its file and its file.
CREATE OR REPLACE TEMP TABLE s_gone AS
WITH old_check AS (SELECT * FROM checks WHERE file_id IN (SELECT file_id FROM s_old)),
kept_check AS (SELECT check_id FROM old_check SEMI JOIN s_file_check USING (check_id)),
old_answer AS (
    SELECT check_id, position, ask, kind, p, name, level, confidence, result
    FROM answers SEMI JOIN kept_check USING (check_id)
),
new_answer AS (
    SELECT g.check_id, q.position, q.ask, q.kind, q.p, q.name, q.level, q.confidence, q.result
    FROM s_file_check g SEMI JOIN kept_check USING (check_id) JOIN s_staged_answers q USING (rec, path)
),
old_dec AS (SELECT * FROM decisions WHERE file_id IN (SELECT file_id FROM s_old)),
old_run AS (SELECT * FROM runs WHERE file_id IN (SELECT file_id FROM s_old))
SELECT 'check' AS kind, check_id AS row_id, 'no longer in the file' AS reason
FROM old_check ANTI JOIN s_file_check USING (check_id)
UNION ALL
SELECT 'check', check_id, 'changed in the file' FROM (
    SELECT check_id FROM (
        SELECT check_id, process, version, advisory, recorded_in, truncated, truncation::VARCHAR, n_questions
        FROM old_check SEMI JOIN kept_check USING (check_id)
        EXCEPT
        SELECT check_id, process_name, version_text, advisory, recorded_in, is_truncated, truncation::VARCHAR,
               n_questions
        FROM s_file_check SEMI JOIN kept_check USING (check_id))
    UNION
    -- an answer added, dropped or different (one join: cheaper than EXCEPT both ways)
    SELECT coalesce(o.check_id, n.check_id)
    FROM old_answer o FULL JOIN new_answer n ON o.check_id = n.check_id AND o.position = n.position
    WHERE o.check_id IS NULL OR n.check_id IS NULL
       OR (o.ask, o.kind, o.p, o.name, o.level, o.confidence, o.result)
          IS DISTINCT FROM (n.ask, n.kind, n.p, n.name, n.level, n.confidence, n.result)
)
UNION ALL
-- A decision the file no longer says, told apart from one it corrected (the same submission decided
-- otherwise: another value, approver or time).
SELECT 'decision', o.decision_id,
       CASE WHEN EXISTS (SELECT 1 FROM s_file_dec f
                         WHERE f.run_id = o.run_id AND f.step = o.step AND f.attempt = o.attempt)
            THEN 'replaced in the file' ELSE 'no longer in the file' END
FROM old_dec o ANTI JOIN s_file_dec USING (decision_id)
UNION ALL
SELECT 'decision', decision_id, 'changed in the file' FROM (
    SELECT decision_id, process, note, source FROM old_dec SEMI JOIN s_file_dec USING (decision_id)
    EXCEPT
    SELECT decision_id, process_name, note, source FROM s_file_dec SEMI JOIN old_dec USING (decision_id)
)
UNION ALL
SELECT 'run', run_id, 'no longer in the file' FROM old_run ANTI JOIN s_file_run USING (run_id)
UNION ALL
SELECT 'run', run_id, 'changed in the file' FROM (
    SELECT run_id, process, version FROM old_run SEMI JOIN s_file_run USING (run_id)
    EXCEPT
    SELECT run_id, process_name, version_text FROM s_file_run SEMI JOIN old_run USING (run_id)
);

-- name: hand_over
-- A row this version dropped that another file still holds passes to that file (the earliest).
CREATE OR REPLACE TEMP TABLE s_hand_over AS
SELECT g.kind, g.row_id, min(h.file_id) AS holder
FROM s_gone g JOIN holds h USING (kind, row_id)
WHERE g.reason IN ('no longer in the file', 'replaced in the file')
  AND h.file_id NOT IN (SELECT file_id FROM s_old)
GROUP BY g.kind, g.row_id;
UPDATE checks SET file_id = s.holder FROM s_hand_over s WHERE s.kind = 'check' AND checks.check_id = s.row_id;
UPDATE decisions SET file_id = s.holder FROM s_hand_over s
WHERE s.kind = 'decision' AND decisions.decision_id = s.row_id;
UPDATE runs SET file_id = s.holder FROM s_hand_over s WHERE s.kind = 'run' AND runs.run_id = s.row_id;
DELETE FROM holds USING s_hand_over s
WHERE holds.kind = s.kind AND holds.row_id = s.row_id AND holds.file_id = s.holder;
DELETE FROM s_gone USING s_hand_over s WHERE s_gone.kind = s.kind AND s_gone.row_id = s.row_id;

-- name: log
INSERT INTO withdrawn
SELECT (SELECT file_id FROM s_ctx), (SELECT path FROM s_ctx), g.kind, g.row_id, w.run_id, w.step, w.attempt,
       w.what, g.reason, now()
FROM s_gone g JOIN (
    SELECT 'check' AS kind, check_id AS row_id, run_id, step, attempt, verdict AS what
    FROM checks WHERE check_id IN (SELECT row_id FROM s_gone WHERE kind = 'check')
    UNION ALL
    SELECT 'decision', decision_id, run_id, step, attempt, decision
    FROM decisions WHERE decision_id IN (SELECT row_id FROM s_gone WHERE kind = 'decision')
    UNION ALL
    SELECT 'run', run_id, run_id, NULL, NULL, process
    FROM runs WHERE run_id IN (SELECT row_id FROM s_gone WHERE kind = 'run')
) w USING (kind, row_id);

-- name: withdraw
DELETE FROM answers WHERE check_id IN (SELECT row_id FROM s_gone WHERE kind = 'check');
DELETE FROM checks WHERE check_id IN (SELECT row_id FROM s_gone WHERE kind = 'check');
DELETE FROM decisions WHERE decision_id IN (SELECT row_id FROM s_gone WHERE kind = 'decision');
DELETE FROM runs WHERE run_id IN (SELECT row_id FROM s_gone WHERE kind = 'run');
-- This version's holdings replace the older versions' (the pipeline records them next).
DELETE FROM holds WHERE file_id IN (SELECT file_id FROM s_old);
