//! Statistics for judging. Distributions come from `statrs` (it builds for wasm32 too):
//!
//! * [`t_quantile`] / [`t_two_sided_p`]: Student's t at any level and any (fractional) degrees of freedom.
//!   The pipeline verdict's tests and intervals (`pipeline::estimate`, `pipeline::family`) are built on them.
//! * [`median`], [`mean`], [`sample_sd`], [`cv`]: the plain summaries.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
use statrs::function::gamma::ln_gamma;

/// The median; an even count takes the mean of the two middle values. `None` for no values.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len().is_multiple_of(2) { (v[mid - 1] + v[mid]) / 2.0 } else { v[mid] })
}

/// Arithmetic mean (0 for an empty slice).
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// Sample standard deviation (n − 1); 0 below two values.
pub fn sample_sd(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64).sqrt()
}

/// Coefficient of variation (sd / mean); 0 when the mean is 0.
pub fn cv(xs: &[f64]) -> f64 {
    let m = mean(xs);
    if m == 0.0 {
        0.0
    } else {
        sample_sd(xs) / m
    }
}

/// Above this many degrees of freedom Student's t is replaced by the normal distribution (their quantiles
/// at the levels used here differ by less than 0.01 %).
const NORMAL_DF: f64 = 1e5;

fn standard_normal() -> Normal {
    Normal::new(0.0, 1.0).expect("a valid normal distribution")
}

fn students_t(df: f64) -> StudentsT {
    StudentsT::new(0.0, 1.0, df.max(1e-3)).expect("a valid t distribution")
}

/// The `p` quantile of Student's t with `df` degrees of freedom (fractional allowed; ∞ or very large is
/// the standard normal), at any level: the error-rate control needs quantiles such as 1 − 0.008/40.
///
/// From 3 df up: the Cornish–Fisher expansion around the normal quantile, then Newton steps on statrs's
/// CDF until a step is below 1e-7 (Newton converges quadratically, so what is left is ~1e-14; usually two
/// steps): about a third of the time of statrs's own inverse
/// (an iterative inverse incomplete beta), which a 100-stage judgement would call ~600 times. Below 3 df,
/// where the expansion is poor, statrs's inverse itself.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if !(df < NORMAL_DF) {
        return standard_normal().inverse_cdf(p);
    }
    let dist = students_t(df);
    if df < 3.0 || !(p > 1e-12 && p < 1.0 - 1e-12) {
        return dist.inverse_cdf(p);
    }
    let n = df;
    let mut x = cornish_fisher(standard_normal().inverse_cdf(p), n);
    // The density's constant once; each step then costs one CDF and one power.
    let ln_c = ln_gamma((n + 1.0) / 2.0) - ln_gamma(n / 2.0) - 0.5 * (n * std::f64::consts::PI).ln();
    let pdf = |x: f64| (ln_c - (n + 1.0) / 2.0 * (x * x / n).ln_1p()).exp();
    for _ in 0..8 {
        // Work in the smaller tail for precision.
        let cdf_minus_p = if p > 0.5 { (1.0 - p) - dist.sf(x) } else { dist.cdf(x) - p };
        let step = cdf_minus_p / pdf(x);
        x -= step;
        if step.abs() <= 1e-7 * x.abs().max(1.0) {
            break;
        }
    }
    x
}

/// Student's t quantile from the normal one z by the Cornish–Fisher expansion (three terms).
fn cornish_fisher(z: f64, n: f64) -> f64 {
    let z2 = z * z;
    z + z * (z2 + 1.0) / (4.0 * n)
        + z * ((5.0 * z2 + 16.0) * z2 + 3.0) / (96.0 * n * n)
        + z * (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) / (384.0 * n * n * n)
}

/// An approximate `p` quantile of Student's t, for planning figures only (the minimum detectable effect,
/// the pairs that would decide): from 10 df the Cornish–Fisher expansion without [`t_quantile`]'s Newton
/// steps, within 0.5 % at the levels used (checked in the tests; at 4 df it would be 7 % off at the
/// family's most extreme levels, so below 10 df this is the exact quantile).
pub fn t_quantile_approx(p: f64, df: f64) -> f64 {
    if !(df < NORMAL_DF) {
        return standard_normal().inverse_cdf(p);
    }
    if df < 10.0 || !(p > 1e-12 && p < 1.0 - 1e-12) {
        return t_quantile(p, df);
    }
    cornish_fisher(standard_normal().inverse_cdf(p), df)
}

/// Two-sided p-value of a t statistic with `df` degrees of freedom (from the survival function, so tiny
/// p-values keep their precision).
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_nan() {
        return 1.0;
    }
    let a = t.abs();
    let sf = if !(df < NORMAL_DF) { standard_normal().sf(a) } else { students_t(df).sf(a) };
    (2.0 * sf).clamp(0.0, 1.0)
}

/// The exact (Clopper–Pearson) two-sided `level` confidence interval of a proportion: `k` successes in
/// `n` trials. What the simulation's error rates are stated with.
pub fn clopper_pearson(k: u64, n: u64, level: f64) -> (f64, f64) {
    use statrs::distribution::Beta;
    if n == 0 {
        return (0.0, 1.0);
    }
    let a = (1.0 - level) / 2.0;
    let (k, n) = (k as f64, n as f64);
    let lo = if k == 0.0 { 0.0 } else { Beta::new(k, n - k + 1.0).expect("valid beta").inverse_cdf(a) };
    let hi = if k == n { 1.0 } else { Beta::new(k + 1.0, n - k).expect("valid beta").inverse_cdf(1.0 - a) };
    (lo, hi)
}

/// Sample variance (n − 1); 0 below two values.
pub fn sample_var(xs: &[f64]) -> f64 {
    sample_sd(xs).powi(2)
}

