//! Every boundary of the warp gate: strict comparisons at the budgets, directions, points for the error
//! rate, zero baselines, failed phases, several files, exemptions, ABBA drift, and malformed input.

use judge::warp::compare_csv::{parse_compare_csv, HEADER_12, HEADER_25};
use judge::warp::gate::{baseline_drift_pct, gate, GateConfig, GateReport, RowVerdict};
use judge::Verdict;

/// A 12-column row with the given deltas for reqps, latency, throughput (medians 100 → 100+Δ).
fn row12(label: &str, reqps: &str, latency: &str, throughput: &str) -> String {
    format!("{label},warp,8,100,100,{reqps},1,1,{latency},100,100,{throughput}")
}

fn gate12(rows: &[String], config: &GateConfig) -> GateReport {
    let text = format!("{}\n{}\n", HEADER_12.join(","), rows.join("\n"));
    gate(&parse_compare_csv("t.csv", &text, None, false).unwrap(), config)
}

fn verdicts(r: &GateReport) -> Vec<RowVerdict> {
    r.rows.iter().map(|r| r.verdict).collect()
}

#[test]
fn budgets_are_strict_comparisons() {
    use RowVerdict::*;
    let c = GateConfig::default();
    assert_eq!(verdicts(&gate12(&[row12("4KiB", "-10.00", "10.00", "-5.00")], &c)), [Warn, Warn, Pass]);
    assert_eq!(verdicts(&gate12(&[row12("4KiB", "-10.01", "10.01", "-5.01")], &c)), [Fail, Fail, Warn]);
    assert_eq!(verdicts(&gate12(&[row12("4KiB", "-4.99", "5.00", "0.00")], &c)), [Pass, Pass, Pass]);
}

#[test]
fn directions_and_improvements() {
    use RowVerdict::*;
    let c = GateConfig::default();
    // Faster and higher throughput never fail, however large.
    assert_eq!(verdicts(&gate12(&[row12("4KiB", "+80.00", "-60.00", "95.00")], &c)), [Pass, Pass, Pass]);
    // Lower reqps/throughput and higher latency are regressions.
    let r = gate12(&[row12("4KiB", "-20.00", "+20.00", "-20.00")], &c);
    assert_eq!(verdicts(&r), [Fail, Fail, Fail]);
    assert_eq!(r.rows[0].regress, Some(20.0));
    assert_eq!(r.verdict, Verdict::WarpFail);
    assert_eq!(r.verdict.exit_code().code(), 1);
}

#[test]
fn custom_budgets() {
    let c = GateConfig { fail_pct: 20.0, warn_pct: 2.5, ..Default::default() };
    assert_eq!(verdicts(&gate12(&[row12("x", "-2.50", "2.51", "-19.99")], &c)), [RowVerdict::Pass, RowVerdict::Warn, RowVerdict::Warn]);
}

#[test]
fn the_worst_row_of_several_files_decides() {
    let c = GateConfig::default();
    let pass = gate12(&[row12("a", "1.00", "0.00", "1.00")], &c);
    assert_eq!(pass.verdict, Verdict::WarpPass);
    let warn = gate12(&[row12("a", "1.00", "0.00", "1.00"), row12("b", "-6.00", "0.00", "0.00")], &c);
    assert_eq!(warn.verdict, Verdict::WarpWarn);
    assert_eq!(warn.verdict.exit_code().code(), 0);
    let fail = gate12(&[row12("a", "-6.00", "0.00", "0.00"), row12("b", "0.00", "11.00", "0.00")], &c);
    assert_eq!(fail.verdict, Verdict::WarpFail);
}

#[test]
fn labels_name_cells_by_workload_and_sync() {
    let text = format!("{}\n{}\n", HEADER_12.join(","), row12("4KiB", "0.00", "0.00", "0.00"));
    let rows = parse_compare_csv("put.csv", &text, Some("put-4KiB/sync-on"), false).unwrap();
    assert_eq!(rows[0].label, "put-4KiB/sync-on");
    let unlabelled = parse_compare_csv("put.csv", &text, None, false).unwrap();
    assert_eq!(unlabelled[0].label, "4KiB/warp@8");
}

#[test]
fn zero_baselines_and_failed_phases_are_missing() {
    let zero = format!("{}\n4KiB,warp,8,100,0,0.00,1,1,0.00,100,100,0.00\n", HEADER_12.join(","));
    let r = gate(&parse_compare_csv("z.csv", &zero, None, false).unwrap(), &GateConfig::default());
    assert_eq!(r.rows[0].verdict, RowVerdict::Missing);
    assert_eq!(r.rows[0].missing_reason.as_deref(), Some("the baseline is zero"));
    assert_eq!(r.verdict, Verdict::WarpFail);
    // A candidate phase with no successful round (new_ok_rounds = 0).
    let dead =
        format!("{}\n4KiB,warp,8,100,100,0.00,1,1,0.00,100,100,0.00,2,2,0.00,3,3,0.00,0,3,3,0,100.00,0.00,100.00\n", HEADER_25.join(","));
    let r = gate(&parse_compare_csv("d.csv", &dead, None, false).unwrap(), &GateConfig::default());
    let by_metric = |m: &str| r.rows.iter().find(|x| x.metric == m).unwrap().verdict;
    assert_eq!(by_metric("reqps"), RowVerdict::Missing);
    assert_eq!(by_metric("error-rate"), RowVerdict::Fail, "100 points more failed rounds");
}

