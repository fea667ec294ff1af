//! Trends and suites through the real server: trend points are written with each verdict (replaced
//! when an experiment is judged again), a series splits by fingerprint, the page draws and links
//! them; admins save suites as TOML, checked like suite files.

use crate::common;

use common::test_app::{Body, TestApp};
use judge::ExperimentKind;
use serde_json::json;
use store::people::Role;
use store::trends::TrendQuery;

async fn suite(app: &TestApp, name: &str) -> i64 {
    let definition = json!({"name": name, "kind": "pipeline", "repository": "/srv/repo", "command": ["run", "{run_tag}"]});
    app.store.upsert_suite(name, ExperimentKind::Pipeline, &definition, "test", None).await.unwrap()
}

#[tokio::test]
async fn a_suites_judged_experiments_make_a_trend_split_by_fingerprint() {
    let app = TestApp::builder().start().await;
    let suite_id = suite(&app, "dedup").await;
    let mut ids = Vec::new();
    for (i, workers) in [2, 2, 4].into_iter().enumerate() {
        let mut new = store::testing::sample_experiment(ExperimentKind::Pipeline, &format!("run {i}"));
        new.suite_id = Some(suite_id);
        new.fingerprint = json!({"sample": "fineweb-1k", "workers": workers});
        ids.push(app.judged_pipeline_as(new).await);
    }
    app.judged_pipeline("no suite, no trend").await;
    // Judging again replaces the experiment's points.
    let (verdict, reasons, report) = app.store.latest_verdict(ids[0]).await.unwrap().unwrap();
    app.store.record_verdict(ids[0], verdict, &reasons, &report, None).await.unwrap();

    let query = |metric: &str, item: &str| TrendQuery {
        suite_id,
        metric: metric.into(),
        items: vec![item.into()],
        since: None,
        until: None,
        limit: 100,
    };
    let total = app.store.trend(&query("cpu-s", judge::trend::ALL_STAGES)).await.unwrap();
    assert_eq!(
        total.iter().map(|p| p.experiment_id).collect::<Vec<_>>(),
        ids,
        "one point per judged experiment of the suite, oldest first"
    );
    assert_eq!(total[0].fingerprint, total[1].fingerprint);
    assert_ne!(total[1].fingerprint, total[2].fingerprint);
    let report: judge::pipeline::report::PipelineReport = serde_json::from_value(report).unwrap();
    let expected = report.treatments[0].total.cpu_control;
    assert!(total.iter().all(|p| (p.value - expected).abs() < 1e-9), "the control's all-stages CPU: {total:?} vs {expected}");
    let choices = app.store.trend_choices(suite_id).await.unwrap();
    let stage = &report.treatments[0].stages[0].stage;
    assert!(
        choices.contains(&("cpu-s".to_string(), stage.clone())) && choices.contains(&("mem-peak-mib".to_string(), stage.clone())),
        "{choices:?}"
    );
    assert_eq!(app.store.trend(&TrendQuery { limit: 2, ..query("cpu-s", judge::trend::ALL_STAGES) }).await.unwrap().len(), 2);

    let viewer = app.signed_in(Role::Viewer).await;
    let page = viewer.get("/trends?suite=dedup&metric=cpu-s").await;
    assert_eq!(page.status, 200, "{}", page.text);
    for id in &ids {
        assert!(page.text.contains(&format!("<a href=\"/experiments/{id}\">")), "point {id} links to its experiment");
    }
    assert!(page.text.contains("2 series, 3 points") && page.text.contains("new fingerprint"), "{}", page.text);
    assert!(page.text.contains("sample=fineweb-1k, workers=4"));
    // Without a suite named, the page opens on one with something to chart, not the first by name.
    suite(&app, "aaa-nothing-yet").await;
    let default = viewer.get("/trends").await;
    assert!(default.text.contains("<option value=\"dedup\" selected"), "{}", default.text);
    assert!(default.text.contains("3 points"), "{}", default.text);
    let bad = viewer.get("/trends?suite=dedup&since=yesterday").await;
    assert!(bad.text.contains("is not a date of the form YYYY-MM-DD"), "{}", bad.text);
    let empty = viewer.get("/trends?suite=dedup&metric=cpu-s&since=2000-01-01&until=2000-01-02").await;
    assert!(empty.text.contains("no judged experiment has this metric yet"), "{}", empty.text);
}

async fn put(who: &common::test_app::Client, name: &str, toml: String) -> common::test_app::Reply {
    who.send(reqwest::Method::PUT, &format!("/api/v1/suites/{name}"), Some(Body::Json(json!({ "toml": toml })))).await
}

