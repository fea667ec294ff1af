//! The judging of an ended pipeline experiment, apart from what ends it: the verdict of its trials (the
//! judge on what they measured, a new failure as a regression, every lost trial named), which the
//! conclusion (`lifecycle.rs`), the adaptive looks (`adaptive.rs`) and re-judging (`rejudge.rs`) all call.
//! It reads the store and calls nothing above it.

use crate::launch::submit::StoredPlan;
use judge::pipeline::aggregate::TrialSpec;
use judge::pipeline::{ArmSpec, PipelineConfig};
use judge::{TrialState, Verdict};
use std::collections::BTreeMap;
use store::trials::Trial;
use suite::definition::TrialOrder;

/// The verdict of an ended experiment: the judge on the trials that measured something, a new
/// failure (a treatment trial failed where no control trial did) as a regression, and every lost
/// trial named with its reason.
pub async fn verdict(
    store: &store::Store,
    plan: &StoredPlan,
    trials: &[Trial],
) -> Result<(Verdict, Vec<String>, serde_json::Value, Option<i64>), String> {
    let suite_id = store.suite_by_name(&plan.suite.name).await.map_err(|e| e.to_string())?.id;
    let profile = store.noise_profile(suite_id, &plan.fingerprint_hash()).await.map_err(|e| e.to_string())?;
    let arms = store.arms(trials.first().map_or(0, |t| t.experiment_id)).await.map_err(|e| e.to_string())?;
    let arm_name = |id: i64| arms.iter().find(|a| a.0 == id).map(|a| a.1.clone()).unwrap_or_default();
    // The last attempt of each planned position counts; warm-ups are never judged.
    let measured = store::trials::measured(trials);
    let latest = store::trials::latest(&measured);
    let control = plan.launch.arms[0].name.clone();
    let mut rows = Vec::new();
    let mut specs: BTreeMap<String, Vec<TrialSpec>> = BTreeMap::new();
    let mut lost = Vec::new();
    let mut failed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut reused_note = None;
    // Each trial's CPU per stage in run order, warm-ups included, for the measurement report.
    let mut cpus = Vec::new();
    for t in store::trials::latest(trials).into_values().filter(|t| t.role == judge::TrialRole::WarmUp && t.state == TrialState::Succeeded)
    {
        let rows = store.stage_rows(t.id).await.map_err(|e| e.to_string())?;
        if !rows.is_empty() {
            cpus.push(trial_cpu(t, &arm_name(t.arm_id), &control, &rows));
        }
    }
    for t in latest.values() {
        let arm = arm_name(t.arm_id);
        let run = store.trial_run(t.id).await.map_err(|e| e.to_string())?;
        let detail = t.detail.clone().unwrap_or_default();
        let measured = if run.execution_ids.is_empty() { Vec::new() } else { store.stage_rows(t.id).await.map_err(|e| e.to_string())? };
        match t.state {
            TrialState::Succeeded | TrialState::Failed if !measured.is_empty() => {
                cpus.push(trial_cpu(t, &arm, &control, &measured));
                rows.extend(measured);
                // The repeat index pairs a control trial with the treatment trials that ran beside it.
                let pair = Some(t.repeat_index as u32);
                // Its position in the pair as it ran (the order covariate reads it; none for an import).
                let position = t.position.and_then(|p| u32::try_from(p).ok());
                specs.entry(arm.clone()).or_default().push(TrialSpec { execution_ids: run.execution_ids.clone(), pair, position });
                if t.state == TrialState::Failed {
                    failed.entry(arm.clone()).or_default().push(format!("trial #{} ({detail})", t.seq + 1));
                }
            }
            TrialState::Failed => failed.entry(arm.clone()).or_default().push(format!("trial #{} ({detail})", t.seq + 1)),
            // An adaptive experiment's queued trials that its decision made unnecessary were never lost.
            TrialState::Cancelled if plan.launch.adaptive.is_some() => {}
            _ => lost.push(format!(
                "trial #{} of {arm} was lost: {} ({detail})",
                t.seq + 1,
                t.infra_reason.map_or(t.state.as_str(), |r| r.as_str())
            )),
        }
    }
    let treatments: Vec<ArmSpec> = plan.launch.arms[1..]
        .iter()
        .map(|a| ArmSpec { name: a.name.clone(), trials: specs.get(&a.name).cloned().unwrap_or_default() })
        .collect();
    if let Some(b) = &plan.launch.reused_baseline {
        let (baseline_rows, baseline_specs) =
            succeeded_measurements(store, &store.trials(b.experiment_id).await.map_err(|e| e.to_string())?).await;
        rows.extend(baseline_rows);
        specs.insert(control.clone(), baseline_specs);
        reused_note = Some(format!(
            "control: baseline #{} ({} at {}, ended {}) reused, not run again",
            b.experiment_id,
            b.git_ref,
            judge::units::short_sha(&b.sha),
            judge::units::utc_rfc3339(b.finished_at / 1000)
        ));
    }
    let noise = profile.as_ref().and_then(|p| serde_json::from_value(p.profile.clone()).ok());
    // Interleaved and ABBA trials ran side by side and are judged as pairs (a stage falls back to Welch
    // when a partner is missing: a re-queued trial's partner lost, a reused baseline's trials).
    let paired = plan.launch.order != TrialOrder::Blocked && plan.launch.reused_baseline.is_none();
    let config = PipelineConfig {
        worker_ram: plan.worker_ram(),
        noise,
        method: plan.suite.judge_method(paired),
        focus: plan.launch.focus.clone(),
        focus_bad_end_pct: plan.launch.focus_bad_end_pct,
        no_regression_pct: None,
        ..PipelineConfig::default()
    };
    let control_specs = specs.get(&control).cloned().unwrap_or_default();
    let pairing = pairing(store, plan, trials, &arm_name).await;
    // An adaptive experiment is judged by the sequential design it was run with (`adaptive`).
    let judged = match plan.launch.adaptive {
        Some(a) => {
            let seq =
                judge::pipeline::SequentialConfig { unit: judge::pipeline::sequential::Unit::Pair, max_pairs: Some(a.max_trials as usize) };
            judge::pipeline::judge_sequential(&rows, &control_specs, &treatments, &config, &seq)
        }
        None => judge::pipeline::judge(&rows, &control_specs, &treatments, &config),
    };
    let (mut verdict, mut reasons, report) = match judged {
        Ok(mut r) => {
            r.pairing = Some(pairing);
            r.measurement = judge::pipeline::measurement::report(&cpus);
            (r.verdict, r.reasons.clone(), serde_json::to_value(&r).map_err(|e| e.to_string())?)
        }
        Err(e) => (Verdict::Inconclusive, vec![format!("cannot compare: {e}")], serde_json::json!({})),
    };
    let control_failed = failed.contains_key(&control);
    for (arm, list) in &failed {
        if *arm != control && !control_failed {
            verdict = Verdict::Regression;
            reasons.insert(0, format!("new failure: {arm} failed where the control did not: {}", list.join(", ")));
        } else if *arm == control {
            reasons.push(format!("the control failed too: {}", list.join(", ")));
        }
    }
    reasons.extend(lost);
    reasons.extend(warm_up_note(trials, &arm_name));
    reasons.extend(reused_note);
    reasons.push(match &profile {
        Some(p) => format!("judged with noise profile #{} ({} same-code trials)", p.id, p.trials),
        None => "uncalibrated: spreads from this run's own trials, which the default spread only widens where they are too few; one pair measures none (launch a calibration of this suite and fingerprint to measure them)".to_string(),
    });
    Ok((verdict, reasons, report, profile.map(|p| p.id)))
}

