//! The history filter: what `GET /api/v1/experiments` takes as its query and what the history page's
//! URL carries. Empty values mean "any"; the store turns a filter into its query (and names a bad value).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryFilter {
    /// `pipeline` or `warp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<String>,
    /// A ref either arm ran, or a SHA (a prefix of at least 4 hex digits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<String>,
    /// Who launched it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// `YYYY-MM-DD`, UTC, inclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// `YYYY-MM-DD`, UTC, inclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// Words in the title, suite or refs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q: Option<String>,
    /// `CREATED.ID`: the previous page's `next`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// Experiments per page, 1–500 (the API's; default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

impl HistoryFilter {
    /// The filter a URL's query carries (`get` reads one parameter); blank values mean "any".
    pub fn from_query(get: impl Fn(&str) -> Option<String>) -> Self {
        let field = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        HistoryFilter {
            kind: field("kind"),
            status: field("status"),
            verdict: field("verdict"),
            suite: field("suite"),
            git: field("git"),
            by: field("by"),
            since: field("since"),
            until: field("until"),
            q: field("q"),
            before: field("before"),
            limit: None,
        }
    }

    /// No filter and no cursor: the first page of everything.
    pub fn is_empty(&self) -> bool {
        *self == HistoryFilter::default()
    }

    /// The filters (not the page cursor) as URL name/value pairs.
    pub fn pairs(&self) -> Vec<(&'static str, &String)> {
        [
            ("kind", &self.kind),
            ("status", &self.status),
            ("verdict", &self.verdict),
            ("suite", &self.suite),
            ("git", &self.git),
            ("by", &self.by),
            ("since", &self.since),
            ("until", &self.until),
            ("q", &self.q),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
        .collect()
    }
}
