//! Cross-cutting protections on every response: a request id the client sees and the log carries,
//! security headers, and a request body limit.

use axum::http::{header, HeaderName, HeaderValue, Request};
use axum::Router;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer};
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;

/// Largest request body accepted (bytes); larger ones get 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// `<process prefix>-<counter>`: unique per process, cheap, and not a secret.
#[derive(Clone)]
struct RequestIds {
    prefix: u32,
    next: Arc<AtomicU64>,
}

impl MakeRequestId for RequestIds {
    fn make_request_id<B>(&mut self, _: &Request<B>) -> Option<RequestId> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        HeaderValue::from_str(&format!("{:08x}-{n:06x}", self.prefix)).ok().map(RequestId::new)
    }
}

/// The path as it may appear in a log: a share link's secret is cut off (query strings, where `?share=`
/// and the setup token travel, are never logged).
pub fn loggable_path(path: &str) -> &str {
    if path.starts_with("/share/") {
        "/share/…"
    } else {
        path
    }
}

pub fn apply<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    let x_request_id = HeaderName::from_static("x-request-id");
    let prefix =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos() ^ std::process::id()).unwrap_or(0);
    let header = |name: HeaderName, value: &'static str| SetResponseHeaderLayer::if_not_present(name, HeaderValue::from_static(value));
    router
        .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES))
        .layer(header(header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .layer(header(header::X_FRAME_OPTIONS, "DENY"))
        .layer(header(header::CONTENT_SECURITY_POLICY, "frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'"))
        .layer(header(header::REFERRER_POLICY, "same-origin"))
        .layer(TraceLayer::new_for_http().make_span_with(|req: &Request<_>| {
            let id = req.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("-");
            tracing::info_span!("request", id, method = %req.method(), path = %loggable_path(req.uri().path()))
        }))
        .layer(PropagateRequestIdLayer::new(x_request_id.clone()))
        .layer(SetRequestIdLayer::new(x_request_id, RequestIds { prefix, next: Arc::new(AtomicU64::new(1)) }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn share_secrets_stay_out_of_logs() {
        assert_eq!(super::loggable_path("/share/arb_secret"), "/share/…");
        assert_eq!(super::loggable_path("/experiments/3"), "/experiments/3");
    }
}
