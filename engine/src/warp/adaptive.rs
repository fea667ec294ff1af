//! Adaptive rounds of a warp experiment: once every planned phase has ended, the matrix is judged; a cell
//! whose noise-aware reading more phases could change (`judge::warp::adaptive::cells_to_extend`: a row
//! INCONCLUSIVE, or WARN with the fail budget inside its interval) gets another pair of phases — one an
//! arm, running only the unsure cells' workloads, the suite's rounds each — until no cell is unsure or
//! each stays within the cap of rounds an arm (`max_rounds`, default 18 or three times the planned if more). Clear cells
//! stop. The rules, in one place (the choice of cells is `cells_to_extend`'s):
//!
//! * **Which cells.** A cell with an unsure row that more phases could decide: at the cap, with the
//!   estimate where it is, the interval would clear the budget (`Reach::decidable`). A same-code cell 7 %
//!   off with a ±30 % interval is left INCONCLUSIVE rather than run to the cap for nothing. None once the
//!   matrix FAILs: a decided regression is the answer, more phases would only refine other cells.
//!
//! * **More phases, not more rounds in a phase.** Rounds in one phase share a server and the disk's
//!   moment; the noise of a cell is its phases' (`judge::warp::noise`), so another phase an arm is what
//!   narrows an interval. Each added pair is mirrored against the last phase of its drive-sync value (after
//!   A1 B1 comes B2 A2; after A1 B1 B2 A2 comes A3 B3), so a trend over time cancels as in ABBA.
//! * **When.** Only with a calibrated suite (a warp noise profile for these matrix settings on this host):
//!   until then upstream's rule is the verdict, and more phases would only move its medians. Only with two
//!   arms, every planned phase measured (a failed phase is a verdict already; a lost one is re-run by the
//!   queue), the experiment not cancelled, the suite's `adaptive_rounds` on (a launch may turn it off).
//! * **Once.** The added phases are one repeat more (`Store::add_repeats`, a compare-and-set on the
//!   planned repeats), so of two callers one adds them; everything is read back from the store, so a
//!   restart resumes where it was.

use crate::launch::submit::StoredPlan;
use crate::warp::plan::{cell_with, sync_label};
use crate::warp::run::judge_phases;
use crate::Engine;
use judge::warp::adaptive::cells_to_extend;
use judge::{ExperimentStatus, TrialState};
use std::collections::BTreeMap;
use store::trials::{InsertTrial, Trial};

/// After every phase ended: adds the next pair of phases for the unsure cells; true when phases were
/// added (or another caller added them first) — then the experiment is not judged yet.
pub(crate) async fn step(engine: &Engine, experiment_id: i64, trials: &[Trial], plan: &StoredPlan) -> bool {
    let Some(spec) = plan.suite.warp.as_ref() else { return false };
    if !spec.adaptive_rounds || plan.launch.arms.len() != 2 {
        return false;
    }
    let store = &engine.store;
    if store.experiment_summary(experiment_id).await.is_ok_and(|s| s.status == ExperimentStatus::Cancelled) {
        return false;
    }
    let latest = store::trials::latest(trials);
    if latest.values().any(|t| t.state != TrialState::Succeeded) {
        return false;
    }
    let Some(judged) = judge_phases(engine, experiment_id, plan, trials).await else { return false };
    if judged.profile.as_ref().is_none_or(|p| p.calibrations == 0) {
        return false;
    }
    let report = &judged.verdict.report;
    let Some(noise) = report.noise.as_ref() else { return false };
    let extend = cells_to_extend(noise, &report.cells, spec.rounds, spec.round_cap());
    // "put-4KiB/sync-on" → the workloads to run again per drive-sync value.
    let mut by_sync: BTreeMap<bool, Vec<String>> = BTreeMap::new();
    for label in &extend {
        if let Some((w, sync)) = label.rsplit_once('/') {
            by_sync.entry(sync == "sync-on").or_default().push(w.to_string());
        }
    }
    if by_sync.is_empty() {
        return false;
    }
    let arm_ids: Vec<i64> = match store.arms(experiment_id).await {
        Ok(a) => a.into_iter().map(|a| a.0).collect(),
        Err(e) => {
            tracing::warn!(experiment_id, error = %e, "cannot read the arms; adding no phase");
            return false;
        }
    };
    if arm_ids.len() != 2 {
        return false;
    }
    let planned = trials.iter().map(|t| t.repeat_index + 1).max().unwrap_or(0);
    let mut seq = trials.iter().map(|t| t.seq + 1).max().unwrap_or(0);
    let mut new = Vec::new();
    for sync in spec.sync_values() {
        let Some(workloads) = by_sync.get(&sync) else { continue };
        let mut of_sync: Vec<&crate::warp::verdict::PhaseData> = judged.phases.iter().filter(|p| p.drive_sync == sync).collect();
        of_sync.sort_by_key(|p| p.seq);
        // Mirrored: the arm that ran last runs first.
        let last = of_sync.last().map(|p| usize::from(p.arm != plan.launch.arms[0].name)).unwrap_or(0);
        for arm in [last, 1 - last] {
            let runs = of_sync.iter().filter(|p| p.arm == plan.launch.arms[arm].name).count();
            let leg = format!("{}{}", (b'A' + arm as u8) as char, runs + 1);
            new.push(InsertTrial { arm_id: arm_ids[arm], seq, cell: Some(cell_with(sync, &leg, workloads)), repeat_index: planned });
            seq += 1;
        }
    }
    match store.add_repeats(experiment_id, planned, planned + 1, &new).await {
        Ok(true) => {
            let what: Vec<String> = by_sync.iter().map(|(s, w)| format!("{} ({})", w.join(", "), sync_label(*s))).collect();
            tracing::info!(
                experiment_id,
                cells = extend.len(),
                phases = new.len(),
                "adaptive rounds: another pair of phases for {}",
                what.join("; ")
            );
            engine.queue.notify.notify_one();
            true
        }
        Ok(false) => true,
        Err(e) => {
            tracing::error!(experiment_id, error = %e, "cannot add phases");
            false
        }
    }
}
