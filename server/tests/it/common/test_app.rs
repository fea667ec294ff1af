//! `TestApp`: the real router with its real middleware on a real SQLite store in a temp dir, served
//! in-process on a loopback port; clients signed in as any role, API tokens, share links.
//!
//! ```ignore
//! let app = TestApp::builder().start().await;
//! let viewer = app.signed_in(Role::Viewer).await;
//! assert_eq!(viewer.get("/api/v1/experiments").await.status, 200);
//! ```

use reqwest::redirect::Policy;
use serde_json::Value;
use server::auth::throttle::Limits;
use server::cli::{RetentionArgs, ServeArgs, StoreArgs};
use server::config::ServeConfig;
use server::sessions::AnySessionStore;
use server::state::AppState;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use store::people::Role;
use store::Store;

pub const PASSWORD: &str = "a long test passphrase";

pub struct TestAppBuilder {
    limits: Limits,
    trusted_proxies: Vec<server::auth::client_addr::Cidr>,
    public_url: Option<String>,
    session_max: Option<std::time::Duration>,
    metrics_token: Option<String>,
    finelog_url: Option<String>,
    python: Option<std::path::PathBuf>,
    dispatcher: bool,
    database_url: Option<String>,
    cluster_cap: i64,
}

pub struct TestApp {
    pub base: String,
    pub state: AppState,
    pub store: Store,
    pub dir: tempfile::TempDir,
    server: tokio::task::JoinHandle<()>,
    dispatcher: Option<tokio::task::JoinHandle<()>>,
    finelog: Option<engine::queue::owned_finelog::OwnedFinelog>,
    next_user: AtomicU32,
}

#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }
    pub fn location(&self) -> Option<&str> {
        self.headers.get("location").and_then(|v| v.to_str().ok())
    }
}

/// An HTTP client as one caller: its own cookie jar, optionally a bearer token, and (like a browser
/// on our pages) our Origin on every request unless `origin` says otherwise.
pub struct Client {
    pub http: reqwest::Client,
    pub jar: Arc<reqwest::cookie::Jar>,
    pub base: String,
    pub bearer: Option<String>,
    pub origin: Option<String>,
    /// Sent as X-Forwarded-For (a client behind a proxy; believed only from a trusted proxy).
    pub forwarded_for: Option<String>,
}

impl Client {
    fn new(base: &str) -> Client {
        let jar = Arc::new(reqwest::cookie::Jar::default());
        // A server that stops answering fails the test with the request named, not a hang.
        let http = reqwest::Client::builder()
            .redirect(Policy::none())
            .cookie_provider(jar.clone())
            .read_timeout(std::time::Duration::from_secs(120))
            .build()
            .unwrap();
        Client { http, jar, base: base.to_string(), bearer: None, origin: Some(base.to_string()), forwarded_for: None }
    }

    /// The session cookie's value, if the server set one.
    pub fn session_cookie(&self) -> Option<String> {
        use reqwest::cookie::CookieStore;
        let url = self.base.parse().unwrap();
        let header = self.jar.cookies(&url)?;
        header.to_str().ok()?.split("; ").find_map(|c| c.strip_prefix("arbiter_session=")).map(str::to_string)
    }

    pub async fn send(&self, method: reqwest::Method, path: &str, body: Option<Body>) -> Reply {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(origin) = &self.origin {
            req = req.header("origin", origin);
        }
        if let Some(token) = &self.bearer {
            req = req.bearer_auth(token);
        }
        if let Some(ip) = &self.forwarded_for {
            req = req.header("x-forwarded-for", ip);
        }
        req = match body {
            Some(Body::Json(v)) => req.json(&v),
            Some(Body::Form(pairs)) => req.form(&pairs),
            Some(Body::Raw(content_type, bytes)) => req.header("content-type", content_type).body(bytes),
            None => req,
        };
        let r = req.send().await.unwrap_or_else(|e| panic!("{path}: {e}"));
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        Reply { status, headers, text: r.text().await.unwrap_or_default() }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(reqwest::Method::GET, path, None).await
    }
    /// `POST /api/v1/experiments`, which must answer 201; the new experiment's id.
    pub async fn launch(&self, body: Value) -> i64 {
        let r = self.post_json("/api/v1/experiments", body).await;
        assert_eq!(r.status, 201, "{}", r.text);
        r.json()["id"].as_i64().unwrap()
    }

