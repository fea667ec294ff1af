//! A launch resolved into a plan: what `POST /api/v1/experiments` answers with `dry_run` (`{"plan": …}`),
//! what an experiment's `plan` column keeps (beside the suite), and the plan in words — [`JsonLaunchPlan::words`],
//! the one function behind both the launch preview and `arbiter launch --dry-run`.

use crate::launch::{JsonConfigDiff, JsonWarpMatrix, TrialOrder};
use judge::pipeline::report::fmt_margin;
use judge::units::{short_sha, trials_an_arm};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A warp experiment's phase: its drive sync, leg and load runs (a warp trial's `argv` starts its server).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedPhase {
    pub drive_sync: bool,
    /// The arm's letter (A = control) and its run number: A1, B1, B2, A2.
    pub leg: String,
    /// One load run per workload and round, in order (keys travel in the environment).
    pub loads: Vec<Vec<String>>,
}

/// The baseline run an experiment reused as its control (kept with its plan and shown on its page).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReusedBaseline {
    pub experiment_id: i64,
    pub sha: String,
    #[serde(rename = "ref")]
    pub git_ref: String,
    /// When the baseline ended (ms since the epoch).
    pub finished_at: i64,
}


#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedArm {
    pub name: String,
    pub role: String,
    #[serde(rename = "ref")]
    pub git_ref: String,
    pub sha: String,
    pub config: Option<JsonConfigDiff>,
}


#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedRun {
    pub seq: usize,
    pub arm: String,
    pub repeat: usize,
    pub run_tag: String,
    pub argv: Vec<String>,
    /// A warp phase: its drive-sync value, leg and load runs (`argv` is then the server's start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<PlannedPhase>,
    /// A warm-up trial: run first, never judged (`judge::TrialRole::WarmUp`; stored with repeat −1).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warm_up: bool,
}


#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonLaunchPlan {
    pub suite: String,
    /// Where the refs were resolved (the local repository or the mirror of a clone URL).
    pub repo_dir: String,
    pub title: String,
    pub fingerprint: BTreeMap<String, serde_json::Value>,
    pub region: Option<String>,
    pub cluster: Option<String>,
    pub arms: Vec<PlannedArm>,
    pub order: TrialOrder,
    /// The seed the balanced order is drawn from (`plan::repeat_order`), kept so that a restart and the
    /// pairs an adaptive experiment adds continue the same plan. 0 in plans stored before it existed.
    #[serde(default)]
    pub order_seed: u64,
    /// Warm-up trials run before the first pair (`plan::warm_ups`); 0 in plans stored before them.
    #[serde(default)]
    pub warm_up: u32,
    /// Local trials run on the shared CPUs (no CPU set reserved: `runner::trial_cpus`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared_cpus: bool,
    /// A same-code canary (`JsonLaunch::canary`): judged, counted in the suite's realised error rate, then
    /// grows the noise profile.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub canary: bool,
    /// The order as the plan runs it, in words for the preview and `--dry-run`: the pipeline order
    /// ("interleaved", "abba", "blocked", "control_first"), or a warp launch's "AB phase" / "ABBA phase".
    #[serde(default)]
    pub order_words: String,
    pub trials_per_arm: u32,
    pub trials: Vec<PlannedRun>,
    /// Upper bound: every trial running to its timeout, one at a time.
    pub max_minutes: u64,
    /// Expected wall time (warp: from the matrix settings; pipeline: from the suite's recent trials).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_minutes: Option<f64>,
    /// What the estimate rests on, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate_basis: Option<String>,
    pub exemption: Option<String>,
    pub calibration: bool,
    /// A baseline run (one `baseline` arm, no verdict).
    #[serde(default)]
    pub baseline: bool,
    /// The baseline run reused as the control (which then has no trials of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_baseline: Option<ReusedBaseline>,
    /// A warp experiment's matrix as it will run, in words (the suite's, or this launch's settings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warp_matrix: Option<String>,
    /// A warp experiment's adaptive rounds in words: on (when, the cap, the worst case's extra time) or off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warp_adaptive: Option<String>,
    /// The matrix settings this launch asked for (none: the suite's own), kept with the experiment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warp_settings: Option<JsonWarpMatrix>,
    /// A pipeline A/B's power before it runs: the smallest CPU change its trials detect and the trials a
    /// chosen change needs (`judge::pipeline::power`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detectable: Option<judge::pipeline::power::Detectable>,
    /// `trials = "auto"`: the budget pairs are added within (`trials_per_arm` is then the first look's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AdaptivePlan>,
    /// The one stage whose CPU decides when an adaptive experiment stops (a bisection's step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
    /// A bisection's probe: the bad end's change of the focus stage, percent (`JsonLaunch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus_bad_end_pct: Option<f64>,
}

