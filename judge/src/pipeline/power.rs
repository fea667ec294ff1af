//! "How many trials?" before anything runs: the smallest CPU change a planned experiment can detect, and
//! the trials per arm a chosen change needs — from the noise profile of the suite and fingerprint (or the
//! default spread), at the experiment's error rate.
//!
//! It asks the judge itself: for `n` trials an arm it builds the rows a run with exactly the expected
//! spread would give (log values with that sample standard deviation, no change), estimates them through
//! [`super::estimate::estimate`] with the same priors a verdict would use, and reads the minimum detectable
//! effect the way [`super::family::decide`] reports it for an undecided metric: (t₁₋α/₂ + t_power) × SE at
//! the test's degrees of freedom. The level is the strictest one Holm uses, α_CPU / m for a family of m
//! tests (stages above the floor × treatment arms): a changed stage is tested there first. So the
//! preview's "detects ±X % with n trials" is the run's own MDE if its spread turns out as expected;
//! `arbiter simulate` measures that claim (the test `the_planned_detectable_change_is_what_simulate_detects`).

use super::estimate::{estimate, Keyed, Prior};
use super::method::{MethodConfig, NoRegression, NoRegressionPlan, ALPHA_EQUIVALENCE, DEFAULT_CPU_SPREAD, MDE_POWER, NO_REGRESSION_FACTOR};
use super::noise::NoiseProfile;
use crate::stats::{t_quantile, t_quantile_approx};
use serde::{Deserialize, Serialize};

/// Trials per arm the planner looks at, at most (what a launch may ask for): beyond it the answer is
/// "more than".
pub const MAX_PLANNED_TRIALS: u32 = crate::launch_rules::MAX_PIPELINE_TRIALS;
/// The family a plan assumes when it knows no stages (no profile): a typical Zephyr pipeline's.
pub const ASSUMED_STAGES: usize = 10;

/// The spread one planned stage is expected to have.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Per-trial log standard deviation (≈ the CV).
    pub sd: f64,
    /// The profile's prior for the stage, when there is one.
    pub prior: Option<Prior>,
}

/// What a launch preview says about its power.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Detectable {
    pub trials_per_arm: u32,
    /// The smallest CPU change (percent, either way) detected with `power` in a typical stage; `None` when
    /// nothing below +10 000 % can be (one pair and no noise profile measure no spread; two, one degree of
    /// freedom: method 3 borrows none).
    #[serde(default)]
    pub mde_pct: Option<f64>,
    /// The same for the noisiest stage, with its name (profiles only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noisiest: Option<(String, f64)>,
    /// The typical stage's spread (percent) and where it came from.
    pub spread_pct: f64,
    pub spread_source: String,
    /// The experiment's error rate, the level the first test is held to, and the family size.
    pub alpha: f64,
    pub alpha_test: f64,
    pub family: usize,
    /// The family is assumed ([`ASSUMED_STAGES`] a treatment arm): no profile lists the stages.
    pub family_assumed: bool,
    pub power: f64,
    pub paired: bool,
    /// The change the trial count below is for (the CPU margin unless asked), and the trials per arm it
    /// needs in the typical stage; `None`: more than [`MAX_PLANNED_TRIALS`].
    pub target_pct: f64,
    pub trials_for_target: Option<u32>,
    /// The third answer's X this plan fixes ("no regression of X % or more"), and where it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_regression: Option<NoRegressionPlan>,
}

/// `n` values with log mean 0 and a log sample standard deviation of exactly `sd` (evenly spaced).
fn exact_logs(n: usize, sd: f64) -> Vec<f64> {
    if n < 2 {
        return vec![0.0; n];
    }
    let raw: Vec<f64> = (0..n).map(|i| i as f64 - (n - 1) as f64 / 2.0).collect();
    let s = crate::stats::sample_sd(&raw);
    raw.iter().map(|x| x / s * sd).collect()
}

/// The estimate a run of `n` trials an arm with exactly the expected spread and no change would give.
fn expected_estimate(spread: Spread, n: u32, paired: bool) -> super::estimate::Estimate {
    let n = n.max(1) as usize;
    let (control, treatment): (Vec<Keyed>, Vec<Keyed>) = if paired {
        // Pairs whose log differences have the sd of two independent trials (no credit for pairing).
        let d = exact_logs(n, spread.sd * std::f64::consts::SQRT_2);
        ((0..n).map(|i| (Some(i as u32), 1.0)).collect(), d.iter().enumerate().map(|(i, x)| (Some(i as u32), x.exp())).collect())
    } else {
        let l = exact_logs(n, spread.sd);
        let arm: Vec<Keyed> = l.iter().map(|x| (None, x.exp())).collect();
        (arm.clone(), arm)
    };
    estimate(&control, &treatment, paired, None, spread.prior, Prior::default_spread(DEFAULT_CPU_SPREAD))
}

