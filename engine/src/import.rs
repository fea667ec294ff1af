//! Importing results measured elsewhere — zephyr.stage rows with their execution ids, or warp
//! `baseline_compare.csv` files — as judged experiments with a page, charts, history and a share link.
//! Two doors, one core (this module): `arbiter import pipeline|warp` and `POST /api/v1/imports`.

use judge::pipeline::aggregate::TrialSpec;
use judge::pipeline::rows::StageRow;
use judge::pipeline::ArmSpec;
use judge::warp::gate::GateReport;
use judge::warp::gate_md::Provenance;
use judge::{ExperimentKind, TrialState};
use serde_json::json;
use std::path::Path;
use store::experiments::{ArmRole, InsertArm, InsertExperiment};
use store::trials::InsertTrial;
use store::Store;

/// Pipeline rows judged (by `arbiter compare`, or an import): the rows, the arms' trials, and the report.
pub struct Compared {
    pub rows: Vec<StageRow>,
    pub control: Vec<TrialSpec>,
    pub arms: Vec<ArmSpec>,
    pub report: judge::pipeline::PipelineReport,
}

/// Who and what an import is: the title, the refs and SHAs of the arms, who it is recorded as
/// launched by, and where its data came from.
#[derive(Debug, Clone, Default)]
pub struct ImportInfo {
    pub title: String,
    pub control_ref: Option<String>,
    pub treatment_ref: Option<String>,
    pub control_sha: Option<String>,
    pub treatment_sha: Option<String>,
    pub by: Option<i64>,
    pub sources: Vec<String>,
    /// The suite it is filed under (its kind must match): it then joins that suite's trends.
    pub suite_id: Option<i64>,
    /// When it was measured (ms): dates the experiment and its trend points; none: now.
    pub measured_at: Option<i64>,
}

/// `--measured-at`: `YYYY-MM-DD`, or `YYYY-MM-DDTHH:MM[:SS][Z]` in UTC → ms since the epoch; not in the future.
pub fn parse_measured_at(text: &str, now_ms: i64) -> Result<i64, String> {
    let bad = || format!("measured-at {text:?}: give a UTC date or time, 2026-11-30 or 2026-11-30T03:15:00Z");
    let t = text.trim().trim_end_matches('Z');
    let (date, time) = t.split_once('T').map_or((t, None), |(d, h)| (d, Some(h)));
    let days = judge::units::parse_date(date).map_err(|_| bad())?;
    let secs = match time {
        None => 0,
        Some(h) => {
            let parts: Vec<&str> = h.split(':').collect();
            let num = |i: usize, max: i64| {
                parts.get(i).filter(|p| p.len() == 2).and_then(|p| p.parse::<i64>().ok()).filter(|v| (0..=max).contains(v))
            };
            match parts.len() {
                2 => num(0, 23).ok_or_else(bad)? * 3600 + num(1, 59).ok_or_else(bad)? * 60,
                3 => num(0, 23).ok_or_else(bad)? * 3600 + num(1, 59).ok_or_else(bad)? * 60 + num(2, 59).ok_or_else(bad)?,
                _ => return Err(bad()),
            }
        }
    };
    let at = (days * 86_400 + secs) * 1000;
    if at > now_ms {
        return Err(format!("measured-at {text:?}: is in the future"));
    }
    Ok(at)
}

impl ImportInfo {
    /// Checks the free-text fields; the error names the field.
    pub fn check(&self) -> Result<(), String> {
        let title = self.title.trim();
        if title.is_empty() || title.chars().count() > 200 || title.chars().any(char::is_control) {
            return Err("title: 1–200 characters, no control characters".into());
        }
        for (field, v) in [("control_ref", &self.control_ref), ("treatment_ref", &self.treatment_ref)] {
            if v.as_deref().is_some_and(|r| r.is_empty() || r.len() > 255 || r.chars().any(|c| c.is_control() || c == ' ')) {
                return Err(format!("{field}: a git ref of 1–255 characters without spaces"));
            }
        }
        for (field, v) in [("control_sha", &self.control_sha), ("treatment_sha", &self.treatment_sha)] {
            if v.as_deref().is_some_and(|s| !(4..=64).contains(&s.len()) || !s.chars().all(|c| c.is_ascii_hexdigit())) {
                return Err(format!("{field}: a hex SHA of 4–64 digits"));
            }
        }
        Ok(())
    }

    fn arms(&self, treatments: &[String]) -> Vec<InsertArm> {
        let arm = |name: &str, role, git_ref: &Option<String>, sha: &Option<String>| InsertArm {
            name: name.into(),
            role,
            git_ref: git_ref.clone(),
            sha: sha.as_deref().map(str::to_lowercase),
            config_diff: None,
        };
        let mut arms = vec![arm("control", ArmRole::Control, &self.control_ref, &self.control_sha)];
        arms.extend(treatments.iter().map(|n| arm(n, ArmRole::Treatment, &self.treatment_ref, &self.treatment_sha)));
        arms
    }

    fn experiment(&self, kind: ExperimentKind, fingerprint: serde_json::Value, treatments: &[String]) -> InsertExperiment {
        InsertExperiment {
            suite_id: self.suite_id,
            kind,
            title: self.title.trim().to_string(),
            base_ref: self.control_sha.clone().or_else(|| self.control_ref.clone()),
            head_ref: self.treatment_ref.clone().or_else(|| self.treatment_sha.clone()),
            fingerprint,
            plan: json!({"imported": true, "sources": self.sources}),
            launched_by: self.by,
            arms: self.arms(treatments),
        }
    }
}

