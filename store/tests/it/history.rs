//! The history's queries on both backends: newest first with keyset pages, every filter, and the `git`
//! filter's two paths (a short list found through the indexes, or the newest-first scan).

use crate::common;

use common::experiment;
use judge::{ExperimentKind, ExperimentStatus, Verdict};
use serde_json::json;
use store::experiments::HistoryQuery;
use store::people::Role;
use store::testing::TestDb;

on_both_backends!(
    history_is_newest_first_with_keyset_pages,
    history_filters_narrow_the_list,
    history_searches_refs_people_dates_and_words,
    history_finds_a_rare_sha_and_pages_through_a_common_ref,
);

async fn history_is_newest_first_with_keyset_pages(db: &TestDb) {
    let mut ids = Vec::new();
    for i in 0..7 {
        ids.push(db.store.insert_experiment(&experiment(ExperimentKind::Pipeline, &format!("e{i}"))).await.unwrap());
    }
    let mut seen = Vec::new();
    let mut q = HistoryQuery { limit: 3, ..Default::default() };
    loop {
        let page = db.store.list_experiments(&q).await.unwrap();
        assert!(page.experiments.len() <= 3);
        seen.extend(page.experiments.iter().map(|e| e.id));
        match page.next {
            Some(c) => q.before = Some(c),
            None => break,
        }
    }
    ids.reverse();
    assert_eq!(seen, ids, "every experiment exactly once, newest first");
    let first = db.store.list_experiments(&HistoryQuery { limit: 50, ..Default::default() }).await.unwrap();
    assert_eq!(first.next, None);
    assert_eq!(first.experiments[0].status, ExperimentStatus::Queued);
    assert_eq!(first.experiments[0].verdict, None);
}

async fn history_filters_narrow_the_list(db: &TestDb) {
    let suite = db.store.upsert_suite("zephyr-dedup", ExperimentKind::Pipeline, &json!({"kind": "pipeline"}), "ui", None).await.unwrap();
    let mut with_suite = experiment(ExperimentKind::Pipeline, "suite run");
    with_suite.suite_id = Some(suite);
    let a = db.store.insert_experiment(&with_suite).await.unwrap();
    let w = db.store.insert_experiment(&experiment(ExperimentKind::Warp, "warp run")).await.unwrap();
    db.store.record_verdict(w, Verdict::WarpFail, &["put-4KiB/sync-on reqps -12.00%".into()], &json!({}), None).await.unwrap();

    let only = |q: HistoryQuery| {
        let store = db.store.clone();
        async move {
            store.list_experiments(&HistoryQuery { limit: 10, ..q }).await.unwrap().experiments.iter().map(|e| e.id).collect::<Vec<_>>()
        }
    };
    assert_eq!(only(HistoryQuery { kind: Some(ExperimentKind::Warp), ..Default::default() }).await, vec![w]);
    assert_eq!(only(HistoryQuery { verdict: Some(Verdict::WarpFail), ..Default::default() }).await, vec![w]);
    assert_eq!(only(HistoryQuery { status: Some(ExperimentStatus::Queued), ..Default::default() }).await, vec![a]);
    assert_eq!(only(HistoryQuery { suite: Some("zephyr-dedup".into()), ..Default::default() }).await, vec![a]);
    assert_eq!(only(HistoryQuery { suite: Some("nope".into()), ..Default::default() }).await, Vec::<i64>::new());
    let summary = db.store.experiment_summary(a).await.unwrap();
    assert_eq!(summary.suite.as_deref(), Some("zephyr-dedup"));
}

