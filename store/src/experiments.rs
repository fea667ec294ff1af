//! Experiments, their arms, and their verdicts.

use crate::{now_ms, on_pool, Store, StoreError};
use judge::{ExperimentKind, ExperimentStatus, Verdict};
use serde::{Deserialize, Serialize};

/// An arm's role in the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArmRole {
    Control,
    Treatment,
}

impl ArmRole {
    pub fn as_str(self) -> &'static str {
        match self {
            ArmRole::Control => "control",
            ArmRole::Treatment => "treatment",
        }
    }
}

#[derive(Debug, Clone)]
pub struct InsertArm {
    pub name: String,
    pub role: ArmRole,
    pub git_ref: Option<String>,
    pub sha: Option<String>,
    pub config_diff: Option<String>,
}

#[derive(Debug, Clone)]
pub struct InsertExperiment {
    pub suite_id: Option<i64>,
    pub kind: ExperimentKind,
    pub title: String,
    pub base_ref: Option<String>,
    pub head_ref: Option<String>,
    pub fingerprint: serde_json::Value,
    pub plan: serde_json::Value,
    pub launched_by: Option<i64>,
    pub arms: Vec<InsertArm>,
}

pub use wire::experiment::ExperimentSummary;

#[derive(sqlx::FromRow)]
struct SummaryRow {
    id: i64,
    kind: String,
    title: String,
    status: String,
    verdict: Option<String>,
    suite: Option<String>,
    base_ref: Option<String>,
    head_ref: Option<String>,
    launched_by: Option<String>,
    created_at: i64,
    finished_at: Option<i64>,
    news: Option<String>,
}

impl TryFrom<SummaryRow> for ExperimentSummary {
    type Error = StoreError;
    fn try_from(r: SummaryRow) -> Result<Self, StoreError> {
        Ok(ExperimentSummary {
            id: r.id,
            kind: r.kind.parse()?,
            title: r.title,
            status: r.status.parse()?,
            verdict: r.verdict.map(|v| v.parse()).transpose()?,
            suite: r.suite,
            base_ref: r.base_ref,
            head_ref: r.head_ref,
            launched_by: r.launched_by,
            created_at: r.created_at,
            finished_at: r.finished_at,
            news: r.news,
        })
    }
}

/// Where a history page starts: strictly older than this (created_at, id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryCursor {
    pub created_at: i64,
    pub id: i64,
}

/// History filters; `None` means "any".
#[derive(Debug, Clone, Default)]
pub struct HistoryQuery {
    pub kind: Option<ExperimentKind>,
    pub status: Option<ExperimentStatus>,
    pub verdict: Option<Verdict>,
    pub suite: Option<String>,
    /// A ref either arm ran (`main`, `refs/heads/x`), or a SHA or SHA prefix (≥ 4 hex digits).
    pub git: Option<String>,
    /// Who launched it (user name).
    pub launched_by: Option<String>,
    /// Created at or after (ms since the epoch).
    pub since: Option<i64>,
    /// Created before (ms since the epoch).
    pub until: Option<i64>,
    /// Words the title, suite or refs contain (case-insensitive).
    pub text: Option<String>,
    pub before: Option<HistoryCursor>,
    pub limit: u32,
}

pub use wire::history::HistoryFilter;

