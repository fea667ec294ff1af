//! Re-judging: a pipeline experiment judged by an older method is judged again on its stored rows by the
//! current method (`judge::pipeline::method::METHOD_VERSION`). The new verdict is kept beside the old
//! one (`verdicts` holds both, the page shows both) and the action is audited. Two doors:
//! `POST /api/v1/experiments/{id}/rejudge` (a launcher, one experiment, from its page) and
//! `arbiter rejudge --all [--dry-run]` (an admin on the store, every experiment of an older method); both
//! call [`rejudge`].
//!
//! A launched experiment is judged exactly as its end judged it (`judging::verdict`: its stored plan's
//! suite, pairing, margins and the noise profile of its fingerprint as it is now). An imported one is
//! judged from its trials' stored rows with the worker RAM and method choices its report recorded (or
//! its suite's `[judge]`, or the defaults).

use crate::launch::submit::StoredPlan;
use judge::pipeline::aggregate::TrialSpec;
use judge::pipeline::method::{NoRegression, METHOD_VERSION};
use judge::pipeline::{ArmSpec, MethodConfig, PipelineConfig, PipelineReport};
use judge::{ExperimentKind, TrialState, Verdict};
use serde::Serialize;
use store::Store;
use suite::definition::SuiteDefinition;

/// What a re-judging did (or, dry, would do).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rejudged {
    pub experiment_id: i64,
    pub before: Verdict,
    pub before_method: u32,
    pub after: Verdict,
    pub after_method: u32,
    /// The new verdict's id; `None` for a dry run.
    pub verdict_id: Option<i64>,
    pub reasons: Vec<String>,
}

impl Rejudged {
    pub fn changed(&self) -> bool {
        self.before != self.after
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RejudgeError {
    #[error("{0}")]
    NotJudgeable(String),
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error("cannot judge experiment {0}: {1}")]
    Judge(i64, String),
}

/// Judges experiment `id` again by the current method; stores the new verdict (as asked for by `by`)
/// unless `dry_run`.
pub async fn rejudge(store: &Store, id: i64, by: Option<i64>, dry_run: bool) -> Result<Rejudged, RejudgeError> {
    let summary = store.experiment_summary(id).await?;
    if summary.kind != ExperimentKind::Pipeline {
        return Err(RejudgeError::NotJudgeable(format!(
            "experiment {id} is a warp experiment: its gate has one method, so there is nothing to re-judge"
        )));
    }
    let Some((before, _, old_report)) = store.latest_verdict(id).await? else {
        return Err(RejudgeError::NotJudgeable(format!("experiment {id} has no verdict yet (a calibration or baseline run has none)")));
    };
    let before_method = store::verdicts::method_version_of(&old_report) as u32;
    let trials = store.trials(id).await?;
    let (plan, _) = store.experiment_plan(id).await?;
    let judged = match serde_json::from_value::<StoredPlan>(plan) {
        Ok(plan) => {
            if plan.launch.calibration || plan.launch.baseline {
                return Err(RejudgeError::NotJudgeable(format!("experiment {id} is a calibration or baseline run: it has no verdict")));
            }
            crate::judging::verdict(store, &plan, &trials).await
        }
        Err(_) => imported_verdict(store, id, &summary, &old_report, &trials).await,
    };
    let (after, reasons, report, profile_id) = judged.map_err(|e| RejudgeError::Judge(id, e))?;
    let verdict_id = match dry_run {
        true => None,
        false => {
            let vid = store.record_rejudged_verdict(id, after, &reasons, &report, profile_id, by).await?;
            let detail = serde_json::json!({
                "before": before.as_str(), "before_method": before_method, "after": after.as_str(), "after_method": METHOD_VERSION, "verdict_id": vid,
            });
            store.audit(by, "experiment.rejudge", &format!("experiment:{id}"), None, &detail).await?;
            Some(vid)
        }
    };
    Ok(Rejudged { experiment_id: id, before, before_method, after, after_method: METHOD_VERSION, verdict_id, reasons })
}

/// An imported experiment's verdict from its trials' stored rows: control = the first arm.
async fn imported_verdict(
    store: &Store,
    id: i64,
    summary: &store::experiments::ExperimentSummary,
    old_report: &serde_json::Value,
    trials: &[store::trials::Trial],
) -> Result<(Verdict, Vec<String>, serde_json::Value, Option<i64>), String> {
    let arms = store.arms(id).await.map_err(|e| e.to_string())?;
    let mut specs: Vec<(String, Vec<TrialSpec>)> = arms.iter().map(|a| (a.1.clone(), Vec::new())).collect();
    let mut rows = Vec::new();
    for t in trials.iter().filter(|t| t.state == TrialState::Succeeded) {
        let run = store.trial_run(t.id).await.map_err(|e| e.to_string())?;
        rows.extend(store.stage_rows(t.id).await.map_err(|e| e.to_string())?);
        if let Some(arm) = arms.iter().position(|a| a.0 == t.arm_id) {
            specs[arm].1.push(TrialSpec { execution_ids: run.execution_ids, pair: None, position: None });
        }
    }
    if specs.len() < 2 || rows.is_empty() {
        return Err("it has no stored rows to judge (imported before rows were kept?)".into());
    }
    let old: Option<PipelineReport> = serde_json::from_value(old_report.clone()).ok();
    let worker_ram = old.as_ref().and_then(|r| r.thresholds.worker_ram_bytes);
    // The choices the import was judged with, else its suite's, else the defaults.
    let recorded = old.as_ref().and_then(|r| r.method.as_ref()).map(|m| MethodConfig {
        alpha: m.alpha,
        cpu_margin_pct: m.cpu_margin_pct,
        elapsed_margin_pct: m.elapsed_margin_pct,
        paired: m.paired,
        // X as it was fixed before the first look (method 3); a method-2 report plans it as a new one would.
        no_regression: m.no_regression.as_ref().map_or(NoRegression::Plan, |n| n.pct.map_or(NoRegression::Off, NoRegression::At)),
        max_no_regression_pct: m.no_regression.as_ref().map_or(judge::pipeline::method::DEFAULT_MAX_NO_REGRESSION_PCT, |n| n.max_pct),
    });
    let method = match recorded {
        Some(m) => m,
        None => suite_method(store, summary.suite.as_deref()).await,
    };
    let config = PipelineConfig { worker_ram, method, ..PipelineConfig::default() };
    let control = specs.remove(0).1;
    let treatments: Vec<ArmSpec> = specs.into_iter().map(|(name, trials)| ArmSpec { name, trials }).collect();
    let report = judge::pipeline::judge(&rows, &control, &treatments, &config).map_err(|e| e.to_string())?;
    let mut reasons = report.reasons.clone();
    if old.as_ref().is_some_and(|r| r.thresholds.source != "uncalibrated") {
        reasons.push("re-judged without the noise profile file the import was judged with (it was not stored)".into());
    }
    let json = serde_json::to_value(&report).map_err(|e| e.to_string())?;
    Ok((report.verdict, reasons, json, None))
}

async fn suite_method(store: &Store, suite: Option<&str>) -> MethodConfig {
    let Some(name) = suite else { return MethodConfig::default() };
    match store.suite_by_name(name).await.ok().map(|s| serde_json::from_value::<SuiteDefinition>(s.definition)) {
        Some(Ok(def)) => def.judge_method(false),
        _ => MethodConfig::default(),
    }
}
