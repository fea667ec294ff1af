//! Launching for real through the API: a git repository whose branches change a benchmark's CPU cost,
//! memory or success, a suite that runs it in worktrees, a real finelog server receiving its
//! `zephyr.stage` rows, the dispatcher running the trials, and the judge's verdict at the end.

use crate::common;

use common::bench::repository;

use common::finelog::{python, FinelogServer};
use common::test_app::{Client, TestApp};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use store::people::Role;

/// An app with the stage-bench suite on a fresh copy of its repository (`tmp/repo`), and a launcher.
pub(crate) async fn app(tmp: &Path, finelog: &FinelogServer) -> (TestApp, Client) {
    let repo = tmp.join("repo");
    repository(&repo);
    let app = TestApp::builder().dispatcher(Some(&finelog.url)).start().await;
    let suites = app.dir.path().join("suites");
    std::fs::create_dir_all(&suites).unwrap();
    let toml = common::bench::suite_toml(&repo, &python());
    std::fs::write(suites.join("bench.toml"), toml).unwrap();
    engine::sync_suites(&app.store, &suite::load_dir(&suites).unwrap()).await.unwrap();
    let launcher = app.signed_in(Role::Launcher).await;
    (app, launcher)
}

/// `arbiter launch --wait` of one control/`head` pair on the stage-bench suite, output piped.
fn launch_cli(app: &TestApp, token: &str, head: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(common::BIN);
    cmd.args(["launch", "--server", &app.base, "--suite", "stage-bench", "--control-ref", "main", "--treatment-ref", head])
        .args(["--trials", "1", "--wait"])
        .env("ARBITER_TOKEN", token)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd
}

/// The experiment id of the CLI's first line, `launched experiment ID: URL`.
async fn launched_id(out: &mut tokio::io::BufReader<tokio::process::ChildStdout>) -> i64 {
    let mut line = String::new();
    tokio::io::AsyncBufReadExt::read_line(out, &mut line).await.unwrap();
    let id = line.strip_prefix("launched experiment ").and_then(|rest| rest.split(':').next()).unwrap_or_else(|| panic!("{line}"));
    id.parse().unwrap()
}

async fn launch(client: &Client, head: &str) -> i64 {
    launch_with(client, head, 3).await
}

