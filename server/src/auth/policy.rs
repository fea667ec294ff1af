//! Authorization: every route Arbiter serves has one line in [`RULES`] saying who may call it. The
//! [`authorize`] layer runs on every matched route and refuses a route missing from the table, so a new
//! route is closed until someone decides who it is for; the authorization matrix test then demands an
//! expected answer for each line and each kind of caller. A request it lets through carries the
//! signed-in user as a `rights::Actor`: handlers take that and do not check roles again (what the acting
//! user may do to one experiment is `Actor::may`, in the `rights` crate).

use super::principal::MetricsScraper;
use super::Principal;
use crate::api::error::ApiError;
use axum::extract::{FromRequestParts, MatchedPath, RawPathParams, Request};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use store::people::Role;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone, signed in or not.
    Public,
    /// At least this role.
    Role(Role),
    /// A signed-in user, or a share link for the experiment in the path's `{id}`.
    Experiment,
    /// A signed-in user, or a share link for the bisection in the path's `{id}`.
    Bisection,
    /// A signed-in user or any share-link holder; the handler checks which experiment or bisection (in
    /// the body).
    SharedRead,
    /// An admin, or the metrics token.
    Metrics,
}

pub struct Rule {
    pub method: Method,
    pub path: &'static str,
    pub access: Access,
}

const fn rule(method: Method, path: &'static str, access: Access) -> Rule {
    Rule { method, path, access }
}

const VIEWER: Access = Access::Role(Role::Viewer);
const LAUNCHER: Access = Access::Role(Role::Launcher);
const ADMIN: Access = Access::Role(Role::Admin);

/// Every route: method, path as the router spells it, who may call it.
pub const RULES: &[Rule] = &[
    // Probes.
    rule(Method::GET, "/healthz", Access::Public),
    rule(Method::GET, "/readyz", Access::Public),
    rule(Method::GET, "/metrics", Access::Metrics),
    // Signing in and out; first-run setup (the one-time link is checked by the handler).
    rule(Method::GET, "/login", Access::Public),
    rule(Method::POST, "/login", Access::Public),
    rule(Method::POST, "/logout", Access::Public),
    rule(Method::GET, "/setup", Access::Public),
    rule(Method::POST, "/setup", Access::Public),
    rule(Method::GET, "/share/{token}", Access::Public),
    // Pages.
    rule(Method::GET, "/", VIEWER),
    rule(Method::GET, "/experiments", VIEWER),
    rule(Method::GET, "/experiments/{id}", Access::Experiment),
    rule(Method::GET, "/experiments/{id}/files/{*path}", Access::Experiment),
    rule(Method::GET, "/experiments/{id}/charts/{name}", Access::Experiment),
    rule(Method::GET, "/experiments/{id}/export/{name}", Access::Experiment),
    rule(Method::GET, "/experiments/{id}/events", Access::Experiment),
    rule(Method::GET, "/launch", LAUNCHER),
    rule(Method::GET, "/import", LAUNCHER),
    rule(Method::GET, "/trends", VIEWER),
    rule(Method::GET, "/bisections", VIEWER),
    rule(Method::GET, "/bisections/{id}", Access::Bisection),
    rule(Method::GET, "/suites", LAUNCHER),
    rule(Method::GET, "/suites/{name}", LAUNCHER),
    rule(Method::GET, "/account", VIEWER),
    rule(Method::GET, "/admin", ADMIN),
    // Server functions.
    rule(Method::POST, "/fn/whoami", Access::Public),
    rule(Method::POST, "/fn/history", VIEWER),
    rule(Method::POST, "/fn/trends", VIEWER),
    rule(Method::POST, "/fn/bisection", Access::SharedRead),
    rule(Method::POST, "/fn/bisections", VIEWER),
    rule(Method::POST, "/fn/experiment", Access::SharedRead),
    rule(Method::POST, "/fn/launch_suites", LAUNCHER),
    rule(Method::POST, "/fn/suites", LAUNCHER),
    rule(Method::POST, "/fn/suite", LAUNCHER),
    rule(Method::POST, "/fn/account", VIEWER),
    rule(Method::POST, "/fn/admin", ADMIN),
    // REST API.
    rule(Method::GET, "/api/v1/openapi.json", Access::Public),
    rule(Method::GET, "/api/v1/experiments", VIEWER),
    rule(Method::POST, "/api/v1/experiments", LAUNCHER),
    rule(Method::GET, "/api/v1/experiments/{id}", Access::Experiment),
    rule(Method::POST, "/api/v1/experiments/{id}/cancel", LAUNCHER),
    rule(Method::POST, "/api/v1/experiments/{id}/rerun", LAUNCHER),
    rule(Method::POST, "/api/v1/experiments/{id}/rejudge", LAUNCHER),
    rule(Method::POST, "/api/v1/experiments/{id}/comment", VIEWER),
    rule(Method::POST, "/api/v1/experiments/{id}/shares", LAUNCHER),
    rule(Method::GET, "/api/v1/experiments/{id}/shares", LAUNCHER),
    rule(Method::DELETE, "/api/v1/experiments/{id}/shares", LAUNCHER),
    rule(Method::DELETE, "/api/v1/experiments/{id}/shares/{share}", LAUNCHER),
    rule(Method::GET, "/api/v1/bisections", VIEWER),
    rule(Method::POST, "/api/v1/bisections", LAUNCHER),
    rule(Method::GET, "/api/v1/bisections/{id}", Access::Bisection),
    rule(Method::POST, "/api/v1/bisections/{id}/cancel", LAUNCHER),
    rule(Method::POST, "/api/v1/bisections/{id}/shares", LAUNCHER),
    rule(Method::DELETE, "/api/v1/bisections/{id}/shares", LAUNCHER),
    rule(Method::POST, "/api/v1/imports", LAUNCHER),
    rule(Method::POST, "/api/v1/suites", ADMIN),
    rule(Method::PUT, "/api/v1/suites/{name}", ADMIN),
    rule(Method::DELETE, "/api/v1/suites/{name}/noise-profiles/{id}", ADMIN),
    rule(Method::POST, "/api/v1/change-points", LAUNCHER),
    rule(Method::GET, "/api/v1/tokens", LAUNCHER),
    rule(Method::POST, "/api/v1/tokens", LAUNCHER),
    rule(Method::DELETE, "/api/v1/tokens/{id}", LAUNCHER),
    rule(Method::GET, "/api/v1/users", ADMIN),
    rule(Method::POST, "/api/v1/users", ADMIN),
    rule(Method::PATCH, "/api/v1/users/{id}", ADMIN),
    rule(Method::GET, "/api/v1/audit", ADMIN),
];

