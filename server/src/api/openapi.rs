//! `GET /api/v1/openapi.json`: the OpenAPI 3.1 document of the REST API, generated from the handlers'
//! `#[utoipa::path]` annotations. `tests/it/openapi.rs` checks it against the route table, so a route
//! cannot go undocumented (nor a documented one be missing).

use super::{audit, bisections, change_points, comment, experiments, imports, rejudge, rerun, shares, suites, tokens, users};
use axum::routing::get;
use axum::{Json, Router};
use utoipa::OpenApi;

#[derive(OpenApi)]
#[openapi(
    info(title = "Arbiter API", description = "Launch and judge A/B performance experiments. Authenticate with `Authorization: Bearer arb_…` (an API token); errors are `JsonError`: `{\"error\": \"…\"}`, with `field` and `problem` when one value of the request is at fault."),
    paths(
        experiments::list, experiments::launch, experiments::one, experiments::cancel, rerun::rerun, rejudge::rejudge, imports::import,
        comment::make, shares::create, shares::list, shares::revoke, shares::revoke_one, suites::create, suites::replace, suites::reset_profile, change_points::mark, tokens::list, tokens::create, tokens::revoke, users::list, users::create, users::update,
        bisections::start, bisections::list, bisections::one, bisections::cancel, bisections::share, bisections::revoke_shares, audit::list, document
    ),
    components(schemas(wire::error::JsonError)),
    tags((name = "experiments"), (name = "bisections"), (name = "shares"), (name = "suites"), (name = "trends"), (name = "tokens"), (name = "users"), (name = "audit"))
)]
pub struct ApiDoc;

pub fn router() -> Router<crate::state::AppState> {
    Router::new().route("/api/v1/openapi.json", get(document))
}

/// This document.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "experiments", responses((status = 200, description = "the OpenAPI document")))]
async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(document_with_common_answers())
}

/// The generated document, with the answers every operation of a kind can give whatever its handler
/// says: one that takes path or query parameters or a body answers 400 (naming the problem) when they do
/// not parse, e.g. an id beyond a 64-bit integer; every JSON answer is `{"error": "…"}` on failure.
/// (Found by scripts/api-fuzz.sh: such 400s were sent but not documented.)
pub fn document_with_common_answers() -> utoipa::openapi::OpenApi {
    use utoipa::openapi::{path::ParameterIn, ResponseBuilder};
    let mut doc = ApiDoc::openapi();
    for item in doc.paths.paths.values_mut() {
        let ops = [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch];
        for op in ops.into_iter().flatten() {
            let takes_input = op.request_body.is_some()
                || op
                    .parameters
                    .as_ref()
                    .is_some_and(|ps| ps.iter().any(|p| matches!(p.parameter_in, ParameterIn::Path | ParameterIn::Query)));
            if takes_input && !op.responses.responses.contains_key("400") {
                let bad = ResponseBuilder::new().description("not valid: a parameter or the body does not parse (the problem is named)");
                op.responses.responses.insert("400".into(), bad.build().into());
            }
        }
    }
    doc
}