/// How an experiment's trials ran against each other, in words: pairs submitted together to a cluster
/// or run one at a time on a host, and which arm went first in how many pairs (from the positions the
/// trials started in).
async fn pairing(store: &store::Store, plan: &StoredPlan, trials: &[Trial], arm_name: &(dyn Fn(i64) -> String + Sync)) -> String {
    let order = plan.launch.order.as_str();
    let Some(experiment_id) = trials.first().map(|t| t.experiment_id) else { return String::new() };
    let ranks = store.pair_ranks(experiment_id).await.unwrap_or_default();
    let cluster = plan.suite.launcher == suite::definition::Launcher::Cluster;
    let control = &plan.launch.arms[0].name;
    let latest = store::trials::latest(trials);
    let placed: Vec<&Trial> = latest.values().copied().filter(|t| t.position.is_some() && arm_name(t.arm_id) == *control).collect();
    let control_first = placed.iter().filter(|t| t.position == Some(0)).count();
    let firsts = |of: &str| {
        format!("the control went first in {control_first} of {}{of}, a treatment in {}", placed.len(), placed.len() - control_first)
    };
    let how = match plan.launch.order {
        TrialOrder::Interleaved => "balanced: one of each in every block of two, the blocks' order drawn at random",
        TrialOrder::ControlFirst => "the control first in every pair: an order effect cannot be told from the change",
        _ => "as the plan orders it",
    };
    if ranks.is_empty() {
        let way = if cluster { "trials were submitted to the cluster one at a time" } else { "trials ran one at a time on this host" };
        return if placed.is_empty() {
            format!("{way}, in {order} order")
        } else {
            format!("{way}, in {order} order ({how}); {}", firsts(if placed.len() == 1 { " pair" } else { " pairs" }))
        };
    }
    let pairs: std::collections::BTreeSet<i64> = ranks.iter().map(|r| r.0).collect();
    let repeats = trials.iter().map(|t| t.repeat_index + 1).max().unwrap_or(0);
    format!("{} of {repeats} repeats ran as pairs submitted to the cluster together; {} ({how})", pairs.len(), firsts(""))
}

