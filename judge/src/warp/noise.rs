//! The noise-aware warp gate: the upstream rule (a relative budget on two medians) knows nothing of how
//! much a cell moves on its own, so a same-code A/B on a shared machine breaches it by chance. Here each
//! gated row (cell × metric) gets an interval from its rounds and, where the run has too little to say,
//! from the suite's warp noise profile; a breach of the budget counts only when the interval supports it.
//! Every rule is here.
//!
//! **The estimate.** Per phase, the mean of the log values of its successful rounds (a phase mean); the
//! change is the mean of the candidate's phase means minus the baseline's (a ratio of geometric means:
//! robust to the skew of latencies, and close to upstream's ratio of medians).
//!
//! **The spread is the phase's, not the round's.** Rounds within one phase share a server process, its
//! caches and the disk's state at that moment, so two phases of the *same* binary differ by more than
//! their rounds' scatter suggests (this machine: a same-code put-4KiB/sync-on cell moved −13.5 % with three
//! tight rounds a side). The variance of a phase mean, σ², comes from, pooled by degrees of freedom:
//!
//! * the run's own phases of one arm (ABBA: A1 and A2, B1 and B2 — one degree of freedom each);
//! * the profile's phases (a calibration: the same binary in every phase; each calibration adds the
//!   number of its phases less one);
//! * without a profile, below [`MIN_PHASE_DF`] degrees of freedom of the run's own, a documented default
//!   [`DEFAULT_PHASE_SPREAD`] *widens* the run's spread and adds no degrees of freedom (method 3: a guess
//!   cannot make one measured degree of freedom read like five); with none of its own (one phase an arm,
//!   uncalibrated) a row is untested — an uncalibrated suite's verdict is upstream's, this reading is shown
//!   beside it. With a profile the measured spread stands alone however few its degrees of freedom —
//!   Student's t prices them exactly, where pooling a guess claims degrees of freedom nobody measured
//!   (`arbiter simulate --kind warp` read 4–5.5 % false FAILs of a 24-cell A/A matrix that way, from
//!   tail-latency rows whose three-calibration spread came out small by chance);
//!
//! and never less than the rounds' own scatter over their number (s²_round / n). The standard error of
//! the change is σ·√(1/P + 1/Q) over P baseline and Q candidate phases, and its interval is Student's t at
//! the row's level.
//!
//! **The family** (method 3, [`levels`]): a cell's obj/s, throughput and mean latency are one measurement
//! (the same operations counted in the same window: bytes are objects × size, mean latency concurrency
//! over obj/s), so obj/s stands for the cell: Holm over the cells' obj/s rows at [`PRIMARY_SHARE`] of
//! [`ALPHA`], ordered by each row's p-value of "not beyond the fail budget"; throughput and mean latency are
//! read at their cell's obj/s level. The tail latencies (p90, p99), a tail's own evidence, are Holm's second
//! family at the rest. Method 2 read all 120 rows of a full matrix at α / 120 (Bonferroni), intervals
//! about 19 % wider than the 24 cells need. Holm gives levels, not simultaneous intervals: each row's
//! interval is at its own level (`level`), which is what FAIL is read from.
//!
//! **The decision** of a row, in regress terms (how much worse the candidate is, as upstream counts it):
//! FAIL when the whole interval is beyond the fail budget; WARN when it is beyond the warn budget; a
//! breach the interval does not support (upstream FAIL or WARN, or an estimate beyond the warn budget) is
//! INCONCLUSIVE — "within noise: −X % … +Y % at N rounds", never a silent PASS; anything else PASS. The error-rate
//! row (failed rounds) and MISSING rows keep upstream's verdict: a failed round is not noise. Overall: a
//! FAIL (or blocking MISSING) fails, else an INCONCLUSIVE row makes it inconclusive, else the worst row.

use super::gate::{GateConfig, GateReport, RowVerdict};
use super::rounds::CellRounds;
use crate::units::fmt_pct;
use crate::stats::{ln_pos, pct, t_quantile};
use crate::Verdict;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The family-wise error rate of the noise-aware gate over a matrix's gated rows.
pub const ALPHA: f64 = 0.05;
/// The share of [`ALPHA`] given to the cells' primary rows (obj/s); the tail latencies get the rest.
pub const PRIMARY_SHARE: f64 = 0.8;
/// The metric that stands for a cell: obj/s. Throughput (obj/s × the object size) and mean latency
/// (concurrency over obj/s) are the same count of operations in the same window, so they are read at
/// their cell's obj/s level and add no test of their own; p90/p99 latency, a tail's own evidence, are a
/// second family.
pub const PRIMARY_METRIC: &str = "reqps";
/// With adaptive rounds, the share of the error rate the planned look spends ([`Look`]).
pub const PLANNED_LOOK_SHARE: f64 = 0.2;
/// The metrics of the tail family.
pub const TAIL_METRICS: [&str; 2] = ["p90-latency", "p99-latency"];
/// The spread of a phase mean (log scale, ≈ its CV) assumed without a profile: it widens a smaller
/// spread the run measured with fewer than [`MIN_PHASE_DF`] degrees of freedom, and adds none (method 3;
/// before, it was pooled in as 4 degrees of freedom nobody measured).
pub const DEFAULT_PHASE_SPREAD: f64 = 0.05;

/// Without a profile, below this many degrees of freedom of the run's own (ABBA gives two), the default
/// spread widens the run's.
pub const MIN_PHASE_DF: f64 = 6.0;

