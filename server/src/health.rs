//! `/healthz` (the process answers) and `/readyz` (the store answers and is fully migrated, and the
//! finelog server trials report to answers a query; Arbiter's own finelog's restarts are counted).

use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

pub async fn healthz() -> Response {
    Json(json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")})).into_response()
}

/// finelog's part of readiness: `None` when this server has none (pipeline launches are refused with the
/// reason, which is not a readiness failure); else whether it answers a query within 3 s, and what the
/// owned finelog's host counts. Only Arbiter's own finelog makes the server not ready (restarting Arbiter
/// is what an orchestrator does with a 503, and that mends the owned one, not an operator's).
async fn finelog(state: &AppState) -> Option<(bool, serde_json::Value)> {
    let queue = &state.engine.queue;
    let reader = queue.finelog_reader().ok()?;
    let answers = matches!(tokio::time::timeout(std::time::Duration::from_secs(3), reader.ping()).await, Ok(Ok(())));
    let mut shown = json!({"answers": answers});
    if queue.finelog_query.is_some() {
        let host = engine::queue::owned_finelog::read_state(&state.data_dir.join("finelog/server.json"));
        shown["owned"] = json!(true);
        shown["restarts"] = json!(host.as_ref().map_or(0, |h| h.restarts));
        shown["last_exit"] = json!(host.and_then(|h| h.last_exit));
        return Some((answers, shown));
    }
    Some((true, shown))
}

pub async fn readyz(State(state): State<AppState>) -> Response {
    let finelog = finelog(&state).await;
    if let Some((false, shown)) = &finelog {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "not ready", "store": state.store.backend(), "finelog": shown, "reason": "the finelog server does not answer"})),
        )
            .into_response();
    }
    let finelog = finelog.map(|(_, shown)| shown);
    match state.store.readiness().await {
        Ok(r) if r.is_ready() => Json(json!({
            "status": "ready",
            "store": r.backend,
            "migrations": {"applied": r.applied_migrations, "known": r.known_migrations},
            "finelog": finelog,
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
