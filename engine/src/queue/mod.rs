//! The trial queue inside `arbiter serve`: claims queued trials from the store one at a time (the
//! claim is atomic, so replicas sharing a Postgres never run a trial twice), runs each through the
//! local launcher, writes its outcome, re-queues an infrastructure failure once, and hands an experiment
//! to `lifecycle::trial_ended` (each trial ends through it once). On start it settles the trials a previous process left running.

pub mod cgroup;
pub mod cluster;
pub mod execution;
pub mod finelog;
pub mod finelog_gate;
pub mod host;
pub mod host_user;
pub mod mounts;
pub mod owned_finelog;
pub mod process;
pub mod runner;
pub mod sandbox;
pub mod supervise;

use crate::lifecycle::trial_ended;
use crate::launch::submit::plan_of;
use execution::{launch_of, signal, Stop};
use crate::launch::submit::StoredPlan;
use crate::Engine;
use runner::{Launch, Outcome};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use store::trials::Trial;
use tokio::sync::Notify;

/// The trial queue's runtime, shared with the API (to wake it and to cancel).
#[derive(Debug)]
pub struct TrialQueue {
    pub notify: Notify,
    /// The finelog server trials report to, or why there is none (said when a pipeline launch is refused).
    pub finelog: Result<String, String>,
    /// Arbiter's own way to read rows from the finelog it runs (its query gate's socket); `None` with an
    /// operator's `ARBITER_FINELOG_URL`, which is then read over HTTP.
    pub finelog_query: Option<std::path::PathBuf>,
    /// `{python}` in suite commands.
    pub python: Option<std::path::PathBuf>,
    /// This host's name in `trials.claimed_by`.
    pub worker: String,
    /// The program that supervises a trial: this binary (`arbiter supervise`).
    pub supervisor: std::path::PathBuf,
    /// How local pipeline trials run: in a bubblewrap sandbox, unsandboxed (an admin's choice), or not at
    /// all (no sandbox here).
    pub sandbox: sandbox::TrialSandbox,
    /// The host user sandboxed pipeline trials run as when serve is root (`arbiter-trial`); `None`: the
    /// sandbox's mapped user (serve as another user runs trials as itself).
    pub trial_user: Option<host_user::HostUser>,
    /// Running trials: trial id → (experiment id, how to stop it); and the experiments cancelled while
    /// this server runs. One lock for both: a trial tracked after its experiment's cancel is stopped at once.
    running: Mutex<Running>,
    /// The most trials in flight on one cluster engine, every suite and server together
    /// (`arbiter serve --engine-cap`).
    pub cluster_cap: i64,
    /// Lanes whose engine did not answer: lane → (parked until, the back-off that got it there).
    parked: Mutex<HashMap<String, (std::time::Instant, Duration)>>,
    /// Trials a task of this process is running or settling: the sweep for stranded trials leaves them be.
    live: Mutex<std::collections::HashSet<i64>>,
}

/// `--engine-cap` when not given.
pub const DEFAULT_CLUSTER_CAP: i64 = 8;

#[derive(Debug, Default)]
struct Running {
    trials: HashMap<i64, (i64, Stop)>,
    cancelled: std::collections::HashSet<i64>,
}

