//! The `[warp]` table of a warp suite: how the S3 server under test is made and started (local mode)
//! or reached and redeployed (external mode), the workload × drive-sync matrix, the load settings and
//! the budgets. Checked when the suite is loaded; every error names the field.

use judge::units::parse_duration;
use judge::warp::Workload;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;
use wire::launch::{JsonWarpMatrix, WarpPreset};

/// Placeholders of the server's start argv (besides the fingerprint's fields).
pub const SERVER_PLACEHOLDERS: &[&str] = &["binary", "port", "data_dirs", "access_key", "secret_key"];

/// A cell's rounds an arm with adaptive rounds, unless the suite or launch says (or three times the planned
/// is more): `arbiter simulate --kind warp` on this machine's noise found a 50 % drop in one cell of 24 in
/// 33 % of AB matrices at 9 rounds an arm and 98 % at 18 (README).
pub const DEFAULT_ROUND_CAP: u32 = 18;

/// The highest `max_rounds` a suite or a launch may set.
pub const MAX_ROUNDS_CAP: u32 = 100;

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
    /// What a launch may ask of the matrix (`[warp.limits]`).
    #[serde(default)]
    pub limits: WarpLimits,
    /// The quick preset (`[warp.smoke]`, the shape of a launch's `warp` settings); default: the shortest
    /// matrix the limits allow (every workload and drive-sync value, the fewest rounds, the shortest
    /// window and cool-down, the suite's warm-up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smoke: Option<JsonWarpMatrix>,
    /// Per cell, what the page says beside it (`[warp.notes]`): a known reason a cell moves, e.g.
    /// `"get-4KiB" = "bimodal through delayed ACKs"`. The key is a workload (every drive-sync value) or
    /// `workload/sync-on` / `workload/sync-off`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub notes: BTreeMap<String, String>,
    /// Adaptive rounds (default on): once the suite is calibrated for the matrix settings, a cell whose
    /// noise-aware reading more phases could change gets another pair of phases (`engine::warp::adaptive`).
    #[serde(default = "default_true")]
    pub adaptive_rounds: bool,
    /// The most rounds a cell takes an arm with adaptive rounds (default: 18, or three times the planned if more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rounds: Option<u32>,
}

/// The range of each matrix setting a launch may choose (both ends included). A suite's own values
/// need not lie inside: the limits bound what a launch asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WarpLimits {
    #[serde(default = "default_rounds_limit")]
    pub rounds: [u32; 2],
    #[serde(default = "default_duration_limit")]
    pub duration: [String; 2],
    #[serde(default = "default_warmup_limit")]
    pub warmup: [String; 2],
    #[serde(default = "default_cooldown_limit")]
    pub cooldown: [String; 2],
    #[serde(default = "default_concurrency_limit")]
    pub concurrency: [u32; 2],
}

impl WarpLimits {
    /// "rounds 1–10 · duration 1s–5m · warm-up 0s–1m · cool-down 0s–1m · concurrency 1–64".
    pub fn describe(&self) -> String {
        format!(
            "rounds {}–{} · duration {}–{} · warm-up {}–{} · cool-down {}–{} · concurrency {}–{}",
            self.rounds[0],
            self.rounds[1],
            self.duration[0],
            self.duration[1],
            self.warmup[0],
            self.warmup[1],
            self.cooldown[0],
            self.cooldown[1],
            self.concurrency[0],
            self.concurrency[1]
        )
    }
}

impl Default for WarpLimits {
    fn default() -> Self {
        WarpLimits {
            rounds: default_rounds_limit(),
            duration: default_duration_limit(),
            warmup: default_warmup_limit(),
            cooldown: default_cooldown_limit(),
            concurrency: default_concurrency_limit(),
        }
    }
}

fn default_rounds_limit() -> [u32; 2] {
    [1, 10]
}
fn default_duration_limit() -> [String; 2] {
    ["1s".into(), "5m".into()]
}
fn default_warmup_limit() -> [String; 2] {
    ["0s".into(), "1m".into()]
}
fn default_cooldown_limit() -> [String; 2] {
    ["0s".into(), "1m".into()]
}
fn default_concurrency_limit() -> [u32; 2] {
    [1, 64]
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
    /// The server ignores the switch (s3s-fs has none): its sync-on and sync-off cells measure the same
    /// code the same way, so a gap between their baselines is called out as a measurement to check.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignored: bool,
}

