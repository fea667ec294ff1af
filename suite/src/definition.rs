//! A suite: a named, reusable benchmark definition, written as TOML (`suites/*.toml`). This module
//! parses and checks one, validates a launch's fingerprint against it, finds a sample's data locality,
//! and renders an arm's argv: each placeholder is substituted inside one argv element, never through a
//! shell, and every substituted value is checked first.

use judge::ExperimentKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use judge::launch_rules::{is_safe_value, FieldSpec};

/// Placeholders every arm command may use besides the fingerprint's own fields.
pub const RUN_PLACEHOLDERS: &[&str] = &["worktree", "run_tag", "arm", "sha", "finelog_url", "region", "cluster", "data_dir", "python"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteDefinition {
    pub name: String,
    pub kind: ExperimentKind,
    #[serde(default)]
    pub description: String,
    /// A local path (relative to the suite file's folder, or absolute) or a clone URL.
    pub repository: String,
    /// The branch a head ref is compared against (control = merge-base of it and the head).
    #[serde(default = "default_base_branch")]
    pub base_branch: String,
    #[serde(default)]
    pub launcher: Launcher,
    /// The arm's command as argv; `{placeholder}`s are filled per trial (pipeline suites).
    #[serde(default)]
    pub command: Vec<String>,
    #[serde(default = "default_timeout")]
    pub timeout_minutes: u32,
    #[serde(default)]
    pub defaults: TrialDefaults,
    /// Worker resources (pipeline suites; RAM is the memory guardrail).
    #[serde(default)]
    pub resources: Resources,
    #[serde(default)]
    pub fingerprint: BTreeMap<String, FieldSpec>,
    /// Sample prefix → where its compute must run. When present, a sample matching no row is refused.
    #[serde(default)]
    pub locality: Vec<Locality>,
    /// How the cluster launcher drives the engine (`launcher = "cluster"` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<super::cluster::ClusterSpec>,
    /// The server under test, the matrix and the budgets (`kind = "warp"` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warp: Option<super::warp::WarpSpec>,
    /// Where to send word of a regression, a gate FAIL or an infrastructure failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<crate::notify::NotifySpec>,
    /// Scheduled runs of a ref (`[[schedules]]`): baselines, or A/Bs against the last good SHA.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedules: Vec<crate::schedule::ScheduleSpec>,
    /// How old a baseline run may be and still be reused as a launch's control.
    #[serde(default = "default_baseline_age")]
    pub baseline_max_age_hours: u32,
    /// Extra arms may bring a `patch` or a `commit` config diff (code beyond the arm's ref, applied and
    /// run): only when the suite says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_patches: bool,
    /// The settings an extra arm may override (`{"overrides": {"KEY": "value"}}`), as names or prefixes
    /// ending in `*` (`["POOL_SIZE", "ZEPHYR_*"]`): an allowlist; none listed, none taken. Settings that
    /// change how programs are found or loaded are refused whatever the list says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
    /// The pipeline verdict's margins and error rate (`[judge]`); the documented defaults otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeSpec>,
    /// `[bisect]`: a bisection's budget when its request does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bisect: Option<BisectDefaults>,
}

/// `[judge]`: what matters to this suite. The margins are the smallest changes that matter (they decide
/// only "flat" and "negligible"); alpha is the experiment's family-wise error rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct JudgeSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_margin_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_margin_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// X of the third answer, "no regression of X % or more" (at least the CPU margin, at most the cap);
    /// unset: planned from each experiment's budget and noise profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_regression_pct: Option<f64>,
    /// Above this X there is no third answer: inconclusive instead (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_no_regression_pct: Option<f64>,
}

/// `[bisect]`: the budget of a bisection over this suite (each value: when the request does not say).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BisectDefaults {
    /// Experiments in all (default: the ends, the probes a range needs, the confirmation, and 2 more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Trials an arm of each step (default: the suite's `defaults.max_trials`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_trials: Option<u32>,
    /// Wall time of the whole bisection (default 720 minutes); past it, running steps finish, none starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_minutes: Option<u32>,
    /// Probes at once (default: 1 on a host; a cluster suite's `max_parallel` ÷ 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel: Option<u32>,
}

