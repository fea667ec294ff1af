//! Noise profiles: the spread of each stage's CPU and summed elapsed over same-code trials. A profile sets
//! the expected spread the verdict uses (its power and its small-n inference), never the margin.
//!
//! * Each metric keeps its trials `n`, the standard deviation of its log values (`log_sd`, ≈ the CV) and
//!   its degrees of freedom (`df` = n − 1 for one calibration; more when grown).
//! * **Each stage is judged with its own spread and df.** Student's t with the profile's df already
//!   accounts for a short calibration being noisy, exactly, at any number of trials. Shrinkage toward the
//!   stages' common spread (empirical Bayes, as in Smyth's moderated t, 2004) was built and measured with
//!   `arbiter simulate --shrink-profiles` ([`NoiseProfile::shrunk`]): with stage CVs of 1–5 % it lowers the
//!   noisy stages' spreads and credits them the pool's df, and A/A false claims rise well above 1 % (the
//!   README has the figures). It is not sound for stages whose noise differs, so it is not used.
//! * **The pool serves what the profile lacks.** The stages' common spread s₀ and its prior df d₀ are
//!   still estimated (Smyth's moment estimator on log variances, [`PooledSpread`]) and recorded: a stage the
//!   profile has never seen (new or renamed since the calibration) gets s₀ with min(d₀, the median stage's
//!   df) instead of the generic default spread. Stages under the floors are left out of the pool.
//! * **Trust**: a profile from fewer than [`TRUSTED_PROFILE_TRIALS`] same-code trials is marked untrusted;
//!   the judge pools it with the default spread while its df (with the run's) are fewer than 4
//!   ([`super::estimate`]).
//! * **Growth**: [`NoiseProfile::grow`] adds a later calibration of the same fingerprint by pooling the
//!   within-calibration variances (Σ dᵢsᵢ² / Σ dᵢ), so a profile gets better instead of being replaced.
//! * Profiles written before method 2 (`threshold_pct`, no `log_sd`) still load: their spread is taken from
//!   the CV (log_sd = √ln(1 + CV²)) with n − 1 df.

use super::aggregate::TrialSums;
use super::estimate::Prior;
use super::method::{CPU_FLOOR_S, ELAPSED_FLOOR_S, TRUSTED_PROFILE_TRIALS};
use crate::stats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The profile format written now.
pub const PROFILE_VERSION: u32 = 2;

/// The spread of one metric over same-code trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricNoise {
    pub n: usize,
    pub mean: f64,
    pub cv: f64,
    /// Standard deviation of the log values, this stage alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_sd: Option<f64>,
    /// Degrees of freedom of `log_sd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub df: Option<f64>,
    /// Method 1's threshold (max(2 %, 3 × CV)), present only in profiles written before method 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_pct: Option<f64>,
}

impl MetricNoise {
    pub fn from_values(values: &[f64]) -> MetricNoise {
        let logs: Vec<f64> = values.iter().map(|&v| stats::ln_pos(v)).collect();
        let df = values.len().saturating_sub(1) as f64;
        let log_sd = stats::sample_sd(&logs);
        MetricNoise {
            n: values.len(),
            mean: stats::mean(values),
            cv: stats::cv(values),
            log_sd: Some(log_sd),
            df: Some(df),
            threshold_pct: None,
        }
    }

    /// This stage's own log spread and df (an old profile's from its CV).
    pub fn raw(&self) -> (f64, f64) {
        let sd = self.log_sd.unwrap_or_else(|| (1.0 + self.cv * self.cv).ln().sqrt());
        (sd, self.df.unwrap_or(self.n.saturating_sub(1) as f64))
    }

    /// The spread the verdict uses, as a prior; none without a degree of freedom.
    pub fn prior(&self) -> Option<Prior> {
        let (sd, df) = self.raw();
        (df >= 1.0 && sd.is_finite()).then_some(Prior { var: sd * sd, df })
    }

