//! Benchmark: judging 100 stages × 10 trials × 2 arms (target ≤ 1 ms). Prints the figures.
//! Run: cargo bench -p judge --bench judge_pipeline

use judge::pipeline::aggregate::TrialSpec;
use judge::pipeline::rows::StageRow;
use judge::pipeline::{judge, ArmSpec, PipelineConfig};
use std::time::Instant;

fn rows() -> (Vec<StageRow>, Vec<TrialSpec>, Vec<TrialSpec>) {
    let mut rows = Vec::new();
    let mut arm = |offset: u32, factor: f64| -> Vec<TrialSpec> {
        (0..10u32)
            .map(|t| {
                let id = format!("20261129-0000{:02}-{:08x}", t, offset + t);
                for s in 0..100u32 {
                    let jitter = 1.0 + (((s * 7 + t * 13) % 11) as f64 - 5.0) / 200.0;
                    let cpu = (1.0 + s as f64 / 10.0) * factor * jitter;
                    rows.push(StageRow::new(&id, &format!("stage{s}-Map → Scatter"), "END", cpu, 5.0 * jitter, 1e5, 1.8e7, 1.8e8));
                }
                TrialSpec { execution_ids: vec![id], pair: None, position: None }
            })
            .collect()
    };
    let control = arm(0xa000_0000, 1.0);
    let treatment = arm(0xb000_0000, 1.03);
    (rows, control, treatment)
}

fn main() {
    let (rows, control, treatment) = rows();
    let arms = [ArmSpec { name: "treatment".into(), trials: treatment }];
    let config = PipelineConfig::default();
    for _ in 0..20 {
        judge(&rows, &control, &arms, &config).unwrap();
    }
    let mut times = Vec::new();
    for _ in 0..200 {
        let start = Instant::now();
        let report = judge(&rows, &control, &arms, &config).unwrap();
        times.push(start.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(report);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "judge_pipeline: 100 stages x 10 trials x 2 arms ({} rows): median {:.3} ms, p95 {:.3} ms, min {:.3} ms (target <= 1 ms)",
        rows.len(),
        times[times.len() / 2],
        times[times.len() * 95 / 100],
        times[0]
    );
}
