//! The store's behaviour, run unchanged against SQLite and PostgreSQL: experiments and their trials,
//! observations, suites, accounts, trend points and notifications (the history's queries: history.rs).

use crate::common;

use judge::{ExperimentKind, ExperimentStatus, InfraReason, TrialState, Verdict};
use serde_json::json;
use store::experiments::{ArmRole, InsertArm};
use store::observations::{StageRow, WarpRound};
use store::people::Role;
use store::testing::TestDb;
use store::trials::InsertTrial;
use store::{Store, StoreError};

on_both_backends!(
    migrations_apply_once_and_keep_data,
    experiment_detail_has_arms_fingerprint_and_shares,
    starting_never_undoes_a_cancel,
    bad_experiment_stores_nothing,
    verdicts_mark_the_experiment_judged,
    trials_are_claimed_once_each,
    trial_outcomes_are_final,
    claims_keep_lanes_caps_and_pairs,
    an_adaptive_experiment_grows_once_per_look,
    observations_round_trip_all_or_nothing,
    suites_and_noise_profiles_upsert,
    accounts_tokens_and_audit,
    trend_points_follow_verdicts,
    notifications_are_queued_once_and_log_attempts,
    schedule_ticks_are_claimed_once_and_stale_claims_taken_over,
    only_passing_faults_are_worth_retrying,
);

fn arm(name: &str, role: ArmRole) -> InsertArm {
    InsertArm { name: name.into(), role, git_ref: Some(format!("refs/heads/{name}")), sha: Some("a".repeat(40)), config_diff: None }
}

use common::experiment;

async fn count(store: &Store, table: &str) -> i64 {
    let sql = format!("SELECT COUNT(*) FROM {table}");
    store::on_pool!(store, pool => sqlx::query_scalar::<_, i64>(&sql).fetch_one(pool).await).unwrap()
}

async fn migrations_apply_once_and_keep_data(db: &TestDb) {
    let ready = db.store.readiness().await.unwrap();
    assert!(ready.is_ready(), "{ready:?}");
    assert!(ready.known_migrations >= 1);
    let id = db.store.insert_experiment(&experiment(ExperimentKind::Pipeline, "kept")).await.unwrap();
    // A restart: a new pool on the same database migrates again, which applies nothing and loses nothing.
    let again = Store::open(&db.url).await.unwrap();
    assert_eq!(again.readiness().await.unwrap(), ready);
    assert_eq!(again.experiment_summary(id).await.unwrap().title, "kept");
    again.close().await;
}

async fn experiment_detail_has_arms_fingerprint_and_shares(db: &TestDb) {
    let mut e = experiment(ExperimentKind::Pipeline, "detail");
    e.arms[1].config_diff = Some("workers: 2 → 4".into());
    let id = db.store.insert_experiment(&e).await.unwrap();
    let d = db.store.experiment_detail(id).await.unwrap();
    assert_eq!(d.arms.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["control", "treatment"]);
    assert_eq!(d.arms[1].config_diff.as_deref(), Some("workers: 2 → 4"));
    assert_eq!(d.arms[0].git_ref.as_deref(), Some("refs/heads/control"));
    assert_eq!(d.fingerprint["workers"], 2);
    assert_eq!((d.live_shares, d.noise_profile.clone()), (0, None));
    assert_eq!((d.launched, d.imported), (false, false), "the sample's plan is neither a launch nor an import");
    db.store.set_experiment_plan(id, &json!({"imported": true})).await.unwrap();
    assert!(db.store.experiment_detail(id).await.unwrap().imported);
    db.store.insert_share_token(id, "hash-1", None, false, None).await.unwrap();
    assert_eq!(db.store.experiment_detail(id).await.unwrap().live_shares, 1);
    db.store.revoke_share_tokens(id).await.unwrap();
    assert_eq!(db.store.experiment_detail(id).await.unwrap().live_shares, 0);
    assert!(matches!(db.store.experiment_detail(id + 1000).await, Err(StoreError::NotFound { .. })));
}

