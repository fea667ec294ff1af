//! Prometheus metrics at `/metrics` (admins or the metrics token): requests and latencies by route
//! pattern (never by raw path, so the label set stays bounded), and the trial queue from the store.

use crate::api::error::ApiResult;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::time::Instant;
use store::Store;

/// The route pattern that served a response, set by the authorization layer.
#[derive(Debug, Clone, Copy)]
pub struct RouteLabel(pub &'static str);

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: String,
}

#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram>,
    trials: Family<StateLabels, Gauge>,
    queue_depth: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("arbiter");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<RouteLabels, Histogram>::new_with_constructor(|| Histogram::new(exponential_buckets(0.0005, 2.0, 16)));
        let trials = Family::<StateLabels, Gauge>::default();
        let queue_depth = Gauge::default();
        registry.register("http_requests", "HTTP requests answered, by route pattern and status", requests.clone());
        registry.register("http_request_duration_seconds", "Time to answer an HTTP request, by route pattern", latency.clone());
        registry.register("trials", "Trials in the store, by state", trials.clone());
        registry.register("queue_depth", "Trials waiting to run (state queued)", queue_depth.clone());
        Metrics { registry, requests, latency, trials, queue_depth }
    }
}

/// A request's method as a label: the standard ones by name, any other `OTHER` (a made-up method must not
/// add series forever).
fn method_label(method: &axum::http::Method) -> &'static str {
    const KNOWN: [&str; 9] = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"];
    KNOWN.into_iter().find(|m| *m == method.as_str()).unwrap_or("OTHER")
}

/// Counts and times every request.
pub async fn track(State(m): State<Arc<Metrics>>, req: Request, next: Next) -> Response {
    let method = method_label(req.method()).to_string();
    let start = Instant::now();
    let response = next.run(req).await;
    let route = response.extensions().get::<RouteLabel>().map(|r| r.0).unwrap_or("unmatched").to_string();
    m.latency.get_or_create(&RouteLabels { method: method.clone(), route: route.clone() }).observe(start.elapsed().as_secs_f64());
    m.requests.get_or_create(&RequestLabels { method, route, status: response.status().as_u16() }).inc();
    response
}

pub async fn scrape(State(store): State<Store>, State(m): State<Arc<Metrics>>) -> ApiResult<Response> {
    let counts = store.trial_state_counts().await?;
    for s in judge::TrialState::ALL {
        let n = counts.iter().find(|(name, _)| name == s.as_str()).map_or(0, |(_, n)| *n);
        m.trials.get_or_create(&StateLabels { state: s.as_str().to_string() }).set(n);
        if *s == judge::TrialState::Queued {
            m.queue_depth.set(n);
        }
    }
    let mut body = String::new();
    encode(&mut body, &m.registry).map_err(|e| crate::api::error::ApiError::Internal(e.to_string()))?;
    Ok(([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], body).into_response())
}
