//! The pipeline verdict's method: every number it is judged with, in one place, and the record of them
//! that each report carries (`method` in the JSON), so a stored verdict says how it was reached.
//!
//! The method in words (the README's "How the pipeline verdict is reached" argues each choice):
//!
//! * Each metric (CPU-seconds, summed stage elapsed) of each stage of each treatment arm is compared on
//!   the log scale: the paired log-ratio when trials were interleaved and every trial has its partner,
//!   otherwise Welch's t on the logs ([`super::estimate`]).
//! * **Detection** is a two-sided t-test at the experiment's family-wise error rate: Holm's step-down over
//!   the family, with [`ALPHA_CPU_SHARE`] of [`ALPHA`] for CPU (the primary outcome) and the rest for
//!   elapsed ([`super::family`]). A detected change is reported with its interval at the level it was
//!   tested at, whatever its size.
//! * **Relevance** is the margin: a detected change whose whole interval lies inside ±margin is
//!   *negligible* (pass, change reported); an undetected metric whose equivalence interval (1 − 2 ×
//!   [`ALPHA_EQUIVALENCE`]) lies inside ±margin is *flat*; anything else is *unclear*, with its minimum
//!   detectable effect and the pairs that would decide it.
//! * **Small n**: intervals are read at the degrees of freedom the run measured, plus a noise profile's
//!   while the run does not contradict it ([`PROFILE_CHECK_ALPHA`]); a documented default spread only
//!   widens a variance measured with fewer than [`MIN_SPREAD_DF`] df, and adds none
//!   ([`super::estimate`]). Elapsed, whose noise has stragglers, is tested only from
//!   [`MIN_ELAPSED_TRIALS`] trials an arm.

use serde::{Deserialize, Serialize};

