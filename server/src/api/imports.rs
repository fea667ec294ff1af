//! `POST /api/v1/imports`: results measured elsewhere, judged and stored as an experiment (a launcher).
//! The same content as `arbiter import`, in JSON: pipeline `rows` (zephyr.stage rows as CSV, a JSON array
//! or JSON lines) with `control` / `treatment` trials (`"ID[,ID…]"`, treatments `"[NAME=]IDS"`), or warp
//! `compare_csv` files, each `{label, text}`. Answers 201 with the id, page URL, verdict and reasons.

use super::error::{ApiError, ApiResult};
use crate::auth::Actor;
use crate::compare::{treatment_arms, trial};
use crate::state::AppState;
use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Json, Router};
use engine::import::Compared;
use engine::import::{store_pipeline, store_warp, ImportInfo};
use judge::pipeline::{judge, PipelineConfig};
use judge::warp::compare_csv::parse_compare_csv;
use judge::warp::gate::{gate, GateConfig};
use judge::warp::gate_md::Provenance;
use judge::ExperimentKind;
use serde_json::json;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/imports", post(import))
}

pub use wire::import::{JsonCompareCsv, JsonImport, JsonRounds};

async fn pipeline(state: &AppState, req: &JsonImport) -> Result<Compared, String> {
    if req.control.is_empty() || req.treatment.is_empty() {
        return Err("control, treatment: give at least one trial of each (execution ids, comma-separated)".into());
    }
    let control = req.control.iter().map(|c| trial("control", c)).collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
    let arms = treatment_arms(&req.treatment).map_err(|e| e.to_string())?;
    let rows = match (&req.rows, req.finelog) {
        (Some(text), false) => judge::pipeline::rows::parse_rows("rows", text).map_err(|e| e.to_string())?,
        (None, true) => {
            let finelog =
                state.engine.queue.finelog_reader().map_err(|why| format!("finelog: this server has no finelog server ({why})"))?;
            crate::compare::rows_from(&finelog, &control, &arms).await.map_err(|e| format!("finelog: {e}"))?
        }
        _ => return Err("rows: give the zephyr.stage rows (CSV, a JSON array or JSON lines), or \"finelog\": true".into()),
    };
    let worker_ram = req.worker_ram.as_deref().map(judge::units::parse_size).transpose().map_err(|e| format!("worker_ram: {e}"))?;
    let config = PipelineConfig { worker_ram, ..PipelineConfig::default() };
    let report = judge(&rows, &control, &arms, &config).map_err(|e| e.to_string())?;
    Ok(Compared { rows, control, arms, report })
}

fn warp(req: &JsonImport) -> Result<(judge::warp::gate::GateReport, Provenance), String> {
    if req.compare_csv.is_empty() && req.rounds.is_empty() {
        return Err("compare_csv: give at least one {label, text} baseline_compare.csv (or rounds: {label, baseline, candidate})".into());
    }
    let (fail_pct, warn_pct) = (req.fail_pct.unwrap_or(10.0), req.warn_pct.unwrap_or(5.0));
    if !(fail_pct.is_finite() && warn_pct.is_finite() && warn_pct >= 0.0 && warn_pct <= fail_pct) {
        return Err(format!("fail_pct {fail_pct}, warn_pct {warn_pct}: percentages with 0 ≤ warn ≤ fail"));
    }
    let mut rows = Vec::new();
    let check_label = |field: String, label: &str| {
        if label.trim().is_empty() || label.contains('|') || label.len() > 120 {
            return Err(format!("{field}.label: 1–120 characters, no '|'"));
        }
        Ok(())
    };
    for (i, f) in req.compare_csv.iter().enumerate() {
        check_label(format!("compare_csv[{i}]"), &f.label)?;
        rows.extend(parse_compare_csv(&format!("compare_csv[{i}]"), &f.text, Some(f.label.trim()), false).map_err(|e| e.to_string())?);
    }
    for (i, r) in req.rounds.iter().enumerate() {
        check_label(format!("rounds[{i}]"), &r.label)?;
        rows.extend(judge::warp::rounds::compare_rows_from_rounds(
            &format!("rounds[{i}]"),
            r.label.trim(),
            &r.baseline,
            &r.candidate,
            false,
        )?);
    }
    let report = gate(&rows, &GateConfig { fail_pct, warn_pct, ..GateConfig::default() });
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
    let provenance = Provenance {
        generated: Some(judge::units::utc_rfc3339(now)),
        notes: vec!["imported through the API".into()],
        ..Provenance::default()
    };
    Ok((report, provenance))
}

/// Judge and store results measured elsewhere (zephyr.stage rows or warp compare CSVs).
#[utoipa::path(post, path = "/api/v1/imports", tag = "experiments", request_body = JsonImport,
    responses((status = 201, description = "id, page URL, verdict and reasons"), (status = 400, description = "the content is not valid (named)"), (status = 401, description = "no valid credentials"), (status = 403, description = "needs the launcher role")))]
async fn import(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    body: Result<Json<JsonImport>, JsonRejection>,
) -> ApiResult<Response> {
    let me = actor.id;
    let Json(req) = body?;
    let info = ImportInfo {
        title: req.title.clone(),
        control_ref: req.control_ref.clone(),
        treatment_ref: req.treatment_ref.clone(),
        control_sha: req.control_sha.clone(),
        treatment_sha: req.treatment_sha.clone(),
        by: Some(me),
        sources: vec!["POST /api/v1/imports".into()],
        suite_id: match &req.suite {
            Some(name) => Some(engine::import::suite_for_import(&state.store, name, None, req.kind).await.map_err(ApiError::BadRequest)?),
            None => None,
        },
        measured_at: req
            .measured_at
            .as_deref()
            .map(|t| engine::import::parse_measured_at(t, store::now_ms()))
            .transpose()
            .map_err(ApiError::BadRequest)?,
    };
    info.check().map_err(ApiError::BadRequest)?;
    let (id, verdict, reasons) = match req.kind {
        ExperimentKind::Pipeline => {
            let compared = pipeline(&state, &req).await.map_err(ApiError::BadRequest)?;
            let id = store_pipeline(&state.store, &info, &compared, req.worker_ram.as_deref()).await.map_err(ApiError::Internal)?;
            (id, compared.report.verdict, compared.report.reasons.clone())
        }
        ExperimentKind::Warp => {
            let (report, provenance) = warp(&req).map_err(ApiError::BadRequest)?;
            let (id, reasons) = store_warp(&state.store, &state.data_dir, &info, &report, &provenance).await.map_err(ApiError::Internal)?;
            (id, report.verdict, reasons)
        }
    };
    state.store.audit(Some(me), "experiment.import", &format!("experiment:{id}"), None, &json!({"kind": req.kind.as_str()})).await?;
    let url = format!("{}/experiments/{id}", state.auth.base_url);
    Ok((StatusCode::CREATED, Json(wire::answers::JsonImported { id, url, verdict, reasons })).into_response())
}
