//! The family of an experiment's decisions and what each metric is decided to be.
//!
//! * [`holm`]: Holm's step-down over one family's p-values. Each test gets the level it was decided at:
//!   a rejected test the level of its step, the rest the level of the step that stopped. The interval
//!   shown for a metric is at that level, so "detected" and "the interval excludes zero" always agree.
//! * [`decide`]: detected (p at or below its level) → higher/lower, flagged negligible when the whole
//!   interval lies inside ±margin; undetected and the equivalence interval inside ±margin → flat;
//!   otherwise unclear, with the minimum detectable effect and about how many more pairs would decide it.

use super::estimate::Estimate;
use super::method::{ALPHA_EQUIVALENCE, MDE_POWER};
use crate::stats::{pct, pct_bounded, t_quantile, t_quantile_approx, t_two_sided_p};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum MetricOutcome {
    Lower,
    #[default]
    Flat,
    Higher,
    /// Undecided: not detected, and the interval is too wide to say it lies inside the margin.
    Unclear,
    /// Not detected and not inside the margin, but its one-sided upper bound lies below X: "no regression
    /// of X % or more" (method 3's third answer; X in the metric's test).
    NoRegression,
}

/// The level each test of a family is decided at (same order as `p_values`).
pub fn holm(p_values: &[f64], alpha: f64) -> Vec<f64> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut level = vec![0.0; m];
    let mut stopped: Option<f64> = None;
    for (step, &i) in order.iter().enumerate() {
        let at = alpha / (m - step) as f64;
        match stopped {
            Some(l) => level[i] = l,
            None if p_values[i] <= at => level[i] = at,
            None => {
                stopped = Some(at);
                level[i] = at;
            }
        }
    }
    level
}

/// The test of one metric, as reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricTest {
    /// "paired t on log ratios" or "Welch t on logs" (or "pooled t on logs" when a prior spread is used).
    pub analysis: String,
    /// Where the spread came from ("run", "run + profile", "default" …).
    pub spread: String,
    pub estimate_pct: f64,
    pub p_value: f64,
    /// The level this test was decided at (its share of the family's error rate).
    pub alpha: f64,
    pub df: f64,
    /// The interval at level 1 − alpha.
    pub interval_pct: [f64; 2],
    /// The 1 − 2 × alpha_equivalence interval an equivalence claim is read from: "flat" when undetected,
    /// "negligible" when detected (absent in reports of method 2 for detected metrics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalence_interval_pct: Option<[f64; 2]>,
    /// The margin this metric was held to (the suite's, or the floor's when the stage is small).
    pub margin_pct: f64,
    /// Why `margin_pct` is wider than the suite's margin, when it is: "the 0.05 CPU-s floor on a 0.85 CPU-s
    /// stage" (method 3; absent when the suite's margin applied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin_why: Option<String>,
    /// A bisection's probe: the bad end's change from the good end (percent); the probe was decided by
    /// which end it resembles (`sequential::decide_which_end`) — flat meaning "like the good end".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bad_end_pct: Option<f64>,
    /// X, the third answer's threshold (percent), when the experiment has one: the metric is "no regression
    /// of X % or more" when undetected, not within the margin, and the top of its equivalence interval (the
    /// one-sided 1 − alpha_equivalence bound) lies below X (method 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_regression_pct: Option<f64>,
    pub detected: bool,
    pub negligible: bool,
    /// The smallest change this run would detect with `mde_power` at its level (undecided metrics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mde_pct: Option<f64>,
    /// About how many more pairs (one more trial per arm each) would decide it against the margin, if the
    /// estimate held; absent when decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_pairs: Option<u64>,
    pub n: [usize; 2],
    /// The pairs' order, when every pair's is known (method 3): how many ran each arm first, and, when the
    /// estimate is adjusted for it, what a pair's first trial cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<OrderTest>,
}

/// The order covariate of one metric, as reported ([`super::estimate::PairOrder`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderTest {
    pub control_first: usize,
    pub treatment_first: usize,
    /// Whether the estimate is adjusted for the order (two pairs or more of each order).
    pub adjusted: bool,
    /// The extra a pair's first trial cost, percent, and its 98 % interval (context, not a claim: no
    /// decision rests on it); adjusted estimates only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_interval_pct: Option<[f64; 2]>,
}

impl OrderTest {
    /// From an estimate's order (`None` when the orders are unknown).
    pub fn of(e: &Estimate) -> Option<OrderTest> {
        let o = e.order.as_ref()?;
        let first = o.first_log.zip(o.first_se).filter(|_| o.adjusted && e.df >= 1.0);
        let q = t_quantile(1.0 - ALPHA_EQUIVALENCE, e.df.max(1.0));
        Some(OrderTest {
            control_first: o.control_first,
            treatment_first: o.treatment_first,
            adjusted: o.adjusted,
            first_pct: first.map(|(f, _)| pct_bounded(f)),
            first_interval_pct: first.map(|(f, se)| to_pct(f - q * se, f + q * se)),
        })
    }

