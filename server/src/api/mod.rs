//! The REST API under `/api/v1`: one module per resource, each with its own `router()`. Every route
//! is listed in `auth::policy::RULES`; handlers get the signed-in caller the rule let in as
//! `Extension<rights::Actor>` (a route open to share links reads `Extension<Principal>`).

pub mod audit;
pub mod bisections;
pub mod change_points;
pub mod comment;
pub mod error;
pub mod experiments;
pub mod imports;
pub mod openapi;
pub mod rejudge;
pub mod rerun;
pub mod shares;
pub mod suites;
pub mod tokens;
pub mod users;

use crate::state::AppState;
use axum::Router;

pub fn router() -> Router<AppState> {
    Router::new()
        .merge(experiments::router())
        .merge(comment::router())
        .merge(bisections::router())
        .merge(imports::router())
        .merge(openapi::router())
        .merge(shares::router())
        .merge(suites::router())
        .merge(change_points::router())
        .merge(tokens::router())
        .merge(users::router())
        .merge(audit::router())
}
