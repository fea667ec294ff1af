//! The answers of the API's actions (cancel, share, revoke, import, re-judge, suite and user edits): each a
//! type here, so the server writes them and the CLI and the browser read them by field, never by key.

use crate::bisection::JsonBisectionState;
use crate::share::JsonShareLink;
use serde::{Deserialize, Serialize};

/// `POST /api/v1/experiments/{id}/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonCancelled {
    pub id: i64,
    pub cancelled_queued: u64,
    pub stopping_running: usize,
}

/// `POST /api/v1/imports`: the judged experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonImported {
    pub id: i64,
    pub url: String,
    pub verdict: judge::Verdict,
    pub reasons: Vec<String>,
}

/// One side of a re-judging: the verdict and the method version it was judged with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonJudged {
    pub verdict: judge::Verdict,
    pub method_version: u32,
}

/// `POST /api/v1/experiments/{id}/rejudge`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRejudged {
    pub id: i64,
    pub verdict_id: Option<i64>,
    pub before: JsonJudged,
    pub after: JsonJudged,
    pub changed: bool,
    pub reasons: Vec<String>,
}

/// `POST /api/v1/experiments/{id}/shares`: the new link, its secret shown this once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonNewShareLink {
    pub id: i64,
    pub experiment: i64,
    pub url: String,
    pub token: String,
    pub files: bool,
    pub expires_at: Option<i64>,
    pub created_by: Option<String>,
    pub created_at: i64,
}

impl JsonNewShareLink {
    /// The new link as the share panel lists it (`GET …/shares`).
    pub fn listing(&self) -> JsonShareLink {
        JsonShareLink { id: self.id, created_by: self.created_by.clone(), created_at: self.created_at, expires_at: self.expires_at, files: self.files }
    }
}

/// `GET /api/v1/experiments/{id}/shares`: the live links.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonShareLinks {
    pub experiment: i64,
    pub links: Vec<JsonShareLink>,
}

/// `DELETE …/shares` (and one link's): how many links ended, of an experiment or a bisection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRevoked {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bisection: Option<i64>,
    pub revoked: u64,
}

/// `POST /api/v1/bisections` with `dry_run`: the range and the plan, nothing stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonBisectionDryRun {
    pub dry_run: bool,
    pub plan: JsonBisectionState,
}

/// `POST /api/v1/bisections` (201), and any other answer naming a new thing by id and page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonCreated {
    pub id: i64,
    pub url: String,
}

/// `POST /api/v1/bisections/{id}/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonBisectionCancelled {
    pub id: i64,
    pub steps_stopped: usize,
}

/// `POST /api/v1/bisections/{id}/shares`: the new link, its secret shown this once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonNewBisectionLink {
    pub id: i64,
    pub bisection: i64,
    pub url: String,
    pub token: String,
    pub expires_at: Option<i64>,
    pub created_at: i64,
}

/// `POST /api/v1/change-points`: what was said of a change point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonChangePointMark {
    pub experiment_id: i64,
    pub state: String,
    pub reason: String,
}

/// `POST /api/v1/suites`, `PUT /api/v1/suites/{name}`: the suite saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonSuiteSaved {
    pub id: i64,
    pub name: String,
    pub kind: judge::ExperimentKind,
}

/// `DELETE /api/v1/suites/{name}/noise-profiles/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonProfileRemoved {
    pub id: i64,
    pub suite: String,
    pub removed: bool,
}

/// `POST /api/v1/tokens`: the new token, its secret shown this once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonNewToken {
    pub id: i64,
    pub name: String,
    pub role: rights::Role,
    pub token: String,
    pub created_at: Option<i64>,
    pub expires_at: Option<i64>,
}

/// `DELETE /api/v1/tokens/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonTokenRevoked {
    pub id: i64,
    pub revoked: bool,
}

/// `POST /api/v1/users` (201).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonNewUser {
    pub id: i64,
    pub name: String,
    pub role: rights::Role,
}

/// `PATCH /api/v1/users/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonUserUpdated {
    pub id: i64,
    pub updated: bool,
}
