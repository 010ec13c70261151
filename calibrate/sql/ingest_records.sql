-- The record pipeline: from raw lines in stage_lines to rows of the store.
-- Statements are separated by "-- name:" markers and run in order inside the
-- file's transaction. Every record (rec) ends up either in bad_records
-- (quarantined, with reasons) or loaded whole.
-- Inputs: temp tables stage_lines(rec, line_no, json_path, line) and
-- pre_bad(rec, line_no, json_path, raw, reason), created by the loader, and the
-- typed lane's candidates f_recs, f_checks, f_answers, f_decisions (ingest_typed.sql;
-- empty unless that lane took part of the file), which the inserts read beside
-- this pipeline's own rows so that keys and duplicates are settled over both.

-- name: macros
-- Blanks: what Python's str.strip() strips (a blank CSV row is one of only these, tables.py):
-- ASCII space, tab, line ends, and those a spreadsheet or web page leaves, such as a no-break
-- space (U+00A0) or a narrow one (U+202F). Blanks around a decision, an attempt or a time are not
-- part of it; a name of only blanks names nothing. As a pattern: [\s\x0b\x1c-\x1f\x85\p{Z}].
-- (A pattern, not trim(t, characters): measured, trim with these characters costs five times
-- as much, and even trim of ASCII blanks costs three times as much.)
CREATE OR REPLACE TEMP MACRO trim_blanks(t) AS (
    regexp_replace(t, '^[\s\x0b\x1c-\x1f\x85\p{Z}]+|[\s\x0b\x1c-\x1f\x85\p{Z}]+$', '', 'g'));
-- A JSON value's text for a reason, with what cannot be seen written as a JSON escape: spaces other
-- than ASCII's, invisible formatting characters (a zero-width space, a byte order mark), line
-- separators (DuckDB already escapes control characters). Only reasons use it: a loop per character.
CREATE OR REPLACE TEMP MACRO shown_json(j) AS (
    CASE WHEN NOT regexp_matches(j::VARCHAR, '[\x85\p{Cf}]|[^ \P{Z}]') THEN j::VARCHAR
         ELSE array_to_string(list_transform(string_split(j::VARCHAR, ''), lambda c:
             CASE WHEN regexp_full_match(c, '[\x85\p{Cf}]|[^ \P{Z}]')
                  THEN '\u' || format('{:04x}', unicode(c)) ELSE c END), '') END);
-- A whole number: an integer, or a number with no fractional part (2.0, as pandas and Arrow
-- write an integer column with a missing value); NULL otherwise. 2.5 is not whole.
CREATE OR REPLACE TEMP MACRO is_whole(x) AS (x = floor(x) AND x BETWEEN -9.0e18 AND 9.0e18);
CREATE OR REPLACE TEMP MACRO json_whole(j) AS (
    CASE WHEN json_type(j) IN ('UBIGINT', 'BIGINT') THEN try_cast((j->>'$') AS BIGINT)
         WHEN json_type(j) = 'DOUBLE' AND is_whole(try_cast((j->>'$') AS DOUBLE))
         THEN try_cast((j->>'$') AS DOUBLE)::BIGINT END);
-- An attempt is a whole number in [1, 2^31 - 1]; anything else is NULL, which
-- quarantines the record (a huge number must not overflow the INTEGER column).
CREATE OR REPLACE TEMP MACRO json_attempt(j) AS (
    CASE WHEN json_whole(j) BETWEEN 1 AND 2147483647 THEN json_whole(j) END);
-- An attempt written as text (a table cell): digits, optionally ".0" ('1.5' must not round to 2).
-- Blanks around are allowed; the digits are taken by the pattern (measured: cheaper than a trim).
-- The digits are named once, in a lambda, as iso_time's time (below).
CREATE OR REPLACE TEMP MACRO text_attempt(t) AS (
    list_transform(
        [try_cast(regexp_extract(t, '^[\s\x0b\x1c-\x1f\x85\p{Z}]*([0-9]{1,10})(?:\.0*)?[\s\x0b\x1c-\x1f\x85\p{Z}]*$', 1) AS BIGINT)],
        lambda x: CASE WHEN x BETWEEN 1 AND 2147483647 THEN x END)[1]);
-- Why an attempt (j, its JSON value; x, its value as a number, NULL when none) is not one, after
-- the field's name p: too large is said apart, as a positive integer can be too large.
CREATE OR REPLACE TEMP MACRO attempt_reason(p, j, x) AS (
    p || ' must be a positive integer'
    || CASE WHEN x = floor(x) AND x > 2147483647 THEN ' up to 2147483647 (too large)' ELSE '' END
    || ', not ' || shown_json(j));
