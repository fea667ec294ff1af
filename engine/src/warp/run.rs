//! The trial queue's side of a warp experiment: run one phase (tracked, so a cancel stops it), and once
//! every phase ended, judge the matrix and keep gate.md with the experiment's files.

use crate::launch::request::PlannedArm;
use crate::launch::submit::StoredPlan;
use crate::queue::runner::{trial_files, Launch, Outcome};
use crate::queue::execution::{launch_of, Stop};
use crate::warp::phase::{self, phase_file, Phase, PhaseRecord};
use crate::warp::plan::sync_label;
use crate::warp::verdict::{judge, PhaseData};
use crate::Engine;
use judge::warp::noise::WarpNoiseProfile;
use judge::ExperimentStatus;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use store::trials::Trial;

/// Runs one warp phase (tracked, so a cancel stops it) and returns its outcome, as a pipeline trial's run does.
pub async fn run_phase(engine: &Engine, trial: &Trial, plan: &StoredPlan, arm: &PlannedArm) -> Outcome {
    let l = launch_of(engine);
    let cancelled = Arc::new(AtomicBool::new(false));
    engine.queue.track(trial, Stop::Phase(cancelled.clone(), Arc::new(std::sync::atomic::AtomicU32::new(0))));
    let (log, _) = crate::queue::runner::trial_files(&engine.data_dir, trial);
    let run_tag = crate::queue::runner::run_tag(trial);
    let _ = engine.store.set_trial_job(trial.id, &run_tag, "", &engine.queue.worker, &log.to_string_lossy()).await;
    let (pid_tx, pid_rx) = tokio::sync::oneshot::channel::<u32>();
    let record = async {
        if let Ok(pid) = pid_rx.await {
            engine.queue.set_phase_pid(trial, pid);
            if let Err(e) = engine
                .store
                .set_trial_job(trial.id, &run_tag, &crate::queue::process::job_id(pid), &engine.queue.worker, &log.to_string_lossy())
                .await
            {
                tracing::warn!(error = %e, "cannot record the phase's server");
            }
        }
    };
    let (outcome, ()) = tokio::join!(
        run_one_phase(&l, trial, plan, arm, &cancelled, move |pid| {
            let _ = pid_tx.send(pid);
        }),
        record
    );
    engine.queue.untrack(trial);
    outcome
}

/// Runs the phase; `on_server` gets the server's pid (the trial's job id) once it started.
async fn run_one_phase(
    l: &Launch<'_>,
    trial: &Trial,
    plan: &StoredPlan,
    arm: &PlannedArm,
    cancelled: &AtomicBool,
    on_server: impl FnOnce(u32),
) -> Outcome {
    let Some(spec) = plan.suite.warp.as_ref() else { return Outcome::launcher_error("the suite has no [warp] table".into()) };
    let Some((drive_sync, leg, only)) = trial.cell.as_deref().and_then(crate::warp::plan::parse_phase) else {
        return Outcome::launcher_error(format!("trial cell {:?} is not a warp phase", trial.cell));
    };
    let only: Option<Vec<String>> = only.map(|w| w.into_iter().map(str::to_string).collect());
    let (log_path, _) = trial_files(l.data_dir, trial);
    if let Some(dir) = log_path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let log = match std::fs::File::create(&log_path) {
        Ok(f) => f,
        Err(e) => return Outcome::launcher_error(format!("cannot write the phase log: {e}")),
    };
    let added = only.as_ref().map(|w| format!(" — added by adaptive rounds for {}", w.join(", "))).unwrap_or_default();
    let mut p = Phase { l, trial, spec, log, cancelled, only };
    p.say(&format!("phase {leg} of arm {} at {} with drive sync {}{added}", arm.name, arm.sha, sync_label(drive_sync)));
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
        crate::warp::external::external(&mut p, plan, arm, drive_sync, &mut record).await
    } else {
        crate::warp::local::local(&mut p, plan, arm, drive_sync, &mut record, on_server).await
    };
    let _ = std::fs::write(phase_file(l.data_dir, trial, "phase.json"), serde_json::to_vec_pretty(&record).unwrap_or_default());
    p.say(&format!("phase ended: {} {}", outcome.state.as_str(), outcome.detail));
    outcome
}

/// What a warp noise profile is for: the matrix settings that shape a cell's noise (not its workloads:
/// the profile is per cell) and where it ran — this host's name, or the external endpoint.
pub fn profile_key(spec: &suite::warp::WarpSpec) -> serde_json::Value {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default();
    serde_json::json!({
        "warp": {
            "duration": spec.duration, "warmup": spec.warmup, "cooldown": spec.cooldown, "rounds": spec.rounds,
            "concurrency": spec.concurrency, "disks": spec.disks, "tool": format!("{:?}", spec.tool).to_lowercase(),
        },
        "where": spec.endpoint.clone().unwrap_or(host),
    })
}

/// What a warp experiment's phases say so far: its verdict (as `finish` would store it) and the noise
/// profile it was judged against, with that profile's key.
pub(crate) struct Judged {
    pub verdict: crate::warp::verdict::WarpVerdict,
    pub phases: Vec<PhaseData>,
    pub profile: Option<WarpNoiseProfile>,
    pub suite_id: Option<i64>,
    pub key: serde_json::Value,
    pub hash: String,
}

