//! The sequential design on rows: when it stops, what it says it decided after which pair, and that its
//! report is the look it stopped at.

use judge::pipeline::aggregate::TrialSpec;
use judge::pipeline::report::MetricOutcome;
use judge::pipeline::rows::StageRow;
use judge::pipeline::sequential::{abba_blocks, Decision, Unit};
use judge::pipeline::{calibrate, judge_sequential, ArmSpec, PipelineConfig, PipelineReport, SequentialConfig};
use judge::Verdict;

fn id(tag: u32) -> String {
    format!("20261201-0000{:02}-{:08x}", tag % 100, 0xcd000000u32 + tag)
}

/// A deterministic wobble in [−1, 1] (no generator: the figures are the test's).
fn wobble(i: u32, stage: usize) -> f64 {
    (((i as f64 + 1.0) * 12.9898 + stage as f64 * 78.233).sin() * 43758.5453).fract() * 2.0 - 1.0
}

/// `pairs` pairs of a three-stage pipeline whose CPU wobbles by ±`noise_pct`; the treatment's stage 0
/// costs `effect_pct` more. Control trial i is tag i, treatment trial i tag 1000 + i.
fn pipeline(pairs: u32, noise_pct: f64, effect_pct: f64) -> (Vec<StageRow>, Vec<TrialSpec>, Vec<TrialSpec>) {
    let stages = ["map", "shuffle", "reduce"];
    let base = [20.0, 8.0, 12.0];
    let mut rows = Vec::new();
    let (mut c, mut t) = (Vec::new(), Vec::new());
    for i in 0..pairs {
        for (arm, tag) in [(0, i), (1, 1000 + i)] {
            for (s, name) in stages.iter().enumerate() {
                let effect = if arm == 1 && s == 0 { 1.0 + effect_pct / 100.0 } else { 1.0 };
                let cpu = base[s] * effect * (1.0 + noise_pct / 100.0 * wobble(tag, s));
                let elapsed = cpu * 2.0 * (1.0 + 0.05 * wobble(tag + 7, s));
                rows.push(StageRow::new(&id(tag), name, "END", cpu, elapsed, 1e5, 1e7, 1e8));
            }
            let spec = TrialSpec { execution_ids: vec![id(tag)], pair: Some(i), position: None };
            if arm == 0 {
                c.push(spec);
            } else {
                t.push(spec);
            }
        }
    }
    (rows, c, t)
}

fn sequential(rows: &[StageRow], c: &[TrialSpec], t: &[TrialSpec], config: &PipelineConfig, seq: SequentialConfig) -> PipelineReport {
    judge_sequential(rows, c, &[ArmSpec { name: "treatment".into(), trials: t.to_vec() }], config, &seq).unwrap()
}

#[test]
fn an_obvious_regression_stops_at_the_minimum_with_a_profile() {
    let (rows, c, t) = pipeline(10, 1.0, 20.0);
    // A profile from 10 same-code trials of the same pipeline.
    let (prows, pc, _) = pipeline(10, 1.0, 0.0);
    let profile = calibrate(&prows, &pc, None).unwrap();
    let config = PipelineConfig { noise: Some(profile), ..PipelineConfig::default() };
    let r = sequential(&rows, &c, &t, &config, SequentialConfig::default());
    let q = r.sequential.as_ref().unwrap();
    assert_eq!(r.verdict, Verdict::Regression, "{:?}", r.reasons);
    assert_eq!((q.pairs_used, q.pairs_given, q.stopped), (2, 10, true), "{q:?}");
    assert!(q.stop_reason.contains("a regression is decided after 2 pairs:"), "{}", q.stop_reason);
    let map = q.metrics.iter().find(|m| m.stage == "map" && m.metric == "cpu").unwrap();
    assert_eq!((map.decision, map.outcome, map.decided_after), (Decision::Different, MetricOutcome::Higher, Some(2)));
    // The report is the look it stopped at: two pairs, tested by the sequential design.
    assert_eq!(r.stages[0].trials, [2, 2]);
    let test = r.stages.iter().find(|s| s.stage == "map").unwrap().cpu_test.as_ref().unwrap();
    assert!(test.analysis.starts_with("sequential"), "{test:?}");
    assert!(test.interval_pct[0] > 0.0, "{test:?}");
    let line = judge::pipeline::render::method_line(&r);
    assert!(line.contains("sequential") && line.contains("Stopped: 2 of 10 pairs used"), "{line}");
    // report.md (and the PR comment) says when and why it stopped, under its heading.
    let md = judge::pipeline::render::markdown(&r, &[]);
    let said = md.lines().nth(2).unwrap_or_default();
    assert!(said.starts_with("**Stopped after 2 of 10 pairs:** a regression is decided after 2 pairs: map: CPU higher."), "{md}");
    assert!(said.contains("CPU: map higher after 2 pairs"), "{said}");
}

