//! The warp gate: compare rows → a verdict per workload and metric, and overall. Every rule is here.
//!
//! * regress = −Δ for higher-is-better metrics (reqps, throughput), +Δ otherwise (latencies, error rate
//!   in percentage points); regress > fail % → FAIL, > warn % → WARN, else PASS. Strict comparisons:
//!   exactly 10.00 with a 10 % budget is WARN, exactly 5.00 with 5 % is PASS. Improvements never fail.
//! * Deltas are the ones the driver printed (not recomputed), so verdicts match upstream to the digit.
//! * Missing evidence never passes silently: an N/A or non-numeric value, a zero baseline, a phase with no
//!   successful round, or a file with no rows is MISSING, which fails unless `allow_missing`.
//! * Strict mode (upstream's `--require-tail-error`): a 25-column row whose tail/error evidence is invalid
//!   becomes one `tail-error-evidence | invalid evidence | FAIL` row.
//! * Tail metrics (p90, p99, error rate) are gated whenever a row carries them — upstream gates them only
//!   in strict mode.
//! * Tail latencies (p90, p99) may have budgets of their own (`tail_fail_pct`, `tail_warn_pct`): a
//!   short window holds few requests, so its p99 is a handful of samples. Unset, they use the main budgets.
//! * Overall = worst row. An exemption turns an overall FAIL into an exempted WARN (rows keep FAIL); it
//!   never exempts MISSING.

use super::compare_csv::{number, tail_error_evidence_is_valid, CompareRow, Metric};
use crate::Verdict;
use serde::{Deserialize, Serialize};

pub const DEFAULT_EXEMPTION_REASON: &str = "deliberate correctness tradeoff";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateConfig {
    pub fail_pct: f64,
    pub warn_pct: f64,
    pub allow_regression: bool,
    pub exemption_reason: String,
    pub allow_missing: bool,
    pub strict: bool,
    /// Budgets of p90/p99 latency when they differ from the main ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_fail_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_warn_pct: Option<f64>,
}

