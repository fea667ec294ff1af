-- Scheduled baselines: one row per (suite, schedule, tick), inserted by the replica that claims the
-- tick (the UNIQUE key makes the claim exclusive), then updated with what the tick did.
CREATE TABLE schedule_runs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    suite_id      INTEGER NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
    schedule      TEXT    NOT NULL,
    tick_at       INTEGER NOT NULL,
    claimed_by    TEXT    NOT NULL,
    claimed_at    INTEGER NOT NULL,
    outcome       TEXT    NOT NULL CHECK (outcome IN ('claimed', 'launched', 'skipped', 'failed')),
    sha           TEXT,
    experiment_id INTEGER REFERENCES experiments(id) ON DELETE SET NULL,
    detail        TEXT,
    UNIQUE (suite_id, schedule, tick_at)
);
CREATE INDEX schedule_runs_experiment ON schedule_runs (experiment_id);
