//! `arbiter simulate`: the pipeline verdict's error rates and power, measured. Each replication generates
//! `zephyr.stage` rows from a documented noise model, calibrates a noise profile through the real
//! `judge::pipeline::calibrate` when the cell asks for one, and judges the experiment through the real
//! `judge::pipeline::judge` — the same code `compare`, `import` and the server run.
//!
//! The noise model (log scale; every draw from a seeded generator, so a seed gives the same table):
//!
//! * A pipeline of S stages; stage s has a mean CPU of 5–50 CPU-s (log-uniform: far enough above the
//!   0.05 CPU-s floor that the 2 % margin is every stage's) and a mean summed elapsed of 1–3× its CPU.
//! * **CPU**: each stage's total coefficient of variation c_s is 1–5 % (uniform, drawn per stage and
//!   replication) in A/A cells and a fixed CV (`--power-cv`, 2 %) in power cells. Of it, 1 % is a
//!   **per-trial shared shift** (a noisy neighbour moving every stage of a trial together) and the rest,
//!   √(c_s² − 1 %²), the stage's own lognormal noise.
//! * **Elapsed**: a stage CV of 10–30 %, a shared per-trial shift of 5 %, and **stragglers**: one stage-trial
//!   in 20 takes 1.5–3× as long.
//! * Items and bytes are the same in every trial (same work). Trials are interleaved C,T,C,T and judged
//!   paired, as the server judges an interleaved suite (`--unpaired`: Welch on all trials).
//! * A power cell multiplies stage 0's CPU in the treatment by 1 + effect; its elapsed is unchanged.
//! * **Order and warm-up** (`--order-effect`, `--warm-up`): the first trial of each pair costs
//!   `--order-effect` % more (CPU and elapsed, every stage), and the experiment's first trial `--warm-up` %
//!   more. `--order control-first` runs every pair C T (every plan before the measurement-protocol issue);
//!   `balanced` runs each block of two pairs one C T and one T C, in random order. The judge is given each
//!   trial's position in its pair, so with both orders it fits the order covariate.
//! * A profile cell first calibrates from k same-code trials of the same pipeline.
//!
//! Per cell it counts: experiments claiming any change (a regression or tradeoff verdict, or any metric
//! of any stage detected higher or lower, negligible or not), experiments judged a regression with the
//! changed stage's CPU detected higher beyond its margin, passes and inconclusives.

use judge::pipeline::aggregate::TrialSpec;
use judge::pipeline::report::MetricOutcome;
use judge::pipeline::rows::StageRow;
use judge::pipeline::sequential::{abba_blocks, Unit};
use judge::pipeline::{calibrate, judge, judge_sequential, ArmSpec, MethodConfig, PipelineConfig, SequentialConfig};
use judge::Verdict;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use serde::Serialize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

mod command;
mod table;
pub mod warp;

pub use command::{run_simulate, SimulateArgs};
pub use table::markdown;

/// CPU noise of the stages of one cell.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Cv {
    /// Each stage's CV drawn uniformly from this range (percent).
    Range(f64, f64),
    Fixed(f64),
}

/// The shared per-trial shifts (log sd) and the straggler rule.
const CPU_SHIFT: f64 = 0.01;
const ELAPSED_SHIFT: f64 = 0.05;
const ELAPSED_CV: (f64, f64) = (0.10, 0.30);
const STRAGGLER_CHANCE: f64 = 0.05;
const STRAGGLER_FACTOR: (f64, f64) = (1.5, 3.0);

