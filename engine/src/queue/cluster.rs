//! The cluster launcher: a trial is a job on the team's own engine (Slurm, Iris, …), driven through the
//! engine's command line with the suite's `[cluster]` templates. Submit (Arbiter's fixed wrapper script
//! with the arm's argv as its arguments — never a shell string), poll the status with back-off, keep
//! the log, then judge the end exactly as a local trial: execution ids from the log, rows from finelog.

use crate::launch::request::{worktree_dir, PlannedArm};
use crate::launch::submit::StoredPlan;
use crate::queue::runner::{self, ensure_worktree, trial_files, Launch, Outcome};
use judge::InfraReason;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use store::trials::Trial;
use store::Store;
use suite::cluster::{first_line, EngineOutcome, ResolvedCluster};

const WRAPPER: &str = "#!/bin/sh\n# Arbiter's fixed job script: it runs its arguments (the arm's argv) and nothing else.\nexec \"$@\"\n";
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// The two trials of a pair claimed together prepare apart (ping, worktree, wrapper) and are handed to
/// the engine at one moment: each waits here, ready, until its partner is ready too (or has dropped out, or
/// 30 s have passed), so neither starts seconds before the other because its own preparation was quicker.
#[derive(Debug)]
pub struct PairBarrier {
    seen: tokio::sync::watch::Sender<usize>,
    size: usize,
}

/// One trial's place at a [`PairBarrier`]: `ready` waits for the partner; dropped unused (the trial failed
/// before submitting), it tells the partner not to wait.
#[derive(Debug)]
pub struct PairTicket {
    gate: Option<std::sync::Arc<PairBarrier>>,
    /// Its place in the pair: once all are ready, rank r is submitted r × [`PAIR_STAGGER`] after the first,
    /// so the engine receives them in the drawn order.
    rank: u32,
}

/// Between the submissions of a pair's trials, once both are ready: enough to keep their order at the
/// engine, far below the engine's one-second clock.
const PAIR_STAGGER: Duration = Duration::from_millis(50);

/// How long a ready trial waits for its partner before it is submitted alone.
const PAIR_WAIT: Duration = Duration::from_secs(30);

impl PairBarrier {
    /// Tickets for `size` trials submitted together.
    pub fn tickets(size: usize) -> Vec<PairTicket> {
        let gate = std::sync::Arc::new(PairBarrier { seen: tokio::sync::watch::channel(0).0, size });
        (0..size).map(|rank| PairTicket { gate: Some(gate.clone()), rank: rank as u32 }).collect()
    }
}

impl PairTicket {
    /// A trial claimed alone: nothing to wait for.
    pub fn alone() -> PairTicket {
        PairTicket { gate: None, rank: 0 }
    }

    /// This trial is ready to submit: waits for the others of its pair.
    pub async fn ready(&mut self) {
        self.ready_within(PAIR_WAIT).await
    }

    async fn ready_within(&mut self, wait: Duration) {
        if let Some(gate) = self.gate.take() {
            let mut seen = gate.seen.subscribe();
            gate.seen.send_modify(|n| *n += 1);
            let _ = tokio::time::timeout(wait, seen.wait_for(|n| *n >= gate.size)).await;
            tokio::time::sleep(PAIR_STAGGER * self.rank).await;
        }
    }
}

impl Drop for PairTicket {
    fn drop(&mut self) {
        if let Some(gate) = self.gate.take() {
            gate.seen.send_modify(|n| *n += 1);
        }
    }
}

/// What a submission came to.
pub enum Submitted {
    Job(String),
    /// The engine does not answer: the trial goes back to the queue unspent.
    ClusterDown(String),
    Failed(Outcome),
}

/// One engine command's result: success and its stdout + stderr.
struct Answer {
    ok: bool,
    text: String,
}

/// Runs an engine command (argv, a clean environment plus the launcher's `pass_env`, a time limit).
async fn run_engine(spec: &ResolvedCluster, argv: &[String], extra_env: &[(&str, String)]) -> Result<Answer, String> {
    let (program, args) = argv.split_first().ok_or("an empty engine command")?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).env_clear().stdin(std::process::Stdio::null()).kill_on_drop(true);
    for name in ["PATH", "HOME", "LANG", "TZ"].iter().copied().chain(spec.pass_env.iter().map(String::as_str)) {
        if let Some(v) = std::env::var_os(name) {
            cmd.env(name, v);
        }
    }
    cmd.envs(&spec.env).envs(extra_env.iter().map(|(k, v)| (*k, v)));
    let out = tokio::time::timeout(COMMAND_TIMEOUT, cmd.output())
        .await
        .map_err(|_| format!("{program} did not answer within {} s", COMMAND_TIMEOUT.as_secs()))?
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    Ok(Answer { ok: out.status.success(), text })
}

