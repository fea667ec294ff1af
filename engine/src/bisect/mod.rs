//! Bisection: a job over a suite, a fingerprint, a good and a bad commit and the metric that moved. It
//! lists the first-parent range between them, and runs its steps as ordinary experiments — adaptive
//! pipeline A/Bs whose one focus stage decides when they stop, or warp A/Bs of the one moved cell — until
//! `judge::bisect` names the commit (or says there is none, or where it could not decide).
//!
//! * [`start`] checks a request, lists the range and its plan (a dry run stops there), stores the
//!   bisection and launches its first step.
//! * [`advance`] (`advance.rs`) reads the steps that ended and launches what the search asks next; it runs
//!   when a step's experiment ends (`lifecycle`), at start-up for bisections left running, and after a start.
//! * [`cancel`] stops a bisection and every step still running.

mod advance;

pub use advance::{advance, cancel, experiment_ended, resume_all};

use crate::error::{EngineError, EngineResult};
use crate::launch::git::Repo;
use crate::launch::{launch, Launched};
use crate::Engine;
use judge::bisect::{BisectMetric, Commit, Search, Step, StepRole};
use serde_json::json;
use suite::SuiteDefinition;
use wire::bisection::{JsonBisectBudget, JsonBisectPlan, JsonBisectionRequest, JsonBisectionState};
use wire::launch::{JsonLaunch, JsonTrials, JsonWarpMatrix, TrialOrder};

/// The largest margin a step is held to (half a very large change would be more).
pub const MAX_STEP_MARGIN_PCT: f64 = 50.0;

/// Default wall time of a bisection, in minutes.
pub const DEFAULT_MAX_MINUTES: u32 = 720;

/// What a bisection request came to.
pub enum Started {
    /// A dry run: the range and the plan, nothing stored.
    DryRun(Box<JsonBisectionState>),
    Stored {
        id: i64,
        url: String,
    },
}

