//! `POST /api/v1/experiments` with `dry_run`: refs resolved in a real git repository, the fingerprint
//! and data locality checked, the trial order and every argv planned; bad requests refused with nothing
//! stored.

use crate::common;

use common::git::git;

use common::test_app::{Client, TestApp};
use serde_json::{json, Value};
use std::path::Path;
use store::people::Role;

/// main: base → later; feature (from base): faster. Returns (base, later, faster) SHAs.
fn repository(dir: &Path) -> (String, String, String) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("bench.py"), "print('v1')\n").unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "base"]);
    let base = git(dir, &["rev-parse", "HEAD"]);
    git(dir, &["checkout", "-q", "-b", "feature/faster"]);
    std::fs::write(dir.join("bench.py"), "print('v2')\n").unwrap();
    git(dir, &["commit", "-q", "-am", "faster"]);
    let faster = git(dir, &["rev-parse", "HEAD"]);
    git(dir, &["checkout", "-q", "main"]);
    std::fs::write(dir.join("README"), "later\n").unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "later"]);
    let later = git(dir, &["rev-parse", "HEAD"]);
    (base, later, faster)
}

fn suite_toml(repository: &str) -> String {
    format!(
        r#"
name = "dedup"
kind = "pipeline"
repository = "{repository}"
command = ["python3", "{{worktree}}/bench.py", "--sample", "{{sample}}", "--run-tag", "{{run_tag}}", "--workers", "{{workers}}", "--region", "{{region}}"]
overrides = ["POOL_SIZE", "DEDUP_*"]
[resources]
cpu = 1
ram = "2GiB"
[defaults]
trials = 3
[fingerprint.sample]
type = "string"
default = "gs://eu-bucket/sample"
[fingerprint.workers]
type = "integer"
allowed = [1, 2, 4]
default = 2
[[locality]]
prefix = "gs://eu-bucket/"
region = "europe-west4"
"#
    )
}

async fn app_with_suite(repository: &str) -> (TestApp, Client) {
    let app = TestApp::builder().start().await;
    let dir = app.dir.path().join("suites");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("dedup.toml"), suite_toml(repository)).unwrap();
    engine::sync_suites(&app.store, &suite::load_dir(&dir).unwrap()).await.unwrap();
    let launcher = app.signed_in(Role::Launcher).await;
    (app, launcher)
}