/// An adaptive launch (`trials = "auto"`): the engine adds `step` trials an arm (a pair, or an ABBA block)
/// after each look the sequential design leaves undecided, up to `max_trials` an arm, and adds none once
/// the experiment has run `max_minutes`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AdaptivePlan {
    pub max_trials: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_minutes: Option<u32>,
    /// Trials an arm in one unit of the design: 1 (a pair), 2 (an ABBA block).
    pub step: u32,
    /// The trials an arm it is expected to take (the preview's figure; see `launch::mod`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_trials: Option<u32>,
    /// The fixed design needs more trials than the budget for the margin: a change near the margin is
    /// likely to end undecided at the budget (`expected_trials` is then the budget).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub beyond_budget: bool,
    /// The time its whole budget would take at the suite's recent trial times (the estimate's basis).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_minutes: Option<f64>,
}

impl AdaptivePlan {
    /// Trials an arm before the design's first look (two units).
    pub fn first_look(&self) -> u32 {
        self.step * judge::pipeline::sequential::MIN_PAIRS as u32
    }
}

impl JsonLaunchPlan {
    /// A pipeline plan's expected time from how long the suite's recent trials ran, `at_once` of them in
    /// flight side by side (1 on this host; a cluster suite's slots), after the `ahead` trials already
    /// queued or running in the same lane (an upper bound: the fair queue may put this launch first).
    pub fn estimate_from(&mut self, recent_secs: &[f64], at_once: usize, ahead: usize) {
        let (None, Some(median)) = (self.estimated_minutes, judge::stats::median(recent_secs)) else { return };
        let at_once = at_once.max(1);
        let warm_ups = self.trials.iter().filter(|t| t.warm_up).count();
        let arms = (self.trials.len() - warm_ups) / (self.trials_per_arm.max(1) as usize);
        let minutes = |trials: usize| {
            let waves = trials.div_ceil(at_once) as f64 + ahead as f64 / at_once as f64;
            // Up to the next tenth of a minute: rounding to the nearest said "0.0 minutes" for a plan of a
            // few one-second trials (seen on a fresh clone in CI).
            (median * waves / 60.0 * 10.0).ceil() / 10.0
        };
        // An adaptive plan: its expected trials (the fixed design's figure), and its budget's time beside.
        let expected = match &mut self.adaptive {
            Some(a) => {
                a.budget_minutes = Some(minutes(a.max_trials as usize * arms + warm_ups));
                a.expected_trials.map_or(self.trials.len(), |t| t as usize * arms + warm_ups)
            }
            None => self.trials.len(),
        };
        self.estimated_minutes = Some(minutes(expected));
        let mut basis = format!("the median of this suite's last {} succeeded trials, {median:.0} s each", recent_secs.len());
        if at_once > 1 {
            basis.push_str(&format!(", up to {at_once} at once"));
        }
        if ahead > 0 {
            basis.push_str(&format!(", after at most {ahead} trials already in its queue"));
        }
        self.estimate_basis = Some(basis);
    }
}

/// The plan in words, sentence by sentence: the launch preview lays them out on the page, `arbiter launch
/// --dry-run` prints them (`server/src/client.rs::plan_text`). One function, so the two never disagree.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanWords {
    pub title: String,
    /// "7 trials".
    pub count: String,
    /// " (3 per arm, interleaved order, after 1 unmeasured warm-up trial); time: about 4 min (from …), at most …."
    pub summary: String,
    /// An adaptive plan: "the first look after 2 trials an arm; a pair at a time while the verdict is undecided, …".
    pub adaptive: Option<String>,
    pub power: Option<PowerWords>,
    pub matrix: Option<String>,
    pub adaptive_rounds: Option<String>,
    /// "Fingerprint: sample=…, workers=2; runs on …; exemption requested: …".
    pub context: Option<String>,
    /// Per arm: name, role, ref, short SHA, config (JSON, or empty).
    pub arms: Vec<[String; 5]>,
    /// Per trial: "arb-dry-0 · control #1" (with " · phase A1, drive-sync true" for a warp phase), and its argv.
    pub trials: Vec<(String, String)>,
}

