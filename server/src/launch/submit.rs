//! Storing a resolved launch: the experiment, its arms and every planned trial (queued) go into the
//! store before anything runs; the scheduler takes it from there.

use super::plan::plan;
use super::request::{LaunchPlan, PlannedArm};
use crate::suites::definition::{Fingerprint, SuiteDefinition, TrialOrder};
use serde::{Deserialize, Serialize};
use store::experiments::{ArmRole, InsertArm, InsertExperiment};
use store::trials::InsertTrial;
use store::{Store, StoreError};

/// What an experiment's `plan` column holds: everything its trials need to run, fixed at launch
/// (a later edit of the suite file does not change a running experiment).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredPlan {
    pub suite: SuiteDefinition,
    pub repo_dir: String,
    pub fingerprint: Fingerprint,
    pub region: Option<String>,
    pub cluster: Option<String>,
    pub arms: Vec<PlannedArm>,
    pub order: TrialOrder,
    pub trials_per_arm: u32,
    pub exemption: Option<String>,
    #[serde(default)]
    pub calibration: bool,
}

impl StoredPlan {
    /// The key of the noise profile for this suite and fingerprint: SHA-256 of the fingerprint's JSON
    /// (its fields are sorted, so equal fingerprints hash alike).
    pub fn fingerprint_hash(&self) -> String {
        use sha2::{Digest, Sha256};
        let text = serde_json::to_string(&self.fingerprint).unwrap_or_default();
        Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Stores the launch and its queued trials; returns the experiment id.
pub async fn store_launch(store: &Store, suite_id: i64, suite: &SuiteDefinition, launch: &LaunchPlan, by: i64) -> Result<i64, StoreError> {
    let stored = StoredPlan {
        suite: suite.clone(),
        repo_dir: launch.repo_dir.clone(),
        fingerprint: launch.fingerprint.clone(),
        region: launch.region.clone(),
        cluster: launch.cluster.clone(),
        arms: launch.arms.clone(),
        order: launch.order,
        trials_per_arm: launch.trials_per_arm,
        exemption: launch.exemption.clone(),
        calibration: launch.calibration,
    };
    let new = InsertExperiment {
        suite_id: Some(suite_id),
        kind: suite.kind,
        title: launch.title.clone(),
        base_ref: Some(launch.arms[0].git_ref.clone()),
        head_ref: Some(launch.arms.last().map(|a| a.git_ref.clone()).unwrap_or_default()),
        fingerprint: serde_json::to_value(&launch.fingerprint)?,
        plan: serde_json::to_value(&stored)?,
        launched_by: Some(by),
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
    let arm_ids: Vec<i64> = store.arms(id).await?.into_iter().map(|a| a.0).collect();
    let trials: Vec<InsertTrial> = plan(arm_ids.len(), launch.trials_per_arm as usize, launch.order)
        .into_iter()
        .map(|t| InsertTrial { arm_id: arm_ids[t.arm], seq: t.seq as i64, cell: None, repeat_index: t.repeat as i64 })
        .collect();
    if let Err(e) = store.insert_trials(id, &trials).await {
        // Never leave an experiment that looks queued but has nothing to run.
        store.set_experiment_status(id, judge::ExperimentStatus::Errored).await.ok();
        return Err(e);
    }
    Ok(id)
}
