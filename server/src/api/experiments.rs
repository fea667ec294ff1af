//! `GET /api/v1/experiments` (history, newest first, keyset pages) and `GET /api/v1/experiments/{id}`.

use super::error::{ApiError, ApiResult};
use crate::auth::principal::require;
use crate::auth::Principal;
use crate::launch::request::{resolve, JsonLaunch, LaunchPlan, RunContext};
use crate::state::AppState;
use crate::suites::SuiteDefinition;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Extension;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;
use store::experiments::{ExperimentSummary, HistoryPage, HistoryParams};
use store::people::Role;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/experiments", get(list).post(launch))
        .route("/api/v1/experiments/{id}", get(one))
        .route("/api/v1/experiments/{id}/cancel", axum::routing::post(cancel))
        .route("/api/v1/experiments/{id}/rerun", axum::routing::post(super::rerun::rerun))
        .route("/api/v1/experiments/{id}/rejudge", axum::routing::post(super::rejudge::rejudge))
}

/// Checks and resolves a launch. `dry_run: true` answers with the whole plan (arms with SHAs, every
/// trial's argv, the worst-case time) and stores nothing; otherwise the experiment and its queued
/// trials are stored and the scheduler is woken: 201 with the id and the page's URL.
/// Launch an experiment (or, with `dry_run`, return its plan and store nothing).
#[utoipa::path(post, path = "/api/v1/experiments", tag = "experiments", request_body = JsonLaunch,
    responses((status = 201, description = "stored and queued: id, page URL, trial count"), (status = 200, description = "dry run: the plan"),
              (status = 400, description = "the request is not valid (the field is named)"), (status = 401, description = "no valid credentials"), (status = 403, description = "needs the launcher role"),
              (status = 503, description = "no finelog server for a pipeline launch")))]
async fn launch(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    body: Result<Json<JsonLaunch>, JsonRejection>,
) -> ApiResult<Response> {
    let (me, _) = require(&principal, Role::Launcher)?;
    let Json(req) = body?;
    Ok(launch_request(&state, Some(me), &req).await?.into_response())
}

/// What a launch request came to: a dry run's plan, or the stored experiment.
pub enum Launched {
    DryRun(Box<LaunchPlan>),
    Stored { id: i64, url: String, trials: usize },
}

impl IntoResponse for Launched {
    fn into_response(self) -> Response {
        match self {
            Launched::DryRun(plan) => Json(json!({"dry_run": true, "plan": plan})).into_response(),
            Launched::Stored { id, url, trials } => {
                (axum::http::StatusCode::CREATED, Json(json!({"id": id, "url": url, "trials": trials}))).into_response()
            }
        }
    }
}

