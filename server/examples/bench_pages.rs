//! Benchmark: server-side rendering of the pages through a real `arbiter serve` (release, SQLite), timed
//! from a client on the same machine (request sent → last byte read, keep-alive, one at a time):
//! * the experiment page of a 50-stage pipeline (3 control + 3 treatment trials) and of a 24-cell warp
//!   gate (12 workloads × drive sync on/off, 6 metrics each), charts included;
//! * the history page with 100 000 stored experiments: first page, a deep page, and filtered views;
//! * the trends page over 1 000 000 stored trend points (a suite of 20 000 judged experiments × 50
//!   stages): the query of one stage's series (its newest 1 000 points) and its chart, and the store
//!   query alone, in process.
//!
//! Prints p50 / p95 / max per page in milliseconds.
//!
//!   scripts/bench-pages.sh [--requests 200] [--experiments 100000] [--trend-points 1000000] [--save DIR]
//!
//! `--save DIR` also writes the 50-stage page and its forest plots there, to look at.

use judge::pipeline::aggregate::TrialSpec;
use judge::pipeline::rows::StageRow;
use judge::pipeline::{judge, ArmSpec, PipelineConfig};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use store::experiments::{ArmRole, InsertArm, InsertExperiment};
use store::Store;

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

/// A deterministic spread in [-1, 1) (no RNG crate needed for a benchmark's data).
fn jitter(i: usize) -> f64 {
    ((i as f64 * 12.9898).sin() * 43758.5453).fract()
}

fn experiment(kind: judge::ExperimentKind, title: &str) -> InsertExperiment {
    let arm = |name: &str, role| InsertArm {
        name: name.into(),
        role,
        git_ref: Some(format!("refs/heads/{name}")),
        sha: Some("ab".repeat(20)),
        config_diff: None,
    };
    InsertExperiment {
        suite_id: None,
        kind,
        title: title.into(),
        base_ref: Some("main".into()),
        head_ref: Some("bench".into()),
        fingerprint: serde_json::json!({"bench": true}),
        plan: serde_json::json!({}),
        launched_by: None,
        arms: vec![
            arm("control", ArmRole::Control),
            arm(if kind == judge::ExperimentKind::Warp { "candidate" } else { "treatment" }, ArmRole::Treatment),
        ],
    }
}

async fn pipeline_50(store: &Store) -> i64 {
    let mut rows = Vec::new();
    let ids = ["c0", "c1", "c2", "t0", "t1", "t2"];
    for (k, id) in ids.iter().enumerate() {
        for s in 0..50 {
            let heavier = if id.starts_with('t') && s % 7 == 0 { 1.3 } else { 1.0 };
            let cpu = (1.0 + s as f64 * 0.1) * heavier * (1.0 + 0.02 * jitter(k * 50 + s));
            rows.push(
                serde_json::from_value::<StageRow>(serde_json::json!({
                    "execution_id": id, "stage_name": format!("stage{s:02}-Map → Scatter"), "status": "END",
                    "cpu_time_total": cpu, "elapsed": cpu * 0.6, "items": 1000.0, "bytes_processed": 1e6,
                    "mem_peak_bytes_max": 2e8 + s as f64 * 1e6,
                }))
                .unwrap(),
            );
        }
    }
    let t = |id: &str| TrialSpec { execution_ids: vec![id.into()], pair: None, position: None };
    let arms = [ArmSpec { name: "treatment".into(), trials: vec![t("t0"), t("t1"), t("t2")] }];
    let config = PipelineConfig { worker_ram: Some(512.0 * 1048576.0), ..PipelineConfig::default() };
    let report = judge(&rows, &[t("c0"), t("c1"), t("c2")], &arms, &config).unwrap();
    let id = store.insert_experiment(&experiment(judge::ExperimentKind::Pipeline, "bench: 50-stage pipeline")).await.unwrap();
    store.record_verdict(id, report.verdict, &report.reasons, &serde_json::to_value(&report).unwrap(), None).await.unwrap();
    id
}

async fn warp_24(store: &Store) -> i64 {
    let header = judge::warp::compare_csv::HEADER_25.join(",");
    let mut rows = Vec::new();
    for w in 0..12 {
        for sync in ["on", "off"] {
            let drop = if w % 5 == 0 { -12.0 } else { -2.0 + jitter(w) };
            let (b, n) = (1000.0 + w as f64 * 50.0, (1000.0 + w as f64 * 50.0) * (1.0 + drop / 100.0));
            let line = format!(
                "{w}KiB,warp,8,{n},{b},{drop:.2},9.0,8.0,12.50,{},{},{drop:.2},12.0,11.0,9.09,30.0,29.0,3.45,3,3,0,0,0.00,0.00,0.00",
                n * 4096.0,
                b * 4096.0
            );
            let label = format!("workload-{w:02}/sync-{sync}");
            rows.extend(
                judge::warp::compare_csv::parse_compare_csv("bench.csv", &format!("{header}\n{line}\n"), Some(&label), false).unwrap(),
            );
        }
    }
    let report = judge::warp::gate::gate(&rows, &judge::warp::gate::GateConfig::default());
    let id = store.insert_experiment(&experiment(judge::ExperimentKind::Warp, "bench: 24-cell warp")).await.unwrap();
    let json = serde_json::json!({"gate": report, "provenance": {"runner": "bench"}});
    store.record_verdict(id, report.verdict, &report.reasons(), &json, None).await.unwrap();
    id
}

