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
    let t = |id: &str| TrialSpec { execution_ids: vec![id.into()], pair: None, position: None };
    let control = [t("20261129-072203-da99fe05"), t("20261129-072217-adb9e3d8"), t("20261129-072231-4eb27101")];
    let arms = [ArmSpec { name: "heavier-map".into(), trials: vec![t("20261129-072244-a8070574")] }];
    // One treatment trial measures no spread of its own, and method 3 borrows none: the charts of a decided
    // regression need a noise profile. This file has no other same-code trials, so the three controls
    // stand in for a calibration (in a real suite, calibration trials are runs of their own).
    let noise = judge::pipeline::calibrate(&rows, &control, None).unwrap();
    let config = PipelineConfig { worker_ram: Some(64.0 * 1024.0 * 1024.0), noise: Some(noise), ..PipelineConfig::default() };
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
    assert!(svg.contains("heavier-map: 1.44 CPU-s, +27.5 % against control"), "the tooltip states the change (the estimate)");
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
    for tick in ["\n50 MiB\n", "\n100 MiB\n", "\n150 MiB\n"] {
        assert!(svg.contains(tick), "the axis ticks fall on round MiB: {tick:?}");
    }
    let q = pipeline_quadrant(&report, Scale::Linear).unwrap();
    keep("cpu-vs-elapsed.svg", &q);
    for corner in ["cheaper, faster", "costlier, slower"] {
        assert!(q.contains(corner));
    }
    assert!(q.contains("stage1-Map → Scatter\nheavier-map: CPU +27.5 %"), "each point has a tooltip");
}

#[test]
fn warp_charts_mark_fail_and_warn_cells() {
    let fail = warp("compare_fail.csv", include_str!("../../judge/tests/data/warp/compare_fail.csv"));
    let svg = warp_metric(&fail, WarpChart::ObjPerS, Scale::Linear).unwrap();
    keep("obj-per-s.svg", &svg);
    assert!(svg.contains("✖ FAIL"), "{svg}");
    assert!(svg.contains("candidate: 880 obj/s (median), Δ -12.00% — ❌ FAIL"));
    assert!(!svg.contains("<circle"), "an imported CSV has no rounds to draw");
    let thr = warp_metric(&fail, WarpChart::Throughput, Scale::Linear).unwrap();
    assert!(thr.contains("baseline: 3.91 MiB/s"), "bytes/s shown in MiB/s");
    let warn = warp("compare_warn.csv", include_str!("../../judge/tests/data/warp/compare_warn.csv"));
    assert!(warp_metric(&warn, WarpChart::ObjPerS, Scale::Linear).unwrap().contains("▲ WARN"));
    let legacy = warp("compare_legacy12.csv", include_str!("../../judge/tests/data/warp/compare_legacy12.csv"));
    assert!(warp_metric(&legacy, WarpChart::P99Latency, Scale::Linear).is_err(), "a 12-column file has no p99 to draw");
}

#[test]
fn warp_matrix_charts_draw_each_round_as_a_dot_and_say_the_drift() {
    use judge::warp::matrix::{judge_matrix, Cell};
    use judge::warp::rounds::Round;
    let phase = |reqps: &[f64]| -> Vec<Round> {
        reqps
            .iter()
            .map(|&r| Round {
                ok: true,
                reqps: Some(r),
                throughput_bps: Some(r * 4096.0),
                latency_ms: Some(1.0),
                p90_ms: Some(2.0),
                p99_ms: Some(3.0),
            })
            .collect()
    };
    // ABBA: A1 B1 B2 A2, three rounds each; A2 sits 3 % below A1.
    let cell = Cell {
        label: "get-4KiB/sync-on".into(),
        size: "4KiB".into(),
        concurrency: 8,
        baseline: vec![phase(&[1000.0, 1010.0, 990.0]), phase(&[970.0, 980.0, 960.0])],
        candidate: vec![phase(&[700.0, 710.0, 690.0]), phase(&[705.0, 695.0, 700.0])],
        legs: ["A1", "A2", "B1", "B2"].map(String::from).to_vec(),
        note: None,
    };
    let report = judge_matrix(&[cell], &GateConfig::default());
    let svg = warp_metric(&report, WarpChart::ObjPerS, Scale::Linear).unwrap();
    keep("obj-per-s-rounds.svg", &svg);
    assert_eq!(svg.matches("<circle").count(), 12, "one dot per round of each of the four phases");
    assert!(svg.contains("rounds A1: 1000, 1010, 990 · A2: 970, 980, 960"), "{svg}");
    assert!(svg.contains("baseline drift between its phases: 3.0 %"), "{svg}");
    assert!(svg.contains("rounds B1: 700, 710, 690 · B2: 705, 695, 700"), "{svg}");
    assert!(svg.contains("dots: rounds"), "the axis says what a dot is");
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

/// Every `<text>` with its anchor point and alignment: (x, y, anchor, text).
fn placed_texts(svg: &str) -> Vec<(f64, f64, String, String)> {
    let attr = |tag: &str, name: &str| {
        tag.split_once(&format!(" {name}=\"")).and_then(|(_, rest)| rest.split_once('"')).map(|(v, _)| v.to_string())
    };
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let (tag, rest) = t.split_once('>')?;
            let text = rest.split_once("</text>")?.0.trim().to_string();
            let x = attr(tag, "x")?.parse().ok()?;
            let y = attr(tag, "y")?.parse().ok()?;
            Some((x, y, attr(tag, "text-anchor").unwrap_or_else(|| "start".into()), text))
        })
        .collect()
}

