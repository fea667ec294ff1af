//! Cross-site request forgery: a state-changing request that a browser could send with our cookies
//! (any method but GET/HEAD/OPTIONS, without an Authorization header) must come from our own origin,
//! as its `Origin` header (or, failing that, its `Referer`) says. Browsers set these headers and pages
//! cannot forge them. Bearer-token clients carry no ambient credential and are not checked. Session
//! cookies are also SameSite=Lax: a second, independent guard.

use crate::api::error::ApiError;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

pub async fn check_origin(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) || req.headers().contains_key(header::AUTHORIZATION) {
        return next.run(req).await;
    }
    // No cookie, no Origin, no Referer: not a browser (which always says where a POST comes from) and no
    // ambient credential to forge with — a script that forgot its token, which the authentication
    // answers ("send a token").
    let h = req.headers();
    if !h.contains_key(header::COOKIE) && !h.contains_key(header::ORIGIN) && !h.contains_key(header::REFERER) {
        return next.run(req).await;
    }
    match same_origin(req.headers(), state.auth.public_origin.as_deref()) {
        Ok(()) => next.run(req).await,
        Err(why) => {
            tracing::warn!(method = %req.method(), path = %req.uri().path(), why, "cross-site request refused");
            ApiError::Forbidden(format!("cross-site request refused: {why}")).into_response()
        }
    }
}

/// `scheme://host[:port]` of a URL, lower-cased.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let host = rest.split(['/', '?', '#']).next()?;
    (!host.is_empty()).then(|| format!("{}://{}", scheme.to_ascii_lowercase(), host.to_ascii_lowercase()))
}

pub fn same_origin(headers: &HeaderMap, public_origin: Option<&str>) -> Result<(), &'static str> {
    let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let claimed = match text(header::ORIGIN) {
        Some("null") => return Err("the Origin header is null"),
        Some(o) => origin_of(o).ok_or("the Origin header is malformed")?,
        None => match text(header::REFERER) {
            Some(r) => origin_of(r).ok_or("the Referer header is malformed")?,
            None => return Err("neither Origin nor Referer says where the request comes from"),
        },
    };
    let ok = match public_origin {
        Some(expected) => claimed == expected,
        None => {
            let host = text(header::HOST).ok_or("the request has no Host header")?.to_ascii_lowercase();
            claimed == format!("http://{host}") || claimed == format!("https://{host}")
        }
    };
    if ok {
        Ok(())
    } else {
        Err("it comes from another origin")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(k.clone(), HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn origin_rules() {
        let host = (header::HOST, "127.0.0.1:3000");
        assert!(same_origin(&headers(&[host.clone(), (header::ORIGIN, "http://127.0.0.1:3000")]), None).is_ok());
        assert!(same_origin(&headers(&[host.clone(), (header::REFERER, "http://127.0.0.1:3000/login?next=/")]), None).is_ok());
        assert!(same_origin(&headers(&[host.clone(), (header::ORIGIN, "http://evil.example")]), None).is_err());
        assert!(same_origin(&headers(&[host.clone(), (header::ORIGIN, "http://127.0.0.1:3000.evil.example")]), None).is_err());
        assert!(same_origin(&headers(&[host.clone(), (header::ORIGIN, "null")]), None).is_err());
        assert!(same_origin(&headers(std::slice::from_ref(&host)), None).is_err());
        let public = Some("https://arbiter.example.com");
        assert!(same_origin(&headers(&[host.clone(), (header::ORIGIN, "https://arbiter.example.com")]), public).is_ok());
        assert!(same_origin(&headers(&[host, (header::ORIGIN, "http://127.0.0.1:3000")]), public).is_err());
    }
}
