//! The local launcher: one trial = a detached git worktree of the arm's SHA (reused by the arm's
//! trials), the rendered argv run by `arbiter supervise` with a clean environment, a log file, a
//! timeout, and then the outcome: exit status, execution ids from the log, rows from finelog.

use crate::launch::request::{run_vars, worktree_dir, JsonConfigDiff, PlannedArm, RunContext};
use crate::launch::submit::StoredPlan;
use crate::queue::finelog::{Finelog, FinelogError};
use crate::queue::supervise::ExitStatus;
use judge::pipeline::rows::{execution_ids_in, StageRow};
use judge::{InfraReason, TrialState};
use std::path::{Path, PathBuf};
use store::trials::Trial;
use tokio::process::Command;

/// How a trial ended, before it is written to the store.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub state: TrialState,
    pub infra_reason: Option<InfraReason>,
    pub detail: String,
    pub exit_code: Option<i64>,
    pub execution_ids: Vec<String>,
    pub rows: Vec<StageRow>,
    /// A warp phase's rounds (every attempt).
    pub rounds: Vec<store::observations::WarpRound>,
    /// What the host was doing while a local trial ran (its supervisor's record).
    pub host: Option<wire::experiment::JsonHostFacts>,
}

impl Outcome {
    pub fn launcher_error(detail: String) -> Outcome {
        Outcome::infra(InfraReason::LauncherError, detail)
    }

    /// A failure of the arm's own (exit, stage, memory), with what it ran.
    pub fn failed(detail: impl Into<String>) -> Outcome {
        Outcome {
            state: TrialState::Failed,
            infra_reason: None,
            detail: detail.into(),
            exit_code: None,
            execution_ids: vec![],
            rows: vec![],
            rounds: vec![],
            host: None,
        }
    }

    /// Stopped on request; no verdict is drawn from it.
    pub fn cancelled(detail: impl Into<String>) -> Outcome {
        Outcome { state: TrialState::Cancelled, ..Outcome::failed(detail) }
    }

    pub fn infra(reason: InfraReason, detail: impl Into<String>) -> Outcome {
        Outcome {
            state: TrialState::InfraFailed,
            infra_reason: Some(reason),
            detail: detail.into(),
            exit_code: None,
            execution_ids: vec![],
            rows: vec![],
            rounds: vec![],
            host: None,
        }
    }
}

/// Where a trial's files go: `data-dir/experiments/{id}/logs/trial-{seq}-{attempt}.{log,status.json}`.
pub fn trial_files(data_dir: &Path, trial: &Trial) -> (PathBuf, PathBuf) {
    let dir = crate::experiment_dir(data_dir, trial.experiment_id).join("logs");
    let stem = format!("trial-{}-{}", trial.seq, trial.attempt);
    (dir.join(format!("{stem}.log")), dir.join(format!("{stem}.status.json")))
}

