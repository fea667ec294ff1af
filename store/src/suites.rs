//! Suites (named benchmark definitions) and the noise profiles calibrated for them.

use crate::{now_ms, on_pool, Store, StoreError};
use judge::ExperimentKind;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suite {
    pub id: i64,
    pub name: String,
    pub kind: ExperimentKind,
    /// The suite definition as JSON (parsed from the suite's TOML file or the UI form).
    pub definition: serde_json::Value,
    /// Where it came from: "file:suites/x.toml" or "ui".
    pub source: String,
    pub updated_at: i64,
    /// Its text as written, comments and all (secrets in it: show it redacted to non-admins,
    /// `suite::redacted_text`); `None` when only the definition is known.
    pub toml: Option<String>,
}

#[derive(sqlx::FromRow)]
struct SuiteRow {
    id: i64,
    name: String,
    kind: String,
    definition: String,
    source: String,
    updated_at: i64,
    toml: Option<String>,
}

impl TryFrom<SuiteRow> for Suite {
    type Error = StoreError;
    fn try_from(r: SuiteRow) -> Result<Self, StoreError> {
        Ok(Suite {
            id: r.id,
            name: r.name,
            kind: r.kind.parse()?,
            definition: serde_json::from_str(&r.definition)?,
            source: r.source,
            updated_at: r.updated_at,
            toml: r.toml,
        })
    }
}

/// A noise profile: the spread of same-code repeats for one suite and workload fingerprint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseProfile {
    pub id: i64,
    pub suite_id: i64,
    pub fingerprint_hash: String,
    pub fingerprint: serde_json::Value,
    pub profile: serde_json::Value,
    pub trials: i64,
    pub updated_at: i64,
}

impl Store {
    /// Creates the suite or replaces its definition and text (suites are reloaded from their files at
    /// start-up); `toml` is the text it was written as, when it reads back as `definition`.
    pub async fn upsert_suite(
        &self,
        name: &str,
        kind: ExperimentKind,
        definition: &serde_json::Value,
        source: &str,
        toml: Option<&str>,
    ) -> Result<i64, StoreError> {
        let definition = serde_json::to_string(definition)?;
        let now = now_ms();
        Ok(on_pool!(self, pool => {
            sqlx::query_scalar(
                "INSERT INTO suites (name, kind, definition, source, created_at, updated_at, toml) VALUES ($1, $2, $3, $4, $5, $5, $6) \
                 ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, definition = excluded.definition, \
                 source = excluded.source, updated_at = excluded.updated_at, toml = excluded.toml RETURNING id",
            )
            .bind(name).bind(kind.as_str()).bind(&definition).bind(source).bind(now).bind(toml)
            .fetch_all(pool).await.and_then(crate::one_row)
        })?)
    }

    pub async fn suites(&self) -> Result<Vec<Suite>, StoreError> {
        let rows: Vec<SuiteRow> = on_pool!(self, pool => {
            sqlx::query_as("SELECT id, name, kind, definition, source, updated_at, toml FROM suites ORDER BY name").fetch_all(pool).await
        })?;
        rows.into_iter().map(Suite::try_from).collect()
    }

    pub async fn suite_by_name(&self, name: &str) -> Result<Suite, StoreError> {
        let row: Option<SuiteRow> = on_pool!(self, pool => {
            sqlx::query_as("SELECT id, name, kind, definition, source, updated_at, toml FROM suites WHERE name = $1")
                .bind(name).fetch_optional(pool).await
        })?;
        row.ok_or_else(|| StoreError::NotFound { what: "suite", key: name.to_string() })?.try_into()
    }

    /// Stores the calibration result for (suite, fingerprint); a repeated calibration replaces it.
    pub async fn upsert_noise_profile(
        &self,
        suite_id: i64,
        fingerprint_hash: &str,
        fingerprint: &serde_json::Value,
        profile: &serde_json::Value,
        trials: i64,
    ) -> Result<i64, StoreError> {
        let (fingerprint, profile) = (serde_json::to_string(fingerprint)?, serde_json::to_string(profile)?);
        let now = now_ms();
        Ok(on_pool!(self, pool => {
            sqlx::query_scalar(
                "INSERT INTO noise_profiles (suite_id, fingerprint_hash, fingerprint, profile, trials, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (suite_id, fingerprint_hash) DO UPDATE SET \
                 fingerprint = excluded.fingerprint, profile = excluded.profile, trials = excluded.trials, updated_at = excluded.updated_at \
                 RETURNING id",
            )
            .bind(suite_id).bind(fingerprint_hash).bind(&fingerprint).bind(&profile).bind(trials).bind(now)
            .fetch_all(pool).await.and_then(crate::one_row)
        })?)
    }

    /// Every noise profile of a suite, newest first.
    pub async fn noise_profiles(&self, suite_id: i64) -> Result<Vec<NoiseProfile>, StoreError> {
        let rows: Vec<(i64, String, String, String, i64, i64)> = on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT id, fingerprint_hash, fingerprint, profile, trials, updated_at FROM noise_profiles WHERE suite_id = $1 ORDER BY updated_at DESC",
            )
            .bind(suite_id).fetch_all(pool).await
        })?;
        rows.into_iter()
            .map(|(id, fingerprint_hash, fingerprint, profile, trials, updated_at)| {
                Ok(NoiseProfile {
                    id,
                    suite_id,
                    fingerprint_hash,
                    fingerprint: serde_json::from_str(&fingerprint)?,
                    profile: serde_json::from_str(&profile)?,
                    trials,
                    updated_at,
                })
            })
            .collect()
    }

    pub async fn noise_profile(&self, suite_id: i64, fingerprint_hash: &str) -> Result<Option<NoiseProfile>, StoreError> {
        let row: Option<(i64, String, String, i64, i64)> = on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT id, fingerprint, profile, trials, updated_at FROM noise_profiles WHERE suite_id = $1 AND fingerprint_hash = $2",
            )
            .bind(suite_id).bind(fingerprint_hash).fetch_optional(pool).await
        })?;
        row.map(|(id, fingerprint, profile, trials, updated_at)| {
            Ok(NoiseProfile {
                id,
                suite_id,
                fingerprint_hash: fingerprint_hash.to_string(),
                fingerprint: serde_json::from_str(&fingerprint)?,
                profile: serde_json::from_str(&profile)?,
                trials,
                updated_at,
            })
        })
        .transpose()
    }

    /// Removes one noise profile of a suite (an admin's reset: the next calibration starts afresh; the
    /// verdicts judged with it keep their reports). Whether there was one.
    pub async fn delete_noise_profile(&self, suite_id: i64, id: i64) -> Result<bool, StoreError> {
        let n = on_pool!(self, pool => {
            sqlx::query("DELETE FROM noise_profiles WHERE suite_id = $1 AND id = $2").bind(suite_id).bind(id).execute(pool).await.map(|r| r.rows_affected())
        })?;
        Ok(n > 0)
    }
}
