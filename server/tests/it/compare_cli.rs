//! `arbiter compare` / `arbiter calibrate` as a CI job runs them: real rows, exit codes, formats, bad input.

use std::path::PathBuf;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_arbiter");
const C1: &str = "20261129-072203-da99fe05";
const C2: &str = "20261129-072217-adb9e3d8";
const C3: &str = "20261129-072231-4eb27101";
const T1: &str = "20261129-072244-a8070574";

fn data(name: &str) -> String {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "judge", "tests", "data", name].iter().collect();
    p.to_string_lossy().into_owned()
}

fn arbiter(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// 16 generated pairs of a three-stage pipeline whose first stage ("map") costs 20 % more in the
/// treatment, ±1 % of deterministic wobble per trial and stage: the rows' CSV and the control and
/// treatment execution ids.
fn generated_rows(dir: &std::path::Path) -> (String, Vec<String>, Vec<String>) {
    let csv = dir.join("rows.csv");
    let mut text = String::from("execution_id,stage_name,status,cpu_time_total,items,bytes_processed,mem_peak_bytes_max,elapsed\n");
    let (mut control, mut treatment) = (Vec::new(), Vec::new());
    for i in 0..16u32 {
        for (arm, base) in [("c", 0xc0000000u32), ("t", 0xd0000000)] {
            let id = format!("20261201-0100{:02}-{:08x}", i, base + i);
            for (s, (stage, cpu)) in [("map", 20.0), ("shuffle", 8.0), ("reduce", 12.0)].into_iter().enumerate() {
                let wobble = (((i * 3 + s as u32) * 7919 % 200) as f64 / 100.0 - 1.0) / 100.0;
                let effect = if arm == "t" && stage == "map" { 1.2 } else { 1.0 };
                let cpu = cpu * effect * (1.0 + wobble);
                text.push_str(&format!("{id},{stage},END,{cpu:.4},1000,100000,1000000,{:.4}\n", cpu * 2.0));
            }
            if arm == "c" {
                control.push(id);
            } else {
                treatment.push(id);
            }
        }
    }
    std::fs::write(&csv, text).unwrap();
    (csv.to_string_lossy().into_owned(), control, treatment)
}

#[test]
fn regression_exits_1_with_json_by_default_when_piped() {
    // Five pairs of the generated pipeline (+20 % in map), uncalibrated: enough df of their own.
    let dir = tempfile::tempdir().unwrap();
    let (csv, control, treatment) = generated_rows(dir.path());
    let mut args = vec!["compare", "--rows", csv.as_str()];
    for (c, t) in control.iter().zip(&treatment).take(5) {
        args.extend(["--control", c.as_str(), "--treatment", t.as_str()]);
    }
    let out = arbiter(&args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["verdict"], "regression");
    assert_eq!(report["stages"][0]["stage"], "map");
    assert!((report["stages"][0]["cpu_change_pct"].as_f64().unwrap() - 20.0).abs() < 2.0, "{report}");
    assert_eq!(report["thresholds"]["source"], "uncalibrated");
    // The real rows of a +27 % map stage, three controls and one treatment trial, uncalibrated: the
    // controls' 2 df cannot decide it (no spread is borrowed), exit 3.
    let real = data("zephyr_stage_rows_subprocess_runner.csv");
    let out = arbiter(&["compare", "--rows", &real, "--control", C1, "--control", C2, "--control", C3, "--treatment", T1]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
}

#[test]
fn aa_exits_0_or_3_and_markdown_reads_as_a_review_comment() {
    let json = data("zephyr_stage_rows_subprocess_runner.json");
    let out = arbiter(&[
        "compare",
        "--rows",
        &json,
        "--control",
        C1,
        "--control",
        C2,
        "--treatment",
        &format!("again={C3}"),
        "--format",
        "markdown",
    ]);
    assert!(matches!(out.status.code(), Some(0) | Some(3)), "{}", stderr(&out));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.starts_with("## "), "{md}");
    assert!(md.contains("| Stage | CPU change |") && md.contains("**again**"), "{md}");
    assert!(md.contains("Data check:") && md.contains("Infrastructure:") && md.contains("Interpretation:"), "{md}");
}

#[test]
fn calibrate_then_compare_with_the_profile() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("noise.json");
    let csv = data("zephyr_stage_rows_subprocess_runner.csv");
    let out = arbiter(&[
        "calibrate",
        "--rows",
        &csv,
        "--trial",
        C1,
        "--trial",
        C2,
        "--trial",
        C3,
        "--fingerprint",
        r#"{"sample":"local"}"#,
        "--output",
        profile.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&profile).unwrap()).unwrap();
    assert_eq!(written["trials"], 3);
    assert_eq!(written["fingerprint"]["sample"], "local");
    assert_eq!(written["version"], 2);
    assert_eq!(written["stages"]["stage1-Map → Scatter"]["cpu"]["df"], 2.0);
    let noise = profile.to_str().unwrap();
    let out = arbiter(&["compare", "--rows", &csv, "--control", C1, "--control", C2, "--control", C3, "--treatment", T1, "--noise", noise]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["thresholds"]["source"], "noise profile");
    let map = &report["stages"][0];
    assert_eq!(map["cpu_test"]["spread"], "run + profile", "{map}");
    // One pair with a 3-trial profile: +27 % cannot be told from noise at 1 %; it says what it would take.
    let out = arbiter(&["compare", "--rows", &csv, "--control", C1, "--treatment", T1, "--noise", noise]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["stages"][0]["cpu_test"]["more_pairs"].as_u64().unwrap() >= 1, "{report}");
    // Growing the profile with later same-code trials pools them.
    let grown = dir.path().join("grown.json");
    let out = arbiter(&[
        "calibrate",
        "--rows",
        &csv,
        "--trial",
        C1,
        "--trial",
        C2,
        "--fingerprint",
        r#"{"sample":"local"}"#,
        "--grow",
        noise,
        "--output",
        grown.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let grown: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&grown).unwrap()).unwrap();
    assert_eq!((grown["trials"].as_u64(), grown["calibrations"].as_u64(), grown["trusted"].as_bool()), (Some(5), Some(2), Some(true)));
    assert_eq!(grown["stages"]["stage1-Map → Scatter"]["cpu"]["df"], 3.0, "2 + 1 df, within calibrations");
    let out =
        arbiter(&["calibrate", "--rows", &csv, "--trial", C1, "--trial", C2, "--fingerprint", r#"{"sample":"other"}"#, "--grow", noise]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("fingerprints differ"), "{}", stderr(&out));
    let out = arbiter(&["calibrate", "--rows", &csv, "--trial", C1]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("at least two --trial"));
}

#[test]
fn paired_margins_and_alpha_are_flags_and_bad_values_are_named() {
    let csv = data("zephyr_stage_rows_subprocess_runner.csv");
    let run = |extra: &[&str]| {
        let mut args = vec!["compare", "--rows", &csv, "--control", C1, "--control", C2, "--treatment", C2, "--treatment", C3];
        args.extend_from_slice(extra);
        arbiter(&args)
    };
    let out = run(&["--paired", "--cpu-margin", "5", "--elapsed-margin", "30", "--alpha", "0.05"]);
    assert!(matches!(out.status.code(), Some(0) | Some(3)), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let method = &report["method"];
    assert_eq!(
        (method["version"].as_u64(), method["paired"].as_bool()),
        (Some(judge::pipeline::method::METHOD_VERSION.into()), Some(true)),
        "{method}"
    );
    assert_eq!((method["cpu_margin_pct"].as_f64(), method["alpha"].as_f64()), (Some(5.0), Some(0.05)));
    // Two pairs resolve nothing at the default spread: no third answer, and the report says why.
    let x = &method["no_regression"];
    assert!(x["pct"].is_null() && x["from"].as_str().unwrap().starts_with("none: 2 pairs resolve"), "{x}");
    // X set for the run: recorded as set, carried by every test.
    let out = run(&["--paired", "--no-regression", "8"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["method"]["no_regression"]["pct"].as_f64(), Some(8.0), "{}", report["method"]);
    assert_eq!(report["method"]["no_regression"]["from"], "set before the run");
    let off = run(&["--paired", "--no-regression", "off"]);
    let off: serde_json::Value = serde_json::from_slice(&off.stdout).unwrap();
    assert!(off["method"]["no_regression"]["pct"].is_null() && off["method"]["no_regression"]["from"] == "off", "{}", off["method"]);
    assert_eq!(report["stages"][0]["cpu_test"]["analysis"], "paired t on log ratios");
    for (flag, value, says) in [
        ("--cpu-margin", "0", "--cpu-margin 0: must be a percentage above 0 and below 100"),
        ("--elapsed-margin", "150", "--elapsed-margin 150: must be a percentage"),
        ("--alpha", "0.7", "--alpha 0.7: must be above 0 and below 0.5"),
        ("--no-regression", "1", "--no-regression 1: below the CPU margin of 2 %"),
        ("--no-regression", "12", "--no-regression 12: above the cap of 10 %"),
        ("--no-regression", "lots", "--no-regression lots: a percent (such as 5) or \"off\""),
        ("--max-no-regression", "0", "--max-no-regression 0: must be a percentage above 0 and below 100"),
    ] {
        let out = run(&[flag, value]);
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
    let out = arbiter(&["compare", "--rows", &csv, "--control", C1, "--control", C2, "--treatment", T1, "--paired"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--paired: arm \"treatment\" has 1 trial(s) and the control 2"), "{}", stderr(&out));
}

#[test]
fn bad_input_exits_2_naming_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    let header = "execution_id,stage_name,status,cpu_time_total,items,bytes_processed,mem_peak_bytes_max,elapsed\n";
    let cases = [
        (
            write("nan.csv", &format!("{header}{C1},map,END,NaN,1,1,1,1\n")),
            "nan.csv, line 2, column cpu_time_total: NaN is not a finite number",
        ),
        (write("neg.csv", &format!("{header}{C1},map,END,1,-5,1,1,1\n")), "neg.csv, line 2, column items: -5 is negative"),
        (
            write("missing.csv", "execution_id,stage_name,status\nx,y,END\n"),
            "missing.csv, line 2, column cpu_time_total: missing required value",
        ),
        (write("empty.csv", ""), "empty.csv: the file is empty"),
        (write("prose.txt", "this is not a table\n"), "prose.txt, line 1: not zephyr.stage rows"),
    ];
    for (file, expected) in cases {
        let out = arbiter(&["compare", "--rows", &file, "--control", C1, "--treatment", T1]);
        assert_eq!(out.status.code(), Some(2), "{file}");
        let err = stderr(&out);
        assert!(err.contains(expected), "{expected:?} not in {err:?}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let csv = data("zephyr_stage_rows_subprocess_runner.csv");
    let out = arbiter(&["compare", "--rows", &csv, "--control", C1]);
    assert_eq!(out.status.code(), Some(2), "no --treatment is a usage error");
    let out = arbiter(&["compare", "--rows", &csv, "--control", C1, "--treatment", "20990101-000000-deadbeef"]);
    assert!(stderr(&out).contains("no rows for execution id(s): 20990101-000000-deadbeef"));
    let out = arbiter(&["compare", "--rows", &csv, "--control", C1, "--treatment", T1, "--worker-ram", "12 parsecs"]);
    assert!(stderr(&out).contains("--worker-ram: unknown size unit"), "{}", stderr(&out));
    let out = arbiter(&["compare", "--rows", "/nonexistent/rows.csv", "--control", C1, "--treatment", T1]);
    assert!(stderr(&out).contains("cannot read /nonexistent/rows.csv"));
}

#[test]
fn the_worker_ram_guardrail_applies_from_the_command_line() {
    let csv = data("zephyr_stage_rows_subprocess_runner.csv");
    // Peaks are ~172 MiB in both arms: a 100 MiB limit is breached by both (no new breach), 200 MiB by none.
    for limit in ["100MiB", "200MiB"] {
        let out = arbiter(&["compare", "--rows", &csv, "--control", C1, "--treatment", C2, "--worker-ram", limit, "--format", "json"]);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_ne!(report["verdict"], "regression", "{limit}");
    }
}

/// `compare --sequential` on 16 generated pairs of a three-stage pipeline whose first stage costs 20 % more
/// in the treatment: it stops early with the regression, and the JSON says after which pair each metric
/// was decided; `--abba` judges blocks of two pairs; `--max-pairs` caps it; bad use is named.
#[test]
fn sequential_compare_stops_early_and_says_when_each_metric_was_decided() {
    let dir = tempfile::tempdir().unwrap();
    let (csv, control, treatment) = generated_rows(dir.path());
    let run = |extra: &[&str]| {
        let mut args = vec!["compare", "--rows", csv.as_str()];
        for c in &control {
            args.extend(["--control", c.as_str()]);
        }
        for t in &treatment {
            args.extend(["--treatment", t.as_str()]);
        }
        args.extend(extra);
        arbiter(&args)
    };
    let out = run(&["--sequential"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let q = &report["sequential"];
    assert_eq!((q["unit"].as_str(), q["pairs_given"].as_u64(), q["stopped"].as_bool()), (Some("pair"), Some(16), Some(true)), "{q}");
    let used = q["pairs_used"].as_u64().unwrap();
    assert!((2..16).contains(&used), "{q}");
    let map = q["metrics"].as_array().unwrap().iter().find(|m| m["stage"] == "map" && m["metric"] == "cpu").unwrap();
    assert_eq!(
        (map["decision"].as_str(), map["outcome"].as_str(), map["decided_after"].as_u64()),
        (Some("different"), Some("higher"), Some(used))
    );
    assert_eq!(report["stages"][0]["trials"], serde_json::json!([used, used]), "the report is the look it stopped at");
    // The table says how it was judged.
    let table = run(&["--sequential", "--format", "table"]);
    assert!(
        String::from_utf8_lossy(&table.stdout).contains(&format!("Stopped: {used} of 16 pairs used")),
        "{}",
        String::from_utf8_lossy(&table.stdout)
    );
    // ABBA blocks: two pairs a unit.
    let abba = run(&["--sequential", "--abba"]);
    let report: serde_json::Value = serde_json::from_slice(&abba.stdout).unwrap();
    assert_eq!((report["sequential"]["unit"].as_str(), report["sequential"]["pairs_given"].as_u64()), (Some("abba_block"), Some(8)));
    // A budget of one pair decides nothing statistical: inconclusive, exit 3.
    let capped = run(&["--sequential", "--max-pairs", "1"]);
    assert_eq!(capped.status.code(), Some(3), "{}", stderr(&capped));
    // Bad use is named.
    let out = arbiter(&["compare", "--rows", &csv, "--control", &control[0], "--treatment", &treatment[0], "--abba"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--sequential"), "{}", stderr(&out));
    let out = arbiter(&[
        "compare",
        "--rows",
        &csv,
        "--control",
        &control[0],
        "--control",
        &control[1],
        "--treatment",
        &treatment[0],
        "--sequential",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--sequential: arm \"treatment\" has 1 trial(s) and the control 2"), "{}", stderr(&out));
    let out = arbiter(&["compare", "--rows", &csv, "--control", &control[0], "--treatment", &treatment[0], "--sequential", "--abba"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--abba: an odd number of pairs (1) does not make whole blocks"), "{}", stderr(&out));
}

#[test]
fn the_order_of_each_pair_is_a_flag_or_read_from_the_rows_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    let (csv, control, treatment) = generated_rows(dir.path());
    let mut args: Vec<String> = vec!["compare".into(), "--rows".into(), csv.clone(), "--paired".into()];
    for (c, t) in control.iter().zip(&treatment) {
        args.extend(["--control".into(), c.clone(), "--treatment".into(), t.clone()]);
    }
    let run = |extra: &[&str]| {
        let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
        a.extend_from_slice(extra);
        arbiter(&a)
    };
    // Balanced blocks (ct,tc, then tc,ct): the covariate is fitted, n − 2 df, and each stage says so.
    let words: Vec<&str> = (0..16).map(|i| if matches!(i % 4, 1 | 2) { "tc" } else { "ct" }).collect();
    let out = run(&["--order", &words.join(",")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let test = &report["stages"].as_array().unwrap().iter().find(|s| s["stage"] == "map").unwrap()["cpu_test"];
    assert_eq!((test["order"]["control_first"].as_u64(), test["order"]["treatment_first"].as_u64()), (Some(8), Some(8)), "{test}");
    assert_eq!((test["order"]["adjusted"].as_bool(), test["df"].as_f64()), (Some(true), Some(14.0)), "{test}");
    assert!(test["order"]["first_interval_pct"].is_array(), "{test}");
    let md = run(&["--order", &words.join(","), "--format", "markdown"]);
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("8 pairs ran the control first, 8 the treatment first; each change is adjusted"), "{md}");
    // Bad orders are named, and nothing is judged.
    for (extra, says) in [
        (vec!["--order", "ct,tc"], "--order: 2 word(s) for 16 pair(s)"),
        (vec!["--order", &*format!("{},xy", words[..15].join(","))], "--order: pair 16: \"xy\" is not ct (control first) or tc"),
        (vec!["--order", "timestamps"], "--order timestamps: trial 20261201-010000-c0000000 has no row with a ts"),
    ] {
        let out = run(&extra);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
    let unpaired = arbiter(&["compare", "--rows", &csv, "--control", &control[0], "--treatment", &treatment[0], "--order", "ct"]);
    assert_eq!(unpaired.status.code(), Some(2));
    assert!(stderr(&unpaired).contains("orders are of pairs; add --paired"), "{}", stderr(&unpaired));
    // Real rows with their ts (by the rows' own clock): pair 1 is r1 before the treatment run, pair 2 pits
    // r3 against the earlier r2 as its "treatment", which therefore ran first.
    let real = data("zephyr_stage_rows_subprocess_runner.csv");
    let out = arbiter(&[
        "compare",
        "--rows",
        &real,
        "--control",
        C1,
        "--control",
        C3,
        "--treatment",
        T1,
        "--treatment",
        C2,
        "--paired",
        "--order",
        "timestamps",
    ]);
    assert!(matches!(out.status.code(), Some(0..=3)), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let order = &report["stages"][0]["cpu_test"]["order"];
    assert_eq!(
        (order["control_first"].as_u64(), order["treatment_first"].as_u64(), order["adjusted"].as_bool()),
        (Some(1), Some(1), Some(false)),
        "{order}"
    );
}
