//! Trials: planned runs of an arm, their states, and the dispatcher's claim.

use crate::{now_ms, on_pool, Store, StoreError};
use judge::{ExperimentStatus, InfraReason, TrialState};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone)]
pub struct InsertTrial {
    pub arm_id: i64,
    /// Position in the plan (C,T,C,T or ABBA order).
    pub seq: i64,
    /// For warp: the phase's drive-sync cell, e.g. "sync-on".
    pub cell: Option<String>,
    /// The pair (repeat) it belongs to; [`judge::TrialRole::WARM_UP_REPEAT`] for a warm-up trial, which is
    /// stored with the role `warm_up` (`TrialRole::of_repeat`).
    pub repeat_index: i64,
}

pub use wire::experiment::Trial;

/// What a trial's run left in the store beyond its state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRun {
    pub run_tag: Option<String>,
    pub job_id: Option<String>,
    pub log_path: Option<String>,
    pub execution_ids: Vec<String>,
    pub exit_code: Option<i64>,
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
    job_id: Option<String>,
    engine_state: Option<String>,
    pair_position: Option<i64>,
    role: String,
    host_facts: Option<String>,
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
            job_id: r.job_id,
            engine_state: r.engine_state,
            position: r.pair_position,
            role: r.role.parse()?,
            // Facts that no longer parse (a later shape) are left out rather than failing the read.
            host: r.host_facts.and_then(|h| serde_json::from_str(&h).ok()),
        })
    }
}

#[derive(sqlx::FromRow)]
struct ProgressRow {
    #[sqlx(flatten)]
    trial: TrialRow,
    log_path: Option<String>,
    experiment_status: String,
    lane_ahead: i64,
    look_pairs: Option<i64>,
}

/// What one tick of the live event stream reads.
#[derive(Debug, Clone)]
pub struct ProgressRows {
    pub status: ExperimentStatus,
    /// Other experiments' trials queued or running in this experiment's lane (what it may wait behind).
    pub lane_ahead: i64,
    /// An adaptive experiment's latest look: how many units it judged (its report is [`Store::look`]).
    pub look_pairs: Option<i64>,
    pub trials: Vec<(Trial, Option<String>)>,
}

const TRIAL_COLUMNS: &str =
    "id, experiment_id, arm_id, seq, cell, repeat_index, attempt, state, infra_reason, detail, claimed_by, created_at, started_at, finished_at, \
     job_id, engine_state, pair_position, role, host_facts";

/// One queued trial of an experiment, on an arm of that experiment only ($1 experiment, $2 seq, $3 cell,
/// $4 repeat, $5 state, $6 now, $7 arm).
const INSERT_TRIAL: &str = "INSERT INTO trials (experiment_id, arm_id, seq, cell, repeat_index, state, created_at, role) \
     SELECT $1, a.id, $2, $3, $4, $5, $6, $8 FROM arms a WHERE a.id = $7 AND a.experiment_id = $1 RETURNING id";