async fn history_searches_refs_people_dates_and_words(db: &TestDb) {
    use store::experiments::{HistoryFilter, HistoryQuery};
    let ana = db.store.insert_user("ana", "x", Role::Launcher).await.unwrap();
    let mut mine = experiment(ExperimentKind::Pipeline, "Faster 100%_dedup");
    mine.launched_by = Some(ana);
    mine.arms[1].sha = Some("feedbeef".repeat(5));
    mine.arms[1].git_ref = Some("refs/heads/speedup".into());
    let a = db.store.insert_experiment(&mine).await.unwrap();
    let b = db.store.insert_experiment(&experiment(ExperimentKind::Warp, "other")).await.unwrap();
    let ids = |p: HistoryFilter| {
        let store = db.store.clone();
        async move {
            let q = HistoryQuery::from_filter(&p, 10).unwrap();
            store.list_experiments(&q).await.unwrap().experiments.iter().map(|e| e.id).collect::<Vec<_>>()
        }
    };
    let p = |f: fn(&mut HistoryFilter)| {
        let mut p = HistoryFilter::default();
        f(&mut p);
        p
    };
    assert_eq!(ids(p(|p| p.by = Some("ana".into()))).await, vec![a]);
    assert_eq!(ids(p(|p| p.git = Some("refs/heads/speedup".into()))).await, vec![a], "a ref either arm ran");
    assert_eq!(ids(p(|p| p.git = Some("FEEDBEEF".into()))).await, vec![a], "a SHA prefix, any case");
    assert_eq!(ids(p(|p| p.git = Some("feature/faster-dedup".into()))).await, vec![b, a], "the head ref");
    assert_eq!(ids(p(|p| p.q = Some("100%_DEDUP".into()))).await, vec![a], "words, case-insensitive, % and _ literal");
    assert_eq!(ids(p(|p| p.q = Some("%".into()))).await, vec![a], "a lone % matches only a literal %");
    assert_eq!(ids(p(|p| p.q = Some("faster-dedup".into()))).await, vec![b, a], "refs are searched too");
    let today = judge::units::utc_rfc3339(store::now_ms() / 1000)[..10].to_string();
    let today2 = today.clone();
    let mut in_range = HistoryFilter { since: Some(today.clone()), until: Some(today), ..Default::default() };
    assert_eq!(ids(in_range.clone()).await, vec![b, a]);
    in_range.since = Some("2001-01-01".into());
    in_range.until = Some("2001-01-02".into());
    assert_eq!(ids(in_range).await, Vec::<i64>::new());
    for (bad, field) in [
        (HistoryFilter { since: Some("yesterday".into()), ..Default::default() }, "since"),
        (HistoryFilter { since: Some(today2), until: Some("2001-01-01".into()), ..Default::default() }, "since"),
        (HistoryFilter { kind: Some("nope".into()), ..Default::default() }, "kind"),
        (HistoryFilter { before: Some("x".into()), ..Default::default() }, "before"),
        (HistoryFilter { q: Some("a\u{0}b".into()), ..Default::default() }, "q"),
    ] {
        let e = HistoryQuery::from_filter(&bad, 10).unwrap_err();
        assert!(e.starts_with(field), "{e}");
    }
}

/// The `git` filter takes two paths (a short list of ids found through the indexes, or a scan for a ref
/// that more than a thousand experiments ran): both give every match exactly once, newest first.
async fn history_finds_a_rare_sha_and_pages_through_a_common_ref(db: &TestDb) {
    use store::experiments::{HistoryFilter, HistoryQuery};
    let mut rare = experiment(ExperimentKind::Pipeline, "rare");
    rare.arms[1].sha = Some(format!("5eed{}", "0".repeat(36)));
    rare.arms[1].git_ref = Some("refs/heads/rare".into());
    let rare = db.store.insert_experiment(&rare).await.unwrap();
    let now = store::now_ms();
    let rows = (0..1005).map(|i| format!("('pipeline', 'common {i}', 'queued', 'main', 'common', {})", now + 1000 + i)).collect::<Vec<_>>();
    let sql = format!("INSERT INTO experiments (kind, title, status, base_ref, head_ref, created_at) VALUES {}", rows.join(","));
    store::on_pool!(&db.store, pool => sqlx::query(&sql).execute(pool).await.map(|_| ())).unwrap();

    let all = |git: &str| {
        let (store, git) = (db.store.clone(), git.to_string());
        async move {
            let mut q = HistoryQuery::from_filter(&HistoryFilter { git: Some(git), ..Default::default() }, 400).unwrap();
            let mut titles = Vec::new();
            loop {
                let page = store.list_experiments(&q).await.unwrap();
                titles.extend(page.experiments.iter().map(|e| e.title.clone()));
                match page.next {
                    Some(c) => q.before = Some(c),
                    None => break titles,
                }
            }
        }
    };
    assert_eq!(all("5eed").await, vec!["rare"], "a SHA prefix");
    assert_eq!(all("5EED0000").await, vec!["rare"], "a SHA prefix in capitals");
    assert_eq!(all("5eef").await, Vec::<String>::new(), "the prefix range stops at the prefix");
    assert_eq!(all("refs/heads/rare").await, vec!["rare"]);
    let common = all("common").await;
    let expected: Vec<String> = (0..1005).rev().map(|i| format!("common {i}")).collect();
    assert_eq!(common, expected, "1005 matches: every one once, newest first, across pages");
    let ids = db
        .store
        .list_experiments(&HistoryQuery::from_filter(&HistoryFilter { git: Some("5eed".into()), ..Default::default() }, 10).unwrap())
        .await
        .unwrap();
    assert_eq!(ids.experiments[0].id, rare);
}
