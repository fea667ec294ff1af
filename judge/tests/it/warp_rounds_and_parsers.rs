//! Rounds → medians → baseline_compare.csv exactly as the upstream driver writes them; warp output
//! parsers on real and simulated layouts; the matrix judge with AB and ABBA phases.

use judge::warp::gate::{GateConfig, RowVerdict};
use judge::warp::matrix::{judge_matrix, Cell};
use judge::warp::rounds::{median, parse_median_summary, write_compare_csv, write_median_summary, PhaseSummary, Round};
use judge::warp::warp_output::{parse_warp_json, parse_warp_text};
use judge::Verdict;

fn data(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/warp/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The driver's round_results.csv → rounds.
fn round_results(name: &str) -> Vec<Round> {
    let text = data(name);
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let num = |n: &str| f[col(n)].parse::<f64>().ok();
            Round {
                ok: f[col("status")] == "ok",
                reqps: num("reqps"),
                throughput_bps: num("throughput_bps"),
                latency_ms: num("latency_ms"),
                p90_ms: num("req_p90_ms"),
                p99_ms: num("req_p99_ms"),
            }
        })
        .collect()
}

#[test]
fn medians_match_the_upstream_driver_to_the_character() {
    for (rounds, summary) in [
        ("driver_base_round_results.csv", "driver_base_median_summary.csv"),
        ("driver_cand_round_results.csv", "driver_cand_median_summary.csv"),
    ] {
        let phase = PhaseSummary::from_rounds("4KiB", "warp", 8, &round_results(rounds));
        assert_eq!(write_median_summary(&[phase]), data(summary), "{summary}");
    }
}

#[test]
fn warp_compare_matches_the_upstream_driver_to_the_character() {
    let base = parse_median_summary("base", &data("driver_base_median_summary.csv")).unwrap();
    let cand = parse_median_summary("cand", &data("driver_cand_median_summary.csv")).unwrap();
    assert_eq!(write_compare_csv(&base, &cand), data("driver_cand_baseline_compare.csv"));
    // No baseline for the size: N/A, as in upstream's missing-baseline case.
    let other = PhaseSummary { size: "10MiB".into(), ..cand[0].clone() };
    let text = write_compare_csv(&base, &[other]);
    assert!(text.lines().nth(1).unwrap().contains(",N/A,N/A,"), "{text}");
}

#[test]
fn medians_of_even_counts_take_the_middle_mean() {
    assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
    assert_eq!(median(&[]), None);
    let rounds = [true, false, true].map(|ok| Round {
        ok,
        reqps: Some(if ok { 100.0 } else { 1.0 }),
        throughput_bps: None,
        latency_ms: None,
        p90_ms: None,
        p99_ms: None,
    });
    let p = PhaseSummary::from_rounds("4KiB", "warp", 8, &rounds);
    assert_eq!((p.ok_rounds, p.failed_rounds, p.reqps), (2, 1, Some(100.0)), "failed rounds never enter the median");
    assert!((p.error_rate_pct() - 33.333).abs() < 0.001);
    assert!(parse_median_summary("m.csv", "size,tool\n").unwrap_err().contains("m.csv, line 1"));
}

#[test]
fn warp_1_1_mixed_report_gives_every_operation() {
    let ops = parse_warp_text(&data("simulated_warp_ge_1_1_mixed_report.log")).unwrap();
    assert_eq!(ops.iter().map(|o| o.op.as_str()).collect::<Vec<_>>(), ["DELETE", "GET"], "Total is left out");
    let get = &ops[1];
    assert_eq!(get.reqps, 275.0);
    assert_eq!(get.throughput_bps, Some(68.75 * 1048576.0));
    assert_eq!(
        (get.latency_avg_ms, get.latency_p50_ms, get.latency_p90_ms, get.latency_p99_ms),
        (Some(9.0), Some(8.1), Some(14.0), Some(30.5))
    );
    assert_eq!((ops[0].reqps, ops[0].throughput_bps, ops[0].latency_p99_ms), (61.12, None, Some(11.2)));
}

