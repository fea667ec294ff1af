//! Load test: 200 concurrent readers of experiment pages and API reads for 30 s against a real
//! `arbiter serve` (a second process, on loopback, SQLite in a temp dir, 200 seeded experiments).
//! Prints requests/s and p50/p99/max latency per kind of read; exits 1 on any error.
//!
//!   cargo build --release -p server --bin arbiter --example load
//!   target/release/examples/load [--readers 200] [--seconds 30] [--bin target/release/arbiter]

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PASSWORD: &str = "a long load-test passphrase";
const KINDS: [&str; 4] = ["page /experiments/{id}", "page /experiments", "GET /api/v1/experiments/{id}", "GET /api/v1/experiments"];

fn flag(args: &[String], name: &str, default: &str) -> String {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned().unwrap_or_else(|| default.to_string())
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    f64::from(sorted[i]) / 1000.0
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let readers: usize = flag(&args, "--readers", "200").parse().expect("--readers N");
    let seconds: u64 = flag(&args, "--seconds", "30").parse().expect("--seconds N");
    let bin = flag(&args, "--bin", "target/release/arbiter");

    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let url = format!("sqlite://{}/arbiter.db", data.display());
    let store = store::Store::open(&url).await.unwrap();
    let hash = {
        use argon2::password_hash::{rand_core::OsRng, PasswordHasher, SaltString};
        argon2::Argon2::default().hash_password(PASSWORD.as_bytes(), &SaltString::generate(&mut OsRng)).unwrap().to_string()
    };
    let uid = store.insert_user("reader", &hash, store::people::Role::Launcher).await.unwrap();
    let secret = server::auth::token::generate();
    store.insert_api_token(uid, "load", &server::auth::token::digest(&secret), store::people::Role::Viewer, None, None).await.unwrap();
    let mut ids = Vec::new();
    for n in 0..200 {
        let mut e = store::testing::sample_experiment(
            if n % 3 == 0 { judge::ExperimentKind::Warp } else { judge::ExperimentKind::Pipeline },
            &format!("load experiment {n}"),
        );
        e.launched_by = Some(uid);
        ids.push(store.insert_experiment(&e).await.unwrap());
    }
    store.close().await;

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}");
    let mut child = Command::new(&bin)
        .args(["serve", "--addr", &format!("127.0.0.1:{port}"), "--data-dir"])
        .arg(&data)
        .env("ARBITER_LOG", "warn")
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e} (build it with cargo build --release)"));
    let http = reqwest::Client::builder().cookie_store(true).pool_max_idle_per_host(readers).build().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while http.get(format!("{base}/healthz")).send().await.is_err() {
        assert!(Instant::now() < deadline, "the server did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let r = http
        .post(format!("{base}/login"))
        .header("origin", &base)
        .form(&[("username", "reader"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "sign-in failed: {}", r.status());

    println!("{readers} readers for {seconds} s against {base} ({} experiments)", ids.len());
    let ids = Arc::new(ids);
    let secret = Arc::new(secret);
    let stop = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for reader in 0..readers {
        let (http, base, ids, secret) = (http.clone(), base.clone(), ids.clone(), secret.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat: [Vec<u32>; 4] = Default::default();
            let mut errors = Vec::new();
            let mut n = reader;
            while Instant::now() < stop {
                let kind = n % 4;
                let id = ids[(n * 7919) % ids.len()];
                let req = match kind {
                    0 => http.get(format!("{base}/experiments/{id}")),
                    1 => http.get(format!("{base}/experiments")),
                    2 => http.get(format!("{base}/api/v1/experiments/{id}")).bearer_auth(secret.as_str()),
                    _ => http.get(format!("{base}/api/v1/experiments?limit=50")).bearer_auth(secret.as_str()),
                };
                let t = Instant::now();
                match req.send().await {
                    Ok(r) if r.status().is_success() => match r.bytes().await {
                        Ok(_) => lat[kind].push(t.elapsed().as_micros() as u32),
                        Err(e) => errors.push(format!("{}: body: {e}", KINDS[kind])),
                    },
                    Ok(r) => errors.push(format!("{}: HTTP {}", KINDS[kind], r.status())),
                    Err(e) => errors.push(format!("{}: {e}", KINDS[kind])),
                }
                n += 1;
            }
            (lat, errors)
        }));
    }
    let mut all: [Vec<u32>; 4] = Default::default();
    let mut errors = Vec::new();
    for t in tasks {
        let (lat, errs) = t.await.unwrap();
        for (k, l) in lat.into_iter().enumerate() {
            all[k].extend(l);
        }
        errors.extend(errs);
    }
    let elapsed = started.elapsed().as_secs_f64();
    child.kill().ok();
    child.wait().ok();

    let mut total: Vec<u32> = all.iter().flatten().copied().collect();
    total.sort_unstable();
    println!("{:<32} {:>9} {:>9} {:>9} {:>9} {:>9}", "read", "requests", "req/s", "p50 ms", "p99 ms", "max ms");
    for (k, l) in all.iter_mut().enumerate() {
        l.sort_unstable();
        let max = l.last().map_or(f64::NAN, |m| f64::from(*m) / 1000.0);
        println!(
            "{:<32} {:>9} {:>9.0} {:>9.2} {:>9.2} {:>9.2}",
            KINDS[k],
            l.len(),
            l.len() as f64 / elapsed,
            percentile(l, 0.5),
            percentile(l, 0.99),
            max
        );
    }
    let max = total.last().map_or(f64::NAN, |m| f64::from(*m) / 1000.0);
    println!(
        "{:<32} {:>9} {:>9.0} {:>9.2} {:>9.2} {:>9.2}",
        "all",
        total.len(),
        total.len() as f64 / elapsed,
        percentile(&total, 0.5),
        percentile(&total, 0.99),
        max
    );
    println!("errors: {}", errors.len());
    for e in errors.iter().take(10) {
        println!("  {e}");
    }
    std::process::exit(if errors.is_empty() { 0 } else { 1 });
}
