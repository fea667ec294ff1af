//! The `arbiter` binary's library: the web server, its API and auth, and the command-line actions.
//! `main.rs` only parses the command line; the integration tests build the same router in-process.

pub mod api;
pub mod auth;
pub mod cli;
pub mod compare;
pub mod config;
pub mod downloads;
pub mod exports;
pub mod gate;
pub mod hardening;
pub mod health;
pub mod import;
pub mod launch;
pub mod launch_cli;
pub mod load;
pub mod metrics;
pub mod notify;
pub mod progress;
pub mod rejudge;
pub mod retention;
pub mod schedule;
pub mod serve;
pub mod sessions;
pub mod simulate;
pub mod state;
pub mod suites;

/// Reads an input file; the error names it.
pub fn read_input(path: &std::path::Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// The last `lines` lines of a file, read from at most its last `max_bytes`; empty when it does not
/// exist (yet). Logs grow without bound, so nothing reads them whole.
pub fn tail(path: &std::path::Path, lines: usize, max_bytes: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else { return String::new() };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(max_bytes)));
    let mut bytes = Vec::new();
    let _ = f.take(max_bytes).read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