/// Checks a request, lists its range and plan; unless a dry run, stores the bisection and launches its
/// first step.
pub async fn start(engine: &Engine, me: Option<i64>, req: &JsonBisectionRequest) -> EngineResult<Started> {
    let suite = match engine.store.suite_by_name(&req.suite).await {
        Ok(s) => s,
        Err(store::StoreError::NotFound { .. }) => return Err(EngineError::Invalid(format!("suite: there is no suite {:?}", req.suite))),
        Err(e) => return Err(e.into()),
    };
    let definition: SuiteDefinition =
        serde_json::from_value(suite.definition).map_err(|e| EngineError::Internal(format!("stored suite {:?}: {e}", req.suite)))?;
    let metric = BisectMetric::parse(definition.kind, &req.metric).map_err(EngineError::Invalid)?;
    for (field, r) in [("good", &req.good), ("bad", &req.bad)] {
        judge::launch_rules::check_ref(field, r)?;
    }
    if let Some(t) = &req.title {
        judge::launch_rules::check_text("title", t, judge::launch_rules::TITLE_MAX)?;
    }
    let fingerprint = definition.validate_fingerprint(&req.fingerprint)?;
    if let (BisectMetric::WarpCell { cell, .. }, Some(warp)) = (&metric, definition.warp.as_ref()) {
        let (w, on) = metric.warp_cell().unwrap_or_default();
        let sync = if on { "on" } else { "off" };
        if !warp.workloads.iter().any(|x| x == w) || !warp.drive_sync.values.iter().any(|v| v == sync) {
            return Err(EngineError::Invalid(format!(
                "metric: suite {:?} has no cell {cell} (workloads {}; drive sync {})",
                definition.name,
                warp.workloads.join(", "),
                warp.drive_sync.values.join(", ")
            )));
        }
    }
    let repo = Repo::open(&definition.repository, &engine.data_dir).await.map_err(EngineError::Upstream)?;
    let good = repo.resolve(&req.good).await.map_err(|e| e.at("good"))?;
    let bad = repo.resolve(&req.bad).await.map_err(|e| e.at("bad"))?;
    if good == bad {
        return Err(EngineError::Invalid("good and bad name the same commit: there is nothing between them".into()));
    }
    let range = repo.first_parent_range(&good, &bad, judge::bisect::MAX_COMMITS).await.map_err(EngineError::Invalid)?;
    let commits: Vec<Commit> = range.into_iter().map(|(sha, merge, subject)| Commit { sha, subject, merge }).collect();
    let good_commit = Commit { subject: repo.subject(&good).await.unwrap_or_default(), sha: good.clone(), merge: false };

    // The ends already compared: the experiment the bisection starts from.
    let mut steps = Vec::new();
    if let Some(eid) = req.experiment_id {
        steps.push(reused_ends(engine, eid, &definition, &fingerprint, &good, &bad, commits.len()).await?);
    }

    // The budget: the request, else the suite's [bisect], else what the range needs.
    let defaults = definition.bisect.unwrap_or_default();
    let cluster_parallel = definition.cluster.as_ref().and_then(|c| c.max_parallel).map(|m| (m / 2).max(1));
    let parallel = req.parallel.or(defaults.parallel).or(cluster_parallel).unwrap_or(1);
    if !(1..=judge::bisect::MAX_PARALLEL as u32).contains(&parallel) {
        return Err(EngineError::Invalid(format!("parallel {parallel}: probe 1–{} commits at once", judge::bisect::MAX_PARALLEL)));
    }
    let (probes, needed) = Search::expected_steps(commits.len(), parallel as usize, !steps.is_empty());
    let max_trials = req.max_trials.or(defaults.max_trials).unwrap_or(definition.defaults.max_trials);
    let max_steps = req.max_steps.or(defaults.max_steps).unwrap_or(needed as u32 + 2);
    let max_minutes = req.max_minutes.or(defaults.max_minutes).unwrap_or(DEFAULT_MAX_MINUTES);
    if !(1..=200).contains(&max_steps) {
        return Err(EngineError::Invalid(format!("max_steps {max_steps}: use 1–200 experiments")));
    }
    if !(2..=100).contains(&max_trials) {
        return Err(EngineError::Invalid(format!("max_trials {max_trials}: use 2–100 trials an arm a step")));
    }
    if !(1..=10_080).contains(&max_minutes) {
        return Err(EngineError::Invalid(format!("max_minutes {max_minutes}: use 1–10080 (a week)")));
    }
    let budget = JsonBisectBudget { max_steps, max_trials, max_minutes, parallel };
    let margin_pct = req.margin_pct.unwrap_or_else(|| definition.judge_method(true).cpu_margin_pct);
    if !(margin_pct > 0.0 && margin_pct < 100.0) {
        return Err(EngineError::Invalid(format!(
            "margin_pct {margin_pct}: the smallest change worth finding is a percent above 0, below 100"
        )));
    }
    let search = Search { good: good_commit, commits, steps, parallel: parallel as usize };
    let title = req.title.clone().unwrap_or_else(|| {
        format!("{}: bisect {} in {}..{}", definition.name, metric.words(), judge::units::short_sha(&good), judge::units::short_sha(&bad))
    });
    let mut state = JsonBisectionState {
        metric,
        search,
        fingerprint: fingerprint.clone().into_iter().collect(),
        budget,
        plan: JsonBisectPlan {
            probes: probes as u32,
            steps: needed as u32,
            trials_per_step: 0,
            max_trials_per_step: max_trials,
            minutes_per_step: None,
            words: String::new(),
        },
        warp: req.warp.clone(),
        margin_pct,
        outcome: None,
        culprit: None,
        log: Vec::new(),
        title,
    };
    // What one step looks like: the bad end against the good, as a dry run of its launch (the launch's own
    // checks run on it, so a bad fingerprint or matrix is refused here, not at the first step).
    if !state.search.commits.is_empty() {
        let n = state.search.commits.len() - 1;
        let step = step_request(&definition.name, &state, StepRole::Ends, n, None, true);
        // A step is adaptive (pipeline): it runs from its first look up to the budget, as its metric needs;
        // the time given is the budget's (an upper bound). A warp step: its matrix's estimate.
        if let Launched::DryRun(plan) = launch(engine, me, &step).await? {
            state.plan.trials_per_step = plan.adaptive.as_ref().map_or(plan.trials_per_arm, |a| a.first_look());
            state.plan.minutes_per_step =
                plan.adaptive.as_ref().and_then(|a| a.budget_minutes).or(plan.estimated_minutes).map(|m| (m * 10.0).round() / 10.0);
        }
    }
    state.plan.words = plan_words(&state);
    if req.dry_run {
        return Ok(Started::DryRun(Box::new(state)));
    }
    let request = serde_json::to_value(req).map_err(|e| EngineError::Internal(e.to_string()))?;
    let spec = state.metric.spec();
    let id = engine
        .store
        .insert_bisection(&store::bisections::InsertBisection {
            suite_id: suite.id,
            suite_name: &definition.name,
            good_sha: &good,
            bad_sha: &bad,
            metric: &spec,
            request: &request,
            state: &state,
            launched_by: me,
        })
        .await?;
    let detail = json!({"suite": definition.name, "good": good, "bad": bad, "metric": spec, "commits": state.search.commits.len()});
    engine.store.audit(me, "bisection.start", &format!("bisection:{id}"), None, &detail).await?;
    advance(engine, id).await;
    Ok(Started::Stored { id, url: format!("{}/bisections/{id}", engine.base_url) })
}