#[test]
fn without_a_profile_an_obvious_regression_needs_a_few_more_pairs() {
    let (rows, c, t) = pipeline(12, 1.0, 20.0);
    let r = sequential(&rows, &c, &t, &PipelineConfig::default(), SequentialConfig::default());
    let q = r.sequential.as_ref().unwrap();
    assert_eq!(r.verdict, Verdict::Regression);
    assert!(q.stopped && q.pairs_used > 2 && q.pairs_used < 12, "{q:?}");
}

#[test]
fn same_code_is_decided_equivalent_on_cpu_and_elapsed_may_stay_open() {
    // Without the third answer (it would stop sooner, on "no regression of X": the next test).
    let (rows, c, t) = pipeline(40, 1.0, 0.0);
    let off = judge::pipeline::MethodConfig { no_regression: judge::pipeline::method::NoRegression::Off, ..Default::default() };
    let r = sequential(&rows, &c, &t, &PipelineConfig { method: off, ..PipelineConfig::default() }, SequentialConfig::default());
    let q = r.sequential.as_ref().unwrap();
    assert_eq!(r.verdict, Verdict::Pass, "{:?}", r.reasons);
    assert!(q.stopped && q.pairs_used < 40, "{q:?}");
    assert!(q.stop_reason.starts_with("every CPU metric is decided"), "{}", q.stop_reason);
    for m in q.metrics.iter().filter(|m| m.metric == "cpu") {
        assert_eq!(m.decision, Decision::Equivalent, "{m:?}");
        assert!(m.decided_after.is_some_and(|k| k <= q.pairs_used));
    }
    // Nothing is claimed, and the looks are recorded one a pair.
    assert!(r.stages.iter().all(|s| !matches!(s.cpu_outcome, MetricOutcome::Higher | MetricOutcome::Lower)));
    assert_eq!(q.looks.len(), q.pairs_used);
    assert!(q.looks.last().unwrap().stop && q.looks.iter().rev().skip(1).all(|l| !l.stop));
}

#[test]
fn same_code_stops_on_no_regression_of_x_fixed_from_the_budget() {
    // ±3 % noise: the ±2 % margin is out of the 40 pairs' reach, so the third answer is the futility stop.
    let (rows, c, t) = pipeline(40, 3.0, 0.0);
    let off = judge::pipeline::MethodConfig { no_regression: judge::pipeline::method::NoRegression::Off, ..Default::default() };
    let strong = sequential(&rows, &c, &t, &PipelineConfig { method: off, ..PipelineConfig::default() }, SequentialConfig::default());
    let seq = SequentialConfig { unit: Unit::Pair, max_pairs: Some(40) };
    let r = sequential(&rows, &c, &t, &PipelineConfig::default(), seq);
    let q = r.sequential.as_ref().unwrap();
    // X is planned from the budget (40 pairs at the default spread), not from these rows: stated in the record.
    let plan = r.method.as_ref().unwrap().no_regression.clone().unwrap();
    let x = plan.pct.expect("40 pairs at the default spread resolve below the cap");
    assert!(x > 2.0 && x <= 10.0 && plan.from.contains("40 pairs"), "{plan:?}");
    let same = sequential(&rows[..rows.len() / 2], &c[..20], &t[..20], &PipelineConfig::default(), seq);
    assert_eq!(same.method.unwrap().no_regression.unwrap().pct, Some(x), "fewer rows, the same budget: the same X");
    // It stops sooner than proving equivalence would, on the third answer, and passes saying X.
    assert_eq!(r.verdict, Verdict::Pass, "{:?}", r.reasons);
    assert!(q.stopped && q.pairs_used < strong.sequential.as_ref().unwrap().pairs_used, "{q:?}");
    assert!(q.metrics.iter().any(|m| m.metric == "cpu" && m.decision == Decision::NoRegression), "{q:?}");
    let head = &r.reasons[0];
    assert!(head.starts_with(&format!("pass (no regression ≥ {}", judge::pipeline::report::fmt_margin(x))), "{head}");
    let map = r.stages.iter().find(|s| s.cpu_outcome == MetricOutcome::NoRegression).unwrap();
    assert_eq!(map.cpu_test.as_ref().unwrap().no_regression_pct, Some(x));
    assert!(
        map.reasons[0].contains("99 % one-sided bound +")
            && map.reasons[0].contains(&format!("below X = {}", judge::pipeline::report::fmt_margin(x))),
        "{:?}",
        map.reasons
    );
    // ±1 % noise: where equivalence is within the budget's reach (as projected from the look's estimate
    // and spread), the run goes on to it rather than settling for the weaker answer: shuffle's bound is
    // below X from its ninth pair, and it is decided equivalent later.
    let (quiet, qc, qt) = pipeline(40, 1.0, 0.0);
    let r = sequential(&quiet, &qc, &qt, &PipelineConfig::default(), seq);
    assert_eq!(r.verdict, Verdict::Pass, "{:?}", r.reasons);
    let q = r.sequential.as_ref().unwrap();
    let went_on = q.metrics.iter().filter(|m| m.metric == "cpu" && m.decision == Decision::Equivalent).any(|m| {
        let first_below = m.course.iter().find(|p| p.equivalence_interval_pct[1] < x).map(|p| p.pairs);
        first_below.is_some_and(|f| m.decided_after.is_some_and(|d| d > f))
    });
    assert!(went_on, "{q:?}");
    // A cap below what the budget resolves: no third answer, the run goes on to equivalence as before.
    let res = plan.resolves_pct.unwrap();
    let capped = judge::pipeline::MethodConfig { max_no_regression_pct: (res - 0.1).max(0.5), ..Default::default() };
    let r = sequential(&rows, &c, &t, &PipelineConfig { method: capped, ..PipelineConfig::default() }, seq);
    let plan = r.method.as_ref().unwrap().no_regression.clone().unwrap();
    assert!(plan.pct.is_none() && plan.from.contains("not below the cap of"), "{plan:?}");
    assert!(r.sequential.unwrap().metrics.iter().all(|m| m.decision != Decision::NoRegression));
}