#[test]
fn the_quadrant_keeps_crowded_labels_apart_numbering_what_does_not_fit() {
    // Twelve stages within a few percent of the origin, as a same-code comparison gives.
    let mut report = pipeline();
    let template = report.treatments[0].stages[0].clone();
    report.treatments[0].stages = (0..12)
        .map(|i| {
            let mut s = template.clone();
            s.stage = format!("stage{i}-Map → Reduce");
            s.cpu_below_floor = false;
            s.elapsed_below_floor = false;
            s.treatment_failures = 0;
            s.cpu_change_pct = (i as f64 - 6.0) * 0.3;
            s.elapsed_change_pct = ((i * 7) % 12) as f64 * 0.25 - 1.5;
            s
        })
        .collect();
    let svg = pipeline_quadrant(&report, Scale::Linear).unwrap();
    keep("cpu-vs-elapsed-crowded.svg", &svg);
    // Stage labels and key numbers drawn in the plot (13 px): no two boxes overlap.
    let boxes: Vec<[f64; 4]> = placed_texts(&svg)
        .into_iter()
        .filter(|(.., t)| t.starts_with("stage") || (!t.starts_with('+') && t.parse::<usize>().is_ok_and(|n| n > 0)))
        .map(|(x, y, anchor, t)| {
            let w = t.chars().count() as f64 * 6.0;
            let x0 = match anchor.as_str() {
                "end" => x - w,
                "middle" => x - w / 2.0,
                _ => x,
            };
            [x0, y - 6.0, x0 + w, y + 6.0]
        })
        .collect();
    assert!(boxes.len() >= 12, "every stage has a label or a number: {}", boxes.len());
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            assert!(!(a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]), "labels overlap: {a:?} {b:?}");
        }
    }
    let numbered: Vec<String> = placed_texts(&svg)
        .into_iter()
        .map(|(.., t)| t)
        .filter(|t| !t.starts_with('+') && t.parse::<usize>().is_ok_and(|n| n > 0))
        .collect();
    let keyed = texts(&svg).into_iter().filter(|t| t.contains(" · heavier-map")).collect::<Vec<_>>();
    assert_eq!(numbered.len(), keyed.len(), "each number drawn is explained in the key: {numbered:?} {keyed:?}");
}

#[test]
fn the_quadrant_scales_to_measured_stages_and_counts_the_rest() {
    let mut report = pipeline();
    // A stage under both floors with an absurd change, and a failed one: neither sets the axis.
    let stages = &mut report.treatments[0].stages;
    for s in stages.iter_mut() {
        s.cpu_below_floor = false;
        s.elapsed_below_floor = false;
    }
    let mut measured = stages[0].clone();
    measured.stage = "stage9-Measured".into();
    stages.push(measured);
    stages[0].cpu_below_floor = true;
    stages[0].elapsed_below_floor = true;
    stages[0].cpu_change_pct = 5.0e44;
    stages[1].treatment_failures = 1;
    stages[1].trials[1] = 0;
    stages[1].cpu_change_pct = -100.0;
    let svg = pipeline_quadrant(&report, Scale::Linear).unwrap();
    for t in texts(&svg) {
        assert!(t.chars().filter(char::is_ascii_digit).count() <= 8, "a label nobody can read: {t:?}");
    }
    assert!(svg.contains("2 stages are not drawn: under both floors or failed in the treatment"), "{:?}", texts(&svg));
    assert!(svg.contains("stage9-Measured"), "the measured stage is drawn and named");
}
