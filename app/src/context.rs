//! What the server hands the app besides the store and the caller: where experiment files live, the
//! public URL for links, and the token functions (so share links are made the same way as the API's).

use leptos::prelude::*;
use std::path::PathBuf;

/// A suite checked for storing: its name, kind and definition (JSON).
pub type ParsedSuite = (String, judge::ExperimentKind, serde_json::Value);

#[derive(Clone)]
pub struct ServerContext {
    pub data_dir: PathBuf,
    /// e.g. `https://arbiter.example.com`, no trailing slash.
    pub base_url: String,
    /// A new secret token (shown once).
    pub new_secret: fn() -> String,
    /// What the store keeps of a token.
    pub digest: fn(&str) -> String,
    /// Parses and checks a suite's TOML exactly as suite files are checked: its name, kind and definition.
    pub parse_suite: fn(&str) -> Result<ParsedSuite, String>,
    /// A stored suite definition written back as TOML.
    pub suite_toml: fn(&serde_json::Value) -> Result<String, String>,
}

pub fn server_context() -> Result<ServerContext, ServerFnError> {
    use_context::<ServerContext>().ok_or_else(|| ServerFnError::new("the server context is not available"))
}