fn resolved(plan: &StoredPlan) -> Result<ResolvedCluster, String> {
    plan.suite.cluster.as_ref().ok_or("the suite has no [cluster] table")?.resolved()
}

/// The values a trial's templates are rendered with.
fn vars(l: &Launch<'_>, trial: &Trial, plan: &StoredPlan, arm: &PlannedArm) -> (BTreeMap<&'static str, String>, PathBuf) {
    let (mut v, _) = runner::trial_vars(l, trial, plan, arm);
    let (log, _) = trial_files(l.data_dir, trial);
    v.insert("log", log.to_string_lossy().into_owned());
    v.insert("wrapper", wrapper_path(l.data_dir).to_string_lossy().into_owned());
    v.insert("cpus", (plan.suite.resources.cpu.ceil() as u64).max(1).to_string());
    v.insert("ram_mib", plan.suite.resources.ram_bytes().map(|b| (b / 1048576).max(1)).unwrap_or(1024).to_string());
    v.insert("timeout_minutes", plan.suite.timeout_minutes.to_string());
    (v, log)
}

fn wrapper_path(data_dir: &Path) -> PathBuf {
    data_dir.join("cluster").join("arbiter-job.sh")
}

fn write_wrapper(data_dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let path = wrapper_path(data_dir);
    std::fs::create_dir_all(path.parent().unwrap_or(data_dir)).map_err(|e| e.to_string())?;
    if std::fs::read_to_string(&path).ok().as_deref() == Some(WRAPPER) {
        return Ok(());
    }
    // Written aside and renamed into place: a job submitted meanwhile beside this one never reads half a script.
    let aside = path.with_extension(format!("sh.{}.{:?}", std::process::id(), std::thread::current().id()).replace(['(', ')'], ""));
    std::fs::write(&aside, WRAPPER).map_err(|e| format!("{}: {e}", aside.display()))?;
    std::fs::set_permissions(&aside, std::fs::Permissions::from_mode(0o755)).map_err(|e| e.to_string())?;
    std::fs::rename(&aside, &path).map_err(|e| format!("{}: {e}", path.display()))
}

/// A template rendered for a trial whose job is `job_id`.
fn render_for(plan: &StoredPlan, template: &[String], vars: &BTreeMap<&'static str, String>, job_id: &str) -> Result<Vec<String>, String> {
    let mut v = vars.clone();
    v.insert("job_id", job_id.to_string());
    plan.suite.render(template, &plan.launch.fingerprint, &v)
}

/// The cancel command of a trial's job, rendered (what the trial queue runs on a cancel).
pub fn cancel_argv(
    l: &Launch<'_>,
    trial: &Trial,
    plan: &StoredPlan,
    arm: &PlannedArm,
    job_id: &str,
) -> Result<(Vec<String>, ResolvedCluster), String> {
    let spec = resolved(plan)?;
    let (v, _) = vars(l, trial, plan, arm);
    Ok((render_for(plan, &spec.cancel, &v, job_id)?, spec))
}

/// Runs a cancel command (its answer only logged: the status poll sees the job end).
pub async fn cancel(spec: ResolvedCluster, argv: Vec<String>) {
    match run_engine(&spec, &argv, &[]).await {
        Ok(a) if a.ok => tracing::info!(command = %argv.join(" "), "cancelled the trial's job"),
        Ok(a) => tracing::warn!(command = %argv.join(" "), answer = %first_line(&a.text), "the engine refused the cancel"),
        Err(e) => tracing::warn!(error = %e, "cannot cancel the trial's job"),
    }
}

/// Retries a cancel every 5 s for 10 minutes, until the engine takes it (or no longer knows the job).
async fn cancel_when_back(spec: ResolvedCluster, argv: Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(600);
    while Instant::now() < deadline {
        match run_engine(&spec, &argv, &[]).await {
            Ok(a) if a.ok || spec.lost.as_ref().is_some_and(|r| r.is_match(&a.text)) => {
                tracing::info!(command = %argv.join(" "), "cancelled the job of a trial lost while the engine was away");
                return;
            }
            _ => tokio::time::sleep(Duration::from_secs(5)).await,
        }
    }
    tracing::warn!(command = %argv.join(" "), "could not cancel the job of a lost trial within 10 minutes");
}

