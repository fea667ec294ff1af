//! Thresholds that decide "flat" from "different": uncalibrated defaults, or a noise profile calibrated
//! from same-code repeats.
//!
//! Calibration formula: for each stage and metric, from n ≥ 2 same-code trials with coefficient of
//! variation CV, `threshold % = max(2 %, 3 × CV × 100)`. The difference of two independent runs has a
//! standard deviation of √2·CV, so 3·CV is about 2.1 standard deviations of a single-pair difference:
//! same-code pairs exceed it roughly 4 % of the time. The 2 % floor keeps a lucky, very quiet calibration
//! from turning clock-tick jitter into verdicts.

use super::aggregate::TrialSums;
use crate::stats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Uncalibrated CPU threshold: same-code CPU repeats sit within a few percent.
pub const DEFAULT_CPU_PCT: f64 = 10.0;
/// Uncalibrated elapsed threshold: identical runs differ 10–30 % in stage wall time.
pub const DEFAULT_ELAPSED_PCT: f64 = 25.0;
/// CPU changes smaller than this many CPU-seconds are flat: CPU time is counted in clock ticks.
pub const CPU_FLOOR_S: f64 = 0.05;
/// Elapsed changes smaller than this many seconds are flat.
pub const ELAPSED_FLOOR_S: f64 = 0.25;
/// Smallest calibrated threshold.
pub const MIN_CALIBRATED_PCT: f64 = 2.0;
/// Multiplier from a metric's CV to its threshold.
pub const CV_MULTIPLIER: f64 = 3.0;

/// The spread of one metric over same-code trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricNoise {
    pub n: usize,
    pub mean: f64,
    pub cv: f64,
    pub threshold_pct: f64,
}

impl MetricNoise {
    pub fn from_values(values: &[f64]) -> MetricNoise {
        let cv = stats::cv(values);
        MetricNoise { n: values.len(), mean: stats::mean(values), cv, threshold_pct: (CV_MULTIPLIER * cv * 100.0).max(MIN_CALIBRATED_PCT) }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageNoise {
    pub cpu: MetricNoise,
    pub elapsed: MetricNoise,
}

/// A noise profile: per stage, the spread of CPU and summed elapsed over same-code trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseProfile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<serde_json::Value>,
    pub trials: usize,
    pub stages: BTreeMap<String, StageNoise>,
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
        NoiseProfile {
            fingerprint,
            trials: trials.len(),
            stages: per_stage
                .into_iter()
                .map(|(stage, (cpu, elapsed))| {
                    (stage, StageNoise { cpu: MetricNoise::from_values(&cpu), elapsed: MetricNoise::from_values(&elapsed) })
                })
                .collect(),
        }
    }
}

/// The thresholds one stage is judged with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StageThresholds {
    pub cpu_pct: f64,
    pub elapsed_pct: f64,
    pub calibrated: bool,
}

impl StageThresholds {
    pub fn for_stage(profile: Option<&NoiseProfile>, stage: &str) -> StageThresholds {
        match profile.and_then(|p| p.stages.get(stage)).filter(|s| s.cpu.n >= 2) {
            Some(s) => StageThresholds { cpu_pct: s.cpu.threshold_pct, elapsed_pct: s.elapsed.threshold_pct, calibrated: true },
            None => StageThresholds { cpu_pct: DEFAULT_CPU_PCT, elapsed_pct: DEFAULT_ELAPSED_PCT, calibrated: false },
        }
    }
}
