//! Bisection: which commit of a first-parent range moved one metric. Pure: the engine feeds it the
//! range and what each step (an ordinary experiment) said, and it answers what to run next or where
//! the search ends. Every rule of the search lives here.
//!
//! **Design: each probe is compared with the good end**, not with its neighbour. Every estimate is then
//! the change *from the good end* at that commit — one scale for the whole line, so the page's chart reads
//! as a staircase, a change that is really several small steps shows as several treads (and the report
//! says so), and a probe needs to tell apart only "moved as the bad end did" from "not moved", the largest
//! difference the range holds. A neighbour comparison would ask each step to find a change that may be a
//! fraction of the whole, at the noise floor, for every step.
//!
//! **The steps.**
//! 1. *Ends*: the bad end against the good end (or an experiment that already compared them, such as the
//!    regression the bisection was started from). Not moved: "no culprit: the ends do not differ", after
//!    this one step. Undecided at its budget: ambiguous, no guess. Its direction (higher or lower) is the
//!    direction every later probe must move in to count as moved.
//! 2. *Probes*: with `lo` the newest commit read as not moved (the good end at first) and `hi` the oldest
//!    read as moved (the bad end at first), the commits between are split by `parallel` probes at once
//!    (one: the middle — ⌈log2 n⌉ probes for n commits). A probe undecided at its budget, or moved the other
//!    way, ends the search as ambiguous between `lo` and `hi` (instead of guessing); a probe that could not
//!    be built or run is skipped and reported, and the range widens over it.
//! 3. *Confirmation*: the culprit against its parent (the nearest measured commit before it when the
//!    parent could not be built). Moved: the culprit is named. Its own step against the whole change
//!    tells whether the change was really one commit's or several smaller ones.

mod comment;
mod read;

pub use comment::{markdown, CulpritLine};
pub use read::{read_pipeline, read_warp, StepReading};

use crate::pipeline::report::fmt_pct;
use serde::{Deserialize, Serialize};

/// The most commits a bisection's range may hold (a longer range: bisect a part of it).
pub const MAX_COMMITS: usize = 1000;
/// The most probes run at once.
pub const MAX_PARALLEL: usize = 8;
/// Below this share of the whole change (on the log scale), the culprit's own step is "one of several".
pub const SEVERAL_STEPS_SHARE: f64 = 0.6;

/// The metric a bisection follows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BisectMetric {
    /// A pipeline stage's CPU-seconds.
    StageCpu { stage: String },
    /// One metric of one warp cell (`get-4KiB/sync-off`, `reqps`).
    WarpCell { cell: String, metric: String },
}

impl BisectMetric {
    /// Reads `--metric`: a pipeline suite takes a stage name (optionally `cpu:` before it), a warp suite
    /// `WORKLOAD/sync-on|sync-off:METRIC` (its metric one of reqps, throughput, latency, p90-latency,
    /// p99-latency).
    pub fn parse(kind: crate::ExperimentKind, text: &str) -> Result<BisectMetric, String> {
        let text = text.trim();
        if text.is_empty() || text.len() > 200 || text.chars().any(char::is_control) {
            return Err("metric: give the stage (pipeline) or WORKLOAD/sync-on|sync-off:METRIC (warp), at most 200 characters".into());
        }
        match kind {
            crate::ExperimentKind::Pipeline => {
                let stage = text.strip_prefix("cpu:").unwrap_or(text).trim();
                if stage.is_empty() {
                    return Err("metric: name the stage whose CPU moved, e.g. \"cpu:stage3-Map → Write\"".into());
                }
                Ok(BisectMetric::StageCpu { stage: stage.to_string() })
            }
            crate::ExperimentKind::Warp => {
                let Some((cell, metric)) = text.rsplit_once(':') else {
                    return Err(format!(
                        "metric {text:?}: a warp metric is WORKLOAD/sync-on|sync-off:METRIC, e.g. get-4KiB/sync-off:reqps"
                    ));
                };
                const METRICS: [&str; 5] = ["reqps", "throughput", "latency", "p90-latency", "p99-latency"];
                if !METRICS.contains(&metric) {
                    return Err(format!("metric {text:?}: {metric:?} is not one of {}", METRICS.join(", ")));
                }
                let ok_cell = cell.rsplit_once('/').is_some_and(|(w, s)| {
                    !w.is_empty()
                        && (s == "sync-on" || s == "sync-off")
                        && w.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                });
                if !ok_cell {
                    return Err(format!("metric {text:?}: the cell is WORKLOAD/sync-on or WORKLOAD/sync-off, e.g. get-4KiB/sync-off"));
                }
                Ok(BisectMetric::WarpCell { cell: cell.to_string(), metric: metric.to_string() })
            }
        }
    }

