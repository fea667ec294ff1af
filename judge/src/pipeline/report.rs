//! The pipeline verdict as data (serialised to JSON for the API and CLI). Markdown and table renderings
//! live in `render.rs`.

use super::aggregate::StageSums;
use super::noise::StageThresholds;
use crate::stats::mean;
use crate::Verdict;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum MetricOutcome {
    Lower,
    #[default]
    Flat,
    Higher,
    /// Repeats could not tell: the interval straddles the threshold.
    Unclear,
}

/// Signed percent with one decimal and a real minus sign: "+27.4 %", "−0.9 %".
pub fn fmt_pct(p: f64) -> String {
    if p.abs() < 0.05 {
        return "±0.0 %".into();
    }
    let sign = if p < 0.0 { "−" } else { "+" };
    format!("{sign}{:.1} %", p.abs())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageReport {
    pub stage: String,
    pub verdict: Verdict,
    pub reasons: Vec<String>,
    pub cpu_control: f64,
    pub cpu_treatment: f64,
    pub cpu_change_pct: f64,
    pub cpu_interval_pct: Option<[f64; 2]>,
    pub cpu_p_value: Option<f64>,
    pub cpu_outcome: MetricOutcome,
    /// Summed stage elapsed, in seconds.
    pub elapsed_control: f64,
    pub elapsed_treatment: f64,
    pub elapsed_change_pct: f64,
    pub elapsed_interval_pct: Option<[f64; 2]>,
    pub elapsed_outcome: MetricOutcome,
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
    /// The numbers of a stage: means over trials (peak memory: the largest), before any decision.
    pub fn numbers(stage: &str, control: &[StageSums], treatment: &[StageSums], thresholds: StageThresholds) -> StageReport {
        let m = |xs: &[StageSums], f: fn(&StageSums) -> f64| mean(&xs.iter().map(f).collect::<Vec<_>>());
        let peak = |xs: &[StageSums]| xs.iter().map(|s| s.mem_peak).fold(0.0, f64::max);
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
            cpu_interval_pct: None,
            cpu_p_value: None,
            cpu_outcome: MetricOutcome::Flat,
            elapsed_control: ec,
            elapsed_treatment: et,
            elapsed_change_pct: pct_change(ec, et),
            elapsed_interval_pct: None,
            elapsed_outcome: MetricOutcome::Flat,
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

    /// "CPU +27.4 % (1.13 → 1.44 CPU-s); summed elapsed flat (−0.9 %)".
    pub fn detail(&self) -> String {
        let word = |o: MetricOutcome| match o {
            MetricOutcome::Lower => "lower",
            MetricOutcome::Flat => "flat",
            MetricOutcome::Higher => "higher",
            MetricOutcome::Unclear => "unclear",
        };
        let interval = |i: Option<[f64; 2]>| i.map(|[l, h]| format!(", 95 % interval {} … {}", fmt_pct(l), fmt_pct(h))).unwrap_or_default();
        let per = match self.normalised.as_deref() {
            Some("per_item") => " per item",
            Some("per_byte") => " per byte",
            _ => "",
        };
        format!(
            "CPU{per} {} {} ({:.2} → {:.2} CPU-s{}); summed elapsed {} ({}{})",
            word(self.cpu_outcome),
            fmt_pct(self.cpu_change_pct),
            self.cpu_control,
            self.cpu_treatment,
            interval(self.cpu_interval_pct),
            word(self.elapsed_outcome),
            fmt_pct(self.elapsed_change_pct),
            interval(self.elapsed_interval_pct),
        )
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
        self.cpu_p_value = self.cpu_p_value.map(|p| round(p, 4));
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// "uncalibrated" or "noise profile".
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
    pub duplicates_dropped: usize,
    /// Control trials dropped because a stage failed in them.
    pub dropped_control_trials: Vec<String>,
    /// FAILED attempts that a later attempt retried (infrastructure churn), as "trial: stage".
    pub retried: Vec<String>,
    pub treatments: Vec<ArmReport>,
    /// The first treatment's stages and total, for convenience.
    pub stages: Vec<StageReport>,
    pub total: Option<StageReport>,
}
