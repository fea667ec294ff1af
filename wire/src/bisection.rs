//! `POST /api/v1/bisections` and `GET /api/v1/bisections/{id}`: a bisection request and the stored
//! bisection (its search, budget, outcome and culprit). The search itself is `judge::bisect`.

use judge::bisect::{BisectMetric, Outcome, Search};
use serde::{Deserialize, Serialize};

/// Start a bisection: the suite, the fingerprint, the good and bad ends (refs or SHAs; the range is the
/// first-parent line between them) and the metric that moved.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JsonBisectionRequest {
    pub suite: String,
    /// The last commit known good (a ref or SHA).
    pub good: String,
    /// The first commit known bad; the range is `good..bad` on bad's first-parent line.
    pub bad: String,
    /// Pipeline: the stage whose CPU moved (`cpu:STAGE` or `STAGE`); warp: `WORKLOAD/sync-on|sync-off:METRIC`.
    pub metric: String,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub fingerprint: serde_json::Map<String, serde_json::Value>,
    /// An experiment that already compared the good end (control) with the bad end (treatment) with this
    /// fingerprint, e.g. the regression the bisection starts from: it is the first step, not run again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment_id: Option<i64>,
    /// Experiments in all (default: the suite's `[bisect] max_steps`, or what the range needs plus 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Trials an arm of each step (adaptive: pairs are added while the step is undecided, up to this).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_trials: Option<u32>,
    /// Wall time of the whole bisection, in minutes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_minutes: Option<u32>,
    /// Probes at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel: Option<u32>,
    /// Pipeline suites: the smallest CPU change worth finding, in percent (default: the suite's CPU margin);
    /// once the ends are measured, a step holds its commit to half their change if that is more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin_pct: Option<f64>,
    /// Warp suites: each step's matrix settings (rounds, duration…) within the suite's limits; the step
    /// runs only the moved cell's workload and drive-sync value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warp: Option<crate::launch::JsonWarpMatrix>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// List the commits and the expected steps and trials; store nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
}

/// A bisection's budget, as it runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JsonBisectBudget {
    pub max_steps: u32,
    pub max_trials: u32,
    pub max_minutes: u32,
    pub parallel: u32,
}

/// The commit a bisection found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JsonCulprit {
    pub sha: String,
    pub subject: String,
    /// The message after its subject line.
    #[serde(default)]
    pub body: String,
    pub author: String,
    /// ISO 8601.
    pub date: String,
    /// `git show --stat`'s summary: "1 file changed, 1 insertion(+), 1 deletion(-)".
    pub stat: String,
    /// Per file: "datakit.py | 2 +-".
    #[serde(default)]
    pub files: Vec<String>,
    /// A merge commit: its second parent (the merged branch, which a next bisection could search).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<String>,
}

/// What a dry run (or the stored bisection) expects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JsonBisectPlan {
    /// Probing experiments (⌈log₂ n⌉ one at a time) and experiments in all (the ends unless reused, the
    /// probes, the confirmation).
    pub probes: u32,
    pub steps: u32,
    /// Trials an arm a step expects (its adaptive plan) and may use (the budget).
    pub trials_per_step: u32,
    pub max_trials_per_step: u32,
    /// Minutes a step is expected to take (from the suite's recent trials or its matrix), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minutes_per_step: Option<f64>,
    /// In words, for the form and the CLI.
    pub words: String,
}

/// The stored state of a bisection: written by the engine as it goes, read by the page and the API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JsonBisectionState {
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub metric: BisectMetric,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub search: Search,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub fingerprint: serde_json::Map<String, serde_json::Value>,
    pub budget: JsonBisectBudget,
    pub plan: JsonBisectPlan,
    /// Pipeline: the CPU margin the ends step is held to (a probe's: half the ends' change if more).
    #[serde(default)]
    pub margin_pct: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warp: Option<crate::launch::JsonWarpMatrix>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub outcome: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub culprit: Option<JsonCulprit>,
    /// What happened, oldest first: "step 2: probe 3f2a… launched as experiment 14".
    #[serde(default)]
    pub log: Vec<String>,
    pub title: String,
}

/// `GET /api/v1/bisections/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JsonBisection {
    pub id: i64,
    pub suite: String,
    /// running | finished | cancelled | errored
    pub status: String,
    pub good_sha: String,
    pub bad_sha: String,
    pub metric: String,
    pub created_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launched_by: Option<String>,
    pub url: String,
    pub state: JsonBisectionState,
}