    /// As `--metric` takes it.
    pub fn spec(&self) -> String {
        match self {
            BisectMetric::StageCpu { stage } => format!("cpu:{stage}"),
            BisectMetric::WarpCell { cell, metric } => format!("{cell}:{metric}"),
        }
    }

    /// In words: "CPU of stage3-Map → Write", "reqps of get-4KiB/sync-off".
    pub fn words(&self) -> String {
        match self {
            BisectMetric::StageCpu { stage } => format!("CPU of {stage}"),
            BisectMetric::WarpCell { cell, metric } => format!("{metric} of {cell}"),
        }
    }

    /// A warp cell's workload and drive-sync value (`get-4KiB`, `true`).
    pub fn warp_cell(&self) -> Option<(&str, bool)> {
        match self {
            BisectMetric::WarpCell { cell, .. } => cell.rsplit_once('/').map(|(w, s)| (w, s == "sync-on")),
            BisectMetric::StageCpu { .. } => None,
        }
    }
}

/// One commit of the range (oldest first; the last is the bad end).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Commit {
    pub sha: String,
    pub subject: String,
    /// More than one parent: a merge on the first-parent line.
    #[serde(default)]
    pub merge: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepRole {
    Ends,
    Probe,
    Confirm,
}

/// What a step said of its commit's metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reading {
    /// Changed as the bad end did (the ends step: changed at all).
    Moved,
    /// Within the margin of the commit it was compared with.
    Unmoved,
    /// Undecided at its budget.
    Unsure,
    /// Changed, but the other way.
    Opposite,
    /// Could not be built or run (its trials failed, or it was cancelled): skipped.
    Broken,
}

/// Which way the metric moved between the ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Up,
    Down,
}

/// A step: one experiment, the commit at `commit` against the good end (`against: None`) or against the
/// commit at `against`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub role: StepRole,
    pub commit: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against: Option<usize>,
    pub experiment_id: Option<i64>,
    /// None while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reading: Option<Reading>,
    /// The metric's change, treatment against control, in percent, and its interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_pct: Option<[f64; 2]>,
    /// What the step said of the metric, in words.
    #[serde(default)]
    pub words: String,
    /// Trials it ran, an arm.
    #[serde(default)]
    pub trials: u32,
    /// An experiment that existed before the bisection (the regression it started from).
    #[serde(default)]
    pub reused: bool,
}

impl Step {
    pub fn new(role: StepRole, commit: usize, against: Option<usize>) -> Step {
        Step {
            role,
            commit,
            against,
            experiment_id: None,
            reading: None,
            change_pct: None,
            interval_pct: None,
            words: String::new(),
            trials: 0,
            reused: false,
        }
    }
}

/// A step to launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Planned {
    pub role: StepRole,
    pub commit: usize,
    pub against: Option<usize>,
}

/// How a bisection ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// The commit at `commit` moved the metric (its confirmation reproduced it).
    Culprit {
        commit: usize,
        /// Commits that could not be built right before it: the change may be in one of them instead.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        suspects: Vec<usize>,
        /// The culprit's own step as a share of the whole change (log scale), when both were measured.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        share: Option<f64>,
        words: String,
    },
    /// The ends do not differ: nothing to find.
    NoCulprit { words: String },
    /// The search could not decide, and says where the change lies instead of guessing.
    Ambiguous { words: String },
}

impl Outcome {
    pub fn words(&self) -> &str {
        match self {
            Outcome::Culprit { words, .. } | Outcome::NoCulprit { words } | Outcome::Ambiguous { words } => words,
        }
    }
    /// "culprit", "no_culprit" or "ambiguous".
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Culprit { .. } => "culprit",
            Outcome::NoCulprit { .. } => "no_culprit",
            Outcome::Ambiguous { .. } => "ambiguous",
        }
    }
}

/// What to do now.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    Launch(Vec<Planned>),
    /// Steps are running.
    Wait,
    Done(Outcome),
}

