-- Webhook notifications and their delivery log: one per experiment and event, with every attempt counted.
CREATE TABLE notifications (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    suite_id      INTEGER NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
    event         TEXT    NOT NULL,
    url           TEXT    NOT NULL,
    payload       TEXT    NOT NULL,
    status        TEXT    NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts      INTEGER NOT NULL DEFAULT 0,
    last_error    TEXT,
    created_at    INTEGER NOT NULL,
    delivered_at  INTEGER,
    UNIQUE (experiment_id, event)
);
CREATE INDEX notifications_suite ON notifications (suite_id, created_at DESC);
