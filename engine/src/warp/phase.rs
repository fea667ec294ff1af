//! One warp phase (one arm × one drive-sync value): its log, its record for the provenance, the arm's
//! binary, and the hand-over to local mode (`local.rs`: Arbiter starts the server) or external mode
//! (`external.rs`: a deploy hook and an endpoint), which both end in the rounds (`rounds.rs`). The server
//! log and its startup environment (keys redacted) stay as the phase's artifacts.

use crate::launch::request::PlannedArm;
use crate::launch::submit::StoredPlan;
use crate::queue::runner::{trial_files, Launch, Outcome};
use crate::warp::binary::{ensure_binary, BinarySource};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use store::trials::Trial;
use suite::warp::WarpSpec;

/// What a phase records beside its rounds, for the provenance (`trial-{seq}-{attempt}.phase.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseRecord {
    pub arm: String,
    pub sha: String,
    pub leg: String,
    pub drive_sync: bool,
    pub endpoint: String,
    pub binary: Option<String>,
    pub binary_source: Option<BinarySource>,
    pub tool: String,
}

/// The phase's files next to its log: `.server.log`, `.server.env`, `.phase.json`, `.loads.jsonl`.
pub fn phase_file(data_dir: &Path, trial: &Trial, suffix: &str) -> PathBuf {
    let (log, _) = trial_files(data_dir, trial);
    log.with_extension(suffix)
}

pub(super) struct Phase<'a> {
    pub l: &'a Launch<'a>,
    pub trial: &'a Trial,
    pub spec: &'a WarpSpec,
    pub log: std::fs::File,
    pub cancelled: &'a AtomicBool,
    /// A phase added by adaptive rounds runs only these workloads (`None`: every one of the matrix).
    pub only: Option<Vec<String>>,
}

impl Phase<'_> {
    pub fn say(&mut self, line: &str) {
        let _ = writeln!(self.log, "[arbiter] {line}");
    }
}

pub(super) async fn binary_for(
    p: &mut Phase<'_>,
    plan: &StoredPlan,
    arm: &PlannedArm,
    record: &mut PhaseRecord,
) -> Result<Option<PathBuf>, Outcome> {
    let warp = plan.suite.warp.as_ref().expect("checked by the caller");
    if warp.binaries.is_empty() && warp.build.is_empty() {
        return Ok(None);
    }
    let scratch = format!("trial-{}-{}-build", p.trial.id, p.trial.attempt);
    match ensure_binary(p.l, &scratch, Path::new(&plan.launch.repo_dir), p.trial.experiment_id, &plan.suite, arm, &mut p.log).await {
        Ok((path, source)) => {
            p.say(&format!("binary: {} — {}", path.display(), source.describe()));
            record.binary = Some(path.to_string_lossy().into_owned());
            record.binary_source = Some(source);
            Ok(Some(path))
        }
        Err(e) if e.contains("prebuilt") || e.contains("no trial sandbox") => Err(Outcome::launcher_error(e)),
        Err(e) => Err(Outcome::failed(e)),
    }
}
