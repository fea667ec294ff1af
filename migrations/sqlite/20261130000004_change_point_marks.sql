-- What people said about a detected change point of a trend series: expected (acknowledged, with a
-- reason) or a regression to investigate. A change point is named by its series and the first
-- experiment after it.
CREATE TABLE change_point_marks (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    suite_id      INTEGER NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
    metric        TEXT    NOT NULL,
    item          TEXT    NOT NULL,
    fingerprint   TEXT    NOT NULL,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    state         TEXT    NOT NULL CHECK (state IN ('acknowledged', 'investigate')),
    reason        TEXT    NOT NULL,
    marked_by     INTEGER REFERENCES users(id) ON DELETE SET NULL,
    marked_at     INTEGER NOT NULL,
    UNIQUE (suite_id, metric, item, fingerprint, experiment_id)
);
