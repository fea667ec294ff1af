//! The real server: pages, health, readiness, restarts, both backends, and refusals on bad settings.

use crate::common;

use common::{free_port, serve_command, serve_expecting_failure, RunningServer, TEST_PASSWORD};
use judge::{ExperimentKind, Verdict};
use serde_json::{json, Value};
use store::experiments::InsertExperiment;
use store::testing::TestDb;
use store::Store;

fn experiment(kind: ExperimentKind, title: &str) -> InsertExperiment {
    store::testing::sample_experiment(kind, title)
}

#[tokio::test]
async fn serves_pages_health_and_readiness() {
    let tmp = tempfile::tempdir().unwrap();
    let server = RunningServer::start(&tmp.path().join("data"), None).await;

    let (status, body) = server.get("/").await;
    assert_eq!(status, 200);
    assert!(body.contains("<h1>Sign in</h1>"), "anonymous visitors land on the sign-in page: {body}");
    server.sign_in().await;
    let (status, body) = server.get("/").await;
    assert_eq!(status, 200);
    assert!(body.contains("<h1>Experiments</h1>"), "{body}");
    assert!(body.contains("No experiments yet"), "the empty history says what to do next");
    assert!(body.contains("/pkg/arbiter.js") || body.contains("/pkg/arbiter"), "hydration scripts are linked");

    let (status, body) = server.get("/healthz").await;
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["status"], "ok");

    let (status, body) = server.get("/readyz").await;
    assert_eq!(status, 200, "{body}");
    let ready: Value = serde_json::from_str(&body).unwrap();
    assert_eq!((ready["status"].as_str(), ready["store"].as_str()), (Some("ready"), Some("sqlite")));
    assert_eq!(ready["migrations"]["applied"], ready["migrations"]["known"]);

    let (status, body) = server.get("/no/such/page").await;
    assert_eq!(status, 404);
    assert!(body.contains("There is no page at /no/such/page"), "{body}");

    assert!(tmp.path().join("data/arbiter.db").exists(), "SQLite file in the data dir");

    // Hardening: security headers and a request id on every response, and a body limit.
    let client = reqwest::Client::new();
    let mut ids = Vec::new();
    for path in ["/", "/healthz", "/no/such/page"] {
        let r = client.get(format!("{}{path}", server.base)).send().await.unwrap();
        let h = r.headers();
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["x-frame-options"], "DENY", "{path}");
        assert!(h["content-security-policy"].to_str().unwrap().contains("frame-ancestors 'none'"), "{path}");
        ids.push(h["x-request-id"].to_str().unwrap().to_string());
    }
    ids.dedup();
    assert_eq!(ids.len(), 3, "a fresh request id each time: {ids:?}");
    // An oversize body is refused from its announced length, before it is read.
    let mut raw = tokio::net::TcpStream::connect(server.base.trim_start_matches("http://")).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    raw.write_all(b"POST /api/anything HTTP/1.1\r\nHost: arbiter\r\nContent-Length: 2097152\r\nConnection: close\r\n\r\n").await.unwrap();
    let mut answer = String::new();
    raw.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 413"), "oversize bodies are refused: {answer}");
    let status = server.stop();
    assert!(status.success(), "graceful exit on SIGTERM: {status:?}");
}