    /// Pools two calibrations of the same stage.
    fn pooled(&self, other: &MetricNoise) -> MetricNoise {
        let ((sa, da), (sb, db)) = (self.raw(), other.raw());
        let df = da + db;
        let var = if df > 0.0 { (da * sa * sa + db * sb * sb) / df } else { 0.0 };
        let n = self.n + other.n;
        let mean = (self.mean * self.n as f64 + other.mean * other.n as f64) / n.max(1) as f64;
        MetricNoise { n, mean, cv: (var.exp() - 1.0).max(0.0).sqrt(), log_sd: Some(var.sqrt()), df: Some(df), threshold_pct: None }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageNoise {
    pub cpu: MetricNoise,
    pub elapsed: MetricNoise,
}

/// The stages' common spread: what a stage the profile never saw is given.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PooledSpread {
    /// s₀: the stages' common log spread.
    pub spread: f64,
    /// d₀: how many degrees of freedom it is worth to each stage (large when the stages agree).
    pub prior_df: f64,
    /// How many stages it was estimated from, and the median of their df.
    pub stages: usize,
    #[serde(default)]
    pub median_df: f64,
}

/// A noise profile: per stage, the spread of CPU and summed elapsed over same-code trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseProfile {
    /// 1 for profiles written before method 2 (absent in their files).
    #[serde(default = "version_one")]
    pub version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<serde_json::Value>,
    pub trials: usize,
    /// At least [`TRUSTED_PROFILE_TRIALS`] same-code trials stand behind it.
    #[serde(default)]
    pub trusted: bool,
    /// How many calibrations were pooled into it.
    #[serde(default = "one")]
    pub calibrations: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooled_cpu: Option<PooledSpread>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooled_elapsed: Option<PooledSpread>,
    pub stages: BTreeMap<String, StageNoise>,
}

fn version_one() -> u32 {
    1
}

fn one() -> usize {
    1
}

impl NoiseProfile {
    /// Calibrates from same-code trials; stages missing from some trial use only the trials that have them.
    pub fn calibrate(trials: &[TrialSums], fingerprint: Option<serde_json::Value>) -> NoiseProfile {
        let mut per_stage: BTreeMap<String, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
        for t in trials {
            for (stage, s) in &t.stages {
                let e = per_stage.entry(stage.clone()).or_default();
                e.0.push(s.cpu);
                e.1.push(s.elapsed);
            }
        }
        let stages = per_stage
            .into_iter()
            .map(|(stage, (cpu, elapsed))| {
                (stage, StageNoise { cpu: MetricNoise::from_values(&cpu), elapsed: MetricNoise::from_values(&elapsed) })
            })
            .collect();
        let mut profile = NoiseProfile {
            version: PROFILE_VERSION,
            fingerprint,
            trials: trials.len(),
            trusted: false,
            calibrations: 1,
            pooled_cpu: None,
            pooled_elapsed: None,
            stages,
        };
        profile.estimate_pool();
        profile
    }

    /// Adds a later calibration of the same fingerprint: the within-calibration variances are pooled.
    pub fn grow(&self, later: &NoiseProfile) -> Result<NoiseProfile, String> {
        if let (Some(a), Some(b)) = (&self.fingerprint, &later.fingerprint) {
            if a != b {
                return Err(format!("the profiles' fingerprints differ ({a} and {b}): only same-code trials of one workload pool"));
            }
        }
        let mut stages = self.stages.clone();
        for (name, s) in &later.stages {
            let merged = match stages.get(name) {
                Some(old) => StageNoise { cpu: old.cpu.pooled(&s.cpu), elapsed: old.elapsed.pooled(&s.elapsed) },
                None => s.clone(),
            };
            stages.insert(name.clone(), merged);
        }
        let mut grown = NoiseProfile {
            version: PROFILE_VERSION,
            fingerprint: self.fingerprint.clone().or_else(|| later.fingerprint.clone()),
            trials: self.trials + later.trials,
            trusted: false,
            calibrations: self.calibrations + later.calibrations,
            pooled_cpu: None,
            pooled_elapsed: None,
            stages,
        };
        for s in grown.stages.values_mut() {
            for m in [&mut s.cpu, &mut s.elapsed] {
                let (sd, df) = m.raw();
                (m.log_sd, m.df, m.threshold_pct) = (Some(sd), Some(df), None);
            }
        }
        grown.estimate_pool();
        Ok(grown)
    }

