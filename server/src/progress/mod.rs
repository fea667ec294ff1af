//! `GET /experiments/{id}/events`: an experiment's progress as server-sent events, once a second while
//! it runs — trials by state, a progress fraction, elapsed and estimated remaining time, and the log tail
//! and engine job of each running trial — then one `done` event when it has ended (the page then shows
//! the stored verdict).
//!
//! A stream is long-lived, so it answers for itself: each tick is one store query (`progress_rows`; the
//! arms are read once), every few seconds it asks again who is listening (a revoked link, a disabled
//! user, a revoked token or an ended session closes it with a `closed` event), and streams are capped per
//! principal and in all ([`Streams`]; 429 beyond).

use crate::api::error::{ApiError, ApiResult};
use crate::auth::Principal;
use crate::state::AppState;
pub use streams::{StreamSlot, Streams, STREAMS_PER_PRINCIPAL, STREAMS_TOTAL};
pub use wire::progress::{JsonAdaptiveProgress, JsonProgress, JsonRunning};
use axum::extract::RawQuery;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::Extension;
use futures_util::stream::{self, Stream};
use judge::TrialState;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::time::Duration;
use store::trials::Trial;
use tower_sessions::Session;

pub mod streams;

use store::trials::latest;

/// The progress of `trials` at `now_ms` (pure; the log tails come from `tail_of`).
pub fn progress(
    status: judge::ExperimentStatus,
    trials: &[Trial],
    arms: &[(i64, String, String)],
    now_ms: i64,
    tail_of: impl Fn(&Trial) -> String,
) -> JsonProgress {
    let arm_names: BTreeMap<i64, String> = arms.iter().map(|(id, name, _)| (*id, name.clone())).collect();
    let mut states = BTreeMap::new();
    for t in trials {
        *states.entry(t.state.as_str().to_string()).or_insert(0) += 1;
    }
    let positions = latest(trials);
    let ended: Vec<&&Trial> = positions.values().filter(|t| t.state.is_terminal()).collect();
    let first_start = trials.iter().filter_map(|t| t.started_at).min();
    let durations: Vec<f64> =
        ended.iter().filter_map(|t| Some((t.finished_at? - t.started_at?) as f64 / 1000.0)).filter(|d| *d >= 0.0).collect();
    let left = positions.len() - ended.len();
    let at_once = most_at_once(trials, now_ms);
    let remaining_s = (!durations.is_empty() && left > 0).then(|| {
        let mean = durations.iter().sum::<f64>() / durations.len() as f64;
        // Running trials are partly done: count what they have left of a mean trial.
        let running_done: f64 = positions
            .values()
            .filter(|t| t.state == TrialState::Running)
            .filter_map(|t| t.started_at)
            .map(|s| ((now_ms - s) as f64 / 1000.0).min(mean))
            .sum();
        // Trials in flight side by side (a cluster) share the work left.
        ((mean * left as f64 - running_done) / at_once.max(1) as f64).max(0.0)
    });
    // A cancelled experiment's running trials take a moment to stop: it is done once they have.
    let stopping = positions.values().any(|t| t.state == TrialState::Running);
    let done = !stopping
        && matches!(status, judge::ExperimentStatus::Judged | judge::ExperimentStatus::Errored | judge::ExperimentStatus::Cancelled);
    JsonProgress {
        status: status.as_str().to_string(),
        total: positions.len(),
        ended: ended.len(),
        states,
        elapsed_s: first_start.map(|s| (now_ms - s).max(0) as f64 / 1000.0),
        remaining_s,
        at_once,
        queued_ahead: 0,
        running: positions
            .values()
            .filter(|t| t.state == TrialState::Running)
            .map(|t| JsonRunning {
                seq: t.seq,
                arm: arm_names.get(&t.arm_id).cloned().unwrap_or_default(),
                cell: t.cell.clone(),
                attempt: t.attempt,
                job_id: t.job_id.clone(),
                engine_state: t.engine_state.clone(),
                started_at: t.started_at,
                log_tail: tail_of(t),
            })
            .collect(),
        done,
        trials: app::pages::experiment::trial_views(arms, trials.to_vec()),
        now_ms: Some(now_ms),
        adaptive: None,
    }
}

