//! One warp phase (one arm × one drive-sync value). Local mode: the arm's binary, a fresh server on a
//! free loopback port with fresh data dirs, keys and the phase's environment; health polled until the
//! suite's timeout (failing fast when the process exits first); then every workload's rounds, each up to
//! 3 attempts, through the load driver; then the server is stopped. External mode: the deploy hook, then
//! health, then the same rounds against the suite's endpoint. The server log and its startup
//! environment (keys redacted) stay as the phase's artifacts.

use super::binary::{ensure_binary, BinarySource};
use super::plan::{driver_argv, sync_label};
use crate::launch::request::PlannedArm;
use crate::launch::runner::{clean_env, trial_files, Launch, Outcome};
use crate::launch::submit::StoredPlan;
use crate::load::report::LoadReport;
use crate::suites::warp::{WarpSpec, WorkloadSpec};
use judge::{InfraReason, TrialState};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use store::observations::WarpRound;
use store::trials::Trial;

/// What a phase records beside its rounds, for the provenance (`trial-{seq}-{attempt}.phase.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseRecord {
    pub arm: String,
    pub sha: String,
    pub leg: String,
    pub drive_sync: bool,
    pub endpoint: String,
    pub binary: Option<String>,
    pub binary_source: Option<BinarySource>,
    pub tool: String,
}

/// The phase's files next to its log: `.server.log`, `.server.env`, `.phase.json`, `.loads.jsonl`.
pub fn phase_file(data_dir: &Path, trial: &Trial, suffix: &str) -> PathBuf {
    let (log, _) = trial_files(data_dir, trial);
    log.with_extension(suffix)
}

/// The last `n` lines of a file.
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut buf);
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// A free loopback port (the kernel's choice; the listener is dropped right before the server binds).
fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).map_err(|e| format!("no free port: {e}"))
}

/// Healthy: the health path answers with a status below 500.
async fn healthy(http: &reqwest::Client, url: &str) -> bool {
    http.get(url).send().await.is_ok_and(|r| r.status().as_u16() < 500)
}

struct Phase<'a> {
    l: &'a Launch<'a>,
    trial: &'a Trial,
    spec: &'a WarpSpec,
    log: std::fs::File,
    cancelled: &'a AtomicBool,
}

impl Phase<'_> {
    fn say(&mut self, line: &str) {
        let _ = writeln!(self.log, "[arbiter] {line}");
    }
}

/// Runs the phase; `on_server` gets the server's pid (the trial's job id) once it started.
pub async fn run(
    l: &Launch<'_>,
    trial: &Trial,
    plan: &StoredPlan,
    arm: &PlannedArm,
    cancelled: &AtomicBool,
    on_server: impl FnOnce(u32),
) -> Outcome {
    let Some(spec) = plan.suite.warp.as_ref() else { return Outcome::launcher_error("the suite has no [warp] table".into()) };
    let Some((drive_sync, leg)) = trial.cell.as_deref().and_then(super::plan::parse_cell) else {
        return Outcome::launcher_error(format!("trial cell {:?} is not a warp phase", trial.cell));
    };
    let (log_path, _) = trial_files(l.data_dir, trial);
    if let Some(dir) = log_path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let log = match std::fs::File::create(&log_path) {
        Ok(f) => f,
        Err(e) => return Outcome::launcher_error(format!("cannot write the phase log: {e}")),
    };
    let mut p = Phase { l, trial, spec, log, cancelled };
    p.say(&format!("phase {leg} of arm {} at {} with drive sync {}", arm.name, arm.sha, sync_label(drive_sync)));
    let mut record = PhaseRecord {
        arm: arm.name.clone(),
        sha: arm.sha.clone(),
        leg: leg.to_string(),
        drive_sync,
        endpoint: String::new(),
        binary: None,
        binary_source: None,
        tool: format!("{:?}", spec.tool).to_lowercase(),
    };
    let outcome = if spec.external() {
        external(&mut p, plan, arm, drive_sync, &mut record).await
    } else {
        local(&mut p, plan, arm, drive_sync, &mut record, on_server).await
    };
    let _ = std::fs::write(phase_file(l.data_dir, trial, "phase.json"), serde_json::to_vec_pretty(&record).unwrap_or_default());
    p.say(&format!("phase ended: {} {}", outcome.state.as_str(), outcome.detail));
    outcome
}