#[tokio::test]
async fn a_dry_run_resolves_refs_and_plans_every_trial() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let (base, _later, faster) = repository(&repo);
    let (app, launcher) = app_with_suite(&repo.to_string_lossy()).await;

    let r = launcher.post_json("/api/v1/experiments", json!({"suite": "dedup", "head": "feature/faster", "dry_run": true})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let plan = &r.json()["plan"];
    assert_eq!(plan["arms"][0]["sha"], base.as_str(), "control = merge-base of main and the head, not main's tip");
    assert_eq!(plan["arms"][0]["ref"], "merge-base(main, feature/faster)");
    assert_eq!(plan["arms"][1]["sha"], faster.as_str());
    assert_eq!(plan["region"], "europe-west4");
    let trials = plan["trials"].as_array().unwrap();
    // One unmeasured warm-up first (a local pipeline suite's default), then the pairs.
    assert_eq!(plan["warm_up"], 1);
    assert_eq!((trials[0]["warm_up"].as_bool(), trials[0]["seq"].as_u64()), (Some(true), Some(0)), "{trials:?}");
    assert!(trials[1..].iter().all(|t| t["warm_up"].is_null()), "{trials:?}");
    // Balanced: every pair runs each arm once; the block of the first two pairs has one control first
    // and one treatment first.
    let arms: Vec<&str> = trials[1..].iter().map(|t| t["arm"].as_str().unwrap()).collect();
    assert!(arms.chunks(2).all(|p| p.contains(&"control") && p.contains(&"treatment")), "{arms:?}");
    assert_ne!(arms[0], arms[2], "one control-first and one treatment-first pair: {arms:?}");
    assert!(plan["order_seed"].as_u64().is_some(), "the seed is stored with the plan");
    let tags: std::collections::HashSet<&str> = trials.iter().map(|t| t["run_tag"].as_str().unwrap()).collect();
    assert_eq!(tags.len(), 7, "a fresh run tag per trial");
    let treatment = trials[1..].iter().find(|t| t["arm"] == "treatment").unwrap();
    let argv: Vec<&str> = treatment["argv"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(argv[0], "python3");
    assert!(argv[1].ends_with("worktrees/dry-treatment/bench.py"), "{argv:?}");
    let tag = format!("arb-dry-{}", treatment["seq"]);
    assert_eq!(&argv[2..], ["--sample", "gs://eu-bucket/sample", "--run-tag", &tag, "--workers", "2", "--region", "europe-west4"]);
    assert_eq!(plan["max_minutes"], 7 * 60);
    // Uncalibrated: the power the plan has at the default spread, and the trials the margin needs.
    let d = &plan["detectable"];
    let expected =
        judge::pipeline::power::detectable(3, 1, &judge::pipeline::MethodConfig { paired: true, ..Default::default() }, None, None);
    assert_eq!(d["mde_pct"].as_f64(), expected.mde_pct, "{d}");
    assert_eq!((d["spread_pct"].as_f64(), d["target_pct"].as_f64(), d["family"].as_u64()), (Some(5.0), Some(2.0), Some(10)));
    assert!(d["spread_source"].as_str().unwrap().contains("uncalibrated"), "{d}");
    // `arbiter launch --dry-run` prints the same plan for a person.
    let text = server::client::plan_text(&serde_json::from_value(plan.clone()).unwrap());
    assert!(text.starts_with("plan: dedup: ") && text.contains(&format!("control      control at {}", &base[..10])), "{text}");
    assert!(
        text.contains("7 trials (3 per arm, interleaved order, after 1 unmeasured warm-up trial)") && text.contains("Can detect ±"),
        "{text}"
    );
    assert!(text.contains("needs more than 100 trials an arm") || text.contains("needs about"), "{text}");
    // Sized for a chosen change; and with a calibrated profile of the fingerprint, its spread.
    let r = launcher
        .post_json("/api/v1/experiments", json!({"suite": "dedup", "head": "feature/faster", "dry_run": true, "detect_pct": 30}))
        .await;
    let sized = &r.json()["plan"]["detectable"];
    assert_eq!(sized["target_pct"].as_f64(), Some(30.0));
    assert!(sized["trials_for_target"].as_u64().is_some_and(|t| t < 40), "{sized}");
    let bad = launcher
        .post_json("/api/v1/experiments", json!({"suite": "dedup", "head": "feature/faster", "dry_run": true, "detect_pct": -1}))
        .await;
    assert_eq!(bad.status, 400);
    assert!(bad.text.contains("detect_pct: -1"), "{}", bad.text);
    // The third answer's X: 3 pairs resolve none under the cap; set for the launch, the plan carries it.
    let x = &d["no_regression"];
    assert!(x["pct"].is_null() && x["from"].as_str().unwrap().contains("3 pairs resolve only"), "{x}");
    let r = launcher
        .post_json("/api/v1/experiments", json!({"suite": "dedup", "head": "feature/faster", "dry_run": true, "no_regression_pct": 8}))
        .await;
    let x = &r.json()["plan"]["detectable"]["no_regression"];
    assert_eq!((x["pct"].as_f64(), x["from"].as_str()), (Some(8.0), Some("set before the run")), "{x}");
    for (x, says) in [(1.0, "no_regression_pct: 1: below the CPU margin of 2 %"), (40.0, "no_regression_pct: 40: above the cap of 10 %")] {
        let bad = launcher
            .post_json("/api/v1/experiments", json!({"suite": "dedup", "head": "feature/faster", "dry_run": true, "no_regression_pct": x}))
            .await;
        assert_eq!(bad.status, 400);
        assert!(bad.text.contains(says), "{}", bad.text);
    }
    let rows =
        judge::pipeline::rows::parse_rows("rows.csv", include_str!("../../../judge/tests/data/zephyr_stage_rows_subprocess_runner.csv"))
            .unwrap();
    let same: Vec<judge::pipeline::aggregate::TrialSpec> =
        ["20261129-072203-da99fe05", "20261129-072217-adb9e3d8", "20261129-072231-4eb27101"]
            .iter()
            .map(|id| judge::pipeline::aggregate::TrialSpec { execution_ids: vec![id.to_string()], pair: None, position: None })
            .collect();
    let profile = judge::pipeline::calibrate(&rows, &same, None).unwrap();
    let fp: suite::definition::Fingerprint = serde_json::from_value(plan["fingerprint"].clone()).unwrap();
    let suite = app.store.suite_by_name("dedup").await.unwrap();
    let hash = engine::launch::submit::fingerprint_hash(&fp);
    app.store.upsert_noise_profile(suite.id, &hash, &plan["fingerprint"], &serde_json::to_value(&profile).unwrap(), 3).await.unwrap();
    let r = launcher.post_json("/api/v1/experiments", json!({"suite": "dedup", "head": "feature/faster", "dry_run": true})).await;
    let calibrated = &r.json()["plan"]["detectable"];
    assert!(calibrated["spread_source"].as_str().unwrap().contains("noise profile"), "{calibrated}");
    let method = judge::pipeline::MethodConfig { paired: true, ..Default::default() };
    let want = judge::pipeline::power::detectable(3, 1, &method, Some(&profile), None);
    assert_eq!(calibrated["mde_pct"].as_f64(), want.mde_pct, "{calibrated}");
    assert_eq!(calibrated["family"].as_u64(), Some(want.family as u64));

    // An explicit base, an extra configuration-only arm, ABBA order.
    let r = launcher
        .post_json(
            "/api/v1/experiments",
            json!({"suite": "dedup", "head": "feature/faster", "base": "main", "order": "abba", "trials": 2,
                   "arms": [{"name": "big-pool", "ref": "feature/faster", "config": {"overrides": {"POOL_SIZE": "64"}}}],
                   "fingerprint": {"workers": 4}, "dry_run": true}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let plan = &r.json()["plan"];
    assert_eq!(plan["arms"].as_array().unwrap().len(), 3);
    let arms: Vec<&str> =
        plan["trials"].as_array().unwrap().iter().filter(|t| t["warm_up"].is_null()).map(|t| t["arm"].as_str().unwrap()).collect();
    assert_eq!(arms, ["control", "treatment", "big-pool", "big-pool", "treatment", "control"]);
    assert_eq!(plan["fingerprint"]["workers"], 4);

    assert!(
        app.store
            .list_experiments(&store::experiments::HistoryQuery { limit: 50, ..Default::default() })
            .await
            .unwrap()
            .experiments
            .is_empty(),
        "a dry run stores nothing"
    );
    // Without dry_run the experiment and its planned trials are stored (this app runs no dispatcher).
    let r = launcher.post_json("/api/v1/experiments", json!({"suite": "dedup", "head": "feature/faster"})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["id"].as_i64().unwrap();
    assert_eq!(r.json()["url"], format!("{}/experiments/{id}", app.base));
    let trials = app.store.trials(id).await.unwrap();
    assert_eq!(trials.len(), 7, "a warm-up and three pairs");
    assert!(trials.iter().all(|t| t.state == judge::TrialState::Queued));
    assert_eq!((trials[0].role, trials[0].repeat_index), (judge::TrialRole::WarmUp, -1), "{:?}", trials[0]);
    assert!(trials[1..].iter().all(|t| t.role == judge::TrialRole::Measured && t.repeat_index >= 0));
    let arms = app.store.arms(id).await.unwrap();
    assert_eq!((arms[0].3.as_deref(), arms[1].3.as_deref()), (Some(base.as_str()), Some(faster.as_str())));
    assert!(app.store.audit_log(5).await.unwrap().iter().any(|e| e.action == "experiment.launch"));

    // A re-run launches the same code again: each arm at the SHA it ran, the same plan.
    let r = launcher.post_json(&format!("/api/v1/experiments/{id}/rerun"), json!({})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let again = r.json()["id"].as_i64().unwrap();
    assert_ne!(again, id);
    let arms_again = app.store.arms(again).await.unwrap();
    assert_eq!((arms_again[0].3.as_deref(), arms_again[1].3.as_deref()), (Some(base.as_str()), Some(faster.as_str())));
    assert_eq!(app.store.trials(again).await.unwrap().len(), 7);
    assert!(app.store.experiment_summary(again).await.unwrap().title.ends_with(&format!("(re-run of #{id})")));
    let imported = app.experiment("not launched", None).await;
    let r = launcher.post_json(&format!("/api/v1/experiments/{imported}/rerun"), json!({})).await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert!(r.text.contains("cannot be re-run"), "{}", r.text);
}

#[tokio::test]
async fn bad_launches_are_refused_clearly_and_nothing_is_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    repository(&repo);
    let (app, launcher) = app_with_suite(&repo.to_string_lossy()).await;
    // What an option smuggled in as a ref would create: it must never exist.
    let pwned = tmp.path().join("pwned");
    let cases: Vec<(Value, &str)> = vec![
        (json!({"suite": "nope", "head": "main"}), "there is no suite \"nope\""),
        (json!({"suite": "dedup", "head": "no-such-branch"}), "ref \"no-such-branch\" does not name a commit"),
        (json!({"suite": "dedup", "head": "main; rm -rf /"}), "is not a plain git ref"),
        (json!({"suite": "dedup", "head": format!("--upload-pack=touch {}", pwned.display())}), "is not a plain git ref"),
        (json!({"suite": "dedup", "head": "main", "base": format!("--upload-pack=touch {}", pwned.display())}), "is not a plain git ref"),
        (
            json!({"suite": "dedup", "head": "main", "arms": [{"name": "c", "ref": format!("--output={}", pwned.display())}]}),
            "is not a plain git ref",
        ),
        (json!({"suite": "dedup", "head": "main", "fingerprint": {"workers": 3}}), "3 is not allowed"),
        (json!({"suite": "dedup", "head": "main", "fingerprint": {"sample": "gs://us-bucket/sample"}}), "no data locality is known"),
        (json!({"suite": "dedup", "head": "main", "fingerprint": {"sample": "gs://eu-bucket/$(id)"}}), "characters"),
        (json!({"suite": "dedup", "head": "main", "arms": [{"name": "x y", "ref": "main"}]}), "arms[0].name: \"x y\": use 1–40"),
        (json!({"suite": "dedup", "head": "main", "arms": [{"name": "control", "ref": "main"}]}), "used twice"),
        (
            json!({"suite": "dedup", "head": "main", "arms": [{"name": "c", "ref": "main", "config": {"overrides": {"workers": "9"}}}]}),
            "part of the fingerprint",
        ),
        (
            json!({"suite": "dedup", "head": "main", "arms": [{"name": "c", "ref": "main", "config": {"overrides": {"pool": "9"}}}]}),
            "UPPER_CASE",
        ),
        (
            json!({"suite": "dedup", "head": "main", "arms": [{"name": "c", "ref": "main", "config": {"overrides": {"LD_PRELOAD": "/tmp/x.so"}}}]}),
            "reserved",
        ),
        (
            json!({"suite": "dedup", "head": "main", "arms": [{"name": "c", "ref": "main", "config": {"overrides": {"PATH": "/tmp"}}}]}),
            "reserved",
        ),
        (
            json!({"suite": "dedup", "head": "main", "arms": [{"name": "c", "ref": "main", "config": {"overrides": {"HTTPS_PROXY": "http://x"}}}]}),
            "reserved",
        ),
        (
            json!({"suite": "dedup", "head": "main", "arms": [{"name": "c", "ref": "main", "config": {"overrides": {"OPENSSL_CONF": "/tmp/x"}}}]}),
            "reserved",
        ),
        (
            json!({"suite": "dedup", "head": "main",
                   "arms": (0..17).map(|i| json!({"name": format!("a{i}"), "ref": "main"})).collect::<Vec<_>>()}),
            "17 extra arms; a launch names at most 16",
        ),
        (
            json!({"suite": "dedup", "head": "main", "arms": [{"name": "c", "ref": "main", "config": {"overrides": {"CACHE_SIZE": "9"}}}]}),
            "not one of the settings this suite lets an arm change: POOL_SIZE, DEDUP_*",
        ),
        (
            json!({"suite": "dedup", "head": "main", "arms": [{"name": "c", "ref": "main", "config": {"patch": "--- a/x\n+++ b/x\n"}}]}),
            "takes one only with allow_patches = true",
        ),
        (
            json!({"suite": "dedup", "head": "main", "arms": [{"name": "c", "ref": "main", "config": {"commit": "main"}}]}),
            "takes one only with allow_patches = true",
        ),
        (json!({"suite": "dedup", "head": "main", "title": "a\u{7}b"}), "title"),
        (json!({"suite": "dedup", "head": "main", "trials": 0}), "trials"),
        (json!({"suite": "dedup", "head": "main", "exemption": {"reason": "  "}}), "exemption.reason"),
        (json!({"suite": "dedup", "head": "main", "colour": "red"}), "colour"),
        (json!({"suite": "dedup", "head": "main", "warp": {"rounds": 2}}), "warp: only a warp suite takes matrix settings"),
        (json!({"suite": "dedup", "head": "main", "focus_bad_end_pct": 20}), "focus_bad_end_pct: give it with focus"),
        (
            json!({"suite": "dedup", "head": "main", "trials": "auto", "focus": "map", "focus_bad_end_pct": 0}),
            "focus_bad_end_pct: 0: the bad end's change is a percent above −100",
        ),
    ];
    for (body, needle) in cases {
        let mut body = body;
        body["dry_run"] = json!(true);
        let r = launcher.post_json("/api/v1/experiments", body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.text);
        let message = r.json()["error"].as_str().unwrap_or_default().to_string();
        assert!(message.contains(needle), "{needle:?} not in {message:?} (for {body})");
    }
    // A refused value is named by its field in the body as well (`wire::error::JsonError`), so each door
    // can say it its own way; the message is `field: problem`.
    for (body, field) in [
        (json!({"suite": "dedup", "head": "no-such-branch"}), "head"),
        (json!({"suite": "dedup", "head": "main", "fingerprint": {"workers": 3}}), "fingerprint.workers"),
        (json!({"suite": "dedup", "head": "main", "arms": [{"name": "c", "ref": "main"}, {"name": "x y", "ref": "main"}]}), "arms[1].name"),
        (json!({"suite": "dedup", "head": "main", "arms": [{"name": "c", "ref": "no-such-branch"}]}), "arms[0].ref"),
        (json!({"suite": "dedup", "head": "main", "trials": 0}), "trials"),
    ] {
        let mut body = body;
        body["dry_run"] = json!(true);
        let r = launcher.post_json("/api/v1/experiments", body.clone()).await;
        let refusal: wire::error::JsonError = serde_json::from_str(&r.text).unwrap();
        assert_eq!((r.status, refusal.field.as_deref()), (400, Some(field)), "{body}: {}", r.text);
        assert_eq!(refusal.error, format!("{field}: {}", refusal.problem.unwrap_or_default()), "{body}");
    }
    // An unknown ref is named against the suite's repository and what it holds, not a path on the server.
    let r = launcher.post_json("/api/v1/experiments", json!({"suite": "dedup", "head": "no-such-branch", "dry_run": true})).await;
    let message = r.json()["error"].as_str().unwrap_or_default().to_string();
    assert!(
        message.contains("in the suite's repository (its branches include ")
            && message.contains("feature/faster")
            && message.contains("main"),
        "{message}"
    );
    assert!(!message.contains(&*repo.to_string_lossy()), "no server path: {message}");
    assert!(!pwned.exists(), "no ref ever reached git as an option");
    assert!(app
        .store
        .list_experiments(&store::experiments::HistoryQuery { limit: 50, ..Default::default() })
        .await
        .unwrap()
        .experiments
        .is_empty());
}

#[tokio::test]
async fn a_clone_url_is_mirrored_into_the_data_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("upstream");
    let (_, later, _) = repository(&repo);
    let (app, launcher) = app_with_suite(&format!("file://{}", repo.display())).await;
    let r = launcher.post_json("/api/v1/experiments", json!({"suite": "dedup", "head": "main", "base": "main", "dry_run": true})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["plan"]["arms"][1]["sha"], later.as_str());
    assert!(app.state.data_dir.join("repos").read_dir().unwrap().count() == 1, "one mirror");
    // A new commit upstream is seen on the next launch (the mirror is fetched).
    std::fs::write(repo.join("README"), "newer\n").unwrap();
    git(&repo, &["commit", "-q", "-am", "newer"]);
    let newer = git(&repo, &["rev-parse", "HEAD"]);
    let r = launcher.post_json("/api/v1/experiments", json!({"suite": "dedup", "head": "main", "base": "main", "dry_run": true})).await;
    assert_eq!(r.json()["plan"]["arms"][1]["sha"], newer.as_str());
}

#[tokio::test]
async fn a_repository_git_cannot_fetch_is_a_bad_gateway_not_a_bad_request() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("upstream");
    repository(&repo);
    let (_app, launcher) = app_with_suite(&format!("file://{}", repo.display())).await;
    let ok = launcher.post_json("/api/v1/experiments", json!({"suite": "dedup", "head": "main", "base": "main", "dry_run": true})).await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    // A ref the repository lacks is the request's fault…
    let r = launcher.post_json("/api/v1/experiments", json!({"suite": "dedup", "head": "nope", "dry_run": true})).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("does not name a commit"), "{}", r.text);
    // …but when the upstream goes away the mirror's fetch fails: the request was fine, git was not.
    std::fs::remove_dir_all(&repo).unwrap();
    let r = launcher.post_json("/api/v1/experiments", json!({"suite": "dedup", "head": "main", "base": "main", "dry_run": true})).await;
    assert_eq!(r.status, 502, "{}", r.text);
    assert!(r.json()["error"].as_str().unwrap().starts_with("cannot fetch file://"), "{}", r.text);
    // So is a suite whose local repository is not a git repository.
    let (_other, launcher) = app_with_suite(&tmp.path().join("gone").to_string_lossy()).await;
    let r = launcher.post_json("/api/v1/experiments", json!({"suite": "dedup", "head": "main", "dry_run": true})).await;
    assert_eq!(r.status, 502, "{}", r.text);
    assert!(r.text.contains("is not a git repository"), "{}", r.text);
}

/// `trials = "auto"`: the plan holds the first look (two pairs) and the budget; the preview says the
/// expected and the most trials; what cannot be adaptive is refused with the field named.
#[tokio::test]
async fn an_auto_launch_plans_its_first_pairs_and_its_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    repository(&repo);
    let (_app, launcher) = app_with_suite(&repo.to_string_lossy()).await;
    let dry = |extra: Value| {
        let mut body = json!({"suite": "dedup", "head": "feature/faster", "dry_run": true});
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        body
    };
    let r = launcher.post_json("/api/v1/experiments", dry(json!({"trials": "auto", "max_trials": 12}))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let plan = &r.json()["plan"];
    assert_eq!(plan["trials"].as_array().unwrap().len(), 5, "the first look: two pairs, after one warm-up");
    assert_eq!(plan["trials_per_arm"], 2);
    let a = &plan["adaptive"];
    assert_eq!((a["max_trials"].as_u64(), a["step"].as_u64()), (Some(12), Some(1)), "{plan}");
    // Uncalibrated at the default spread, the margin needs more than the budget: it expects to spend it.
    let expected = a["expected_trials"].as_u64().unwrap();
    assert!((2..=12).contains(&expected), "{a}");
    assert_eq!(plan["max_minutes"], (2 * 12 + 1) * 60, "the worst case is the budget and the warm-up, every trial to its timeout");
    let text = server::client::plan_text(&serde_json::from_value(plan.clone()).unwrap());
    assert!(
        text.contains("adaptive: the first look after 2 trials an arm; a pair at a time while the verdict is undecided, at most 12 trials an arm"),
        "{text}"
    );
    assert_eq!(a["beyond_budget"], true, "{a}");
    // X is planned as the sequential design will use it: from the budget, not the first look's pairs.
    let x = &plan["detectable"]["no_regression"];
    // 12 pairs resolve 9.6 % at the default spread (each side one-sided at 1 %): twice that is above the
    // cap, so X is held to the cap of 10 %.
    assert_eq!(x["pct"].as_f64(), Some(10.0), "{x}");
    assert!(x["from"].as_str().unwrap().starts_with("the cap of 10 % (2 × the 9.6 % that 12 pairs resolve"), "{x}");
    assert!(text.contains("If nothing is detected, it can still pass on \"no regression ≥ 10 %\""), "{text}");
    assert!(
        text.contains("the fixed design needs more for the margin, so expect it to use the budget unless the change is clear"),
        "{text}"
    );
    // A number still plans exactly that many (after the warm-up).
    let r = launcher.post_json("/api/v1/experiments", dry(json!({"trials": 4}))).await;
    assert!(r.json()["plan"]["adaptive"].is_null() && r.json()["plan"]["trials"].as_array().unwrap().len() == 9, "{}", r.text);
    // ABBA may be adaptive: the first look's two pairs run C,T then T,C, and added pairs continue it.
    let r = launcher.post_json("/api/v1/experiments", dry(json!({"trials": "auto", "order": "abba"}))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let plan = r.json()["plan"].clone();
    let measured: Vec<&str> =
        plan["trials"].as_array().unwrap().iter().filter(|t| t["warm_up"].is_null()).map(|t| t["arm"].as_str().unwrap()).collect();
    assert_eq!(measured, ["control", "treatment", "treatment", "control"], "{}", r.text);
    for (body, says) in [
        (json!({"trials": "auto", "max_trials": 1}), "max_trials: 1"),
        (json!({"trials": "auto", "max_trials": 500}), "max_trials: 500"),
        (json!({"trials": 3, "max_trials": 8}), "max_trials: only with trials = \"auto\""),
        (json!({"trials": "auto", "order": "blocked"}), "order: \"blocked\""),
        (json!({"trials": "many"}), "trials"),
    ] {
        let r = launcher.post_json("/api/v1/experiments", dry(body.clone())).await;
        assert_eq!(r.status, 400, "{body}: {}", r.text);
        let error = r.json()["error"].as_str().unwrap_or_default().to_string();
        assert!(error.contains(says), "{body}: {error}");
    }
}
