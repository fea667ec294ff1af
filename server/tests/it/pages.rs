//! The experiment pages as a browser without JavaScript gets them: every page is complete HTML from
//! the server (verdict, tables, inlined SVG charts), the standalone charts and exports answer with the
//! latest report, and share links open one experiment and its charts until they are revoked.

use crate::common;

use common::test_app::TestApp;
use store::people::Role;

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

#[tokio::test]
async fn a_pipeline_page_renders_its_verdict_tables_and_charts_without_javascript() {
    let app = TestApp::builder().start().await;
    let id = app.judged_pipeline("Heavier map").await;
    let viewer = app.signed_in(Role::Viewer).await;
    let page = viewer.get(&format!("/experiments/{id}")).await;
    assert_eq!(page.status, 200);
    let html = &page.text;
    assert!(html.contains("<title>Heavier map · #"), "the title names the experiment");
    assert!(html.contains("regression"), "the verdict is in the banner");
    assert!(html.contains("stage1-Map → Scatter: more CPU: CPU higher +27.5 %"), "the reasons are in words (the estimate from the logs)");
    assert!(html.contains("+27.5 %") && html.contains("1.130 → 1.440"), "the stage table leads with the CPU change");
    assert!(html.contains("✓ same"), "items and bytes are checked");
    assert_eq!(
        count(html, "class=\"chart\" role=\"img\""),
        5,
        "the CPU and elapsed forest plots, CPU, memory and quadrant charts are inlined"
    );
    assert!(html.contains("<title>CPU change per stage: interval against the margin</title>"), "the forest plot leads the charts");
    assert!(html.contains("<title>CPU per stage</title>") && html.contains("worker RAM 64.0 MiB"));
    assert!(
        html.contains("noise profile: given with the report") && html.contains("CPU ±2 %, summed elapsed ±"),
        "the page says what judged it"
    );
    assert!(html.contains("How the stages were tested") && html.contains("family-wise error rate"), "and how, folded away");
    for export in ["report.md", "stages.csv", "report.json"] {
        assert!(html.contains(&format!("/experiments/{id}/export/{export}")), "a download link for {export}");
    }
    assert!(!html.contains("og:title"), "a private experiment carries no preview");
    let log = viewer.get(&format!("/experiments/{id}?scale=log")).await;
    assert!(log.text.contains("aria-current=\"true\">log"), "the log axis is the current one");

    let md = viewer.get(&format!("/experiments/{id}/export/report.md")).await;
    assert_eq!(md.status, 200);
    assert!(md.text.contains("Pipeline A/B") && md.text.contains("stage1-Map → Scatter"), "{}", md.text);
    // Ready to paste: which experiment, its page, and what ran at which SHA; CPU-s to three digits.
    assert!(md.text.contains(&format!("**Heavier map** (#{id})")), "{}", md.text);
    assert!(md.text.contains(&format!("/experiments/{id}>")) && md.text.contains("control `"), "{}", md.text);
    assert!(md.text.contains("| 1.13 → 1.44 |"), "{}", md.text);
    let csv = viewer.get(&format!("/experiments/{id}/export/stages.csv")).await;
    assert!(csv.text.starts_with("arm,stage,verdict,cpu_control_s"), "{}", csv.text);
    assert!(csv.text.contains("treatment,stage1-Map → Scatter,regression"), "{}", csv.text);
    assert!(csv.text.contains("treatment,TOTAL,"), "{}", csv.text);
    let json = viewer.get(&format!("/experiments/{id}/export/report.json")).await.json();
    assert_eq!(json["report"]["verdict"], "regression");
    assert_eq!(viewer.get(&format!("/experiments/{id}/export/gate.md")).await.status, 404, "a pipeline has no gate.md");
    let svg = viewer.get(&format!("/experiments/{id}/charts/stage-memory.svg")).await;
    assert_eq!(svg.status, 200);
    assert_eq!(svg.headers["content-type"], "image/svg+xml; charset=utf-8");
    assert!(svg.text.starts_with("<svg") && svg.text.contains("▲ above RAM"));
    let unknown = viewer.get(&format!("/experiments/{id}/charts/obj-per-s.svg")).await;
    assert_eq!(unknown.status, 404);
    assert!(unknown.text.contains("stage-cpu, stage-memory, cpu-vs-elapsed"), "{}", unknown.text);
}

