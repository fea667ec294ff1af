//! A cluster launcher, declared in a suite's `[cluster]` table: argv templates for submit, status,
//! cancel, logs and ping, the patterns that read a job id, a state and an exit code from the engine's
//! output, and a mapping from the engine's job states to Arbiter's trial outcomes. A `profile`
//! ("slurm", "iris") fills what the suite leaves out. Every template is argv: no value reaches a shell.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Placeholders only cluster templates have (besides the arm command's run placeholders).
pub const CLUSTER_PLACEHOLDERS: &[&str] = &["argv", "wrapper", "log", "cpus", "ram_mib", "timeout_minutes", "job_id"];

/// What an engine's job state means for the trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineOutcome {
    Queued,
    Running,
    Succeeded,
    Failed,
    /// Failed, reason out of memory.
    Oom,
    Preempted,
    NodeFail,
    Timeout,
    Cancelled,
}

impl EngineOutcome {
    pub fn is_final(self) -> bool {
        !matches!(self, EngineOutcome::Queued | EngineOutcome::Running)
    }
}

/// The `[cluster]` table as written; [`ClusterSpec::resolved`] merges in the profile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    /// "slurm" or "iris": the defaults for every field the suite leaves out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Submits one trial; `{argv}` (a whole element) becomes the arm's argv, element by element.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub submit: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cancel: Vec<String>,
    /// Prints the job's output so far; when absent the engine writes it to `{log}` itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logs: Vec<String>,
    /// Answers (exit 0) when the engine can take jobs; a queued trial waits while it does not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ping: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id_pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_pattern: Option<String>,
    /// Two groups: exit code and signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_pattern: Option<String>,
    /// In the job's log or status: it was killed for memory (some engines report that only there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_pattern: Option<String>,
    /// In a failed status command's output: the engine no longer knows the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_pattern: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub states: BTreeMap<String, EngineOutcome>,
    /// Variables of Arbiter's own environment the engine's commands get (e.g. `SLURM_CONF`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_env: Vec<String>,
    /// Fixed variables for the engine's commands, set by the suite's author (e.g. `SLURM_CONF`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// How long a running trial's status may fail before the trial is lost (engine unreachable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreachable_after_secs: Option<u64>,
    /// Longest wait between two status polls (the back-off starts at half a second).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_max_secs: Option<u64>,
    /// How many of this suite's trials may be in flight on the engine at once (default
    /// `DEFAULT_MAX_PARALLEL`, at most `MAX_PARALLEL_LIMIT`); `arbiter serve --engine-cap` bounds every
    /// suite on one engine together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_parallel: Option<u32>,
}

/// A cluster suite's trials in flight when it does not say (`[cluster] max_parallel`).
pub const DEFAULT_MAX_PARALLEL: u32 = 4;
/// The most a suite may ask for.
pub const MAX_PARALLEL_LIMIT: u32 = 64;