/// Where a judged matrix stands among the looks adaptive rounds may take (method 3). Each time adaptive
/// rounds add phases the matrix is judged again, and a FAIL ends it: a row read again at one level at
/// every look would spend the error rate once per look. So the rate is **spent** over the looks the cap
/// allows: a fifth at the planned look, the other four fifths evenly over the adaptive ones; Holm runs
/// within each look at its share, and the union bound over looks keeps the chance that a same-code matrix
/// ever FAILs within [`ALPHA`] however the looks fall. Without adaptive rounds (or before the suite is
/// calibrated) the one look spends it all. Measured with `arbiter simulate --kind warp` (README): the
/// planned look's share matters little (a drop the planned phases support is rare on a noisy host, and
/// adaptive rounds find it later), so most is kept for the looks with more phases; an always-valid
/// confidence sequence (the pipeline's mixture) was tried instead and is far too wide at one to six
/// phases an arm (a −25 % cell FAILed in 1–2 % of experiments).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Look {
    /// 0 for the planned phases, k after the k-th round of added phases.
    pub index: u32,
    /// The most adaptive looks the cap allows (0: none).
    pub max: u32,
}

impl Look {
    /// The only look of a matrix without adaptive rounds.
    pub const ONLY: Look = Look { index: 0, max: 0 };

    /// The share of the error rate spent at this look.
    pub fn share(&self) -> f64 {
        match (self.max, self.index) {
            (0, _) => 1.0,
            (_, 0) => PLANNED_LOOK_SHARE,
            (m, _) => (1.0 - PLANNED_LOOK_SHARE) / f64::from(m),
        }
    }

    /// The look a matrix's cells are at: `planned` rounds an arm, `rounds` a phase, a cap of `cap` rounds an
    /// arm (`suite::warp::WarpSpec::round_cap`); its index from the cell with the most added phases.
    pub fn of(cells: &[CellRounds], planned: u32, rounds: u32, cap: u32) -> Look {
        let rounds = rounds.max(1);
        let max = cap.saturating_sub(planned) / rounds;
        let done = cells.iter().map(|c| c.rounds_an_arm().into_iter().max().unwrap_or(0)).max().unwrap_or(0);
        Look { index: done.saturating_sub(planned).div_ceil(rounds).min(max), max }
    }
}

/// The metrics a row's rounds give values for (upstream's names); the error rate has no rounds to spread.
pub const METRICS: [&str; 5] = ["reqps", "throughput", "latency", "p90-latency", "p99-latency"];

/// One metric of one cell in a profile: the spread of same-binary phase means.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct PhaseSpread {
    /// Sum of squared deviations of each calibration's phase means (log) from that calibration's mean.
    pub ss: f64,
    /// Σ (phases − 1) over the calibrations.
    pub df: f64,
    /// Rounds a phase had (the last calibration's): a profile is for the matrix settings it ran with.
    pub rounds: u32,
}

impl PhaseSpread {
    /// The standard deviation of a phase mean (log scale); NaN without degrees of freedom.
    pub fn sd(&self) -> f64 {
        if self.df > 0.0 {
            (self.ss / self.df).sqrt()
        } else {
            f64::NAN
        }
    }
}

/// A warp suite's noise profile: per cell label and metric, the spread of phase means that ran the same
/// binary. Built from calibrations ([`WarpNoiseProfile::add_calibration`]); a later one adds to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct WarpNoiseProfile {
    pub calibrations: u32,
    pub cells: BTreeMap<String, BTreeMap<String, PhaseSpread>>,
}

/// A cell's label without its arm: "starved:put-4KiB/sync-on" → "put-4KiB/sync-on"; a mixed run's
/// operation ("mixed-256KiB:GET/sync-on") keeps its own colon (arms are named before the workload).
pub fn bare_label(label: &str) -> &str {
    match label.split_once(':') {
        Some((_, rest)) if ["put-", "get-", "mixed-"].iter().any(|w| rest.starts_with(w)) => rest,
        _ => label,
    }
}

/// A phase's mean of the log values of its successful rounds, and their count (None without a value).
fn phase_mean(values: &[f64]) -> Option<(f64, usize)> {
    let logs: Vec<f64> = values.iter().copied().filter(|v| v.is_finite() && *v > 0.0).map(ln_pos).collect();
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64, logs.len()))
}

/// Sum of squared deviations from the mean.
fn ss(xs: &[f64]) -> f64 {
    let m = xs.iter().sum::<f64>() / xs.len().max(1) as f64;
    xs.iter().map(|x| (x - m).powi(2)).sum()
}

impl WarpNoiseProfile {
    /// Adds a calibration: every phase of each cell ran the same binary (baseline and candidate alike).
    /// Cells with fewer than two phases with values add nothing.
    pub fn add_calibration(&mut self, cells: &[CellRounds]) {
        self.calibrations += 1;
        for cell in cells {
            for metric in METRICS {
                let phases: Vec<(f64, usize)> =
                    [true, false].into_iter().flat_map(|b| cell.values(metric, b)).filter_map(|(_, v)| phase_mean(&v)).collect();
                if phases.len() < 2 {
                    continue;
                }
                let means: Vec<f64> = phases.iter().map(|p| p.0).collect();
                let spread = self.cells.entry(bare_label(&cell.label).to_string()).or_default().entry(metric.to_string()).or_default();
                spread.ss += ss(&means);
                spread.df += (means.len() - 1) as f64;
                spread.rounds = phases.iter().map(|p| p.1).min().unwrap_or(0) as u32;
            }
        }
    }

    /// A cell's spread of one metric; `cell` may carry an arm ("starved:put-4KiB/sync-on"): a profile
    /// is per workload and drive sync, whatever the arm.
    pub fn spread(&self, cell: &str, metric: &str) -> Option<&PhaseSpread> {
        self.cells.get(bare_label(cell))?.get(metric).filter(|s| s.df > 0.0)
    }
}

/// The noise-aware verdict of one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum NoiseVerdict {
    Pass,
    Warn,
    Fail,
    Inconclusive,
    Missing,
}

impl NoiseVerdict {
    pub fn label(self) -> &'static str {
        match self {
            NoiseVerdict::Pass => "✅ PASS",
            NoiseVerdict::Warn => "⚠️ WARN",
            NoiseVerdict::Fail => "❌ FAIL",
            NoiseVerdict::Inconclusive => "❔ INCONCLUSIVE",
            NoiseVerdict::Missing => "❓ MISSING",
        }
    }
}

