//! Suites as TOML: `POST /api/v1/suites` creates one, `PUT /api/v1/suites/{name}` replaces one (admins).
//! The text is checked exactly as a suite file is (the line and field of a problem are named); a suite
//! saved here is kept over its file at the next start. The suite page's editor calls these.

use super::error::{ApiError, ApiResult};
use crate::auth::Actor;
use crate::state::AppState;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, post, put};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::json;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/suites", post(create))
        .route("/api/v1/suites/{name}", put(replace))
        .route("/api/v1/suites/{name}/noise-profiles/{id}", delete(reset_profile))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SuiteText {
    /// The suite as TOML, the same fields as a suite file.
    toml: String,
}

/// Parses and stores a suite; `editing` is the name in the URL of a replace.
async fn save(state: &AppState, actor: &Actor, editing: Option<&str>, text: &str) -> ApiResult<Json<wire::answers::JsonSuiteSaved>> {
    let me = actor.id;
    let (name, kind, definition) = suite::parse_for_store(text).map_err(ApiError::BadRequest)?;
    let exists = match state.store.suite_by_name(&name).await {
        Ok(_) => true,
        Err(store::StoreError::NotFound { .. }) => false,
        Err(e) => return Err(e.into()),
    };
    match editing {
        Some(o) if o != name => {
            return Err(ApiError::BadRequest(format!("name: this edits suite {o:?}; to make {name:?}, create a new suite")))
        }
        Some(o) if !exists => return Err(ApiError::NotFound(format!("there is no suite {o:?}; create it with POST /api/v1/suites"))),
        None if exists => return Err(ApiError::Conflict(format!("name: suite {name:?} exists; edit it on its page"))),
        _ => {}
    }
    let id = state.store.upsert_suite(&name, kind, &definition, "ui", Some(text)).await?;
    let action = if editing.is_some() { "suite.edit" } else { "suite.create" };
    state.store.audit(Some(me), action, &format!("suite:{id}"), None, &json!({"name": name})).await?;
    Ok(Json(wire::answers::JsonSuiteSaved { id, name, kind }))
}

#[utoipa::path(post, path = "/api/v1/suites", tag = "suites", request_body = SuiteText,
    responses((status = 201, description = "created: id, name, kind"), (status = 400, description = "the TOML does not check (line and field named)"),
        (status = 409, description = "a suite of that name exists"), (status = 401, description = "no valid credentials"), (status = 403, description = "needs the admin role")))]
async fn create(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    body: Result<Json<SuiteText>, JsonRejection>,
) -> ApiResult<(StatusCode, Json<wire::answers::JsonSuiteSaved>)> {
    let Json(body) = body?;
    Ok((StatusCode::CREATED, save(&state, &actor, None, &body.toml).await?))
}

#[utoipa::path(put, path = "/api/v1/suites/{name}", tag = "suites", params(("name" = String, Path)), request_body = SuiteText,
    responses((status = 200, description = "replaced: id, name, kind"), (status = 400, description = "the TOML does not check, or renames the suite"),
        (status = 404, description = "no such suite"), (status = 401, description = "no valid credentials"), (status = 403, description = "needs the admin role")))]
async fn replace(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(name): Path<String>,
    body: Result<Json<SuiteText>, JsonRejection>,
) -> ApiResult<Json<wire::answers::JsonSuiteSaved>> {
    let Json(body) = body?;
    save(&state, &actor, Some(&name), &body.toml).await
}

#[utoipa::path(delete, path = "/api/v1/suites/{name}/noise-profiles/{id}", tag = "suites", params(("name" = String, Path), ("id" = i64, Path)),
    responses((status = 200, description = "removed: the next calibration of that fingerprint starts a new profile"),
        (status = 404, description = "no such suite, or no such profile of it"), (status = 401, description = "no valid credentials"), (status = 403, description = "needs the admin role")))]
/// Resets a noise profile: an admin removes it (the verdicts judged with it keep their reports, and name
/// it by number), and the suite's next calibration of that fingerprint starts afresh. Audited.
async fn reset_profile(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((name, id)): Path<(String, i64)>,
) -> ApiResult<Json<wire::answers::JsonProfileRemoved>> {
    let me = actor.id;
    let suite = state.store.suite_by_name(&name).await?;
    let profile = state.store.noise_profiles(suite.id).await?.into_iter().find(|p| p.id == id);
    let Some(profile) = profile else {
        return Err(ApiError::NotFound(format!("suite {name:?} has no noise profile #{id}")));
    };
    state.store.delete_noise_profile(suite.id, id).await?;
    let detail = json!({"suite": name, "trials": profile.trials, "fingerprint": profile.fingerprint});
    state.store.audit(Some(me), "noise_profile.reset", &format!("noise_profile:{id}"), None, &detail).await?;
    Ok(Json(wire::answers::JsonProfileRemoved { id, suite: name, removed: true }))
}