#[test]
fn warp_1_0_layout_has_no_latency_and_never_reads_one_from_the_split_section() {
    let ops = parse_warp_text(&data("simulated_warp_1_0_0_put_report.log")).unwrap();
    assert_eq!(ops.len(), 1);
    assert_eq!((ops[0].op.as_str(), ops[0].reqps), ("PUT", 1000.52));
    assert_eq!(ops[0].latency_avg_ms, None, "not the \"1s\" of \"split into 11 x 1s\"");
    assert_eq!(ops[0].latency_p99_ms, None);
}

#[test]
fn upstream_fixture_and_round_logs() {
    let ops = parse_warp_text(&data("warp_report_fixture.log")).unwrap();
    assert_eq!(ops.len(), 1, "the realtime status line is not a block");
    assert_eq!((ops[0].op.as_str(), ops[0].reqps, ops[0].latency_p99_ms), ("GET", 20925.58, Some(24.1)));
    let ops = parse_warp_text(&data("fake_warp_round_log.log")).unwrap();
    assert_eq!((ops[0].op.as_str(), ops[0].reqps, ops[0].latency_avg_ms, ops[0].latency_p90_ms), ("PUT", 1000.0, Some(8.0), Some(12.0)));
    let err = parse_warp_text("warp: connection refused\n").unwrap_err();
    assert!(err.contains("unknown warp output"), "{err}");
}

#[test]
fn warp_json_aggregate() {
    let ops = parse_warp_json(&data("warp_realtime_json_shape_ILLUSTRATIVE.json")).unwrap();
    assert_eq!(ops.len(), 1);
    let put = &ops[0];
    assert_eq!(put.op, "PUT");
    assert!((put.reqps - 29300.0 / 29.5).abs() < 1e-9);
    assert_eq!(put.throughput_bps, Some(120_000_000.0 / 29.5));
    assert_eq!((put.latency_avg_ms, put.latency_p90_ms, put.latency_p99_ms), (Some(8.0), Some(12.0), Some(30.0)));
    assert_eq!(put.errors, Some(0));
    assert!(parse_warp_json("{}").unwrap_err().contains("by_op_type"));
    assert!(parse_warp_json("nope").unwrap_err().contains("not warp JSON"));
}

fn rounds(reqps: &[f64]) -> Vec<Round> {
    reqps
        .iter()
        .map(|&r| Round {
            ok: true,
            reqps: Some(r),
            throughput_bps: Some(r * 4096.0),
            latency_ms: Some(8000.0 / r),
            p90_ms: Some(12000.0 / r),
            p99_ms: Some(30000.0 / r),
        })
        .collect()
}

fn cell(label: &str, baseline: Vec<Vec<Round>>, candidate: Vec<Vec<Round>>) -> Cell {
    Cell { label: label.into(), size: "4KiB".into(), concurrency: 8, baseline, candidate, legs: vec![], note: None }
}

#[test]
fn matrix_ab_catches_a_real_regression_and_labels_cells() {
    let slow = cell("put-4KiB/sync-on", vec![rounds(&[1000.0, 1030.0, 980.0])], vec![rounds(&[880.0, 870.0, 890.0])]);
    let same = cell("put-4KiB/sync-off", vec![rounds(&[1000.0, 1010.0, 990.0])], vec![rounds(&[1005.0, 995.0, 1000.0])]);
    let report = judge_matrix(&[slow, same], &GateConfig::default());
    assert_eq!(report.verdict, Verdict::WarpFail);
    let reqps: Vec<_> =
        report.rows.iter().filter(|r| r.metric == "reqps").map(|r| (r.workload.as_str(), r.delta.as_str(), r.verdict)).collect();
    assert_eq!(reqps, [("put-4KiB/sync-on", "-12.00%", RowVerdict::Fail), ("put-4KiB/sync-off", "0.00%", RowVerdict::Pass)]);
}

