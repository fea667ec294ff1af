//! A trial's end and what follows it, in one place: [`trial_ended`] records the trial's outcome, then
//! [`experiment_step`] moves its experiment on — an adaptive experiment may add a pair (`adaptive`), a
//! warp matrix more phases (`warp::adaptive`); once none of its trials is queued or running its worktrees
//! go and it is judged (pipeline A/B: the judge on its trials' rows, a reused baseline's rows as the
//! control, `judging`), calibrated (its spread becomes a noise profile) or measured (a baseline run:
//! levels, no verdict) — warp experiments end in `warp::run::finish` — then the suite's `[notify]` is sent
//! and a bisection it is a step of moves on. The queue ends every trial through `trial_ended`.

use crate::launch::submit::StoredPlan;
use crate::judging::{succeeded_measurements, verdict};
use crate::launch::submit::plan_of;
use crate::queue::runner;
use crate::Engine;
use judge::pipeline::{ArmSpec, PipelineConfig};
use judge::ExperimentStatus;
use std::path::Path;
use store::trials::Trial;

/// A trial ended with `outcome`: recorded (`queue::execution::apply`), then its experiment moves on.
pub(crate) async fn trial_ended(engine: &Engine, trial: &Trial, outcome: crate::queue::runner::Outcome) {
    crate::queue::execution::apply(engine, trial, outcome).await;
    experiment_step(engine, trial.experiment_id).await;
}

/// Moves an experiment on after one of its trials ended (or it was cancelled): adapts, and once none of
/// its trials is queued or running judges it, then sends what its suite's `[notify]` asks for and
/// advances a bisection it is a step of.
pub(crate) async fn experiment_step(engine: &Engine, experiment_id: i64) {
    let plan = plan_of(engine, experiment_id).await;
    let Ok(mut trials) = engine.store.trials(experiment_id).await else { return };
    // An adaptive experiment looks at its settled pairs first, and may add the next (`adaptive`); then its
    // trials are read again (queued ones no longer needed were cancelled).
    if let Some(p) = plan.as_ref().ok().filter(|p| p.launch.adaptive.is_some()) {
        if let crate::adaptive::Step::Added(_) = crate::adaptive::step(engine, experiment_id, &trials, p).await {
            return;
        }
        let Ok(again) = engine.store.trials(experiment_id).await else { return };
        trials = again;
    }
    if trials.iter().any(|t| !t.state.is_terminal()) {
        return;
    }
    // A warp experiment with adaptive rounds may add phases for cells still unsure (`warp::adaptive`).
    if let Some(p) = plan.as_ref().ok().filter(|p| p.suite.warp.is_some()) {
        if crate::warp::adaptive::step(engine, experiment_id, &trials, p).await {
            return;
        }
    }
    // Trials run side by side: of two ending at once, one concludes the experiment.
    match engine.store.claim_conclusion(experiment_id).await {
        Ok(true) => {}
        Ok(false) => return,
        Err(e) => {
            tracing::error!(error = %e, experiment_id, "cannot mark the experiment concluded");
            return;
        }
    }
    let Ok(plan) = plan else {
        let _ = engine.store.set_experiment_status(experiment_id, ExperimentStatus::Errored).await;
        return;
    };
    judge_ended(engine, experiment_id, &trials, &plan).await;
    let suite_id = engine.store.experiment_suite_id(experiment_id).await.ok().flatten();
    let canary = plan.launch.canary.then(|| plan.suite.judge_method(false).alpha);
    crate::notify::experiment_ended(engine, experiment_id, plan.suite.notify.as_ref(), suite_id, canary).await;
    // A bisection's step ended: the search moves on.
    crate::bisect::experiment_ended(engine, experiment_id).await;
}

async fn judge_ended(engine: &Engine, experiment_id: i64, trials: &[Trial], plan: &StoredPlan) {
    let store = &engine.store;
    runner::remove_worktrees(Path::new(&plan.launch.repo_dir), &engine.data_dir, experiment_id, &plan.launch.arms).await;
    if store.experiment_summary(experiment_id).await.is_ok_and(|s| s.status == ExperimentStatus::Cancelled) {
        return;
    }
    if plan.launch.calibration {
        return calibrate(engine, experiment_id, plan, trials).await;
    }
    if plan.launch.baseline {
        return measure_baseline(engine, experiment_id, plan, trials).await;
    }
    if plan.suite.kind == judge::ExperimentKind::Warp {
        return crate::warp::run::finish(engine, experiment_id, plan, trials).await;
    }
    match verdict(store, plan, trials).await {
        Ok((verdict, reasons, report, profile_id)) => {
            if let Err(e) = store.record_verdict(experiment_id, verdict, &reasons, &report, profile_id).await {
                tracing::error!(error = %e, experiment_id, "cannot record the verdict");
            } else {
                tracing::info!(experiment_id, verdict = verdict.as_str(), "experiment judged");
                if plan.launch.canary {
                    canary_grows_the_profile(engine, experiment_id, plan, trials).await;
                }
            }
        }
        Err(e) => {
            tracing::error!(error = %e, experiment_id, "cannot judge the experiment");
            let _ = store.set_experiment_status(experiment_id, ExperimentStatus::Errored).await;
        }
    }
}

