//! `POST /api/v1/change-points`: a launcher marks a trend's change point as expected (`acknowledged`)
//! or as a regression to investigate, with a reason. The mark is kept with the series (named by suite,
//! metric, item and fingerprint, and the first experiment after the change) and in the audit log.

use super::error::{ApiError, ApiResult};
use crate::auth::Actor;
use crate::state::AppState;
use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::routing::post;
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::json;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/change-points", post(mark))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChangePointMark {
    suite: String,
    /// A trend metric, e.g. `cpu-s`.
    metric: String,
    /// A stage, a warp cell, or the suite's total.
    item: String,
    /// The series' fingerprint as stored (JSON text).
    fingerprint: String,
    /// The first experiment after the change.
    experiment_id: i64,
    /// `acknowledged` (expected) or `investigate`.
    state: String,
    reason: String,
}

#[utoipa::path(post, path = "/api/v1/change-points", tag = "trends", request_body = ChangePointMark,
    responses((status = 200, description = "marked"), (status = 400, description = "not valid (named)"),
        (status = 401, description = "no valid credentials"), (status = 403, description = "needs the launcher role")))]
async fn mark(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    body: Result<Json<ChangePointMark>, JsonRejection>,
) -> ApiResult<Json<wire::answers::JsonChangePointMark>> {
    let me = actor.id;
    let Json(m) = body?;
    if !matches!(m.state.as_str(), "acknowledged" | "investigate") {
        return Err(ApiError::BadRequest(format!("state: {:?} is not acknowledged or investigate", m.state)));
    }
    judge::launch_rules::check_text("reason", &m.reason, 500)?;
    let suite = state.store.suite_by_name(&m.suite).await.map_err(|e| match e {
        store::StoreError::NotFound { .. } => ApiError::BadRequest(format!("suite: there is no suite {:?}", m.suite)),
        other => other.into(),
    })?;
    let key = store::trends::SeriesKey { suite_id: suite.id, metric: &m.metric, item: &m.item };
    let reason = m.reason.trim();
    state.store.mark_change(&key, &m.fingerprint, m.experiment_id, &m.state, reason, Some(me)).await?;
    let detail = json!({"suite": suite.name, "metric": m.metric, "item": m.item, "fingerprint": m.fingerprint});
    let action = if m.state == "acknowledged" { "changepoint.acknowledge" } else { "changepoint.investigate" };
    state.store.audit(Some(me), action, &format!("experiment:{}", m.experiment_id), Some(reason), &detail).await?;
    Ok(Json(wire::answers::JsonChangePointMark { experiment_id: m.experiment_id, state: m.state, reason: reason.to_string() }))
}