/// Judges the latest attempt of every phase (`trials`) against the suite's warp noise profile for these
/// matrix settings on this host (or endpoint), if it has one.
pub(crate) async fn judge_phases(engine: &Engine, experiment_id: i64, plan: &StoredPlan, trials: &[Trial]) -> Option<Judged> {
    let store = &engine.store;
    let spec = plan.suite.warp.as_ref()?;
    let arm_rows = store.arms(experiment_id).await.ok()?;
    let arm_name = |id: i64| arm_rows.iter().find(|a| a.0 == id).map(|a| a.1.clone()).unwrap_or_default();
    let latest = store::trials::latest(trials);
    let mut phases = Vec::new();
    for t in latest.values() {
        let Some((drive_sync, leg, only)) = t.cell.as_deref().and_then(crate::warp::plan::parse_phase) else { continue };
        let record: Option<PhaseRecord> =
            std::fs::read(phase::phase_file(&engine.data_dir, t, "phase.json")).ok().and_then(|b| serde_json::from_slice(&b).ok());
        phases.push(PhaseData {
            seq: t.seq,
            arm: arm_name(t.arm_id),
            leg: leg.to_string(),
            drive_sync,
            state: t.state,
            detail: t.detail.clone().unwrap_or_default(),
            rounds: store.warp_rounds(t.id).await.unwrap_or_default(),
            record,
            only: only.map(|w| w.into_iter().map(str::to_string).collect()),
        });
    }
    let arms: Vec<(String, String)> = plan.launch.arms.iter().map(|a| (a.name.clone(), a.sha.clone())).collect();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
    let key = profile_key(spec);
    let hash = crate::sha256_hex(serde_json::to_string(&key).unwrap_or_default().as_bytes());
    let suite_id = store.suite_by_name(&plan.suite.name).await.ok().map(|s| s.id);
    let stored = match suite_id {
        Some(id) => store.noise_profile(id, &hash).await.ok().flatten(),
        None => None,
    };
    let profile: Option<WarpNoiseProfile> = stored.as_ref().and_then(|p| serde_json::from_value(p.profile.clone()).ok());
    let verdict = judge(
        spec,
        &arms,
        &phases,
        plan.launch.exemption.as_deref(),
        plan.launch.warp_settings.as_ref(),
        judge::units::utc_rfc3339(now),
        profile.as_ref(),
    );
    Some(Judged { verdict, phases, profile, suite_id, key, hash })
}

/// Judges an ended warp experiment and stores the verdict, the gate report and gate.md.
pub async fn finish(engine: &Engine, experiment_id: i64, plan: &StoredPlan, trials: &[Trial]) {
    let store = &engine.store;
    let Some(Judged { verdict: mut v, profile, suite_id, key, hash, .. }) = judge_phases(engine, experiment_id, plan, trials).await else {
        return;
    };
    // An A/A (a treatment arm at the control's commit, unchanged): its cells calibrate the profile.
    let same: Vec<&str> =
        plan.launch.arms[1..].iter().filter(|a| a.sha == plan.launch.arms[0].sha && a.config.is_none()).map(|a| a.name.as_str()).collect();
    if let (Some(suite_id), false) = (suite_id, same.is_empty()) {
        let many = plan.launch.arms.len() > 2;
        let cells: Vec<_> =
            v.report.cells.iter().filter(|c| !many || same.iter().any(|arm| c.label.starts_with(&format!("{arm}:")))).cloned().collect();
        let mut grown = profile.clone().unwrap_or_default();
        grown.add_calibration(&cells);
        match store.upsert_noise_profile(suite_id, &hash, &key, &serde_json::to_value(&grown).unwrap_or_default(), grown.calibrations.into()).await {
            Ok(id) => v.reasons.push(format!(
                "same binary in every phase: its rounds went into warp noise profile #{id} of this suite ({} calibration{} for these matrix settings on this host); later runs judge against it",
                grown.calibrations,
                if grown.calibrations == 1 { "" } else { "s" }
            )),
            Err(e) => tracing::warn!(error = %e, experiment_id, "cannot keep the warp noise profile"),
        }
    }
    let dir = crate::experiment_dir(&engine.data_dir, experiment_id).join("reports");
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(dir.join("gate.md"), &v.gate_md)) {
        tracing::warn!(error = %e, experiment_id, "cannot write gate.md");
    }
    let report = serde_json::json!({"gate": v.report, "provenance": v.provenance, "gate_md": v.gate_md});
    match store.record_verdict(experiment_id, v.verdict, &v.reasons, &report, None).await {
        Ok(_) => tracing::info!(experiment_id, verdict = v.verdict.as_str(), "warp experiment judged"),
        Err(e) => {
            tracing::error!(error = %e, experiment_id, "cannot record the verdict");
            let _ = store.set_experiment_status(experiment_id, ExperimentStatus::Errored).await;
        }
    }
}
