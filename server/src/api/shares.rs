//! Share links: `POST /api/v1/experiments/{id}/shares` makes one (shown once), `DELETE` revokes them
//! all, and `GET /share/{token}` lets a visitor without an account read that one experiment: the link
//! is remembered in their session and re-checked on every request, so revoking it closes the page.

use super::error::{ApiError, ApiResult};
use crate::auth::principal::{require, MAX_SHARES};
use crate::auth::{token, Principal, SESSION_SHARES};
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde_json::{json, Value};
use store::people::Role;
use tower_sessions::Session;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/experiments/{id}/shares", post(create).delete(revoke)).route("/share/{token}", get(open))
}

/// The experiment's launcher or an admin.
async fn may_share(state: &AppState, principal: &Principal, id: i64) -> ApiResult<i64> {
    require(principal, Role::Launcher)?;
    let owner = state.store.experiment_owner(id).await?;
    Ok(principal.may(app::auth::ExperimentAct::Share, id, owner)?)
}

#[utoipa::path(post, path = "/api/v1/experiments/{id}/shares", tag = "shares", params(("id" = i64, Path)),
    responses((status = 201, description = "the share link (url, token), shown once"), (status = 404, description = "no such experiment"), (status = 401, description = "no valid credentials"), (status = 403, description = "only its launcher or an admin")))]
async fn create(State(state): State<AppState>, Extension(principal): Extension<Principal>, Path(id): Path<i64>) -> ApiResult<Response> {
    let me = may_share(&state, &principal, id).await?;
    let secret = token::generate();
    let share_id = state.store.insert_share_token(id, &token::digest(&secret), Some(me)).await?;
    state.store.audit(Some(me), "share.create", &format!("experiment:{id}"), None, &json!({"share_token": share_id})).await?;
    let url = format!("{}/share/{secret}", state.auth.base_url);
    Ok((StatusCode::CREATED, Json(json!({"id": share_id, "experiment": id, "url": url, "token": secret}))).into_response())
}

#[utoipa::path(delete, path = "/api/v1/experiments/{id}/shares", tag = "shares", params(("id" = i64, Path)),
    responses((status = 200, description = "how many links were revoked"), (status = 404, description = "no such experiment"), (status = 401, description = "no valid credentials"), (status = 403, description = "only its launcher or an admin")))]
async fn revoke(State(state): State<AppState>, Extension(principal): Extension<Principal>, Path(id): Path<i64>) -> ApiResult<Json<Value>> {
    let me = may_share(&state, &principal, id).await?;
    let n = state.store.revoke_share_tokens(id).await?;
    state.store.audit(Some(me), "share.revoke", &format!("experiment:{id}"), None, &json!({"revoked": n})).await?;
    Ok(Json(json!({"experiment": id, "revoked": n})))
}

async fn open(State(state): State<AppState>, session: Session, Path(secret): Path<String>) -> ApiResult<Response> {
    let digest = token::digest(&secret);
    let Some(id) = state.store.share_token_experiment(&digest).await? else {
        return Err(ApiError::NotFound("this share link is not valid, or it was revoked".into()));
    };
    let err = |e: tower_sessions::session::Error| ApiError::Internal(format!("session store: {e}"));
    let mut held: Vec<String> = session.get(SESSION_SHARES).await.map_err(err)?.unwrap_or_default();
    if !held.contains(&digest) {
        held.push(digest);
        let skip = held.len().saturating_sub(MAX_SHARES);
        held.drain(..skip);
        session.insert(SESSION_SHARES, held).await.map_err(err)?;
    }
    Ok(Redirect::to(&format!("/experiments/{id}")).into_response())
}