async fn starting_never_undoes_a_cancel(db: &TestDb) {
    let id = db.store.insert_experiment(&experiment(ExperimentKind::Pipeline, "race")).await.unwrap();
    assert!(db.store.start_experiment(id).await.unwrap());
    assert!(db.store.start_experiment(id).await.unwrap(), "a second trial of a running experiment starts too");
    assert_eq!(db.store.experiment_summary(id).await.unwrap().status, ExperimentStatus::Running);
    db.store.set_experiment_status(id, ExperimentStatus::Cancelled).await.unwrap();
    assert!(!db.store.start_experiment(id).await.unwrap(), "a trial claimed just before the cancel must not run");
    assert_eq!(db.store.experiment_summary(id).await.unwrap().status, ExperimentStatus::Cancelled);
}

async fn bad_experiment_stores_nothing(db: &TestDb) {
    let mut twice = experiment(ExperimentKind::Pipeline, "dup arms");
    twice.arms.push(arm("treatment", ArmRole::Treatment));
    let err = db.store.insert_experiment(&twice).await.unwrap_err();
    assert!(matches!(&err, StoreError::Conflict(m) if m.contains("\"treatment\" appears twice")), "{err}");
    let mut none = experiment(ExperimentKind::Pipeline, "no arms");
    none.arms.clear();
    assert!(db.store.insert_experiment(&none).await.is_err());
    assert_eq!(count(&db.store, "experiments").await, 0, "the failed transaction left no experiment");
    assert_eq!(count(&db.store, "arms").await, 0);
    assert!(matches!(db.store.experiment_summary(999).await, Err(StoreError::NotFound { .. })));
}

async fn verdicts_mark_the_experiment_judged(db: &TestDb) {
    let id = db.store.insert_experiment(&experiment(ExperimentKind::Pipeline, "judged")).await.unwrap();
    assert_eq!(db.store.latest_verdict(id).await.unwrap(), None);
    db.store.set_experiment_status(id, ExperimentStatus::Running).await.unwrap();
    let reasons = vec!["stage1-Map → Scatter: CPU +27.4 %".to_string()];
    db.store.record_verdict(id, Verdict::Regression, &reasons, &json!({"verdict": "regression"}), None).await.unwrap();
    let e = db.store.experiment_summary(id).await.unwrap();
    assert_eq!((e.status, e.verdict), (ExperimentStatus::Judged, Some(Verdict::Regression)));
    assert!(e.finished_at.is_some());
    let (v, r, report) = db.store.latest_verdict(id).await.unwrap().unwrap();
    assert_eq!((v, r, report["verdict"].as_str()), (Verdict::Regression, reasons.clone(), Some("regression")));
    assert!(matches!(db.store.record_verdict(4242, Verdict::Pass, &[], &json!({}), None).await, Err(StoreError::NotFound { .. })));
    assert_eq!(count(&db.store, "verdicts").await, 1);

    // A report without a method is method 1; re-judging adds a verdict beside it and keeps the end time.
    assert_eq!(db.store.judged_before(ExperimentKind::Pipeline, 2).await.unwrap(), [(id, 1)]);
    let admin = db.store.insert_user("rejudger", "x", Role::Admin).await.unwrap();
    let v2 = json!({"verdict": "pass", "method": {"version": 2}});
    db.store.record_rejudged_verdict(id, Verdict::Pass, &["flat".into()], &v2, None, Some(admin)).await.unwrap();
    let after = db.store.experiment_summary(id).await.unwrap();
    assert_eq!((after.verdict, after.finished_at), (Some(Verdict::Pass), e.finished_at), "the new verdict shows; the end time stays");
    let all = db.store.verdicts(id).await.unwrap();
    assert_eq!(all.iter().map(|v| (v.verdict, v.method_version)).collect::<Vec<_>>(), [(Verdict::Pass, 2), (Verdict::Regression, 1)]);
    assert_eq!((all[0].judged_by.as_deref(), all[1].judged_by.as_deref()), (Some("rejudger"), None));
    assert_eq!(all[1].reasons, reasons, "the old verdict is kept whole");
    assert!(db.store.judged_before(ExperimentKind::Pipeline, 2).await.unwrap().is_empty());
    let unjudged = db.store.insert_experiment(&experiment(ExperimentKind::Pipeline, "not judged")).await.unwrap();
    let refused = db.store.record_rejudged_verdict(unjudged, Verdict::Pass, &[], &v2, None, None).await;
    assert!(matches!(refused, Err(StoreError::NotFound { .. })), "only a judged experiment is re-judged");
}

