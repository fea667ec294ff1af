//! Bisections: `POST /api/v1/bisections` starts one (or, with `dry_run`, lists the commits and the
//! expected steps and trials), `GET` lists them, `GET …/{id}` answers one (its steps, readings, outcome and
//! culprit), `POST …/{id}/cancel` stops it and every step still running, `POST …/{id}/shares` makes a share
//! link (shown once) that opens the bisection's page and its steps' experiments to someone without an
//! account, and `DELETE …/{id}/shares` revokes them all.

use super::error::{ApiError, ApiResult};
use crate::auth::Actor;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use engine::bisect::Started;
use serde::Deserialize;
use serde_json::json;
use wire::bisection::{JsonBisection, JsonBisectionRequest};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/bisections", get(list).post(start))
        .route("/api/v1/bisections/{id}", get(one))
        .route("/api/v1/bisections/{id}/cancel", post(cancel))
        .route("/api/v1/bisections/{id}/shares", post(share).delete(revoke_shares))
}

/// Start a bisection (or, with `dry_run`, list its commits and expected steps and store nothing).
#[utoipa::path(post, path = "/api/v1/bisections", tag = "bisections", request_body = JsonBisectionRequest,
    responses((status = 201, description = "stored, its first step launched: id and page URL"), (status = 200, description = "dry run: the range and the plan"),
              (status = 400, description = "the request is not valid (the field is named): an unknown suite or metric, refs that are not a range, a budget out of bounds"),
              (status = 401, description = "no valid credentials"), (status = 403, description = "needs the launcher role"),
              (status = 502, description = "git could not read the suite's repository"), (status = 503, description = "no finelog server or sandbox to run steps")))]
pub(crate) async fn start(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    body: Result<Json<JsonBisectionRequest>, JsonRejection>,
) -> ApiResult<Response> {
    let me = actor.id;
    let Json(req) = body?;
    Ok(match engine::bisect::start(&state.engine, Some(me), &req).await? {
        Started::DryRun(plan) => Json(wire::answers::JsonBisectionDryRun { dry_run: true, plan: *plan }).into_response(),
        Started::Stored { id, url } => (axum::http::StatusCode::CREATED, Json(wire::answers::JsonCreated { id, url })).into_response(),
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    status: Option<String>,
    limit: Option<u32>,
}

/// The newest bisections, newest first.
#[utoipa::path(get, path = "/api/v1/bisections", tag = "bisections",
    params(("status" = Option<String>, Query, description = "running | finished | cancelled | errored"), ("limit" = Option<u32>, Query, description = "1–500, default 50")),
    responses((status = 200, description = "bisections, newest first"), (status = 400, description = "a filter is not valid (named)"), (status = 401, description = "no valid credentials")))]
pub(crate) async fn list(
    State(state): State<AppState>,
    params: Result<Query<ListQuery>, QueryRejection>,
) -> ApiResult<Json<Vec<JsonBisection>>> {
    let Query(q) = params?;
    if let Some(s) = q.status.as_deref().filter(|s| !["running", "finished", "cancelled", "errored"].contains(s)) {
        return Err(ApiError::BadRequest(format!("status {s:?}: one of running, finished, cancelled, errored")));
    }
    let limit = q.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::BadRequest(format!("limit {limit}: use 1–500")));
    }
    let rows = state.store.bisections(q.status.as_deref(), i64::from(limit), &state.engine.base_url).await?;
    Ok(Json(rows.into_iter().map(|b| b.bisection).collect()))
}

/// One bisection: its range, steps (each an experiment), readings, outcome and culprit.
#[utoipa::path(get, path = "/api/v1/bisections/{id}", tag = "bisections", params(("id" = i64, Path)),
    responses((status = 200, description = "the bisection"), (status = 404, description = "no such bisection"), (status = 401, description = "no valid credentials")))]
pub(crate) async fn one(State(state): State<AppState>, Path(id): Path<i64>) -> ApiResult<Json<JsonBisection>> {
    Ok(Json(state.store.bisection(id, &state.engine.base_url).await?.bisection))
}

