//! The scheduler inside `arbiter serve`: claims queued trials from the store one at a time (the
//! claim is atomic, so replicas sharing a Postgres never run a trial twice), runs each through the
//! local launcher, writes its outcome, re-queues an infrastructure failure once, and judges an
//! experiment when its last trial ends. On start it settles the trials a previous process left running.

use super::runner::{self, Launch, Outcome};
use super::submit::StoredPlan;
use crate::state::AppState;
use judge::pipeline::aggregate::TrialSpec;
use judge::pipeline::{ArmSpec, PipelineConfig};
use judge::{ExperimentStatus, TrialState, Verdict};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;
use store::trials::Trial;
use tokio::sync::Notify;

/// The scheduler's handle, shared with the API (to wake it and to cancel).
#[derive(Debug)]
pub struct Launcher {
    pub notify: Notify,
    /// The finelog server trials report to, or why there is none (said when a pipeline launch is refused).
    pub finelog: Result<String, String>,
    /// `{python}` in suite commands.
    pub python: Option<std::path::PathBuf>,
    /// This host's name in `trials.claimed_by`.
    pub worker: String,
    /// The program that supervises a trial: this binary (`arbiter supervise`).
    pub supervisor: std::path::PathBuf,
    /// Running trials: trial id → (experiment id, how to stop it); and the experiments cancelled while
    /// this server runs. One lock for both: a trial tracked after its experiment's cancel is stopped at once.
    running: Mutex<Running>,
}

#[derive(Debug, Default)]
struct Running {
    trials: HashMap<i64, (i64, Stop)>,
    cancelled: std::collections::HashSet<i64>,
}

fn signal(stop: &Stop) {
    match stop {
        Stop::Supervisor(pid) => super::supervise::signal_pid(*pid, libc::SIGTERM),
        Stop::Phase(flag, pid) => {
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
            let pid = pid.load(std::sync::atomic::Ordering::Relaxed);
            if pid > 0 {
                super::supervise::signal_group(pid, libc::SIGTERM);
            }
        }
        Stop::Engine(argv, spec) => {
            tokio::spawn(super::cluster::cancel((**spec).clone(), argv.clone()));
        }
    }
}

impl Launcher {
    pub fn new(finelog: Result<String, String>, python: Option<std::path::PathBuf>) -> Launcher {
        let host = std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_string()).ok().filter(|h| !h.is_empty());
        let supervisor = std::env::current_exe().unwrap_or_else(|_| "arbiter".into());
        Launcher {
            notify: Notify::new(),
            finelog,
            python,
            worker: host.unwrap_or_else(|| "local".into()),
            supervisor,
            running: Mutex::new(Running::default()),
        }
    }

    /// Stops the running trials of an experiment: a local trial's supervisor stops its whole process
    /// group; a cluster trial's job gets the engine's cancel command.
    pub fn cancel_running(&self, experiment_id: i64) -> usize {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.cancelled.insert(experiment_id);
        let stops: Vec<&Stop> = running.trials.values().filter(|(e, _)| *e == experiment_id).map(|(_, s)| s).collect();
        for stop in &stops {
            signal(stop);
        }
        stops.len()
    }

    /// Registers a running trial; if its experiment was cancelled meanwhile (claimed just before the
    /// cancel, started just after), it is stopped right away.
    pub(crate) fn track(&self, trial: &Trial, stop: Stop) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if running.cancelled.contains(&trial.experiment_id) {
            signal(&stop);
        }
        running.trials.insert(trial.id, (trial.experiment_id, stop));
    }

    pub(crate) fn untrack(&self, trial: &Trial) {
        self.running.lock().unwrap_or_else(|e| e.into_inner()).trials.remove(&trial.id);
    }

    /// A warp phase's server started: a cancel stops it too.
    pub(crate) fn set_phase_pid(&self, trial: &Trial, pid: u32) {
        if let Some((_, Stop::Phase(_, p))) = self.running.lock().unwrap_or_else(|e| e.into_inner()).trials.get(&trial.id) {
            p.store(pid, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// How a running trial is stopped.
#[derive(Debug)]
pub(crate) enum Stop {
    /// A warp phase: its flag (checked between load runs) and its server's process group, once started.
    Phase(std::sync::Arc<std::sync::atomic::AtomicBool>, std::sync::Arc<std::sync::atomic::AtomicU32>),
    /// SIGTERM to the local trial's supervisor.
    Supervisor(u32),
    /// The engine's cancel command, rendered for the job.
    Engine(Vec<String>, Box<crate::suites::cluster::ResolvedCluster>),
}

pub fn spawn(state: AppState) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        recover(&state).await;
        // While a cluster engine does not answer, its trials wait in the queue; the wait doubles to a minute.
        let mut engine_wait = Duration::from_secs(1);
        loop {
            match state.store.claim_next_trial(&state.launcher.worker).await {
                Ok(Some(trial)) => {
                    if run_one(&state, trial).await == Ran::EngineDown {
                        tokio::time::sleep(engine_wait).await;
                        engine_wait = (engine_wait * 2).min(Duration::from_secs(60));
                    } else {
                        engine_wait = Duration::from_secs(1);
                    }
                }
                Ok(None) => {
                    tokio::select! {
                        _ = state.launcher.notify.notified() => {}
                        _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot claim a trial");
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            }
        }
    })
}

pub(crate) fn launch_of<'a>(state: &'a AppState) -> Launch<'a> {
    Launch {
        data_dir: &state.data_dir,
        finelog_url: state.launcher.finelog.as_deref().ok(),
        python: state.launcher.python.as_deref(),
        supervisor: &state.launcher.supervisor,
    }
}

