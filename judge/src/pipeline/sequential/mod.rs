//! The sequential design: look after every pair (or ABBA block) and stop as soon as the verdict is
//! settled, with error rates that hold however often it looks.
//!
//! **The test** of each metric is a mixture confidence sequence ([`sequence`]): exact however often
//! it looks.
//!
//! **The decisions**, read from two confidence sequences per metric, as the fixed design reads its two
//! intervals ([`super::family::decide`]):
//!
//! * *different*: the sequence at the metric's share of the family's error rate (Bonferroni: α_CPU / m over
//!   the m CPU tests, α_elapsed / m′ over elapsed) excludes 0 — higher or lower; *negligible* when it also
//!   lies inside ±margin.
//! * *equivalent*: not different, and the sequence, each side one-sided at α_equivalence
//!   ([`equivalence_level`]), lies inside ±margin (flat).
//! * *continue*: neither.
//!
//! A metric is decided once: its first decision is kept (the test of that metric has stopped), so a later
//! look can neither take a claim back nor add one. Each claim's error is bounded by its own sequence.
//!
//! **Stopping.** CPU is the primary outcome and decides when to stop; elapsed is reported as it stands.
//! The experiment stops when (a) a regression is decided — a guardrail (a failure, memory), a CPU change
//! detected higher and not negligible, or elapsed detected higher at an equivalent CPU — because no later
//! pair can make the verdict better than the fixed design would call it; or (b) every CPU metric is
//! decided (or below the floor, or decided by a guardrail). Otherwise it continues, up to the budget.
//!
//! **Why this and not a group-sequential design.** Alpha spending needs a maximum number of looks fixed in
//! advance and boundaries computed by recursive integration, and with an unknown spread its t-boundaries
//! are approximate. The mixture needs neither: it is exact for any number of looks, any budget (even
//! none), and a noise profile's degrees of freedom go straight into ν. What it pays is a boundary a little
//! wider than Wald's SPRT, which is optimal only for the one alternative it is tuned to; `arbiter simulate
//! --design sequential` measures the price.

pub mod record;
mod sequence;

pub use record::{CoursePoint, Decision, LookRecord, SequentialMetric, SequentialRecord, Unit};
pub use sequence::{
    bayes_factor, decide, decide_which_end, equivalence_level, interval, more_pairs, one_sided, radius_t, rejects, test, test_which_end,
    MIN_PAIRS, MIXTURE,
};

use super::aggregate::TrialSpec;
use super::decide::{quadrants, Pending, Prepared};
use super::family::MetricTest;
use super::method::NoRegression;
use super::power::{no_regression, Design};
use super::report::MetricOutcome;
use super::rows::StageRow;
use super::{fold_arm, ArmSpec, JudgeError, MethodConfig, PipelineConfig, PipelineReport, Summed};
use crate::Verdict;
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SequentialConfig {
    pub unit: Unit,
    /// The budget: stop after this many units even if undecided (`None`: every unit given).
    pub max_pairs: Option<usize>,
}

/// Merges consecutive pairs into ABBA blocks: control trials 2b and 2b + 1 (their execution ids summed)
/// against the same of each arm; a trailing half block is left out.
pub fn abba_blocks(control: &[TrialSpec], treatments: &[ArmSpec]) -> (Vec<TrialSpec>, Vec<ArmSpec>) {
    let merge = |trials: &[TrialSpec]| -> Vec<TrialSpec> {
        trials
            .chunks_exact(2)
            .enumerate()
            .map(|(b, two)| TrialSpec {
                execution_ids: two.iter().flat_map(|t| t.execution_ids.iter().cloned()).collect(),
                pair: Some(b as u32),
                // A block runs each arm first once: it has no order of its own.
                position: None,
            })
            .collect()
    };
    (merge(control), treatments.iter().map(|a| ArmSpec { name: a.name.clone(), trials: merge(&a.trials) }).collect())
}

/// A decided metric: kept as the look that decided it saw it.
struct Frozen {
    decision: Decision,
    outcome: MetricOutcome,
    test: MetricTest,
    after: usize,
}

