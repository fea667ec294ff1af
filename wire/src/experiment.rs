//! An experiment as `GET /api/v1/experiments/{id}` answers it (and the page's JSON download): its summary,
//! arms, trials, reasons and the judge's report. The store reads its rows into these types; `arbiter
//! launch --wait` reads the answer back into them.

use judge::{ExperimentKind, ExperimentStatus, InfraReason, TrialRole, TrialState, Verdict};
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
    /// The latest verdict's news after its word: "+27.5 % CPU in stage1-Map → Scatter", "cheaper: −49.1 %
    /// CPU in total", "upstream rule: FAIL; within noise: 24 of 46 breaching rows inconclusive".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub news: Option<String>,
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
    /// Its position in its pair as it ran: 0 when it started first, 1 second, … (`store::claim`'s
    /// `pair_positions`). None when it has not started, ran alone in its repeat, or was imported (no
    /// known order).
    #[serde(default)]
    pub position: Option<i64>,
    /// `measured` (judged) or `warm_up` (run first, never judged; `repeat_index` −1).
    #[serde(default)]
    pub role: TrialRole,
    /// What the host was doing while a local trial ran (none for a cluster job, an import, or a trial
    /// that ended before its supervisor could say).
    #[serde(default)]
    pub host: Option<JsonHostFacts>,
}

/// The host a local trial ran on and what else ran meanwhile, read by `arbiter supervise` from /proc and
/// the trial's control group at its start, every second, and at its end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JsonHostFacts {
    /// `uname -r`.
    pub kernel: String,
    /// /proc/cpuinfo's first `model name`.
    pub cpu_model: String,
    /// CPUs online.
    pub cpus_online: u32,
    /// Seconds the trial ran.
    pub wall_secs: f64,
    /// The trial's own CPU-seconds from its control group: a cross-check of its rows' `cpu_time_total`.
    #[serde(default)]
    pub trial_cpu_secs: Option<f64>,
    /// CPU-seconds every other process on the host used meanwhile (the host's busy time less the trial's).
    #[serde(default)]
    pub others_cpu_secs: Option<f64>,
    /// The host's CPU time the hypervisor took for other guests, percent of all CPU time meanwhile.
    pub steal_pct: f64,
    /// The 1-minute load average: the highest and the mean of the samples taken each second.
    pub load_max: f64,
    pub load_mean: f64,
    /// Time the kernel throttled the trial's group (cgroup v2 `cpu.stat`), where the host reports it.
    #[serde(default)]
    pub throttled_secs: Option<f64>,
    /// The CPUs reserved for the trial (its control group's CPU set, `1` or `2-3`), Arbiter's own
    /// processes kept off them while it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved_cpus: Option<String>,
    /// Why the trial ran on the host's shared CPUs, where no CPU set was reserved for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_cpus_why: Option<String>,
}

impl JsonHostFacts {
    /// Other processes using this many CPUs on average over the trial is heavy interference.
    pub const HEAVY_OTHERS_CPUS: f64 = 0.5;
    /// A hypervisor stealing this share of CPU time (percent) is heavy interference.
    pub const HEAVY_STEAL_PCT: f64 = 5.0;

    /// The CPUs other processes used on average while the trial ran.
    pub fn others_cpus(&self) -> Option<f64> {
        self.others_cpu_secs.filter(|_| self.wall_secs > 0.0).map(|c| c / self.wall_secs)
    }

    /// Why the trial ran beside heavy load, in words, if it did ([`Self::HEAVY_OTHERS_CPUS`],
    /// [`Self::HEAVY_STEAL_PCT`]).
    pub fn heavy_load(&self) -> Option<String> {
        let mut why = Vec::new();
        if let Some(others) = self.others_cpus().filter(|c| *c >= Self::HEAVY_OTHERS_CPUS) {
            why.push(format!("other processes used {others:.1} CPUs on average"));
        }
        if self.steal_pct >= Self::HEAVY_STEAL_PCT {
            why.push(format!("the hypervisor took {:.0} % of CPU time", self.steal_pct));
        }
        (!why.is_empty()).then(|| why.join(", "))
    }
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

#[cfg(test)]
mod host_tests {
    use super::JsonHostFacts;

    #[test]
    fn heavy_load_is_other_processes_at_half_a_cpu_or_steal_at_five_percent() {
        let quiet = JsonHostFacts { wall_secs: 10.0, others_cpu_secs: Some(4.9), steal_pct: 4.9, ..Default::default() };
        assert_eq!(quiet.heavy_load(), None);
        let busy = JsonHostFacts { others_cpu_secs: Some(5.0), ..quiet.clone() };
        assert_eq!(busy.heavy_load().as_deref(), Some("other processes used 0.5 CPUs on average"));
        let stolen = JsonHostFacts { steal_pct: 12.0, ..quiet.clone() };
        assert_eq!(stolen.heavy_load().as_deref(), Some("the hypervisor took 12 % of CPU time"));
        let unknown = JsonHostFacts { others_cpu_secs: None, wall_secs: 0.0, ..quiet };
        assert_eq!(unknown.heavy_load(), None, "no accounting, no claim");
    }
}