async fn trials_are_claimed_once_each(db: &TestDb) {
    let id = db.store.insert_experiment(&experiment(ExperimentKind::Pipeline, "trials")).await.unwrap();
    let arms = db.store.arms(id).await.unwrap();
    assert_eq!(arms.iter().map(|a| a.1.as_str()).collect::<Vec<_>>(), ["control", "treatment"]);
    let plan: Vec<InsertTrial> =
        (0..6).map(|i| InsertTrial { arm_id: arms[i % 2].0, seq: i as i64, cell: None, repeat_index: (i / 2) as i64 }).collect();
    db.store.insert_trials(id, &plan).await.unwrap();

    // An arm of another experiment is refused, and the whole batch with it.
    let other = db.store.insert_experiment(&experiment(ExperimentKind::Pipeline, "other")).await.unwrap();
    let foreign = InsertTrial { arm_id: arms[0].0, seq: 1, cell: None, repeat_index: 0 };
    let ok = InsertTrial { arm_id: db.store.arms(other).await.unwrap()[0].0, seq: 0, cell: None, repeat_index: 0 };
    assert!(db.store.insert_trials(other, &[ok, foreign]).await.is_err());
    assert!(db.store.trials(other).await.unwrap().is_empty());

    let mut workers = Vec::new();
    for w in 0..4 {
        let store = db.store.clone();
        workers.push(tokio::spawn(async move {
            let mut got = Vec::new();
            while let Some(t) = store.claim_next_trial(&format!("worker-{w}")).await.unwrap() {
                got.push(t.id);
            }
            got
        }));
    }
    let mut claimed = Vec::new();
    for w in workers {
        claimed.extend(w.await.unwrap());
    }
    claimed.sort();
    let mut all: Vec<i64> = db.store.trials(id).await.unwrap().iter().map(|t| t.id).collect();
    all.sort();
    assert_eq!(claimed, all, "each trial claimed exactly once");
    assert!(db.store.trials(id).await.unwrap().iter().all(|t| t.state == TrialState::Running && t.started_at.is_some()));
}

/// The dispatcher's claim on a real store: a cluster lane's pair comes together with its ranks, the suite's
/// cap and the host's one local slot hold, the live stream's count of what waits ahead, and an experiment
/// is concluded once.
async fn claims_keep_lanes_caps_and_pairs(db: &TestDb) {
    use store::claim::{ClaimRules, Lane};
    let engine = Lane { key: "engine:k".into(), cap: 2, canary: false };
    let mut ids = Vec::new();
    for (title, lane) in [("x", engine.clone()), ("y", engine.clone()), ("z", Lane::local())] {
        let id = db.store.insert_experiment(&experiment(ExperimentKind::Pipeline, title)).await.unwrap();
        db.store.set_experiment_lane(id, &lane).await.unwrap();
        let arms = db.store.arms(id).await.unwrap();
        let plan: Vec<InsertTrial> =
            (0..4).map(|seq| InsertTrial { arm_id: arms[seq as usize % 2].0, seq, cell: None, repeat_index: seq / 2 }).collect();
        db.store.insert_trials(id, &plan).await.unwrap();
        ids.push(id);
    }
    let ahead = |p: Option<store::trials::ProgressRows>| p.unwrap().lane_ahead;
    assert_eq!(ahead(db.store.progress_rows(ids[1]).await.unwrap()), 4, "y waits behind x's four trials");
    assert_eq!(ahead(db.store.progress_rows(ids[2]).await.unwrap()), 0, "nothing else is local");
    let rules = ClaimRules { worker: "w", cluster_cap: 8, parked: &[] };
    let first = db.store.claim_trials(&rules).await.unwrap();
    assert_eq!(first.len(), 2, "a pair: {first:?}");
    assert!(first.iter().all(|c| c.trial.experiment_id == ids[0] && c.trial.repeat_index == 0 && c.lane == "engine:k"));
    let mut ranks: Vec<Option<i64>> = first.iter().map(|c| c.pair_rank).collect();
    ranks.sort();
    assert_eq!(ranks, [Some(0), Some(1)]);
    let mut more = Vec::new();
    loop {
        let c = db.store.claim_trials(&rules).await.unwrap();
        if c.is_empty() {
            break;
        }
        more.extend(c);
    }
    assert_eq!(more.len(), 1, "the suite's cap of 2 is taken: only the local slot is left: {more:?}");
    assert_eq!(more[0].trial.experiment_id, ids[2]);
    assert_eq!(db.store.pair_ranks(ids[0]).await.unwrap().len(), 2);
    assert!(db.store.claim_conclusion(ids[0]).await.unwrap());
    assert!(!db.store.claim_conclusion(ids[0]).await.unwrap(), "concluded once");
}

