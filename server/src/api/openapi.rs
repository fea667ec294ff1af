//! `GET /api/v1/openapi.json`: the OpenAPI 3.1 document of the REST API, generated from the handlers'
//! `#[utoipa::path]` annotations. `tests/it/openapi.rs` checks it against the route table, so a route
//! cannot go undocumented (nor a documented one be missing).

use super::{audit, change_points, experiments, imports, rejudge, rerun, shares, suites, tokens, users};
use axum::routing::get;
use axum::{Json, Router};
use utoipa::OpenApi;

#[derive(OpenApi)]
#[openapi(
    info(title = "Arbiter API", description = "Launch and judge A/B performance experiments. Authenticate with `Authorization: Bearer arb_…` (an API token); errors are `{\"error\": \"…\"}`."),
    paths(
        experiments::list, experiments::launch, experiments::one, experiments::cancel, rerun::rerun, rejudge::rejudge, imports::import,
        shares::create, shares::list, shares::revoke, shares::revoke_one, suites::create, suites::replace, suites::reset_profile, change_points::mark, tokens::list, tokens::create, tokens::revoke, users::list, users::create, users::update,
        audit::list, document
    ),
    tags((name = "experiments"), (name = "shares"), (name = "suites"), (name = "trends"), (name = "tokens"), (name = "users"), (name = "audit"))
)]
pub struct ApiDoc;

pub fn router() -> Router<crate::state::AppState> {
    Router::new().route("/api/v1/openapi.json", get(document))
}

/// This document.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "experiments", responses((status = 200, description = "the OpenAPI document")))]
async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
