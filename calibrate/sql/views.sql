-- Derived views. Re-created on every open, so they always match the code.

-- Replaced by check_labels (labels are per decided check, not per submission).
DROP VIEW IF EXISTS submission_labels;

CREATE OR REPLACE VIEW current_limits AS
SELECT
    coalesce((SELECT check_pass FROM limits ORDER BY file_id DESC LIMIT 1), 0.9) AS check_pass,
    (SELECT check_fail FROM limits ORDER BY file_id DESC LIMIT 1) AS check_fail,
    coalesce((SELECT check_confidence FROM limits ORDER BY file_id DESC LIMIT 1), 0.8) AS check_confidence;

-- Questions with the server defaults filled in where the process file left a key out: today's
-- (questions) and every ingested version's (question_versions).
CREATE OR REPLACE MACRO with_server_defaults(question_table) AS TABLE
SELECT
    q.question_id, q.process, q.process_version, q.step, q.position, q.ask, q.kind,
    CASE WHEN q.kind = 'yes_no' THEN coalesce(q.pass_p, l.check_pass) END AS pass_p,
    CASE WHEN q.kind = 'yes_no' THEN coalesce(q.fail_p, l.check_fail) END AS fail_p,
    q.pass_names, q.unsure_names, q.pass_level,
    CASE WHEN q.kind IN ('choice', 'rubric') THEN coalesce(q.confidence, l.check_confidence) END
        AS min_confidence,
    q.one_of, q.levels, q.advisory
FROM query_table(question_table) q CROSS JOIN current_limits l;

CREATE OR REPLACE VIEW question_thresholds AS SELECT * FROM with_server_defaults('questions');
CREATE OR REPLACE VIEW question_version_thresholds AS
SELECT * FROM with_server_defaults('question_versions');