/// The access rule of a route, by method and path pattern.
pub fn access_for(method: &Method, path: &str) -> Option<Access> {
    // HEAD is answered by the GET route.
    let method = if method == Method::HEAD { &Method::GET } else { method };
    RULES.iter().find(|r| r.method == *method && r.path == path).map(|r| r.access)
}

/// Pages redirect an anonymous visitor to sign-in; API, server-function and probe routes answer 401.
fn is_page(path: &str) -> bool {
    !(path.starts_with("/api/") || path.starts_with("/fn/") || path == "/metrics")
}

pub async fn authorize(matched: Option<MatchedPath>, req: Request, next: Next) -> Response {
    let Some(pattern) = matched.as_ref().map(MatchedPath::as_str) else {
        return next.run(req).await;
    };
    let (mut parts, body) = req.into_parts();
    let params = RawPathParams::from_request_parts(&mut parts, &()).await.ok();
    let req = Request::from_parts(parts, body);
    let Some(access) = access_for(req.method(), pattern) else {
        // A method the route does not serve: 405 with what it does (a made-up method is no server error).
        let allowed: Vec<&str> = RULES.iter().filter(|r| r.path == pattern).map(|r| r.method.as_str()).collect();
        if !allowed.is_empty() {
            let mut response = (
                axum::http::StatusCode::METHOD_NOT_ALLOWED,
                axum::Json(
                    serde_json::json!({"error": format!("{} is not served here; this route takes {}", req.method(), allowed.join(", "))}),
                ),
            )
                .into_response();
            if let Ok(v) = axum::http::HeaderValue::from_str(&allowed.join(", ")) {
                response.headers_mut().insert(axum::http::header::ALLOW, v);
            }
            return response;
        }
        tracing::error!(method = %req.method(), route = pattern, "route has no access rule in auth::policy::RULES; refused");
        return ApiError::Forbidden("this route is not open to anyone yet".into()).into_response();
    };
    let principal = req.extensions().get::<Principal>().cloned().unwrap_or(Principal::Anonymous);
    let allowed = match access {
        Access::Public => true,
        Access::Role(role) => principal.has(role),
        Access::Experiment | Access::Bisection => {
            let id = params.as_ref().and_then(|p| p.iter().find(|(k, _)| *k == "id").and_then(|(_, v)| v.parse::<i64>().ok()));
            id.is_some_and(|id| match access {
                Access::Bisection => principal.can_read_bisection(id),
                _ => principal.can_read_experiment(id),
            })
        }
        Access::SharedRead => !matches!(principal, Principal::Anonymous),
        Access::Metrics => principal.has(Role::Admin) || req.extensions().get::<MetricsScraper>().is_some(),
    };
    let mut response = match allowed {
        // The handler gets the signed-in user this rule let in as an already-checked `Actor` (a route
        // whose rule is a role reaches its handler only with one of at least that role).
        true => {
            let mut req = req;
            if let Some(actor) = principal.actor() {
                req.extensions_mut().insert(actor);
            }
            next.run(req).await
        }
        false => refuse(&principal, access, &req),
    };
    if let Some(route) = RULES.iter().find(|r| r.path == pattern).map(|r| r.path) {
        response.extensions_mut().insert(crate::metrics::RouteLabel(route));
    }
    response
}