    /// Both orders occurred.
    pub fn mixed(&self) -> bool {
        self.control_first > 0 && self.treatment_first > 0
    }
}

/// More pairs than this are reported as "more than".
pub const MAX_MORE_PAIRS: u64 = 100_000;

fn to_pct(lo: f64, hi: f64) -> [f64; 2] {
    [pct_bounded(lo), pct_bounded(hi)]
}

/// About how many pairs in all (more than `now`) make the interval's half-width, t(p, df + added pairs) ×
/// pair_sd / √pairs, smaller than `target`, if the spread stays as measured; `None` beyond
/// [`MAX_MORE_PAIRS`]. From the normal-theory count (a lower bound: t ≥ z), a few damped fixed-point steps
/// n ← (t(p, df + n − now) × pair_sd / target)² settle it to within a pair (t changes slowly with df);
/// the quantiles are the planning approximation, so this costs no more than a few multiplications.
fn pairs_for(p: f64, e: &Estimate, now: u64, target: f64) -> Option<u64> {
    if !(target > 0.0) || !(e.pair_sd > 0.0) {
        return (target > 0.0).then_some(now + 1);
    }
    let c = e.pair_sd / target;
    let now_f = now as f64;
    let next = |n: f64| (t_quantile_approx(p, e.df + (n - now_f).max(0.0)) * c).powi(2);
    let mut n = (t_quantile_approx(p, f64::INFINITY) * c).powi(2).max(now_f + 1.0);
    for _ in 0..4 {
        if n > now_f + MAX_MORE_PAIRS as f64 {
            return None;
        }
        n = (n + next(n)) / 2.0;
    }
    let n = n.max(next(n)).ceil().max(now_f + 1.0);
    (n <= now_f + MAX_MORE_PAIRS as f64).then_some(n as u64)
}

/// The two-sided p-value of "no change" (a zero standard error with a nonzero change is p = 0).
pub fn p_value(e: &Estimate) -> f64 {
    let t = if e.se > 0.0 {
        e.log_ratio / e.se
    } else if e.log_ratio == 0.0 {
        0.0
    } else {
        f64::INFINITY.copysign(e.log_ratio)
    };
    t_two_sided_p(t, e.df)
}

/// Decides one metric from its estimate, its p-value ([`p_value`]), the level it was tested at and its
/// margin (percent).
pub fn decide(e: &Estimate, p_value: f64, alpha: f64, margin_pct: f64) -> (MetricOutcome, MetricTest) {
    let q = t_quantile(1.0 - alpha / 2.0, e.df);
    let interval_pct = to_pct(e.log_ratio - q * e.se, e.log_ratio + q * e.se);
    let inside = |i: [f64; 2]| i[0] >= -margin_pct && i[1] <= margin_pct;
    let detected = p_value <= alpha;
    // "Negligible" (detected, inside the margin) and "flat" (undetected, inside the margin) read the same
    // 1 − 2 × alpha_equivalence interval: one claim, "within ±margin", with one error rate (method 3; method
    // 2 read a negligible change from the wider Holm-level interval).
    let q_eq = t_quantile(1.0 - ALPHA_EQUIVALENCE, e.df);
    let equivalence = to_pct(e.log_ratio - q_eq * e.se, e.log_ratio + q_eq * e.se);
    let negligible = detected && inside(equivalence);
    let equivalence_interval_pct = Some(equivalence);
    let outcome = match (detected, inside(equivalence)) {
        (true, _) if e.log_ratio > 0.0 => MetricOutcome::Higher,
        (true, _) => MetricOutcome::Lower,
        (false, true) => MetricOutcome::Flat,
        (false, false) => MetricOutcome::Unclear,
    };
    let (mut mde_pct, mut more_pairs) = (None, None);
    if outcome == MetricOutcome::Unclear {
        let power_q = t_quantile_approx(MDE_POWER, e.df);
        mde_pct = Some(pct_bounded((q + power_q) * e.se));
        // Decided when, at the same estimate and spread, the interval clears zero or fits inside the margin.
        let margin = (1.0 + margin_pct / 100.0).ln();
        let d = e.log_ratio.abs();
        let now = e.n[0].min(e.n[1]) as u64;
        let detect = pairs_for(1.0 - alpha / 2.0, e, now, d);
        let equivalent = pairs_for(1.0 - ALPHA_EQUIVALENCE, e, now, margin - d);
        more_pairs = Some(match (detect, equivalent) {
            (Some(a), Some(b)) => a.min(b) - now,
            (Some(a), None) | (None, Some(a)) => a - now,
            (None, None) => MAX_MORE_PAIRS,
        });
    }
    let analysis = if e.paired {
        "paired t on log ratios"
    } else if e.spread == "run" {
        "Welch t on logs"
    } else {
        "pooled t on logs"
    };
    let test = MetricTest {
        analysis: analysis.into(),
        spread: e.spread.clone(),
        estimate_pct: pct(e.log_ratio),
        p_value,
        alpha,
        df: e.df,
        interval_pct,
        equivalence_interval_pct,
        margin_pct,
        margin_why: None,
        bad_end_pct: None,
        no_regression_pct: None,
        detected,
        negligible,
        mde_pct,
        more_pairs,
        n: e.n,
        order: OrderTest::of(e),
    };
    (outcome, test)
}

