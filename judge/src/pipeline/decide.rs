//! The decision table for one stage (or the pipeline total) of one treatment arm. Every rule of the
//! pipeline verdict is here, in the order the table applies them; the first that matches wins.
//!
//! Judging takes two passes because the error rate is controlled across the whole experiment:
//! [`prepare`] applies the guardrails (rules 2–5) and estimates CPU and elapsed; the family's levels are
//! then set over every stage of every arm ([`super::family::holm`]); [`finish`] decides each metric at its
//! level against its margin and applies rule 6, the CPU/elapsed quadrants.

use super::aggregate::StageSums;
use super::estimate::{estimate, Estimate, Keyed, PairOrders, Prior};
use super::family::{bound_no_regression, decide, p_value, MetricTest};
use super::method::{MethodConfig, CPU_FLOOR_S, DEFAULT_CPU_SPREAD, DEFAULT_ELAPSED_SPREAD, ELAPSED_FLOOR_S, MIN_ELAPSED_TRIALS};
use super::noise::{StageNoise, StageThresholds};
use super::report::{fmt_pct, pct_change as change_pct, MetricOutcome, StageReport};
use crate::stats;
use crate::Verdict;

/// What the table needs to judge one stage.
pub struct StageInput<'a> {
    pub stage: &'a str,
    /// Each trial's sums with its pair key (the repeat index, when trials were interleaved).
    pub control: Vec<(Option<u32>, StageSums)>,
    pub treatment: Vec<(Option<u32>, StageSums)>,
    /// Treatment trials in which this stage failed (not retried).
    pub treatment_failures: usize,
    pub worker_ram: Option<f64>,
    pub tolerance_pct: f64,
    pub accept_mismatch: bool,
    /// This stage's spreads from the noise profile, if any.
    pub profile: Option<&'a StageNoise>,
    /// The run contradicted the profile over all its stages: it is not used, and the spread says so.
    pub profile_contradicted: bool,
    pub method: MethodConfig,
    /// X of the third answer, resolved before the first look (`super::power::no_regression`).
    pub no_regression_pct: Option<f64>,
    /// Each pair's order, when every pair's is known: the paired analysis's covariate.
    pub orders: Option<&'a PairOrders>,
}

/// A metric above its floor, estimated and waiting for its level.
pub struct Pending {
    pub estimate: Estimate,
    /// The two-sided p-value of "no change": what the family orders its tests by.
    pub p_value: f64,
    pub margin_pct: f64,
    /// Why the margin is wider than the suite's, when it is ("the 0.05 CPU-s floor on a 0.85 CPU-s stage").
    pub margin_why: Option<String>,
    /// X, the third answer's threshold (percent), fixed before the first look; `None`: no third answer.
    pub no_regression_pct: Option<f64>,
}

impl Pending {
    fn new(estimate: Estimate, (margin_pct, margin_why): (f64, Option<String>), no_regression_pct: Option<f64>) -> Pending {
        Pending { p_value: p_value(&estimate), estimate, margin_pct, margin_why, no_regression_pct }
    }

    /// The test as reported: with the margin's reason.
    pub fn tested(&self, mut test: MetricTest) -> MetricTest {
        test.margin_why = self.margin_why.clone();
        test.no_regression_pct = test.no_regression_pct.or(self.no_regression_pct);
        test
    }

    /// The fixed design's decision at `alpha`: detected, equivalent, no regression of X, or unclear.
    pub fn settle(&self, alpha: f64) -> (MetricOutcome, MetricTest) {
        let (o, t) = bound_no_regression(decide(&self.estimate, self.p_value, alpha, self.margin_pct), self.no_regression_pct);
        (o, self.tested(t))
    }
}

/// A stage after rules 2–5: decided by a guardrail, or measured and waiting for the family's levels.
pub enum Prepared {
    Decided(StageReport),
    /// `elapsed` is `None` below the floor or, with `elapsed_untested`, from too few trials to test;
    /// `cpu` is `None` below the floor or, with `cpu_untested`, without a spread to test against (one
    /// pair and no usable noise profile: [`Estimate::testable`]).
    Measured {
        report: StageReport,
        cpu: Option<Pending>,
        elapsed: Option<Pending>,
        cpu_untested: bool,
        elapsed_untested: bool,
    },
}