async fn plan_of(state: &AppState, experiment_id: i64) -> Result<StoredPlan, String> {
    let (plan, _) = state.store.experiment_plan(experiment_id).await.map_err(|e| e.to_string())?;
    serde_json::from_value(plan).map_err(|e| format!("the stored plan cannot be read: {e}"))
}

#[derive(Debug, PartialEq)]
enum Ran {
    Done,
    /// The trial's cluster engine did not answer; the trial went back to the queue.
    EngineDown,
}

/// The trial's arm in its experiment's plan.
async fn arm_of<'p>(state: &AppState, trial: &Trial, plan: &'p StoredPlan) -> Option<&'p super::request::PlannedArm> {
    let arms = state.store.arms(trial.experiment_id).await.ok()?;
    let name = arms.into_iter().find(|a| a.0 == trial.arm_id)?.1;
    plan.launch.arms.iter().find(|a| a.name == name)
}

async fn run_one(state: &AppState, trial: Trial) -> Ran {
    let plan = match plan_of(state, trial.experiment_id).await {
        Ok(p) => p,
        Err(e) => {
            apply(state, &trial, Outcome::launcher_error(e)).await;
            finish_if_done(state, trial.experiment_id).await;
            return Ran::Done;
        }
    };
    let Some(arm) = arm_of(state, &trial, &plan).await else {
        apply(state, &trial, Outcome::launcher_error("the trial's arm is not in the plan".into())).await;
        finish_if_done(state, trial.experiment_id).await;
        return Ran::Done;
    };
    // A trial claimed just before its experiment was cancelled does not run (and does not undo the cancel).
    if let Ok(false) = state.store.start_experiment(trial.experiment_id).await {
        apply(state, &trial, Outcome::cancelled("the experiment was cancelled before this trial started")).await;
        finish_if_done(state, trial.experiment_id).await;
        return Ran::Done;
    }
    if plan.suite.kind == judge::ExperimentKind::Warp {
        super::warp::schedule::run_phase(state, &trial, &plan, arm).await;
        finish_if_done(state, trial.experiment_id).await;
        return Ran::Done;
    }
    let l = launch_of(state);
    if plan.suite.launcher == crate::suites::definition::Launcher::Cluster {
        return run_on_engine(state, &l, trial, &plan, arm).await;
    }
    match runner::start(&l, &trial, &plan, arm).await {
        Ok(mut child) => {
            let pid = child.id().unwrap_or(0);
            let (log, _) = runner::trial_files(&state.data_dir, &trial);
            let run_tag = runner::run_tag(&trial);
            if let Err(e) =
                state.store.set_trial_job(trial.id, &run_tag, &pid.to_string(), &state.launcher.worker, &log.to_string_lossy()).await
            {
                tracing::warn!(error = %e, "cannot record the trial's job");
            }
            state.launcher.track(&trial, Stop::Supervisor(pid));
            let _ = child.wait().await;
            state.launcher.untrack(&trial);
            let ram = plan.suite.resources.ram_bytes().ok().map(|b| b as f64);
            let outcome = runner::settle(&l, &trial, ram).await;
            apply(state, &trial, outcome).await;
        }
        Err(outcome) => apply(state, &trial, outcome).await,
    }
    finish_if_done(state, trial.experiment_id).await;
    Ran::Done
}