impl Default for GateConfig {
    fn default() -> Self {
        GateConfig {
            fail_pct: 10.0,
            warn_pct: 5.0,
            allow_regression: false,
            exemption_reason: DEFAULT_EXEMPTION_REASON.into(),
            allow_missing: false,
            strict: false,
            tail_fail_pct: None,
            tail_warn_pct: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum RowVerdict {
    Pass,
    Warn,
    Fail,
    Missing,
}

impl RowVerdict {
    pub fn label(self) -> &'static str {
        match self {
            RowVerdict::Pass => "✅ PASS",
            RowVerdict::Warn => "⚠️ WARN",
            RowVerdict::Fail => "❌ FAIL",
            RowVerdict::Missing => "❓ MISSING",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateRow {
    pub workload: String,
    /// Upstream's metric name, or `tail-error-evidence`.
    pub metric: String,
    /// As printed in the report: "-12.00%", "16.67pp", "N/A", "invalid evidence".
    pub delta: String,
    pub new: Option<f64>,
    pub baseline: Option<f64>,
    /// How much worse the candidate is, in percent (points for the error rate); negative is better.
    pub regress: Option<f64>,
    pub verdict: RowVerdict,
    /// Why a row is MISSING.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_reason: Option<String>,
}

/// A warp metric's name on Arbiter's pages: "obj/s" for upstream's "reqps", "MiB/s" for "throughput".
pub fn metric_label(metric: &str) -> &str {
    match metric {
        "reqps" => "obj/s",
        "throughput" => "MiB/s",
        other => other,
    }
}

/// A row's change against the baseline as Arbiter prints changes ("−92.0 %"), from its values; upstream's
/// own words ("N/A", "16.67pp") where there are none to compute from.
pub fn change(row: &GateRow) -> String {
    match (row.new, row.baseline, row.metric.as_str()) {
        (_, _, "error-rate" | "tail-error-evidence") => row.delta.clone(),
        (Some(new), Some(base), _) if base > 0.0 => crate::pipeline::report::fmt_pct((new / base - 1.0) * 100.0),
        _ => row.delta.clone(),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateReport {
    /// PASS, WARN, FAIL, EXEMPTED (a FAIL exempted with a reason) or INCONCLUSIVE.
    pub verdict: Verdict,
    pub fail_pct: f64,
    pub warn_pct: f64,
    pub rows: Vec<GateRow>,
    /// Set when an exemption turned a FAIL into an exempted WARN.
    pub exemption: Option<String>,
    /// MISSING rows passed over because of `allow_missing`.
    pub missing_skipped: usize,
    /// Cells whose baseline drifted between A1 and A2 beyond the warn budget (ABBA order).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drifted: Vec<String>,
    /// Per cell of a matrix run (not of an imported CSV): the rounds behind each phase's median, the
    /// baseline's ABBA drift and the suite's note on the cell.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<super::rounds::CellRounds>,
    /// The noise-aware reading of the same rows (a matrix run: `super::noise`); gate.md shows it beside
    /// upstream's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<super::noise::NoiseGate>,
    /// The suite says its server ignores drive sync (`[warp.drive_sync] ignored`): its sync cells measure
    /// the same thing, and a gap between them is the host's (`super::headline::to_check`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sync_ignored: bool,
}

fn missing(workload: &str, metric: &str, reason: &str) -> GateRow {
    GateRow {
        workload: workload.into(),
        metric: metric.into(),
        delta: "N/A".into(),
        new: None,
        baseline: None,
        regress: None,
        verdict: RowVerdict::Missing,
        missing_reason: Some(reason.into()),
    }
}

/// Judges one metric of one row.
fn judge_cell(row: &CompareRow, cell: &super::compare_csv::MetricCell, config: &GateConfig) -> GateRow {
    let name = cell.metric.name();
    let (new, baseline, delta) = (number(&cell.new), number(&cell.baseline), number(&cell.delta));
    let no_round = |i: usize| row.rounds.as_ref().and_then(|r| number(&r[i])).is_some_and(|ok| ok == 0.0);
    let Some(delta_value) = delta else { return missing(&row.label, name, "no delta (N/A or not a number)") };
    if new.is_none() || baseline.is_none() {
        return missing(&row.label, name, "a median is N/A or not a number");
    }
    if cell.metric != Metric::ErrorRate {
        if baseline == Some(0.0) {
            return missing(&row.label, name, "the baseline is zero");
        }
        if no_round(1) || no_round(0) {
            return missing(&row.label, name, "a phase had no successful round");
        }
    }
    let regress = if cell.metric.higher_is_better() { -delta_value } else { delta_value };
    let (fail_pct, warn_pct) = match cell.metric {
        Metric::P90Latency | Metric::P99Latency => {
            (config.tail_fail_pct.unwrap_or(config.fail_pct), config.tail_warn_pct.unwrap_or(config.warn_pct))
        }
        _ => (config.fail_pct, config.warn_pct),
    };
    let verdict = if regress > fail_pct {
        RowVerdict::Fail
    } else if regress > warn_pct {
        RowVerdict::Warn
    } else {
        RowVerdict::Pass
    };
    let unit = if cell.metric == Metric::ErrorRate { "pp" } else { "%" };
    GateRow {
        workload: row.label.clone(),
        metric: name.into(),
        delta: format!("{}{unit}", cell.delta.trim()),
        new,
        baseline,
        regress: Some(regress),
        verdict,
        missing_reason: None,
    }
}

/// Gates every row of every compare file (in order).
pub fn gate(rows: &[CompareRow], config: &GateConfig) -> GateReport {
    let mut out = Vec::new();
    for row in rows {
        let evidence_ok = !(config.strict && row.is_extended()) || tail_error_evidence_is_valid(row);
        for cell in &row.cells {
            let is_tail = matches!(cell.metric, Metric::P90Latency | Metric::P99Latency | Metric::ErrorRate);
            if is_tail && !evidence_ok {
                continue;
            }
            out.push(judge_cell(row, cell, config));
        }
        if !evidence_ok {
            out.push(GateRow {
                workload: row.label.clone(),
                metric: "tail-error-evidence".into(),
                delta: "invalid evidence".into(),
                new: None,
                baseline: None,
                regress: None,
                verdict: RowVerdict::Fail,
                missing_reason: None,
            });
        }
    }
    if rows.is_empty() {
        out.push(missing("(no rows)", "-", "the compare files hold no data rows"));
    }
    let missing_count = out.iter().filter(|r| r.verdict == RowVerdict::Missing).count();
    let has = |v: RowVerdict| out.iter().any(|r| r.verdict == v);
    let blocking_missing = missing_count > 0 && !config.allow_missing;
    let mut exemption = None;
    let verdict = if has(RowVerdict::Fail) || blocking_missing {
        if config.allow_regression && !blocking_missing {
            exemption = Some(config.exemption_reason.clone());
            Verdict::WarpExempted
        } else {
            Verdict::WarpFail
        }
    } else if has(RowVerdict::Warn) {
        Verdict::WarpWarn
    } else {
        Verdict::WarpPass
    };
    GateReport {
        verdict,
        fail_pct: config.fail_pct,
        warn_pct: config.warn_pct,
        rows: out,
        exemption,
        missing_skipped: if config.allow_missing { missing_count } else { 0 },
        drifted: Vec::new(),
        cells: Vec::new(),
        noise: None,
        sync_ignored: false,
    }
}

impl GateReport {
    /// The verdict's reasons in words: one line per cell that did not pass, its worst verdict first and
    /// the metrics behind it ("put-4KiB/sync-on: ❌ FAIL — reqps -12.00%, latency 13.75%"), then
    /// drifted baselines.
    pub fn reasons(&self) -> Vec<String> {
        let rank = |v: RowVerdict| match v {
            RowVerdict::Fail | RowVerdict::Missing => 0,
            RowVerdict::Warn => 1,
            RowVerdict::Pass => 2,
        };
        let mut cells: Vec<(&str, RowVerdict, Vec<String>)> = Vec::new();
        for row in self.rows.iter().filter(|r| r.verdict != RowVerdict::Pass) {
            // Metrics missing for the same reason are named together: "reqps, latency: no delta (…)".
            let what = match &row.missing_reason {
                Some(why) => format!("{}: {why}", metric_label(&row.metric)),
                None => format!("{} {}", metric_label(&row.metric), change(row)),
            };
            match cells.iter_mut().find(|c| c.0 == row.workload) {
                Some(c) => {
                    if rank(row.verdict) < rank(c.1) {
                        c.1 = row.verdict;
                    }
                    let joined = row.missing_reason.as_ref().and_then(|why| {
                        let tail = format!(": {why}");
                        c.2.iter_mut().find(|w| w.ends_with(&tail)).map(|w| {
                            let head = w.trim_end_matches(&tail).to_string();
                            *w = format!("{head}, {}{tail}", metric_label(&row.metric));
                        })
                    });
                    if joined.is_none() {
                        c.2.push(what);
                    }
                }
                None => cells.push((&row.workload, row.verdict, vec![what])),
            }
        }
        cells.sort_by_key(|c| rank(c.1));
        let mut out: Vec<String> =
            cells.into_iter().map(|(cell, v, what)| format!("{cell}: {} — {}", v.label(), what.join(", "))).collect();
        out.extend(self.drifted.iter().map(|c| format!("{c}: the baseline moved between A1 and A2 by more than {} %", self.warn_pct)));
        out
    }

    /// ABBA order: a baseline that drifted (A2 vs A1) beyond the warn budget makes the result
    /// INCONCLUSIVE whatever the rows say; `drifted` names the cells.
    pub fn with_baseline_drift(mut self, drifted: Vec<String>) -> GateReport {
        if !drifted.is_empty() {
            self.verdict = Verdict::WarpInconclusive;
        }
        self.drifted = drifted;
        self
    }
}

/// How far a baseline moved between its two ABBA phases, in percent of A1; `None` without a usable A1.
pub fn baseline_drift_pct(a1: f64, a2: f64) -> Option<f64> {
    (a1 != 0.0 && a1.is_finite() && a2.is_finite()).then(|| ((a2 - a1) / a1 * 100.0).abs())
}