#[test]
fn abba_drift_makes_the_result_inconclusive() {
    assert!((baseline_drift_pct(100.0, 94.0).unwrap() - 6.0).abs() < 1e-9);
    assert!((baseline_drift_pct(100.0, 104.0).unwrap() - 4.0).abs() < 1e-9);
    assert_eq!(baseline_drift_pct(0.0, 5.0), None);
    let r = gate12(&[row12("a", "0.00", "0.00", "0.00")], &GateConfig::default()).with_baseline_drift(vec!["put-4KiB/sync-on".into()]);
    assert_eq!(r.verdict, Verdict::WarpInconclusive);
    assert_eq!(r.verdict.exit_code().code(), 3);
    let kept = gate12(&[row12("a", "0.00", "0.00", "0.00")], &GateConfig::default()).with_baseline_drift(vec![]);
    assert_eq!(kept.verdict, Verdict::WarpPass);
}

#[test]
fn malformed_files_name_file_and_line() {
    let h12 = HEADER_12.join(",");
    let e = parse_compare_csv("short.csv", &format!("{h12}\n4KiB,warp,8,1\n"), None, false).unwrap_err();
    assert_eq!(e.to_string(), "short.csv, line 2: 4 columns where the header has 12");
    let e = parse_compare_csv("empty.csv", "", None, false).unwrap_err();
    assert_eq!(e.to_string(), "empty.csv: the file is empty; expected a baseline_compare.csv");
    let e = parse_compare_csv("odd.csv", "a,b,c\n1,2,3\n", None, false).unwrap_err();
    assert!(e.to_string().starts_with("odd.csv, line 1: header matches neither"), "{e}");
    let e = parse_compare_csv("legacy.csv", &format!("{h12}\n{}\n", row12("4KiB", "0", "0", "0")), None, true).unwrap_err();
    assert!(e.to_string().contains("strict mode requires"), "{e}");
    // A value that is neither a number nor N/A is bad input, named by line and column.
    let e = parse_compare_csv("bad.csv", &format!("{h12}\n{}\n", row12("a", "abc", "0.00", "0.00")), None, false).unwrap_err();
    assert_eq!(e.to_string(), "bad.csv, line 2: column delta_reqps_pct: \"abc\" is not a number (or N/A)");
    // N/A is upstream's word for a missing value: MISSING, never a silent pass.
    let r = gate12(&[row12("a", "N/A", "0.00", "0.00")], &GateConfig::default());
    assert_eq!(r.rows[0].verdict, RowVerdict::Missing);
}

#[test]
fn tail_latencies_may_have_budgets_of_their_own() {
    use RowVerdict::*;
    // reqps −3 %, p90 +20 %, p99 +40 % (3 ok rounds in each phase, no errors).
    let text =
        format!("{}\n4MiB,warp,8,97,100,-3.00,1,1,0.00,100,100,0.00,2.4,2,20.00,4.2,3,40.00,3,3,0,0,0.00,0.00,0.00\n", HEADER_25.join(","));
    let rows = parse_compare_csv("t.csv", &text, None, false).unwrap();
    let same = gate(&rows, &GateConfig::default());
    assert_eq!(verdicts(&same), [Pass, Pass, Pass, Fail, Fail, Pass], "unset: the main budgets");
    let tails = GateConfig { tail_fail_pct: Some(30.0), tail_warn_pct: Some(15.0), ..Default::default() };
    let r = gate(&rows, &tails);
    assert_eq!(verdicts(&r), [Pass, Pass, Pass, Warn, Fail, Pass]);
    let wide = GateConfig { tail_fail_pct: Some(50.0), tail_warn_pct: Some(25.0), ..Default::default() };
    assert_eq!(gate(&rows, &wide).verdict, Verdict::WarpWarn, "p99 +40 % warns under a 50/25 tail budget");
}

#[test]
fn reasons_are_one_line_per_cell_worst_first() {
    use judge::warp::compare_csv::parse_compare_csv;
    use judge::warp::gate::{gate, GateConfig};
    let mut rows = parse_compare_csv("warn.csv", include_str!("../data/warp/compare_warn.csv"), Some("get-4MiB/sync-on"), false).unwrap();
    rows.extend(parse_compare_csv("fail.csv", include_str!("../data/warp/compare_fail.csv"), Some("put-4KiB/sync-on"), false).unwrap());
    rows.extend(parse_compare_csv("pass.csv", include_str!("../data/warp/compare_pass.csv"), Some("put-4KiB/sync-off"), false).unwrap());
    let reasons = gate(&rows, &GateConfig::default()).reasons();
    assert_eq!(reasons.len(), 2, "the passing cell says nothing: {reasons:?}");
    assert!(reasons[0].starts_with("put-4KiB/sync-on: ❌ FAIL — obj/s −12.0 %, latency +13.7 %"), "Arbiter's units and signs (gate.md keeps upstream's): {reasons:?}");
    assert!(reasons[1].starts_with("get-4MiB/sync-on: ⚠️ WARN — obj/s −7.0 %"), "{reasons:?}");
    let missing =
        parse_compare_csv("m.csv", include_str!("../data/warp/compare_missing_baseline.csv"), Some("mixed/sync-on"), false).unwrap();
    let reasons = gate(&missing, &GateConfig::default()).reasons();
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(
        reasons[0].starts_with("mixed/sync-on: ❓ MISSING — obj/s, latency, MiB/s"),
        "one reason names the metrics together: {reasons:?}"
    );
}
