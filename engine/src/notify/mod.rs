//! Notifications: a suite's `[notify]` webhook is sent a JSON payload (verdict, suite, arms, the page's
//! URL, and a Slack-compatible `text`) when one of its experiments ends in a regression, a gate FAIL or
//! an infrastructure failure. Each is queued in the store once per experiment and event, then delivered
//! with retries (exponential back-off); every attempt lands in the delivery log the suite page shows.
//! `[notify.commit_status]` also sets a commit status on the treatment's SHA through a GitHub-style API
//! (`POST {api}/repos/{repository}/statuses/{sha}`) when any experiment of the suite ends.

pub mod canary;
pub mod change_points;

use crate::Engine;
use judge::{ExperimentStatus, TrialState, Verdict};
pub use suite::notify::{CommitStatusSpec, NotifyEvent, NotifySpec};

use serde_json::{json, Value};
use std::time::Duration;

/// The commit status for an ended experiment (pure): the state and a description of at most 140 characters.
pub fn commit_state(status: ExperimentStatus, verdict: Option<Verdict>, reasons: &[String]) -> (&'static str, String) {
    let state = match (status, verdict) {
        (ExperimentStatus::Errored, _) | (_, None) => "error",
        (_, Some(Verdict::Regression | Verdict::WarpFail)) => "failure",
        _ => "success",
    };
    let words = verdict.map(|v| v.as_str().to_string()).unwrap_or_else(|| status.as_str().to_string());
    let first = reasons.first().map(|r| format!(": {r}")).unwrap_or_default();
    (state, format!("{words}{first}").chars().take(140).collect())
}

/// The events an ended experiment raises (pure).
pub fn events_of(status: ExperimentStatus, verdict: Option<Verdict>, lost_trials: usize) -> Vec<NotifyEvent> {
    let mut out = Vec::new();
    match verdict {
        Some(Verdict::Regression) => out.push(NotifyEvent::Regression),
        Some(Verdict::WarpFail) => out.push(NotifyEvent::Fail),
        _ => {}
    }
    if status == ExperimentStatus::Errored || lost_trials > 0 {
        out.push(NotifyEvent::InfraFailure);
    }
    out
}

/// Text as Slack's message format reads it: `&`, `<` and `>` escaped, so a title or reason cannot make a
/// link (`<url|label>`) or a mention (`<!channel>`) of its own.
pub fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The payload (pure): the experiment in JSON and a Slack-compatible line of text.
pub fn payload(
    event: NotifyEvent,
    summary: &store::experiments::ExperimentSummary,
    arms: &[Value],
    reasons: &[String],
    url: &str,
) -> Value {
    let what = match event {
        NotifyEvent::Regression => "Regression",
        NotifyEvent::Fail => "Gate FAIL",
        NotifyEvent::InfraFailure => "Infrastructure failure",
        NotifyEvent::ChangePoint => "Change point",
        NotifyEvent::Bisection => "Bisection",
        NotifyEvent::CanaryAlarm => "Canary alarm",
    };
    let suite = summary.suite.clone().unwrap_or_default();
    let first = reasons.first().map(|r| format!(": {}", slack_escape(r))).unwrap_or_default();
    json!({
        "event": event.as_str(),
        "text": format!("*{what}* in suite {}: <{url}|#{} {}>{first}", slack_escape(&suite), summary.id, slack_escape(&summary.title)),
        "experiment": {
            "id": summary.id, "title": summary.title, "url": url, "suite": suite, "kind": summary.kind.as_str(),
            "status": summary.status.as_str(), "verdict": summary.verdict.map(|v| v.as_str()), "reasons": reasons, "arms": arms,
        },
    })
}

/// After an experiment ended: queue and send what its suite asks for. Never fails the caller.
/// A same-code canary (`canary`) sends no regression of its own (a claim there is a false alarm, counted
/// in the suite's realised rate): it sends `canary_alarm` when it tips that rate above the promise.
pub async fn experiment_ended(engine: &Engine, experiment_id: i64, spec: Option<&NotifySpec>, suite_id: Option<i64>, canary: Option<f64>) {
    let (Some(spec), Some(suite_id)) = (spec, suite_id) else { return };
    if let Err(e) = queue_and_send(engine, experiment_id, spec, suite_id, canary.is_some()).await {
        tracing::error!(error = %e, experiment_id, "cannot queue the experiment's notifications");
    }
    if let (Some(promised), Some(webhook), true) = (canary, &spec.webhook, spec.events.contains(&NotifyEvent::CanaryAlarm)) {
        if let Err(e) = canary::alarm(engine, experiment_id, spec, webhook, suite_id, promised).await {
            tracing::error!(error = %e, experiment_id, "cannot check the canaries' realised rate");
        }
    }
    if let (Some(webhook), true) = (&spec.webhook, spec.events.contains(&NotifyEvent::ChangePoint)) {
        if let Err(e) = change_points::after_points(engine, experiment_id, spec, webhook, suite_id).await {
            tracing::error!(error = %e, experiment_id, "cannot look for new change points");
        }
    }
}

