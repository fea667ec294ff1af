//! Every row of the pipeline decision table, and properties that must hold for any input.

use judge::pipeline::aggregate::TrialSpec;
use judge::pipeline::report::MetricOutcome;
use judge::pipeline::rows::StageRow;
use judge::pipeline::{judge, ArmSpec, PipelineConfig, PipelineReport};
use judge::Verdict;

const MIB: f64 = 1048576.0;

/// A row; execution ids are built from a short tag so tests read easily.
fn row(tag: u32, stage: &str, status: &str, cpu: f64, elapsed: f64, items: f64, mem_mib: f64) -> StageRow {
    StageRow::new(&id(tag), stage, status, cpu, elapsed, items, items * 100.0, mem_mib * MIB)
}

fn id(tag: u32) -> String {
    format!("20261129-0000{:02}-{:08x}", tag % 100, 0xab000000u32 + tag)
}

fn t(tags: &[u32]) -> Vec<TrialSpec> {
    tags.iter().map(|&tag| TrialSpec { execution_ids: vec![id(tag)], pair: None, position: None }).collect()
}

fn run(rows: &[StageRow], control: &[u32], treatment: &[u32], config: &PipelineConfig) -> PipelineReport {
    judge(rows, &t(control), &[ArmSpec { name: "treatment".into(), trials: t(treatment) }], config).unwrap()
}

/// Control trials 1..=n_c and treatment trials 101..=100+n_t, one stage "map" each, with the given CPU and
/// elapsed per trial.
fn two_arms(control: &[(f64, f64)], treatment: &[(f64, f64)]) -> (Vec<StageRow>, Vec<u32>, Vec<u32>) {
    let mut rows = Vec::new();
    let (mut c, mut tr) = (Vec::new(), Vec::new());
    for (i, &(cpu, el)) in control.iter().enumerate() {
        rows.push(row(1 + i as u32, "map", "END", cpu, el, 1000.0, 100.0));
        c.push(1 + i as u32);
    }
    for (i, &(cpu, el)) in treatment.iter().enumerate() {
        rows.push(row(101 + i as u32, "map", "END", cpu, el, 1000.0, 100.0));
        tr.push(101 + i as u32);
    }
    (rows, c, tr)
}

/// Three trials of (CPU, elapsed) within ±0.1 % of each other: tight enough that a verdict can show "no
/// change" (one pair never can: it measures no spread, and the 5 % default only widens).
fn tight(cpu: f64, elapsed: f64) -> Vec<(f64, f64)> {
    vec![(cpu, elapsed), (cpu * 1.001, elapsed * 1.001), (cpu * 0.999, elapsed * 0.999)]
}

fn verdict_of(control: &[(f64, f64)], treatment: &[(f64, f64)]) -> (Verdict, String) {
    let (rows, c, tr) = two_arms(control, treatment);
    let r = run(&rows, &c, &tr, &PipelineConfig::default());
    (r.verdict, r.reasons.join(" | "))
}

#[test]
fn rule1_failed_control_trials_are_dropped_and_all_failed_is_an_invalid_baseline() {
    let mut rows = vec![row(1, "map", "FAILED", 0.5, 3.0, 400.0, 100.0), row(101, "map", "END", 10.1, 30.0, 1000.0, 100.0)];
    for (i, (cpu, el)) in tight(10.0, 30.0).into_iter().enumerate() {
        rows.push(row(2 + i as u32, "map", "END", cpu, el, 1000.0, 100.0));
        rows.push(row(102 + i as u32, "map", "END", cpu, el, 1000.0, 100.0));
    }
    let r = run(&rows, &[1, 2, 3, 4], &[102, 103, 104], &PipelineConfig::default());
    assert_eq!(r.verdict, Verdict::Pass, "{:?}", r.reasons);
    assert_eq!(r.dropped_control_trials, vec!["control #1 (FAILED: map)".to_string()]);
    assert_eq!(r.stages[0].trials, [3, 3]);
    let r = run(&rows, &[1], &[101], &PipelineConfig::default());
    assert_eq!(r.verdict, Verdict::Inconclusive);
    assert!(r.reasons[0].starts_with("invalid baseline"), "{:?}", r.reasons);
}

#[test]
fn rule2_a_treatment_failure_is_a_regression_but_a_retried_attempt_is_churn() {
    let mut rows = vec![row(1, "map", "END", 10.0, 30.0, 1000.0, 100.0), row(101, "map", "FAILED", 2.0, 5.0, 200.0, 100.0)];
    let r = run(&rows, &[1], &[101], &PipelineConfig::default());
    assert_eq!(r.verdict, Verdict::Regression);
    assert!(r.reasons[0].contains("map: new failure"), "{:?}", r.reasons);
    // The failed stage has no treatment numbers, and the report says so instead of "−100 %".
    let map = &r.stages[0];
    assert!(map.treatment_failed() && map.treatment_failures == 1, "{map:?}");
    let md = judge::pipeline::render::markdown(&r, &[]);
    assert!(md.contains("| map | failed in 1 treatment trial | 10.00 → — | — | — |"), "{md}");
    assert!(md.contains("| **pipeline total** | not comparable: a stage has no treatment numbers |"), "{md}");
    assert!(!md.contains("−100.0 %"), "{md}");

    // The same FAILED attempt followed by an END row under another execution id in the same trial.
    rows.push(row(102, "map", "END", 9.9, 31.0, 1000.0, 100.0));
    let spec = TrialSpec { execution_ids: vec![id(101), id(102)], pair: None, position: None };
    let r = judge(&rows, &t(&[1]), &[ArmSpec { name: "treatment".into(), trials: vec![spec] }], &PipelineConfig::default()).unwrap();
    // One pair cannot show "no change" (method 2); what matters here is that it is no new failure.
    assert_ne!(r.verdict, Verdict::Regression, "{:?}", r.reasons);
    assert!(!r.reasons.iter().any(|x| x.contains("new failure")), "{:?}", r.reasons);
    assert_eq!(r.retried, vec!["treatment #1: map".to_string()]);
}