#[tokio::test]
async fn admins_save_suites_checked_like_files_and_launchers_only_read_them() {
    let app = TestApp::builder().start().await;
    let admin = app.signed_in(Role::Admin).await;
    let launcher = app.signed_in(Role::Launcher).await;
    let toml = "name = \"made-here\"\nkind = \"pipeline\"\nrepository = \"/srv/repo\"\ncommand = [\"run\", \"{run_tag}\"]\n\n[resources]\ncpu = 1\nram = \"1GiB\"\n";
    let create = |toml: String| admin.post_json("/api/v1/suites", json!({ "toml": toml }));
    let saved = create(toml.into()).await;
    assert_eq!(saved.status, 201, "{}", saved.text);
    let stored = app.store.suite_by_name("made-here").await.unwrap();
    assert_eq!((stored.source.as_str(), stored.definition["resources"]["ram"].as_str()), ("ui", Some("1GiB")));
    let again = create(toml.into()).await;
    assert_eq!(again.status, 409, "creating an existing suite is refused: {}", again.text);
    assert!(again.text.contains("exists; edit it on its page"));
    let relative = create(toml.replace("/srv/repo", "repo")).await;
    assert!(relative.status == 400 && relative.text.contains("give an absolute path or a clone URL"), "{}", relative.text);
    let broken = put(&admin, "made-here", toml.replace("cpu = 1", "cpu = \"one\"")).await;
    assert!(broken.status == 400 && broken.text.contains("line 7"), "{}", broken.text);
    let renamed = put(&admin, "made-here", toml.replace("made-here", "other")).await;
    assert!(renamed.status == 400 && renamed.text.contains("this edits suite"), "{}", renamed.text);
    let missing = put(&admin, "other", toml.replace("made-here", "other")).await;
    assert!(missing.status == 404 && missing.text.contains("create it with POST"), "{}", missing.text);
    let edited = put(&admin, "made-here", toml.replace("1GiB", "2GiB")).await;
    assert_eq!(edited.status, 200, "{}", edited.text);
    assert_eq!(app.store.suite_by_name("made-here").await.unwrap().definition["resources"]["ram"], "2GiB");
    assert_eq!(put(&launcher, "made-here", toml.into()).await.status, 403);
    assert_eq!(
        app.store.suite_by_name("made-here").await.unwrap().definition["resources"]["ram"],
        "2GiB",
        "a refused save changes nothing"
    );

    // A launcher reads it: the page shows the TOML (no editor) and the audit log has both saves.
    let page = launcher.get("/suites/made-here").await;
    assert_eq!(page.status, 200);
    assert!(page.text.contains("ram = &quot;2GiB&quot;") || page.text.contains("ram = \"2GiB\""), "{}", page.text);
    assert!(!page.text.contains("Save the suite"));
    assert!(admin.get("/suites/made-here").await.text.contains("Save the suite"));
    let audit = admin.get("/api/v1/audit").await.json();
    let actions: Vec<&str> = audit.as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    assert!(actions.contains(&"suite.create") && actions.contains(&"suite.edit"), "{audit}");
    // A file suite is not loaded over a suite saved here.
    let dir = app.dir.path().join("suites");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("x.toml"), toml.replace("/srv/repo", "/srv/from-file")).unwrap();
    engine::sync_suites(&app.store, &suite::load_dir(&dir).unwrap()).await.unwrap();
    assert_eq!(app.store.suite_by_name("made-here").await.unwrap().definition["repository"], "/srv/repo");
}

/// Point `i` of a stepped series: a judged experiment (the probe's report) whose control CPU is 10 %
/// higher from the ninth on, with ±0.5 % wobble; its control SHA is `i`.
async fn step_point(app: &TestApp, suite_id: i64, i: usize, judged: &(judge::Verdict, Vec<String>, serde_json::Value)) -> i64 {
    let (verdict, reasons, report) = judged;
    let mut new = store::testing::sample_experiment(ExperimentKind::Pipeline, &format!("nightly {i}"));
    new.suite_id = Some(suite_id);
    new.arms[0].sha = Some(format!("{i:040x}"));
    let id = app.store.insert_experiment(&new).await.unwrap();
    let mut r = report.clone();
    let factor = if i >= 8 { 1.10 } else { 1.0 } * (1.0 + 0.005 * ((i * 7 % 5) as f64 - 2.0) / 2.0);
    let cpu = &mut r["treatments"][0]["total"]["cpu_control"];
    *cpu = json!(cpu.as_f64().unwrap() * factor);
    app.store.record_verdict(id, *verdict, reasons, &r, None).await.unwrap();
    id
}

