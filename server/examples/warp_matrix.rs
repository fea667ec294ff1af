//! Benchmark: the full warp matrix of the example suite (6 workloads × drive sync on/off × baseline and
//! candidate = 24 cells) through a real `arbiter serve` (release, a second process), then the load
//! driver's own cost: obj/s and CPU per request of the driver against s3s-fs's, for put-4KiB and get-4MiB.
//! Prints gate.md, the wall time, and the CPU table.
//!
//!   scripts/bench-warp.sh [--head REF] [--duration 10s] [--rounds 3] [--warmup 2s] [--cooldown 2s] [--skip-matrix]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

/// User + system CPU of a process so far, in seconds (from /proc/PID/stat; clock ticks of 1/100 s).
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<f64> = after.split_whitespace().map(|x| x.parse().unwrap_or(0.0)).collect();
    // Fields after the command: state is [0], utime [11], stime [12].
    (f.get(11).unwrap_or(&0.0) + f.get(12).unwrap_or(&0.0)) / 100.0
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

async fn matrix(bin: &str, root: &Path, args: &[String]) {
    let dir = tempfile::tempdir().unwrap();
    let (data, suites) = (dir.path().join("data"), dir.path().join("suites"));
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&suites).unwrap();
    // The shipped suite, pointed at the example repository, with the matrix settings asked for.
    let mut text = std::fs::read_to_string(root.join("suites/s3s-fs-warp.toml")).unwrap();
    text = text.replace("\"../examples/s3-server/repo\"", &format!("{:?}", root.join("examples/s3-server/repo").display().to_string()));
    for key in ["duration", "rounds", "warmup", "cooldown"] {
        if let Some(v) = flag(args, &format!("--{key}")) {
            let line = text.lines().find(|l| l.starts_with(&format!("{key} ="))).unwrap().to_string();
            let value = if key == "rounds" { v } else { format!("{v:?}") };
            text = text.replace(&line, &format!("{key} = {value}"));
        }
    }
    std::fs::write(suites.join("s3s-fs-warp.toml"), &text).unwrap();

    let url = format!("sqlite://{}/arbiter.db", data.display());
    let store = store::Store::open(&url).await.unwrap();
    let uid = store.insert_user("bench", "!", store::people::Role::Launcher).await.unwrap();
    let secret = server::auth::token::generate();
    store.insert_api_token(uid, "bench", &server::auth::token::digest(&secret), store::people::Role::Launcher, None, None).await.unwrap();
    store.close().await;

    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut child = Command::new(bin)
        .args(["serve", "--addr", &format!("127.0.0.1:{port}"), "--finelog-url", "http://127.0.0.1:9", "--data-dir"])
        .arg(&data)
        .arg("--suites-dir")
        .arg(&suites)
        .env("ARBITER_LOG", "warn")
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while http.get(format!("{base}/healthz")).send().await.is_err() {
        assert!(Instant::now() < deadline, "the server did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let head = flag(args, "--head").unwrap_or_else(|| "main".into());
    let body = serde_json::json!({"suite": "s3s-fs-warp", "head": head, "base": "main"});
    let plan: serde_json::Value = http
        .post(format!("{base}/api/v1/experiments"))
        .bearer_auth(&secret)
        .json(&serde_json::json!({"suite": "s3s-fs-warp", "head": head, "base": "main", "dry_run": true}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    println!(
        "matrix: {} phases, estimated {} min; main vs {head}",
        plan["plan"]["trials"].as_array().map_or(0, Vec::len),
        plan["plan"]["estimated_minutes"]
    );
    let started = Instant::now();
    let r: serde_json::Value =
        http.post(format!("{base}/api/v1/experiments")).bearer_auth(&secret).json(&body).send().await.unwrap().json().await.unwrap();
    let id = r["id"].as_i64().unwrap_or_else(|| panic!("launch refused: {r}"));
    let e = loop {
        let e: serde_json::Value =
            http.get(format!("{base}/api/v1/experiments/{id}")).bearer_auth(&secret).send().await.unwrap().json().await.unwrap();
        if ["judged", "errored", "cancelled"].contains(&e["status"].as_str().unwrap_or("")) {
            break e;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    let took = started.elapsed().as_secs_f64();
    println!("{}", e["report"]["gate_md"].as_str().unwrap_or("(no gate.md)"));
    println!("verdict {} in {took:.0} s ({:.1} min) of wall time", e["verdict"], took / 60.0);
    child.kill().ok();
    child.wait().ok();
}

/// The driver's CPU per request against the server's, over the same measured window.
async fn driver_cost(bin: &str, s3s: &Path) {
    println!("\n| workload | obj/s | MiB/s | driver CPU µs/request | s3s-fs CPU µs/request | driver / server |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for (workload, size) in [("put", "4KiB"), ("get", "4MiB")] {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut server = Command::new(s3s)
            .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--access-key", "benchkey", "--secret-key", "benchsecret"])
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let pid = server.id();
        let (warmup, window) = (3.0, 10.0);
        let driver = tokio::process::Command::new(bin)
            .args(["load", "--endpoint", &format!("http://127.0.0.1:{port}"), "--workload", workload, "--size", size])
            .args(["--concurrency", "8", "--duration", "10s", "--warmup", "3s", "--json"])
            .env("ARBITER_S3_ACCESS_KEY", "benchkey")
            .env("ARBITER_S3_SECRET_KEY", "benchsecret")
            .output();
        let sample = async {
            tokio::time::sleep(Duration::from_secs_f64(warmup + 0.3)).await;
            let a = cpu_secs(pid);
            tokio::time::sleep(Duration::from_secs_f64(window - 0.6)).await;
            (cpu_secs(pid) - a) * window / (window - 0.6)
        };
        let (out, server_cpu) = tokio::join!(driver, sample);
        let report: serde_json::Value = serde_json::from_slice(&out.unwrap().stdout).expect("driver JSON");
        let op = &report["ops"][0];
        let requests = op["requests"].as_f64().unwrap_or(0.0);
        let driver_us = report["driver_cpu_us_per_request"].as_f64().unwrap_or(f64::NAN);
        let server_us = server_cpu * 1e6 / requests;
        println!(
            "| {workload}-{size} | {:.1} | {:.1} | {driver_us:.1} | {server_us:.1} | {:.0} % |",
            op["reqps"].as_f64().unwrap_or(0.0),
            op["throughput_bps"].as_f64().unwrap_or(0.0) / 1048576.0,
            driver_us / server_us * 100.0
        );
        server.kill().ok();
        server.wait().ok();
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bin = flag(&args, "--bin").unwrap_or_else(|| "target/release/arbiter".into());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let home = std::env::var("CARGO_HOME").unwrap_or_else(|_| format!("{}/.cargo", std::env::var("HOME").unwrap()));
    let s3s = PathBuf::from(home).join("bin/s3s-fs");
    assert!(s3s.is_file(), "s3s-fs is not installed: run scripts/setup.sh");
    if !args.iter().any(|a| a == "--skip-matrix") {
        matrix(&bin, &root, &args).await;
    }
    driver_cost(&bin, &s3s).await;
}
