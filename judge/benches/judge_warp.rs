//! Benchmark: judging a 24-cell warp matrix (6 workloads × sync on/off × baseline/candidate) with 5
//! rounds per cell and phase, from rounds to gate verdict. Prints the figures.
//! Run: cargo bench -p judge --bench judge_warp

use judge::warp::gate::GateConfig;
use judge::warp::matrix::{judge_matrix, Cell};
use judge::warp::rounds::Round;
use std::time::Instant;

fn rounds(base: f64, k: u32) -> Vec<Round> {
    (0..5)
        .map(|i| {
            let r = base * (1.0 + ((i * 7 + k) % 5) as f64 / 100.0);
            Round {
                ok: true,
                reqps: Some(r),
                throughput_bps: Some(r * 4096.0),
                latency_ms: Some(8000.0 / r),
                p90_ms: Some(12000.0 / r),
                p99_ms: Some(30000.0 / r),
            }
        })
        .collect()
}

fn main() {
    let workloads = ["put-4KiB", "put-4MiB", "get-4KiB", "get-4MiB", "get-10MiB", "mixed-256KiB"];
    let mut cells = Vec::new();
    for (w, name) in workloads.iter().enumerate() {
        for sync in ["sync-on", "sync-off"] {
            let base = 100.0 * (w + 1) as f64;
            cells.push(Cell {
                label: format!("{name}/{sync}"),
                size: name.split('-').nth(1).unwrap().to_string(),
                concurrency: 8,
                baseline: vec![rounds(base, w as u32)],
                candidate: vec![rounds(base * 0.97, w as u32 + 1)],
                legs: vec![],
                note: None,
            });
        }
    }
    let config = GateConfig::default();
    for _ in 0..50 {
        std::hint::black_box(judge_matrix(&cells, &config));
    }
    let mut times = Vec::new();
    for _ in 0..1000 {
        let start = Instant::now();
        std::hint::black_box(judge_matrix(&cells, &config));
        times.push(start.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "judge_warp: 24 cells (12 cells x baseline/candidate), 5 rounds each: median {:.1} us, p95 {:.1} us",
        times[times.len() / 2],
        times[times.len() * 95 / 100]
    );
}