/// A client that opens connections and trickles its request head is cut off after the header-read
/// timeout (10 s), so hundreds of them hold nothing for long; a whole request still gets its answer.
#[tokio::test]
async fn slow_request_heads_are_cut_off() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let tmp = tempfile::tempdir().unwrap();
    let server = RunningServer::start(&tmp.path().join("data"), None).await;
    let addr = server.base.trim_start_matches("http://").to_string();
    let mut slow = Vec::new();
    for _ in 0..50 {
        let mut c = tokio::net::TcpStream::connect(&addr).await.unwrap();
        c.write_all(b"GET /healthz HTTP/1.1\r\nHost: arbiter\r\n").await.unwrap();
        slow.push(c);
    }
    let started = std::time::Instant::now();
    for c in &mut slow {
        let mut buf = [0u8; 256];
        let left = std::time::Duration::from_secs(30).saturating_sub(started.elapsed());
        let read = tokio::time::timeout(left, c.read(&mut buf)).await;
        match read {
            Ok(Ok(n)) => assert!(n == 0 || String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 408"), "{:?}", &buf[..n]),
            Ok(Err(_)) => {}
            Err(_) => panic!("a connection that never finished its head was still open after 30 s"),
        }
    }
    let waited = started.elapsed();
    assert!(waited >= std::time::Duration::from_secs(8), "cut off after {waited:?}, before the timeout");
    assert_eq!(reqwest::get(format!("{}/healthz", server.base)).await.unwrap().status(), 200);
    assert!(server.stop().success());
}

/// Unmounts a test's tmpfs however the test ends.
struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// The data dir's disk full (a 40 MB tmpfs, filled after 30 tokens grew SQLite's write-ahead log): a
/// write is a 503 that says so, never a 201 for a row that was not stored (SQLite commits an `INSERT …
/// RETURNING` read with `fetch_one` without reporting its failure: that answered 201 three times while
/// storing nothing). Once space is freed, writes work again and nothing of the refused ones appears.
#[tokio::test]
async fn a_full_disk_is_an_error_and_nothing_is_half_stored() {
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("mounting a small tmpfs needs root; nothing to check here");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let disk = tmp.path().join("disk");
    std::fs::create_dir_all(&disk).unwrap();
    let ok = std::process::Command::new("mount").args(["-t", "tmpfs", "-o", "size=40m", "tmpfs"]).arg(&disk).status().unwrap();
    assert!(ok.success(), "mount a tmpfs");
    let _mounted = Mounted(disk.clone());
    let server = RunningServer::start(&disk, None).await;
    server.sign_in().await;
    for i in 0..30 {
        let (status, body) = server.post_json("/api/v1/tokens", &json!({"name": format!("before-{i}")})).await;
        assert_eq!(status, 201, "{body}");
    }
    let fill = disk.join("fill");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&fill).unwrap();
        let chunk = vec![0u8; 1 << 20];
        while f.write_all(&chunk).is_ok() {}
    }
    for i in 0..3 {
        let (status, body) = server.post_json("/api/v1/tokens", &json!({"name": format!("refused-{i}")})).await;
        assert_eq!(status, 503, "a full disk: {body}");
        assert!(body["error"].as_str().unwrap_or("").contains("disk is full"), "{body}");
    }
    std::fs::remove_file(&fill).unwrap();
    let (status, body) = server.post_json("/api/v1/tokens", &json!({"name": "after"})).await;
    assert_eq!(status, 201, "{body}");
    let tokens = server.get_json("/api/v1/tokens").await;
    let names: Vec<&str> = tokens.as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"after") && names.contains(&"before-29"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("refused-")), "nothing of the refused writes: {names:?}");
    assert!(server.stop().success());
}