/// A cluster launcher with every field filled and every pattern compiled.
#[derive(Debug, Clone)]
pub struct ResolvedCluster {
    pub submit: Vec<String>,
    pub status: Vec<String>,
    pub cancel: Vec<String>,
    pub logs: Vec<String>,
    pub ping: Vec<String>,
    pub job_id: regex::Regex,
    pub state: regex::Regex,
    pub exit: Option<regex::Regex>,
    pub oom: Option<regex::Regex>,
    pub lost: Option<regex::Regex>,
    pub states: BTreeMap<String, EngineOutcome>,
    pub pass_env: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub unreachable_after: std::time::Duration,
    pub poll_max: std::time::Duration,
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The Slurm profile: `sbatch` of Arbiter's fixed wrapper script with the arm's argv as its arguments
/// (never `--wrap`), `scontrol show job -o`, `scancel`, logs from the `--output` file.
fn slurm() -> ClusterSpec {
    use EngineOutcome::*;
    let states = [
        ("PENDING", Queued),
        ("CONFIGURING", Queued),
        ("REQUEUED", Queued),
        ("SUSPENDED", Queued),
        ("RUNNING", Running),
        ("COMPLETING", Running),
        ("COMPLETED", Succeeded),
        ("FAILED", Failed),
        ("OUT_OF_MEMORY", Oom),
        ("PREEMPTED", Preempted),
        ("NODE_FAIL", NodeFail),
        ("BOOT_FAIL", NodeFail),
        ("TIMEOUT", Timeout),
        ("DEADLINE", Timeout),
        ("CANCELLED", Cancelled),
    ];
    ClusterSpec {
        profile: None,
        submit: strings(&[
            "sbatch",
            "--parsable",
            "--job-name",
            "{run_tag}",
            "--chdir",
            "{worktree}",
            "--output",
            "{log}",
            "--error",
            "{log}",
            "--cpus-per-task",
            "{cpus}",
            "--mem",
            "{ram_mib}M",
            "--time",
            "{timeout_minutes}",
            "{wrapper}",
            "{argv}",
        ]),
        status: strings(&["scontrol", "show", "job", "{job_id}", "-o"]),
        cancel: strings(&["scancel", "{job_id}"]),
        logs: vec![],
        ping: strings(&["scontrol", "ping"]),
        job_id_pattern: Some(r"^\s*(\d+)".into()),
        state_pattern: Some(r"JobState=([A-Z_]+)".into()),
        exit_pattern: Some(r"ExitCode=(\d+):(\d+)".into()),
        oom_pattern: Some(r"Exceeded job memory limit|oom-kill|OUT_OF_MEMORY".into()),
        lost_pattern: Some(r"Invalid job id".into()),
        states: states.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        pass_env: strings(&["SLURM_CONF"]),
        env: BTreeMap::new(),
        unreachable_after_secs: Some(120),
        poll_max_secs: Some(10),
        max_parallel: None,
    }
}

/// The Iris-shaped profile (the seeds' `iris job run --no-wait … -- python -m …`). Not run here: no Iris
/// cluster is reachable from this machine; its templates follow the seeds and the README.
fn iris() -> ClusterSpec {
    use EngineOutcome::*;
    let states = [
        ("PENDING", Queued),
        ("QUEUED", Queued),
        ("BUILDING", Queued),
        ("RUNNING", Running),
        ("SUCCEEDED", Succeeded),
        ("FAILED", Failed),
        ("OOM", Oom),
        ("PREEMPTED", Preempted),
        ("WORKER_FAILED", NodeFail),
        ("TIMEOUT", Timeout),
        ("KILLED", Cancelled),
        ("CANCELLED", Cancelled),
    ];
    ClusterSpec {
        profile: None,
        submit: strings(&[
            "iris",
            "job",
            "run",
            "--no-wait",
            "--job-name",
            "{run_tag}",
            "--target-cluster",
            "{cluster}",
            "--cpu",
            "{cpus}",
            "--memory",
            "{ram_mib}M",
            "--",
            "{argv}",
        ]),
        status: strings(&["iris", "job", "status", "{job_id}"]),
        cancel: strings(&["iris", "job", "kill", "{job_id}"]),
        logs: strings(&["iris", "job", "logs", "{job_id}", "--no-tail"]),
        ping: vec![],
        job_id_pattern: Some(r"(?m)^\s*(\S+)\s*$".into()),
        state_pattern: Some(r"(?i)state[=:]\s*([A-Z_]+)".into()),
        exit_pattern: None,
        oom_pattern: Some(r"(?i)out of memory|oom".into()),
        lost_pattern: Some(r"(?i)not found".into()),
        states: states.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        pass_env: strings(&["IRIS_CONFIG", "GOOGLE_APPLICATION_CREDENTIALS"]),
        env: BTreeMap::new(),
        unreachable_after_secs: Some(300),
        poll_max_secs: Some(30),
        max_parallel: None,
    }
}

impl ClusterSpec {
    /// How many of the suite's trials may be in flight at once.
    pub fn max_parallel(&self) -> u32 {
        self.max_parallel.unwrap_or(DEFAULT_MAX_PARALLEL)
    }