impl Default for DriveSync {
    fn default() -> Self {
        DriveSync { env: None, on: default_on(), off: default_off(), values: default_sync_values(), ignored: false }
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

fn default_true() -> bool {
    true
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

    /// A cell's rounds an arm as planned: rounds × the arm's phases per drive-sync value (AB one, ABBA two).
    pub fn planned_rounds_an_arm(&self) -> u32 {
        self.rounds * if self.order == PhaseOrder::Abba { 2 } else { 1 }
    }

    /// The cap of a cell's rounds an arm with adaptive rounds: `max_rounds`, else [`DEFAULT_ROUND_CAP`] or
    /// three times the planned, whichever is more.
    pub fn round_cap(&self) -> u32 {
        let planned = self.planned_rounds_an_arm();
        self.max_rounds.unwrap_or((3 * planned).max(DEFAULT_ROUND_CAP)).max(planned)
    }

    /// The drive-sync values of the matrix, as booleans, in the suite's order.
    pub fn sync_values(&self) -> Vec<bool> {
        self.drive_sync.values.iter().map(|v| v == "on").collect()
    }

    /// The suite's note on one cell: `workload/sync-…` first, else the workload's.
    pub fn note_for(&self, workload: &str, sync_label: &str) -> Option<String> {
        self.notes.get(&format!("{workload}/{sync_label}")).or_else(|| self.notes.get(workload)).cloned()
    }

    /// The smoke preset: the suite's `[warp.smoke]`, else the shortest matrix its limits allow.
    pub fn smoke_matrix(&self) -> JsonWarpMatrix {
        self.smoke.clone().unwrap_or_else(|| JsonWarpMatrix {
            rounds: Some(self.limits.rounds[0]),
            duration: Some(self.limits.duration[0].clone()),
            cooldown: Some(self.limits.cooldown[0].clone()),
            ..JsonWarpMatrix::default()
        })
    }

    /// This launch's matrix: the preset's values, then each field the launch gives, each checked
    /// against the suite (workloads and drive-sync values it has) and its `[warp.limits]`. Every error
    /// names the field and the limit.
    pub fn with_matrix(&self, asked: &JsonWarpMatrix) -> Result<WarpSpec, String> {
        let mut out = self.clone();
        if asked.preset == Some(WarpPreset::Smoke) {
            out.set_matrix(&self.smoke_matrix(), "warp.smoke")?;
        }
        out.set_matrix(asked, "warp")?;
        let kept = out.workloads.clone();
        out.notes.retain(|key, _| kept.iter().any(|w| key.split('/').next() == Some(w.as_str())));
        Ok(out)
    }

    fn set_matrix(&mut self, m: &JsonWarpMatrix, prefix: &str) -> Result<(), String> {
        if prefix != "warp" && m.preset.is_some() {
            return Err(format!("{prefix}.preset: a preset cannot name another preset"));
        }
        let limits = self.limits.clone();
        let within = |field: &str, v: u32, [lo, hi]: [u32; 2]| {
            if (lo..=hi).contains(&v) {
                Ok(v)
            } else {
                Err(format!("{prefix}.{field}: {v}: must be between {lo} and {hi} (the suite's [warp.limits])"))
            }
        };
        let within_time = |field: &str, v: &str, [lo, hi]: &[String; 2]| -> Result<String, String> {
            let d = parse_duration(v).map_err(|e| format!("{prefix}.{field}: {e}"))?;
            let (l, h) = (parse_duration(lo).unwrap_or_default(), parse_duration(hi).unwrap_or(Duration::MAX));
            if d < l || d > h {
                return Err(format!("{prefix}.{field}: {v}: must be between {lo} and {hi} (the suite's [warp.limits])"));
            }
            Ok(v.trim().to_string())
        };
        if let Some(asked) = &m.workloads {
            let field = format!("{prefix}.workloads");
            if asked.is_empty() {
                return Err(format!("{field}: name at least one of the suite's workloads ({})", self.workloads.join(", ")));
            }
            for (i, w) in asked.iter().enumerate() {
                if !self.workloads.contains(w) {
                    return Err(format!("{field}: {w:?} is not one of the suite's workloads ({})", self.workloads.join(", ")));
                }
                if asked[..i].contains(w) {
                    return Err(format!("{field}: {w:?} is listed twice"));
                }
            }
            self.workloads.retain(|w| asked.contains(w));
        }
        if let Some(asked) = &m.drive_sync {
            let field = format!("{prefix}.drive_sync");
            let have = &self.drive_sync.values;
            if asked.is_empty() || asked.iter().any(|v| !have.contains(v)) || (asked.len() == 2 && asked[0] == asked[1]) {
                return Err(format!("{field}: give one or both of the suite's drive-sync values ({})", have.join(", ")));
            }
            self.drive_sync.values.retain(|v| asked.contains(v));
        }
        if let Some(v) = m.rounds {
            self.rounds = within("rounds", v, limits.rounds)?;
        }
        if let Some(v) = m.concurrency {
            self.concurrency = within("concurrency", v, limits.concurrency)?;
        }
        if let Some(v) = &m.duration {
            self.duration = within_time("duration", v, &limits.duration)?;
            if parse_duration(v).is_ok_and(|d| d.is_zero()) {
                return Err(format!("{prefix}.duration: must be above zero"));
            }
        }
        if let Some(v) = &m.warmup {
            self.warmup = within_time("warmup", v, &limits.warmup)?;
        }
        if let Some(v) = &m.cooldown {
            self.cooldown = within_time("cooldown", v, &limits.cooldown)?;
        }
        if let Some(v) = m.adaptive_rounds {
            self.adaptive_rounds = v;
        }
        if let Some(v) = m.max_rounds {
            self.max_rounds = Some(v);
        }
        if let Some(cap) = self.max_rounds.filter(|c| !(self.planned_rounds_an_arm()..=MAX_ROUNDS_CAP).contains(c)) {
            return Err(format!(
                "{prefix}.max_rounds: {cap}: give {}–{MAX_ROUNDS_CAP} (at least the planned rounds an arm: {} round{} × {} phase{})",
                self.planned_rounds_an_arm(),
                self.rounds,
                if self.rounds == 1 { "" } else { "s" },
                self.planned_rounds_an_arm() / self.rounds.max(1),
                if self.order == PhaseOrder::Abba { "s" } else { "" }
            ));
        }
        Ok(())
    }

    /// The matrix in a line, for the launch preview: "2 workloads (put-4KiB, get-4KiB) × drive sync on;
    /// 1 round of 1s (warm-up 2s, cool-down 0s), concurrency 8".
    pub fn describe_matrix(&self) -> String {
        let rounds = if self.rounds == 1 { "1 round".to_string() } else { format!("{} rounds", self.rounds) };
        format!(
            "{} workload{} ({}) × drive sync {}; {rounds} of {} each (warm-up {}, cool-down {}), concurrency {}",
            self.workloads.len(),
            if self.workloads.len() == 1 { "" } else { "s" },
            self.workloads.join(", "),
            self.drive_sync.values.join("+"),
            self.duration,
            self.warmup,
            self.cooldown,
            self.concurrency
        )
    }

    /// The suite's warp settings in words, for its page: (what, how), one line each.
    pub fn facts(&self) -> Vec<(&'static str, String)> {
        let quoted =
            |argv: &[String]| argv.iter().map(|a| if a.contains(' ') { format!("{a:?}") } else { a.clone() }).collect::<Vec<_>>().join(" ");
        let mut out = Vec::new();
        match &self.endpoint {
            Some(endpoint) => {
                out.push(("Server", format!("external endpoint {endpoint}, each arm deployed by `{}`", quoted(&self.deploy_hook))))
            }
            None => {
                let binary = if !self.binaries.is_empty() {
                    format!("prebuilt binaries per arm ({})", self.binaries.keys().cloned().collect::<Vec<_>>().join(", "))
                } else {
                    format!(
                        "built from each arm's SHA by running: {} → {} (cached by SHA)",
                        quoted(&self.build),
                        self.binary.as_deref().unwrap_or("?")
                    )
                };
                out.push(("Server", format!("{binary}; started per phase as: {}", quoted(&self.server))));
                out.push(("Health", format!("GET {} within {} s", self.health_path, self.health_timeout_secs)));
            }
        }
        out.push(("Matrix", self.describe_matrix()));
        out.push((
            "Phase order",
            match self.order {
                PhaseOrder::Ab => "AB: the baseline's phases, then the candidate's".to_string(),
                PhaseOrder::Abba => "ABBA: A1 B1 B2 A2, so a drifting baseline shows".to_string(),
            },
        ));
        let tail = match (self.tail_fail_pct, self.tail_warn_pct) {
            (None, None) => String::new(),
            (f, w) => {
                format!("; p90/p99 latency FAIL beyond {} %, WARN beyond {} %", f.unwrap_or(self.fail_pct), w.unwrap_or(self.warn_pct))
            }
        };
        out.push(("Budgets", format!("FAIL beyond {} %, WARN beyond {} % (relative to the baseline){tail}", self.fail_pct, self.warn_pct)));
        out.push((
            "Load tool",
            match self.tool {
                LoadTool::Builtin => "Arbiter's built-in driver".to_string(),
                LoadTool::Warp => format!("warp ({})", self.warp_bin.as_deref().unwrap_or("from PATH")),
            },
        ));
        if let Some(var) = &self.drive_sync.env {
            let ignored = if self.drive_sync.ignored { " — the server ignores it (its sync cells measure the same thing)" } else { "" };
            out.push(("Drive sync", format!("{var}={} (on) / {} (off){ignored}", self.drive_sync.on, self.drive_sync.off)));
        }
        out.push(("A launch may choose", self.limits.describe()));
        if let Ok(smoke) = self.with_matrix(&JsonWarpMatrix { preset: Some(WarpPreset::Smoke), ..JsonWarpMatrix::default() }) {
            out.push(("Smoke preset", smoke.describe_matrix()));
        }
        out.extend(self.notes.iter().map(|(cell, note)| ("Note", format!("{cell}: {note}"))));
        out
    }

    /// Everything that does not depend on the rest of the suite.
    pub fn check(&self) -> Result<(), String> {
        let l = &self.limits;
        if l.rounds[0] < 1 || l.rounds[0] > l.rounds[1] || l.concurrency[0] < 1 || l.concurrency[0] > l.concurrency[1] {
            return Err("warp.limits: give [lowest, highest] with 1 ≤ lowest ≤ highest for rounds and concurrency".into());
        }
        for (field, [lo, hi]) in [("duration", &l.duration), ("warmup", &l.warmup), ("cooldown", &l.cooldown)] {
            let (a, b) = (parse_duration(lo), parse_duration(hi));
            match (a, b) {
                (Ok(a), Ok(b)) if a <= b => {}
                (Err(e), _) | (_, Err(e)) => return Err(format!("warp.limits.{field}: {e}")),
                _ => return Err(format!("warp.limits.{field}: give [shortest, longest], e.g. [\"1s\", \"5m\"]")),
            }
        }
        for (key, note) in &self.notes {
            let (workload, sync) = key.split_once('/').map_or((key.as_str(), None), |(w, s)| (w, Some(s)));
            if !self.workloads.iter().any(|w| w == workload) {
                return Err(format!(
                    "warp.notes.{key:?}: {workload:?} is not one of the suite's workloads ({})",
                    self.workloads.join(", ")
                ));
            }
            if sync.is_some_and(|s| s != "sync-on" && s != "sync-off") {
                return Err(format!("warp.notes.{key:?}: after the workload give /sync-on or /sync-off"));
            }
            if note.trim().is_empty() || note.chars().count() > 600 {
                return Err(format!("warp.notes.{key:?}: give the note in 1–600 characters"));
            }
        }
        if self.smoke.as_ref().is_some_and(|m| m.preset.is_some()) {
            return Err("warp.smoke.preset: a preset cannot name another preset".into());
        }
        self.with_matrix(&JsonWarpMatrix { preset: Some(WarpPreset::Smoke), ..JsonWarpMatrix::default() })?;
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

    fn spec(extra: &str) -> WarpSpec {
        let text = format!(
            "server = [\"{{binary}}\", \"{{port}}\"]\nbinary = \"s3\"\nbuild = [\"make\"]\nduration = \"10s\"\nwarmup = \"2s\"\nrounds = 3\n{extra}"
        );
        let spec: WarpSpec = toml::from_str(&text).unwrap();
        spec.check().unwrap();
        spec
    }

    fn ask(json: serde_json::Value) -> JsonWarpMatrix {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_launch_shapes_the_matrix_within_the_suites_limits() {
        let s = spec("[limits]\nrounds = [2, 10]\nduration = [\"1s\", \"5m\"]\n");
        let m = s
            .with_matrix(&ask(
                serde_json::json!({"workloads": ["get-4KiB", "put-4KiB"], "drive_sync": ["off"], "rounds": 2, "duration": "3s"}),
            ))
            .unwrap();
        // The suite's order, not the request's.
        assert_eq!(m.workloads, ["put-4KiB", "get-4KiB"]);
        assert_eq!(
            (m.drive_sync.values.clone(), m.rounds, m.duration.as_str(), m.warmup.as_str()),
            (vec!["off".to_string()], 2, "3s", "2s")
        );
        assert_eq!(
            m.describe_matrix(),
            "2 workloads (put-4KiB, get-4KiB) × drive sync off; 2 rounds of 3s each (warm-up 2s, cool-down 2s), concurrency 8"
        );
        let refused = |json: serde_json::Value| s.with_matrix(&ask(json)).unwrap_err();
        assert_eq!(refused(serde_json::json!({"rounds": 1})), "warp.rounds: 1: must be between 2 and 10 (the suite's [warp.limits])");
        assert_eq!(
            refused(serde_json::json!({"duration": "10m"})),
            "warp.duration: 10m: must be between 1s and 5m (the suite's [warp.limits])"
        );
        assert!(refused(serde_json::json!({"duration": "soon"})).starts_with("warp.duration: "));
        assert_eq!(
            refused(serde_json::json!({"concurrency": 500})),
            "warp.concurrency: 500: must be between 1 and 64 (the suite's [warp.limits])"
        );
        assert!(refused(serde_json::json!({"workloads": ["put-1MiB"]}))
            .starts_with("warp.workloads: \"put-1MiB\" is not one of the suite's workloads (put-4KiB, put-4MiB"));
        assert!(refused(serde_json::json!({"workloads": []})).starts_with("warp.workloads: name at least one"));
        assert!(refused(serde_json::json!({"drive_sync": ["maybe"]})).starts_with("warp.drive_sync: give one or both"));
        assert!(serde_json::from_value::<JsonWarpMatrix>(serde_json::json!({"round": 2})).is_err(), "unknown fields are refused");
    }

    #[test]
    fn the_smoke_preset_is_the_suites_own_or_its_shortest_allowed_matrix() {
        let s = spec("");
        let smoke = s.with_matrix(&ask(serde_json::json!({"preset": "smoke"}))).unwrap();
        assert_eq!((smoke.rounds, smoke.duration.as_str(), smoke.cooldown.as_str(), smoke.workloads.len()), (1, "1s", "0s", 6));
        // A field given beside the preset wins.
        assert_eq!(s.with_matrix(&ask(serde_json::json!({"preset": "smoke", "rounds": 2}))).unwrap().rounds, 2);
        assert_eq!(s.with_matrix(&ask(serde_json::json!({"preset": "full"}))).unwrap(), s);
        let own = spec("[smoke]\nworkloads = [\"put-4KiB\"]\nduration = \"2s\"\n");
        let smoke = own.with_matrix(&ask(serde_json::json!({"preset": "smoke"}))).unwrap();
        assert_eq!((smoke.workloads.clone(), smoke.duration.as_str(), smoke.rounds), (vec!["put-4KiB".to_string()], "2s", 3));
        // A smoke preset outside the limits is the suite's error, found when it is loaded.
        let text = "server = [\"{binary}\", \"{port}\"]\nbinary = \"s3\"\nbuild = [\"make\"]\n[smoke]\nrounds = 50\n";
        let bad: WarpSpec = toml::from_str(text).unwrap();
        assert_eq!(bad.check().unwrap_err(), "warp.smoke.rounds: 50: must be between 1 and 10 (the suite's [warp.limits])");
        let text = "server = [\"{binary}\", \"{port}\"]\nbinary = \"s3\"\nbuild = [\"make\"]\n[limits]\nrounds = [5, 2]\n";
        assert!(toml::from_str::<WarpSpec>(text).unwrap().check().unwrap_err().starts_with("warp.limits:"));
    }

    #[test]
    fn notes_name_a_cell_of_the_suite_and_follow_the_launchs_workloads() {
        let s = spec("[notes]\n\"get-4KiB\" = \"delayed ACKs\"\n\"put-4KiB/sync-off\" = \"no fsync\"\n");
        assert_eq!(s.note_for("get-4KiB", "sync-on").as_deref(), Some("delayed ACKs"));
        assert_eq!(s.note_for("put-4KiB", "sync-off").as_deref(), Some("no fsync"));
        assert_eq!(s.note_for("put-4KiB", "sync-on"), None);
        // A launch without get-4KiB keeps only the notes of the cells it runs.
        let m = s.with_matrix(&ask(serde_json::json!({"workloads": ["put-4KiB"]}))).unwrap();
        assert_eq!(m.notes.keys().collect::<Vec<_>>(), ["put-4KiB/sync-off"]);
        m.check().unwrap();
        let bad = |notes: &str| {
            let text = format!("server = [\"{{binary}}\", \"{{port}}\"]\nbinary = \"s3\"\nbuild = [\"make\"]\n[notes]\n{notes}\n");
            toml::from_str::<WarpSpec>(&text).unwrap().check().unwrap_err()
        };
        assert!(bad("\"list-4KiB\" = \"x\"").starts_with("warp.notes.\"list-4KiB\": \"list-4KiB\" is not one of the suite's workloads"));
        assert_eq!(bad("\"get-4KiB/on\" = \"x\""), "warp.notes.\"get-4KiB/on\": after the workload give /sync-on or /sync-off");
        assert_eq!(bad("\"get-4KiB\" = \" \""), "warp.notes.\"get-4KiB\": give the note in 1–600 characters");
    }
}