    /// Polls `GET /api/v1/experiments/{id}` until it is judged, errored or cancelled (panics after `secs`).
    pub async fn wait_until_ended(&self, id: i64, secs: u64) -> Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        loop {
            let e = self.get(&format!("/api/v1/experiments/{id}")).await.json();
            if ["judged", "errored", "cancelled"].contains(&e["status"].as_str().unwrap_or("")) {
                return e;
            }
            assert!(std::time::Instant::now() < deadline, "experiment {id} did not end: {e}");
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        }
    }

    pub async fn post_json(&self, path: &str, body: Value) -> Reply {
        self.send(reqwest::Method::POST, path, Some(Body::Json(body))).await
    }
    pub async fn post_form(&self, path: &str, pairs: &[(&str, &str)]) -> Reply {
        let pairs = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        self.send(reqwest::Method::POST, path, Some(Body::Form(pairs))).await
    }
}

pub enum Body {
    Json(Value),
    Form(Vec<(String, String)>),
    Raw(&'static str, Vec<u8>),
}

impl TestApp {
    pub fn builder() -> TestAppBuilder {
        TestAppBuilder {
            limits: Limits {
                per_account_and_address: 1000,
                per_address: 1000,
                account_delay_after: 1000,
                window: std::time::Duration::from_secs(60),
                ..Limits::default()
            },
            trusted_proxies: vec![],
            public_url: None,
            session_max: None,
            metrics_token: None,
            finelog_url: None,
            python: None,
            dispatcher: false,
            database_url: None,
            cluster_cap: engine::queue::DEFAULT_CLUSTER_CAP,
        }
    }

    /// A client with no credentials.
    pub fn anonymous(&self) -> Client {
        Client::new(&self.base)
    }

    /// A new user of this role (name `<role>-<n>`); returns (id, name).
    pub async fn user(&self, role: Role) -> (i64, String) {
        let n = self.next_user.fetch_add(1, Ordering::Relaxed);
        let name = format!("{}-{n}", role.as_str());
        let id = server::auth::users::create_user(&self.store, None, &name, role, PASSWORD, "test").await.unwrap();
        (id, name)
    }

    /// Signs in through the real form post; panics unless it worked.
    pub async fn sign_in(&self, name: &str) -> Client {
        let client = self.anonymous();
        let r = client.post_form("/login", &[("username", name), ("password", PASSWORD), ("next", "/experiments")]).await;
        assert_eq!((r.status, r.location()), (303, Some("/experiments")), "sign-in of {name} failed: {}", r.text);
        client
    }

    /// A browser session of a new user of this role.
    pub async fn signed_in(&self, role: Role) -> Client {
        let (_, name) = self.user(role).await;
        self.sign_in(&name).await
    }

    /// A client with a fresh API token of `role` for a new user of the same role.
    pub async fn with_token(&self, role: Role) -> (Client, i64) {
        let (id, _) = self.user(role).await;
        let user = self.store.user_by_id(id).await.unwrap().unwrap();
        let (token_id, secret) =
            server::auth::users::issue_api_token(&self.store, Some(id), &user, "test", role, None, None).await.unwrap();
        let mut c = self.anonymous();
        c.bearer = Some(secret);
        c.origin = None;
        (c, token_id)
    }

    /// A share link's secret for an experiment (as `POST …/shares` makes it).
    pub async fn share(&self, experiment_id: i64) -> String {
        let secret = server::auth::token::generate();
        self.store.insert_share_token(experiment_id, &server::auth::token::digest(&secret), None, false, None).await.unwrap();
        secret
    }

