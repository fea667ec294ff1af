//! `POST /api/v1/experiments/{id}/rejudge`: judges a pipeline experiment again on its stored rows by the
//! current method (`crate::rejudge`); the new verdict is kept beside the old one and audited. Any launcher.

use super::error::{ApiError, ApiResult};
use crate::auth::Actor;
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::{Extension, Json};
use engine::rejudge::{rejudge as judge_again, RejudgeError};

impl From<RejudgeError> for ApiError {
    fn from(e: RejudgeError) -> Self {
        match e {
            RejudgeError::NotJudgeable(m) => ApiError::Conflict(m),
            RejudgeError::Store(s) => s.into(),
            RejudgeError::Judge(..) => ApiError::Conflict(e.to_string()),
        }
    }
}

#[utoipa::path(post, path = "/api/v1/experiments/{id}/rejudge", tag = "experiments", params(("id" = i64, Path)),
    responses((status = 200, description = "re-judged: before and after (verdict and method version), the new verdict's id and reasons"),
        (status = 409, description = "a warp experiment, or not judged yet, or its stored rows cannot be judged"),
        (status = 404, description = "no such experiment"), (status = 401, description = "no valid credentials"), (status = 403, description = "only its launcher or an admin")))]
pub async fn rejudge(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<i64>,
) -> ApiResult<Json<wire::answers::JsonRejudged>> {
    // Its launcher's or an admin's (the one rights function says so; re-running is any launcher's).
    let owner = state.store.experiment_owner(id).await?;
    let me = actor.may(rights::ExperimentAct::Rejudge, id, owner)?;
    let r = judge_again(&state.store, id, Some(me), false).await?;
    Ok(Json(wire::answers::JsonRejudged {
        id: r.experiment_id,
        verdict_id: r.verdict_id,
        before: wire::answers::JsonJudged { verdict: r.before, method_version: r.before_method },
        after: wire::answers::JsonJudged { verdict: r.after, method_version: r.after_method },
        changed: r.changed(),
        reasons: r.reasons,
    }))
}