#[test]
fn a_budget_ends_it_undecided_and_says_so() {
    let (rows, c, t) = pipeline(40, 1.0, 0.0);
    let r = sequential(&rows, &c, &t, &PipelineConfig::default(), SequentialConfig { unit: Unit::Pair, max_pairs: Some(3) });
    let q = r.sequential.as_ref().unwrap();
    assert_eq!((q.pairs_used, q.stopped), (3, false));
    assert!(q.stop_reason.starts_with("the budget (3 pairs) is spent with 3 CPU metric(s) undecided"), "{}", q.stop_reason);
    assert_eq!(r.verdict, Verdict::Inconclusive);
    let md = judge::pipeline::render::markdown(&r, &[]);
    assert!(
        md.contains(
            "**Not stopped, 3 of at most 3 pairs used:** the budget (3 pairs) is spent with 3 CPU metric(s) undecided. CPU: 3 undecided."
        ),
        "{md}"
    );
    // An undecided metric says about how many more pairs would decide it.
    assert!(r.stages.iter().all(|s| s.cpu_test.as_ref().is_some_and(|t| t.more_pairs.is_some())));
    // …in words, and no fixed-design MDE it does not have ("detects ±? %").
    let reasons = r.reasons.join("\n");
    assert!(reasons.contains("more pairs would decide it against ±") && !reasons.contains("±?"), "{reasons}");
}

#[test]
fn every_metric_keeps_its_intervals_look_by_look_until_it_is_decided() {
    let (rows, c, t) = pipeline(40, 1.0, 0.0);
    let r = sequential(&rows, &c, &t, &PipelineConfig::default(), SequentialConfig::default());
    let q = r.sequential.as_ref().unwrap();
    for m in &q.metrics {
        // One point a look, from the first whose interval is finite (no spread is borrowed: the run's own
        // degrees of freedom must carry the sequence; elapsed is tested from three) to the look that
        // decided it.
        let last = m.decided_after.unwrap_or(q.pairs_used);
        let looks: Vec<usize> = m.course.iter().map(|p| p.pairs).collect();
        assert!(looks.first().is_some_and(|f| *f <= if m.metric == "cpu" { 4 } else { 5 }), "{m:?}");
        assert_eq!(looks, (looks[0]..=last).collect::<Vec<_>>(), "{m:?}");
        for p in &m.course {
            assert!(p.interval_pct[0] <= p.estimate_pct && p.estimate_pct <= p.interval_pct[1], "{p:?}");
            // The equivalence sequence is at a laxer level: never wider than the detection one.
            assert!(p.equivalence_interval_pct[0] >= p.interval_pct[0] - 1e-9, "{p:?}");
            assert!(p.margin_pct > 0.0);
        }
        // The interval narrows as pairs come in…
        let width = |p: &judge::pipeline::sequential::CoursePoint| p.interval_pct[1] - p.interval_pct[0];
        // (a metric decided at its first finite look has one point: elapsed, equivalent within ±25 % at 5)
        assert!(m.course.len() == 1 || width(m.course.last().unwrap()) < width(&m.course[0]), "{m:?}");
        // …and an equivalent CPU metric's last look is the one whose equivalence interval fits the band
        // (a ratio band: ±2 % is −1.96 % … +2 %).
        let inside = |p: &judge::pipeline::sequential::CoursePoint| {
            let floor = (1.0 / (1.0 + p.margin_pct / 100.0) - 1.0) * 100.0;
            p.equivalence_interval_pct[0] > floor + 0.001 && p.equivalence_interval_pct[1] < p.margin_pct - 0.001
        };
        if m.metric == "cpu" && m.decision == Decision::Equivalent {
            assert!(inside(m.course.last().unwrap()), "{m:?}");
            assert!(m.course.iter().rev().skip(1).all(|p| !inside(p)), "{m:?}");
        }
    }
    // A decided regression's CPU interval clears zero at its deciding look.
    let (rows, c, t) = pipeline(12, 1.0, 20.0);
    let r = sequential(&rows, &c, &t, &PipelineConfig::default(), SequentialConfig::default());
    let map = r.sequential.as_ref().unwrap().metrics.iter().find(|m| m.stage == "map" && m.metric == "cpu").unwrap().clone();
    assert_eq!(map.course.last().map(|p| p.pairs), map.decided_after);
    assert!(map.course.last().unwrap().interval_pct[0] > 0.0, "{map:?}");
}