impl HistoryQuery {
    /// The query a filter asks for (`limit` when it names none), or an error naming the parameter that
    /// is wrong.
    pub fn from_filter(filter: &HistoryFilter, limit: u32) -> Result<HistoryQuery, String> {
        let limit = filter.limit.unwrap_or(limit);
        if !(1..=500).contains(&limit) {
            return Err(format!("limit: {limit}: must be between 1 and 500"));
        }
        fn given(v: &Option<String>) -> Option<&str> {
            v.as_deref().map(str::trim).filter(|s| !s.is_empty())
        }
        fn vocab<T: std::str::FromStr<Err = judge::ParseVocabError>>(name: &str, v: &Option<String>) -> Result<Option<T>, String> {
            given(v).map(|s| s.parse().map_err(|e| format!("{name}: {e}"))).transpose()
        }
        fn text(name: &str, v: &Option<String>) -> Result<Option<String>, String> {
            match given(v) {
                Some(s) if s.chars().count() > 200 => Err(format!("{name}: at most 200 characters")),
                Some(s) if s.chars().any(char::is_control) => Err(format!("{name}: control characters are not allowed")),
                other => Ok(other.map(str::to_string)),
            }
        }
        let before = match given(&filter.before) {
            None => None,
            Some(c) => Some(
                c.split_once('.')
                    .and_then(|(t, i)| Some(HistoryCursor { created_at: t.parse().ok()?, id: i.parse().ok()? }))
                    .ok_or_else(|| format!("before: {c:?} is not of the form CREATED.ID"))?,
            ),
        };
        let (since, until) = judge::units::day_range(given(&filter.since), given(&filter.until))?;
        Ok(HistoryQuery {
            kind: vocab("kind", &filter.kind)?,
            status: vocab("status", &filter.status)?,
            verdict: vocab("verdict", &filter.verdict)?,
            suite: text("suite", &filter.suite)?,
            git: text("git", &filter.git)?,
            launched_by: text("by", &filter.by)?,
            since,
            until,
            text: text("q", &filter.q)?,
            before,
            limit,
        })
    }
}

