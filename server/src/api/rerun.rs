//! `POST /api/v1/experiments/{id}/rerun`: launches the same comparison again — the same suite,
//! fingerprint, trial count and order, each arm at the SHA it ran (so it is the same code, even if the
//! branches moved since). An exemption is not carried over: it is a decision about one run. Any launcher.

use super::error::{ApiError, ApiResult};
use crate::auth::Actor;
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::Extension;
use engine::launch::submit::StoredPlan;
use wire::launch::{JsonBudgets, JsonExtraArm, JsonLaunch, JsonTrials};

/// "Title (re-run of #ID)", replacing an earlier re-run's suffix rather than stacking them.
fn rerun_title(title: &str, id: i64) -> String {
    let original = match title.rsplit_once(" (re-run of #") {
        Some((head, tail)) if tail.strip_suffix(')').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) => head,
        _ => title,
    };
    format!("{original} (re-run of #{id})").chars().take(200).collect()
}

/// The launch request that repeats a stored plan.
pub fn rerun_request(id: i64, plan: &StoredPlan) -> JsonLaunch {
    let launch = &plan.launch;
    let sha_of = |name: &str| launch.arms.iter().find(|a| a.name == name).map(|a| a.sha.clone());
    let head = match (launch.calibration, launch.baseline) {
        (true, _) => sha_of("calibration"),
        (_, true) => sha_of(store::schedules::BASELINE_ARM),
        _ => sha_of("treatment"),
    };
    JsonLaunch {
        suite: launch.suite.clone(),
        head: head.unwrap_or_default(),
        base: if launch.calibration || launch.baseline { None } else { sha_of("control") },
        arms: launch
            .arms
            .iter()
            .filter(|a| !matches!(a.name.as_str(), "control" | "treatment" | "calibration" | store::schedules::BASELINE_ARM))
            .map(|a| JsonExtraArm { name: a.name.clone(), git_ref: a.sha.clone(), config: a.config.clone() })
            .collect(),
        fingerprint: launch.fingerprint.clone().into_iter().collect(),
        // An adaptive experiment re-runs adaptive, within the same budget.
        trials: Some(if launch.adaptive.is_some() { JsonTrials::AUTO } else { JsonTrials::Fixed(launch.trials_per_arm) }),
        max_trials: launch.adaptive.map(|a| a.max_trials),
        order: Some(launch.order),
        // The warm-ups it ran with (plans stored before warm-ups ran none).
        warm_up: Some(launch.warm_up),
        shared_cpus: launch.shared_cpus,
        canary: launch.canary,
        title: Some(rerun_title(&launch.title, id)),
        exemption: None,
        // The budgets the original was judged with (its own, or the suite's at the time).
        budgets: plan.suite.warp.as_ref().map(|w| JsonBudgets { fail_pct: w.fail_pct, warn_pct: w.warn_pct }),
        // …and the matrix settings it asked for.
        warp: launch.warp_settings.clone(),
        calibration: launch.calibration,
        baseline: launch.baseline,
        // A re-run runs its control again (at the SHA the reused baseline measured).
        reuse_baseline: None,
        detect_pct: None,
        // A bisection's step re-runs gated on its one stage, held to the margin it was judged with.
        focus: launch.focus.clone(),
        focus_bad_end_pct: launch.focus_bad_end_pct,
        cpu_margin_pct: launch.focus.as_ref().and(plan.suite.judge).and_then(|j| j.cpu_margin_pct),
        // The X the original was judged with when one was set (the suite's or its launch's).
        no_regression_pct: plan.suite.judge.and_then(|j| j.no_regression_pct),
        dry_run: false,
    }
}

#[utoipa::path(post, path = "/api/v1/experiments/{id}/rerun", tag = "experiments", params(("id" = i64, Path)),
    responses((status = 201, description = "the new experiment: id, page URL"), (status = 409, description = "imported or without a launch plan"), (status = 404, description = "no such experiment"), (status = 401, description = "no valid credentials"), (status = 403, description = "needs the launcher role"), (status = 502, description = "git could not fetch or read the suite's repository")))]
pub async fn rerun(State(state): State<AppState>, Extension(actor): Extension<Actor>, Path(id): Path<i64>) -> ApiResult<Response> {
    // Any launcher's: the route's role is the whole rule, asked of the one rights function.
    let me = actor.may(rights::ExperimentAct::Rerun, id, None)?;
    let (plan, _) = state.store.experiment_plan(id).await?;
    let plan: StoredPlan = serde_json::from_value(plan)
        .map_err(|_| ApiError::Conflict(format!("experiment {id} was imported or has no launch plan, so it cannot be re-run")))?;
    let req = rerun_request(id, &plan);
    let response = super::experiments::launched_response(engine::launch::launch(&state.engine, Some(me), &req).await?);
    state.store.audit(Some(me), "experiment.rerun", &format!("experiment:{id}"), None, &serde_json::json!({})).await?;
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::rerun_title;

    #[test]
    fn a_rerun_of_a_rerun_names_only_the_latest() {
        assert_eq!(rerun_title("dedup: abc vs main", 3), "dedup: abc vs main (re-run of #3)");
        assert_eq!(rerun_title("dedup: abc vs main (re-run of #3)", 7), "dedup: abc vs main (re-run of #7)");
        assert_eq!(rerun_title("odd (re-run of #x)", 7), "odd (re-run of #x) (re-run of #7)");
    }
}