async fn trial_outcomes_are_final(db: &TestDb) {
    let id = db.store.insert_experiment(&experiment(ExperimentKind::Warp, "phases")).await.unwrap();
    let arms = db.store.arms(id).await.unwrap();
    let plan = [
        InsertTrial { arm_id: arms[0].0, seq: 0, cell: Some("sync-on".into()), repeat_index: 0 },
        InsertTrial { arm_id: arms[1].0, seq: 1, cell: Some("sync-on".into()), repeat_index: 0 },
    ];
    let ids = db.store.insert_trials(id, &plan).await.unwrap();
    let claimed = db.store.claim_next_trial("w").await.unwrap().unwrap();
    assert_eq!(claimed.id, ids[0], "oldest first");
    assert_eq!(claimed.cell.as_deref(), Some("sync-on"));

    let bad = db.store.finish_trial(ids[0], TrialState::InfraFailed, None, None).await.unwrap_err();
    assert!(bad.to_string().contains("infrastructure reason"), "{bad}");
    assert!(db.store.finish_trial(ids[0], TrialState::Running, None, None).await.is_err());
    db.store.finish_trial(ids[0], TrialState::InfraFailed, Some(InfraReason::Timeout), Some("no answer in 600 s")).await.unwrap();
    let again = db.store.finish_trial(ids[0], TrialState::Succeeded, None, None).await.unwrap_err();
    assert!(matches!(again, StoreError::Conflict(_)), "{again}");
    db.store.finish_trial(ids[1], TrialState::Cancelled, None, None).await.unwrap();

    let trials = db.store.trials(id).await.unwrap();
    assert_eq!(trials[0].state, TrialState::InfraFailed);
    assert_eq!(trials[0].infra_reason, Some(InfraReason::Timeout));
    assert_eq!(trials[0].detail.as_deref(), Some("no answer in 600 s"));
    assert_eq!(trials[1].state, TrialState::Cancelled);
    assert!(trials.iter().all(|t| t.finished_at.is_some()));
    assert_eq!(db.store.claim_next_trial("w").await.unwrap(), None);
}

fn stage(execution_id: &str, name: &str, cpu: f64) -> StageRow {
    StageRow {
        execution_id: execution_id.into(),
        stage_name: name.into(),
        status: "END".into(),
        cpu_time_total: cpu,
        elapsed: 7.18,
        items: 100_000.0,
        bytes_processed: 12_345_678.0,
        mem_peak_bytes_max: 180_363_264.0,
        total_shards: Some(4.0),
        cpu_pct_avg: None,
        mem_bytes_avg: None,
        item_rate: Some(13_927.6),
        byte_rate: None,
        ts: Some("2026-06-18T10:00:00Z".into()),
        seq: Some(3),
    }
}

/// What the queue retries when it cannot record an outcome: a write that breaks a constraint (rows of a
/// trial that is gone) never passes, so it is not transient; a store that is away is.
async fn only_passing_faults_are_worth_retrying(db: &TestDb) {
    let orphan = db.store.replace_stage_rows(987_654, &[stage("e1", "stage0", 1.0)]).await.unwrap_err();
    assert!(!orphan.is_transient(), "{orphan:?}");
    let closed = Store::open(&db.url).await.unwrap();
    closed.close().await;
    let away = closed.set_trial_result(1, Some(0), &[]).await.unwrap_err();
    assert!(away.is_transient(), "{away:?}");
}

fn round(workload: &str, round: i64) -> WarpRound {
    WarpRound {
        workload: workload.into(),
        operation: "PUT".into(),
        object_size: 4096,
        drive_sync: true,
        round,
        attempt: 1,
        ok: true,
        reqps: Some(1523.25),
        throughput_bps: Some(6_239_232.0),
        latency_avg_ms: Some(5.2),
        latency_p50_ms: Some(4.9),
        latency_p90_ms: Some(7.7),
        latency_p99_ms: Some(12.5),
        requests: Some(45_697),
        errors: Some(0),
        error_text: None,
    }
}

