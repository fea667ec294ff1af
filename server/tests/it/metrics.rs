//! `/metrics`: request counts by route pattern and status, latencies, and the trial queue.

use crate::common;

use common::test_app::TestApp;
use store::people::Role;
use store::trials::InsertTrial;

#[tokio::test]
async fn metrics_count_requests_by_route_and_report_the_queue() {
    let app = TestApp::builder().metrics_token("a-long-metrics-token-for-this-test").start().await;
    let id = app.experiment("queued work", None).await;
    let arms = app.store.arms(id).await.unwrap();
    let plan: Vec<InsertTrial> =
        (0..3).map(|seq| InsertTrial { arm_id: arms[seq as usize % arms.len()].0, seq, cell: None, repeat_index: 0 }).collect();
    app.store.insert_trials(id, &plan).await.unwrap();
    app.store.claim_next_trial("worker-1").await.unwrap().expect("one trial runs");

    let viewer = app.signed_in(Role::Viewer).await;
    for _ in 0..3 {
        assert_eq!(viewer.get(&format!("/api/v1/experiments/{id}")).await.status, 200);
    }
    assert_eq!(viewer.get("/api/v1/users").await.status, 403);
    assert_eq!(viewer.get("/metrics").await.status, 403);

    // Made-up methods are counted, as OTHER: they add no series of their own.
    for made_up in ["FROB1", "FROB2", "FROB3"] {
        let method = reqwest::Method::from_bytes(made_up.as_bytes()).unwrap();
        assert_ne!(viewer.send(method, "/api/v1/experiments", None).await.status, 500);
    }
    let mut scraper = app.anonymous();
    scraper.bearer = Some("a-long-metrics-token-for-this-test".into());
    scraper.origin = None;
    let r = scraper.get("/metrics").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let text = r.text;
    let line = |prefix: &str| text.lines().find(|l| l.starts_with(prefix)).map(str::to_string);
    assert_eq!(
        line("arbiter_http_requests_total{method=\"GET\",route=\"/api/v1/experiments/{id}\",status=\"200\"}")
            .as_deref()
            .map(|l| l.ends_with(" 3")),
        Some(true),
        "{text}"
    );
    assert!(line("arbiter_http_requests_total{method=\"GET\",route=\"/api/v1/users\",status=\"403\"}").is_some(), "{text}");
    assert!(line("arbiter_http_request_duration_seconds_count{method=\"GET\",route=\"/api/v1/experiments/{id}\"}").is_some(), "{text}");
    assert_eq!(line("arbiter_queue_depth ").as_deref(), Some("arbiter_queue_depth 2"), "{text}");
    assert_eq!(line("arbiter_trials{state=\"running\"}").as_deref(), Some("arbiter_trials{state=\"running\"} 1"));
    assert!(!text.contains(&format!("/api/v1/experiments/{id}\"")), "raw paths never become labels");
    assert!(!text.contains("FROB"), "{text}");
    let other: f64 = text
        .lines()
        .filter(|l| l.starts_with("arbiter_http_requests_total{method=\"OTHER\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(other, 3.0, "{text}");
}