async fn queue_and_send(engine: &Engine, experiment_id: i64, spec: &NotifySpec, suite_id: i64, canary: bool) -> Result<(), store::StoreError> {
    let summary = engine.store.experiment_summary(experiment_id).await?;
    if summary.status == ExperimentStatus::Cancelled {
        return Ok(());
    }
    let trials = engine.store.trials(experiment_id).await?;
    // A position is lost when its latest attempt was lost to the infrastructure.
    let lost = store::trials::latest(&trials).values().filter(|t| t.state == TrialState::InfraFailed).count();
    let reasons = engine.store.latest_verdict(experiment_id).await?.map(|v| v.1).unwrap_or_default();
    let arms: Vec<Value> = engine
        .store
        .arms(experiment_id)
        .await?
        .into_iter()
        .map(|(_, name, role, sha)| json!({"name": name, "role": role, "sha": sha}))
        .collect();
    let url = format!("{}/experiments/{experiment_id}", engine.base_url);
    if let Some(webhook) = &spec.webhook {
        let events = events_of(summary.status, summary.verdict, lost).into_iter().filter(|e| !(canary && *e == NotifyEvent::Regression));
        for event in events.filter(|e| spec.events.contains(e)) {
            let body = payload(event, &summary, &arms, &reasons, &url);
            if let Some(id) = engine.store.insert_notification(experiment_id, suite_id, event.as_str(), webhook, &body).await? {
                tokio::spawn(deliver(
                    engine.store.clone(),
                    id,
                    spec.clone(),
                    Target { url: webhook.trim().to_string(), token: None },
                    body,
                ));
            }
        }
    }
    let head = arms.iter().rev().find(|a| a["role"] == "treatment").and_then(|a| a["sha"].as_str());
    if let (Some(c), Some(sha)) = (&spec.commit_status, head) {
        let (status, description) = commit_state(summary.status, summary.verdict, &reasons);
        let context = c.context.clone().unwrap_or_else(|| format!("arbiter/{}", summary.suite.clone().unwrap_or_default()));
        let body = json!({"state": status, "target_url": url, "description": description, "context": context});
        let target = format!("{}/repos/{}/statuses/{sha}", c.api.trim().trim_end_matches('/'), c.repository);
        if let Some(id) = engine.store.insert_notification(experiment_id, suite_id, "commit_status", &target, &body).await? {
            let token = c.token_env_allowed().then(|| std::env::var(&c.token_env).ok()).flatten();
            if !c.token_env_allowed() {
                tracing::warn!(variable = %c.token_env, "the commit status token's variable is one of Arbiter's own settings: not read");
            } else if token.is_none() {
                tracing::warn!(variable = %c.token_env, "the commit status token's environment variable is not set");
            }
            tokio::spawn(deliver(engine.store.clone(), id, spec.clone(), Target { url: target, token }, body));
        }
    }
    Ok(())
}

/// Where a notification goes, and the bearer token it needs (commit statuses).
pub struct Target {
    pub url: String,
    pub token: Option<String>,
}

/// Posts the payload until it is accepted (2xx) or the attempts run out, logging each attempt.
pub async fn deliver(store: store::Store, id: i64, spec: NotifySpec, target: Target, body: Value) {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).user_agent("arbiter").build().unwrap_or_default();
    for attempt in 1..=spec.attempts {
        let mut request = client.post(&target.url).json(&body).header("accept", "application/vnd.github+json");
        if let Some(token) = &target.token {
            request = request.bearer_auth(token);
        }
        let result = match request.send().await {
            Ok(r) if r.status().is_success() => Ok(()),
            Ok(r) => Err(format!("HTTP {}", r.status())),
            // Never the URL (a webhook's URL is its secret): the error as the log and the suite page show it.
            Err(e) => Err(format!("not sent: {}", e.without_url())),
        };
        let last = attempt == spec.attempts;
        if let Err(e) = store.record_delivery(id, result.as_ref().map(|_| ()).map_err(String::as_str), last).await {
            tracing::error!(error = %e, id, "cannot log the notification's delivery");
        }
        match result {
            Ok(()) => return,
            Err(e) if last => return tracing::warn!(id, error = %e, "the notification could not be delivered"),
            Err(_) => tokio::time::sleep(Duration::from_secs_f64(spec.retry_seconds * 2f64.powi(attempt as i32 - 1))).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_follow_the_outcome() {
        assert_eq!(events_of(ExperimentStatus::Judged, Some(Verdict::Regression), 0), [NotifyEvent::Regression]);
        assert_eq!(events_of(ExperimentStatus::Judged, Some(Verdict::WarpFail), 1), [NotifyEvent::Fail, NotifyEvent::InfraFailure]);
        assert_eq!(events_of(ExperimentStatus::Errored, None, 0), [NotifyEvent::InfraFailure]);
        assert!(events_of(ExperimentStatus::Judged, Some(Verdict::Pass), 0).is_empty());
        assert_eq!(
            commit_state(ExperimentStatus::Judged, Some(Verdict::Regression), &["map +30 %".into()]),
            ("failure", "regression: map +30 %".to_string())
        );
        assert_eq!(commit_state(ExperimentStatus::Judged, Some(Verdict::Pass), &[]).0, "success");
        assert_eq!(commit_state(ExperimentStatus::Errored, None, &[]).0, "error");
    }

    #[test]
    fn titles_and_reasons_cannot_make_links_or_mentions_in_slack() {
        assert_eq!(slack_escape("<!channel> a & b <https://evil|click>"), "&lt;!channel&gt; a &amp; b &lt;https://evil|click&gt;");
    }
}
