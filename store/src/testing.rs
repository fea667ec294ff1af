//! Throwaway databases for tests: SQLite in a temp dir, PostgreSQL as a fresh database on the server at
//! `TEST_POSTGRES_URL`, or — when that is unset — on a private cluster started once per test process
//! (`initdb` + `postgres` from Debian's postgresql package, on a free port in a temp dir). Never skipped.

use crate::experiments::{ArmRole, InsertArm, InsertExperiment};
use crate::Store;
use sqlx::{Connection, Executor, PgConnection};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub struct TestDb {
    pub store: Store,
    pub url: String,
    dir: Option<tempfile::TempDir>,
    pg_database: Option<String>,
}

impl TestDb {
    /// A migrated SQLite store in a fresh temp dir.
    pub async fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("arbiter.db").display());
        let store = Store::open(&url).await.expect("open sqlite test store");
        TestDb { store, url, dir: Some(dir), pg_database: None }
    }

    /// A migrated PostgreSQL store in a database of its own.
    pub async fn postgres() -> TestDb {
        let admin = postgres_admin_url();
        let name = fresh_database_name();
        let mut conn = PgConnection::connect(admin).await.unwrap_or_else(|e| panic!("connect to {admin}: {e}"));
        conn.execute(format!("CREATE DATABASE \"{name}\"").as_str()).await.expect("create test database");
        conn.close().await.ok();
        let url = with_database(admin, &name);
        let store = Store::open(&url).await.expect("open postgres test store");
        TestDb { store, url, dir: None, pg_database: Some(name) }
    }

    /// The URL of a fresh, empty PostgreSQL database (not migrated), and its name for [`TestDb::drop_database`].
    pub async fn empty_postgres() -> (String, String) {
        let admin = postgres_admin_url();
        let name = fresh_database_name();
        let mut conn = PgConnection::connect(admin).await.unwrap_or_else(|e| panic!("connect to {admin}: {e}"));
        conn.execute(format!("CREATE DATABASE \"{name}\"").as_str()).await.expect("create test database");
        conn.close().await.ok();
        (with_database(admin, &name), name)
    }

    /// Drops a database [`TestDb::empty_postgres`] made.
    pub async fn drop_database(name: &str) {
        if let Ok(mut conn) = PgConnection::connect(postgres_admin_url()).await {
            conn.execute(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)").as_str()).await.ok();
        }
    }

    /// The temp dir of a SQLite test store.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_ref().map(|d| d.path())
    }

    /// Closes the store and drops a Postgres test database (SQLite files go with the temp dir).
    pub async fn cleanup(self) {
        self.store.close().await;
        if let Some(name) = self.pg_database {
            if let Ok(mut conn) = PgConnection::connect(postgres_admin_url()).await {
                conn.execute(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)").as_str()).await.ok();
            }
        }
    }
}

/// A control-vs-treatment experiment with plausible refs, for tests that need one stored.
pub fn sample_experiment(kind: judge::ExperimentKind, title: &str) -> InsertExperiment {
    let arm = |name: &str, role| InsertArm {
        name: name.into(),
        role,
        git_ref: Some(format!("refs/heads/{name}")),
        sha: Some("0123456789abcdef0123456789abcdef01234567".into()),
        config_diff: None,
    };
    InsertExperiment {
        suite_id: None,
        kind,
        title: title.into(),
        base_ref: Some("0123456789abcdef0123456789abcdef01234567".into()),
        head_ref: Some("feature/faster-dedup".into()),
        fingerprint: serde_json::json!({"sample": "fineweb-1k", "workers": 2}),
        plan: serde_json::json!({"trials_per_arm": 1, "order": "interleaved"}),
        launched_by: None,
        arms: vec![arm("control", ArmRole::Control), arm("treatment", ArmRole::Treatment)],
    }
}

fn fresh_database_name() -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    format!("arbiter_t_{}_{}_{}", std::process::id(), COUNTER.fetch_add(1, Ordering::SeqCst), nanos)
}