/// Values must be positive for logs; a zero (a stage too small to register a clock tick) becomes a tiny
/// positive number so the arithmetic stays finite. Such stages are below the absolute floor anyway.
pub fn ln_pos(x: f64) -> f64 {
    x.max(1e-9).ln()
}

/// The largest relative change a report states, in percent (+10 000 %, ×101): an interval read from one or
/// two degrees of freedom reaches far beyond it (Student's t at 1 df and the family's levels is in the
/// hundreds), and a number with 20 digits says nothing a reader can use. Bounds beyond it are stored and
/// shown as this, "≥ +10000.0 %".
pub const MAX_STATED_PCT: f64 = 10_000.0;

/// A log ratio as a relative change in percent, at most [`MAX_STATED_PCT`] (for interval bounds and
/// detectable effects; finite whatever the log ratio).
pub fn pct_bounded(log_ratio: f64) -> f64 {
    if log_ratio.is_nan() {
        return MAX_STATED_PCT;
    }
    pct(log_ratio).min(MAX_STATED_PCT)
}

/// A log ratio as a relative change in percent.
pub fn pct(log_ratio: f64) -> f64 {
    (log_ratio.exp() - 1.0) * 100.0
}

/// A relative change in percent as a log ratio (−100 % and below have none: −∞).
pub fn log_ratio(pct: f64) -> f64 {
    (1.0 + pct / 100.0).max(0.0).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_and_p_values_match_published_tables() {
        // Two-sided 95 %: 12.706 at 1 df, 2.228 at 10, 1.960 for the normal.
        assert!((t_quantile(0.975, 1.0) - 12.706).abs() < 1e-3);
        assert!((t_quantile(0.975, 10.0) - 2.228).abs() < 1e-3);
        assert!((t_quantile(0.975, f64::INFINITY) - 1.960).abs() < 1e-3);
        // 99.9 % one-sided at 4 df: 7.173; fractional df fall in between.
        assert!((t_quantile(0.999, 4.0) - 7.173).abs() < 1e-3);
        assert!(t_quantile(0.975, 2.5) < t_quantile(0.975, 2.0) && t_quantile(0.975, 2.5) > t_quantile(0.975, 3.0));
        // p-values invert the quantiles, and tiny ones keep their precision.
        assert!((t_two_sided_p(t_quantile(0.995, 7.0), 7.0) - 0.01).abs() < 1e-9);
        assert!((t_two_sided_p(3.2905, f64::INFINITY) - 0.001).abs() < 1e-6);
        assert!(t_two_sided_p(40.0, 30.0) > 0.0 && t_two_sided_p(40.0, 30.0) < 1e-25);
        assert_eq!(t_two_sided_p(0.0, 3.0), 1.0);
    }

    #[test]
    fn the_fast_quantile_agrees_with_statrs_inverse() {
        for df in [1.0, 2.5, 3.0, 3.7, 4.0, 6.0, 9.5, 22.0, 57.3, 300.0, 5e4] {
            for p in [0.5, 0.6, 0.8, 0.9, 0.975, 0.99, 0.999, 0.99984, 1.0 - 1e-6, 0.025, 1e-4] {
                let fast = t_quantile(p, df);
                let exact = students_t(df).inverse_cdf(p);
                // At very large df statrs's own inverse drifts by ~1e-7; ours is the root of its CDF.
                let tolerance = if df > 1000.0 { 1e-6 } else { 1e-8 };
                assert!((fast - exact).abs() <= tolerance * exact.abs().max(1.0), "df {df} p {p}: {fast} vs {exact}");
                if p != 0.5 {
                    // The quantile and the p-value agree: what the interval and the test need.
                    let two_sided = if p > 0.5 { 2.0 * (1.0 - p) } else { 2.0 * p };
                    assert!((t_two_sided_p(fast, df) - two_sided).abs() <= 1e-9 * two_sided.max(1e-3), "df {df} p {p}");
                }
            }
        }
    }

    #[test]
    fn clopper_pearson_matches_published_values() {
        // 0 of 2000: the upper 95 % bound is 1 − 0.025^(1/2000) ≈ 0.00184.
        let (lo, hi) = clopper_pearson(0, 2000, 0.95);
        assert_eq!(lo, 0.0);
        assert!((hi - (1.0 - 0.025f64.powf(1.0 / 2000.0))).abs() < 1e-9, "{hi}");
        // 10 of 100: about 0.049 … 0.176.
        let (lo, hi) = clopper_pearson(10, 100, 0.95);
        assert!((lo - 0.0490).abs() < 5e-4 && (hi - 0.1762).abs() < 5e-4, "{lo} {hi}");
    }

    #[test]
    fn the_planning_quantile_is_close_enough_for_planning() {
        for df in [4.0, 6.0, 10.0, 17.3, 30.0, 200.0] {
            for p in [0.8, 0.99, 0.998, 0.9998] {
                let (approx, exact) = (t_quantile_approx(p, df), t_quantile(p, df));
                assert!((approx / exact - 1.0).abs() < 0.005, "df {df} p {p}: {approx} vs {exact}");
            }
        }
    }

    #[test]
    fn log_ratios_and_percent() {
        assert!((pct(log_ratio(27.4)) - 27.4).abs() < 1e-9);
        assert!((pct(log_ratio(-50.0)) + 50.0).abs() < 1e-9);
        assert_eq!(log_ratio(-100.0), f64::NEG_INFINITY);
    }

    #[test]
    fn spread() {
        assert_eq!(sample_sd(&[1.0]), 0.0);
        assert!((cv(&[1.11, 1.11, 1.17]) - 0.0307).abs() < 1e-3);
    }
}
