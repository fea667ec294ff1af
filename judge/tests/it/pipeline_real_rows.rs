//! The pipeline judge on real `zephyr.stage` rows from a local Zephyr run: three same-code controls and a
//! treatment doing ~30 % more map work (map CPU 1.11/1.11/1.17 → 1.44 CPU-s, elapsed flat).

use judge::pipeline::aggregate::TrialSpec;
use judge::pipeline::rows::{parse_rows, StageRow};
use judge::pipeline::{calibrate, judge, ArmSpec, JudgeError, PipelineConfig};
use judge::Verdict;

const C1: &str = "20261129-072203-da99fe05";
const C2: &str = "20261129-072217-adb9e3d8";
const C3: &str = "20261129-072231-4eb27101";
const T1: &str = "20261129-072244-a8070574";

fn rows() -> Vec<StageRow> {
    let csv = include_str!("../data/zephyr_stage_rows_subprocess_runner.csv");
    let rows = parse_rows("subprocess_runner.csv", csv).unwrap();
    let json = parse_rows("subprocess_runner.json", include_str!("../data/zephyr_stage_rows_subprocess_runner.json")).unwrap();
    assert_eq!(rows, json, "the CSV and JSON exports are the same rows");
    rows
}

fn trial(id: &str) -> TrialSpec {
    TrialSpec { execution_ids: vec![id.to_string()], pair: None }
}

fn arm(ids: &[&str]) -> Vec<ArmSpec> {
    vec![ArmSpec { name: "treatment".into(), trials: ids.iter().map(|i| trial(i)).collect() }]
}

#[test]
fn three_controls_against_the_heavier_treatment_is_a_map_stage_regression() {
    let report = judge(&rows(), &[trial(C1), trial(C2), trial(C3)], &arm(&[T1]), &PipelineConfig::default()).unwrap();
    assert_eq!(report.verdict, Verdict::Regression);
    let map = report.stages.iter().find(|s| s.stage == "stage1-Map → Scatter").unwrap();
    assert_eq!(map.verdict, Verdict::Regression);
    assert_eq!(map.cpu_change_pct, 27.4);
    assert_eq!(map.trials, [3, 1]);
    // One treatment trial: the interval comes from the controls' spread (2 df) pooled with the default's.
    let [lo, _] = map.cpu_interval_pct.expect("an interval at the level of the test");
    assert!(lo > 0.0, "detected: {:?}", map.cpu_test);
    assert_eq!(map.cpu_test.as_ref().unwrap().spread, "run + default");
    let reason = &map.reasons[0];
    assert!(
        reason.starts_with("stage1-Map → Scatter: more CPU: CPU higher +27.4 % (1.13 → 1.44 CPU-s, 99.6 % interval +1.1 % … +60.8 %)"),
        "{reason}"
    );
    // Elapsed from one treatment trial is undecided (it does not block the CPU verdict).
    assert!(reason.contains("summed elapsed unclear"), "{reason}");
    let reduce = report.stages.iter().find(|s| s.stage == "stage2-Reduce").unwrap();
    assert_eq!(reduce.verdict, Verdict::Pass, "reduce CPU moves by less than the 0.05 CPU-s floor");
    assert_eq!(report.thresholds.source, "uncalibrated");
    assert_eq!(report.total.as_ref().unwrap().verdict, Verdict::Regression);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["verdict"], "regression");
    assert_eq!(json["treatments"][0]["stages"][0]["trials"], serde_json::json!([3, 1]));
    assert!(json["stages"][0]["normalised"].is_null());
    // The Markdown report leads with the detected change and its interval, then names the method.
    let md = judge::pipeline::render::markdown(&report, &[]);
    let lead = md.lines().find(|l| l.starts_with("- ")).unwrap();
    assert_eq!(lead, "- **stage1-Map → Scatter** CPU +27.5 % (99.6 % interval +1.1 % … +60.8 %, margin ±4.4 %)", "{md}");
    assert!(md.find("**Detected changes**") < md.find("Method 2: "), "{md}");
    assert!(md.contains("family-wise error rate of 1 %"), "{md}");
}