/// A bisection's search state: the range and its steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Search {
    /// The good end (the commit before the first of `commits`).
    pub good: Commit,
    /// Oldest first; the last is the bad end.
    pub commits: Vec<Commit>,
    pub steps: Vec<Step>,
    /// Probes at once.
    pub parallel: usize,
}

pub(crate) use crate::units::short_sha as short;

impl Search {
    /// "abc1234567 (subject)" for the commit at `i`; the good end for `None`.
    pub fn name(&self, i: Option<usize>) -> String {
        let c = i.map_or(&self.good, |i| &self.commits[i]);
        format!("{} ({})", short(&c.sha), c.subject)
    }

    pub fn direction(&self) -> Option<Direction> {
        let ends = self.steps.iter().find(|s| s.role == StepRole::Ends && s.reading == Some(Reading::Moved))?;
        ends.change_pct.map(|c| if c >= 0.0 { Direction::Up } else { Direction::Down })
    }

    /// The whole change (the ends step's estimate), in percent.
    pub fn total_pct(&self) -> Option<f64> {
        self.steps.iter().find(|s| s.role == StepRole::Ends).and_then(|s| s.change_pct)
    }

    /// Steps probing commits (the ends and the confirmation not counted), and steps launched here (a reused
    /// experiment not counted).
    pub fn counts(&self) -> (usize, usize) {
        let probes = self.steps.iter().filter(|s| s.role == StepRole::Probe).count();
        let launched = self.steps.iter().filter(|s| !s.reused).count();
        (probes, launched)
    }