-- A decision's attempt as a number: a JSON number, or a table cell's digits (text_attempt's form).
CREATE OR REPLACE TEMP MACRO decision_attempt_number(j) AS (
    CASE WHEN json_type(j) = 'VARCHAR'
         THEN try_cast(regexp_extract((j->>'$'), '^[\s\x0b\x1c-\x1f\x85\p{Z}]*([0-9]+(?:\.0*)?)[\s\x0b\x1c-\x1f\x85\p{Z}]*$', 1) AS DOUBLE)
         WHEN json_type(j) IN ('DOUBLE', 'UBIGINT', 'BIGINT') THEN try_cast((j->>'$') AS DOUBLE) END);
-- A rubric level: a whole number in [0, 2^31 - 1] (x is the answer as DOUBLE, t its JSON type).
CREATE OR REPLACE TEMP MACRO is_level(t, x) AS (
    t IN ('UBIGINT', 'BIGINT', 'DOUBLE') AND x BETWEEN 0 AND 2147483647 AND is_whole(x));
-- A time is ISO 8601 in one of the forms docs/formats.md lists (RFC 3339's among them): a
-- calendar date, extended (YYYY-MM-DD) or basic (YYYYMMDD), then optionally a time after T, t or
-- (extended) a space: hh:mm[:ss[.f]] or basic hhmm[ss[.f]] (a fraction after a dot or a comma,
-- with at least one digit), and an offset Z, z, +-hh:mm, +-hhmm or +-hh with hours 00-23 and
-- minutes 00-59 (RFC 3339: DuckDB reads +25:00 or +99:99 as an offset of a day or more, which
-- would move the time by days), or (extended) ' UTC' as BigQuery writes it. Blanks around are
-- allowed (Unicode ones too, as around a decision). Week and ordinal dates are not read. The
-- grammar, not DuckDB's cast, says what is a time: the cast also takes 'epoch', 'infinity', zone
-- names and '10:00:00.Z'; the cast then refuses what is no instant (T25:00, 02-30). The common
-- form (extended, upper case, a dot, no blanks around) is cast as it is; any other is first
-- written in that form. Each pattern is one literal (a pattern built with || would be compiled
-- again for every value).
CREATE OR REPLACE TEMP MACRO iso_time_parts(p) AS (
    CASE WHEN p.y1 || p.y2 <> '' THEN try_cast(
        p.y1 || p.y2 || '-' || p.mo1 || p.mo2 || '-' || p.d1 || p.d2
        || CASE WHEN p.h1 || p.h2 = '' THEN ''
                ELSE 'T' || p.h1 || p.h2 || ':' || p.mi1 || p.mi2
                     || CASE WHEN p.s1 || p.s2 = '' THEN '' ELSE ':' || p.s1 || p.s2 END
                     || CASE WHEN p.f1 || p.f2 = '' THEN '' ELSE '.' || p.f1 || p.f2 END
                     || upper(p.z1 || p.z2) END
        AS TIMESTAMPTZ) END);
CREATE OR REPLACE TEMP MACRO iso_time_any(t) AS (
    CASE WHEN regexp_full_match(t, '[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?(Z| UTC|[+-]([01][0-9]|2[0-3])(:[0-5][0-9](:[0-5][0-9])?|[0-5][0-9])?)?)?')
         THEN try_cast(t AS TIMESTAMPTZ)
         ELSE iso_time_parts(regexp_extract(t,
             '^[\s\x0b\x1c-\x1f\x85\p{Z}]*(?:([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]+))?)?(Z|z| UTC|[+-](?:[01][0-9]|2[0-3])(?::[0-5][0-9](?::[0-5][0-9])?|[0-5][0-9])?)?)?|([0-9]{4})([0-9]{2})([0-9]{2})(?:[Tt]([0-9]{2})([0-9]{2})(?:([0-9]{2})(?:[.,]([0-9]+))?)?(Z|z|[+-](?:[01][0-9]|2[0-3])(?:[0-5][0-9])?)?)?)[\s\x0b\x1c-\x1f\x85\p{Z}]*$',
             ['y1', 'mo1', 'd1', 'h1', 'mi1', 's1', 'f1', 'z1', 'y2', 'mo2', 'd2', 'h2', 'mi2', 's2', 'f2', 'z2'])) END);
-- Years 0001 to 9999 in UTC, as every reader of the store (Python's datetime) can hold them:
-- 0000-01-01 would be stored as 1 BC and crash them.
-- (The time is written once, in a lambda: a macro naming it twice doubled the planning of
-- every statement using it, a third more per small file.)
CREATE OR REPLACE TEMP MACRO iso_time(t) AS (
    list_transform([iso_time_any(t)], lambda x: CASE WHEN x BETWEEN TIMESTAMPTZ '0001-01-01 00:00:00+00'
                                                         AND TIMESTAMPTZ '9999-12-31 23:59:59.999999+00'
                                                THEN x END)[1]);
-- Why a time is not one (said: where, ending in ': ' or empty; j: the "at" value as JSON).
CREATE OR REPLACE TEMP MACRO not_a_time(said, j) AS (
    said || '"at" ' || shown_json(j) || ' is not an ISO 8601 time calibrate reads '
    || '(YYYY-MM-DD[Thh:mm[:ss[.f]]][Z|+hh:mm|-hh:mm] or basic YYYYMMDD[Thhmm[ss[.f]]][Z|+hhmm|-hhmm]; '
    || 'years 0001 to 9999 in UTC; no week or ordinal dates)');
-- A name (a run id, a process, a step) that is missing, empty or only blanks names nothing.
-- Trimmed only when it sorts before '!' or after '~' (an ASCII blank does, as '' does, and so does
-- any other, as every character from U+0080 on; few names do): on every run id and step, a trim
-- costs as much as the rest of the typed lane's tests together.
CREATE OR REPLACE TEMP MACRO blank_name(t) AS (
    CASE WHEN coalesce(t < '!' OR t > '~', true) THEN coalesce(trim_blanks(t), '') = ''
         ELSE false END);
-- The keys an object holds more than once (keys: its json_keys, in order) among those calibrate
-- reads there (known): which of the values is meant cannot be told (DuckDB reads the first,
-- Python's json the last), so the record is quarantined. n_read is how many of the known keys
-- were read with a value (not null): an object with no more keys than that repeats none, and
-- only the others are searched (a search per object would cost a tenth of the pipeline).
CREATE OR REPLACE TEMP MACRO repeated_keys(keys, n_read, known) AS (
    CASE WHEN len(keys) > n_read THEN
        list_sort(list_filter(list_distinct(keys), lambda k: list_contains(known, k)
            AND list_position(keys, k) < len(keys) + 1 - list_position(list_reverse(keys), k))) END);
CREATE OR REPLACE TEMP MACRO present(x) AS ((x IS NOT NULL)::INTEGER);
-- A JSON value's type from its keys (json_keys: [] for anything but an object that has keys),
-- so that an object, whose keys are read anyway, is parsed once for both.
CREATE OR REPLACE TEMP MACRO keys_type(keys, j) AS (CASE WHEN len(keys) > 0 THEN 'OBJECT' ELSE json_type(j) END);
-- Why: said at the object's path (the record itself: "record").
CREATE OR REPLACE TEMP MACRO repeated_reason(said, k) AS (
    said || ' repeats the key ' || to_json(k)::VARCHAR || ': which of its values is meant is ambiguous');
-- A JSON string's text (NULL when the value is not a string), and an identifier's text
-- (a string or an integer; NULL otherwise).
CREATE OR REPLACE TEMP MACRO json_string(j) AS (CASE WHEN json_type(j) = 'VARCHAR' THEN (j->>'$') END);
CREATE OR REPLACE TEMP MACRO json_id(j) AS (
    CASE WHEN json_type(j) IN ('VARCHAR', 'UBIGINT', 'BIGINT') THEN (j->>'$') END);
-- The natural keys of a check and of a decision (md5 text; concat_ws skips a NULL).
CREATE OR REPLACE TEMP MACRO check_key(run_id, step, attempt, at_ts, verdict, model) AS (
    md5(concat_ws(chr(31), run_id, step, attempt::VARCHAR, coalesce(at_ts::VARCHAR, ''), verdict,
                  coalesce(model, ''))));
CREATE OR REPLACE TEMP MACRO decision_key(run_id, step, attempt, decision, decided_by, at_ts) AS (
    md5(concat_ws(chr(31), run_id, step, attempt::VARCHAR, decision, coalesce(decided_by, ''),
                  coalesce(at_ts::VARCHAR, ''))));
-- A question's leaves (JSON values) as typed fields, taken alike by both pipelines
-- (unnest(question_leaves(q)) gives them as columns), and the answers table's value columns
-- (p, name, level, confidence, result) made from those fields.
CREATE OR REPLACE TEMP MACRO question_leaves(q) AS {
    'ask': json_string(q.ask), 'kind': json_string(q.kind),
    'answer_type': json_type(q.answer), 'answer_text': (q.answer->>'$'), 'answer_num': json_number(q.answer),
    'confidence_type': json_type(q.confidence), 'confidence_num': json_number(q.confidence),
    'result_type': json_type(q.result), 'result_text': (q.result->>'$')};
CREATE OR REPLACE TEMP MACRO answer_values(kind, answer_type, answer_num, answer_text, confidence_num, result_type,
                                           result_text) AS {
    'p': CASE WHEN kind = 'yes_no' THEN answer_num END,
    'name': CASE WHEN kind = 'choice' THEN answer_text END,
    'level': CASE WHEN kind = 'rubric' AND is_level(answer_type, answer_num) THEN answer_num::INTEGER END,
    'confidence': confidence_num,
    'result': CASE WHEN result_type = 'VARCHAR' THEN result_text END};
-- A run step's current attempt in the typed lane (sd: the step as read there): its own "attempt",
-- else one past its history; a history entry's attempt (i: its place, from 1) is its own, else i.
CREATE OR REPLACE TEMP MACRO hist_attempt(h, i) AS (
    CASE WHEN h.attempt IS NULL OR json_type(h.attempt) = 'NULL' THEN i ELSE json_attempt(h.attempt) END);
CREATE OR REPLACE TEMP MACRO step_attempt(sd) AS (
    CASE WHEN sd.attempt IS NOT NULL AND json_type(sd.attempt) <> 'NULL' THEN json_attempt(sd.attempt)
         ELSE coalesce(list_max(list_transform(sd.history, lambda h, i: hist_attempt(h, i))) + 1, 1) END);
-- The typed lane's rules (ingest_typed.sql; the lean load of benchmarks/ingest_bound.py reads them
-- too), each as one flag: a verdict's (from its typed fields) and a question's. Unknown (NULL)
-- counts as bad, so that a doubt sends the record to this pipeline, which gives the reasons.
CREATE OR REPLACE TEMP MACRO verdict_fields(v) AS {
    'verdict': json_string(v.verdict),
    'advisory': CASE WHEN json_type(v.advisory) = 'BOOLEAN' THEN ((v.advisory->>'$'))::BOOLEAN END,
    'model': json_string(v.model),
    'at_ts': iso_time(json_string(v."at")),
    'is_truncated': v.truncated IS NOT NULL AND (v.truncated->>'$') <> 'false',
    'n_questions': coalesce(len(v.questions), 0)};
CREATE OR REPLACE TEMP MACRO verdict_bad(v, verdict, at_ts, attempt_raw, recorded_in, step) AS (coalesce(
    v.verdict IS NULL
    OR coalesce(verdict, '') NOT IN ('pass', 'fail', 'unsure', 'error')
    OR (v.questions IS NULL AND verdict <> 'error')
    OR (len(v.questions) = 0 AND verdict IN ('pass', 'fail', 'unsure'))
    OR (v."at" IS NOT NULL AND at_ts IS NULL)
    OR (v.advisory IS NOT NULL AND json_type(v.advisory) <> 'BOOLEAN')
    OR (v.model IS NOT NULL AND json_type(v.model) <> 'VARCHAR')
    OR attempt_raw IS NULL OR attempt_raw < 1 OR attempt_raw > 2147483647
    OR (recorded_in = 'handoff.check' AND blank_name(step)), true));
CREATE OR REPLACE TEMP MACRO question_bad(q_null, ask, kind, answer_type, answer_num, answer_text, confidence_type,
                                          confidence_num, result_type, result_text) AS (coalesce(
    q_null
    OR coalesce(trim(ask), '') = ''
    OR coalesce(kind, '') NOT IN ('yes_no', 'choice', 'rubric')
    OR answer_type IS NULL
    OR (kind = 'yes_no' AND (answer_type NOT IN ('DOUBLE', 'UBIGINT', 'BIGINT') OR answer_num IS NULL
                             OR isnan(answer_num) OR isinf(answer_num) OR answer_num < 0 OR answer_num > 1))
    OR (kind = 'choice' AND (answer_type <> 'VARCHAR' OR trim(answer_text) = ''))
    OR (kind = 'rubric' AND NOT is_level(answer_type, answer_num))
    OR (confidence_type IS NOT NULL AND (confidence_num IS NULL OR isnan(confidence_num) OR isinf(confidence_num)
                                         OR confidence_num < 0 OR confidence_num > 1))
    OR (result_type IS NOT NULL AND coalesce(result_text, '') NOT IN ('pass', 'fail', 'unsure')), true));
-- A question's id, as process files give it (calibrate/ingest/process_files.py).
CREATE OR REPLACE TEMP MACRO question_key(process_name, step, ask) AS (
    md5(concat_ws(chr(31), coalesce(process_name, ''), step, ask)));
-- Any case, and blanks around (spaces, tabs, line ends, a no-break space: a spreadsheet cell keeps them).
CREATE OR REPLACE TEMP MACRO decision_name(t) AS (lower(trim_blanks(t)));
-- A JSON number as DOUBLE (NULL when it is not a number or does not fit).
CREATE OR REPLACE TEMP MACRO json_number(j) AS (
    CASE WHEN json_type(j) IN ('DOUBLE', 'UBIGINT', 'BIGINT') THEN try_cast((j->>'$') AS DOUBLE) END);

-- name: parse
-- The record's number of keys, for the test of a repeated one (fields), costs no parse more.
CREATE OR REPLACE TEMP TABLE s_rec AS
SELECT rec, line_no, json_path, line, top_type IS NOT NULL AS valid, top_type, n_keys
FROM (
    SELECT rec, line_no, json_path, line, keys_type(keys, j) AS top_type, len(keys) AS n_keys
    FROM (
        SELECT *, json_keys(j) AS keys
        FROM (SELECT rec, line_no, json_path, line, try_cast(line AS JSON) AS j FROM stage_lines)
    )
)
-- JSON allows blanks and CR around a value, so only lines that fail to parse need trimming.
WHERE top_type IS NOT NULL OR trim(line, ' ' || chr(9) || chr(13)) <> '';

-- name: fields
-- The record's fields, and its keys when it has more than the fields read: one may repeat (which
-- of them matter: classify).
CREATE OR REPLACE TEMP TABLE s_doc AS
SELECT rec, line_no, json_path, d.*,
       CASE WHEN n_keys > present(d.run) + present(d.process) + present(d.version) + present(d.steps)
                          + present(d.handoff) + present(d.step) + present(d.attempt) + present(d."check")
                          + present(d.decision) + present(d.by) + present(d."at") + present(d.note)
            THEN json_keys(line) END AS keys
FROM (
    SELECT rec, line_no, json_path, line, n_keys,
           from_json(line, '{"run":"JSON","process":"JSON","version":"JSON","steps":"JSON","handoff":"JSON",
                             "step":"JSON","attempt":"JSON","check":"JSON","decision":"JSON","by":"JSON",
                             "at":"JSON","note":"JSON"}') AS d
    FROM s_rec WHERE valid AND top_type = 'OBJECT'
);

-- name: classify
CREATE OR REPLACE TEMP TABLE s_kind AS
SELECT *,
    CASE
        WHEN steps IS NOT NULL THEN 'run'
        WHEN "check" IS NOT NULL THEN 'verdict'
        -- A blank decision is one not made yet (an audit table partly filled in): pending.
        WHEN decision_name(json_string(decision)) = '' THEN 'pending'
        WHEN decision IS NOT NULL THEN 'decision'
    END AS kind,
    json_id(run) AS run_id,
    json_id(process) AS process_name,
    CASE WHEN json_type(version) IN ('VARCHAR', 'UBIGINT', 'BIGINT', 'DOUBLE') THEN (version->>'$') END AS version_text,
    -- The keys read at the top of a record that it repeats: of a run document, those the
    -- typed lane reads too; of any other record, every key that is read or tells its kind.
    repeated_keys(keys, 0, CASE WHEN steps IS NOT NULL THEN ['run', 'process', 'version', 'steps', 'handoff']
                             ELSE ['run', 'process', 'version', 'steps', 'handoff', 'step', 'attempt', 'check',
                                   'decision', 'by', 'at', 'note'] END) AS repeated
FROM s_doc;

-- name: pending
-- A record whose only kind key is "decision": null (a blank cell of a decision table) is pending
-- too: not loaded, not quarantined, counted apart (only records of no kind are looked at again).
UPDATE s_kind SET kind = 'pending'
WHERE kind IS NULL AND rec IN (
    SELECT r.rec FROM s_rec r SEMI JOIN (SELECT rec FROM s_kind WHERE kind IS NULL) k USING (rec)
    WHERE json_type(try_cast(r.line AS JSON), '$.decision') = 'NULL');

-- name: bad_top
CREATE OR REPLACE TEMP TABLE bad_reasons AS
SELECT rec, line_no, json_path, reason FROM pre_bad
UNION ALL
SELECT rec, line_no, json_path, 'line is not valid JSON' FROM s_rec WHERE NOT valid
UNION ALL
SELECT rec, line_no, json_path,
       'record is ' || CASE top_type WHEN 'ARRAY' THEN 'a JSON array' WHEN 'VARCHAR' THEN 'a string'
                                     WHEN 'BOOLEAN' THEN 'true or false' WHEN 'NULL' THEN 'null'
                                     ELSE 'a number' END
       || ', expected an object (one record '
       || CASE WHEN json_path LIKE '$[%' THEN 'per element of the array)' ELSE 'per line)' END
FROM s_rec WHERE valid AND top_type <> 'OBJECT'
UNION ALL
SELECT rec, line_no, json_path,
       'record is neither a run document (no "steps"), a verdict line (no "check") nor a decision (no "decision")'
FROM s_kind WHERE kind IS NULL
UNION ALL
SELECT rec, line_no, json_path, 'record has no "run" id (a string or an integer, not blank)'
FROM s_kind WHERE kind IN ('run', 'verdict', 'decision') AND blank_name(run_id)
UNION ALL
SELECT rec, line_no, json_path, '"process" is blank: name the process, or leave the field out'
FROM s_kind WHERE kind IN ('run', 'verdict', 'decision') AND process_name IS NOT NULL AND blank_name(process_name)
UNION ALL
SELECT rec, line_no, json_path, '"steps" must be an object of step ids'
FROM s_kind WHERE kind = 'run' AND json_type(steps) <> 'OBJECT'
UNION ALL
SELECT rec, line_no, json_path, 'verdict line has no "step" (a string, not blank)'
FROM s_kind WHERE kind = 'verdict' AND (json_type(step) IS DISTINCT FROM 'VARCHAR' OR blank_name(step->>'$'))
UNION ALL
-- A pending record too: a decision written twice, once blank, is not a decision left blank.
SELECT rec, line_no, json_path, repeated_reason('record', unnest(repeated))
FROM s_kind WHERE len(repeated) > 0;

-- name: steps
-- One row per step of a run document, with its position and current attempt.
CREATE OR REPLACE TEMP TABLE s_step AS
WITH m AS (
    SELECT k.rec, k.line_no, k.json_path, k.run_id, k.process_name, k.version_text, k.steps,
           try_cast(k.steps AS MAP(VARCHAR, JSON)) AS sm
    FROM s_kind k
    WHERE k.kind = 'run' AND json_type(k.steps) = 'OBJECT'
), kv AS (
    -- Objects with unique keys: unnest the map (fast). A step named twice (the map cannot
    -- hold it): json_each keeps both, to say which (below).
    SELECT rec, line_no, json_path, run_id, process_name, version_text,
           unnest(map_keys(sm)) AS step, generate_subscripts(map_keys(sm), 1) AS ordinal, unnest(map_values(sm)) AS value,
           false AS named_twice
    FROM m WHERE sm IS NOT NULL
    UNION ALL
    SELECT m.rec, m.line_no, m.json_path, m.run_id, m.process_name, m.version_text, s.key, s.id, s.value, true
    FROM m, json_each(m.steps) s WHERE m.sm IS NULL
), e AS (
    SELECT rec, line_no, json_path, run_id, process_name, version_text, step, ordinal, named_twice, value,
           -- "status" is not read, but every step has it: counted, a step is not searched for a repeat.
           from_json(value, '{"check":"JSON","history":"JSON","escalation":"JSON","decision":"JSON",
                              "reviews":"JSON","by":"JSON","at":"JSON","note":"JSON","attempt":"JSON",
                              "status":"JSON"}') AS sd,
           json_keys(value) AS keys
    FROM kv
)
SELECT * EXCLUDE (keys, esc_keys),
       repeated_keys(keys, present(sd."check") + present(sd.history) + present(sd.escalation) + present(sd.decision)
                           + present(sd.reviews) + present(sd.by) + present(sd."at") + present(sd.note)
                           + present(sd.attempt) + present(sd.status),
                     ['check', 'history', 'escalation', 'decision', 'reviews', 'by', 'at', 'note', 'attempt'])
           AS repeated,
       -- Escalations are few: each is searched.
       repeated_keys(esc_keys, 0, ['resolution', 'output', 'by', 'at', 'note', 'check']) AS esc_repeated
FROM (
    SELECT e.* EXCLUDE (value), keys_type(keys, value) AS step_type,
           CASE WHEN json_type(sd.history) = 'ARRAY' THEN json_array_length(sd.history) ELSE 0 END AS n_history,
           CASE WHEN json_type(sd.escalation) = 'OBJECT' THEN json_keys(sd.escalation) END AS esc_keys
    FROM e
);
-- A record that names a step twice is quarantined (bad_checks) and read no further: which of
-- the two is meant cannot be told (and a decision could not tell which one it labels).
CREATE OR REPLACE TEMP TABLE s_twice AS
SELECT rec, line_no, json_path, step FROM s_step WHERE named_twice GROUP BY ALL HAVING count(*) > 1;
DELETE FROM s_step WHERE named_twice;

-- name: history
CREATE OR REPLACE TEMP TABLE s_hist AS
SELECT * EXCLUDE (keys),
       repeated_keys(keys, present(hd.attempt) + present(hd."check") + present(hd.decision) + present(hd.by)
                           + present(hd."at") + present(hd.note),
                     ['attempt', 'check', 'decision', 'by', 'at', 'note']) AS repeated
FROM (
    SELECT rec, line_no, json_path, run_id, process_name, version_text, step, idx,
           from_json(value, '{"attempt":"JSON","check":"JSON","decision":"JSON","by":"JSON","at":"JSON","note":"JSON"}') AS hd,
           json_keys(value) AS keys
    FROM (
        SELECT rec, line_no, json_path, run_id, process_name, version_text, step,
               (generate_subscripts(hs, 1) - 1)::INTEGER AS idx, unnest(hs) AS value
        FROM (
            SELECT st.rec, st.line_no, st.json_path, st.run_id, st.process_name, st.version_text, st.step,
                   from_json(st.sd.history, '["JSON"]') AS hs
            FROM s_step st WHERE st.n_history > 0
        )
    )
);

-- name: attempts
CREATE OR REPLACE TEMP TABLE s_attempt AS
SELECT st.rec, st.step,
       CASE WHEN st.sd.attempt IS NOT NULL AND json_type(st.sd.attempt) <> 'NULL'
            THEN json_attempt(st.sd.attempt)
            ELSE coalesce(
                (SELECT max(CASE WHEN h.hd.attempt IS NULL OR json_type(h.hd.attempt) = 'NULL' THEN h.idx + 1
                                 ELSE json_attempt(h.hd.attempt) END) + 1
                 FROM s_hist h WHERE h.rec = st.rec AND h.step = st.step),
                1) END AS current_attempt
FROM s_step st;

-- name: checks_raw
-- Every verdict object found, wherever it was recorded.
CREATE OR REPLACE TEMP TABLE s_check AS
SELECT st.rec, st.line_no, st.json_path, '$.steps.' || st.step || '.check' AS path,
       st.run_id, st.process_name, st.version_text, st.step, a.current_attempt AS attempt_raw,
       'steps.check' AS recorded_in, 2 AS priority, st.sd."check" AS chk,
       '$.steps.' || st.step || '.attempt' AS attempt_path, st.sd.attempt AS attempt_json
FROM s_step st JOIN s_attempt a USING (rec, step)
WHERE st.sd."check" IS NOT NULL AND json_type(st.sd."check") <> 'NULL'
UNION ALL
SELECT st.rec, st.line_no, st.json_path, '$.steps.' || st.step || '.escalation.check',
       st.run_id, st.process_name, st.version_text, st.step, a.current_attempt,
       'escalation.check', 1, (st.sd.escalation->'check'), '$.steps.' || st.step || '.attempt',
       st.sd.attempt
FROM s_step st JOIN s_attempt a USING (rec, step)
WHERE json_type(st.sd.escalation) = 'OBJECT' AND json_type((st.sd.escalation->'check')) IS DISTINCT FROM 'NULL'
  AND (st.sd.escalation->'check') IS NOT NULL
UNION ALL
SELECT h.rec, h.line_no, h.json_path, '$.steps.' || h.step || '.history[' || h.idx || '].check',
       h.run_id, h.process_name, h.version_text, h.step,
       CASE WHEN h.hd.attempt IS NULL OR json_type(h.hd.attempt) = 'NULL' THEN h.idx + 1
            ELSE json_attempt(h.hd.attempt) END,
       'history', 3, h.hd."check", '$.steps.' || h.step || '.history[' || h.idx || '].attempt',
       h.hd.attempt
FROM s_hist h
WHERE h.hd."check" IS NOT NULL AND json_type(h.hd."check") <> 'NULL'
UNION ALL
SELECT k.rec, k.line_no, k.json_path, '$.handoff.check',
       k.run_id, k.process_name, k.version_text,
       CASE WHEN json_type((k.handoff->'step')) = 'VARCHAR' THEN (k.handoff->>'step') END,
       coalesce((SELECT a.current_attempt FROM s_attempt a
                 WHERE a.rec = k.rec AND a.step = (k.handoff->>'step')
                   AND json_type((k.handoff->'step')) = 'VARCHAR'), 1),
       'handoff.check', 4, (k.handoff->'check'), '$.steps.' || (k.handoff->>'step') || '.attempt',
       NULL::JSON
FROM s_kind k
WHERE k.kind = 'run' AND json_type(k.handoff) = 'OBJECT'
  AND (k.handoff->'check') IS NOT NULL AND json_type((k.handoff->'check')) <> 'NULL'
UNION ALL
SELECT k.rec, k.line_no, k.json_path, '$.check',
       k.run_id, k.process_name, k.version_text, (k.step->>'$'),
       CASE WHEN k.attempt IS NULL THEN 1 ELSE json_attempt(k.attempt) END,
       'verdict line', 0, k."check", '$.attempt', k.attempt
FROM s_kind k
WHERE k.kind = 'verdict';

-- name: checks_fields
CREATE OR REPLACE TEMP TABLE s_check2 AS
SELECT * EXCLUDE (keys),
       repeated_keys(keys, present(v.verdict) + present(v.advisory) + present(v.model) + present(v.questions)
                           + present(v."at") + present(v.truncated),
                     ['verdict', 'advisory', 'model', 'questions', 'at', 'truncated']) AS repeated
FROM (
    SELECT *, keys_type(keys, chk) AS chk_type
    FROM (
        SELECT c.*,
               from_json(c.chk, '{"verdict":"JSON","advisory":"JSON","model":"JSON","questions":"JSON","at":"JSON","truncated":"JSON"}') AS v,
               json_keys(c.chk) AS keys
        FROM s_check c
    )
);

-- name: checks_typed
CREATE OR REPLACE TEMP TABLE s_check3 AS
SELECT c.*,
       json_string(v.verdict) AS verdict,
       CASE WHEN json_type(v.advisory) = 'BOOLEAN' THEN ((v.advisory->>'$'))::BOOLEAN END AS advisory,
       json_string(v.model) AS model,
       json_string(v."at") AS at_text,
       iso_time(json_string(v."at")) AS at_ts,
       coalesce(json_type(v.questions), 'MISSING') AS questions_type,
       CASE WHEN json_type(v.questions) = 'ARRAY' THEN json_array_length(v.questions) ELSE 0 END AS n_questions,
       v.truncated IS NOT NULL AND json_type(v.truncated) NOT IN ('NULL') AND (v.truncated->>'$') <> 'false' AS is_truncated
FROM s_check2 c;

-- name: questions_raw
CREATE OR REPLACE TEMP TABLE s_q AS
SELECT rec, path, position, keys_type(keys, value) AS q_type, f,
       repeated_keys(keys, present(f.ask) + present(f.kind) + present(f.answer) + present(f.confidence) + present(f.result),
                     ['ask', 'kind', 'answer', 'confidence', 'result']) AS repeated
FROM (
    SELECT rec, path, position, value,
           from_json(value, '{"ask":"JSON","kind":"JSON","answer":"JSON","confidence":"JSON","result":"JSON"}') AS f,
           json_keys(value) AS keys
    FROM (
        SELECT rec, path, (generate_subscripts(qs, 1) - 1)::INTEGER AS position, unnest(qs) AS value
        FROM (
            SELECT c.rec, c.path, from_json(c.v.questions, '["JSON"]') AS qs
            FROM s_check3 c
            WHERE c.chk_type = 'OBJECT' AND c.questions_type = 'ARRAY' AND c.n_questions > 0
        )
    )
);

-- name: questions_typed
CREATE OR REPLACE TEMP TABLE s_q2 AS
SELECT q.*, unnest(question_leaves(f)) FROM s_q q;

-- name: bad_checks
INSERT INTO bad_reasons
SELECT rec, line_no, json_path, reason FROM (
    SELECT rec, line_no, json_path, path || ' is not an object' AS reason FROM s_check3 WHERE chk_type <> 'OBJECT'
    UNION ALL
    -- A step is an object (null: a step with nothing recorded yet).
    SELECT rec, line_no, json_path, '$.steps.' || step || ' is not an object' FROM s_step
    WHERE step_type NOT IN ('OBJECT', 'NULL')
    UNION ALL
    SELECT rec, line_no, json_path, path || ' has no "verdict"' FROM s_check3 WHERE chk_type = 'OBJECT' AND v.verdict IS NULL
    UNION ALL
    SELECT rec, line_no, json_path, path || ': unknown verdict ' || coalesce(v.verdict::VARCHAR, 'null') || ' (expected pass, fail, unsure or error)'
    FROM s_check3 WHERE chk_type = 'OBJECT' AND v.verdict IS NOT NULL AND coalesce(verdict, '') NOT IN ('pass', 'fail', 'unsure', 'error')
    UNION ALL
    SELECT rec, line_no, json_path, path || ' has no "questions" list' FROM s_check3
    WHERE chk_type = 'OBJECT' AND questions_type <> 'ARRAY' AND NOT (verdict = 'error' AND questions_type IN ('MISSING', 'NULL'))
    UNION ALL
    SELECT rec, line_no, json_path, path || ' has no questions but its verdict is ' || verdict FROM s_check3
    WHERE chk_type = 'OBJECT' AND questions_type = 'ARRAY' AND n_questions = 0 AND verdict IN ('pass', 'fail', 'unsure')
    UNION ALL
    SELECT rec, line_no, json_path, not_a_time(path || ': ', v."at") FROM s_check3
    WHERE chk_type = 'OBJECT' AND v."at" IS NOT NULL AND json_type(v."at") <> 'NULL' AND at_ts IS NULL
    UNION ALL
    SELECT rec, line_no, json_path, path || ': "advisory" must be true or false' FROM s_check3
    WHERE chk_type = 'OBJECT' AND v.advisory IS NOT NULL AND json_type(v.advisory) NOT IN ('BOOLEAN', 'NULL')
    UNION ALL
    SELECT rec, line_no, json_path, path || ': "model" must be a string' FROM s_check3
    WHERE chk_type = 'OBJECT' AND v.model IS NOT NULL AND json_type(v.model) NOT IN ('VARCHAR', 'NULL')
    UNION ALL
    -- Said at the attempt's own field (a verdict line's is top-level $.attempt, not in its check).
    SELECT rec, line_no, json_path,
           CASE WHEN attempt_json IS NULL THEN attempt_path || ' must be a positive integer'
                ELSE attempt_reason(attempt_path, attempt_json,
                                    CASE WHEN json_type(attempt_json) IN ('DOUBLE', 'UBIGINT', 'BIGINT')
                                         THEN try_cast((attempt_json->>'$') AS DOUBLE) END) END
    FROM s_check3
    WHERE attempt_raw IS NULL OR attempt_raw < 1 OR attempt_raw > 2147483647
    UNION ALL
    SELECT rec, line_no, json_path, path || ': handoff has no "step"' FROM s_check3
    WHERE recorded_in = 'handoff.check' AND blank_name(step)
    UNION ALL
    SELECT rec, line_no, json_path, '$.steps has a step whose id is blank (' || to_json(step)::VARCHAR || ')'
    FROM s_step WHERE blank_name(step)
    UNION ALL
    -- Keys written twice in an object read here (the record's own: bad_top).
    SELECT rec, line_no, json_path, repeated_reason(path, unnest(repeated)) FROM s_check3 WHERE len(repeated) > 0
    UNION ALL
    SELECT rec, line_no, json_path, repeated_reason('$.steps', step) FROM s_twice
    UNION ALL
    SELECT rec, line_no, json_path, repeated_reason('$.steps.' || step, unnest(repeated)) FROM s_step
    WHERE len(repeated) > 0
    UNION ALL
    SELECT rec, line_no, json_path, repeated_reason('$.steps.' || step || '.escalation', unnest(esc_repeated))
    FROM s_step WHERE len(esc_repeated) > 0
    UNION ALL
    SELECT rec, line_no, json_path, repeated_reason('$.steps.' || step || '.history[' || idx || ']', unnest(repeated))
    FROM s_hist WHERE len(repeated) > 0
    UNION ALL
    SELECT rec, line_no, json_path, repeated_reason('$.handoff', unnest(repeated_keys(json_keys(handoff), 0, ['step', 'check'])))
    FROM s_kind WHERE kind = 'run' AND json_type(handoff) = 'OBJECT'
);

-- name: bad_questions
INSERT INTO bad_reasons
SELECT c.rec, c.line_no, c.json_path, c.path || '.questions[' || q.position || ']' || q.reason
FROM s_check3 c JOIN (
    SELECT rec, path, position, ' is not an object' AS reason FROM s_q2 WHERE q_type IS DISTINCT FROM 'OBJECT'
    UNION ALL
    SELECT rec, path, position, ' has no "ask"' FROM s_q2 WHERE q_type = 'OBJECT' AND coalesce(trim(ask), '') = ''
    UNION ALL
    SELECT rec, path, position, ' has no "kind"' FROM s_q2 WHERE q_type = 'OBJECT' AND f.kind IS NULL
    UNION ALL
    SELECT rec, path, position, ': unknown kind ' || f.kind::VARCHAR || ' (expected yes_no, choice or rubric)'
    FROM s_q2 WHERE q_type = 'OBJECT' AND f.kind IS NOT NULL AND coalesce(kind, '') NOT IN ('yes_no', 'choice', 'rubric')
    UNION ALL
    SELECT rec, path, position, ' has no "answer"' FROM s_q2
    WHERE q_type = 'OBJECT' AND (f.answer IS NULL OR answer_type = 'NULL')
    UNION ALL
    SELECT rec, path, position, ': answer ' || f.answer::VARCHAR || ' is not a number for a yes_no question'
    FROM s_q2 WHERE kind = 'yes_no' AND answer_type NOT IN ('DOUBLE', 'UBIGINT', 'BIGINT', 'NULL')
    UNION ALL
    SELECT rec, path, position, ': answer ' || f.answer::VARCHAR || ' is not a finite number for a yes_no question'
    FROM s_q2 WHERE kind = 'yes_no' AND answer_type IN ('DOUBLE', 'UBIGINT', 'BIGINT')
          AND (answer_num IS NULL OR isnan(answer_num) OR isinf(answer_num))
    UNION ALL
    SELECT rec, path, position, ': answer ' || f.answer::VARCHAR || ' is outside [0, 1] for a yes_no question'
    FROM s_q2 WHERE kind = 'yes_no' AND answer_num IS NOT NULL AND NOT isnan(answer_num) AND NOT isinf(answer_num)
          AND (answer_num < 0 OR answer_num > 1)
    UNION ALL
    SELECT rec, path, position, ': answer ' || f.answer::VARCHAR || ' is not an answer name for a choice question'
    FROM s_q2 WHERE kind = 'choice' AND answer_type IS NOT NULL AND answer_type <> 'NULL'
          AND (answer_type <> 'VARCHAR' OR trim(answer_text) = '')
    UNION ALL
    SELECT rec, path, position, ': answer ' || f.answer::VARCHAR
           || CASE WHEN answer_type NOT IN ('DOUBLE', 'UBIGINT', 'BIGINT') THEN ' is not a number: a rubric answer is a non-negative integer level'
                   WHEN answer_num = floor(answer_num) AND answer_num > 2147483647
                   THEN ' is too large: a rubric answer is a non-negative integer level up to 2147483647'
                   ELSE ' is not a non-negative integer level for a rubric question' END
    FROM s_q2 WHERE kind = 'rubric' AND answer_type IS NOT NULL AND answer_type <> 'NULL'
          AND NOT coalesce(is_level(answer_type, answer_num), false)
    UNION ALL
    SELECT rec, path, position, ': confidence ' || f.confidence::VARCHAR
           || CASE WHEN confidence_num IS NULL OR isnan(confidence_num) OR isinf(confidence_num)
                   THEN ' is not a number in [0, 1]' ELSE ' is outside [0, 1]' END
    FROM s_q2 WHERE confidence_type IS NOT NULL AND confidence_type <> 'NULL'
          AND (confidence_num IS NULL OR isnan(confidence_num) OR isinf(confidence_num)
               OR confidence_num < 0 OR confidence_num > 1)
    UNION ALL
    SELECT rec, path, position, ': result ' || f.result::VARCHAR || ' is not pass, fail or unsure'
    FROM s_q2 WHERE result_type IS NOT NULL AND result_type <> 'NULL'
          AND coalesce(result_text, '') NOT IN ('pass', 'fail', 'unsure')
    UNION ALL
    SELECT rec, path, position, repeated_reason('', unnest(repeated)) FROM s_q2 WHERE len(repeated) > 0
    UNION ALL
    SELECT rec, path, min(position), ': question ' || to_json(ask)::VARCHAR || ' is asked twice in one check'
    FROM s_q2 WHERE ask IS NOT NULL GROUP BY rec, path, ask HAVING count(*) > 1
) q USING (rec, path);

-- name: decisions_raw
-- Decisions from run documents (approve steps, history, escalations) and decision records.
CREATE OR REPLACE TEMP TABLE s_dec AS
WITH checked AS (
    SELECT rec, step, ordinal FROM s_step
    WHERE (sd."check" IS NOT NULL AND json_type(sd."check") <> 'NULL') OR n_history > 0
       OR json_type(sd.escalation) = 'OBJECT'
),
approvals AS (
    SELECT st.*,
           coalesce(
               json_string(st.sd.reviews),
               (SELECT arg_max(c.step, c.ordinal) FROM checked c WHERE c.rec = st.rec AND c.ordinal < st.ordinal),
               -- Keys written in another order (sorted): the run's only checked step.
               (SELECT any_value(c.step) FROM checked c WHERE c.rec = st.rec HAVING count(*) = 1)
           ) AS reviewed
    FROM s_step st
    WHERE st.sd.decision IS NOT NULL AND json_type(st.sd.decision) <> 'NULL'
)
SELECT ap.rec, ap.line_no, ap.json_path, '$.steps.' || ap.step AS path, ap.run_id, ap.process_name,
       ap.reviewed AS step, (SELECT a.current_attempt FROM s_attempt a WHERE a.rec = ap.rec AND a.step = ap.reviewed) AS attempt,
       ap.sd.decision AS decision_json, ap.sd.by AS by_json, ap.sd."at" AS at_json, ap.sd.note AS note_json,
       'approve step' AS source,
       -- The attempt's own value and field, for the reason when it is none.
       (SELECT r.sd.attempt FROM s_step r WHERE r.rec = ap.rec AND r.step = ap.reviewed) AS attempt_json,
       '$.steps.' || ap.reviewed || '.attempt' AS attempt_path
FROM approvals ap
UNION ALL
SELECT h.rec, h.line_no, h.json_path, '$.steps.' || h.step || '.history[' || h.idx || ']', h.run_id, h.process_name,
       h.step,
       CASE WHEN h.hd.attempt IS NULL OR json_type(h.hd.attempt) = 'NULL' THEN h.idx + 1
            ELSE json_attempt(h.hd.attempt) END,
       h.hd.decision, h.hd.by, h.hd."at", h.hd.note, 'history',
       h.hd.attempt, '$.steps.' || h.step || '.history[' || h.idx || '].attempt'
FROM s_hist h WHERE h.hd.decision IS NOT NULL AND json_type(h.hd.decision) <> 'NULL'
UNION ALL
SELECT st.rec, st.line_no, st.json_path, '$.steps.' || st.step || '.escalation', st.run_id, st.process_name,
       st.step, a.current_attempt,
       CASE (st.sd.escalation->>'resolution')
           WHEN 'completed' THEN CASE WHEN (st.sd.escalation->>'output') = 'own' THEN '"replaced"' ELSE '"completed"' END
           ELSE (st.sd.escalation->'resolution') END::JSON,
       (st.sd.escalation->'by'), (st.sd.escalation->'at'), (st.sd.escalation->'note'), 'escalation',
       st.sd.attempt, '$.steps.' || st.step || '.attempt'
FROM s_step st JOIN s_attempt a USING (rec, step)
WHERE json_type(st.sd.escalation) = 'OBJECT' AND (st.sd.escalation->'resolution') IS NOT NULL
  AND json_type((st.sd.escalation->'resolution')) <> 'NULL'
UNION ALL
-- Decision records, and verdict lines that also carry a person's decision (one flat export of
-- both): the top-level decision, by, at and note are the decision's, on the line's attempt.
SELECT k.rec, k.line_no, k.json_path, '$', k.run_id, k.process_name,
       json_string(k.step),
       CASE WHEN k.kind = 'verdict' AND k.attempt IS NULL THEN 1  -- as the verdict line's check
            WHEN json_type(k.attempt) = 'VARCHAR' THEN text_attempt(k.attempt->>'$')
            ELSE json_attempt(k.attempt) END,
       k.decision, k.by, k."at", k.note, CASE k.kind WHEN 'decision' THEN 'table' ELSE 'verdict line' END,
       k.attempt, CASE WHEN k.json_path LIKE 'row %' THEN 'attempt' ELSE '$.attempt' END
FROM s_kind k
WHERE k.kind = 'decision'
   OR (k.kind = 'verdict' AND k.decision IS NOT NULL AND json_type(k.decision) <> 'NULL');

-- name: decisions_typed
CREATE OR REPLACE TEMP TABLE s_dec2 AS
SELECT d.*,
       decision_name(json_string(decision_json)) AS decision,
       json_id(by_json) AS decided_by,
       nullif(json_string(at_json), '') AS at_text,
       iso_time(nullif(json_string(at_json), '')) AS at_ts,
       nullif(json_string(note_json), '') AS note,
       -- Where the reason points: a run's decision by its JSON path; a decision table's row or a
       -- verdict line is the record itself, whose line or row number the quarantine gives.
       CASE WHEN path = '$' THEN '' ELSE path || ': ' END AS said
FROM s_dec d;

-- name: bad_decisions
INSERT INTO bad_reasons
SELECT rec, line_no, json_path, reason FROM (
    SELECT rec, line_no, json_path,
           said || 'unknown decision ' || coalesce(shown_json(decision_json), 'null')
           || ' (expected approved, rejected, returned, completed, replaced or failed)' AS reason
    FROM s_dec2 WHERE coalesce(decision, '') NOT IN ('approved', 'rejected', 'returned', 'completed', 'replaced', 'failed')
    UNION ALL
    SELECT rec, line_no, json_path, said || 'decision names no checked step ("step", or "reviews" on an approve step)'
    FROM s_dec2 WHERE blank_name(step)
    UNION ALL
    SELECT rec, line_no, json_path,
           CASE WHEN source = 'approve step' AND NOT EXISTS (SELECT 1 FROM s_attempt a WHERE a.rec = d.rec AND a.step = d.step)
                THEN said || '"reviews" names ' || to_json(step)::VARCHAR || ', which is not a step of this run'
                WHEN attempt_json IS NULL OR json_type(attempt_json) = 'NULL'
                THEN said || 'decision has no attempt (a positive integer)'
                -- Said at the attempt's own field, as a check's (the same reason is said once).
                ELSE attempt_reason(attempt_path, attempt_json, decision_attempt_number(attempt_json)) END
    FROM s_dec2 d WHERE NOT blank_name(step) AND (attempt IS NULL OR attempt < 1 OR attempt > 2147483647)
    UNION ALL
    SELECT rec, line_no, json_path, not_a_time(said, at_json)
    FROM s_dec2 WHERE (at_text IS NOT NULL AND at_ts IS NULL)
                   OR (at_json IS NOT NULL AND json_type(at_json) NOT IN ('VARCHAR', 'NULL'))
);

-- name: bad_final
CREATE OR REPLACE TEMP TABLE s_bad AS
SELECT rec, any_value(line_no) AS line_no, any_value(json_path) AS json_path,
       array_to_string(list_sort(list_distinct(list(reason)))[1:3], '; ')
       || CASE WHEN count(DISTINCT reason) > 3 THEN ' (and ' || (count(DISTINCT reason) - 3) || ' more)' ELSE '' END
           AS reason
FROM bad_reasons GROUP BY rec;

-- name: run_processes
-- A run id names one run of one process. A record that names another process for its run than
-- the store holds (from another file) is quarantined, and so is every record of a run that this
-- file names with two processes: loaded, a verdict would merge into another process's run (its
-- check has the same identity) and a decision would label another process's check. A record
-- without a process names none and agrees with any. The lane's records (f_*) take part: a run
-- document (f_recs) and a decision table's rows (source 'table'); a run's own decisions name its
-- process. Records the record pipeline did not stage have no raw text here: the lane's lines
-- (lane) are staged by the loader for the quarantine, a decision table's rows show as read (raw).
CREATE OR REPLACE TEMP TABLE s_named AS
SELECT rec, line_no, json_path, run_id, process_name, false AS lane, NULL::VARCHAR AS raw
FROM s_kind ANTI JOIN s_bad USING (rec)
WHERE kind IN ('run', 'verdict', 'decision') AND process_name IS NOT NULL
UNION ALL
SELECT rec, rec, NULL, run_id, process_name, true, NULL FROM f_recs WHERE process_name IS NOT NULL
UNION ALL
SELECT rec, NULL, 'row ' || rec, run_id, process_name, false,
       json_object('run', run_id, 'process', process_name, 'step', step, 'attempt', attempt,
                   'decision', decision, 'by', decided_by, 'at', at_ts, 'note', note)::VARCHAR