pub(crate) async fn launch_with(client: &Client, head: &str, trials: u32) -> i64 {
    let r = client.post_json("/api/v1/experiments", json!({"suite": "stage-bench", "head": head, "base": "main", "trials": trials})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.json()["id"].as_i64().unwrap()
}

fn states(e: &Value) -> Vec<String> {
    e["trials"].as_array().unwrap().iter().map(|t| t["state"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn measured_a_b_experiments_run_in_worktrees_and_are_judged() {
    let _measuring = common::measuring().await;
    let tmp = tempfile::tempdir().unwrap();
    let finelog = FinelogServer::start(None);
    let (app, launcher) = app(tmp.path(), &finelog).await;

    // A/B: three times the CPU in both stages. Six pairs, not three: on a loaded 2-core CI machine one
    // pair of this 0.3 CPU-s busy loop can be far off, and fewer pairs then leave ×3 undecided at the
    // family's 1 % (seen at 3 pairs: p = 0.0069 against Holm's 0.004; at 4, with the pipeline total in
    // the CPU family since method 3: p = 0.0062 against 0.0027, an interval of −30 % … +1049 %).
    let started = Instant::now();
    let heavier = launch_with(&launcher, "heavier", 6).await;
    let e = launcher.wait_until_ended(heavier, 240).await;
    let ab_secs = started.elapsed().as_secs_f64();
    assert_eq!(e["status"], "judged", "{e}");
    // One unmeasured warm-up first (this host's default), then the twelve trials of six pairs.
    assert_eq!(states(&e), ["succeeded"; 13], "{e}");
    let warm = &e["trials"][0];
    assert_eq!(
        (warm["role"].as_str(), warm["repeat_index"].as_i64(), warm["seq"].as_i64()),
        (Some("warm_up"), Some(-1), Some(0)),
        "{warm}"
    );
    assert!(warm["position"].is_null(), "a warm-up belongs to no pair: {warm}");
    assert!(e["trials"].as_array().unwrap()[1..].iter().all(|t| t["role"] == "measured"), "{e}");
    assert!(e["reasons"].to_string().contains("warm-up: 1 trial ran first and is not judged: #1 ("), "{}", e["reasons"]);
    assert_eq!(e["verdict"], "regression", "{e}");
    let reasons = e["reasons"].to_string();
    assert!(reasons.contains("stage0") || reasons.contains("CPU"), "the reasons name the cost: {reasons}");
    // Interleaved trials are judged as pairs by repeat index.
    let report = &e["report"];
    assert_eq!(
        (report["method"]["version"].as_u64(), report["method"]["paired"].as_bool()),
        (Some(judge::pipeline::method::METHOD_VERSION.into()), Some(true)),
        "{report}"
    );
    let tested: Vec<&Value> = report["stages"].as_array().unwrap().iter().filter_map(|s| s.get("cpu_test")).collect();
    assert!(!tested.is_empty() && tested.iter().all(|t| t["analysis"] == "paired t on log ratios"), "{report}");
    assert!(tested.iter().all(|t| t["n"] == json!([6, 6])), "six pairs: {report}");
    // Balanced order: each block of two pairs ran one control first and one treatment first, and each
    // trial's position in its pair is the order it started in.
    let control_arm = e["arms"].as_array().unwrap().iter().find(|a| a["role"] == "control").unwrap()["id"].clone();
    let mut control_first = Vec::new();
    for repeat in 0..6 {
        let pair: Vec<&Value> = e["trials"].as_array().unwrap().iter().filter(|t| t["repeat_index"] == repeat).collect();
        let mut at: Vec<i64> = pair.iter().map(|t| t["position"].as_i64().expect("a started trial has a position")).collect();
        at.sort();
        assert_eq!(at, [0, 1], "repeat {repeat}: {pair:?}");
        let first = pair.iter().find(|t| t["position"] == 0).unwrap();
        let second = pair.iter().find(|t| t["position"] == 1).unwrap();
        assert!(first["started_at"].as_i64() <= second["started_at"].as_i64(), "{pair:?}");
        control_first.push(first["arm_id"] == control_arm);
    }
    assert_eq!(control_first.iter().filter(|c| **c).count(), 3, "6 pairs: 3 control first, 3 treatment first: {control_first:?}");
    assert!(control_first.chunks(2).all(|b| b[0] != b[1]), "one of each in every block of two: {control_first:?}");
    let pairing = e["report"]["pairing"].as_str().unwrap_or_default();
    assert!(pairing.contains("the control went first in 3 of 6 pairs, a treatment in 3"), "{pairing}");
    // The measurement report, of the stage with the most CPU: the control's drift over its six trials and
    // the warm-up's cost, each in words with what to do; report.md carries the same lines.
    let m = &e["report"]["measurement"];
    assert!(m["stage"].as_str().is_some_and(|s| s.starts_with("stage")) && m["drift"]["trials"] == 6, "{m}");
    assert_eq!((m["first_trials"][0]["warm_up"].as_bool(), m["first_trials"][0]["seq"].as_i64()), (Some(true), Some(0)), "{m}");
    let lines: Vec<&str> = m["lines"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert!(lines.iter().any(|l| l.starts_with("Drift: ")) && lines.iter().any(|l| l.starts_with("Warm-up: trial #1 (")), "{lines:?}");
    let md = launcher.get(&format!("/experiments/{heavier}/export/report.md")).await.text;
    assert!(md.contains("Measurement (") && md.contains(&format!("- {}", lines[0])), "{md}");
    // The news in one line, the same on the page's banner and in report.md: the largest stage's CPU change.
    let news = md.lines().find_map(|l| l.strip_prefix("**In short:** regression — ")).unwrap_or_else(|| panic!("{md}"));
    assert!(news.starts_with('+') && news.contains(" % CPU in stage"), "{news}");
    let trial = &e["trials"][0];
    let rows = app.store.stage_rows(trial["id"].as_i64().unwrap()).await.unwrap();
    assert_eq!(rows.len(), 2, "the trial's rows came from finelog");
    // Every local trial carries what the host was doing (queue::host), and as root its own CPU from its
    // control group: a cross-check of the CPU-seconds its rows report.
    for t in e["trials"].as_array().unwrap() {
        let h = &t["host"];
        assert!(h["kernel"].as_str().is_some_and(|k| !k.is_empty()) && h["cpus_online"].as_u64() >= Some(1), "{t}");
        assert!(h["wall_secs"].as_f64() > Some(0.0) && h["load_max"].as_f64() >= Some(0.0), "{t}");
        if unsafe { libc::geteuid() } == 0 {
            let own = h["trial_cpu_secs"].as_f64().unwrap_or_else(|| panic!("the cgroup's CPU: {t}"));
            let rows: f64 = app.store.stage_rows(t["id"].as_i64().unwrap()).await.unwrap().iter().map(|r| r.cpu_time_total).sum();
            assert!(own >= 0.5 * rows && rows > 0.0, "the group's {own} CPU-s against the rows' {rows}: {t}");
            assert!(h["others_cpu_secs"].as_f64().is_some(), "{t}");
            // The suite asks 1 CPU: on a host with 2 or more, the highest is reserved for each trial
            // (its control group's CPU set), Arbiter and finelog kept off it.
            let own = engine::queue::cgroup::CpuSet::own();
            if own.count() >= 2 {
                let top = own.cpus().last().unwrap().to_string();
                assert_eq!(h["reserved_cpus"].as_str(), Some(top.as_str()), "{t}");
            } else {
                assert!(h["shared_cpus_why"].as_str().is_some_and(|w| w.contains("needs 1 CPU and this host has 1")), "{t}");
            }
        }
    }
    if unsafe { libc::geteuid() } == 0 && engine::queue::cgroup::CpuSet::own().count() >= 2 {
        assert!(lines.iter().any(|l| l.starts_with("Isolation: every measured trial ran on CPU ")), "{lines:?}");
    }
    let log = engine::experiment_dir(&app.state.data_dir, heavier).join("logs/trial-0-1.log");
    assert!(std::fs::read_to_string(&log).unwrap().contains("execution_id="), "the log is kept");
    assert!(!app.state.data_dir.join(format!("worktrees/{heavier}-control")).exists(), "worktrees go when the experiment ends");
    let page = launcher.get(&format!("/experiments/{heavier}")).await;
    assert_eq!(page.status, 200);
    assert!(page.text.contains("<h2>Trials</h2>") && page.text.matches("succeeded").count() >= 8, "the page lists the trials");
    assert!(page.text.contains("In pair") && page.text.contains("6 · 2nd"), "the trials table shows each trial's place in its pair");
    assert!(page.text.contains(&format!("<span class=\"headline\">— {}</span>", news.trim_end_matches('.'))), "the banner's news is report.md's");
    assert!(page.text.contains("warm-up (not judged)"), "the trials table shows the warm-up as such");
    assert!(
        page.text.contains("aria-label=\"Measurement\"") && page.text.contains("Warm-up: trial #1 ("),
        "the page's measurement section"
    );
    // The suite page gathers its recent experiments' measurement reports: this one's row, with how many of
    // its 12 measured trials ran beside heavy load.
    let suite_page = launcher.get("/suites/stage-bench").await.text;
    let table = suite_page.split("Measurement over recent experiments").nth(2).unwrap_or_default();
    assert!(table.contains(&format!("href=\"/experiments/{heavier}\"")) && table.contains(" of 12<"), "{suite_page}");
    assert!(
        page.text.contains("aria-label=\"Verdict\"") && page.text.contains("class=\"reasons\""),
        "the page gives the verdict's reasons"
    );

    // A/A: the same code on both sides is never a regression.
    let started = Instant::now();
    let same = launch(&launcher, "main").await;
    let e = launcher.wait_until_ended(same, 240).await;
    assert!(e["reasons"].as_array().unwrap().iter().any(|r| r.as_str().unwrap().starts_with("uncalibrated")), "{e}");
    let aa_secs = started.elapsed().as_secs_f64();
    assert!(["pass", "inconclusive"].contains(&e["verdict"].as_str().unwrap()), "{e}");
    let page = launcher.get(&format!("/experiments/{same}")).await.text;
    assert!(page.contains("main → main — an A/A: every arm runs commit "), "the page says the arms are one commit");
    eprintln!("timing: A/B with 12 trials {ab_secs:.1} s, A/A with 6 trials {aa_secs:.1} s");

    // A stage that fails only in the treatment: a new failure.
    let broken = launch(&launcher, "broken").await;
    let e = launcher.wait_until_ended(broken, 240).await;
    assert_eq!(e["verdict"], "regression", "{e}");
    assert!(e["reasons"][0].as_str().unwrap().starts_with("new failure: treatment failed"), "{e}");
    // The three measured treatment trials failed (the warm-up too, when it ran the treatment's code).
    let failed = |role: &str| e["trials"].as_array().unwrap().iter().filter(|t| t["state"] == "failed" && t["role"] == role).count();
    assert_eq!(failed("measured"), 3, "{e}");
    assert!(failed("warm_up") <= 1, "{e}");

    // Memory above the worker's RAM (2 GiB): failed with oom, a regression.
    let leaky = launch(&launcher, "leaky").await;
    let e = launcher.wait_until_ended(leaky, 240).await;
    assert_eq!(e["verdict"], "regression", "{e}");
    let details: Vec<&str> = e["trials"].as_array().unwrap().iter().filter_map(|t| t["detail"].as_str()).collect();
    assert!(details.iter().any(|d| d.starts_with("oom:")), "{details:?}");
}

#[tokio::test]
async fn a_cancel_stops_the_running_process_group_and_gives_no_verdict() {
    let _trials = common::running_trials().await;
    let tmp = tempfile::tempdir().unwrap();
    let finelog = FinelogServer::start(None);
    let (app, launcher) = app(tmp.path(), &finelog).await;
    let id = launch(&launcher, "slow").await;
    // Wait for the first trial to run.
    let deadline = Instant::now() + Duration::from_secs(60);
    let pid = loop {
        let trials = app.store.trials(id).await.unwrap();
        if let Some(t) = trials.iter().find(|t| t.state == judge::TrialState::Running) {
            if let Some(job) = app.store.trial_run(t.id).await.unwrap().job_id {
                break engine::queue::process::pid_of(&job).unwrap_or_else(|| panic!("a local job id names its pid: {job}"));
            }
        }
        assert!(Instant::now() < deadline, "no trial started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(engine::queue::process::is_alive(pid));
    let r = launcher.post_json(&format!("/api/v1/experiments/{id}/cancel"), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let e = launcher.wait_until_ended(id, 240).await;
    assert_eq!(e["status"], "cancelled");
    assert!(e["verdict"].is_null(), "no verdict for a cancelled experiment: {e}");
    let deadline = Instant::now() + Duration::from_secs(15);
    while app.store.trials(id).await.unwrap().iter().any(|t| !t.state.is_terminal()) {
        assert!(Instant::now() < deadline, "trials did not settle");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let settled = states(&launcher.get(&format!("/api/v1/experiments/{id}")).await.json());
    assert!(settled.iter().all(|s| s == "cancelled"), "every trial is cancelled: {settled:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while engine::queue::process::is_alive(pid) {
        assert!(Instant::now() < deadline, "the supervisor {pid} is still running");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let again = launcher.post_json(&format!("/api/v1/experiments/{id}/cancel"), json!({})).await;
    assert_eq!(again.status, 409);
}

#[tokio::test]
async fn measured_a_calibration_sets_the_thresholds_of_later_experiments() {
    let _measuring = common::measuring().await;
    let tmp = tempfile::tempdir().unwrap();
    let finelog = FinelogServer::start(None);
    let (app, launcher) = app(tmp.path(), &finelog).await;
    let r = launcher
        .post_json("/api/v1/experiments", json!({"suite": "stage-bench", "head": "main", "calibration": true, "base": "main"}))
        .await;
    assert_eq!(r.status, 400, "a calibration runs one SHA: {}", r.text);
    let r =
        launcher.post_json("/api/v1/experiments", json!({"suite": "stage-bench", "head": "main", "calibration": true, "trials": 4})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let calibration = r.json()["id"].as_i64().unwrap();
    let e = launcher.wait_until_ended(calibration, 240).await;
    assert_eq!((e["status"].as_str(), e["verdict"].as_str()), (Some("judged"), None), "{e}");
    assert_eq!(states(&e), ["succeeded"; 5], "a warm-up and four calibration trials");
    let suite = app.store.suite_by_name("stage-bench").await.unwrap();
    let plan: engine::launch::submit::StoredPlan = serde_json::from_value(app.store.experiment_plan(calibration).await.unwrap().0).unwrap();
    let profile = app.store.noise_profile(suite.id, &plan.fingerprint_hash()).await.unwrap().expect("a stored profile");
    assert_eq!(profile.trials, 4);
    // The calibration's own page shows the profile it produced, not "not judged yet".
    let page = launcher.get(&format!("/experiments/{calibration}")).await.text;
    assert!(page.contains("calibration measured") && !page.contains("not judged yet") && !page.contains("No report yet"), "{page}");
    assert!(
        page.contains(&format!("noise profile #{} of suite stage-bench: now 4 trials from 1 calibration, not yet trusted", profile.id)),
        "{page}"
    );
    assert!(page.contains("href=\"/suites/stage-bench\""), "it links the suite page");

    // Five pairs: with three, one drifting treatment trial of this 0.3 CPU-s busy loop left ×2.5 undecided
    // at the family's 1 % (p = 0.0076 against Holm's 0.004, seen twice on a 2-core machine).
    let later = launch_with(&launcher, "heavier", 5).await;
    let e = launcher.wait_until_ended(later, 240).await;
    assert_eq!(e["verdict"], "regression", "{e}");
    let reasons = e["reasons"].as_array().unwrap();
    assert!(reasons.iter().any(|r| r.as_str().unwrap().starts_with(&format!("judged with noise profile #{}", profile.id))), "{e}");

    // A second calibration of the same fingerprint adds its trials to the profile; an admin may reset it.
    let r =
        launcher.post_json("/api/v1/experiments", json!({"suite": "stage-bench", "head": "main", "calibration": true, "trials": 2})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    launcher.wait_until_ended(r.json()["id"].as_i64().unwrap(), 240).await;
    let grown = app.store.noise_profile(suite.id, &plan.fingerprint_hash()).await.unwrap().expect("the profile");
    assert_eq!((grown.id, grown.trials), (profile.id, 6), "grown in place, 4 + 2 same-code trials");
    assert_eq!((grown.profile["calibrations"].as_u64(), grown.profile["trusted"].as_bool()), (Some(2), Some(true)));
    let admin = app.signed_in(Role::Admin).await;
    let page = admin.get("/suites/stage-bench").await.text;
    assert!(page.contains("<strong>6</strong>") && page.contains("trusted · 2 calibrations"), "the suite page shows what stands behind it");
    assert!(
        page.contains("margins CPU ±2 %, elapsed ±25 %; family-wise error rate 1 % (the defaults)"),
        "and the margins: {}",
        page.split("Judged with").nth(1).unwrap_or("none").chars().take(300).collect::<String>()
    );
    let reset = format!("/api/v1/suites/stage-bench/noise-profiles/{}", profile.id);
    assert_eq!(launcher.send(reqwest::Method::DELETE, &reset, None).await.status, 403, "only an admin resets a profile");
    let r = admin.send(reqwest::Method::DELETE, &reset, None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(app.store.noise_profile(suite.id, &plan.fingerprint_hash()).await.unwrap().is_none(), "reset");
    assert_eq!(admin.send(reqwest::Method::DELETE, &reset, None).await.status, 404, "and gone");
    assert!(app.store.audit_log(5).await.unwrap().iter().any(|a| a.action == "noise_profile.reset"), "audited");
}

/// `arbiter launch --wait` in CI (no terminal): Ctrl-C leaves the experiment running and says so
/// (exit 2); stopping a measurement takes a yes at a terminal or the cancel API.
#[tokio::test]
async fn an_interrupted_launch_wait_leaves_the_experiment_running_and_says_so() {
    let _trials = common::running_trials().await;
    let tmp = tempfile::tempdir().unwrap();
    let finelog = FinelogServer::start(None);
    let (app, launcher) = app(tmp.path(), &finelog).await;
    let (token_client, _) = app.with_token(Role::Launcher).await;
    let mut child = launch_cli(&app, &token_client.bearer.clone().unwrap(), "slow").spawn().unwrap();
    let mut out = tokio::io::BufReader::new(child.stdout.take().unwrap());
    let id = launched_id(&mut out).await;
    // Not a terminal: progress comes as plain lines.
    let mut line = String::new();
    tokio::io::AsyncBufReadExt::read_line(&mut out, &mut line).await.unwrap();
    assert!(line.contains("trials ended"), "{line}");
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGINT) };
    let status = child.wait().await.unwrap();
    let mut err = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut child.stderr.take().unwrap(), &mut err).await.unwrap();
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("interrupted; experiment {id} goes on")), "{err}");
    let e = launcher.get(&format!("/api/v1/experiments/{id}")).await.json();
    assert_ne!(e["status"], "cancelled", "nothing was cancelled without a yes");
    let r = token_client.post_json(&format!("/api/v1/experiments/{id}/cancel"), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(launcher.wait_until_ended(id, 120).await["status"], "cancelled");
}

/// `arbiter launch --wait` exits with the verdict's code: a pass is 0, a regression 1, a cancelled
/// experiment 4.
#[tokio::test]
async fn launch_wait_exits_0_on_a_pass_or_a_baseline_1_on_a_regression_and_4_when_cancelled() {
    let _trials = common::running_trials().await;
    let tmp = tempfile::tempdir().unwrap();
    let finelog = FinelogServer::start(None);
    let (app, launcher) = app(tmp.path(), &finelog).await;
    let (token_client, _) = app.with_token(Role::Launcher).await;
    let token = token_client.bearer.clone().unwrap();
    let cli = |head: &str| launch_cli(&app, &token, head);
    // A third of the CPU: a pass (exit 0). On a loaded machine one pair's stages can sit under the CPU
    // floor while elapsed moves, which the judge calls inconclusive (exit 3): the code must then match.
    let out = cli("lighter").output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let verdict = stdout.lines().find_map(|l| l.strip_prefix("verdict: ")).unwrap_or_default().to_string();
    let expected = match verdict.as_str() {
        "pass" | "tradeoff" => 0,
        "inconclusive" => 3,
        other => panic!("a lighter treatment judged {other:?}: {stdout}"),
    };
    assert_eq!(out.status.code(), Some(expected), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    // A stage that fails only in the treatment is a regression whatever the noise (one trial of
    // `heavier` can sit under the 0.05 CPU-s floor on a loaded machine: seen in CI).
    let out = cli("broken").output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("verdict: regression") && stdout.contains("new failure"), "{stdout}");

    // A baseline run is measured, not compared: no verdict, exit 0.
    let out = tokio::process::Command::new(common::BIN)
        .args(["launch", "--server", &app.base, "--suite", "stage-bench", "--treatment-ref", "main", "--baseline"])
        .args(["--trials", "1", "--wait"])
        .env("ARBITER_TOKEN", &token)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("measured: a baseline run has no verdict"), "{stdout}");

    let mut child = cli("slow").spawn().unwrap();
    let mut out = tokio::io::BufReader::new(child.stdout.take().unwrap());
    let id = launched_id(&mut out).await;
    let r = token_client.post_json(&format!("/api/v1/experiments/{id}/cancel"), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut rest = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut out, &mut rest).await.unwrap();
    assert_eq!(child.wait().await.unwrap().code(), Some(4), "{rest}");
    assert!(rest.contains("cancelled: no verdict"), "{rest}");
    assert_eq!(launcher.get(&format!("/api/v1/experiments/{id}")).await.json()["status"], "cancelled");
}

/// At a terminal (a real pty, through util-linux `script`), Ctrl-C while waiting asks whether to cancel
/// the experiment; "y" cancels it on the server and exits 4. The progress is a redrawn bar there.
#[tokio::test]
async fn at_a_terminal_ctrl_c_asks_and_yes_cancels_the_experiment() {
    let _trials = common::running_trials().await;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let tmp = tempfile::tempdir().unwrap();
    let finelog = FinelogServer::start(None);
    let (app, launcher) = app(tmp.path(), &finelog).await;
    let (token_client, _) = app.with_token(Role::Launcher).await;
    let command = format!(
        "exec {} launch --server {} --suite stage-bench --control-ref main --treatment-ref slow --trials 1 --wait",
        common::BIN,
        app.base
    );
    let mut child = tokio::process::Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .env("SHELL", "/bin/sh")
        .env("ARBITER_TOKEN", token_client.bearer.clone().unwrap())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    let mut wait_for = async |needle: &str, seen: &mut String| {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !seen.contains(needle) {
            assert!(std::time::Instant::now() < deadline, "never saw {needle:?} in {seen:?}");
            let n = tokio::time::timeout(Duration::from_secs(60), stdout.read(&mut buf)).await.unwrap().unwrap();
            assert!(n > 0, "the terminal closed before {needle:?}: {seen:?}");
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    };
    wait_for("trials ended", &mut seen).await;
    assert!(seen.contains("\r[") && seen.contains("/3 trials ended"), "a redrawn progress bar (a warm-up and a pair): {seen:?}");
    let id: i64 = seen.split("launched experiment ").nth(1).unwrap().split(':').next().unwrap().parse().unwrap();
    stdin.write_all(b"\x03").await.unwrap();
    wait_for("[y/N]", &mut seen).await;
    stdin.write_all(b"y\n").await.unwrap();
    wait_for(&format!("cancelled experiment {id}"), &mut seen).await;
    // `script -e` exits with the command's code; `exec` leaves no shell in the terminal's process group
    // (a non-interactive dash dies of the Ctrl-C itself, and `script` then ends before the last lines).
    let code = tokio::time::timeout(Duration::from_secs(60), child.wait()).await.unwrap().unwrap().code();
    assert_eq!(code, Some(4), "{seen:?}");
    assert_eq!(launcher.wait_until_ended(id, 120).await["status"], "cancelled");
}

/// The experiment page's live progress: `/experiments/{id}/events` sends a progress event at once and
/// about once a second — trials by state, the ended count, the running trial with its job id and log
/// tail — and one `done` event once the verdict is stored, then ends.
#[tokio::test]
async fn progress_events_follow_an_experiment_until_its_verdict() {
    let _trials = common::running_trials().await;
    let tmp = tempfile::tempdir().unwrap();
    let finelog = FinelogServer::start(None);
    let (app, launcher) = app(tmp.path(), &finelog).await;
    let r = launcher.post_json("/api/v1/experiments", json!({"suite": "stage-bench", "head": "main", "base": "main", "trials": 1})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["id"].as_i64().unwrap();
    let mut response = launcher.http.get(format!("{}/experiments/{id}/events", app.base)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let (mut text, mut events) = (String::new(), Vec::<(String, Value)>::new());
    let deadline = Instant::now() + Duration::from_secs(180);
    while let Some(chunk) = tokio::time::timeout_at(tokio::time::Instant::from_std(deadline), response.chunk())
        .await
        .expect("the stream ended in time")
        .unwrap()
    {
        text.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            let field = |name: &str| block.lines().find_map(|l| l.strip_prefix(name)).map(str::trim).map(str::to_string);
            if let (Some(event), Some(data)) = (field("event:"), field("data:")) {
                events.push((event, serde_json::from_str(&data).unwrap()));
            }
        }
    }
    let (last, progress) = events.split_last().expect("some events");
    assert_eq!(last.0, "done", "the stream ends with done: {events:?}");
    assert_eq!((last.1["status"].as_str(), last.1["ended"].as_u64(), last.1["total"].as_u64()), (Some("judged"), Some(3), Some(3)));
    // A warm-up and a pair: the warm-up runs and takes its time, so the progress counts it.
    assert!(progress.iter().all(|(e, p)| e == "progress" && p["total"] == 3 && !p["done"].as_bool().unwrap()), "{progress:?}");
    let running: Vec<&Value> = progress.iter().flat_map(|(_, p)| p["running"].as_array().unwrap()).collect();
    assert!(!running.is_empty(), "a running trial was seen: {progress:?}");
    assert!(running.iter().any(|r| r["job_id"].is_string() && r["arm"].is_string()), "{running:?}");
    assert!(running.iter().all(|r| r["attempt"] == 1), "first attempts count from 1: {running:?}");
    let ended: Vec<u64> = progress.iter().map(|(_, p)| p["ended"].as_u64().unwrap()).collect();
    assert!(ended.windows(2).all(|w| w[0] <= w[1]), "the ended count never goes back: {ended:?}");
    assert_eq!(
        launcher.get(&format!("/experiments/{id}/events")).await.text.matches("event: done").count(),
        1,
        "an ended experiment: one done event"
    );
    assert_eq!(launcher.get("/experiments/999999/events").await.status, 404);
    // The next preview estimates its time from the trials that ran.
    let dry =
        launcher.post_json("/api/v1/experiments", json!({"suite": "stage-bench", "head": "main", "trials": 2, "dry_run": true})).await;
    let plan = &dry.json()["plan"];
    assert!(plan["estimated_minutes"].as_f64().is_some_and(|m| m > 0.0), "{plan}");
    assert!(plan["estimate_basis"].as_str().unwrap().contains("last 3 succeeded trials"), "{plan}");
}

/// A suite's `[notify]` webhook: a regression is posted (JSON with the verdict, suite, arms, page URL and
/// a Slack-style `text`); a first answer of 500 is retried; the delivery log keeps both attempts.
#[tokio::test]
async fn a_regression_is_posted_to_the_suites_webhook_with_a_retry() {
    let _trials = common::running_trials().await;
    use std::sync::{Arc, Mutex};
    let tmp = tempfile::tempdir().unwrap();
    let finelog = FinelogServer::start(None);
    let (app, launcher) = app(tmp.path(), &finelog).await;
    // A small receiver that answers 500 once, then 200, and keeps every body.
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let record = seen.clone();
    // …and a GitHub-style statuses endpoint that keeps the path, the token and the body.
    let statuses: Arc<Mutex<Vec<(String, String, Value)>>> = Arc::default();
    let keep = statuses.clone();
    let status_route = axum::routing::post(
        move |axum::extract::Path((owner, repo, sha)): axum::extract::Path<(String, String, String)>,
              headers: axum::http::HeaderMap,
              axum::Json(body): axum::Json<Value>| {
            let keep = keep.clone();
            async move {
                let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
                keep.lock().unwrap().push((format!("{owner}/{repo}/{sha}"), auth, body));
                axum::http::StatusCode::CREATED
            }
        },
    );
    let receiver = axum::Router::new().route("/repos/{owner}/{repo}/statuses/{sha}", status_route).route(
        "/hook",
        axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
            let record = record.clone();
            async move {
                let mut all = record.lock().unwrap();
                all.push(body);
                if all.len() == 1 {
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR
                } else {
                    axum::http::StatusCode::OK
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, receiver).await.unwrap() });
    let suites = app.dir.path().join("suites");
    let toml = std::fs::read_to_string(suites.join("bench.toml")).unwrap().replace("stage-bench", "notify-bench");
    let api = hook.trim_end_matches("/hook").to_string();
    // The token comes from a variable every test process already has: setting one here would race
    // the other tests of this binary reading the environment.
    let token = std::env::var("HOME").expect("HOME is set");
    std::fs::write(
        suites.join("notify.toml"),
        format!(
            "{toml}\n[notify]\nwebhook = \"{hook}\"\nretry_seconds = 0.05\n\n[notify.commit_status]\napi = \"{api}\"\nrepository = \"acme/bench\"\ntoken_env = \"HOME\"\n"
        ),
    )
    .unwrap();
    engine::sync_suites(&app.store, &suite::load_dir(&suites).unwrap()).await.unwrap();

    let r =
        launcher.post_json("/api/v1/experiments", json!({"suite": "notify-bench", "head": "broken", "base": "main", "trials": 1})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["id"].as_i64().unwrap();
    assert_eq!(launcher.wait_until_ended(id, 120).await["verdict"], "regression");
    let deadline = Instant::now() + Duration::from_secs(20);
    while seen.lock().unwrap().len() < 2 {
        assert!(Instant::now() < deadline, "the webhook was not retried: {:?}", seen.lock().unwrap());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let bodies = seen.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2, "one retry after the 500, none after the 200: {bodies:?}");
    assert_eq!(bodies[0], bodies[1]);
    let body = &bodies[1];
    assert_eq!((body["event"].as_str(), body["experiment"]["verdict"].as_str()), (Some("regression"), Some("regression")));
    assert_eq!(body["experiment"]["suite"], "notify-bench");
    assert_eq!(body["experiment"]["arms"].as_array().unwrap().len(), 2);
    let url = format!("{}/experiments/{id}", app.base);
    assert_eq!(body["experiment"]["url"], url.as_str());
    assert!(
        body["text"].as_str().unwrap().starts_with("*Regression* in suite notify-bench: <")
            && body["text"].as_str().unwrap().contains(&url),
        "{body}"
    );
    // The commit status: on the treatment's SHA, with the token, failure for a regression.
    let status = statuses.lock().unwrap().clone();
    assert_eq!(status.len(), 1, "{status:?}");
    let treatment_sha = body["experiment"]["arms"][1]["sha"].as_str().unwrap().to_string();
    assert_eq!(status[0].0, format!("acme/bench/{treatment_sha}"));
    assert_eq!(status[0].1, format!("Bearer {token}"));
    assert_eq!((status[0].2["state"].as_str(), status[0].2["context"].as_str()), (Some("failure"), Some("arbiter/notify-bench")));
    assert_eq!(status[0].2["target_url"], url.as_str());
    assert!(status[0].2["description"].as_str().unwrap().starts_with("regression"));
    let suite_id = app.store.suite_by_name("notify-bench").await.unwrap().id;
    let log = app.store.notifications(suite_id, 10).await.unwrap();
    assert_eq!(log.len(), 2);
    let hook_log = log.iter().find(|n| n.event == "regression").unwrap();
    assert_eq!(
        (hook_log.status.as_str(), hook_log.attempts, hook_log.last_error.as_deref()),
        ("delivered", 2, Some("HTTP 500 Internal Server Error"))
    );
    let status_log = log.iter().find(|n| n.event == "commit_status").unwrap();
    assert_eq!((status_log.status.as_str(), status_log.attempts), ("delivered", 1));
    let page = launcher.get("/suites/notify-bench").await.text;
    assert!(
        page.contains("delivery-delivered") && page.contains("HTTP 500 Internal Server Error"),
        "the suite page shows the delivery log"
    );
}
