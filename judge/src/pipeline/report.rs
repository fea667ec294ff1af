//! The pipeline verdict as data (serialised to JSON for the API and CLI). Markdown and table renderings
//! live in `render.rs`.

use super::aggregate::StageSums;
use super::family::{MetricTest, MAX_MORE_PAIRS};
/// A metric's outcome lives with the test that decides it; here under its old path too.
pub use super::family::MetricOutcome;
/// The one percent format (`units::fmt_pct`), here under its old path too.
pub use crate::units::fmt_pct;
use super::method::{Method, CPU_FLOOR_S, ELAPSED_FLOOR_S};
use super::noise::StageThresholds;
use crate::Verdict;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageReport {
    pub stage: String,
    pub verdict: Verdict,
    pub reasons: Vec<String>,
    pub cpu_control: f64,
    pub cpu_treatment: f64,
    /// The CPU change every door prints: the estimate its test rests on (`cpu_test.estimate_pct`, from the
    /// logs of the trials) when it was tested; the ratio of the arms' mean CPU-seconds when it was not
    /// (below the floor, untested, method 1).
    pub cpu_change_pct: f64,
    /// The ratio of the arms' mean CPU-seconds (percent) when the test's estimate replaced it in
    /// `cpu_change_pct`: a second statistic, only ever shown labelled as such.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_means_change_pct: Option<f64>,
    /// The CPU change's interval at the level its test was decided at (`cpu_test.alpha`).
    pub cpu_interval_pct: Option<[f64; 2]>,
    /// The two-sided p-value of the test that decided CPU (`cpu_test.p_value`; Mann–Whitney's in method 1).
    pub cpu_p_value: Option<f64>,
    pub cpu_outcome: MetricOutcome,
    /// A detected change whose whole interval lies inside ±margin: it counts as flat for the verdict.
    #[serde(default)]
    pub cpu_negligible: bool,
    /// Both arms' mean CPU below the floor: not tested, outside the family.
    #[serde(default)]
    pub cpu_below_floor: bool,
    /// Treatment trials in which this stage FAILED (not retried): with none that succeeded, the
    /// treatment's numbers are absent (zeros), not measured.
    #[serde(default)]
    pub treatment_failures: usize,
    /// The test behind `cpu_outcome` (absent below the floor, when a guardrail decided, and in method 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_test: Option<MetricTest>,
    /// Summed stage elapsed, in seconds.
    pub elapsed_control: f64,
    pub elapsed_treatment: f64,
    /// As `cpu_change_pct`: the test's estimate when tested, else the ratio of the means.
    pub elapsed_change_pct: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_means_change_pct: Option<f64>,
    pub elapsed_interval_pct: Option<[f64; 2]>,
    pub elapsed_outcome: MetricOutcome,
    #[serde(default)]
    pub elapsed_negligible: bool,
    #[serde(default)]
    pub elapsed_below_floor: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_test: Option<MetricTest>,
    pub items_control: f64,
    pub items_treatment: f64,
    pub items_change_pct: f64,
    pub bytes_change_pct: f64,
    pub mem_peak_control: f64,
    pub mem_peak_treatment: f64,
    pub mem_peak_change_pct: f64,
    /// null, "per_item" or "per_byte".
    pub normalised: Option<String>,
    /// [control trials, treatment trials].
    pub trials: [usize; 2],
    pub thresholds: StageThresholds,
}