async fn git(dir: &Path, args: &[&str]) -> Result<(), String> {
    let out = crate::launch::git::command(Some(dir)).args(args).output().await.map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("git {}: {}", args.first().unwrap_or(&""), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// One lock per repository: trials running side by side (a cluster) share an arm's worktree, and the
/// first of them creates it while the others wait (two `git worktree add` of one path would fail).
fn repo_lock(repo: &Path) -> std::sync::Arc<tokio::sync::Mutex<()>> {
    static LOCKS: std::sync::LazyLock<
        std::sync::Mutex<std::collections::HashMap<std::path::PathBuf, std::sync::Arc<tokio::sync::Mutex<()>>>>,
    > = std::sync::LazyLock::new(Default::default);
    let mut locks = LOCKS.lock().unwrap_or_else(|e| e.into_inner());
    locks.entry(repo.to_path_buf()).or_default().clone()
}

/// The arm's worktree, created on first use at the arm's SHA with its config diff applied.
pub async fn ensure_worktree(repo: &Path, dir: &Path, arm: &PlannedArm) -> Result<(), String> {
    let lock = repo_lock(repo);
    let _held = lock.lock().await;
    if dir.join(".git").exists() {
        return Ok(());
    }
    std::fs::create_dir_all(dir.parent().unwrap_or(dir)).map_err(|e| e.to_string())?;
    let path = dir.to_string_lossy().into_owned();
    git(repo, &["worktree", "add", "--detach", "--force", &path, &arm.sha]).await?;
    match &arm.config {
        Some(JsonConfigDiff::Commit(sha)) => git(dir, &["cherry-pick", "--no-commit", sha]).await?,
        Some(JsonConfigDiff::Patch(patch)) => {
            let file = dir.with_extension("patch");
            std::fs::write(&file, patch).map_err(|e| e.to_string())?;
            git(dir, &["apply", &file.to_string_lossy()]).await?;
        }
        _ => {}
    }
    Ok(())
}

/// Removes an experiment's worktrees (when it ends). Git never runs inside a worktree a trial ran in
/// (the trial could have rewritten its `.git` pointer or planted configuration there): the folder is
/// deleted (symlinks are removed, never followed) and the repository prunes its record of it.
pub async fn remove_worktrees(repo: &Path, data_dir: &Path, experiment_id: i64, arms: &[PlannedArm]) {
    let mut removed = false;
    for arm in arms {
        let dir = worktree_dir(data_dir, &experiment_id.to_string(), &arm.name);
        crate::queue::mounts::uncap_worktree(data_dir, &dir);
        if std::fs::symlink_metadata(&dir).is_ok() {
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => removed = true,
                Err(e) => tracing::warn!(error = %e, dir = %dir.display(), "cannot remove a worktree"),
            }
        }
    }
    if removed {
        if let Err(e) = git(repo, &["worktree", "prune"]).await {
            tracing::warn!(error = %e, repo = %repo.display(), "cannot prune the repository's worktrees");
        }
    }
}

pub struct Launch<'a> {
    pub data_dir: &'a Path,
    pub finelog_url: Option<&'a str>,
    /// Arbiter's own finelog's query gate, when it runs one (rows are read there, not at the URL).
    pub finelog_query: Option<&'a Path>,
    pub python: Option<&'a Path>,
    /// The `arbiter` binary that runs `supervise`.
    pub supervisor: &'a Path,
    pub sandbox: &'a crate::queue::sandbox::TrialSandbox,
    /// The host user sandboxed trials run as (serve as root); `None`: the sandbox's mapped user.
    pub trial_user: Option<&'a crate::queue::host_user::HostUser>,
}

/// A trial's run tag: fresh for every attempt, so no trial cache-hits another.
pub fn run_tag(trial: &Trial) -> String {
    format!("arb-{}-{}-{}", trial.experiment_id, trial.seq, trial.attempt)
}

/// The run placeholders of a trial (worktree, run tag, finelog, python, locality, …) and its worktree.
pub fn trial_vars(
    l: &Launch<'_>,
    trial: &Trial,
    plan: &StoredPlan,
    arm: &PlannedArm,
) -> (std::collections::BTreeMap<&'static str, String>, PathBuf) {
    let label = trial.experiment_id.to_string();
    let worktree = worktree_dir(l.data_dir, &label, &arm.name);
    let ctx = RunContext {
        data_dir: l.data_dir,
        label,
        finelog_url: l.finelog_url.unwrap_or("http://finelog.unset").to_string(),
        python: l.python.map(|p| p.to_string_lossy().into_owned()),
    };
    let vars = run_vars(&ctx, &worktree, &run_tag(trial), arm, plan.launch.region.clone(), plan.launch.cluster.clone());
    (vars, worktree)
}

/// What a program Arbiter starts (a trial, a server under test, a build, a hook, the load driver) keeps of
/// Arbiter's environment; everything else is cleared, and what it needs is set explicitly.
pub const KEPT_ENV: &[&str] = &["PATH", "HOME", "LANG", "TZ", "TMPDIR"];

/// A clean environment: `env_clear` plus the kept variables that are set.
pub fn clean_env(cmd: &mut Command) -> &mut Command {
    cmd.env_clear();
    for keep in KEPT_ENV {
        if let Some(v) = std::env::var_os(keep) {
            cmd.env(keep, v);
        }
    }
    cmd
}

/// Headroom above the workers' RAM before the kernel stops a trial: the judge, not the kernel, says
/// that a stage went above its worker's RAM (a guardrail verdict from the rows), so the kernel's limit
/// sits well above it.
const MEMORY_HEADROOM: f64 = 1.5;
const MEMORY_SLACK: u64 = 512 << 20;