async fn binary_for(p: &mut Phase<'_>, plan: &StoredPlan, arm: &PlannedArm, record: &mut PhaseRecord) -> Result<Option<PathBuf>, Outcome> {
    let warp = plan.suite.warp.as_ref().expect("checked by the caller");
    if warp.binaries.is_empty() && warp.build.is_empty() {
        return Ok(None);
    }
    match ensure_binary(p.l.data_dir, Path::new(&plan.launch.repo_dir), p.trial.experiment_id, &plan.suite, arm, &mut p.log).await {
        Ok((path, source)) => {
            p.say(&format!("binary: {} — {}", path.display(), source.describe()));
            record.binary = Some(path.to_string_lossy().into_owned());
            record.binary_source = Some(source);
            Ok(Some(path))
        }
        Err(e) if e.contains("prebuilt") => Err(Outcome::launcher_error(e)),
        Err(e) => Err(Outcome::failed(e)),
    }
}

async fn local(
    p: &mut Phase<'_>,
    plan: &StoredPlan,
    arm: &PlannedArm,
    drive_sync: bool,
    record: &mut PhaseRecord,
    on_server: impl FnOnce(u32),
) -> Outcome {
    let spec = p.spec;
    let binary = match binary_for(p, plan, arm, record).await {
        Ok(Some(b)) => b,
        Ok(None) => return Outcome::launcher_error("the suite names no binary".into()),
        Err(o) => return o,
    };
    let port = match free_port() {
        Ok(port) => port,
        Err(e) => return Outcome::launcher_error(e),
    };
    let endpoint = format!("http://127.0.0.1:{port}");
    record.endpoint = endpoint.clone();
    let data_root = crate::downloads::experiment_dir(p.l.data_dir, p.trial.experiment_id)
        .join("phases")
        .join(format!("trial-{}-{}", p.trial.seq, p.trial.attempt));
    let _ = std::fs::remove_dir_all(&data_root);
    let dirs: Vec<String> = (1..=spec.disks).map(|i| data_root.join(format!("d{i}")).to_string_lossy().into_owned()).collect();
    for d in &dirs {
        if let Err(e) = std::fs::create_dir_all(d) {
            return Outcome::launcher_error(format!("cannot make the data dir {d}: {e}"));
        }
    }
    let (access_key, secret_key) = (format!("arb{}", random_hex(8)), random_hex(20));
    let vars: std::collections::BTreeMap<&str, String> = [
        ("binary", binary.to_string_lossy().into_owned()),
        ("port", port.to_string()),
        ("data_dirs", dirs.join(",")),
        ("access_key", access_key.clone()),
        ("secret_key", secret_key.clone()),
    ]
    .into_iter()
    .collect();
    // `{data_dirs}` alone in an element becomes one element per dir; inside other text, a comma list.
    let mut template = Vec::new();
    for e in &spec.server {
        if e == "{data_dirs}" {
            template.extend(dirs.iter().cloned());
        } else {
            template.push(e.clone());
        }
    }
    let argv = match plan.suite.render(&template, &plan.launch.fingerprint, &vars) {
        Ok(a) => a,
        Err(e) => return Outcome::launcher_error(e),
    };
    let mut env: Vec<(String, String)> = Vec::new();
    for keep in crate::launch::runner::KEPT_ENV {
        if let Ok(v) = std::env::var(keep) {
            env.push((keep.to_string(), v));
        }
    }
    if let Some(name) = &spec.drive_sync.env {
        env.push((name.clone(), if drive_sync { spec.drive_sync.on.clone() } else { spec.drive_sync.off.clone() }));
    }
    for (k, v) in &spec.server_env {
        let value = v.replace("{access_key}", &access_key).replace("{secret_key}", &secret_key);
        env.push((k.clone(), value));
    }
    if let Some(crate::launch::request::JsonConfigDiff::Overrides(map)) = &arm.config {
        env.extend(map.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    let redact = |s: &str| s.replace(&secret_key, "<redacted>").replace(&access_key, "<access-key>");
    let env_file = phase_file(p.l.data_dir, p.trial, "server.env");
    let env_text: String =
        env.iter().map(|(k, v)| format!("{k}={}\n", redact(v))).collect::<String>() + &format!("# argv: {}\n", redact(&argv.join(" ")));
    let _ = std::fs::write(&env_file, env_text);
    p.say(&format!("starting the server on port {port}: {}", redact(&argv.join(" "))));
    let server_log_path = phase_file(p.l.data_dir, p.trial, "server.log");
    let server_log = match std::fs::File::create(&server_log_path) {
        Ok(f) => f,
        Err(e) => return Outcome::launcher_error(format!("cannot write the server log: {e}")),
    };
    let mut cmd = tokio::process::Command::new(&argv[0]);
    cmd.args(&argv[1..]).env_clear().envs(env).current_dir(&data_root).stdin(std::process::Stdio::null());
    cmd.stdout(server_log.try_clone().map(std::process::Stdio::from).unwrap_or_else(|_| std::process::Stdio::null()));
    cmd.stderr(server_log);
    cmd.process_group(0).kill_on_drop(true);
    let mut server = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Outcome::failed(format!("cannot start the server {:?}: {e}", argv[0])),
    };
    let pid = server.id().unwrap_or(0);
    on_server(pid);
    let outcome = async {
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(2))
            .build()
            .map_err(|e| Outcome::launcher_error(e.to_string()))?;
        let health_url = format!("{endpoint}{}", spec.health_path);
        let started = Instant::now();
        loop {
            if p.cancelled.load(Ordering::Relaxed) {
                return Err(Outcome { state: TrialState::Cancelled, ..Outcome::failed("cancelled") });
            }
            if let Ok(Some(status)) = server.try_wait() {
                return Err(Outcome::failed(format!(
                    "the server exited ({status}) before becoming healthy; last lines of its log:\n{}",
                    tail(&server_log_path, 50)
                )));
            }
            if healthy(&http, &health_url).await {
                break;
            }
            if started.elapsed() > Duration::from_secs(spec.health_timeout_secs) {
                return Err(Outcome::failed(format!(
                    "health timeout: {health_url} did not answer within {} s; last lines of the server log:\n{}",
                    spec.health_timeout_secs,
                    tail(&server_log_path, 50)
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        p.say(&format!("healthy after {:.1} s", started.elapsed().as_secs_f64()));
        Ok(())
    }
    .await;
    let outcome = match outcome {
        Err(o) => o,
        Ok(()) => rounds(p, &endpoint, drive_sync, (&access_key, &secret_key), Some((&mut server, &server_log_path))).await,
    };
    // Stop the server: SIGTERM to its group, then SIGKILL after 10 s.
    crate::launch::supervise::signal_group(pid, libc::SIGTERM);
    if tokio::time::timeout(Duration::from_secs(10), server.wait()).await.is_err() {
        crate::launch::supervise::signal_group(pid, libc::SIGKILL);
        let _ = server.wait().await;
    }
    let _ = std::fs::remove_dir_all(&data_root);
    outcome
}

async fn external(p: &mut Phase<'_>, plan: &StoredPlan, arm: &PlannedArm, drive_sync: bool, record: &mut PhaseRecord) -> Outcome {
    let spec = p.spec;
    let endpoint = spec.endpoint.clone().unwrap_or_default().trim_end_matches('/').to_string();
    record.endpoint = endpoint.clone();
    let keys = match crate::load::command::read_credentials_file(Path::new(spec.credentials_file.as_deref().unwrap_or_default())) {
        Ok(k) => k,
        Err(e) => return Outcome::launcher_error(e),
    };
    let binary = match binary_for(p, plan, arm, record).await {
        Ok(b) => b,
        Err(o) => return o,
    };
    if !spec.deploy_hook.is_empty() {
        let argv = match plan.suite.render(&spec.deploy_hook, &plan.launch.fingerprint, &Default::default()) {
            Ok(a) => a,
            Err(e) => return Outcome::launcher_error(e),
        };
        let phase = if arm.role == "control" { "baseline" } else { "candidate" };
        let sync_value = if drive_sync { &spec.drive_sync.on } else { &spec.drive_sync.off };
        p.say(&format!("deploy hook for the {phase} phase (drive sync {sync_value}): {argv:?}"));
        let mut cmd = tokio::process::Command::new(&argv[0]);
        clean_env(cmd.args(&argv[1..]).stdin(std::process::Stdio::null()).kill_on_drop(true));
        cmd.env("HOTPATH_AB_PHASE", phase)
            .env("HOTPATH_AB_BINARY", binary.as_ref().map(|b| b.to_string_lossy().into_owned()).unwrap_or_default())
            .env("HOTPATH_AB_DRIVE_SYNC", sync_value)
            .env("ARBITER_EXPERIMENT", p.trial.experiment_id.to_string())
            .env("ARBITER_ARM", &arm.name)
            .env("ARBITER_SHA", &arm.sha);
        if let Ok(out) = p.log.try_clone() {
            cmd.stdout(out);
        }
        if let Ok(err) = p.log.try_clone() {
            cmd.stderr(err);
        }
        let limit = Duration::from_secs(u64::from(plan.suite.timeout_minutes) * 60);
        match cmd.spawn() {
            Err(e) => return Outcome::launcher_error(format!("cannot run the deploy hook {:?}: {e}", argv[0])),
            Ok(mut child) => match tokio::time::timeout(limit, child.wait()).await {
                Ok(Ok(s)) if s.success() => {}
                Ok(Ok(s)) => return Outcome::launcher_error(format!("the deploy hook failed ({s}); see the phase log")),
                Ok(Err(e)) => return Outcome::launcher_error(e.to_string()),
                Err(_) => return Outcome::infra(InfraReason::Timeout, "the deploy hook did not finish within the suite's timeout"),
            },
        }
    }
    let http = match reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(2)).build() {
        Ok(h) => h,
        Err(e) => return Outcome::launcher_error(e.to_string()),
    };
    let health_url = format!("{endpoint}{}", spec.health_path);
    let started = Instant::now();
    while !healthy(&http, &health_url).await {
        if started.elapsed() > Duration::from_secs(spec.health_timeout_secs) {
            return Outcome::infra(
                InfraReason::LauncherError,
                format!("health timeout: {health_url} did not answer within {} s after the deploy hook", spec.health_timeout_secs),
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    rounds(p, &endpoint, drive_sync, (&keys.0, &keys.1), None).await
}

/// Every workload's rounds, each up to 3 attempts, against a healthy endpoint.
async fn rounds(
    p: &mut Phase<'_>,
    endpoint: &str,
    drive_sync: bool,
    keys: (&str, &str),
    mut server: Option<(&mut tokio::process::Child, &Path)>,
) -> Outcome {
    let spec = p.spec;
    let workloads: Vec<WorkloadSpec> = match spec.workload_specs() {
        Ok(w) => w,
        Err(e) => return Outcome::launcher_error(e),
    };
    if spec.tool == crate::suites::warp::LoadTool::Warp && spec.warp_program().is_none() {
        // Measuring with another tool than the suite names would change what is compared: refuse loudly.
        let which = spec.warp_bin.clone().unwrap_or_else(|| "warp on PATH".into());
        return Outcome::launcher_error(format!("the suite selects tool = \"warp\", and there is no {which}"));
    }
    let (duration, warmup, cooldown) = spec.durations().unwrap_or_default();
    let exe = p.l.supervisor.to_string_lossy().into_owned();
    let loads_file = phase_file(p.l.data_dir, p.trial, "loads.jsonl");
    let mut stored: Vec<WarpRound> = Vec::new();
    let total = workloads.len() * spec.rounds as usize;
    let mut done = 0usize;
    for w in &workloads {
        for round in 1..=spec.rounds {
            for attempt in 1..=3u32 {
                if p.cancelled.load(Ordering::Relaxed) {
                    return Outcome { state: TrialState::Cancelled, rounds: stored, ..Outcome::failed("cancelled") };
                }
                if let Some((child, log)) = server.as_mut() {
                    if let Ok(Some(status)) = child.try_wait() {
                        let detail = format!(
                            "the server exited ({status}) during {} round {round}; last lines of its log:\n{}",
                            w.name,
                            tail(log, 50)
                        );
                        return Outcome { rounds: stored, ..Outcome::failed(detail) };
                    }
                }
                let bucket = format!("arb-{}-{}-{}", p.trial.experiment_id, p.trial.seq, w.name.to_ascii_lowercase());
                let argv = driver_argv(&exe, endpoint, w, spec, &bucket);
                let result = drive(&argv, spec, keys, warmup + duration).await;
                let r = to_round(w, drive_sync, round, attempt, &result, spec.max_request_error_pct);
                let line = match &result {
                    Ok(report) => report.to_text(),
                    Err(e) => format!("load run failed: {e}\n"),
                };
                let _ = write!(p.log, "[arbiter] {} round {round} attempt {attempt}: {line}", w.name);
                if let Ok(report) = &result {
                    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(&loads_file) {
                        let _ = writeln!(
                            f,
                            "{}",
                            serde_json::json!({"workload": w.name, "round": round, "attempt": attempt, "report": report})
                        );
                    }
                }
                let ok = r.ok;
                stored.push(r);
                if ok {
                    break;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            done += 1;
            if done < total {
                tokio::time::sleep(cooldown).await;
            }
        }
    }
    let rounds_total = workloads.len() * spec.rounds as usize;
    let failed = (1..=spec.rounds as i64)
        .flat_map(|r| workloads.iter().map(move |w| (w.name.clone(), r)))
        .filter(|(w, r)| !stored.iter().any(|s| &s.workload == w && s.round == *r && s.ok))
        .count();
    let first_error = stored.iter().find_map(|s| s.error_text.clone());
    let (state, detail) = match failed {
        0 => (TrialState::Succeeded, format!("{rounds_total} rounds measured")),
        n if n == rounds_total => {
            (TrialState::Failed, format!("every round failed: {}", first_error.unwrap_or_else(|| "no successful request".into())))
        }
        n => (TrialState::Succeeded, format!("{n} of {rounds_total} rounds failed after 3 attempts: {}", first_error.unwrap_or_default())),
    };
    Outcome { state, detail, rounds: stored, ..Outcome::failed("") }
}

/// One run of the load driver (a child process: its CPU is its own, and a crash cannot take Arbiter down).
async fn drive(argv: &[String], spec: &WarpSpec, keys: (&str, &str), length: Duration) -> Result<LoadReport, String> {
    let mut cmd = tokio::process::Command::new(&argv[0]);
    clean_env(cmd.args(&argv[1..]).stdin(std::process::Stdio::null()).kill_on_drop(true));
    let tool = spec.tool;
    match tool {
        crate::suites::warp::LoadTool::Builtin => cmd.env("ARBITER_S3_ACCESS_KEY", keys.0).env("ARBITER_S3_SECRET_KEY", keys.1),
        crate::suites::warp::LoadTool::Warp => cmd.env("WARP_ACCESS_KEY", keys.0).env("WARP_SECRET_KEY", keys.1),
    };
    let out = tokio::time::timeout(length + Duration::from_secs(180), cmd.output())
        .await
        .map_err(|_| "the load run did not finish in time".to_string())?
        .map_err(|e| format!("cannot run {:?}: {e}", argv[0]))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.trim().lines().last().unwrap_or("");
        return Err(format!("{} ({})", last.trim_start_matches("arbiter: error: "), out.status));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    match tool {
        crate::suites::warp::LoadTool::Builtin => serde_json::from_str(stdout.trim()).map_err(|e| format!("unreadable driver output: {e}")),
        crate::suites::warp::LoadTool::Warp => super::warp_tool::report_from_warp(&stdout, argv),
    }
}

/// A load run as a stored round: the judged operation's figures, `ok` by `round_ok`.
fn to_round(w: &WorkloadSpec, drive_sync: bool, round: u32, attempt: u32, result: &Result<LoadReport, String>, max_err: f64) -> WarpRound {
    let base = WarpRound {
        workload: w.name.clone(),
        operation: match w.kind {
            crate::load::Workload::Put => "PUT",
            crate::load::Workload::Get => "GET",
            crate::load::Workload::Mixed => "TOTAL",
        }
        .into(),
        object_size: w.size as i64,
        drive_sync,
        round: i64::from(round),
        attempt: i64::from(attempt),
        ok: false,
        reqps: None,
        throughput_bps: None,
        latency_avg_ms: None,
        latency_p50_ms: None,
        latency_p90_ms: None,
        latency_p99_ms: None,
        requests: None,
        errors: None,
        error_text: None,
    };
    let report = match result {
        Ok(r) => r,
        Err(e) => return WarpRound { error_text: Some(e.clone()), ..base },
    };
    let Some(op) = report.judged_op() else {
        return WarpRound { error_text: Some("the run made no request of the judged operation".into()), ..base };
    };
    let errors = op.result.errors.unwrap_or(0);
    WarpRound {
        ok: judge::warp::rounds::round_ok(true, op.requests, errors, max_err),
        reqps: Some(op.result.reqps),
        throughput_bps: op.result.throughput_bps,
        latency_avg_ms: op.result.latency_avg_ms,
        latency_p50_ms: op.result.latency_p50_ms,
        latency_p90_ms: op.result.latency_p90_ms,
        latency_p99_ms: op.result.latency_p99_ms,
        requests: Some(op.requests as i64),
        errors: Some(errors as i64),
        error_text: op.first_error.clone(),
        ..base
    }
}
