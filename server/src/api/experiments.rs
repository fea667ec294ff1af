//! `GET /api/v1/experiments` (history, newest first, keyset pages) and `GET /api/v1/experiments/{id}`.

use super::error::{ApiError, ApiResult};
use crate::state::AppState;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use store::experiments::{ExperimentSummary, HistoryCursor, HistoryPage, HistoryQuery};

pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/experiments", get(list)).route("/api/v1/experiments/{id}", get(one))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    kind: Option<String>,
    status: Option<String>,
    verdict: Option<String>,
    suite: Option<String>,
    /// `CREATED.ID` from the previous page's `next`.
    before: Option<String>,
    limit: Option<u32>,
}

fn parse<T: std::str::FromStr<Err = judge::ParseVocabError>>(name: &str, v: Option<String>) -> ApiResult<Option<T>> {
    v.filter(|s| !s.is_empty()).map(|s| s.parse().map_err(|e| ApiError::BadRequest(format!("{name}: {e}")))).transpose()
}

async fn list(State(state): State<AppState>, params: Result<Query<ListParams>, QueryRejection>) -> ApiResult<Json<HistoryPage>> {
    let Query(p) = params?;
    let before = match p.before.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(c) => Some(
            c.split_once('.')
                .and_then(|(t, i)| Some(HistoryCursor { created_at: t.parse().ok()?, id: i.parse().ok()? }))
                .ok_or_else(|| ApiError::BadRequest(format!("before: {c:?} is not of the form CREATED.ID")))?,
        ),
    };
    let limit = p.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::BadRequest(format!("limit: {limit} is outside 1..=500")));
    }
    let query = HistoryQuery {
        kind: parse("kind", p.kind)?,
        status: parse("status", p.status)?,
        verdict: parse("verdict", p.verdict)?,
        suite: p.suite.filter(|s| !s.is_empty()),
        before,
        limit,
    };
    Ok(Json(state.store.list_experiments(&query).await?))
}

#[derive(Debug, Serialize)]
pub struct JsonArm {
    pub name: String,
    pub role: String,
    pub sha: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct JsonExperiment {
    #[serde(flatten)]
    pub summary: ExperimentSummary,
    pub arms: Vec<JsonArm>,
}

async fn one(State(state): State<AppState>, Path(id): Path<i64>) -> ApiResult<Json<JsonExperiment>> {
    let summary = state.store.experiment_summary(id).await?;
    let arms = state.store.arms(id).await?.into_iter().map(|(_, name, role, sha)| JsonArm { name, role, sha }).collect();
    Ok(Json(JsonExperiment { summary, arms }))
}