/// A cluster trial: submitted (or given back to the queue while the engine does not answer), its job
/// recorded, followed to its end.
async fn run_on_engine(state: &AppState, l: &Launch<'_>, trial: Trial, plan: &StoredPlan, arm: &super::request::PlannedArm) -> Ran {
    let job_id = match super::cluster::submit(l, &trial, plan, arm).await {
        super::cluster::Submitted::Job(id) => id,
        super::cluster::Submitted::EngineDown(why) => {
            tracing::warn!(trial = trial.id, error = %why, "the cluster engine does not answer; the trial waits in the queue");
            let _ = state.store.release_trial(trial.id).await;
            return Ran::EngineDown;
        }
        super::cluster::Submitted::Failed(outcome) => {
            apply(state, &trial, outcome).await;
            finish_if_done(state, trial.experiment_id).await;
            return Ran::Done;
        }
    };
    let (log, _) = runner::trial_files(&state.data_dir, &trial);
    let run_tag = runner::run_tag(&trial);
    if let Err(e) = state.store.set_trial_job(trial.id, &run_tag, &job_id, &state.launcher.worker, &log.to_string_lossy()).await {
        tracing::warn!(error = %e, "cannot record the trial's job");
    }
    tracing::info!(trial = trial.id, job_id, "submitted to the cluster engine");
    follow_job(state, l, &trial, plan, arm, &job_id).await;
    Ran::Done
}

/// Follows a cluster job to its end (cancellable meanwhile), then records the outcome.
async fn follow_job(state: &AppState, l: &Launch<'_>, trial: &Trial, plan: &StoredPlan, arm: &super::request::PlannedArm, job_id: &str) {
    if let Ok((argv, spec)) = super::cluster::cancel_argv(l, trial, plan, arm, job_id) {
        state.launcher.track(trial, Stop::Engine(argv, Box::new(spec)));
    }
    let outcome = super::cluster::follow(l, &state.store, trial, plan, arm, job_id).await;
    state.launcher.untrack(trial);
    apply(state, trial, outcome).await;
    finish_if_done(state, trial.experiment_id).await;
}

/// Writes a trial's outcome (rows first, then the state), and re-queues a first infrastructure failure.
pub(crate) async fn apply(state: &AppState, trial: &Trial, outcome: Outcome) {
    let store = &state.store;
    let mut result = store.set_trial_result(trial.id, outcome.exit_code, &outcome.execution_ids).await;
    if result.is_ok() && !outcome.rows.is_empty() {
        result = store.insert_stage_rows(trial.id, &outcome.rows).await;
    }
    if result.is_ok() && !outcome.rounds.is_empty() {
        result = store.insert_warp_rounds(trial.id, &outcome.rounds).await;
    }
    if result.is_ok() {
        result = store.finish_trial(trial.id, outcome.state, outcome.infra_reason, Some(&outcome.detail)).await;
    }
    if let Err(e) = result {
        tracing::error!(error = %e, trial = trial.id, "cannot record the trial's outcome");
        return;
    }
    tracing::info!(experiment = trial.experiment_id, seq = trial.seq, attempt = trial.attempt, state = %outcome.state.as_str(), detail = %outcome.detail, "trial ended");
    let cancelled = store.experiment_summary(trial.experiment_id).await.is_ok_and(|s| s.status == ExperimentStatus::Cancelled);
    if outcome.state == TrialState::InfraFailed && trial.attempt == 1 && !cancelled {
        match store.requeue_trial(trial).await {
            Ok(_) => state.launcher.notify.notify_one(),
            Err(e) => tracing::error!(error = %e, "cannot re-queue the trial"),
        }
    }
}

