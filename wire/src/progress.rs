//! An experiment's live progress on the wire: the data of each `progress` event of
//! `GET /experiments/{id}/events` (server-sent), which the experiment page's island redraws without a
//! reload. The server builds it (`server/src/progress/mod.rs`), the page reads it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One attempt of a trial as the page's trials table and timeline show it (also in the page's first render).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonTrialRow {
    pub seq: i64,
    pub arm: String,
    pub colour: String,
    /// The warp phase's cell (`sync-on/B1`), when there is one.
    pub cell: Option<String>,
    pub attempt: i64,
    pub state: String,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    /// The launcher's job: a local supervisor's pid or a cluster engine's job id, with the engine's state.
    pub job: String,
    /// The infrastructure reason or the failure's detail.
    pub note: String,
    /// Its pair (the repeat, from 0) and its position in it as it ran (0 first), when known.
    #[serde(default)]
    pub pair: i64,
    #[serde(default)]
    pub position: Option<i64>,
    /// A warm-up trial: run first, never judged.
    #[serde(default)]
    pub warm_up: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRunning {
    pub seq: i64,
    pub arm: String,
    pub cell: Option<String>,
    /// 1 for a trial's first run, 2 for its retry.
    pub attempt: i64,
    pub job_id: Option<String>,
    pub engine_state: Option<String>,
    pub started_at: Option<i64>,
    /// The last lines of the trial's log (at most 20 lines, 4 KiB).
    pub log_tail: String,
}

/// One progress event's data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonProgress {
    pub status: String,
    /// Planned trials (one per position; a retry is the same trial again).
    pub total: usize,
    /// Positions whose latest attempt has ended.
    pub ended: usize,
    /// Every attempt by state (`queued`, `running`, `succeeded`, `failed`, `infra_failed`, `cancelled`).
    pub states: BTreeMap<String, usize>,
    pub elapsed_s: Option<f64>,
    /// From the mean duration of the ended trials; unknown before the first one ends.
    pub remaining_s: Option<f64>,
    /// The most of its trials in flight at one moment so far (trials on a cluster run side by side).
    #[serde(default)]
    pub at_once: usize,
    /// Before its first trial starts: other experiments' trials queued or running where its trials will run.
    #[serde(default)]
    pub queued_ahead: usize,
    pub running: Vec<JsonRunning>,
    pub done: bool,
    /// Every attempt as the page's trials table shows it.
    #[serde(default)]
    pub trials: Vec<JsonTrialRow>,
    /// The server's clock at this update (ms): a running trial's bar reaches it.
    #[serde(default)]
    pub now_ms: Option<i64>,
    /// An adaptive experiment (trials = "auto"): its pairs and its latest look.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<JsonAdaptiveProgress>,
}

/// An adaptive experiment's progress: pairs done against the pairs the design expects and the budget, and
/// its latest look — each CPU metric's interval pair by pair against the margin (a chart) and in words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonAdaptiveProgress {
    /// Pairs whose trials have all ended, from the first on: what the design looks at.
    pub settled: usize,
    /// Pairs planned so far (it adds one while undecided).
    pub planned: usize,
    /// The pairs the fixed design would need for the margin (the launch preview's figure).
    pub expected: Option<u32>,
    /// The budget: pairs at most.
    pub max: u32,
    /// Pairs judged at the latest look (0 before the first, after two pairs).
    pub look: usize,
    /// The latest look in words: what is undecided, or why it stopped.
    pub status: String,
    /// The latest look's chart (SVG), drawn on the server; sent again only when the look changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart_svg: Option<String>,
}

