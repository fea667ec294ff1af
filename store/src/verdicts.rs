//! Verdicts: each judging of an experiment (its end, and any re-judging by a newer method), kept whole and
//! in order; the experiment row carries the latest. Recording one writes the experiment's trend points in
//! the same transaction.

use crate::{now_ms, on_pool, Store, StoreError};
use judge::{ExperimentKind, ExperimentStatus, Verdict};
use serde::{Deserialize, Serialize};

/// One verdict an experiment had: which, by which method version, when, and who asked for it (`None`:
/// the experiment's own end).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredVerdict {
    pub id: i64,
    pub verdict: Verdict,
    pub method_version: u32,
    pub judged_at: i64,
    pub judged_by: Option<String>,
    pub reasons: Vec<String>,
}

/// The judging method's version a report names (`method.version`); a report without one is method 1.
pub fn method_version_of(report: &serde_json::Value) -> i64 {
    report.pointer("/method/version").and_then(serde_json::Value::as_i64).unwrap_or(1)
}

/// Why a verdict is recorded: the experiment's end (it becomes judged, its end time is set), or a
/// re-judging asked for by someone (the end time stays).
#[derive(Debug, Clone, Copy)]
enum Occasion {
    End,
    Rejudged { by: Option<i64> },
}

impl Store {
    /// Stores a verdict with its reasons and full report, marks the experiment judged and writes its
    /// trend points (`judge::trend::points`) — atomically. The method version is the report's
    /// (`method.version`; reports without one are method 1, as every warp gate is).
    pub async fn record_verdict(
        &self,
        experiment_id: i64,
        verdict: Verdict,
        reasons: &[String],
        report: &serde_json::Value,
        noise_profile_id: Option<i64>,
    ) -> Result<i64, StoreError> {
        self.insert_verdict(experiment_id, verdict, reasons, report, noise_profile_id, Occasion::End).await
    }

    /// A new verdict for an experiment judged before, asked for by `by`: kept beside the earlier ones
    /// (which stay readable in `verdicts`), it becomes the experiment's verdict and rewrites its trend
    /// points; the experiment's end time stays.
    pub async fn record_rejudged_verdict(
        &self,
        experiment_id: i64,
        verdict: Verdict,
        reasons: &[String],
        report: &serde_json::Value,
        noise_profile_id: Option<i64>,
        by: Option<i64>,
    ) -> Result<i64, StoreError> {
        self.insert_verdict(experiment_id, verdict, reasons, report, noise_profile_id, Occasion::Rejudged { by }).await
    }

