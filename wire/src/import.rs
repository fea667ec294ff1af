//! `POST /api/v1/imports`: judge measurements taken elsewhere — a pipeline A/B's `zephyr.stage` rows (or
//! its execution ids in this server's finelog), or a warp matrix's compare CSVs or round files. The
//! import page and `arbiter import` send it; the server reads it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JsonImport {
    /// `pipeline` or `warp`.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub kind: judge::ExperimentKind,
    pub title: String,
    /// File it under this suite (same kind): it then joins the suite's trends.
    #[serde(default)]
    pub suite: Option<String>,
    /// When it was measured, UTC (`2026-11-30` or `2026-11-30T03:15:00Z`); default: now.
    #[serde(default)]
    pub measured_at: Option<String>,
    #[serde(default)]
    pub control_ref: Option<String>,
    #[serde(default)]
    pub treatment_ref: Option<String>,
    #[serde(default)]
    pub control_sha: Option<String>,
    #[serde(default)]
    pub treatment_sha: Option<String>,
    #[serde(default)]
    pub rows: Option<String>,
    /// Read the trials' rows from this server's finelog by their execution ids (instead of `rows`).
    #[serde(default)]
    pub finelog: bool,
    #[serde(default)]
    pub control: Vec<String>,
    #[serde(default)]
    pub treatment: Vec<String>,
    #[serde(default)]
    pub worker_ram: Option<String>,
    #[serde(default)]
    pub compare_csv: Vec<JsonCompareCsv>,
    /// Warp cells from the driver's round files (round_results.csv of each phase).
    #[serde(default)]
    pub rounds: Vec<JsonRounds>,
    #[serde(default)]
    pub fail_pct: Option<f64>,
    #[serde(default)]
    pub warn_pct: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JsonRounds {
    pub label: String,
    pub baseline: String,
    pub candidate: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JsonCompareCsv {
    pub label: String,
    pub text: String,
}
