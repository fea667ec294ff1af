//! Authentication: turns a request's credentials into a [`Principal`] on its extensions. An
//! `Authorization: Bearer` API token wins; otherwise the browser session's user; otherwise the share
//! links the visitor holds (in the session, or `?share=` on the URL). Everything is re-checked against
//! the store on each request, so a revoked token, a disabled user or a changed role takes effect at once.

use super::{token, Principal, SessionUser, Via, SESSION_SHARES, SESSION_USER};
use crate::api::error::ApiError;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tower_sessions::Session;

/// A request carrying the configured metrics token (it opens `/metrics` and nothing else).
#[derive(Debug, Clone, Copy)]
pub struct MetricsScraper;

pub async fn authenticate(State(state): State<AppState>, session: Session, mut req: Request, next: Next) -> Response {
    match principal_for(&state, &session, req.headers(), req.uri().query()).await {
        Ok((p, scraper)) => {
            if scraper {
                req.extensions_mut().insert(MetricsScraper);
            }
            req.extensions_mut().insert(p);
            next.run(req).await
        }
        Err(e) => e.into_response(),
    }
}

/// Who a request's credentials stand for, checked against the store now (and whether it is the metrics
/// scraper). The middleware asks once per request; a long-lived stream asks again every few seconds.
pub async fn principal_for(
    state: &AppState,
    session: &Session,
    headers: &axum::http::HeaderMap,
    query: Option<&str>,
) -> Result<(Principal, bool), ApiError> {
    match bearer_token(headers)? {
        Some(secret) => {
            let digest = token::digest(&secret);
            if state.auth.metrics_token_digest.as_deref() == Some(digest.as_str()) {
                Ok((Principal::Anonymous, true))
            } else {
                Ok((api_token_principal(state, &digest).await?, false))
            }
        }
        None => Ok((session_principal(state, session, query).await?, false)),
    }
}

/// `Some(secret)` for `Authorization: Bearer <secret>`; any other Authorization header is refused.
fn bearer_token(headers: &axum::http::HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else { return Ok(None) };
    let text = value.to_str().unwrap_or("");
    match text.split_once(' ') {
        Some((scheme, secret)) if scheme.eq_ignore_ascii_case("bearer") && !secret.trim().is_empty() => Ok(Some(secret.trim().to_string())),
        _ => Err(ApiError::Unauthorized("the Authorization header must be `Bearer <API token>`".into())),
    }
}

async fn api_token_principal(state: &AppState, digest: &str) -> Result<Principal, ApiError> {
    let now = store::now_ms();
    let Some(t) = state.store.touch_api_token(digest).await? else {
        return Err(ApiError::Unauthorized("this API token is not known".into()));
    };
    if t.revoked_at.is_some() {
        return Err(ApiError::Unauthorized(format!("API token {:?} was revoked", t.name)));
    }
    if !t.is_usable(now) {
        return Err(ApiError::Unauthorized(format!("API token {:?} has expired", t.name)));
    }
    // A token made with another token works only while every token up its chain does.
    let mut parent = t.parent_id;
    for _ in 0..64 {
        let Some(id) = parent else { break };
        match state.store.api_token(id).await? {
            Some(p) if p.is_usable(now) => parent = p.parent_id,
            Some(p) => {
                return Err(ApiError::Unauthorized(format!(
                    "API token {:?} was made with API token {:?}, which was revoked or has expired",
                    t.name, p.name
                )))
            }
            None => return Err(ApiError::Unauthorized(format!("API token {:?} was made with a token that is gone", t.name))),
        }
    }
    let user = state.store.user_by_id(t.user_id).await?.filter(|u| u.disabled_at.is_none());
    let Some(user) = user else {
        return Err(ApiError::Unauthorized(format!("the user of API token {:?} is disabled", t.name)));
    };
    // A token never has more rights than its user has now.
    Ok(Principal::User { id: user.id, name: user.username, role: t.role.min(user.role), via: Via::ApiToken(t.id) })
}

async fn session_principal(state: &AppState, session: &Session, query: Option<&str>) -> Result<Principal, ApiError> {
    let session_error = |e: tower_sessions::session::Error| ApiError::Internal(format!("session store: {e}"));
    if let Some(signed_in) = session.get::<SessionUser>(SESSION_USER).await.map_err(session_error)? {
        let max_ms = i64::try_from(state.auth.session_max.as_millis()).unwrap_or(i64::MAX);
        let user = state.store.user_by_id(signed_in.user_id).await?;
        match user {
            Some(u) if u.disabled_at.is_none() && store::now_ms() - signed_in.login_at < max_ms => {
                return Ok(Principal::User { id: u.id, name: u.username, role: u.role, via: Via::Session });
            }
            // Expired, disabled or deleted: the session ends here.
            _ => session.flush().await.map_err(session_error)?,
        }
    }
    let mut digests: Vec<String> = session.get(SESSION_SHARES).await.map_err(session_error)?.unwrap_or_default();
    if let Some(shared) = query.and_then(share_param) {
        digests.push(token::digest(&shared));
    }
    let (mut experiments, mut files, mut bisections) = (Vec::new(), Vec::new(), Vec::new());
    for d in digests.iter().take(MAX_SHARES) {
        if let Some((id, with_files)) = state.store.share_token_experiment(d).await? {
            experiments.push(id);
            if with_files {
                files.push(id);
            }
        } else if let Some((id, steps)) = state.store.bisection_share(d).await? {
            bisections.push(id);
            experiments.extend(steps);
        }
    }
    Ok(if experiments.is_empty() && bisections.is_empty() {
        Principal::Anonymous
    } else {
        Principal::Share { experiments, files, bisections }
    })
}

/// How many share links one browser session remembers.
pub const MAX_SHARES: usize = 20;

/// The `share` parameter of a query string.
pub fn share_param(query: &str) -> Option<String> {
    query.split('&').filter_map(|kv| kv.split_once('=')).find(|(k, _)| *k == "share").map(|(_, v)| v.to_string()).filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::share_param;

    #[test]
    fn share_parameter() {
        assert_eq!(share_param("a=1&share=arb_x").as_deref(), Some("arb_x"));
        assert_eq!(share_param("share="), None);
        assert_eq!(share_param("shared=arb_x"), None);
    }
}