/// The most of these trials that were in flight at the same moment (0 before any started): 1 for
/// trials run one at a time, up to the cluster suite's `max_parallel` for trials run side by side.
fn most_at_once(trials: &[Trial], now_ms: i64) -> usize {
    let mut edges: Vec<(i64, i32)> = Vec::new();
    for t in trials {
        if let Some(start) = t.started_at {
            let end = t.finished_at.unwrap_or(now_ms).max(start);
            edges.push((start, 1));
            edges.push((end, -1));
        }
    }
    // At one instant an end comes before a start: back-to-back trials are not side by side.
    edges.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as usize
}

/// What the page shows of a running trial's log: its last 20 lines, at most 4 KiB.
pub fn log_tail(path: &std::path::Path) -> String {
    engine::tail(path, 20, 4096)
}

/// A stream asks again who is listening every this many ticks (seconds).
const RECHECK_TICKS: u32 = 5;

/// Whose streams a principal's count: a user, the holders of the same share links, or the anonymous.
fn principal_key(p: &Principal) -> String {
    match p {
        Principal::User { id, .. } => format!("user:{id}"),
        Principal::Share { experiments, bisections, .. } => format!("share:{experiments:?}:{bisections:?}"),
        Principal::Anonymous => "anonymous".into(),
    }
}

/// One tick: a single store query (the experiment's status and trials with their log paths), then the
/// running trials' log tails from their files.
async fn snapshot(state: &AppState, id: i64, arms: &[(i64, String, String)], adaptive: &mut AdaptiveLook) -> ApiResult<JsonProgress> {
    let (status, ahead, look_pairs, rows) = match state.store.progress_rows(id).await? {
        Some(found) => (found.status, found.lane_ahead.max(0) as usize, found.look_pairs, found.trials),
        // No trials (an import): the summary says its state.
        None => (state.store.experiment_summary(id).await?.status, 0, None, Vec::new()),
    };
    let mut logs = BTreeMap::new();
    for (t, path) in rows.iter().filter(|(t, _)| t.state == TrialState::Running) {
        if let Some(path) = path.clone() {
            let tail = tokio::task::spawn_blocking(move || log_tail(std::path::Path::new(&path))).await.unwrap_or_default();
            logs.insert(t.id, tail);
        }
    }
    let trials: Vec<Trial> = rows.into_iter().map(|(t, _)| t).collect();
    let mut p = progress(status, &trials, arms, store::now_ms(), |t| logs.get(&t.id).cloned().unwrap_or_default());
    // Before any of its trials started, it waits behind the others in its lane (the fair queue may let it in sooner).
    p.queued_ahead = if p.elapsed_s.is_none() && !p.done { ahead } else { 0 };
    if let Some(plan) = adaptive.plan.clone().filter(|_| !p.done) {
        // A new look: read its report and draw it (once per look, not once a second).
        let fresh = look_pairs.is_some() && look_pairs != adaptive.sent;
        if fresh {
            adaptive.look = state.store.look(id).await?;
        }
        let (look, trials_now) = (adaptive.look.clone(), trials.clone());
        let a = tokio::task::spawn_blocking(move || app::pages::experiment::adaptive_progress(&plan, &trials_now, look.as_ref(), fresh))
        .await
        .ok()
        .flatten();
        if fresh && a.as_ref().is_some_and(|a| a.chart_svg.is_some()) {
            adaptive.sent = look_pairs;
        }
        if let Some(a) = &a {
            expected_remaining(&mut p, a, arms.len());
        }
        p.adaptive = a;
    }
    Ok(p)
}

/// What a live stream of an adaptive experiment keeps between ticks: its plan (read once), the latest
/// look read, and which look's chart it has sent.
#[derive(Debug, Default)]
struct AdaptiveLook {
    plan: Option<serde_json::Value>,
    look: Option<(i64, serde_json::Value)>,
    sent: Option<i64>,
}

/// An adaptive experiment's time left counts the pairs the design expects, not just those planned yet.
fn expected_remaining(p: &mut JsonProgress, a: &JsonAdaptiveProgress, arms: usize) {
    let (Some(r), Some(e)) = (p.remaining_s, a.expected) else { return };
    let left_now = p.total.saturating_sub(p.ended);
    let left_expected = (e as usize * arms).saturating_sub(p.ended).max(left_now);
    if left_now > 0 {
        p.remaining_s = Some(r * left_expected as f64 / left_now as f64);
    }
}