/// A calibration's end: the spread of its same-code trials becomes the noise profile of its suite and
/// fingerprint, or grows the one already there (`NoiseProfile::grow`). It has no verdict.
async fn calibrate(engine: &Engine, experiment_id: i64, plan: &StoredPlan, trials: &[Trial]) {
    let status = match grow_profile(&engine.store, plan, trials).await {
        Ok((id, n)) => {
            tracing::info!(experiment_id, profile = id, trials = n, "noise profile calibrated");
            ExperimentStatus::Judged
        }
        Err(e) => {
            tracing::error!(experiment_id, error = %e, "calibration failed");
            ExperimentStatus::Errored
        }
    };
    let _ = engine.store.set_experiment_status(experiment_id, status).await;
}

/// Adds an experiment's same-code trials (a calibration's, or a canary's after it was judged) to the noise
/// profile of its suite and fingerprint, making it on the first: (the profile's id, trials added).
async fn grow_profile(store: &store::Store, plan: &StoredPlan, trials: &[Trial]) -> Result<(i64, usize), String> {
    let (rows, specs) = succeeded_measurements(store, trials).await;
    let fingerprint = serde_json::to_value(&plan.launch.fingerprint).unwrap_or_default();
    if specs.len() < 2 {
        return Err(format!("only {} same-code trials succeeded; at least 2 are needed", specs.len()));
    }
    let mut profile = judge::pipeline::calibrate(&rows, &specs, Some(fingerprint.clone())).map_err(|e| e.to_string())?;
    let suite_id = store.suite_by_name(&plan.suite.name).await.map_err(|e| e.to_string())?.id;
    // A later calibration of the same suite and fingerprint adds its same-code trials to the profile.
    if let Some(stored) = store.noise_profile(suite_id, &plan.fingerprint_hash()).await.map_err(|e| e.to_string())? {
        match serde_json::from_value::<judge::pipeline::noise::NoiseProfile>(stored.profile) {
            Ok(earlier) => profile = earlier.grow(&profile)?,
            Err(e) => tracing::warn!(profile = stored.id, error = %e, "the stored profile cannot be read; replacing it"),
        }
    }
    let json = serde_json::to_value(&profile).map_err(|e| e.to_string())?;
    let id = store
        .upsert_noise_profile(suite_id, &plan.fingerprint_hash(), &fingerprint, &json, profile.trials as i64)
        .await
        .map_err(|e| e.to_string())?;
    Ok((id, specs.len()))
}

/// A canary's end, once judged against the profile as it stood: its trials (one SHA on both sides) grow
/// the profile. Failed arms or too few trials leave it as it was.
async fn canary_grows_the_profile(engine: &Engine, experiment_id: i64, plan: &StoredPlan, trials: &[Trial]) {
    match grow_profile(&engine.store, plan, trials).await {
        Ok((id, n)) => tracing::info!(experiment_id, profile = id, trials = n, "the canary's trials grew the noise profile"),
        Err(e) => tracing::warn!(experiment_id, error = %e, "the canary's trials did not grow the noise profile"),
    }
}

/// A baseline run's end: measured, not compared. Its levels (the judge's report of the arm against
/// itself, whose control side is the arm) feed the trend charts; it has no verdict.
async fn measure_baseline(engine: &Engine, experiment_id: i64, plan: &StoredPlan, trials: &[Trial]) {
    let (rows, specs) = succeeded_measurements(&engine.store, trials).await;
    let config = PipelineConfig { worker_ram: plan.worker_ram(), ..PipelineConfig::default() };
    let itself = [ArmSpec { name: store::schedules::BASELINE_ARM.into(), trials: specs.clone() }];
    let result = judge::pipeline::judge(&rows, &specs, &itself, &config)
        .map_err(|e| e.to_string())
        .and_then(|r| serde_json::to_value(&r).map_err(|e| e.to_string()));
    let recorded = match result {
        Ok(report) => engine.store.record_baseline(experiment_id, &report).await.map_err(|e| e.to_string()),
        Err(e) => Err(format!("no measurements: {e}")),
    };
    match recorded {
        Ok(()) => tracing::info!(experiment_id, trials = specs.len(), "baseline measured"),
        Err(e) => {
            tracing::error!(experiment_id, error = %e, "the baseline run has no usable measurements");
            let _ = engine.store.set_experiment_status(experiment_id, ExperimentStatus::Errored).await;
        }
    }
}