/// Judges the experiment once none of its trials is queued or running, then sends what its suite's
/// `[notify]` asks for.
async fn finish_if_done(state: &AppState, experiment_id: i64) {
    let Ok(trials) = state.store.trials(experiment_id).await else { return };
    if trials.iter().any(|t| !t.state.is_terminal()) {
        return;
    }
    let Ok(plan) = plan_of(state, experiment_id).await else {
        let _ = state.store.set_experiment_status(experiment_id, ExperimentStatus::Errored).await;
        return;
    };
    judge_ended(state, experiment_id, &trials, &plan).await;
    let suite_id = state.store.experiment_suite_id(experiment_id).await.ok().flatten();
    crate::notify::experiment_ended(state, experiment_id, plan.suite.notify.as_ref(), suite_id).await;
}

async fn judge_ended(state: &AppState, experiment_id: i64, trials: &[Trial], plan: &StoredPlan) {
    let store = &state.store;
    runner::remove_worktrees(Path::new(&plan.launch.repo_dir), &state.data_dir, experiment_id, &plan.launch.arms).await;
    if store.experiment_summary(experiment_id).await.is_ok_and(|s| s.status == ExperimentStatus::Cancelled) {
        return;
    }
    if plan.launch.calibration {
        return calibrate(state, experiment_id, plan, trials).await;
    }
    if plan.launch.baseline {
        return measure_baseline(state, experiment_id, plan, trials).await;
    }
    if plan.suite.kind == judge::ExperimentKind::Warp {
        return super::warp::schedule::finish(state, experiment_id, plan, trials).await;
    }
    match verdict(state, plan, trials).await {
        Ok((verdict, reasons, report, profile_id)) => {
            if let Err(e) = store.record_verdict(experiment_id, verdict, &reasons, &report, profile_id).await {
                tracing::error!(error = %e, experiment_id, "cannot record the verdict");
            } else {
                tracing::info!(experiment_id, verdict = verdict.as_str(), "experiment judged");
            }
        }
        Err(e) => {
            tracing::error!(error = %e, experiment_id, "cannot judge the experiment");
            let _ = store.set_experiment_status(experiment_id, ExperimentStatus::Errored).await;
        }
    }
}