/// Stops a bisection and every step still running. Its launcher or an admin.
#[utoipa::path(post, path = "/api/v1/bisections/{id}/cancel", tag = "bisections", params(("id" = i64, Path)),
    responses((status = 200, description = "cancelled; running steps stopping"), (status = 404, description = "no such bisection"), (status = 409, description = "it has already ended"),
              (status = 401, description = "no valid credentials"), (status = 403, description = "only its launcher or an admin")))]
pub(crate) async fn cancel(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<i64>,
) -> ApiResult<Json<wire::answers::JsonBisectionCancelled>> {
    let owner = state.store.bisection(id, &state.engine.base_url).await?.launched_by_id;
    let me = actor.may(rights::ExperimentAct::CancelBisection, id, owner)?;
    let who = actor.name.clone();
    let stopped = engine::bisect::cancel(&state.engine, id, Some(me), &who).await?;
    Ok(Json(wire::answers::JsonBisectionCancelled { id, steps_stopped: stopped }))
}

/// The bisection's launcher or an admin; returns the acting user.
async fn may_share(state: &AppState, actor: &Actor, id: i64) -> ApiResult<i64> {
    let owner = state.store.bisection(id, &state.engine.base_url).await?.launched_by_id;
    Ok(actor.may(rights::ExperimentAct::ShareBisection, id, owner)?)
}

/// Makes a share link of a bisection: it opens the bisection's page and its steps' experiment pages and
/// reports (never their logs or files), until it expires or is revoked. The secret is shown once.
#[utoipa::path(post, path = "/api/v1/bisections/{id}/shares", tag = "bisections", params(("id" = i64, Path)), request_body = Option<wire::share::JsonNewShare>,
    responses((status = 201, description = "the share link (url, token), shown once"), (status = 400, description = "a bad body: an unknown field, an expiry outside 1–365 days, or `files` (a bisection's link never opens logs)"),
              (status = 404, description = "no such bisection"), (status = 401, description = "no valid credentials"), (status = 403, description = "only its launcher or an admin")))]
pub(crate) async fn share(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<i64>,
    body: Bytes,
) -> ApiResult<Response> {
    let me = may_share(&state, &actor, id).await?;
    let ask = super::shares::share_request(&body)?;
    if ask.files {
        return Err(ApiError::BadRequest(
            "files: a bisection's share link opens its page and its steps' pages and reports, never their logs; share a step's experiment with files for that".into(),
        ));
    }
    let expires_at = ask.expires_at(store::now_ms()).map_err(ApiError::BadRequest)?;
    let secret = crate::auth::token::generate();
    let share_id = state.store.insert_bisection_share(id, &crate::auth::token::digest(&secret), Some(me), expires_at).await?;
    let detail = json!({"share_token": share_id, "expires_at": expires_at});
    state.store.audit(Some(me), "share.create", &format!("bisection:{id}"), None, &detail).await?;
    let url = format!("{}/share/{secret}", state.auth.base_url);
    let body =
        wire::answers::JsonNewBisectionLink { id: share_id, bisection: id, url, token: secret, expires_at, created_at: store::now_ms() };
    Ok((axum::http::StatusCode::CREATED, Json(body)).into_response())
}

/// Revokes every live share link of a bisection.
#[utoipa::path(delete, path = "/api/v1/bisections/{id}/shares", tag = "bisections", params(("id" = i64, Path)),
    responses((status = 200, description = "how many links were revoked"), (status = 404, description = "no such bisection"), (status = 401, description = "no valid credentials"), (status = 403, description = "only its launcher or an admin")))]
pub(crate) async fn revoke_shares(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<i64>,
) -> ApiResult<Json<wire::answers::JsonRevoked>> {
    let me = may_share(&state, &actor, id).await?;
    let n = state.store.revoke_bisection_shares(id).await?;
    state.store.audit(Some(me), "share.revoke", &format!("bisection:{id}"), None, &json!({"revoked": n})).await?;
    Ok(Json(wire::answers::JsonRevoked { experiment: None, bisection: Some(id), revoked: n }))
}