    /// Marks trust and estimates the stages' common spreads.
    fn estimate_pool(&mut self) {
        self.trusted = self.trials >= TRUSTED_PROFILE_TRIALS;
        let pick_cpu = |s: &StageNoise| (s.cpu.mean >= CPU_FLOOR_S).then_some(s.cpu.raw());
        let pick_elapsed = |s: &StageNoise| (s.elapsed.mean >= ELAPSED_FLOOR_S).then_some(s.elapsed.raw());
        let cpu: Vec<(f64, f64)> = self.stages.values().filter_map(pick_cpu).collect();
        let elapsed: Vec<(f64, f64)> = self.stages.values().filter_map(pick_elapsed).collect();
        self.pooled_cpu = hyper_prior(&cpu);
        self.pooled_elapsed = hyper_prior(&elapsed);
    }

    /// This profile with every stage's spread shrunk toward the stages' common one, crediting the pool's
    /// df (Smyth's moderated variance). Not used for judging — `arbiter simulate --shrink-profiles` measures
    /// why (module notes); kept so that the measurement can be rerun.
    pub fn shrunk(&self) -> NoiseProfile {
        let mut out = self.clone();
        for s in out.stages.values_mut() {
            for (m, pool) in [(&mut s.cpu, self.pooled_cpu), (&mut s.elapsed, self.pooled_elapsed)] {
                let Some(p) = pool else { continue };
                let (sd, df) = m.raw();
                let var = (p.prior_df * p.spread * p.spread + df * sd * sd) / (p.prior_df + df);
                (m.log_sd, m.df) = (Some(var.sqrt()), Some(df + p.prior_df));
            }
        }
        out
    }

    /// The spread of a stage this profile has never seen: the stages' common one (see the module notes).
    pub fn unseen_stage(&self) -> Option<StageNoise> {
        let metric = |p: Option<PooledSpread>| {
            p.map(|p| MetricNoise {
                n: 0,
                mean: 0.0,
                cv: (p.spread * p.spread).exp_m1().max(0.0).sqrt(),
                log_sd: Some(p.spread),
                df: Some(p.prior_df.min(p.median_df)),
                threshold_pct: None,
            })
        };
        Some(StageNoise { cpu: metric(self.pooled_cpu)?, elapsed: metric(self.pooled_elapsed)? })
    }
}

/// s₀ and d₀ from the stages' (log sd, df), by Smyth's moment estimator on log variances; none from fewer
/// than three usable stages.
fn hyper_prior(stages: &[(f64, f64)]) -> Option<PooledSpread> {
    let usable: Vec<(f64, f64)> = stages.iter().copied().filter(|&(sd, df)| sd > 0.0 && df >= 1.0).collect();
    let g = usable.len();
    if g < 3 {
        return None;
    }
    let e: Vec<f64> = usable.iter().map(|&(sd, df)| (sd * sd).ln() - digamma(df / 2.0) + (df / 2.0).ln()).collect();
    let e_mean = stats::mean(&e);
    let excess = e.iter().map(|x| (x - e_mean).powi(2)).sum::<f64>() / (g - 1) as f64
        - usable.iter().map(|&(_, df)| trigamma(df / 2.0)).sum::<f64>() / g as f64;
    let total_df: f64 = usable.iter().map(|p| p.1).sum();
    let prior_df = if excess > 0.0 { (2.0 * inverse_trigamma(excess)).min(total_df) } else { total_df };
    let var = (e_mean + digamma(prior_df / 2.0) - (prior_df / 2.0).ln()).exp();
    let dfs: Vec<f64> = usable.iter().map(|p| p.1).collect();
    let median_df = stats::median(&dfs).unwrap_or(0.0);
    Some(PooledSpread { spread: var.sqrt(), prior_df, stages: g, median_df })
}

fn digamma(x: f64) -> f64 {
    statrs::function::gamma::digamma(x)
}

/// ψ₁(x) for x > 0: the recurrence up to 10, then the asymptotic series (error < 1e-12).
fn trigamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 10.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let x2 = 1.0 / (x * x);
    acc + 1.0 / x + x2 / 2.0 + (1.0 / 6.0 - x2 * (1.0 / 30.0 - x2 * (1.0 / 42.0 - x2 / 30.0))) * x2 / x
}

