//! One metric of one stage, treatment against control, on the log scale: the estimated log ratio, its
//! standard error and degrees of freedom, and where the spread came from.
//!
//! * **Paired** (trials interleaved and every trial has its partner): d_i = ln T_i − ln C_i, the mean
//!   of d with sd(d)/√n and n − 1 df. Adjacent trials share the host's state, which pairing removes.
//! * **Unpaired**: with enough data of its own, Welch's t on the logs (no equal-variance assumption);
//!   with a noise profile or too little data, the pooled variance of the arms' logs with the profile's
//!   and (below [`MIN_SPREAD_DF`]) the default spread's degrees of freedom added in.
//! * The prior spreads are per-trial log variances σ²; a paired difference's prior variance is 2σ²
//!   (no credit is taken for the within-pair correlation pairing exploits, so it errs wide).
//! * **A prior may widen the run's spread, never narrow it**: when the run has a spread of its own, the
//!   variance used is the larger of the pooled one and the run's, with the pooled df. Against the exact
//!   pooled test this only errs wide; it keeps a profile calibrated on a quiet day (or the default) from
//!   overruling a run that shows a straggler or a busy node.

use super::method::{DEFAULT_SPREAD_DF, MIN_SPREAD_DF};
use crate::stats::{ln_pos, mean, sample_var};
use serde::{Deserialize, Serialize};

/// A spread known before this run: a per-trial log variance and its degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prior {
    pub var: f64,
    pub df: f64,
}

impl Prior {
    pub fn default_spread(sd: f64) -> Prior {
        Prior { var: sd * sd, df: DEFAULT_SPREAD_DF }
    }
}

/// The comparison of one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// Mean log ratio, treatment − control.
    pub log_ratio: f64,
    pub se: f64,
    pub df: f64,
    pub paired: bool,
    /// The standard deviation of one pair's log difference (for planning: the SE at n pairs is this / √n).
    pub pair_sd: f64,
    /// Pairs (paired) or trials per arm (unpaired): [control, treatment].
    pub n: [usize; 2],
    /// Where the spread came from: "run", "run + profile", "run + default", "run + profile + default" …
    pub spread: String,
}

/// One trial's value of a metric, with its pair key when it has one.
pub type Keyed = (Option<u32>, f64);

/// Pairs by key when every trial on both sides has one and the keys match one to one; the differences in
/// key order.
fn paired_differences(control: &[Keyed], treatment: &[Keyed]) -> Option<Vec<f64>> {
    if control.len() != treatment.len() || control.is_empty() {
        return None;
    }
    let mut c: Vec<(u32, f64)> = control.iter().map(|(k, v)| k.map(|k| (k, *v))).collect::<Option<_>>()?;
    let mut t: Vec<(u32, f64)> = treatment.iter().map(|(k, v)| k.map(|k| (k, *v))).collect::<Option<_>>()?;
    c.sort_by_key(|p| p.0);
    t.sort_by_key(|p| p.0);
    if c.windows(2).any(|w| w[0].0 == w[1].0) || c.iter().zip(&t).any(|(a, b)| a.0 != b.0) {
        return None;
    }
    Some(c.iter().zip(&t).map(|(a, b)| ln_pos(b.1) - ln_pos(a.1)).collect())
}

/// Pools variance estimates by their degrees of freedom: Σ df·var / Σ df.
fn pool(parts: &[(f64, f64)]) -> (f64, f64) {
    let df: f64 = parts.iter().map(|p| p.1).sum();
    if df <= 0.0 {
        return (0.0, 0.0);
    }
    (parts.iter().map(|p| p.0 * p.1).sum::<f64>() / df, df)
}

fn words(profile: bool, default: bool, data: bool) -> String {
    let mut w: Vec<&str> = Vec::new();
    if data {
        w.push("run");
    }
    if profile {
        w.push("profile");
    }
    if default {
        w.push("default");
    }
    w.join(" + ")
}

