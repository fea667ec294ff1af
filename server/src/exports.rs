//! An experiment's report as files: `GET /experiments/{id}/charts/{name}.svg` (a chart as a standalone
//! image, which a PR comment can embed with `?share=TOKEN`) and `GET /experiments/{id}/export/{name}`
//! (report.json, report.md and stages.csv for pipelines; gate.md, gate.csv and report.json for warp).
//! Both read the latest verdict, so they always match the page.

use crate::api::error::{ApiError, ApiResult};
use crate::auth::Principal;
use crate::state::AppState;
use app::report::StoredReport;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use judge::pipeline::render::{markdown, ArmIds};
use judge::ExperimentKind;
use std::collections::HashMap;

/// The experiment's kind and its latest stored report; NotFound while it is not judged.
async fn report(state: &AppState, id: i64) -> ApiResult<(ExperimentKind, StoredReport)> {
    let summary = state.store.experiment_summary(id).await?;
    let Some((_, _, json)) = state.store.latest_verdict(id).await? else {
        return Err(ApiError::NotFound(format!("experiment {id} is not judged yet, so it has no report")));
    };
    let Some(report) = StoredReport::from_json(summary.kind, &json) else {
        return Err(ApiError::NotFound(format!("experiment {id}'s verdict holds no report (see its reasons)")));
    };
    Ok((summary.kind, report))
}

fn file(content_type: &'static str, name: &str, body: String) -> Response {
    let mut response = ([(header::CONTENT_TYPE, content_type)], body).into_response();
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        response.headers_mut().insert(header::CONTENT_DISPOSITION, v);
    }
    response
}

pub async fn chart(
    State(state): State<AppState>,
    Path((id, file_name)): Path<(i64, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let Some(name) = file_name.strip_suffix(".svg") else {
        return Err(ApiError::NotFound(format!("charts are SVG: ask for {file_name}.svg")));
    };
    let (_, report) = report(&state, id).await?;
    let scale = charts::Scale::from_query(query.get("scale").map(String::as_str));
    let known = || report.chart_names().iter().map(|c| c.name).collect::<Vec<_>>().join(", ");
    let svg = match report.chart(name, scale) {
        None => return Err(ApiError::NotFound(format!("experiment {id} has no chart {name:?}; it has {}", known()))),
        Some(Err(e)) => return Err(ApiError::NotFound(format!("chart {name:?}: {e}"))),
        Some(Ok(svg)) => svg,
    };
    let mut response = ([(header::CONTENT_TYPE, "image/svg+xml; charset=utf-8")], svg).into_response();
    // An image, never a document that runs anything; a verdict can change, so caches revalidate.
    let h = response.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-cache"));
    Ok(response)
}

pub async fn export(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((id, name)): Path<(i64, String)>,
) -> ApiResult<Response> {
    let (kind, report) = report(&state, id).await?;
    let prefix = format!("experiment-{id}-");
    let response = match (name.as_str(), &report) {
        ("report.json", _) => {
            let json = crate::api::experiments::json_experiment(&state, id).await?;
            let text = serde_json::to_string_pretty(&json).map_err(|e| ApiError::Internal(e.to_string()))?;
            file("application/json", &format!("{prefix}report.json"), text + "\n")
        }
        ("report.md", StoredReport::Pipeline(r)) => {
            let md = markdown(r, &arm_ids(&state, id).await?);
            // The comment link when there is one and the reader may share it; else the page.
            let may_share = match principal.actor() {
                Some(actor) => crate::api::comment::may_share(&state, &actor, id).await?.is_ok(),
                None => false,
            };
            let link = match may_share {
                true => crate::api::comment::comment_link(&state, id, None).await?.map(|l| l.url),
                false => None,
            };
            let link = link.unwrap_or_else(|| format!("{}/experiments/{id}", state.auth.base_url));
            let md = with_experiment_header(&md, &experiment_header(&state, id, &link).await?);
            file("text/markdown; charset=utf-8", &format!("{prefix}report.md"), md)
        }
        ("stages.csv", StoredReport::Pipeline(r)) => {
            file("text/csv; charset=utf-8", &format!("{prefix}stages.csv"), judge::csv_export::pipeline_stages_csv(r))
        }
        ("gate.md", StoredReport::Warp { gate, provenance }) => {
            file("text/markdown; charset=utf-8", &format!("{prefix}gate.md"), judge::warp::gate_md::render(gate, provenance.as_ref()))
        }
        ("gate.csv", StoredReport::Warp { gate, .. }) => {
            file("text/csv; charset=utf-8", &format!("{prefix}gate.csv"), judge::csv_export::warp_gate_csv(gate))
        }
        _ => {
            let offered = match kind {
                ExperimentKind::Pipeline => "report.md, stages.csv, report.json",
                ExperimentKind::Warp => "gate.md, gate.csv, report.json",
            };
            return Err(ApiError::NotFound(format!("a {} experiment exports {offered}, not {name:?}", kind.as_str())));
        }
    };
    Ok(response)
}

/// The lines a pasted report needs to stand alone: the experiment, its suite and `link` (its comment link,
/// or its page), and what ran. "**Dedup: heavier MinHash** (#5) · suite zephyr-pipeline · <https://…/experiments/5>" and "control `main`
/// at `1a2b3c4d5e6f` → heavier-minhash `cpu-heavier` at `8f3a9c2e1d0b`".
pub(crate) async fn experiment_header(state: &AppState, id: i64, link: &str) -> ApiResult<String> {
    let summary = state.store.experiment_summary(id).await?;
    let detail = state.store.experiment_detail(id).await?;
    let suite = summary.suite.map(|s| format!(" · suite {s}")).unwrap_or_default();
    let arms: Vec<String> = detail
        .arms
        .iter()
        .map(|a| {
            let git_ref = a.git_ref.as_deref().map(|r| format!(" `{}`", r.trim_start_matches("refs/heads/"))).unwrap_or_default();
            let sha = a.sha.as_deref().map(|s| format!(" at `{}`", judge::units::short_sha(s))).unwrap_or_default();
            format!("{}{git_ref}{sha}", a.name)
        })
        .collect();
    Ok(format!("**{}** (#{id}){suite} · <{link}>\n\n{}\n", summary.title, arms.join(" → ")))
}

/// The report with the experiment's header under its heading.
pub(crate) fn with_experiment_header(md: &str, header: &str) -> String {
    match md.split_once("\n\n") {
        Some((heading, rest)) => format!("{heading}\n\n{header}\n{rest}"),
        None => format!("{header}\n{md}"),
    }
}

/// Each arm's trials as their execution ids (the latest attempt of each planned trial; warm-ups, never
/// judged, left out), for the Markdown report's "Arms" line.
pub(crate) async fn arm_ids(state: &AppState, id: i64) -> ApiResult<Vec<ArmIds>> {
    let arms = state.store.arms(id).await?;
    let trials = store::trials::measured(&state.store.trials(id).await?);
    let latest = store::trials::latest(&trials);
    let mut out: Vec<ArmIds> = arms.iter().map(|(_, name, _, _)| ArmIds { name: name.clone(), trials: Vec::new() }).collect();
    for t in latest.values() {
        let ids = state.store.trial_run(t.id).await?.execution_ids;
        if let Some(i) = arms.iter().position(|a| a.0 == t.arm_id) {
            if !ids.is_empty() {
                out[i].trials.push(ids);
            }
        }
    }
    Ok(out)
}