/// `%text%` for LIKE, lower-cased, with `\`, `%` and `_` taken literally (ESCAPE '\').
fn contains_pattern(text: &str) -> String {
    let mut p = String::from("%");
    for c in text.to_lowercase().chars() {
        if matches!(c, '\\' | '%' | '_') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryPage {
    pub experiments: Vec<ExperimentSummary>,
    /// Set when older experiments exist: pass it back as `before`.
    pub next: Option<HistoryCursor>,
}

enum Bind {
    Int(i64),
    Text(String),
}

const SUMMARY_SELECT: &str = "SELECT e.id, e.kind, e.title, e.status, e.verdict, s.name AS suite, e.base_ref, e.head_ref, \
     u.username AS launched_by, e.created_at, e.finished_at, e.news \
     FROM experiments e LEFT JOIN suites s ON s.id = e.suite_id LEFT JOIN users u ON u.id = e.launched_by";

impl Store {
    /// Stores an experiment and its arms in one transaction; returns its id.
    pub async fn insert_experiment(&self, new: &InsertExperiment) -> Result<i64, StoreError> {
        if new.arms.is_empty() {
            return Err(StoreError::Conflict("an experiment needs at least one arm".into()));
        }
        let fingerprint = serde_json::to_string(&new.fingerprint)?;
        let plan = serde_json::to_string(&new.plan)?;
        let now = now_ms();
        on_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO experiments (suite_id, kind, title, status, base_ref, head_ref, fingerprint, plan, launched_by, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
            )
            .bind(new.suite_id).bind(new.kind.as_str()).bind(&new.title).bind(ExperimentStatus::Queued.as_str())
            .bind(&new.base_ref).bind(&new.head_ref).bind(&fingerprint).bind(&plan).bind(new.launched_by).bind(now)
            .fetch_one(&mut *tx).await?;
            for (position, arm) in new.arms.iter().enumerate() {
                sqlx::query(
                    "INSERT INTO arms (experiment_id, position, name, role, git_ref, sha, config_diff) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .bind(id).bind(position as i64).bind(&arm.name).bind(arm.role.as_str())
                .bind(&arm.git_ref).bind(&arm.sha).bind(&arm.config_diff)
                .execute(&mut *tx).await
                .map_err(|e| StoreError::unique(e, || format!("arm name {:?} appears twice", arm.name)))?;
            }
            tx.commit().await?;
            Ok(id)
        })
    }

    /// One history page, newest first, keyset-paginated on (created_at, id).
    pub async fn list_experiments(&self, q: &HistoryQuery) -> Result<HistoryPage, StoreError> {
        let limit = q.limit.clamp(1, 500) as i64;
        let mut clauses = Vec::new();
        let mut binds = Vec::new();
        let mut newest_first = false;
        fn push(clauses: &mut Vec<String>, binds: &mut Vec<Bind>, clause: &str, value: Bind) {
            binds.push(value);
            clauses.push(clause.replace('?', &format!("${}", binds.len())));
        }
        if let Some(k) = q.kind {
            push(&mut clauses, &mut binds, "e.kind = ?", Bind::Text(k.as_str().into()))
        }
        if let Some(s) = q.status {
            push(&mut clauses, &mut binds, "e.status = ?", Bind::Text(s.as_str().into()))
        }
        if let Some(v) = q.verdict {
            push(&mut clauses, &mut binds, "e.verdict = ?", Bind::Text(v.as_str().into()))
        }
        if let Some(s) = &q.suite {
            push(&mut clauses, &mut binds, "s.name = ?", Bind::Text(s.clone()))
        }
        if let Some(g) = &q.git {
            let (clause, scan) = self.git_clause(g, &mut binds).await?;
            clauses.push(clause);
            // SQLite's planner (3.46 on) would read every match and sort them; this filter's matches
            // are many, so the newest-first index meets a page of them at once.
            newest_first = scan && matches!(self, Store::Sqlite(_));
        }
        if let Some(who) = &q.launched_by {
            push(&mut clauses, &mut binds, "u.username = ?", Bind::Text(who.clone()))
        }
        if let Some(t) = q.since {
            push(&mut clauses, &mut binds, "e.created_at >= ?", Bind::Int(t))
        }
        if let Some(t) = q.until {
            push(&mut clauses, &mut binds, "e.created_at < ?", Bind::Int(t))
        }
        if let Some(t) = &q.text {
            push(
                &mut clauses,
                &mut binds,
                "(LOWER(e.title) LIKE ? ESCAPE '\\' OR LOWER(COALESCE(s.name, '')) LIKE ? ESCAPE '\\' \
                 OR LOWER(COALESCE(e.head_ref, '')) LIKE ? ESCAPE '\\' OR LOWER(COALESCE(e.base_ref, '')) LIKE ? ESCAPE '\\')",
                Bind::Text(contains_pattern(t)),
            )
        }
        if let Some(c) = q.before {
            binds.push(Bind::Int(c.created_at));
            binds.push(Bind::Int(c.id));
            let (a, b) = (binds.len() - 1, binds.len());
            clauses.push(format!("(e.created_at < ${a} OR (e.created_at = ${a} AND e.id < ${b}))"));
        }
        let filter = if clauses.is_empty() { String::new() } else { format!(" WHERE {}", clauses.join(" AND ")) };
        let select = match newest_first {
            true => SUMMARY_SELECT.replacen("FROM experiments e ", "FROM experiments e INDEXED BY experiments_history ", 1),
            false => SUMMARY_SELECT.to_string(),
        };
        let sql = format!("{select}{filter} ORDER BY e.created_at DESC, e.id DESC LIMIT {}", limit + 1);
        let rows: Vec<SummaryRow> = on_pool!(self, pool => {
            let mut query = sqlx::query_as::<_, SummaryRow>(&sql);
            for b in &binds {
                query = match b { Bind::Int(i) => query.bind(*i), Bind::Text(t) => query.bind(t.clone()) };
            }
            query.fetch_all(pool).await
        })?;
        let mut experiments = rows.into_iter().map(ExperimentSummary::try_from).collect::<Result<Vec<_>, _>>()?;
        let next = if experiments.len() as i64 > limit {
            experiments.truncate(limit as usize);
            experiments.last().map(|e| HistoryCursor { created_at: e.created_at, id: e.id })
        } else {
            None
        };
        Ok(HistoryPage { experiments, next })
    }

    /// The `git` filter as a WHERE clause. The experiments it can match are first looked up through
    /// the ref and SHA indexes: when there are few (a SHA, a rare branch) the page reads just those by
    /// id; when there are many (`main`) the newest-first scan meets its page of matches at once, so the
    /// per-row check is cheaper than listing them all. Returns the clause and whether it is the scan.
    async fn git_clause(&self, g: &str, binds: &mut Vec<Bind>) -> Result<(String, bool), StoreError> {
        const FEW: usize = 1000;
        // A SHA prefix as an index range: lowercase hex sorts below "g", so [p, p + "g") is the prefix.
        let prefix = (g.len() >= 4 && g.len() < 40 && g.chars().all(|c| c.is_ascii_hexdigit()))
            .then(|| (g.to_lowercase(), format!("{}g", g.to_lowercase())));
        let ranged = prefix.is_some();
        let arm_match = |n: usize| match ranged {
            true => format!("a.git_ref = ${n} OR a.sha = ${n} OR (a.sha >= ${} AND a.sha < ${})", n + 1, n + 2),
            false => format!("a.git_ref = ${n} OR a.sha = ${n}"),
        };
        // UNION ALL stops at the limit (UNION would first collect every match to drop repeats); an id
        // may come twice, which only makes the scan path a little more likely.
        let lookup = format!(
            "SELECT a.experiment_id FROM arms a WHERE {} UNION ALL SELECT id FROM experiments WHERE base_ref = $1 \
             UNION ALL SELECT id FROM experiments WHERE head_ref = $1 LIMIT {}",
            arm_match(1),
            FEW + 1
        );
        let mut ids: Vec<i64> = on_pool!(self, pool => {
            let mut query = sqlx::query_scalar::<_, i64>(&lookup).bind(g);
            if let Some((lo, hi)) = &prefix {
                query = query.bind(lo.clone()).bind(hi.clone());
            }
            query.fetch_all(pool).await
        })?;
        if ids.len() <= FEW {
            ids.sort_unstable();
            ids.dedup();
            // Ids read from the store, not user text: safe to write into the statement.
            let list = ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
            return Ok((if list.is_empty() { "1 = 0".into() } else { format!("e.id IN ({list})") }, false));
        }
        binds.push(Bind::Text(g.to_string()));
        let n = binds.len();
        if let Some((lo, hi)) = prefix {
            binds.push(Bind::Text(lo));
            binds.push(Bind::Text(hi));
        }
        let clause = format!(
            "(e.base_ref = ${n} OR e.head_ref = ${n} OR EXISTS (SELECT 1 FROM arms a WHERE a.experiment_id = e.id AND ({})))",
            arm_match(n)
        );
        Ok((clause, true))
    }

    pub async fn experiment_summary(&self, id: i64) -> Result<ExperimentSummary, StoreError> {
        let sql = format!("{SUMMARY_SELECT} WHERE e.id = $1");
        let row: Option<SummaryRow> = on_pool!(self, pool => sqlx::query_as(&sql).bind(id).fetch_optional(pool).await)?;
        row.ok_or(StoreError::NotFound { what: "experiment", key: id.to_string() })?.try_into()
    }

    /// Replaces the experiment's plan (the launcher writes the final one once the id is known).
    pub async fn set_experiment_plan(&self, id: i64, plan: &serde_json::Value) -> Result<(), StoreError> {
        let plan = serde_json::to_string(plan)?;
        on_pool!(self, pool => sqlx::query("UPDATE experiments SET plan = $1 WHERE id = $2").bind(&plan).bind(id).execute(pool).await.map(|r| r.rows_affected()))?;
        Ok(())
    }

    /// The experiment's stored plan and fingerprint.
    pub async fn experiment_plan(&self, id: i64) -> Result<(serde_json::Value, serde_json::Value), StoreError> {
        let row: Option<(String, String)> = on_pool!(self, pool => {
            sqlx::query_as("SELECT plan, fingerprint FROM experiments WHERE id = $1").bind(id).fetch_optional(pool).await
        })?;
        let (plan, fingerprint) = row.ok_or(StoreError::NotFound { what: "experiment", key: id.to_string() })?;
        Ok((serde_json::from_str(&plan)?, serde_json::from_str(&fingerprint)?))
    }

    /// The experiment's suite (`None` for one without), or NotFound.
    pub async fn experiment_suite_id(&self, id: i64) -> Result<Option<i64>, StoreError> {
        let row: Option<(Option<i64>,)> = on_pool!(self, pool => {
            sqlx::query_as("SELECT suite_id FROM experiments WHERE id = $1").bind(id).fetch_optional(pool).await
        })?;
        Ok(row.ok_or(StoreError::NotFound { what: "experiment", key: id.to_string() })?.0)
    }

    /// Who launched the experiment (`None` when unknown), or NotFound.
    pub async fn experiment_owner(&self, id: i64) -> Result<Option<i64>, StoreError> {
        let row: Option<(Option<i64>,)> = on_pool!(self, pool => {
            sqlx::query_as("SELECT launched_by FROM experiments WHERE id = $1").bind(id).fetch_optional(pool).await
        })?;
        row.map(|r| r.0).ok_or(StoreError::NotFound { what: "experiment", key: id.to_string() })
    }

    /// The experiment's arms in plan order: (id, name, role, sha).
    pub async fn arms(&self, experiment_id: i64) -> Result<Vec<(i64, String, String, Option<String>)>, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_as("SELECT id, name, role, sha FROM arms WHERE experiment_id = $1 ORDER BY position")
                .bind(experiment_id).fetch_all(pool).await
        })?)
    }

    /// Marks a queued (or running) experiment running; false when it has ended or was cancelled
    /// meanwhile — then its claimed trial must not run. Atomic, so a cancel is never overwritten.
    pub async fn start_experiment(&self, id: i64) -> Result<bool, StoreError> {
        let now = now_ms();
        let n = on_pool!(self, pool => {
            sqlx::query(
                "UPDATE experiments SET status = 'running', started_at = COALESCE(started_at, $1) \
                 WHERE id = $2 AND status IN ('queued', 'running')",
            )
            .bind(now).bind(id).execute(pool).await.map(|r| r.rows_affected())
        })?;
        Ok(n > 0)
    }

    pub async fn set_experiment_status(&self, id: i64, status: ExperimentStatus) -> Result<(), StoreError> {
        let now = now_ms();
        let done = matches!(status, ExperimentStatus::Judged | ExperimentStatus::Errored | ExperimentStatus::Cancelled);
        let result = on_pool!(self, pool => {
            sqlx::query(
                "UPDATE experiments SET status = $1, \
                 started_at = CASE WHEN $2 = 'running' AND started_at IS NULL THEN $3 ELSE started_at END, \
                 finished_at = CASE WHEN $4 THEN $3 ELSE finished_at END WHERE id = $5",
            )
            .bind(status.as_str()).bind(status.as_str()).bind(now).bind(done).bind(id)
            .execute(pool).await.map(|r| r.rows_affected())
        })?;
        if result == 0 {
            return Err(StoreError::NotFound { what: "experiment", key: id.to_string() });
        }
        Ok(())
    }

    /// Dates a (just imported) experiment at when it was measured, not when it was stored: its launch and
    /// end times, and its trend points, move to `at` (ms), so a backlog of imports lands on the trends
    /// where it happened.
    pub async fn set_measured_at(&self, id: i64, at: i64) -> Result<(), StoreError> {
        on_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            sqlx::query("UPDATE experiments SET created_at = $1, finished_at = $1 WHERE id = $2").bind(at).bind(id).execute(&mut *tx).await?;
            sqlx::query("UPDATE trend_points SET at = $1 WHERE experiment_id = $2").bind(at).bind(id).execute(&mut *tx).await?;
            tx.commit().await?;
            Ok::<(), sqlx::Error>(())
        })?;
        Ok(())
    }

    /// Deletes an experiment and everything it owns (arms, trials, observations, verdicts, shares).
    pub async fn delete_experiment(&self, id: i64) -> Result<(), StoreError> {
        on_pool!(self, pool => sqlx::query("DELETE FROM experiments WHERE id = $1").bind(id).execute(pool).await.map(|r| r.rows_affected()))?;
        Ok(())
    }
}