/// `postgres://…/old` → `postgres://…/name` (keeps any query string).
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url.split_once('?').map(|(b, q)| (b, format!("?{q}"))).unwrap_or((url, String::new()));
    let after_scheme = base.find("://").map(|i| i + 3).unwrap_or(0);
    let path_start = base[after_scheme..].find('/').map(|i| i + after_scheme).unwrap_or(base.len());
    format!("{}/{}{}", &base[..path_start], name, query)
}

/// The server tests create their databases on: `TEST_POSTGRES_URL`, or a private cluster.
pub fn postgres_admin_url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| match std::env::var("TEST_POSTGRES_URL") {
        Ok(url) if !url.trim().is_empty() => url,
        _ => start_private_cluster().unwrap_or_else(|e| {
            panic!("TEST_POSTGRES_URL is unset and a private PostgreSQL cluster could not start: {e}. Install Debian's `postgresql` package or set TEST_POSTGRES_URL")
        }),
    })
}

fn pg_binary(name: &str) -> Result<PathBuf, String> {
    if let Ok(out) = Command::new("sh").arg("-c").arg("command -v \"$1\"").arg("sh").arg(name).output() {
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if out.status.success() && !path.is_empty() {
            return Ok(PathBuf::from(path));
        }
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| format!("{name} is not on PATH and /usr/lib/postgresql does not exist"))?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin").join(name)))
        .filter(|p| p.exists())
        .collect();
    versions.sort();
    versions.pop().ok_or_else(|| format!("{name} not found"))
}

fn running_as_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0").unwrap_or(false)
}

/// Starts `postgres` on a free loopback port with trust auth. A watchdog shell stops it and removes its
/// files when this test process exits. As root (CI), the cluster runs as the `postgres` user.
fn start_private_cluster() -> Result<String, String> {
    let initdb = pg_binary("initdb")?;
    let postgres = pg_binary("postgres")?;
    let dir = tempfile::Builder::new().prefix("arbiter-pg-").tempdir().map_err(|e| e.to_string())?.keep();
    let data = dir.join("data");
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
    let as_root = running_as_root();
    let run_as = |program: &Path| -> Command {
        if as_root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    };
    if as_root {
        let status = Command::new("chown").args(["-R", "postgres:"]).arg(&dir).status().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err("chown of the cluster dir to the postgres user failed".into());
        }
    }
    let out = run_as(&initdb)
        .args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "-D"])
        .arg(&data)
        .output()
        .map_err(|e| format!("run initdb: {e}"))?;
    if !out.status.success() {
        return Err(format!("initdb failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let watchdog = "\"$1\" -D \"$2\" -p \"$3\" -k \"$4\" -c listen_addresses=127.0.0.1 -c fsync=off >\"$4/server.log\" 2>&1 & pg=$!; \
                    while [ -d \"/proc/$5\" ] && kill -0 $pg 2>/dev/null; do sleep 1; done; kill -INT $pg 2>/dev/null; wait $pg; rm -rf \"$4\"";
    run_as(Path::new("sh"))
        .arg("-c")
        .arg(watchdog)
        .arg("sh")
        .arg(&postgres)
        .arg(&data)
        .arg(port.to_string())
        .arg(&dir)
        .arg(std::process::id().to_string())
        .spawn()
        .map_err(|e| format!("start postgres: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
            return Err(format!("postgres did not listen on port {port} within 30 s: {log}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Listening is not accepting: wait until the startup finishes.
    std::thread::sleep(Duration::from_millis(300));
    Ok(format!("postgres://postgres@127.0.0.1:{port}/postgres"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn database_name_swaps_in_urls() {
        assert_eq!(super::with_database("postgres://u@h:5432/test", "x"), "postgres://u@h:5432/x");
        assert_eq!(super::with_database("postgres://u@h:5432", "x"), "postgres://u@h:5432/x");
        assert_eq!(super::with_database("postgres://u@h/test?sslmode=disable", "x"), "postgres://u@h/x?sslmode=disable");
    }
}
