//! A judged experiment's pull-request comment: `POST /api/v1/experiments/{id}/comment` answers the
//! Markdown that `arbiter launch --comment-file` writes and the page's "Copy PR comment" button copies —
//! made here, once, for both. Its heading, links and chart images go through the experiment's **comment
//! link**: a read-only share link (page and reports) that Arbiter makes on first use and reuses after,
//! because its secret is derived from the server's link key (`auth::token::derived`), never stored. A
//! revoked comment link is followed by a new one on the next copy. Someone who may not share gets the
//! comment without a link (it points at the sign-in page) and is told why.

use super::error::{ApiError, ApiResult};
use crate::auth::{token, Actor};
use crate::state::AppState;
use app::report::StoredReport;
use axum::extract::{Path, State};
use axum::routing::post;
use axum::{Extension, Json, Router};
use serde_json::json;
use wire::share::JsonComment;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/experiments/{id}/comment", post(make))
}

/// How many comment links one experiment may have had revoked before the next copy gives up.
const MAX_GENERATIONS: u32 = 1000;

/// An experiment's comment link: its address and its share link's id.
pub struct CommentLink {
    pub url: String,
    pub share_id: i64,
}

/// The experiment's live comment link, made when `make_as` is given and there is none; `None` when there
/// is none and none is to be made.
pub async fn comment_link(state: &AppState, id: i64, make_as: Option<i64>) -> ApiResult<Option<CommentLink>> {
    // A file read (and, once, a write): off the async threads.
    let dir = state.data_dir.clone();
    let key = tokio::task::spawn_blocking(move || token::link_key(&dir))
        .await
        .map_err(|e| ApiError::Internal(format!("the link key: {e}")))?
        .map_err(|e| ApiError::Internal(format!("the link key: {e}")))?;
    for generation in 0..MAX_GENERATIONS {
        let secret = token::derived(&key, &format!("comment-link:{id}:{generation}"));
        let digest = token::digest(&secret);
        match state.store.share_token_by_hash(&digest).await? {
            // Live (comment links never expire), and this experiment's.
            Some((share_id, experiment, None)) if experiment == id => {
                return Ok(Some(CommentLink { url: format!("{}/share/{secret}", state.auth.base_url), share_id }))
            }
            // Revoked: its successor may be live.
            Some(_) => continue,
            None => {
                let Some(me) = make_as else { return Ok(None) };
                let share_id = state.store.insert_share_token(id, &digest, Some(me), false, None).await?;
                let detail = json!({"share_token": share_id, "files": false, "expires_at": null, "comment_link": true});
                state.store.audit(Some(me), "share.create", &format!("experiment:{id}"), None, &detail).await?;
                return Ok(Some(CommentLink { url: format!("{}/share/{secret}", state.auth.base_url), share_id }));
            }
        }
    }
    Err(ApiError::Conflict(format!("experiment {id}'s comment link was revoked {MAX_GENERATIONS} times; make a share link instead")))
}

/// May this caller share experiment `id`? `Err` with the reason when not.
pub async fn may_share(state: &AppState, actor: &Actor, id: i64) -> ApiResult<Result<i64, String>> {
    let owner = state.store.experiment_owner(id).await?;
    Ok(actor.may(rights::ExperimentAct::Share, id, owner).map_err(|r| match r {
        rights::Refused::Unauthorized(m) | rights::Refused::Forbidden(m) => m,
    }))
}

/// The comment's Markdown with `link` as the experiment's address (its share link, or the page).
/// `summary` is the experiment's, `verdict` its verdict (a comment reports one).
async fn markdown(
    state: &AppState,
    summary: &wire::experiment::ExperimentSummary,
    verdict: judge::Verdict,
    link: &str,
    share_secret: Option<&str>,
) -> ApiResult<String> {
    let id = summary.id;
    let (reasons, report) = match state.store.latest_verdict(id).await? {
        Some((_, reasons, report)) => (reasons, StoredReport::from_json(summary.kind, &report)),
        None => (Vec::new(), None),
    };
    let body = match &report {
        Some(StoredReport::Pipeline(r)) => {
            let md = judge::pipeline::render::markdown(r, &crate::exports::arm_ids(state, id).await?);
            crate::exports::with_experiment_header(&md, &crate::exports::experiment_header(state, id, link).await?)
        }
        // Arbiter's own words lead; upstream's gate.md follows byte for byte.
        Some(StoredReport::Warp { gate, provenance }) => {
            let mut head = format!("**In short:** {}", verdict.as_str());
            if let Some(news) = judge::warp::headline::news(gate) {
                head.push_str(&format!(" — {news}"));
            }
            head.push_str(".\n\n");
            for c in judge::warp::headline::to_check(gate) {
                head.push_str(&format!("- Measurement to check: {c}\n"));
            }
            format!("{head}\n{}", judge::warp::gate_md::render(gate, provenance.as_ref()))
        }
        None => reasons.iter().map(|r| format!("- {r}\n")).collect(),
    };
    let base = &state.auth.base_url;
    let images: Vec<judge::comment::CommentChart> = match (&report, share_secret) {
        // Without a share link the images would need a session a reviewer does not have.
        (Some(r), Some(secret)) => r
            .chart_names()
            .iter()
            .map(|c| judge::comment::CommentChart {
                caption: c.caption.to_string(),
                url: format!("{base}/experiments/{id}/charts/{}.svg?share={secret}", c.name),
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(judge::comment::pr_comment(id, &summary.title, verdict, link, &body, &images, share_secret.is_some()))
}

#[utoipa::path(post, path = "/api/v1/experiments/{id}/comment", tag = "experiments", params(("id" = i64, Path)),
    responses((status = 200, description = "the pull-request comment (Markdown) and the comment link it uses, made on first use when the caller may share", body = JsonComment),
        (status = 404, description = "no such experiment"), (status = 409, description = "not judged yet"), (status = 401, description = "no valid credentials")))]
async fn make(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<i64>,
) -> ApiResult<Json<JsonComment>> {
    let summary = state.store.experiment_summary(id).await?;
    let Some(verdict) = summary.verdict else {
        return Err(ApiError::Conflict(format!("experiment {id} has no verdict yet ({}): a comment reports one", summary.status.as_str())));
    };
    let (link, no_link_why) = match may_share(&state, &actor, id).await? {
        Ok(me) => (comment_link(&state, id, Some(me)).await?, None),
        Err(why) => (None, Some(format!("no share link: {why}; the comment links the page, which asks reviewers to sign in"))),
    };
    // The link as the share panel lists it, so the page can count it among the live ones.
    let share_link = match &link {
        Some(l) => state.store.share_links(id).await?.into_iter().find(|x| x.id == l.share_id),
        None => None,
    };
    let share_url = link.map(|l| l.url);
    let page = format!("{}/experiments/{id}", state.auth.base_url);
    let secret = share_url.as_deref().and_then(|u| u.rsplit('/').next());
    let markdown = markdown(&state, &summary, verdict, share_url.as_deref().unwrap_or(&page), secret).await?;
    Ok(Json(JsonComment { markdown, share_url, share_link, no_link_why }))
}
