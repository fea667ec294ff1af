//! One warp phase (one arm × one drive-sync value): its log, its record for the provenance, the arm's
//! binary, and the hand-over to local mode (`local.rs`: Arbiter starts the server) or external mode
//! (`external.rs`: a deploy hook and an endpoint), which both end in the rounds (`rounds.rs`). The server
//! log and its startup environment (keys redacted) stay as the phase's artifacts.

use super::binary::{ensure_binary, BinarySource};
use super::plan::sync_label;
use crate::launch::request::PlannedArm;
use crate::launch::runner::{trial_files, Launch, Outcome};
use crate::launch::submit::StoredPlan;
use crate::suites::warp::WarpSpec;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use store::trials::Trial;

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
}

impl Phase<'_> {
    pub fn say(&mut self, line: &str) {
        let _ = writeln!(self.log, "[arbiter] {line}");
    }
}

/// Runs the phase; `on_server` gets the server's pid (the trial's job id) once it started.
pub async fn run(
    l: &Launch<'_>,
    trial: &Trial,
    plan: &StoredPlan,
    arm: &PlannedArm,
    cancelled: &AtomicBool,
    on_server: impl FnOnce(u32),
) -> Outcome {
    let Some(spec) = plan.suite.warp.as_ref() else { return Outcome::launcher_error("the suite has no [warp] table".into()) };
    let Some((drive_sync, leg)) = trial.cell.as_deref().and_then(super::plan::parse_cell) else {
        return Outcome::launcher_error(format!("trial cell {:?} is not a warp phase", trial.cell));
    };
    let (log_path, _) = trial_files(l.data_dir, trial);
    if let Some(dir) = log_path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let log = match std::fs::File::create(&log_path) {
        Ok(f) => f,
        Err(e) => return Outcome::launcher_error(format!("cannot write the phase log: {e}")),
    };
    let mut p = Phase { l, trial, spec, log, cancelled };
    p.say(&format!("phase {leg} of arm {} at {} with drive sync {}", arm.name, arm.sha, sync_label(drive_sync)));
    let mut record = PhaseRecord {
        arm: arm.name.clone(),
        sha: arm.sha.clone(),
        leg: leg.to_string(),
        drive_sync,
        endpoint: String::new(),
        binary: None,
        binary_source: None,
        tool: format!("{:?}", spec.tool).to_lowercase(),
    };
    let outcome = if spec.external() {
        super::external::external(&mut p, plan, arm, drive_sync, &mut record).await
    } else {
        super::local::local(&mut p, plan, arm, drive_sync, &mut record, on_server).await
    };
    let _ = std::fs::write(phase_file(l.data_dir, trial, "phase.json"), serde_json::to_vec_pretty(&record).unwrap_or_default());
    p.say(&format!("phase ended: {} {}", outcome.state.as_str(), outcome.detail));
    outcome
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
    match ensure_binary(p.l.data_dir, Path::new(&plan.launch.repo_dir), p.trial.experiment_id, &plan.suite, arm, &mut p.log).await {
        Ok((path, source)) => {
            p.say(&format!("binary: {} — {}", path.display(), source.describe()));
            record.binary = Some(path.to_string_lossy().into_owned());
            record.binary_source = Some(source);
            Ok(Some(path))
        }
        Err(e) if e.contains("prebuilt") => Err(Outcome::launcher_error(e)),
        Err(e) => Err(Outcome::failed(e)),
    }
}