/// A real series: fourteen judged experiments of a suite whose control CPU steps up 10 % from the
/// ninth on (with ±0.5 % wobble). The page finds the change point, links the first experiment after it
/// and the commit range; a launcher marks it expected, which the page and the audit log then show.
#[tokio::test]
async fn a_step_in_a_stored_series_is_a_change_point_a_launcher_can_mark() {
    let app = TestApp::builder().start().await;
    let suite_id = suite(&app, "steps").await;
    let probe = app.judged_pipeline("probe").await;
    let judged = app.store.latest_verdict(probe).await.unwrap().unwrap();
    let mut ids = Vec::new();
    for i in 0..14 {
        ids.push(step_point(&app, suite_id, i, &judged).await);
    }
    let launcher = app.signed_in(Role::Launcher).await;
    let page = launcher.get("/trends?suite=steps&metric=cpu-s").await.text;
    assert!(page.contains("Change points") && page.contains(&format!("<a href=\"/experiments/{}\">#{}</a>", ids[8], ids[8])), "{page}");
    assert!(page.contains(&format!("{}..{}", &format!("{:040x}", 7)[..10], &format!("{:040x}", 8)[..10])), "the commit range: {page}");
    assert!(page.contains("change +10."), "the chart marks the change and its size");
    let fingerprint = app
        .store
        .trend(&TrendQuery {
            suite_id,
            metric: "cpu-s".into(),
            items: vec![judge::trend::ALL_STAGES.into()],
            since: None,
            until: None,
            limit: 1,
        })
        .await
        .unwrap()[0]
        .fingerprint
        .clone();
    let form = |state: &str, reason: &str| {
        json!({"suite": "steps", "metric": "cpu-s", "item": judge::trend::ALL_STAGES, "fingerprint": fingerprint,
               "experiment_id": ids[8], "state": state, "reason": reason})
    };
    let post = |body: serde_json::Value| launcher.post_json("/api/v1/change-points", body);
    assert_eq!(post(form("acknowledged", " ")).await.status, 400, "a reason is required");
    let marked = post(form("acknowledged", "bigger sample from this commit on")).await;
    assert_eq!(marked.status, 200, "{}", marked.text);
    let page = launcher.get("/trends?suite=steps&metric=cpu-s").await.text;
    assert!(page.contains("bigger sample from this commit on") && page.contains("· expected"), "{page}");
    let admin = app.signed_in(Role::Admin).await;
    let audit = admin.get("/api/v1/audit").await.json();
    assert!(
        audit
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["action"] == "changepoint.acknowledge" && e["reason"] == "bigger sample from this commit on"),
        "{audit}"
    );
}

/// The same stepped series, each experiment's end notified as the dispatcher does: the suite's webhook
/// is sent one `change_point` payload, naming the first experiment after the step, once the step is
/// detectable — not again for later experiments, and nothing before it.
#[tokio::test]
async fn a_new_change_point_is_posted_to_the_suites_webhook_once() {
    let app = TestApp::builder().start().await;
    let suite_id = suite(&app, "steps").await;
    let receiver = common::webhook::Receiver::start().await;
    let hook = receiver.url.clone();
    let spec: engine::notify::NotifySpec = serde_json::from_value(json!({"webhook": hook, "events": ["change_point"]})).unwrap();

    let probe = app.judged_pipeline("probe").await;
    let judged = app.store.latest_verdict(probe).await.unwrap().unwrap();
    let mut ids = Vec::new();
    let mut sent_after = Vec::new();
    for i in 0..14 {
        let id = step_point(&app, suite_id, i, &judged).await;
        ids.push(id);
        engine::notify::experiment_ended(&app.state.engine, id, Some(&spec), Some(suite_id), None).await;
        let rows = app.store.notifications(suite_id, 50).await.unwrap();
        sent_after.push(rows.len());
    }
    assert_eq!(sent_after[..8], [0; 8], "no change before the step");
    assert_eq!(*sent_after.last().unwrap(), 1, "one notification in all: {sent_after:?}");
    let first = sent_after.iter().position(|n| *n == 1).unwrap();
    assert!((10..=12).contains(&first), "found within a few points after the step (after point {first})");
    let rows = app.store.notifications(suite_id, 50).await.unwrap();
    assert_eq!((rows[0].event.as_str(), rows[0].experiment_id), ("change_point", ids[8]));
    let body = receiver.first().await;
    assert_eq!(body["event"], "change_point");
    assert_eq!(body["experiment"]["id"], ids[8]);
    let change = body["changes"].as_array().unwrap().iter().find(|c| c["metric"] == "cpu-s").expect("the CPU series changed");
    assert_eq!((change["last_before"].as_i64(), change["first_after"].as_i64()), (Some(ids[7]), Some(ids[8])));
    assert!((8.0..12.0).contains(&change["change_pct"].as_f64().unwrap()), "{change}");
    assert!(body["text"].as_str().unwrap().starts_with("*Change point* in suite steps from <"), "{body}");
}