/// One cell of the table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Cell {
    pub stages: usize,
    pub trials: usize,
    /// Same-code trials the profile is calibrated from; 0 for no profile.
    pub profile: usize,
    /// The true CPU change of stage 0, percent (0: an A/A cell).
    pub effect_pct: f64,
    pub cv: Cv,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CellResult {
    pub cell: Cell,
    pub replications: u64,
    /// Experiments that claimed any change.
    pub claims: u64,
    /// … of which a CPU change, and an elapsed change.
    pub cpu_claims: u64,
    pub elapsed_claims: u64,
    /// Experiments judged a regression with the changed stage's CPU higher beyond its margin.
    pub regressions: u64,
    pub passes: u64,
    pub inconclusive: u64,
    /// Experiments in which every stage's CPU was decided equivalent within the margin (flat or
    /// negligible): the same-code answer "no change".
    pub equivalent: u64,
    /// Passes resting on the third answer: some stage's CPU "no regression of X % or more".
    pub bounded: u64,
    /// … of which X was at or below the true change (a wrong third answer: the changed stage is X or more
    /// worse); always 0 in an A/A cell.
    pub wrongly_bounded: u64,
    /// The mean X planned before the first look (percent), over the experiments that had one; and how many had one.
    pub mean_x_pct: f64,
    pub with_x: u64,
    /// Trials per arm the experiments used: their mean, median and 95th percentile (the fixed design: `trials`).
    pub mean_trials: f64,
    pub median_trials: u32,
    pub p95_trials: u32,
}

impl CellResult {
    pub fn rate(&self, k: u64) -> f64 {
        k as f64 / self.replications as f64
    }
}

#[derive(Clone)]
struct Pipeline {
    cpu_mean: Vec<f64>,
    cpu_own_sd: Vec<f64>,
    elapsed_mean: Vec<f64>,
    elapsed_own_sd: Vec<f64>,
}

fn draw_pipeline(rng: &mut StdRng, stages: usize, cv: Cv) -> Pipeline {
    let mut p = Pipeline { cpu_mean: Vec::new(), cpu_own_sd: Vec::new(), elapsed_mean: Vec::new(), elapsed_own_sd: Vec::new() };
    for _ in 0..stages {
        let cpu = (rng.random_range(5f64.ln()..50f64.ln())).exp();
        let c = match cv {
            Cv::Range(lo, hi) => rng.random_range(lo..=hi) / 100.0,
            Cv::Fixed(c) => c / 100.0,
        };
        p.cpu_mean.push(cpu);
        p.cpu_own_sd.push((c * c - CPU_SHIFT * CPU_SHIFT).max(0.0).sqrt());
        p.elapsed_mean.push(cpu * rng.random_range(1.0..3.0));
        let e: f64 = rng.random_range(ELAPSED_CV.0..=ELAPSED_CV.1);
        p.elapsed_own_sd.push((e * e - ELAPSED_SHIFT * ELAPSED_SHIFT).max(0.0).sqrt());
    }
    p
}

/// Rows generator: one trial's rows under a fresh execution id.
struct Rows<'a> {
    rng: &'a mut StdRng,
    names: &'a [String],
    next_id: u32,
    rows: Vec<StageRow>,
    /// A linear CPU drift, log per trial in run order (every stage, both arms).
    drift: f64,
}

impl Rows<'_> {
    /// One trial: stage 0's CPU times `cpu_factor_stage0`, every stage's CPU and elapsed times `whole`
    /// (an order or warm-up effect).
    fn trial(&mut self, p: &Pipeline, cpu_factor_stage0: f64, whole: f64) -> TrialSpec {
        let id = format!("20261201-000000-{:08x}", self.next_id);
        let drift = (self.drift * self.next_id as f64).exp();
        self.next_id += 1;
        let z = Normal::new(0.0, 1.0).expect("a normal");
        let (cpu_shift, el_shift) = (CPU_SHIFT * z.sample(self.rng), ELAPSED_SHIFT * z.sample(self.rng));
        for s in 0..p.cpu_mean.len() {
            let factor = if s == 0 { cpu_factor_stage0 } else { 1.0 };
            let cpu = p.cpu_mean[s] * factor * whole * drift * (cpu_shift + p.cpu_own_sd[s] * z.sample(self.rng)).exp();
            let mut elapsed = p.elapsed_mean[s] * whole * (el_shift + p.elapsed_own_sd[s] * z.sample(self.rng)).exp();
            if self.rng.random_bool(STRAGGLER_CHANCE) {
                elapsed *= self.rng.random_range(STRAGGLER_FACTOR.0..STRAGGLER_FACTOR.1);
            }
            self.rows.push(StageRow::new(&id, &self.names[s], "END", cpu, elapsed, 1e5, 1e7, 1e8));
        }
        TrialSpec { execution_ids: vec![id], pair: None, position: None }
    }
}