/// The verdict of an ended experiment: the judge on the trials that measured something, a new
/// failure (a treatment trial failed where no control trial did) as a regression, and every lost
/// trial named with its reason.
async fn verdict(
    state: &AppState,
    plan: &StoredPlan,
    trials: &[Trial],
) -> Result<(Verdict, Vec<String>, serde_json::Value, Option<i64>), String> {
    let store = &state.store;
    let suite_id = store.suite_by_name(&plan.suite.name).await.map_err(|e| e.to_string())?.id;
    let profile = store.noise_profile(suite_id, &plan.fingerprint_hash()).await.map_err(|e| e.to_string())?;
    let arms = store.arms(trials.first().map_or(0, |t| t.experiment_id)).await.map_err(|e| e.to_string())?;
    let arm_name = |id: i64| arms.iter().find(|a| a.0 == id).map(|a| a.1.clone()).unwrap_or_default();
    // The last attempt of each planned position counts.
    let mut latest: BTreeMap<i64, &Trial> = BTreeMap::new();
    for t in trials {
        if latest.get(&t.seq).is_none_or(|prev| prev.attempt < t.attempt) {
            latest.insert(t.seq, t);
        }
    }
    let control = plan.launch.arms[0].name.clone();
    let mut rows = Vec::new();
    let mut specs: BTreeMap<String, Vec<TrialSpec>> = BTreeMap::new();
    let mut lost = Vec::new();
    let mut failed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut reasons_before = Vec::new();
    for t in latest.values() {
        let arm = arm_name(t.arm_id);
        let run = store.trial_run(t.id).await.map_err(|e| e.to_string())?;
        let detail = t.detail.clone().unwrap_or_default();
        let measured = if run.execution_ids.is_empty() { Vec::new() } else { store.stage_rows(t.id).await.map_err(|e| e.to_string())? };
        match t.state {
            TrialState::Succeeded | TrialState::Failed if !measured.is_empty() => {
                rows.extend(measured);
                specs.entry(arm.clone()).or_default().push(TrialSpec { execution_ids: run.execution_ids.clone() });
                if t.state == TrialState::Failed {
                    failed.entry(arm.clone()).or_default().push(format!("trial #{} ({detail})", t.seq + 1));
                }
            }
            TrialState::Failed => failed.entry(arm.clone()).or_default().push(format!("trial #{} ({detail})", t.seq + 1)),
            _ => lost.push(format!(
                "trial #{} of {arm} was lost: {} ({detail})",
                t.seq + 1,
                t.infra_reason.map_or(t.state.as_str(), |r| r.as_str())
            )),
        }
    }
    let treatments: Vec<ArmSpec> = plan.launch.arms[1..]
        .iter()
        .map(|a| ArmSpec { name: a.name.clone(), trials: specs.get(&a.name).cloned().unwrap_or_default() })
        .collect();
    if let Some(b) = &plan.launch.reused_baseline {
        let (baseline_rows, baseline_specs) =
            succeeded_measurements(state, &store.trials(b.experiment_id).await.map_err(|e| e.to_string())?).await;
        rows.extend(baseline_rows);
        specs.insert(control.clone(), baseline_specs);
        reasons_before.push(format!(
            "control: baseline #{} ({} at {}, ended {}) reused, not run again",
            b.experiment_id,
            b.git_ref,
            &b.sha[..b.sha.len().min(10)],
            judge::units::utc_rfc3339(b.finished_at / 1000)
        ));
    }
    let noise = profile.as_ref().and_then(|p| serde_json::from_value(p.profile.clone()).ok());
    let config = PipelineConfig { worker_ram: plan.suite.resources.ram_bytes().ok().map(|b| b as f64), noise, ..PipelineConfig::default() };
    let control_specs = specs.get(&control).cloned().unwrap_or_default();
    let (mut verdict, mut reasons, report) = match judge::pipeline::judge(&rows, &control_specs, &treatments, &config) {
        Ok(r) => (r.verdict, r.reasons.clone(), serde_json::to_value(&r).map_err(|e| e.to_string())?),
        Err(e) => (Verdict::Inconclusive, vec![format!("cannot compare: {e}")], serde_json::json!({})),
    };
    let control_failed = failed.contains_key(&control);
    for (arm, list) in &failed {
        if *arm != control && !control_failed {
            verdict = Verdict::Regression;
            reasons.insert(0, format!("new failure: {arm} failed where the control did not: {}", list.join(", ")));
        } else if *arm == control {
            reasons.push(format!("the control failed too: {}", list.join(", ")));
        }
    }
    reasons.extend(lost);
    reasons.extend(reasons_before);
    reasons.push(match &profile {
        Some(p) => format!("judged with noise profile #{} ({} same-code trials)", p.id, p.trials),
        None => "uncalibrated: default thresholds (launch a calibration of this suite and fingerprint to set them)".to_string(),
    });
    Ok((verdict, reasons, report, profile.map(|p| p.id)))
}

/// A calibration's end: the spread of its same-code trials becomes the noise profile of its suite and
/// fingerprint (replacing an older one). It has no verdict.
async fn calibrate(state: &AppState, experiment_id: i64, plan: &StoredPlan, trials: &[Trial]) {
    let store = &state.store;
    let (rows, specs) = succeeded_measurements(state, trials).await;
    let fingerprint = serde_json::to_value(&plan.launch.fingerprint).unwrap_or_default();
    let result = async {
        if specs.len() < 2 {
            return Err(format!("only {} calibration trials succeeded; at least 2 are needed", specs.len()));
        }
        let profile = judge::pipeline::calibrate(&rows, &specs, Some(fingerprint.clone())).map_err(|e| e.to_string())?;
        let suite_id = store.suite_by_name(&plan.suite.name).await.map_err(|e| e.to_string())?.id;
        let json = serde_json::to_value(&profile).map_err(|e| e.to_string())?;
        store
            .upsert_noise_profile(suite_id, &plan.fingerprint_hash(), &fingerprint, &json, specs.len() as i64)
            .await
            .map_err(|e| e.to_string())
    }
    .await;
    let status = match result {
        Ok(id) => {
            tracing::info!(experiment_id, profile = id, trials = specs.len(), "noise profile calibrated");
            ExperimentStatus::Judged
        }
        Err(e) => {
            tracing::error!(experiment_id, error = %e, "calibration failed");
            ExperimentStatus::Errored
        }
    };
    let _ = store.set_experiment_status(experiment_id, status).await;
}

