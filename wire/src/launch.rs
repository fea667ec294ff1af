//! `POST /api/v1/experiments`: the launch request the form, `arbiter launch`, a CI job and the
//! schedules send. Checked and resolved by the engine (`engine::launch`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TrialOrder {
    /// Balanced interleaving (the default): pairs one after another, each block of two pairs running one
    /// control first and one treatment first, the blocks' order drawn from the plan's stored seed (three
    /// or more arms rotate which arm goes first). `"balanced"` is the same.
    #[serde(alias = "balanced")]
    Interleaved,
    /// C,T,T,C,C,T…
    Abba,
    /// All C, then all T.
    Blocked,
    /// C,T,C,T… with the control first in every pair: the protocol before balanced orders, kept to measure
    /// what an order effect costs (`scripts/bench-noise.sh`). The judge cannot tell an order effect from
    /// the change here.
    ControlFirst,
}

impl TrialOrder {
    pub fn as_str(self) -> &'static str {
        match self {
            TrialOrder::Interleaved => "interleaved",
            TrialOrder::Abba => "abba",
            TrialOrder::Blocked => "blocked",
            TrialOrder::ControlFirst => "control_first",
        }
    }
}

pub use judge::launch_rules::{AutoWord, JsonTrials};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JsonLaunch {
    pub suite: String,
    /// The treatment: a branch, tag or SHA.
    pub head: String,
    /// The control; default: the merge-base of the suite's base branch and `head`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Extra arms, only those named here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arms: Vec<JsonExtraArm>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub fingerprint: serde_json::Map<String, serde_json::Value>,
    /// Trials an arm: a whole number, or `"auto"` (pipeline suites: pairs are added while the verdict is
    /// undecided, up to `max_trials`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub trials: Option<JsonTrials>,
    /// With `trials = "auto"`: the most trials an arm may run (default: the suite's `max_trials`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_trials: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<TrialOrder>,
    /// Pipeline suites: unmeasured warm-up trials before the first pair, 0–10 (default: the suite's
    /// `defaults.warm_up`, else one on this host and none on a cluster). Never judged, never counted
    /// toward `max_trials`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_up: Option<u32>,
    /// Local pipeline trials: run on the host's shared CPUs, with no CPU set reserved for them (the old
    /// protocol, for comparison; by default a trial gets CPUs of its own where the host has one to spare).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared_cpus: bool,
    /// Pipeline suites: a same-code canary — `head` against itself (no `base`, no extra arms), judged as
    /// any A/B, counted in the suite's realised false-alarm rate, and then added to the noise profile.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub canary: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exemption: Option<JsonExemption>,
    /// Warp suites: this experiment's budgets instead of the suite's (recorded with it and in the audit log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budgets: Option<JsonBudgets>,
    /// Warp suites: this experiment's matrix instead of the suite's (a preset, then each field given), within
    /// the suite's `[warp.limits]`; kept with the experiment and in gate.md's Provenance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warp: Option<JsonWarpMatrix>,
    /// A calibration: `trials` same-code runs of `head` (one arm), whose spread becomes the suite's noise
    /// profile for this fingerprint.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub calibration: bool,
    /// A baseline run: `head` alone (one `baseline` arm), measured and not compared; later launches
    /// with the same fingerprint may reuse it as their control (pipeline suites).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub baseline: bool,
    /// Reuse a baseline run as the control instead of running one: its experiment id, or `"latest"`
    /// (the newest one that matches). Refused, with the field named, unless its fingerprint equals this
    /// launch's, its measurements are still complete, and it is younger than the suite's maximum age.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub reuse_baseline: Option<ReuseBaseline>,
    /// Pipeline suites: the CPU change (percent) the plan's "how many trials?" is sized for; default the
    /// suite's CPU margin. Only the preview reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detect_pct: Option<f64>,
    /// Pipeline suites with `trials = "auto"`: the one stage whose CPU decides when the experiment stops,
    /// tested at the whole CPU error rate (a bisection's step); the other stages are reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
    /// With `focus`: the bad end's change (percent) of the focus stage's CPU from the good end — a
    /// bisection's probe, decided by which end it resembles (unmoved when its confidence sequence excludes
    /// the bad end's level, moved when it excludes the good end's) instead of against its margin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus_bad_end_pct: Option<f64>,
    /// Pipeline suites: this experiment's CPU margin (percent) instead of the suite's `[judge]` one — the
    /// smallest CPU change worth a verdict (a bisection's step: half the change between its ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_margin_pct: Option<f64>,
    /// Pipeline suites: X of the third answer ("no regression of X % or more") for this experiment instead
    /// of the suite's `[judge] no_regression_pct` or the plan's; at least the CPU margin, at most the cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_regression_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
}

