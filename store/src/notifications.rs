//! Notifications (webhooks) and their delivery log.

use crate::{now_ms, on_pool, Store, StoreError};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct Notification {
    pub id: i64,
    pub experiment_id: i64,
    pub event: String,
    pub url: String,
    pub status: String,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub delivered_at: Option<i64>,
}

impl Store {
    /// Queues a notification; `None` when this experiment already has one for this event.
    pub async fn insert_notification(
        &self,
        experiment_id: i64,
        suite_id: i64,
        event: &str,
        url: &str,
        payload: &serde_json::Value,
    ) -> Result<Option<i64>, StoreError> {
        let payload = serde_json::to_string(payload)?;
        let now = now_ms();
        Ok(on_pool!(self, pool => {
            sqlx::query_scalar(
                "INSERT INTO notifications (experiment_id, suite_id, event, url, payload, status, created_at) \
                 VALUES ($1, $2, $3, $4, $5, 'pending', $6) ON CONFLICT (experiment_id, event) DO NOTHING RETURNING id",
            )
            .bind(experiment_id).bind(suite_id).bind(event).bind(url).bind(&payload).bind(now)
            .fetch_all(pool).await.map(|rows| rows.into_iter().next())
        })?)
    }

    /// Counts one delivery attempt: delivered, or its error (and `failed` once no attempt is left). The
    /// last error stays after a later success, so the log shows that a retry was needed.
    pub async fn record_delivery(&self, id: i64, result: Result<(), &str>, last: bool) -> Result<(), StoreError> {
        let now = now_ms();
        let (status, error, delivered) = match result {
            Ok(()) => ("delivered", None, Some(now)),
            Err(e) => (if last { "failed" } else { "pending" }, Some(e.to_string()), None),
        };
        on_pool!(self, pool => {
            sqlx::query("UPDATE notifications SET attempts = attempts + 1, status = $1, last_error = COALESCE($2, last_error), delivered_at = $3 WHERE id = $4")
                .bind(status).bind(error).bind(delivered).bind(id).execute(pool).await.map(|r| r.rows_affected())
        })?;
        Ok(())
    }

    /// A suite's newest notifications.
    pub async fn notifications(&self, suite_id: i64, limit: i64) -> Result<Vec<Notification>, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT id, experiment_id, event, url, status, attempts, last_error, created_at, delivered_at FROM notifications \
                 WHERE suite_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2",
            )
            .bind(suite_id).bind(limit).fetch_all(pool).await
        })?)
    }
}