#[tokio::test]
async fn a_warp_page_shows_the_gate_and_marks_fail_and_warn_cells() {
    let app = TestApp::builder().start().await;
    let id = app.judged_warp("Write buffer").await;
    let viewer = app.signed_in(Role::Viewer).await;
    let html = viewer.get(&format!("/experiments/{id}")).await.text;
    assert!(html.contains("put-4KiB/sync-on: ❌ FAIL — obj/s −12.0 %"), "reasons name the cells, in Arbiter's units");
    assert!(html.contains("1000.0 obj/s") && html.contains("880.0 obj/s") && html.contains(">−12.0 %<"), "the gate table");
    assert!(html.contains("gate.md (upstream's words): -12.00%"), "upstream's words kept, labelled");
    assert!(html.contains("3.91 MiB/s"), "throughput in MiB/s");
    assert_eq!(count(html.as_str(), "class=\"chart\" role=\"img\""), 3, "obj/s, throughput and p99 charts");
    assert!(html.contains("✖ FAIL") && html.contains("▲ WARN"), "marks in the charts");
    assert!(html.contains("Linux test x86_64"), "provenance");
    let md = viewer.get(&format!("/experiments/{id}/export/gate.md")).await;
    assert!(md.text.contains("FAIL") && md.text.contains("put-4KiB/sync-on"), "{}", md.text);
    let csv = viewer.get(&format!("/experiments/{id}/export/gate.csv")).await;
    assert!(csv.text.lines().nth(1).unwrap().starts_with("put-4KiB/sync-on,reqps,1000,880,-12.00%,12,FAIL"), "{}", csv.text);
}

#[tokio::test]
async fn a_share_link_opens_the_page_and_its_charts_until_revoked_and_only_then_previews_the_verdict() {
    let app = TestApp::builder().start().await;
    let id = app.judged_warp("Shared gate").await;
    let other = app.judged_pipeline("Not shared").await;
    let secret = app.share(id).await;
    let visitor = app.anonymous();
    assert_eq!(visitor.get(&format!("/share/{secret}")).await.status, 303);
    let page = visitor.get(&format!("/experiments/{id}")).await;
    assert_eq!(page.status, 200);
    assert!(page.text.contains("property=\"og:title\" content=\"Shared gate — FAIL\""), "a shared page previews its verdict");
    assert!(!page.text.contains("Share…"), "a visitor cannot share");
    assert_ne!(visitor.get(&format!("/experiments/{other}")).await.status, 200, "the link opens one experiment");

    // A PR comment embeds the chart with the token and no session.
    let fresh = app.anonymous();
    let chart = fresh.get(&format!("/experiments/{id}/charts/obj-per-s.svg?share={secret}")).await;
    assert_eq!(chart.status, 200);
    assert!(chart.text.contains("✖ FAIL"));
    assert_ne!(app.anonymous().get(&format!("/experiments/{id}/charts/obj-per-s.svg")).await.status, 200, "not without the token");

    app.store.revoke_share_tokens(id).await.unwrap();
    assert_ne!(visitor.get(&format!("/experiments/{id}")).await.status, 200, "revoked: the session's link no longer opens it");
    assert_ne!(app.anonymous().get(&format!("/experiments/{id}/charts/obj-per-s.svg?share={secret}")).await.status, 200);
    let signed_in = app.signed_in(Role::Viewer).await.get(&format!("/experiments/{id}")).await;
    assert!(!signed_in.text.contains("og:title"), "no live link: no preview, even for a signed-in reader");
}

/// Like the real server, on several threads: the page's title and preview are in its head on every
/// render, however its data loads interleave with other requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_title_and_preview_are_in_the_head_of_every_render() {
    let app = TestApp::builder().start().await;
    let id = app.judged_warp("Shared gate").await;
    let secret = app.share(id).await;
    let visitor = app.anonymous();
    assert_eq!(visitor.get(&format!("/share/{secret}")).await.status, 303);
    let path = format!("/experiments/{id}");
    for round in 0..25 {
        let pages = tokio::join!(visitor.get(&path), visitor.get(&path), visitor.get(&path), visitor.get(&path));
        for page in [pages.0, pages.1, pages.2, pages.3] {
            let head = page.text.split("</head>").next().unwrap();
            assert!(head.contains("<title>Shared gate · #"), "round {round}: no title in the head:\n{head}");
            assert!(head.contains("property=\"og:title\" content=\"Shared gate — FAIL\""), "round {round}: no preview in the head");
        }
    }
}

