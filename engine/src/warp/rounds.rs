//! The rounds of a phase: every workload, each round up to 3 attempts, through the load driver (a child
//! process: `arbiter load`, or warp when the suite selects it), stored as observations.

use crate::queue::runner::{clean_env, Outcome};
use crate::warp::phase::{phase_file, Phase};
use crate::warp::plan::{bucket, driver_argv};
use judge::TrialState;
use loadgen::report::LoadReport;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;
use store::observations::WarpRound;
use suite::warp::{WarpSpec, WorkloadSpec};

/// A sandboxed server's network namespace, which the health check and the load driver join: `arbiter`
/// (which runs `sandbox-enter`) and the pid of a process inside the sandbox.
#[derive(Debug, Clone, Copy)]
pub(super) struct Enter<'a> {
    pub exe: &'a Path,
    pub pid: u32,
}

impl Enter<'_> {
    /// `argv` run inside the namespace: `arbiter sandbox-enter --pid PID -- argv`.
    fn argv(&self, argv: &[String]) -> Vec<String> {
        let head = [self.exe.to_string_lossy().into_owned(), "sandbox-enter".into(), "--pid".into(), self.pid.to_string(), "--".into()];
        head.into_iter().chain(argv.iter().cloned()).collect()
    }
}

/// Healthy: the health path answers with a status below 500 (from inside the server's sandbox when
/// `enter` is given).
pub(super) async fn healthy(http: &reqwest::Client, url: &str, enter: Option<Enter<'_>>) -> bool {
    let Some(enter) = enter else {
        return http.get(url).send().await.is_ok_and(|r| r.status().as_u16() < 500);
    };
    let mut cmd = tokio::process::Command::new(enter.exe);
    clean_env(cmd.arg("sandbox-enter").arg("--pid").arg(enter.pid.to_string()).arg("--health").arg(url));
    cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).kill_on_drop(true);
    matches!(tokio::time::timeout(Duration::from_secs(5), cmd.status()).await, Ok(Ok(s)) if s.success())
}

/// Every workload's rounds, each up to 3 attempts, against a healthy endpoint.
pub(super) async fn rounds(
    p: &mut Phase<'_>,
    endpoint: &str,
    drive_sync: bool,
    keys: (&str, &str),
    mut server: Option<(&mut tokio::process::Child, &Path)>,
    enter: Option<Enter<'_>>,
) -> Outcome {
    let spec = p.spec;
    let workloads: Vec<WorkloadSpec> = match spec.workload_specs() {
        Ok(w) => w.into_iter().filter(|w| p.only.as_ref().is_none_or(|only| only.contains(&w.name))).collect(),
        Err(e) => return Outcome::launcher_error(e),
    };
    if workloads.is_empty() {
        return Outcome::launcher_error(format!("the phase names no workload of the suite ({:?})", p.only));
    }
    if spec.tool == suite::warp::LoadTool::Warp && spec.warp_program().is_none() {
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
                    return Outcome { rounds: stored, ..Outcome::cancelled("cancelled") };
                }
                if let Some((child, log)) = server.as_mut() {
                    if let Ok(Some(status)) = child.try_wait() {
                        let detail = format!(
                            "the server exited ({status}) during {} round {round}; last lines of its log:\n{}",
                            w.name,
                            crate::tail(log, 50, 64 * 1024)
                        );
                        return Outcome { rounds: stored, ..Outcome::failed(detail) };
                    }
                }
                let bucket = bucket(&p.trial.experiment_id.to_string(), p.trial.seq as usize, w);
                let argv = driver_argv(&exe, endpoint, w, spec, &bucket);
                let result = drive(&argv, enter, spec, keys, warmup + duration).await;
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

/// One run of the load driver (a child process: its CPU is its own, and a crash cannot take Arbiter down),
/// in the server's sandbox's network namespace when `enter` is given.
async fn drive(
    argv: &[String],
    enter: Option<Enter<'_>>,
    spec: &WarpSpec,
    keys: (&str, &str),
    length: Duration,
) -> Result<LoadReport, String> {
    let run = enter.map(|e| e.argv(argv)).unwrap_or_else(|| argv.to_vec());
    let mut cmd = tokio::process::Command::new(&run[0]);
    clean_env(cmd.args(&run[1..]).stdin(std::process::Stdio::null()).kill_on_drop(true));
    let tool = spec.tool;
    match tool {
        suite::warp::LoadTool::Builtin => cmd.env("ARBITER_S3_ACCESS_KEY", keys.0).env("ARBITER_S3_SECRET_KEY", keys.1),
        suite::warp::LoadTool::Warp => cmd.env("WARP_ACCESS_KEY", keys.0).env("WARP_SECRET_KEY", keys.1),
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
        suite::warp::LoadTool::Builtin => serde_json::from_str(stdout.trim()).map_err(|e| format!("unreadable driver output: {e}")),
        suite::warp::LoadTool::Warp => crate::warp::warp_tool::report_from_warp(&stdout, argv),
    }
}

/// A load run as a stored round: the judged operation's figures, `ok` by `round_ok`.
fn to_round(w: &WorkloadSpec, drive_sync: bool, round: u32, attempt: u32, result: &Result<LoadReport, String>, max_err: f64) -> WarpRound {
    let base = WarpRound {
        workload: w.name.clone(),
        operation: match w.kind {
            loadgen::Workload::Put => "PUT",
            loadgen::Workload::Get => "GET",
            loadgen::Workload::Mixed => "TOTAL",
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