/// One gated row, judged against its noise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseRow {
    pub workload: String,
    pub metric: String,
    /// Upstream's verdict of the row.
    pub upstream: RowVerdict,
    pub verdict: NoiseVerdict,
    /// The change (candidate against baseline, %) from the phase means, and its interval; absent for rows
    /// without rounds (the error rate, MISSING evidence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_pct: Option<[f64; 2]>,
    /// Successful rounds per phase (the fewest of any phase), and phases [baseline, candidate].
    pub rounds: u32,
    pub phases: [u32; 2],
    /// Where the spread came from: "profile (N calibrations)", "run + profile", "run + default",
    /// "default (uncalibrated)".
    pub spread: String,
    /// Why, in words ("within noise: −18.2 % … +22.3 % at 3 rounds": the successful rounds of the arm
    /// with fewer, over its phases).
    pub words: String,
    /// More phases could change this row's reading: INCONCLUSIVE, or WARN with the fail budget inside its
    /// interval (adaptive rounds give its cell another pair of phases).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsure: bool,
    /// For an unsure row: what more phases could do (see [`Reach::decidable`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reach: Option<Reach>,
    /// The level this row was decided at (its Holm step at this look's share; method 3 — before, every row
    /// was read two-sided at `row_alpha`): a one-sided level, each end of `interval_pct` a bound at it (the
    /// interval is the 1 − 2 × level one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<f64>,
}

/// What an unsure row's interval would be with more phases: its spread and degrees of freedom now, its
/// phases, its estimate and the budget it must clear (all in regress terms, log scale).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Reach {
    /// The spread of a phase mean (log), and its degrees of freedom.
    pub sd: f64,
    pub df: f64,
    pub phases: [u32; 2],
    /// How much worse the candidate is (log: ln of the ratio, positive is worse).
    pub regress: f64,
    /// The budget the row must clear to be decided (log of 1 + budget).
    pub target: f64,
    /// The row's share of the error rate.
    pub alpha: f64,
}

impl Reach {
    /// Whether, with `phases` an arm, the interval could clear the budget if the estimate stayed where it
    /// is (each added phase a degree of freedom more). A row it could not is left as it is: more phases would
    /// only cost time (a same-code cell 7 % off with a ±30 % interval stays INCONCLUSIVE however long it runs).
    pub fn decidable(&self, phases: u32) -> bool {
        let [p, q] = self.phases.map(|n| n.max(phases) as f64);
        let df = self.df + (p - self.phases[0] as f64) + (q - self.phases[1] as f64);
        let half = t_quantile(1.0 - self.alpha / 2.0, df) * self.sd * (1.0 / p + 1.0 / q).sqrt();
        self.regress - half > self.target
    }
}

/// The noise-aware gate of a matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseGate {
    pub verdict: Verdict,
    pub alpha: f64,
    /// The first level of the obj/s family (its Bonferroni share of `alpha`, which Holm's steps only
    /// raise); each row's own level is `rows[].level`.
    pub row_alpha: f64,
    /// Calibrations behind the profile used (0: none, the default spread).
    pub calibrations: u32,
    pub rows: Vec<NoiseRow>,
    /// A cell's rounds an arm as planned (0: not known); a cell with more had phases added by adaptive rounds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub planned_rounds: u32,
    /// With adaptive rounds: which look this is and how many the cap allows; the error rate spent here is
    /// `alpha × look.share()` (method 3; absent: the only look, which spends it all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub look: Option<Look>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The estimate of one row from its cell's rounds: (change on the log scale, its standard error, its
/// degrees of freedom, fewest rounds a phase, phases [P, Q], spread source).
struct RowEstimate {
    log_change: f64,
    se: f64,
    df: f64,
    rounds: u32,
    phases: [u32; 2],
    spread: String,
    /// Successful rounds of the arm with fewer, over all its phases (what the words say).
    rounds_an_arm: u32,
}

fn estimate(cell: &CellRounds, metric: &str, profile: Option<&PhaseSpread>, calibrations: u32) -> Option<RowEstimate> {
    let arm =
        |baseline: bool| -> Vec<(f64, usize)> { cell.values(metric, baseline).into_iter().filter_map(|(_, v)| phase_mean(&v)).collect() };
    let (base, cand) = (arm(true), arm(false));
    if base.is_empty() || cand.is_empty() {
        return None;
    }
    let mean = |p: &[(f64, usize)]| p.iter().map(|x| x.0).sum::<f64>() / p.len() as f64;
    let log_change = mean(&cand) - mean(&base);
    // The run's own phase spread (ABBA: one degree of freedom an arm).
    let run_ss = ss(&base.iter().map(|p| p.0).collect::<Vec<_>>()) + ss(&cand.iter().map(|p| p.0).collect::<Vec<_>>());
    let run_df = (base.len() - 1 + cand.len() - 1) as f64;
    let (mut total_ss, mut total_df) = (run_ss, run_df);
    let mut parts: Vec<String> = Vec::new();
    if run_df > 0.0 {
        parts.push("run".into());
    }
    if let Some(p) = profile {
        total_ss += p.ss;
        total_df += p.df;
        parts.push(format!("profile ({calibrations} calibration{})", if calibrations == 1 { "" } else { "s" }));
    }
    // Too few degrees of freedom (no profile, or a young one): the default spread is pooled in — to widen
    // a spread measured below it, never to narrow one measured above it (a noisy cell stays noisy).
    // Without a profile, and too little of its own, the run leans on the default spread. With a profile
    // the measured spread stands alone, however few its degrees of freedom: Student's t prices them
    // exactly, where pooling a guess would claim degrees of freedom nobody measured.
    let mut var = if total_df > 0.0 { total_ss / total_df } else { 0.0 };
    if profile.is_none() && total_df < MIN_PHASE_DF {
        // The default widens a spread measured with too few degrees of freedom, and adds none.
        if total_df == 0.0 {
            parts.push("none measured (uncalibrated)".into());
        } else if DEFAULT_PHASE_SPREAD * DEFAULT_PHASE_SPREAD > var {
            var = DEFAULT_PHASE_SPREAD * DEFAULT_PHASE_SPREAD;
            parts.push("widened to the default (uncalibrated)".into());
        } else {
            parts.push("uncalibrated".into());
        }
    }
    let spread = parts.join(" + ");
    // A phase mean is never steadier than its rounds say: their pooled scatter over their number.
    let within: Vec<(f64, f64, usize)> = [true, false]
        .into_iter()
        .flat_map(|b| cell.values(metric, b))
        .filter_map(|(_, v)| {
            let logs: Vec<f64> = v.iter().copied().filter(|x| x.is_finite() && *x > 0.0).map(ln_pos).collect();
            (logs.len() > 1).then(|| (ss(&logs), (logs.len() - 1) as f64, logs.len()))
        })
        .collect();
    let rounds = base.iter().chain(&cand).map(|p| p.1).min().unwrap_or(0) as u32;
    let an_arm = |p: &[(f64, usize)]| p.iter().map(|x| x.1).sum::<usize>() as u32;
    let rounds_an_arm = an_arm(&base).min(an_arm(&cand));
    if !within.is_empty() {
        let (w_ss, w_df): (f64, f64) = within.iter().fold((0.0, 0.0), |a, w| (a.0 + w.0, a.1 + w.1));
        var = var.max(w_ss / w_df / f64::from(rounds.max(1)));
    }
    let (p, q) = (base.len() as f64, cand.len() as f64);
    Some(RowEstimate {
        log_change,
        se: (var * (1.0 / p + 1.0 / q)).sqrt(),
        df: total_df,
        rounds,
        phases: [base.len() as u32, cand.len() as u32],
        spread,
        rounds_an_arm,
    })
}