/// Which arm runs first in each pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Every pair C T.
    #[default]
    ControlFirst,
    /// Each block of two pairs one C T and one T C, in random order.
    Balanced,
}

/// What one simulated experiment came to.
struct Outcome {
    claim: bool,
    cpu_claim: bool,
    elapsed_claim: bool,
    regression: bool,
    verdict: Verdict,
    equivalent: bool,
    bounded: bool,
    x_pct: Option<f64>,
    trials: u32,
}

/// When the judge looks: once at every trial (fixed), after every pair (sequential), after every ABBA
/// block (abba: C T T C, each block judged as one unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Looks {
    #[default]
    Fixed,
    Sequential,
    Abba,
}

/// How a run judges: paired or not, whether profiles are shrunk across stages first, the design, and a
/// CPU drift per trial in run order (percent).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Design {
    /// The profile's trials' CPU noise as a multiple of the run's (1: an accurate profile; 0.5: measured
    /// on a quieter day).
    pub profile_noise: f64,
    pub paired: bool,
    pub shrink_profiles: bool,
    pub looks: Looks,
    pub drift_pct: f64,
    /// A bisection's probe: stage 0 is the focus, decided by which end it resembles, the bad end this
    /// change (percent) from the good end (`--bisect-ends`; the sequential design only).
    pub bisect_ends_pct: Option<f64>,
    /// The pairs' order, what the first trial of a pair costs more (percent), and what the experiment's
    /// first trial costs more (percent).
    pub order: Order,
    pub order_effect_pct: f64,
    pub warm_up_pct: f64,
}

