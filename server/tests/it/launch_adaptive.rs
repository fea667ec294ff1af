//! Adaptive trials (`trials = "auto"`) for real: the stage benchmark's branches in worktrees, a real
//! finelog, the dispatcher running one pair at a time, and the engine adding pairs while the sequential
//! design leaves the verdict undecided (`engine::adaptive`).

use crate::common;

use common::finelog::FinelogServer;
use serde_json::{json, Value};

/// Measured trials that succeeded (the warm-up, run first, counts toward no budget).
fn succeeded(e: &Value) -> usize {
    e["trials"].as_array().unwrap().iter().filter(|t| t["state"] == "succeeded" && t["role"] == "measured").count()
}

#[tokio::test]
async fn measured_auto_trials_add_pairs_until_the_verdict_is_decided_or_the_budget_is_spent() {
    let _measuring = common::measuring().await;
    let tmp = tempfile::tempdir().unwrap();
    let finelog = FinelogServer::start(None);
    let (app, launcher) = crate::launch_run::app(tmp.path(), &finelog).await;
    let launch = |head: &str, max: u32| json!({"suite": "stage-bench", "head": head, "base": "main", "trials": "auto", "max_trials": max});

    // Three times the CPU: a regression the design decides after a few pairs, well inside the budget.
    let r = launcher.post_json("/api/v1/experiments", launch("heavier", 10)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["id"].as_i64().unwrap();
    let e = launcher.wait_until_ended(id, 400).await;
    assert_eq!((e["status"].as_str(), e["verdict"].as_str()), (Some("judged"), Some("regression")), "{e}");
    let seq = &e["report"]["sequential"];
    let used = seq["pairs_used"].as_u64().unwrap();
    assert_eq!(seq["stopped"], true, "{seq}");
    assert!((2..10).contains(&used), "stopped before the budget: {seq}");
    // One pair at a time on this host: no pair ran beyond the look it stopped at; the warm-up ran first.
    assert_eq!(succeeded(&e), 2 * used as usize, "{e}");
    assert_eq!(e["trials"][0]["role"], "warm_up", "{e}");
    assert_eq!(seq["pairs_given"].as_u64(), Some(used), "{seq}");
    let md = launcher.get(&format!("/experiments/{id}/export/report.md")).await.text;
    assert!(md.contains("(sequential)") && md.contains(&format!("Stopped: {used} of {used} pairs used.")), "{md}");
    // …and says when and why it stopped under its heading, as the PR comment does.
    assert!(md.contains(&format!("**Stopped after {used} of at most 10 pairs:** a regression is decided after {used} pairs")), "{md}");
    // Every look was kept for the page's live chart, forward only: the last is the one it stopped at.
    let look = app.store.look(id).await.unwrap().expect("a look was kept");
    assert_eq!(look.0, used as i64, "{}", look.1["sequential"]);
    // The judged page draws each CPU metric's course, pair by pair, from the stored report.
    let chart = launcher.get(&format!("/experiments/{id}/charts/cpu-course.svg")).await;
    assert_eq!(chart.status, 200, "{}", chart.text);
    assert!(chart.text.contains("CPU change pair by pair") && chart.text.contains(&format!("after {used} pairs")), "{}", chart.text);
    eprintln!("auto: heavier (×3 CPU) decided {} after {used} pairs", e["verdict"]);

    // The same code, a budget of 3: it stops there (or sooner, decided equivalent), never beyond.
    let r = launcher.post_json("/api/v1/experiments", launch("main", 3)).await;
    let id = r.json()["id"].as_i64().unwrap();
    let e = launcher.wait_until_ended(id, 400).await;
    assert_eq!(e["status"], "judged", "{e}");
    assert_ne!(e["verdict"], "regression", "{e}");
    let seq = &e["report"]["sequential"];
    let used = seq["pairs_used"].as_u64().unwrap();
    assert!(used <= 3 && succeeded(&e) <= 6, "{e}");
    if seq["stopped"] == false {
        assert_eq!((used, e["verdict"].as_str()), (3, Some("inconclusive")), "{e}");
        assert!(seq["stop_reason"].as_str().unwrap().starts_with("the budget (3 pairs) is spent"), "{seq}");
    }
    let reasons = e["reasons"].to_string();
    assert!(!reasons.contains("was lost"), "no trial counts as lost: {reasons}");
    eprintln!("auto: main vs main (budget 3) {} after {used} pairs: {}", e["verdict"], seq["stop_reason"]);
}