type Key = (usize, String, &'static str);

/// The pipeline total's name as a key (no stage is called this: `prepare_arm` names it).
const TOTAL: &str = "pipeline total";

/// Judges a sequence of pairs as the sequential design would have seen them: a look after each unit (the
/// i-th control with the i-th trial of every arm; trials without a pair key get their position), and the
/// report of the look it stopped at, with its course in `sequential`.
pub fn judge_sequential(
    rows: &[StageRow],
    control: &[TrialSpec],
    treatments: &[ArmSpec],
    config: &PipelineConfig,
    seq: &SequentialConfig,
) -> Result<PipelineReport, JudgeError> {
    let keyed = |trials: &[TrialSpec]| -> Vec<TrialSpec> {
        trials.iter().enumerate().map(|(i, t)| TrialSpec { pair: t.pair.or(Some(i as u32)), ..t.clone() }).collect()
    };
    let control = keyed(control);
    let treatments: Vec<ArmSpec> = treatments.iter().map(|a| ArmSpec { name: a.name.clone(), trials: keyed(&a.trials) }).collect();
    let summed = Summed::new(rows, &control, &treatments)?;
    let config = PipelineConfig { method: MethodConfig { paired: true, ..config.method }, ..config.clone() };
    // X of the third answer, fixed before the first look from the budget (every unit given when none). A
    // focused look (a bisection's probe) asks only whether its stage moved: it has no third answer.
    let mut keys: Vec<u32> = control.iter().chain(treatments.iter().flat_map(|a| &a.trials)).filter_map(|t| t.pair).collect();
    keys.sort_unstable();
    keys.dedup();
    let budget = seq.max_pairs.unwrap_or(keys.len()).max(1);
    let method = if config.focus.is_some() { MethodConfig { no_regression: NoRegression::Off, ..config.method } } else { config.method };
    let planned = no_regression(budget, &method, config.noise.as_ref(), Design::Sequential);
    let config = PipelineConfig { no_regression_pct: planned.pct, ..config };
    let m = config.method;
    let last = keys.len().min(seq.max_pairs.unwrap_or(usize::MAX)).max(1);
    let first_look = first_look(&control, &treatments, &keys[..last]);
    let mut frozen: HashMap<Key, Frozen> = HashMap::new();
    let mut courses: HashMap<Key, Vec<CoursePoint>> = HashMap::new();
    let mut looks = Vec::new();
    for j in 1..=last {
        let key = keys[j - 1];
        let prepared = summed.prepare(&config, |t| t.pair.is_some_and(|p| p <= key));
        let count = |f: fn(&Prepared) -> bool| prepared.iter().flat_map(|a| &a.stages).filter(|s| f(s)).count().max(1);
        // Each arm's total CPU is in the CPU family (it can pass an arm whose stages are undecided).
        let totals = prepared.iter().filter(|a| a.total_cpu().is_some()).count();
        let cpu_tests = prepared.iter().flat_map(|a| &a.stages).filter(|s| matches!(s, Prepared::Measured { cpu: Some(_), .. })).count();
        let alpha_cpu = m.alpha_cpu() / (cpu_tests + totals).max(1) as f64;
        // A focused look (a bisection's step) makes one claim: the focus stage's CPU, at the whole CPU
        // error rate; the other stages keep their share and are reported, never steering the stop.
        let focus = config.focus.as_deref();
        let steers = |stage: &str| focus.is_none_or(|f| f == stage);
        let cpu_alpha_of = |stage: &str| if focus == Some(stage) { m.alpha_cpu() } else { alpha_cpu };
        // A bisection's probe: the focus stage's CPU decided by which end it resembles.
        let bad_end = config.focus_bad_end_pct.filter(|b| b.is_finite() && *b > -100.0 && *b != 0.0).map(|b| (b / 100.0).ln_1p());
        let which_end = |stage: &str, metric: &str| bad_end.filter(|_| metric == "cpu" && focus == Some(stage));
        let alpha_el = m.alpha_elapsed() / count(|s| matches!(s, Prepared::Measured { elapsed: Some(_), .. })) as f64;
        let has_control = summed.controls.iter().any(|t| t.pair.is_some_and(|p| p <= key));
        // This look's decisions.
        let (mut regression, mut undecided_cpu, mut undecided_el) = (None::<String>, 0, 0);
        for (a, arm) in prepared.iter().enumerate() {
            for s in &arm.stages {
                match s {
                    Prepared::Decided(r) => {
                        if r.verdict == Verdict::Regression && regression.is_none() {
                            regression = r.reasons.first().cloned();
                        }
                    }
                    Prepared::Measured { report, cpu, elapsed, cpu_untested, .. } => {
                        // No spread to test CPU against yet (one pair, no usable profile): undecided.
                        if *cpu_untested && steers(&report.stage) {
                            undecided_cpu += 1;
                        }
                        for (metric, pending, alpha) in [("cpu", cpu, cpu_alpha_of(&report.stage)), ("elapsed", elapsed, alpha_el)] {
                            let Some(p) = pending else { continue };
                            let k: Key = (a, report.stage.clone(), metric);
                            if !frozen.contains_key(&k) {
                                if let Some(point) = course_point(j, &p.estimate, alpha, p.margin_pct) {
                                    courses.entry(k.clone()).or_default().push(point);
                                }
                            }
                            if !frozen.contains_key(&k) && j >= first_look {
                                let ends = which_end(&report.stage, metric);
                                let (decision, outcome) = match ends {
                                    Some(b) => decide_which_end(&p.estimate, alpha, b),
                                    None => futility(
                                        decide(&p.estimate, alpha, p.margin_pct, p.no_regression_pct),
                                        &p.estimate,
                                        alpha,
                                        p.margin_pct,
                                        j,
                                        budget,
                                    ),
                                };
                                if decision != Decision::Continue {
                                    let test = p.tested(match ends {
                                        Some(b) => test_which_end(&p.estimate, alpha, p.margin_pct, b),
                                        None => test(&p.estimate, alpha, p.margin_pct, p.no_regression_pct),
                                    });
                                    frozen.insert(k.clone(), Frozen { decision, outcome, test, after: j });
                                }
                            }
                            match frozen.get(&k) {
                                None if metric == "cpu" && steers(&report.stage) => undecided_cpu += 1,
                                None if metric == "cpu" => {}
                                None => undecided_el += 1,
                                Some(_) => {}
                            }
                        }
                        let state = |metric: &'static str| frozen.get(&(a, report.stage.clone(), metric)).map(|f| (f.decision, f.outcome));
                        let higher = Some((Decision::Different, MetricOutcome::Higher));
                        let cpu_flat = (cpu.is_none() && !*cpu_untested) || matches!(state("cpu"), Some((Decision::Equivalent, _)));
                        if regression.is_none() && focus.is_none() && (state("cpu") == higher || (cpu_flat && state("elapsed") == higher)) {
                            let what = if state("cpu") == higher { "CPU higher" } else { "slower at equal cost" };
                            regression = Some(format!("{}: {what}", report.stage));
                        }
                    }
                }
            }
        }
        // The totals' CPU: decided and kept like a stage's, never steering the stop.
        if j >= first_look {
            for (a, arm) in prepared.iter().enumerate() {
                let Some(p) = arm.total_cpu() else { continue };
                let k: Key = (a, TOTAL.to_string(), "cpu");
                if let std::collections::hash_map::Entry::Vacant(slot) = frozen.entry(k) {
                    let decided = decide(&p.estimate, alpha_cpu, p.margin_pct, p.no_regression_pct);
                    let (decision, outcome) = futility(decided, &p.estimate, alpha_cpu, p.margin_pct, j, budget);
                    if decision != Decision::Continue {
                        let test = p.tested(test(&p.estimate, alpha_cpu, p.margin_pct, p.no_regression_pct));
                        slot.insert(Frozen { decision, outcome, test, after: j });
                    }
                }
            }
        }
        let focus_decided =
            focus.is_some_and(|f| prepared.iter().enumerate().any(|(a, _)| frozen.contains_key(&(a, f.to_string(), "cpu"))));
        let stop_reason = if let (Some(f), true) = (focus, focus_decided && regression.is_none()) {
            Some(format!("the CPU of {f} is decided after {j} {}", plural(seq.unit, j)))
        } else if let Some(r) = &regression {
            Some(format!("a regression is decided after {j} {}: {r}", plural(seq.unit, j)))
        } else if undecided_cpu == 0 && has_control {
            Some(format!("every CPU metric is decided after {} {}", j, plural(seq.unit, j)))
        } else {
            None
        };
        looks.push(LookRecord { pairs: j, undecided_cpu, undecided_elapsed: undecided_el, stop: stop_reason.is_some() });
        if stop_reason.is_none() && j < last {
            continue;
        }
        // The report of this look: every metric as it was decided, the undecided as they stand now.
        let stopped = stop_reason.is_some();
        let stop_reason = stop_reason.unwrap_or_else(|| {
            let budget = if j < keys.len() || seq.max_pairs == Some(j) { "the budget" } else { "every unit given" };
            format!("{budget} ({j} {}) is spent with {undecided_cpu} CPU metric(s) undecided", plural(seq.unit, j))
        });
        let mut metrics = Vec::new();
        let mut arms_out = Vec::new();
        let total_alpha: Vec<f64> = prepared.iter().map(|a| if a.total_cpu().is_some() { alpha_cpu } else { m.alpha_cpu() }).collect();
        for (a, arm) in prepared.into_iter().enumerate() {
            let mut settle = |stage: &str, metric: &'static str, pending: Option<Pending>, alpha: f64, record: bool| match pending {
                None => (MetricOutcome::Flat, None),
                Some(p) => {
                    let k: Key = (a, stage.to_string(), metric);
                    let (decision, outcome, t, after) = match frozen.get(&k) {
                        Some(f) => (f.decision, f.outcome, f.test.clone(), Some(f.after)),
                        None => {
                            let t = match which_end(stage, metric) {
                                Some(b) => test_which_end(&p.estimate, alpha, p.margin_pct, b),
                                None => test(&p.estimate, alpha, p.margin_pct, p.no_regression_pct),
                            };
                            (Decision::Continue, MetricOutcome::Unclear, p.tested(t), None)
                        }
                    };
                    if record {
                        metrics.push(SequentialMetric {
                            arm: arm.name.clone(),
                            stage: stage.to_string(),
                            metric: metric.into(),
                            decision,
                            outcome,
                            decided_after: after,
                            course: courses.remove(&k).unwrap_or_default(),
                        });
                    }
                    (outcome, Some(t))
                }
            };
            let mut stages = Vec::new();
            for s in arm.stages {
                stages.push(match s {
                    Prepared::Decided(r) => r.rounded(),
                    Prepared::Measured { report, cpu, elapsed, cpu_untested, elapsed_untested } => {
                        let name = report.stage.clone();
                        let c = if cpu_untested {
                            (MetricOutcome::Unclear, None)
                        } else {
                            settle(&name, "cpu", cpu, cpu_alpha_of(&name), true)
                        };
                        let e = if elapsed_untested {
                            (MetricOutcome::Unclear, None)
                        } else {
                            settle(&name, "elapsed", elapsed, alpha_el, true)
                        };
                        quadrants(report, c, e, elapsed_untested).rounded()
                    }
                });
            }
            // The pipeline total: its CPU in the family, its elapsed context at the metric's whole share.
            let total = match arm.total {
                Prepared::Decided(r) => r.rounded(),
                Prepared::Measured { report, cpu, elapsed, cpu_untested, elapsed_untested } => {
                    let c = if cpu_untested { (MetricOutcome::Unclear, None) } else { settle(TOTAL, "cpu", cpu, total_alpha[a], false) };
                    let e = if elapsed_untested {
                        (MetricOutcome::Unclear, None)
                    } else {
                        settle(TOTAL, "elapsed", elapsed, m.alpha_elapsed(), false)
                    };
                    quadrants(report, c, e, elapsed_untested).rounded()
                }
            };
            arms_out.push(fold_arm(arm.name, stages, total, arm.unpaired, [arm.controls, arm.trials]));
        }
        let family = |f: &dyn Fn(&SequentialMetric) -> bool| metrics.iter().filter(|x| f(x)).count();
        let mut record = m.record(family(&|x| x.metric == "cpu") + totals, family(&|x| x.metric == "elapsed"));
        record.no_regression = Some(planned.clone());
        let mut report = summed.report(&config, arms_out, record, Some(key));
        report.sequential = Some(SequentialRecord {
            unit: seq.unit,
            min_pairs: first_look,
            max_pairs: seq.max_pairs,
            pairs_given: keys.len(),
            pairs_used: j,
            stopped,
            stop_reason,
            mixture: MIXTURE.iter().map(|&(g, w)| [g, w]).collect(),
            metrics,
            looks,
            focus: config.focus.clone(),
        });
        return Ok(report);
    }
    unreachable!("the last look returns")
}

