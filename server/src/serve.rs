//! `arbiter serve`: open the store, build the router, listen, and stop gracefully on SIGINT/SIGTERM.

use crate::cli::ServeArgs;
use crate::config::{ConfigError, ServeConfig};
use crate::health;
use crate::sessions::AnySessionStore;
use crate::state::AppState;
use app::{shell, App};
use axum::routing::get;
use axum::Router;
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{generate_route_list, LeptosRoutes};
use std::time::Duration;
use store::{Store, StoreError};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ServeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot create the sessions table: {0}")]
    Sessions(sqlx::Error),
    #[error("cannot listen on {addr}: {reason}. Set ARBITER_ADDR (or --addr) to a free address")]
    Listen { addr: std::net::SocketAddr, reason: String },
    #[error("the server stopped: {0}")]
    Io(#[from] std::io::Error),
}

pub async fn run(args: ServeArgs) -> Result<(), ServeError> {
    let config = ServeConfig::from_args(args)?;
    let store = Store::open(&config.database_url).await?;
    let sessions = AnySessionStore::for_store(&store).await.map_err(ServeError::Sessions)?;
    let listener =
        tokio::net::TcpListener::bind(config.addr).await.map_err(|e| ServeError::Listen { addr: config.addr, reason: e.to_string() })?;
    let addr = listener.local_addr()?;
    if !config.site_root.join("pkg/arbiter.wasm").exists() {
        tracing::warn!(site_root = %config.site_root.display(), "no built site here: pages render but do not hydrate; run scripts/build-site.sh");
    }
    let expiry = sessions.spawn_expiry(Duration::from_secs(3600));
    let router = router(&config, store.clone(), sessions, addr);
    tracing::info!(%addr, store = store.backend(), data_dir = %config.data_dir.display(), "Arbiter is serving on http://{addr}");
    axum::serve(listener, router).with_graceful_shutdown(shutdown_signal()).await?;
    expiry.abort();
    store.close().await;
    tracing::info!("stopped");
    Ok(())
}

fn router(config: &ServeConfig, store: Store, sessions: AnySessionStore, addr: std::net::SocketAddr) -> Router {
    let leptos_options = LeptosOptions::builder()
        .output_name("arbiter")
        .site_root(config.site_root.to_string_lossy().as_ref())
        .site_pkg_dir("pkg")
        .site_addr(addr)
        .build();
    let state = AppState { leptos_options: leptos_options.clone(), store: store.clone() };
    let context = move || provide_context(store.clone());
    let router = Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .leptos_routes_with_context(&state, generate_route_list(App), context.clone(), {
            let options = leptos_options.clone();
            move || shell(options.clone())
        })
        .fallback(leptos_axum::file_and_error_handler_with_context::<AppState, _>(context, shell))
        .layer(sessions.layer());
    crate::hardening::apply(router).with_state(state)
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = interrupt => tracing::info!("SIGINT: finishing open requests"),
        _ = terminate => tracing::info!("SIGTERM: finishing open requests"),
    }
}
