//! `arbiter serve`: open the store, refuse an unsafe start, build the router, listen, and stop
//! gracefully on SIGINT/SIGTERM.

use crate::auth::{csrf, login, policy, principal, setup, setup_link, throttle, Principal};
use crate::cli::ServeArgs;
use crate::config::{ConfigError, ServeConfig};
use crate::sessions::AnySessionStore;
use crate::state::{AppState, AuthSettings};
use crate::{api, downloads, exports, health, metrics, retention};
use app::{shell, App};
use axum::handler::Handler;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::routing::{get, post};
use axum::Router;
use engine::queue::owned_finelog::OwnedFinelog;
use engine::{Engine, TrialQueue};
use leptos::config::LeptosOptions;
use leptos::prelude::{provide_context, use_context};
use leptos_axum::{generate_route_list, LeptosRoutes, ResponseOptions};
use std::net::SocketAddr;
use std::sync::Arc;
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
    Listen { addr: SocketAddr, reason: String },
    #[error(
        "refusing to serve on {0}: there is no admin account yet, and anyone who reaches this address could claim it. \
         Create one first (`arbiter user add NAME --role admin`), or listen on 127.0.0.1 and use the one-time setup link"
    )]
    NoAdmin(SocketAddr),
    #[error("{0}. Fix the file, or point ARBITER_SUITES_DIR (or --suites-dir) elsewhere")]
    Suites(String),
    #[error("the server stopped: {0}")]
    Io(#[from] std::io::Error),
}

pub async fn run(args: ServeArgs) -> Result<(), ServeError> {
    let config = ServeConfig::from_args(args)?;
    private_data_dir(&config.data_dir);
    let suites = suite::load_dir(&config.suites_dir).map_err(ServeError::Suites)?;
    let store = Store::open(&config.database_url).await?;
    engine::sync_suites(&store, &suites).await.map_err(ServeError::Suites)?;
    if !suites.is_empty() {
        tracing::info!(count = suites.len(), dir = %config.suites_dir.display(), "suites loaded");
    }
    if !config.addr.ip().is_loopback() && store.count_admins().await? == 0 {
        return Err(ServeError::NoAdmin(config.addr));
    }
    let sessions = AnySessionStore::for_store(&store).await.map_err(ServeError::Sessions)?;
    let listener =
        tokio::net::TcpListener::bind(config.addr).await.map_err(|e| ServeError::Listen { addr: config.addr, reason: e.to_string() })?;
    let addr = listener.local_addr()?;
    if !config.site_root.join("pkg/arbiter.wasm").exists() {
        tracing::warn!(site_root = %config.site_root.display(), "no built site here: pages render but do not hydrate; run scripts/build-site.sh");
    }
    let (queue, finelog) = trial_queue(&config).await;
    let state = app_state(&config, store.clone(), addr, queue);
    if store.count_users().await? == 0 {
        let secret = state.setup.issue();
        // On the console only (not through the log): it is a one-time credential.
        println!(
            "\nArbiter has no users yet. Open this one-time link to create the first admin:\n\n    {}/setup?token={secret}\n",
            state.auth.base_url
        );
    }
    let background = [
        engine::queue::spawn(state.engine.clone()),
        // Cron ticks are whole minutes; a pass every 20 s starts each within a third of a minute.
        engine::schedules::spawn(state.engine.clone(), Duration::from_secs(20)),
        sessions.spawn_expiry(Duration::from_secs(3600)),
        retention::spawn(config.data_dir.clone(), store.clone(), config.retention, Duration::from_secs(3600)),
        // Bisections left running: a step may have ended while the server was down.
        {
            let engine = state.engine.clone();
            tokio::spawn(async move { engine::bisect::resume_all(&engine).await })
        },
    ];
    // The owned finelog's host restarts finelog itself; if the host dies, it is started again here.
    let finelog = finelog.map(|f| Arc::new(tokio::sync::Mutex::new(f)));
    let watchdog = finelog.clone().map(|owned| {
        let (arbiter, python, dir) = (config.arbiter_exe.clone(), config.python.clone(), config.data_dir.join("finelog"));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(10)).await;
                let mut current = owned.lock().await;
                if current.state().is_some() {
                    continue;
                }
                let Some(python) = &python else { continue };
                tracing::warn!(pid = current.pid, "the finelog host is gone; starting it again");
                match OwnedFinelog::start_or_adopt(&arbiter, python, &dir).await {
                    Ok(again) => *current = again,
                    Err(e) => tracing::error!(error = %e, "cannot start the finelog host again"),
                }
            }
        })
    });
    let worker = state.engine.queue.worker.clone();
    let router = router(state, sessions, &config);
    tracing::info!(%addr, store = store.backend(), data_dir = %config.data_dir.display(), "Arbiter is serving on http://{addr}");
    crate::http_serve::serve(listener, router, shutdown_signal()).await;
    background.iter().for_each(|t| t.abort());
    if let Some(w) = watchdog {
        w.abort();
    }
    if let Some(finelog) = finelog {
        match store.running_trials(&worker).await {
            // It waits (up to 10 s) for the process to end: off the async threads.
            Ok(running) if running.is_empty() => {
                let finelog = finelog.lock_owned().await;
                let _ = tokio::task::spawn_blocking(move || finelog.stop()).await;
            }
            _ => {
                tracing::info!(
                    pid = finelog.lock().await.pid,
                    "left the finelog server running for the trials still running; the next start adopts it"
                )
            }
        }
    }
    store.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// The data dir is this user's alone (0700) and the database's files 0600, also when an older version