async fn observations_round_trip_all_or_nothing(db: &TestDb) {
    let id = db.store.insert_experiment(&experiment(ExperimentKind::Pipeline, "rows")).await.unwrap();
    let arms = db.store.arms(id).await.unwrap();
    let t = db.store.insert_trials(id, &[InsertTrial { arm_id: arms[0].0, seq: 0, cell: None, repeat_index: 0 }]).await.unwrap()[0];
    let rows =
        vec![stage("20260618-100000-1a2b3c4d", "stage0-Read", 0.41), stage("20260618-100000-1a2b3c4d", "stage1-Map → Scatter", 1.11)];
    db.store.insert_stage_rows(t, &rows).await.unwrap();
    assert_eq!(db.store.stage_rows(t).await.unwrap(), rows, "every field, including the non-ASCII stage name and NULLs");

    let rounds = vec![round("put-4KiB", 1), round("put-4KiB", 2)];
    db.store.insert_warp_rounds(t, &rounds).await.unwrap();
    assert_eq!(db.store.warp_rounds(t).await.unwrap(), rounds);
    let err = db.store.insert_warp_rounds(t, &[round("get-4KiB", 1), round("put-4KiB", 2)]).await.unwrap_err();
    assert!(err.to_string().contains("round 2 attempt 1 of put-4KiB:PUT is already stored"), "{err}");
    assert_eq!(db.store.warp_rounds(t).await.unwrap().len(), 2, "the get-4KiB round of the refused batch was rolled back");
}

async fn suites_and_noise_profiles_upsert(db: &TestDb) {
    let text = "# three rounds\nrounds = 3\n";
    let first = db.store.upsert_suite("s3-hotpath", ExperimentKind::Warp, &json!({"rounds": 3}), "file:suites/s3.toml", Some(text)).await.unwrap();
    assert_eq!(db.store.suite_by_name("s3-hotpath").await.unwrap().toml.as_deref(), Some(text), "its text, comments and all");
    let second = db.store.upsert_suite("s3-hotpath", ExperimentKind::Warp, &json!({"rounds": 5}), "file:suites/s3.toml", None).await.unwrap();
    assert_eq!(first, second, "same suite, same id");
    let suite = db.store.suite_by_name("s3-hotpath").await.unwrap();
    assert_eq!(suite.definition["rounds"], 5);
    assert_eq!(suite.toml, None, "a definition stored without text drops the old text, which no longer matches");
    assert_eq!(db.store.suites().await.unwrap().len(), 1);
    assert!(matches!(db.store.suite_by_name("missing").await, Err(StoreError::NotFound { .. })));

    assert_eq!(db.store.noise_profile(first, "fp1").await.unwrap(), None);
    let p1 = db.store.upsert_noise_profile(first, "fp1", &json!({"workers": 2}), &json!({"cv": 0.03}), 3).await.unwrap();
    let p2 = db.store.upsert_noise_profile(first, "fp1", &json!({"workers": 2}), &json!({"cv": 0.02}), 6).await.unwrap();
    assert_eq!(p1, p2);
    let profile = db.store.noise_profile(first, "fp1").await.unwrap().unwrap();
    assert_eq!((profile.trials, profile.profile["cv"].as_f64()), (6, Some(0.02)));
    assert!(!db.store.delete_noise_profile(second + 1000, p1).await.unwrap(), "another suite's id removes nothing");
    assert!(db.store.delete_noise_profile(first, p1).await.unwrap());
    assert_eq!(db.store.noise_profile(first, "fp1").await.unwrap(), None);
}