/// The stage rows and executions of the succeeded trials.
async fn succeeded_measurements(state: &AppState, trials: &[Trial]) -> (Vec<judge::pipeline::rows::StageRow>, Vec<TrialSpec>) {
    let mut rows = Vec::new();
    let mut specs = Vec::new();
    for t in trials.iter().filter(|t| t.state == TrialState::Succeeded) {
        let (Ok(run), Ok(r)) = (state.store.trial_run(t.id).await, state.store.stage_rows(t.id).await) else { continue };
        rows.extend(r);
        specs.push(TrialSpec { execution_ids: run.execution_ids });
    }
    (rows, specs)
}

/// A baseline run's end: measured, not compared. Its levels (the judge's report of the arm against
/// itself, whose control side is the arm) feed the trend charts; it has no verdict.
async fn measure_baseline(state: &AppState, experiment_id: i64, plan: &StoredPlan, trials: &[Trial]) {
    let (rows, specs) = succeeded_measurements(state, trials).await;
    let config = PipelineConfig { worker_ram: plan.suite.resources.ram_bytes().ok().map(|b| b as f64), ..PipelineConfig::default() };
    let itself = [ArmSpec { name: store::schedules::BASELINE_ARM.into(), trials: specs.clone() }];
    let result = judge::pipeline::judge(&rows, &specs, &itself, &config)
        .map_err(|e| e.to_string())
        .and_then(|r| serde_json::to_value(&r).map_err(|e| e.to_string()));
    let recorded = match result {
        Ok(report) => state.store.record_baseline(experiment_id, &report).await.map_err(|e| e.to_string()),
        Err(e) => Err(format!("no measurements: {e}")),
    };
    match recorded {
        Ok(()) => tracing::info!(experiment_id, trials = specs.len(), "baseline measured"),
        Err(e) => {
            tracing::error!(experiment_id, error = %e, "the baseline run has no usable measurements");
            let _ = state.store.set_experiment_status(experiment_id, ExperimentStatus::Errored).await;
        }
    }
}

/// After a restart: every trial this host left `running` is settled from its supervisor's status
/// file, waited for while its supervisor still runs, or marked interrupted (and re-queued once).
async fn recover(state: &AppState) {
    let Ok(trials) = state.store.running_trials(&state.launcher.worker).await else { return };
    for trial in trials {
        let run = state.store.trial_run(trial.id).await.ok();
        let plan = plan_of(state, trial.experiment_id).await.ok();
        if let Some(plan) = plan.as_ref().filter(|p| p.suite.launcher == crate::suites::definition::Launcher::Cluster) {
            let l = launch_of(state);
            match (run.and_then(|r| r.job_id), arm_of(state, &trial, plan).await) {
                (Some(job_id), Some(arm)) => {
                    tracing::info!(trial = trial.id, job_id, "following the cluster job again");
                    follow_job(state, &l, &trial, plan, arm, &job_id).await;
                }
                _ => {
                    let _ = state.store.release_trial(trial.id).await;
                }
            }
            continue;
        }
        let pid = run.and_then(|r| r.job_id).and_then(|j| j.parse::<u32>().ok());
        if plan.as_ref().is_some_and(|p| p.suite.kind == judge::ExperimentKind::Warp) {
            // A warp phase ran inside the previous process: its server is stopped and the phase re-run.
            if let Some(pid) = pid.filter(|p| super::supervise::is_alive(*p)) {
                super::supervise::signal_group(pid, libc::SIGKILL);
            }
            let outcome = Outcome::infra(judge::InfraReason::Interrupted, "the server restarted during the phase");
            apply(state, &trial, outcome).await;
            finish_if_done(state, trial.experiment_id).await;
            continue;
        }
        if pid.is_some_and(super::supervise::is_alive) {
            tracing::info!(trial = trial.id, "re-attached to a trial still running");
        }
        while pid.is_some_and(super::supervise::is_alive) {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let ram = plan.as_ref().and_then(|p| p.suite.resources.ram_bytes().ok()).map(|b| b as f64);
        let outcome = runner::settle(&launch_of(state), &trial, ram).await;
        apply(state, &trial, outcome).await;
        finish_if_done(state, trial.experiment_id).await;
    }
}