    /// The next thing to do.
    pub fn next(&self) -> Next {
        let n = self.commits.len();
        if n == 0 {
            return Next::Done(Outcome::NoCulprit { words: "no culprit: the good end is the bad end (the range holds no commit)".into() });
        }
        let running = |role: Option<StepRole>| self.steps.iter().any(|s| s.reading.is_none() && role.is_none_or(|r| r == s.role));
        // 1. The ends.
        let Some(ends) = self.steps.iter().find(|s| s.role == StepRole::Ends) else {
            return Next::Launch(vec![Planned { role: StepRole::Ends, commit: n - 1, against: None }]);
        };
        match ends.reading {
            None => return Next::Wait,
            Some(Reading::Moved) => {}
            Some(Reading::Unmoved) => {
                return Next::Done(Outcome::NoCulprit { words: format!("no culprit: the ends do not differ ({})", ends.words) })
            }
            Some(Reading::Unsure | Reading::Opposite) => {
                return Next::Done(Outcome::Ambiguous {
                    words: format!(
                        "ambiguous: the ends could not be told apart within the step's budget ({}); nothing was searched",
                        ends.words
                    ),
                })
            }
            Some(Reading::Broken) => {
                return Next::Done(Outcome::Ambiguous { words: format!("ambiguous: the bad end could not be measured ({})", ends.words) })
            }
        }
        // 2. Probes: what each commit read.
        if running(Some(StepRole::Probe)) {
            return Next::Wait;
        }
        let read = |i: usize| -> Option<Reading> {
            if i == n - 1 {
                return Some(Reading::Moved);
            }
            self.steps.iter().filter(|s| s.role == StepRole::Probe && s.commit == i).find_map(|s| s.reading)
        };
        let lo = (0..n).rev().find(|&i| read(i) == Some(Reading::Unmoved));
        let hi = (0..n).find(|&i| read(i) == Some(Reading::Moved)).unwrap_or(n - 1);
        let between = |a: Option<usize>, b: usize| a.map_or(0, |a| a + 1)..b;
        if let Some(lo) = lo.filter(|&lo| lo > hi) {
            return Next::Done(Outcome::Ambiguous {
                words: format!(
                    "ambiguous: the metric does not move once: {} moved but the later {} reads like the good end (a change that was undone, or noise)",
                    self.name(Some(hi)),
                    self.name(Some(lo))
                ),
            });
        }
        if let Some(i) = between(lo, hi).find(|&i| matches!(read(i), Some(Reading::Unsure | Reading::Opposite))) {
            let why = if read(i) == Some(Reading::Opposite) { "moved the other way" } else { "stayed undecided at its budget" };
            let count = hi - lo.map_or(0, |l| l + 1) + 1;
            return Next::Done(Outcome::Ambiguous {
                words: format!(
                    "ambiguous: {} {why}; the change lies in the {count} commits after {} up to {}",
                    self.name(Some(i)),
                    self.name(lo),
                    self.name(Some(hi))
                ),
            });
        }
        let open: Vec<usize> = between(lo, hi).filter(|&i| read(i).is_none()).collect();
        if !open.is_empty() {
            return Next::Launch(pick(&open, self.parallel.clamp(1, MAX_PARALLEL)));
        }
        // 3. One commit is left (with any that could not be built right before it): confirm it.
        let suspects: Vec<usize> = between(lo, hi).filter(|&i| read(i) == Some(Reading::Broken)).collect();
        let against = if suspects.is_empty() { hi.checked_sub(1) } else { lo };
        let Some(confirm) = self.steps.iter().find(|s| s.role == StepRole::Confirm) else {
            return Next::Launch(vec![Planned { role: StepRole::Confirm, commit: hi, against }]);
        };
        if running(None) {
            return Next::Wait;
        }
        let versus = self.name(confirm.against);
        match confirm.reading {
            Some(Reading::Moved) => {
                let share = match (self.total_pct(), confirm.change_pct) {
                    (Some(t), Some(c)) if t.abs() > 0.0 => Some(((1.0 + c / 100.0).ln() / (1.0 + t / 100.0).ln() * 1000.0).round() / 1000.0),
                    _ => None,
                };
                let total = self.total_pct().map(fmt_pct).unwrap_or_else(|| "?".into());
                let own = confirm.change_pct.map(fmt_pct).unwrap_or_else(|| "?".into());
                let mut words = format!("culprit: {} — {own} against its parent {versus}, of {total} between the ends", self.name(Some(hi)));
                if let Some(s) = share.filter(|s| *s < SEVERAL_STEPS_SHARE) {
                    let steps: Vec<String> = self
                        .steps
                        .iter()
                        .filter(|p| p.role == StepRole::Probe && p.reading == Some(Reading::Moved) && p.commit != hi)
                        .filter_map(|p| p.change_pct.map(|c| format!("{} {}", short(&self.commits[p.commit].sha), fmt_pct(c))))
                        .collect();
                    words.push_str(&format!(
                        "; the change is several steps: this commit is about {:.0} % of it, the rest came with later commits{}",
                        s * 100.0,
                        if steps.is_empty() { String::new() } else { format!(" (from the good end: {})", steps.join(", ")) }
                    ));
                }
                if !suspects.is_empty() {
                    let names: Vec<String> = suspects.iter().map(|&i| self.name(Some(i))).collect();
                    words.push_str(&format!("; {} could not be built right before it, so the change may be in {} instead", names.join(", "), if suspects.len() == 1 { "it" } else { "one of them" }));
                }
                Next::Done(Outcome::Culprit { commit: hi, suspects, share, words })
            }
            Some(Reading::Unmoved) => Next::Done(Outcome::Ambiguous {
                words: format!(
                    "ambiguous: {} reads as moved against the good end but not against {versus}: the change is several small steps, none of which alone moved it, or noise ({})",
                    self.name(Some(hi)),
                    confirm.words
                ),
            }),
            Some(r) => Next::Done(Outcome::Ambiguous {
                words: format!(
                    "ambiguous: the confirmation of {} against {versus} {} ({})",
                    self.name(Some(hi)),
                    match r {
                        Reading::Broken => "could not run",
                        Reading::Opposite => "moved the other way",
                        _ => "stayed undecided at its budget",
                    },
                    confirm.words
                ),
            }),
            None => Next::Wait,
        }
    }

    /// The expected number of steps for a range of `n` commits: the ends (unless `ends_known`), the probes
    /// (⌈log₂ n⌉ one at a time; ⌈log_(k+1) n⌉ rounds of k at once) and the confirmation.
    pub fn expected_steps(n: usize, parallel: usize, ends_known: bool) -> (usize, usize) {
        let k = parallel.clamp(1, MAX_PARALLEL);
        let mut rounds = 0;
        let mut left = n;
        while left > 1 {
            left = left.div_ceil(k + 1);
            rounds += 1;
        }
        let probes = rounds * k;
        let probes = if k == 1 { rounds } else { probes.min(n.saturating_sub(1)) };
        (probes, probes + usize::from(!ends_known) + 1)
    }
}