#[test]
fn a_failure_stops_it_at_once() {
    let (mut rows, c, t) = pipeline(10, 1.0, 0.0);
    let first_treatment = id(1000);
    for r in rows.iter_mut().filter(|r| r.execution_id == first_treatment && r.stage_name == "reduce") {
        r.status = "FAILED".into();
    }
    let r = sequential(&rows, &c, &t, &PipelineConfig::default(), SequentialConfig::default());
    let q = r.sequential.as_ref().unwrap();
    assert_eq!((r.verdict, q.pairs_used), (Verdict::Regression, 1), "{q:?}");
    assert!(q.stop_reason.contains("reduce: new failure"), "{}", q.stop_reason);
}

#[test]
fn abba_blocks_sum_two_pairs_each() {
    let (_, c, t) = pipeline(5, 1.0, 0.0);
    let (bc, arms) = abba_blocks(&c, &[ArmSpec { name: "treatment".into(), trials: t }]);
    assert_eq!(bc.len(), 2, "a trailing half block is left out");
    assert_eq!(bc[1].execution_ids, vec![id(2), id(3)]);
    assert_eq!((arms[0].trials[0].execution_ids.clone(), arms[0].trials[0].pair), (vec![id(1000), id(1001)], Some(0)));
}

#[test]
fn a_focused_look_stops_on_its_stage_alone() {
    // Stage "map" costs 20 % more; a focus on "shuffle" (unchanged) is not stopped by map's regression.
    let (rows, c, t) = pipeline(12, 1.0, 20.0);
    let config = PipelineConfig { focus: Some("shuffle".into()), ..PipelineConfig::default() };
    let r = sequential(&rows, &c, &t, &config, SequentialConfig::default());
    let q = r.sequential.as_ref().unwrap();
    assert_eq!(q.focus.as_deref(), Some("shuffle"));
    assert!(q.stop_reason.starts_with("the CPU of shuffle is decided") || !q.stopped, "{}", q.stop_reason);
    assert!(!q.stop_reason.contains("a regression is decided"), "map never steers it: {}", q.stop_reason);
    let shuffle = r.treatments[0].stages.iter().find(|s| s.stage == "shuffle").unwrap();
    // Equivalent once it stops; at the budget, undecided (never "higher": map's change is not shuffle's).
    let expected = if q.stopped { MetricOutcome::Flat } else { MetricOutcome::Unclear };
    assert_eq!(shuffle.cpu_outcome, expected, "{shuffle:?}");
    assert!(!q.stopped || q.pairs_used < 12 || q.stop_reason.contains("shuffle"), "{}", q.stop_reason);
    // The other stages are still reported: map is higher.
    let map = r.treatments[0].stages.iter().find(|s| s.stage == "map").unwrap();
    assert!(map.cpu_change_pct > 15.0, "{map:?}");
    // A focus on the moved stage stops once it is decided, at the whole CPU error rate.
    let config = PipelineConfig { focus: Some("map".into()), ..PipelineConfig::default() };
    let r = sequential(&rows, &c, &t, &config, SequentialConfig::default());
    let q = r.sequential.as_ref().unwrap();
    assert!(q.stopped && q.stop_reason.starts_with("the CPU of map is decided after"), "{}", q.stop_reason);
    let map = r.treatments[0].stages.iter().find(|s| s.stage == "map").unwrap();
    assert_eq!(map.cpu_outcome, MetricOutcome::Higher);
    assert_eq!(map.cpu_test.as_ref().map(|t| t.alpha), Some(PipelineConfig::default().method.alpha_cpu()), "a family of one");
}