/// The margin of a stage, percent: the suite's, raised so that it is never below the floor in seconds —
/// with the reason when it is raised ("the 0.05 CPU-s floor on a 0.85 CPU-s stage"), which every report
/// prints beside the margin it applied.
fn margin(margin_pct: f64, floor: f64, control_mean: f64, unit: &str) -> (f64, Option<String>) {
    let floor_pct = if control_mean > 0.0 { 100.0 * floor / control_mean } else { 0.0 };
    if floor_pct > margin_pct {
        (floor_pct, Some(format!("the {floor} {unit} floor on a {} {unit} stage", crate::units::fmt_num(control_mean))))
    } else {
        (margin_pct, None)
    }
}

/// Rules 2–5, then the estimates rule 6 decides from.
pub fn prepare(input: &StageInput) -> Prepared {
    let unset = StageThresholds { cpu_pct: 0.0, elapsed_pct: 0.0, calibrated: false };
    let mut report = StageReport::numbers(input.stage, &input.control, &input.treatment, unset);
    let name = input.stage;
    let (nc, nt) = (input.control.len(), input.treatment.len());

    // 2. A failure in the treatment is a regression, whatever else.
    report.treatment_failures = input.treatment_failures;
    if input.treatment_failures > 0 {
        return Prepared::Decided(report.decide(
            Verdict::Regression,
            format!(
                "{name}: new failure (FAILED in {} of {} treatment trials)",
                input.treatment_failures,
                nt.max(input.treatment_failures)
            ),
        ));
    }
    // 3. Memory guardrail: above the worker's RAM where the control was not.
    if let Some(limit) = input.worker_ram {
        let (mc, mt) = (report.mem_peak_control, report.mem_peak_treatment);
        if mt > limit && mc <= limit {
            return Prepared::Decided(report.decide(
                Verdict::Regression,
                format!(
                    "{name}: memory guardrail: peak {:.0} MiB exceeds the worker limit of {:.0} MiB (control {:.0} MiB)",
                    mt / 1048576.0,
                    limit / 1048576.0,
                    mc / 1048576.0
                ),
            ));
        }
    }
    // 4. Present in one arm only.
    if nc == 0 || nt == 0 {
        let only = if nc == 0 { "treatment" } else { "control" };
        return Prepared::Decided(
            report.decide(Verdict::Inconclusive, format!("{name}: only the {only} ran this stage; stages cannot be paired")),
        );
    }
    // 5. Same work? Items first, then bytes; normalise only when the user accepts the mismatch.
    let tolerance = input.tolerance_pct;
    let items_off = report.items_change_pct.abs() > tolerance;
    let bytes_off = report.bytes_change_pct.abs() > tolerance;
    debug_assert_eq!(report.same_work(tolerance), !(items_off || bytes_off));
    let per = |sums: &[(Option<u32>, StageSums)], f: fn(&StageSums) -> f64| -> Vec<Keyed> {
        sums.iter().map(|(k, s)| (*k, s.cpu / f(s).max(1.0))).collect()
    };
    let (cpu_c, cpu_t): (Vec<Keyed>, Vec<Keyed>) = if items_off || bytes_off {
        if !input.accept_mismatch {
            let what = if items_off {
                format!("items {}", fmt_pct(report.items_change_pct))
            } else {
                format!("bytes {}", fmt_pct(report.bytes_change_pct))
            };
            return Prepared::Decided(report.decide(
                Verdict::Inconclusive,
                format!("{name}: different work ({what}, tolerance ±{tolerance} %); pass --accept-workload-mismatch to compare CPU per unit of work"),
            ));
        }
        if items_off {
            report.normalised = Some("per_item".into());
            (per(&input.control, |s| s.items), per(&input.treatment, |s| s.items))
        } else {
            report.normalised = Some("per_byte".into());
            (per(&input.control, |s| s.bytes), per(&input.treatment, |s| s.bytes))
        }
    } else {
        (input.control.iter().map(|(k, s)| (*k, s.cpu)).collect(), input.treatment.iter().map(|(k, s)| (*k, s.cpu)).collect())
    };
    if report.normalised.is_some() {
        let plain = |v: &[Keyed]| stats::mean(&v.iter().map(|p| p.1).collect::<Vec<_>>());
        report.cpu_change_pct = change_pct(plain(&cpu_c), plain(&cpu_t));
    }
    // 6 (first half). Each metric above its floor is estimated; below it, the stage is too small to measure.
    let m = input.method;
    let cpu_margin = margin(m.cpu_margin_pct, CPU_FLOOR_S, report.cpu_control, "CPU-s");
    let elapsed_margin = margin(m.elapsed_margin_pct, ELAPSED_FLOOR_S, report.elapsed_control, "s");
    let profile_cpu = input.profile.and_then(|p| p.cpu.prior());
    let profile_elapsed = input.profile.and_then(|p| p.elapsed.prior());
    report.thresholds = StageThresholds { cpu_pct: cpu_margin.0, elapsed_pct: elapsed_margin.0, calibrated: profile_cpu.is_some() };
    let above = |floor: f64, a: f64, b: f64| a.max(b) >= floor;
    let cpu_above = above(CPU_FLOOR_S, report.cpu_control, report.cpu_treatment);
    let said = |mut e: Estimate| {
        if input.profile_contradicted {
            e.spread.push_str("; profile contradicted by the run");
        }
        e
    };
    let cpu_estimate =
        cpu_above.then(|| said(estimate(&cpu_c, &cpu_t, m.paired, input.orders, profile_cpu, Prior::default_spread(DEFAULT_CPU_SPREAD))));
    let cpu_untested = cpu_estimate.as_ref().is_some_and(|e| !e.testable());
    let cpu = cpu_estimate.filter(Estimate::testable).map(|e| Pending::new(e, cpu_margin, input.no_regression_pct));
    let el_c: Vec<Keyed> = input.control.iter().map(|(k, s)| (*k, s.elapsed)).collect();
    let el_t: Vec<Keyed> = input.treatment.iter().map(|(k, s)| (*k, s.elapsed)).collect();
    let elapsed_above = above(ELAPSED_FLOOR_S, report.elapsed_control, report.elapsed_treatment);
    let elapsed_untested = elapsed_above && (nc < MIN_ELAPSED_TRIALS || nt < MIN_ELAPSED_TRIALS);
    let elapsed = (elapsed_above && !elapsed_untested).then(|| {
        // X is about CPU, the verdict; elapsed keeps its margin and its context role.
        Pending::new(
            said(estimate(&el_c, &el_t, m.paired, input.orders, profile_elapsed, Prior::default_spread(DEFAULT_ELAPSED_SPREAD))),
            elapsed_margin,
            None,
        )
    });
    report.cpu_below_floor = !cpu_above;
    report.elapsed_below_floor = !elapsed_above;
    Prepared::Measured { report, cpu, elapsed, cpu_untested, elapsed_untested }
}

