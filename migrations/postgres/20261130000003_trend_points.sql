-- Trend points: the control arm's level per stage or cell and metric, one row per judged experiment,
-- written with its verdict. Denormalised (suite, fingerprint, time) so a trend is one index range scan.
CREATE TABLE trend_points (
    experiment_id BIGINT NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    suite_id      BIGINT NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
    fingerprint   TEXT    NOT NULL,
    metric        TEXT    NOT NULL,
    item          TEXT    NOT NULL,
    at            BIGINT  NOT NULL,
    value         DOUBLE PRECISION NOT NULL
);
CREATE INDEX trend_points_series ON trend_points (suite_id, metric, item, at);
CREATE INDEX trend_points_experiment ON trend_points (experiment_id);
