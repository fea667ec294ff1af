//! Reusing a baseline run as a launch's control: allowed only when it is truly comparable — the same
//! workload fingerprint (every field), measurements still complete (in the store, or still queryable
//! in finelog, from where they are restored), and younger than the suite's maximum age. A refusal names
//! the field that differs and offers the launch that would make a matching control.

use crate::launch::request::{ReuseBaseline, ReusedBaseline};
use crate::Engine;
use judge::pipeline::aggregate::{RowIndex, TrialSpec};
use judge::TrialState;
use store::schedules::BaselineRun;
use suite::definition::Fingerprint;
use suite::SuiteDefinition;

/// What a refusal adds: how to get a control that does match.
pub const OFFER: &str = "launch without reuse_baseline to run a matching control, or launch a baseline (\"baseline\": true) \
                         of the control's ref with this fingerprint to make one reusable";

/// Finds the baseline run `choice` names (`latest`: the newest that passes every check) and checks it.
pub async fn find(
    engine: &Engine,
    suite_id: i64,
    suite: &SuiteDefinition,
    fingerprint: &Fingerprint,
    choice: &ReuseBaseline,
    now_ms: i64,
) -> Result<ReusedBaseline, String> {
    let candidates = match choice {
        ReuseBaseline::Experiment(id) => {
            let run = engine.store.baseline_run(*id).await.map_err(|e| e.to_string())?;
            let run = run.ok_or_else(|| format!("reuse_baseline: experiment {id} is not a baseline run (it has no baseline arm)"))?;
            if run.suite_id != Some(suite_id) {
                return Err(format!("suite: baseline #{id} ran another suite than {:?}", suite.name));
            }
            if run.status != "judged" {
                return Err(format!("reuse_baseline: baseline #{id} has not ended measured (it is {})", run.status));
            }
            vec![run]
        }
        ReuseBaseline::Latest(_) => engine.store.baseline_runs(suite_id, 50).await.map_err(|e| e.to_string())?,
    };
    let mut first_refusal = None;
    for run in &candidates {
        match check(engine, suite, fingerprint, run, now_ms).await {
            Ok(reused) => return Ok(reused),
            Err(e) => {
                first_refusal.get_or_insert(e);
            }
        }
    }
    Err(first_refusal.unwrap_or_else(|| format!("reuse_baseline: suite {:?} has no ended baseline run yet", suite.name)))
}

/// The first field of the fingerprint that differs, in words; `None` when every field is equal.
pub fn fingerprint_difference(id: i64, baseline: &Fingerprint, asked: &Fingerprint) -> Option<String> {
    let fields: std::collections::BTreeSet<&String> = baseline.keys().chain(asked.keys()).collect();
    let show = |v: Option<&serde_json::Value>| v.map_or("nothing".to_string(), |v| v.to_string());
    fields
        .into_iter()
        .find(|k| baseline.get(*k) != asked.get(*k))
        .map(|k| format!("fingerprint.{k}: baseline #{id} ran {}; this launch asks {}", show(baseline.get(k)), show(asked.get(k))))
}

async fn check(
    engine: &Engine,
    suite: &SuiteDefinition,
    fingerprint: &Fingerprint,
    run: &BaselineRun,
    now_ms: i64,
) -> Result<ReusedBaseline, String> {
    let id = run.experiment_id;
    let ran: Fingerprint = serde_json::from_str(&run.fingerprint).map_err(|e| format!("baseline #{id}'s fingerprint: {e}"))?;
    if let Some(why) = fingerprint_difference(id, &ran, fingerprint) {
        return Err(why);
    }
    let finished_at = run.finished_at.unwrap_or(0);
    let age_hours = (now_ms - finished_at) as f64 / 3_600_000.0;
    if age_hours > f64::from(suite.baseline_max_age_hours) {
        return Err(format!(
            "age: baseline #{id} ended {age_hours:.0} h ago; suite {:?} reuses baselines up to {} h old (baseline_max_age_hours)",
            suite.name, suite.baseline_max_age_hours
        ));
    }
    complete_measurements(engine, id).await?;
    Ok(ReusedBaseline {
        experiment_id: id,
        sha: run.sha.clone().unwrap_or_default(),
        git_ref: run.git_ref.clone().unwrap_or_default(),
        finished_at,
    })
}

/// Every succeeded trial's stage rows are in the store; rows found missing are fetched from finelog
/// and stored again, or the refusal names the trial whose executions are gone.
async fn complete_measurements(engine: &Engine, id: i64) -> Result<(), String> {
    let store = &engine.store;
    let trials = store.trials(id).await.map_err(|e| e.to_string())?;
    let measured = store::trials::measured(&trials);
    let succeeded: Vec<_> = store::trials::latest(&measured).into_values().filter(|t| t.state == TrialState::Succeeded).collect();
    if succeeded.is_empty() {
        return Err(format!("measurements: baseline #{id} has no succeeded trial"));
    }
    for t in succeeded {
        let run = store.trial_run(t.id).await.map_err(|e| e.to_string())?;
        let spec = TrialSpec { execution_ids: run.execution_ids.clone(), pair: None, position: None };
        let rows = store.stage_rows(t.id).await.map_err(|e| e.to_string())?;
        let missing: Vec<String> = RowIndex::new(&rows).missing(&spec).into_iter().map(String::from).collect();
        if !spec.execution_ids.is_empty() && missing.is_empty() {
            continue;
        }
        let gone = || {
            format!(
                "measurements: baseline #{id}'s trial #{} has no stage rows for {} in the store, and finelog no longer has them",
                t.seq + 1,
                if missing.is_empty() { "its executions".to_string() } else { missing.join(", ") }
            )
        };
        let Ok(client) = engine.queue.finelog_reader() else { return Err(gone()) };
        let fetched = client.stage_rows(&missing).await.unwrap_or_default();
        let mut all = rows;
        all.extend(fetched.iter().cloned());
        if missing.is_empty() || !RowIndex::new(&all).missing(&spec).is_empty() {
            return Err(gone());
        }
        store.insert_stage_rows(t.id, &fetched).await.map_err(|e| e.to_string())?;
        tracing::info!(baseline = id, trial = t.id, rows = fetched.len(), "restored a baseline's stage rows from finelog");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::fingerprint_difference;
    use serde_json::json;

    #[test]
    fn the_first_differing_field_is_named_with_both_values() {
        let a: suite::definition::Fingerprint =
            [("sample".to_string(), json!("local/tiny")), ("workers".to_string(), json!(2))].into_iter().collect();
        let mut b = a.clone();
        assert_eq!(fingerprint_difference(7, &a, &b), None);
        b.insert("workers".into(), json!(4));
        assert_eq!(fingerprint_difference(7, &a, &b).unwrap(), "fingerprint.workers: baseline #7 ran 2; this launch asks 4");
        b.remove("workers");
        assert!(fingerprint_difference(7, &a, &b).unwrap().ends_with("ran 2; this launch asks nothing"));
    }
}
