-- calibrate store, schema version 4 (2 added audit_draws and audit_eligible, 3 holds and withdrawn,
-- 4 question_versions).
-- Every statement is CREATE ... IF NOT EXISTS, so running this file on an older store
-- adds what it lacks: that is the migration from version 1 (calibrate/store.py).
-- Tables hold facts as recorded; views derive labels and defaults so that the
-- order in which files were ingested never changes an answer.

CREATE TABLE IF NOT EXISTS meta (
    key   VARCHAR PRIMARY KEY,
    value VARCHAR
);

-- One row per ingested file version (the ingest log).
CREATE TABLE IF NOT EXISTS files (
    file_id       INTEGER PRIMARY KEY,
    path          VARCHAR NOT NULL,
    sha256        VARCHAR NOT NULL,
    kind          VARCHAR NOT NULL,   -- records | json | csv | parquet | process | limits
    bytes         BIGINT,
    ingested_at   TIMESTAMPTZ NOT NULL,
    n_read        BIGINT NOT NULL,
    n_loaded      BIGINT NOT NULL,
    n_new         BIGINT NOT NULL,
    n_quarantined BIGINT NOT NULL
);
CREATE SEQUENCE IF NOT EXISTS file_id_seq START 1;

CREATE TABLE IF NOT EXISTS runs (
    run_id   VARCHAR NOT NULL,
    process  VARCHAR,
    version  VARCHAR,
    file_id  INTEGER
);

-- One row per recorded verdict.
CREATE TABLE IF NOT EXISTS checks (
    check_id     VARCHAR NOT NULL,    -- md5 of the natural key (run, step, attempt, at, verdict, model)
    run_id       VARCHAR NOT NULL,
    process      VARCHAR,
    version      VARCHAR,
    step         VARCHAR NOT NULL,
    attempt      INTEGER NOT NULL,
    verdict      VARCHAR NOT NULL,    -- pass | fail | unsure | error
    advisory     BOOLEAN,
    model        VARCHAR,
    checked_at   TIMESTAMPTZ,
    recorded_in  VARCHAR NOT NULL,    -- steps.check | handoff.check | history | escalation.check | verdict line
    truncated    BOOLEAN NOT NULL,
    truncation   JSON,
    n_questions  INTEGER NOT NULL,
    file_id      INTEGER,
    line_no      BIGINT,
    json_path    VARCHAR
);

-- One row per question answered in a check.
CREATE TABLE IF NOT EXISTS answers (
    check_id    VARCHAR NOT NULL,
    position    INTEGER NOT NULL,
    question_id VARCHAR NOT NULL,     -- md5(process, step, ask)
    ask         VARCHAR NOT NULL,
    kind        VARCHAR NOT NULL,     -- yes_no | choice | rubric
    p           DOUBLE,               -- yes_no: yes-probability
    name        VARCHAR,              -- choice: answer name
    level       INTEGER,              -- rubric: level, 0-based
    confidence  DOUBLE,
    result      VARCHAR               -- pass | fail | unsure, as recorded
);

-- A person's decision on a submission (run, checked step, attempt).
CREATE TABLE IF NOT EXISTS decisions (
    decision_id VARCHAR NOT NULL,     -- md5 of (run, step, attempt, decision, by, at)
    run_id      VARCHAR NOT NULL,
    process     VARCHAR,
    step        VARCHAR NOT NULL,
    attempt     INTEGER NOT NULL,
    decision    VARCHAR NOT NULL,
    decided_by  VARCHAR,
    decided_at  TIMESTAMPTZ,
    note        VARCHAR,
    source      VARCHAR NOT NULL,     -- approve step | history | escalation | table | verdict line
    file_id     INTEGER,
    line_no     BIGINT,
    json_path   VARCHAR
);