/// The most warm-up trials a suite or launch may ask for.
pub const MAX_WARM_UP: u32 = 10;

impl SuiteDefinition {
    /// Warm-up trials an experiment of this suite runs before its first pair: the suite's
    /// `defaults.warm_up`, else one for a pipeline suite run on this host (the first trial on a host pays
    /// for a cold page cache and the interpreter's and log server's first work: measured +8.7 % first-of-pair
    /// and the experiment's first trial the highest of 16), none on a cluster (each job may land on another
    /// node, which one warm-up would not warm) and none for warp (each phase has its own warm-up).
    pub fn warm_up(&self) -> u32 {
        match (self.defaults.warm_up, self.kind, self.launcher) {
            (Some(w), _, _) => w,
            (None, judge::ExperimentKind::Pipeline, Launcher::Local) => 1,
            _ => 0,
        }
    }
}

impl SuiteDefinition {
    /// The pipeline method this suite's experiments are judged with (`paired` when trials ran side by side).
    pub fn judge_method(&self, paired: bool) -> judge::pipeline::MethodConfig {
        let d = judge::pipeline::MethodConfig::default();
        let j = self.judge.unwrap_or_default();
        judge::pipeline::MethodConfig {
            alpha: j.alpha.unwrap_or(d.alpha),
            cpu_margin_pct: j.cpu_margin_pct.unwrap_or(d.cpu_margin_pct),
            elapsed_margin_pct: j.elapsed_margin_pct.unwrap_or(d.elapsed_margin_pct),
            paired,
            no_regression: j.no_regression_pct.map_or(d.no_regression, judge::pipeline::method::NoRegression::At),
            max_no_regression_pct: j.max_no_regression_pct.unwrap_or(d.max_no_regression_pct),
        }
    }
}

fn default_base_branch() -> String {
    "main".into()
}
fn default_baseline_age() -> u32 {
    168
}
fn default_timeout() -> u32 {
    60
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Launcher {
    #[default]
    Local,
    Cluster,
}

pub use wire::launch::{JsonTrials, TrialOrder};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrialDefaults {
    /// Trials an arm: a number, or `"auto"` (pipeline suites: pairs added while the verdict is undecided).
    #[serde(default = "default_trials")]
    pub trials: JsonTrials,
    #[serde(default = "default_order")]
    pub order: TrialOrder,
    /// With `trials = "auto"`: the most trials an arm runs before the experiment ends undecided.
    #[serde(default = "default_max_trials", skip_serializing_if = "is_default_max_trials")]
    pub max_trials: u32,
    /// With `trials = "auto"`: no pair is added once the experiment has run this long (minutes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_minutes: Option<u32>,
    /// Unmeasured trials run before the plan's first pair, alternating which arm's code they run (0–10).
    /// Unset: one for a pipeline suite on this host, none on a cluster (see [`SuiteDefinition::warm_up`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_up: Option<u32>,
}

fn default_trials() -> JsonTrials {
    JsonTrials::Fixed(3)
}

/// `max_trials` when a suite does not say.
pub const DEFAULT_MAX_TRIALS: u32 = 20;

fn default_max_trials() -> u32 {
    DEFAULT_MAX_TRIALS
}

fn is_default_max_trials(n: &u32) -> bool {
    *n == DEFAULT_MAX_TRIALS
}
fn default_order() -> TrialOrder {
    TrialOrder::Interleaved
}

impl Default for TrialDefaults {
    fn default() -> Self {
        TrialDefaults { trials: default_trials(), order: default_order(), max_trials: DEFAULT_MAX_TRIALS, max_minutes: None, warm_up: None }
    }
}

/// Worker resources as written (`"4GiB"`), checked to parse. RAM is the memory guardrail.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    pub cpu: f64,
    pub ram: String,
    #[serde(default)]
    pub disk: Option<String>,
}