/// Submits a trial: the engine must answer its ping, then the worktree, the wrapper, the job — at the
/// moment its pair's partner is submitted too (`pair`).
pub async fn submit(l: &Launch<'_>, trial: &Trial, plan: &StoredPlan, arm: &PlannedArm, mut pair: PairTicket) -> Submitted {
    let failed = |e: String| Submitted::Failed(Outcome::launcher_error(e));
    let spec = match resolved(plan) {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    let (v, log) = vars(l, trial, plan, arm);
    if !spec.ping.is_empty() {
        let ping = match render_for(plan, &spec.ping, &v, "") {
            Ok(p) => p,
            Err(e) => return failed(e),
        };
        match run_engine(&spec, &ping, &[]).await {
            Ok(a) if a.ok => {}
            Ok(a) => return Submitted::ClusterDown(first_line(&a.text)),
            Err(e) => return Submitted::ClusterDown(e),
        }
    }
    let worktree = worktree_dir(l.data_dir, &trial.experiment_id.to_string(), &arm.name);
    if let Err(e) = ensure_worktree(Path::new(&plan.launch.repo_dir), &worktree, arm).await {
        return failed(e);
    }
    if let Err(e) =
        write_wrapper(l.data_dir).and_then(|_| std::fs::create_dir_all(log.parent().unwrap_or(l.data_dir)).map_err(|e| e.to_string()))
    {
        return failed(e);
    }
    let argv = match plan.suite.render_argv(&plan.launch.fingerprint, &v) {
        Ok(a) => a,
        Err(e) => return failed(e),
    };
    let at = spec.submit.iter().position(|e| e == "{argv}").unwrap_or(spec.submit.len());
    let (before, after) =
        (render_for(plan, &spec.submit[..at], &v, ""), render_for(plan, spec.submit.get(at + 1..).unwrap_or(&[]), &v, ""));
    let command = match (before, after) {
        (Ok(b), Ok(a)) => [b, argv, a].concat(),
        (Err(e), _) | (_, Err(e)) => return failed(e),
    };
    let env = [
        ("ARBITER_EXPERIMENT", trial.experiment_id.to_string()),
        ("ARBITER_ARM", arm.name.clone()),
        ("ARBITER_SHA", arm.sha.clone()),
        ("ARBITER_RUN_TAG", v["run_tag"].clone()),
        ("ARBITER_TRIAL", trial.seq.to_string()),
        ("ARBITER_WORKTREE", worktree.to_string_lossy().into_owned()),
        ("ARBITER_FINELOG_URL", v["finelog_url"].clone()),
    ];
    pair.ready().await;
    match run_engine(&spec, &command, &env).await {
        Ok(a) if a.ok => match spec.read_job_id(&a.text) {
            Some(id) => Submitted::Job(id),
            None => failed(format!("no job id in the submit output: {}", first_line(&a.text))),
        },
        Ok(a) => failed(format!("the engine refused the job: {}", first_line(&a.text))),
        Err(e) => Submitted::ClusterDown(e),
    }
}

/// Follows a submitted job to its end: status polled with back-off (half a second, doubling to the
/// launcher's maximum, reset when the state changes), the engine's state recorded, logs fetched when the
/// engine keeps them, and the end judged. A status that fails for longer than the launcher allows loses
/// the trial (engine unreachable); a job the engine no longer knows is lost too.
pub async fn follow(l: &Launch<'_>, store: &Store, trial: &Trial, plan: &StoredPlan, arm: &PlannedArm, job_id: &str) -> Outcome {
    let spec = match resolved(plan) {
        Ok(s) => s,
        Err(e) => return Outcome::launcher_error(e),
    };
    let (v, log) = vars(l, trial, plan, arm);
    let (status, logs) = match (render_for(plan, &spec.status, &v, job_id), render_for(plan, &spec.logs, &v, job_id)) {
        (Ok(s), Ok(g)) => (s, g),
        (Err(e), _) | (_, Err(e)) => return Outcome::launcher_error(e),
    };
    let ram = plan.suite.resources.ram_bytes().ok().map(|b| b as f64);
    let mut delay = Duration::from_millis(500);
    let mut answered = Instant::now();
    let mut last_state = String::new();
    loop {
        match run_engine(&spec, &status, &[]).await {
            Ok(a) if a.ok => {
                answered = Instant::now();
                let (state, outcome) = match spec.read_state(&a.text) {
                    Ok(s) => s,
                    Err(e) => return Outcome::launcher_error(format!("job {job_id}: {e}")),
                };
                if state != last_state {
                    let _ = store.set_engine_state(trial.id, &state).await;
                    delay = Duration::from_millis(500);
                    last_state = state.clone();
                }
                if !logs.is_empty() {
                    if let Ok(g) = run_engine(&spec, &logs, &[]).await {
                        let _ = std::fs::write(&log, g.text);
                    }
                }
                if outcome.is_final() {
                    return finish(l, &spec, job_id, &state, outcome, &a.text, &log, ram).await;
                }
            }
            Ok(a) if spec.lost.as_ref().is_some_and(|r| r.is_match(&a.text)) => {
                return Outcome::infra(InfraReason::JobLost, format!("the engine no longer knows job {job_id}: {}", first_line(&a.text)));
            }
            other => {
                let why = match other {
                    Ok(a) => first_line(&a.text),
                    Err(e) => e,
                };
                if answered.elapsed() > spec.unreachable_after {
                    // The job may still run out there; once the engine answers again it is cancelled, so
                    // it does not compete with the trial's next attempt.
                    if let Ok(cancel) = render_for(plan, &spec.cancel, &v, job_id) {
                        tokio::spawn(cancel_when_back(spec.clone(), cancel));
                    }
                    return Outcome::infra(
                        InfraReason::EngineUnreachable,
                        format!("the engine did not answer about job {job_id} for {} s: {why}", answered.elapsed().as_secs()),
                    );
                }
                tracing::debug!(job_id, error = %why, "the engine did not answer; polling on");
            }
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(spec.poll_max);
    }
}

/// A finished job's outcome, from the engine's final state and what its log holds.
#[allow(clippy::too_many_arguments)]
async fn finish(
    l: &Launch<'_>,
    spec: &ResolvedCluster,
    job_id: &str,
    state: &str,
    outcome: EngineOutcome,
    status: &str,
    log: &Path,
    ram: Option<f64>,
) -> Outcome {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let ids = judge::pipeline::rows::execution_ids_in(&text);
    let with_ids = |o: Outcome| Outcome { execution_ids: ids.clone(), ..o };
    let oom_line = spec.oom.as_ref().and_then(|r| text.lines().chain(status.lines()).find(|line| r.is_match(line)).map(str::trim));
    match outcome {
        EngineOutcome::Succeeded => runner::measure(l, &text, Some(0), None, ram).await,
        EngineOutcome::Oom => with_ids(Outcome::failed(format!("oom: the engine reports job {job_id} {state}"))),
        EngineOutcome::Failed if oom_line.is_some() => {
            with_ids(Outcome::failed(format!("oom: the engine killed job {job_id} for memory ({})", oom_line.unwrap_or_default())))
        }
        EngineOutcome::Failed => {
            let (code, signal) = spec.read_exit(status);
            let code = if code == Some(0) && signal.is_none() { None } else { code };
            let mut o = runner::measure(l, &text, code.or(Some(-1)), signal, ram).await;
            o.detail = format!("{} (engine state {state})", o.detail);
            o
        }
        EngineOutcome::Preempted => with_ids(Outcome::infra(InfraReason::Preempted, format!("the engine preempted job {job_id}"))),
        EngineOutcome::NodeFail => with_ids(Outcome::infra(InfraReason::NodeFail, format!("job {job_id}'s node failed ({state})"))),
        EngineOutcome::Timeout => with_ids(Outcome::infra(InfraReason::Timeout, format!("job {job_id} hit its time limit ({state})"))),
        EngineOutcome::Cancelled => with_ids(Outcome::cancelled(format!("job {job_id} {state}"))),
        EngineOutcome::Queued | EngineOutcome::Running => Outcome::launcher_error(format!("job {job_id} has not ended ({state})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_pair_is_released_together_and_a_dropped_partner_does_not_hold_the_other() {
        let ms = |n| Duration::from_millis(n);
        // The first trial is ready long before the second: it waits for it, then the second follows
        // PAIR_STAGGER after it.
        let mut t = PairBarrier::tickets(2);
        let (mut b, mut a) = (t.pop().unwrap(), t.pop().unwrap());
        let started = Instant::now();
        let first = tokio::spawn(async move {
            a.ready().await;
            started.elapsed()
        });
        tokio::time::sleep(ms(400)).await;
        b.ready().await;
        let (first, second) = (first.await.unwrap(), started.elapsed());
        assert!(first >= ms(400), "rank 0 waited for its partner: {first:?}");
        assert!(second >= ms(400) + PAIR_STAGGER, "rank 1 goes PAIR_STAGGER after both were ready: {first:?} {second:?}");

        // The partner fails before submitting (its ticket dropped): the ready one goes at once.
        let mut t = PairBarrier::tickets(2);
        let (b, mut a) = (t.pop().unwrap(), t.pop().unwrap());
        drop(b);
        let started = Instant::now();
        a.ready().await;
        assert!(started.elapsed() < ms(5_000), "{:?}", started.elapsed());

        // A partner that never comes holds the other only as long as it may.
        let mut t = PairBarrier::tickets(2);
        let (_b, mut a) = (t.pop().unwrap(), t.pop().unwrap());
        let started = Instant::now();
        a.ready_within(ms(300)).await;
        assert!(started.elapsed() >= ms(300) && started.elapsed() < ms(5_000), "{:?}", started.elapsed());

        // Alone: no wait.
        let started = Instant::now();
        PairTicket::alone().ready_within(Duration::from_secs(30)).await;
        assert!(started.elapsed() < ms(5_000));
    }
}
