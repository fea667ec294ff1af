//! A running trial's bookkeeping, apart from choosing and starting trials: how it is stopped (`Stop`),
//! what it is launched with (`launch_of`), and its outcome written back (`apply`: rows checked to be its
//! own, then stored; a first infrastructure failure re-queued). The queue and the warp phase runner both
//! use it; it calls neither.

use crate::queue::runner::{Launch, Outcome};
use crate::queue::sandbox;
use crate::Engine;
use judge::{ExperimentStatus, InfraReason, TrialState};
use std::time::Duration;
use store::trials::Trial;

/// How a running trial is stopped.
#[derive(Debug)]
pub(crate) enum Stop {
    /// A warp phase: its flag (checked between load runs) and its server's process group, once started.
    Phase(std::sync::Arc<std::sync::atomic::AtomicBool>, std::sync::Arc<std::sync::atomic::AtomicU32>),
    /// SIGTERM to the local trial's supervisor.
    Supervisor(u32),
    /// The engine's cancel command, rendered for the job.
    Engine(Vec<String>, Box<suite::cluster::ResolvedCluster>),
}

pub(crate) fn signal(stop: &Stop) {
    match stop {
        Stop::Supervisor(pid) => crate::queue::process::signal_pid(*pid, libc::SIGTERM),
        Stop::Phase(flag, pid) => {
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
            let pid = pid.load(std::sync::atomic::Ordering::Relaxed);
            if pid > 0 {
                crate::queue::process::signal_group(pid, libc::SIGTERM);
            }
        }
        Stop::Engine(argv, spec) => {
            tokio::spawn(crate::queue::cluster::cancel((**spec).clone(), argv.clone()));
        }
    }
}

pub(crate) fn launch_of<'a>(engine: &'a Engine) -> Launch<'a> {
    Launch {
        data_dir: &engine.data_dir,
        finelog_url: engine.queue.finelog.as_deref().ok(),
        finelog_query: engine.queue.finelog_query.as_deref(),
        python: engine.queue.python.as_deref(),
        supervisor: &engine.queue.supervisor,
        sandbox: &engine.queue.sandbox,
        trial_user: engine.queue.trial_user.as_ref(),
    }
}

/// How far a row's timestamp may lie outside its trial's run (clocks of hosts differ a little).
const ROW_CLOCK_SLACK_MS: i64 = 120_000;

/// Rows in finelog are not trusted to their writer (any code can write to it): an execution id belongs
/// to at most one trial, and its rows must have been written while the trial ran. Otherwise the trial is
/// `infra_failed` (foreign_rows) with the reason, and none of the rows count.
async fn own_rows_only(store: &store::Store, trial: &Trial, outcome: Outcome) -> Outcome {
    if outcome.rows.is_empty() {
        return outcome;
    }
    let foreign = |detail: String| Outcome {
        exit_code: outcome.exit_code,
        execution_ids: outcome.execution_ids.clone(),
        host: outcome.host.clone(),
        ..Outcome::infra(InfraReason::ForeignRows, detail)
    };
    match store.execution_id_owner(&outcome.execution_ids, trial.id).await {
        Ok(Some((id, other))) => return foreign(format!("execution {id} already belongs to trial {other}: its rows are not this trial's")),
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, trial = trial.id, "cannot check who owns the trial's executions"),
    }
    if let Some((r, at)) = written_outside(&outcome.rows, trial.started_at.unwrap_or(0), store::now_ms()) {
        return foreign(format!(
            "stage {} of execution {} was written at {}, outside this trial's run (started {})",
            r.stage_name,
            r.execution_id,
            judge::units::utc_rfc3339_ms(at),
            judge::units::utc_rfc3339_ms(trial.started_at.unwrap_or(0))
        ));
    }
    outcome
}

/// The first row whose timestamp lies outside a run from `started_ms` to `now_ms` (with the clock slack),
/// and that timestamp. Rows without a readable timestamp are not judged by it.
fn written_outside(
    rows: &[judge::pipeline::rows::StageRow],
    started_ms: i64,
    now_ms: i64,
) -> Option<(&judge::pipeline::rows::StageRow, i64)> {
    let (from, to) = (started_ms - ROW_CLOCK_SLACK_MS, now_ms + ROW_CLOCK_SLACK_MS);
    rows.iter().find_map(|r| {
        let at = r.ts.as_deref().and_then(judge::units::parse_utc_ms)?;
        (at < from || at > to).then_some((r, at))
    })
}

