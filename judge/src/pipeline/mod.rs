//! The pipeline judge: `zephyr.stage` rows of a control and treatment arm(s) → a verdict with reasons.
//!
//! Flow: [`rows`] parses, [`aggregate`] sums per trial and stage, [`decide`] applies the guardrails and
//! estimates each metric ([`estimate`], spreads from [`noise`]), [`family`] sets every test's level across
//! the experiment, [`decide`] finishes each stage, and [`judge`] folds stages into arms and arms into the
//! answer. [`method`] holds every number the verdict uses.

pub mod aggregate;
pub mod canary;
pub mod decide;
pub mod estimate;
pub mod family;
pub mod measurement;
pub mod method;
pub mod noise;
pub mod power;
pub mod render;
pub mod report;
pub mod rows;
pub mod sequential;

use crate::Verdict;
use aggregate::{RowIndex, StageSums, TrialSpec, TrialSums};
use decide::{finish, prepare, Prepared, StageInput};
pub use method::MethodConfig;
use noise::NoiseProfile;
pub use report::PipelineReport;
use report::{ArmReport, StageReport, Thresholds};
use rows::StageRow;
pub use sequential::{judge_sequential, SequentialConfig};
use std::collections::HashMap;
use std::fmt;

/// A named arm and its trials.
#[derive(Debug, Clone, PartialEq)]
pub struct ArmSpec {
    pub name: String,
    pub trials: Vec<TrialSpec>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PipelineConfig {
    /// The worker's RAM limit in bytes: the memory guardrail.
    pub worker_ram: Option<f64>,
    /// Items/bytes must match within this many percent.
    pub equivalence_tolerance_pct: f64,
    pub accept_workload_mismatch: bool,
    pub noise: Option<NoiseProfile>,
    /// Error rate, margins and pairing.
    pub method: MethodConfig,
    /// The sequential design's focus: only this stage's CPU decides when it stops (`judge_sequential`).
    pub focus: Option<String>,
    /// A bisection's probe: the bad end's change of the focus stage's CPU from the good end, percent. The
    /// focus stage is then decided by which end it resembles (`sequential::decide_which_end`), not against
    /// its margin.
    pub focus_bad_end_pct: Option<f64>,
    /// X of the third answer as resolved for this judgement (`power::no_regression`, from
    /// `method.no_regression`); set by [`judge`] and [`judge_sequential`] before the first look.
    pub no_regression_pct: Option<f64>,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig {
            worker_ram: None,
            equivalence_tolerance_pct: 0.5,
            accept_workload_mismatch: false,
            noise: None,
            method: MethodConfig::default(),
            focus: None,
            focus_bad_end_pct: None,
            no_regression_pct: None,
        }
    }
}

/// Input that cannot be judged at all (exit code 2).
#[derive(Debug, Clone, PartialEq)]
pub enum JudgeError {
    NoControl,
    NoTreatment,
    UnknownExecutionIds(Vec<String>),
}

impl fmt::Display for JudgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JudgeError::NoControl => f.write_str("no control trial given"),
            JudgeError::NoTreatment => f.write_str("no treatment trial given"),
            JudgeError::UnknownExecutionIds(ids) => write!(f, "no rows for execution id(s): {}", ids.join(", ")),
        }
    }
}

impl std::error::Error for JudgeError {}

/// Verdict order for folding: regression, then inconclusive, then tradeoff, then pass.
fn severity(v: Verdict) -> u8 {
    match v {
        Verdict::Regression => 3,
        Verdict::Inconclusive => 2,
        Verdict::Tradeoff => 1,
        _ => 0,
    }
}

fn worst(verdicts: impl IntoIterator<Item = Verdict>) -> Verdict {
    verdicts.into_iter().max_by_key(|v| severity(*v)).unwrap_or(Verdict::Pass)
}

/// An experiment's trials summed per stage and checked: what the fixed and the sequential design judge.
pub(crate) struct Summed {
    duplicates_dropped: usize,
    /// Control trials without a failed stage.
    controls: Vec<TrialSums>,
    /// Rule 1: control trials with a failed stage are dropped (pair key, description).
    dropped_control_trials: Vec<(Option<u32>, String)>,
    arms: Vec<(String, Vec<TrialSums>)>,
    /// FAILED attempts a later attempt retried (pair key, "trial: stage").
    retried: Vec<(Option<u32>, String)>,
}