/// Who is listening, asked again: `Err` with the reason once they may no longer read experiment `id`.
async fn still_allowed(state: &AppState, session: &Session, headers: &HeaderMap, query: Option<&str>, id: i64) -> Result<(), String> {
    match crate::auth::principal::principal_for(state, session, headers, query).await {
        Ok((p, _)) if p.can_read_experiment(id) => Ok(()),
        Ok(_) => Err("access ended (a revoked or expired link, or a session that ended)".into()),
        Err(e) => Err(format!("access ended: {e}")),
    }
}

struct Tick {
    state: AppState,
    session: Session,
    headers: HeaderMap,
    query: Option<String>,
    arms: Vec<(i64, String, String)>,
    adaptive: AdaptiveLook,
    next: Option<JsonProgress>,
    ticks: u32,
    finished: bool,
    _slot: StreamSlot,
}

pub async fn events(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    session: Session,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    Path(id): Path<i64>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let slot = state.streams.open(principal_key(&principal)).map_err(|message| ApiError::TooMany { message, retry_after_secs: 10 })?;
    // A 404 for an unknown experiment, before the stream starts.
    let arms: Vec<(i64, String, String)> = state.store.arms(id).await?.into_iter().map(|(id, name, role, _)| (id, name, role)).collect();
    // An adaptive experiment's plan, read once (its budget and expected pairs do not change).
    let plan = state.store.experiment_plan(id).await?.0;
    let mut adaptive = AdaptiveLook { plan: plan["launch"]["adaptive"].is_object().then_some(plan), ..AdaptiveLook::default() };
    let first = snapshot(&state, id, &arms, &mut adaptive).await?;
    let tick = Tick { state, session, headers, query, arms, adaptive, next: Some(first), ticks: 0, finished: false, _slot: slot };
    let stream = stream::unfold(tick, move |mut t| async move {
        if t.finished {
            return None;
        }
        let p = match t.next.take() {
            Some(p) => p,
            None => {
                tokio::time::sleep(Duration::from_secs(1)).await;
                t.ticks += 1;
                if t.ticks % RECHECK_TICKS == 0 {
                    if let Err(why) = still_allowed(&t.state, &t.session, &t.headers, t.query.as_deref(), id).await {
                        t.finished = true;
                        return Some((Ok(Event::default().event("closed").data(why)), t));
                    }
                }
                match snapshot(&t.state, id, &t.arms, &mut t.adaptive).await {
                    Ok(p) => p,
                    Err(e) => {
                        t.finished = true;
                        return Some((Ok(Event::default().event("error").data(format!("{e}"))), t));
                    }
                }
            }
        };
        t.finished = p.done;
        let event = Event::default().event(if p.done { "done" } else { "progress" }).json_data(&p).unwrap_or_default();
        Some((Ok(event), t))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(seq: i64, attempt: i64, state: TrialState, started: Option<i64>, finished: Option<i64>) -> Trial {
        Trial {
            id: seq * 10 + attempt,
            experiment_id: 1,
            arm_id: seq % 2 + 1,
            seq,
            cell: None,
            repeat_index: seq / 2,
            attempt,
            state,
            infra_reason: None,
            detail: None,
            claimed_by: None,
            created_at: 0,
            started_at: started,
            finished_at: finished,
            job_id: started.map(|s| format!("job-{s}")),
            engine_state: None,
            position: None,
            role: judge::TrialRole::Measured,
            host: None,
        }
    }

    #[test]
    fn counts_retries_once_and_estimates_from_ended_trials() {
        let arms = [(1, "control".to_string(), "control".to_string()), (2, "treatment".to_string(), "treatment".to_string())];
        let trials = vec![
            trial(0, 0, TrialState::Succeeded, Some(0), Some(10_000)),
            trial(1, 0, TrialState::InfraFailed, Some(10_000), Some(12_000)),
            trial(1, 1, TrialState::Succeeded, Some(12_000), Some(22_000)),
            trial(2, 0, TrialState::Running, Some(22_000), None),
            trial(3, 0, TrialState::Queued, None, None),
        ];
        let p = progress(judge::ExperimentStatus::Running, &trials, &arms, 26_000, |t| format!("log of {}", t.seq));
        assert_eq!((p.total, p.ended, p.done), (4, 2, false));
        assert_eq!(p.states["infra_failed"] + p.states["succeeded"] + p.states["running"] + p.states["queued"], 5);
        assert_eq!(p.elapsed_s, Some(26.0));
        // Mean of the ended positions' latest attempts: 10 s; two left, one of them 4 s in.
        assert_eq!(p.remaining_s, Some(16.0));
        assert_eq!(p.at_once, 1, "back-to-back trials are one at a time");
        // Side by side (a cluster): the two last trials both run; the work left is shared.
        let mut side = trials.clone();
        side[4] = trial(3, 0, TrialState::Running, Some(22_000), None);
        let q = progress(judge::ExperimentStatus::Running, &side, &arms, 26_000, |_| String::new());
        assert_eq!(q.at_once, 2);
        assert_eq!(q.remaining_s, Some(6.0), "(2 × 10 s − 2 × 4 s done) / 2 at once");
        assert_eq!(p.running.len(), 1);
        assert_eq!((p.running[0].arm.as_str(), p.running[0].log_tail.as_str()), ("control", "log of 2"));
        let judged = progress(judge::ExperimentStatus::Judged, &trials[..3], &arms, 30_000, |_| String::new());
        assert!(judged.done && judged.remaining_s.is_none());
        // A cancelled experiment is not done while a trial of it is still stopping.
        let stopping = progress(judge::ExperimentStatus::Cancelled, &trials, &arms, 30_000, |_| String::new());
        assert!(!stopping.done);
        let stopped = progress(judge::ExperimentStatus::Cancelled, &trials[..3], &arms, 30_000, |_| String::new());
        assert!(stopped.done);
        // The trials table rides along: every attempt, in the arm's colour, in its current state.
        assert_eq!(p.trials.len(), 5);
        assert_eq!((p.trials[3].arm.as_str(), p.trials[3].colour.as_str(), p.trials[3].state.as_str()), ("control", "control", "running"));
        assert_eq!((p.trials[1].colour.as_str(), p.trials[1].note.as_str()), ("t0", ""));
    }

    #[test]
    fn an_adaptive_run_counts_its_settled_pairs_and_the_time_its_expected_pairs_take() {
        let arms = [(1, "control".to_string(), "control".to_string()), (2, "treatment".to_string(), "treatment".to_string())];
        // Pair 0 ended, pair 1 half ended, pair 2 queued: one pair settled, three planned.
        let trials = vec![
            trial(0, 0, TrialState::Succeeded, Some(0), Some(10_000)),
            trial(1, 0, TrialState::Succeeded, Some(10_000), Some(20_000)),
            trial(2, 0, TrialState::Succeeded, Some(20_000), Some(30_000)),
            trial(3, 0, TrialState::Running, Some(30_000), None),
            trial(4, 0, TrialState::Queued, None, None),
            trial(5, 0, TrialState::Queued, None, None),
        ];
        let plan = serde_json::json!({"launch": {"adaptive": {"max_trials": 20, "step": 1, "expected_trials": 6}}});
        let a = app::pages::experiment::adaptive_progress(&plan, &trials, None, true).unwrap();
        assert_eq!((a.settled, a.planned, a.expected, a.max, a.look), (1, 3, Some(6), 20, 0));
        assert_eq!((a.status.as_str(), a.chart_svg.as_deref()), ("first look after 2 pairs", None));
        assert!(
            app::pages::experiment::adaptive_progress(&serde_json::json!({"launch": {"adaptive": null}}), &trials, None, true).is_none()
        );
        // Three positions left of those planned, nine of the six pairs expected: the time left grows to match.
        let mut p = progress(judge::ExperimentStatus::Running, &trials, &arms, 35_000, |_| String::new());
        let before = p.remaining_s.unwrap();
        expected_remaining(&mut p, &a, 2);
        assert!((p.remaining_s.unwrap() - before * 9.0 / 3.0).abs() < 1e-9, "{before} → {:?}", p.remaining_s);
    }

    #[test]
    fn a_log_tail_is_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, (0..100).map(|i| format!("line {i}\n")).collect::<String>()).unwrap();
        let tail = log_tail(&path);
        assert!(tail.starts_with("line 80") && tail.ends_with("line 99"), "{tail}");
        assert_eq!(log_tail(&dir.path().join("missing")), "");
    }
}