    async fn insert_verdict(
        &self,
        experiment_id: i64,
        verdict: Verdict,
        reasons: &[String],
        report: &serde_json::Value,
        noise_profile_id: Option<i64>,
        occasion: Occasion,
    ) -> Result<i64, StoreError> {
        let points = self.trend_points_of(experiment_id, report).await?;
        let method_version = method_version_of(report);
        let news = news_of(report);
        let reasons = serde_json::to_string(reasons)?;
        let report = serde_json::to_string(report)?;
        let now = now_ms();
        on_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let updated = if let Occasion::Rejudged { .. } = occasion {
                sqlx::query("UPDATE experiments SET verdict = $1, noise_profile_id = $2, news = $4 WHERE id = $3 AND verdict IS NOT NULL")
                    .bind(verdict.as_str()).bind(noise_profile_id).bind(experiment_id).bind(&news)
                    .execute(&mut *tx).await?.rows_affected()
            } else {
                sqlx::query(
                    "UPDATE experiments SET verdict = $1, status = $2, noise_profile_id = $3, finished_at = $4, news = $6 WHERE id = $5",
                )
                .bind(verdict.as_str()).bind(ExperimentStatus::Judged.as_str()).bind(noise_profile_id).bind(now).bind(experiment_id).bind(&news)
                .execute(&mut *tx).await?.rows_affected()
            };
            if updated == 0 {
                return Err(StoreError::NotFound { what: "judged experiment", key: experiment_id.to_string() });
            }
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO verdicts (experiment_id, verdict, reasons, report, noise_profile_id, judged_at, method_version, judged_by) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
            )
            .bind(experiment_id).bind(verdict.as_str()).bind(&reasons).bind(&report).bind(noise_profile_id).bind(now)
            .bind(method_version).bind(match occasion { Occasion::End => None, Occasion::Rejudged { by } => by })
            .fetch_one(&mut *tx).await?;
            crate::trends::write_points!(tx, experiment_id, points.iter());
            tx.commit().await?;
            Ok(id)
        })
    }

    /// Every verdict an experiment has had, newest first (a re-judged experiment has several).
    pub async fn verdicts(&self, experiment_id: i64) -> Result<Vec<StoredVerdict>, StoreError> {
        let rows: Vec<(i64, String, i64, i64, Option<String>, String)> = on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT v.id, v.verdict, v.method_version, v.judged_at, u.username, v.reasons FROM verdicts v \
                 LEFT JOIN users u ON u.id = v.judged_by WHERE v.experiment_id = $1 ORDER BY v.judged_at DESC, v.id DESC",
            )
            .bind(experiment_id).fetch_all(pool).await
        })?;
        rows.into_iter()
            .map(|(id, verdict, method_version, judged_at, judged_by, reasons)| {
                Ok(StoredVerdict {
                    id,
                    verdict: verdict.parse()?,
                    method_version: method_version as u32,
                    judged_at,
                    judged_by,
                    reasons: serde_json::from_str(&reasons)?,
                })
            })
            .collect()
    }

    /// The judged experiments whose latest verdict is of a method older than `current` for their kind
    /// (`current(kind)`), oldest first: what `arbiter rejudge --all` looks at.
    pub async fn judged_before(&self, kind: ExperimentKind, current: u32) -> Result<Vec<(i64, u32)>, StoreError> {
        let rows: Vec<(i64, i64)> = on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT e.id, v.method_version FROM experiments e JOIN verdicts v ON v.experiment_id = e.id \
                 WHERE e.kind = $1 AND v.id = (SELECT id FROM verdicts WHERE experiment_id = e.id ORDER BY judged_at DESC, id DESC LIMIT 1) \
                 AND v.method_version < $2 ORDER BY e.id",
            )
            .bind(kind.as_str()).bind(current as i64).fetch_all(pool).await
        })?;
        Ok(rows.into_iter().map(|(id, v)| (id, v as u32)).collect())
    }

    /// The latest verdict of an experiment: (verdict, reasons, report).
    pub async fn latest_verdict(&self, experiment_id: i64) -> Result<Option<(Verdict, Vec<String>, serde_json::Value)>, StoreError> {
        let row: Option<(String, String, String)> = on_pool!(self, pool => {
            sqlx::query_as("SELECT verdict, reasons, report FROM verdicts WHERE experiment_id = $1 ORDER BY judged_at DESC, id DESC LIMIT 1")
                .bind(experiment_id).fetch_optional(pool).await
        })?;
        row.map(|(v, r, rep)| Ok((v.parse()?, serde_json::from_str(&r)?, serde_json::from_str(&rep)?))).transpose()
    }

    /// A suite's judged same-code canaries, newest first, at most `limit`: (experiment id, created at,
    /// the latest verdict's report).
    pub async fn judged_canaries(&self, suite_id: i64, limit: i64) -> Result<Vec<(i64, i64, serde_json::Value)>, StoreError> {
        let rows: Vec<(i64, i64, String)> = on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT e.id, e.created_at, v.report FROM experiments e JOIN verdicts v ON v.experiment_id = e.id \
                 WHERE e.suite_id = $1 AND e.canary = 1 AND e.status = 'judged' \
                 AND v.id = (SELECT MAX(w.id) FROM verdicts w WHERE w.experiment_id = e.id) \
                 ORDER BY e.id DESC LIMIT $2",
            )
            .bind(suite_id).bind(limit).fetch_all(pool).await
        })?;
        rows.into_iter().map(|(id, at, report)| Ok((id, at, serde_json::from_str(&report)?))).collect()
    }
}

impl Store {
    /// Experiments judged before the history had a Change column (migration 020) get their news from
    /// their latest verdict's report, in batches; one whose report has no news gets "" so it is not read
    /// again. Returns how many were filled.
    pub async fn fill_missing_news(&self) -> Result<u64, StoreError> {
        let mut filled = 0;
        loop {
            let rows: Vec<(i64, String)> = on_pool!(self, pool => {
                sqlx::query_as(
                    "SELECT e.id, v.report FROM experiments e JOIN verdicts v ON v.experiment_id = e.id \
                     WHERE e.news IS NULL AND e.verdict IS NOT NULL \
                     AND v.id = (SELECT MAX(w.id) FROM verdicts w WHERE w.experiment_id = e.id) ORDER BY e.id LIMIT 200",
                )
                .fetch_all(pool).await
            })?;
            if rows.is_empty() {
                return Ok(filled);
            }
            for (id, report) in rows {
                let news = serde_json::from_str(&report).ok().and_then(|r| news_of(&r)).unwrap_or_default();
                on_pool!(self, pool => {
                    sqlx::query("UPDATE experiments SET news = $1 WHERE id = $2 AND news IS NULL").bind(&news).bind(id).execute(pool).await.map(|_| ())
                })?;
                filled += 1;
            }
        }
    }
}

/// The news of a stored report, as its page's banner says it (`PipelineReport::news`, or a warp gate's
/// `judge::warp::headline::news`); `None` for a report without one.
pub fn news_of(report: &serde_json::Value) -> Option<String> {
    match report.get("gate") {
        Some(gate) => {
            serde_json::from_value::<judge::warp::gate::GateReport>(gate.clone()).ok().and_then(|g| judge::warp::headline::news(&g))
        }
        None => serde_json::from_value::<judge::pipeline::report::PipelineReport>(report.clone()).ok().and_then(|mut r| {
            r.one_estimate_per_claim();
            r.news()
        }),
    }
}
