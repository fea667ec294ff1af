//! What every request handler can reach, passed explicitly.

use crate::auth::setup_link::SetupLink;
use crate::auth::throttle::LoginThrottle;
use crate::config::ServeConfig;
use crate::metrics::Metrics;
use axum::extract::FromRef;
use leptos::config::LeptosOptions;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use store::Store;

#[derive(Clone, Debug)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    /// The same store and data folder as the engine's (the handlers' own reads and files).
    pub store: Store,
    pub data_dir: PathBuf,
    /// Launching, the trial queue, judging, schedules and notifications.
    pub engine: engine::Engine,
    pub auth: Arc<AuthSettings>,
    pub throttle: Arc<LoginThrottle>,
    pub setup: Arc<SetupLink>,
    pub metrics: Arc<Metrics>,
    /// The open live event streams, capped per principal and in all.
    pub streams: Arc<crate::progress::streams::Streams>,
}

/// The access settings of a running server.
#[derive(Debug, Clone)]
pub struct AuthSettings {
    /// The only origin accepted on state-changing browser requests; `None`: the request's own Host.
    pub public_origin: Option<String>,
    /// The base of printed and share links.
    pub base_url: String,
    pub session_max: Duration,
    pub metrics_token_digest: Option<String>,
    pub trusted_proxies: Vec<crate::auth::client_addr::Cidr>,
}

impl AuthSettings {
    /// The client of a request from `peer` (behind a trusted proxy: from X-Forwarded-For).
    pub fn client_address(&self, peer: std::net::IpAddr, headers: &axum::http::HeaderMap) -> std::net::IpAddr {
        crate::auth::client_addr::client_address(peer, headers, &self.trusted_proxies)
    }

    pub fn from_config(config: &ServeConfig, bound: std::net::SocketAddr) -> AuthSettings {
        AuthSettings {
            public_origin: config.public_origin.clone(),
            base_url: config.base_url(bound),
            session_max: config.session_max,
            metrics_token_digest: config.metrics_token_digest.clone(),
            trusted_proxies: config.trusted_proxies.clone(),
        }
    }
}

impl FromRef<AppState> for Store {
    fn from_ref(state: &AppState) -> Self {
        state.store.clone()
    }
}

impl FromRef<AppState> for Arc<Metrics> {
    fn from_ref(state: &AppState) -> Self {
        state.metrics.clone()
    }
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos_options.clone()
    }
}
