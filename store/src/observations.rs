//! Observations: `zephyr.stage` rows (pipeline) and warp rounds (warp), stored per trial.

use crate::{on_pool, Store, StoreError};
use serde::{Deserialize, Serialize};

/// One `zephyr.stage` row as finelog serves it. Numbers the row lacks are `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct StageRow {
    pub execution_id: String,
    pub stage_name: String,
    pub status: String,
    pub cpu_time_total: Option<f64>,
    pub elapsed: Option<f64>,
    pub items: Option<i64>,
    pub bytes_processed: Option<i64>,
    pub mem_peak_bytes_max: Option<i64>,
    pub total_shards: Option<i64>,
    pub cpu_pct_avg: Option<f64>,
    pub mem_bytes_avg: Option<f64>,
    pub item_rate: Option<f64>,
    pub byte_rate: Option<f64>,
    pub ts: Option<String>,
    pub row_seq: Option<i64>,
}

/// One round (one attempt) of one warp cell and operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct WarpRound {
    pub workload: String,
    pub operation: String,
    pub object_size: i64,
    pub drive_sync: bool,
    pub round: i64,
    pub attempt: i64,
    pub ok: bool,
    pub reqps: Option<f64>,
    pub throughput_bps: Option<f64>,
    pub latency_avg_ms: Option<f64>,
    pub latency_p50_ms: Option<f64>,
    pub latency_p90_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub requests: Option<i64>,
    pub errors: Option<i64>,
    pub error_text: Option<String>,
}

impl Store {
    /// Stores a trial's stage rows in one transaction (all or nothing).
    pub async fn insert_stage_rows(&self, trial_id: i64, rows: &[StageRow]) -> Result<(), StoreError> {
        on_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            for r in rows {
                sqlx::query(
                    "INSERT INTO stage_rows (trial_id, execution_id, stage_name, status, cpu_time_total, elapsed, items, \
                     bytes_processed, mem_peak_bytes_max, total_shards, cpu_pct_avg, mem_bytes_avg, item_rate, byte_rate, ts, row_seq) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
                )
                .bind(trial_id).bind(&r.execution_id).bind(&r.stage_name).bind(&r.status)
                .bind(r.cpu_time_total).bind(r.elapsed).bind(r.items).bind(r.bytes_processed)
                .bind(r.mem_peak_bytes_max).bind(r.total_shards).bind(r.cpu_pct_avg).bind(r.mem_bytes_avg)
                .bind(r.item_rate).bind(r.byte_rate).bind(&r.ts).bind(r.row_seq)
                .execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }

    /// A trial's stage rows in the order they were stored.
    pub async fn stage_rows(&self, trial_id: i64) -> Result<Vec<StageRow>, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT execution_id, stage_name, status, cpu_time_total, elapsed, items, bytes_processed, mem_peak_bytes_max, \
                 total_shards, cpu_pct_avg, mem_bytes_avg, item_rate, byte_rate, ts, row_seq FROM stage_rows WHERE trial_id = $1 ORDER BY id",
            )
            .bind(trial_id).fetch_all(pool).await
        })?)
    }

    /// Stores a phase's warp rounds in one transaction; a repeated (workload, operation, round, attempt) is refused.
    pub async fn insert_warp_rounds(&self, trial_id: i64, rounds: &[WarpRound]) -> Result<(), StoreError> {
        on_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            for r in rounds {
                sqlx::query(
                    "INSERT INTO warp_rounds (trial_id, workload, operation, object_size, drive_sync, round, attempt, ok, reqps, \
                     throughput_bps, latency_avg_ms, latency_p50_ms, latency_p90_ms, latency_p99_ms, requests, errors, error_text) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
                )
                .bind(trial_id).bind(&r.workload).bind(&r.operation).bind(r.object_size).bind(r.drive_sync)
                .bind(r.round).bind(r.attempt).bind(r.ok).bind(r.reqps).bind(r.throughput_bps)
                .bind(r.latency_avg_ms).bind(r.latency_p50_ms).bind(r.latency_p90_ms).bind(r.latency_p99_ms)
                .bind(r.requests).bind(r.errors).bind(&r.error_text)
                .execute(&mut *tx).await
                .map_err(|e| StoreError::unique(e, || format!(
                    "round {} attempt {} of {}:{} is already stored", r.round, r.attempt, r.workload, r.operation)))?;
            }
            tx.commit().await?;
            Ok(())
        })
    }

    pub async fn warp_rounds(&self, trial_id: i64) -> Result<Vec<WarpRound>, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT workload, operation, object_size, drive_sync, round, attempt, ok, reqps, throughput_bps, latency_avg_ms, \
                 latency_p50_ms, latency_p90_ms, latency_p99_ms, requests, errors, error_text FROM warp_rounds \
                 WHERE trial_id = $1 ORDER BY workload, operation, round, attempt",
            )
            .bind(trial_id).fetch_all(pool).await
        })?)
    }
}
