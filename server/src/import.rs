//! `arbiter import pipeline|warp`: store a judged experiment from results measured elsewhere —
//! zephyr.stage row files with their execution ids, or warp `baseline_compare.csv` files — so they get
//! a page, charts, history and a share link like a launched experiment. The files are judged exactly as
//! `arbiter compare` / `arbiter gate` judge them; the rows are kept as the trials' observations.

use crate::cli::{ImportMeta, ImportPipelineArgs, ImportWarpArgs};
use judge::{ExperimentKind, TrialState, Verdict};
use serde_json::json;
use store::experiments::{ArmRole, InsertArm, InsertExperiment};
use store::trials::InsertTrial;
use store::Store;

fn check_meta(meta: &ImportMeta) -> Result<(), String> {
    let title = meta.title.trim();
    if title.is_empty() || title.chars().count() > 200 || title.chars().any(char::is_control) {
        return Err("--title: 1–200 characters, no control characters".into());
    }
    for (flag, v) in [("--control-ref", &meta.control_ref), ("--treatment-ref", &meta.treatment_ref)] {
        if v.as_deref().is_some_and(|r| r.is_empty() || r.len() > 255 || r.chars().any(|c| c.is_control() || c == ' ')) {
            return Err(format!("{flag}: a git ref of 1–255 characters without spaces"));
        }
    }
    for (flag, v) in [("--control-sha", &meta.control_sha), ("--treatment-sha", &meta.treatment_sha)] {
        if v.as_deref().is_some_and(|s| !(4..=64).contains(&s.len()) || !s.chars().all(|c| c.is_ascii_hexdigit())) {
            return Err(format!("{flag}: a hex SHA of 4–64 digits"));
        }
    }
    Ok(())
}

async fn open(meta: &ImportMeta) -> Result<(Store, Option<i64>), String> {
    let (_, url) = meta.store.resolve().map_err(|e| e.to_string())?;
    let store = Store::open(&url).await.map_err(|e| e.to_string())?;
    let by = match &meta.by {
        None => None,
        Some(name) => {
            Some(store.user_by_name(name).await.map_err(|e| e.to_string())?.ok_or_else(|| format!("--by: there is no user {name:?}"))?.id)
        }
    };
    Ok((store, by))
}

fn arms(meta: &ImportMeta, treatments: &[String]) -> Vec<InsertArm> {
    let mut arms = vec![InsertArm {
        name: "control".into(),
        role: ArmRole::Control,
        git_ref: meta.control_ref.clone(),
        sha: meta.control_sha.as_deref().map(str::to_lowercase),
        config_diff: None,
    }];
    arms.extend(treatments.iter().map(|name| InsertArm {
        name: name.clone(),
        role: ArmRole::Treatment,
        git_ref: meta.treatment_ref.clone(),
        sha: meta.treatment_sha.as_deref().map(str::to_lowercase),
        config_diff: None,
    }));
    arms
}

fn experiment(
    meta: &ImportMeta,
    kind: ExperimentKind,
    by: Option<i64>,
    fingerprint: serde_json::Value,
    arms: Vec<InsertArm>,
) -> InsertExperiment {
    InsertExperiment {
        suite_id: None,
        kind,
        title: meta.title.trim().to_string(),
        base_ref: meta.control_sha.clone().or_else(|| meta.control_ref.clone()),
        head_ref: meta.treatment_ref.clone().or_else(|| meta.treatment_sha.clone()),
        fingerprint,
        plan: json!({"imported": true}),
        launched_by: by,
        arms,
    }
}

fn announce(id: i64, verdict: Verdict, reasons: &[String]) -> i32 {
    println!("imported experiment {id}: {}", verdict.as_str());
    for r in reasons.iter().take(5) {
        println!("  {r}");
    }
    println!("page: /experiments/{id}");
    0
}

pub async fn run_pipeline(args: ImportPipelineArgs) -> Result<i32, String> {
    check_meta(&args.meta)?;
    let compared = crate::compare::judge_args(&args.compare)?;
    let (store, by) = open(&args.meta).await?;
    let names: Vec<String> = compared.arms.iter().map(|a| a.name.clone()).collect();
    let files: Vec<String> = args.compare.rows.iter().map(|p| p.display().to_string()).collect();
    let fingerprint = json!({"imported_from": files, "worker_ram": args.compare.worker_ram});
    let new = experiment(&args.meta, ExperimentKind::Pipeline, by, fingerprint, arms(&args.meta, &names));
    let id = store.insert_experiment(&new).await.map_err(|e| e.to_string())?;
    let result = async {
        let arm_ids: Vec<i64> = store.arms(id).await?.into_iter().map(|a| a.0).collect();
        // Trials in plan order: the control's, then each treatment's.
        let mut specs = vec![];
        specs.extend(compared.control.iter().map(|t| (arm_ids[0], t)));
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
    finish(&store, id, result).await?;
    Ok(announce(id, compared.report.verdict, &compared.report.reasons))
}

pub async fn run_warp(args: ImportWarpArgs) -> Result<i32, String> {
    check_meta(&args.meta)?;
    let (report, provenance) = crate::gate::gate_args(&args.gate)?;
    let mut reasons = report.reasons();
    if reasons.is_empty() {
        reasons.push(format!("every cell within the {} % warn budget", report.warn_pct));
    }
    let (store, by) = open(&args.meta).await?;
    let files: Vec<String> = args.gate.compare_csv.iter().map(|p| p.display().to_string()).chain(args.gate.label.iter().cloned()).collect();
    let fingerprint = json!({"imported_from": files, "fail_pct": report.fail_pct, "warn_pct": report.warn_pct});
    let new = experiment(&args.meta, ExperimentKind::Warp, by, fingerprint, arms(&args.meta, &["candidate".to_string()]));
    let id = store.insert_experiment(&new).await.map_err(|e| e.to_string())?;
    let gate_md = judge::warp::gate_md::render(&report, Some(&provenance));
    let json = json!({"gate": report, "provenance": provenance, "gate_md": gate_md});
    let result = store.record_verdict(id, report.verdict, &reasons, &json, None).await;
    finish(&store, id, result).await?;
    let dir = crate::downloads::experiment_dir(&args.meta.store.data_dir, id).join("reports");
    std::fs::create_dir_all(&dir)
        .and_then(|_| std::fs::write(dir.join("gate.md"), &gate_md))
        .map_err(|e| format!("cannot write gate.md: {e}"))?;
    Ok(announce(id, report.verdict, &reasons))
}

/// On failure the half-imported experiment is deleted, so nothing half-stored stays behind.
async fn finish<T>(store: &Store, id: i64, result: Result<T, store::StoreError>) -> Result<(), String> {
    let outcome = match result {
        Ok(_) => Ok(()),
        Err(e) => {
            let _ = store.delete_experiment(id).await;
            Err(format!("import failed, nothing kept: {e}"))
        }
    };
    store.close().await;
    outcome
}