async fn accounts_tokens_and_audit(db: &TestDb) {
    assert_eq!(db.store.count_users().await.unwrap(), 0);
    let ada = db.store.insert_user("ada", "$argon2id$hash", Role::Admin).await.unwrap();
    let dup = db.store.insert_user("ada", "x", Role::Viewer).await.unwrap_err();
    assert!(dup.to_string().contains("\"ada\" already exists"), "{dup}");
    let user = db.store.user_by_name("ada").await.unwrap().unwrap();
    assert_eq!((user.id, user.role), (ada, Role::Admin));
    assert_eq!(db.store.user_by_name("bob").await.unwrap(), None);

    let tok = db.store.insert_api_token(ada, "ci", "hash-1", Role::Launcher, Some(store::now_ms() + 60_000), None).await.unwrap();
    let seen = db.store.touch_api_token("hash-1").await.unwrap().unwrap();
    assert!(seen.is_usable(store::now_ms()) && seen.last_used_at.is_some());
    assert!(!seen.is_usable(store::now_ms() + 120_000), "expired after its expiry");
    db.store.revoke_api_token(tok).await.unwrap();
    assert!(!db.store.touch_api_token("hash-1").await.unwrap().unwrap().is_usable(store::now_ms()));
    assert!(db.store.revoke_api_token(tok).await.is_err(), "revoking twice says so");
    assert_eq!(db.store.touch_api_token("unknown").await.unwrap(), None);

    let e = db.store.insert_experiment(&experiment(ExperimentKind::Pipeline, "shared")).await.unwrap();
    db.store.insert_share_token(e, "share-1", Some(ada), false, None).await.unwrap();
    assert_eq!(db.store.share_token_experiment("share-1").await.unwrap(), Some((e, false)));
    // A link with the files scope, one that has expired, and one revoked on its own.
    let files = db.store.insert_share_token(e, "share-files", Some(ada), true, Some(store::now_ms() + 86_400_000)).await.unwrap();
    db.store.insert_share_token(e, "share-old", Some(ada), true, Some(store::now_ms() - 1)).await.unwrap();
    assert_eq!(db.store.share_token_experiment("share-files").await.unwrap(), Some((e, true)));
    assert_eq!(db.store.share_token_experiment("share-old").await.unwrap(), None, "an expired link opens nothing");
    let links = db.store.share_links(e).await.unwrap();
    assert_eq!(links.iter().map(|l| (l.files, l.created_by.as_deref())).collect::<Vec<_>>(), [(true, Some("ada")), (false, Some("ada"))]);
    db.store.revoke_share_token(e, files).await.unwrap();
    assert_eq!(db.store.share_token_experiment("share-files").await.unwrap(), None);
    assert!(matches!(db.store.revoke_share_token(e, files).await, Err(store::StoreError::NotFound { .. })), "revoked twice");
    assert_eq!(db.store.revoke_share_tokens(e).await.unwrap(), 1);
    assert_eq!(db.store.share_token_experiment("share-1").await.unwrap(), None);

    db.store.audit(Some(ada), "token.create", "api_token:1", None, &json!({"name": "ci"})).await.unwrap();
    db.store.audit(None, "exemption.request", "experiment:1", Some("deliberate correctness tradeoff"), &json!({})).await.unwrap();
    let log = db.store.audit_log(10).await.unwrap();
    assert_eq!(log.len(), 2);
    assert_eq!(log[0].action, "exemption.request", "newest first");
    assert_eq!(log[1].actor.as_deref(), Some("ada"));
    assert_eq!(log[1].detail["name"], "ci");
}

/// A verdict writes the control's levels as trend points (for an experiment of a suite), a new verdict
/// replaces them, and deleting the experiment deletes them.
async fn trend_points_follow_verdicts(db: &TestDb) {
    let rows = judge::warp::compare_csv::parse_compare_csv(
        "pass.csv",
        include_str!("../../../judge/tests/data/warp/compare_pass.csv"),
        Some("put-4KiB/sync-on"),
        false,
    )
    .unwrap();
    let gate = judge::warp::gate::gate(&rows, &judge::warp::gate::GateConfig::default());
    let baseline = gate.rows.iter().find(|r| r.metric == "reqps").and_then(|r| r.baseline).unwrap();
    let report = json!({"gate": gate});
    let suite = db.store.upsert_suite("s3", ExperimentKind::Warp, &json!({}), "test", None).await.unwrap();
    let mut new = experiment(ExperimentKind::Warp, "nightly");
    new.suite_id = Some(suite);
    let id = db.store.insert_experiment(&new).await.unwrap();
    let loose = db.store.insert_experiment(&experiment(ExperimentKind::Warp, "no suite")).await.unwrap();
    for e in [id, id, loose] {
        db.store.record_verdict(e, gate.verdict, &[], &report, None).await.unwrap();
    }
    let query = store::trends::TrendQuery {
        suite_id: suite,
        metric: "reqps".into(),
        items: vec!["put-4KiB/sync-on".into()],
        since: None,
        until: None,
        limit: 10,
    };
    let points = db.store.trend(&query).await.unwrap();
    assert_eq!(points.len(), 1, "one point per experiment, however often it is judged: {points:?}");
    assert_eq!((points[0].experiment_id, points[0].value), (id, baseline));
    assert!(points[0].fingerprint.contains("fineweb-1k"));
    let choices = db.store.trend_choices(suite).await.unwrap();
    assert!(choices.contains(&("p99-latency".to_string(), "put-4KiB/sync-on".to_string())), "{choices:?}");
    assert!(db.store.trend(&store::trends::TrendQuery { until: Some(0), ..query.clone() }).await.unwrap().is_empty());
    // A change point's mark: the latest word replaces the earlier one.
    let key = store::trends::SeriesKey { suite_id: suite, metric: "reqps", item: "put-4KiB/sync-on" };
    let fp = points[0].fingerprint.clone();
    db.store.mark_change(&key, &fp, id, "investigate", "slower put", None).await.unwrap();
    db.store.mark_change(&key, &fp, id, "acknowledged", "new disk", None).await.unwrap();
    let marks = db.store.change_marks(&key).await.unwrap();
    assert_eq!(marks.iter().map(|m| (m.state.as_str(), m.reason.as_str())).collect::<Vec<_>>(), [("acknowledged", "new disk")]);
    assert!(db.store.mark_change(&key, &fp, id, "maybe", "x", None).await.is_err(), "the state is checked by the table too");
    assert_eq!(db.store.control_shas(&[id]).await.unwrap(), [(id, Some("0123456789abcdef0123456789abcdef01234567".to_string()))]);
    db.store.delete_experiment(id).await.unwrap();
    assert!(db.store.change_marks(&key).await.unwrap().is_empty());
    assert!(db.store.trend(&query).await.unwrap().is_empty());
    assert_eq!(count(&db.store, "trend_points").await, 0);
}

