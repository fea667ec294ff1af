-- Arbiter's domain (DESIGN.md "Domain model"). Times are Unix epoch milliseconds (UTC) in both backends;
-- JSON documents are TEXT. migrations/postgres holds the same schema; a test keeps the two in step.

CREATE TABLE users (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    username      TEXT    NOT NULL UNIQUE,
    password_hash TEXT    NOT NULL,
    role          TEXT    NOT NULL CHECK (role IN ('viewer', 'launcher', 'admin')),
    created_at    INTEGER NOT NULL,
    disabled_at   INTEGER
);

CREATE TABLE suites (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT    NOT NULL UNIQUE,
    kind       TEXT    NOT NULL CHECK (kind IN ('pipeline', 'warp')),
    definition TEXT    NOT NULL,
    source     TEXT    NOT NULL DEFAULT 'ui',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE noise_profiles (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    suite_id         INTEGER NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
    fingerprint_hash TEXT    NOT NULL,
    fingerprint      TEXT    NOT NULL,
    profile          TEXT    NOT NULL,
    trials           INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    UNIQUE (suite_id, fingerprint_hash)
);

CREATE TABLE experiments (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    suite_id         INTEGER REFERENCES suites(id) ON DELETE SET NULL,
    kind             TEXT    NOT NULL CHECK (kind IN ('pipeline', 'warp')),
    title            TEXT    NOT NULL,
    status           TEXT    NOT NULL,
    verdict          TEXT,
    base_ref         TEXT,
    head_ref         TEXT,
    fingerprint      TEXT    NOT NULL DEFAULT '{}',
    plan             TEXT    NOT NULL DEFAULT '{}',
    noise_profile_id INTEGER REFERENCES noise_profiles(id) ON DELETE SET NULL,
    launched_by      INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at       INTEGER NOT NULL,
    started_at       INTEGER,
    finished_at      INTEGER
);
-- History: newest first with keyset pagination, optionally narrowed by suite, kind, status, verdict, launcher.
CREATE INDEX experiments_history ON experiments (created_at DESC, id DESC);
CREATE INDEX experiments_suite_history ON experiments (suite_id, created_at DESC, id DESC);
CREATE INDEX experiments_kind_history ON experiments (kind, created_at DESC, id DESC);
CREATE INDEX experiments_status ON experiments (status, created_at DESC, id DESC);
CREATE INDEX experiments_verdict ON experiments (verdict, created_at DESC, id DESC);
CREATE INDEX experiments_launched_by ON experiments (launched_by, created_at DESC, id DESC);

CREATE TABLE arms (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    position      INTEGER NOT NULL,
    name          TEXT    NOT NULL,
    role          TEXT    NOT NULL CHECK (role IN ('control', 'treatment')),
    git_ref       TEXT,
    sha           TEXT,
    config_diff   TEXT,
    UNIQUE (experiment_id, name),
    UNIQUE (experiment_id, position)
);
-- Trends and "which experiments touched this SHA".
CREATE INDEX arms_sha ON arms (sha);

CREATE TABLE trials (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    arm_id        INTEGER NOT NULL REFERENCES arms(id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    cell          TEXT,
    repeat_index  INTEGER NOT NULL DEFAULT 0,
    attempt       INTEGER NOT NULL DEFAULT 1,
    state         TEXT    NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'infra_failed', 'cancelled')),
    infra_reason  TEXT,
    detail        TEXT,
    run_tag       TEXT,
    execution_ids TEXT    NOT NULL DEFAULT '[]',
    job_id        TEXT,
    host          TEXT,
    claimed_by    TEXT,
    heartbeat_at  INTEGER,
    exit_code     INTEGER,
    log_path      TEXT,
    created_at    INTEGER NOT NULL,
    started_at    INTEGER,
    finished_at   INTEGER,
    UNIQUE (experiment_id, seq, attempt)
);
-- The scheduler claims the oldest queued trial; the experiment page lists trials in plan order.
CREATE INDEX trials_queue ON trials (state, id);
CREATE INDEX trials_experiment ON trials (experiment_id, seq);