/// "8 commits from 3f2a1b… (good) to 9c0d… (bad); expect 3 probing experiments + the ends + 1
/// confirmation = 5 experiments, about 4 trials an arm each (at most 12): about 40 minutes …".
fn plan_words(state: &JsonBisectionState) -> String {
    let s = &state.search;
    let p = &state.plan;
    let reused = s.steps.iter().any(|x| x.reused);
    let ends = if reused { "the ends already compared (reused)" } else { "the ends" };
    let minutes = p
        .minutes_per_step
        .map(|m| format!(", at most about {} minutes each ({} in all)", fmt_minutes(m), fmt_minutes(m * f64::from(p.steps))))
        .unwrap_or_default();
    let trials = match state.metric {
        BisectMetric::StageCpu { .. } => format!("{}–{} trials an arm each, as each needs", p.trials_per_step, p.max_trials_per_step),
        BisectMetric::WarpCell { .. } => format!("{} rounds an arm each on one cell", p.trials_per_step),
    };
    let merges = s.commits.iter().filter(|c| c.merge).count();
    let margin = match state.metric {
        BisectMetric::StageCpu { .. } => format!(
            "; CPU held to ±{} (half the ends' change once measured, if more)",
            judge::pipeline::report::fmt_margin(state.margin_pct)
        ),
        BisectMetric::WarpCell { .. } => String::new(),
    };
    format!(
        "{} commit{} after {} (good) up to {} (bad){}; expect {} probing experiment{} + {ends} + 1 confirmation = {} experiment{}, \
         {trials}{minutes}{margin}; budget: {} experiments, {} minutes, {} at once",
        s.commits.len(),
        if s.commits.len() == 1 { "" } else { "s" },
        judge::units::short_sha(&s.good.sha),
        s.commits.last().map_or("-".into(), |c| judge::units::short_sha(&c.sha).to_string()),
        if merges > 0 { format!(", {merges} of them merges (a merge is probed as one commit)") } else { String::new() },
        p.probes,
        if p.probes == 1 { "" } else { "s" },
        p.steps,
        if p.steps == 1 { "" } else { "s" },
        state.budget.max_steps,
        state.budget.max_minutes,
        state.budget.parallel,
    )
}

fn fmt_minutes(m: f64) -> String {
    if m < 10.0 {
        format!("{m:.1}")
    } else {
        format!("{m:.0}")
    }
}

