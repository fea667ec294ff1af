//! `GET /api/v1/audit?limit=N`: the newest audit entries (admins).

use super::error::{ApiError, ApiResult};
use crate::state::AppState;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use store::people::AuditEntry;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/audit", get(list))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuditParams {
    limit: Option<u32>,
}

#[utoipa::path(get, path = "/api/v1/audit", tag = "audit", params(("limit" = Option<u32>, Query, description = "1–1000, default 100")),
    responses((status = 200, description = "the newest audit entries: who, when, what, why"), (status = 401, description = "no valid credentials"), (status = 403, description = "admins only")))]
async fn list(State(state): State<AppState>, params: Result<Query<AuditParams>, QueryRejection>) -> ApiResult<Json<Vec<AuditEntry>>> {
    let limit = params?.0.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::BadRequest(format!("limit: {limit}: must be between 1 and 1000")));
    }
    Ok(Json(state.store.audit_log(limit).await?))
}