#[tokio::test]
async fn history_filters_and_pages_through_the_url() {
    let app = TestApp::builder().start().await;
    let p = app.judged_pipeline("Pipeline one").await;
    let w = app.judged_warp("Warp one").await;
    let viewer = app.signed_in(Role::Viewer).await;
    let all = viewer.get("/experiments").await.text;
    assert!(all.find("Warp one").unwrap() < all.find("Pipeline one").unwrap(), "newest first");
    let warp = viewer.get("/experiments?kind=warp").await.text;
    assert!(warp.contains("Warp one") && !warp.contains("Pipeline one"));
    assert!(warp.contains("<option value=\"warp\" selected"), "the form keeps the filter");
    let found = viewer.get("/experiments?q=PIPELINE").await.text;
    assert!(found.contains(&format!("/experiments/{p}")) && !found.contains(&format!("/experiments/{w}\"")));
    let bad = viewer.get("/experiments?since=yesterday").await.text;
    assert!(bad.contains("since: \"yesterday\" is not a date of the form YYYY-MM-DD"), "a bad filter is named");
    for i in 0..55 {
        app.experiment(&format!("filler {i}"), None).await;
    }
    let first = viewer.get("/experiments?kind=pipeline").await.text;
    let older =
        first.split("rel=\"next\"").next().unwrap().rsplit("href=\"").next().unwrap().split('"').next().unwrap().replace("&amp;", "&");
    assert!(older.starts_with("/experiments?kind=pipeline&before="), "{older}");
    let second = viewer.get(&older).await.text;
    assert!(second.contains("Pipeline one") && !second.contains("Warp one"), "the oldest pipeline is on page two");
}

#[tokio::test]
async fn cancel_and_rerun_are_offered_only_to_those_allowed() {
    let app = TestApp::builder().start().await;
    let (launcher_id, launcher) = app.user(Role::Launcher).await;
    let running = app.experiment("still running", Some(launcher_id)).await;
    let judged = app.judged_pipeline("launched and judged").await;
    app.store.set_experiment_plan(judged, &serde_json::json!({"launch": {}, "suite": {}})).await.unwrap();
    let imported = app.judged_warp("imported").await;
    let owner = app.sign_in(&launcher).await;
    let viewer = app.signed_in(Role::Viewer).await;
    async fn page(c: &common::test_app::Client, id: i64) -> String {
        c.get(&format!("/experiments/{id}")).await.text
    }
    assert!(page(&owner, running).await.contains("Cancel experiment"), "its launcher may cancel a running experiment");
    assert!(!page(&viewer, running).await.contains("Cancel experiment"), "a viewer may not");
    assert!(page(&owner, judged).await.contains("Re-run"), "any launcher may re-run a launched experiment once it ended");
    assert!(!page(&viewer, judged).await.contains("Re-run"));
    assert!(!page(&owner, imported).await.contains("Re-run"), "an imported experiment has no plan to re-run");
    app.store.set_experiment_plan(imported, &serde_json::json!({"imported": true})).await.unwrap();
    assert!(page(&viewer, imported).await.contains("Arbiter did not run this experiment"), "an import says so");
}