#[test]
fn one_control_against_the_treatment_cannot_decide_27_percent_and_says_what_it_would_take() {
    // Method 1 called this a regression from its point estimate alone. With no spread of its own, one
    // pair leans on the default 5 % spread (4 df): +27 % is inside what such a pair cannot tell from noise
    // at a 1 % family-wise error rate, so it is undecided, with the smallest change it could detect.
    for c in [C1, C2, C3] {
        let report = judge(&rows(), &[trial(c)], &arm(&[T1]), &PipelineConfig::default()).unwrap();
        assert_eq!(report.verdict, Verdict::Inconclusive, "control {c}");
        let map = report.stages.iter().find(|s| s.stage == "stage1-Map → Scatter").unwrap();
        let test = map.cpu_test.as_ref().unwrap();
        assert!(test.mde_pct.unwrap() > 27.0 && test.more_pairs.unwrap() >= 1, "{test:?}");
        assert!(map.reasons[0].contains("CPU undecided"), "{:?}", map.reasons);
        let md = judge::pipeline::render::markdown(&report, &[]);
        assert!(md.contains("**Detected changes:** none"), "{md}");
        let take = md.lines().find(|l| l.starts_with("**What it would take:**")).expect("an inconclusive report says what it would take");
        assert!(take.contains(&format!("about {} more pair", test.more_pairs.unwrap())) || take.contains("more pairs"), "{take}");
        let words = format!(
            "stage1-Map → Scatter CPU: detects ±{}, about {} more pair",
            judge::pipeline::report::fmt_margin(test.mde_pct.unwrap()),
            test.more_pairs.unwrap()
        );
        assert!(take.contains(&words), "{take}");
    }
}

#[test]
fn same_code_controls_never_regress_against_each_other() {
    let ids = [C1, C2, C3];
    for (i, t) in ids.iter().enumerate() {
        let others: Vec<TrialSpec> = ids.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, c)| trial(c)).collect();
        let report = judge(&rows(), &others, &arm(&[t]), &PipelineConfig::default()).unwrap();
        assert!(matches!(report.verdict, Verdict::Pass | Verdict::Inconclusive), "{t}: {:?}", report.reasons);
        for pair in ids.iter().filter(|c| *c != t) {
            let one = judge(&rows(), &[trial(pair)], &arm(&[t]), &PipelineConfig::default()).unwrap();
            assert_ne!(one.verdict, Verdict::Regression, "{pair} vs {t}: {:?}", one.reasons);
        }
    }
}

#[test]
fn duplicates_and_row_order_do_not_change_the_verdict() {
    let base = judge(&rows(), &[trial(C1), trial(C2), trial(C3)], &arm(&[T1]), &PipelineConfig::default()).unwrap();
    let mut shuffled = rows();
    shuffled.reverse();
    let dup = shuffled[2].clone();
    shuffled.push(dup);
    let again = judge(&shuffled, &[trial(C1), trial(C2), trial(C3)], &arm(&[T1]), &PipelineConfig::default()).unwrap();
    assert_eq!(again.duplicates_dropped, 1);
    assert_eq!(again.verdict, base.verdict);
    assert_eq!(again.stages, base.stages);
}

#[test]
fn slugged_execution_ids_match_and_unknown_ids_are_named() {
    let slugged = format!("dedup-fineweb-{T1}");
    let report = judge(&rows(), &[trial(C1), trial(C2), trial(C3)], &arm(&[&slugged]), &PipelineConfig::default()).unwrap();
    assert_eq!(report.verdict, Verdict::Regression);
    let err = judge(&rows(), &[trial(C1)], &arm(&["20990101-000000-deadbeef"]), &PipelineConfig::default()).unwrap_err();
    assert_eq!(err, JudgeError::UnknownExecutionIds(vec!["20990101-000000-deadbeef".into()]));
    assert_eq!(err.to_string(), "no rows for execution id(s): 20990101-000000-deadbeef");
    assert_eq!(judge(&rows(), &[trial(C1)], &[], &PipelineConfig::default()).unwrap_err(), JudgeError::NoTreatment);
}

#[test]
fn a_calibrated_profile_judges_and_says_so() {
    let profile = calibrate(&rows(), &[trial(C1), trial(C2), trial(C3)], None).unwrap();
    let map = &profile.stages["stage1-Map → Scatter"];
    assert_eq!((map.cpu.n, map.cpu.df), (3, Some(2.0)));
    // The map stage's three CPU values (1.11, 1.11, 1.17) spread ~3 %: the log sd is about the CV.
    let sd = map.cpu.log_sd.unwrap();
    assert!((sd - map.cpu.cv).abs() < 1e-3 && sd > 0.025 && sd < 0.035, "{map:?}");
    assert!(!profile.trusted, "three same-code trials are fewer than the five a trusted profile needs");
    let config = PipelineConfig { noise: Some(profile.clone()), ..Default::default() };
    let report = judge(&rows(), &[trial(C1), trial(C2), trial(C3)], &arm(&[T1]), &config).unwrap();
    assert_eq!(report.thresholds.source, "noise profile");
    assert!(report.stages[0].thresholds.calibrated);
    assert_eq!(report.verdict, Verdict::Regression);
    let text = serde_json::to_string(&profile).unwrap();
    let back: judge::pipeline::noise::NoiseProfile = serde_json::from_str(&text).unwrap();
    let (a, b) = (&back.stages["stage2-Reduce"].elapsed, &profile.stages["stage2-Reduce"].elapsed);
    assert_eq!((back.trials, a.n), (3, 3));
    assert_eq!(a, b, "the profile file round-trips");
}