FROM f_decisions WHERE source = 'table' AND process_name IS NOT NULL;
CREATE OR REPLACE TEMP TABLE s_clash AS
WITH in_file AS (
    SELECT run_id, min(process_name) AS lo, max(process_name) AS hi FROM s_named GROUP BY run_id
), stored AS (  -- what other files hold (this file's older versions are replaced, not compared)
    -- The server's records only (run documents, verdict lines): a hand-written decision stored
    -- first must not quarantine the run it mistyped (outside review: the run stayed quarantined
    -- after the table was corrected); such a decision labels nothing (decision_checks).
    SELECT run_id, min(process) AS process, arg_min(path, process) AS path FROM (
        SELECT r.run_id, r.process, r.file_id FROM runs r SEMI JOIN in_file USING (run_id)
        WHERE r.process IS NOT NULL
    ) JOIN files f USING (file_id)
    WHERE f.path <> (SELECT path FROM s_ctx)
    GROUP BY run_id
)
SELECT DISTINCT n.rec, n.line_no, n.json_path, n.lane, n.raw,
       CASE WHEN s.process IS NOT NULL
            THEN 'run ' || to_json(n.run_id) || ' is a run of process ' || to_json(s.process) || ' in '
                 || s.path || ', but this record names process ' || to_json(n.process_name)
                 || ': a run id names one run of one process; correct "process" or "run" here or there'
            ELSE 'run ' || to_json(n.run_id) || ' is named with two processes in this file ('
                 || to_json(f.lo) || ', ' || to_json(f.hi) || '): a run id names one run of one process; '
                 || 'correct "process" or "run" in the records that are wrong'
       END AS reason
FROM s_named n JOIN in_file f USING (run_id) LEFT JOIN stored s USING (run_id)
WHERE (s.process IS NOT NULL AND n.process_name <> s.process) OR (s.process IS NULL AND f.lo <> f.hi);
INSERT INTO s_bad SELECT rec, any_value(line_no), any_value(json_path), any_value(reason) FROM s_clash GROUP BY rec;

-- name: file_rows
-- The file's good checks and decisions with their natural keys, before duplicates are settled.
CREATE OR REPLACE TEMP VIEW s_check_rows AS
-- Only what the inserts read: the verdict's JSON text stays behind.
SELECT check_key(run_id, step, attempt_raw, at_ts, verdict, model) AS check_id,
       rec, line_no, path, run_id, process_name, version_text, step, attempt_raw, verdict, advisory, model,
       at_ts, recorded_in, is_truncated, CASE WHEN is_truncated THEN v.truncated END AS truncation, n_questions,
       priority
FROM s_check3 c ANTI JOIN s_bad b USING (rec)
UNION ALL
SELECT check_id, rec, line_no, path, run_id, process_name, version_text, step, attempt_raw, verdict, advisory, model,
       at_ts, recorded_in, is_truncated, truncation, n_questions, priority
FROM f_checks ANTI JOIN s_bad USING (rec);
CREATE OR REPLACE TEMP VIEW s_dec_rows AS
SELECT decision_key(run_id, step, attempt, decision, decided_by, at_ts) AS decision_id,
       rec, line_no, path, run_id, process_name, step, attempt, decision, decided_by, at_ts, note, source
FROM s_dec2 ANTI JOIN s_bad b USING (rec)
UNION ALL
SELECT decision_id, rec, line_no, path, run_id, process_name, step, attempt, decision, decided_by, at_ts, note, source
FROM f_decisions ANTI JOIN s_bad USING (rec);
-- The staged answers in the answers table's columns (but check_id and question_id), by the record
-- they came from.
CREATE OR REPLACE TEMP VIEW s_staged_answers AS
SELECT rec, path, position, ask, kind,
       unnest(answer_values(kind, answer_type, answer_num, answer_text, confidence_num, result_type, result_text))
FROM s_q2
UNION ALL
SELECT rec, path, position, ask, kind, p, name, level, confidence, result FROM f_answers;

-- name: file_checks
-- The file's good checks, one per natural key (the most direct record of it): what this version
-- of the file holds. A newer version of a file first withdraws what its older ones held and this
-- one does not (ingest_versions.sql, run here by the loader), then the rows below are inserted.
-- Only the rows that lose to another of their key are stored (by their place: a record and a
-- path hold one verdict); the file's rows are a view, not a copy.
CREATE OR REPLACE TEMP TABLE s_lose_check AS
SELECT rec, path FROM (SELECT check_id, rec, path, priority FROM s_check_rows)
QUALIFY row_number() OVER (PARTITION BY check_id ORDER BY priority, rec) > 1;
CREATE OR REPLACE TEMP VIEW s_file_check AS
SELECT * EXCLUDE (priority) FROM s_check_rows ANTI JOIN s_lose_check USING (rec, path);

-- name: file_decisions
CREATE OR REPLACE TEMP TABLE s_lose_dec AS
SELECT rec, path FROM (SELECT decision_id, rec, path FROM s_dec_rows)
QUALIFY row_number() OVER (PARTITION BY decision_id ORDER BY rec) > 1;
CREATE OR REPLACE TEMP VIEW s_file_dec AS SELECT * FROM s_dec_rows ANTI JOIN s_lose_dec USING (rec, path);

-- name: file_runs
CREATE OR REPLACE TEMP TABLE s_file_run AS
SELECT run_id, any_value(process_name) AS process_name, any_value(version_text) AS version_text
FROM (
    SELECT k.run_id, k.process_name, k.version_text FROM s_kind k ANTI JOIN s_bad b USING (rec)
    WHERE k.kind IN ('run', 'verdict')
    UNION ALL
    SELECT run_id, process_name, version_text FROM f_recs ANTI JOIN s_bad USING (rec)
)
GROUP BY run_id;

-- name: new_checks
-- The file's checks the store does not hold yet.
-- The keys the store holds already, kept before the inserts (which the views are read after).
CREATE OR REPLACE TEMP TABLE s_stored_check AS
SELECT DISTINCT check_id FROM s_file_check SEMI JOIN checks USING (check_id);
CREATE OR REPLACE TEMP VIEW s_new_check AS SELECT * FROM s_file_check ANTI JOIN s_stored_check USING (check_id);

-- name: holds
-- Rows this file holds that another file owns (ingest_versions.sql hands them over when that file
-- drops them). Before the inserts, so that the store's rows are the other files' only.
INSERT INTO holds
SELECT (SELECT file_id FROM s_ctx), 'check', check_id
FROM s_file_check g JOIN checks c USING (check_id)
WHERE c.file_id NOT IN (SELECT file_id FROM files WHERE path = (SELECT path FROM s_ctx))
UNION ALL
SELECT (SELECT file_id FROM s_ctx), 'decision', decision_id
FROM s_file_dec g JOIN decisions d USING (decision_id)
WHERE d.file_id NOT IN (SELECT file_id FROM files WHERE path = (SELECT path FROM s_ctx))
UNION ALL
SELECT (SELECT file_id FROM s_ctx), 'run', run_id
FROM s_file_run g JOIN runs r USING (run_id)
WHERE r.file_id NOT IN (SELECT file_id FROM files WHERE path = (SELECT path FROM s_ctx));

-- name: insert_checks
INSERT INTO checks
SELECT check_id, run_id, process_name, version_text, step, attempt_raw, verdict, advisory, model, at_ts,
       recorded_in, is_truncated, truncation, n_questions,
       (SELECT file_id FROM s_ctx), line_no, path
FROM s_new_check;

-- name: insert_answers
-- A question's id is an md5 per answer: measured at 1M runs, cheaper than one per distinct
-- (process, step, ask) joined back to the answers (3.9-4.6 against 4.8-6.2 CPU s).
INSERT INTO answers
SELECT n.check_id, q.position, question_key(n.process_name, n.step, q.ask), q.ask, q.kind, q.p, q.name, q.level,
       q.confidence, q.result
FROM s_new_check n JOIN s_staged_answers q USING (rec, path);

-- name: insert_runs
INSERT INTO runs
SELECT run_id, process_name, version_text, (SELECT file_id FROM s_ctx)
FROM s_file_run ANTI JOIN runs USING (run_id);

-- name: new_decisions
CREATE OR REPLACE TEMP TABLE s_stored_dec AS
SELECT DISTINCT decision_id FROM s_file_dec SEMI JOIN decisions USING (decision_id);
CREATE OR REPLACE TEMP VIEW s_new_dec AS SELECT * FROM s_file_dec ANTI JOIN s_stored_dec USING (decision_id);

-- name: insert_decisions
INSERT INTO decisions
SELECT decision_id, run_id, process_name, step, attempt, decision, decided_by, at_ts, note, source,
       (SELECT file_id FROM s_ctx), line_no, path
FROM s_new_dec;

-- name: insert_quarantine
INSERT INTO quarantine
SELECT (SELECT file_id FROM s_ctx), (SELECT path FROM s_ctx), b.line_no, b.json_path,
       CASE WHEN strlen(raw) > 65536 THEN left(raw, 65536) || ' …[truncated]' ELSE raw END, b.reason
FROM (
    SELECT b.*, coalesce(p.raw, s.line, c.raw) AS raw
    FROM s_bad b
    LEFT JOIN (SELECT rec, any_value(raw) AS raw FROM pre_bad GROUP BY rec) p USING (rec)
    LEFT JOIN stage_lines s USING (rec)
    LEFT JOIN (SELECT rec, any_value(raw) AS raw FROM s_clash GROUP BY rec) c USING (rec)
) b
WHERE NOT EXISTS (
    SELECT 1 FROM quarantine q
    WHERE q.path = (SELECT path FROM s_ctx) AND q.line_no IS NOT DISTINCT FROM b.line_no
      AND q.json_path IS NOT DISTINCT FROM b.json_path AND q.reason = b.reason
);

-- name: counts
SELECT
    (SELECT count(*) FROM s_rec) + (SELECT count(DISTINCT rec) FROM pre_bad)
    + (SELECT count(*) FROM (SELECT rec FROM f_recs UNION SELECT rec FROM f_decisions)) AS n_read,
    (SELECT count(*) FROM s_bad) AS n_quarantined,
    -- A pending record quarantined (a repeated key) counts as quarantined only.
    (SELECT count(*) FROM s_kind ANTI JOIN s_bad USING (rec) WHERE kind = 'pending') AS n_pending,
    (SELECT count(DISTINCT rec) FROM (
        SELECT rec FROM s_new_check UNION ALL SELECT rec FROM s_new_dec)) AS n_new;