/// Stores a judged pipeline comparison; returns the experiment id.
pub async fn store_pipeline(store: &Store, info: &ImportInfo, compared: &Compared, worker_ram: Option<&str>) -> Result<i64, String> {
    let names: Vec<String> = compared.arms.iter().map(|a| a.name.clone()).collect();
    // The workload as far as an import knows it (where the files came from is in the plan, not here, so
    // imports of the same workload form one trend series).
    let fingerprint = json!({"worker_ram": worker_ram});
    let id = store.insert_experiment(&info.experiment(ExperimentKind::Pipeline, fingerprint, &names)).await.map_err(|e| e.to_string())?;
    let result = async {
        let arm_ids: Vec<i64> = store.arms(id).await?.into_iter().map(|a| a.0).collect();
        // Trials in plan order: the control's, then each treatment's.
        let mut specs: Vec<(i64, &judge::pipeline::aggregate::TrialSpec)> = compared.control.iter().map(|t| (arm_ids[0], t)).collect();
        for (i, arm) in compared.arms.iter().enumerate() {
            specs.extend(arm.trials.iter().map(|t| (arm_ids[i + 1], t)));
        }
        let planned: Vec<InsertTrial> = specs
            .iter()
            .enumerate()
            .map(|(seq, (arm_id, _))| InsertTrial { arm_id: *arm_id, seq: seq as i64, cell: None, repeat_index: 0 })
            .collect();
        let trial_ids = store.insert_trials(id, &planned).await?;
        for (trial_id, (_, spec)) in trial_ids.iter().zip(&specs) {
            let rows: Vec<_> = compared.rows.iter().filter(|r| spec.execution_ids.contains(&r.execution_id)).cloned().collect();
            store.set_trial_result(*trial_id, None, &spec.execution_ids).await?;
            store.insert_stage_rows(*trial_id, &rows).await?;
            store.finish_trial(*trial_id, TrialState::Succeeded, None, Some("imported")).await?;
        }
        let report = serde_json::to_value(&compared.report)?;
        store.record_verdict(id, compared.report.verdict, &compared.report.reasons, &report, None).await?;
        if let Some(at) = info.measured_at {
            store.set_measured_at(id, at).await?;
        }
        Ok(())
    }
    .await;
    undo_on_error(store, id, result).await?;
    Ok(id)
}

/// Stores a gated warp comparison and writes its gate.md; returns the experiment id and the reasons.
pub async fn store_warp(
    store: &Store,
    data_dir: &Path,
    info: &ImportInfo,
    report: &GateReport,
    provenance: &Provenance,
) -> Result<(i64, Vec<String>), String> {
    let mut reasons = report.reasons();
    if reasons.is_empty() {
        reasons.push(format!("every cell within the {} % warn budget", report.warn_pct));
    }
    let fingerprint = json!({"fail_pct": report.fail_pct, "warn_pct": report.warn_pct});
    let new = info.experiment(ExperimentKind::Warp, fingerprint, &["candidate".to_string()]);
    let id = store.insert_experiment(&new).await.map_err(|e| e.to_string())?;
    let gate_md = judge::warp::gate_md::render(report, Some(provenance));
    let json = json!({"gate": report, "provenance": provenance, "gate_md": gate_md});
    let result = async {
        store.record_verdict(id, report.verdict, &reasons, &json, None).await?;
        if let Some(at) = info.measured_at {
            store.set_measured_at(id, at).await?;
        }
        Ok::<(), store::StoreError>(())
    }
    .await;
    undo_on_error(store, id, result).await?;
    let dir = crate::experiment_dir(data_dir, id).join("reports");
    let written = match tokio::fs::create_dir_all(&dir).await {
        Ok(()) => tokio::fs::write(dir.join("gate.md"), &gate_md).await,
        Err(e) => Err(e),
    };
    if let Err(e) = written {
        tracing::warn!(error = %e, id, "cannot write the imported experiment's gate.md");
    }
    Ok((id, reasons))
}

/// On failure the half-imported experiment is deleted, so nothing half-stored stays behind.
async fn undo_on_error<T>(store: &Store, id: i64, result: Result<T, store::StoreError>) -> Result<(), String> {
    match result {
        Ok(_) => Ok(()),
        Err(e) => {
            let _ = store.delete_experiment(id).await;
            Err(format!("import failed, nothing kept: {e}"))
        }
    }
}

/// The suite an import is filed under, by name; a suite only in the suites folder (a server that has not
/// started yet) is loaded into the store first, as `serve` would.
/// Its kind must be the import's.
pub async fn suite_for_import(store: &Store, name: &str, suites_dir: Option<&Path>, kind: ExperimentKind) -> Result<i64, String> {
    let mut found = store.suite_by_name(name).await;
    if let (Err(_), Some(dir)) = (&found, suites_dir) {
        crate::sync_suites(store, &suite::load_dir(dir)?).await?;
        found = store.suite_by_name(name).await;
    }
    let suite = found.map_err(|_| format!("suite: there is no suite {name:?}"))?;
    if suite.kind != kind {
        return Err(format!("suite: {name:?} is a {} suite; this import is {}", suite.kind.as_str(), kind.as_str()));
    }
    Ok(suite.id)
}
