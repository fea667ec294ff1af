//! `arbiter supervise`: the small process that runs one trial's command. It starts the command in a
//! process group of its own with stdout and stderr going to the trial's log, enforces the timeout,
//! turns SIGTERM (a cancel) into stopping the whole group, and writes how the command ended to a status
//! file (atomically). The server starts it in its own session, so it outlives a server crash and a
//! restarted server still learns how the trial ended.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use crate::queue::process::signal_group;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExitStatus {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    /// The command could not be started at all.
    pub spawn_error: Option<String>,
    pub finished_at: i64,
    /// A limit the trial hit (memory, processes, CPU time, a file's size), in words: the branch's
    /// failure, not the infrastructure's.
    #[serde(default)]
    pub limit: Option<String>,
    /// The log reached its cap and the rest was dropped (execution ids seen after it are listed at
    /// its end).
    #[serde(default)]
    pub log_truncated: bool,
    /// What the host was doing meanwhile (`queue::host`).
    #[serde(default)]
    pub host: Option<wire::experiment::JsonHostFacts>,
}

impl ExitStatus {
    pub fn read(path: &Path) -> Option<ExitStatus> {
        serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
    }

    fn write(&self, path: &Path) -> Result<(), String> {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec(self).map_err(|e| e.to_string())?).map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct SuperviseArgs {
    /// Where to write the exit status (JSON).
    #[arg(long)]
    pub status: PathBuf,
    /// The trial's log: the command's stdout and stderr.
    #[arg(long)]
    pub log: PathBuf,
    /// Working directory of the command.
    #[arg(long)]
    pub cwd: PathBuf,
    /// Stop the command after this many seconds.
    #[arg(long)]
    pub timeout_secs: u64,
    /// A sandboxed trial's way to finelog: accept on this Unix socket…
    #[arg(long, requires = "finelog_target")]
    pub finelog_socket: Option<PathBuf>,
    /// …and connect each connection to finelog's HOST:PORT.
    #[arg(long)]
    pub finelog_target: Option<String>,
    /// The trial's memory limit (its control group's).
    #[arg(long)]
    pub memory_bytes: Option<u64>,
    /// The most processes (and threads) the trial may run at once.
    #[arg(long)]
    pub processes: Option<u64>,
    /// The CPU-seconds the trial may use, read from its control group's accounting.
    #[arg(long)]
    pub cpu_seconds: Option<f64>,
    /// The CPUs reserved for the trial (kernel list form, `1` or `2-3`): its control group's CPU set.
    #[arg(long, conflicts_with = "shared_cpus_why")]
    pub cpus: Option<String>,
    /// Why no CPU was reserved (said in the trial's facts).
    #[arg(long)]
    pub shared_cpus_why: Option<String>,
    /// The largest file the trial may write (RLIMIT_FSIZE).
    #[arg(long)]
    pub file_bytes: Option<u64>,
    /// The log's cap: what the trial prints past it is dropped (its execution ids kept).
    #[arg(long, default_value_t = DEFAULT_LOG_BYTES)]
    pub log_bytes: u64,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    pub argv: Vec<String>,
}

/// A trial's log is cut here unless the runner says otherwise.
pub const DEFAULT_LOG_BYTES: u64 = 32 << 20;

/// Copies a trial's output into its log up to `cap` bytes; past it, output is read and dropped, and the
/// execution ids it names are kept (written at the end). Returns whether it cut.
async fn copy_capped(
    mut from: impl tokio::io::AsyncRead + Unpin,
    log: std::sync::Arc<tokio::sync::Mutex<(tokio::fs::File, u64, Vec<String>)>>,
    cap: u64,
) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 64 * 1024];
    let mut carry = String::new();
    let mut cut = false;
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut state = log.lock().await;
        let (file, written, ids) = &mut *state;
        let room = cap.saturating_sub(*written) as usize;
        if room > 0 {
            let take = room.min(n);
            let _ = file.write_all(&buf[..take]).await;
            *written += take as u64;
        }
        if n > room {
            cut = true;
            // Ids past the cap (a chunk's end may split one: the carry holds the tail of the last).
            let text = format!("{carry}{}", String::from_utf8_lossy(&buf[..n]));
            for id in judge::pipeline::rows::execution_ids_in(&text) {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            carry = text.chars().rev().take(128).collect::<Vec<_>>().into_iter().rev().collect();
        }
    }
    cut
}

/// Stops a group politely, then for good after a grace period.
async fn stop_group(pgid: u32, child: &mut tokio::process::Child) -> Option<std::process::ExitStatus> {
    signal_group(pgid, libc::SIGTERM);
    match tokio::time::timeout(Duration::from_secs(5), child.wait()).await {
        Ok(status) => {
            signal_group(pgid, libc::SIGKILL);
            status.ok()
        }
        Err(_) => {
            signal_group(pgid, libc::SIGKILL);
            child.wait().await.ok()
        }
    }
}

pub fn run(args: SuperviseArgs) -> Result<i32, String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(supervise(args))
}