/// The version of the judging method. 1: the fixed-threshold rules before margins and error control;
/// 2: margins, Holm's family and the default spread pooled in as 4 df; 3: no borrowed degrees of
/// freedom (a profile checked against the run, the default spread widening only), "negligible" read
/// from the same 98 % interval as "flat", each arm's total CPU in the CPU family and an arm decided
/// cheaper in total passing when nothing was detected worse, and the margin a stage was held to said with
/// its reason.
pub const METHOD_VERSION: u32 = 3;
/// The family-wise error rate of one experiment: the chance that an experiment in which nothing changed
/// claims any change (a regression, a tradeoff, a negligible or not higher/lower).
pub const ALPHA: f64 = 0.01;
/// The share of [`ALPHA`] given to CPU, the primary outcome; elapsed gets the rest.
pub const ALPHA_CPU_SHARE: f64 = 0.8;
/// Each one-sided test of an equivalence ("flat") claim: a flat metric's 98 % interval lies inside ±margin.
pub const ALPHA_EQUIVALENCE: f64 = 0.01;
/// The smallest CPU change that matters, in percent, unless the suite or `--cpu-margin` says otherwise.
pub const DEFAULT_CPU_MARGIN_PCT: f64 = 2.0;
/// The smallest summed-elapsed change that matters, in percent.
pub const DEFAULT_ELAPSED_MARGIN_PCT: f64 = 25.0;
/// A stage whose mean CPU is below this in both arms is too small to measure (CPU time is counted in clock
/// ticks): it is reported, not tested, and outside the family. It is also the smallest CPU change that
/// matters in absolute terms: a stage's margin is never below it.
pub const CPU_FLOOR_S: f64 = 0.05;
/// The same for summed elapsed seconds.
pub const ELAPSED_FLOOR_S: f64 = 0.25;
/// The default spread (the standard deviation of one trial's log value, ≈ its CV) of CPU, used when
/// neither the run nor a noise profile has enough degrees of freedom: the top of the CPU noise seen for
/// same-code Zephyr runs (1–5 %).
pub const DEFAULT_CPU_SPREAD: f64 = 0.05;
/// The default spread of summed elapsed: the top of the 10–30 % seen for identical runs.
pub const DEFAULT_ELAPSED_SPREAD: f64 = 0.30;
/// The default spread carries no degrees of freedom (method 2 gave it 4): it is a guess, and a guess
/// cannot make a 1-df run variance read like a 5-df one.
pub const DEFAULT_SPREAD_DF: f64 = 0.0;
/// Below this many measured degrees of freedom (the run's, and the profile's when used) the variance is
/// widened to the default spread's when that is larger: at 3 df Student's t at the family's levels is
/// ~13, and a few quiet trials by chance would otherwise read as a tight spread.
pub const MIN_SPREAD_DF: f64 = 4.0;
/// The level of the check that a run does not contradict its noise profile: a one-sided F test of the
/// run's variance against the profile's over all its stages' CPU (`estimate::contradicts_overall`). A
/// profile the run contradicts is not used (its df are not added). Chosen with `arbiter simulate`
/// (README, "No borrowed degrees of freedom"): at 10 % an accurate 10-trial profile decided +20 % at CV 5 %
/// in 3 pairs 39 % of the time against method 2's 47 %; at 1 %, 47 %, but a profile at half the run's
/// noise then let 1.5 % of 5-pair A/As at CV 15 % claim a change; 2 % sits between.
pub const PROFILE_CHECK_ALPHA: f64 = 0.02;
/// The same check for one stage against its own profile entry (a stage that became noisier than it was
/// calibrated). Stricter than the experiment-wide one: with many stages, a per-stage check at 10 % would
/// drop an accurate profile's stages one in ten, and calibration would lose its purpose.
pub const STAGE_CHECK_ALPHA: f64 = 0.01;
/// A noise profile from fewer same-code trials than this is marked untrusted and pooled with the default
/// spread (its degrees of freedom are used either way).
pub const TRUSTED_PROFILE_TRIALS: usize = 5;
/// Elapsed is tested only with at least this many trials in each arm: one straggler (a trial 1.5–3× slower)
/// in each of two treatment trials looks like a slowdown, and two pairs cannot tell them apart (in
/// `arbiter simulate`, elapsed false claims at two trials an arm were 3–4× their share of the error rate).
pub const MIN_ELAPSED_TRIALS: usize = 3;
/// The power at which the minimum detectable effect of an undecided metric is stated.
pub const MDE_POWER: f64 = 0.8;
/// The third answer, "no regression of X % or more" (method 3), is claimed when a metric's one-sided
/// upper bound at 1 − [`ALPHA_EQUIVALENCE`] lies below X. Unless the suite or launch sets X, it is planned
/// before the first look ([`super::power::no_regression`]): this many times what the budget resolves —
/// the half-width of that bound with every planned pair at the expected spread. With a factor of 1 a
/// same-code run would make the claim only about half the time and only at the end of its budget; at 2,
/// a same-code fixed run makes it ~99 % of the time, and a sequential one can stop on it (futility) at
/// about a quarter of its budget, since a bound narrows as 1/√n (README, "Three answers").
pub const NO_REGRESSION_FACTOR: f64 = 2.0;
/// The sequential design stops on the third answer (futility) only when more pairs could not decide the
/// metric more strongly: not equivalent if its estimate and spread held, nor detected if the change were
/// this many standard errors beyond its estimate (`sequential::futility`). Measured with `arbiter simulate
/// --design sequential` (README, "Three answers"): at 1.0, +3 % in one of 5 stages at CV 2 % is found in
/// 91.6 % uncalibrated (the rest pass on X = 9.2 %); at 1.25, 93.7 %, and same-code runs (10-trial
/// profile, CV 2 and 5 %) still stop at a median of 20 and 19 pairs; at 1.5 the medians are 21 and 20
/// (each side then read at half its level). With each side one-sided at 1 %: 93.6 % (X 8.6 %), medians 22
/// and 19.
pub const FUTILITY_HOPE_SE: f64 = 1.25;
/// Above this X the third answer is not worth giving: the verdict stays inconclusive. A suite may change
/// it (`max_no_regression_pct`).
pub const DEFAULT_MAX_NO_REGRESSION_PCT: f64 = 10.0;

/// Where X, the third answer's threshold, comes from.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum NoRegression {
    /// Planned from the budget and the expected spread ([`super::power::no_regression`]).
    #[default]
    Plan,
    /// Set by the suite, the launch or `--no-regression` (percent).
    At(f64),
    /// No third answer.
    Off,
}

/// X as a report records it: the threshold applied (none: no third answer), and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoRegressionPlan {
    /// X, percent; absent when no third answer was given (the budget resolves too little, or it is off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pct: Option<f64>,
    /// What the budget resolves at the expected spread (the planned bound's half-width, percent); absent
    /// when X was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolves_pct: Option<f64>,
    /// The cap above which there is no third answer.
    pub max_pct: f64,
    /// Where X came from, in words: "the suite's setting", "twice what 10 pairs resolve at the default
    /// spread (5.0 %)", or why there is none.
    pub from: String,
}

