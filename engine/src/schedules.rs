//! The suites' cron schedules, ticking: at each pass, every schedule of every suite whose latest cron tick (at or before `now`)
//! has not been claimed is claimed in the store — exactly one replica wins the claim — and run: the ref
//! is resolved, an unchanged SHA is skipped (a canary's never is), a new one is launched through the normal experiments
//! machinery (as nobody: the schedule is the launcher). Only the latest due tick is claimed, so ticks
//! missed while the server was down run once at start-up, not once each. A claim left unfinished for
//! [`CLAIM_LEASE_MS`] (its process died) is taken over by the next pass. `now` is passed in, so tests
//! drive the ticker with a fast clock.

use crate::launch::git::Repo;
use crate::launch::request::JsonLaunch;
use crate::launch::{launch, Launched};
use crate::Engine;
use judge::cron::Cron;
use judge::units::short_sha as short;
use std::time::Duration;
use suite::schedule::{ScheduleMode, ScheduleSpec};
use suite::SuiteDefinition;

/// What one pass did for one schedule whose tick it claimed.
#[derive(Debug, Clone, PartialEq)]
pub struct TickReport {
    pub suite: String,
    pub schedule: String,
    pub tick_at: i64,
    /// `launched`, `skipped` or `failed`.
    pub outcome: &'static str,
    pub sha: Option<String>,
    pub experiment_id: Option<i64>,
    pub detail: String,
}

/// Runs the ticker every `every` (the first pass at once: the catch-up after downtime).
pub fn spawn(engine: Engine, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            for r in tick(&engine, store::now_ms()).await {
                tracing::info!(suite = %r.suite, schedule = %r.schedule, outcome = r.outcome, experiment = ?r.experiment_id, detail = %r.detail, "schedule tick");
            }
            tokio::time::sleep(every).await;
        }
    })
}

/// How long a claim may stay unfinished before another pass takes it over: resolving the ref (a fetch)
/// and storing the launch take seconds, so a claim this old was left by a process that died.
pub const CLAIM_LEASE_MS: i64 = 15 * 60 * 1000;

/// One pass at `now` (ms since the epoch): the reports of the ticks this replica claimed.
pub async fn tick(engine: &Engine, now: i64) -> Vec<TickReport> {
    let suites = match engine.store.suites().await {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "schedules: cannot read the suites");
            return Vec::new();
        }
    };
    let mut reports = Vec::new();
    for suite in suites {
        let Ok(definition) = serde_json::from_value::<SuiteDefinition>(suite.definition.clone()) else { continue };
        for schedule in &definition.schedules {
            let Some(tick_at) = Cron::parse(&schedule.cron).ok().and_then(|c| c.last_tick(now)) else { continue };
            let claim = match engine.store.claim_tick(suite.id, &schedule.name, tick_at, &engine.queue.worker, now, CLAIM_LEASE_MS).await {
                Ok(Some(id)) => id,
                Ok(None) => continue,
                Err(e) => {
                    tracing::error!(error = %e, suite = %suite.name, schedule = %schedule.name, "schedules: cannot claim the tick");
                    continue;
                }
            };
            let (outcome, sha, experiment_id, detail) = match run(engine, suite.id, &definition, schedule).await {
                Ok(Ran::Launched { sha, id, detail }) => ("launched", Some(sha), Some(id), detail),
                Ok(Ran::Unchanged(sha)) => {
                    ("skipped", Some(sha.clone()), None, format!("{} is still at {}", schedule.git_ref, short(&sha)))
                }
                Err(e) => ("failed", None, None, e),
            };
            match engine.store.finish_tick(claim, &engine.queue.worker, now, outcome, sha.as_deref(), experiment_id, &detail).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::warn!(suite = %suite.name, schedule = %schedule.name, "schedules: the tick's claim was taken over before it finished; its outcome is the new holder's")
                }
                Err(e) => tracing::error!(error = %e, "schedules: cannot record the tick"),
            }
            reports.push(TickReport {
                suite: suite.name.clone(),
                schedule: schedule.name.clone(),
                tick_at,
                outcome,
                sha,
                experiment_id,
                detail,
            });
        }
    }
    reports
}

enum Ran {
    Launched { sha: String, id: i64, detail: String },
    Unchanged(String),
}

async fn run(engine: &Engine, suite_id: i64, suite: &SuiteDefinition, schedule: &ScheduleSpec) -> Result<Ran, String> {
    let repo = Repo::open(&suite.repository, &engine.data_dir).await?;
    let sha = repo.resolve(&schedule.git_ref).await.map_err(|e| e.to_string())?;
    let store = &engine.store;
    // A canary measures the host and the judge, not a change: it runs whether the ref moved or not.
    if schedule.mode != ScheduleMode::Canary
        && store.last_scheduled_sha(suite_id, &schedule.name).await.map_err(|e| e.to_string())?.as_deref() == Some(sha.as_str())
    {
        return Ok(Ran::Unchanged(sha));
    }
    let (base, title, detail) = match schedule.mode {
        ScheduleMode::Baseline => (
            None,
            format!("{}: {} baseline of {} at {}", suite.name, schedule.name, schedule.git_ref, short(&sha)),
            "a baseline".to_string(),
        ),
        ScheduleMode::Canary => (
            None,
            format!("{}: {} canary of {} at {}", suite.name, schedule.name, schedule.git_ref, short(&sha)),
            "a same-code canary".to_string(),
        ),
        ScheduleMode::Ab => {
            let good = store.last_good_scheduled_sha(suite_id, &schedule.name).await.map_err(|e| e.to_string())?;
            let base = good.unwrap_or_else(|| sha.clone());
            let title = format!("{}: {} of {} at {} vs {}", suite.name, schedule.name, schedule.git_ref, short(&sha), short(&base));
            let detail = format!("an A/B against {}", short(&base));
            (Some(base), title, detail)
        }
    };
    let req = JsonLaunch {
        suite: suite.name.clone(),
        // The ref (so the arm shows it); what ran is read back from the stored arm.
        // A canary runs the SHA resolved here against itself (the ref could move meanwhile).
        head: if schedule.mode == ScheduleMode::Canary { sha.clone() } else { schedule.git_ref.clone() },
        base,
        arms: Vec::new(),
        fingerprint: schedule.fingerprint.clone(),
        trials: schedule.trials.map(wire::launch::JsonTrials::Fixed),
        max_trials: None,
        order: None,
        warm_up: None,
        shared_cpus: false,
        canary: schedule.mode == ScheduleMode::Canary,
        title: Some(title),
        exemption: None,
        budgets: None,
        // A schedule runs the suite's full matrix (the nightly).
        warp: None,
        calibration: false,
        baseline: schedule.mode == ScheduleMode::Baseline,
        reuse_baseline: None,
        detect_pct: None,
        focus: None,
        focus_bad_end_pct: None,
        cpu_margin_pct: None,
        no_regression_pct: None,
        dry_run: false,
    };
    match launch(engine, None, &req).await {
        Ok(Launched::Stored { id, .. }) => {
            let arms = store.arms(id).await.map_err(|e| e.to_string())?;
            let ran = arms.last().and_then(|a| a.3.clone()).unwrap_or(sha);
            Ok(Ran::Launched { sha: ran, id, detail })
        }
        Ok(Launched::DryRun(_)) => Err("the launch was a dry run".into()),
        Err(e) => Err(e.to_string()),
    }
}