-- The check each decision was made on: the latest check of its submission (run, step, attempt)
-- recorded at or before the decision. A returned escalation and the approval of the same attempt's
-- next check then label two checks, not one submission twice. A decision without a time, or earlier
-- than every timed check, is on the submission's latest check. Decisions on a submission with no
-- recorded check have none (calibrate status counts them). A decision that names a process is on
-- that process's checks only: one that names another process for the run labels nothing, in
-- whatever order the files came (the server's records say which process a run is of).
CREATE OR REPLACE VIEW decision_checks AS
WITH spans AS (  -- each check's span: from its time to the next later check's (ties: check_id)
    SELECT check_id, run_id, process, step, attempt, checked_at,
           row_number() OVER newest = 1 AS is_latest,
           lag(checked_at) OVER newest AS later_at,
           min(checked_at) OVER (PARTITION BY run_id, step, attempt) AS earliest_at
    FROM checks
    WINDOW newest AS (PARTITION BY run_id, step, attempt ORDER BY checked_at DESC NULLS LAST, check_id)
)
SELECT d.*, s.check_id
FROM decisions d
JOIN spans s ON d.run_id = s.run_id AND d.step = s.step AND d.attempt = s.attempt
    AND (d.process IS NULL OR s.process IS NULL OR d.process = s.process)
WHERE (s.checked_at <= d.decided_at AND (s.later_at IS NULL OR d.decided_at < s.later_at))
   OR (s.is_latest AND (d.decided_at IS NULL OR s.earliest_at IS NULL OR d.decided_at < s.earliest_at));

-- The audit label of each drawn check: the first decision on it made at or after its draw (the
-- blind one, as the reviewer of the draw's CSV gives it; ties by decision id). A decision dated
-- before the draw is no audit (made without the draw, by whoever); an undated one counts as made
-- when its file was ingested. A time at exactly midnight UTC, which is how a date alone is stored,
-- is read as that whole day: on the draw's day or later it counts as made at the draw at the
-- earliest (a reviewer who writes only the date of the review loses nothing; a decision really
-- timed at midnight on the draw's day is read the same way). Different decisions after the draw
-- are a conflict (as for any check): the first is still used. One row per drawn check (its
-- earliest draw), decision NULL until a decision arrives. The monitor reads this view, and
-- check_labels labels drawn checks with it.
CREATE OR REPLACE VIEW audit_labels AS
WITH drawn AS (
    SELECT e.check_id, min(d.drawn_at) AS drawn_at
    FROM audit_eligible e JOIN audit_draws d USING (draw_id)
    WHERE e.drawn
    GROUP BY e.check_id
), made AS (
    SELECT dc.check_id, dc.decision_id, dc.decision, dc.decided_by, dc.decided_at, dc.note,
           CASE WHEN epoch_us(dc.decided_at) % 86400000000 = 0  -- a day: [midnight, next midnight)
                     AND dc.decided_at + INTERVAL 1 DAY > drawn.drawn_at
                     -- a file ingested before the draw cannot hold a review made for it
                     AND (f.ingested_at IS NULL OR f.ingested_at >= drawn.drawn_at)
                THEN greatest(dc.decided_at, drawn.drawn_at)
                ELSE coalesce(dc.decided_at, f.ingested_at, TIMESTAMPTZ '1970-01-01') END AS made_at
    FROM decision_checks dc JOIN drawn USING (check_id) LEFT JOIN files f USING (file_id)
)
SELECT
    d.check_id,
    d.drawn_at,
    arg_min(m.decision, (m.made_at, m.decision_id)) FILTER (m.made_at >= d.drawn_at) AS decision,
    arg_min(m.decided_by, (m.made_at, m.decision_id)) FILTER (m.made_at >= d.drawn_at)
        AS decided_by,
    arg_min(m.decided_at, (m.made_at, m.decision_id)) FILTER (m.made_at >= d.drawn_at)
        AS decided_at,
    arg_min(m.note, (m.made_at, m.decision_id)) FILTER (m.made_at >= d.drawn_at) AS note,
    min(m.made_at) FILTER (m.made_at >= d.drawn_at) AS made_at,
    count(m.decision) FILTER (m.made_at >= d.drawn_at) AS n_decisions,
    count(m.decision) FILTER (m.made_at < d.drawn_at) AS n_before,
    count(DISTINCT m.decision) FILTER (m.made_at >= d.drawn_at) > 1 AS conflict
FROM drawn d LEFT JOIN made m USING (check_id)
GROUP BY d.check_id, d.drawn_at;

-- All decisions on one check folded into one label: a drawn check's is its audit label (above);
-- every other check is labeled by its latest decision.
CREATE OR REPLACE VIEW check_labels AS
WITH latest AS (  -- one decision per check, whole: undated below dated ones, ties by decision id
    SELECT
        dc.check_id,
        arg_max({'decision': dc.decision, 'decided_by': dc.decided_by, 'decided_at': dc.decided_at,
                 'note': dc.note},
                (coalesce(dc.decided_at, TIMESTAMPTZ '-infinity'), dc.decision_id)) AS d,
        count(*) AS n_decisions,
        count(DISTINCT dc.decision) > 1 AS conflict
    FROM decision_checks dc ANTI JOIN audit_labels a USING (check_id)
    GROUP BY dc.check_id
)
SELECT check_id, d.decision, d.decided_by, d.decided_at, d.note, n_decisions, conflict
FROM latest
UNION ALL
SELECT check_id, decision, decided_by, decided_at, note, n_decisions, conflict
FROM audit_labels
WHERE decision IS NOT NULL;

-- One row per recorded check, with the person's decision on it. A check no decision was made on
-- is unlabeled: an earlier check of an attempt (a blocking fail the agent then fixed) that no
-- person saw, or a check still waiting. is_latest marks the latest check of each submission.
-- is_latest is ranked again here, not taken from decision_checks' window: one window shared by
-- both needs its wide rows materialised, measured slower (2.8 s against 2.2 s a read at 1M runs).
CREATE OR REPLACE VIEW labeled AS
WITH ranked AS (
    SELECT c.*,
           row_number() OVER (
               PARTITION BY run_id, step, attempt
               ORDER BY checked_at DESC NULLS LAST, check_id) = 1 AS is_latest
    FROM checks c
)
SELECT
    r.check_id, r.run_id, r.process, r.version, r.step, r.attempt, r.verdict, r.advisory,
    r.model, r.checked_at AS "at", r.recorded_in, r.truncated, r.n_questions, r.is_latest,
    s.decision, s.decided_by, s.decided_at, s.note,
    s.decision IN ('approved', 'completed') AS label,
    coalesce(s.conflict, false) AS conflict,
    coalesce(s.n_decisions, 0) AS n_decisions,
    -- After the switch (advisory: false) a decision is a sample of the check only when a stored
    -- audit draw offered the check; any other (an escalation: the unsure region alone) is left
    -- out of certification by default (dataset.Filters.escalations).
    coalesce(e.drawn, false) AS audited,
    e.draw_id, e.inclusion_p,
    (r.advisory IS NOT DISTINCT FROM false AND s.decision IS NOT NULL
        AND NOT coalesce(e.drawn, false)) AS left_out
FROM ranked r
LEFT JOIN check_labels s USING (check_id)
LEFT JOIN audit_eligible e USING (check_id);

-- One row per answered question, with its check's label and today's thresholds (the newest process
-- version's; question_version_thresholds holds every version's).
CREATE OR REPLACE VIEW labeled_answers AS
SELECT
    l.check_id, l.run_id, l.process, l.version, l.step, l.attempt, l.verdict, l.advisory,
    l.model, l."at", l.decision, l.decided_by, l.decided_at, l.label, l.conflict, l.is_latest,
    l.audited, l.inclusion_p, l.left_out,
    a.position, a.question_id, a.ask, a.kind, a.p, a.name, a.level, a.confidence, a.result,
    t.question_id IS NOT NULL AS in_process_file,
    t.pass_p, t.fail_p, t.pass_names, t.unsure_names, t.pass_level, t.min_confidence,
    t.one_of, t.levels
FROM labeled l
JOIN answers a USING (check_id)
LEFT JOIN question_thresholds t USING (question_id);