#[test]
fn rule3_memory_above_the_worker_limit_is_a_regression_whatever_the_cpu() {
    let rows = vec![row(1, "map", "END", 10.0, 30.0, 1000.0, 900.0), row(101, "map", "END", 5.0, 20.0, 1000.0, 1100.0)];
    let config = PipelineConfig { worker_ram: Some(1024.0 * MIB), ..Default::default() };
    let r = run(&rows, &[1], &[101], &config);
    assert_eq!(r.verdict, Verdict::Regression);
    assert!(
        r.reasons[0].contains("memory guardrail: peak 1100 MiB exceeds the worker limit of 1024 MiB (control 900 MiB)"),
        "{:?}",
        r.reasons
    );
    // Even when the work differs (rule 3 comes before rule 5).
    let rows = vec![row(1, "map", "END", 10.0, 30.0, 1000.0, 900.0), row(101, "map", "END", 5.0, 20.0, 500.0, 1100.0)];
    assert_eq!(run(&rows, &[1], &[101], &config).verdict, Verdict::Regression);
    // Both above the limit: no new breach, judged on CPU (halved, from three trials an arm).
    let mut rows = Vec::new();
    for (i, (cpu, el)) in tight(10.0, 30.0).into_iter().enumerate() {
        rows.push(row(1 + i as u32, "map", "END", cpu, el, 1000.0, 1100.0));
        rows.push(row(101 + i as u32, "map", "END", cpu / 2.0, el, 1000.0, 1200.0));
    }
    let r = run(&rows, &[1, 2, 3], &[101, 102, 103], &config);
    assert_eq!(r.verdict, Verdict::Pass, "{:?}", r.reasons);
    assert!(r.reasons[0].contains("cheaper"), "{:?}", r.reasons);
}

#[test]
fn rule4_stage_sets_differ_is_inconclusive_with_totals_as_context() {
    let rows = vec![
        row(1, "stage0-Map", "END", 4.0, 10.0, 1000.0, 100.0),
        row(1, "stage1-Reduce", "END", 6.0, 10.0, 1000.0, 100.0),
        row(101, "stage0-Map → Reduce", "END", 10.2, 19.0, 1000.0, 100.0),
    ];
    let r = run(&rows, &[1], &[101], &PipelineConfig::default());
    assert_eq!(r.verdict, Verdict::Inconclusive);
    let arm = &r.treatments[0];
    assert_eq!(arm.unpaired_stages.len(), 3);
    assert!(arm.reasons[0].starts_with("stage sets differ"), "{:?}", arm.reasons);
    assert!(arm.reasons[0].contains("pipeline totals for context: CPU flat +2.0 % (10.00 → 10.20 CPU-s)"), "{:?}", arm.reasons);
}

#[test]
fn rule5_different_work_is_inconclusive_unless_accepted_then_normalised() {
    let rows = vec![row(1, "map", "END", 10.0, 30.0, 1000.0, 100.0), row(101, "map", "END", 12.0, 30.0, 1200.0, 100.0)];
    let r = run(&rows, &[1], &[101], &PipelineConfig::default());
    assert_eq!(r.verdict, Verdict::Inconclusive);
    assert!(r.reasons[0].contains("different work (items +20.0 %, tolerance ±0.5 %)"), "{:?}", r.reasons);
    let accept = PipelineConfig { accept_workload_mismatch: true, ..Default::default() };
    let r = run(&rows, &[1], &[101], &accept);
    assert_eq!(r.stages[0].normalised.as_deref(), Some("per_item"));
    assert_eq!(r.stages[0].cpu_change_pct, 0.0, "the same CPU per item");
    assert_ne!(r.verdict, Verdict::Regression);
    // With repeats the same CPU per item is shown to be no change.
    let mut rows = Vec::new();
    for (i, (cpu, el)) in tight(10.0, 30.0).into_iter().enumerate() {
        rows.push(row(1 + i as u32, "map", "END", cpu, el, 1000.0, 100.0));
        rows.push(row(101 + i as u32, "map", "END", cpu * 1.2, el, 1200.0, 100.0));
    }
    let r = run(&rows, &[1, 2, 3], &[101, 102, 103], &accept);
    assert_eq!((r.verdict, r.stages[0].cpu_outcome), (Verdict::Pass, MetricOutcome::Flat), "{:?}", r.reasons);
    // Within tolerance is the same work.
    let mut rows = Vec::new();
    for (i, (cpu, el)) in tight(10.0, 30.0).into_iter().enumerate() {
        rows.push(row(1 + i as u32, "map", "END", cpu, el, 1000.0, 100.0));
        rows.push(row(101 + i as u32, "map", "END", cpu, el, 1004.0, 100.0));
    }
    assert_eq!(run(&rows, &[1, 2, 3], &[101, 102, 103], &PipelineConfig::default()).verdict, Verdict::Pass);
}