/// Which baseline run a launch reuses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ReuseBaseline {
    Experiment(i64),
    Latest(LatestWord),
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LatestWord {
    Latest,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JsonExtraArm {
    pub name: String,
    #[serde(rename = "ref")]
    pub git_ref: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<JsonConfigDiff>,
}

/// How a configuration-only arm differs from its ref.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum JsonConfigDiff {
    /// A commit applied to the arm's worktree.
    Commit(String),
    /// A patch (unified diff) applied to the arm's worktree.
    Patch(String),
    /// Settings outside the fingerprint, passed to the arm's environment.
    Overrides(BTreeMap<String, String>),
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JsonBudgets {
    /// FAIL beyond this relative change, in %.
    pub fail_pct: f64,
    /// WARN beyond this relative change, in %.
    pub warn_pct: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JsonExemption {
    pub reason: String,
}

/// A warp launch's matrix: what to run and for how long. Every field is optional; those left out keep the
/// preset's value (or the suite's). A suite's `smoke` preset is written in the same shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JsonWarpMatrix {
    /// `smoke`: the suite's quick preset (its `[warp.smoke]`, else its shortest allowed matrix);
    /// `full`: the suite's own matrix (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<WarpPreset>,
    /// A subset of the suite's workloads, e.g. ["put-4KiB", "get-4KiB"].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workloads: Option<Vec<String>>,
    /// A subset of the suite's drive-sync values: ["on"], ["off"] or both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drive_sync: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<u32>,
    /// The measured window of each round, e.g. "5s".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// Adaptive rounds on or off for this launch (default: the suite's `adaptive_rounds`, on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive_rounds: Option<bool>,
    /// The most rounds a cell takes an arm with adaptive rounds (default: 18, or three times the planned if more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rounds: Option<u32>,
}

impl JsonWarpMatrix {
    /// Nothing asked: the suite's own matrix.
    pub fn is_empty(&self) -> bool {
        *self == JsonWarpMatrix::default()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum WarpPreset {
    /// The suite's quick matrix: a first answer in minutes.
    Smoke,
    /// The suite's own matrix (e.g. for the nightly).
    Full,
}

impl WarpPreset {
    pub fn as_str(self) -> &'static str {
        match self {
            WarpPreset::Smoke => "smoke",
            WarpPreset::Full => "full",
        }
    }
}

#[cfg(test)]
mod trials_tests {
    use super::*;

    #[test]
    fn trials_read_as_a_number_or_auto() {
        let l: JsonLaunch = serde_json::from_str(r#"{"suite": "s", "head": "h", "trials": 4}"#).unwrap();
        assert_eq!(l.trials, Some(JsonTrials::Fixed(4)));
        let l: JsonLaunch = serde_json::from_str(r#"{"suite": "s", "head": "h", "trials": "auto", "max_trials": 12}"#).unwrap();
        assert_eq!((l.trials, l.max_trials), (Some(JsonTrials::AUTO), Some(12)));
        assert!(serde_json::from_str::<JsonLaunch>(r#"{"suite": "s", "head": "h", "trials": "many"}"#).is_err());
        assert_eq!(serde_json::to_value(JsonTrials::AUTO).unwrap(), "auto");
        assert_eq!(serde_json::to_value(JsonTrials::Fixed(3)).unwrap(), 3);
        assert_eq!(" Auto ".parse::<JsonTrials>(), Ok(JsonTrials::AUTO));
        assert_eq!("7".parse::<JsonTrials>(), Ok(JsonTrials::Fixed(7)));
        assert!("seven".parse::<JsonTrials>().unwrap_err().contains("\"seven\""));
    }
}