/// `k` probes splitting the open commits (those before the oldest known to have moved) into k + 1 parts.
fn pick(open: &[usize], k: usize) -> Vec<Planned> {
    // The candidates for the culprit: the open commits and hi itself.
    let len = open.len() + 1;
    let k = k.min(open.len());
    let mut chosen: Vec<usize> = (1..=k).map(|j| open[(len * j / (k + 1)).saturating_sub(1).min(open.len() - 1)]).collect();
    chosen.dedup();
    chosen.into_iter().map(|commit| Planned { role: StepRole::Probe, commit, against: None }).collect()
}

#[cfg(test)]
mod tests {
    use super::read::relative;
    use super::*;

    fn commits(n: usize) -> Vec<Commit> {
        (0..n).map(|i| Commit { sha: format!("{i:040x}"), subject: format!("commit {i}"), merge: false }).collect()
    }

    fn search(n: usize, parallel: usize) -> Search {
        Search {
            good: Commit { sha: "f".repeat(40), subject: "good".into(), merge: false },
            commits: commits(n),
            steps: Vec::new(),
            parallel,
        }
    }

    /// Runs a search to its end against a truth: the change (in percent from the good end) at each commit;
    /// `margin` below which a step reads unmoved; returns the outcome and the steps launched.
    fn run(s: &mut Search, truth: &dyn Fn(Option<usize>) -> f64, broken: &[usize]) -> (Outcome, usize) {
        for _ in 0..100 {
            match s.next() {
                Next::Done(o) => return (o, s.steps.len()),
                Next::Wait => panic!("nothing runs in this test"),
                Next::Launch(planned) => {
                    for p in planned {
                        let mut step = Step::new(p.role, p.commit, p.against);
                        step.experiment_id = Some(s.steps.len() as i64);
                        let change = ((1.0 + truth(Some(p.commit)) / 100.0) / (1.0 + truth(p.against) / 100.0) - 1.0) * 100.0;
                        step.change_pct = Some(change);
                        let want = s.direction();
                        step.reading = Some(if broken.contains(&p.commit) {
                            Reading::Broken
                        } else {
                            let raw = (change.abs() > 2.0).then_some(if change > 0.0 { Direction::Up } else { Direction::Down });
                            relative(raw, want, true)
                        });
                        s.steps.push(step);
                    }
                }
            }
        }
        panic!("the search does not end")
    }

    #[test]
    fn one_culprit_in_eight_is_found_in_three_probes_and_a_confirmation() {
        for culprit in 0..8 {
            let mut s = search(8, 1);
            let truth = |i: Option<usize>| if i.is_some_and(|i| i >= culprit) { 20.0 } else { 0.0 };
            let (outcome, steps) = run(&mut s, &truth, &[]);
            match outcome {
                Outcome::Culprit { commit, share, .. } => {
                    assert_eq!(commit, culprit);
                    assert!(share.unwrap() > 0.99, "{share:?}");
                }
                o => panic!("culprit {culprit}: {o:?}"),
            }
            let (probes, _) = s.counts();
            assert!(probes <= 3, "culprit {culprit}: {probes} probes");
            assert_eq!(steps, probes + 2, "the ends, the probes and one confirmation");
            let confirm = s.steps.last().unwrap();
            assert_eq!((confirm.role, confirm.commit, confirm.against), (StepRole::Confirm, culprit, culprit.checked_sub(1)));
        }
    }

    #[test]
    fn unchanged_ends_stop_after_the_first_step() {
        let mut s = search(8, 1);
        let (outcome, steps) = run(&mut s, &|_| 0.5, &[]);
        assert_eq!(steps, 1);
        assert!(matches!(&outcome, Outcome::NoCulprit { words } if words.starts_with("no culprit: the ends do not differ")), "{outcome:?}");
    }

    #[test]
    fn an_undecided_probe_marks_the_range_ambiguous() {
        let mut s = search(8, 1);
        assert_eq!(s.next(), Next::Launch(vec![Planned { role: StepRole::Ends, commit: 7, against: None }]));
        let mut ends = Step::new(StepRole::Ends, 7, None);
        (ends.reading, ends.change_pct) = (Some(Reading::Moved), Some(20.0));
        s.steps.push(ends);
        let Next::Launch(p) = s.next() else { panic!() };
        assert_eq!(p[0].commit, 3);
        let mut probe = Step::new(StepRole::Probe, 3, None);
        assert_eq!(s.clone().next(), Next::Launch(p.clone()), "not launched yet");
        s.steps.push(probe.clone());
        assert_eq!(s.next(), Next::Wait);
        probe.reading = Some(Reading::Unsure);
        *s.steps.last_mut().unwrap() = probe;
        assert!(
            matches!(s.next(), Next::Done(Outcome::Ambiguous { words }) if words.contains("stayed undecided") && words.contains("8 commits"))
        );
    }