fn experiment(rng: &mut StdRng, names: &[String], cell: &Cell, design: Design) -> Outcome {
    let paired = design.paired || design.looks != Looks::Fixed;
    let pipeline = draw_pipeline(rng, cell.stages, cell.cv);
    let mut gen = Rows { rng, names, next_id: 0, rows: Vec::new(), drift: 0.0 };
    let noise = (cell.profile > 0).then(|| {
        let quieter = Pipeline { cpu_own_sd: pipeline.cpu_own_sd.iter().map(|sd| sd * design.profile_noise).collect(), ..pipeline.clone() };
        let trials: Vec<TrialSpec> = (0..cell.profile).map(|_| gen.trial(&quieter, 1.0, 1.0)).collect();
        let profile = calibrate(&gen.rows, &trials, None).expect("calibration rows are complete");
        if design.shrink_profiles {
            profile.shrunk()
        } else {
            profile
        }
    });
    gen.rows.clear();
    (gen.next_id, gen.drift) = (0, (design.drift_pct / 100.0).ln_1p());
    let factor = 1.0 + cell.effect_pct / 100.0;
    let (mut control, mut treatment) = (Vec::new(), Vec::new());
    let (first, warm_up) = (1.0 + design.order_effect_pct / 100.0, 1.0 + design.warm_up_pct / 100.0);
    let mut block_starts_with_treatment = false;
    for i in 0..cell.trials {
        let pair = paired.then_some(i as u32);
        // Run order: C T; within an ABBA block C T then T C; balanced, one of each a block in random order.
        let treatment_first = match (design.looks, design.order) {
            (Looks::Abba, _) => i % 2 == 1,
            (_, Order::ControlFirst) => false,
            (_, Order::Balanced) => {
                if i % 2 == 0 {
                    block_starts_with_treatment = gen.rng.random_bool(0.5);
                }
                block_starts_with_treatment == (i % 2 == 0)
            }
        };
        // The judge knows each trial's place in its pair (an ABBA block has no order of its own).
        let at = |first: bool| (paired && design.looks != Looks::Abba).then_some(u32::from(!first));
        let whole = |first_of_pair: bool| if first_of_pair { first * if i == 0 { warm_up } else { 1.0 } } else { 1.0 };
        if treatment_first {
            treatment.push(TrialSpec { pair, position: at(true), ..gen.trial(&pipeline, factor, whole(true)) });
            control.push(TrialSpec { pair, position: at(false), ..gen.trial(&pipeline, 1.0, whole(false)) });
        } else {
            control.push(TrialSpec { pair, position: at(true), ..gen.trial(&pipeline, 1.0, whole(true)) });
            treatment.push(TrialSpec { pair, position: at(false), ..gen.trial(&pipeline, factor, whole(false)) });
        }
    }
    let config = PipelineConfig {
        noise,
        method: MethodConfig { paired, ..MethodConfig::default() },
        focus: design.bisect_ends_pct.map(|_| names[0].clone()),
        focus_bad_end_pct: design.bisect_ends_pct,
        no_regression_pct: None,
        ..PipelineConfig::default()
    };
    let arms = [ArmSpec { name: "treatment".into(), trials: treatment }];
    let report = match design.looks {
        Looks::Fixed => judge(&gen.rows, &control, &arms, &config),
        Looks::Sequential => judge_sequential(&gen.rows, &control, &arms, &config, &SequentialConfig::default()),
        Looks::Abba => {
            let (control, arms) = abba_blocks(&control, &arms);
            judge_sequential(&gen.rows, &control, &arms, &config, &SequentialConfig { unit: Unit::AbbaBlock, max_pairs: None })
        }
    }
    .expect("complete rows");
    let detected = |o: MetricOutcome| matches!(o, MetricOutcome::Higher | MetricOutcome::Lower);
    let stages = &report.treatments[0].stages;
    let cpu_claim = stages.iter().any(|s| detected(s.cpu_outcome));
    let elapsed_claim = stages.iter().any(|s| detected(s.elapsed_outcome));
    let claim = judge::pipeline::canary::claims_a_change(&report);
    let changed = stages.iter().find(|s| s.stage == names[0]);
    let regression =
        report.verdict == Verdict::Regression && changed.is_some_and(|s| s.cpu_outcome == MetricOutcome::Higher && !s.cpu_negligible);
    let equivalent = stages.iter().all(|s| s.cpu_outcome == MetricOutcome::Flat || s.cpu_negligible);
    let bounded = report.verdict == Verdict::Pass && stages.iter().any(|s| s.cpu_outcome == MetricOutcome::NoRegression);
    let x_pct = report.method.as_ref().and_then(|m| m.no_regression.as_ref()).and_then(|n| n.pct);
    let per_unit = if design.looks == Looks::Abba { 2 } else { 1 };
    let trials = report.sequential.as_ref().map_or(cell.trials, |q| q.pairs_used * per_unit) as u32;
    Outcome { claim, cpu_claim, elapsed_claim, regression, verdict: report.verdict, equivalent, bounded, x_pct, trials }
}

/// A cell's seed: the run's seed and the cell's parameters, so a cell gives the same counts whichever
/// thread runs it and whatever else the run contains.
fn cell_seed(seed: u64, cell: &Cell) -> u64 {
    let mut h = seed ^ 0x9e37_79b9_7f4a_7c15;
    let cv = match cell.cv {
        Cv::Range(a, b) => (a * 1000.0) as u64 ^ ((b * 1000.0) as u64) << 20,
        Cv::Fixed(c) => (c * 1000.0) as u64 | 1 << 40,
    };
    for v in [cell.stages as u64, cell.trials as u64, cell.profile as u64, (cell.effect_pct * 1000.0) as u64, cv] {
        h = (h ^ v).wrapping_mul(0x1000_0000_01b3).rotate_left(29);
    }
    h
}