impl Summed {
    fn new(rows: &[StageRow], control: &[TrialSpec], treatments: &[ArmSpec]) -> Result<Summed, JudgeError> {
        if control.is_empty() {
            return Err(JudgeError::NoControl);
        }
        if treatments.iter().all(|a| a.trials.is_empty()) {
            return Err(JudgeError::NoTreatment);
        }
        let index = RowIndex::new(rows);
        let mut missing: Vec<String> = Vec::new();
        for spec in control.iter().chain(treatments.iter().flat_map(|a| &a.trials)) {
            missing.extend(index.missing(spec).into_iter().map(String::from));
        }
        if !missing.is_empty() {
            missing.dedup();
            return Err(JudgeError::UnknownExecutionIds(missing));
        }
        let mut retried = Vec::new();
        let mut note_retries = |t: &TrialSums| retried.extend(t.retried_stages.iter().map(|s| (t.pair, format!("{}: {s}", t.label))));
        // Rule 1: a control trial with a failed stage is dropped.
        let mut dropped_control_trials = Vec::new();
        let mut controls = Vec::new();
        for (i, spec) in control.iter().enumerate() {
            let t = index.trial(format!("control #{}", i + 1), spec);
            note_retries(&t);
            if t.failed_stages.is_empty() {
                controls.push(t);
            } else {
                dropped_control_trials.push((t.pair, format!("{} (FAILED: {})", t.label, t.failed_stages.join(", "))));
            }
        }
        let arms: Vec<(String, Vec<TrialSums>)> = treatments
            .iter()
            .map(|a| {
                let trials: Vec<TrialSums> =
                    a.trials.iter().enumerate().map(|(i, s)| index.trial(format!("{} #{}", a.name, i + 1), s)).collect();
                trials.iter().for_each(&mut note_retries);
                (a.name.clone(), trials)
            })
            .collect();
        Ok(Summed { duplicates_dropped: index.duplicates_dropped, controls, dropped_control_trials, arms, retried })
    }

    /// The pairs a judgement has: the fewest trials of the control and of any arm (the budget the fixed
    /// design's X is planned from).
    fn pairs(&self) -> usize {
        let control = self.controls.len() + self.dropped_control_trials.len();
        self.arms.iter().map(|(_, t)| t.len()).min().unwrap_or(0).min(control)
    }

    /// Every arm's stages through the guardrails and estimates (pass 1), with only the trials `keep` keeps.
    fn prepare(&self, config: &PipelineConfig, keep: impl Fn(&TrialSums) -> bool) -> Vec<PreparedArm> {
        let controls: Vec<&TrialSums> = self.controls.iter().filter(|t| keep(t)).collect();
        self.arms
            .iter()
            .map(|(name, trials)| {
                let trials: Vec<&TrialSums> = trials.iter().filter(|t| keep(t)).collect();
                prepare_arm(name, &controls, &trials, config)
            })
            .collect()
    }

    /// The report from the arms' verdicts: an invalid baseline, the experiment's verdict and reasons.
    fn report(
        &self,
        config: &PipelineConfig,
        mut treatments_out: Vec<ArmReport>,
        method: method::Method,
        up_to: Option<u32>,
    ) -> PipelineReport {
        // A sequential look sees the pairs up to its key.
        let within = |pair: &Option<u32>| up_to.is_none_or(|k| pair.is_none_or(|p| p <= k));
        let dropped_control_trials: Vec<String> =
            self.dropped_control_trials.iter().filter(|(p, _)| within(p)).map(|(_, d)| d.clone()).collect();
        let mut reasons: Vec<String> = Vec::new();
        let controls = self.controls.iter().filter(|t| within(&t.pair)).count();
        if controls == 0 {
            reasons.push(format!("invalid baseline: every control trial failed ({})", dropped_control_trials.join("; ")));
            for arm in &mut treatments_out {
                if arm.verdict != Verdict::Regression {
                    arm.verdict = Verdict::Inconclusive;
                }
                arm.reasons.insert(0, "invalid baseline: no control trial without a failed stage".into());
            }
        }
        let verdict = worst(treatments_out.iter().map(|a| a.verdict));
        for arm in &treatments_out {
            if arm.verdict == verdict {
                reasons.extend(arm.reasons.iter().cloned());
            }
        }
        reasons.dedup();
        PipelineReport {
            verdict,
            reasons,
            thresholds: thresholds(config),
            method: Some(method),
            duplicates_dropped: self.duplicates_dropped,
            dropped_control_trials,
            retried: self.retried.iter().filter(|(p, _)| within(p)).map(|(_, r)| r.clone()).collect(),
            stages: treatments_out.first().map(|a| a.stages.clone()).unwrap_or_default(),
            total: treatments_out.first().map(|a| a.total.clone()),
            treatments: treatments_out,
            sequential: None,
            pairing: None,
            measurement: None,
        }
    }
}