async fn notifications_are_queued_once_and_log_attempts(db: &TestDb) {
    let suite = db.store.upsert_suite("s", ExperimentKind::Pipeline, &json!({}), "test", None).await.unwrap();
    let id = db.store.insert_experiment(&experiment(ExperimentKind::Pipeline, "n")).await.unwrap();
    let n = db.store.insert_notification(id, suite, "regression", "http://hook", &json!({"text": "t"})).await.unwrap().unwrap();
    assert_eq!(db.store.insert_notification(id, suite, "regression", "http://hook", &json!({})).await.unwrap(), None, "once per event");
    db.store.record_delivery(n, Err("HTTP 502 Bad Gateway"), false).await.unwrap();
    let log = db.store.notifications(suite, 10).await.unwrap();
    assert_eq!((log[0].status.as_str(), log[0].attempts), ("pending", 1));
    db.store.record_delivery(n, Ok(()), false).await.unwrap();
    let log = db.store.notifications(suite, 10).await.unwrap();
    assert_eq!((log[0].status.as_str(), log[0].attempts, log[0].last_error.as_deref()), ("delivered", 2, Some("HTTP 502 Bad Gateway")));
    assert!(log[0].delivered_at.is_some());
    let other = db.store.insert_notification(id, suite, "infra_failure", "http://hook", &json!({})).await.unwrap().unwrap();
    db.store.record_delivery(other, Err("not sent: refused"), true).await.unwrap();
    assert_eq!(db.store.notifications(suite, 10).await.unwrap()[0].status, "failed");
}

async fn schedule_ticks_are_claimed_once_and_stale_claims_taken_over(db: &TestDb) {
    let suite = db.store.upsert_suite("nightly", ExperimentKind::Pipeline, &json!({}), "file:suites/n.toml", None).await.unwrap();
    let (tick, lease) = (1_000_000_i64, 15 * 60_000_i64);
    let first = db.store.claim_tick(suite, "night", tick, "a", tick + 5, lease).await.unwrap();
    assert!(first.is_some());
    assert_eq!(db.store.claim_tick(suite, "night", tick, "b", tick + 60_000, lease).await.unwrap(), None, "held");
    // "a" died before recording an outcome: once the lease has passed, exactly one replica takes it over.
    let later = tick + 5 + lease + 1;
    assert_eq!(db.store.claim_tick(suite, "night", tick, "b", later, lease).await.unwrap(), first, "the same row, taken over");
    assert_eq!(db.store.claim_tick(suite, "night", tick, "c", later, lease).await.unwrap(), None, "one taker");
    let runs = db.store.schedule_runs(suite, 10).await.unwrap();
    assert_eq!((runs.len(), runs[0].claimed_by.as_str(), runs[0].claimed_at), (1, "b", later));
    // "a" was only slow: its late outcome does not overwrite the new holder's claim.
    assert!(!db.store.finish_tick(first.unwrap(), "a", tick + 5, "launched", Some("old"), None, "late").await.unwrap());
    assert_eq!(db.store.schedule_runs(suite, 10).await.unwrap()[0].outcome, "claimed");
    assert!(db.store.finish_tick(first.unwrap(), "b", later, "skipped", Some("abc"), None, "unchanged").await.unwrap());
    assert_eq!(db.store.schedule_runs(suite, 10).await.unwrap()[0].outcome, "skipped");
    assert!(!db.store.finish_tick(first.unwrap(), "b", later, "failed", None, None, "twice").await.unwrap(), "finished once");
    let much_later = later + 10 * lease;
    assert_eq!(db.store.claim_tick(suite, "night", tick, "d", much_later, lease).await.unwrap(), None, "a finished tick is never retaken");
}