/// The first look that may decide: [`MIN_PAIRS`], or, when the plan's orders are known and mix (some
/// pairs ran the control first, some the treatment), the first look at which the order covariate can be
/// fitted — two pairs of each order seen ([`super::estimate::MIN_PAIRS_AN_ORDER`]). The orders are the plan's, fixed
/// before any trial ran, so starting there is one sequence started at a planned time, never a switch
/// from the plain test to the adjusted one midway (which would let either reach its level). A balanced
/// plan has each order twice in its first two blocks of two pairs: the first look is the fourth.
fn first_look(control: &[TrialSpec], treatments: &[ArmSpec], keys: &[u32]) -> usize {
    let position = |trials: &[TrialSpec]| -> Option<HashMap<u32, u32>> {
        trials.iter().map(|t| Some((t.pair?, t.position?))).collect::<Option<HashMap<u32, u32>>>()
    };
    let Some(control_at) = position(control) else { return MIN_PAIRS };
    let mut first = MIN_PAIRS;
    for arm in treatments {
        let Some(arm_at) = position(&arm.trials) else { continue };
        let orders: Option<Vec<bool>> = keys.iter().map(|k| Some(arm_at.get(k)? < control_at.get(k)?)).collect::<Option<Vec<bool>>>();
        let Some(orders) = orders else { continue };
        let each = |j: usize, o: bool| orders[..j].iter().filter(|&&x| x == o).count() >= super::estimate::MIN_PAIRS_AN_ORDER;
        if let Some(j) = (1..=orders.len()).find(|&j| each(j, true) && each(j, false)) {
            first = first.max(j);
        }
    }
    first
}

