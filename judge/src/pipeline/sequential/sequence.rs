//! One metric at one look: the mixture confidence sequence and what it decides.
//!
//! **The test.** Each metric of each stage is the paired log-ratio d of [`crate::pipeline::estimate`] (the same
//! estimate, the same priors). Its evidence against "the true mean log-ratio is μ₀" is the Bayes factor of
//! the one-sample t-test with a right-Haar prior on the spread and a normal prior on the standardised
//! effect, δ = (μ − μ₀)/σ ~ N(0, g) (Rouder et al. 2009 for one g; Lai 1976 for its sequential use):
//!
//! `BF_g = (1 + n g)^(−1/2) · [(1 + t²/(ν(1 + n g))) / (1 + t²/ν)]^(−(ν + 1)/2)`
//!
//! with t the estimate's t-statistic against μ₀, n pairs and ν the estimate's degrees of freedom (the
//! run's n − 1 plus what a noise profile or the default spread adds: their sums of squares enter as data
//! with the same σ, which is why ν + 1 and not n is the exponent). Averaged over a few scales g
//! ([`MIXTURE`]), it is still a ratio of the invariant data's densities, hence a nonnegative martingale
//! under μ₀ with mean 1 (Pérez-Ortiz, Lardy, de Heide & Grünwald 2024, "E-statistics, group invariance and
//! anytime-valid testing"). Ville's inequality then bounds the chance that it *ever* reaches 1/α by α:
//! the set of μ₀ it has not rejected is a **confidence sequence**, an interval that covers the truth at
//! every look at once. Nothing about when to stop, or how often to look, can raise the error rate.
//!
//! The decisions read from it are [`decide`]'s; [`super`] applies them look by look.

use super::record::Decision;
use crate::pipeline::estimate::Estimate;
use crate::pipeline::family::{MetricTest, MAX_MORE_PAIRS};
use crate::pipeline::method::ALPHA_EQUIVALENCE;
use crate::pipeline::report::MetricOutcome;
use crate::stats::pct;

/// The mixture over the standardised effect's prior variance g, as (g, weight). A pair's standardised
/// effect is the change over the spread of a pair's log difference: +3 % at a CV of 2 % is about 1
/// (g ≈ 1, decided near 10–15 pairs), +20 % about 7 (g ≈ 16–64, decided at 2 pairs with a profile),
/// +3 % at a CV of 5 % about 0.4 (g ≈ 1/4, tens of pairs). Most weight sits on g = 1, the change the
/// default margin is about; `arbiter simulate` measured this mixture against single scales (README).
pub const MIXTURE: [(f64, f64); 4] = [(0.25, 0.15), (1.0, 0.55), (8.0, 0.15), (64.0, 0.15)];

/// The fewest pairs (or blocks) before anything is decided.
pub const MIN_PAIRS: usize = 2;

/// ln BF of the mixture for t² = `x`, `n` pairs and `nu` degrees of freedom.
fn ln_bf(x: f64, n: f64, nu: f64) -> f64 {
    let half_n = (nu + 1.0) / 2.0;
    let terms: Vec<f64> = MIXTURE
        .iter()
        .map(|&(g, w)| {
            let r = 1.0 + n * g;
            let ratio = if x.is_infinite() { r.ln() } else { (1.0 + x / nu).ln() - (1.0 + x / (nu * r)).ln() };
            w.ln() - 0.5 * r.ln() + half_n * ratio
        })
        .collect();
    let top = terms.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    top + terms.iter().map(|t| (t - top).exp()).sum::<f64>().ln()
}

/// The evidence against the mean log-ratio being `mu0`: the mixture's Bayes factor.
pub fn bayes_factor(e: &Estimate, mu0: f64) -> f64 {
    ln_bf(t_squared(e, mu0), e.pairs_worth(), e.df.max(1e-9)).exp()
}

fn t_squared(e: &Estimate, mu0: f64) -> f64 {
    let d = e.log_ratio - mu0;
    if e.se > 0.0 {
        (d / e.se).powi(2)
    } else if d == 0.0 {
        0.0
    } else {
        f64::INFINITY
    }
}

/// Whether the confidence sequence at `alpha` excludes `mu0` at this look.
pub fn rejects(e: &Estimate, mu0: f64, alpha: f64) -> bool {
    bayes_factor(e, mu0) >= 1.0 / alpha
}

