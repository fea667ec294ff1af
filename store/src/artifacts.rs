//! Files an experiment keeps in the data dir (logs, reports, charts, binaries), by path relative to it.
//! A row here is a link: the pruning job never deletes a file a stored experiment still links to.

use crate::{now_ms, on_pool, Store, StoreError};

impl Store {
    pub async fn insert_artifact(
        &self,
        experiment_id: i64,
        trial_id: Option<i64>,
        kind: &str,
        rel_path: &str,
        size_bytes: i64,
    ) -> Result<i64, StoreError> {
        let now = now_ms();
        Ok(on_pool!(self, pool => {
            sqlx::query_scalar(
                "INSERT INTO artifacts (experiment_id, trial_id, kind, rel_path, size_bytes, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
            )
            .bind(experiment_id).bind(trial_id).bind(kind).bind(rel_path).bind(size_bytes).bind(now)
            .fetch_all(pool).await.and_then(crate::one_row)
        })?)
    }

    /// Every path (relative to the data dir) that some stored experiment links to.
    pub async fn linked_artifact_paths(&self) -> Result<Vec<String>, StoreError> {
        Ok(on_pool!(self, pool => sqlx::query_scalar("SELECT DISTINCT rel_path FROM artifacts").fetch_all(pool).await)?)
    }

    /// Ids of experiments that are not finished (queued or running): their worktrees stay.
    pub async fn unfinished_experiment_ids(&self) -> Result<Vec<i64>, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_scalar("SELECT id FROM experiments WHERE finished_at IS NULL ORDER BY id").fetch_all(pool).await
        })?)
    }
}
