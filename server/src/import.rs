//! Importing results measured elsewhere — zephyr.stage row files with their execution ids, or warp
//! `baseline_compare.csv` files — as judged experiments with a page, charts, history and a share link.
//! The files are judged exactly as `arbiter compare` / `arbiter gate` judge them; pipeline rows are kept
//! as the trials' observations. Two doors, one core: `arbiter import pipeline|warp` (files, straight into
//! the store) and `POST /api/v1/imports` (the same content in JSON, see `api/imports.rs`).

use crate::cli::{ImportMeta, ImportPipelineArgs, ImportWarpArgs};
use engine::import::{parse_measured_at, store_pipeline, store_warp, suite_for_import, Compared, ImportInfo};
use judge::{ExperimentKind, Verdict};
use serde_json::json;
use std::path::Path;
use store::Store;

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
        measured_at: meta
            .measured_at
            .as_deref()
            .map(|t| parse_measured_at(t, store::now_ms()))
            .transpose()
            .map_err(|e| format!("--{e}"))?,
    };
    Ok((store, info))
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
    if let Ok(id) = result {
        audit_cli(&store, &info, id, ExperimentKind::Pipeline).await;
    }
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

/// A command-line import lands in the audit log as the API's does (as `--by`, or the command line).
async fn audit_cli(store: &Store, info: &ImportInfo, id: i64, kind: ExperimentKind) {
    let detail = json!({"kind": kind.as_str(), "via": "cli", "measured_at": info.measured_at});
    if let Err(e) = store.audit(info.by, "experiment.import", &format!("experiment:{id}"), None, &detail).await {
        eprintln!("warning: experiment {id} was imported, but the audit log could not be written: {e}");
    }
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
    if let Ok((id, _)) = &result {
        audit_cli(&store, &info, *id, ExperimentKind::Warp).await;
    }
    store.close().await;
    let (id, reasons) = result?;
    Ok(announce(id, report.verdict, &reasons))
}

#[cfg(test)]
mod tests {
    use super::parse_measured_at;

    #[test]
    fn measured_at_is_a_date_or_a_utc_time_not_in_the_future() {
        let now = 1_800_000_000_000;
        let day = 1_795_996_800_000; // 2026-11-30
        assert_eq!(parse_measured_at("2026-11-30", now), Ok(day));
        assert_eq!(parse_measured_at("2026-11-30T03:15:00Z", now), Ok(day + (3 * 3600 + 15 * 60) * 1000));
        assert_eq!(parse_measured_at("2026-11-30T03:15", now), Ok(day + (3 * 3600 + 15 * 60) * 1000));
        for bad in ["yesterday", "2026-13-01", "2026-11-30T25:00", "2026-11-30T03:15:00:00", "2026-11-30T3:15"] {
            assert!(parse_measured_at(bad, now).unwrap_err().contains("give a UTC date or time"), "{bad}");
        }
        assert!(parse_measured_at("2030-01-01", now).unwrap_err().contains("is in the future"));
    }
}