/// The half-width of the confidence sequence at `alpha`, in t units (× se for the log scale): the t at
/// which the mixture reaches 1/α; infinite while it cannot (too few degrees of freedom).
pub fn radius_t(n: f64, nu: f64, alpha: f64) -> f64 {
    let (n, nu, target) = (n.max(1.0), nu.max(1e-9), (1.0 / alpha).ln());
    if ln_bf(f64::INFINITY, n, nu) < target {
        return f64::INFINITY;
    }
    let mut hi = 1.0;
    while ln_bf(hi, n, nu) < target {
        hi *= 4.0;
        if hi > 1e15 {
            return f64::INFINITY;
        }
    }
    let mut lo = 0.0;
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if ln_bf(mid, n, nu) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi.sqrt()
}

/// The confidence sequence at `alpha` on the log scale at this look.
pub fn interval(e: &Estimate, alpha: f64) -> [f64; 2] {
    let r = radius_t(e.pairs_worth(), e.df, alpha) * e.se;
    [e.log_ratio - r, e.log_ratio + r]
}

/// About how many more pairs would decide an undecided metric, if its estimate and spread held: the first
/// n whose sequence clears zero, fits inside the margin or (with a third answer, `x` on the log scale)
/// falls below X; `None` beyond `cap` more.
pub fn more_pairs(e: &Estimate, alpha: f64, margin: f64, x: Option<f64>, cap: u64) -> Option<u64> {
    let now = e.n[0].min(e.n[1]).max(1) as u64;
    let d = e.log_ratio.abs();
    let decided = |extra: u64| {
        let n = now + extra;
        let se = e.pair_sd / (n as f64).sqrt();
        let nu = e.df + extra as f64;
        let det = radius_t(n as f64, nu, alpha) * se < d;
        let r_eq = radius_t(n as f64, nu, equivalence_level()) * se;
        let eq = r_eq < margin - d;
        let bounded = x.is_some_and(|x| e.log_ratio + r_eq < x);
        det || eq || bounded
    };
    if e.pair_sd.is_nan() || e.pair_sd <= 0.0 {
        return Some(1);
    }
    let mut hi = 1u64;
    while !decided(hi) {
        if hi >= cap {
            return None;
        }
        hi = (hi * 2).min(cap);
    }
    let mut lo = hi / 2;
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if decided(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// One metric at one look: its decision and outcome, and whether it is detected and negligible (`alpha`
/// is its share of the family's error rate, `margin_pct` its margin, `x` the third answer's threshold in
/// percent). Cheap: a few Bayes factors.
///
/// The equivalence and no-regression claims read one side of the sequence each, at the level
/// [`one_sided`] gives α_equivalence: each side an exact one-sided test at α_equivalence.
pub fn decide(e: &Estimate, alpha: f64, margin_pct: f64, x: Option<f64>) -> (Decision, MetricOutcome) {
    let margin = (1.0 + margin_pct / 100.0).ln();
    let detected = rejects(e, 0.0, alpha);
    let inside = |a: f64| e.log_ratio.abs() < margin && rejects(e, margin, a) && rejects(e, -margin, a);
    let direction = if e.log_ratio > 0.0 { MetricOutcome::Higher } else { MetricOutcome::Lower };
    if detected {
        // Negligible reads the same equivalence level as flat (method 3).
        (if inside(equivalence_level()) { Decision::Equivalent } else { Decision::Different }, direction)
    } else if inside(equivalence_level()) {
        (Decision::Equivalent, MetricOutcome::Flat)
    } else if x.is_some_and(|x| bounded_below(e, x)) {
        (Decision::NoRegression, MetricOutcome::NoRegression)
    } else {
        (Decision::Continue, MetricOutcome::Unclear)
    }
}

/// Whether the sequence's upper side, one-sided at α_equivalence, lies below `x` percent.
fn bounded_below(e: &Estimate, x: f64) -> bool {
    let top = (x / 100.0).ln_1p();
    e.log_ratio < top && rejects(e, top, equivalence_level())
}

/// The level of the symmetric sequence whose one side is an exact one-sided test at `alpha` (method 3):
/// 2α / (1 + α), about 2α. The symmetric mixture is the mean of two one-sided ones, BF = (BF₊ + BF₋)/2,
/// each with a half-normal prior on one side of μ₀ and each a martingale under μ₀ (Ville: it reaches 1/α
/// with chance at most α). With the estimate above μ₀, every δ below μ₀ has a likelihood ratio under 1
/// (the noncentral t's monotone likelihood ratio, and f_δ(0)/f_0(0) = e^(−δ²n/2) < 1), so BF₋ ≤ 1 and
/// BF₊ ≥ 2·BF − 1: the symmetric factor reaching (1/α + 1)/2 puts BF₊ at 1/α or above. Method 2 read the
/// symmetric sequence at α itself on each side, a one-sided test at about α/2.
pub fn one_sided(alpha: f64) -> f64 {
    2.0 * alpha / (1.0 + alpha)
}

/// The level the equivalence and no-regression claims read the sequence at: one-sided α_equivalence.
pub fn equivalence_level() -> f64 {
    one_sided(ALPHA_EQUIVALENCE)
}

/// A bisection's probe (method 3): which end of the range does it resemble? `ends` is the bad end's change
/// from the good end (log scale). *Moved* when the sequence excludes the good end's level (0): detected,
/// higher or lower as its sign; *unmoved* when it excludes the bad end's level on the good end's side:
/// flat, "like the good end"; otherwise continue. Both claims read the same sequence at `alpha`, so each is
/// wrong with chance at most `alpha` however many looks it takes. A probe between the ends (a range whose
/// change came in several steps) can exclude both: it reads moved, and the bisection's confirmation step
/// says whether the culprit's own step is the whole change.
pub fn decide_which_end(e: &Estimate, alpha: f64, ends: f64) -> (Decision, MetricOutcome) {
    if rejects(e, 0.0, alpha) {
        let direction = if e.log_ratio > 0.0 { MetricOutcome::Higher } else { MetricOutcome::Lower };
        return (Decision::Different, direction);
    }
    let good_side = if ends > 0.0 { e.log_ratio < ends } else { e.log_ratio > ends };
    if ends != 0.0 && good_side && rejects(e, ends, alpha) {
        (Decision::Equivalent, MetricOutcome::Flat)
    } else {
        (Decision::Continue, MetricOutcome::Unclear)
    }
}

/// [`test`] for a bisection's probe ([`decide_which_end`]): the same sequence, decided by which end it
/// resembles, the bad end's level carried in `bad_end_pct`.
pub fn test_which_end(e: &Estimate, alpha: f64, margin_pct: f64, ends: f64) -> MetricTest {
    let (decision, outcome) = decide_which_end(e, alpha, ends);
    let mut t = test(e, alpha, margin_pct, None);
    t.detected = matches!(outcome, MetricOutcome::Higher | MetricOutcome::Lower);
    t.negligible = false;
    t.bad_end_pct = Some(pct(ends));
    t.more_pairs = (decision == Decision::Continue).then(|| more_pairs_which_end(e, alpha, ends, MAX_MORE_PAIRS).unwrap_or(MAX_MORE_PAIRS));
    t
}

/// [`more_pairs`] for [`decide_which_end`]: the first n whose sequence clears the nearer end's level.
fn more_pairs_which_end(e: &Estimate, alpha: f64, ends: f64, cap: u64) -> Option<u64> {
    let now = e.n[0].min(e.n[1]).max(1) as u64;
    if e.pair_sd.is_nan() || e.pair_sd <= 0.0 {
        return Some(1);
    }
    let gap = e.log_ratio.abs().max((ends - e.log_ratio).abs());
    let decided = |extra: u64| {
        let n = now + extra;
        radius_t(n as f64, e.df + extra as f64, alpha) * e.pair_sd / (n as f64).sqrt() < gap
    };
    let mut hi = 1u64;
    while !decided(hi) {
        if hi >= cap {
            return None;
        }
        hi = (hi * 2).min(cap);
    }
    let mut lo = hi / 2;
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if decided(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// The test of a metric as reported, at the look that decided it (or the last one).
pub fn test(e: &Estimate, alpha: f64, margin_pct: f64, x: Option<f64>) -> MetricTest {
    let (decision, outcome) = decide(e, alpha, margin_pct, x);
    let detected = matches!(outcome, MetricOutcome::Higher | MetricOutcome::Lower);
    let to_pct = |i: [f64; 2]| [crate::stats::pct_bounded(i[0]), crate::stats::pct_bounded(i[1])];
    let margin = (1.0 + margin_pct / 100.0).ln();
    MetricTest {
        analysis: "sequential paired t (mixture confidence sequence)".into(),
        spread: e.spread.clone(),
        estimate_pct: pct(e.log_ratio),
        // The always-valid p-value of this look: 1 / BF, at most 1.
        p_value: (1.0 / bayes_factor(e, 0.0)).min(1.0),
        alpha,
        df: e.df,
        interval_pct: to_pct(interval(e, alpha)),
        equivalence_interval_pct: Some(to_pct(interval(e, equivalence_level()))),
        margin_pct,
        margin_why: None,
        bad_end_pct: None,
        no_regression_pct: x,
        detected,
        negligible: detected && decision == Decision::Equivalent,
        mde_pct: None,
        more_pairs: (decision == Decision::Continue)
            .then(|| more_pairs(e, alpha, margin, x.map(|x| (x / 100.0).ln_1p()), MAX_MORE_PAIRS).unwrap_or(MAX_MORE_PAIRS)),
        n: e.n,
        order: crate::pipeline::family::OrderTest::of(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(log_ratio: f64, pair_sd: f64, n: usize, prior_df: f64) -> Estimate {
        Estimate {
            log_ratio,
            se: pair_sd / (n as f64).sqrt(),
            df: (n - 1) as f64 + prior_df,
            paired: true,
            pair_sd,
            n: [n, n],
            spread: "run".into(),
            order: None,
        }
    }

    #[test]
    fn the_sequence_narrows_with_pairs_and_degrees_of_freedom() {
        let wide = radius_t(3.0, 2.0, 0.001);
        let narrow = radius_t(30.0, 29.0, 0.001);
        assert!(narrow < wide, "{narrow} {wide}");
        // It is wider than a fixed-n t interval at the same level (the price of looking every time) …
        let fixed = crate::stats::t_quantile(1.0 - 0.001 / 2.0, 29.0);
        assert!(narrow > fixed, "{narrow} {fixed}");
        // … and not absurdly so.
        assert!(narrow < 2.0 * fixed, "{narrow} {fixed}");
        // With one degree of freedom nothing can be decided at a strict level.
        assert!(radius_t(2.0, 1.0, 0.0004).is_infinite());
        // A profile's degrees of freedom make two pairs enough.
        assert!(radius_t(2.0, 10.0, 0.0004).is_finite());
    }

    #[test]
    fn the_bayes_factor_is_one_at_no_evidence_and_grows_with_it() {
        let e = est(0.0, 0.03, 10, 0.0);
        assert!(bayes_factor(&e, 0.0) < 1.0, "no change: evidence for the null");
        let far = est(0.1, 0.03, 10, 0.0);
        assert!(bayes_factor(&far, 0.0) > 1e3, "t ≈ 10.5 at 9 df: {}", bayes_factor(&far, 0.0));
        // The interval is where the factor stays below 1/α.
        let i = interval(&far, 0.01);
        assert!(!rejects(&far, i[0] + 1e-6, 0.01) && rejects(&far, i[0] - 1e-4, 0.01), "{i:?}");
    }

    #[test]
    fn decisions_read_from_the_two_sequences() {
        // +10 % at a 2.8 % pair spread, 10 pairs: different.
        let e = est(0.0953, 0.028, 10, 0.0);
        let ((d, o), t) = (decide(&e, 0.0016, 2.0, None), test(&e, 0.0016, 2.0, None));
        assert_eq!((d, o, t.detected), (Decision::Different, MetricOutcome::Higher, true));
        assert!(t.interval_pct[0] > 0.0 && t.more_pairs.is_none());
        // Nothing at a tight spread, 40 pairs: equivalent within ±2 %.
        let (d, o) = decide(&est(0.001, 0.028, 40, 0.0), 0.0016, 2.0, None);
        assert_eq!((d, o), (Decision::Equivalent, MetricOutcome::Flat));
        // Nothing at 3 pairs: continue, with the pairs that would decide it.
        let e = est(0.001, 0.028, 3, 0.0);
        let ((d, o), t) = (decide(&e, 0.0016, 2.0, None), test(&e, 0.0016, 2.0, None));
        assert_eq!((d, o), (Decision::Continue, MetricOutcome::Unclear));
        let more = t.more_pairs.unwrap();
        assert!((5..100).contains(&more), "{t:?}");
        // Run that many more, at the same spread: decided.
        let (d, _) = decide(&est(0.001, 0.028, 3 + more as usize, 0.0), 0.0016, 2.0, None);
        assert_eq!(d, Decision::Equivalent);
    }
}