/// Relative change in percent; from zero, any growth counts as +100 %.
pub fn pct_change(c: f64, t: f64) -> f64 {
    if c == 0.0 {
        if t == 0.0 {
            0.0
        } else {
            100.0
        }
    } else {
        (t / c - 1.0) * 100.0
    }
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

impl StageReport {
    /// Both arms did the same work: items and bytes each within ±`tolerance_pct` (the judge's
    /// `equivalence_tolerance_pct`). The one rule the judge, report.md and the page apply.
    pub fn same_work(&self, tolerance_pct: f64) -> bool {
        self.items_change_pct.abs() <= tolerance_pct && self.bytes_change_pct.abs() <= tolerance_pct
    }

    /// The numbers of a stage (each trial with its pair key): means over trials (peak memory: the largest),
    /// before any decision.
    pub fn numbers(
        stage: &str,
        control: &[(Option<u32>, StageSums)],
        treatment: &[(Option<u32>, StageSums)],
        thresholds: StageThresholds,
    ) -> StageReport {
        let m = |xs: &[(Option<u32>, StageSums)], f: fn(&StageSums) -> f64| {
            if xs.is_empty() {
                0.0
            } else {
                xs.iter().map(|x| f(&x.1)).sum::<f64>() / xs.len() as f64
            }
        };
        let peak = |xs: &[(Option<u32>, StageSums)]| xs.iter().map(|s| s.1.mem_peak).fold(0.0, f64::max);
        let (cc, ct) = (m(control, |s| s.cpu), m(treatment, |s| s.cpu));
        let (ec, et) = (m(control, |s| s.elapsed), m(treatment, |s| s.elapsed));
        let (ic, it) = (m(control, |s| s.items), m(treatment, |s| s.items));
        let (bc, bt) = (m(control, |s| s.bytes), m(treatment, |s| s.bytes));
        let (pc, pt) = (peak(control), peak(treatment));
        StageReport {
            stage: stage.to_string(),
            verdict: Verdict::Inconclusive,
            reasons: Vec::new(),
            cpu_control: cc,
            cpu_treatment: ct,
            cpu_change_pct: pct_change(cc, ct),
            cpu_means_change_pct: None,
            cpu_interval_pct: None,
            cpu_p_value: None,
            cpu_outcome: MetricOutcome::Flat,
            cpu_negligible: false,
            cpu_below_floor: false,
            treatment_failures: 0,
            cpu_test: None,
            elapsed_control: ec,
            elapsed_treatment: et,
            elapsed_change_pct: pct_change(ec, et),
            elapsed_means_change_pct: None,
            elapsed_interval_pct: None,
            elapsed_outcome: MetricOutcome::Flat,
            elapsed_negligible: false,
            elapsed_below_floor: false,
            elapsed_test: None,
            items_control: ic,
            items_treatment: it,
            items_change_pct: pct_change(ic, it),
            bytes_change_pct: pct_change(bc, bt),
            mem_peak_control: pc,
            mem_peak_treatment: pt,
            mem_peak_change_pct: pct_change(pc, pt),
            normalised: None,
            trials: [control.len(), treatment.len()],
            thresholds,
        }
    }

    /// "CPU higher +27.4 % (1.13 → 1.44 CPU-s, 99.8 % interval +12.0 % … +44.9 %); summed elapsed unclear
    /// (−0.9 %, 99.96 % interval …; MDE 80.1 %, about 40 more pairs would decide it against ±25 %)".
    /// The stage failed in every treatment trial: the treatment has no numbers, only the failure.
    pub fn treatment_failed(&self) -> bool {
        self.treatment_failures > 0 && self.trials[1] == 0
    }

    /// What stands in for the treatment's numbers when it has none: "failed in 1 treatment trial", or
    /// "no treatment numbers" (a total over stages that failed); `None` when it has numbers.
    pub fn missing_treatment(&self) -> Option<String> {
        (self.trials[1] == 0).then(|| match self.treatment_failures {
            0 => "no treatment numbers".to_string(),
            n => format!("failed in {n} treatment trial{}", if n == 1 { "" } else { "s" }),
        })
    }

    pub fn detail(&self) -> String {
        let per = match self.normalised.as_deref() {
            Some("per_item") => " per item",
            Some("per_byte") => " per byte",
            _ => "",
        };
        let cpu = metric_detail(
            self.cpu_outcome,
            self.cpu_change_pct,
            self.cpu_test.as_ref(),
            self.cpu_below_floor,
            CPU_FLOOR_S,
            "CPU-s",
            "one pair and no noise profile to read its spread from (calibrate the suite, or run more pairs)",
        );
        let elapsed = metric_detail(
            self.elapsed_outcome,
            self.elapsed_change_pct,
            self.elapsed_test.as_ref(),
            self.elapsed_below_floor,
            ELAPSED_FLOOR_S,
            "s",
            "fewer than 3 trials an arm",
        );
        format!(
            "CPU{per} {} ({:.2} → {:.2} CPU-s{}); summed elapsed {}{}",
            cpu.0,
            self.cpu_control,
            self.cpu_treatment,
            cpu.1,
            elapsed.0,
            if elapsed.1.is_empty() { String::new() } else { format!(" ({})", elapsed.1.trim_start_matches(", ")) },
        )
    }

    /// One number per claim: a tested metric's change is its test's estimate, and the ratio of the means
    /// it replaces is kept, labelled, in `*_means_change_pct`. Idempotent; applied when a stage is decided
    /// and to reports stored before the rule (`PipelineReport::one_estimate_per_claim`).
    pub fn one_estimate_per_claim(&mut self) {
        if let Some(t) = &self.cpu_test {
            if self.cpu_means_change_pct.is_none() {
                self.cpu_means_change_pct = Some(self.cpu_change_pct);
                self.cpu_change_pct = t.estimate_pct;
            }
        }
        if let Some(t) = &self.elapsed_test {
            if self.elapsed_means_change_pct.is_none() {
                self.elapsed_means_change_pct = Some(self.elapsed_change_pct);
                self.elapsed_change_pct = t.estimate_pct;
            }
        }
    }

    pub(crate) fn decide(mut self, verdict: Verdict, reason: String) -> StageReport {
        self.verdict = verdict;
        self.reasons.push(reason);
        self
    }

    /// Rounds the printed numbers (the decision used the exact ones).
    pub(crate) fn rounded(mut self) -> StageReport {
        for v in [&mut self.cpu_control, &mut self.cpu_treatment, &mut self.elapsed_control, &mut self.elapsed_treatment] {
            *v = round(*v, 3);
        }
        for v in [&mut self.cpu_means_change_pct, &mut self.elapsed_means_change_pct].into_iter().flatten() {
            *v = round(*v, 1);
        }
        for v in [
            &mut self.cpu_change_pct,
            &mut self.elapsed_change_pct,
            &mut self.items_change_pct,
            &mut self.bytes_change_pct,
            &mut self.mem_peak_change_pct,
        ] {
            *v = round(*v, 1);
        }
        for i in [&mut self.cpu_interval_pct, &mut self.elapsed_interval_pct].into_iter().flatten() {
            *i = [round(i[0], 1), round(i[1], 1)];
        }
        // p-values keep four significant digits, however small.
        let sig4 = |p: f64| if p > 0.0 { format!("{p:.3e}").parse().unwrap_or(p) } else { p };
        self.cpu_p_value = self.cpu_p_value.map(sig4);
        for t in [&mut self.cpu_test, &mut self.elapsed_test].into_iter().flatten() {
            t.estimate_pct = round(t.estimate_pct, 1);
            t.p_value = sig4(t.p_value);
            t.interval_pct = [round(t.interval_pct[0], 1), round(t.interval_pct[1], 1)];
            t.equivalence_interval_pct = t.equivalence_interval_pct.map(|i| [round(i[0], 1), round(i[1], 1)]);
            t.margin_pct = round(t.margin_pct, 1);
            t.bad_end_pct = t.bad_end_pct.map(|b| round(b, 1));
            t.df = round(t.df, 1);
            t.mde_pct = t.mde_pct.map(|m| round(m, 1));
        }
        self.thresholds.cpu_pct = round(self.thresholds.cpu_pct, 1);
        self.thresholds.elapsed_pct = round(self.thresholds.elapsed_pct, 1);
        self
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmReport {
    pub name: String,
    pub verdict: Verdict,
    pub reasons: Vec<String>,
    pub stages: Vec<StageReport>,
    /// All stages summed, judged by rules 5–6 (context when stage sets differ).
    pub total: StageReport,
    /// Stages that ran in only one arm.
    pub unpaired_stages: Vec<String>,
    pub trials: [usize; 2],
}

impl ArmReport {
    /// The arm's news in a few words, after its verdict: "+284.7 % CPU in stage3", "cheaper: −49.1 % CPU in
    /// total", "no regression ≥ 6 %", "no change beyond the margins", "stage3: detects ±38 %, about 15 more
    /// pairs". The numbers are the stage table's and the reasons' (`cpu_change_pct`, `fmt_pct`).
    pub fn news(&self) -> String {
        let detected = |s: &&StageReport, o: MetricOutcome| s.cpu_outcome == o && !s.cpu_negligible && !s.cpu_below_floor;
        let largest = |o: MetricOutcome| {
            self.stages.iter().filter(|s| detected(s, o)).max_by(|a, b| a.cpu_change_pct.abs().total_cmp(&b.cpu_change_pct.abs()))
        };
        let first_clause = |r: &str| r.split([';', '(']).next().unwrap_or(r).trim().trim_end_matches(':').to_string();
        match self.verdict {
            Verdict::Regression => match largest(MetricOutcome::Higher).filter(|s| s.verdict == Verdict::Regression) {
                Some(s) => format!("{} CPU in {}", fmt_pct(s.cpu_change_pct), s.stage),
                None => self.reasons.first().map(|r| first_clause(r)).unwrap_or_default(),
            },
            Verdict::Pass => {
                let total = &self.total;
                if total.cpu_outcome == MetricOutcome::Lower && !total.cpu_negligible {
                    format!("cheaper: {} CPU in total", fmt_pct(total.cpu_change_pct))
                } else if let Some(s) = largest(MetricOutcome::Lower) {
                    format!("cheaper: {} CPU in {}", fmt_pct(s.cpu_change_pct), s.stage)
                } else if let Some(x) = self
                    .stages
                    .iter()
                    .filter(|s| s.cpu_outcome == MetricOutcome::NoRegression)
                    .filter_map(|s| s.cpu_test.as_ref()?.no_regression_pct)
                    .max_by(f64::total_cmp)
                {
                    format!("no regression ≥ {}", fmt_margin(x))
                } else {
                    "no change beyond the margins".to_string()
                }
            }
            Verdict::Tradeoff => match (largest(MetricOutcome::Higher), largest(MetricOutcome::Lower)) {
                (Some(up), Some(down)) => {
                    format!("{} CPU in {}, {} in {}", fmt_pct(up.cpu_change_pct), up.stage, fmt_pct(down.cpu_change_pct), down.stage)
                }
                _ => self.reasons.first().map(|r| first_clause(r)).unwrap_or_default(),
            },
            _ => self
                .stages
                .iter()
                .filter(|s| s.cpu_outcome == MetricOutcome::Unclear)
                .filter_map(|s| Some((s, s.cpu_test.as_ref()?)))
                .max_by_key(|(_, t)| t.more_pairs.unwrap_or(0))
                .and_then(|(s, t)| Some(format!("{}: {}", s.stage, fmt_needs(t)?)))
                .or_else(|| {
                    // Untested (one pair, no profile): the change as measured, and why it decides nothing.
                    let s = self
                        .stages
                        .iter()
                        .filter(|s| s.cpu_outcome == MetricOutcome::Unclear && s.cpu_test.is_none())
                        .max_by(|a, b| a.cpu_change_pct.abs().total_cmp(&b.cpu_change_pct.abs()))?;
                    Some(format!("{} CPU in {}, too few trials to test it", fmt_pct(s.cpu_change_pct), s.stage))
                })
                .or_else(|| self.reasons.first().map(|r| first_clause(r)))
                .unwrap_or_default(),
        }
    }

    /// What stands in for the total's treatment numbers: its own absence, or — when a stage has no treatment
    /// numbers — "not comparable" (a sum over a missing stage would read as a −100 % change).
    pub fn total_missing(&self) -> Option<String> {
        self.total.missing_treatment().or_else(|| {
            self.stages.iter().any(|s| s.missing_treatment().is_some()).then(|| "not comparable: a stage has no treatment numbers".into())
        })
    }
}

/// What an experiment was held to. In method 2 `cpu_pct` / `elapsed_pct` are the margins (the smallest
/// changes that matter); in method 1 they were fixed thresholds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// Where the spread came from: "uncalibrated" or "noise profile".
    pub source: String,
    pub cpu_pct: f64,
    pub elapsed_pct: f64,
    pub cpu_floor_s: f64,
    pub elapsed_floor_s: f64,
    pub equivalence_tolerance_pct: f64,
    pub worker_ram_bytes: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineReport {
    pub verdict: Verdict,
    pub reasons: Vec<String>,
    pub thresholds: Thresholds,
    /// How the verdict was reached (absent in reports of method 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<Method>,
    pub duplicates_dropped: usize,
    /// Control trials dropped because a stage failed in them.
    pub dropped_control_trials: Vec<String>,
    /// FAILED attempts that a later attempt retried (infrastructure churn), as "trial: stage".
    pub retried: Vec<String>,
    pub treatments: Vec<ArmReport>,
    /// The first treatment's stages and total, for convenience.
    pub stages: Vec<StageReport>,
    pub total: Option<StageReport>,
    /// How a sequential design reached it: the looks, when each metric was decided, why it stopped
    /// (absent for the fixed design).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<super::sequential::record::SequentialRecord>,
    /// How the trials ran against each other, in words (one at a time on a host, or pairs submitted
    /// together to a cluster and in which order); filled by the engine that ran them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairing: Option<String>,
    /// What the trials say about how they were measured (drift, outliers, the warm-up's cost, heavy load;
    /// `measurement`); filled by the engine, which knows each trial's run order and role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measurement: Option<super::measurement::MeasurementReport>,
}

impl PipelineReport {
    /// [`StageReport::one_estimate_per_claim`] over every stage and total: a report stored before the rule
    /// reads like one judged after it.
    pub fn one_estimate_per_claim(&mut self) {
        for arm in &mut self.treatments {
            arm.stages.iter_mut().chain(std::iter::once(&mut arm.total)).for_each(StageReport::one_estimate_per_claim);
        }
    }

    /// The verdict and its news in one line, for the page's banner and report.md: "regression — +284.7 %
    /// CPU in stage3", "pass — cheaper: −49.1 % CPU in total"; with several treatment arms, the worst
    /// arm's news, named.
    pub fn headline(&self) -> String {
        match self.news() {
            Some(n) => format!("{} — {n}", self.verdict.as_str()),
            None => self.verdict.as_str().to_string(),
        }
    }

    /// The headline's news alone (the page's banner shows the verdict as a badge beside it).
    pub fn news(&self) -> Option<String> {
        let arm = self.treatments.iter().find(|a| a.verdict == self.verdict).or(self.treatments.first())?;
        let news = if self.treatments.len() > 1 { format!("{}: {}", arm.name, arm.news()) } else { arm.news() };
        (!news.is_empty()).then_some(news)
    }
}

/// The level of a test as a percentage with the fewest decimals that keep it below 100: α 0.0016 →
/// "99.8 %", α 0.0004 → "99.96 %".
pub fn fmt_level(alpha: f64) -> String {
    let level = 100.0 * (1.0 - alpha);
    let digits = (1..=5).find(|&d| format!("{level:.d$}").parse::<f64>().is_ok_and(|v| v < 100.0)).unwrap_or(5);
    format!("{level:.digits$} %")
}

/// "higher +27.4 %" and ", 99.8 % interval +12.0 % … +44.9 %", or the same with the MDE of an undecided
/// metric, or "below the 0.05 CPU-s floor".
fn metric_detail(
    outcome: MetricOutcome,
    change: f64,
    test: Option<&MetricTest>,
    below: bool,
    floor: f64,
    unit: &str,
    untested: &str,
) -> (String, String) {
    use std::fmt::Write;
    let word = match outcome {
        MetricOutcome::Lower => "lower",
        MetricOutcome::Flat => "flat",
        MetricOutcome::Higher => "higher",
        MetricOutcome::Unclear => "unclear",
        MetricOutcome::NoRegression => "not worse",
    };
    if below {
        return (format!("below the {floor} {unit} floor ({})", fmt_pct(change)), String::new());
    }
    let head = format!("{word} {}", fmt_pct(change));
    let Some(t) = test else {
        let untested = if outcome == MetricOutcome::Unclear { format!(", untested: {untested}") } else { String::new() };
        return (head, untested);
    };
    let mut tail = String::with_capacity(120);
    let interval = |out: &mut String, i: [f64; 2]| {
        let _ = write!(out, "{} … {}", fmt_pct(i[0]), fmt_pct(i[1]));
    };
    if let Some(bad) = t.bad_end_pct {
        // A bisection's probe, decided by which end it resembles.
        let _ = write!(tail, ", {} interval ", fmt_level(t.alpha));
        interval(&mut tail, t.interval_pct);
        match outcome {
            MetricOutcome::Flat => {
                let _ = write!(tail, ": like the good end, it excludes the bad end's {}", fmt_pct(bad));
            }
            MetricOutcome::Unclear => {
                let _ = write!(tail, ": neither end excluded (the bad end {}); {} would tell", fmt_pct(bad), fmt_more_pairs_for(t));
            }
            _ => {
                let _ = write!(tail, ": moved from the good end (the bad end {})", fmt_pct(bad));
            }
        }
        return (head, tail);
    }
    match outcome {
        MetricOutcome::Flat => {
            let _ = write!(tail, ", equivalent within {}: 98 % interval ", fmt_applied_margin(t));
            interval(&mut tail, t.equivalence_interval_pct.unwrap_or(t.interval_pct));
        }
        MetricOutcome::NoRegression => {
            let top = t.equivalence_interval_pct.unwrap_or(t.interval_pct)[1];
            let x = t.no_regression_pct.unwrap_or(f64::NAN);
            let _ =
                write!(tail, ", 99 % one-sided bound {} below X = {}; not within {}", fmt_pct(top), fmt_margin(x), fmt_applied_margin(t));
        }
        MetricOutcome::Unclear => {
            let _ = write!(tail, ", {} interval ", fmt_level(t.alpha));
            interval(&mut tail, t.interval_pct);
            // (A sequential test has no fixed-design MDE: it says only what more pairs would take.)
            match t.mde_pct.filter(|m| m.is_finite()) {
                Some(mde) => {
                    let _ = write!(tail, "; detects {} at this run's error rate; ", fmt_mde(mde));
                }
                None => tail.push_str("; "),
            }
            tail.push_str(&fmt_more_pairs_for(t));
            let _ = write!(tail, " would decide it against {}", fmt_applied_margin(t));
            if over_the_cap(t) {
                let _ = write!(tail, ": {OVER_THE_CAP_ADVICE}");
            }
        }
        _ => {
            let _ = write!(tail, ", {} interval ", fmt_level(t.alpha));
            interval(&mut tail, t.interval_pct);
            if t.negligible {
                match t.equivalence_interval_pct {
                    Some(i) => {
                        let _ = write!(tail, ", negligible: 98 % interval ");
                        interval(&mut tail, i);
                        let _ = write!(tail, " inside {}", fmt_applied_margin(t));
                    }
                    None => {
                        let _ = write!(tail, ", negligible: inside {}", fmt_applied_margin(t));
                    }
                }
            }
        }
    }
    (head, tail)
}

/// The margin a metric was held to, with the reason when it is wider than the suite's: "±2 %", or "±5.9 %
/// (the 0.05 CPU-s floor on a 0.85 CPU-s stage)".
pub fn fmt_applied_margin(t: &MetricTest) -> String {
    match &t.margin_why {
        Some(why) => format!("±{} ({why})", fmt_margin(t.margin_pct)),
        None => format!("±{}", fmt_margin(t.margin_pct)),
    }
}

/// What would decide an undecided metric, within what one experiment may run: "about 15 more pairs", or —
/// when that would take the arm past [`crate::launch_rules::MAX_PIPELINE_TRIALS`] trials — "more pairs than
/// one experiment may run (at most 100 an arm)", with what to do instead from [`OVER_THE_CAP_ADVICE`].
pub fn fmt_more_pairs_for(t: &MetricTest) -> String {
    let so_far = t.n[0].min(t.n[1]) as u64;
    match t.more_pairs {
        Some(n) if so_far + n > u64::from(crate::launch_rules::MAX_PIPELINE_TRIALS) => {
            format!("more pairs than one experiment may run (at most {} an arm)", crate::launch_rules::MAX_PIPELINE_TRIALS)
        }
        more => fmt_more_pairs(more),
    }
}

/// What to do when more pairs cannot decide it.
pub const OVER_THE_CAP_ADVICE: &str = "calibrate the suite, accept a wider margin, or use a quieter host";

fn over_the_cap(t: &MetricTest) -> bool {
    t.more_pairs.is_some_and(|n| t.n[0].min(t.n[1]) as u64 + n > u64::from(crate::launch_rules::MAX_PIPELINE_TRIALS))
}

/// How many more pairs would decide an undecided metric: "about 15 more pairs", "more than 100000 more
/// pairs", or just "more pairs" when unknown.
pub fn fmt_more_pairs(more: Option<u64>) -> String {
    match more {
        Some(n) if n >= MAX_MORE_PAIRS => format!("more than {MAX_MORE_PAIRS} more pairs"),
        Some(n) => format!("about {n} more pair{}", if n == 1 { "" } else { "s" }),
        None => "more pairs".into(),
    }
}

/// An undecided metric in short — "detects ±38.5 %, about 15 more pairs", the reasons' words — for the
/// stage table, the forest plot and the report's "What it would take"; `None` for a decided one.
pub fn fmt_needs(t: &MetricTest) -> Option<String> {
    let mde = t.mde_pct?;
    // From one or two degrees of freedom nothing short of the cap is detectable: what would decide it is
    // the news ("undecided: about 3 more pairs"), and the short status stays readable.
    if mde >= crate::stats::MAX_STATED_PCT {
        return Some(fmt_more_pairs_for(t));
    }
    Some(format!("detects {}, {}", fmt_mde(mde), fmt_more_pairs_for(t)))
}

/// A minimum detectable effect in words: "±38.5 %", or "nothing below ±10000 %" when it reaches
/// [`crate::stats::MAX_STATED_PCT`] (one or two degrees of freedom).
pub fn fmt_mde(mde: f64) -> String {
    if mde >= crate::stats::MAX_STATED_PCT {
        format!("nothing below ±{}", fmt_margin(crate::stats::MAX_STATED_PCT))
    } else {
        format!("±{}", fmt_margin(mde))
    }
}

/// A margin or effect size in percent, at the precision changes are printed with (one decimal, as
/// [`fmt_pct`]; below 1 %, [`crate::units::fmt_num`]'s three digits), without trailing zeros — "2 %",
/// "5.1 %", "16.7 %", "125 %", "0.833 %". A margin worked out to 5.07 % reads "5.1 %" wherever it is shown.
pub fn fmt_margin(p: f64) -> String {
    if !p.is_finite() {
        return "? %".into();
    }
    let text = if p.abs() >= 100.0 {
        format!("{p:.0}")
    } else if p.abs() >= 1.0 {
        format!("{p:.1}")
    } else {
        crate::units::fmt_num(p)
    };
    let text = if text.contains('.') && !text.contains('e') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text };
    format!("{text} %")
}

impl PipelineReport {
    /// The pairs' order in one line, when the judge knew it (every pair's, in some arm): how many pairs
    /// ran each arm first and what the analysis made of it — adjusted (with the largest first-trial effect
    /// of a stage's CPU and its 98 % interval), too few pairs to fit, or one order only, where the change
    /// and any order effect cannot be told apart. `None` when no order was known.
    pub fn order_line(&self) -> Option<String> {
        let tests: Vec<(&str, &super::family::OrderTest)> = self
            .treatments
            .iter()
            .flat_map(|a| &a.stages)
            .filter_map(|s| Some((s.stage.as_str(), s.cpu_test.as_ref()?.order.as_ref()?)))
            .collect();
        let (_, widest) = tests.iter().max_by_key(|(_, o)| o.control_first + o.treatment_first)?;
        let (cf, tf) = (widest.control_first, widest.treatment_first);
        let counts = format!("{cf} pair{} ran the control first, {tf} the treatment first", if cf == 1 { "" } else { "s" });
        let adjusted: Vec<&(&str, &super::family::OrderTest)> = tests.iter().filter(|(_, o)| o.adjusted).collect();
        if let Some((stage, o)) = adjusted
            .iter()
            .filter(|(_, o)| o.first_pct.is_some())
            .max_by(|a, b| a.1.first_pct.unwrap_or(0.0).abs().total_cmp(&b.1.first_pct.unwrap_or(0.0).abs()))
        {
            let i = o.first_interval_pct.unwrap_or([f64::NAN; 2]);
            return Some(format!(
                "Order: {counts}; each change is adjusted for the order (d = μ + s·o, one df). A pair's first trial cost {} CPU in {stage} (98 % interval {} … {}){}.",
                fmt_pct(o.first_pct.unwrap_or(0.0)),
                fmt_pct(i[0]),
                fmt_pct(i[1]),
                if adjusted.len() > 1 { format!(", the largest of {} stages", adjusted.len()) } else { String::new() }
            ));
        }
        if cf > 0 && tf > 0 {
            return Some(format!(
                "Order: {counts}; too few pairs to fit the order (two of each are needed), so its effect stays in the spread (which errs wide)."
            ));
        }
        let who = if tf == 0 { "control" } else { "treatment" };
        Some(format!(
            "Order: the {who} ran first in all {} pairs, so the change and any order effect (a warm-up, a cache) cannot be told apart; a balanced order separates them.",
            cf + tf
        ))
    }
}