#[test]
fn a_bisection_probe_is_decided_by_which_end_it_resembles() {
    // A noisy host (±25 % wobble, a pair's log difference spreads ≈ 0.2) and ends 20 % apart: an unmoved
    // probe need not prove itself flat within ±9.5 % (half the ends' change), only unlike the bad end.
    let (rows, c, t) = pipeline(40, 25.0, 0.0);
    let seq = SequentialConfig { unit: Unit::Pair, max_pairs: Some(40) };
    let focus = PipelineConfig { focus: Some("map".into()), ..PipelineConfig::default() };
    let halfway = PipelineConfig { method: judge::pipeline::MethodConfig { cpu_margin_pct: 9.5, ..focus.method }, ..focus.clone() };
    let by_margin = sequential(&rows, &c, &t, &halfway, seq);
    let which = PipelineConfig { focus_bad_end_pct: Some(20.0), ..halfway.clone() };
    let r = sequential(&rows, &c, &t, &which, seq);
    let q = r.sequential.as_ref().unwrap();
    let map = r.treatments[0].stages.iter().find(|s| s.stage == "map").unwrap();
    assert_eq!(map.cpu_outcome, MetricOutcome::Flat, "{:?}", map.reasons);
    let test = map.cpu_test.as_ref().unwrap();
    assert_eq!(test.bad_end_pct, Some(20.0));
    assert!(test.interval_pct[1] < 20.0, "the sequence excludes the bad end: {test:?}");
    assert!(map.reasons[0].contains("like the good end, it excludes the bad end's +20.0 %"), "{:?}", map.reasons);
    let used_margin = by_margin.sequential.as_ref().unwrap().pairs_used;
    assert!(q.stopped && q.pairs_used < used_margin, "which end: {} pairs; the halfway margin: {used_margin}", q.pairs_used);
    // A probe that moved as the bad end did reads moved (higher), not "like the good end".
    let (rows, c, t) = pipeline(40, 25.0, 20.0);
    let r = sequential(&rows, &c, &t, &which, seq);
    let map = r.treatments[0].stages.iter().find(|s| s.stage == "map").unwrap();
    assert_ne!(map.cpu_outcome, MetricOutcome::Flat, "{:?}", map.reasons);
}

#[test]
fn a_balanced_plan_starts_at_the_first_look_the_order_can_be_fitted() {
    // The obvious +20 % regression of the test above, run in balanced blocks (C T, then T C …): the plan's
    // orders are known and mix, so the sequence starts once the covariate can be fitted, at pair 4.
    let (rows, mut c, mut t) = pipeline(10, 1.0, 20.0);
    for (i, (c, t)) in c.iter_mut().zip(t.iter_mut()).enumerate() {
        let treatment_first = matches!(i % 4, 1 | 2);
        (c.position, t.position) = if treatment_first { (Some(1), Some(0)) } else { (Some(0), Some(1)) };
    }
    let (prows, pc, _) = pipeline(10, 1.0, 0.0);
    let config = PipelineConfig { noise: Some(calibrate(&prows, &pc, None).unwrap()), ..PipelineConfig::default() };
    let r = sequential(&rows, &c, &t, &config, SequentialConfig::default());
    let q = r.sequential.as_ref().unwrap();
    assert_eq!((r.verdict, q.min_pairs, q.pairs_used), (Verdict::Regression, 4, 4), "{q:?}");
    let test = r.stages.iter().find(|s| s.stage == "map").unwrap().cpu_test.clone().unwrap();
    let order = test.order.expect("the plan's orders");
    assert_eq!((order.control_first, order.treatment_first, order.adjusted), (2, 2, true));
    // The same orders all control first: the plain sequence, from the usual second pair, and the report
    // says the order cannot be told from the change.
    for (c, t) in c.iter_mut().zip(t.iter_mut()) {
        (c.position, t.position) = (Some(0), Some(1));
    }
    let r = sequential(&rows, &c, &t, &config, SequentialConfig::default());
    let q = r.sequential.as_ref().unwrap();
    assert_eq!((q.min_pairs, q.pairs_used), (2, 2), "{q:?}");
    assert!(r.order_line().unwrap().contains("cannot be told apart"), "{:?}", r.order_line());
}
