//! What an experiment's page shows beyond its history line: arms with refs and config diffs, the
//! fingerprint, the noise profile that judged it, and whether a live share link exists.

use crate::{on_pool, Store, StoreError};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct ArmDetail {
    pub id: i64,
    pub name: String,
    pub role: String,
    pub git_ref: Option<String>,
    pub sha: Option<String>,
    pub config_diff: Option<String>,
}

/// The noise profile a verdict used: how many same-code trials built it, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct ProfileUsed {
    pub id: i64,
    pub trials: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentDetail {
    pub arms: Vec<ArmDetail>,
    pub fingerprint: serde_json::Value,
    pub noise_profile: Option<ProfileUsed>,
    /// Live (not revoked) share links.
    pub live_shares: i64,
    pub launched_by_id: Option<i64>,
    /// Launched from a suite (its plan holds the launch, so it can be re-run).
    pub launched: bool,
    /// Imported from files: Arbiter judged it but did not run it.
    pub imported: bool,
    /// A baseline run: measured, not compared.
    pub baseline: bool,
    /// A calibration: same-code trials whose spread went into the suite's noise profile; no verdict.
    #[serde(default)]
    pub calibration: bool,
    /// The baseline run reused as its control.
    pub reused_baseline: Option<i64>,
    /// A warp experiment's matrix in words, and whether its launch set it (else the suite's own).
    #[serde(default)]
    pub warp_matrix: Option<(String, bool)>,
}

impl Store {
    pub async fn experiment_detail(&self, id: i64) -> Result<ExperimentDetail, StoreError> {
        let head: Option<(String, String, Option<i64>, Option<i64>)> = on_pool!(self, pool => {
            sqlx::query_as("SELECT fingerprint, plan, noise_profile_id, launched_by FROM experiments WHERE id = $1").bind(id).fetch_optional(pool).await
        })?;
        let (fingerprint, plan, profile_id, launched_by_id) =
            head.ok_or(StoreError::NotFound { what: "experiment", key: id.to_string() })?;
        let plan: serde_json::Value = serde_json::from_str(&plan)?;
        let arms: Vec<ArmDetail> = on_pool!(self, pool => {
            sqlx::query_as("SELECT id, name, role, git_ref, sha, config_diff FROM arms WHERE experiment_id = $1 ORDER BY position")
                .bind(id).fetch_all(pool).await
        })?;
        let noise_profile: Option<ProfileUsed> = match profile_id {
            None => None,
            Some(p) => on_pool!(self, pool => {
                sqlx::query_as("SELECT id, trials, updated_at FROM noise_profiles WHERE id = $1").bind(p).fetch_optional(pool).await
            })?,
        };
        let live_shares: i64 = on_pool!(self, pool => {
            sqlx::query_scalar(
                "SELECT COUNT(*) FROM share_tokens WHERE experiment_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)",
            )
            .bind(id).bind(crate::now_ms()).fetch_one(pool).await
        })?;
        Ok(ExperimentDetail {
            arms,
            fingerprint: serde_json::from_str(&fingerprint)?,
            noise_profile,
            live_shares,
            launched_by_id,
            launched: plan.get("launch").is_some(),
            imported: plan.get("imported").and_then(serde_json::Value::as_bool) == Some(true),
            baseline: plan.pointer("/launch/baseline").and_then(serde_json::Value::as_bool) == Some(true),
            calibration: plan.pointer("/launch/calibration").and_then(serde_json::Value::as_bool) == Some(true),
            reused_baseline: plan.pointer("/launch/reused_baseline/experiment_id").and_then(serde_json::Value::as_i64),
            warp_matrix: plan
                .pointer("/launch/warp_matrix")
                .and_then(serde_json::Value::as_str)
                .map(|m| (m.to_string(), plan.pointer("/launch/warp_settings").is_some_and(|s| !s.is_null()))),
        })
    }
}