impl Store {
    /// Stores the planned trials of an experiment, all `queued`, in one transaction.
    pub async fn insert_trials(&self, experiment_id: i64, trials: &[InsertTrial]) -> Result<Vec<i64>, StoreError> {
        let now = now_ms();
        on_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let mut ids = Vec::with_capacity(trials.len());
            for t in trials {
                let id: i64 = sqlx::query_scalar(INSERT_TRIAL)
                .bind(experiment_id).bind(t.seq).bind(&t.cell).bind(t.repeat_index)
                .bind(TrialState::Queued.as_str()).bind(now).bind(t.arm_id).bind(judge::TrialRole::of_repeat(t.repeat_index).as_str())
                .fetch_optional(&mut *tx).await?
                .ok_or_else(|| StoreError::NotFound { what: "arm of this experiment", key: t.arm_id.to_string() })?;
                ids.push(id);
            }
            tx.commit().await?;
            Ok(ids)
        })
    }

    /// Grows an adaptive experiment from `from` to `to` repeats an arm with `trials` (queued), if no one
    /// else has since it read `from`: a compare-and-set on `experiments.planned_repeats` (NULL counts as
    /// `from`, the launch's own plan) in the same transaction as the inserts. False: another caller grew it
    /// first, and nothing was added.
    pub async fn add_repeats(&self, experiment_id: i64, from: i64, to: i64, trials: &[InsertTrial]) -> Result<bool, StoreError> {
        let now = now_ms();
        on_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let moved = sqlx::query(
                "UPDATE experiments SET planned_repeats = $1 WHERE id = $2 AND COALESCE(planned_repeats, $3) = $3 \
                 AND status IN ('queued', 'running')",
            )
            .bind(to).bind(experiment_id).bind(from)
            .execute(&mut *tx).await?.rows_affected();
            if moved != 1 {
                return Ok(false);
            }
            for t in trials {
                sqlx::query(INSERT_TRIAL)
                .bind(experiment_id).bind(t.seq).bind(&t.cell).bind(t.repeat_index)
                .bind(TrialState::Queued.as_str()).bind(now).bind(t.arm_id).bind(judge::TrialRole::of_repeat(t.repeat_index).as_str())
                .fetch_optional(&mut *tx).await?
                .ok_or_else(|| StoreError::NotFound { what: "arm of this experiment", key: t.arm_id.to_string() })?;
            }
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Keeps an adaptive experiment's look at `pairs` settled units (its report), unless a look at as many
    /// or more is kept already (two trials ending at once may judge in either order). True when written.
    pub async fn set_look(&self, experiment_id: i64, pairs: i64, report: &serde_json::Value) -> Result<bool, StoreError> {
        let text = serde_json::to_string(report)?;
        let n = on_pool!(self, pool => {
            sqlx::query("UPDATE experiments SET look_pairs = $1, look_report = $2 WHERE id = $3 AND COALESCE(look_pairs, 0) < $1")
                .bind(pairs).bind(&text).bind(experiment_id).execute(pool).await.map(|r| r.rows_affected())
        })?;
        Ok(n == 1)
    }

    /// An adaptive experiment's latest look: (units judged, report); None before its first look.
    pub async fn look(&self, experiment_id: i64) -> Result<Option<(i64, serde_json::Value)>, StoreError> {
        let row: Option<(Option<i64>, Option<String>)> = on_pool!(self, pool => {
            sqlx::query_as("SELECT look_pairs, look_report FROM experiments WHERE id = $1").bind(experiment_id).fetch_optional(pool).await
        })?;
        let (pairs, report) = match row {
            None => return Err(StoreError::NotFound { what: "experiment", key: experiment_id.to_string() }),
            Some((Some(p), Some(r))) => (p, r),
            Some(_) => return Ok(None),
        };
        Ok(Some((pairs, serde_json::from_str(&report)?)))
    }

    /// How long a suite's latest succeeded trials ran, in seconds, newest first: what a launch
    /// preview's time estimate rests on.
    pub async fn recent_trial_seconds(&self, suite_id: i64, limit: i64) -> Result<Vec<f64>, StoreError> {
        let rows: Vec<(i64,)> = on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT t.finished_at - t.started_at FROM trials t JOIN experiments e ON e.id = t.experiment_id \
                 WHERE e.suite_id = $1 AND t.state = 'succeeded' AND t.started_at IS NOT NULL AND t.finished_at IS NOT NULL \
                 ORDER BY t.finished_at DESC LIMIT $2",
            )
            .bind(suite_id).bind(limit).fetch_all(pool).await
        })?;
        Ok(rows.into_iter().map(|(ms,)| ms.max(0) as f64 / 1000.0).collect())
    }

    pub async fn trial(&self, trial_id: i64) -> Result<Trial, StoreError> {
        let sql = format!("SELECT {TRIAL_COLUMNS} FROM trials WHERE id = $1");
        let row: Option<TrialRow> = on_pool!(self, pool => sqlx::query_as(&sql).bind(trial_id).fetch_optional(pool).await)?;
        row.ok_or(StoreError::NotFound { what: "trial", key: trial_id.to_string() })?.try_into()
    }

    pub async fn trials(&self, experiment_id: i64) -> Result<Vec<Trial>, StoreError> {
        let sql = format!("SELECT {TRIAL_COLUMNS} FROM trials WHERE experiment_id = $1 ORDER BY seq, attempt");
        let rows: Vec<TrialRow> = on_pool!(self, pool => sqlx::query_as(&sql).bind(experiment_id).fetch_all(pool).await)?;
        rows.into_iter().map(Trial::try_from).collect()
    }

    /// An experiment's progress in one query (the live event stream's tick): its status, every trial
    /// with its log path in plan order, and how many other experiments' trials are queued or running in its
    /// lane. `None` for an experiment without trials (or none at all).
    pub async fn progress_rows(&self, experiment_id: i64) -> Result<Option<ProgressRows>, StoreError> {
        let columns = TRIAL_COLUMNS.split(", ").map(|c| format!("t.{}", c.trim())).collect::<Vec<_>>().join(", ");
        let sql = format!(
            "SELECT {columns}, t.log_path, e.status AS experiment_status, e.look_pairs, \
             (SELECT COUNT(*) FROM trials o JOIN experiments oe ON oe.id = o.experiment_id \
              WHERE o.state IN ('queued', 'running') AND oe.lane = e.lane AND o.experiment_id <> e.id) AS lane_ahead \
             FROM trials t JOIN experiments e ON e.id = t.experiment_id WHERE t.experiment_id = $1 ORDER BY t.seq, t.attempt"
        );
        let rows: Vec<ProgressRow> = on_pool!(self, pool => sqlx::query_as(&sql).bind(experiment_id).fetch_all(pool).await)?;
        let Some(first) = rows.first() else { return Ok(None) };
        let (status, lane_ahead, look_pairs) = (first.experiment_status.parse::<ExperimentStatus>()?, first.lane_ahead, first.look_pairs);
        let trials = rows.into_iter().map(|r| Ok((Trial::try_from(r.trial)?, r.log_path))).collect::<Result<Vec<_>, StoreError>>()?;
        Ok(Some(ProgressRows { status, lane_ahead, look_pairs, trials }))
    }

    /// Records how a running trial was started: its run tag, the supervisor's process id, host and log.
    pub async fn set_trial_job(&self, trial_id: i64, run_tag: &str, job_id: &str, host: &str, log_path: &str) -> Result<(), StoreError> {
        let now = now_ms();
        on_pool!(self, pool => {
            sqlx::query("UPDATE trials SET run_tag = $1, job_id = $2, host = $3, log_path = $4, heartbeat_at = $5 WHERE id = $6")
                .bind(run_tag).bind(job_id).bind(host).bind(log_path).bind(now).bind(trial_id)
                .execute(pool).await.map(|r| r.rows_affected())
        })?;
        Ok(())
    }

    /// Records what a trial's process left behind: its exit code and the execution ids in its log.
    pub async fn set_trial_result(&self, trial_id: i64, exit_code: Option<i64>, execution_ids: &[String]) -> Result<(), StoreError> {
        let ids = serde_json::to_string(execution_ids)?;
        on_pool!(self, pool => {
            sqlx::query("UPDATE trials SET exit_code = $1, execution_ids = $2 WHERE id = $3")
                .bind(exit_code).bind(&ids).bind(trial_id).execute(pool).await.map(|r| r.rows_affected())
        })?;
        Ok(())
    }

    /// Keeps what the host was doing while the trial ran (`arbiter supervise`'s reading).
    pub async fn set_host_facts(&self, trial_id: i64, facts: &wire::experiment::JsonHostFacts) -> Result<(), StoreError> {
        let json = serde_json::to_string(facts)?;
        on_pool!(self, pool => {
            sqlx::query("UPDATE trials SET host_facts = $1 WHERE id = $2").bind(&json).bind(trial_id).execute(pool).await.map(|r| r.rows_affected())
        })?;
        Ok(())
    }

    /// A trial's run record: (run tag, job id, log path, execution ids, exit code).
    pub async fn trial_run(&self, trial_id: i64) -> Result<TrialRun, StoreError> {
        type RunRow = (Option<String>, Option<String>, Option<String>, String, Option<i64>);
        let row: Option<RunRow> = on_pool!(self, pool => {
            sqlx::query_as("SELECT run_tag, job_id, log_path, execution_ids, exit_code FROM trials WHERE id = $1")
                .bind(trial_id).fetch_optional(pool).await
        })?;
        let r = row.ok_or(StoreError::NotFound { what: "trial", key: trial_id.to_string() })?;
        Ok(TrialRun { run_tag: r.0, job_id: r.1, log_path: r.2, execution_ids: serde_json::from_str(&r.3)?, exit_code: r.4 })
    }

    /// Queues a trial again as its next attempt (after an infrastructure failure); returns the new id.
    pub async fn requeue_trial(&self, trial: &Trial) -> Result<i64, StoreError> {
        let now = now_ms();
        Ok(on_pool!(self, pool => {
            sqlx::query_scalar(
                "INSERT INTO trials (experiment_id, arm_id, seq, cell, repeat_index, attempt, state, created_at, role) \
                 VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7, $8) RETURNING id",
            )
            .bind(trial.experiment_id).bind(trial.arm_id).bind(trial.seq).bind(&trial.cell).bind(trial.repeat_index)
            .bind(trial.attempt + 1).bind(now).bind(trial.role.as_str())
            .fetch_all(pool).await.and_then(crate::one_row)
        })?)
    }

    /// Trials in state `running` claimed by `worker` (after a restart: to re-attach or settle).
    pub async fn running_trials(&self, worker: &str) -> Result<Vec<Trial>, StoreError> {
        let sql = format!("SELECT {TRIAL_COLUMNS} FROM trials WHERE state = 'running' AND claimed_by = $1 ORDER BY id");
        let rows: Vec<TrialRow> = on_pool!(self, pool => sqlx::query_as(&sql).bind(worker).fetch_all(pool).await)?;
        rows.into_iter().map(Trial::try_from).collect()
    }

    /// Cancels an experiment's queued trials; returns how many.
    pub async fn cancel_queued_trials(&self, experiment_id: i64) -> Result<u64, StoreError> {
        let now = now_ms();
        Ok(on_pool!(self, pool => {
            sqlx::query("UPDATE trials SET state = 'cancelled', finished_at = $1 WHERE experiment_id = $2 AND state = 'queued'")
                .bind(now).bind(experiment_id).execute(pool).await.map(|r| r.rows_affected())
        })?)
    }

    /// How many trials are in each state (states with none are left out): the metrics' queue depth.
    pub async fn trial_state_counts(&self) -> Result<Vec<(String, i64)>, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_as("SELECT state, COUNT(*) FROM trials GROUP BY state ORDER BY state").fetch_all(pool).await
        })?)
    }

    /// Records the state a cluster engine reports for a trial's job (e.g. `PENDING`, `RUNNING`).
    pub async fn set_engine_state(&self, trial_id: i64, engine_state: &str) -> Result<(), StoreError> {
        let now = now_ms();
        on_pool!(self, pool => {
            sqlx::query("UPDATE trials SET engine_state = $1, heartbeat_at = $2 WHERE id = $3")
                .bind(engine_state).bind(now).bind(trial_id).execute(pool).await.map(|r| r.rows_affected())
        })?;
        Ok(())
    }

    /// Gives a claimed trial back to the queue untouched (its engine could not take it yet): the attempt
    /// is not spent.
    pub async fn release_trial(&self, trial_id: i64) -> Result<(), StoreError> {
        on_pool!(self, pool => {
            sqlx::query("UPDATE trials SET state = 'queued', claimed_by = NULL, started_at = NULL, pair_rank = NULL, pair_position = NULL WHERE id = $1 AND state = 'running'")
                .bind(trial_id).execute(pool).await.map(|r| r.rows_affected())
        })?;
        Ok(())
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
            let row: Option<TrialRow> = on_pool!(self, pool => sqlx::query_as(&sql).bind(worker).bind(now).fetch_all(pool).await.map(|rows| rows.into_iter().next()))?;
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

/// The latest attempt of each planned position.
pub fn latest(trials: &[Trial]) -> std::collections::BTreeMap<i64, &Trial> {
    let mut by_seq: std::collections::BTreeMap<i64, &Trial> = std::collections::BTreeMap::new();
    for t in trials {
        if by_seq.get(&t.seq).is_none_or(|o| t.attempt > o.attempt) {
            by_seq.insert(t.seq, t);
        }
    }
    by_seq
}

/// The trials that are judged: every attempt of a measured trial (warm-ups left out; `judge::TrialRole`).
pub fn measured(trials: &[Trial]) -> Vec<Trial> {
    trials.iter().filter(|t| t.role == judge::TrialRole::Measured).cloned().collect()
}

/// The settled repeats from the first one on: how many, and the trials (latest attempts) they hold.
/// Warm-ups belong to no repeat and are in neither.
pub fn settled_prefix(trials: &[Trial]) -> (i64, Vec<Trial>) {
    let latest = latest(trials);
    let mut settled = 0;
    loop {
        let of_repeat: Vec<&&Trial> = latest.values().filter(|t| t.repeat_index == settled).collect();
        if of_repeat.is_empty() || of_repeat.iter().any(|t| !t.state.is_terminal()) {
            break;
        }
        settled += 1;
    }
    let prefix =
        trials.iter().filter(|t| t.role == judge::TrialRole::Measured && (0..settled).contains(&t.repeat_index)).cloned().collect();
    (settled, prefix)
}