/// One metric at its level: its outcome and test (flat and untested below the floor).
fn settle(pending: Option<Pending>, alpha: f64) -> (MetricOutcome, Option<MetricTest>) {
    match pending {
        None => (MetricOutcome::Flat, None),
        Some(p) => {
            let (o, t) = p.settle(alpha);
            (o, Some(t))
        }
    }
}

/// Rule 6: each metric decided at the level the family gave it, then the CPU/elapsed quadrants.
pub fn finish(prepared: Prepared, cpu_alpha: f64, elapsed_alpha: f64) -> StageReport {
    let (report, cpu, elapsed, cpu_untested, untested) = match prepared {
        Prepared::Decided(report) => return report,
        Prepared::Measured { report, cpu, elapsed, cpu_untested, elapsed_untested } => {
            (report, cpu, elapsed, cpu_untested, elapsed_untested)
        }
    };
    let cpu = if cpu_untested { (MetricOutcome::Unclear, None) } else { settle(cpu, cpu_alpha) };
    let elapsed = if untested { (MetricOutcome::Unclear, None) } else { settle(elapsed, elapsed_alpha) };
    quadrants(report, cpu, elapsed, untested)
}

/// Rule 6's second half, whichever design decided the metrics (this fixed one, or the sequential one of
/// [`super::sequential`]): each metric's outcome and test (none below the floor, or elapsed from too few
/// trials when `untested`), then the CPU/elapsed quadrants.
pub fn quadrants(
    mut report: StageReport,
    (cpu, cpu_test): (MetricOutcome, Option<MetricTest>),
    (elapsed, elapsed_test): (MetricOutcome, Option<MetricTest>),
    untested: bool,
) -> StageReport {
    // Too few trials to test elapsed, but its point change is beyond the margin: the old "wall-only
    // change from one pair" row, which asks for repeats rather than passing it.
    let elapsed_only = untested && report.elapsed_change_pct.abs() > report.thresholds.elapsed_pct;
    report.cpu_outcome = cpu;
    report.elapsed_outcome = elapsed;
    report.cpu_negligible = cpu_test.as_ref().is_some_and(|t| t.negligible);
    report.elapsed_negligible = elapsed_test.as_ref().is_some_and(|t| t.negligible);
    report.cpu_interval_pct = cpu_test.as_ref().map(|t| t.interval_pct);
    report.cpu_p_value = cpu_test.as_ref().map(|t| t.p_value);
    report.elapsed_interval_pct = elapsed_test.as_ref().map(|t| t.interval_pct);
    report.cpu_test = cpu_test;
    report.elapsed_test = elapsed_test;
    report.one_estimate_per_claim();
    let detail = report.detail();
    // A negligible change is a detected one inside the margin: it counts as flat for the verdict. Elapsed
    // has no third answer (X is about CPU): were it given one, it would read as undecided.
    let relevant = |o: MetricOutcome, negligible: bool| if negligible { MetricOutcome::Flat } else { o };
    use MetricOutcome::*;
    let elapsed = if elapsed == NoRegression { Unclear } else { elapsed };
    let x = report.cpu_test.as_ref().and_then(|t| t.no_regression_pct).map(crate::pipeline::report::fmt_margin).unwrap_or_default();
    let no_regression_why;
    let (verdict, why) = match (relevant(cpu, report.cpu_negligible), relevant(elapsed, report.elapsed_negligible)) {
        (NoRegression, Flat | Unclear | Lower | NoRegression) if !elapsed_only => {
            no_regression_why = format!("no CPU regression ≥ {x}");
            (Verdict::Pass, no_regression_why.as_str())
        }
        (NoRegression, _) if elapsed_only => {
            (Verdict::Inconclusive, "elapsed-only change from too few trials (fewer than 3 an arm); repeat with alternating trials")
        }
        (NoRegression, _) => (Verdict::Regression, "slower, CPU not detected higher"),
        (Unclear, _) => (Verdict::Inconclusive, "CPU undecided"),
        (Higher, Lower) => (Verdict::Tradeoff, "faster, more expensive"),
        (Higher, _) => (Verdict::Regression, "more CPU"),
        (Lower, Higher) => (Verdict::Tradeoff, "cheaper, slower"),
        (Lower, _) => (Verdict::Pass, "cheaper"),
        (Flat, Flat) if report.cpu_negligible || report.elapsed_negligible => (Verdict::Pass, "negligible change"),
        (Flat, Flat) if report.cpu_below_floor => (Verdict::Pass, "too small to measure"),
        (Flat, Flat) => (Verdict::Pass, "no change"),
        (Flat, Unclear | NoRegression) if elapsed_only => {
            (Verdict::Inconclusive, "elapsed-only change from too few trials (fewer than 3 an arm); repeat with alternating trials")
        }
        // CPU is the verdict and elapsed its context: an undecided elapsed leaves a decided CPU standing.
        (Flat, Unclear | NoRegression) if report.cpu_below_floor => (Verdict::Pass, "CPU too small to measure, elapsed undecided"),
        (Flat, Unclear | NoRegression) => (Verdict::Pass, "no CPU change, elapsed undecided"),
        (Flat, Lower) => (Verdict::Pass, "latency win"),
        (Flat, Higher) => (Verdict::Regression, "slower at equal cost"),
    };
    let reason = format!("{}: {why}: {detail}", report.stage);
    report.decide(verdict, reason)
}