fn thresholds(config: &PipelineConfig) -> Thresholds {
    Thresholds {
        source: if config.noise.is_some() { "noise profile".into() } else { "uncalibrated".into() },
        cpu_pct: config.method.cpu_margin_pct,
        elapsed_pct: config.method.elapsed_margin_pct,
        cpu_floor_s: method::CPU_FLOOR_S,
        elapsed_floor_s: method::ELAPSED_FLOOR_S,
        equivalence_tolerance_pct: config.equivalence_tolerance_pct,
        worker_ram_bytes: config.worker_ram,
    }
}

/// Judges every treatment arm against the control (the fixed design: one look at every trial).
pub fn judge(
    rows: &[StageRow],
    control: &[TrialSpec],
    treatments: &[ArmSpec],
    config: &PipelineConfig,
) -> Result<PipelineReport, JudgeError> {
    let summed = Summed::new(rows, control, treatments)?;
    // X of the third answer, from the plan: the setting, or what this many pairs resolve at the expected
    // spread — never from the spread this run measured.
    let planned = power::no_regression(summed.pairs(), &config.method, config.noise.as_ref(), power::Design::Fixed);
    let config = &PipelineConfig { no_regression_pct: planned.pct, ..config.clone() };
    // Pass 1: every arm's stages through the guardrails and estimates.
    let prepared = summed.prepare(config, |_| true);
    // The family: every CPU (and every elapsed) test of every stage of every arm, Holm over each. Each
    // arm's total CPU is in the CPU family too: a total decided lower can pass an arm whose stages are
    // undecided (`fold_arm`), so its false "lower" is one of the family's errors.
    let m = config.method;
    let mut cpu_p = Vec::new();
    let mut elapsed_p = Vec::new();
    for arm in &prepared {
        for s in &arm.stages {
            if let Prepared::Measured { cpu, elapsed, .. } = s {
                cpu_p.extend(cpu.as_ref().map(|p| p.p_value));
                elapsed_p.extend(elapsed.as_ref().map(|p| p.p_value));
            }
        }
        if let Some(p) = arm.total_cpu() {
            cpu_p.push(p.p_value);
        }
    }
    let (cpu_levels, elapsed_levels) = (family::holm(&cpu_p, m.alpha_cpu()), family::holm(&elapsed_p, m.alpha_elapsed()));
    let (mut ci, mut ei) = (cpu_levels.iter(), elapsed_levels.iter());
    // Pass 2: each stage at its levels.
    let mut treatments_out = Vec::new();
    for arm in prepared {
        let total_in_family = arm.total_cpu().is_some();
        let stages: Vec<StageReport> = arm
            .stages
            .into_iter()
            .map(|s| {
                let (a_cpu, a_el) = match &s {
                    Prepared::Measured { cpu, elapsed, .. } => (
                        cpu.as_ref().map_or(m.alpha_cpu(), |_| *ci.next().expect("one level per CPU test")),
                        elapsed.as_ref().map_or(m.alpha_elapsed(), |_| *ei.next().expect("one level per elapsed test")),
                    ),
                    Prepared::Decided(_) => (m.alpha_cpu(), m.alpha_elapsed()),
                };
                finish(s, a_cpu, a_el).rounded()
            })
            .collect();
        // The total's CPU at its level in the family; its elapsed is context, at the metric's whole share.
        let total_cpu = if total_in_family { *ci.next().expect("one level per CPU test") } else { m.alpha_cpu() };
        let total = finish(arm.total, total_cpu, m.alpha_elapsed()).rounded();
        treatments_out.push(fold_arm(arm.name, stages, total, arm.unpaired, [arm.controls, arm.trials]));
    }
    let mut record = m.record(cpu_p.len(), elapsed_p.len());
    record.no_regression = Some(planned);
    Ok(summed.report(config, treatments_out, record, None))
}