/// An experiment judged by method 1 (the report the judge wrote before method 2, kept as a fixture,
/// over the real rows it judged): its page says so, a launcher re-judges it to a method-2 verdict, and
/// both verdicts stay on the page; `arbiter rejudge --all --dry-run` then finds nothing older.
#[tokio::test]
async fn a_verdict_of_method_one_says_so_and_rejudges_to_the_current_method_keeping_both() {
    let app = TestApp::builder().start().await;
    let rows =
        judge::pipeline::rows::parse_rows("rows.csv", include_str!("../../../judge/tests/data/zephyr_stage_rows_subprocess_runner.csv"))
            .unwrap();
    let t = |id: &str| judge::pipeline::aggregate::TrialSpec { execution_ids: vec![id.into()], pair: None, position: None };
    let old: judge::pipeline::PipelineReport =
        serde_json::from_str(include_str!("../../../judge/tests/data/report_method1_heavier_minhash.json")).unwrap();
    assert!(old.method.is_none(), "the fixture is a method-1 report");
    let compared = engine::import::Compared {
        rows,
        control: vec![t("20261129-072203-da99fe05"), t("20261129-072217-adb9e3d8"), t("20261129-072231-4eb27101")],
        arms: vec![judge::pipeline::ArmSpec { name: "heavier-minhash".into(), trials: vec![t("20261129-072244-a8070574")] }],
        report: old,
    };
    let (launcher_id, launcher) = app.user(Role::Launcher).await;
    let info = engine::import::ImportInfo { title: "judged long ago".into(), by: Some(launcher_id), ..Default::default() };
    let id = engine::import::store_pipeline(&app.store, &info, &compared, Some("64MiB")).await.unwrap();
    let launcher = app.sign_in(&launcher).await;
    let viewer = app.signed_in(Role::Viewer).await;
    let other = app.signed_in(Role::Launcher).await;

    let before = launcher.get(&format!("/experiments/{id}")).await.text;
    assert!(before.contains("judged by method v1") && before.contains("the current one is v3"), "the page names the old method");
    assert!(before.contains("Re-judge by method v3"), "a launcher is offered the re-judging");
    assert!(!viewer.get(&format!("/experiments/{id}")).await.text.contains("Re-judge by"), "a viewer is not");
    let dry = std::process::Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(["rejudge", "--all", "--dry-run", "--data-dir"])
        .arg(&app.state.data_dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&dry.stdout);
    assert!(dry.status.success(), "{out}{}", String::from_utf8_lossy(&dry.stderr));
    // Method 1 called +27 % from one treatment trial a regression; method 3 borrows no spread, and the
    // controls' 2 df cannot decide it.
    assert!(out.contains(&format!("experiment {id}: regression (method v1) would be inconclusive (method v3)")), "{out}");
    assert!(out.contains("dry run, nothing stored"), "{out}");
    assert_eq!(app.store.verdicts(id).await.unwrap().len(), 1, "a dry run stores nothing");

    let r = viewer.post_json(&format!("/api/v1/experiments/{id}/rejudge"), serde_json::json!({})).await;
    assert_eq!(r.status, 403, "a viewer may not re-judge");
    // Re-judging is its launcher's (or an admin's); re-running is any launcher's.
    let r = other.post_json(&format!("/api/v1/experiments/{id}/rejudge"), serde_json::json!({})).await;
    assert_eq!(r.status, 403, "another launcher may not re-judge: {}", r.text);
    assert!(r.text.contains("launcher or an admin may re-judge"), "{}", r.text);
    assert!(!other.get(&format!("/experiments/{id}")).await.text.contains("Re-judge by"), "nor is offered the button");
    let r = launcher.post_json(&format!("/api/v1/experiments/{id}/rejudge"), serde_json::json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let body = r.json();
    assert_eq!((body["before"]["method_version"].as_u64(), body["after"]["method_version"].as_u64()), (Some(1), Some(3)));
    let after = launcher.get(&format!("/experiments/{id}")).await.text;
    assert!(after.contains("judged by method v3") && !after.contains("Re-judge by"), "the page shows the new verdict");
    assert!(after.contains("Verdicts (2)") && after.contains("method v1") && after.contains("re-judged by"), "both verdicts are listed");
    // The stage table shows the level of each interval (Holm's step: the total's CPU is in the family).
    let e = launcher.get(&format!("/api/v1/experiments/{id}")).await.json();
    let levels: Vec<String> = e["report"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["cpu_test"]["alpha"].as_f64())
        .map(judge::pipeline::report::fmt_level)
        .collect();
    assert!(!levels.is_empty() && levels.iter().all(|l| after.contains(&format!(">{l}"))), "the stage table shows {levels:?}");
    let verdicts = app.store.verdicts(id).await.unwrap();
    assert_eq!(verdicts.iter().map(|v| v.method_version).collect::<Vec<_>>(), [3, 1], "newest first, the old one kept");
    let audit = app.store.audit_log(10).await.unwrap();
    assert!(audit.iter().any(|a| a.action == "experiment.rejudge" && a.subject == format!("experiment:{id}")), "audited");
    let again = std::process::Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(["rejudge", "--all", "--dry-run", "--data-dir"])
        .arg(&app.state.data_dir)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&again.stdout).contains("rejudge: 0 experiments"), "nothing older is left");
    let warp = app.judged_warp("a gate").await;
    let admin = app.signed_in(Role::Admin).await;
    let r = admin.post_json(&format!("/api/v1/experiments/{warp}/rejudge"), serde_json::json!({})).await;
    assert_eq!(r.status, 409, "a warp gate has one method");
    assert!(r.text.contains("nothing to re-judge"), "{}", r.text);
}
