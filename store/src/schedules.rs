//! Scheduled baselines: the claim of each cron tick (exclusive across replicas through the UNIQUE key
//! of `schedule_runs`), what the tick did, and the pool of baseline runs a launch may reuse.

use crate::{now_ms, on_pool, Store, StoreError};
use serde::{Deserialize, Serialize};

/// One tick of a schedule and what it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct ScheduleRun {
    pub id: i64,
    pub schedule: String,
    /// The cron tick (ms since the epoch), not when it ran.
    pub tick_at: i64,
    pub claimed_by: String,
    pub claimed_at: i64,
    /// `claimed` (in progress), `launched`, `skipped` or `failed`.
    pub outcome: String,
    pub sha: Option<String>,
    pub experiment_id: Option<i64>,
    pub detail: Option<String>,
}

/// A baseline run (one arm, measured, not compared) that a launch may reuse as its control.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct BaselineRun {
    pub experiment_id: i64,
    pub suite_id: Option<i64>,
    pub status: String,
    pub sha: Option<String>,
    pub git_ref: Option<String>,
    /// The workload fingerprint's JSON.
    pub fingerprint: String,
    pub finished_at: Option<i64>,
}

/// The arm name that marks a baseline run.
pub const BASELINE_ARM: &str = "baseline";

/// Experiments with their baseline arm (`$1`: the arm name), as `BaselineRun`s.
const BASELINE_RUNS: &str = "SELECT e.id AS experiment_id, e.suite_id, e.status, a.sha, a.git_ref, e.fingerprint, e.finished_at \
     FROM experiments e JOIN arms a ON a.experiment_id = e.id AND a.name = $1";

impl Store {
    /// Claims one tick for `worker` at `now`: the run's id, or `None` when a replica (or an earlier
    /// start) holds it. A claim still unfinished after `lease_ms` belongs to a process that died between
    /// the claim and its outcome; one replica takes it over (the same row, re-stamped), so the tick
    /// still runs instead of staying `claimed` for good.
    pub async fn claim_tick(
        &self,
        suite_id: i64,
        schedule: &str,
        tick_at: i64,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Option<i64>, StoreError> {
        let fresh = on_pool!(self, pool => {
            sqlx::query_scalar(
                "INSERT INTO schedule_runs (suite_id, schedule, tick_at, claimed_by, claimed_at, outcome) VALUES ($1, $2, $3, $4, $5, 'claimed') \
                 ON CONFLICT (suite_id, schedule, tick_at) DO NOTHING RETURNING id",
            )
            .bind(suite_id).bind(schedule).bind(tick_at).bind(worker).bind(now)
            .fetch_all(pool).await.map(|rows| rows.into_iter().next())
        })?;
        if fresh.is_some() {
            return Ok(fresh);
        }
        Ok(on_pool!(self, pool => {
            sqlx::query_scalar(
                "UPDATE schedule_runs SET claimed_by = $1, claimed_at = $2 \
                 WHERE suite_id = $3 AND schedule = $4 AND tick_at = $5 AND outcome = 'claimed' AND claimed_at < $6 RETURNING id",
            )
            .bind(worker).bind(now).bind(suite_id).bind(schedule).bind(tick_at).bind(now - lease_ms)
            .fetch_all(pool).await.map(|rows| rows.into_iter().next())
        })?)
    }

    /// Records what a claimed tick did — only while the claim is still this worker's (claimed by
    /// `worker` at `claimed_at`, not finished): a worker whose lease ran out and was taken over learns so
    /// (`false`) instead of overwriting the new holder's outcome.
    #[allow(clippy::too_many_arguments)]
    pub async fn finish_tick(
        &self,
        id: i64,
        worker: &str,
        claimed_at: i64,
        outcome: &str,
        sha: Option<&str>,
        experiment_id: Option<i64>,
        detail: &str,
    ) -> Result<bool, StoreError> {
        let n = on_pool!(self, pool => {
            sqlx::query(
                "UPDATE schedule_runs SET outcome = $1, sha = $2, experiment_id = $3, detail = $4 \
                 WHERE id = $5 AND claimed_by = $6 AND claimed_at = $7 AND outcome = 'claimed'",
            )
            .bind(outcome).bind(sha).bind(experiment_id).bind(detail).bind(id).bind(worker).bind(claimed_at)
            .execute(pool).await.map(|r| r.rows_affected())
        })?;
        Ok(n == 1)
    }

    /// The SHA the schedule last launched (an unchanged ref is skipped).
    pub async fn last_scheduled_sha(&self, suite_id: i64, schedule: &str) -> Result<Option<String>, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_scalar(
                "SELECT sha FROM schedule_runs WHERE suite_id = $1 AND schedule = $2 AND outcome = 'launched' ORDER BY tick_at DESC LIMIT 1",
            )
            .bind(suite_id).bind(schedule).fetch_optional(pool).await
        })?)
    }

    /// The SHA of the schedule's newest run that ended judged without a regression or a gate FAIL.
    pub async fn last_good_scheduled_sha(&self, suite_id: i64, schedule: &str) -> Result<Option<String>, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_scalar(
                "SELECT r.sha FROM schedule_runs r JOIN experiments e ON e.id = r.experiment_id \
                 WHERE r.suite_id = $1 AND r.schedule = $2 AND r.outcome = 'launched' AND e.status = 'judged' \
                   AND (e.verdict IS NULL OR e.verdict NOT IN ('regression', 'FAIL')) \
                 ORDER BY r.tick_at DESC LIMIT 1",
            )
            .bind(suite_id).bind(schedule).fetch_optional(pool).await
        })?)
    }

    /// A suite's newest schedule runs.
    pub async fn schedule_runs(&self, suite_id: i64, limit: i64) -> Result<Vec<ScheduleRun>, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT id, schedule, tick_at, claimed_by, claimed_at, outcome, sha, experiment_id, detail FROM schedule_runs \
                 WHERE suite_id = $1 ORDER BY tick_at DESC, id DESC LIMIT $2",
            )
            .bind(suite_id).bind(limit).fetch_all(pool).await
        })?)
    }

    /// A suite's ended baseline runs, newest first.
    pub async fn baseline_runs(&self, suite_id: i64, limit: i64) -> Result<Vec<BaselineRun>, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_as(&format!("{BASELINE_RUNS} WHERE e.suite_id = $2 AND e.status = 'judged' ORDER BY e.finished_at DESC, e.id DESC LIMIT $3"))
                .bind(BASELINE_ARM).bind(suite_id).bind(limit).fetch_all(pool).await
        })?)
    }

    /// One experiment as a baseline run, whatever its state; `None` when it has no baseline arm.
    pub async fn baseline_run(&self, experiment_id: i64) -> Result<Option<BaselineRun>, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_as(&format!("{BASELINE_RUNS} WHERE e.id = $2")).bind(BASELINE_ARM).bind(experiment_id).fetch_optional(pool).await
        })?)
    }

    /// Ends a baseline run: it is measured, not compared, so it has no verdict; its levels (`report`, in
    /// the judge's report shape) feed the trend charts like a judged experiment's control.
    pub async fn record_baseline(&self, experiment_id: i64, report: &serde_json::Value) -> Result<(), StoreError> {
        let points = self.trend_points_of(experiment_id, report).await?;
        let now = now_ms();
        on_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            sqlx::query("UPDATE experiments SET verdict = NULL, status = 'judged', finished_at = $1 WHERE id = $2")
                .bind(now).bind(experiment_id).execute(&mut *tx).await?;
            crate::trends::write_points!(tx, experiment_id, points.iter());
            tx.commit().await?;
            Ok(())
        })
    }
}