/// Resolves a launch request and, unless it is a dry run, stores it and wakes the scheduler (also
/// behind re-run and the schedules, which launch as nobody: `me` is `None`).
pub async fn launch_request(state: &AppState, me: Option<i64>, req: &JsonLaunch) -> ApiResult<Launched> {
    let suite = match state.store.suite_by_name(&req.suite).await {
        Ok(s) => s,
        Err(store::StoreError::NotFound { .. }) => return Err(ApiError::BadRequest(format!("suite: there is no suite {:?}", req.suite))),
        Err(e) => return Err(e.into()),
    };
    let mut definition: SuiteDefinition =
        serde_json::from_value(suite.definition).map_err(|e| ApiError::Internal(format!("stored suite {:?}: {e}", req.suite)))?;
    let ctx = RunContext {
        data_dir: &state.data_dir,
        label: "dry".into(),
        finelog_url: state.launcher.finelog.clone().unwrap_or_else(|_| "http://finelog.pending".into()),
        python: state.launcher.python.as_ref().map(|p| p.to_string_lossy().into_owned()),
    };
    let reused = match &req.reuse_baseline {
        Some(choice) => {
            let fingerprint = definition.validate_fingerprint(&req.fingerprint).map_err(ApiError::BadRequest)?;
            let found = crate::launch::reuse::find(state, suite.id, &definition, &fingerprint, choice, store::now_ms()).await;
            Some(found.map_err(|e| ApiError::BadRequest(format!("{e} — {}", crate::launch::reuse::OFFER)))?)
        }
        None => None,
    };
    let mut plan = resolve(req, &definition, &ctx, reused.as_ref()).await.map_err(ApiError::BadRequest)?;
    plan.estimate_from(&state.store.recent_trial_seconds(suite.id, 20).await?);
    if let Some(p) = req.detect_pct.filter(|p| !(*p > 0.0 && *p < 100.0)) {
        return Err(ApiError::BadRequest(format!(
            "detect_pct: {p}: give the CPU change to size the trials for, in percent (above 0, below 100)"
        )));
    }
    if definition.kind == judge::ExperimentKind::Pipeline && !plan.calibration && !plan.baseline {
        let hash = crate::launch::submit::fingerprint_hash(&plan.fingerprint);
        let stored = state.store.noise_profile(suite.id, &hash).await?;
        let profile: Option<judge::pipeline::noise::NoiseProfile> = stored.and_then(|p| serde_json::from_value(p.profile).ok());
        let paired = plan.order != crate::suites::definition::TrialOrder::Blocked && plan.reused_baseline.is_none();
        let method = definition.judge_method(paired);
        let arms = plan.arms.len().saturating_sub(1);
        plan.detectable = Some(judge::pipeline::power::detectable(plan.trials_per_arm, arms, &method, profile.as_ref(), req.detect_pct));
    }
    if req.dry_run {
        return Ok(Launched::DryRun(Box::new(plan)));
    }
    if let (Err(why), judge::ExperimentKind::Pipeline) = (&state.launcher.finelog, definition.kind) {
        return Err(ApiError::Unavailable(format!(
            "this server has no finelog server to collect stage rows from ({why}); set ARBITER_FINELOG_URL, \
             or ARBITER_PYTHON to a Python with marin-finelog-server (scripts/setup.sh makes .venv) so Arbiter runs its own"
        )));
    }
    // Budgets asked for this experiment judge it: the stored copy of the suite carries them.
    if let (Some(b), Some(warp)) = (req.budgets, definition.warp.as_mut()) {
        (warp.fail_pct, warp.warn_pct) = (b.fail_pct, b.warn_pct);
    }
    let id = crate::launch::submit::store_launch(&state.store, suite.id, &definition, &plan, me).await?;
    let detail = json!({"suite": definition.name, "arms": plan.arms.iter().map(|a| json!({"name": a.name, "sha": a.sha})).collect::<Vec<_>>(),
        "budgets": req.budgets, "reused_baseline": plan.reused_baseline.as_ref().map(|r| r.experiment_id)});
    state.store.audit(me, "experiment.launch", &format!("experiment:{id}"), None, &detail).await?;
    if let Some(reason) = &plan.exemption {
        state.store.audit(me, "exemption.request", &format!("experiment:{id}"), Some(reason), &json!({})).await?;
    }
    state.launcher.notify.notify_one();
    let url = format!("{}/experiments/{id}", state.auth.base_url);
    Ok(Launched::Stored { id, url, trials: plan.trials.len() })
}

/// Stops an experiment: queued trials are cancelled, running ones stopped (their process groups),
/// and no verdict is given. Its launcher or an admin.
#[utoipa::path(post, path = "/api/v1/experiments/{id}/cancel", tag = "experiments", params(("id" = i64, Path)),
    responses((status = 200, description = "queued trials cancelled, running ones stopping"), (status = 404, description = "no such experiment"), (status = 409, description = "it has already ended"), (status = 401, description = "no valid credentials"), (status = 403, description = "only its launcher or an admin")))]