/// The third answer is a futility stop: a metric bounded below X stops there only when the budget left
/// (`budget` − `j` units) could not decide it more strongly — equivalent within the margin if its estimate
/// and spread held, nor detected if the change were [`super::method::FUTILITY_HOPE_SE`] standard errors larger ([`sequence::more_pairs`])
/// — or at the budget's last unit. Otherwise it
/// goes on: a +3 % change bounded below an X of 9 % early (X planned at the default spread on a quieter
/// host) is still worth detecting.
fn futility(
    (decision, outcome): (Decision, MetricOutcome),
    e: &super::estimate::Estimate,
    alpha: f64,
    margin_pct: f64,
    j: usize,
    budget: usize,
) -> (Decision, MetricOutcome) {
    if decision != Decision::NoRegression || j >= budget {
        return (decision, outcome);
    }
    let margin = (1.0 + margin_pct / 100.0).ln();
    let left = (budget - j) as u64;
    // Detection is projected for a change that many standard errors beyond the estimate: an estimate that is low
    // by chance (a real +3 % read as +1.5 % at the ninth pair) should not end the search for it.
    let hopeful = super::estimate::Estimate { log_ratio: e.log_ratio.abs() + super::method::FUTILITY_HOPE_SE * e.se, ..e.clone() };
    match (sequence::more_pairs(e, alpha, margin, None, left), sequence::more_pairs(&hopeful, alpha, margin, None, left)) {
        (None, None) => (decision, outcome),
        _ => (Decision::Continue, MetricOutcome::Unclear),
    }
}

/// A metric's intervals at look `j`, rounded for the report; none while its spread is unknown (one pair).
fn course_point(j: usize, e: &super::estimate::Estimate, alpha: f64, margin_pct: f64) -> Option<CoursePoint> {
    let round = |v: f64| (v * 1000.0).round() / 1000.0;
    let pcts = |i: [f64; 2]| [round(crate::stats::pct(i[0])), round(crate::stats::pct(i[1]))];
    let (interval_pct, equivalence_interval_pct) = (pcts(interval(e, alpha)), pcts(interval(e, equivalence_level())));
    let finite = interval_pct.iter().chain(&equivalence_interval_pct).all(|v| v.is_finite()) && e.log_ratio.is_finite();
    finite.then(|| CoursePoint {
        pairs: j,
        estimate_pct: round(crate::stats::pct(e.log_ratio)),
        interval_pct,
        equivalence_interval_pct,
        margin_pct,
    })
}

fn plural(unit: Unit, n: usize) -> String {
    let w = unit.word();
    if n == 1 {
        w.to_string()
    } else {
        format!("{w}s")
    }
}
