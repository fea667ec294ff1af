//! Users (admins): `GET /api/v1/users`, `POST` (create), `PATCH /api/v1/users/{id}` (role, disable).
//! The last active admin cannot be demoted or disabled.

use super::error::{ApiError, ApiResult};
use crate::auth::users::create_user;
use crate::auth::Actor;
use crate::state::AppState;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch};
use axum::{Extension, Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;
use store::people::Role;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/users", get(list).post(create)).route("/api/v1/users/{id}", patch(update))
}

#[derive(Serialize)]
struct JsonUser {
    id: i64,
    username: String,
    role: Role,
    created_at: i64,
    disabled_at: Option<i64>,
}

#[utoipa::path(get, path = "/api/v1/users", tag = "users",
    responses((status = 200, description = "every user"), (status = 401, description = "no valid credentials"), (status = 403, description = "admins only")))]
async fn list(State(state): State<AppState>) -> ApiResult<Json<Vec<JsonUser>>> {
    let users = state.store.list_users().await?;
    Ok(Json(
        users
            .into_iter()
            .map(|u| JsonUser { id: u.id, username: u.username, role: u.role, created_at: u.created_at, disabled_at: u.disabled_at })
            .collect(),
    ))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct NewUser {
    name: String,
    /// viewer | launcher | admin.
    #[schema(value_type = String)]
    role: Role,
    password: String,
}

#[utoipa::path(post, path = "/api/v1/users", tag = "users", request_body = NewUser,
    responses((status = 201, description = "created"), (status = 400, description = "not valid (named)"), (status = 409, description = "a user of that name exists"), (status = 401, description = "no valid credentials"), (status = 403, description = "admins only")))]
async fn create(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    body: Result<Json<NewUser>, JsonRejection>,
) -> ApiResult<Response> {
    let me = actor.id;
    let Json(new) = body?;
    let id = create_user(&state.store, Some(me), new.name.trim(), new.role, &new.password, "api").await?;
    Ok((StatusCode::CREATED, Json(wire::answers::JsonNewUser { id, name: new.name.trim().to_string(), role: new.role })).into_response())
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct UserChange {
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    role: Option<Role>,
    #[serde(default)]
    disabled: Option<bool>,
    /// Why (kept in the audit log).
    #[serde(default)]
    reason: Option<String>,
}

#[utoipa::path(patch, path = "/api/v1/users/{id}", tag = "users", params(("id" = i64, Path)), request_body = UserChange,
    responses((status = 200, description = "changed"), (status = 404, description = "no such user"), (status = 409, description = "it would leave no active admin"), (status = 401, description = "no valid credentials"), (status = 403, description = "admins only")))]
async fn update(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<i64>,
    body: Result<Json<UserChange>, JsonRejection>,
) -> ApiResult<Json<wire::answers::JsonUserUpdated>> {
    let me = actor.id;
    let Json(change) = body?;
    if change.role.is_none() && change.disabled.is_none() {
        return Err(ApiError::BadRequest("nothing to change: give `role` and/or `disabled`".into()));
    }
    let user = state.store.user_by_id(id).await?.ok_or_else(|| ApiError::NotFound(format!("no user {id}")))?;
    let loses_admin = user.role == Role::Admin
        && user.disabled_at.is_none()
        && (change.role.is_some_and(|r| r != Role::Admin) || change.disabled == Some(true));
    if loses_admin && state.store.count_admins().await? <= 1 {
        return Err(ApiError::Conflict(format!("{:?} is the last active admin; make another admin first", user.username)));
    }
    state.store.update_user(id, change.role, change.disabled).await?;
    let detail = json!({"name": user.username, "role": change.role, "disabled": change.disabled});
    state.store.audit(Some(me), "user.update", &format!("user:{id}"), change.reason.as_deref(), &detail).await?;
    Ok(Json(wire::answers::JsonUserUpdated { id, updated: true }))
}