/// Runs one cell.
pub fn run_cell(cell: Cell, replications: u64, seed: u64, design: Design) -> CellResult {
    let mut rng = StdRng::seed_from_u64(cell_seed(seed, &cell));
    let names: Vec<String> = (0..cell.stages).map(|s| format!("stage{s}-Map → Scatter")).collect();
    let mut r = CellResult {
        cell,
        replications,
        claims: 0,
        cpu_claims: 0,
        elapsed_claims: 0,
        regressions: 0,
        passes: 0,
        inconclusive: 0,
        equivalent: 0,
        bounded: 0,
        wrongly_bounded: 0,
        mean_x_pct: 0.0,
        with_x: 0,
        mean_trials: 0.0,
        median_trials: 0,
        p95_trials: 0,
    };
    let mut x_sum = 0.0;
    let mut used = Vec::with_capacity(replications as usize);
    for _ in 0..replications {
        let o = experiment(&mut rng, &names, &cell, design);
        used.push(o.trials);
        r.equivalent += u64::from(o.equivalent);
        r.bounded += u64::from(o.bounded);
        r.wrongly_bounded += u64::from(o.bounded && cell.effect_pct > 0.0 && o.x_pct.is_some_and(|x| x <= cell.effect_pct));
        if let Some(x) = o.x_pct {
            x_sum += x;
            r.with_x += 1;
        }
        r.claims += u64::from(o.claim);
        r.cpu_claims += u64::from(o.cpu_claim);
        r.elapsed_claims += u64::from(o.elapsed_claim);
        r.regressions += u64::from(o.regression);
        r.passes += u64::from(o.verdict == Verdict::Pass);
        r.inconclusive += u64::from(o.verdict == Verdict::Inconclusive);
    }
    r.mean_trials = used.iter().map(|&n| n as f64).sum::<f64>() / used.len().max(1) as f64;
    r.mean_x_pct = if r.with_x > 0 { x_sum / r.with_x as f64 } else { 0.0 };
    used.sort_unstable();
    r.median_trials = used.get(used.len().saturating_sub(1) / 2).copied().unwrap_or(0);
    r.p95_trials = used.get(((used.len() as f64 * 0.95).ceil() as usize).saturating_sub(1)).copied().unwrap_or(0);
    r
}

/// Runs cells on `threads` threads; results in the cells' order. A/A cells (effect 0) run
/// `aa_replications` experiments, the others `replications`.
pub fn run_cells(cells: &[Cell], replications: u64, aa_replications: u64, seed: u64, design: Design, threads: usize) -> Vec<CellResult> {
    let next = AtomicUsize::new(0);
    let out: Vec<Mutex<Option<CellResult>>> = cells.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(cell) = cells.get(i) else { break };
                let reps = if cell.effect_pct == 0.0 { aa_replications } else { replications };
                let r = run_cell(*cell, reps, seed, design);
                *out[i].lock().expect("a result slot") = Some(r);
            });
        }
    });
    out.into_iter().map(|m| m.into_inner().expect("a result slot").expect("every cell ran")).collect()
}

/// The fixed-design trials per arm for a two-sided level `alpha` and `power`: n = 2(z₁₋α/₂ + z_power)²σ²/δ²,
/// with σ the CV (log sd) and δ = ln(1 + effect).
pub fn fixed_n(cv_pct: f64, effect_pct: f64, alpha: f64, power: f64) -> f64 {
    let z = |p: f64| judge::stats::t_quantile(p, f64::INFINITY);
    let sigma = cv_pct / 100.0;
    let delta = (1.0 + effect_pct / 100.0).ln();
    2.0 * (z(1.0 - alpha / 2.0) + z(power)).powi(2) * sigma * sigma / (delta * delta)
}

/// The fixed-N paired t-test's pairs at a two-sided level `alpha` and `power`, per-trial CV `cv_pct` (the
/// pair's log difference has sd √2·CV: no credit for pairing, as the simulation's noise model) and a true
/// change `effect_pct`: the fewest n whose power — the share of 40 000 seeded draws of the noncentral t,
/// (Z + λ)/√(χ²_ν/ν) with ν = n − 1 and λ = δ√n/sd, beyond Student's t at 1 − α/2 — reaches `power`. The
/// denominator the sequential design's efficiency is stated against (README): the test a team would run
/// instead, with the spread unknown, at the same per-test level.
pub fn fixed_n_t(cv_pct: f64, effect_pct: f64, alpha: f64, power: f64) -> usize {
    const DRAWS: usize = 40_000;
    let sd = std::f64::consts::SQRT_2 * cv_pct / 100.0;
    let delta = (1.0 + effect_pct / 100.0).ln();
    let mut rng = StdRng::seed_from_u64(7);
    let z = Normal::new(0.0, 1.0).expect("a normal");
    // Student's t needs at least the known-spread bound.
    let from = (fixed_n(cv_pct, effect_pct, alpha, power).floor() as usize).max(2);
    for n in from..=10_000 {
        let nu = (n - 1) as f64;
        let crit = judge::stats::t_quantile(1.0 - alpha / 2.0, nu);
        let lambda = delta / (sd / (n as f64).sqrt());
        let chi = rand_distr::ChiSquared::new(nu).expect("positive degrees of freedom");
        let hits = (0..DRAWS).filter(|_| ((z.sample(&mut rng) + lambda) / (chi.sample(&mut rng) / nu).sqrt()).abs() > crit).count();
        if hits as f64 / DRAWS as f64 >= power {
            return n;
        }
    }
    10_000
}