/// `n` judged experiments with two arms each, in transactions of 2 000 rows; SHAs are random hex like
/// git's. Returns the treatment SHA of an old experiment (the 12 345th).
async fn history(url: &str, n: usize) -> String {
    let pool = sqlx::SqlitePool::connect(url).await.unwrap();
    let start = store::now_ms() - n as i64 * 60_000;
    for chunk in (0..n).collect::<Vec<_>>().chunks(2000) {
        let mut tx = pool.begin().await.unwrap();
        let mut sql =
            String::from("INSERT INTO experiments (kind, title, status, verdict, base_ref, head_ref, created_at, finished_at) VALUES ");
        for (j, i) in chunk.iter().enumerate() {
            let (kind, verdict) = if i % 3 == 0 {
                ("warp", ["PASS", "WARN", "FAIL"][i % 9 / 3])
            } else {
                ("pipeline", ["pass", "regression", "inconclusive", "tradeoff"][i % 4])
            };
            if j > 0 {
                sql.push(',');
            }
            let at = start + *i as i64 * 60_000;
            sql.push_str(&format!(
                "('{kind}', 'nightly {i} of branch-{}', 'judged', '{verdict}', 'main', 'branch-{}', {at}, {at})",
                i % 500,
                i % 500
            ));
        }
        sqlx::query(&sql).execute(&mut *tx).await.unwrap();
        tx.commit().await.unwrap();
    }
    let mut tx = pool.begin().await.unwrap();
    sqlx::query(
        "INSERT INTO arms (experiment_id, position, name, role, git_ref, sha) \
         SELECT id, 0, 'control', 'control', 'main', lower(hex(randomblob(20))) FROM experiments",
    )
    .execute(&mut *tx)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO arms (experiment_id, position, name, role, git_ref, sha) \
         SELECT id, 1, 'treatment', 'treatment', head_ref, lower(hex(randomblob(20))) FROM experiments WHERE NOT EXISTS (SELECT 1 FROM arms a WHERE a.experiment_id = experiments.id AND a.position = 1)",
    )
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    sqlx::query("ANALYZE").execute(&pool).await.unwrap();
    let sha = sqlx::query_scalar("SELECT sha FROM arms WHERE position = 1 ORDER BY experiment_id LIMIT 1 OFFSET 12344")
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    sha
}

