//! A suite's `[notify]`: where an ended experiment's events go (a webhook, a commit status API) and how
//! often delivery is retried. Delivery itself is the engine's.

use serde::{Deserialize, Serialize};

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
    /// A bisection over the suite ended (a culprit, no culprit, or ambiguous).
    Bisection,
    /// The suite's same-code canaries claim changes more often than its promised error rate, beyond doubt
    /// (`judge::pipeline::canary`): sent by the canary that tipped it.
    CanaryAlarm,
}

impl NotifyEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            NotifyEvent::Regression => "regression",
            NotifyEvent::Fail => "fail",
            NotifyEvent::InfraFailure => "infra_failure",
            NotifyEvent::ChangePoint => "change_point",
            NotifyEvent::Bisection => "bisection",
            NotifyEvent::CanaryAlarm => "canary_alarm",
        }
    }
}

fn all_events() -> Vec<NotifyEvent> {
    vec![
        NotifyEvent::Regression,
        NotifyEvent::Fail,
        NotifyEvent::InfraFailure,
        NotifyEvent::ChangePoint,
        NotifyEvent::Bisection,
        NotifyEvent::CanaryAlarm,
    ]
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

/// The prefix a commit status token's variable must carry: a suite (which a UI edit can change) must not
/// be able to name Arbiter's own secrets (`DATABASE_URL`, `ARBITER_METRICS_TOKEN`) and have them sent out.
pub const TOKEN_ENV_PREFIX: &str = "ARBITER_NOTIFY_";

impl CommitStatusSpec {
    /// May Arbiter read `token_env` and send its value? Names with [`TOKEN_ENV_PREFIX`] may; for one
    /// release, other names too (with a warning at start, [`NotifySpec::warnings`]) except Arbiter's own
    /// settings (`ARBITER_…`) and `DATABASE_URL`, which never.
    pub fn token_env_allowed(&self) -> bool {
        let name = self.token_env.as_str();
        name.starts_with(TOKEN_ENV_PREFIX) || !(name.starts_with("ARBITER_") || name == "DATABASE_URL")
    }
}

fn http_url(field: &str, url: &str) -> Result<(), String> {
    if !(url.starts_with("https://") || url.starts_with("http://")) || url.len() > 2000 || url.chars().any(char::is_whitespace) {
        return Err(format!("{field} {url:?}: give an http(s) URL"));
    }
    Ok(())
}

impl NotifySpec {
    /// What a suite's author should change, said at start (a suite file that stopped loading would stop
    /// `serve`, so these are warnings for one release).
    pub fn warnings(&self) -> Vec<String> {
        let Some(c) = &self.commit_status else { return vec![] };
        if c.token_env.starts_with(TOKEN_ENV_PREFIX) {
            return vec![];
        }
        let refused = if c.token_env_allowed() { "read for this release only" } else { "never read (Arbiter's own setting)" };
        vec![format!(
            "notify.commit_status.token_env {:?} should start with {TOKEN_ENV_PREFIX} (e.g. {TOKEN_ENV_PREFIX}GITHUB_TOKEN); it is {refused}",
            c.token_env
        )]
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notify_table_is_checked_field_by_field() {
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
        let spec = |token_env: &str| NotifySpec {
            webhook: None,
            commit_status: Some(CommitStatusSpec { token_env: token_env.into(), ..status.clone() }),
            ..bad.clone()
        };
        assert!(spec("ARBITER_NOTIFY_GH").warnings().is_empty() && spec("ARBITER_NOTIFY_GH").commit_status.unwrap().token_env_allowed());
        assert!(spec("GH_TOKEN").warnings()[0].contains("read for this release only"));
        for own in ["DATABASE_URL", "ARBITER_METRICS_TOKEN"] {
            assert!(spec(own).warnings()[0].contains("never read"), "{own}");
            assert!(!spec(own).commit_status.unwrap().token_env_allowed(), "{own}");
        }
        let lower = CommitStatusSpec { token_env: "ghp_secret".into(), ..status.clone() };
        assert!(NotifySpec { webhook: None, commit_status: Some(lower), ..bad.clone() }.check().unwrap_err().contains("token_env"));
    }
}