fn stage_input<'a>(
    stage: &'a str,
    control: Vec<(Option<u32>, StageSums)>,
    treatment: Vec<(Option<u32>, StageSums)>,
    treatment_failures: usize,
    profile: Option<&'a noise::StageNoise>,
    orders: Option<&'a estimate::PairOrders>,
    config: &PipelineConfig,
) -> StageInput<'a> {
    StageInput {
        stage,
        control,
        treatment,
        treatment_failures,
        worker_ram: config.worker_ram,
        tolerance_pct: config.equivalence_tolerance_pct,
        accept_mismatch: config.accept_workload_mismatch,
        profile,
        profile_contradicted: false,
        method: config.method,
        no_regression_pct: config.no_regression_pct,
        orders,
    }
}

/// Each pair's order, when every trial of the arm and of the control has a pair key and a position in its
/// pair: the treatment ran first when its position is the lower. `None` when any is unknown (or two
/// trials of a pair claim the same place).
fn pair_orders(controls: &[&TrialSums], trials: &[&TrialSums]) -> Option<estimate::PairOrders> {
    let mut control_at: HashMap<u32, u32, aggregate::FxBuild> = HashMap::default();
    for c in controls {
        control_at.insert(c.pair?, c.position?);
    }
    let mut orders = estimate::PairOrders::new();
    for t in trials {
        let (pair, at) = (t.pair?, t.position?);
        if let Some(&c) = control_at.get(&pair) {
            if c == at {
                return None;
            }
            orders.insert(pair, at < c);
        }
    }
    (!orders.is_empty()).then_some(orders)
}

/// One arm after the first pass.
struct PreparedArm {
    name: String,
    stages: Vec<Prepared>,
    total: Prepared,
    unpaired: Vec<String>,
    controls: usize,
    trials: usize,
}

impl PreparedArm {
    /// The total's CPU test when it is in the CPU family: when at least two stages' CPU is tested (with
    /// one, the total repeats that stage's test and decides nothing more).
    fn total_cpu(&self) -> Option<&decide::Pending> {
        let tested = self.stages.iter().filter(|s| matches!(s, Prepared::Measured { cpu: Some(_), .. })).count();
        match &self.total {
            Prepared::Measured { cpu: Some(p), .. } if tested >= 2 => Some(p),
            _ => None,
        }
    }
}

fn prepare_arm(name: &str, controls: &[&TrialSums], trials: &[&TrialSums], config: &PipelineConfig) -> PreparedArm {
    // One pass over every trial's stages: stage → (control sums, treatment sums, treatment failures).
    type Side = Vec<(Option<u32>, StageSums)>;
    let mut by_stage: HashMap<&str, (Side, Side, usize), aggregate::FxBuild> = HashMap::default();
    for c in controls {
        for (stage, sums) in &c.stages {
            by_stage.entry(stage).or_default().0.push((c.pair, *sums));
        }
    }
    for t in trials {
        for (stage, sums) in &t.stages {
            by_stage.entry(stage).or_default().1.push((t.pair, *sums));
        }
        for stage in &t.failed_stages {
            by_stage.entry(stage).or_default().2 += 1;
        }
    }
    let mut by_stage: Vec<_> = by_stage.into_iter().collect();
    by_stage.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut stages = Vec::with_capacity(by_stage.len());
    let mut unpaired = Vec::new();
    // A stage the profile never saw gets the profile's common spread.
    let unseen = config.noise.as_ref().and_then(NoiseProfile::unseen_stage);
    let profile_of = |stage: &str| config.noise.as_ref().and_then(|p| p.stages.get(stage)).or(unseen.as_ref());
    let orders = pair_orders(controls, trials);
    // The profile is used only while this run, over all its stages' CPU, does not contradict it.
    let contradicted = config.noise.is_some() && {
        let cpu = |v: &Side| -> Vec<estimate::Keyed> { v.iter().map(|(k, s)| (*k, s.cpu)).collect() };
        let spreads: Vec<(f64, f64, f64, f64)> = by_stage
            .iter()
            .filter(|(_, (c, t, _))| !c.is_empty() && !t.is_empty())
            .filter_map(|(stage, (c, t, _))| {
                let prior = profile_of(stage)?.cpu.prior()?;
                let (var, df) = estimate::own_spread(&cpu(c), &cpu(t), config.method.paired, orders.as_ref());
                Some((var, df, prior.var, prior.df))
            })
            .collect();
        estimate::contradicts_overall(&spreads).is_some()
    };
    for (stage, (c, t, failures)) in by_stage {
        if (c.is_empty() || t.is_empty()) && failures == 0 {
            unpaired.push(stage.to_string());
        }
        let profile = if contradicted { None } else { profile_of(stage) };
        let mut input = stage_input(stage, c, t, failures, profile, orders.as_ref(), config);
        input.profile_contradicted = contradicted;
        stages.push(prepare(&input));
    }
    // Pipeline totals: all stages summed per trial, judged by rules 5–6 only, with no profile.
    let totals =
        |ts: &[&TrialSums]| -> Vec<(Option<u32>, StageSums)> { ts.iter().map(|t| (t.pair, StageSums::total(t.stages.values()))).collect() };
    let total = prepare(&stage_input("pipeline total", totals(controls), totals(trials), 0, None, orders.as_ref(), config));
    PreparedArm { name: name.to_string(), stages, total, unpaired, controls: controls.len(), trials: trials.len() }
}