#[test]
fn rule6_the_four_quadrants() {
    // From three trials an arm (one pair measures no spread: below).
    let (v, why) = verdict_of(&tight(10.0, 30.0), &tight(16.0, 30.0));
    assert_eq!(v, Verdict::Regression, "CPU higher, elapsed flat: {why}");
    assert_eq!(verdict_of(&tight(10.0, 30.0), &tight(16.0, 45.0)).0, Verdict::Regression, "CPU higher, elapsed higher");
    let (v, why) = verdict_of(&tight(10.0, 30.0), &tight(6.0, 30.0));
    assert_eq!((v, why.contains("cheaper")), (Verdict::Pass, true), "{why}");
    // The tradeoffs and "no change".
    let (v, why) = verdict_of(&tight(10.0, 30.0), &tight(13.0, 15.0));
    assert_eq!(v, Verdict::Tradeoff, "{why}");
    assert!(why.contains("faster, more expensive"), "{why}");
    let (v, why) = verdict_of(&tight(10.0, 30.0), &tight(7.0, 45.0));
    assert_eq!(v, Verdict::Tradeoff, "{why}");
    assert!(why.contains("cheaper, slower"), "{why}");
    let (v, why) = verdict_of(&tight(10.0, 30.0), &[(10.005, 30.02), (9.992, 29.98), (10.004, 30.01)]);
    assert_eq!((v, why.contains("no change")), (Verdict::Pass, true), "{why}");
    // A detected change inside both margins is negligible: pass, with the change reported.
    let (v, why) = verdict_of(&tight(10.0, 30.0), &tight(10.0, 30.5));
    assert_eq!((v, why.contains("negligible change")), (Verdict::Pass, true), "{why}");
    // From one pair and no profile nothing about CPU can be tested (no spread measured, method 3): not
    // "no change", and not a regression either, however large.
    for treatment in [(10.2, 31.0), (16.0, 30.0), (6.0, 30.0)] {
        let (v, why) = verdict_of(&[(10.0, 30.0)], &[treatment]);
        assert_eq!(v, Verdict::Inconclusive, "{why}");
        assert!(why.contains("CPU undecided") && why.contains("untested: one pair and no noise profile"), "{why}");
    }
}

#[test]
fn rule6_an_elapsed_only_change_needs_repeats() {
    // Five tight controls against one treatment trial: CPU is shown flat; elapsed is not tested from fewer
    // than three trials an arm (stragglers), and its −50 % point change asks for repeats.
    let controls = [(10.0, 30.0), (10.01, 30.03), (9.99, 29.97), (10.005, 30.01), (9.995, 29.99)];
    let (v, why) = verdict_of(&controls, &[(10.0, 15.0)]);
    assert_eq!(v, Verdict::Inconclusive, "{why}");
    assert!(why.contains("elapsed-only change from too few trials"), "{why}");
    // Inside the elapsed margin, the decided CPU stands: pass, elapsed undecided.
    let (v, why) = verdict_of(&controls, &[(10.0, 27.0)]);
    assert_eq!(v, Verdict::Pass, "{why}");
    assert!(why.contains("elapsed undecided") && why.contains("untested: fewer than 3 trials an arm"), "{why}");
    let (v, why) = verdict_of(&tight(10.0, 30.0), &tight(10.0, 15.0));
    assert_eq!(v, Verdict::Pass, "{why}");
    assert!(why.contains("latency win"), "{why}");
    let (v, why) = verdict_of(&tight(10.0, 30.0), &tight(10.0, 60.0));
    assert_eq!(v, Verdict::Regression);
    assert!(why.contains("slower at equal cost"), "{why}");
}

