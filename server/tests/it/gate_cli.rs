//! `arbiter gate` as CI runs it: upstream fixtures, exit codes, labels, gate.md with provenance, bad input.

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_arbiter");

fn fixture(name: &str) -> String {
    format!("{}/../judge/tests/data/warp/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn arbiter(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn exit_codes_follow_the_verdicts() {
    let cases = [
        (vec!["--compare-csv", "compare_pass.csv"], 0),
        (vec!["--compare-csv", "compare_warn.csv"], 0),
        (vec!["--compare-csv", "compare_fail.csv"], 1),
        (vec!["--compare-csv", "compare_fail.csv", "--allow-regression"], 0),
        (vec!["--compare-csv", "compare_missing_baseline.csv"], 1),
        (vec!["--compare-csv", "compare_missing_baseline.csv", "--allow-missing"], 0),
        (vec!["--compare-csv", "p99-regression.csv", "--require-tail-error"], 1),
        (vec!["--compare-csv", "equal-budget.csv", "--strict"], 0),
        (vec!["--compare-csv", "old-schema.csv", "--strict"], 2),
        (vec!["--compare-csv", "header-only.csv", "--strict"], 2),
        (vec!["--compare-csv", "extra-column.csv", "--strict"], 2),
    ];
    for (args, code) in cases {
        let args: Vec<String> = args.iter().map(|a| if a.ends_with(".csv") { fixture(a) } else { a.to_string() }).collect();
        let mut full = vec!["gate".to_string()];
        full.extend(args.clone());
        let out = Command::new(BIN).args(&full).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn gate_md_with_labels_exemption_and_provenance() {
    let dir = tempfile::tempdir().unwrap();
    let md_path = dir.path().join("gate.md");
    let fail = fixture("compare_fail.csv");
    let label = format!("put-4KiB/sync-on={fail}");
    let out = arbiter(&[
        "gate",
        "--label",
        &label,
        "--allow-regression",
        "--exemption-reason",
        "fsync on every put, agreed in review",
        "--markdown",
        md_path.to_str().unwrap(),
        "--load-tool",
        "arbiter-load 0.1.0",
        "--matrix",
        "duration=12s rounds=3",
        "--baseline-commit",
        "0123456789abcdef0123456789abcdef01234567 - binary cache",
        "--note",
        "s3s-fs has no drive-sync setting",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let md = std::fs::read_to_string(&md_path).unwrap();
    assert_eq!(md, stdout(&out), "the file and stdout carry the same gate.md");
    assert!(md.starts_with("### Hotpath warp A/B gate — ⚠️ WARN\n"), "{md}");
    assert!(md.contains("> Gate FAIL exempted via `--allow-regression`: fsync on every put, agreed in review."));
    assert!(md.contains("| put-4KiB/sync-on | reqps | -12.00% | ❌ FAIL |"), "{md}");
    assert!(md.contains("## Provenance\n\n- generated: 20"), "{md}");
    assert!(md.contains("- runner: Linux ") && md.contains("- warp: arbiter-load 0.1.0") && md.contains("- matrix: duration=12s rounds=3"));
    assert!(md.contains("- baseline commit: 0123456789abcdef0123456789abcdef01234567 - binary cache"));
    assert!(md.contains("- note: s3s-fs has no drive-sync setting"));
}

#[test]
fn json_output_carries_the_full_row_table() {
    let out = arbiter(&[
        "gate",
        "--compare-csv",
        &fixture("compare_warn.csv"),
        "--compare-csv",
        &fixture("compare_pass.csv"),
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["report"]["verdict"], "WARN");
    let rows = v["report"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 12, "six metrics of two files");
    assert_eq!(rows[0]["workload"], "4KiB/warp@8");
    assert_eq!(rows[0]["verdict"], "WARN");
    assert_eq!(rows[0]["regress"], 7.0);
}

#[test]
fn bad_input_exits_2_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short.csv");
    std::fs::write(&short, format!("{}\n4KiB,warp\n", judge::warp::compare_csv::HEADER_12.join(","))).unwrap();
    let out = arbiter(&["gate", "--compare-csv", short.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("short.csv, line 2: 2 columns where the header has 12"), "{err}");
    let out = arbiter(&["gate"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least one --compare-csv"));
    let out = arbiter(&["gate", "--compare-csv", &fixture("compare_pass.csv"), "--warn-pct", "20"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--warn-pct 20 is above --fail-pct 10"));
    let out = arbiter(&["gate", "--label", "nolabel"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected NAME=FILE"));
}

#[test]
fn warp_compare_writes_the_drivers_csv_and_gates_it() {
    let dir = tempfile::tempdir().unwrap();
    let out_csv = dir.path().join("baseline_compare.csv");
    let out = arbiter(&[
        "warp-compare",
        "--baseline",
        &fixture("driver_base_median_summary.csv"),
        "--candidate",
        &fixture("driver_cand_median_summary.csv"),
        "--output",
        out_csv.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(&out_csv).unwrap(), std::fs::read_to_string(fixture("driver_cand_baseline_compare.csv")).unwrap());
    let gated = arbiter(&["gate", "--compare-csv", out_csv.to_str().unwrap()]);
    assert_eq!(gated.status.code(), Some(1), "the candidate is 12 % slower");
    let bad =
        arbiter(&["warp-compare", "--baseline", &fixture("compare_pass.csv"), "--candidate", &fixture("driver_cand_median_summary.csv")]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a median_summary.csv header"));
}

#[test]
fn warp_parse_reads_text_and_json_and_refuses_the_unknown() {
    let out = arbiter(&["warp-parse", &fixture("simulated_warp_ge_1_1_mixed_report.log")]);
    assert_eq!(out.status.code(), Some(0));
    let ops: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ops[1]["op"], "GET");
    assert_eq!(ops[1]["latency_p99_ms"], 30.5);
    let out = arbiter(&["warp-parse", &fixture("warp_realtime_json_shape_ILLUSTRATIVE.json")]);
    assert_eq!(out.status.code(), Some(0));
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.log");
    std::fs::write(&junk, "Error: connection refused\n").unwrap();
    let out = arbiter(&["warp-parse", junk.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("junk.log: unknown warp output"), "{err}");
}