    /// An experiment launched by `launched_by`.
    pub async fn experiment(&self, title: &str, launched_by: Option<i64>) -> i64 {
        let mut new = store::testing::sample_experiment(judge::ExperimentKind::Pipeline, title);
        new.launched_by = launched_by;
        self.store.insert_experiment(&new).await.unwrap()
    }

    /// A judged pipeline experiment: the judge's report on real zephyr.stage rows (three same-code
    /// controls against a treatment with ~30 % more map CPU: a regression).
    pub async fn judged_pipeline(&self, title: &str) -> i64 {
        let new = store::testing::sample_experiment(judge::ExperimentKind::Pipeline, title);
        self.judged_pipeline_as(new).await
    }

    /// The same judged pipeline report, for an experiment described by `new` (its suite, fingerprint…).
    pub async fn judged_pipeline_as(&self, new: store::experiments::InsertExperiment) -> i64 {
        use judge::pipeline::{aggregate::TrialSpec, judge, ArmSpec, PipelineConfig};
        let rows = judge::pipeline::rows::parse_rows(
            "rows.csv",
            include_str!("../../../../judge/tests/data/zephyr_stage_rows_subprocess_runner.csv"),
        )
        .unwrap();
        let t = |id: &str| TrialSpec { execution_ids: vec![id.into()], pair: None, position: None };
        let control = [t("20261129-072203-da99fe05"), t("20261129-072217-adb9e3d8"), t("20261129-072231-4eb27101")];
        let arms = [ArmSpec { name: "treatment".into(), trials: vec![t("20261129-072244-a8070574")] }];
        // One treatment trial measures no spread and the judge borrows none (method 3): a decided regression
        // needs a noise profile. These rows hold no other same-code trials, so the controls stand in for a
        // calibration (as in scripts/demo-data.sh).
        let noise = judge::pipeline::calibrate(&rows, &control, None).unwrap();
        let config = PipelineConfig { worker_ram: Some(64.0 * 1048576.0), noise: Some(noise), ..PipelineConfig::default() };
        let report = judge(&rows, &control, &arms, &config).unwrap();
        let id = self.store.insert_experiment(&new).await.unwrap();
        self.store.record_verdict(id, report.verdict, &report.reasons, &serde_json::to_value(&report).unwrap(), None).await.unwrap();
        id
    }

    /// A judged warp experiment: the gate on the upstream FAIL and WARN compare CSVs, as two cells.
    pub async fn judged_warp(&self, title: &str) -> i64 {
        use judge::warp::compare_csv::parse_compare_csv;
        let mut rows = parse_compare_csv(
            "fail.csv",
            include_str!("../../../../judge/tests/data/warp/compare_fail.csv"),
            Some("put-4KiB/sync-on"),
            false,
        )
        .unwrap();
        rows.extend(
            parse_compare_csv(
                "warn.csv",
                include_str!("../../../../judge/tests/data/warp/compare_warn.csv"),
                Some("get-4MiB/sync-off"),
                false,
            )
            .unwrap(),
        );
        let report = judge::warp::gate::gate(&rows, &judge::warp::gate::GateConfig::default());
        let mut new = store::testing::sample_experiment(judge::ExperimentKind::Warp, title);
        new.arms[1].name = "candidate".into();
        let id = self.store.insert_experiment(&new).await.unwrap();
        let json = serde_json::json!({"gate": report, "provenance": {"runner": "Linux test x86_64"}});
        self.store.record_verdict(id, report.verdict, &report.reasons(), &json, None).await.unwrap();
        id
    }
}

impl TestAppBuilder {
    pub fn trusted_proxy(mut self, cidr: &str) -> Self {
        self.trusted_proxies.push(cidr.parse().unwrap());
        self
    }

    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
    pub fn public_url(mut self, url: &str) -> Self {
        self.public_url = Some(url.to_string());
        self
    }
    /// Runs the dispatcher (trials really run) with trials reporting to this finelog.
    pub fn dispatcher(mut self, finelog_url: Option<&str>) -> Self {
        self.dispatcher = true;
        self.finelog_url = finelog_url.map(str::to_string);
        self
    }
    /// The Python for `{python}`; with `dispatcher(None)` the app also starts its own finelog with it.
    pub fn python(mut self, python: std::path::PathBuf) -> Self {
        self.python = Some(python);
        self
    }
    /// The store (default: SQLite in the app's temp dir); two apps on one database are two replicas.
    pub fn database_url(mut self, url: &str) -> Self {
        self.database_url = Some(url.to_string());
        self
    }
    /// `--engine-cap`: the most trials in flight on one cluster engine.
    pub fn cluster_cap(mut self, cap: i64) -> Self {
        self.cluster_cap = cap;
        self
    }
    pub fn metrics_token(mut self, secret: &str) -> Self {
        self.metrics_token = Some(secret.to_string());
        self
    }
    /// The absolute session limit (the command line takes hours; tests need less).
    pub fn session_max(mut self, limit: std::time::Duration) -> Self {
        self.session_max = Some(limit);
        self
    }