/// The stages in the order their reasons are told: the news first — a CPU change detected beyond its
/// margin, the largest first — then the other decided or undecided stages (largest change first), and
/// stages too small to measure last.
fn by_news(stages: &[StageReport]) -> Vec<&StageReport> {
    let rank = |s: &StageReport| {
        if s.cpu_below_floor {
            2
        } else if matches!(s.cpu_outcome, report::MetricOutcome::Higher | report::MetricOutcome::Lower) && !s.cpu_negligible {
            0
        } else {
            1
        }
    };
    let mut ordered: Vec<&StageReport> = stages.iter().collect();
    ordered.sort_by(|a, b| rank(a).cmp(&rank(b)).then(b.cpu_change_pct.abs().total_cmp(&a.cpu_change_pct.abs())));
    ordered
}

/// An arm's verdict from its stages: the worst, with the reasons of the stages that gave it — except that
/// an arm whose pipeline total is decided cheaper passes when nothing was detected worse (the improvement
/// rule, [`cheaper_in_total`]).
fn fold_arm(name: String, stages: Vec<StageReport>, total: StageReport, unpaired: Vec<String>, trials: [usize; 2]) -> ArmReport {
    let mut verdict = worst(stages.iter().map(|s| s.verdict));
    let mut reasons: Vec<String> = Vec::new();
    if verdict == Verdict::Inconclusive && unpaired.is_empty() {
        if let Some(why) = cheaper_in_total(&stages, &total) {
            reasons.extend(why);
            reasons.extend(by_news(&stages).into_iter().filter(|s| s.verdict == Verdict::Pass).flat_map(|s| s.reasons.iter().cloned()));
            return ArmReport { name, verdict: Verdict::Pass, reasons, stages, total, unpaired_stages: unpaired, trials };
        }
    }
    if !unpaired.is_empty() && verdict != Verdict::Regression {
        verdict = Verdict::Inconclusive;
        reasons.push(format!(
            "stage sets differ ({} could not be paired; fused or renamed operators?); pipeline totals for context: {}",
            unpaired.join(", "),
            total.detail()
        ));
    }
    for s in by_news(&stages) {
        if s.verdict == verdict || (verdict == Verdict::Inconclusive && severity(s.verdict) >= 2) {
            reasons.extend(s.reasons.iter().cloned());
        }
    }
    if verdict == Verdict::Pass && reasons.is_empty() {
        reasons.extend(by_news(&stages).into_iter().flat_map(|s| s.reasons.iter().cloned()));
    }
    if verdict == Verdict::Pass {
        if let Some(head) = no_regression_headline(&stages) {
            reasons.insert(0, head);
        }
    }
    ArmReport { name, verdict, reasons, stages, total, unpaired_stages: unpaired, trials }
}

