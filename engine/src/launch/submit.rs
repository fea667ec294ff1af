//! Storing a resolved launch: the experiment, its arms and every planned trial (queued) go into the
//! store before anything runs; the trial queue takes it from there.

use crate::launch::request::JsonLaunchPlan;
use serde::{Deserialize, Serialize};
use store::experiments::{ArmRole, InsertArm, InsertExperiment};
use store::trials::InsertTrial;
use store::{Store, StoreError};
use suite::definition::SuiteDefinition;

/// What an experiment's `plan` column holds: the suite as it was at launch (a later edit of the suite
/// file does not change a running experiment) and the resolved launch. Trials render their argv when
/// they run (each attempt gets a fresh run tag), so the dry-run argv is not kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredPlan {
    pub suite: SuiteDefinition,
    pub launch: JsonLaunchPlan,
}

impl StoredPlan {
    /// The worker RAM in bytes: the memory guardrail.
    pub fn worker_ram(&self) -> Option<f64> {
        self.suite.resources.ram_bytes().ok().map(|b| b as f64)
    }

    /// The key of the noise profile for this suite and fingerprint: SHA-256 of the fingerprint's JSON
    /// (its fields are sorted, so equal fingerprints hash alike).
    pub fn fingerprint_hash(&self) -> String {
        fingerprint_hash(&self.launch.fingerprint)
    }
}

/// SHA-256 of a fingerprint's JSON: the key of its noise profile.
pub fn fingerprint_hash(fingerprint: &suite::definition::Fingerprint) -> String {
    crate::sha256_hex(serde_json::to_string(fingerprint).unwrap_or_default().as_bytes())
}

/// Where a launch's trials run and how many at once (`store::claim` has the rules): a cluster suite on its
/// engine (named by a hash of its profile, environment and submit template) with its `max_parallel`, an
/// external warp endpoint one phase at a time, anything else in this host's one measured slot.
pub fn lane(suite: &SuiteDefinition) -> store::claim::Lane {
    if suite.kind == judge::ExperimentKind::Warp {
        // Warp phases run on this host (the measured slot) or against one external endpoint.
        return match suite.warp.as_ref().and_then(|w| w.endpoint.as_ref()) {
            Some(endpoint) => store::claim::Lane { key: format!("endpoint:{endpoint}"), cap: 1, canary: false },
            None => store::claim::Lane::local(),
        };
    }
    match (&suite.launcher, &suite.cluster) {
        (suite::definition::Launcher::Cluster, Some(cluster)) => store::claim::Lane {
            key: format!("engine:{}", &crate::sha256_hex(cluster.engine_identity().as_bytes())[..16]),
            cap: i64::from(cluster.max_parallel()),
            // The plan's own order is balanced (`plan::repeat_order`): a pair is submitted in it, and
            // its rank is recorded as each trial's position.
            canary: false,
        },
        _ => store::claim::Lane::local(),
    }
}

/// Stores the launch and its queued trials; returns the experiment id.
pub async fn store_launch(
    store: &Store,
    suite_id: i64,
    suite: &SuiteDefinition,
    launch: &JsonLaunchPlan,
    by: Option<i64>,
) -> Result<i64, StoreError> {
    let stored = StoredPlan { suite: suite.clone(), launch: JsonLaunchPlan { trials: Vec::new(), ..launch.clone() } };
    let new = InsertExperiment {
        suite_id: Some(suite_id),
        kind: suite.kind,
        title: launch.title.clone(),
        base_ref: Some(launch.arms[0].git_ref.clone()),
        head_ref: Some(launch.arms.last().map(|a| a.git_ref.clone()).unwrap_or_default()),
        fingerprint: serde_json::to_value(&launch.fingerprint)?,
        plan: serde_json::to_value(&stored)?,
        launched_by: by,
        arms: launch
            .arms
            .iter()
            .map(|a| InsertArm {
                name: a.name.clone(),
                role: if a.role == "control" { ArmRole::Control } else { ArmRole::Treatment },
                git_ref: Some(a.git_ref.clone()),
                sha: Some(a.sha.clone()),
                config_diff: a.config.as_ref().and_then(|c| serde_json::to_string(c).ok()),
            })
            .collect(),
    };
    let id = store.insert_experiment(&new).await?;
    if let Err(e) = store.set_experiment_lane(id, &store::claim::Lane { canary: launch.canary, ..lane(suite) }).await {
        store.set_experiment_status(id, judge::ExperimentStatus::Errored).await.ok();
        return Err(e);
    }
    let arm_ids: Vec<i64> = store.arms(id).await?.into_iter().map(|a| a.0).collect();
    // The trials as planned (a warp phase with its drive-sync cell and leg; a reused control has none).
    let trials: Vec<InsertTrial> = launch
        .trials
        .iter()
        .filter_map(|t| {
            let arm = launch.arms.iter().position(|a| a.name == t.arm)?;
            let cell = t.phase.as_ref().map(|p| crate::warp::plan::cell(p.drive_sync, &p.leg));
            // A warm-up belongs to no pair (`judge::TrialRole::WARM_UP_REPEAT`).
            let repeat_index = if t.warm_up { judge::TrialRole::WARM_UP_REPEAT } else { t.repeat as i64 };
            Some(InsertTrial { arm_id: arm_ids[arm], seq: t.seq as i64, cell, repeat_index })
        })
        .collect();
    if let Err(e) = store.insert_trials(id, &trials).await {
        // Never leave an experiment that looks queued but has nothing to run.
        store.set_experiment_status(id, judge::ExperimentStatus::Errored).await.ok();
        return Err(e);
    }
    Ok(id)
}

/// The experiment's stored plan, read back.
pub(crate) async fn plan_of(engine: &crate::Engine, experiment_id: i64) -> Result<StoredPlan, String> {
    let (plan, _) = engine.store.experiment_plan(experiment_id).await.map_err(|e| e.to_string())?;
    serde_json::from_value(plan).map_err(|e| format!("the stored plan cannot be read: {e}"))
}
