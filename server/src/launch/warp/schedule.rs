//! The scheduler's side of a warp experiment: run one phase (tracked, so a cancel stops it), and once
//! every phase ended, judge the matrix and keep gate.md with the experiment's files.

use super::phase::{self, PhaseRecord};
use super::verdict::{judge, PhaseData};
use crate::launch::request::PlannedArm;
use crate::launch::scheduler::{apply, launch_of, Stop};
use crate::launch::submit::StoredPlan;
use crate::state::AppState;
use judge::ExperimentStatus;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use store::trials::Trial;

pub async fn run_phase(state: &AppState, trial: &Trial, plan: &StoredPlan, arm: &PlannedArm) {
    let l = launch_of(state);
    let cancelled = Arc::new(AtomicBool::new(false));
    state.launcher.track(trial, Stop::Phase(cancelled.clone(), Arc::new(std::sync::atomic::AtomicU32::new(0))));
    let (log, _) = crate::launch::runner::trial_files(&state.data_dir, trial);
    let run_tag = crate::launch::runner::run_tag(trial);
    let _ = state.store.set_trial_job(trial.id, &run_tag, "", &state.launcher.worker, &log.to_string_lossy()).await;
    let (pid_tx, pid_rx) = tokio::sync::oneshot::channel::<u32>();
    let record = async {
        if let Ok(pid) = pid_rx.await {
            state.launcher.set_phase_pid(trial, pid);
            if let Err(e) =
                state.store.set_trial_job(trial.id, &run_tag, &pid.to_string(), &state.launcher.worker, &log.to_string_lossy()).await
            {
                tracing::warn!(error = %e, "cannot record the phase's server");
            }
        }
    };
    let (outcome, ()) = tokio::join!(
        phase::run(&l, trial, plan, arm, &cancelled, move |pid| {
            let _ = pid_tx.send(pid);
        }),
        record
    );
    state.launcher.untrack(trial);
    apply(state, trial, outcome).await;
}

/// Judges an ended warp experiment and stores the verdict, the gate report and gate.md.
pub async fn finish(state: &AppState, experiment_id: i64, plan: &StoredPlan, trials: &[Trial]) {
    let store = &state.store;
    let Some(spec) = plan.suite.warp.as_ref() else { return };
    let Ok(arm_rows) = store.arms(experiment_id).await else { return };
    let arm_name = |id: i64| arm_rows.iter().find(|a| a.0 == id).map(|a| a.1.clone()).unwrap_or_default();
    let latest = crate::progress::latest(trials);
    let mut phases = Vec::new();
    for t in latest.values() {
        let Some((drive_sync, leg)) = t.cell.as_deref().and_then(super::plan::parse_cell) else { continue };
        let record: Option<PhaseRecord> =
            std::fs::read(phase::phase_file(&state.data_dir, t, "phase.json")).ok().and_then(|b| serde_json::from_slice(&b).ok());
        phases.push(PhaseData {
            seq: t.seq,
            arm: arm_name(t.arm_id),
            leg: leg.to_string(),
            drive_sync,
            state: t.state,
            detail: t.detail.clone().unwrap_or_default(),
            rounds: store.warp_rounds(t.id).await.unwrap_or_default(),
            record,
        });
    }
    let arms: Vec<(String, String)> = plan.launch.arms.iter().map(|a| (a.name.clone(), a.sha.clone())).collect();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
    let v = judge(spec, &arms, &phases, plan.launch.exemption.as_deref(), judge::units::utc_rfc3339(now));
    let dir = crate::downloads::experiment_dir(&state.data_dir, experiment_id).join("reports");
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
