//! Importing results measured elsewhere: the CLI and the API store the verdict the CLI judges give on
//! the same data (`arbiter compare`, `arbiter gate`), say that Arbiter did not run them, and refuse bad
//! input by name without storing anything.

use crate::common;

use common::test_app::TestApp;
use serde_json::{json, Value};
use std::process::Command;
use store::people::Role;

const ROWS: &str = "../judge/tests/data/zephyr_stage_rows_subprocess_runner.csv";
const FAIL_CSV: &str = "../judge/tests/data/warp/compare_fail.csv";
// Three same-code controls: with two, the +27 % map stage is undecided at a 1 % family-wise error rate.
const TRIALS: [&str; 10] = [
    "--control",
    "20261129-072203-da99fe05",
    "--control",
    "20261129-072217-adb9e3d8",
    "--control",
    "20261129-072231-4eb27101",
    "--treatment",
    "heavier=20261129-072244-a8070574",
    "--worker-ram",
    "64MiB",
];

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(common::BIN).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[tokio::test]
async fn cli_and_api_imports_store_the_verdicts_compare_and_gate_give() {
    let app = TestApp::builder().start().await;
    let data = app.state.data_dir.to_string_lossy().to_string();
    // What `arbiter compare` says of these trials: +27 % in one stage from three controls and one
    // treatment trial, uncalibrated, is undecided (method 3 borrows no spread): exit 3.
    let (code, stdout, stderr) = run(&[&["compare", "--rows", ROWS, "--format", "json"][..], &TRIALS].concat());
    assert_eq!(code, Some(3), "{stderr}");
    let compared: Value = serde_json::from_str(&stdout).unwrap();

    // The CLI import stores exactly that report, with the trials' rows.
    let (code, stdout, stderr) =
        run(&[&["import", "pipeline", "--data-dir", &data, "--title", "Heavier", "--rows", ROWS, "--treatment-ref", "heavy"][..], &TRIALS]
            .concat());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.starts_with("imported experiment 1: inconclusive"), "{stdout}");
    let viewer = app.signed_in(Role::Viewer).await;
    let e = viewer.get("/api/v1/experiments/1").await.json();
    assert_eq!(e["report"], compared, "the stored report is compare's");
    assert_eq!(e["trials"].as_array().unwrap().len(), 4);
    let rows = app.store.stage_rows(e["trials"][3]["id"].as_i64().unwrap()).await.unwrap();
    assert!(!rows.is_empty() && rows.iter().all(|r| r.execution_id == "20261129-072244-a8070574"), "the treatment trial keeps its rows");
    assert!(viewer.get("/experiments/1").await.text.contains("Arbiter did not run this experiment"));

    // The API import of the same rows gives the same report.
    let (launcher, _) = app.with_token(Role::Launcher).await;
    let body = json!({"kind": "pipeline", "title": "Heavier (API)", "rows": std::fs::read_to_string(ROWS).unwrap(),
        "control": ["20261129-072203-da99fe05", "20261129-072217-adb9e3d8", "20261129-072231-4eb27101"], "treatment": ["heavier=20261129-072244-a8070574"],
        "worker_ram": "64MiB"});
    let r = launcher.post_json("/api/v1/imports", body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["verdict"], "inconclusive");
    let id = r.json()["id"].as_i64().unwrap();
    assert_eq!(viewer.get(&format!("/api/v1/experiments/{id}")).await.json()["report"], compared);

    // Warp: the API import's gate is `arbiter gate`'s on the same file.
    let (code, stdout, _) = run(&["gate", "--label", &format!("put-4KiB/sync-on={FAIL_CSV}"), "--format", "json"]);
    assert_eq!(code, Some(1));
    let gated: Value = serde_json::from_str(&stdout).unwrap();
    let body = json!({"kind": "warp", "title": "Write path", "treatment_ref": "slow",
        "compare_csv": [{"label": "put-4KiB/sync-on", "text": std::fs::read_to_string(FAIL_CSV).unwrap()}]});
    let r = launcher.post_json("/api/v1/imports", body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["id"].as_i64().unwrap();
    let e = viewer.get(&format!("/api/v1/experiments/{id}")).await.json();
    assert_eq!(e["verdict"], "FAIL");
    assert_eq!(e["report"]["gate"]["rows"], gated["report"]["rows"], "the same rows and verdicts as arbiter gate");
    let md = viewer.get(&format!("/experiments/{id}/export/gate.md")).await;
    assert!(md.text.contains("imported through the API"), "{}", md.text);

    // A result measured earlier is dated then: its history entry and its trend point, not the import's time.
    let suite = json!({"name": "s3", "kind": "warp", "repository": "/srv/repo", "command": ["run"], "warp": {}});
    app.store.upsert_suite("s3", judge::ExperimentKind::Warp, &suite, "test", None).await.unwrap();
    let body = json!({"kind": "warp", "title": "Last night", "suite": "s3", "measured_at": "2026-11-30T03:00:00Z",
        "compare_csv": [{"label": "put-4KiB/sync-on", "text": std::fs::read_to_string(FAIL_CSV).unwrap()}]});
    let r = launcher.post_json("/api/v1/imports", body.clone()).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["id"].as_i64().unwrap();
    let at = 1_795_996_800_000 + 3 * 3_600_000;
    assert_eq!(app.store.experiment_summary(id).await.unwrap().created_at, at);
    let suite_id = app.store.suite_by_name("s3").await.unwrap().id;
    let points = app
        .store
        .trend(&store::trends::TrendQuery {
            suite_id,
            metric: "reqps".into(),
            items: vec!["put-4KiB/sync-on".into()],
            since: None,
            until: None,
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(points.iter().map(|p| (p.experiment_id, p.at)).collect::<Vec<_>>(), vec![(id, at)]);
    let mut future = body;
    future["measured_at"] = json!("2999-01-01");
    let r = launcher.post_json("/api/v1/imports", future).await;
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().contains("is in the future"), "{}", r.text);
}

#[tokio::test]
async fn bad_imports_are_refused_by_name_and_store_nothing() {
    let app = TestApp::builder().start().await;
    let (launcher, _) = app.with_token(Role::Launcher).await;
    let rows = std::fs::read_to_string(ROWS).unwrap();
    for (body, says) in [
        (json!({"kind": "pipeline", "title": "x", "control": ["a"], "treatment": ["b"]}), "rows:"),
        (json!({"kind": "pipeline", "title": "x", "rows": rows, "control": ["nope"], "treatment": ["20261129-072244-a8070574"]}), "nope"),
        (json!({"kind": "pipeline", "title": "", "rows": rows}), "title:"),
        (json!({"kind": "warp", "title": "x", "compare_csv": [{"label": "a|b", "text": "x"}]}), "compare_csv[0].label"),
        (json!({"kind": "warp", "title": "x", "compare_csv": [{"label": "a", "text": "not,a,compare,csv\n1,2,3,4\n"}]}), "compare_csv[0]"),
        (json!({"kind": "warp", "title": "x", "treatment_sha": "zz", "compare_csv": []}), "treatment_sha"),
    ] {
        let r = launcher.post_json("/api/v1/imports", body).await;
        assert_eq!(r.status, 400, "{}", r.text);
        assert!(r.json()["error"].as_str().unwrap().contains(says), "{} should name {says}", r.text);
    }
    let page = app.store.list_experiments(&store::experiments::HistoryQuery { limit: 10, ..Default::default() }).await.unwrap();
    assert!(page.experiments.is_empty(), "nothing was stored");
    let viewer = app.signed_in(Role::Viewer).await;
    assert_eq!(viewer.post_json("/api/v1/imports", json!({"kind": "warp", "title": "x"})).await.status, 403);
    // The CLI names the bad flag.
    let data = app.state.data_dir.to_string_lossy().to_string();
    let (code, _, stderr) =
        run(&[&["import", "pipeline", "--data-dir", &data, "--title", "x", "--rows", ROWS, "--control-sha", "xyz"][..], &TRIALS].concat());
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--control-sha"), "{stderr}");
}

#[tokio::test]
async fn executions_already_in_a_finelog_server_import_like_their_row_files() {
    let finelog = common::finelog::FinelogServer::start(Some(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../judge/tests/data/zephyr_stage_rows_subprocess_runner.json"
    )));
    let app = TestApp::builder().dispatcher(Some(&finelog.url)).start().await;
    let data = app.state.data_dir.to_string_lossy().to_string();
    let (_, from_files, _) = run(&[&["compare", "--rows", ROWS, "--format", "json"][..], &TRIALS].concat());
    let (code, from_finelog, stderr) = run(&[&["compare", "--finelog-url", &finelog.url, "--format", "json"][..], &TRIALS].concat());
    assert_eq!(code, Some(3), "{stderr}");
    let expected: Value = serde_json::from_str(&from_files).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&from_finelog).unwrap(), expected, "compare reads the same rows from finelog");

    let (code, stdout, stderr) = run(&[
        &["import", "pipeline", "--data-dir", &data, "--title", "From finelog", "--finelog-url", &finelog.url][..],
        &TRIALS,
    ]
    .concat());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("inconclusive"), "{stdout}");
    let viewer = app.signed_in(Role::Viewer).await;
    assert_eq!(viewer.get("/api/v1/experiments/1").await.json()["report"], expected);

    let (launcher, _) = app.with_token(Role::Launcher).await;
    let r = launcher
        .post_json(
            "/api/v1/imports",
            json!({"kind": "pipeline", "title": "From finelog (API)", "finelog": true, "worker_ram": "64MiB",
                   "control": ["20261129-072203-da99fe05", "20261129-072217-adb9e3d8", "20261129-072231-4eb27101"], "treatment": ["heavier=20261129-072244-a8070574"]}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["id"].as_i64().unwrap();
    assert_eq!(viewer.get(&format!("/api/v1/experiments/{id}")).await.json()["report"], expected);
}

#[tokio::test]
async fn the_drivers_round_files_gate_and_import_like_its_own_compare_csv() {
    let app = TestApp::builder().start().await;
    let data = app.state.data_dir.to_string_lossy().to_string();
    let w = "../judge/tests/data/warp";
    let rounds = format!("put-4KiB/sync-on={w}/driver_base_round_results.csv,{w}/driver_cand_round_results.csv");
    let (code_r, from_rounds, err) = run(&["gate", "--rounds", &rounds, "--format", "json"]);
    let (code_c, from_compare, _) =
        run(&["gate", "--label", &format!("put-4KiB/sync-on={w}/driver_cand_baseline_compare.csv"), "--format", "json"]);
    assert_eq!(code_r, code_c, "{err}");
    let (r, c): (Value, Value) = (serde_json::from_str(&from_rounds).unwrap(), serde_json::from_str(&from_compare).unwrap());
    assert_eq!(r["report"], c["report"], "rounds → medians → compare rows as the driver computes them");
    let (code, stdout, stderr) = run(&["import", "warp", "--data-dir", &data, "--title", "From rounds", "--rounds", &rounds]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains(&format!("imported experiment 1: {}", c["report"]["verdict"].as_str().unwrap())), "{stdout}");
    let (launcher, _) = app.with_token(Role::Launcher).await;
    let body = json!({"kind": "warp", "title": "From rounds (API)", "rounds": [{"label": "put-4KiB/sync-on",
        "baseline": std::fs::read_to_string(format!("{w}/driver_base_round_results.csv")).unwrap(),
        "candidate": std::fs::read_to_string(format!("{w}/driver_cand_round_results.csv")).unwrap()}]});
    let resp = launcher.post_json("/api/v1/imports", body).await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    let id = resp.json()["id"].as_i64().unwrap();
    let viewer = app.signed_in(Role::Viewer).await;
    assert_eq!(viewer.get(&format!("/api/v1/experiments/{id}")).await.json()["report"]["gate"], c["report"]);
    let (code, _, stderr) = run(&["gate", "--rounds", "no-comma=a.csv"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("expected NAME=BASELINE_ROUNDS.csv,CANDIDATE_ROUNDS.csv"), "{stderr}");
}
