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
}

pub fn server_context() -> Result<ServerContext, crate::error::AppError> {
    use_context::<ServerContext>().ok_or_else(|| crate::error::AppError::Server("the server context is not available".into()))
}