/// A local trial's limits, one rule (the measurement protocol's CPU isolation reads the same groups):
/// memory = the suite's per-worker RAM × the fingerprint's `workers` (1 without) × 1.5 + 512 MiB;
/// processes (and threads) at once = 64 a core of this host, at least 256; CPU-seconds = the suite's
/// `cpu` × its timeout (the most its declared cores could use in that time).
pub fn trial_limits(
    suite: &suite::SuiteDefinition,
    fingerprint: &std::collections::BTreeMap<String, serde_json::Value>,
    timeout_secs: u64,
) -> crate::queue::cgroup::Limits {
    let workers = fingerprint.get("workers").and_then(serde_json::Value::as_f64).filter(|w| *w >= 1.0).unwrap_or(1.0);
    let memory = suite.resources.ram_bytes().ok().map(|ram| (ram as f64 * workers * MEMORY_HEADROOM) as u64 + MEMORY_SLACK);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    let cpu = Some(suite.resources.cpu).filter(|c| *c > 0.0);
    crate::queue::cgroup::Limits {
        memory_bytes: memory,
        processes: Some((64 * cores).max(256)),
        cpu_seconds: cpu.map(|c| c * timeout_secs as f64),
        cpus: None,
    }
}

/// The CPUs a local pipeline trial is confined to, and the house's (Arbiter's own processes, kept off
/// the trial's while it runs), or why it runs on the shared CPUs: the launch asked for shared CPUs, or
/// the host has none to spare ([`crate::queue::cgroup::reserve`]).
pub fn trial_cpus(plan: &StoredPlan) -> Result<(crate::queue::cgroup::CpuSet, crate::queue::cgroup::CpuSet), String> {
    use crate::queue::cgroup::{cpus_needed, reserve, CpuSet};
    if plan.launch.shared_cpus {
        return Err("no CPU set reserved: the launch asked for the shared CPUs (--shared-cpus)".into());
    }
    let workers = plan.launch.fingerprint.get("workers").and_then(serde_json::Value::as_f64).filter(|w| *w >= 1.0);
    reserve(cpus_needed(plan.suite.resources.cpu, workers), CpuSet::own())
}

/// A warp phase's limits, from the same rule: its server under test gets a trial's memory and process
/// limits and no CPU budget (its CPU is what is measured; the phase's timeout holds); its build the same
/// processes, at least 4 GiB of memory (compilers) and no CPU budget (the suite's timeout holds). Both
/// write no file above [`file_limit`].
pub fn warp_limits(suite: &suite::SuiteDefinition) -> (crate::queue::cgroup::Limits, crate::queue::cgroup::Limits) {
    let trial = trial_limits(suite, &Default::default(), u64::from(suite.timeout_minutes) * 60);
    let server = crate::queue::cgroup::Limits { cpu_seconds: None, ..trial };
    let build = crate::queue::cgroup::Limits { memory_bytes: trial.memory_bytes.map(|m| m.max(4 << 30)), ..server };
    (build, server)
}

/// The largest file a trial may write: the suite's `resources.disk`, else 8 GiB.
pub fn file_limit(suite: &suite::SuiteDefinition) -> u64 {
    suite.resources.disk.as_deref().and_then(|d| judge::units::parse_size(d).ok()).map(|b| b as u64).filter(|b| *b > 0).unwrap_or(8 << 30)
}

/// Gives a folder and what is in it to `user`, unless its top is already the user's.
pub(crate) fn give_to(user: &crate::queue::host_user::HostUser, dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if meta.uid() == user.uid {
        return Ok(());
    }
    crate::queue::host_user::chown_tree(dir, user)
}