async fn cancel(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<i64>,
) -> ApiResult<Json<serde_json::Value>> {
    let (me, role) = require(&principal, Role::Launcher)?;
    let owner = state.store.experiment_owner(id).await?;
    if role != Role::Admin && owner != Some(me) {
        return Err(ApiError::Forbidden(format!("only experiment {id}'s launcher or an admin may cancel it")));
    }
    let summary = state.store.experiment_summary(id).await?;
    if matches!(summary.status, judge::ExperimentStatus::Judged | judge::ExperimentStatus::Errored | judge::ExperimentStatus::Cancelled) {
        return Err(ApiError::Conflict(format!("experiment {id} has already ended ({})", summary.status.as_str())));
    }
    state.store.set_experiment_status(id, judge::ExperimentStatus::Cancelled).await?;
    let queued = state.store.cancel_queued_trials(id).await?;
    let running = state.launcher.cancel_running(id);
    state
        .store
        .audit(Some(me), "experiment.cancel", &format!("experiment:{id}"), None, &json!({"queued": queued, "running": running}))
        .await?;
    Ok(Json(json!({"id": id, "cancelled_queued": queued, "stopping_running": running})))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    kind: Option<String>,
    status: Option<String>,
    verdict: Option<String>,
    suite: Option<String>,
    git: Option<String>,
    by: Option<String>,
    since: Option<String>,
    until: Option<String>,
    q: Option<String>,
    before: Option<String>,
    limit: Option<u32>,
}

#[utoipa::path(get, path = "/api/v1/experiments", tag = "experiments",
    params(("kind" = Option<String>, Query, description = "pipeline | warp"), ("status" = Option<String>, Query), ("verdict" = Option<String>, Query),
           ("suite" = Option<String>, Query), ("git" = Option<String>, Query, description = "a ref either arm ran, or a SHA (prefix of at least 4 hex digits)"),
           ("by" = Option<String>, Query, description = "who launched it"), ("since" = Option<String>, Query, description = "YYYY-MM-DD, UTC, inclusive"),
           ("until" = Option<String>, Query, description = "YYYY-MM-DD, UTC, inclusive"), ("q" = Option<String>, Query, description = "words in the title, suite or refs"),
           ("before" = Option<String>, Query, description = "CREATED.ID: the previous page's next cursor"), ("limit" = Option<u32>, Query, description = "1–500, default 50")),
    responses((status = 200, description = "a page of experiments, newest first, and the next page's cursor"), (status = 400, description = "a filter is not valid (named)"), (status = 401, description = "no valid credentials")))]
async fn list(State(state): State<AppState>, params: Result<Query<ListParams>, QueryRejection>) -> ApiResult<Json<HistoryPage>> {
    let Query(p) = params?;
    let limit = p.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::BadRequest(format!("limit: {limit}: must be between 1 and 500")));
    }
    let filters = HistoryParams {
        kind: p.kind,
        status: p.status,
        verdict: p.verdict,
        suite: p.suite,
        git: p.git,
        by: p.by,
        since: p.since,
        until: p.until,
        q: p.q,
        before: p.before,
    };
    let query = filters.query(limit).map_err(ApiError::BadRequest)?;
    Ok(Json(state.store.list_experiments(&query).await?))
}

#[derive(Debug, Serialize)]
pub struct JsonArm {
    /// What a trial's `arm_id` refers to.
    pub id: i64,
    pub name: String,
    pub role: String,
    pub sha: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct JsonExperiment {
    #[serde(flatten)]
    pub summary: ExperimentSummary,
    pub arms: Vec<JsonArm>,
    pub trials: Vec<store::trials::Trial>,
    pub reasons: Vec<String>,
    /// The judge's full report (per arm and stage), once judged.
    pub report: Option<serde_json::Value>,
}

#[utoipa::path(get, path = "/api/v1/experiments/{id}", tag = "experiments", params(("id" = i64, Path)),
    responses((status = 200, description = "the experiment: summary, arms, trials, reasons and the judge's full report"), (status = 404, description = "no such experiment"), (status = 401, description = "no valid credentials")))]
async fn one(State(state): State<AppState>, Path(id): Path<i64>) -> ApiResult<Json<JsonExperiment>> {
    json_experiment(&state, id).await.map(Json)
}

/// Everything stored about one experiment: the API's answer and the page's JSON download.
pub async fn json_experiment(state: &AppState, id: i64) -> ApiResult<JsonExperiment> {
    let summary = state.store.experiment_summary(id).await?;
    let arms = state.store.arms(id).await?.into_iter().map(|(id, name, role, sha)| JsonArm { id, name, role, sha }).collect();
    let trials = state.store.trials(id).await?;
    let (reasons, report) = match state.store.latest_verdict(id).await? {
        Some((_, reasons, report)) => (reasons, Some(report)),
        None => (Vec::new(), None),
    };
    Ok(JsonExperiment { summary, arms, trials, reasons, report })
}