/// The launch request of one step: the commit at `commit` against `against` (the good end when `None`).
pub(crate) fn step_request(
    suite: &str,
    state: &JsonBisectionState,
    role: StepRole,
    commit: usize,
    against: Option<usize>,
    dry_run: bool,
) -> JsonLaunch {
    let s = &state.search;
    let head = s.commits[commit].sha.clone();
    let base = against.map_or(s.good.sha.clone(), |i| s.commits[i].sha.clone());
    let what = match role {
        StepRole::Ends => "the ends",
        StepRole::Probe => "probe",
        StepRole::Confirm => "confirm",
    };
    let mut req = JsonLaunch {
        suite: suite.to_string(),
        head: head.clone(),
        base: Some(base.clone()),
        fingerprint: state.fingerprint.clone(),
        title: Some(format!(
            "bisect {what}: {} vs {} ({})",
            judge::units::short_sha(&head),
            judge::units::short_sha(&base),
            state.metric.words()
        )),
        dry_run,
        ..JsonLaunch::default()
    };
    match &state.metric {
        BisectMetric::StageCpu { stage } => {
            req.trials = Some(JsonTrials::AUTO);
            req.max_trials = Some(state.budget.max_trials);
            req.order = Some(TrialOrder::Interleaved);
            req.focus = Some(stage.clone());
            req.cpu_margin_pct = Some(step_margin(state));
            // Once the ends moved, a probe is decided by which end it resembles (method 3).
            req.focus_bad_end_pct = state.search.direction().and(state.search.total_pct());
        }
        BisectMetric::WarpCell { .. } => {
            let (w, on) = state.metric.warp_cell().unwrap_or_default();
            let asked = state.warp.clone().unwrap_or_default();
            req.warp = Some(JsonWarpMatrix {
                workloads: Some(vec![w.to_string()]),
                drive_sync: Some(vec![if on { "on" } else { "off" }.to_string()]),
                max_rounds: asked.max_rounds.or(Some(state.budget.max_trials)),
                ..asked
            });
        }
    }
    req
}

/// The CPU margin a pipeline step is held to: the bisection's, or — once the ends moved — half their
/// change (on the log scale) if that is more. A probe then only has to tell "as the bad end" from "as the
/// good end": "not moved" is an interval inside the halfway mark, "moved" one that clears zero and is not
/// inside it. A margin at the noise floor would make a "not moved" probe prove flatness to within a few
/// percent, which on this project's 2-core machines (Zephyr's tiny stage spreads 15–25 % from trial to
/// trial) takes hundreds of pairs.
pub fn step_margin(state: &JsonBisectionState) -> f64 {
    let half = state.search.direction().and(state.search.total_pct()).map_or(0.0, |t| {
        let log = (1.0 + t / 100.0).ln().abs() / 2.0;
        (log.exp() - 1.0) * 100.0
    });
    // Capped at 50 %: a margin is "changes within it are negligible", and a launch takes below 100 %.
    let m = state.margin_pct.max(half.min(MAX_STEP_MARGIN_PCT));
    (m * 10.0).round() / 10.0
}