impl TrialQueue {
    pub fn new(finelog: Result<String, String>, python: Option<std::path::PathBuf>) -> TrialQueue {
        let host = std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_string()).ok().filter(|h| !h.is_empty());
        let supervisor = std::env::current_exe().unwrap_or_else(|_| "arbiter".into());
        TrialQueue {
            notify: Notify::new(),
            finelog,
            finelog_query: None,
            python,
            worker: host.unwrap_or_else(|| "local".into()),
            supervisor,
            sandbox: match sandbox::probe() {
                Ok(bwrap) => sandbox::TrialSandbox::Bwrap(bwrap),
                Err(why) => sandbox::TrialSandbox::Missing(why),
            },
            trial_user: None,
            running: Mutex::new(Running::default()),
            cluster_cap: DEFAULT_CLUSTER_CAP,
            parked: Mutex::new(HashMap::new()),
            live: Mutex::new(std::collections::HashSet::new()),
        }
    }

    fn set_live(&self, trial: i64, live: bool) {
        let mut set = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if live {
            set.insert(trial);
        } else {
            set.remove(&trial);
        }
    }

    fn is_live(&self, trial: i64) -> bool {
        self.live.lock().unwrap_or_else(|e| e.into_inner()).contains(&trial)
    }

    /// The client Arbiter reads rows with: its own finelog's query gate, else the configured URL; or why
    /// there is none.
    pub fn finelog_reader(&self) -> Result<finelog::Finelog, String> {
        match (&self.finelog_query, &self.finelog) {
            (Some(socket), Ok(_)) => Ok(finelog::Finelog::unix(socket)),
            (None, Ok(url)) => finelog::Finelog::new(url).map_err(|e| e.to_string()),
            (_, Err(why)) => Err(why.clone()),
        }
    }

    /// The lanes not to claim from now.
    fn parked_lanes(&self) -> Vec<String> {
        let now = std::time::Instant::now();
        let parked = self.parked.lock().unwrap_or_else(|e| e.into_inner());
        parked.iter().filter(|(_, (until, _))| *until > now).map(|(lane, _)| lane.clone()).collect()
    }

    /// A lane's engine did not answer: no claims from it for a while, twice as long each time, a minute at most.
    fn park(&self, lane: &str) {
        let mut parked = self.parked.lock().unwrap_or_else(|e| e.into_inner());
        let wait = parked.get(lane).map_or(Duration::from_secs(1), |(_, w)| (*w * 2).min(Duration::from_secs(60)));
        parked.insert(lane.to_string(), (std::time::Instant::now() + wait, wait));
    }

    fn unpark(&self, lane: &str) {
        self.parked.lock().unwrap_or_else(|e| e.into_inner()).remove(lane);
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

/// The dispatcher: claims what may start now (`store::claim` decides: one measured trial per host, up to
/// the caps on a cluster engine, pairs together, fairly across launchers) and runs each claimed trial in a
/// task of its own, so a cluster holds many trials in flight while local trials still run one at a time.
/// A freed slot wakes it at once; otherwise it looks again every two seconds.
pub fn spawn(engine: Engine) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        recover(&engine).await;
        let mut swept = std::time::Instant::now();
        loop {
            if swept.elapsed() >= SWEEP_EVERY {
                swept = std::time::Instant::now();
                resettle_stranded(&engine).await;
            }
            let parked = engine.queue.parked_lanes();
            let rules = store::claim::ClaimRules { worker: &engine.queue.worker, cluster_cap: engine.queue.cluster_cap, parked: &parked };
            match engine.store.claim_trials(&rules).await {
                Ok(claimed) if !claimed.is_empty() => {
                    // A pair claimed together is handed to its engine at one moment (cluster::PairBarrier).
                    let paired = claimed.iter().filter(|c| c.pair_rank.is_some()).count();
                    let mut tickets: Vec<Option<cluster::PairTicket>> = cluster::PairBarrier::tickets(paired).into_iter().map(Some).collect();
                    for c in claimed {
                        let ticket = c
                            .pair_rank
                            .and_then(|rank| tickets.get_mut(usize::try_from(rank).ok()?)?.take())
                            .unwrap_or_else(cluster::PairTicket::alone);
                        start(&engine, c, ticket);
                    }
                }
                Ok(_) => {
                    tokio::select! {
                        _ = engine.queue.notify.notified() => {}
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

/// Runs a claimed trial in a task of its own. While a cluster engine does not answer, its lane is parked
/// (the wait doubles to a minute) and its trials wait in the queue; other lanes go on.
fn start(engine: &Engine, claimed: store::claim::Claimed, pair: cluster::PairTicket) {
    let engine = engine.clone();
    engine.queue.set_live(claimed.trial.id, true);
    tokio::spawn(async move {
        let trial = claimed.trial.clone();
        let work = {
            let (engine, trial) = (engine.clone(), trial.clone());
            async move { run_one(&engine, trial, pair).await }
        };
        match run_guarded(&engine, &trial, work).await {
            Some(Ran::ClusterDown) => engine.queue.park(&claimed.lane),
            _ => engine.queue.unpark(&claimed.lane),
        }
        engine.queue.set_live(trial.id, false);
        engine.queue.notify.notify_one();
    });
}

/// Runs one trial's work in a task of its own: a panic there (a bug in Arbiter) becomes that trial's
/// `infra_failed` outcome with the panic's message — re-queued once like any infrastructure failure — and
/// the dispatcher goes on with the next trial. `None` when the work panicked.
pub async fn run_guarded<T: Send + 'static>(
    engine: &Engine,
    trial: &Trial,
    work: impl std::future::Future<Output = T> + Send + 'static,
) -> Option<T> {
    match tokio::spawn(work).await {
        Ok(out) => Some(out),
        Err(e) => {
            let message = match e.try_into_panic() {
                Ok(payload) => payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".into()),
                Err(e) => e.to_string(),
            };
            tracing::error!(trial = trial.id, %message, "a trial's work panicked");
            engine.queue.untrack(trial);
            let detail = format!("Arbiter failed while running this trial (a bug; the server log has more): {message}");
            trial_ended(engine, trial, Outcome::infra(judge::InfraReason::LauncherError, detail)).await;
            None
        }
    }
}

#[derive(Debug, PartialEq)]
pub enum Ran {
    Done,
    /// The trial's cluster engine did not answer; the trial went back to the queue.
    ClusterDown,
}

/// The trial's arm in its experiment's plan.
async fn arm_of<'p>(engine: &Engine, trial: &Trial, plan: &'p StoredPlan) -> Option<&'p crate::launch::request::PlannedArm> {
    let arms = engine.store.arms(trial.experiment_id).await.ok()?;
    let name = arms.into_iter().find(|a| a.0 == trial.arm_id)?.1;
    plan.launch.arms.iter().find(|a| a.name == name)
}

async fn run_one(engine: &Engine, trial: Trial, pair: cluster::PairTicket) -> Ran {
    match execute(engine, &trial, pair).await {
        Some(outcome) => {
            trial_ended(engine, &trial, outcome).await;
            Ran::Done
        }
        None => Ran::ClusterDown,
    }
}

/// Runs a claimed trial to its end and returns its outcome; `None` when its cluster engine did not answer
/// and the trial went back to the queue.
async fn execute(engine: &Engine, trial: &Trial, pair: cluster::PairTicket) -> Option<Outcome> {
    let plan = match plan_of(engine, trial.experiment_id).await {
        Ok(p) => p,
        Err(e) => return Some(Outcome::launcher_error(e)),
    };
    let Some(arm) = arm_of(engine, trial, &plan).await else {
        return Some(Outcome::launcher_error("the trial's arm is not in the plan".into()));
    };
    // A trial claimed just before its experiment was cancelled does not run (and does not undo the cancel).
    if let Ok(false) = engine.store.start_experiment(trial.experiment_id).await {
        return Some(Outcome::cancelled("the experiment was cancelled before this trial started"));
    }
    if plan.suite.kind == judge::ExperimentKind::Warp {
        return Some(crate::warp::run::run_phase(engine, trial, &plan, arm).await);
    }
    let l = launch_of(engine);
    if plan.suite.launcher == suite::definition::Launcher::Cluster {
        return run_on_cluster(engine, &l, trial, &plan, arm, pair).await;
    }
    // The trial's own CPUs where the host has one to spare; Arbiter and its finelog kept off them meanwhile.
    let all = cgroup::CpuSet::own();
    let cpus = runner::trial_cpus(&plan);
    let house = cpus.as_ref().ok().map(|(_, house)| {
        let finelog = owned_finelog::read_state(&engine.data_dir.join("finelog/server.json")).map(|s| s.pid);
        cgroup::HouseCpus::keep(finelog.into_iter().collect(), *house, all)
    });
    let outcome = match runner::start(&l, trial, &plan, arm, &cpus).await {
        Ok(mut child) => {
            let pid = child.id().unwrap_or(0);
            let (log, _) = runner::trial_files(&engine.data_dir, trial);
            let run_tag = runner::run_tag(trial);
            if let Err(e) =
                engine.store.set_trial_job(trial.id, &run_tag, &process::job_id(pid), &engine.queue.worker, &log.to_string_lossy()).await
            {
                tracing::warn!(error = %e, "cannot record the trial's job");
            }
            engine.queue.track(trial, Stop::Supervisor(pid));
            let _ = child.wait().await;
            engine.queue.untrack(trial);
            drop(house);
            runner::settle(&l, trial, plan.worker_ram()).await
        }
        Err(outcome) => {
            drop(house);
            outcome
        }
    };
    Some(outcome)
}

/// A cluster trial: submitted (or given back to the queue while the engine does not answer: `None`), its
/// job recorded, followed to its end.
async fn run_on_cluster(
    engine: &Engine,
    l: &Launch<'_>,
    trial: &Trial,
    plan: &StoredPlan,
    arm: &crate::launch::request::PlannedArm,
    pair: cluster::PairTicket,
) -> Option<Outcome> {
    let job_id = match crate::queue::cluster::submit(l, trial, plan, arm, pair).await {
        crate::queue::cluster::Submitted::Job(id) => id,
        crate::queue::cluster::Submitted::ClusterDown(why) => {
            tracing::warn!(trial = trial.id, error = %why, "the cluster engine does not answer; the trial waits in the queue");
            let _ = engine.store.release_trial(trial.id).await;
            return None;
        }
        crate::queue::cluster::Submitted::Failed(outcome) => return Some(outcome),
    };
    let (log, _) = runner::trial_files(&engine.data_dir, trial);
    let run_tag = runner::run_tag(trial);
    if let Err(e) = engine.store.set_trial_job(trial.id, &run_tag, &job_id, &engine.queue.worker, &log.to_string_lossy()).await {
        tracing::warn!(error = %e, "cannot record the trial's job");
    }
    tracing::info!(trial = trial.id, job_id, "submitted to the cluster engine");
    Some(follow_job(engine, l, trial, plan, arm, &job_id).await)
}

/// Follows a cluster job to its end (cancellable meanwhile) and returns its outcome.
async fn follow_job(
    engine: &Engine,
    l: &Launch<'_>,
    trial: &Trial,
    plan: &StoredPlan,
    arm: &crate::launch::request::PlannedArm,
    job_id: &str,
) -> Outcome {
    if let Ok((argv, spec)) = crate::queue::cluster::cancel_argv(l, trial, plan, arm, job_id) {
        engine.queue.track(trial, Stop::Engine(argv, Box::new(spec)));
    }
    let outcome = crate::queue::cluster::follow(l, &engine.store, trial, plan, arm, job_id).await;
    engine.queue.untrack(trial);
    outcome
}

/// How often the queue looks for trials left `running` with no task of this process and no supervisor.
const SWEEP_EVERY: Duration = Duration::from_secs(20);
/// A trial younger than this is never taken for stranded (it may be between its claim and its start).
const STRANDED_AFTER_MS: i64 = 30_000;

/// While the server runs: a local pipeline trial left `running` with no task of this process behind it
/// and no live supervisor (its supervisor was killed, or its outcome could not be written and the task
/// that held it is gone) is settled from what its supervisor left, as after a restart (interrupted and
/// re-queued once when it left nothing).
async fn resettle_stranded(engine: &Engine) {
    let Ok(trials) = engine.store.running_trials(&engine.queue.worker).await else { return };
    let now = store::now_ms();
    for trial in trials {
        if engine.queue.is_live(trial.id) || trial.started_at.is_none_or(|t| now - t < STRANDED_AFTER_MS) {
            continue;
        }
        let Ok(plan) = plan_of(engine, trial.experiment_id).await else { continue };
        if plan.suite.launcher == suite::definition::Launcher::Cluster || plan.suite.kind == judge::ExperimentKind::Warp {
            continue;
        }
        let job = engine.store.trial_run(trial.id).await.ok().and_then(|r| r.job_id).unwrap_or_default();
        let (_, status) = runner::trial_files(&engine.data_dir, &trial);
        if crate::queue::process::still_ours(&job, &status.to_string_lossy()).is_some() {
            continue;
        }
        tracing::warn!(trial = trial.id, "a trial was left running with no supervisor; settling it");
        engine.queue.set_live(trial.id, true);
        let outcome = runner::settle(&launch_of(engine), &trial, plan.worker_ram()).await;
        trial_ended(engine, &trial, outcome).await;
        engine.queue.set_live(trial.id, false);
    }
}

/// After a restart: every trial this host left `running` is settled from its supervisor's status
/// file, waited for while its supervisor still runs, or marked interrupted (and re-queued once). The
/// store is asked until it answers.
async fn recover(engine: &Engine) {
    let trials = loop {
        match engine.store.running_trials(&engine.queue.worker).await {
            Ok(t) => break t,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list the trials left running; asking the store again");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
    };
    for trial in trials {
        let run = engine.store.trial_run(trial.id).await.ok();
        let plan = plan_of(engine, trial.experiment_id).await.ok();
        if let Some(plan) = plan.as_ref().filter(|p| p.suite.launcher == suite::definition::Launcher::Cluster) {
            match (run.and_then(|r| r.job_id), arm_of(engine, &trial, plan).await) {
                (Some(job_id), Some(arm)) => {
                    tracing::info!(trial = trial.id, job_id, "following the cluster job again");
                    // Every job in flight is followed at once, each in a task of its own.
                    let (engine, plan, arm) = (engine.clone(), plan.clone(), arm.clone());
                    tokio::spawn(async move {
                        let l = launch_of(&engine);
                        let outcome = follow_job(&engine, &l, &trial, &plan, &arm, &job_id).await;
                        trial_ended(&engine, &trial, outcome).await;
                        engine.queue.notify.notify_one();
                    });
                }
                _ => {
                    let _ = engine.store.release_trial(trial.id).await;
                }
            }
            continue;
        }
        // Only the very process this trial started is signalled or waited on (not one that reused its pid).
        use crate::queue::process::still_ours;
        let job = run.and_then(|r| r.job_id).unwrap_or_default();
        if plan.as_ref().is_some_and(|p| p.suite.kind == judge::ExperimentKind::Warp) {
            // A warp phase ran inside the previous process: its server is stopped and the phase re-run.
            if let Some(pid) = still_ours(&job, "") {
                crate::queue::process::signal_group(pid, libc::SIGKILL);
            }
            let outcome = Outcome::infra(judge::InfraReason::Interrupted, "the server restarted during the phase");
            trial_ended(engine, &trial, outcome).await;
            continue;
        }
        let (_, status) = runner::trial_files(&engine.data_dir, &trial);
        let marker = status.to_string_lossy().into_owned();
        if still_ours(&job, &marker).is_some() {
            tracing::info!(trial = trial.id, "re-attached to a trial still running");
        }
        while still_ours(&job, &marker).is_some() {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let ram = plan.as_ref().and_then(StoredPlan::worker_ram);
        let outcome = runner::settle(&launch_of(engine), &trial, ram).await;
        trial_ended(engine, &trial, outcome).await;
    }
}
