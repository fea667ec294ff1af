//! The `arbiter` binary's library: the web server, its API and auth, and the command-line actions.
//! `main.rs` only parses the command line; the integration tests build the same router in-process.

pub mod api;
pub mod auth;
pub mod bisect_client;
pub mod cli;
pub mod client;
pub mod compare;
pub mod config;
pub mod downloads;
pub mod exports;
pub mod gate;
pub mod hardening;
pub mod health;
pub mod http_serve;
pub mod import;
pub mod metrics;
pub mod progress;
pub mod rejudge;
pub mod retention;
pub mod serve;
pub mod sessions;
pub mod simulate;
pub mod state;

/// Reads an input file; the error names it.
pub fn read_input(path: &std::path::Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}