/// Starts the trial's supervisor; returns its process id (the trial's job id).
/// `cpus`: the trial's reserved CPUs and the house's ([`trial_cpus`]), or why there are none.
pub async fn start(
    l: &Launch<'_>,
    trial: &Trial,
    plan: &StoredPlan,
    arm: &PlannedArm,
    cpus: &Result<(crate::queue::cgroup::CpuSet, crate::queue::cgroup::CpuSet), String>,
) -> Result<tokio::process::Child, Outcome> {
    use crate::queue::sandbox::{host_port, scratch_dir, wrap, View};
    let launcher_error = |e: String| Outcome::infra(InfraReason::LauncherError, e);
    let sandboxed = l.sandbox.bwrap().map_err(launcher_error)?;
    let (mut vars, worktree) = trial_vars(l, trial, plan, arm);
    ensure_worktree(Path::new(&plan.launch.repo_dir), &worktree, arm).await.map_err(launcher_error)?;
    let run_tag = run_tag(trial);
    // Sandboxed, the trial reaches finelog at 127.0.0.1:PORT, through the relay.
    let finelog = l.finelog_url.and_then(host_port);
    let finelog_inside = finelog.as_ref().filter(|_| sandboxed.is_some()).map(|(_, port)| format!("http://127.0.0.1:{port}"));
    if let Some(url) = &finelog_inside {
        vars.insert("finelog_url", url.clone());
    }
    // Sandboxed, Arbiter's data dir is absent: `{data_dir}` is the trial's scratch folder.
    let scratch = match sandboxed {
        Some(_) => Some(scratch_dir(l.data_dir, &format!("trial-{}-{}", trial.id, trial.attempt)).map_err(launcher_error)?),
        None => None,
    };
    if let Some(dir) = &scratch {
        vars.insert("data_dir", dir.to_string_lossy().into_owned());
    }
    let mut argv = plan.suite.render_argv(&plan.launch.fingerprint, &vars).map_err(launcher_error)?;
    let (log, status) = trial_files(l.data_dir, trial);
    std::fs::create_dir_all(log.parent().unwrap_or(l.data_dir)).map_err(|e| launcher_error(e.to_string()))?;
    let mut cmd = Command::new(l.supervisor);
    cmd.arg("supervise").arg("--status").arg(&status).arg("--log").arg(&log).arg("--cwd").arg(&worktree);
    if let (Some(bwrap), Some(scratch)) = (sandboxed, scratch) {
        let socket = scratch.with_file_name("finelog.sock");
        let python_env = l.python.map(crate::queue::sandbox::python_paths).unwrap_or_default();
        let (identity, drop_to) = crate::queue::sandbox::Identity::of(l.trial_user);
        let view = View {
            data_dir: l.data_dir.to_path_buf(),
            writable: vec![worktree.clone()],
            scratch,
            readable: python_env
                .into_iter()
                .chain(argv.first().map(|p| crate::queue::sandbox::program_paths(p)).unwrap_or_default())
                .chain([l.supervisor.to_path_buf()])
                .collect(),
            finelog: finelog.as_ref().map(|(_, port)| (*port, socket.clone())),
            tie_to_parent: true,
            identity,
            remapped: vec![],
            home_inside: None,
            drop_to,
        };
        if let Some(user) = l.trial_user {
            // The trial's own folders are its user's: the worktree (shared by its arm's trials, all as
            // this user) and its scratch, where the relay's socket will sit.
            give_to(user, &worktree).map_err(launcher_error)?;
            give_to(user, view.scratch.parent().unwrap_or(&view.scratch)).map_err(launcher_error)?;
            // What it writes is capped: its scratch, and its worktree over all of its arm's trials.
            let cap = file_limit(&plan.suite);
            crate::queue::mounts::size_scratch(&view.scratch, cap, user).map_err(launcher_error)?;
            crate::queue::mounts::cap_worktree_off_runtime(l.data_dir, &worktree, cap, user).await.map_err(launcher_error)?;
        }
        argv = wrap(bwrap, l.supervisor, &view, &argv);
        if let Some((host, port)) = &finelog {
            cmd.arg("--finelog-socket").arg(&socket).arg("--finelog-target").arg(format!("{host}:{port}"));
        }
    }
    let timeout_secs = u64::from(plan.suite.timeout_minutes) * 60;
    let limits = trial_limits(&plan.suite, &plan.launch.fingerprint, timeout_secs);
    cmd.arg("--timeout-secs").arg(timeout_secs.to_string());
    if let Some(b) = limits.memory_bytes {
        cmd.arg("--memory-bytes").arg(b.to_string());
    }
    if let Some(n) = limits.processes {
        cmd.arg("--processes").arg(n.to_string());
    }
    if let Some(c) = limits.cpu_seconds {
        cmd.arg("--cpu-seconds").arg(format!("{c:.1}"));
    }
    cmd.arg("--file-bytes").arg(file_limit(&plan.suite).to_string());
    match cpus {
        Ok((cpus, _)) => cmd.arg("--cpus").arg(cpus.list()),
        Err(why) => cmd.arg("--shared-cpus-why").arg(why),
    };
    cmd.arg("--").args(&argv);
    // A clean environment: the trial sees only what is documented.
    clean_env(&mut cmd);
    cmd.env("ARBITER_EXPERIMENT", trial.experiment_id.to_string())
        .env("ARBITER_ARM", &arm.name)
        .env("ARBITER_SHA", &arm.sha)
        .env("ARBITER_RUN_TAG", &run_tag)
        .env("ARBITER_TRIAL", trial.seq.to_string())
        .env("ARBITER_WORKTREE", &worktree);
    if let Some(url) = finelog_inside.as_deref().or(l.finelog_url) {
        cmd.env("ARBITER_FINELOG_URL", url);
    }
    if let Some(JsonConfigDiff::Overrides(map)) = &arm.config {
        cmd.envs(map);
    }
    cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    // Its own session: it outlives a crash of the server, and the server's signals do not reach it.
    cmd.process_group(0);
    cmd.spawn().map_err(|e| launcher_error(format!("cannot start the trial's supervisor: {e}")))
}