/// The data dir is the server user's alone and the database's files 0600 — also when an older version
/// left them open to every local user (they are restricted at start).
#[tokio::test]
async fn the_data_dir_and_database_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let server = RunningServer::start(&data, None).await;
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&data.join("arbiter.db")), 0o600);
    assert!(server.stop().success());
    // As an older version left them.
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(data.join("arbiter.db"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let server = RunningServer::start(&data, None).await;
    assert_eq!(mode(&data), 0o700);
    for name in ["arbiter.db", "arbiter.db-wal", "arbiter.db-shm"] {
        if data.join(name).exists() {
            assert_eq!(mode(&data.join(name)), 0o600, "{name}");
        }
    }
    assert!(server.stop().success());
}

#[tokio::test]
async fn history_lists_and_filters_stored_experiments_and_survives_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let server = RunningServer::start(&data, None).await;
    let url = format!("sqlite://{}/arbiter.db", data.canonicalize().unwrap().display());
    let store = Store::open(&url).await.unwrap();
    store.insert_experiment(&experiment(ExperimentKind::Pipeline, "dedup map stage +27% CPU")).await.unwrap();
    let warp = store.insert_experiment(&experiment(ExperimentKind::Warp, "s3 put path rewrite")).await.unwrap();
    store.record_verdict(warp, Verdict::WarpWarn, &["get-4KiB/sync-off reqps -6.10%".into()], &json!({}), None).await.unwrap();
    store.close().await;

    server.sign_in().await;
    let (_, all) = server.get("/experiments").await;
    assert!(all.contains("dedup map stage +27% CPU") && all.contains("s3 put path rewrite"), "{all}");
    assert!(all.contains("0123456789 → feature/faster-dedup"), "SHAs are shortened, refs kept");
    assert!(all.contains("WARN"), "the verdict word is on the page");
    let (_, only_warp) = server.get("/experiments?kind=warp").await;
    assert!(only_warp.contains("s3 put path rewrite") && !only_warp.contains("dedup map stage"), "{only_warp}");
    let (_, by_verdict) = server.get("/experiments?verdict=WARN").await;
    assert!(by_verdict.contains("s3 put path rewrite") && !by_verdict.contains("dedup map stage"));
    let (_, none) = server.get("/experiments?status=cancelled").await;
    assert!(none.contains("No experiment matches these filters"), "{none}");
    let (_, bad) = server.get("/experiments?kind=benchmark").await;
    assert!(bad.contains("unknown experiment kind") && bad.contains("That request is not valid"), "{bad}");

    assert!(server.stop().success());
    let again = RunningServer::start(&data, None).await;
    again.sign_in().await;
    let (_, after) = again.get("/experiments").await;
    assert!(after.contains("dedup map stage +27% CPU") && after.contains("s3 put path rewrite"), "data survives a restart");
    let (status, _) = again.get("/readyz").await;
    assert_eq!(status, 200);
    assert!(again.stop().success());
}

#[tokio::test]
async fn serves_from_postgres() {
    let db = TestDb::postgres().await;
    db.store.insert_experiment(&experiment(ExperimentKind::Pipeline, "kept in postgres")).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let server = RunningServer::start(&tmp.path().join("data"), Some(&db.url)).await;
    let (status, body) = server.get("/readyz").await;
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["store"], "postgres");
    server.sign_in().await;
    let (_, page) = server.get("/").await;
    assert!(page.contains("kept in postgres"), "{page}");
    assert!(!tmp.path().join("data/arbiter.db").exists(), "no SQLite file when DATABASE_URL names Postgres");
    assert!(server.stop().success());
    db.cleanup().await;
}