/// The cells of a run: A/A cells (effect 0) at CV 1–5 % (or `aa_cv`), power cells at `power_cv`.
pub fn grid(stages: &[usize], trials: &[usize], profiles: &[usize], effects: &[f64], power_cv: f64, aa_cv: Option<f64>) -> Vec<Cell> {
    let mut cells = Vec::new();
    for &effect_pct in effects {
        for &s in stages {
            for &profile in profiles {
                for &n in trials {
                    let cv = match (effect_pct == 0.0, aa_cv) {
                        (true, Some(c)) => Cv::Fixed(c),
                        (true, None) => Cv::Range(1.0, 5.0),
                        (false, _) => Cv::Fixed(power_cv),
                    };
                    cells.push(Cell { stages: s, trials: n, profile, effect_pct, cv });
                }
            }
        }
    }
    // The slowest first, so that the threads finish together.
    cells.sort_by_key(|c| std::cmp::Reverse(c.stages * (2 * c.trials + c.profile)));
    cells
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAIRED: Design = Design {
        profile_noise: 1.0,
        paired: true,
        shrink_profiles: false,
        looks: Looks::Fixed,
        drift_pct: 0.0,
        bisect_ends_pct: None,
        order: Order::ControlFirst,
        order_effect_pct: 0.0,
        warm_up_pct: 0.0,
    };

    #[test]
    fn a_seed_gives_the_same_counts() {
        let cell = Cell { stages: 3, trials: 2, profile: 3, effect_pct: 5.0, cv: Cv::Fixed(2.0) };
        let a = run_cell(cell, 40, 7, PAIRED);
        assert_eq!(a, run_cell(cell, 40, 7, PAIRED));
        assert!(a.passes + a.inconclusive + a.regressions <= a.replications, "{a:?}");
        // Spread over threads, the same.
        assert_eq!(run_cells(&[cell, cell], 40, 99, 7, PAIRED, 2), vec![a, a]);
    }

    /// The A/A promise at a fixed seed: 20 stages, with and without a 5-trial profile, 10 000 experiments
    /// each. The nominal family-wise rate is 1 %, and it is nearly reached (Holm is close to exact): over
    /// ten seeds of 5000 experiments the 20-stage, 5-trial cell averaged 0.98 %. At 10 000 the 95 %
    /// Clopper–Pearson upper bound of a true 1 % is about 1.2 %, so ≤ 1.5 % fails for a method whose rate
    /// is really above its promise, not for a seed's luck.
    #[test]
    fn a_same_code_experiment_rarely_claims_a_change() {
        let cells: Vec<Cell> = [(2, 5), (5, 0)]
            .into_iter()
            .map(|(trials, profile)| Cell { stages: 20, trials, profile, effect_pct: 0.0, cv: Cv::Range(1.0, 5.0) })
            .collect();
        for r in run_cells(&cells, 10_000, 10_000, 1, PAIRED, 2) {
            let (_, hi) = judge::stats::clopper_pearson(r.claims, r.replications, 0.95);
            assert!(hi <= 0.015, "{r:?}: upper bound {hi}");
        }
    }

    /// Power at a fixed seed: +3 % in one of 5 stages at CV 2 % is found more often with more trials (never
    /// less, within two standard errors), at 30 trials an arm nearly always, and passed only within α.
    #[test]
    fn power_grows_with_trials_and_a_real_change_never_passes() {
        let cells: Vec<Cell> =
            [5, 10, 20, 30].into_iter().map(|trials| Cell { stages: 5, trials, profile: 0, effect_pct: 3.0, cv: Cv::Fixed(2.0) }).collect();
        let results = run_cells(&cells, 2000, 2000, 12, PAIRED, 2);
        for pair in results.windows(2) {
            let (a, b) = (pair[0].rate(pair[0].regressions), pair[1].rate(pair[1].regressions));
            let se = (a * (1.0 - a) / 2000.0 + b * (1.0 - b) / 2000.0).sqrt();
            assert!(b >= a - 2.0 * se, "power fell from {a} to {b}: {pair:?}");
        }
        let last = results.last().unwrap();
        assert!(last.rate(last.regressions) >= 0.95, "{last:?}");
        // A pass has two ways in besides "no change" (method 3). The total decided cheaper with no stage
        // detected worse: the total's false "lower" is one of the CPU family's errors, so such passes stay
        // within the family's CPU rate (0.8 %; seen: 1 in 2000 at 5 trials). And "no regression ≥ X": a
        // true claim whenever X is above the +3 % (X is planned at the default 5 % spread: 10 % at 10
        // trials, 6.5 % at 30), false — "wrongly bounded" — only when X is at or below it, at most
        // α_equivalence (1 %) of the time; seen: none.
        for r in &results {
            assert!(r.rate(r.passes - r.bounded) <= 0.008, "a +3 % change is passed only within α: {r:?}");
            assert!(r.rate(r.wrongly_bounded) <= 0.01, "{r:?}");
        }
    }

    /// The sequential design's promises at a fixed seed: looking after every pair, a same-code 20-stage
    /// experiment rarely claims a change in 20 looks (the bound is 1 %, and Ville's inequality is loose: the
    /// README's 4 000-experiment cells measured 0.18–0.40 %); a +3 % change in one of 5 stages at CV 2 % is
    /// found within a 40-pair budget at least 90 % of the time, else passed only on a true "no regression
    /// ≥ X"; a +20 % change with a 10-trial
    /// profile is decided in about the minimum of 2 pairs. Sized for the test command (seed 3: 2 claims in
    /// 1 000 A/A experiments, bound 0.72 %; 188 of 200 found; ~24 s): the README's figures come from
    /// `arbiter simulate`, not from here.
    #[test]
    fn the_sequential_design_keeps_its_error_rate_and_stops_early() {
        let seq = Design { looks: Looks::Sequential, ..PAIRED };
        let aa = Cell { stages: 20, trials: 20, profile: 0, effect_pct: 0.0, cv: Cv::Range(1.0, 5.0) };
        let power = Cell { stages: 5, trials: 40, profile: 0, effect_pct: 3.0, cv: Cv::Fixed(2.0) };
        let big = Cell { stages: 5, trials: 40, profile: 10, effect_pct: 20.0, cv: Cv::Fixed(2.0) };
        let r = run_cells(&[aa, power, big], 200, 1000, 3, seq, 2);
        let (_, hi) = judge::stats::clopper_pearson(r[0].claims, r[0].replications, 0.95);
        assert!(hi <= 0.012, "{:?}: upper bound {hi}", r[0]);
        // A +3 % change: found, or (the futility stop, when detecting it looked out of the budget's reach)
        // passed on "no regression ≥ X" with X above it — never with X at or below it. Uncalibrated, X is
        // planned at the default 5 % spread (8.6 % for 40 pairs), so the stop comes early on this quieter
        // host: 93.6 % found over 2000 experiments (README); with a 10-trial profile 96.8 %.
        assert!(r[1].rate(r[1].regressions) >= 0.9 && r[1].passes == r[1].bounded && r[1].wrongly_bounded == 0, "{:?}", r[1]);
        assert!(r[1].mean_trials < 40.0 && r[1].p95_trials <= 40, "{:?}", r[1]);
        assert!(r[2].rate(r[2].regressions) == 1.0 && r[2].mean_trials <= 3.0, "{:?}", r[2]);
    }

    /// The order covariate at a fixed seed: a pair's first trial costing 10 % more (5 stages, CV 5 %, 10
    /// pairs) makes a same-code experiment that always runs the control first claim a change often (the
    /// treatment reads 10 % cheaper); balanced orders, with the covariate, keep the promise — and still find
    /// a real +10 % regression of one stage. A warm-up (+20 % on the experiment's first trial) is one pair's
    /// outlier that balance and the covariate leave to the spread.
    #[test]
    fn balanced_orders_and_the_covariate_take_an_order_effect_out() {
        let aa = Cell { stages: 5, trials: 10, profile: 0, effect_pct: 0.0, cv: Cv::Fixed(5.0) };
        let real = Cell { effect_pct: 10.0, trials: 20, ..aa };
        let ordered = |order| Design { order, order_effect_pct: 10.0, ..PAIRED };
        let first = run_cells(&[aa], 1000, 1000, 5, ordered(Order::ControlFirst), 2);
        assert!(first[0].rate(first[0].claims) >= 0.1, "{:?}", first[0]);
        let balanced = run_cells(&[aa, real], 1000, 1000, 5, ordered(Order::Balanced), 2);
        let (_, hi) = judge::stats::clopper_pearson(balanced[0].claims, balanced[0].replications, 0.95);
        assert!(hi <= 0.015, "{:?}: upper bound {hi}", balanced[0]);
        assert!(balanced[1].rate(balanced[1].regressions) >= 0.9, "{:?}", balanced[1]);
        let warm = run_cells(&[aa], 1000, 1000, 5, Design { warm_up_pct: 20.0, ..ordered(Order::Balanced) }, 2);
        let (_, hi) = judge::stats::clopper_pearson(warm[0].claims, warm[0].replications, 0.95);
        assert!(hi <= 0.015, "{:?}: upper bound {hi}", warm[0]);
    }

    #[test]
    fn the_fixed_design_bound_matches_the_issue() {
        // 3 % at CV 2 %, α = 0.01 two-sided, power 95 %: 16 trials per arm.
        assert_eq!(fixed_n(2.0, 3.0, 0.01, 0.95).round(), 16.0);
        // With the spread unknown the t-test needs more: the issue's 27 pairs at Holm's first level for 5
        // stages (0.8 % / 5), +3 % at CV 2 %, power 95 %.
        let t = fixed_n_t(2.0, 3.0, 0.008 / 5.0, 0.95);
        assert!(t as f64 > fixed_n(2.0, 3.0, 0.008 / 5.0, 0.95) && (25..=29).contains(&t), "{t}");
    }

    /// The launch preview's claim, measured: with the spread it assumes (CV 2 %, one stage, 10 pairs) the
    /// planner says a change of ±X % is detected 80 % of the time at the experiment's level. Simulated at
    /// X − 1 and X + 1 percentage points, the detection rate straddles 80 %: the simulated 80 %-power change
    /// lies within a percentage point of the preview's.
    #[test]
    fn the_planned_detectable_change_is_what_simulate_detects() {
        use judge::pipeline::power::{mde_pct, Spread};
        let method = MethodConfig { paired: true, ..MethodConfig::default() };
        let x = mde_pct(Spread { sd: 0.02, prior: None }, 10, method.alpha_cpu() / 1.0, true);
        assert!((3.0..6.0).contains(&x), "{x}");
        let cells: Vec<Cell> = [x - 1.0, x, x + 1.0]
            .into_iter()
            .map(|effect_pct| Cell { stages: 1, trials: 10, profile: 0, effect_pct, cv: Cv::Fixed(2.0) })
            .collect();
        let r = run_cells(&cells, 3000, 3000, 5, PAIRED, 2);
        let rate = |c: &CellResult| c.rate(c.cpu_claims);
        eprintln!("X = {x:.2} %: {:.3} at X − 1, {:.3} at X, {:.3} at X + 1", rate(&r[0]), rate(&r[1]), rate(&r[2]));
        assert!(
            rate(&r[0]) < 0.8 && rate(&r[2]) > 0.8,
            "X = {x:.2} %: {:.3} at X − 1, {:.3} at X, {:.3} at X + 1",
            rate(&r[0]),
            rate(&r[1]),
            rate(&r[2])
        );
    }
}
