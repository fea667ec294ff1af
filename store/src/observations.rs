//! Observations: `zephyr.stage` rows (pipeline) and warp rounds (warp), stored per trial.

use crate::{on_pool, Store, StoreError};
use serde::{Deserialize, Serialize};

pub use judge::pipeline::rows::StageRow;

/// How a stage row sits in the table: counts as integers.
#[derive(sqlx::FromRow)]
struct StoredStageRow {
    execution_id: String,
    stage_name: String,
    status: String,
    cpu_time_total: f64,
    elapsed: f64,
    items: i64,
    bytes_processed: i64,
    mem_peak_bytes_max: i64,
    total_shards: Option<i64>,
    cpu_pct_avg: Option<f64>,
    mem_bytes_avg: Option<f64>,
    item_rate: Option<f64>,
    byte_rate: Option<f64>,
    ts: Option<String>,
    row_seq: Option<i64>,
}

impl From<StoredStageRow> for StageRow {
    fn from(r: StoredStageRow) -> StageRow {
        StageRow {
            execution_id: r.execution_id,
            stage_name: r.stage_name,
            status: r.status,
            cpu_time_total: r.cpu_time_total,
            elapsed: r.elapsed,
            items: r.items as f64,
            bytes_processed: r.bytes_processed as f64,
            mem_peak_bytes_max: r.mem_peak_bytes_max as f64,
            total_shards: r.total_shards.map(|v| v as f64),
            cpu_pct_avg: r.cpu_pct_avg,
            mem_bytes_avg: r.mem_bytes_avg,
            item_rate: r.item_rate,
            byte_rate: r.byte_rate,
            ts: r.ts,
            seq: r.row_seq,
        }
    }
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
        self.write_stage_rows(trial_id, rows, false).await
    }

    /// A trial's rows, instead of any it holds (one transaction): writing an outcome again after a
    /// failed attempt stores each row once.
    pub async fn replace_stage_rows(&self, trial_id: i64, rows: &[StageRow]) -> Result<(), StoreError> {
        self.write_stage_rows(trial_id, rows, true).await
    }

    async fn write_stage_rows(&self, trial_id: i64, rows: &[StageRow], replace: bool) -> Result<(), StoreError> {
        on_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            if replace {
                sqlx::query("DELETE FROM stage_rows WHERE trial_id = $1").bind(trial_id).execute(&mut *tx).await?;
            }
            for r in rows {
                sqlx::query(
                    "INSERT INTO stage_rows (trial_id, execution_id, stage_name, status, cpu_time_total, elapsed, items, \
                     bytes_processed, mem_peak_bytes_max, total_shards, cpu_pct_avg, mem_bytes_avg, item_rate, byte_rate, ts, row_seq) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
                )
                .bind(trial_id).bind(&r.execution_id).bind(&r.stage_name).bind(&r.status)
                .bind(r.cpu_time_total).bind(r.elapsed).bind(r.items as i64).bind(r.bytes_processed as i64)
                .bind(r.mem_peak_bytes_max as i64).bind(r.total_shards.map(|v| v as i64)).bind(r.cpu_pct_avg).bind(r.mem_bytes_avg)
                .bind(r.item_rate).bind(r.byte_rate).bind(&r.ts).bind(r.seq)
                .execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }

    /// The first of these execution ids whose rows another trial (not `trial_id`) already holds, and that
    /// trial: an execution belongs to one trial.
    pub async fn execution_id_owner(&self, execution_ids: &[String], trial_id: i64) -> Result<Option<(String, i64)>, StoreError> {
        for id in execution_ids {
            let other: Option<i64> = on_pool!(self, pool => {
                sqlx::query_scalar("SELECT trial_id FROM stage_rows WHERE execution_id = $1 AND trial_id <> $2 LIMIT 1")
                    .bind(id).bind(trial_id).fetch_optional(pool).await
            })?;
            if let Some(other) = other {
                return Ok(Some((id.clone(), other)));
            }
        }
        Ok(None)
    }

    /// A trial's stage rows in the order they were stored.
    pub async fn stage_rows(&self, trial_id: i64) -> Result<Vec<StageRow>, StoreError> {
        let rows: Vec<StoredStageRow> = on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT execution_id, stage_name, status, cpu_time_total, elapsed, items, bytes_processed, mem_peak_bytes_max, \
                 total_shards, cpu_pct_avg, mem_bytes_avg, item_rate, byte_rate, ts, row_seq FROM stage_rows WHERE trial_id = $1 ORDER BY id",
            )
            .bind(trial_id).fetch_all(pool).await
        })?;
        Ok(rows.into_iter().map(StageRow::from).collect())
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
