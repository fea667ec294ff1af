//! An experiment as `GET /api/v1/experiments/{id}` answers it (and the page's JSON download): its summary,
//! arms, trials, reasons and the judge's report. The store reads its rows into these types; `arbiter
//! launch --wait` reads the answer back into them.

use judge::{ExperimentKind, ExperimentStatus, InfraReason, TrialState, Verdict};
use serde::{Deserialize, Serialize};

/// One line of the history page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentSummary {
    pub id: i64,
    pub kind: ExperimentKind,
    pub title: String,
    pub status: ExperimentStatus,
    pub verdict: Option<Verdict>,
    pub suite: Option<String>,
    pub base_ref: Option<String>,
    pub head_ref: Option<String>,
    pub launched_by: Option<String>,
    pub created_at: i64,
    pub finished_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    pub id: i64,
    pub experiment_id: i64,
    pub arm_id: i64,
    pub seq: i64,
    pub cell: Option<String>,
    pub repeat_index: i64,
    pub attempt: i64,
    pub state: TrialState,
    pub infra_reason: Option<InfraReason>,
    pub detail: Option<String>,
    pub claimed_by: Option<String>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    /// The launcher's job: the supervisor's pid (local) or the engine's job id (cluster).
    pub job_id: Option<String>,
    /// The state the cluster engine last reported for the job, as it words it.
    pub engine_state: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonArm {
    /// What a trial's `arm_id` refers to.
    pub id: i64,
    pub name: String,
    pub role: String,
    pub sha: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonExperiment {
    #[serde(flatten)]
    pub summary: ExperimentSummary,
    pub arms: Vec<JsonArm>,
    pub trials: Vec<Trial>,
    pub reasons: Vec<String>,
    /// The judge's full report (per arm and stage), once judged.
    pub report: Option<serde_json::Value>,
}
