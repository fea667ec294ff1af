-- Bisections: a search over a suite's first-parent commit range for the commit that moved one metric.
-- Each step is an ordinary experiment; the search's state (the range, the steps with their readings and
-- the outcome) is one JSON document, written with a compare-and-set on `version`.
CREATE TABLE bisections (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    suite_id     INTEGER REFERENCES suites(id) ON DELETE SET NULL,
    suite_name   TEXT    NOT NULL,
    status       TEXT    NOT NULL CHECK (status IN ('running', 'finished', 'cancelled', 'errored')),
    good_sha     TEXT    NOT NULL,
    bad_sha      TEXT    NOT NULL,
    metric       TEXT    NOT NULL,
    request      TEXT    NOT NULL,
    state        TEXT    NOT NULL,
    version      INTEGER NOT NULL DEFAULT 0,
    outcome      TEXT,
    culprit_sha  TEXT,
    launched_by  INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at   INTEGER NOT NULL,
    finished_at  INTEGER
);
CREATE INDEX bisections_history ON bisections (created_at DESC, id DESC);
CREATE INDEX bisections_status ON bisections (status);
CREATE INDEX bisections_range ON bisections (suite_name, good_sha, bad_sha);