/// The ends step from an experiment that already compared them: same suite and fingerprint, control at
/// the good end, treatment at the bad end, judged.
async fn reused_ends(
    engine: &Engine,
    eid: i64,
    definition: &SuiteDefinition,
    fingerprint: &suite::definition::Fingerprint,
    good: &str,
    bad: &str,
    n: usize,
) -> EngineResult<Step> {
    let field = |why: String| EngineError::Invalid(format!("experiment_id {eid}: {why}"));
    let summary = engine.store.experiment_summary(eid).await.map_err(|_| field("there is no such experiment".into()))?;
    if summary.suite.as_deref() != Some(definition.name.as_str()) {
        return Err(field(format!("it ran suite {:?}, not {:?}", summary.suite.unwrap_or_default(), definition.name)));
    }
    if summary.status != judge::ExperimentStatus::Judged {
        return Err(field(format!("it is {}, not judged", summary.status.as_str())));
    }
    let arms = engine.store.arms(eid).await?;
    let shas: Vec<Option<&str>> = arms.iter().map(|a| a.3.as_deref()).collect();
    if shas.len() != 2 || shas[0] != Some(good) || shas[1] != Some(bad) {
        return Err(field("it did not compare the good end (control) with the bad end (treatment)".into()));
    }
    let plan = crate::launch::submit::plan_of(engine, eid).await.map_err(EngineError::Internal)?;
    if &plan.launch.fingerprint != fingerprint {
        return Err(field(format!(
            "its fingerprint {} is not this bisection's {}",
            serde_json::to_string(&plan.launch.fingerprint).unwrap_or_default(),
            serde_json::to_string(fingerprint).unwrap_or_default()
        )));
    }
    let mut step = Step::new(StepRole::Ends, n.saturating_sub(1), None);
    step.experiment_id = Some(eid);
    step.reused = true;
    Ok(step)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(i: usize) -> Commit {
        Commit { sha: format!("{i:040x}"), subject: format!("c{i}"), merge: false }
    }

    /// Four commits after a good end, no step run yet, a 2 % margin and a budget of 12 trials an arm.
    fn state(metric: BisectMetric) -> JsonBisectionState {
        JsonBisectionState {
            metric,
            search: Search { good: commit(99), commits: (0..4).map(commit).collect(), steps: Vec::new(), parallel: 1 },
            fingerprint: serde_json::Map::new(),
            budget: JsonBisectBudget { max_steps: 6, max_trials: 12, max_minutes: 60, parallel: 1 },
            plan: JsonBisectPlan {
                probes: 2,
                steps: 4,
                trials_per_step: 4,
                max_trials_per_step: 12,
                minutes_per_step: None,
                words: String::new(),
            },
            warp: None,
            margin_pct: 2.0,
            outcome: None,
            culprit: None,
            log: Vec::new(),
            title: String::new(),
        }
    }

    #[test]
    fn a_pipeline_step_is_adaptive_and_focused_a_warp_step_runs_one_cell() {
        let mut state = state(BisectMetric::StageCpu { stage: "stage3-Map → Write".into() });
        let r = step_request("s", &state, StepRole::Confirm, 2, Some(1), false);
        assert_eq!((r.head.as_str(), r.base.as_deref()), (commit(2).sha.as_str(), Some(commit(1).sha.as_str())));
        assert_eq!((r.trials, r.max_trials, r.focus.as_deref()), (Some(JsonTrials::AUTO), Some(12), Some("stage3-Map → Write")));
        assert_eq!(r.focus_bad_end_pct, None, "before the ends moved, a step is held to its margin");
        let mut ends = Step::new(StepRole::Ends, 3, None);
        (ends.reading, ends.change_pct) = (Some(judge::bisect::Reading::Moved), Some(21.0));
        state.search.steps.push(ends);
        let r = step_request("s", &state, StepRole::Probe, 1, None, false);
        assert_eq!(r.focus_bad_end_pct, Some(21.0), "after: a probe is decided by which end it resembles");
        state.search.steps.clear();
        state.metric = BisectMetric::WarpCell { cell: "get-4KiB/sync-off".into(), metric: "reqps".into() };
        let r = step_request("s", &state, StepRole::Probe, 1, None, false);
        assert_eq!(r.base.as_deref(), Some(commit(99).sha.as_str()));
        let m = r.warp.unwrap();
        assert_eq!((m.workloads.unwrap(), m.drive_sync.unwrap()), (vec!["get-4KiB".to_string()], vec!["off".to_string()]));
        assert!(r.focus.is_none());
    }

    #[test]
    fn a_step_is_held_to_half_the_ends_change_capped() {
        let mut state = state(BisectMetric::StageCpu { stage: "s".into() });
        assert_eq!(step_margin(&state), 2.0, "before the ends: the bisection's margin");
        let mut ends = Step::new(StepRole::Ends, 3, None);
        (ends.reading, ends.change_pct) = (Some(judge::bisect::Reading::Moved), Some(21.0));
        state.search.steps.push(ends);
        assert_eq!(step_margin(&state), 10.0, "half of +21 % on the log scale: √1.21 = 1.10");
        state.search.steps[0].change_pct = Some(322.0);
        assert_eq!(step_margin(&state), MAX_STEP_MARGIN_PCT, "capped");
        state.search.steps[0].change_pct = Some(-30.0);
        assert_eq!(step_margin(&state), 19.5, "a decrease: half of ln(0.7)");
    }
}