/// Decides a trial's outcome from what its supervisor recorded, its log and finelog.
pub async fn settle(l: &Launch<'_>, trial: &Trial, ram_limit: Option<f64>) -> Outcome {
    let (_, status_path) = trial_files(l.data_dir, trial);
    let Some(status) = ExitStatus::read(&status_path) else {
        return Outcome::infra(InfraReason::Interrupted, "the trial's supervisor left no exit status");
    };
    let host = status.host.clone();
    Outcome { host, ..settle_status(l, trial, status, ram_limit).await }
}

async fn settle_status(l: &Launch<'_>, trial: &Trial, status: ExitStatus, ram_limit: Option<f64>) -> Outcome {
    let (log_path, _) = trial_files(l.data_dir, trial);
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    let ran = |o: Outcome| Outcome { execution_ids: execution_ids_in(&log), exit_code: status.exit_code.map(i64::from), ..o };
    if let Some(e) = &status.spawn_error {
        return ran(Outcome::failed(e.clone()));
    }
    // A limit hit is the branch's failure: not retried, and said as the trial's reason.
    if let Some(limit) = &status.limit {
        return ran(Outcome::failed(limit.clone()));
    }
    // A file above the limit (Python and most runtimes ignore SIGXFSZ and fail on EFBIG instead), or the
    // scratch folder or the capped worktree full (queue::mounts).
    if status.exit_code.is_some_and(|c| c != 0) {
        let tail = crate::tail(&log_path, 20, 64 * 1024);
        if tail.contains("File too large") {
            return ran(Outcome::failed(
                "limit: disk — the trial wrote a file above its size limit (the suite's resources.disk, else 8 GiB)",
            ));
        }
        if tail.contains("No space left on device") {
            return ran(Outcome::failed(
                "limit: disk — the trial ran out of room to write: its scratch folder (HOME, TMPDIR) or its worktree (over all of its arm's trials), each the suite's resources.disk, else 8 GiB",
            ));
        }
    }
    if status.cancelled {
        return ran(Outcome::cancelled("cancelled"));
    }
    if status.timed_out {
        return ran(Outcome::infra(InfraReason::Timeout, "stopped at the suite's timeout"));
    }
    measure(l, &log, status.exit_code, status.signal, ram_limit).await
}

/// The outcome of a command that ran to its end (locally or on a cluster engine): failed on a signal or
/// a non-zero exit (keeping what rows it left), else its execution ids from the log and their rows from
/// finelog, failed when a stage FAILED or went above the worker's RAM.
/// The rows of executions whose trial has ended: asked again for a few seconds while there are none, since
/// a trial's last rows may still be on their way to finelog (its client sends from a thread of its own)
/// when the job's end is seen.
async fn rows_when_written(f: &Finelog, ids: &[String]) -> Result<Vec<StageRow>, FinelogError> {
    let mut wait = std::time::Duration::from_millis(500);
    for _ in 0..4 {
        let rows = f.stage_rows(ids).await?;
        if !rows.is_empty() {
            return Ok(rows);
        }
        tokio::time::sleep(wait).await;
        wait *= 2;
    }
    f.stage_rows(ids).await
}