/// An arm that passes on the third answer for some stage says so first: "pass (no regression ≥ 6.2 %): 2
/// of 5 stages bounded below it, the rest within their margins". Each bound is a one-sided test at 1 −
/// α_equivalence; the arm's claim holds only if every stage's does (an intersection–union test), so the
/// chance of passing an arm with a stage truly X or more worse is at most α_equivalence.
fn no_regression_headline(stages: &[StageReport]) -> Option<String> {
    let bounded: Vec<&StageReport> = stages.iter().filter(|s| s.cpu_outcome == report::MetricOutcome::NoRegression).collect();
    let x = bounded.first()?.cpu_test.as_ref()?.no_regression_pct?;
    let worst = bounded
        .iter()
        .filter_map(|s| s.cpu_test.as_ref().map(|t| (s.stage.as_str(), t.equivalence_interval_pct.unwrap_or(t.interval_pct)[1])))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(format!(
        "pass (no regression ≥ {}): {} of {} stages bounded below it (99 % one-sided; highest bound {} in {}){}",
        report::fmt_margin(x),
        bounded.len(),
        stages.len(),
        report::fmt_pct(worst.1),
        worst.0,
        if bounded.len() < stages.len() { ", the rest decided" } else { "" },
    ))
}

/// The improvement rule (method 3): an arm is a pass, cheaper, when its pipeline total's CPU is decided
/// lower (in the CPU family, not negligible, and the total not slower) and every stage that is not a pass
/// is undecided on CPU only — not detected higher on either metric, not stopped by a guardrail (a failure,
/// memory, different work, a stage in one arm only). Each undecided stage is listed with the top of its
/// interval: how much worse it could still be. Returns the reasons, or `None` when the rule does not apply.
fn cheaper_in_total(stages: &[StageReport], total: &StageReport) -> Option<Vec<String>> {
    use report::MetricOutcome::{Higher, Lower, Unclear};
    let total_test = total.cpu_test.as_ref()?;
    // The total is in the CPU family only with two or more stages tested (`PreparedArm::total_cpu`).
    if stages.iter().filter(|s| s.cpu_test.is_some()).count() < 2 {
        return None;
    }
    if total.cpu_outcome != Lower || total.cpu_negligible || total.verdict != Verdict::Pass {
        return None;
    }
    let mut open = Vec::new();
    for s in stages.iter().filter(|s| s.verdict != Verdict::Pass) {
        let elapsed_higher = s.elapsed_outcome == Higher && !s.elapsed_negligible;
        let cpu = s.cpu_test.as_ref().filter(|_| s.verdict == Verdict::Inconclusive && s.cpu_outcome == Unclear && !elapsed_higher)?;
        open.push(format!(
            "{}: CPU undecided ({}), at most {} ({} interval {} … {})",
            s.stage,
            report::fmt_pct(s.cpu_change_pct),
            report::fmt_pct(cpu.interval_pct[1]),
            report::fmt_level(cpu.alpha),
            report::fmt_pct(cpu.interval_pct[0]),
            report::fmt_pct(cpu.interval_pct[1]),
        ));
    }
    if open.is_empty() {
        return None;
    }
    let mut reasons = vec![format!(
        "cheaper in total: pipeline total CPU lower {} ({} interval {} … {}); no stage detected higher, {} undecided",
        report::fmt_pct(total.cpu_change_pct),
        report::fmt_level(total_test.alpha),
        report::fmt_pct(total_test.interval_pct[0]),
        report::fmt_pct(total_test.interval_pct[1]),
        open.len(),
    )];
    reasons.extend(open);
    Some(reasons)
}

/// Calibrates a noise profile from same-code trials.
pub fn calibrate(rows: &[StageRow], trials: &[TrialSpec], fingerprint: Option<serde_json::Value>) -> Result<NoiseProfile, JudgeError> {
    let index = RowIndex::new(rows);
    let missing: Vec<String> = trials.iter().flat_map(|t| index.missing(t)).map(String::from).collect();
    if !missing.is_empty() {
        return Err(JudgeError::UnknownExecutionIds(missing));
    }
    let sums: Vec<TrialSums> = trials
        .iter()
        .enumerate()
        .map(|(i, s)| index.trial(format!("trial #{}", i + 1), s))
        .filter(|t| t.failed_stages.is_empty())
        .collect();
    Ok(NoiseProfile::calibrate(&sums, fingerprint))
}