/// left them readable: any local user could otherwise read sessions, tokens' hashes and every log.
pub fn private_data_dir(data_dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let set = |path: &std::path::Path, mode: u32| {
        if path.exists() {
            if let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)) {
                tracing::warn!(path = %path.display(), error = %e, "cannot restrict the permissions");
            }
        }
    };
    set(data_dir, 0o700);
    for name in ["arbiter.db", "arbiter.db-wal", "arbiter.db-shm", "arbiter.db-journal"] {
        set(&data_dir.join(name), 0o600);
    }
}

/// The trial queue's runtime, with the finelog server trials report to: the configured URL, else one this
/// server starts (or adopts) with its Python; without either, pipeline launches are refused with why.
pub async fn trial_queue(config: &ServeConfig) -> (TrialQueue, Option<OwnedFinelog>) {
    let (mut queue, owned) = finelog_queue(config).await;
    queue.cluster_cap = config.cluster_cap;
    queue.supervisor = config.arbiter_exe.clone();
    use engine::queue::sandbox::TrialSandbox;
    // As root, trials run as the unprivileged arbiter-trial, never as root mapped into a namespace.
    if let (TrialSandbox::Bwrap(bwrap), true) = (&queue.sandbox, engine::queue::host_user::is_root()) {
        let user = engine::queue::host_user::ensure(engine::queue::host_user::TRIAL_USER);
        let checked = user.and_then(|u| {
            engine::queue::sandbox::probe_trial_user(bwrap, &config.arbiter_exe, queue.python.as_deref(), &config.data_dir, &u).map(|()| u)
        });
        match checked {
            Ok(u) => {
                tracing::info!(user = %u.name, uid = u.uid, "local pipeline trials run as this unprivileged user");
                queue.trial_user = Some(u);
            }
            Err(why) => queue.sandbox = TrialSandbox::Missing(why),
        }
    }
    match engine::queue::cgroup::probe() {
        Ok(how) => tracing::info!("{how}"),
        Err(why) => tracing::warn!("{why}"),
    }
    match &queue.sandbox {
        TrialSandbox::Bwrap(bwrap) => tracing::info!(bwrap = %bwrap.display(), "local pipeline trials run sandboxed"),
        TrialSandbox::Missing(why) if config.unsandboxed_trials => {
            tracing::warn!(reason = %why, "no trial sandbox here; --unsandboxed-trials: local pipeline trials run as this server's user and can reach its data");
            queue.sandbox = TrialSandbox::Unsandboxed;
        }
        TrialSandbox::Missing(why) => {
            tracing::warn!(reason = %why, "no trial sandbox here: local pipeline launches are refused (an admin may set --unsandboxed-trials)")
        }
        TrialSandbox::Unsandboxed => {}
    }
    (queue, owned)
}

async fn finelog_queue(config: &ServeConfig) -> (TrialQueue, Option<OwnedFinelog>) {
    if let Some(url) = &config.finelog_url {
        return (TrialQueue::new(Ok(url.clone()), config.python.clone()), None);
    }
    let Some(python) = &config.python else {
        tracing::warn!("no finelog server and no Python to start one: pipeline launches are refused (see ARBITER_FINELOG_URL)");
        let why = "no ARBITER_FINELOG_URL is set, and no Python to run one (ARBITER_PYTHON, or .venv/bin/python)";
        return (TrialQueue::new(Err(why.into()), None), None);
    };
    match OwnedFinelog::start_or_adopt(&config.arbiter_exe, python, &config.data_dir.join("finelog")).await {
        Ok(owned) => {
            let mut queue = TrialQueue::new(Ok(owned.url.clone()), Some(python.clone()));
            queue.finelog_query = Some(owned.query_socket.clone());
            (queue, Some(owned))
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot start a finelog server: pipeline launches are refused until one runs");
            (TrialQueue::new(Err(format!("the finelog server Arbiter starts did not start: {e}")), Some(python.clone())), None)
        }
    }
}