#[test]
fn noise_rules_floor_margin_and_undecided_repeats() {
    // Below the 0.05 CPU-s floor in both arms: not tested, flat, and said so.
    let (v, why) = verdict_of(&[(0.02, 1.0)], &[(0.04, 1.0)]);
    assert_eq!(v, Verdict::Pass, "{why}");
    assert!(why.contains("CPU below the 0.05 CPU-s floor"), "{why}");
    assert!(why.contains("CPU too small to measure") && !why.contains("no change"), "a doubled tiny stage is not called unchanged: {why}");
    // The floor raises a small stage's margin: +30 % of 0.10 CPU-s (0.03 CPU-s) is detected but negligible.
    let (rows, c, tr) = two_arms(&tight(0.10, 1.0), &tight(0.13, 1.0));
    let r = run(&rows, &c, &tr, &PipelineConfig::default());
    let s = &r.stages[0];
    assert_eq!((s.cpu_outcome, s.cpu_negligible, r.verdict), (MetricOutcome::Higher, true, Verdict::Pass), "{:?}", r.reasons);
    assert_eq!(s.thresholds.cpu_pct, 50.0, "0.05 CPU-s of a 0.10 CPU-s stage");
    assert!(r.reasons[0].contains("negligible"), "{:?}", r.reasons);
    // A 25 % CPU change never reads as flat, even from one pair (untested there: no spread measured).
    let (rows, c, tr) = two_arms(&[(4.0, 10.0)], &[(5.0, 10.0)]);
    assert_ne!(run(&rows, &c, &tr, &PipelineConfig::default()).stages[0].cpu_outcome, MetricOutcome::Flat);
    // Same-code repeats ~3 % apart never read as a regression.
    assert_ne!(verdict_of(&[(4.0, 10.0), (4.12, 10.2)], &[(4.12, 10.1), (4.0, 10.0)]).0, Verdict::Regression);
    // Repeats that straddle the margin: undecided, with what it would take.
    let (rows, c, tr) = two_arms(&[(10.0, 30.0), (12.5, 30.0)], &[(11.5, 30.0), (14.0, 30.0)]);
    let r = run(&rows, &c, &tr, &PipelineConfig::default());
    let s = &r.stages[0];
    assert_eq!(s.cpu_outcome, MetricOutcome::Unclear);
    assert_eq!(r.verdict, Verdict::Inconclusive);
    assert!(r.reasons[0].contains("CPU undecided") && r.reasons[0].contains("more pairs would decide it"), "{:?}", r.reasons);
    let test = s.cpu_test.as_ref().unwrap();
    assert!(test.mde_pct.unwrap() > 10.0 && test.more_pairs.unwrap() > 1, "{test:?}");
    assert_eq!((test.spread.as_str(), test.df), ("run", 2.0), "two trials an arm: the run's own 2 df, nothing borrowed");
    assert!(s.cpu_interval_pct.is_some() && s.cpu_p_value.is_some());
    // Apart by ~3× (real rows of the example): two trials an arm (2 df: t ≈ 11 at the family's level)
    // do not decide it, three do.
    let (rows, c, tr) = two_arms(&[(1.51, 2.7), (1.55, 2.8)], &[(5.70, 4.7), (4.46, 4.8)]);
    assert_eq!(run(&rows, &c, &tr, &PipelineConfig::default()).stages[0].cpu_outcome, MetricOutcome::Unclear);
    let (rows, c, tr) = two_arms(&[(1.51, 2.7), (1.55, 2.8), (1.49, 2.7)], &[(5.70, 4.7), (4.46, 4.8), (5.10, 4.7)]);
    let r = run(&rows, &c, &tr, &PipelineConfig::default());
    assert_eq!(r.stages[0].cpu_outcome, MetricOutcome::Higher, "{:?}", r.reasons);
    assert_eq!(r.verdict, Verdict::Regression);
    assert!(r.stages[0].cpu_interval_pct.unwrap()[0] > 0.0, "detected: the interval excludes zero");
    // … and the same separation downwards is lower.
    assert_eq!(verdict_of(&[(5.70, 4.7), (4.46, 4.8), (5.10, 4.7)], &[(1.51, 2.7), (1.55, 2.8), (1.49, 2.7)]).0, Verdict::Pass);
    // Separated by +20 % (an A/A on a busy node, real rows): its own spread (8 %) widens the default's; unclear.
    let (rows, c, tr) = two_arms(&[(1.10, 2.6), (1.23, 2.5)], &[(1.35, 2.5), (1.45, 2.6)]);
    assert_eq!(run(&rows, &c, &tr, &PipelineConfig::default()).stages[0].cpu_outcome, MetricOutcome::Unclear);
    // Separated, but by less than the spread: still unclear.
    let (rows, c, tr) = two_arms(&[(10.0, 30.0), (13.0, 30.0)], &[(13.5, 30.0), (17.0, 30.0)]);
    let r = run(&rows, &c, &tr, &PipelineConfig::default());
    assert_eq!(r.stages[0].cpu_outcome, MetricOutcome::Unclear, "{:?} {:?}", r.reasons, r.stages[0].cpu_test);
    // A single treatment against noisy controls (CV 30 %): +15 % is not a regression.
    let noisy = [(10.0, 30.0), (13.0, 30.0), (7.0, 30.0)];
    assert_ne!(verdict_of(&noisy, &[(11.5, 30.0)]).0, Verdict::Regression);
}

#[test]
fn several_treatments_are_judged_each_and_the_worst_decides() {
    let mut rows = Vec::new();
    for (i, (cpu, el)) in tight(10.0, 30.0).into_iter().enumerate() {
        let i = i as u32;
        rows.push(row(1 + i, "map", "END", cpu, el, 1000.0, 100.0));
        rows.push(row(101 + i, "map", "END", cpu, el, 1000.0, 100.0));
        rows.push(row(201 + i, "map", "END", cpu * 1.4, el, 1000.0, 100.0));
    }
    let arms =
        vec![ArmSpec { name: "same".into(), trials: t(&[101, 102, 103]) }, ArmSpec { name: "heavier".into(), trials: t(&[201, 202, 203]) }];
    let r = judge(&rows, &t(&[1, 2, 3]), &arms, &PipelineConfig::default()).unwrap();
    assert_eq!(r.method.as_ref().unwrap().family_cpu, 2, "both arms' map stage are in one family");
    assert_eq!(r.verdict, Verdict::Regression);
    assert_eq!(
        r.treatments.iter().map(|a| (a.name.as_str(), a.verdict)).collect::<Vec<_>>(),
        [("same", Verdict::Pass), ("heavier", Verdict::Regression)]
    );
    assert_eq!(r.stages, r.treatments[0].stages, "top-level stages are the first treatment's");
}