    #[test]
    fn a_commit_that_cannot_be_built_is_skipped_and_named() {
        // The culprit is 4; 3 (its parent) does not build.
        let mut s = search(8, 1);
        let truth = |i: Option<usize>| if i.is_some_and(|i| i >= 4) { 20.0 } else { 0.0 };
        let (outcome, _) = run(&mut s, &truth, &[3]);
        match outcome {
            Outcome::Culprit { commit, suspects, words, .. } => {
                assert_eq!((commit, suspects), (4, vec![3]));
                assert!(words.contains("could not be built"), "{words}");
            }
            o => panic!("{o:?}"),
        }
        let confirm = s.steps.last().unwrap();
        assert_eq!(confirm.against, Some(2), "compared with the nearest commit that ran");
    }

    #[test]
    fn a_change_in_several_steps_is_reported_as_such() {
        // +5 % at each of commits 2, 4 and 6 (compounded: about +15.8 % at the end).
        let mut s = search(8, 1);
        let truth = |i: Option<usize>| {
            let k = i.map_or(0, |i| [2, 4, 6].iter().filter(|&&c| i >= c).count());
            (1.05f64.powi(k as i32) - 1.0) * 100.0
        };
        let (outcome, _) = run(&mut s, &truth, &[]);
        match outcome {
            Outcome::Culprit { commit, share, words, .. } => {
                assert_eq!(commit, 2, "the first step that moved it");
                assert!(share.unwrap() < 0.4, "{share:?}");
                assert!(words.contains("several steps"), "{words}");
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn parallel_probes_split_the_range() {
        for culprit in 0..16 {
            let mut s = search(16, 3);
            let truth = |i: Option<usize>| if i.is_some_and(|i| i >= culprit) { -30.0 } else { 0.0 };
            let (outcome, _) = run(&mut s, &truth, &[]);
            assert!(matches!(outcome, Outcome::Culprit { commit, .. } if commit == culprit), "{culprit}: {outcome:?}");
            let rounds = s.steps.iter().filter(|p| p.role == StepRole::Probe).count().div_ceil(3);
            assert!(rounds <= 2, "{culprit}: {rounds} rounds of 3");
        }
        assert_eq!(Search::expected_steps(8, 1, false), (3, 5));
        assert_eq!(Search::expected_steps(8, 1, true), (3, 4));
        assert_eq!(Search::expected_steps(16, 3, false).0, 6);
    }

    #[test]
    fn a_probe_that_moved_the_other_way_is_not_guessed_past() {
        let mut s = search(4, 1);
        let truth = |i: Option<usize>| match i {
            Some(1) => -10.0,
            Some(3) => 20.0,
            _ => 0.0,
        };
        let (outcome, _) = run(&mut s, &truth, &[]);
        assert!(matches!(&outcome, Outcome::Ambiguous { words } if words.contains("other way")), "{outcome:?}");
    }

    #[test]
    fn metrics_parse_with_named_problems() {
        use crate::ExperimentKind::{Pipeline, Warp};
        assert_eq!(
            BisectMetric::parse(Pipeline, "cpu:stage3-Map → Write").unwrap(),
            BisectMetric::StageCpu { stage: "stage3-Map → Write".into() }
        );
        let w = BisectMetric::parse(Warp, "get-4KiB/sync-off:reqps").unwrap();
        assert_eq!(w.warp_cell(), Some(("get-4KiB", false)));
        assert_eq!(w.spec(), "get-4KiB/sync-off:reqps");
        assert!(BisectMetric::parse(Warp, "get-4KiB:reqps").unwrap_err().contains("sync-on"));
        assert!(BisectMetric::parse(Warp, "get-4KiB/sync-off:ops").unwrap_err().contains("not one of"));
        assert!(BisectMetric::parse(Pipeline, "cpu:").is_err());
    }
}
