//! One experiment through every door: the JSON, the page (stage table, headline, reasons), the history, the forest plot
//! and the stage chart, report.md, the PR comment and the CLI all print the one estimate a claim rests on,
//! with the same rounding; the ratio of the means — a second statistic — appears only labelled as such.
//! The trials are built so the two statistics differ by tens of percent: the cheap pairs grow 3×, the
//! dear ones 4× (means: +266.7 %; the estimate from the logs: +246.4 %).

use crate::common;

use common::test_app::TestApp;
use judge::pipeline::report::{fmt_applied_margin, fmt_pct};
use serde_json::{json, Value};
use std::process::Command;
use store::people::Role;

const HEADER: &str = "arm,seq,execution_id,stage_name,status,ts,elapsed,items,bytes_processed,item_rate,byte_rate,total_shards,cpu_pct_avg,cpu_time_total,mem_bytes_avg,mem_peak_bytes_max";

/// Six control and six treatment trials of two stages: `map` grows 3–4× (a regression whatever the
/// statistic), `reduce` stays put.
fn rows() -> (String, Vec<String>, Vec<String>) {
    let control_cpu = [1.0, 2.0, 1.0, 2.0, 1.0, 2.0];
    let treatment_cpu = [3.0, 8.0, 3.0, 8.0, 3.0, 8.0];
    let mut csv = format!("{HEADER}\n");
    let (mut control, mut treatment) = (Vec::new(), Vec::new());
    for (arm, cpus, ids) in [("control", control_cpu, &mut control), ("heavier", treatment_cpu, &mut treatment)] {
        for (k, cpu) in cpus.iter().enumerate() {
            let id = format!(
                "20261207-1200{k}{}-{}",
                if arm == "control" { 0 } else { 5 },
                if arm == "control" { "c0ffee0" } else { "beef000" }.to_string() + &k.to_string()
            );
            for (seq, (stage, cpu, elapsed)) in
                [("map", *cpu, 4.0 + k as f64 * 0.1), ("reduce", 0.6 + k as f64 * 0.004, 2.0)].iter().enumerate()
            {
                csv.push_str(&format!(
                    "{arm}-r{k},{},{id},{stage},END,2026-12-07 12:00:{:02}.000000,{elapsed},1000,2000,250,500,2,50,{cpu},100000000,120000000\n",
                    seq + 1,
                    k * 10 + seq
                ));
            }
            ids.push(id);
        }
    }
    (csv, control, treatment)
}

fn occurrences(text: &str, what: &str) -> usize {
    text.matches(what).count()
}