fn higher_is_better(metric: &str) -> bool {
    matches!(metric, "reqps" | "throughput")
}

/// The budgets a metric is held to (tail latencies may have their own).
fn budgets(metric: &str, config: &GateConfig) -> (f64, f64) {
    match metric {
        "p90-latency" | "p99-latency" => (config.tail_fail_pct.unwrap_or(config.fail_pct), config.tail_warn_pct.unwrap_or(config.warn_pct)),
        _ => (config.fail_pct, config.warn_pct),
    }
}

/// Each gated row's one-sided p-value of "not beyond the fail budget" (a FAIL is a one-sided claim: worse
/// than the budget): what the family orders its rows by. `None` for rows without an estimate or without a
/// measured spread.
fn fail_p(e: &RowEstimate, metric: &str, fail_pct: f64) -> Option<f64> {
    if !(e.df > 0.0 && e.se > 0.0) {
        return None;
    }
    // Worse on the log scale, and the budget there: obj/s worse when it drops, latency when it rises.
    let (worse, budget) = if higher_is_better(metric) {
        (-e.log_change, -(1.0 - fail_pct / 100.0).ln())
    } else {
        (e.log_change, (1.0 + fail_pct / 100.0).ln())
    };
    let t = (worse - budget) / e.se;
    Some(if t > 0.0 { crate::stats::t_two_sided_p(t, e.df) / 2.0 } else { 1.0 - crate::stats::t_two_sided_p(t, e.df) / 2.0 })
}

/// The level each gated row is decided at: Holm over the cells' obj/s rows at [`PRIMARY_SHARE`] of
/// [`ALPHA`], Holm over the tail-latency rows at the rest, ordered by [`fail_p`]; throughput and mean
/// latency at their cell's obj/s level. A row Holm rejects gets its step's level, the rest the level where
/// the procedure stopped — so "FAIL" and "the interval clears the budget" always agree. Rows without a
/// p-value take their family's first (Bonferroni) level.
fn levels(report: &GateReport, estimates: &[Option<RowEstimate>], config: &GateConfig, look: Look) -> Vec<f64> {
    let mut level = vec![f64::NAN; report.rows.len()];
    for (share, family) in [(PRIMARY_SHARE, vec![PRIMARY_METRIC]), (1.0 - PRIMARY_SHARE, TAIL_METRICS.to_vec())] {
        let members: Vec<usize> = (0..report.rows.len())
            .filter(|&i| family.contains(&report.rows[i].metric.as_str()) && report.rows[i].verdict != RowVerdict::Missing)
            .collect();
        let alpha = ALPHA * share * look.share();
        let first = alpha / members.len().max(1) as f64;
        let tested: Vec<(usize, f64)> = members
            .iter()
            .filter_map(|&i| {
                let metric = report.rows[i].metric.as_str();
                estimates[i].as_ref().and_then(|e| fail_p(e, metric, budgets(metric, config).0)).map(|p| (i, p))
            })
            .collect();
        // Holm over every member (an untested one counts, at p = 1: it cannot be rejected, but it is a test).
        let p: Vec<f64> = members.iter().map(|&i| tested.iter().find(|t| t.0 == i).map_or(1.0, |t| t.1)).collect();
        let holm = crate::pipeline::family::holm(&p, alpha);
        for (k, &i) in members.iter().enumerate() {
            level[i] = if tested.iter().any(|t| t.0 == i) { holm[k] } else { first };
        }
    }
    // Throughput and mean latency: their cell's obj/s level (or the primary family's first).
    let primary_first = ALPHA * PRIMARY_SHARE * look.share()
        / report.rows.iter().filter(|r| r.metric == PRIMARY_METRIC && r.verdict != RowVerdict::Missing).count().max(1) as f64;
    for i in 0..report.rows.len() {
        if level[i].is_nan() {
            let twin = report.rows.iter().position(|r| r.workload == report.rows[i].workload && r.metric == PRIMARY_METRIC);
            level[i] = twin.map(|t| level[t]).filter(|l| l.is_finite()).unwrap_or(primary_first);
        }
    }
    level
}

/// Judges every row of `report` (upstream's, of a matrix run whose `cells` it holds) against its noise:
/// the matrix's only look.
pub fn noise_gate(report: &GateReport, config: &GateConfig, profile: Option<&WarpNoiseProfile>) -> NoiseGate {
    noise_gate_at(report, config, profile, Look::ONLY)
}

