//! The charts drawn from real reports: the judge on real `zephyr.stage` rows (three same-code controls
//! against a treatment doing ~30 % more map work) and the warp gate on real compare CSVs.
//! `CHARTS_OUT=dir cargo test -p charts` also writes the SVGs there, to look at.

use charts::{pipeline_cpu, pipeline_forest, pipeline_memory, pipeline_quadrant, warp_metric, ForestMetric, Scale, WarpChart};
use judge::pipeline::aggregate::TrialSpec;
use judge::pipeline::rows::parse_rows;
use judge::pipeline::{judge, ArmSpec, PipelineConfig, PipelineReport};
use judge::warp::compare_csv::parse_compare_csv;
use judge::warp::gate::{gate, GateConfig, GateReport};

fn keep(name: &str, svg: &str) {
    if let Ok(dir) = std::env::var("CHARTS_OUT") {
        std::fs::write(std::path::Path::new(&dir).join(name), svg).unwrap();
    }
}

fn pipeline() -> PipelineReport {
    let rows = parse_rows("rows.csv", include_str!("../../judge/tests/data/zephyr_stage_rows_subprocess_runner.csv")).unwrap();
    let t = |id: &str| TrialSpec { execution_ids: vec![id.into()], pair: None };
    let control = [t("20261129-072203-da99fe05"), t("20261129-072217-adb9e3d8"), t("20261129-072231-4eb27101")];
    let arms = [ArmSpec { name: "heavier-map".into(), trials: vec![t("20261129-072244-a8070574")] }];
    let config = PipelineConfig { worker_ram: Some(64.0 * 1024.0 * 1024.0), ..PipelineConfig::default() };
    judge(&rows, &control, &arms, &config).unwrap()
}

fn warp(file: &str, text: &str) -> GateReport {
    gate(&parse_compare_csv(file, text, Some("put-4KiB/sync-on"), false).unwrap(), &GateConfig::default())
}

#[test]
fn pipeline_cpu_shows_every_stage_and_marks_the_regression() {
    let report = pipeline();
    let svg = pipeline_cpu(&report, Scale::Linear).unwrap();
    keep("stage-cpu.svg", &svg);
    for s in &report.stages {
        assert!(svg.contains(&s.stage), "stage {} is labelled", s.stage);
    }
    assert!(svg.contains("✖ regression"), "the map stage's regression is marked in words");
    assert!(svg.contains("heavier-map: 1.44 CPU-s, +27.4 % against control"), "the tooltip states the change");
    assert!(svg.contains("margin ±2 %"), "the margin band is in the legend");
    assert!(svg.contains("CPU-seconds (mean over trials)"), "the axis says its unit");
    keep("stage-cpu-log.svg", &pipeline_cpu(&report, Scale::Log).unwrap());
}

#[test]
fn pipeline_memory_draws_the_worker_ram_line_and_the_quadrant_names_its_corners() {
    let report = pipeline();
    let svg = pipeline_memory(&report, Scale::Linear).unwrap();
    keep("stage-memory.svg", &svg);
    assert!(svg.contains("worker RAM 64.0 MiB"), "the limit line is labelled");
    let q = pipeline_quadrant(&report, Scale::Linear).unwrap();
    keep("cpu-vs-elapsed.svg", &q);
    for corner in ["cheaper, faster", "costlier, slower"] {
        assert!(q.contains(corner));
    }
    assert!(q.contains("stage1-Map → Scatter\nheavier-map: CPU +27.4 %"), "each point has a tooltip");
}

#[test]
fn warp_charts_mark_fail_and_warn_cells() {
    let fail = warp("compare_fail.csv", include_str!("../../judge/tests/data/warp/compare_fail.csv"));
    let svg = warp_metric(&fail, WarpChart::ObjPerS, Scale::Linear).unwrap();
    keep("obj-per-s.svg", &svg);
    assert!(svg.contains("✖ FAIL"), "{svg}");
    assert!(svg.contains("candidate: 880 obj/s, Δ -12.00% — ❌ FAIL"));
    let thr = warp_metric(&fail, WarpChart::Throughput, Scale::Linear).unwrap();
    assert!(thr.contains("baseline: 3.91 MiB/s"), "bytes/s shown in MiB/s");
    let warn = warp("compare_warn.csv", include_str!("../../judge/tests/data/warp/compare_warn.csv"));
    assert!(warp_metric(&warn, WarpChart::ObjPerS, Scale::Linear).unwrap().contains("▲ WARN"));
    let legacy = warp("compare_legacy12.csv", include_str!("../../judge/tests/data/warp/compare_legacy12.csv"));
    assert!(warp_metric(&legacy, WarpChart::P99Latency, Scale::Linear).is_err(), "a 12-column file has no p99 to draw");
}

/// Every `<text>` of an SVG, as drawn.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| t.split_once('>').and_then(|(_, rest)| rest.split_once("</text>")).map(|(x, _)| x.trim().to_string()))
        .collect()
}

#[test]
fn the_forest_plots_put_the_detected_change_first_and_say_what_each_stage_needs() {
    let report = pipeline();
    let svg = pipeline_forest(&report, ForestMetric::Cpu).unwrap();
    keep("cpu-forest.svg", &svg);
    let labels = texts(&svg);
    let first_stage = labels.iter().position(|t| report.stages.iter().any(|s| &s.stage == t)).unwrap();
    assert_eq!(labels[first_stage], "stage1-Map → Scatter", "the detected regression leads: {labels:?}");
    assert!(labels.iter().any(|t| t == "detected"), "its status is in words");
    let map = report.stages.iter().find(|s| s.stage == "stage1-Map → Scatter").unwrap().cpu_test.clone().unwrap();
    let (pct, level) = (judge::pipeline::report::fmt_pct(map.estimate_pct), judge::pipeline::report::fmt_level(map.alpha));
    assert!(svg.contains(&format!("stage1-Map → Scatter · heavier-map: {pct} ({level} interval")), "the tooltip states the interval");
    for s in report.stages.iter().filter(|s| s.cpu_below_floor) {
        assert!(svg.contains(&format!("{} · heavier-map: below the 0.05 CPU-s floor", s.stage)), "{} says it is under the floor", s.stage);
    }
    let elapsed = pipeline_forest(&report, ForestMetric::Elapsed).unwrap();
    keep("elapsed-forest.svg", &elapsed);
    for chart in [&svg, &elapsed] {
        for t in texts(chart) {
            assert!(t.chars().filter(char::is_ascii_digit).count() <= 8, "a label nobody can read: {t:?}");
        }
    }
}
