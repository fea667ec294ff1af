//! The `[warp]` table of a warp suite: how the S3 server under test is made and started (local mode)
//! or reached and redeployed (external mode), the workload × drive-sync matrix, the load settings and
//! the budgets. Checked when the suite is loaded; every error names the field.

use judge::units::parse_duration;
use judge::warp::Workload;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// Placeholders of the server's start argv (besides the fingerprint's fields).
pub const SERVER_PLACEHOLDERS: &[&str] = &["binary", "port", "data_dirs", "access_key", "secret_key"];

pub const DEFAULT_WORKLOADS: &[&str] = &["put-4KiB", "put-4MiB", "get-4KiB", "get-4MiB", "get-10MiB", "mixed-256KiB"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WarpSpec {
    /// Local mode: argv run in the arm's worktree to build the server (e.g. cargo build --release -p NAME).
    #[serde(default)]
    pub build: Vec<String>,
    /// The built binary's path inside the worktree (e.g. target/release/NAME).
    #[serde(default)]
    pub binary: Option<String>,
    /// Prebuilt binaries by arm name (control, treatment, …), used instead of building.
    #[serde(default)]
    pub binaries: BTreeMap<String, String>,
    /// Local mode: the server's start argv, with {binary}, {port}, {data_dirs}, {access_key}, {secret_key}.
    #[serde(default)]
    pub server: Vec<String>,
    /// Extra environment of the server; values may use {access_key} and {secret_key} (keys travel here
    /// when the server reads them from its environment).
    #[serde(default)]
    pub server_env: BTreeMap<String, String>,
    #[serde(default = "default_health_path")]
    pub health_path: String,
    #[serde(default = "default_health_timeout")]
    pub health_timeout_secs: u64,
    #[serde(default)]
    pub drive_sync: DriveSync,
    #[serde(default = "default_disks")]
    pub disks: u32,
    #[serde(default = "default_workloads")]
    pub workloads: Vec<String>,
    #[serde(default = "default_concurrency")]
    pub concurrency: u32,
    #[serde(default = "default_duration")]
    pub duration: String,
    #[serde(default = "default_warmup")]
    pub warmup: String,
    #[serde(default = "default_rounds")]
    pub rounds: u32,
    #[serde(default = "default_cooldown")]
    pub cooldown: String,
    #[serde(default)]
    pub order: PhaseOrder,
    #[serde(default = "default_fail")]
    pub fail_pct: f64,
    #[serde(default = "default_warn")]
    pub warn_pct: f64,
    /// Budgets of p90/p99 latency, when they should differ from fail_pct/warn_pct (a short window's p99
    /// is a handful of requests).
    #[serde(default)]
    pub tail_fail_pct: Option<f64>,
    #[serde(default)]
    pub tail_warn_pct: Option<f64>,
    #[serde(default)]
    pub tool: LoadTool,
    /// `tool = "warp"`: the warp program (default: `warp` found on PATH when a phase starts).
    #[serde(default)]
    pub warp_bin: Option<String>,
    /// A round fails above this share of failed requests (default 1 %).
    #[serde(default = "default_max_error")]
    pub max_request_error_pct: f64,
    /// External mode: the endpoint of a running server; Arbiter never starts or restarts it.
    #[serde(default)]
    pub endpoint: Option<String>,
    /// External mode: argv run before each phase, with HOTPATH_AB_PHASE, HOTPATH_AB_BINARY and
    /// HOTPATH_AB_DRIVE_SYNC in its environment.
    #[serde(default)]
    pub deploy_hook: Vec<String>,
    /// External mode: a 0600 file with `access_key=…` and `secret_key=…` lines.
    #[serde(default)]
    pub credentials_file: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriveSync {
    /// The environment variable that switches it (e.g. RUSTFS_DRIVE_SYNC_ENABLE); none: not passed.
    #[serde(default)]
    pub env: Option<String>,
    #[serde(default = "default_on")]
    pub on: String,
    #[serde(default = "default_off")]
    pub off: String,
    /// Which cells run: "on", "off" or both.
    #[serde(default = "default_sync_values")]
    pub values: Vec<String>,
}

impl Default for DriveSync {
    fn default() -> Self {
        DriveSync { env: None, on: default_on(), off: default_off(), values: default_sync_values() }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PhaseOrder {
    /// A then B.
    #[default]
    Ab,
    /// A1 B1 B2 A2: the baseline runs first and last, so drift shows.
    Abba,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadTool {
    /// Arbiter's own driver (`arbiter load`).
    #[default]
    Builtin,
    /// A real `warp` on PATH, its output read by the warp parsers.
    Warp,
}

fn default_health_path() -> String {
    "/".into()
}
fn default_health_timeout() -> u64 {
    180
}
fn default_disks() -> u32 {
    1
}
fn default_workloads() -> Vec<String> {
    DEFAULT_WORKLOADS.iter().map(|s| s.to_string()).collect()
}
fn default_concurrency() -> u32 {
    8
}
fn default_duration() -> String {
    "10s".into()
}
fn default_warmup() -> String {
    "1s".into()
}
fn default_rounds() -> u32 {
    3
}
fn default_cooldown() -> String {
    "2s".into()
}
fn default_fail() -> f64 {
    10.0
}
fn default_warn() -> f64 {
    5.0
}
fn default_max_error() -> f64 {
    judge::warp::rounds::DEFAULT_MAX_REQUEST_ERROR_PCT
}
fn default_on() -> String {
    "true".into()
}
fn default_off() -> String {
    "false".into()
}
fn default_sync_values() -> Vec<String> {
    vec!["on".into(), "off".into()]
}

/// One workload of the matrix, e.g. `put-4KiB`.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadSpec {
    pub name: String,
    pub kind: Workload,
    pub size: u64,
}

/// `put-4KiB`, `get-10MiB`, `mixed-256KiB` (also upstream's `put-4kib`, `mixed-256k`).
pub fn parse_workload(text: &str) -> Result<WorkloadSpec, String> {
    let (kind, size) = text.split_once('-').ok_or_else(|| format!("workload {text:?}: write KIND-SIZE, e.g. put-4KiB"))?;
    let kind = match kind {
        "put" => Workload::Put,
        "get" => Workload::Get,
        "mixed" => Workload::Mixed,
        other => return Err(format!("workload {text:?}: kind {other:?} is not put, get or mixed")),
    };
    let lower = size.to_ascii_lowercase();
    let size_text = match lower.strip_suffix('k').or_else(|| lower.strip_suffix('m')) {
        Some(n) => format!("{n}{}", if lower.ends_with('k') { "KiB" } else { "MiB" }),
        None => size.to_string(),
    };
    let bytes = judge::units::parse_size(&size_text).map_err(|e| format!("workload {text:?}: {e}"))?;
    if !(1.0..=(1u64 << 30) as f64).contains(&bytes) {
        return Err(format!("workload {text:?}: give an object size from 1 B to 1 GiB"));
    }
    Ok(WorkloadSpec { name: text.to_string(), kind, size: bytes as u64 })
}

fn is_env_name(k: &str) -> bool {
    (1..=64).contains(&k.len()) && k.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// A program on PATH, as a shell would find it.
pub fn on_path(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| std::path::Path::new(d).join(name)).find(|p| p.is_file())
}

impl WarpSpec {
    /// The warp program a phase runs: the suite's `warp_bin`, else `warp` on PATH; `None` when neither is there.
    pub fn warp_program(&self) -> Option<String> {
        match &self.warp_bin {
            Some(p) => std::path::Path::new(p).is_file().then(|| p.clone()),
            None => on_path("warp").map(|p| p.to_string_lossy().into_owned()),
        }
    }

    pub fn external(&self) -> bool {
        self.endpoint.is_some()
    }

    pub fn workload_specs(&self) -> Result<Vec<WorkloadSpec>, String> {
        self.workloads.iter().map(|w| parse_workload(w)).collect()
    }

    pub fn durations(&self) -> Result<(Duration, Duration, Duration), String> {
        let d = |field: &str, v: &str| parse_duration(v).map_err(|e| format!("warp.{field}: {e}"));
        Ok((d("duration", &self.duration)?, d("warmup", &self.warmup)?, d("cooldown", &self.cooldown)?))
    }

    /// The drive-sync values of the matrix, as booleans, in the suite's order.
    pub fn sync_values(&self) -> Vec<bool> {
        self.drive_sync.values.iter().map(|v| v == "on").collect()
    }

    /// Everything that does not depend on the rest of the suite.
    pub fn check(&self) -> Result<(), String> {
        let workloads = self.workload_specs()?;
        if workloads.is_empty() {
            return Err("warp.workloads: name at least one workload, e.g. [\"put-4KiB\"]".into());
        }
        if workloads.iter().enumerate().any(|(i, w)| workloads[..i].iter().any(|o| o.name == w.name)) {
            return Err("warp.workloads: a workload is listed twice".into());
        }
        let (duration, _, _) = self.durations()?;
        if duration.is_zero() {
            return Err("warp.duration: must be above zero".into());
        }
        if !(1..=20).contains(&self.rounds) {
            return Err(format!("warp.rounds {}: use 1–20", self.rounds));
        }
        if !(1..=1024).contains(&self.concurrency) {
            return Err(format!("warp.concurrency {}: use 1–1024", self.concurrency));
        }
        if !(1..=64).contains(&self.disks) {
            return Err(format!("warp.disks {}: use 1–64", self.disks));
        }
        if !(self.warn_pct.is_finite() && self.fail_pct.is_finite() && 0.0 <= self.warn_pct && self.warn_pct <= self.fail_pct) {
            return Err(format!("warp.warn_pct {} / fail_pct {}: use 0 ≤ warn ≤ fail", self.warn_pct, self.fail_pct));
        }
        let tail = (self.tail_warn_pct.unwrap_or(self.warn_pct), self.tail_fail_pct.unwrap_or(self.fail_pct));
        if !(tail.0.is_finite() && tail.1.is_finite() && 0.0 <= tail.0 && tail.0 <= tail.1) {
            return Err(format!("warp.tail_warn_pct {} / tail_fail_pct {}: use 0 ≤ warn ≤ fail", tail.0, tail.1));
        }
        if !(0.0..=100.0).contains(&self.max_request_error_pct) {
            return Err(format!("warp.max_request_error_pct {}: use 0–100", self.max_request_error_pct));
        }
        if !(1..=3600).contains(&self.health_timeout_secs) {
            return Err(format!("warp.health_timeout_secs {}: use 1–3600", self.health_timeout_secs));
        }
        if !self.health_path.starts_with('/')
            || !judge::launch_rules::is_safe_value(self.health_path.trim_start_matches('/')) && self.health_path != "/"
        {
            return Err(format!("warp.health_path {:?}: give a plain path starting with '/'", self.health_path));
        }
        let ds = &self.drive_sync;
        if ds.values.is_empty()
            || ds.values.iter().any(|v| v != "on" && v != "off")
            || (ds.values.len() == 2 && ds.values[0] == ds.values[1])
        {
            return Err("warp.drive_sync.values: use \"on\", \"off\" or both".into());
        }
        if let Some(env) = &ds.env {
            if !is_env_name(env) {
                return Err(format!("warp.drive_sync.env {env:?}: give an UPPER_CASE variable name"));
            }
        }
        for k in self.server_env.keys() {
            if !is_env_name(k) {
                return Err(format!("warp.server_env {k:?}: give an UPPER_CASE variable name"));
            }
        }
        match (&self.endpoint, self.server.is_empty()) {
            (Some(_), false) => return Err("warp: give either endpoint (external mode) or server (local mode), not both".into()),
            (None, true) => return Err("warp.server: give the server's start argv, e.g. [\"{binary}\", \"--port\", \"{port}\", \"{data_dirs}\"] (or an endpoint for external mode)".into()),
            (Some(e), true) => {
                let url: url::Url = e.parse().map_err(|err| format!("warp.endpoint {e:?}: {err}"))?;
                if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
                    return Err(format!("warp.endpoint {e:?}: give an http(s) URL"));
                }
                if self.credentials_file.is_none() {
                    return Err("warp.credentials_file: external mode reads the endpoint's keys from a file (access_key=… / secret_key=…)".into());
                }
            }
            (None, false) => {
                if !self.server.iter().any(|e| e.contains("{port}")) {
                    return Err("warp.server: pass {port} to the server (Arbiter picks a free loopback port per phase)".into());
                }
                if self.binaries.is_empty() && (self.build.is_empty() || self.binary.is_none()) {
                    return Err("warp: give build (argv) and binary (its output path in the worktree), or prebuilt binaries per arm".into());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_parse_in_both_spellings() {
        let w = parse_workload("put-4KiB").unwrap();
        assert_eq!((w.kind, w.size), (Workload::Put, 4096));
        assert_eq!(parse_workload("mixed-256k").unwrap().size, 256 * 1024);
        assert_eq!(parse_workload("get-10mib").unwrap().size, 10 << 20);
        assert!(parse_workload("list-4KiB").unwrap_err().contains("\"list\""));
        assert!(parse_workload("put").unwrap_err().contains("KIND-SIZE"));
        assert!(parse_workload("get-4XB").is_err());
    }
}
