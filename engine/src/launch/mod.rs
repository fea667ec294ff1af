//! Launching: a request is checked, its refs resolved to SHAs (`git`), its fingerprint validated and a
//! stored baseline reused where asked (`reuse`), and it becomes a plan of trials (`request`, `plan`);
//! the plan is stored with its queued trials (`submit`) and the trial queue woken.

pub mod git;
pub mod plan;
pub mod request;
pub mod reuse;
pub mod submit;

use crate::error::{EngineError, EngineResult};
use crate::Engine;
use request::{resolve, JsonLaunch, JsonLaunchPlan, RunContext};
use serde_json::json;
use suite::SuiteDefinition;

/// What a launch request came to: a dry run's plan, or the stored experiment.
pub enum Launched {
    DryRun(Box<JsonLaunchPlan>),
    Stored { id: i64, url: String, trials: usize },
}

/// Resolves a launch request and, unless it is a dry run, stores it and wakes the trial queue (also
/// behind re-run and the schedules, which launch as nobody: `me` is `None`).
pub async fn launch(engine: &Engine, me: Option<i64>, req: &JsonLaunch) -> EngineResult<Launched> {
    let suite = match engine.store.suite_by_name(&req.suite).await {
        Ok(s) => s,
        Err(store::StoreError::NotFound { .. }) => return Err(EngineError::Invalid(format!("suite: there is no suite {:?}", req.suite))),
        Err(e) => return Err(e.into()),
    };
    let mut definition: SuiteDefinition =
        serde_json::from_value(suite.definition).map_err(|e| EngineError::Internal(format!("stored suite {:?}: {e}", req.suite)))?;
    // A warp launch's own matrix: the stored copy of the suite carries it, so the plan, the phases and
    // the verdict all run the matrix asked for.
    if let Some(asked) = req.warp.as_ref().filter(|m| !m.is_empty()) {
        match definition.warp.as_mut().filter(|_| definition.kind == judge::ExperimentKind::Warp) {
            Some(warp) => *warp = warp.with_matrix(asked).map_err(EngineError::Invalid)?,
            None => return Err(EngineError::Invalid("warp: only a warp suite takes matrix settings".into())),
        }
    }
    // A CPU margin asked for this experiment judges it: the stored copy of the suite carries it.
    if let Some(m) = req.cpu_margin_pct {
        if !(m > 0.0 && m < 100.0) || definition.kind != judge::ExperimentKind::Pipeline {
            return Err(EngineError::Invalid(format!(
                "cpu_margin_pct: {m}: a pipeline launch's CPU margin is a percent above 0, below 100"
            )));
        }
        definition.judge = Some(suite::definition::JudgeSpec { cpu_margin_pct: Some(m), ..definition.judge.unwrap_or_default() });
    }
    // X of the third answer asked for this experiment: the stored copy carries it; checked as the suite's.
    if let Some(x) = req.no_regression_pct {
        if definition.kind != judge::ExperimentKind::Pipeline {
            return Err(EngineError::Invalid(format!(
                "no_regression_pct: {x}: only a pipeline launch has a \"no regression of X %\" answer"
            )));
        }
        definition.judge = Some(suite::definition::JudgeSpec { no_regression_pct: Some(x), ..definition.judge.unwrap_or_default() });
        if let Err((_, why)) = definition.judge_method(true).check() {
            return Err(EngineError::Invalid(format!("no_regression_pct: {why}")));
        }
    }
    // The phase order asked for (ABBA) is the stored matrix's too: its rounds an arm, the adaptive cap and
    // gate.md's matrix line follow it.
    if let Some(warp) = definition.warp.as_mut().filter(|_| req.order == Some(suite::definition::TrialOrder::Abba)) {
        warp.order = suite::warp::PhaseOrder::Abba;
    }
    let ctx = RunContext {
        data_dir: &engine.data_dir,
        label: "dry".into(),
        finelog_url: engine.queue.finelog.clone().unwrap_or_else(|_| "http://finelog.pending".into()),
        python: engine.queue.python.as_ref().map(|p| p.to_string_lossy().into_owned()),
    };
    let reused = match &req.reuse_baseline {
        Some(choice) => {
            let fingerprint = definition.validate_fingerprint(&req.fingerprint)?;
            let found = reuse::find(engine, suite.id, &definition, &fingerprint, choice, store::now_ms()).await;
            Some(found.map_err(|e| EngineError::Invalid(format!("{e} — {}", reuse::OFFER)))?)
        }
        None => None,
    };
    let mut plan = resolve(req, &definition, &ctx, reused.as_ref()).await?;
    // How many run at once in the lane its trials will take, and how many trials are in that lane already.
    let lane = submit::lane(&definition);
    let at_once = lane.at_once(engine.queue.cluster_cap);
    let ahead = engine.store.trials_in_lane(&lane.key).await?;
    if let Some(p) = req.detect_pct.filter(|p| !(*p > 0.0 && *p < 100.0)) {
        return Err(EngineError::Invalid(format!(
            "detect_pct: {p}: give the CPU change to size the trials for, in percent (above 0, below 100)"
        )));
    }
    if definition.kind == judge::ExperimentKind::Pipeline && !plan.calibration && !plan.baseline {
        let hash = submit::fingerprint_hash(&plan.fingerprint);
        let stored = engine.store.noise_profile(suite.id, &hash).await?;
        let profile: Option<judge::pipeline::noise::NoiseProfile> = stored.and_then(|p| serde_json::from_value(p.profile).ok());
        let paired = plan.order != suite::definition::TrialOrder::Blocked && plan.reused_baseline.is_none();
        let method = definition.judge_method(paired);
        let arms = plan.arms.len().saturating_sub(1);
        let mut detectable = judge::pipeline::power::detectable(plan.trials_per_arm, arms, &method, profile.as_ref(), req.detect_pct);
        // An adaptive launch is judged by the sequential design: its X is planned from its budget so.
        if let Some(a) = plan.adaptive.as_ref() {
            let design = judge::pipeline::power::Design::Sequential;
            let x = judge::pipeline::power::no_regression(a.max_trials as usize, &method, profile.as_ref(), design);
            detectable.no_regression = Some(x);
        }
        // An adaptive launch expects about what a fixed design needs to detect the margin (a clear change
        // stops sooner, a change at the margin may take longer), within its first look and its budget.
        if let Some(a) = plan.adaptive.as_mut() {
            let first = a.first_look();
            let needed = detectable.trials_for_target.unwrap_or(a.max_trials);
            a.expected_trials = Some(needed.div_ceil(a.step) * a.step).map(|n| n.clamp(first, a.max_trials));
            a.beyond_budget = detectable.trials_for_target.is_none_or(|n| n > a.max_trials);
        }
        plan.detectable = Some(detectable);
    }
    plan.estimate_from(&engine.store.recent_trial_seconds(suite.id, 20).await?, at_once as usize, ahead as usize);
    if req.dry_run {
        return Ok(Launched::DryRun(Box::new(plan)));
    }
    if let (Err(why), judge::ExperimentKind::Pipeline) = (&engine.queue.finelog, definition.kind) {
        return Err(EngineError::Unavailable(format!(
            "this server has no finelog server to collect stage rows from ({why}); set ARBITER_FINELOG_URL, \
             or ARBITER_PYTHON to a Python with marin-finelog-server (scripts/setup.sh makes .venv) so Arbiter runs its own"
        )));
    }
    // Code from a branch that would run on this host: a local pipeline trial, a warp phase's server in local
    // mode, or a warp build from source (in either mode).
    let runs_here = match (definition.kind, definition.warp.as_ref()) {
        (judge::ExperimentKind::Warp, Some(w)) => {
            !w.external() || plan.arms.iter().any(|a| !w.binaries.contains_key(&a.name) && !w.build.is_empty())
        }
        _ => definition.launcher == suite::definition::Launcher::Local,
    };
    if let (crate::queue::sandbox::TrialSandbox::Missing(why), true) = (&engine.queue.sandbox, runs_here) {
        return Err(EngineError::Unavailable(format!(
            "this server has no sandbox for trials ({why}); a trial runs a branch's code here, so it is refused. \
             An admin may start serve with --unsandboxed-trials to run trials as the server's user"
        )));
    }
    // Budgets asked for this experiment judge it: the stored copy of the suite carries them.
    if let (Some(b), Some(warp)) = (req.budgets, definition.warp.as_mut()) {
        (warp.fail_pct, warp.warn_pct) = (b.fail_pct, b.warn_pct);
    }
    let id = submit::store_launch(&engine.store, suite.id, &definition, &plan, me).await?;
    let detail = json!({"suite": definition.name, "arms": plan.arms.iter().map(|a| json!({"name": a.name, "sha": a.sha})).collect::<Vec<_>>(),
        "budgets": req.budgets, "reused_baseline": plan.reused_baseline.as_ref().map(|r| r.experiment_id)});
    engine.store.audit(me, "experiment.launch", &format!("experiment:{id}"), None, &detail).await?;
    if let Some(reason) = &plan.exemption {
        engine.store.audit(me, "exemption.request", &format!("experiment:{id}"), Some(reason), &json!({})).await?;
    }
    engine.queue.notify.notify_one();
    let url = format!("{}/experiments/{id}", engine.base_url);
    Ok(Launched::Stored { id, url, trials: plan.trials.len() })
}