/// `add_repeats` is a compare-and-set: of two callers that read the same plan (two trials ending at once),
/// one adds the pair; a stale or ended experiment gets none.
async fn an_adaptive_experiment_grows_once_per_look(db: &TestDb) {
    let id = db.store.insert_experiment(&experiment(ExperimentKind::Pipeline, "auto")).await.unwrap();
    let arms = db.store.arms(id).await.unwrap();
    let pair = |repeat: i64| -> Vec<InsertTrial> {
        (0..2).map(|a| InsertTrial { arm_id: arms[a as usize].0, seq: repeat * 2 + a, cell: None, repeat_index: repeat }).collect()
    };
    db.store.insert_trials(id, &[pair(0), pair(1)].concat()).await.unwrap();
    // Two callers read "2 repeats planned" at once: one wins.
    let third = pair(2);
    let (a, b) = tokio::join!(db.store.add_repeats(id, 2, 3, &third), db.store.add_repeats(id, 2, 3, &third));
    assert_eq!([a.unwrap(), b.unwrap()].iter().filter(|won| **won).count(), 1);
    assert_eq!(db.store.trials(id).await.unwrap().len(), 6, "one pair added, not two");
    assert!(!db.store.add_repeats(id, 2, 3, &pair(2)).await.unwrap(), "a stale read adds nothing");
    assert!(db.store.add_repeats(id, 3, 4, &pair(3)).await.unwrap());
    // A trial on another experiment's arm is refused, and the plan does not move.
    let other = db.store.insert_experiment(&experiment(ExperimentKind::Pipeline, "other")).await.unwrap();
    let foreign = InsertTrial { arm_id: db.store.arms(other).await.unwrap()[0].0, seq: 8, cell: None, repeat_index: 4 };
    assert!(db.store.add_repeats(id, 4, 5, &[foreign]).await.is_err());
    assert!(db.store.add_repeats(id, 4, 5, &pair(4)).await.unwrap(), "the failed add left the plan at 4");
    // An ended experiment grows no more.
    db.store.set_experiment_status(id, ExperimentStatus::Cancelled).await.unwrap();
    assert!(!db.store.add_repeats(id, 5, 6, &pair(5)).await.unwrap());
    assert_eq!(db.store.trials(id).await.unwrap().len(), 10);
    // Its looks are kept forward only: a look at fewer pairs, judged late, does not replace a later one.
    assert_eq!(db.store.look(id).await.unwrap(), None);
    assert!(db.store.set_look(id, 3, &serde_json::json!({"pairs": 3})).await.unwrap());
    assert!(!db.store.set_look(id, 2, &serde_json::json!({"pairs": 2})).await.unwrap(), "an older look is not kept");
    assert!(!db.store.set_look(id, 3, &serde_json::json!({"pairs": "again"})).await.unwrap());
    assert_eq!(db.store.look(id).await.unwrap(), Some((3, serde_json::json!({"pairs": 3}))));
    assert_eq!(db.store.progress_rows(id).await.unwrap().unwrap().look_pairs, Some(3), "the live stream sees which look is kept");
    assert!(db.store.set_look(id, 4, &serde_json::json!({"pairs": 4})).await.unwrap());
    assert_eq!(db.store.look(id).await.unwrap().map(|l| l.0), Some(4));
    assert!(db.store.look(i64::MAX).await.is_err(), "an unknown experiment is named");
}
