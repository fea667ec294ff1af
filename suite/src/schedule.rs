//! A suite's `[[schedules]]`: when to run a baseline of which ref, with which fingerprint, and how.

use crate::SuiteDefinition;
use judge::cron::Cron;
use judge::launch_rules as rules;
use serde::{Deserialize, Serialize};

/// One schedule, as written in the suite's TOML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleSpec {
    /// Names the schedule in its suite (its runs and claims are kept under it).
    pub name: String,
    /// Five fields, UTC: minute hour day-of-month month day-of-week.
    pub cron: String,
    /// The ref to follow, e.g. `main`: resolved at each tick; an unchanged SHA is not run again.
    #[serde(rename = "ref")]
    pub git_ref: String,
    #[serde(default)]
    pub mode: ScheduleMode,
    /// Trials per arm (default: the suite's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials: Option<u32>,
    /// The workload fingerprint (fields left out take the suite's defaults).
    #[serde(default)]
    pub fingerprint: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleMode {
    /// The new SHA alone (one `baseline` arm): measured, not compared; launches may reuse it as
    /// their control, and it feeds the trend charts.
    #[default]
    Baseline,
    /// An A/B of the new SHA against the last good scheduled SHA (the first run: against itself).
    Ab,
    /// A same-code canary: the ref's SHA against itself at every tick, changed or not. It is judged like
    /// any A/B (a claimed change is a false alarm), counted in the suite's realised error rate, and then
    /// grows the noise profile. Queued behind real launches.
    Canary,
}

impl ScheduleSpec {
    pub fn check(&self, suite: &SuiteDefinition) -> Result<(), String> {
        let at = |e: judge::FieldError| format!("schedule {:?}: {e}", self.name);
        if !crate::definition::is_name(&self.name) {
            return Err(format!("schedule name {:?}: use 1–64 letters, digits, '-' or '_'", self.name));
        }
        Cron::parse(&self.cron).map_err(|e| at(judge::FieldError::new("cron", e)))?;
        rules::check_ref("ref", &self.git_ref).map_err(at)?;
        if let Some(t) = self.trials {
            rules::check_trials(suite.kind, t).map_err(at)?;
        }
        suite.validate_fingerprint(&self.fingerprint).map_err(at)?;
        if suite.kind == judge::ExperimentKind::Warp && self.mode == ScheduleMode::Canary {
            return Err(at(judge::FieldError::new("mode", "canaries are for pipeline suites: a warp suite's same-code runs are A/As (mode = \"ab\" of an unchanged ref)")));
        }
        if suite.kind == judge::ExperimentKind::Warp && self.mode == ScheduleMode::Baseline {
            return Err(at(judge::FieldError::new("mode", "a warp suite's schedule runs an A/B against the last good SHA: write mode = \"ab\"")));
        }
        Ok(())
    }
}

/// Checks a suite's schedules: each valid, names unique.
pub fn check_all(suite: &SuiteDefinition) -> Result<(), String> {
    for (i, s) in suite.schedules.iter().enumerate() {
        if suite.schedules[..i].iter().any(|o| o.name == s.name) {
            return Err(format!("schedule {:?} is defined twice", s.name));
        }
        s.check(suite)?;
    }
    if !(1..=24 * 366).contains(&suite.baseline_max_age_hours) {
        return Err(format!("baseline_max_age_hours: {}: must be between 1 and 8784 (a year)", suite.baseline_max_age_hours));
    }
    Ok(())
}