/// The minimum detectable CPU change (percent) of one stage with `n` trials an arm, at level `alpha_test`;
/// infinite when the trials measure no spread ([`super::estimate::Estimate::testable`]).
pub fn mde_pct(spread: Spread, n: u32, alpha_test: f64, paired: bool) -> f64 {
    let e = expected_estimate(spread, n, paired);
    if !e.testable() {
        return f64::INFINITY;
    }
    let q = t_quantile(1.0 - alpha_test / 2.0, e.df) + t_quantile_approx(MDE_POWER, e.df);
    match 100.0 * (q * e.se).exp_m1() {
        m if m < crate::stats::MAX_STATED_PCT => m,
        _ => f64::INFINITY,
    }
}

/// The fewest trials an arm (up to [`MAX_PLANNED_TRIALS`]) whose MDE is at most `target_pct`.
pub fn trials_for(spread: Spread, target_pct: f64, alpha_test: f64, paired: bool) -> Option<u32> {
    // The MDE falls with n: bisect.
    let fits = |n: u32| mde_pct(spread, n, alpha_test, paired) <= target_pct;
    if !fits(MAX_PLANNED_TRIALS) {
        return None;
    }
    let (mut lo, mut hi) = (0u32, MAX_PLANNED_TRIALS);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi.max(1))
}

/// The design a budget is spent by: what "resolves" means differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Design {
    /// One look at every trial: the one-sided t bound at 1 − α_equivalence.
    Fixed,
    /// A look after every pair: the one-sided reading of the mixture sequence at α_equivalence.
    Sequential,
}

/// The CPU spread a profile measured of each stage above the floor.
fn stage_spreads(profile: Option<&NoiseProfile>) -> Vec<(String, Spread)> {
    profile
        .map(|p| {
            p.stages
                .iter()
                .filter(|(_, s)| s.cpu.mean >= super::method::CPU_FLOOR_S)
                .map(|(name, s)| (name.clone(), Spread { sd: s.cpu.raw().0, prior: s.cpu.prior() }))
                .collect()
        })
        .unwrap_or_default()
}

/// The spread a plan expects of a typical stage, and its words.
fn typical_spread(profile: Option<&NoiseProfile>) -> (Spread, String) {
    let trials = profile.map_or(0, |p| p.trials);
    let mut by_sd = stage_spreads(profile);
    by_sd.sort_by(|a, b| a.1.sd.total_cmp(&b.1.sd));
    match (profile.and_then(|p| p.pooled_cpu), profile.and_then(|p| p.unseen_stage()), by_sd.get(by_sd.len() / 2)) {
        (Some(pool), Some(unseen), _) => (
            Spread { sd: pool.spread, prior: unseen.cpu.prior() },
            format!("the noise profile's common stage spread, {trials} same-code trials"),
        ),
        (_, _, Some((name, s))) => (*s, format!("the noise profile's median stage, {name}, {trials} same-code trials")),
        _ => (Spread { sd: DEFAULT_CPU_SPREAD, prior: None }, "the default spread (uncalibrated)".to_string()),
    }
}

/// What `pairs` pairs (trials an arm) resolve at `spread`: the half-width (percent) of the one-sided upper
/// bound at 1 − α_equivalence if nothing changed and the spread is as expected; infinite when they
/// measure no spread.
pub fn resolves_pct(spread: Spread, pairs: u32, paired: bool, design: Design) -> f64 {
    let paired = paired || design == Design::Sequential;
    let e = expected_estimate(spread, pairs, paired);
    if !e.testable() {
        return f64::INFINITY;
    }
    let q = match design {
        Design::Fixed => t_quantile(1.0 - ALPHA_EQUIVALENCE, e.df),
        Design::Sequential => super::sequential::radius_t(e.pairs_worth(), e.df, super::sequential::equivalence_level()),
    };
    match 100.0 * (q * e.se).exp_m1() {
        m if m.is_finite() && m < crate::stats::MAX_STATED_PCT => m,
        _ => f64::INFINITY,
    }
}