#[test]
fn matrix_abba_averages_phases_and_flags_drift() {
    // A1 and A2 agree: the means are compared.
    let stable = cell("get-4KiB/sync-on", vec![rounds(&[1000.0]), rounds(&[1020.0])], vec![rounds(&[1000.0]), rounds(&[1030.0])]);
    let report = judge_matrix(&[stable], &GateConfig::default());
    assert_eq!(report.verdict, Verdict::WarpPass);
    assert_eq!(report.rows[0].delta, "0.50%", "mean(B1,B2)=1015 vs mean(A1,A2)=1010");
    // A2 is 8 % below A1: beyond the 5 % warn budget.
    let drift = cell("get-4KiB/sync-off", vec![rounds(&[1000.0]), rounds(&[920.0])], vec![rounds(&[960.0]), rounds(&[960.0])]);
    let report = judge_matrix(&[drift], &GateConfig::default());
    assert_eq!(report.verdict, Verdict::WarpInconclusive);
    assert_eq!(report.drifted, ["get-4KiB/sync-off"]);
    assert_eq!(report.verdict.exit_code().code(), 3);
    // The page's evidence: each phase's rounds under its ABBA name, and the drift in percent.
    let c = &report.cells[0];
    let legs: Vec<(&str, bool)> = c.phases.iter().map(|p| (p.leg.as_str(), p.baseline)).collect();
    assert_eq!(legs, [("A1", true), ("A2", true), ("B1", false), ("B2", false)]);
    assert_eq!(c.values("reqps", true), [("A1".to_string(), vec![1000.0]), ("A2".to_string(), vec![920.0])]);
    assert!((c.drift_pct.unwrap() - 8.0).abs() < 1e-9, "{:?}", c.drift_pct);
}

#[test]
fn matrix_cells_carry_their_rounds_and_the_suites_note() {
    let mut failed = rounds(&[900.0, 950.0]);
    failed[1].ok = false;
    let mut c = cell("get-4KiB/sync-on", vec![rounds(&[1000.0, 1010.0])], vec![failed]);
    c.note = Some("delayed ACKs".into());
    let report = judge_matrix(&[c], &GateConfig::default());
    let cell = &report.cells[0];
    assert_eq!((cell.label.as_str(), cell.note.as_deref(), cell.drift_pct), ("get-4KiB/sync-on", Some("delayed ACKs"), None));
    assert_eq!(cell.values("reqps", false), [("B".to_string(), vec![900.0])], "a failed round is not a dot");
    assert_eq!(cell.values("p99-latency", true)[0].1.len(), 2);
    // Stored and read back: an imported CSV's report (no cells) still reads.
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(serde_json::from_value::<judge::warp::gate::GateReport>(json).unwrap(), report);
    let mut bare = serde_json::to_value(&report).unwrap();
    bare.as_object_mut().unwrap().remove("cells");
    assert!(serde_json::from_value::<judge::warp::gate::GateReport>(bare).unwrap().cells.is_empty());
}

#[test]
fn matrix_phase_without_successful_rounds_is_missing() {
    let mut failed = rounds(&[900.0]);
    failed[0].ok = false;
    let report = judge_matrix(&[cell("put-4MiB/sync-on", vec![rounds(&[100.0])], vec![failed])], &GateConfig::default());
    assert_eq!(report.verdict, Verdict::WarpFail);
    assert!(report.rows.iter().any(|r| r.metric == "reqps" && r.verdict == RowVerdict::Missing));
    assert!(report.rows.iter().any(|r| r.metric == "error-rate" && r.verdict == RowVerdict::Fail && r.delta == "100.00pp"));
}

#[test]
fn round_results_summarise_to_the_drivers_own_median_summaries() {
    use judge::warp::rounds::{parse_median_summary, parse_round_results};
    for (rounds, medians) in [
        (include_str!("../data/warp/driver_base_round_results.csv"), include_str!("../data/warp/driver_base_median_summary.csv")),
        (include_str!("../data/warp/driver_cand_round_results.csv"), include_str!("../data/warp/driver_cand_median_summary.csv")),
    ] {
        let ours = parse_round_results("round_results.csv", rounds).unwrap();
        let theirs = parse_median_summary("median_summary.csv", medians).unwrap();
        assert_eq!(ours, theirs);
    }
    assert!(parse_round_results("x.csv", "a,b\n1,2\n").unwrap_err().contains("no size column"));
}