/// Requests no route matched: the built site's files are public; anything else is a 404 page for a
/// signed-in user and the sign-in page for everyone else (so an anonymous visitor learns nothing).
pub async fn fallback(req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let is_asset = path.starts_with("/pkg/") || path == "/favicon.svg" || path == "/favicon.ico";
    let signed_in = req.extensions().get::<Principal>().is_some_and(|p| p.role().is_some());
    if is_asset || signed_in {
        return next.run(req).await;
    }
    let principal = req.extensions().get::<Principal>().cloned().unwrap_or(Principal::Anonymous);
    refuse(&principal, VIEWER, &req)
}

fn refuse(principal: &Principal, access: Access, req: &Request) -> Response {
    let path = req.uri().path();
    match (principal.role(), access) {
        (Some(have), Access::Role(need)) => {
            let message = format!("this needs the {} role; you act as {}", need.as_str(), have.as_str());
            if is_page(path) {
                (StatusCode::FORBIDDEN, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], message).into_response()
            } else {
                ApiError::Forbidden(message).into_response()
            }
        }
        (Some(_), Access::Metrics) => ApiError::Forbidden("only an admin or the metrics token may read this".into()).into_response(),
        // A signed-in user reads every experiment: only an id that is not one fails.
        (Some(_), _) => ApiError::NotFound(format!("there is nothing at {path}")).into_response(),
        (None, _) if is_page(path) && req.method() == Method::GET => {
            let next = req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/");
            Redirect::to(&format!("/login?next={}", encode(next))).into_response()
        }
        (None, _) => ApiError::Unauthorized("sign in or send `Authorization: Bearer <API token>`".into()).into_response(),
    }
}

/// Percent-encodes a value for a query string.
pub fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b"-_.~/".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_is_unique() {
        for (i, a) in RULES.iter().enumerate() {
            for b in &RULES[i + 1..] {
                assert!(!(a.method == b.method && a.path == b.path), "{} {} is in RULES twice", a.method, a.path);
            }
        }
    }

    #[test]
    fn lookup() {
        assert_eq!(access_for(&Method::HEAD, "/healthz"), Some(Access::Public));
        assert_eq!(access_for(&Method::DELETE, "/api/v1/tokens/{id}"), Some(LAUNCHER));
        assert_eq!(access_for(&Method::PUT, "/api/v1/tokens/{id}"), None);
        assert_eq!(encode("/experiments?kind=warp&x=a b"), "/experiments%3Fkind%3Dwarp%26x%3Da%20b");
    }
}