/// The third answer (method 3): an undecided metric whose one-sided upper bound at 1 − alpha_equivalence
/// (the top of its equivalence interval) lies below `x` percent is "no regression of X % or more". Every
/// test of an experiment with an X carries it, so each claim prints it.
pub fn bound_no_regression((outcome, mut test): (MetricOutcome, MetricTest), x: Option<f64>) -> (MetricOutcome, MetricTest) {
    let Some(x) = x else { return (outcome, test) };
    test.no_regression_pct = Some(x);
    let top = test.equivalence_interval_pct.unwrap_or(test.interval_pct)[1];
    if outcome == MetricOutcome::Unclear && top < x {
        test.mde_pct = None;
        test.more_pairs = None;
        return (MetricOutcome::NoRegression, test);
    }
    (outcome, test)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holm_steps_down_and_stops() {
        // m = 4, alpha 0.04: steps at 0.01, 0.0133, 0.02, 0.04.
        let levels = holm(&[0.03, 0.001, 0.012, 0.5], 0.04);
        assert_eq!(levels[1], 0.01, "smallest p at alpha/4");
        assert!((levels[2] - 0.04 / 3.0).abs() < 1e-15, "second at alpha/3: 0.012 ≤ 0.0133 is rejected");
        assert_eq!(levels[0], 0.02, "0.03 > 0.02: the procedure stops here");
        assert_eq!(levels[3], 0.02, "everything after the stop is decided at the stopping level");
        assert!(holm(&[], 0.05).is_empty());
    }

    fn decide(e: &Estimate, alpha: f64, margin_pct: f64) -> (MetricOutcome, MetricTest) {
        super::decide(e, p_value(e), alpha, margin_pct)
    }

    fn est(log_ratio: f64, se: f64, df: f64, n: usize) -> Estimate {
        Estimate {
            log_ratio,
            se,
            df,
            paired: false,
            pair_sd: se * (n as f64 / 2.0).sqrt() * 2f64.sqrt(),
            n: [n, n],
            spread: "run".into(),
            order: None,
        }
    }

    #[test]
    fn detected_negligible_flat_and_unclear() {
        // +3 % with a tight SE: detected, beyond a 2 % margin.
        let (o, t) = decide(&est(1.03f64.ln(), 0.003, 50.0, 30), 0.001, 2.0);
        assert_eq!((o, t.detected, t.negligible), (MetricOutcome::Higher, true, false));
        assert!(t.interval_pct[0] > 0.0 && t.mde_pct.is_none() && t.more_pairs.is_none());
        // +0.5 % with a very tight SE: detected but negligible.
        let (o, t) = decide(&est(1.005f64.ln(), 0.0005, 50.0, 30), 0.001, 2.0);
        assert_eq!((o, t.negligible), (MetricOutcome::Higher, true));
        // Nothing, measured tightly: flat.
        let (o, t) = decide(&est(0.0, 0.004, 50.0, 30), 0.001, 2.0);
        assert_eq!((o, t.detected), (MetricOutcome::Flat, false));
        // Nothing, measured loosely: unclear, with its MDE and the pairs that would decide it.
        let (o, t) = decide(&est(0.002, 0.02, 4.0, 3), 0.001, 2.0);
        assert_eq!(o, MetricOutcome::Unclear);
        let mde = t.mde_pct.unwrap();
        assert!(mde > 10.0 && mde < 40.0, "{t:?}");
        let more = t.more_pairs.unwrap();
        assert!(more > 10 && more < 1000, "{t:?}");
        // More spread, more pairs.
        let (_, wider) = decide(&est(0.002, 0.04, 4.0, 3), 0.001, 2.0);
        assert!(wider.more_pairs.unwrap() > more);
    }

    #[test]
    fn negligible_reads_the_same_interval_as_flat() {
        // +1.2 % with se 0.3 %: detected at a Holm level of 0.0016, whose interval (about +0.25 … +2.15 %)
        // reaches past ±2 %; its 98 % interval (about +0.5 … +1.9 %) lies inside. Method 2 read the first
        // and called it a regression; method 3 reads the second, as "flat" does: negligible.
        let (o, t) = decide(&est(1.012f64.ln(), 0.003, 50.0, 30), 0.0016, 2.0);
        assert!(t.detected && t.interval_pct[1] > 2.0, "{t:?}");
        let eq = t.equivalence_interval_pct.unwrap();
        assert!(eq[0] > 0.0 && eq[1] < 2.0, "{t:?}");
        assert_eq!((o, t.negligible), (MetricOutcome::Higher, true));
    }
}