/// What the planned trials can detect (a pipeline A/B), in words.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerWords {
    /// "Can detect ±3.9 % with 10 trials an arm." (or why nothing).
    pub detectable: String,
    /// "— a change that size in a typical stage is found 80 % of the time at …".
    pub detail: String,
    pub noisiest: Option<String>,
    /// The third answer's X this plan fixes.
    pub no_regression: Option<String>,
    /// "±2 % needs about 37 trials an arm." …
    pub needed: String,
    /// The trials an arm the chosen change needs, when that differs from the plan's (the preview's button).
    pub use_trials: Option<u32>,
}

/// Minutes in words: "under a minute", "12 min", "1.6 h".
fn minutes(m: f64) -> String {
    if m < 1.0 {
        "under a minute".into()
    } else if m >= 90.0 {
        format!("{:.1} h", m / 60.0)
    } else {
        format!("{m:.0} min")
    }
}

impl JsonLaunchPlan {
    /// The plan in words (see [`PlanWords`]).
    pub fn words(&self) -> PlanWords {
        let loads: usize = self.trials.iter().filter_map(|t| t.phase.as_ref()).map(|p| p.loads.len()).sum();
        let estimate = match self.estimated_minutes {
            Some(e) => format!(
                "{} (from {}), at most {} (every trial to its timeout)",
                if e < 1.0 { minutes(e) } else { format!("about {}", minutes(e)) },
                self.estimate_basis.as_deref().unwrap_or("earlier runs"),
                minutes(self.max_minutes as f64)
            ),
            None => format!(
                "at most {} (every trial to its timeout; no trials of this suite have run yet to estimate from)",
                minutes(self.max_minutes as f64)
            ),
        };
        let warm_up = match self.warm_up {
            0 => String::new(),
            1 => ", after 1 unmeasured warm-up trial".into(),
            n => format!(", after {n} unmeasured warm-up trials"),
        };
        let summary = format!(
            " ({} per arm, {} order{}{warm_up}); time: {estimate}.",
            self.trials_per_arm,
            self.order_words,
            if loads > 0 { format!(", {loads} load runs") } else { String::new() },
        );
        let fingerprint: Vec<String> =
            self.fingerprint.iter().map(|(k, v)| format!("{k}={}", v.as_str().map_or_else(|| v.to_string(), str::to_string))).collect();
        let context = [
            Some(fingerprint.join(", ")).filter(|f| !f.is_empty()).map(|f| format!("Fingerprint: {f}")),
            self.cluster.as_ref().map(|c| format!("runs on {c}")),
            self.exemption.as_ref().map(|r| format!("exemption requested: {r}")),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("; ");
        PlanWords {
            title: self.title.clone(),
            count: format!("{} trials", self.trials.len()),
            summary,
            adaptive: self.adaptive.as_ref().map(|a| self.adaptive_words(a)),
            power: self.detectable.as_ref().map(power_words),
            matrix: self.warp_matrix.clone(),
            adaptive_rounds: self.warp_adaptive.clone(),
            context: Some(context).filter(|c| !c.is_empty()),
            arms: self
                .arms
                .iter()
                .map(|a| {
                    let config = a.config.as_ref().map(|c| serde_json::to_string(c).unwrap_or_default()).unwrap_or_default();
                    [a.name.clone(), a.role.clone(), a.git_ref.clone(), short_sha(&a.sha).to_string(), config]
                })
                .collect(),
            trials: self
                .trials
                .iter()
                .map(|t| {
                    let phase = t.phase.as_ref().map(|p| format!(" · phase {}, drive-sync {}", p.leg, p.drive_sync)).unwrap_or_default();
                    (format!("{} · {} #{}{phase}", t.run_tag, t.arm, t.repeat + 1), t.argv.join(" "))
                })
                .collect(),
        }
    }

    /// "the first look after 2 trials an arm; a pair at a time while the verdict is undecided, at most 20
    /// trials an arm (41.3 min); about 8 trials an arm expected, 16.5 min".
    fn adaptive_words(&self, a: &AdaptivePlan) -> String {
        let minutes = self.estimated_minutes.map(|m| format!(", {m} min")).unwrap_or_default();
        let expected = match a.expected_trials {
            _ if a.beyond_budget => {
                format!("; the fixed design needs more for the margin, so expect it to use the budget unless the change is clear{minutes}")
            }
            Some(n) => format!("; about {} expected{minutes}", trials_an_arm(n.into())),
            None => String::new(),
        };
        let budget = a.budget_minutes.map(|m| format!(" ({m} min)")).unwrap_or_default();
        let ceiling = a.max_minutes.map(|m| format!(", and {m} min at most")).unwrap_or_default();
        format!(
            "the first look after {} trials an arm; a pair at a time while the verdict is undecided, at most {}{budget}{ceiling}{expected}",
            self.trials_per_arm,
            trials_an_arm(a.max_trials.into())
        )
    }
}

/// What the planned trials can detect, with advice that knows the state (a calibrated suite is not told
/// to calibrate).
fn power_words(d: &judge::pipeline::power::Detectable) -> PowerWords {
    let n = d.trials_per_arm;
    let calibrated = d.spread_source.starts_with("the noise profile");
    let more_spread = if calibrated { "use a quieter host, or plan more pairs" } else { "calibrate the suite, or plan more pairs" };
    let widen = if calibrated {
        "widen the change, or use a quieter host (its spread is the calibrated one)"
    } else {
        "widen the change, or calibrate the suite to measure its spread"
    };
    let detectable = match d.mde_pct {
        Some(mde) => format!("Can detect ±{} with {}.", fmt_margin(mde), trials_an_arm(n.into())),
        None => format!("{} detect nothing below ±10000 %: they measure too little spread of their own ({more_spread}).", trials_an_arm(n.into())),
    };
    let detail = format!(
        "— a change that size in a typical stage is found {} of the time at the experiment's {} error rate (spread {} from {}; {} test{} in the family{}, the first at the {} level).",
        fmt_margin(100.0 * d.power),
        fmt_margin(100.0 * d.alpha),
        fmt_margin(d.spread_pct),
        d.spread_source,
        d.family,
        if d.family == 1 { "" } else { "s" },
        if d.family_assumed { ", assumed until a calibration lists the stages" } else { "" },
        judge::pipeline::report::fmt_level(d.alpha_test),
    );
    let target = fmt_margin(d.target_pct);
    let needed = match d.trials_for_target {
        Some(t) if t == n => format!("±{target} needs {}: this plan has them.", trials_an_arm(t.into())),
        Some(t) => format!("±{target} needs about {}.", trials_an_arm(t.into())),
        None => format!(
            "±{target} needs more than {} trials an arm (the most a launch may ask for): {widen}.",
            judge::pipeline::power::MAX_PLANNED_TRIALS
        ),
    };
    PowerWords {
        detectable,
        detail,
        noisiest: d.noisiest.as_ref().map(|(stage, m)| format!("The noisiest stage, {stage}, needs ±{} to be detected as often.", fmt_margin(*m))),
        no_regression: d.no_regression.as_ref().map(|x| match x.pct {
            Some(pct) => format!("If nothing is detected, it can still pass on \"no regression ≥ {}\" (99 % one-sided bound): {}.", fmt_margin(pct), x.from),
            None => format!("No \"no regression of X %\" answer — {}.", x.from.strip_prefix("none: ").unwrap_or(&x.from)),
        }),
        needed,
        use_trials: d.trials_for_target.filter(|t| *t != n),
    }
}

/// `POST /api/v1/experiments` with `dry_run`: the plan, nothing stored (200).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonDryRun {
    pub dry_run: bool,
    pub plan: JsonLaunchPlan,
}

/// `POST /api/v1/experiments`: the experiment stored and queued (201).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonLaunched {
    pub id: i64,
    /// Its page.
    pub url: String,
    /// Trials planned (warm-ups included).
    pub trials: usize,
}

/// Either answer of a launch, as a client reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum JsonLaunchAnswer {
    Launched(JsonLaunched),
    DryRun(Box<JsonDryRun>),
}