/// One line on stderr naming the problem and the setting, exit code 2, no panic or backtrace.
fn assert_refused(out: &std::process::Output, must_contain: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "exit code 2; stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("arbiter: error:")).collect();
    assert_eq!(lines.len(), 1, "one error line: {stderr}");
    for needle in must_contain {
        assert!(lines[0].contains(needle), "{needle:?} missing from {:?}", lines[0]);
    }
    assert!(!stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"), "{stderr}");
}

#[test]
fn bad_settings_are_refused_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");

    let out = serve_expecting_failure(&mut serve_command(&data, free_port(), Some("mysql://root:hunter2@db/x")));
    assert_refused(&out, &["DATABASE_URL", "sqlite://", "root:***@db"]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("hunter2"), "the password is never printed");

    let out = serve_expecting_failure(&mut serve_command(&data, free_port(), Some("postgres://nobody@127.0.0.1:1/arbiter")));
    assert_refused(&out, &["cannot open the database", "127.0.0.1:1", "DATABASE_URL"]);

    let file = tmp.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out = serve_expecting_failure(&mut serve_command(&file.join("data"), free_port(), None));
    assert_refused(&out, &["data dir", "a-file/data", "ARBITER_DATA_DIR"]);

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let out = serve_expecting_failure(&mut serve_command(&data, port, None));
    assert_refused(&out, &[&format!("127.0.0.1:{port}"), "ARBITER_ADDR"]);

    let out = serve_expecting_failure(serve_command(&data, 1, None).args(["--addr", "localhost:http"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--addr"), "clap names the flag");
}

#[tokio::test]
async fn first_run_prints_a_one_time_setup_link() {
    let tmp = tempfile::tempdir().unwrap();
    let server = RunningServer::start(&tmp.path().join("data"), None).await;
    let log = server.log_text();
    let link =
        log.split_whitespace().find(|w| w.contains("/setup?token=")).unwrap_or_else(|| panic!("no setup link in: {log}")).to_string();
    assert!(link.starts_with(&server.base), "{link}");
    assert!(!log.lines().any(|l| l.contains("INFO") && l.contains("token=")), "the link is printed, never logged");
    let token = link.split("token=").nth(1).unwrap().to_string();

    let (status, page) = server.get(link.strip_prefix(&server.base).unwrap()).await;
    assert_eq!(status, 200);
    assert!(page.contains("Create the first admin"), "{page}");
    let post = |fields: Vec<(&'static str, String)>| {
        let client = server.client.clone();
        let url = format!("{}/setup", server.base);
        let origin = server.base.clone();
        async move { client.post(url).header("origin", origin).form(&fields).send().await.unwrap() }
    };
    let form = |again: &str| {
        vec![("token", token.clone()), ("username", "root".into()), ("password", TEST_PASSWORD.into()), ("again", again.into())]
    };
    // A typo hands the link back, with the problem named.
    let r = post(form("a different passphrase")).await;
    assert!(r.url().query().unwrap_or("").contains("differ"), "{}", r.url());
    let r = post(form(TEST_PASSWORD)).await;
    assert_eq!(r.url().path(), "/experiments", "created and signed in");
    assert!(r.text().await.unwrap().contains("<h1>Experiments</h1>"));
    let r = post(form(TEST_PASSWORD)).await;
    assert_eq!(r.url().path(), "/setup", "the link works once: back to its page");
    let text = r.text().await.unwrap();
    assert!(text.contains("This setup link was used") && !text.contains("Create admin and sign in"), "{text}");
    let (status, page) = server.get(link.strip_prefix(&server.base).unwrap()).await;
    assert_eq!(status, 200);
    assert!(
        page.contains("This setup link was used") && page.contains("arbiter user add NAME --role admin"),
        "opened again, the link says so: {page}"
    );
    assert!(server.stop().success());
}

#[test]
fn refuses_a_public_address_without_an_admin() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(common::BIN);
    cmd.arg("serve").arg("--addr").arg(format!("0.0.0.0:{}", free_port())).arg("--data-dir").arg(tmp.path().join("data"));
    cmd.env_remove("DATABASE_URL").env_remove("ARBITER_ADDR");
    let out = serve_expecting_failure(&mut cmd);
    assert_refused(&out, &["refusing to serve on 0.0.0.0", "no admin", "arbiter user add NAME --role admin"]);
}

#[test]
fn a_broken_suite_file_stops_the_start_with_the_file_named() {
    let tmp = tempfile::tempdir().unwrap();
    let suites = tmp.path().join("suites");
    std::fs::create_dir_all(&suites).unwrap();
    std::fs::write(suites.join("broken.toml"), "name = \"x\"\nkind = \"pipeline\"\n").unwrap();
    let mut cmd = serve_command(&tmp.path().join("data"), free_port(), None);
    cmd.arg("--suites-dir").arg(&suites);
    let out = serve_expecting_failure(&mut cmd);
    assert_refused(&out, &["broken.toml", "ARBITER_SUITES_DIR"]);
}