-- Questions known from process files (thresholds as written; NULL = server default): the
-- newest version of each step, the one the analysis reads as today's check.
CREATE TABLE IF NOT EXISTS questions (
    question_id     VARCHAR NOT NULL,
    process         VARCHAR NOT NULL,
    process_version VARCHAR,
    step            VARCHAR NOT NULL,
    position        INTEGER NOT NULL,
    ask             VARCHAR NOT NULL,
    kind            VARCHAR NOT NULL,
    pass_p          DOUBLE,
    fail_p          DOUBLE,
    pass_names      VARCHAR[],
    unsure_names    VARCHAR[],
    pass_level      INTEGER,
    confidence      DOUBLE,
    one_of          JSON,
    levels          VARCHAR[],
    advisory        BOOLEAN,
    file_id         INTEGER
);

-- The questions of every version of every process file ingested (same columns): what a check
-- recorded under an older version is judged against that version's thresholds.
CREATE TABLE IF NOT EXISTS question_versions AS SELECT * FROM questions WHERE false;

-- describe.limits, as ingested; the latest file wins.
CREATE TABLE IF NOT EXISTS limits (
    file_id          INTEGER,
    check_pass       DOUBLE,
    check_fail       DOUBLE,
    check_confidence DOUBLE,
    state_bytes      BIGINT
);

CREATE TABLE IF NOT EXISTS quarantine (
    file_id   INTEGER,
    path      VARCHAR NOT NULL,
    line_no   BIGINT,
    json_path VARCHAR,
    raw       VARCHAR,
    reason    VARCHAR NOT NULL
);

-- One row per `calibrate audit draw`: the design of a random sample of enforced checks
-- (advisory: false) offered to a person. Written by the draw, never by ingest.
CREATE TABLE IF NOT EXISTS audit_draws (
    draw_id     INTEGER PRIMARY KEY,
    drawn_at    TIMESTAMPTZ NOT NULL,
    process     VARCHAR NOT NULL,
    step        VARCHAR NOT NULL,
    seed        BIGINT NOT NULL,
    design      VARCHAR NOT NULL,     -- uniform | by_band (Poisson sampling either way)
    rate        DOUBLE,               -- --rate, or the rate --per-week came to
    per_week    DOUBLE,               -- --per-week as asked, NULL with --rate
    verdicts    VARCHAR[] NOT NULL,   -- the verdicts eligible
    n_eligible  BIGINT NOT NULL,
    n_drawn     BIGINT NOT NULL
);
CREATE SEQUENCE IF NOT EXISTS draw_id_seq START 1;

-- Every check a draw considered, drawn or not, with its inclusion probability. A check is
-- considered by one draw at most, so it is never offered twice and its probability of being
-- audited is the one recorded here.
CREATE TABLE IF NOT EXISTS audit_eligible (
    draw_id     INTEGER NOT NULL,
    check_id    VARCHAR NOT NULL,
    position    BIGINT NOT NULL,      -- order within the draw: by check time, then check_id
    band        VARCHAR,              -- by_band: near | middle | far (from the pass/fail threshold)
    inclusion_p DOUBLE NOT NULL,
    drawn       BOOLEAN NOT NULL
);

-- A row that a file's latest version holds while another file's version owns it (the row's
-- file_id): kept so that when the owner's newer version drops the row, it passes to a file that
-- still holds it instead of being withdrawn. Rows held by one file only have no entry here.
CREATE TABLE IF NOT EXISTS holds (
    file_id INTEGER NOT NULL,     -- the holding file version
    kind    VARCHAR NOT NULL,     -- check | decision | run
    row_id  VARCHAR NOT NULL      -- check_id, decision_id or run_id
);

-- What newer versions of files withdrew: rows an older version contributed that the newer one
-- no longer holds (and no other file holds), or holds with other content (then replaced).
CREATE TABLE IF NOT EXISTS withdrawn (
    file_id      INTEGER NOT NULL,  -- the version that withdrew it
    path         VARCHAR NOT NULL,
    kind         VARCHAR NOT NULL,  -- check | decision | run
    row_id       VARCHAR NOT NULL,
    run_id       VARCHAR NOT NULL,
    step         VARCHAR,
    attempt      INTEGER,
    what         VARCHAR,           -- the verdict, the decision, or the run's process
    reason       VARCHAR NOT NULL,  -- no longer in the file | replaced in the file | changed in the file
    withdrawn_at TIMESTAMPTZ NOT NULL
);