#[tokio::test]
async fn every_door_prints_the_one_estimate_a_claim_rests_on() {
    let app = TestApp::builder().start().await;
    let (csv, control, treatment) = rows();
    let (launcher, _) = app.with_token(Role::Launcher).await;
    let body = json!({"kind": "pipeline", "title": "Heavier map", "rows": csv, "control": control,
        "treatment": treatment.iter().map(|t| format!("heavier={t}")).collect::<Vec<_>>(), "treatment_ref": "heavier"});
    let r = launcher.post_json("/api/v1/imports", body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["verdict"], "regression", "{}", r.text);
    let id = r.json()["id"].as_i64().unwrap();

    // JSON: the change is the test's estimate; the ratio of the means is kept apart.
    let e = launcher.get(&format!("/api/v1/experiments/{id}")).await.json();
    let map = e["report"]["treatments"][0]["stages"].as_array().unwrap().iter().find(|s| s["stage"] == "map").unwrap().clone();
    let estimate = map["cpu_test"]["estimate_pct"].as_f64().unwrap();
    assert_eq!(map["cpu_change_pct"].as_f64(), Some(estimate));
    let means = map["cpu_means_change_pct"].as_f64().unwrap();
    assert!((means - estimate).abs() > 10.0, "the two statistics differ here: {means} vs {estimate}");
    let (est, ratio) = (fmt_pct(estimate), fmt_pct(means));
    let test: judge::pipeline::family::MetricTest = serde_json::from_value(map["cpu_test"].clone()).unwrap();
    let margin = fmt_applied_margin(&test);
    let interval = format!("{} … {}", fmt_pct(test.interval_pct[0]), fmt_pct(test.interval_pct[1]));

    // The page: headline, reasons and stage table; the ratio only in the CPU-s cell's labelled tooltip.
    let viewer = app.signed_in(Role::Viewer).await;
    let page = viewer.get(&format!("/experiments/{id}")).await.text;
    assert!(page.contains(&format!("— {est} CPU in map")), "the headline says the estimate: {est}");
    assert!(occurrences(&page, &est) >= 3, "headline, reason and stage table: {est}");
    assert!(page.contains(&interval), "the stage table's interval: {interval}");
    assert_eq!(
        occurrences(&page, &ratio),
        occurrences(&page, &format!("their ratio, {ratio}, is not the tested change")),
        "{ratio} unlabelled"
    );

    // The history lists the size of the change, the same number.
    let history = viewer.get("/experiments").await.text;
    assert!(history.contains(&format!("{est} CPU in map")), "the history's Change column: {est}");
    assert_eq!(e["news"], format!("{est} CPU in map"), "the API's summary carries it too");
    // An experiment judged before the column existed gets it from its report when the store opens.
    store::on_pool!(&app.store, pool => sqlx::query("UPDATE experiments SET news = NULL").execute(pool).await.map(|_| ())).unwrap();
    assert!(!viewer.get("/experiments").await.text.contains(&format!("{est} CPU in map")));
    assert_eq!(app.store.fill_missing_news().await.unwrap(), 1);
    assert!(viewer.get("/experiments").await.text.contains(&format!("{est} CPU in map")), "filled in");
    assert_eq!(app.store.fill_missing_news().await.unwrap(), 0, "once");

    // The charts: the forest plot's row and the stage chart's bar say the same number and margin.
    let forest = viewer.get(&format!("/experiments/{id}/charts/cpu-forest.svg")).await.text;
    assert!(forest.contains(&format!("map · heavier: {est} (")), "{est} in the forest plot");
    assert!(
        forest.contains(&format!("margin {margin}"))
            || forest.contains(&format!("margin ±{}", judge::pipeline::report::fmt_margin(test.margin_pct)))
    );
    let bars = viewer.get(&format!("/experiments/{id}/charts/stage-cpu.svg")).await.text;
    assert!(bars.contains(&format!("{est} against control")), "{est} in the stage chart");
    for (door, text) in [("forest plot", &forest), ("stage chart", &bars)] {
        assert!(!text.contains(&ratio), "{door} prints the ratio of the means {ratio}");
    }

    // report.md and the PR comment: the same number, interval and margin.
    let md = viewer.get(&format!("/experiments/{id}/export/report.md")).await.text;
    let comment = launcher.post_json(&format!("/api/v1/experiments/{id}/comment"), json!(null)).await;
    assert_eq!(comment.status, 200, "{}", comment.text);
    let comment = comment.json();
    let text = comment["markdown"].as_str().unwrap().to_string();
    for (door, doc) in [("report.md", &md), ("PR comment", &text)] {
        assert!(doc.contains(&format!("**In short:** regression — {est} CPU in map")), "{door}: {doc}");
        assert!(doc.contains(&format!("**map** CPU {est} (")) && doc.contains(&interval) && doc.contains(&margin), "{door}: {doc}");
        assert!(doc.contains(&format!("| map | {est} [")), "{door}'s table: {doc}");
        assert!(!doc.contains(&ratio), "{door} prints the ratio of the means {ratio}");
    }

    // The CLI: `arbiter compare` on the same rows prints the same number.
    let dir = tempfile::tempdir().unwrap();
    let rows_file = dir.path().join("rows.csv");
    std::fs::write(&rows_file, &csv).unwrap();
    let mut args = vec!["compare".to_string(), "--rows".into(), rows_file.to_string_lossy().into()];
    for c in &control {
        args.extend(["--control".into(), c.clone()]);
    }
    for t in &treatment {
        args.extend(["--treatment".into(), format!("heavier={t}")]);
    }
    let out = Command::new(common::BIN).args(&args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "a regression: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&est) && !stdout.contains(&ratio), "the CLI: {stdout}");

    // The comment link: made once, reused, opening the page and its charts signed out.
    let share = comment["share_url"].as_str().expect("the launcher may share: a link").to_string();
    assert!(text.contains(&format!("]({share})")), "the comment links its share link: {text}");
    let secret = share.rsplit('/').next().unwrap();
    assert!(text.contains(&format!("charts/cpu-forest.svg?share={secret}")), "charts included: {text}");
    let again = launcher.post_json(&format!("/api/v1/experiments/{id}/comment"), json!(null)).await.json();
    assert_eq!(again["share_url"], Value::from(share.clone()), "the comment link is reused");
    assert_eq!(launcher.get(&format!("/api/v1/experiments/{id}/shares")).await.json()["links"].as_array().unwrap().len(), 1);
    let md_launcher = launcher.get(&format!("/experiments/{id}/export/report.md")).await.text;
    assert!(md_launcher.contains(&format!("<{share}>")), "report.md links the comment link for who may share it: {md_launcher}");
    assert!(!md.contains(secret), "a viewer, who may not share, is not handed the link");
    let outsider = app.anonymous();
    let opened = outsider.get(&share.replace(&app.base, "")).await;
    assert_eq!(opened.status, 303, "{}", opened.text);
    assert!(outsider.get(&format!("/experiments/{id}")).await.text.contains(&est), "the shared page, signed out");
    assert!(outsider.get(&format!("/experiments/{id}/charts/cpu-forest.svg?share={secret}")).await.text.contains(&est));

    // A viewer may not share: the comment has no link and says why.
    let viewer_comment = viewer.post_json(&format!("/api/v1/experiments/{id}/comment"), json!(null)).await.json();
    assert!(viewer_comment["share_url"].is_null(), "{viewer_comment}");
    assert!(viewer_comment["no_link_why"].as_str().unwrap().contains("no share link"), "{viewer_comment}");
    assert!(viewer_comment["markdown"].as_str().unwrap().contains("(sign in to read it)"));
    assert!(!viewer_comment["markdown"].as_str().unwrap().contains("?share="), "no chart without a link");

    // Revoked, the next copy makes a new one.
    assert_eq!(launcher.send(reqwest::Method::DELETE, &format!("/api/v1/experiments/{id}/shares"), None).await.status, 200);
    let after = launcher.post_json(&format!("/api/v1/experiments/{id}/comment"), json!(null)).await.json();
    assert!(after["share_url"].as_str().is_some_and(|u| u != share), "{after}");
    assert_eq!(outsider.get(&share.replace(&app.base, "")).await.status, 404, "the revoked link stays closed");
}
