//! Small-sample statistics for judging, chosen to be honest at n = 2…10:
//!
//! * [`welch_log_interval`]: a 95 % Welch t interval for the difference of mean log values, reported as a
//!   relative change. Logs because costs are ratios (a 10 % change means the same at 1 s and 100 s) and
//!   because their spread scales with the mean; Welch because the two arms need not share a variance.
//!   It is used at every n ≥ 2. A percentile bootstrap is deliberately not used: at 5–10 trials per arm
//!   its intervals are known to be too narrow (they under-cover), and it costs ~0.4 ms per stage, which
//!   a 100-stage pipeline cannot afford on a page render.
//! * [`mann_whitney_p`]: a two-sided rank-test p-value, reported beside the interval and never gated on.

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

/// Two-sided 95 % critical value of Student's t with `df` degrees of freedom (fractional df allowed):
/// tabulated for df 1–30, 40, 60, 120, ∞ and interpolated linearly in 1/df (error < 0.1 % in between).
pub fn t_975(df: f64) -> f64 {
    const TABLE: [(f64, f64); 34] = [
        (1.0, 12.706),
        (2.0, 4.303),
        (3.0, 3.182),
        (4.0, 2.776),
        (5.0, 2.571),
        (6.0, 2.447),
        (7.0, 2.365),
        (8.0, 2.306),
        (9.0, 2.262),
        (10.0, 2.228),
        (11.0, 2.201),
        (12.0, 2.179),
        (13.0, 2.160),
        (14.0, 2.145),
        (15.0, 2.131),
        (16.0, 2.120),
        (17.0, 2.110),
        (18.0, 2.101),
        (19.0, 2.093),
        (20.0, 2.086),
        (21.0, 2.080),
        (22.0, 2.074),
        (23.0, 2.069),
        (24.0, 2.064),
        (25.0, 2.060),
        (26.0, 2.056),
        (27.0, 2.052),
        (28.0, 2.048),
        (29.0, 2.045),
        (30.0, 2.042),
        (40.0, 2.021),
        (60.0, 2.000),
        (120.0, 1.980),
        (f64::INFINITY, 1.960),
    ];
    if df.is_nan() || df < 1.0 {
        return TABLE[0].1;
    }
    for pair in TABLE.windows(2) {
        let ((d0, t0), (d1, t1)) = (pair[0], pair[1]);
        if df <= d1 {
            let (x0, x1, x) = (1.0 / d0, if d1.is_infinite() { 0.0 } else { 1.0 / d1 }, 1.0 / df);
            return t0 + (t1 - t0) * (x0 - x) / (x0 - x1);
        }
    }
    1.960
}

/// Values must be positive for logs; a zero (a stage too small to register a clock tick) becomes a tiny
/// positive number so the arithmetic stays finite. Such stages are below the absolute floor anyway.
fn ln_pos(x: f64) -> f64 {
    x.max(1e-9).ln()
}

/// 95 % Welch interval for treatment vs control as a relative change in percent: `(low, high)`.
/// Needs at least two values in each arm.
pub fn welch_log_interval(control: &[f64], treatment: &[f64]) -> Option<(f64, f64)> {
    if control.len() < 2 || treatment.len() < 2 {
        return None;
    }
    let lc: Vec<f64> = control.iter().map(|&x| ln_pos(x)).collect();
    let lt: Vec<f64> = treatment.iter().map(|&x| ln_pos(x)).collect();
    let (vc, vt) = (sample_sd(&lc).powi(2) / lc.len() as f64, sample_sd(&lt).powi(2) / lt.len() as f64);
    let diff = mean(&lt) - mean(&lc);
    let se = (vc + vt).sqrt();
    let half = if se == 0.0 {
        0.0
    } else {
        let df = (vc + vt).powi(2) / (vc.powi(2) / (lc.len() - 1) as f64 + vt.powi(2) / (lt.len() - 1) as f64);
        t_975(df) * se
    };
    Some((pct(diff - half), pct(diff + half)))
}

fn pct(log_ratio: f64) -> f64 {
    (log_ratio.exp() - 1.0) * 100.0
}