/// [`noise_gate`] at one of adaptive rounds' looks, spending its share of the error rate ([`Look`]).
pub fn noise_gate_at(report: &GateReport, config: &GateConfig, profile: Option<&WarpNoiseProfile>, look: Look) -> NoiseGate {
    let calibrations = profile.map_or(0, |p| p.calibrations);
    let estimates: Vec<Option<RowEstimate>> = report
        .rows
        .iter()
        .map(|row| {
            let metric = row.metric.as_str();
            if row.verdict == RowVerdict::Missing || !METRICS.contains(&metric) {
                return None;
            }
            let spread = profile.and_then(|p| p.spread(&row.workload, metric));
            report.cells.iter().find(|c| c.label == row.workload).and_then(|c| estimate(c, metric, spread, calibrations))
        })
        .collect();
    let level = levels(report, &estimates, config, look);
    let primaries = report.rows.iter().filter(|r| r.metric == PRIMARY_METRIC && r.verdict != RowVerdict::Missing).count();
    let row_alpha = ALPHA * PRIMARY_SHARE * look.share() / primaries.max(1) as f64;
    let mut estimates = estimates.into_iter();
    let mut levels_iter = level.into_iter();
    let rows: Vec<NoiseRow> = report
        .rows
        .iter()
        .map(|row| {
            let keep = |verdict: NoiseVerdict, words: &str| NoiseRow {
                workload: row.workload.clone(),
                metric: row.metric.clone(),
                upstream: row.verdict,
                verdict,
                change_pct: None,
                interval_pct: None,
                rounds: 0,
                phases: [0, 0],
                spread: String::new(),
                words: words.into(),
                unsure: false,
                reach: None,
                level: None,
            };
            let upstream_as = match row.verdict {
                RowVerdict::Pass => NoiseVerdict::Pass,
                RowVerdict::Warn => NoiseVerdict::Warn,
                RowVerdict::Fail => NoiseVerdict::Fail,
                RowVerdict::Missing => NoiseVerdict::Missing,
            };
            let metric = row.metric.as_str();
            let (e, row_level) = (estimates.next().flatten(), levels_iter.next().unwrap_or(row_alpha));
            if row.verdict == RowVerdict::Missing || !METRICS.contains(&metric) {
                return keep(upstream_as, "as upstream (no rounds to measure its noise)");
            }
            let Some(e) = e else {
                return keep(upstream_as, "as upstream (no rounds behind this row)");
            };
            let (fail, warn) = budgets(metric, config);
            let breach_now = {
                let r = if higher_is_better(metric) { -pct(e.log_change) } else { pct(e.log_change) };
                matches!(row.verdict, RowVerdict::Fail | RowVerdict::Warn) || r > warn
            };
            if !(e.df > 0.0) {
                // One phase an arm and no profile: no spread measured, nothing to test against (method 3).
                let words = format!(
                    "untested: one phase an arm and no noise profile to read its spread from ({} at {} rounds; an A/A run calibrates the suite)",
                    fmt_pct(pct(e.log_change)),
                    e.rounds_an_arm
                );
                let verdict = if breach_now { NoiseVerdict::Inconclusive } else { NoiseVerdict::Pass };
                return NoiseRow {
                    change_pct: Some(pct(e.log_change)),
                    rounds: e.rounds,
                    phases: e.phases,
                    spread: e.spread,
                    level: Some(row_level),
                    ..keep(verdict, &words)
                };
            }
            // Each end of the interval is a one-sided bound at the row's level (the interval is the
            // 1 − 2 × level one): a FAIL claims one side, worse beyond the budget.
            let half = t_quantile(1.0 - row_level, e.df) * e.se;
            let (lo, hi) = (pct(e.log_change - half), pct(e.log_change + half));
            // Regress: how much worse, as upstream counts it (a drop in obj/s, a rise in latency).
            let (r_est, r_lo, r_hi) = if higher_is_better(metric) { (-pct(e.log_change), -hi, -lo) } else { (pct(e.log_change), lo, hi) };
            let breach = matches!(row.verdict, RowVerdict::Fail | RowVerdict::Warn) || r_est > warn;
            // The interval in words: a ratio's interval is lopsided (−94 % … +594 %), so both ends, not a ±.
            let span = format!("{} … {}", fmt_pct(lo), fmt_pct(hi));
            let (verdict, words) = if r_lo > fail {
                (NoiseVerdict::Fail, format!("beyond the {fail} % budget even at the interval's edge ({:.1} %)", r_lo))
            } else if r_lo > warn {
                (NoiseVerdict::Warn, format!("beyond the {warn} % warn budget even at the interval's edge ({:.1} %)", r_lo))
            } else if breach {
                (NoiseVerdict::Inconclusive, format!("within noise: {span} at {} rounds", e.rounds_an_arm))
            } else {
                (NoiseVerdict::Pass, format!("within the budget ({span} at {} rounds)", e.rounds_an_arm))
            };
            let unsure = verdict == NoiseVerdict::Inconclusive || (verdict == NoiseVerdict::Warn && r_hi > fail);
            let regress = if higher_is_better(metric) { -e.log_change } else { e.log_change };
            let reach = unsure.then(|| Reach {
                sd: e.se / (1.0 / f64::from(e.phases[0]) + 1.0 / f64::from(e.phases[1])).sqrt(),
                df: e.df,
                phases: e.phases,
                regress,
                target: (1.0 + (if verdict == NoiseVerdict::Warn { fail } else { warn }) / 100.0).ln(),
                // `Reach` reads a two-sided level: its interval is the 1 − 2 × level one.
                alpha: 2.0 * row_level,
            });
            NoiseRow {
                unsure,
                reach,
                change_pct: Some(pct(e.log_change)),
                interval_pct: Some([lo, hi]),
                rounds: e.rounds,
                phases: e.phases,
                spread: e.spread,
                words,
                level: Some(row_level),
                ..keep(verdict, "")
            }
        })
        .collect();
    let has = |v: NoiseVerdict| rows.iter().any(|r| r.verdict == v);
    let verdict = if has(NoiseVerdict::Fail) || (has(NoiseVerdict::Missing) && !config.allow_missing) {
        if config.allow_regression && !has(NoiseVerdict::Missing) {
            Verdict::WarpExempted
        } else {
            Verdict::WarpFail
        }
    } else if has(NoiseVerdict::Inconclusive) {
        Verdict::WarpInconclusive
    } else if has(NoiseVerdict::Warn) {
        Verdict::WarpWarn
    } else {
        Verdict::WarpPass
    };
    NoiseGate { verdict, alpha: ALPHA, row_alpha, calibrations, rows, planned_rounds: 0, look: (look.max > 0).then_some(look) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warp::adaptive::cells_to_extend;
    use crate::warp::gate::GateRow;
    use crate::warp::rounds::{PhaseRounds, Round};

    fn round(reqps: f64) -> Round {
        Round {
            ok: true,
            reqps: Some(reqps),
            throughput_bps: Some(reqps * 4096.0),
            latency_ms: Some(8000.0 / reqps),
            p90_ms: None,
            p99_ms: None,
        }
    }

    /// A cell whose phases (legs A…, B…) had these obj/s rounds.
    fn cell(label: &str, baseline: &[&[f64]], candidate: &[&[f64]]) -> CellRounds {
        let phases = baseline
            .iter()
            .enumerate()
            .map(|(i, r)| PhaseRounds { leg: format!("A{}", i + 1), baseline: true, rounds: r.iter().map(|v| round(*v)).collect() })
            .chain(candidate.iter().enumerate().map(|(i, r)| PhaseRounds {
                leg: format!("B{}", i + 1),
                baseline: false,
                rounds: r.iter().map(|v| round(*v)).collect(),
            }))
            .collect();
        CellRounds { label: label.into(), phases, drift_pct: None, note: None }
    }

    /// Upstream's report of these cells: one reqps row each, its regress from the medians.
    fn upstream(cells: Vec<CellRounds>, config: &GateConfig) -> GateReport {
        let rows = cells
            .iter()
            .map(|c| {
                let med =
                    |b: bool| crate::stats::median(&c.values("reqps", b).into_iter().flat_map(|(_, v)| v).collect::<Vec<_>>()).unwrap();
                let regress = -(med(false) - med(true)) / med(true) * 100.0;
                let verdict = if regress > config.fail_pct {
                    RowVerdict::Fail
                } else if regress > config.warn_pct {
                    RowVerdict::Warn
                } else {
                    RowVerdict::Pass
                };
                GateRow {
                    workload: c.label.clone(),
                    metric: "reqps".into(),
                    delta: format!("{:.2}%", -regress),
                    new: Some(med(false)),
                    baseline: Some(med(true)),
                    regress: Some(regress),
                    verdict,
                    missing_reason: None,
                }
            })
            .collect();
        GateReport {
            verdict: Verdict::WarpPass,
            fail_pct: config.fail_pct,
            warn_pct: config.warn_pct,
            rows,
            exemption: None,
            missing_skipped: 0,
            drifted: Vec::new(),
            cells,
            noise: None,
            sync_ignored: false,
        }
    }

    #[test]
    fn a_same_code_phase_shift_inside_the_noise_is_inconclusive_not_fail() {
        // This machine's put-4KiB/sync-on A/A: three tight rounds a side, the phases 13.5 % apart.
        let c = cell("put-4KiB/sync-on", &[&[1000.0, 1010.0, 995.0]], &[&[865.0, 870.0, 862.0]]);
        let config = GateConfig::default();
        let report = upstream(vec![c.clone()], &config);
        assert_eq!(report.rows[0].verdict, RowVerdict::Fail, "upstream cries wolf");
        let n = noise_gate(&report, &config, None);
        let row = &n.rows[0];
        // Uncalibrated, one phase an arm: no spread measured, so the breach is untested (method 3: the
        // default spread adds no degrees of freedom; method 2 pooled it in as 4 and drew an interval).
        assert_eq!(row.verdict, NoiseVerdict::Inconclusive, "{row:?}");
        assert!(row.words.starts_with("untested: one phase an arm and no noise profile"), "{}", row.words);
        assert_eq!(n.verdict, Verdict::WarpInconclusive);
        assert!(row.interval_pct.is_none() && (row.change_pct.unwrap() + 13.4).abs() < 0.5, "{row:?}");
        // ABBA, uncalibrated: two phases an arm give 2 degrees of freedom of the run's own, widened to the
        // default spread, read at t with 2 df — within noise, with an interval.
        let abba = cell(
            "put-4KiB/sync-on",
            &[&[1000.0, 1010.0, 995.0], &[990.0, 1000.0, 985.0]],
            &[&[865.0, 870.0, 862.0], &[880.0, 875.0, 870.0]],
        );
        let n = noise_gate(&upstream(vec![abba], &config), &config, None);
        let row = &n.rows[0];
        assert_eq!(row.verdict, NoiseVerdict::Inconclusive, "{row:?}");
        assert!(row.words.starts_with("within noise: −") && row.words.ends_with(" % at 6 rounds"), "{}", row.words);
        assert_eq!(row.spread, "run + widened to the default (uncalibrated)");
        let [lo, hi] = row.interval_pct.unwrap();
        assert!(lo < -13.5 && hi > 0.0, "{row:?}");

        // A profile from calibrations whose same-binary phases moved that much as well: still within noise.
        let mut profile = WarpNoiseProfile::default();
        for shift in [0.86, 1.12, 0.93] {
            profile.add_calibration(&[cell(
                "put-4KiB/sync-on",
                &[&[1000.0, 1005.0, 998.0]],
                &[&[1000.0 * shift, 1004.0 * shift, 999.0 * shift]],
            )]);
        }
        assert_eq!(profile.calibrations, 3);
        let spread = profile.spread("put-4KiB/sync-on", "reqps").unwrap();
        assert_eq!((spread.df, spread.rounds), (3.0, 3));
        let with = noise_gate(&report, &config, Some(&profile));
        assert_eq!(with.rows[0].verdict, NoiseVerdict::Inconclusive, "{:?}", with.rows[0]);
        assert_eq!(with.rows[0].spread, "profile (3 calibrations)", "a profile's spread stands alone");
    }

    #[test]
    fn a_real_drop_beyond_the_noise_fails_and_a_steady_cell_passes() {
        let config = GateConfig::default();
        // A steady cell (profile: phases within ~1 %) that loses half its obj/s, and one that does not move.
        let mut profile = WarpNoiseProfile::default();
        for shift in [0.99, 1.01, 1.0, 0.995, 1.008] {
            profile.add_calibration(&[
                cell("get-4MiB/sync-off", &[&[500.0, 502.0, 499.0]], &[&[500.0 * shift, 501.0 * shift, 500.0 * shift]]),
                cell("put-4MiB/sync-off", &[&[300.0, 301.0, 299.0]], &[&[300.0 * shift, 300.0 * shift, 301.0 * shift]]),
            ]);
        }
        let report = upstream(
            vec![
                cell("get-4MiB/sync-off", &[&[500.0, 503.0, 498.0]], &[&[250.0, 251.0, 249.0]]),
                cell("put-4MiB/sync-off", &[&[300.0, 302.0, 299.0]], &[&[301.0, 299.0, 300.0]]),
            ],
            &config,
        );
        let n = noise_gate(&report, &config, Some(&profile));
        assert_eq!(n.rows[0].verdict, NoiseVerdict::Fail, "{:?}", n.rows[0]);
        assert!(n.rows[0].words.starts_with("beyond the 10 % budget"), "{}", n.rows[0].words);
        assert_eq!(n.rows[1].verdict, NoiseVerdict::Pass, "{:?}", n.rows[1]);
        assert_eq!(n.verdict, Verdict::WarpFail);
        // The obj/s family: the primary share of α over the two cells, Holm's first step for the drop, the
        // step that stopped for the steady cell (here the whole share: one rejected, one left).
        assert!((n.row_alpha - ALPHA * PRIMARY_SHARE / 2.0).abs() < 1e-12);
        assert_eq!(n.rows[0].level, Some(ALPHA * PRIMARY_SHARE / 2.0));
        assert_eq!(n.rows[1].level, Some(ALPHA * PRIMARY_SHARE));
        // An exemption turns the FAIL into an exempted result, as upstream's does.
        let exempt = GateConfig { allow_regression: true, ..config.clone() };
        assert_eq!(noise_gate(&report, &exempt, Some(&profile)).verdict, Verdict::WarpExempted);
    }

    #[test]
    fn unsure_cells_get_more_phases_until_the_cap_and_clear_cells_stop() {
        let config = GateConfig::default();
        // One calibration: phases of the same binary moved ±20 %; a 40 % drop in one cell is beyond the noise's
        // reach at one phase an arm (INCONCLUSIVE), a steady cell passes, a 7 % drop reads WARN or inconclusive.
        let mut profile = WarpNoiseProfile::default();
        profile.add_calibration(&[
            cell("get-4MiB/sync-off", &[&[500.0, 502.0, 499.0], &[400.0, 402.0, 399.0]], &[&[500.0, 501.0, 500.0], &[600.0, 601.0, 599.0]]),
            cell("put-4MiB/sync-off", &[&[300.0, 301.0, 299.0], &[300.0, 300.0, 301.0]], &[&[300.0, 300.0, 301.0], &[301.0, 299.0, 300.0]]),
        ]);
        let drop = cell("get-4MiB/sync-off", &[&[500.0, 503.0, 498.0]], &[&[300.0, 301.0, 299.0]]);
        let steady = cell("put-4MiB/sync-off", &[&[300.0, 302.0, 299.0]], &[&[301.0, 299.0, 300.0]]);
        let report = upstream(vec![drop.clone(), steady.clone()], &config);
        let n = noise_gate(&report, &config, Some(&profile));
        assert_eq!(n.rows[0].verdict, NoiseVerdict::Inconclusive, "{:?}", n.rows[0]);
        assert!(n.rows[0].unsure && !n.rows[1].unsure, "{:?}", n.rows);
        assert_eq!(report.cells[0].rounds_an_arm(), [3, 3]);
        assert_eq!(cells_to_extend(&n, &report.cells, 3, 9), ["get-4MiB/sync-off"], "the steady cell stops");
        assert!(cells_to_extend(&n, &report.cells, 3, 5).is_empty(), "3 + 3 rounds an arm is beyond a cap of 5");
        // Two more phases an arm of the same drop: the interval narrows until the drop is supported.
        let more = cell(
            "get-4MiB/sync-off",
            &[&[500.0, 503.0, 498.0], &[495.0, 497.0, 494.0], &[505.0, 502.0, 506.0]],
            &[&[300.0, 301.0, 299.0], &[296.0, 298.0, 297.0], &[304.0, 303.0, 305.0]],
        );
        let report = upstream(vec![more, steady], &config);
        let n = noise_gate(&report, &config, Some(&profile));
        assert_eq!(n.rows[0].verdict, NoiseVerdict::Fail, "{:?}", n.rows[0]);
        assert!(cells_to_extend(&n, &report.cells, 3, 30).is_empty(), "decided: no more phases");
        assert_eq!(report.cells[0].rounds_an_arm(), [9, 9]);
    }

    #[test]
    fn a_drifting_baseline_widens_its_own_interval_and_vetoes_nothing_else() {
        // Upstream's ABBA rule: one drifting cell makes the whole matrix INCONCLUSIVE. Here the drift is the
        // cell's phase spread: the steady cell beside it keeps its FAIL.
        let config = GateConfig::default();
        let mut profile = WarpNoiseProfile::default();
        for shift in [0.99, 1.01, 1.0, 0.995, 1.008] {
            profile.add_calibration(&[cell(
                "get-4MiB/sync-off",
                &[&[500.0, 502.0, 499.0]],
                &[&[500.0 * shift, 501.0 * shift, 500.0 * shift]],
            )]);
        }
        let mut report = upstream(
            vec![
                cell(
                    "get-4MiB/sync-off",
                    &[&[500.0, 503.0, 498.0], &[501.0, 499.0, 500.0]],
                    &[&[250.0, 251.0, 249.0], &[252.0, 250.0, 251.0]],
                ),
                cell("put-4KiB/sync-on", &[&[1000.0, 1003.0], &[700.0, 705.0]], &[&[850.0, 860.0], &[855.0, 845.0]]),
            ],
            &config,
        );
        report.drifted = vec!["put-4KiB/sync-on".into()];
        let n = noise_gate(&report, &config, Some(&profile));
        assert_eq!(n.rows[0].verdict, NoiseVerdict::Fail, "{:?}", n.rows[0]);
        assert_eq!(n.verdict, Verdict::WarpFail);
    }

    #[test]
    fn a_profile_is_per_workload_and_drive_sync_whatever_the_arm() {
        assert_eq!(bare_label("starved:put-4KiB/sync-on"), "put-4KiB/sync-on");
        assert_eq!(bare_label("put-4KiB/sync-on"), "put-4KiB/sync-on");
        assert_eq!(bare_label("mixed-256KiB:GET/sync-on"), "mixed-256KiB:GET/sync-on");
        assert_eq!(bare_label("low-mem:mixed-256KiB:GET/sync-off"), "mixed-256KiB:GET/sync-off");
        let mut profile = WarpNoiseProfile::default();
        profile.add_calibration(&[cell("treatment:get-4MiB/sync-off", &[&[500.0, 502.0]], &[&[490.0, 495.0]])]);
        assert!(profile.spread("starved:get-4MiB/sync-off", "reqps").is_some() && profile.spread("get-4MiB/sync-on", "reqps").is_none());
    }

    #[test]
    fn rows_without_rounds_keep_the_upstream_verdict() {
        let config = GateConfig::default();
        let mut report = upstream(vec![cell("put-4KiB/sync-on", &[&[1000.0], &[1001.0]], &[&[990.0], &[992.0]])], &config);
        report.rows.push(GateRow {
            workload: "put-4KiB/sync-on".into(),
            metric: "error-rate".into(),
            delta: "33.33pp".into(),
            new: Some(33.3),
            baseline: Some(0.0),
            regress: Some(33.3),
            verdict: RowVerdict::Fail,
            missing_reason: None,
        });
        let n = noise_gate(&report, &config, None);
        assert_eq!(n.rows[1].verdict, NoiseVerdict::Fail, "a failed round is not noise");
        assert_eq!(n.verdict, Verdict::WarpFail);
        assert!(n.rows[0].interval_pct.is_some() && n.rows[1].interval_pct.is_none());
    }

    #[test]
    fn adaptive_looks_spend_the_error_rate_a_fifth_first_then_evenly() {
        // 3 rounds a phase, 3 planned an arm, a cap of 18: five adaptive looks at most.
        let planned = cell("get-4MiB/sync-off", &[&[500.0, 502.0, 499.0]], &[&[500.0, 501.0, 500.0]]);
        let look = Look::of(std::slice::from_ref(&planned), 3, 3, 18);
        assert_eq!(look, Look { index: 0, max: 5 });
        assert_eq!(look.share(), PLANNED_LOOK_SHARE);
        let twice =
            cell("get-4MiB/sync-off", &[&[500.0, 502.0, 499.0], &[501.0; 3], &[499.0; 3]], &[&[500.0; 3], &[502.0; 3], &[498.0; 3]]);
        let look = Look::of(&[planned, twice], 3, 3, 18);
        assert_eq!(look, Look { index: 2, max: 5 }, "the cell with the most added phases sets the look");
        assert!((look.share() - 0.8 / 5.0).abs() < 1e-12);
        let total: f64 = (0..=5).map(|i| Look { index: i, max: 5 }.share()).sum();
        assert!((total - 1.0).abs() < 1e-12, "the looks spend exactly the error rate: {total}");
        assert_eq!(Look::ONLY.share(), 1.0);
    }

    #[test]
    fn throughput_and_mean_latency_are_read_at_their_cells_obj_s_level() {
        let config = GateConfig::default();
        let cells = vec![
            cell("get-4MiB/sync-off", &[&[500.0, 503.0, 498.0], &[501.0, 500.0, 502.0]], &[&[250.0, 251.0, 249.0], &[252.0, 250.0, 251.0]]),
            cell("put-4MiB/sync-off", &[&[300.0, 302.0, 299.0], &[301.0, 300.0, 299.0]], &[&[301.0, 299.0, 300.0], &[300.0, 301.0, 299.0]]),
        ];
        let mut report = upstream(cells, &config);
        // Upstream's throughput and mean-latency rows of each cell, beside its obj/s row.
        let extra: Vec<GateRow> =
            report.rows.iter().flat_map(|r| ["throughput", "latency"].map(|m| GateRow { metric: m.into(), ..r.clone() })).collect();
        report.rows.extend(extra);
        let n = noise_gate(&report, &config, None);
        let level = |w: &str, m: &str| n.rows.iter().find(|r| r.workload == w && r.metric == m).and_then(|r| r.level).unwrap();
        for w in ["get-4MiB/sync-off", "put-4MiB/sync-off"] {
            assert_eq!(level(w, "throughput"), level(w, "reqps"), "{w}");
            assert_eq!(level(w, "latency"), level(w, "reqps"), "{w}");
        }
        // The obj/s family is the two cells: the drop at its first Holm step, the steady cell at the whole share.
        assert_eq!(level("get-4MiB/sync-off", "reqps"), ALPHA * PRIMARY_SHARE / 2.0);
        assert_eq!(level("put-4MiB/sync-off", "reqps"), ALPHA * PRIMARY_SHARE);
        assert_eq!(
            n.rows.iter().find(|r| r.workload == "get-4MiB/sync-off" && r.metric == "throughput").unwrap().verdict,
            NoiseVerdict::Fail
        );
    }
}