/// A small deterministic generator for the property tests.
struct Gen(u64);
impl Gen {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
}

/// (CPU-s, elapsed s) per trial.
type Trials = Vec<(f64, f64)>;

fn random_case(g: &mut Gen) -> (Trials, Trials) {
    let (nc, nt) = (1 + (g.unit() * 4.0) as usize, 1 + (g.unit() * 4.0) as usize);
    let base = g.range(0.2, 50.0);
    let shift = g.range(0.6, 1.6);
    let c = (0..nc).map(|_| (base * g.range(0.95, 1.05), g.range(5.0, 60.0))).collect();
    let t = (0..nt).map(|_| (base * shift * g.range(0.95, 1.05), g.range(5.0, 60.0))).collect();
    (c, t)
}

#[test]
fn property_identical_arms_never_regress() {
    let mut g = Gen(0x1234_5678_9abc_def1);
    for _ in 0..300 {
        let (c, _) = random_case(&mut g);
        let (v, why) = verdict_of(&c, &c);
        assert_ne!(v, Verdict::Regression, "{c:?}: {why}");
    }
}

#[test]
fn property_scaling_all_cpu_keeps_the_verdict() {
    let mut g = Gen(0x0bad_cafe_f00d_0001);
    for _ in 0..300 {
        let (c, t) = random_case(&mut g);
        let k = g.range(2.0, 10.0);
        let scale = |xs: &[(f64, f64)]| xs.iter().map(|&(cpu, el)| (cpu * k, el)).collect::<Vec<_>>();
        // Scaling up can lift a change above the absolute floor, so compare only cases clear of it.
        let (mc, mt) = (c.iter().map(|x| x.0).sum::<f64>() / c.len() as f64, t.iter().map(|x| x.0).sum::<f64>() / t.len() as f64);
        if (mt - mc).abs() < 0.05 {
            continue;
        }
        assert_eq!(verdict_of(&c, &t).0, verdict_of(&scale(&c), &scale(&t)).0, "{c:?} vs {t:?} ×{k}");
    }
}

#[test]
fn property_row_order_and_duplicates_never_change_the_verdict() {
    let mut g = Gen(0x5151_5151_5151_5151);
    for _ in 0..200 {
        let (c, t) = random_case(&mut g);
        let (rows, ci, ti) = two_arms(&c, &t);
        let base = run(&rows, &ci, &ti, &PipelineConfig::default());
        let mut shuffled = rows.clone();
        shuffled.rotate_left((g.unit() * rows.len() as f64) as usize);
        shuffled.reverse();
        let extra = shuffled[0].clone();
        shuffled.push(extra);
        let again = run(&shuffled, &ci, &ti, &PipelineConfig::default());
        assert_eq!((again.verdict, &again.stages), (base.verdict, &base.stages));
        assert_eq!(again.duplicates_dropped, 1);
    }
}

#[test]
fn intervals_from_one_or_two_degrees_of_freedom_stay_readable() {
    // Two pairs that disagree (1 df): Student's t at the family's level is in the hundreds, and the
    // interval's upper end would be a 20-digit percentage. It is stated as at most +10000 %, and so is
    // what the run could detect; every number in the reasons stays short.
    let (rows, c, tr) = two_arms(&[(10.0, 30.0), (10.0, 30.0)], &[(14.0, 30.0), (30.0, 30.0)]);
    let r = run(&rows, &c, &tr, &PipelineConfig::default());
    let test = r.stages[0].cpu_test.as_ref().unwrap();
    assert!(test.interval_pct[1] <= judge::stats::MAX_STATED_PCT && test.interval_pct.iter().all(|v| v.is_finite()), "{test:?}");
    assert!(test.mde_pct.is_none_or(|m| m <= judge::stats::MAX_STATED_PCT), "{test:?}");
    let words = r.reasons.join(" ");
    for number in words.split(|ch: char| !(ch.is_ascii_digit() || ch == '.')).filter(|n| !n.is_empty()) {
        assert!(number.chars().filter(char::is_ascii_digit).count() <= 8, "a number nobody can read: {number} in {words}");
    }
    assert!(words.contains("≥ +10000.0 %") || words.contains("nothing below ±10000 %"), "{words}");
}

/// Two stages over four pairs: "hash" with the given treatment factor (tight), "read" (noisy, CV ≈ 15 %)
/// with the given factor, each trial's work the same unless `read_items` differs.
fn cheaper_rows(hash: f64, read: f64, read_items: f64) -> (Vec<StageRow>, Vec<u32>, Vec<u32>) {
    let noise = [1.0, 1.18, 0.84, 1.05];
    let mut rows = Vec::new();
    for (i, n) in noise.iter().enumerate() {
        let i = i as u32;
        let jitter = 1.0 + 0.002 * i as f64;
        rows.push(row(1 + i, "hash", "END", 40.0 * jitter, 60.0, 1000.0, 100.0));
        rows.push(row(101 + i, "hash", "END", 40.0 * hash * jitter, 60.0, 1000.0, 100.0));
        rows.push(row(1 + i, "read", "END", 2.0 * n, 5.0, 1000.0, 100.0));
        // The treatment's read noise is a different draw: the stage stays undecided.
        rows.push(row(101 + i, "read", "END", 2.0 * read * noise[(i as usize + 1) % 4], 5.0, read_items, 100.0));
    }
    (rows, vec![1, 2, 3, 4], vec![101, 102, 103, 104])
}

