//! Importing results measured elsewhere — zephyr.stage row files with their execution ids, or warp
//! `baseline_compare.csv` files — as judged experiments with a page, charts, history and a share link.
//! The files are judged exactly as `arbiter compare` / `arbiter gate` judge them; pipeline rows are kept
//! as the trials' observations. Two doors, one core: `arbiter import pipeline|warp` (files, straight into
//! the store) and `POST /api/v1/imports` (the same content in JSON, see `api/imports.rs`).

use crate::cli::{ImportMeta, ImportPipelineArgs, ImportWarpArgs};
use crate::compare::Compared;
use judge::warp::gate::GateReport;
use judge::warp::gate_md::Provenance;
use judge::{ExperimentKind, TrialState, Verdict};
use serde_json::json;
use std::path::Path;
use store::experiments::{ArmRole, InsertArm, InsertExperiment};
use store::trials::InsertTrial;
use store::Store;

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
        store.record_verdict(id, compared.report.verdict, &compared.report.reasons, &report, None).await
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
    let result = store.record_verdict(id, report.verdict, &reasons, &json, None).await;
    undo_on_error(store, id, result).await?;
    let dir = crate::downloads::experiment_dir(data_dir, id).join("reports");
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

async fn open(meta: &ImportMeta, kind: ExperimentKind) -> Result<(Store, ImportInfo), String> {
    let (_, url) = meta.store.resolve().map_err(|e| e.to_string())?;
    let store = Store::open(&url).await.map_err(|e| e.to_string())?;
    let by = match &meta.by {
        None => None,
        Some(name) => {
            Some(store.user_by_name(name).await.map_err(|e| e.to_string())?.ok_or_else(|| format!("--by: there is no user {name:?}"))?.id)
        }
    };
    let suite_id = match &meta.suite {
        Some(name) => Some(suite_for_import(&store, name, Some(&meta.suites_dir), kind).await.map_err(|e| format!("--{e}"))?),
        None => None,
    };
    let info = ImportInfo {
        suite_id,
        title: meta.title.clone(),
        control_ref: meta.control_ref.clone(),
        treatment_ref: meta.treatment_ref.clone(),
        control_sha: meta.control_sha.clone(),
        treatment_sha: meta.treatment_sha.clone(),
        by,
        sources: Vec::new(),
    };
    Ok((store, info))
}

/// The suite an import is filed under, by name; a suite only in the suites folder (a server that has not
/// started yet) is loaded into the store first, as `serve` would.
/// Its kind must be the import's.
pub async fn suite_for_import(store: &Store, name: &str, suites_dir: Option<&Path>, kind: ExperimentKind) -> Result<i64, String> {
    let mut found = store.suite_by_name(name).await;
    if let (Err(_), Some(dir)) = (&found, suites_dir) {
        crate::suites::sync(store, &crate::suites::load_dir(dir)?).await?;
        found = store.suite_by_name(name).await;
    }
    let suite = found.map_err(|_| format!("suite: there is no suite {name:?}"))?;
    if suite.kind != kind {
        return Err(format!("suite: {name:?} is a {} suite; this import is {}", suite.kind.as_str(), kind.as_str()));
    }
    Ok(suite.id)
}

fn announce(id: i64, verdict: Verdict, reasons: &[String]) -> i32 {
    println!("imported experiment {id}: {}", verdict.as_str());
    for r in reasons.iter().take(5) {
        println!("  {r}");
    }
    println!("page: /experiments/{id}");
    0
}

/// `arbiter import pipeline`.
pub async fn run_pipeline(args: ImportPipelineArgs) -> Result<i32, String> {
    let fetched = crate::compare::fetch_rows(&args.compare).await?;
    let mut compared = crate::compare::judge_args(&args.compare, fetched)?;
    if let Some(path) = &args.judged_report {
        compared.report = judged_report(path, &compared)?;
    }
    let (store, mut info) = open(&args.meta, ExperimentKind::Pipeline).await?;
    info.sources = args.compare.rows.iter().map(|p| p.display().to_string()).chain(args.compare.finelog_url.clone()).collect();
    let result = match info.check().map_err(|e| format!("--{}", e.replacen('_', "-", 1))) {
        Ok(()) => store_pipeline(&store, &info, &compared, args.compare.worker_ram.as_deref()).await,
        Err(e) => Err(e),
    };
    store.close().await;
    Ok(announce(result?, compared.report.verdict, &compared.report.reasons))
}

/// A report judged before (`--judged-report`): `arbiter compare --json` output or a report.json export,
/// whose treatment arms must be the import's.
fn judged_report(path: &Path, compared: &Compared) -> Result<judge::pipeline::PipelineReport, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--judged-report {}: {e}", path.display()))?;
    let mut value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("--judged-report {}: not JSON: {e}", path.display()))?;
    if let Some(inner) = value.get_mut("report") {
        value = inner.take();
    }
    let report: judge::pipeline::PipelineReport =
        serde_json::from_value(value).map_err(|e| format!("--judged-report {}: not a pipeline report: {e}", path.display()))?;
    let theirs: Vec<&str> = report.treatments.iter().map(|a| a.name.as_str()).collect();
    let ours: Vec<&str> = compared.arms.iter().map(|a| a.name.as_str()).collect();
    if theirs != ours {
        return Err(format!("--judged-report {}: its arms are {theirs:?}, the import's {ours:?}", path.display()));
    }
    Ok(report)
}

/// `arbiter import warp`.
pub async fn run_warp(args: ImportWarpArgs) -> Result<i32, String> {
    let (report, provenance) = crate::gate::gate_args(&args.gate)?;
    let (store, mut info) = open(&args.meta, ExperimentKind::Warp).await?;
    info.sources = args
        .gate
        .compare_csv
        .iter()
        .map(|p| p.display().to_string())
        .chain(args.gate.label.iter().cloned())
        .chain(args.gate.rounds.iter().cloned())
        .collect();
    let result = match info.check().map_err(|e| format!("--{}", e.replacen('_', "-", 1))) {
        Ok(()) => store_warp(&store, &args.meta.store.data_dir, &info, &report, &provenance).await,
        Err(e) => Err(e),
    };
    store.close().await;
    let (id, reasons) = result?;
    Ok(announce(id, report.verdict, &reasons))
}