    /// What names the engine, for the server-wide cap: its profile and environment (two Slurm clusters
    /// differ in `SLURM_CONF`), and its submit template.
    pub fn engine_identity(&self) -> String {
        serde_json::json!({"profile": self.profile, "env": self.env, "pass_env": self.pass_env, "submit": self.submit}).to_string()
    }

    /// The spec with its profile's defaults filled in, patterns compiled and the must-haves checked.
    pub fn resolved(&self) -> Result<ResolvedCluster, String> {
        let base = match self.profile.as_deref() {
            None => ClusterSpec::default(),
            Some("slurm") => slurm(),
            Some("iris") => iris(),
            Some(other) => return Err(format!("cluster.profile {other:?}: use \"slurm\" or \"iris\", or give every template")),
        };
        let pick = |own: &Vec<String>, base: Vec<String>| if own.is_empty() { base } else { own.clone() };
        let or = |own: &Option<String>, base: Option<String>| own.clone().or(base);
        let compile = |name: &str, p: Option<String>| -> Result<Option<regex::Regex>, String> {
            p.map(|p| regex::Regex::new(&p).map_err(|e| format!("cluster.{name}: {e}"))).transpose()
        };
        let mut states = base.states.clone();
        states.extend(self.states.clone());
        let r = ResolvedCluster {
            submit: pick(&self.submit, base.submit),
            status: pick(&self.status, base.status),
            cancel: pick(&self.cancel, base.cancel),
            logs: pick(&self.logs, base.logs),
            ping: pick(&self.ping, base.ping),
            job_id: compile("job_id_pattern", or(&self.job_id_pattern, base.job_id_pattern))?
                .ok_or("cluster.job_id_pattern: give the pattern that reads the job id from the submit output")?,
            state: compile("state_pattern", or(&self.state_pattern, base.state_pattern))?
                .ok_or("cluster.state_pattern: give the pattern that reads the job state from the status output")?,
            exit: compile("exit_pattern", or(&self.exit_pattern, base.exit_pattern))?,
            oom: compile("oom_pattern", or(&self.oom_pattern, base.oom_pattern))?,
            lost: compile("lost_pattern", or(&self.lost_pattern, base.lost_pattern))?,
            states,
            pass_env: if self.pass_env.is_empty() { base.pass_env } else { self.pass_env.clone() },
            env: self.env.clone(),
            unreachable_after: std::time::Duration::from_secs(self.unreachable_after_secs.or(base.unreachable_after_secs).unwrap_or(120)),
            poll_max: std::time::Duration::from_secs(self.poll_max_secs.or(base.poll_max_secs).unwrap_or(10).max(1)),
        };
        if let Some(n) = self.max_parallel.filter(|n| !(1..=MAX_PARALLEL_LIMIT).contains(n)) {
            return Err(format!("cluster.max_parallel {n}: give 1 to {MAX_PARALLEL_LIMIT} trials in flight at once"));
        }
        for (name, t) in [("submit", &r.submit), ("status", &r.status), ("cancel", &r.cancel)] {
            if t.is_empty() {
                return Err(format!("cluster.{name}: give the command as argv (or a profile)"));
            }
        }
        if r.submit.iter().filter(|e| *e == "{argv}").count() != 1 || r.submit.iter().any(|e| e.contains("{argv}") && e != "{argv}") {
            return Err("cluster.submit: put \"{argv}\" once, as an element of its own (it becomes the arm's argv)".into());
        }
        for (name, t) in [("status", &r.status), ("cancel", &r.cancel)] {
            if !t.iter().any(|e| e.contains("{job_id}")) {
                return Err(format!("cluster.{name}: pass {{job_id}}"));
            }
        }
        if r.job_id.captures_len() < 2 || r.state.captures_len() < 2 {
            return Err("cluster.job_id_pattern and cluster.state_pattern need a capture group".into());
        }
        if let Some(bad) = r.env.keys().find(|k| k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')) {
            return Err(format!("cluster.env: {bad:?} is not a variable name"));
        }
        if r.exit.as_ref().is_some_and(|e| e.captures_len() < 2) {
            return Err("cluster.exit_pattern: capture the exit code (and optionally the signal)".into());
        }
        Ok(r)
    }
}

impl ResolvedCluster {
    /// Every template, for checking their placeholders.
    pub fn templates(&self) -> [(&'static str, &Vec<String>); 5] {
        [("submit", &self.submit), ("status", &self.status), ("cancel", &self.cancel), ("logs", &self.logs), ("ping", &self.ping)]
    }

    /// The engine's job state in a status output, and what it means (an unmapped state is an error).
    pub fn read_state(&self, status_output: &str) -> Result<(String, EngineOutcome), String> {
        let state = self
            .state
            .captures(status_output)
            .and_then(|c| c.get(1))
            .map(|m| m.as_str().to_ascii_uppercase())
            .ok_or_else(|| format!("no job state in the status output: {}", first_line(status_output)))?;
        let outcome =
            *self.states.get(&state).ok_or_else(|| format!("the engine reports state {state:?}, which cluster.states does not map"))?;
        Ok((state, outcome))
    }

    /// Exit code and signal, when the status output gives them.
    pub fn read_exit(&self, status_output: &str) -> (Option<i32>, Option<i32>) {
        let Some(c) = self.exit.as_ref().and_then(|r| r.captures(status_output)) else { return (None, None) };
        let num = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<i32>().ok());
        (num(1), num(2).filter(|s| *s != 0))
    }

