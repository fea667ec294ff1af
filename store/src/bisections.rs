//! Bisections: one row each, its search state a JSON document (`wire::bisection::JsonBisectionState`)
//! replaced whole with a compare-and-set on `version`, so two writers never lose each other's step.

use crate::{now_ms, on_pool, Store, StoreError};
use wire::bisection::{JsonBisection, JsonBisectionState};

/// A new bisection.
pub struct InsertBisection<'a> {
    pub suite_id: i64,
    pub suite_name: &'a str,
    pub good_sha: &'a str,
    pub bad_sha: &'a str,
    pub metric: &'a str,
    pub request: &'a serde_json::Value,
    pub state: &'a JsonBisectionState,
    pub launched_by: Option<i64>,
}

/// A stored bisection and the version its state was read at.
#[derive(Debug, Clone)]
pub struct StoredBisection {
    pub bisection: JsonBisection,
    pub version: i64,
    pub suite_id: Option<i64>,
    pub launched_by_id: Option<i64>,
}

type Row = (i64, Option<i64>, String, String, String, String, String, String, i64, i64, Option<i64>, Option<i64>, Option<String>);

const COLUMNS: &str = "b.id, b.suite_id, b.suite_name, b.status, b.good_sha, b.bad_sha, b.metric, b.state, b.version, b.created_at, \
     b.finished_at, b.launched_by, u.username";

fn decode(row: Row, base_url: &str) -> Result<StoredBisection, StoreError> {
    let (id, suite_id, suite, status, good_sha, bad_sha, metric, state, version, created_at, finished_at, launched_by_id, by) = row;
    let state: JsonBisectionState =
        serde_json::from_str(&state).map_err(|e| StoreError::Corrupt(format!("bisection {id}'s state: {e}")))?;
    Ok(StoredBisection {
        bisection: JsonBisection {
            id,
            suite,
            status,
            good_sha,
            bad_sha,
            metric,
            created_at,
            finished_at,
            launched_by: by,
            url: format!("{base_url}/bisections/{id}"),
            state,
        },
        version,
        suite_id,
        launched_by_id,
    })
}

impl Store {
    pub async fn insert_bisection(&self, b: &InsertBisection<'_>) -> Result<i64, StoreError> {
        let request = serde_json::to_string(b.request)?;
        let state = serde_json::to_string(b.state)?;
        let now = now_ms();
        Ok(on_pool!(self, pool => {
            sqlx::query_scalar(
                "INSERT INTO bisections (suite_id, suite_name, status, good_sha, bad_sha, metric, request, state, version, launched_by, created_at) \
                 VALUES ($1, $2, 'running', $3, $4, $5, $6, $7, 0, $8, $9) RETURNING id",
            )
            .bind(b.suite_id).bind(b.suite_name).bind(b.good_sha).bind(b.bad_sha).bind(b.metric).bind(&request).bind(&state)
            .bind(b.launched_by).bind(now)
            .fetch_all(pool).await.and_then(crate::one_row)
        })?)
    }

