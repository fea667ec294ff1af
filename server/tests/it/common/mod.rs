//! Starts the real `arbiter serve` binary on a free port with its own data dir, and talks to it over HTTP.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_arbiter");

pub struct RunningServer {
    pub child: Child,
    pub base: String,
    pub log: PathBuf,
    pub data_dir: PathBuf,
    pub database_url: Option<String>,
    /// Keeps the session cookie once [`RunningServer::sign_in`] ran.
    pub client: reqwest::Client,
}

pub const TEST_PASSWORD: &str = "a long test passphrase";

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A `serve` command with a clean environment apart from what the test passes.
pub fn serve_command(data_dir: &Path, port: u16, database_url: Option<&str>) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("serve").arg("--addr").arg(format!("127.0.0.1:{port}")).arg("--data-dir").arg(data_dir);
    cmd.env_remove("DATABASE_URL").env_remove("ARBITER_ADDR").env_remove("ARBITER_DATA_DIR");
    cmd.env("ARBITER_LOG", "info");
    if let Some(url) = database_url {
        cmd.arg("--database-url").arg(url);
    }
    cmd
}

impl RunningServer {
    /// Starts the server and waits until `/healthz` answers.
    pub async fn start(data_dir: &Path, database_url: Option<&str>) -> RunningServer {
        Self::start_with(data_dir, database_url, &[]).await
    }

    /// Like [`RunningServer::start`], with more `serve` flags.
    pub async fn start_with(data_dir: &Path, database_url: Option<&str>, extra: &[&str]) -> RunningServer {
        let port = free_port();
        let log = data_dir.with_extension(format!("{port}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let child = serve_command(data_dir, port, database_url)
            .args(extra)
            .stdout(Stdio::from(file.try_clone().unwrap()))
            .stderr(Stdio::from(file))
            .spawn()
            .expect("spawn arbiter");
        let client = reqwest::Client::builder().cookie_store(true).build().unwrap();
        let server = RunningServer {
            child,
            base: format!("http://127.0.0.1:{port}"),
            log,
            data_dir: data_dir.to_path_buf(),
            database_url: database_url.map(str::to_string),
            client,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(r) = reqwest::get(format!("{}/healthz", server.base)).await {
                if r.status().is_success() {
                    return server;
                }
            }
            assert!(Instant::now() < deadline, "server did not come up: {}", server.log_text());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// GET as this server's client (signed in after [`RunningServer::sign_in`]), following redirects.
    pub async fn get(&self, path: &str) -> (u16, String) {
        let r = self.client.get(format!("{}{path}", self.base)).send().await.unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    /// Creates the admin `tester` with the real CLI (unless it exists) and signs the client in.
    pub async fn sign_in(&self) {
        let mut cmd = Command::new(BIN);
        cmd.args(["user", "add", "tester", "--role", "admin", "--data-dir"]).arg(&self.data_dir);
        cmd.env_remove("DATABASE_URL");
        if let Some(url) = &self.database_url {
            cmd.arg("--database-url").arg(url);
        }
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        use std::io::Write;
        writeln!(child.stdin.take().unwrap(), "{TEST_PASSWORD}").unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() || stderr.contains("already exists"), "user add failed: {stderr}");
        let r = self
            .client
            .post(format!("{}/login", self.base))
            .header("origin", &self.base)
            .form(&[("username", "tester"), ("password", TEST_PASSWORD)])
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "sign-in failed: {} {}", r.status(), r.text().await.unwrap_or_default());
        assert!(r.url().path() == "/experiments", "sign-in lands on the experiments: {}", r.url());
    }

    /// SIGTERM, then the exit status (graceful shutdown must finish within 20 s).
    pub fn stop(mut self) -> std::process::ExitStatus {
        Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                self.child.kill().ok();
                panic!("server ignored SIGTERM: {}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl RunningServer {
    /// Kills the server with SIGKILL (a crash), leaving whatever it started running.
    pub fn crash(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// POSTs JSON as this server's (signed-in) client, from our own origin.
    pub async fn post_json(&self, path: &str, body: &serde_json::Value) -> (u16, serde_json::Value) {
        let r = self.client.post(format!("{}{path}", self.base)).header("origin", &self.base).json(body).send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(serde_json::Value::Null))
    }

    pub async fn get_json(&self, path: &str) -> serde_json::Value {
        self.client.get(format!("{}{path}", self.base)).send().await.unwrap().json().await.unwrap()
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// Runs a `serve` that is expected to refuse to start; returns its output.
pub fn serve_expecting_failure(cmd: &mut Command) -> Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().ok();
            panic!("serve did not exit on bad input");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}
/// Measured speed and the machine's load. A test whose assertion rests on a verdict from measured CPU
/// or speed is named `measured_…` and holds this exclusively ([`measuring`]); every other test that runs
/// real trials holds it shared ([`running_trials`]). `scripts/test.sh` runs the `measured_` tests in a
/// pass of their own, one at a time, after the rest: on 2 vCPUs even a test that runs no trial (a page
/// benchmark, the compare matrix) inflates the CPU-seconds measured on the other (an A/A once read
/// +86 % CPU on one stage, detected, beside such a test), and a plain `cargo test` still keeps trials
/// apart through this lock.
static MEASURING: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// Held by a test whose verdict rests on measured speed: no other trial runs meanwhile. The test must
/// be named `measured_…`, so that `scripts/test.sh` runs it alone.
pub async fn measuring() -> tokio::sync::RwLockWriteGuard<'static, ()> {
    let thread = std::thread::current();
    let name = thread.name().unwrap_or_default();
    assert!(
        name.rsplit("::").next().is_some_and(|test| test.starts_with("measured_")),
        "{name}: a test that measures is named measured_… so that scripts/test.sh runs it alone"
    );
    MEASURING.write().await
}

/// Held by a test that runs real trials but asserts nothing measured: such tests may run together,
/// never beside a measuring one.
pub async fn running_trials() -> tokio::sync::RwLockReadGuard<'static, ()> {
    MEASURING.read().await
}

/// The seq of the first measured (not warm-up) trial of the arm named `arm` in an experiment's JSON: the
/// plan's order is balanced and drawn at random, so which seq runs which arm is read, never assumed.
pub fn measured_seq(e: &serde_json::Value, arm: &str) -> i64 {
    let id = &e["arms"].as_array().unwrap().iter().find(|a| a["name"] == arm).unwrap_or_else(|| panic!("no arm {arm}: {e}"))["id"];
    e["trials"].as_array().unwrap().iter().find(|t| &t["arm_id"] == id && t["role"] == "measured").unwrap_or_else(|| panic!("{arm}: {e}"))
        ["seq"]
        .as_i64()
        .unwrap()
}

pub mod bench;
pub mod example;
pub mod finelog;
pub mod git;
pub mod postgres;
pub mod slurm;
pub mod test_app;
pub mod warp;
pub mod webhook;