#[test]
fn an_improvement_without_a_detected_regression_passes_with_each_undecided_stage_bounded() {
    // One stage −50 % for sure, the other undecided: the total is decided lower, nothing is detected
    // higher, so the arm passes (cheaper) and the undecided stage says how much worse it could still be.
    let (rows, c, tr) = cheaper_rows(0.5, 1.0, 1000.0);
    let r = run(&rows, &c, &tr, &PipelineConfig::default());
    let read = r.stages.iter().find(|s| s.stage == "read").unwrap();
    assert_eq!(read.cpu_outcome, MetricOutcome::Unclear, "{:?}", read.reasons);
    let total = r.total.as_ref().unwrap();
    assert_eq!(total.cpu_outcome, MetricOutcome::Lower, "{:?}", total.reasons);
    assert_eq!(r.verdict, Verdict::Pass, "{:?}", r.reasons);
    assert!(r.reasons[0].starts_with("cheaper in total: pipeline total CPU lower"), "{:?}", r.reasons);
    let bound = read.cpu_test.as_ref().unwrap().interval_pct[1];
    assert!(
        r.reasons.iter().any(|x| x.starts_with("read: CPU undecided") && x.contains(&judge::pipeline::report::fmt_pct(bound))),
        "{:?}",
        r.reasons
    );
    // The total's CPU is in the family: three CPU tests, and its level is a Holm step, not the whole α_CPU.
    let method = r.method.as_ref().unwrap();
    assert_eq!(method.family_cpu, 3);
    assert!(total.cpu_test.as_ref().unwrap().alpha < method.alpha_cpu);

    // A stage detected higher is never hidden by a cheaper total.
    let (rows, c, tr) = cheaper_rows(0.5, 1.0, 1000.0);
    let mut rows = rows;
    let treated: Vec<String> = tr.iter().map(|&t| id(t)).collect();
    for r in rows.iter_mut().filter(|r| r.stage_name == "read" && treated.contains(&r.execution_id)) {
        r.cpu_time_total *= 3.0;
    }
    let r = run(&rows, &c, &tr, &PipelineConfig::default());
    assert_eq!(r.verdict, Verdict::Regression, "{:?}", r.reasons);
    // Nor a guardrail: different work in the undecided stage keeps it inconclusive.
    let (rows, c, tr) = cheaper_rows(0.5, 1.0, 1500.0);
    let r = run(&rows, &c, &tr, &PipelineConfig::default());
    assert_eq!(r.verdict, Verdict::Inconclusive, "{:?}", r.reasons);
    assert!(r.reasons.iter().any(|x| x.contains("different work")), "{:?}", r.reasons);
}

#[test]
fn a_margin_wider_than_the_suites_says_why() {
    // A 0.85 CPU-s stage: the 0.05 CPU-s floor makes its margin ±5.9 %, not the suite's ±2 %.
    let (rows, c, tr) = two_arms(&tight(0.85, 30.0), &tight(0.85, 30.0));
    let r = run(&rows, &c, &tr, &PipelineConfig::default());
    let t = r.stages[0].cpu_test.as_ref().unwrap();
    assert_eq!(t.margin_pct, 5.9);
    assert_eq!(t.margin_why.as_deref(), Some("the 0.05 CPU-s floor on a 0.850 CPU-s stage"));
    assert!(r.reasons[0].contains("±5.9 % (the 0.05 CPU-s floor on a 0.850 CPU-s stage)"), "{:?}", r.reasons);
    let md = judge::pipeline::render::markdown(&r, &[]);
    assert!(md.contains("1 stage held to a wider margin by the floor"), "{md}");
    // A stage large enough keeps the suite's margin and says nothing more.
    let (rows, c, tr) = two_arms(&tight(10.0, 30.0), &tight(10.0, 30.0));
    let r = run(&rows, &c, &tr, &PipelineConfig::default());
    assert_eq!(r.stages[0].cpu_test.as_ref().unwrap().margin_why, None);
    assert!(r.reasons[0].contains("within ±2 %:"), "{:?}", r.reasons);
}