impl Resources {
    pub fn ram_bytes(&self) -> Result<u64, String> {
        let bytes = judge::units::parse_size(&self.ram).map_err(|e| format!("resources.ram {:?}: {e}", self.ram))?;
        if bytes < 1.0 {
            return Err(format!("resources.ram {:?}: give a size above zero, e.g. \"4GiB\"", self.ram));
        }
        Ok(bytes as u64)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locality {
    pub prefix: String,
    #[serde(default)]
    pub region: Option<String>,
    #[serde(default)]
    pub cluster: Option<String>,
}

/// A fingerprint value, after validation: what every arm of an experiment shares.
pub type Fingerprint = BTreeMap<String, serde_json::Value>;

/// A suite, schedule or placeholder name: 1–64 letters, digits, '-' or '_'.
pub(crate) fn is_name(v: &str) -> bool {
    (1..=64).contains(&v.len()) && v.chars().all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
}

/// The `{name}` placeholders in one argv element, or why the element is malformed.
pub fn placeholders(element: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut rest = element;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let close = after.find('}').ok_or_else(|| format!("argv element {element:?} has an unclosed '{{'"))?;
        let name = &after[..close];
        if !is_name(name) {
            return Err(format!("argv element {element:?} has a malformed placeholder {{{name}}}"));
        }
        out.push(name);
        rest = &after[close + 1..];
    }
    if rest.contains('}') {
        return Err(format!("argv element {element:?} has a '}}' without '{{'"));
    }
    Ok(out)
}

impl SuiteDefinition {
    /// Parses and checks a suite file's text; the error names the file's problem.
    pub fn from_toml(text: &str) -> Result<SuiteDefinition, String> {
        let suite: SuiteDefinition = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            let message = e.message().trim().replace('\n', " ");
            match line {
                Some(n) => format!("line {n}: {message}"),
                None => message,
            }
        })?;
        suite.check()?;
        Ok(suite)
    }

    fn check(&self) -> Result<(), String> {
        if !is_name(&self.name) {
            return Err(format!("name {:?}: use 1–64 letters, digits, '-' or '_'", self.name));
        }
        for pattern in &self.overrides {
            judge::launch_rules::check_override_pattern(pattern)?;
        }
        if let Some(notify) = &self.notify {
            notify.check()?;
        }
        crate::schedule::check_all(self)?;
        if self.kind == ExperimentKind::Warp {
            if self.judge.is_some() {
                return Err(
                    "[judge] holds the pipeline verdict's margins; a warp suite's budgets are in [warp] (fail_pct, warn_pct)".into()
                );
            }
            return self.check_warp();
        }
        self.judge_method(false).check().map_err(|(which, what)| {
            let field = if which == "alpha" { "alpha".to_string() } else { format!("{which}_pct") };
            format!("judge.{field} = {what}")
        })?;
        if self.warp.is_some() {
            return Err("[warp] is only for kind = \"warp\"".into());
        }
        if self.command.is_empty() {
            return Err("command: give the arm's argv, e.g. [\"python\", \"{worktree}/bench.py\", \"--run-tag\", \"{run_tag}\"]".into());
        }
        if self.repository.trim().is_empty() {
            return Err("repository: give a local path or a clone URL".into());
        }
        if !self.command.iter().any(|e| e.contains("{run_tag}")) {
            return Err("command: pass {run_tag} to the arm, so that no trial cache-hits another".into());
        }
        self.check_placeholders("command", &self.command, &[])?;
        match (self.launcher, &self.cluster) {
            (Launcher::Cluster, None) => {
                return Err("launcher \"cluster\" needs a [cluster] table (e.g. profile = \"slurm\")".into());
            }
            (Launcher::Local, Some(_)) => return Err("[cluster] is only for launcher = \"cluster\"".into()),
            (Launcher::Cluster, Some(spec)) => {
                let resolved = spec.resolved()?;
                for (name, template) in resolved.templates() {
                    self.check_placeholders(&format!("cluster.{name}"), template, super::cluster::CLUSTER_PLACEHOLDERS)?;
                }
            }
            (Launcher::Local, None) => {}
        }
        if let Some(n) = self.defaults.trials.fixed() {
            if n == 0 || n > 100 {
                return Err(format!("defaults.trials {n}: use 1–100, or \"auto\""));
            }
        }
        if !(2..=100).contains(&self.defaults.max_trials) {
            return Err(format!("defaults.max_trials {}: use 2–100", self.defaults.max_trials));
        }
        if let Some(w) = self.defaults.warm_up.filter(|w| *w > MAX_WARM_UP) {
            return Err(format!("defaults.warm_up {w}: use 0–{MAX_WARM_UP} unmeasured trials before the first pair"));
        }
        if self.defaults.warm_up.is_some_and(|w| w > 0) && self.kind == judge::ExperimentKind::Warp {
            return Err("defaults.warm_up: a warp suite warms up inside each phase ([warp] warm-up); leave it out".into());
        }
        if self.defaults.max_minutes == Some(0) {
            return Err("defaults.max_minutes 0: give the minutes after which no pair is added, or leave it out".into());
        }
        if self.resources.cpu.is_nan() || self.resources.cpu <= 0.0 {
            return Err(format!("resources.cpu {}: must be above 0", self.resources.cpu));
        }
        self.resources.ram_bytes()?;
        if let Some(disk) = &self.resources.disk {
            judge::units::parse_size(disk).map_err(|e| format!("resources.disk {disk:?}: {e}"))?;
        }
        for (name, spec) in &self.fingerprint {
            if !is_name(name) || RUN_PLACEHOLDERS.contains(&name.as_str()) {
                return Err(format!(
                    "fingerprint.{name}: use a name of letters, digits, '-' or '_' that is not one of {}",
                    RUN_PLACEHOLDERS.join(", ")
                ));
            }
            if let Some(default) = spec.default_value() {
                spec.check(&default).map_err(|e| format!("fingerprint.{name}.default: {e}"))?;
            }
        }
        if !self.locality.is_empty() && !self.fingerprint.contains_key("sample") {
            return Err("locality: a locality table maps a `sample` fingerprint field, which this suite lacks".into());
        }
        for row in &self.locality {
            if row.region.is_none() && row.cluster.is_none() {
                return Err(format!("locality {:?}: give a region or a cluster", row.prefix));
            }
            for v in [&row.region, &row.cluster].into_iter().flatten() {
                if !is_safe_value(v) {
                    return Err(format!("locality {:?}: {v:?} is not a plain region or cluster name", row.prefix));
                }
            }
        }
        Ok(())
    }

    fn check_warp(&self) -> Result<(), String> {
        let Some(warp) = &self.warp else {
            return Err("a warp suite needs a [warp] table (server or endpoint, workloads, budgets)".into());
        };
        if !self.command.is_empty() || self.launcher != Launcher::Local || self.cluster.is_some() {
            return Err(
                "a warp suite describes its server in [warp] (server, build, endpoint); leave out command, launcher and [cluster]".into()
            );
        }
        if self.repository.trim().is_empty() {
            return Err("repository: give a local path or a clone URL".into());
        }
        match self.defaults.trials.fixed() {
            None => {
                return Err(
                    "defaults.trials \"auto\": adaptive trials are for pipeline suites; a warp suite repeats its phase order 1–20 times"
                        .into(),
                )
            }
            Some(n) if n == 0 || n > 20 => {
                return Err(format!("defaults.trials {n}: a warp suite repeats its phase order 1–20 times"));
            }
            Some(_) => {}
        }
        warp.check()?;
        self.check_placeholders("warp.server", &warp.server, super::warp::SERVER_PLACEHOLDERS)?;
        self.check_placeholders("warp.build", &warp.build, &[])?;
        self.check_placeholders("warp.deploy_hook", &warp.deploy_hook, &[])?;
        let env_values: Vec<String> = warp.server_env.values().cloned().collect();
        self.check_placeholders("warp.server_env", &env_values, &["access_key", "secret_key"])?;
        for (name, spec) in &self.fingerprint {
            if !is_name(name) || RUN_PLACEHOLDERS.contains(&name.as_str()) || super::warp::SERVER_PLACEHOLDERS.contains(&name.as_str()) {
                return Err(format!("fingerprint.{name}: use a name of letters, digits, '-' or '_' that is not a placeholder"));
            }
            if let Some(default) = spec.default_value() {
                spec.check(&default).map_err(|e| format!("fingerprint.{name}.default: {e}"))?;
            }
        }
        Ok(())
    }

    fn check_placeholders(&self, what: &str, template: &[String], extra: &[&str]) -> Result<(), String> {
        for element in template {
            for p in placeholders(element).map_err(|e| format!("{what}: {e}"))? {
                if !RUN_PLACEHOLDERS.contains(&p) && !extra.contains(&p) && !self.fingerprint.contains_key(p) {
                    return Err(format!(
                        "{what}: unknown placeholder {{{p}}}; use a fingerprint field ({}) or one of {}",
                        self.fingerprint.keys().cloned().collect::<Vec<_>>().join(", "),
                        RUN_PLACEHOLDERS.iter().chain(extra).copied().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks a launch's fingerprint: every field declared, values of the declared type and allowed,
    /// defaults filled in. Unknown fields are refused by name.
    pub fn validate_fingerprint(&self, given: &serde_json::Map<String, serde_json::Value>) -> Result<Fingerprint, judge::FieldError> {
        if let Some(unknown) = given.keys().find(|k| !self.fingerprint.contains_key(*k)) {
            let known: Vec<&str> = self.fingerprint.keys().map(String::as_str).collect();
            let problem = format!("not a field of suite {:?}; its fields are {}", self.name, known.join(", "));
            return Err(judge::FieldError::new(format!("fingerprint.{unknown}"), problem));
        }
        let mut out = Fingerprint::new();
        for (name, spec) in &self.fingerprint {
            let value = judge::launch_rules::fingerprint_value(name, spec, given.get(name))?;
            out.insert(name.clone(), value);
        }
        Ok(out)
    }

    /// The locality row for the fingerprint's sample; `Ok(None)` when the suite maps none.
    pub fn locality_for(&self, fingerprint: &Fingerprint) -> Result<Option<&Locality>, judge::FieldError> {
        if self.locality.is_empty() {
            return Ok(None);
        }
        let sample = fingerprint.get("sample").and_then(|v| v.as_str()).unwrap_or("");
        self.locality.iter().filter(|l| sample.starts_with(&l.prefix)).max_by_key(|l| l.prefix.len()).map(Some).ok_or_else(|| {
            let problem = format!(
                "no data locality is known for sample {sample:?}: suite {:?} maps only {}; add the mapping before launching",
                self.name,
                self.locality.iter().map(|l| l.prefix.as_str()).collect::<Vec<_>>().join(", ")
            );
            judge::FieldError::new("fingerprint.sample", problem)
        })
    }

    /// The argv of one trial: each placeholder replaced inside its own element.
    pub fn render_argv(&self, fingerprint: &Fingerprint, run: &BTreeMap<&str, String>) -> Result<Vec<String>, String> {
        self.render(&self.command, fingerprint, run)
    }

    /// Any argv template of this suite (the command, a cluster template), rendered the same way.
    pub fn render(&self, template: &[String], fingerprint: &Fingerprint, run: &BTreeMap<&str, String>) -> Result<Vec<String>, String> {
        let value_of = |name: &str| -> Result<String, String> {
            if let Some(v) = run.get(name) {
                return Ok(v.clone());
            }
            match fingerprint.get(name) {
                Some(serde_json::Value::String(s)) => Ok(s.clone()),
                Some(other) => Ok(other.to_string()),
                None if name == "python" => Err("no value for placeholder {python}: this server has no Python configured \
                     (set ARBITER_PYTHON, or run scripts/setup.sh to make .venv)"
                    .to_string()),
                None => Err(format!("no value for placeholder {{{name}}}")),
            }
        };
        template
            .iter()
            .map(|element| {
                let mut out = element.clone();
                for name in placeholders(element)? {
                    let v = value_of(name)?;
                    // Paths Arbiter makes or is configured with (worktree, data dir, python) are trusted; everything else is checked.
                    if !matches!(
                        name,
                        "worktree"
                            | "data_dir"
                            | "python"
                            | "log"
                            | "wrapper"
                            | "binary"
                            | "port"
                            | "data_dirs"
                            | "access_key"
                            | "secret_key"
                    ) && !is_safe_value(&v)
                    {
                        return Err(format!("the value of {{{name}}}, {v:?}, holds characters an argv value may not"));
                    }
                    out = out.replace(&format!("{{{name}}}"), &v);
                }
                Ok(out)
            })
            .collect()
    }
}