/// `points` trend points of one suite: `points / 50` of the stored experiments, 50 stages each, one
/// fingerprint change half-way. Returns the suite's id.
async fn trend_points(url: &str, points: usize) -> i64 {
    let pool = sqlx::SqlitePool::connect(url).await.unwrap();
    let suite: i64 = sqlx::query_scalar(
        "INSERT INTO suites (name, kind, definition, source, created_at, updated_at) VALUES ('bench', 'pipeline', '{}', 'bench', 0, 0) RETURNING id",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    let experiments = (points / 50) as i64;
    sqlx::query("UPDATE experiments SET suite_id = $1 WHERE id IN (SELECT id FROM experiments ORDER BY id LIMIT $2)")
        .bind(suite)
        .bind(experiments)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query(
        "WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n < 49)          INSERT INTO trend_points (experiment_id, suite_id, fingerprint, metric, item, at, value)          SELECT e.id, e.suite_id, CASE WHEN e.id * 2 < $2 THEN '{\"workers\":2}' ELSE '{\"workers\":4}' END, 'cpu-s',                 printf('stage%02d', s.n), e.created_at, 1.0 + s.n * 0.1 + (e.id % 17) * 0.01          FROM experiments e, s WHERE e.suite_id = $1",
    )
    .bind(suite)
    .bind(experiments)
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query("ANALYZE").execute(&pool).await.unwrap();
    pool.close().await;
    suite
}

async fn time(client: &reqwest::Client, url: &str, requests: usize) -> (Vec<f64>, usize) {
    let mut size = 0;
    for _ in 0..10 {
        let r = client.get(url).send().await.unwrap();
        assert!(r.status().is_success(), "{url}: {}", r.status());
        size = r.bytes().await.unwrap().len();
    }
    let mut ms = Vec::with_capacity(requests);
    for _ in 0..requests {
        let t = Instant::now();
        let body = client.get(url).send().await.unwrap().bytes().await.unwrap();
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(body.len() / 1000, size / 1000, "{url}: the page changed size between requests");
    }
    ms.sort_by(f64::total_cmp);
    (ms, size)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bin = flag(&args, "--bin").unwrap_or_else(|| "target/release/arbiter".into());
    let requests: usize = flag(&args, "--requests").map(|v| v.parse().unwrap()).unwrap_or(200);
    let n: usize = flag(&args, "--experiments").map(|v| v.parse().unwrap()).unwrap_or(100_000);
    let points: usize = flag(&args, "--trend-points").map(|v| v.parse().unwrap()).unwrap_or(1_000_000);
    assert!(points / 50 <= n, "--trend-points needs at least points/50 experiments");
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/arbiter.db", dir.path().display());
    let store = Store::open(&url).await.unwrap();
    let uid = store.insert_user("bench", "!", store::people::Role::Viewer).await.unwrap();
    let secret = server::auth::token::generate();
    store.insert_api_token(uid, "bench", &server::auth::token::digest(&secret), store::people::Role::Viewer, None, None).await.unwrap();
    let t = Instant::now();
    let old_sha = history(&url, n).await;
    println!("stored {n} experiments in {:.1} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let suite = trend_points(&url, points).await;
    println!("stored {points} trend points in {:.1} s", t.elapsed().as_secs_f64());
    let query = store::trends::TrendQuery {
        suite_id: suite,
        metric: "cpu-s".into(),
        items: vec!["stage07".into()],
        since: None,
        until: None,
        limit: 1000,
    };
    let mut ms = Vec::with_capacity(requests);
    for _ in 0..requests {
        let t = Instant::now();
        let rows = store.trend(&query).await.unwrap();
        assert_eq!(rows.len(), 1000);
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    ms.sort_by(f64::total_cmp);
    println!(
        "trend store query (1 000 newest of one stage), in process: p50 {:.2} ms, p95 {:.2} ms",
        ms[ms.len() / 2],
        ms[ms.len() * 95 / 100]
    );
    let (p, w) = (pipeline_50(&store).await, warp_24(&store).await);
    store.close().await;

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(&bin)
        .args([
            "serve",
            "--addr",
            &format!("127.0.0.1:{port}"),
            "--finelog-url",
            "http://127.0.0.1:9",
            "--site-root",
            "target/site",
            "--data-dir",
        ])
        .arg(dir.path())
        .env("ARBITER_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start arbiter serve");
    let base = format!("http://127.0.0.1:{port}");
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {secret}").parse().unwrap());
    let client = reqwest::Client::builder().default_headers(headers).build().unwrap();
    for _ in 0..300 {
        if client.get(format!("{base}/healthz")).send().await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let deep = {
        let page: serde_json::Value =
            client.get(format!("{base}/api/v1/experiments?limit=500")).send().await.unwrap().json().await.unwrap();
        let next = &page["next"];
        format!("{}.{}", next["created_at"], next["id"])
    };
    let pages = [
        ("pipeline page, 50 stages", format!("/experiments/{p}")),
        ("warp page, 24 cells", format!("/experiments/{w}")),
        ("history, first page", "/experiments".to_string()),
        ("history, page after 500", format!("/experiments?before={deep}")),
        ("history, kind=warp&verdict=FAIL", "/experiments?kind=warp&verdict=FAIL".to_string()),
        ("history, q=branch-42", "/experiments?q=branch-42".to_string()),
        ("history, git=SHA prefix (old)", format!("/experiments?git={}", &old_sha[..12])),
        ("history, git=main (every one)", "/experiments?git=main".to_string()),
        ("trends, 1M points, one stage", "/trends?suite=bench&metric=cpu-s&item=stage07".to_string()),
        ("trends, 1M points, a date range", "/trends?suite=bench&metric=cpu-s&item=stage31&since=2000-01-01&until=2100-01-01".to_string()),
    ];
    if let Some(dir) = flag(&args, "--save") {
        for (name, path) in [
            ("pipeline-50.html", format!("/experiments/{p}")),
            ("pipeline-50-cpu-forest.svg", format!("/experiments/{p}/charts/cpu-forest.svg")),
            ("pipeline-50-elapsed-forest.svg", format!("/experiments/{p}/charts/elapsed-forest.svg")),
        ] {
            let body = client.get(format!("{base}{path}")).send().await.unwrap().text().await.unwrap();
            std::fs::write(std::path::Path::new(&dir).join(name), body).unwrap();
        }
    }
    println!("{requests} requests each, one at a time, after 10 warm-up requests (release server, SQLite)");
    println!("{:<34} {:>9} {:>9} {:>9} {:>10}", "page", "p50 ms", "p95 ms", "max ms", "HTML KiB");
    for (name, path) in pages {
        let (ms, size) = time(&client, &format!("{base}{path}"), requests).await;
        let q = |f: f64| ms[((ms.len() as f64 * f).ceil() as usize).saturating_sub(1).min(ms.len() - 1)];
        println!("{name:<34} {:>9.2} {:>9.2} {:>9.2} {:>10.1}", q(0.5), q(0.95), ms[ms.len() - 1], size as f64 / 1024.0);
    }
    let _ = child.kill();
    let _ = child.wait();
}