    pub fn read_job_id(&self, submit_output: &str) -> Option<String> {
        let id = self.job_id.captures(submit_output)?.get(1)?.as_str().to_string();
        judge::launch_rules::is_safe_value(&id).then_some(id)
    }
}

pub fn first_line(text: &str) -> String {
    text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("(no output)").chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_outputs_are_read() {
        let s = ClusterSpec { profile: Some("slurm".into()), ..Default::default() }.resolved().unwrap();
        assert_eq!(s.read_job_id("42\n").as_deref(), Some("42"));
        assert_eq!(s.read_job_id("42;probe\n").as_deref(), Some("42"));
        assert_eq!(s.read_job_id("sbatch: error: Batch job submission failed"), None);
        let out = "JobId=7 JobName=x UserId=root(0) JobState=FAILED Reason=NonZeroExitCode Dependency=(null) ExitCode=3:0";
        assert_eq!(s.read_state(out).unwrap(), ("FAILED".to_string(), EngineOutcome::Failed));
        assert_eq!(s.read_exit(out), (Some(3), None));
        assert_eq!(s.read_exit("JobState=FAILED ExitCode=0:9"), (Some(0), Some(9)));
        assert_eq!(s.read_state("JobState=OUT_OF_MEMORY").unwrap().1, EngineOutcome::Oom);
        assert!(s.read_state("JobState=WEIRD").unwrap_err().contains("WEIRD"));
        assert!(s.lost.as_ref().unwrap().is_match("slurm_load_jobs error: Invalid job id specified"));
    }

    /// The Iris-shaped profile against outputs of the shape its commands print (there is no Iris cluster
    /// here to take real ones from): the submit prints the job id on a line of its own, the status a
    /// `state: NAME` line, kill and logs take the id.
    #[test]
    fn iris_outputs_are_read() {
        let s = ClusterSpec { profile: Some("iris".into()), ..Default::default() }.resolved().unwrap();
        assert_eq!(&s.submit[..3], ["iris", "job", "run"]);
        assert!(s.submit.contains(&"--no-wait".to_string()) && s.submit.contains(&"{cluster}".to_string()));
        assert_eq!(s.submit.iter().skip_while(|e| *e != "--").nth(1).map(String::as_str), Some("{argv}"), "the argv after --");
        assert!(s.status.contains(&"{job_id}".to_string()) && s.cancel.contains(&"{job_id}".to_string()));
        assert_eq!(s.logs, ["iris", "job", "logs", "{job_id}", "--no-tail"]);
        assert_eq!(s.read_job_id("\n/marin/arb-12-0-7f3a2c\n").as_deref(), Some("/marin/arb-12-0-7f3a2c"));
        for (out, state, outcome) in [
            ("job /marin/arb-12-0\n  state: PENDING\n", "PENDING", EngineOutcome::Queued),
            ("job /marin/arb-12-0\n  state: BUILDING\n", "BUILDING", EngineOutcome::Queued),
            ("state=RUNNING tasks=1/1", "RUNNING", EngineOutcome::Running),
            ("State: SUCCEEDED", "SUCCEEDED", EngineOutcome::Succeeded),
            ("state: FAILED (exit 1)", "FAILED", EngineOutcome::Failed),
            ("state: OOM", "OOM", EngineOutcome::Oom),
            ("state: PREEMPTED", "PREEMPTED", EngineOutcome::Preempted),
            ("state: WORKER_FAILED", "WORKER_FAILED", EngineOutcome::NodeFail),
            ("state: KILLED", "KILLED", EngineOutcome::Cancelled),
        ] {
            assert_eq!(s.read_state(out).unwrap(), (state.to_string(), outcome), "{out}");
        }
        assert!(s.read_state("state: LIMBO").unwrap_err().contains("LIMBO"));
        assert_eq!(s.read_exit("state: FAILED"), (None, None), "no exit pattern: the state decides");
        assert!(s.oom.as_ref().unwrap().is_match("task killed: Out Of Memory"));
        assert!(s.lost.as_ref().unwrap().is_match("error: job /marin/arb-1 not found"));
        assert_eq!(s.pass_env, ["IRIS_CONFIG", "GOOGLE_APPLICATION_CREDENTIALS"]);
    }

    #[test]
    fn a_suite_may_override_a_profile_and_bad_specs_are_named() {
        let mut spec = ClusterSpec { profile: Some("slurm".into()), ..Default::default() };
        spec.states.insert("SPECIAL_EXIT".into(), EngineOutcome::Failed);
        spec.poll_max_secs = Some(2);
        let r = spec.resolved().unwrap();
        assert_eq!(r.states["SPECIAL_EXIT"], EngineOutcome::Failed);
        assert_eq!(r.states["COMPLETED"], EngineOutcome::Succeeded, "the profile's mapping stays");
        assert_eq!(r.poll_max, std::time::Duration::from_secs(2));
        let no_argv = ClusterSpec { submit: strings(&["sbatch", "x"]), ..spec.clone() };
        assert!(no_argv.resolved().unwrap_err().contains("{argv}"));
        let glued = ClusterSpec { submit: strings(&["run", "--cmd={argv}"]), ..spec.clone() };
        assert!(glued.resolved().unwrap_err().contains("element of its own"));
        assert!(ClusterSpec { profile: Some("k8s".into()), ..Default::default() }.resolved().unwrap_err().contains("k8s"));
        assert!(ClusterSpec::default().resolved().is_err(), "no profile and no templates");
        let bad = ClusterSpec { state_pattern: Some("(".into()), ..spec.clone() };
        assert!(bad.resolved().unwrap_err().contains("state_pattern"));
        assert_eq!(spec.max_parallel(), DEFAULT_MAX_PARALLEL);
        for n in [0, MAX_PARALLEL_LIMIT + 1] {
            let e = ClusterSpec { max_parallel: Some(n), ..spec.clone() }.resolved().unwrap_err();
            assert!(e.contains("max_parallel") && e.contains(&n.to_string()), "{e}");
        }
        assert!(ClusterSpec { max_parallel: Some(8), ..spec.clone() }.resolved().is_ok());
    }

    #[test]
    fn two_engines_differ_by_profile_or_environment() {
        let a = ClusterSpec { profile: Some("slurm".into()), ..Default::default() };
        let mut b = a.clone();
        b.env.insert("SLURM_CONF".into(), "/etc/other/slurm.conf".into());
        assert_ne!(a.engine_identity(), b.engine_identity());
        assert_eq!(a.engine_identity(), ClusterSpec { max_parallel: Some(2), ..a.clone() }.engine_identity(), "caps do not name an engine");
    }
}