-- One zephyr.stage row as finelog served it (pipeline observations).
CREATE TABLE stage_rows (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    trial_id           INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
    execution_id       TEXT    NOT NULL,
    stage_name         TEXT    NOT NULL,
    status             TEXT    NOT NULL,
    cpu_time_total     DOUBLE PRECISION NOT NULL,
    elapsed            DOUBLE PRECISION NOT NULL,
    items              BIGINT NOT NULL,
    bytes_processed    BIGINT NOT NULL,
    mem_peak_bytes_max BIGINT NOT NULL,
    total_shards       BIGINT,
    cpu_pct_avg        DOUBLE PRECISION,
    mem_bytes_avg      DOUBLE PRECISION,
    item_rate          DOUBLE PRECISION,
    byte_rate          DOUBLE PRECISION,
    ts                 TEXT,
    row_seq            BIGINT
);
CREATE INDEX stage_rows_trial ON stage_rows (trial_id, stage_name);
CREATE INDEX stage_rows_execution ON stage_rows (execution_id);

-- One round of one warp cell and operation (warp observations).
CREATE TABLE warp_rounds (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    trial_id       INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
    workload       TEXT    NOT NULL,
    operation      TEXT    NOT NULL,
    object_size    BIGINT  NOT NULL,
    drive_sync     BOOLEAN NOT NULL,
    round          INTEGER NOT NULL,
    attempt        INTEGER NOT NULL DEFAULT 1,
    ok             BOOLEAN NOT NULL,
    reqps          DOUBLE PRECISION,
    throughput_bps DOUBLE PRECISION,
    latency_avg_ms DOUBLE PRECISION,
    latency_p50_ms DOUBLE PRECISION,
    latency_p90_ms DOUBLE PRECISION,
    latency_p99_ms DOUBLE PRECISION,
    requests       BIGINT,
    errors         BIGINT,
    error_text     TEXT,
    UNIQUE (trial_id, workload, operation, round, attempt)
);

CREATE TABLE verdicts (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    experiment_id    INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    verdict          TEXT    NOT NULL,
    reasons          TEXT    NOT NULL DEFAULT '[]',
    report           TEXT    NOT NULL,
    noise_profile_id INTEGER REFERENCES noise_profiles(id) ON DELETE SET NULL,
    judged_at        INTEGER NOT NULL
);
CREATE INDEX verdicts_experiment ON verdicts (experiment_id, judged_at DESC);

CREATE TABLE api_tokens (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name         TEXT    NOT NULL,
    token_hash   TEXT    NOT NULL UNIQUE,
    role         TEXT    NOT NULL CHECK (role IN ('viewer', 'launcher', 'admin')),
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER,
    revoked_at   INTEGER,
    last_used_at INTEGER
);
CREATE INDEX api_tokens_user ON api_tokens (user_id);

CREATE TABLE share_tokens (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    token_hash    TEXT    NOT NULL UNIQUE,
    created_by    INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at    INTEGER NOT NULL,
    revoked_at    INTEGER
);
CREATE INDEX share_tokens_experiment ON share_tokens (experiment_id);

CREATE TABLE artifacts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    trial_id      INTEGER REFERENCES trials(id) ON DELETE CASCADE,
    kind          TEXT    NOT NULL,
    rel_path      TEXT    NOT NULL,
    size_bytes    BIGINT  NOT NULL,
    created_at    INTEGER NOT NULL
);
CREATE INDEX artifacts_experiment ON artifacts (experiment_id);

CREATE TABLE audit_log (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    at       INTEGER NOT NULL,
    actor_id INTEGER REFERENCES users(id) ON DELETE SET NULL,
    action   TEXT    NOT NULL,
    subject  TEXT    NOT NULL,
    reason   TEXT,
    detail   TEXT    NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_at ON audit_log (at DESC, id DESC);