pub fn app_state(config: &ServeConfig, store: Store, addr: SocketAddr, queue: TrialQueue) -> AppState {
    let leptos_options = LeptosOptions::builder()
        .output_name("arbiter")
        .site_root(config.site_root.to_string_lossy().as_ref())
        .site_pkg_dir("pkg")
        .site_addr(addr)
        .build();
    let auth = AuthSettings::from_config(config, addr);
    let engine =
        Engine { store: store.clone(), data_dir: config.data_dir.clone(), base_url: auth.base_url.clone(), queue: Arc::new(queue) };
    AppState {
        leptos_options,
        store,
        data_dir: config.data_dir.clone(),
        engine,
        auth: Arc::new(auth),
        throttle: Arc::new(throttle::LoginThrottle::new(throttle::Limits::default())),
        setup: Arc::new(setup_link::SetupLink::default()),
        metrics: Arc::new(metrics::Metrics::default()),
        streams: Arc::default(),
    }
}

/// The policy for pages: scripts only from this site or with this response's nonce (Leptos puts it
/// on its hydration and resource scripts), WebAssembly allowed, nothing framed, forms to this site.
fn page_csp(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'"
    )
}

/// What every page render and server function finds in context: the store, the caller, and the CSP.
fn leptos_context(store: Store, server: app::context::ServerContext) -> impl Fn() + Clone + Send + Sync + 'static {
    move || {
        provide_context(store.clone());
        provide_context(server.clone());
        if let Some(parts) = use_context::<axum::http::request::Parts>() {
            provide_context(parts.extensions.get::<Principal>().cloned().unwrap_or(Principal::Anonymous));
        }
        if let (Some(nonce), Some(response)) = (leptos::nonce::use_nonce(), use_context::<ResponseOptions>()) {
            if let Ok(value) = axum::http::HeaderValue::from_str(&page_csp(&nonce.to_string())) {
                response.insert_header(axum::http::header::CONTENT_SECURITY_POLICY, value);
            }
        }
    }
}

pub fn router(state: AppState, sessions: AnySessionStore, config: &ServeConfig) -> Router {
    let server = app::context::ServerContext {
        data_dir: state.data_dir.clone(),
        base_url: state.auth.base_url.clone(),
        suite_toml: suite::to_toml,
        setup_link_live: {
            let link = state.setup.clone();
            std::sync::Arc::new(move |secret: &str| link.is_live(secret))
        },
        branches: {
            let data_dir = state.data_dir.clone();
            std::sync::Arc::new(move |repository: String| -> app::context::BranchesFuture {
                let data_dir = data_dir.clone();
                Box::pin(async move {
                    match engine::launch::git::Repo::as_it_is(&repository, &data_dir) {
                        Some(repo) => repo.branches(app::context::BRANCHES_SHOWN).await,
                        None => Vec::new(),
                    }
                })
            })
        },
    };
    let context = leptos_context(state.store.clone(), server);
    let options = state.leptos_options.clone();
    let secure = config.public_origin.as_deref().is_some_and(|o| o.starts_with("https://"));
    let fallback = leptos_axum::file_and_error_handler_with_context::<AppState, _>(context.clone(), shell).layer(from_fn(policy::fallback));
    let router = Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(metrics::scrape))
        .route("/login", post(login::login))
        .route("/logout", post(login::logout))
        .route("/setup", post(setup::setup))
        .route("/experiments/{id}/files/{*path}", get(downloads::download))
        .route("/experiments/{id}/charts/{name}", get(exports::chart))
        .route("/experiments/{id}/export/{name}", get(exports::export))
        .route("/experiments/{id}/events", get(crate::progress::events))
        .merge(api::router())
        .leptos_routes_with_context(&state, generate_route_list(App), context, move || shell(options.clone()))
        .route_layer(from_fn(policy::authorize))
        .fallback(fallback)
        .layer(from_fn_with_state(state.clone(), csrf::check_origin))
        .layer(from_fn_with_state(state.clone(), principal::authenticate))
        .layer(sessions.layer(config.session_idle, secure))
        .layer(from_fn(crate::sessions::secure_behind_tls_proxy))
        .layer(from_fn_with_state(state.metrics.clone(), metrics::track));
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
