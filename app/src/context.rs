//! What the server hands the app besides the store and the caller: where experiment files live, the
//! public URL for links, how a stored suite is written back as TOML, and whether a setup link is live.

use leptos::prelude::*;
use std::path::PathBuf;

#[derive(Clone)]
pub struct ServerContext {
    pub data_dir: PathBuf,
    /// e.g. `https://arbiter.example.com`, no trailing slash.
    pub base_url: String,
    /// A stored suite definition written back as TOML.
    pub suite_toml: fn(&serde_json::Value) -> Result<String, String>,
    /// Whether a first-run setup link's secret is still the live one (the setup page says when it is not).
    pub setup_link_live: std::sync::Arc<dyn Fn(&str) -> bool + Send + Sync>,
    /// A suite repository's branches, most recently committed first, at most [`BRANCHES_SHOWN`] (the
    /// launch form's typeahead, the suite page's list): read from the repository or its mirror as it is,
    /// never fetched for a page. Empty when it cannot be read.
    pub branches: std::sync::Arc<dyn Fn(String) -> BranchesFuture + Send + Sync>,
}

/// What [`ServerContext::branches`] answers.
pub type BranchesFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Vec<String>> + Send>>;

/// How many branches a page offers.
pub const BRANCHES_SHOWN: usize = 50;

pub fn server_context() -> Result<ServerContext, crate::error::AppError> {
    use_context::<ServerContext>().ok_or_else(|| crate::error::AppError::Server("the server context is not available".into()))
}