/// Writes a trial's outcome (rows first, then the engine), and re-queues a first infrastructure failure.
pub(crate) async fn apply(engine: &Engine, trial: &Trial, outcome: Outcome) {
    sandbox::remove_scratch(&engine.data_dir, &format!("trial-{}-{}", trial.id, trial.attempt));
    let store = &engine.store;
    let outcome = own_rows_only(store, trial, outcome).await;
    // The store may be away (PostgreSQL restarting, a full disk): the outcome is kept and written once it
    // answers, so the trial does not stay `running` and its lane free again (the writes are idempotent).
    let mut wait = Duration::from_secs(1);
    loop {
        let mut result = store.set_trial_result(trial.id, outcome.exit_code, &outcome.execution_ids).await;
        // A local trial's supervisor recorded what the host was doing meanwhile.
        if let (Ok(()), Some(host)) = (&result, &outcome.host) {
            result = store.set_host_facts(trial.id, host).await;
        }
        if result.is_ok() && !outcome.rows.is_empty() {
            result = store.replace_stage_rows(trial.id, &outcome.rows).await;
        }
        if result.is_ok() && !outcome.rounds.is_empty() {
            // Once: an earlier attempt of this loop may have stored them before a later write failed.
            result = match store.warp_rounds(trial.id).await {
                Ok(stored) if stored.is_empty() => store.insert_warp_rounds(trial.id, &outcome.rounds).await,
                Ok(_) => Ok(()),
                Err(e) => Err(e),
            };
        }
        if result.is_ok() {
            result = store.finish_trial(trial.id, outcome.state, outcome.infra_reason, Some(&outcome.detail)).await;
        }
        match result {
            Ok(()) => break,
            // The trial or its experiment is gone (deleted meanwhile), or the write can never pass: said,
            // not retried for ever with the lane held.
            Err(e) if !e.is_transient() => {
                tracing::error!(error = %e, trial = trial.id, "cannot record the trial's outcome; giving up (not a passing fault)");
                return;
            }
            Err(e) => {
                tracing::error!(error = %e, trial = trial.id, retry_in_secs = wait.as_secs(), "cannot record the trial's outcome; trying again");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(30));
            }
        }
    }
    tracing::info!(experiment = trial.experiment_id, seq = trial.seq, attempt = trial.attempt, state = %outcome.state.as_str(), detail = %outcome.detail, "trial ended");
    let cancelled = store.experiment_summary(trial.experiment_id).await.is_ok_and(|s| s.status == ExperimentStatus::Cancelled);
    // A warm-up is not run again: after the pairs have started it would warm nothing.
    if outcome.state == TrialState::InfraFailed && trial.attempt == 1 && !cancelled && trial.role == judge::TrialRole::Measured {
        match store.requeue_trial(trial).await {
            Ok(_) => engine.queue.notify.notify_one(),
            Err(e) => tracing::error!(error = %e, "cannot re-queue the trial"),
        }
    }
}

#[cfg(test)]
mod tests {
    use judge::pipeline::rows::StageRow;

    #[test]
    fn rows_written_outside_the_trials_run_are_found() {
        let row = |ts: Option<&str>| {
            let mut r = StageRow::new("20261202-101500-0badc0de", "stage0-Map", "END", 1.0, 1.0, 1.0, 1.0, 1.0);
            r.ts = ts.map(str::to_string);
            r
        };
        let start = judge::units::parse_utc_ms("2026-12-02T10:15:00Z").unwrap();
        let now = start + 60_000;
        let inside = [row(Some("2026-12-02T10:15:30.000Z")), row(None), row(Some("2026-12-02 10:14:00"))];
        assert!(super::written_outside(&inside, start, now).is_none(), "within the run, or within the clock slack, or unknown");
        let early = [row(Some("2026-12-02T10:15:30.000Z")), row(Some("2026-12-02T09:00:00.000Z"))];
        let (_, at) = super::written_outside(&early, start, now).unwrap();
        assert_eq!(judge::units::utc_rfc3339_ms(at), "2026-12-02T09:00:00.000Z");
        assert!(super::written_outside(&[row(Some("2026-12-02T11:00:00Z"))], start, now).is_some(), "after the run");
    }
}
