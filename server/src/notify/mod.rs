//! Notifications: a suite's `[notify]` webhook is sent a JSON payload (verdict, suite, arms, the page's
//! URL, and a Slack-compatible `text`) when one of its experiments ends in a regression, a gate FAIL or
//! an infrastructure failure. Each is queued in the store once per experiment and event, then delivered
//! with retries (exponential back-off); every attempt lands in the delivery log the suite page shows.
//! `[notify.commit_status]` also sets a commit status on the treatment's SHA through a GitHub-style API
//! (`POST {api}/repos/{repository}/statuses/{sha}`) when any experiment of the suite ends.

pub mod change_points;

use crate::state::AppState;
use judge::{ExperimentStatus, TrialState, Verdict};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotifyEvent {
    /// A pipeline regression.
    Regression,
    /// A warp gate FAIL.
    Fail,
    /// The experiment errored, or a trial was lost to the infrastructure (after its retry).
    InfraFailure,
    /// The experiment's trend points revealed a new change point in one of the suite's series.
    ChangePoint,
}

impl NotifyEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            NotifyEvent::Regression => "regression",
            NotifyEvent::Fail => "fail",
            NotifyEvent::InfraFailure => "infra_failure",
            NotifyEvent::ChangePoint => "change_point",
        }
    }
}

fn all_events() -> Vec<NotifyEvent> {
    vec![NotifyEvent::Regression, NotifyEvent::Fail, NotifyEvent::InfraFailure, NotifyEvent::ChangePoint]
}
fn default_attempts() -> u32 {
    4
}
fn default_retry() -> f64 {
    2.0
}

/// `[notify]` in a suite file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifySpec {
    /// Where the JSON payload is POSTed (Slack incoming webhooks read its `text`).
    #[serde(default)]
    pub webhook: Option<String>,
    #[serde(default = "all_events")]
    pub events: Vec<NotifyEvent>,
    /// Attempts in all (1–10).
    #[serde(default = "default_attempts")]
    pub attempts: u32,
    /// Seconds before the first retry; each later wait doubles.
    #[serde(default = "default_retry")]
    pub retry_seconds: f64,
    #[serde(default)]
    pub commit_status: Option<CommitStatusSpec>,
}

/// A GitHub-style commit status API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitStatusSpec {
    /// e.g. `https://api.github.com` (or a GitHub Enterprise / Gitea API root).
    pub api: String,
    /// `owner/name`.
    pub repository: String,
    /// The environment variable holding the token (never the token itself in a suite file).
    pub token_env: String,
    /// The status context; default `arbiter/{suite}`.
    #[serde(default)]
    pub context: Option<String>,
}

fn http_url(field: &str, url: &str) -> Result<(), String> {
    if !(url.starts_with("https://") || url.starts_with("http://")) || url.len() > 2000 || url.chars().any(char::is_whitespace) {
        return Err(format!("{field} {url:?}: give an http(s) URL"));
    }
    Ok(())
}

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

impl NotifySpec {
    pub fn check(&self) -> Result<(), String> {
        if let Some(url) = &self.webhook {
            http_url("notify.webhook", url.trim())?;
        }
        if let Some(c) = &self.commit_status {
            http_url("notify.commit_status.api", c.api.trim())?;
            let parts: Vec<&str> = c.repository.split('/').collect();
            if parts.len() != 2
                || parts.iter().any(|p| p.is_empty() || !p.chars().all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch)))
            {
                return Err(format!("notify.commit_status.repository {:?}: give owner/name", c.repository));
            }
            if c.token_env.is_empty() || !c.token_env.chars().all(|ch| ch.is_ascii_uppercase() || ch.is_ascii_digit() || ch == '_') {
                return Err(format!("notify.commit_status.token_env {:?}: give an UPPER_CASE environment variable name", c.token_env));
            }
        }
        if self.webhook.is_none() && self.commit_status.is_none() {
            return Err("notify: give a webhook, a commit_status, or both".into());
        }
        if !(1..=10).contains(&self.attempts) {
            return Err(format!("notify.attempts {}: use 1–10", self.attempts));
        }
        if !(self.retry_seconds.is_finite() && (0.0..=600.0).contains(&self.retry_seconds)) {
            return Err(format!("notify.retry_seconds {}: use 0–600", self.retry_seconds));
        }
        Ok(())
    }
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
    };
    let suite = summary.suite.clone().unwrap_or_default();
    let first = reasons.first().map(|r| format!(": {r}")).unwrap_or_default();
    json!({
        "event": event.as_str(),
        "text": format!("*{what}* in suite {suite}: <{url}|#{} {}>{first}", summary.id, summary.title),
        "experiment": {
            "id": summary.id, "title": summary.title, "url": url, "suite": suite, "kind": summary.kind.as_str(),
            "status": summary.status.as_str(), "verdict": summary.verdict.map(|v| v.as_str()), "reasons": reasons, "arms": arms,
        },
    })
}

