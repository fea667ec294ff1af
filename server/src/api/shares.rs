//! Share links: `POST /api/v1/experiments/{id}/shares` makes one (shown once; optionally with the files
//! scope and an expiry), `GET` lists the live ones with who made each, `DELETE` revokes them all and
//! `DELETE …/shares/{share}` one; `GET /share/{token}` lets a visitor without an account read that one
//! experiment: the link is remembered in their session and re-checked on every request, so revoking it
//! (or its expiry) closes the page. A bisection's link (`api/bisections.rs` makes it) opens here too, on
//! the bisection's page.

use super::error::{ApiError, ApiResult};
use crate::auth::principal::MAX_SHARES;
use crate::auth::{token, Actor, SESSION_SHARES};
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{delete, get, post};
use axum::{Extension, Json, Router};
use serde_json::json;
use tower_sessions::Session;
use wire::share::JsonNewShare;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/experiments/{id}/shares", post(create).get(list).delete(revoke))
        .route("/api/v1/experiments/{id}/shares/{share}", delete(revoke_one))
        .route("/share/{token}", get(open))
}

/// A share request's body (an experiment's or a bisection's); empty: a link to the page and its reports,
/// until revoked.
pub(crate) fn share_request(body: &[u8]) -> ApiResult<JsonNewShare> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(JsonNewShare::default());
    }
    serde_json::from_slice(body).map_err(|e| ApiError::BadRequest(format!("the share request: {e}")))
}

/// The experiment's launcher or an admin.
async fn may_share(state: &AppState, actor: &Actor, id: i64) -> ApiResult<i64> {
    let owner = state.store.experiment_owner(id).await?;
    Ok(actor.may(rights::ExperimentAct::Share, id, owner)?)
}

#[utoipa::path(post, path = "/api/v1/experiments/{id}/shares", tag = "shares", params(("id" = i64, Path)), request_body = Option<JsonNewShare>,
    responses((status = 201, description = "the share link (url, token), shown once"), (status = 400, description = "a bad body (an unknown field, an expiry outside 1–365 days)"), (status = 404, description = "no such experiment"), (status = 401, description = "no valid credentials"), (status = 403, description = "only its launcher or an admin")))]
async fn create(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<i64>,
    body: Bytes,
) -> ApiResult<Response> {
    let me = may_share(&state, &actor, id).await?;
    let ask = share_request(&body)?;
    let expires_at = ask.expires_at(store::now_ms()).map_err(ApiError::BadRequest)?;
    let secret = token::generate();
    let share_id = state.store.insert_share_token(id, &token::digest(&secret), Some(me), ask.files, expires_at).await?;
    let detail = json!({"share_token": share_id, "files": ask.files, "expires_at": expires_at});
    state.store.audit(Some(me), "share.create", &format!("experiment:{id}"), None, &detail).await?;
    let url = format!("{}/share/{secret}", state.auth.base_url);
    let made_by = Some(actor.name.clone());
    let body = wire::answers::JsonNewShareLink {
        id: share_id,
        experiment: id,
        url,
        token: secret,
        files: ask.files,
        expires_at,
        created_by: made_by,
        created_at: store::now_ms(),
    };
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

#[utoipa::path(get, path = "/api/v1/experiments/{id}/shares", tag = "shares", params(("id" = i64, Path)),
    responses((status = 200, description = "the live links (id, created_by, created_at, expires_at, files), never their secrets"), (status = 404, description = "no such experiment"), (status = 401, description = "no valid credentials"), (status = 403, description = "only its launcher or an admin")))]
async fn list(State(state): State<AppState>, Extension(actor): Extension<Actor>, Path(id): Path<i64>) -> ApiResult<Json<wire::answers::JsonShareLinks>> {
    may_share(&state, &actor, id).await?;
    let links = state.store.share_links(id).await?;
    Ok(Json(wire::answers::JsonShareLinks { experiment: id, links }))
}

#[utoipa::path(delete, path = "/api/v1/experiments/{id}/shares/{share}", tag = "shares", params(("id" = i64, Path), ("share" = i64, Path)),
    responses((status = 200, description = "the link was revoked"), (status = 404, description = "no such experiment, or no live link of it with that id"), (status = 401, description = "no valid credentials"), (status = 403, description = "only its launcher or an admin")))]
async fn revoke_one(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((id, share)): Path<(i64, i64)>,
) -> ApiResult<Json<wire::answers::JsonRevoked>> {
    let me = may_share(&state, &actor, id).await?;
    state.store.revoke_share_token(id, share).await?;
    state.store.audit(Some(me), "share.revoke", &format!("experiment:{id}"), None, &json!({"share_token": share})).await?;
    Ok(Json(wire::answers::JsonRevoked { experiment: Some(id), bisection: None, revoked: 1 }))
}

#[utoipa::path(delete, path = "/api/v1/experiments/{id}/shares", tag = "shares", params(("id" = i64, Path)),
    responses((status = 200, description = "how many links were revoked"), (status = 404, description = "no such experiment"), (status = 401, description = "no valid credentials"), (status = 403, description = "only its launcher or an admin")))]
async fn revoke(State(state): State<AppState>, Extension(actor): Extension<Actor>, Path(id): Path<i64>) -> ApiResult<Json<wire::answers::JsonRevoked>> {
    let me = may_share(&state, &actor, id).await?;
    let n = state.store.revoke_share_tokens(id).await?;
    state.store.audit(Some(me), "share.revoke", &format!("experiment:{id}"), None, &json!({"revoked": n})).await?;
    Ok(Json(wire::answers::JsonRevoked { experiment: Some(id), bisection: None, revoked: n }))
}

async fn open(State(state): State<AppState>, session: Session, Path(secret): Path<String>) -> ApiResult<Response> {
    let digest = token::digest(&secret);
    let target = match state.store.share_token_experiment(&digest).await? {
        Some((id, _)) => format!("/experiments/{id}"),
        None => match state.store.bisection_share(&digest).await? {
            Some((id, _)) => format!("/bisections/{id}"),
            None => return Err(ApiError::NotFound("this share link is not valid, or it was revoked or has expired".into())),
        },
    };
    let err = |e: tower_sessions::session::Error| ApiError::Internal(format!("session store: {e}"));
    let mut held: Vec<String> = session.get(SESSION_SHARES).await.map_err(err)?.unwrap_or_default();
    if !held.contains(&digest) {
        held.push(digest);
        let skip = held.len().saturating_sub(MAX_SHARES);
        held.drain(..skip);
        session.insert(SESSION_SHARES, held).await.map_err(err)?;
    }
    Ok(Redirect::to(&target).into_response())
}
