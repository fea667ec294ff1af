//! Share links on the wire: what `POST /api/v1/experiments/{id}/shares` takes (every field optional; an
//! empty body makes a link to the page and its reports that lasts until revoked) and what
//! `GET /api/v1/experiments/{id}/shares` lists.

use serde::{Deserialize, Serialize};

/// The longest a share link may last, in days.
pub const MAX_SHARE_DAYS: u32 = 365;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JsonNewShare {
    /// Also open the trial logs and other files of the experiment (the page and its reports always).
    #[serde(default)]
    pub files: bool,
    /// The link ends after this many days (1–365); none: until revoked.
    #[serde(default)]
    pub expires_in_days: Option<u32>,
}

impl JsonNewShare {
    /// The expiry as epoch ms from `now_ms`, or why the request is refused.
    pub fn expires_at(&self, now_ms: i64) -> Result<Option<i64>, String> {
        match self.expires_in_days {
            None => Ok(None),
            Some(d) if (1..=MAX_SHARE_DAYS).contains(&d) => Ok(Some(now_ms + i64::from(d) * 86_400_000)),
            Some(d) => {
                Err(format!("expires_in_days {d}: give 1–{MAX_SHARE_DAYS} days, or leave it out for a link that lasts until revoked"))
            }
        }
    }
}

/// A live share link as `GET …/shares` lists it and the page shows it (never its secret).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonShareLink {
    pub id: i64,
    /// Who made it (none once that user is deleted).
    pub created_by: Option<String>,
    pub created_at: i64,
    /// Epoch ms; none: until revoked.
    pub expires_at: Option<i64>,
    /// It opens the trial logs and other files too.
    pub files: bool,
}

#[cfg(test)]
mod tests {
    use super::JsonNewShare;

    #[test]
    fn expiry_is_checked() {
        let ask = |d| JsonNewShare { files: false, expires_in_days: d };
        assert_eq!(ask(None).expires_at(1000).unwrap(), None);
        assert_eq!(ask(Some(2)).expires_at(1000).unwrap(), Some(1000 + 2 * 86_400_000));
        assert!(ask(Some(0)).expires_at(0).unwrap_err().starts_with("expires_in_days 0: give 1–365 days"));
        assert!(ask(Some(400)).expires_at(0).is_err());
        assert!(serde_json::from_str::<JsonNewShare>(r#"{"file": true}"#).is_err(), "unknown fields are refused");
    }
}

/// A judged experiment's pull-request comment (`POST /api/v1/experiments/{id}/comment`): the Markdown
/// `arbiter launch --comment-file` writes and the page's "Copy PR comment" copies — one text, made once,
/// on the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JsonComment {
    pub markdown: String,
    /// The experiment's comment link (a read-only share link, made once and reused until revoked), when
    /// the caller may share; the comment's links and charts go through it.
    pub share_url: Option<String>,
    /// That link as the share panel lists it (who made it, when), so the page counts it among the live ones.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub share_link: Option<JsonShareLink>,
    /// Why there is no share link, when there is none: the comment then links the sign-in page.
    pub no_link_why: Option<String>,
}
