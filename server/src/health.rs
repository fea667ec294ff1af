//! `/healthz` (the process answers) and `/readyz` (the store answers and is fully migrated).

use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

pub async fn healthz() -> Response {
    Json(json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")})).into_response()
}

pub async fn readyz(State(state): State<AppState>) -> Response {
    match state.store.readiness().await {
        Ok(r) if r.is_ready() => Json(json!({
            "status": "ready",
            "store": r.backend,
            "migrations": {"applied": r.applied_migrations, "known": r.known_migrations},
        }))
        .into_response(),
        Ok(r) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({
                "status": "not ready",
                "store": r.backend,
                "reason": format!("{} of {} migrations applied", r.applied_migrations, r.known_migrations),
            })),
        )
            .into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({"status": "not ready", "store": state.store.backend(), "reason": "the store does not answer"})),
            )
                .into_response()
        }
    }
}
