//! Trend points (see `judge::trend`): written with each verdict, read by the trends page — a series is
//! one suite, metric and item (stage or cell), split by workload fingerprint.

use crate::{on_pool, Store, StoreError};
use serde::{Deserialize, Serialize};

/// One stored point with the experiment it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct TrendRow {
    pub experiment_id: i64,
    /// The workload fingerprint's JSON (fields sorted): a new value starts a new series.
    pub fingerprint: String,
    pub item: String,
    /// The experiment's launch time (ms since the epoch).
    pub at: i64,
    pub value: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TrendQuery {
    pub suite_id: i64,
    pub metric: String,
    pub items: Vec<String>,
    /// `[since, until)`, ms since the epoch.
    pub since: Option<i64>,
    pub until: Option<i64>,
    /// The newest points kept per item.
    pub limit: u32,
}

/// A person's word on a change point: `acknowledged` (expected) or `investigate` (a regression).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeMark {
    pub fingerprint: String,
    /// The first experiment after the change.
    pub experiment_id: i64,
    pub state: String,
    pub reason: String,
    pub marked_by: Option<String>,
    pub marked_at: i64,
}

/// Which series a change point belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesKey<'a> {
    pub suite_id: i64,
    pub metric: &'a str,
    pub item: &'a str,
}

impl Store {
    /// Records (or replaces) what `by` says about the change point before `experiment_id`.
    pub async fn mark_change(
        &self,
        key: &SeriesKey<'_>,
        fingerprint: &str,
        experiment_id: i64,
        state: &str,
        reason: &str,
        by: Option<i64>,
    ) -> Result<(), StoreError> {
        let now = crate::now_ms();
        on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO change_point_marks (suite_id, metric, item, fingerprint, experiment_id, state, reason, marked_by, marked_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (suite_id, metric, item, fingerprint, experiment_id) DO UPDATE SET \
                 state = excluded.state, reason = excluded.reason, marked_by = excluded.marked_by, marked_at = excluded.marked_at",
            )
            .bind(key.suite_id).bind(key.metric).bind(key.item).bind(fingerprint).bind(experiment_id).bind(state).bind(reason).bind(by).bind(now)
            .execute(pool).await.map(|r| r.rows_affected())
        })?;
        Ok(())
    }

    /// Every mark on a series.
    pub async fn change_marks(&self, key: &SeriesKey<'_>) -> Result<Vec<ChangeMark>, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_as::<_, (String, i64, String, String, Option<String>, i64)>(
                "SELECT m.fingerprint, m.experiment_id, m.state, m.reason, u.username, m.marked_at FROM change_point_marks m \
                 LEFT JOIN users u ON u.id = m.marked_by WHERE m.suite_id = $1 AND m.metric = $2 AND m.item = $3",
            )
            .bind(key.suite_id).bind(key.metric).bind(key.item).fetch_all(pool).await
        })?
        .into_iter()
        .map(|(fingerprint, experiment_id, state, reason, marked_by, marked_at)| ChangeMark {
            fingerprint,
            experiment_id,
            state,
            reason,
            marked_by,
            marked_at,
        })
        .collect())
    }

    /// The control arm's SHA of each experiment (for a change point's commit range).
    pub async fn control_shas(&self, experiment_ids: &[i64]) -> Result<Vec<(i64, Option<String>)>, StoreError> {
        let mut out = Vec::with_capacity(experiment_ids.len());
        for id in experiment_ids {
            let sha: Option<Option<String>> = on_pool!(self, pool => {
                sqlx::query_scalar("SELECT sha FROM arms WHERE experiment_id = $1 AND role = 'control' ORDER BY position LIMIT 1")
                    .bind(id).fetch_optional(pool).await
            })?;
            out.push((*id, sha.flatten()));
        }
        Ok(out)
    }

    /// What a report contributes to its experiment's trends (`judge::trend::points` for its kind).
    pub(crate) async fn trend_points_of(
        &self,
        experiment_id: i64,
        report: &serde_json::Value,
    ) -> Result<Vec<judge::trend::Point>, StoreError> {
        let kind: String = on_pool!(self, pool => {
            sqlx::query_scalar("SELECT kind FROM experiments WHERE id = $1").bind(experiment_id).fetch_optional(pool).await
        })?
        .ok_or_else(|| StoreError::NotFound { what: "experiment", key: experiment_id.to_string() })?;
        Ok(judge::trend::points(kind.parse()?, report))
    }

    /// The series an experiment has points in: (metric, item, fingerprint).
    pub async fn experiment_series(&self, experiment_id: i64) -> Result<Vec<(String, String, String)>, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_as("SELECT metric, item, fingerprint FROM trend_points WHERE experiment_id = $1 ORDER BY item, metric")
                .bind(experiment_id).fetch_all(pool).await
        })?)
    }

    /// The points of the query's items, oldest first (at most `limit` newest per item).
    pub async fn trend(&self, q: &TrendQuery) -> Result<Vec<TrendRow>, StoreError> {
        let mut out = Vec::new();
        for item in &q.items {
            let mut rows: Vec<TrendRow> = on_pool!(self, pool => {
                sqlx::query_as(
                    "SELECT experiment_id, fingerprint, item, at, value FROM trend_points \
                     WHERE suite_id = $1 AND metric = $2 AND item = $3 AND at >= $4 AND at < $5 \
                     ORDER BY at DESC LIMIT $6",
                )
                .bind(q.suite_id).bind(&q.metric).bind(item).bind(q.since.unwrap_or(i64::MIN)).bind(q.until.unwrap_or(i64::MAX)).bind(i64::from(q.limit))
                .fetch_all(pool).await
            })?;
            rows.reverse();
            out.extend(rows);
        }
        Ok(out)
    }

    /// The items (stages or cells) and metrics of the suite's newest judged experiment with points:
    /// what the trends page offers to chart.
    pub async fn trend_choices(&self, suite_id: i64) -> Result<Vec<(String, String)>, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT DISTINCT metric, item FROM trend_points WHERE experiment_id = \
                 (SELECT e.id FROM experiments e WHERE e.suite_id = $1 \
                  AND EXISTS (SELECT 1 FROM trend_points p WHERE p.experiment_id = e.id) ORDER BY e.created_at DESC, e.id DESC LIMIT 1) \
                 ORDER BY item, metric",
            )
            .bind(suite_id).fetch_all(pool).await
        })?)
    }
}

/// Writes an experiment's points (replacing earlier ones) inside the caller's transaction; an
/// experiment without a suite has no trend.
macro_rules! write_points {
    ($tx:expr, $experiment_id:expr, $points:expr) => {{
        sqlx::query("DELETE FROM trend_points WHERE experiment_id = $1").bind($experiment_id).execute(&mut *$tx).await?;
        for (item, metric, value) in $points {
            sqlx::query(
                "INSERT INTO trend_points (experiment_id, suite_id, fingerprint, metric, item, at, value) \
                 SELECT id, suite_id, fingerprint, $2, $3, created_at, $4 FROM experiments WHERE id = $1 AND suite_id IS NOT NULL",
            )
            .bind($experiment_id)
            .bind(*metric)
            .bind(item)
            .bind(*value)
            .execute(&mut *$tx)
            .await?;
        }
    }};
}
pub(crate) use write_points;
