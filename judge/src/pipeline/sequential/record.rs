//! What a sequential judgement records (the report's `sequential`): its unit, every metric's decision and
//! when it was reached, and every look. Apart from the design's arithmetic, so the report can hold it
//! without depending on the design.

use crate::pipeline::family::MetricOutcome;
use serde::{Deserialize, Serialize};

/// What a metric is, at a look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The change is detected (and not negligible).
    Different,
    /// Inside the margin: flat, or a detected change too small to matter.
    Equivalent,
    /// Undecided: the next pair is worth running.
    Continue,
    /// Not different, not inside the margin, but the sequence's upper side lies below X: "no regression of
    /// X % or more" (method 3's futility stop).
    NoRegression,
}

/// What the design judges in: pairs (C T), or ABBA blocks (C T T C, judged as one unit each: the two
/// controls' rows summed against the two treatments', which cancels a linear drift within the block).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    #[default]
    Pair,
    AbbaBlock,
}

impl Unit {
    pub fn word(self) -> &'static str {
        match self {
            Unit::Pair => "pair",
            Unit::AbbaBlock => "ABBA block",
        }
    }
}

/// One metric's course in a sequential judgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequentialMetric {
    pub arm: String,
    pub stage: String,
    /// "cpu" or "elapsed".
    pub metric: String,
    pub decision: Decision,
    pub outcome: MetricOutcome,
    /// The unit (1-based) after which it was decided; absent while it continues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_after: Option<usize>,
    /// Its intervals look by look, up to the look that decided it (or the last one): what the page's
    /// pair-by-pair chart draws against the margin band.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub course: Vec<CoursePoint>,
}

/// A metric at one look: the estimate and the two confidence sequences the decisions are read from —
/// *different* once `interval_pct` excludes 0, *equivalent* once `equivalence_interval_pct` lies inside
/// ±`margin_pct`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CoursePoint {
    /// Units (pairs or ABBA blocks) seen at this look.
    pub pairs: usize,
    pub estimate_pct: f64,
    /// The sequence at the metric's share of the family's error rate.
    pub interval_pct: [f64; 2],
    /// The sequence at the equivalence level.
    pub equivalence_interval_pct: [f64; 2],
    pub margin_pct: f64,
}

/// One look: after how many units, and how many metrics were still undecided.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LookRecord {
    pub pairs: usize,
    pub undecided_cpu: usize,
    pub undecided_elapsed: usize,
    pub stop: bool,
}

/// How the sequential design reached its verdict (the report's `sequential`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequentialRecord {
    pub unit: Unit,
    pub min_pairs: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pairs: Option<usize>,
    /// Units given, and used: the look it stopped at (the report is that look's).
    pub pairs_given: usize,
    pub pairs_used: usize,
    /// The stopping rule ended it (false: it ran out of units or budget with CPU undecided).
    pub stopped: bool,
    pub stop_reason: String,
    /// The mixture's scales and weights.
    pub mixture: Vec<[f64; 2]>,
    pub metrics: Vec<SequentialMetric>,
    pub looks: Vec<LookRecord>,
    /// The one stage whose CPU decides when it stops (a bisection's step): tested at the whole CPU error
    /// rate; the other stages are reported and never steer it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
}