#[test]
fn the_third_answer_passes_on_no_regression_of_x_fixed_before_the_run() {
    use judge::pipeline::method::NoRegression;
    use judge::pipeline::MethodConfig;
    // Same code, ±3 % noise, six trials an arm: nothing detected, but the 98 % interval (about ±3.7 %) is
    // wider than the ±2 % margin, so "equivalent" cannot be said.
    let cpu = [10.0, 10.3, 9.7, 10.2, 9.8, 10.0];
    let arm = |order: &[usize]| -> Vec<(f64, f64)> { order.iter().map(|&i| (cpu[i], 30.0)).collect() };
    let (rows, c, tr) = two_arms(&arm(&[0, 1, 2, 3, 4, 5]), &arm(&[3, 0, 5, 2, 1, 4]));
    let with = |no_regression| PipelineConfig { method: MethodConfig { no_regression, ..Default::default() }, ..Default::default() };
    // X = 8 %, set before the run: the one-sided 99 % bound lies below it — pass, saying X.
    let r = run(&rows, &c, &tr, &with(NoRegression::At(8.0)));
    assert_eq!(r.verdict, Verdict::Pass, "{:?}", r.reasons);
    assert_eq!(r.stages[0].cpu_outcome, MetricOutcome::NoRegression);
    assert!(r.reasons[0].starts_with("pass (no regression ≥ 8 %): 1 of 1 stages bounded below it"), "{:?}", r.reasons);
    let test = r.stages[0].cpu_test.as_ref().unwrap();
    let top = test.equivalence_interval_pct.unwrap()[1];
    assert!(top > 2.0 && top < 8.0 && test.no_regression_pct == Some(8.0), "{test:?}");
    assert_eq!(r.method.as_ref().unwrap().no_regression.as_ref().unwrap().pct, Some(8.0));
    // X = 3 %: the bound does not lie below it — undecided, as before.
    let r = run(&rows, &c, &tr, &with(NoRegression::At(3.0)));
    assert_eq!((r.verdict, r.stages[0].cpu_outcome), (Verdict::Inconclusive, MetricOutcome::Unclear), "{:?}", r.reasons);
    // Planned: six trials an arm at the default 5 % spread resolve about 8 %; twice that is above the 10 %
    // cap, so X is the cap — and the bound lies below it.
    let r = run(&rows, &c, &tr, &with(NoRegression::Plan));
    assert_eq!(r.verdict, Verdict::Pass, "{:?}", r.reasons);
    let plan = r.method.as_ref().unwrap().no_regression.clone().unwrap();
    let res = plan.resolves_pct.unwrap();
    assert!(res > 5.0 && res < 10.0, "{plan:?}");
    assert!(plan.pct == Some(10.0) && plan.from.starts_with("the cap of 10 %") && plan.from.contains("6 trials an arm"), "{plan:?}");
    // A cap the budget does not even resolve: no third answer, and the record says why.
    let capped = PipelineConfig {
        method: MethodConfig { no_regression: NoRegression::Plan, max_no_regression_pct: 5.0, ..Default::default() },
        ..Default::default()
    };
    let r = run(&rows, &c, &tr, &capped);
    assert_eq!(r.verdict, Verdict::Inconclusive, "{:?}", r.reasons);
    let plan = r.method.as_ref().unwrap().no_regression.clone().unwrap();
    assert!(plan.pct.is_none() && plan.from.contains("6 trials an arm") && plan.from.contains("not below the cap of 5 %"), "{plan:?}");
    // A detected regression stays one whatever X says.
    let worse: Vec<(f64, f64)> = arm(&[3, 0, 5, 2, 1, 4]).into_iter().map(|(c, e)| (c * 1.3, e)).collect();
    let (rows, c, tr) = two_arms(&arm(&[0, 1, 2, 3, 4, 5]), &worse);
    assert_eq!(run(&rows, &c, &tr, &with(NoRegression::At(8.0))).verdict, Verdict::Regression);
    // X is checked where it is set: below the margin or above the cap is refused, naming the problem.
    let bad = MethodConfig { no_regression: NoRegression::At(1.0), ..Default::default() };
    assert!(bad.check().unwrap_err().1.contains("below the CPU margin"));
    let bad = MethodConfig { no_regression: NoRegression::At(12.0), ..Default::default() };
    assert!(bad.check().unwrap_err().1.contains("above the cap of 10 %"));
}

/// Eight pairs of the same code on one stage whose first trial of a pair costs 10 % more CPU, run in the
/// given orders (`true`: the treatment first), with the positions given to the judge or not.
fn first_costs_more(treatment_first: [bool; 8], positions: bool) -> PipelineReport {
    let wobble = [0.002, -0.001, 0.0, 0.001, -0.002, 0.001, 0.0, -0.001];
    let (mut rows, mut control, mut treatment) = (Vec::new(), Vec::new(), Vec::new());
    for (i, &tf) in treatment_first.iter().enumerate() {
        let (c_tag, t_tag) = (1 + i as u32, 101 + i as u32);
        let cost = |first: bool, w: f64| 10.0 * (1.0 + w) * if first { 1.1 } else { 1.0 };
        rows.push(row(c_tag, "map", "END", cost(!tf, wobble[i]), 30.0, 1000.0, 100.0));
        rows.push(row(t_tag, "map", "END", cost(tf, -wobble[i]), 30.0, 1000.0, 100.0));
        let at = |first: bool| positions.then_some(if first { 0 } else { 1 });
        control.push(TrialSpec { execution_ids: vec![id(c_tag)], pair: Some(i as u32), position: at(!tf) });
        treatment.push(TrialSpec { execution_ids: vec![id(t_tag)], pair: Some(i as u32), position: at(tf) });
    }
    let config =
        PipelineConfig { method: judge::pipeline::MethodConfig { paired: true, ..Default::default() }, ..PipelineConfig::default() };
    judge(&rows, &control, &[ArmSpec { name: "treatment".into(), trials: treatment }], &config).unwrap()
}