/// The y with ψ₁(y) = v (ψ₁ decreases): bisection on the log scale.
fn inverse_trigamma(v: f64) -> f64 {
    let (mut lo, mut hi) = (1e-8f64.ln(), 1e8f64.ln());
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if trigamma(mid.exp()) > v {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    ((lo + hi) / 2.0).exp()
}

/// What one stage was held to: the margins (percent; the floors raise them for small stages) and whether
/// a noise profile gave its spread. (Method 1 stored its fixed thresholds here.)
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StageThresholds {
    pub cpu_pct: f64,
    pub elapsed_pct: f64,
    pub calibrated: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::aggregate::StageSums;

    #[test]
    fn trigamma_matches_known_values() {
        // ψ₁(1) = π²/6, ψ₁(1/2) = π²/2.
        let pi2 = std::f64::consts::PI.powi(2);
        assert!((trigamma(1.0) - pi2 / 6.0).abs() < 1e-10);
        assert!((trigamma(0.5) - pi2 / 2.0).abs() < 1e-10);
        assert!((inverse_trigamma(trigamma(3.7)) - 3.7).abs() < 1e-6);
    }

    fn trials(values: &[[f64; 4]]) -> Vec<TrialSums> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let mut t = TrialSums { label: format!("trial #{i}"), ..Default::default() };
                for (j, cpu) in v.iter().enumerate() {
                    t.stages.insert(format!("s{j}"), StageSums { cpu: *cpu, elapsed: 10.0 * cpu, items: 1.0, bytes: 1.0, mem_peak: 1.0 });
                }
                t
            })
            .collect()
    }

    #[test]
    fn calibration_records_df_pools_the_stages_and_grows() {
        let five = trials(&[
            [1.0, 2.0, 3.0, 4.0],
            [1.02, 2.04, 2.94, 4.1],
            [0.98, 1.97, 3.05, 3.9],
            [1.01, 2.02, 3.01, 4.04],
            [0.99, 1.99, 2.98, 3.97],
        ]);
        let p = NoiseProfile::calibrate(&five, None);
        assert_eq!((p.version, p.trials, p.trusted), (PROFILE_VERSION, 5, true));
        let s0 = &p.stages["s0"].cpu;
        assert_eq!((s0.n, s0.df), (5, Some(4.0)));
        let pooled = p.pooled_cpu.expect("four stages above the floor");
        assert_eq!(pooled.stages, 4);
        // Each stage keeps its own spread and df (no shrinkage); the pool serves unseen stages.
        for st in p.stages.values() {
            assert_eq!(st.cpu.prior().unwrap().df, 4.0);
        }
        let unseen = p.unseen_stage().unwrap();
        assert_eq!(unseen.cpu.prior().unwrap().df, pooled.prior_df.min(4.0));
        assert!(unseen.cpu.log_sd.unwrap() > 0.0);
        // Three trials: untrusted.
        let three = NoiseProfile::calibrate(&five[..3], None);
        assert!(!three.trusted);
        assert_eq!(three.stages["s1"].cpu.df, Some(2.0));
        // Growing the 3-trial profile by the other 2 trials: 5 trials, df pooled within calibrations (2 + 1).
        let later = NoiseProfile::calibrate(&five[3..], None);
        let grown = three.grow(&later).unwrap();
        assert_eq!((grown.trials, grown.calibrations, grown.trusted), (5, 2, true));
        assert_eq!(grown.stages["s2"].cpu.df, Some(3.0));
        let other = NoiseProfile::calibrate(&five[3..], Some(serde_json::json!({"size": "large"})));
        let mine = NoiseProfile::calibrate(&five[..3], Some(serde_json::json!({"size": "small"})));
        assert!(mine.grow(&other).unwrap_err().contains("fingerprints differ"));
    }

    #[test]
    fn a_method_one_profile_still_loads() {
        let old = r#"{"trials": 3, "stages": {"map": {"cpu": {"n": 3, "mean": 1.13, "cv": 0.0307, "threshold_pct": 9.2},
                      "elapsed": {"n": 3, "mean": 2.0, "cv": 0.1, "threshold_pct": 30.0}}}}"#;
        let p: NoiseProfile = serde_json::from_str(old).unwrap();
        assert_eq!((p.version, p.trusted, p.calibrations), (1, false, 1));
        let prior = p.stages["map"].cpu.prior().unwrap();
        assert_eq!(prior.df, 2.0);
        assert!((prior.var.sqrt() - 0.0307).abs() < 1e-3, "{prior:?}");
    }
}