/// A trial's CPU-seconds per stage (its stages' END rows, as the judge reads them), for the measurement report.
fn trial_cpu(t: &Trial, arm: &str, control: &str, rows: &[judge::pipeline::rows::StageRow]) -> judge::pipeline::measurement::TrialCpu {
    let mut cpu = BTreeMap::new();
    for r in rows.iter().filter(|r| r.is_end()) {
        *cpu.entry(r.stage_name.clone()).or_insert(0.0) += r.cpu_time_total;
    }
    judge::pipeline::measurement::TrialCpu {
        seq: t.seq,
        arm: arm.to_string(),
        control: arm == control,
        warm_up: t.role == judge::TrialRole::WarmUp,
        heavy_load: t.host.as_ref().and_then(|h| h.heavy_load()),
        cpu,
        reserved_cpus: t.host.as_ref().and_then(|h| h.reserved_cpus.clone()),
        shared_why: t.host.as_ref().and_then(|h| h.shared_cpus_why.clone()),
        group_cpu: t.host.as_ref().and_then(|h| h.trial_cpu_secs),
    }
}

/// What the experiment's warm-up trials were, in words for the reasons (none: nothing).
fn warm_up_note(trials: &[Trial], arm_name: &dyn Fn(i64) -> String) -> Option<String> {
    let warm: Vec<&Trial> = store::trials::latest(trials).into_values().filter(|t| t.role == judge::TrialRole::WarmUp).collect();
    if warm.is_empty() {
        return None;
    }
    let each: Vec<String> = warm
        .iter()
        .map(|t| match t.state {
            TrialState::Succeeded => format!("#{} ({})", t.seq + 1, arm_name(t.arm_id)),
            other => format!("#{} ({}, {})", t.seq + 1, arm_name(t.arm_id), other.as_str()),
        })
        .collect();
    let n = warm.len();
    Some(format!(
        "warm-up: {} trial{} ran first and {} not judged: {}",
        n,
        if n == 1 { "" } else { "s" },
        if n == 1 { "is" } else { "are" },
        each.join(", ")
    ))
}

/// The stage rows and executions of the succeeded trials.
pub(crate) async fn succeeded_measurements(store: &store::Store, trials: &[Trial]) -> (Vec<judge::pipeline::rows::StageRow>, Vec<TrialSpec>) {
    let mut rows = Vec::new();
    let mut specs = Vec::new();
    // Warm-ups are never measurements (a calibration's, a baseline's, a reused baseline's).
    for t in trials.iter().filter(|t| t.state == TrialState::Succeeded && t.role == judge::TrialRole::Measured) {
        let (Ok(run), Ok(r)) = (store.trial_run(t.id).await, store.stage_rows(t.id).await) else { continue };
        rows.extend(r);
        specs.push(TrialSpec { execution_ids: run.execution_ids, pair: None, position: None });
    }
    (rows, specs)
}
