//! The warp gate against every upstream fixture and every output the upstream gate produced from them:
//! verdicts and exit codes equal upstream's, except the documented deliberate differences, which have
//! tests of their own below.

use judge::warp::compare_csv::parse_compare_csv;
use judge::warp::gate::{gate, GateConfig, GateReport, RowVerdict};
use judge::warp::gate_md::{render, Provenance};
use judge::Verdict;

fn data(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/warp/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn run(files: &[&str], config: &GateConfig) -> GateReport {
    let mut rows = Vec::new();
    for f in files {
        rows.extend(parse_compare_csv(f, &data(f), None, config.strict).unwrap());
    }
    gate(&rows, config)
}

/// (workload, metric, delta without its unit, verdict) rows and the heading word of an upstream gate.md.
fn upstream(md: &str) -> (String, Vec<(String, String, String, String)>) {
    let heading = md.lines().next().unwrap().rsplit(' ').next().unwrap().to_string();
    let rows = md
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Workload") && !l.starts_with("| ---") && !l.starts_with("| _(no rows)_"))
        .map(|l| {
            let cols: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            let delta = cols[2].trim_end_matches("pp").trim_end_matches('%').to_string();
            (cols[0].to_string(), cols[1].to_string(), delta, cols[3].rsplit(' ').next().unwrap().to_string())
        })
        .collect();
    (heading, rows)
}

fn ours(report: &GateReport) -> (String, Vec<(String, String, String, String)>) {
    let md = render(report, None);
    upstream(&md)
}

fn exit(report: &GateReport) -> i32 {
    report.verdict.exit_code().code()
}

#[test]
fn strict_fixtures_match_upstream_rows_verdicts_and_exit_codes() {
    let results = data("strict_gate_results.csv");
    for line in results.lines().skip(1) {
        let cols: Vec<&str> = line.split(',').collect();
        let (fixture, flags, upstream_exit) = (cols[0], cols[1], cols[2].parse::<i32>().unwrap());
        let mut config = GateConfig { strict: true, ..Default::default() };
        let words: Vec<&str> = flags.split_whitespace().collect();
        for pair in words.windows(2) {
            match pair[0] {
                "--fail-pct" => config.fail_pct = pair[1].parse().unwrap(),
                "--warn-pct" => config.warn_pct = pair[1].parse().unwrap(),
                _ => {}
            }
        }
        let parsed = parse_compare_csv(fixture, &data(fixture), None, true);
        if upstream_exit == 2 {
            let err = parsed.expect_err(fixture);
            assert!(err.to_string().starts_with(fixture), "{err}");
            continue;
        }
        let report = gate(&parsed.unwrap(), &config);
        assert_eq!(exit(&report), upstream_exit, "{fixture}");
        let name = format!("strict_gate_{}.md", fixture.trim_end_matches(".csv"));
        let (heading, rows) = ours(&report);
        let (up_heading, up_rows) = upstream(&data(&name));
        assert_eq!(heading, up_heading, "{fixture}");
        assert_eq!(rows.len(), up_rows.len(), "{fixture}");
        for ((row, up), gated) in rows.iter().zip(&up_rows).zip(&report.rows) {
            // Deliberate difference: a phase with no successful round is MISSING, where upstream gates
            // the medians of the rounds that did not happen.
            if gated.missing_reason.as_deref() == Some("a phase had no successful round") {
                assert_eq!((&row.0, &row.1), (&up.0, &up.1), "{fixture}");
                continue;
            }
            assert_eq!(row, up, "{fixture} vs {name}");
        }
    }
}

#[test]
fn non_strict_cases_match_upstream_on_every_row_upstream_prints() {
    let cases: [(&[&str], bool, &str); 5] = [
        (&["compare_pass.csv"], false, "gate_pass.md"),
        (&["compare_warn.csv"], false, "gate_warn.md"),
        (&["compare_fail.csv"], false, "gate_fail.md"),
        (&["compare_fail.csv"], true, "gate_exempt.md"),
        (&["compare_pass.csv", "compare_warn.csv", "compare_legacy12.csv"], false, "gate_multi_warn.md"),
    ];
    for (files, allow_regression, expected) in cases {
        let report = run(files, &GateConfig { allow_regression, ..Default::default() });
        let (heading, rows) = ours(&report);
        let (up_heading, up_rows) = upstream(&data(expected));
        assert_eq!(heading, up_heading, "{expected}");
        // Upstream prints reqps, latency and throughput outside strict mode; every one of its rows is ours
        // too, in order. Our extra rows are the tail metrics (a deliberate difference), all PASS here.
        let shared: Vec<_> = rows.iter().filter(|r| ["reqps", "latency", "throughput"].contains(&r.1.as_str())).cloned().collect();
        assert_eq!(shared, up_rows, "{expected}");
        assert!(rows.iter().filter(|r| !shared.contains(r)).all(|r| r.3 == "PASS"), "{expected}");
        let upstream_exit = if up_heading == "FAIL" { 1 } else { 0 };
        assert_eq!(exit(&report), upstream_exit, "{expected}");
    }
    let exempt = run(&["compare_fail.csv"], &GateConfig { allow_regression: true, ..Default::default() });
    assert_eq!(exempt.verdict, Verdict::WarpExempted);
    let md = render(&exempt, None);
    assert!(md.contains("> Gate FAIL exempted via `--allow-regression`: deliberate correctness tradeoff."), "{md}");
    assert!(md.contains("| 4KiB/warp@8 | reqps | -12.00% | ❌ FAIL |"), "rows keep FAIL: {md}");
}

#[test]
fn upstream_rows_render_to_the_character() {
    let report = run(&["compare_fail.csv"], &GateConfig::default());
    let md = render(&report, None);
    // compare_fail has the 25-column schema; its first three rows are upstream's text exactly.
    let upstream_md = data("gate_fail.md");
    for line in upstream_md.lines().filter(|l| l.starts_with("| 4KiB")) {
        assert!(md.contains(line), "{line} missing from {md}");
    }
    assert!(md.starts_with("### Hotpath warp A/B gate — ❌ FAIL\n\nBudget: regression > 10% fails, > 5% warns (relative to baseline).\n"));
}

#[test]
fn deliberate_difference_missing_baseline_fails_instead_of_passing() {
    // Upstream: PASS with "(no rows)" (its N/A deltas are skipped). Arbiter: MISSING rows that fail.
    let report = run(&["compare_missing_baseline.csv"], &GateConfig::default());
    assert_eq!(report.verdict, Verdict::WarpFail);
    assert_eq!(exit(&report), 1);
    assert!(report.rows.iter().all(|r| r.verdict == RowVerdict::Missing), "{:?}", report.rows);
    assert!(render(&report, None).contains("| 10MiB/warp@8 | reqps | N/A | ❓ MISSING |"));
    // --allow-missing lists and skips them...
    let allowed = run(&["compare_missing_baseline.csv"], &GateConfig { allow_missing: true, ..Default::default() });
    assert_eq!(allowed.verdict, Verdict::WarpPass);
    assert!(render(&allowed, None).contains("6 MISSING row(s) skipped via `--allow-missing`"));
    // ...and --allow-regression never exempts them.
    let exempt = run(&["compare_missing_baseline.csv"], &GateConfig { allow_regression: true, ..Default::default() });
    assert_eq!(exempt.verdict, Verdict::WarpFail);
    // In strict mode upstream prints only the evidence row; Arbiter also lists the MISSING metrics.
    let strict = run(&["compare_missing_baseline.csv"], &GateConfig { strict: true, ..Default::default() });
    assert_eq!(ours(&strict).0, upstream(&data("gate_strict_missing.md")).0);
    assert!(strict.rows.iter().any(|r| r.metric == "tail-error-evidence" && r.verdict == RowVerdict::Fail));
    // A compare file with a header and no rows: upstream PASS, Arbiter FAIL (MISSING).
    let header_only = parse_compare_csv("h.csv", &data("header-only.csv"), None, false).unwrap();
    assert_eq!(gate(&header_only, &GateConfig::default()).verdict, Verdict::WarpFail);
}

#[test]
fn deliberate_difference_tail_metrics_gate_without_strict_mode() {
    let report = run(&["p99-regression.csv"], &GateConfig::default());
    assert_eq!(report.verdict, Verdict::WarpFail, "upstream's non-strict gate would pass this p99 +33 %");
    let p99 = report.rows.iter().find(|r| r.metric == "p99-latency").unwrap();
    assert_eq!((p99.delta.as_str(), p99.verdict), ("33.33%", RowVerdict::Fail));
    let err = run(&["equal-budget.csv"], &GateConfig::default());
    let rate = err.rows.iter().find(|r| r.metric == "error-rate").unwrap();
    assert_eq!(
        (rate.delta.as_str(), rate.verdict),
        ("10.00pp", RowVerdict::Warn),
        "error-rate deltas are points, 10.00 at a 10 budget is WARN"
    );
}

#[test]
fn provenance_section_has_upstreams_shape() {
    let report = run(&["compare_fail.csv"], &GateConfig::default());
    let p = Provenance {
        generated: Some("2026-07-16T07:42:11Z".into()),
        runner: Some("Linux 6.8.0-1021-azure x86_64".into()),
        load_tool: Some("warp version 1.0.0 - 1a2b3c4".into()),
        matrix: Some("duration=12s rounds=2 cooldown=5 disks=4 concurrency=8".into()),
        baseline_binary: Some("/home/runner/work/rustfs/rustfs/baseline-bin/rustfs".into()),
        candidate_binary: Some("/home/runner/work/rustfs/rustfs/baseline-bin/rustfs".into()),
        baseline_commit: Some(
            "0123456789abcdef0123456789abcdef01234567 - actions-cache (rustfs-baseline-0123456789abcdef0123456789abcdef01234567)".into(),
        ),
        candidate_commit: Some("0123456789abcdef0123456789abcdef01234567 - same binary as baseline (same commit)".into()),
        phase_binaries: vec![],
        notes: vec![],
    };
    let md = render(&report, Some(&p));
    let upstream_md = data("gate_with_provenance_example.md");
    let tail = |s: &str| s[s.find("## Provenance").unwrap()..].trim_end().to_string();
    assert_eq!(tail(&md), tail(&upstream_md));
}
