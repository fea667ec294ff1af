//! API tokens: `GET /api/v1/tokens` (your own; `?all=true` for an admin), `POST` (shown once),
//! `DELETE /api/v1/tokens/{id}` (your own, or any for an admin). Secrets are never listed.

use super::error::{ApiError, ApiResult};
use crate::auth::users::issue_api_token;
use crate::auth::Actor;
use crate::state::AppState;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::json;
use store::people::{ApiToken, Role};

pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/tokens", get(list).post(create)).route("/api/v1/tokens/{id}", delete(revoke))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListParams {
    #[serde(default)]
    all: bool,
}

#[utoipa::path(get, path = "/api/v1/tokens", tag = "tokens", params(("all" = Option<bool>, Query, description = "every user's tokens (admins only)")),
    responses((status = 200, description = "the caller's API tokens (never their secrets)"), (status = 401, description = "no valid credentials"), (status = 403, description = "needs the launcher role")))]
async fn list(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    params: Result<Query<ListParams>, QueryRejection>,
) -> ApiResult<Json<Vec<ApiToken>>> {
    let (me, role) = (actor.id, actor.role);
    let all = params?.0.all;
    if all && role != Role::Admin {
        return Err(ApiError::Forbidden("only an admin lists everyone's tokens".into()));
    }
    Ok(Json(state.store.list_api_tokens(if all { None } else { Some(me) }).await?))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct NewToken {
    name: String,
    #[serde(default)]
    /// viewer | launcher | admin; default: the user's own.
    #[schema(value_type = Option<String>)]
    role: Option<Role>,
    #[serde(default)]
    expires_in_days: Option<u32>,
}

#[utoipa::path(post, path = "/api/v1/tokens", tag = "tokens", request_body = NewToken,
    responses((status = 201, description = "the token (id, name, role, created_at, expires_at in ms), its secret shown once"), (status = 400, description = "not valid (named)"), (status = 401, description = "no valid credentials"), (status = 403, description = "needs the launcher role")))]
async fn create(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    body: Result<Json<NewToken>, JsonRejection>,
) -> ApiResult<Response> {
    let (me, acting_role) = (actor.id, actor.role);
    let Json(new) = body?;
    let user = state.store.user_by_id(me).await?.ok_or_else(|| ApiError::Unauthorized("your account is gone".into()))?;
    let role = new.role.unwrap_or(Role::Launcher);
    // A token made with a narrower token is no wider than it.
    if role > acting_role {
        return Err(ApiError::Forbidden(format!("you act as {}; a new token cannot be {}", acting_role.as_str(), role.as_str())));
    }
    // Made with a token: no longer-lived than it, and gone with it.
    let parent = match actor.via {
        crate::auth::Via::ApiToken(parent) => state.store.api_token(parent).await?,
        crate::auth::Via::Session => None,
    };
    let (id, secret) = issue_api_token(&state.store, Some(me), &user, &new.name, role, new.expires_in_days, parent.as_ref()).await?;
    let stored = state.store.list_api_tokens(Some(me)).await?.into_iter().find(|t| t.id == id);
    let (created_at, expires_at) = stored.map_or((None, None), |t| (Some(t.created_at), t.expires_at));
    let body =
        wire::answers::JsonNewToken { id, name: new.name.trim().to_string(), role, token: secret, created_at, expires_at };
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

#[utoipa::path(delete, path = "/api/v1/tokens/{id}", tag = "tokens", params(("id" = i64, Path)),
    responses((status = 200, description = "revoked"), (status = 404, description = "no such active token of yours"), (status = 401, description = "no valid credentials"), (status = 403, description = "needs the launcher role")))]
async fn revoke(State(state): State<AppState>, Extension(actor): Extension<Actor>, Path(id): Path<i64>) -> ApiResult<Json<wire::answers::JsonTokenRevoked>> {
    let (me, role) = (actor.id, actor.role);
    let owned = state.store.list_api_tokens(Some(me)).await?.iter().any(|t| t.id == id);
    if !owned && role != Role::Admin {
        return Err(ApiError::NotFound(format!("no API token {id} of yours")));
    }
    state.store.revoke_api_token(id).await?;
    state.store.audit(Some(me), "token.revoke", &format!("api_token:{id}"), None, &json!({})).await?;
    Ok(Json(wire::answers::JsonTokenRevoked { id, revoked: true }))
}
