//! `engine::launch::launch` on a real repository: refs resolved to full SHAs, the plan and its words, each
//! refused value named by its field (and git's own failure told apart from the request's), a pipeline
//! launch refused without a finelog server, a stored launch's trials queued, and a cancel.

use crate::common::TestEngine;
use engine::launch::Launched;
use engine::EngineError;
use wire::launch::JsonLaunch;

fn request(head: &str) -> JsonLaunch {
    serde_json::from_value(serde_json::json!({"suite": "dedup", "head": head})).unwrap()
}

#[tokio::test]
async fn a_dry_run_resolves_refs_to_full_shas_and_says_its_plan_in_words() {
    let t = TestEngine::new().await;
    let req = JsonLaunch { dry_run: true, ..request("feature/faster") };
    let Launched::DryRun(plan) = engine::launch::launch(&t.engine, None, &req).await.unwrap() else { panic!("a dry run stores nothing") };
    let shas: Vec<(&str, &str)> = plan.arms.iter().map(|a| (a.name.as_str(), a.sha.as_str())).collect();
    assert_eq!(shas, [("control", t.base.as_str()), ("treatment", t.faster.as_str())], "control is the merge-base, not main's head");
    assert_ne!(t.base, t.later);
    assert_eq!(plan.trials_per_arm, 3, "the suite's default");
    let words = plan.words();
    assert_eq!(words.count, format!("{} trials", plan.trials.len()));
    assert!(words.summary.starts_with(" (3 per arm, "), "{}", words.summary);
    assert_eq!(words.arms[0][3], t.base[..10], "a short SHA is ten characters");
    assert!(words.context.as_deref().is_some_and(|c| c.contains("sample=local/tiny, workers=2")), "{:?}", words.context);
    assert!(t.engine.store.list_experiments(&Default::default()).await.unwrap().experiments.is_empty(), "nothing stored");
}

#[tokio::test]
async fn a_refused_value_is_named_by_its_field_and_a_broken_repository_is_not_the_requests_fault() {
    let t = TestEngine::new().await;
    let field_of = |r: Result<Launched, EngineError>| match r {
        Err(EngineError::Field(f)) => f.field,
        Err(other) => panic!("not a field's problem: {other:?}"),
        Ok(_) => panic!("accepted"),
    };
    let dry = |req: JsonLaunch| JsonLaunch { dry_run: true, ..req };
    assert_eq!(field_of(engine::launch::launch(&t.engine, None, &dry(request("no-such-branch"))).await), "head");
    let mut arms = request("main");
    arms.arms = serde_json::from_value(serde_json::json!([{"name": "c", "ref": "no-such-branch"}])).unwrap();
    assert_eq!(field_of(engine::launch::launch(&t.engine, None, &dry(arms)).await), "arms[0].ref");
    let mut fingerprint = request("main");
    fingerprint.fingerprint = serde_json::from_value(serde_json::json!({"workers": 3})).unwrap();
    assert_eq!(field_of(engine::launch::launch(&t.engine, None, &dry(fingerprint)).await), "fingerprint.workers");
    // The repository gone: git's failure (502 at the API), not a ref the request got wrong.
    std::fs::remove_dir_all(t.repo.join(".git")).unwrap();
    match engine::launch::launch(&t.engine, None, &dry(request("main"))).await {
        Err(EngineError::Upstream(m)) => assert!(m.contains("not a git repository"), "{m}"),
        other => panic!("expected git's failure: {:?}", other.err()),
    }
}

#[tokio::test]
async fn a_stored_launch_queues_its_trials_and_a_cancel_ends_them_once() {
    let mut t = TestEngine::new().await;
    // A pipeline trial's rows go to finelog: without one configured, nothing is stored.
    match engine::launch::launch(&t.engine, None, &request("feature/faster")).await {
        Err(EngineError::Unavailable(m)) => assert!(m.contains("no finelog server"), "{m}"),
        other => panic!("expected Unavailable: {:?}", other.err()),
    }
    assert!(t.engine.store.list_experiments(&Default::default()).await.unwrap().experiments.is_empty(), "nothing half-stored");
    // With one named (the queue is not running: nothing reaches it), the launch is stored and queued.
    t.engine.queue = std::sync::Arc::new(engine::TrialQueue::new(Ok("http://127.0.0.1:9".into()), None));
    let Launched::Stored { id, url, trials } = engine::launch::launch(&t.engine, None, &request("feature/faster")).await.unwrap() else {
        panic!("not a dry run: stored")
    };
    assert_eq!(url, format!("http://arbiter.test/experiments/{id}"));
    let stored = t.engine.store.trials(id).await.unwrap();
    assert_eq!(stored.len(), trials);
    assert!(stored.iter().all(|t| t.state == judge::TrialState::Queued), "{stored:?}");
    let (cancelled, stopping) = engine::cancel_experiment(&t.engine, id).await.unwrap();
    assert_eq!((cancelled as usize, stopping), (trials, 0));
    assert!(matches!(engine::cancel_experiment(&t.engine, id).await, Err(EngineError::Conflict(_))), "a second cancel is refused");
}
