//! `GET /api/v1/experiments` (history, newest first, keyset pages) and `GET /api/v1/experiments/{id}`.

use super::error::{ApiError, ApiResult};
use crate::auth::Actor;
use crate::state::AppState;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Extension;
use axum::{Json, Router};
use engine::launch::Launched;
use serde_json::json;
use store::experiments::{HistoryFilter, HistoryPage, HistoryQuery};
pub use wire::experiment::{JsonArm, JsonExperiment};
use wire::launch::JsonLaunch;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/experiments", get(list).post(launch))
        .route("/api/v1/experiments/{id}", get(one))
        .route("/api/v1/experiments/{id}/cancel", axum::routing::post(cancel))
        .route("/api/v1/experiments/{id}/rerun", axum::routing::post(super::rerun::rerun))
        .route("/api/v1/experiments/{id}/rejudge", axum::routing::post(super::rejudge::rejudge))
}

/// Checks and resolves a launch. `dry_run: true` answers with the whole plan (arms with SHAs, every
/// trial's argv, the worst-case time) and stores nothing; otherwise the experiment and its queued
/// trials are stored and the trial queue is woken: 201 with the id and the page's URL.
/// Launch an experiment (or, with `dry_run`, return its plan and store nothing).
#[utoipa::path(post, path = "/api/v1/experiments", tag = "experiments", request_body = JsonLaunch,
    responses((status = 201, description = "stored and queued: id, page URL, trial count"), (status = 200, description = "dry run: the plan"),
              (status = 400, description = "the request is not valid (the field is named)"), (status = 401, description = "no valid credentials"), (status = 403, description = "needs the launcher role"),
              (status = 502, description = "git could not fetch or read the suite's repository"), (status = 503, description = "no finelog server for a pipeline launch")))]
async fn launch(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    body: Result<Json<JsonLaunch>, JsonRejection>,
) -> ApiResult<Response> {
    let me = actor.id;
    let Json(req) = body?;
    Ok(launched_response(engine::launch::launch(&state.engine, Some(me), &req).await?))
}

pub(crate) fn launched_response(launched: Launched) -> Response {
    match launched {
        Launched::DryRun(plan) => Json(wire::plan::JsonDryRun { dry_run: true, plan: *plan }).into_response(),
        Launched::Stored { id, url, trials } => {
            (axum::http::StatusCode::CREATED, Json(wire::plan::JsonLaunched { id, url, trials })).into_response()
        }
    }
}

/// Stops an experiment: queued trials are cancelled, running ones stopped (their process groups),
/// and no verdict is given. Its launcher or an admin.
#[utoipa::path(post, path = "/api/v1/experiments/{id}/cancel", tag = "experiments", params(("id" = i64, Path)),
    responses((status = 200, description = "queued trials cancelled, running ones stopping"), (status = 404, description = "no such experiment"), (status = 409, description = "it has already ended"), (status = 401, description = "no valid credentials"), (status = 403, description = "only its launcher or an admin")))]
async fn cancel(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<i64>,
) -> ApiResult<Json<wire::answers::JsonCancelled>> {
    let owner = state.store.experiment_owner(id).await?;
    let me = actor.may(rights::ExperimentAct::Cancel, id, owner)?;
    let (queued, running) = engine::cancel_experiment(&state.engine, id).await?;
    state
        .store
        .audit(Some(me), "experiment.cancel", &format!("experiment:{id}"), None, &json!({"queued": queued, "running": running}))
        .await?;
    Ok(Json(wire::answers::JsonCancelled { id, cancelled_queued: queued, stopping_running: running }))
}

#[utoipa::path(get, path = "/api/v1/experiments", tag = "experiments",
    params(("kind" = Option<String>, Query, description = "pipeline | warp"), ("status" = Option<String>, Query), ("verdict" = Option<String>, Query),
           ("suite" = Option<String>, Query), ("git" = Option<String>, Query, description = "a ref either arm ran, or a SHA (prefix of at least 4 hex digits)"),
           ("by" = Option<String>, Query, description = "who launched it"), ("since" = Option<String>, Query, description = "YYYY-MM-DD, UTC, inclusive"),
           ("until" = Option<String>, Query, description = "YYYY-MM-DD, UTC, inclusive"), ("q" = Option<String>, Query, description = "words in the title, suite or refs"),
           ("before" = Option<String>, Query, description = "CREATED.ID: the previous page's next cursor"), ("limit" = Option<u32>, Query, description = "1–500, default 50")),
    responses((status = 200, description = "a page of experiments, newest first, and the next page's cursor"), (status = 400, description = "a filter is not valid (named)"), (status = 401, description = "no valid credentials")))]
async fn list(State(state): State<AppState>, params: Result<Query<HistoryFilter>, QueryRejection>) -> ApiResult<Json<HistoryPage>> {
    let Query(filter) = params?;
    let query = HistoryQuery::from_filter(&filter, 50).map_err(ApiError::BadRequest)?;
    Ok(Json(state.store.list_experiments(&query).await?))
}

#[utoipa::path(get, path = "/api/v1/experiments/{id}", tag = "experiments", params(("id" = i64, Path)),
    responses((status = 200, description = "the experiment: summary, arms, trials (each with `position`: 0 when it started first in its pair, 1 second; null when unknown — not started, alone, a warm-up, or imported; `role`: `measured`, or `warm_up` for an unmeasured trial run first and never judged, with `repeat_index` -1; and `host`: what the host was doing while a local trial ran — kernel, CPU model, CPUs online, wall seconds, the trial's own CPU-seconds from its control group, other processes' CPU-seconds, steal %, the 1-minute load's max and mean, throttled seconds, `reserved_cpus`: the CPUs reserved for it, or `shared_cpus_why`: why it ran on the shared CPUs), reasons and the judge's full report"), (status = 404, description = "no such experiment"), (status = 401, description = "no valid credentials")))]
async fn one(State(state): State<AppState>, Path(id): Path<i64>) -> ApiResult<Json<JsonExperiment>> {
    json_experiment(&state, id).await.map(Json)
}

/// Everything stored about one experiment: the API's answer and the page's JSON download.
pub async fn json_experiment(state: &AppState, id: i64) -> ApiResult<JsonExperiment> {
    let summary = state.store.experiment_summary(id).await?;
    let arms = state.store.arms(id).await?.into_iter().map(|(id, name, role, sha)| JsonArm { id, name, role, sha }).collect();
    let trials = state.store.trials(id).await?;
    let (reasons, report) = match state.store.latest_verdict(id).await? {
        Some((_, reasons, report)) => (reasons, Some(report)),
        None => (Vec::new(), None),
    };
    Ok(JsonExperiment { summary, arms, trials, reasons, report })
}