/// After an experiment ended: queue and send what its suite asks for. Never fails the caller.
pub async fn experiment_ended(state: &AppState, experiment_id: i64, spec: Option<&NotifySpec>, suite_id: Option<i64>) {
    let (Some(spec), Some(suite_id)) = (spec, suite_id) else { return };
    if let Err(e) = queue_and_send(state, experiment_id, spec, suite_id).await {
        tracing::error!(error = %e, experiment_id, "cannot queue the experiment's notifications");
    }
    if let (Some(webhook), true) = (&spec.webhook, spec.events.contains(&NotifyEvent::ChangePoint)) {
        if let Err(e) = change_points::after_points(state, experiment_id, spec, webhook, suite_id).await {
            tracing::error!(error = %e, experiment_id, "cannot look for new change points");
        }
    }
}

async fn queue_and_send(state: &AppState, experiment_id: i64, spec: &NotifySpec, suite_id: i64) -> Result<(), store::StoreError> {
    let summary = state.store.experiment_summary(experiment_id).await?;
    if summary.status == ExperimentStatus::Cancelled {
        return Ok(());
    }
    let trials = state.store.trials(experiment_id).await?;
    // A position is lost when its latest attempt was lost to the infrastructure.
    let lost = crate::progress::latest(&trials).values().filter(|t| t.state == TrialState::InfraFailed).count();
    let reasons = state.store.latest_verdict(experiment_id).await?.map(|v| v.1).unwrap_or_default();
    let arms: Vec<Value> = state
        .store
        .arms(experiment_id)
        .await?
        .into_iter()
        .map(|(_, name, role, sha)| json!({"name": name, "role": role, "sha": sha}))
        .collect();
    let url = format!("{}/experiments/{experiment_id}", state.auth.base_url);
    if let Some(webhook) = &spec.webhook {
        for event in events_of(summary.status, summary.verdict, lost).into_iter().filter(|e| spec.events.contains(e)) {
            let body = payload(event, &summary, &arms, &reasons, &url);
            if let Some(id) = state.store.insert_notification(experiment_id, suite_id, event.as_str(), webhook, &body).await? {
                tokio::spawn(deliver(state.store.clone(), id, spec.clone(), Target { url: webhook.trim().to_string(), token: None }, body));
            }
        }
    }
    let head = arms.iter().rev().find(|a| a["role"] == "treatment").and_then(|a| a["sha"].as_str());
    if let (Some(c), Some(sha)) = (&spec.commit_status, head) {
        let (status, description) = commit_state(summary.status, summary.verdict, &reasons);
        let context = c.context.clone().unwrap_or_else(|| format!("arbiter/{}", summary.suite.clone().unwrap_or_default()));
        let body = json!({"state": status, "target_url": url, "description": description, "context": context});
        let target = format!("{}/repos/{}/statuses/{sha}", c.api.trim().trim_end_matches('/'), c.repository);
        if let Some(id) = state.store.insert_notification(experiment_id, suite_id, "commit_status", &target, &body).await? {
            let token = std::env::var(&c.token_env).ok();
            if token.is_none() {
                tracing::warn!(variable = %c.token_env, "the commit status token's environment variable is not set");
            }
            tokio::spawn(deliver(state.store.clone(), id, spec.clone(), Target { url: target, token }, body));
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
            Err(e) => Err(format!("not sent: {e}")),
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
        let bad =
            NotifySpec { webhook: Some("ftp://x".into()), events: all_events(), attempts: 4, retry_seconds: 1.0, commit_status: None };
        assert!(bad.check().unwrap_err().contains("http(s) URL"));
        assert!(NotifySpec { webhook: Some("https://hooks.example/x".into()), attempts: 0, ..bad.clone() }.check().is_err());
        assert!(NotifySpec { webhook: None, ..bad.clone() }.check().unwrap_err().contains("give a webhook, a commit_status"));
        let status = CommitStatusSpec {
            api: "https://api.github.com".into(),
            repository: "o/r".into(),
            token_env: "GH_TOKEN".into(),
            context: None,
        };
        assert!(NotifySpec { webhook: None, commit_status: Some(status.clone()), ..bad.clone() }.check().is_ok());
        let lower = CommitStatusSpec { token_env: "ghp_secret".into(), ..status.clone() };
        assert!(NotifySpec { webhook: None, commit_status: Some(lower), ..bad.clone() }.check().unwrap_err().contains("token_env"));
        assert_eq!(
            commit_state(ExperimentStatus::Judged, Some(Verdict::Regression), &["map +30 %".into()]),
            ("failure", "regression: map +30 %".to_string())
        );
        assert_eq!(commit_state(ExperimentStatus::Judged, Some(Verdict::Pass), &[]).0, "success");
        assert_eq!(commit_state(ExperimentStatus::Errored, None, &[]).0, "error");
    }
}