    pub async fn start(self) -> TestApp {
        let dir = tempfile::tempdir().unwrap();
        let args = ServeArgs {
            addr: "127.0.0.1:0".parse().unwrap(),
            store: StoreArgs { database_url: self.database_url.clone(), data_dir: dir.path().join("data") },
            site_root: dir.path().join("site"),
            suites_dir: dir.path().join("suites"),
            // The tests run where scripts/setup.sh installed bubblewrap: trials are sandboxed.
            unsandboxed_trials: false,
            cluster_cap: self.cluster_cap,
            trusted_proxies: self.trusted_proxies.clone(),
            // Without the dispatcher no trial runs, so launches only need some finelog URL to be accepted.
            finelog_url: self.finelog_url.clone().or_else(|| (!self.dispatcher).then(|| "http://127.0.0.1:9".to_string())),
            python: self.python.clone(),
            public_url: self.public_url,
            session_idle_hours: 12,
            session_max_hours: 168,
            retention: RetentionArgs {
                retain_logs_days: 30,
                retain_artifacts_days: 90,
                retain_worktrees_days: 2,
                retain_binaries_days: 14,
            },
        };
        let mut config = ServeConfig::from_args(args).unwrap();
        config.arbiter_exe = env!("CARGO_BIN_EXE_arbiter").into();
        config.metrics_token_digest = self.metrics_token.as_deref().map(server::auth::token::digest);
        if let Some(limit) = self.session_max {
            config.session_max = limit;
        }
        let store = Store::open(&config.database_url).await.unwrap();
        let sessions = AnySessionStore::for_store(&store).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (queue, finelog) = server::serve::trial_queue(&config).await;
        let mut state = server::serve::app_state(&config, store.clone(), addr, queue);
        state.throttle = Arc::new(server::auth::throttle::LoginThrottle::new(self.limits));
        let router = server::serve::router(state.clone(), sessions, &config);
        let dispatcher = self.dispatcher.then(|| engine::queue::spawn(state.engine.clone()));
        let server = tokio::spawn(async move {
            axum::serve(listener, router.into_make_service_with_connect_info::<std::net::SocketAddr>()).await.unwrap();
        });
        TestApp { base: format!("http://{addr}"), state, store, dir, server, dispatcher, finelog, next_user: AtomicU32::new(1) }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.server.abort();
        if let Some(s) = &self.dispatcher {
            s.abort();
        }
        if let Some(f) = &self.finelog {
            f.stop();
        }
        // A trial still running when the test ends keeps what serve mounted for it (a sized scratch, a
        // capped worktree): off, deepest first, before the temporary folder goes.
        engine::queue::mounts::unmount_beneath(&self.state.data_dir);
    }
}