/// The record of the method a report was judged with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Method {
    pub version: u32,
    /// Family-wise error rate, and its split.
    pub alpha: f64,
    pub alpha_cpu: f64,
    pub alpha_elapsed: f64,
    pub alpha_equivalence: f64,
    pub cpu_margin_pct: f64,
    pub elapsed_margin_pct: f64,
    /// How many tests the CPU and elapsed families held (stages above the floors × treatment arms; in
    /// method 3 the CPU family also holds each arm's total when two or more of its stages are tested).
    pub family_cpu: usize,
    pub family_elapsed: usize,
    /// Whether pairing was asked for (each metric says whether it was paired).
    pub paired: bool,
    pub default_cpu_spread: f64,
    pub default_elapsed_spread: f64,
    pub mde_power: f64,
    /// The third answer's threshold X and where it came from (method 3; absent in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_regression: Option<NoRegressionPlan>,
}

/// What the caller may choose about the method; everything else is fixed above.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MethodConfig {
    pub alpha: f64,
    pub cpu_margin_pct: f64,
    pub elapsed_margin_pct: f64,
    /// Pair the i-th control trial with the treatment trial of the same pair key.
    pub paired: bool,
    /// The third answer's X: planned, set, or off.
    pub no_regression: NoRegression,
    /// The cap on X (percent): a planned X above it gives no third answer; a set X above it is refused.
    pub max_no_regression_pct: f64,
}

impl Default for MethodConfig {
    fn default() -> Self {
        MethodConfig {
            alpha: ALPHA,
            cpu_margin_pct: DEFAULT_CPU_MARGIN_PCT,
            elapsed_margin_pct: DEFAULT_ELAPSED_MARGIN_PCT,
            paired: false,
            no_regression: NoRegression::Plan,
            max_no_regression_pct: DEFAULT_MAX_NO_REGRESSION_PCT,
        }
    }
}

impl MethodConfig {
    /// The first bad value as (which: "alpha", "cpu_margin", "elapsed_margin", "no_regression" or
    /// "max_no_regression", what is wrong), for the
    /// caller to name in its own terms (a flag, a suite field).
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !(self.alpha > 0.0 && self.alpha < 0.5) {
            return Err(("alpha", format!("{}: must be above 0 and below 0.5", self.alpha)));
        }
        for (which, m) in [("cpu_margin", self.cpu_margin_pct), ("elapsed_margin", self.elapsed_margin_pct)] {
            if !(m > 0.0 && m < 100.0) {
                return Err((which, format!("{m}: must be a percentage above 0 and below 100")));
            }
        }
        let cap = self.max_no_regression_pct;
        if !(cap > 0.0 && cap < 100.0) {
            return Err(("max_no_regression", format!("{cap}: must be a percentage above 0 and below 100")));
        }
        if let NoRegression::At(x) = self.no_regression {
            if !(x > 0.0 && x < 100.0) {
                return Err(("no_regression", format!("{x}: must be a percentage above 0 and below 100")));
            }
            if x > cap {
                return Err(("no_regression", format!("{x}: above the cap of {cap} % (max_no_regression)")));
            }
            if x < self.cpu_margin_pct {
                return Err((
                    "no_regression",
                    format!(
                        "{x}: below the CPU margin of {} % (\"equivalent within the margin\" is the stronger answer)",
                        self.cpu_margin_pct
                    ),
                ));
            }
        }
        Ok(())
    }

    pub fn alpha_cpu(&self) -> f64 {
        self.alpha * ALPHA_CPU_SHARE
    }

    pub fn alpha_elapsed(&self) -> f64 {
        self.alpha * (1.0 - ALPHA_CPU_SHARE)
    }

    pub fn record(&self, family_cpu: usize, family_elapsed: usize) -> Method {
        Method {
            version: METHOD_VERSION,
            alpha: self.alpha,
            alpha_cpu: self.alpha_cpu(),
            alpha_elapsed: self.alpha_elapsed(),
            alpha_equivalence: ALPHA_EQUIVALENCE,
            cpu_margin_pct: self.cpu_margin_pct,
            elapsed_margin_pct: self.elapsed_margin_pct,
            family_cpu,
            family_elapsed,
            paired: self.paired,
            default_cpu_spread: DEFAULT_CPU_SPREAD,
            default_elapsed_spread: DEFAULT_ELAPSED_SPREAD,
            mde_power: MDE_POWER,
            no_regression: None,
        }
    }
}