    /// One bisection; `base_url` makes its page link.
    pub async fn bisection(&self, id: i64, base_url: &str) -> Result<StoredBisection, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM bisections b LEFT JOIN users u ON u.id = b.launched_by WHERE b.id = $1");
        let row: Option<Row> = on_pool!(self, pool => sqlx::query_as(&sql).bind(id).fetch_optional(pool).await)?;
        decode(row.ok_or(StoreError::NotFound { what: "bisection", key: id.to_string() })?, base_url)
    }

    /// The newest bisections (all, or those with this status), newest first.
    pub async fn bisections(&self, status: Option<&str>, limit: i64, base_url: &str) -> Result<Vec<StoredBisection>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM bisections b LEFT JOIN users u ON u.id = b.launched_by \
             WHERE ($1 IS NULL OR b.status = $1) ORDER BY b.created_at DESC, b.id DESC LIMIT $2"
        );
        let rows: Vec<Row> = on_pool!(self, pool => sqlx::query_as(&sql).bind(status).bind(limit).fetch_all(pool).await)?;
        rows.into_iter().map(|r| decode(r, base_url)).collect()
    }

    /// Bisections over this range of this suite (newest first): the trends page links a change point's.
    pub async fn bisections_of_range(
        &self,
        suite: &str,
        good_sha: &str,
        bad_sha: &str,
        base_url: &str,
    ) -> Result<Vec<StoredBisection>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM bisections b LEFT JOIN users u ON u.id = b.launched_by \
             WHERE b.suite_name = $1 AND b.good_sha = $2 AND b.bad_sha = $3 ORDER BY b.created_at DESC, b.id DESC LIMIT 20"
        );
        let rows: Vec<Row> = on_pool!(self, pool => sqlx::query_as(&sql).bind(suite).bind(good_sha).bind(bad_sha).fetch_all(pool).await)?;
        rows.into_iter().map(|r| decode(r, base_url)).collect()
    }

    /// Replaces the state if it is still at `version` (and the bisection still running unless `status` ends
    /// it); false when another writer got there first. `status` other than running sets `finished_at`.
    pub async fn update_bisection(
        &self,
        id: i64,
        version: i64,
        state: &JsonBisectionState,
        status: &str,
        culprit_sha: Option<&str>,
    ) -> Result<bool, StoreError> {
        let text = serde_json::to_string(state)?;
        let outcome = state.outcome.as_ref().map(|o| o.kind().to_string());
        let finished = (status != "running").then(now_ms);
        let n = on_pool!(self, pool => {
            sqlx::query(
                "UPDATE bisections SET state = $1, version = version + 1, status = $2, outcome = $3, culprit_sha = $4, \
                 finished_at = COALESCE(finished_at, $5) WHERE id = $6 AND version = $7 AND status = 'running'",
            )
            .bind(&text).bind(status).bind(outcome).bind(culprit_sha).bind(finished).bind(id).bind(version)
            .execute(pool).await.map(|r| r.rows_affected())
        })?;
        Ok(n == 1)
    }

    /// A share link of a bisection (`expires_at` epoch ms, or until revoked); returns its id.
    pub async fn insert_bisection_share(
        &self,
        bisection_id: i64,
        token_hash: &str,
        created_by: Option<i64>,
        expires_at: Option<i64>,
    ) -> Result<i64, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_scalar(
                "INSERT INTO bisection_shares (bisection_id, token_hash, created_by, created_at, expires_at) \
                 VALUES ($1, $2, $3, $4, $5) RETURNING id",
            )
            .bind(bisection_id).bind(token_hash).bind(created_by).bind(now_ms()).bind(expires_at)
            .fetch_all(pool).await.and_then(crate::one_row)
        })?)
    }

    /// What a live (not revoked, not expired) bisection share token opens: the bisection, and the
    /// experiments of its steps as they stand now (a step launched after the link was made is opened too).
    pub async fn bisection_share(&self, token_hash: &str) -> Result<Option<(i64, Vec<i64>)>, StoreError> {
        let row: Option<(i64, String)> = on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT b.id, b.state FROM bisection_shares s JOIN bisections b ON b.id = s.bisection_id \
                 WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND (s.expires_at IS NULL OR s.expires_at > $2)",
            )
            .bind(token_hash).bind(now_ms()).fetch_optional(pool).await
        })?;
        let Some((id, state)) = row else { return Ok(None) };
        let state: JsonBisectionState =
            serde_json::from_str(&state).map_err(|e| StoreError::Corrupt(format!("bisection {id}'s state: {e}")))?;
        Ok(Some((id, state.search.steps.iter().filter_map(|s| s.experiment_id).collect())))
    }

    /// How many live share links a bisection has.
    pub async fn bisection_share_count(&self, bisection_id: i64) -> Result<i64, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_scalar(
                "SELECT COUNT(*) FROM bisection_shares WHERE bisection_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)",
            )
            .bind(bisection_id).bind(now_ms()).fetch_one(pool).await
        })?)
    }

    /// Revokes every live share link of a bisection; returns how many.
    pub async fn revoke_bisection_shares(&self, bisection_id: i64) -> Result<u64, StoreError> {
        let now = now_ms();
        Ok(on_pool!(self, pool => {
            sqlx::query(
                "UPDATE bisection_shares SET revoked_at = $1 \
                 WHERE bisection_id = $2 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $1)",
            )
            .bind(now).bind(bisection_id).execute(pool).await.map(|r| r.rows_affected())
        })?)
    }
}