/// X, the third answer's threshold, fixed before the first look: the suite's or launch's setting when
/// given; else [`NO_REGRESSION_FACTOR`] × what the budget (`pairs` pairs, or trials an arm) resolves at the
/// profile's typical spread (or the default one), never below the CPU margin and never above the cap;
/// none when the budget does not resolve even the cap.
pub fn no_regression(pairs: usize, method: &MethodConfig, profile: Option<&NoiseProfile>, design: Design) -> NoRegressionPlan {
    let max_pct = method.max_no_regression_pct;
    match method.no_regression {
        NoRegression::Off => NoRegressionPlan { pct: None, resolves_pct: None, max_pct, from: "off".into() },
        NoRegression::At(x) => NoRegressionPlan { pct: Some(x), resolves_pct: None, max_pct, from: "set before the run".into() },
        NoRegression::Plan => {
            let (spread, source) = typical_spread(profile);
            let pairs = pairs.min(u32::MAX as usize) as u32;
            let res = resolves_pct(spread, pairs, method.paired, design);
            let budget = match (method.paired || design == Design::Sequential, pairs) {
                (true, 1) => "1 pair".to_string(),
                (true, n) => format!("{n} pairs"),
                (false, 1) => "1 trial an arm".to_string(),
                (false, n) => format!("{n} trials an arm"),
            };
            if !res.is_finite() {
                return NoRegressionPlan {
                    pct: None,
                    resolves_pct: None,
                    max_pct,
                    from: format!("none: {budget} resolve nothing at {source} (too few degrees of freedom)"),
                };
            }
            let x = ((NO_REGRESSION_FACTOR * res).max(method.cpu_margin_pct) * 10.0).ceil() / 10.0;
            let sd = 100.0 * spread.sd;
            let words = format!("{NO_REGRESSION_FACTOR} × the {res:.1} % that {budget} resolve at a {sd:.1} % spread, {source}");
            if res >= max_pct {
                NoRegressionPlan {
                    pct: None,
                    resolves_pct: Some(res),
                    max_pct,
                    from: format!(
                        "none: {budget} resolve only {res:.1} % at a {sd:.1} % spread, {source}, not below the cap of {max_pct} %"
                    ),
                }
            } else if x > max_pct {
                // The budget resolves less than the cap but twice that is above it: the cap is still a
                // claim a same-code run can reach, less often (README, "Three answers").
                NoRegressionPlan {
                    pct: Some(max_pct),
                    resolves_pct: Some(res),
                    max_pct,
                    from: format!("the cap of {max_pct} % ({words}, is {x:.1} %)"),
                }
            } else {
                NoRegressionPlan { pct: Some(x), resolves_pct: Some(res), max_pct, from: words }
            }
        }
    }
}

/// The plan of a launch: `n` trials an arm, `arms` treatment arms, the suite's method, its noise profile
/// (if calibrated) and the change to size the trial count for (`None`: the CPU margin).
pub fn detectable(n: u32, arms: usize, method: &MethodConfig, profile: Option<&NoiseProfile>, target_pct: Option<f64>) -> Detectable {
    let stage_spreads = stage_spreads(profile);
    let (typical, source) = typical_spread(profile);
    let stages = if stage_spreads.is_empty() { ASSUMED_STAGES } else { stage_spreads.len() };
    let family = stages * arms.max(1);
    let alpha_test = method.alpha_cpu() / family as f64;
    let target = target_pct.unwrap_or(method.cpu_margin_pct);
    let noisiest = stage_spreads
        .iter()
        .max_by(|a, b| a.1.sd.total_cmp(&b.1.sd))
        .filter(|_| stage_spreads.len() > 1)
        .map(|(name, s)| (name.clone(), mde_pct(*s, n, alpha_test, method.paired)))
        .filter(|(_, m)| m.is_finite());
    Detectable {
        trials_per_arm: n,
        mde_pct: Some(mde_pct(typical, n, alpha_test, method.paired)).filter(|m| m.is_finite()),
        noisiest,
        spread_pct: 100.0 * typical.sd,
        spread_source: source,
        alpha: method.alpha,
        alpha_test,
        family,
        family_assumed: stage_spreads.is_empty(),
        power: MDE_POWER,
        paired: method.paired,
        target_pct: target,
        trials_for_target: trials_for(typical, target, alpha_test, method.paired),
        no_regression: Some(no_regression(n as usize, method, profile, Design::Fixed)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mde_falls_with_trials_and_matches_the_normal_formula_at_large_n() {
        let s = Spread { sd: 0.02, prior: None };
        let (a, b, c) = (mde_pct(s, 3, 0.008, true), mde_pct(s, 10, 0.008, true), mde_pct(s, 100, 0.008, true));
        assert!(a > b && b > c, "{a} {b} {c}");
        // n = 100 pairs: (z₀.₉₉₆ + z₀.₈) × 0.02√2 / 10 ≈ (2.652 + 0.842) × 0.00283 ≈ 0.99 %, t a little wider.
        assert!((0.98..1.05).contains(&c), "{c}");
        let n = trials_for(s, b, 0.008, true).unwrap();
        assert_eq!(n, 10, "the trials a change needs invert the MDE");
        assert_eq!(trials_for(s, 0.01, 0.008, true), None, "a change far below the noise: more than the cap");
    }

    #[test]
    fn a_plan_without_a_profile_assumes_the_default_spread_and_a_typical_family() {
        let d = detectable(5, 1, &MethodConfig::default(), None, None);
        assert_eq!((d.family, d.spread_pct, d.target_pct), (ASSUMED_STAGES, 5.0, 2.0));
        assert!(d.mde_pct.is_some_and(|m| m > 10.0) && d.trials_for_target.is_none_or(|n| n > 50), "{d:?}");
        // One pair measures no spread: nothing is detectable, and the plan says so (no number).
        let one = detectable(1, 1, &MethodConfig::default(), None, None);
        assert_eq!(one.mde_pct, None, "{one:?}");
        assert!(serde_json::to_value(&one).unwrap()["mde_pct"].is_null());
    }
}