/// Compares one metric. `paired` asks for pairing (it happens only when every trial has its partner);
/// `profile` is the noise profile's spread for this metric; `default` the documented default spread.
pub fn estimate(control: &[Keyed], treatment: &[Keyed], paired: bool, profile: Option<Prior>, default: Prior) -> Estimate {
    let diffs = if paired { paired_differences(control, treatment) } else { None };
    if let Some(d) = diffs {
        let n = d.len();
        let data = (sample_var(&d), (n - 1) as f64);
        // Priors are per-trial variances; a difference of two trials has twice that.
        let prof = profile.map(|p| (2.0 * p.var, p.df));
        let own_df = data.1 + prof.map_or(0.0, |p| p.1);
        let use_default = own_df < MIN_SPREAD_DF;
        let mut parts = vec![data];
        parts.extend(prof);
        if use_default {
            parts.push((2.0 * default.var, default.df));
        }
        let (pooled, df) = pool(&parts);
        let var = if n >= 2 { pooled.max(data.0) } else { pooled };
        let pair_sd = var.sqrt();
        return Estimate {
            log_ratio: mean(&d),
            se: pair_sd / (n as f64).sqrt(),
            df,
            paired: true,
            pair_sd,
            n: [n, n],
            spread: words(prof.is_some(), use_default, n >= 2),
        };
    }
    let lc: Vec<f64> = control.iter().map(|v| ln_pos(v.1)).collect();
    let lt: Vec<f64> = treatment.iter().map(|v| ln_pos(v.1)).collect();
    let (nc, nt) = (lc.len(), lt.len());
    let log_ratio = mean(&lt) - mean(&lc);
    let (vc, vt) = (sample_var(&lc), sample_var(&lt));
    let inv_n = 1.0 / nc as f64 + 1.0 / nt as f64;
    // Welch, when the run alone has the degrees of freedom for it and no profile is given.
    if profile.is_none() && nc >= 2 && nt >= 2 {
        let (sc, st) = (vc / nc as f64, vt / nt as f64);
        let se2 = sc + st;
        let df = if se2 == 0.0 { (nc + nt - 2) as f64 } else { se2 * se2 / (sc * sc / (nc - 1) as f64 + st * st / (nt - 1) as f64) };
        if df >= MIN_SPREAD_DF {
            return Estimate { log_ratio, se: se2.sqrt(), df, paired: false, pair_sd: (vc + vt).sqrt(), n: [nc, nt], spread: "run".into() };
        }
    }
    // Pooled: the arms' own spread (each arm with two or more trials), the profile, the default.
    let mut parts: Vec<(f64, f64)> = Vec::new();
    for (v, n) in [(vc, nc), (vt, nt)] {
        if n >= 2 {
            parts.push((v, (n - 1) as f64));
        }
    }
    let data = !parts.is_empty();
    let own = pool(&parts).0;
    parts.extend(profile.map(|p| (p.var, p.df)));
    let own_df: f64 = parts.iter().map(|p| p.1).sum();
    let use_default = own_df < MIN_SPREAD_DF;
    if use_default {
        parts.push((default.var, default.df));
    }
    let (pooled, df) = pool(&parts);
    let var = if data { pooled.max(own) } else { pooled };
    Estimate {
        log_ratio,
        se: (var * inv_n).sqrt(),
        df,
        paired: false,
        pair_sd: (2.0 * var).sqrt(),
        n: [nc, nt],
        spread: words(profile.is_some(), use_default, data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unkeyed(v: &[f64]) -> Vec<Keyed> {
        v.iter().map(|&x| (None, x)).collect()
    }

    fn keyed(v: &[f64]) -> Vec<Keyed> {
        v.iter().enumerate().map(|(i, &x)| (Some(i as u32), x)).collect()
    }

    const DEFAULT: Prior = Prior { var: 0.0025, df: 4.0 };

    #[test]
    fn welch_on_logs_with_enough_data() {
        let c = [1.00, 1.02, 0.98, 1.01, 0.99];
        let t = [1.10, 1.12, 1.08, 1.11, 1.09];
        let e = estimate(&unkeyed(&c), &unkeyed(&t), false, None, DEFAULT);
        assert_eq!((e.paired, e.spread.as_str(), e.n), (false, "run", [5, 5]));
        assert!((e.log_ratio - 1.1f64.ln()).abs() < 1e-3, "{e:?}");
        assert!(e.df > 7.0 && e.df <= 8.0, "equal spreads: Welch df ≈ 8: {e:?}");
    }

    #[test]
    fn small_runs_lean_on_the_default_and_profile_spreads() {
        let one = estimate(&unkeyed(&[1.0]), &unkeyed(&[1.3]), false, None, DEFAULT);
        assert_eq!((one.spread.as_str(), one.df), ("default", 4.0));
        assert!((one.se - 0.05 * 2f64.sqrt()).abs() < 1e-12, "{one:?}");
        // Two per arm: the run's 2 df and the default's 4 are pooled.
        let two = estimate(&unkeyed(&[1.0, 1.0]), &unkeyed(&[1.3, 1.3]), false, None, DEFAULT);
        assert_eq!((two.spread.as_str(), two.df), ("run + default", 6.0));
        // A profile with enough df replaces the default.
        let prof = Prior { var: 0.0004, df: 9.0 };
        let p = estimate(&unkeyed(&[1.0]), &unkeyed(&[1.3]), false, Some(prof), DEFAULT);
        assert_eq!((p.spread.as_str(), p.df), ("profile", 9.0));
        // A quiet profile does not narrow a run that spreads more: the run's own variance stands.
        let noisy = estimate(&unkeyed(&[1.0, 1.2, 0.85]), &unkeyed(&[1.0, 1.2, 0.85]), false, Some(prof), DEFAULT);
        let own = crate::stats::sample_var(&[1.0f64.ln(), 1.2f64.ln(), 0.85f64.ln()]);
        assert!((noisy.se - (own * (2.0 / 3.0)).sqrt()).abs() < 1e-12, "{noisy:?}");
        assert_eq!(noisy.df, 13.0, "with the pooled df");
        // A two-trial profile (1 df) is not enough on its own.
        let weak = estimate(&unkeyed(&[1.0]), &unkeyed(&[1.3]), false, Some(Prior { var: 0.0004, df: 1.0 }), DEFAULT);
        assert_eq!((weak.spread.as_str(), weak.df), ("profile + default", 5.0));
    }

    #[test]
    fn pairing_needs_every_partner() {
        // A shared drift per pair that pairing removes: the paired SE is far smaller.
        let c = [1.0, 1.2, 0.9, 1.1, 1.05, 0.95];
        let t: Vec<f64> = c.iter().map(|x| x * 1.03).collect();
        let paired = estimate(&keyed(&c), &keyed(&t), true, None, DEFAULT);
        let welch = estimate(&keyed(&c), &keyed(&t), false, None, DEFAULT);
        assert!(paired.paired && !welch.paired);
        assert!((paired.log_ratio - 1.03f64.ln()).abs() < 1e-12);
        assert!(paired.se < 1e-9 && welch.se > 0.03, "{paired:?} {welch:?}");
        // A trial without its partner: unpaired, on all trials.
        let mut orphan = keyed(&t);
        orphan[2].0 = None;
        assert!(!estimate(&keyed(&c), &orphan, true, None, DEFAULT).paired);
        let short = &keyed(&t)[..5];
        assert!(!estimate(&keyed(&c), short, true, None, DEFAULT).paired);
    }
}