#[test]
fn the_order_covariate_takes_a_first_trial_effect_out_of_the_change() {
    let balanced = [false, true, true, false, true, false, false, true];
    // Positions known, both orders: the change is adjusted for the order and the code is the same.
    let r = first_costs_more(balanced, true);
    let s = &r.treatments[0].stages[0];
    let order = s.cpu_test.as_ref().and_then(|t| t.order.clone()).expect("orders known");
    assert_eq!((order.control_first, order.treatment_first, order.adjusted), (4, 4, true));
    let first = order.first_pct.unwrap();
    assert!((first - 10.0).abs() < 0.5, "the first trial's extra is reported: {order:?}");
    let i = order.first_interval_pct.unwrap();
    assert!(i[0] > 9.0 && i[1] < 11.0, "{order:?}");
    assert_eq!((r.verdict, s.cpu_outcome), (Verdict::Pass, MetricOutcome::Flat), "{:?}", r.reasons);
    assert_eq!(s.cpu_test.as_ref().unwrap().df, 6.0, "n − 2 df");
    // The same trials without positions: the order effect is noise, ±10 % a pair, and nothing is decided.
    let blind = first_costs_more(balanced, false);
    assert_eq!(blind.treatments[0].stages[0].cpu_outcome, MetricOutcome::Unclear);
    assert!(blind.treatments[0].stages[0].cpu_test.as_ref().unwrap().order.is_none());
    // The control first in every pair: the order effect reads as a 9 % saving of the treatment, and one
    // order cannot tell them apart — the report says so rather than adjusting.
    let one_order = first_costs_more([false; 8], true);
    let s = &one_order.treatments[0].stages[0];
    assert_eq!(s.cpu_outcome, MetricOutcome::Lower);
    let order = s.cpu_test.as_ref().and_then(|t| t.order.clone()).unwrap();
    assert_eq!((order.control_first, order.treatment_first, order.adjusted, order.first_pct), (8, 0, false, None));
    let md = judge::pipeline::render::markdown(&one_order, &[]);
    assert!(md.contains("cannot be told apart"), "{md}");
    let md = judge::pipeline::render::markdown(&r, &[]);
    assert!(md.contains("adjusted for the order") && md.contains("+10"), "{md}");
}

/// A pass tells its news first: the stage detected cheaper, the largest change first; a stage too small to
/// measure comes last.
#[test]
fn a_passs_reasons_put_the_largest_detected_change_first_and_too_small_to_measure_last() {
    let mut rows = Vec::new();
    for (i, (cpu, el)) in tight(10.0, 30.0).into_iter().enumerate() {
        let (c, t) = (1 + i as u32, 101 + i as u32);
        // "a-tiny": under the CPU floor; "b-flat": unchanged; "c-cheaper": halved.
        rows.push(row(c, "a-tiny", "END", 0.01, el, 1000.0, 100.0));
        rows.push(row(t, "a-tiny", "END", 0.01, el, 1000.0, 100.0));
        rows.push(row(c, "b-flat", "END", cpu, el, 1000.0, 100.0));
        rows.push(row(t, "b-flat", "END", cpu, el, 1000.0, 100.0));
        rows.push(row(c, "c-cheaper", "END", cpu, el, 1000.0, 100.0));
        rows.push(row(t, "c-cheaper", "END", cpu / 2.0, el, 1000.0, 100.0));
    }
    let r = run(&rows, &[1, 2, 3], &[101, 102, 103], &PipelineConfig::default());
    assert_eq!(r.verdict, Verdict::Pass, "{:?}", r.reasons);
    let at = |stage: &str| r.reasons.iter().position(|x| x.starts_with(stage)).unwrap_or_else(|| panic!("{stage}: {:?}", r.reasons));
    assert!(at("c-cheaper") < at("b-flat") && at("b-flat") < at("a-tiny"), "{:?}", r.reasons);
    // The headline says the news with the stage table's number.
    let total = &r.treatments[0].total;
    assert_eq!(r.headline(), format!("pass — cheaper: {} CPU in total", judge::pipeline::report::fmt_pct(total.cpu_change_pct)));
    assert!(r.headline().starts_with("pass — cheaper: −25."), "{}", r.headline());
    // The other way round: a regression names its largest stage.
    let treated: Vec<String> = [101, 102, 103].iter().map(|t| id(*t)).collect();
    let mut worse = rows.clone();
    for r in worse.iter_mut().filter(|r| r.stage_name == "c-cheaper" && treated.contains(&r.execution_id)) {
        r.cpu_time_total *= 4.0; // half the control's before: now twice it
    }
    let r = run(&worse, &[1, 2, 3], &[101, 102, 103], &PipelineConfig::default());
    assert_eq!(r.verdict, Verdict::Regression, "{:?}", r.reasons);
    assert!(r.headline().starts_with("regression — +") && r.headline().ends_with("% CPU in c-cheaper"), "{}", r.headline());
}

/// One pair and no profile tests nothing: the headline gives the change as measured and why it decides
/// nothing, not the reasons' words again.
#[test]
fn an_untested_change_headlines_as_measured_and_why_it_decides_nothing() {
    let rows = vec![row(1, "map", "END", 10.0, 30.0, 1000.0, 100.0), row(101, "map", "END", 5.0, 30.0, 1000.0, 100.0)];
    let r = run(&rows, &[1], &[101], &PipelineConfig::default());
    assert_eq!(r.verdict, Verdict::Inconclusive, "{:?}", r.reasons);
    assert_eq!(r.headline(), "inconclusive — −50.0 % CPU in map, too few trials to test it");
}