/// Two-sided Mann–Whitney U p-value: exact (by counting rank sums) without ties and up to 40 values,
/// otherwise the normal approximation with tie correction. `None` when either arm is empty.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> Option<f64> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    // U of the first arm: pairs it wins, half a point per tie. No sort needed.
    let mut u1 = 0.0;
    let mut ties = false;
    for &x in a {
        for &y in b {
            if x > y {
                u1 += 1.0;
            } else if x == y {
                u1 += 0.5;
                ties = true;
            }
        }
    }
    let has_dupes = |xs: &[f64]| xs.iter().enumerate().any(|(i, x)| xs[i + 1..].contains(x));
    ties = ties || has_dupes(a) || has_dupes(b);
    let mu = (n1 * n2) as f64 / 2.0;
    let n = n1 + n2;
    if !ties && n <= 40 {
        // The null distribution of U: the coefficients of the Gaussian binomial [n1+n2 choose n1]_q,
        // built as a product of (1 − q^(n2+i)) / (1 − q^i), i = 1..n1 — O(n1 · n1·n2) work.
        let top = n1 * n2;
        let mut ways = vec![0f64; top + 1];
        ways[0] = 1.0;
        for i in 1..=n1 {
            let step = n2 + i;
            for k in (step..=top).rev() {
                ways[k] -= ways[k - step];
            }
            for k in i..=top {
                ways[k] += ways[k - i];
            }
        }
        let total: f64 = ways.iter().sum();
        let dev = (u1 - mu).abs();
        let extreme: f64 = ways.iter().enumerate().filter(|(u, _)| (*u as f64 - mu).abs() >= dev - 1e-9).map(|(_, c)| c).sum();
        return Some((extreme / total).min(1.0));
    }
    // Normal approximation with continuity and tie corrections.
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < all.len() {
        let j = all[i..].iter().take_while(|&&v| v == all[i]).count();
        tie_term += (j * j * j - j) as f64;
        i += j;
    }
    let nf = n as f64;
    let var = (n1 * n2) as f64 / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)));
    if var <= 0.0 {
        return Some(1.0);
    }
    let z = ((u1 - mu).abs() - 0.5).max(0.0) / var.sqrt();
    Some((2.0 * (1.0 - normal_cdf(z))).min(1.0))
}

/// Standard normal CDF (Abramowitz–Stegun 7.1.26 erf, error < 1.5e-7).
fn normal_cdf(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let y =
        1.0 - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t + 0.254_829_592) * t * (-x * x).exp();
    0.5 * (1.0 + if x >= 0.0 { y } else { -y })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_table_and_interpolation() {
        assert_eq!(t_975(1.0), 12.706);
        assert_eq!(t_975(10.0), 2.228);
        assert!((t_975(2.5) - 3.60).abs() < 0.1, "{}", t_975(2.5));
        assert!((t_975(1e9) - 1.96).abs() < 1e-3);
        assert!(t_975(50.0) < t_975(40.0) && t_975(50.0) > t_975(60.0));
    }

    #[test]
    fn welch_interval_brackets_the_change() {
        let c = [1.11, 1.11, 1.17];
        let t = [1.44, 1.40, 1.47];
        let (lo, hi) = welch_log_interval(&c, &t).unwrap();
        let point = (mean(&t) / mean(&c) - 1.0) * 100.0;
        assert!(lo > 15.0 && hi < 40.0 && lo < point && point < hi, "{lo} {point} {hi}");
        // Identical arms: a zero-width interval at zero.
        assert_eq!(welch_log_interval(&[2.0, 2.0], &[2.0, 2.0]), Some((0.0, 0.0)));
        assert_eq!(welch_log_interval(&[1.0], &[1.0, 2.0]), None);
        // More spread, wider interval.
        let (lo2, hi2) = welch_log_interval(&[1.0, 1.3, 0.8], &[1.4, 1.1, 1.7]).unwrap();
        assert!(hi2 - lo2 > hi - lo);
    }

    #[test]
    fn rank_test_p_values() {
        // Complete separation of 3 vs 3: exact two-sided p = 2/20.
        let p = mann_whitney_p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!((p - 0.1).abs() < 1e-12, "{p}");
        // 4 vs 4 separated: 2 of C(8,4) = 70 arrangements are as extreme.
        let p4 = mann_whitney_p(&[5.0, 6.0, 7.0, 8.0], &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert!((p4 - 2.0 / 70.0).abs() < 1e-12, "{p4}");
        let same = mann_whitney_p(&[1.0, 3.0, 5.0], &[2.0, 4.0, 6.0]).unwrap();
        assert!(same > 0.5, "{same}");
        let tied = mann_whitney_p(&[1.11, 1.11, 1.17], &[1.44]).unwrap();
        assert!(tied > 0.0 && tied <= 1.0);
        assert_eq!(mann_whitney_p(&[], &[1.0]), None);
    }

    #[test]
    fn spread() {
        assert_eq!(sample_sd(&[1.0]), 0.0);
        assert!((cv(&[1.11, 1.11, 1.17]) - 0.0307).abs() < 1e-3);
    }
}