pub async fn measure(l: &Launch<'_>, log: &str, exit_code: Option<i32>, signal: Option<i32>, ram_limit: Option<f64>) -> Outcome {
    let ids = execution_ids_in(log);
    let exit_code = exit_code.map(i64::from);
    let base = Outcome {
        state: TrialState::Succeeded,
        infra_reason: None,
        detail: String::new(),
        exit_code,
        execution_ids: ids.clone(),
        rows: vec![],
        rounds: vec![],
        host: None,
    };
    if let Some(sig) = signal {
        let detail =
            if sig == libc::SIGKILL { "killed by SIGKILL (out of memory?): oom".to_string() } else { format!("killed by signal {sig}") };
        return Outcome { state: TrialState::Failed, detail, rows: rows_if_any(l, &ids).await, ..base };
    }
    if exit_code != Some(0) {
        let rows = rows_if_any(l, &ids).await;
        let detail = match rows.iter().find(|r| r.status == "FAILED") {
            Some(r) => format!("stage {} FAILED (exit code {})", r.stage_name, exit_code.unwrap_or(-1)),
            None => format!("exit code {}", exit_code.unwrap_or(-1)),
        };
        return Outcome { state: TrialState::Failed, detail, rows, ..base };
    }
    if ids.is_empty() {
        return Outcome { exit_code, ..Outcome::infra(InfraReason::NoRows, "the log names no execution id") };
    }
    let Some(url) = l.finelog_url else {
        return Outcome {
            exit_code,
            execution_ids: ids,
            ..Outcome::infra(InfraReason::StatsUnreachable, "no finelog URL is configured (ARBITER_FINELOG_URL)")
        };
    };
    let rows = match reader(l, url) {
        Ok(f) => rows_when_written(&f, &ids).await,
        Err(e) => Err(e),
    };
    let rows = match rows {
        Ok(r) if r.is_empty() => {
            // What the trial's finelog client said of its writes, if anything (a dropped batch is logged there).
            let said: Vec<&str> = log
                .lines()
                .filter(|l| l.contains("finelog") || l.contains("send failure") || l.contains("zephyr.stage"))
                .filter(|l| !execution_ids_in(l).iter().any(|i| ids.contains(i)))
                .take(3)
                .map(str::trim)
                .collect();
            let mut detail = format!("finelog at {url} has no zephyr.stage rows for these executions");
            if !said.is_empty() {
                detail = format!("{detail}; the trial's log says: {}", said.join(" | "));
            }
            return Outcome { exit_code, execution_ids: ids, ..Outcome::infra(InfraReason::NoRows, detail) };
        }
        Ok(r) => r,
        Err(e) => return Outcome { exit_code, execution_ids: ids, ..Outcome::infra(InfraReason::StatsUnreachable, e.to_string()) },
    };
    if let Some(failed) = rows.iter().find(|r| r.status == "FAILED") {
        return Outcome { state: TrialState::Failed, detail: format!("stage {} FAILED", failed.stage_name), rows, ..base };
    }
    if let Some(limit) = ram_limit {
        if let Some(r) = rows.iter().find(|r| r.mem_peak_bytes_max > limit) {
            let detail = format!(
                "oom: stage {} peaked at {:.0} MiB, above the worker's {:.0} MiB",
                r.stage_name,
                r.mem_peak_bytes_max / 1048576.0,
                limit / 1048576.0
            );
            return Outcome { state: TrialState::Failed, detail, rows, ..base };
        }
    }
    Outcome { rows, ..base }
}

/// The client rows are read with: Arbiter's own finelog's query gate, else the URL.
fn reader(l: &Launch<'_>, url: &str) -> Result<Finelog, FinelogError> {
    match l.finelog_query {
        Some(socket) => Ok(Finelog::unix(socket)),
        None => Finelog::new(url),
    }
}

/// The rows a failed trial left before it failed (which stage failed, what ran), when finelog has any.
async fn rows_if_any(l: &Launch<'_>, ids: &[String]) -> Vec<StageRow> {
    let (Some(url), false) = (l.finelog_url, ids.is_empty()) else { return Vec::new() };
    match reader(l, url) {
        Ok(f) => f.stage_rows(ids).await.unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}
