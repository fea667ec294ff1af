//! Trials: planned runs of an arm, their states, and the scheduler's claim.

use crate::{now_ms, on_pool, Store, StoreError};
use judge::{InfraReason, TrialState};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone)]
pub struct InsertTrial {
    pub arm_id: i64,
    /// Position in the plan (C,T,C,T or ABBA order).
    pub seq: i64,
    /// For warp: the phase's drive-sync cell, e.g. "sync-on".
    pub cell: Option<String>,
    pub repeat_index: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    pub id: i64,
    pub experiment_id: i64,
    pub arm_id: i64,
    pub seq: i64,
    pub cell: Option<String>,
    pub repeat_index: i64,
    pub attempt: i64,
    pub state: TrialState,
    pub infra_reason: Option<InfraReason>,
    pub detail: Option<String>,
    pub claimed_by: Option<String>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
}

#[derive(sqlx::FromRow)]
struct TrialRow {
    id: i64,
    experiment_id: i64,
    arm_id: i64,
    seq: i64,
    cell: Option<String>,
    repeat_index: i64,
    attempt: i64,
    state: String,
    infra_reason: Option<String>,
    detail: Option<String>,
    claimed_by: Option<String>,
    created_at: i64,
    started_at: Option<i64>,
    finished_at: Option<i64>,
}

impl TryFrom<TrialRow> for Trial {
    type Error = StoreError;
    fn try_from(r: TrialRow) -> Result<Self, StoreError> {
        Ok(Trial {
            id: r.id,
            experiment_id: r.experiment_id,
            arm_id: r.arm_id,
            seq: r.seq,
            cell: r.cell,
            repeat_index: r.repeat_index,
            attempt: r.attempt,
            state: r.state.parse()?,
            infra_reason: r.infra_reason.map(|s| s.parse()).transpose()?,
            detail: r.detail,
            claimed_by: r.claimed_by,
            created_at: r.created_at,
            started_at: r.started_at,
            finished_at: r.finished_at,
        })
    }
}

const TRIAL_COLUMNS: &str =
    "id, experiment_id, arm_id, seq, cell, repeat_index, attempt, state, infra_reason, detail, claimed_by, created_at, started_at, finished_at";

impl Store {
    /// Stores the planned trials of an experiment, all `queued`, in one transaction.
    pub async fn insert_trials(&self, experiment_id: i64, trials: &[InsertTrial]) -> Result<Vec<i64>, StoreError> {
        let now = now_ms();
        on_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let mut ids = Vec::with_capacity(trials.len());
            for t in trials {
                let id: i64 = sqlx::query_scalar(
                    "INSERT INTO trials (experiment_id, arm_id, seq, cell, repeat_index, state, created_at) \
                     SELECT $1, a.id, $2, $3, $4, $5, $6 FROM arms a WHERE a.id = $7 AND a.experiment_id = $1 RETURNING id",
                )
                .bind(experiment_id).bind(t.seq).bind(&t.cell).bind(t.repeat_index)
                .bind(TrialState::Queued.as_str()).bind(now).bind(t.arm_id)
                .fetch_optional(&mut *tx).await?
                .ok_or_else(|| StoreError::NotFound { what: "arm of this experiment", key: t.arm_id.to_string() })?;
                ids.push(id);
            }
            tx.commit().await?;
            Ok(ids)
        })
    }

    pub async fn trials(&self, experiment_id: i64) -> Result<Vec<Trial>, StoreError> {
        let sql = format!("SELECT {TRIAL_COLUMNS} FROM trials WHERE experiment_id = $1 ORDER BY seq, attempt");
        let rows: Vec<TrialRow> = on_pool!(self, pool => sqlx::query_as(&sql).bind(experiment_id).fetch_all(pool).await)?;
        rows.into_iter().map(Trial::try_from).collect()
    }

    /// How many trials are in each state (states with none are left out): the metrics' queue depth.
    pub async fn trial_state_counts(&self) -> Result<Vec<(String, i64)>, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_as("SELECT state, COUNT(*) FROM trials GROUP BY state ORDER BY state").fetch_all(pool).await
        })?)
    }

    /// Atomically takes the oldest queued trial for `worker`. Two workers never get the same trial:
    /// the UPDATE re-checks `state = 'queued'`, so a loser of the race gets nothing and asks again.
    pub async fn claim_next_trial(&self, worker: &str) -> Result<Option<Trial>, StoreError> {
        let now = now_ms();
        let sql = format!(
            "UPDATE trials SET state = 'running', claimed_by = $1, started_at = $2, heartbeat_at = $2 \
             WHERE id = (SELECT id FROM trials WHERE state = 'queued' ORDER BY id LIMIT 1) AND state = 'queued' \
             RETURNING {TRIAL_COLUMNS}"
        );
        for _ in 0..8 {
            let row: Option<TrialRow> = on_pool!(self, pool => sqlx::query_as(&sql).bind(worker).bind(now).fetch_optional(pool).await)?;
            if let Some(row) = row {
                return Ok(Some(row.try_into()?));
            }
            let queued: i64 = on_pool!(self, pool => {
                sqlx::query_scalar("SELECT COUNT(*) FROM trials WHERE state = 'queued'").fetch_one(pool).await
            })?;
            if queued == 0 {
                return Ok(None);
            }
        }
        Ok(None)
    }

    /// Moves a trial to a terminal state. Only a `running` or `queued` trial moves; a trial that already
    /// ended keeps its outcome (returns `Conflict`).
    pub async fn finish_trial(
        &self,
        trial_id: i64,
        state: TrialState,
        infra_reason: Option<InfraReason>,
        detail: Option<&str>,
    ) -> Result<(), StoreError> {
        if !state.is_terminal() {
            return Err(StoreError::Conflict(format!("{state} is not a final trial state")));
        }
        if (state == TrialState::InfraFailed) != infra_reason.is_some() {
            return Err(StoreError::Conflict("an infra_failed trial, and only one, carries an infrastructure reason".into()));
        }
        let now = now_ms();
        let changed = on_pool!(self, pool => {
            sqlx::query(
                "UPDATE trials SET state = $1, infra_reason = $2, detail = $3, finished_at = $4 \
                 WHERE id = $5 AND state IN ('queued', 'running')",
            )
            .bind(state.as_str()).bind(infra_reason.map(|r| r.as_str())).bind(detail).bind(now).bind(trial_id)
            .execute(pool).await.map(|r| r.rows_affected())
        })?;
        if changed == 0 {
            return Err(StoreError::Conflict(format!("trial {trial_id} does not exist or has already ended")));
        }
        Ok(())
    }
}