async fn supervise(args: SuperviseArgs) -> Result<i32, String> {
    use crate::queue::cgroup::{Hit, Limits, TrialGroup};
    use std::os::unix::process::ExitStatusExt;
    use tokio::io::AsyncWriteExt;
    let now = store::now_ms;
    let log_file = std::fs::File::create(&args.log).map_err(|e| format!("{}: {e}", args.log.display()))?;
    let mut log_file = tokio::fs::File::from_std(log_file);
    if let (Some(socket), Some(target)) = (&args.finelog_socket, &args.finelog_target) {
        crate::queue::sandbox::relay_outside(socket, target.clone())?;
    }
    // The trial's control group: its memory and process limits, its CPU accounting, all its processes.
    let cpus = args.cpus.as_deref().map(crate::queue::cgroup::CpuSet::parse).transpose()?;
    let mut limits = Limits { memory_bytes: args.memory_bytes, processes: args.processes, cpu_seconds: args.cpu_seconds, cpus };
    let wants_group = limits != Limits::default();
    let name = format!("arbiter-trial-{}", std::process::id());
    // Its CPU set where one was reserved; a host that cannot make one runs the trial in a group without
    // (the trial is still pinned to its CPUs, by affinity alone) and says why.
    let mut shared_why = args.shared_cpus_why.clone();
    let mut made = wants_group.then(|| TrialGroup::create(&name, &limits));
    if let (Some(Err(why)), Some(set)) = (&made, cpus) {
        shared_why = Some(format!("CPUs {} pinned by affinity only: the control group's CPU set cannot be made ({why})", set.list()));
        limits.cpus = None;
        made = Some(TrialGroup::create(&name, &limits));
    }
    let group = match made {
        Some(Ok(g)) => Some(g),
        Some(Err(why)) => {
            let _ = log_file
                .write_all(format!("arbiter: the trial runs without its memory, process and CPU limits here: {why}\n").as_bytes())
                .await;
            None
        }
        None => None,
    };
    let confined = limits.cpus.filter(|_| group.is_some()).map(|c| c.list());
    let file_bytes = args.file_bytes;
    let mut cmd = tokio::process::Command::new(&args.argv[0]);
    cmd.args(&args.argv[1..])
        .current_dir(&args.cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    let procs = crate::queue::cgroup::join_on_spawn(&mut cmd, group.as_ref(), cpus, file_bytes);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let status = ExitStatus {
                exit_code: None,
                signal: None,
                timed_out: false,
                cancelled: false,
                spawn_error: Some(format!("cannot start {:?}: {e}", args.argv[0])),
                finished_at: now(),
                limit: None,
                log_truncated: false,
                host: None,
            };
            status.write(&args.status)?;
            return Ok(1);
        }
    };
    drop(procs);
    let watch = crate::queue::host::Watch::start();
    let log = std::sync::Arc::new(tokio::sync::Mutex::new((log_file, 0u64, Vec::<String>::new())));
    let copies = [
        child.stdout.take().map(|o| tokio::spawn(copy_capped(o, log.clone(), args.log_bytes))),
        child.stderr.take().map(|e| tokio::spawn(copy_capped(e, log.clone(), args.log_bytes))),
    ];
    let pgid = child.id().unwrap_or(0);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(|e| e.to_string())?;
    let (mut timed_out, mut cancelled, mut hit) = (false, false, None);
    let over_budget = async {
        let (Some(group), Some(budget)) = (&group, limits.cpu_seconds) else { return std::future::pending::<()>().await };
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            if group.cpu_seconds().is_some_and(|used| used > budget) {
                return;
            }
        }
    };
    let status = tokio::select! {
        s = child.wait() => s.ok(),
        _ = tokio::time::sleep(Duration::from_secs(args.timeout_secs)) => { timed_out = true; stop_group(pgid, &mut child).await }
        _ = term.recv() => { cancelled = true; stop_group(pgid, &mut child).await }
        _ = over_budget => { hit = Some(Hit::CpuTime); stop_group(pgid, &mut child).await }
    };
    // Whatever the command left running goes with it: its group, and every process of its control group.
    signal_group(pgid, libc::SIGKILL);
    let failed = !status.is_some_and(|s| s.success());
    let mut host = watch.finish(group.as_ref().and_then(|g| g.cpu_seconds()), group.as_ref().and_then(|g| g.throttled_seconds()));
    host.reserved_cpus = confined;
    host.shared_cpus_why = if host.reserved_cpus.is_some() { None } else { shared_why };
    if let Some(group) = &group {
        if hit.is_none() && failed {
            hit = group.hit();
        }
        group.remove();
    }
    let mut truncated = false;
    for copy in copies.into_iter().flatten() {
        // A process that escaped both groups may hold the pipe open: its output is not waited for long.
        let abort = copy.abort_handle();
        match tokio::time::timeout(Duration::from_secs(5), copy).await {
            Ok(cut) => truncated |= cut.unwrap_or(false),
            Err(_) => abort.abort(),
        }
    }
    let mut limit = hit.map(|h| h.words(&limits));
    if limit.is_none() && status.and_then(|s| s.signal()) == Some(libc::SIGXFSZ) {
        limit = Some(format!("limit: disk — the trial wrote a file above its {} MiB", file_bytes.unwrap_or(0) / (1 << 20)));
    }
    {
        let mut state = log.lock().await;
        let (file, _, ids) = &mut *state;
        if truncated {
            let ids = if ids.is_empty() { String::new() } else { format!("; execution ids printed after it: {}", ids.join(" ")) };
            let _ = file.write_all(format!("\narbiter: the log was cut at {} MiB{ids}\n", args.log_bytes >> 20).as_bytes()).await;
        }
        let _ = file.flush().await;
    }
    let record = ExitStatus {
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        timed_out,
        cancelled,
        spawn_error: None,
        finished_at: now(),
        limit,
        log_truncated: truncated,
        host: Some(host),
    };
    record.write(&args.status)?;
    Ok(0)
}
