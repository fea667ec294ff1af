//! The pipeline report for people: Markdown for a code review, a plain table for terminals.

use super::report::{fmt_pct, ArmReport, PipelineReport, StageReport};
use crate::Verdict;
use std::fmt::Write;

/// The execution ids of each trial of each arm, for the report's "Arms" line.
pub struct ArmIds {
    pub name: String,
    pub trials: Vec<Vec<String>>,
}

fn icon(v: Verdict) -> &'static str {
    v.tone().icon()
}

fn interval(i: Option<[f64; 2]>) -> String {
    i.map(|[l, h]| format!(" [{} … {}]", fmt_pct(l), fmt_pct(h))).unwrap_or_default()
}

fn mem_change(s: &StageReport) -> String {
    format!("{} ({:.0} MiB)", fmt_pct(s.mem_peak_change_pct), s.mem_peak_treatment / 1048576.0)
}

fn interpretation(arm: &ArmReport) -> &'static str {
    match arm.verdict {
        Verdict::Pass => "No stage got more expensive beyond the noise thresholds.",
        Verdict::Tradeoff => "The change trades CPU cost against elapsed time; decide which one matters for this pipeline.",
        Verdict::Regression => "The treatment costs more (or failed, or broke the memory limit) in at least one stage.",
        _ => "The data cannot tell yet: see the reasons, then repeat or fix the comparison.",
    }
}

/// A report a reviewer reads in a pull request.
pub fn markdown(report: &PipelineReport, arms: &[ArmIds]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## {} Pipeline A/B: {}\n", icon(report.verdict), report.verdict);
    for r in report.reasons.iter().take(5) {
        let _ = writeln!(out, "- {r}");
    }
    let _ = writeln!(out);
    if !arms.is_empty() {
        let list: Vec<String> = arms
            .iter()
            .map(|a| {
                format!(
                    "**{}** ({} trial{}: {})",
                    a.name,
                    a.trials.len(),
                    if a.trials.len() == 1 { "" } else { "s" },
                    a.trials.iter().map(|t| format!("`{}`", t.join("`+`"))).collect::<Vec<_>>().join(", ")
                )
            })
            .collect();
        let _ = writeln!(out, "Arms: {}\n", list.join("; "));
    }
    let t = &report.thresholds;
    let _ = writeln!(
        out,
        "Thresholds: {} (CPU ±{} %, summed elapsed ±{} %, changes under {} CPU-s / {} s are flat){}\n",
        t.source,
        t.cpu_pct,
        t.elapsed_pct,
        t.cpu_floor_s,
        t.elapsed_floor_s,
        t.worker_ram_bytes.map(|b| format!("; worker RAM {:.0} MiB", b / 1048576.0)).unwrap_or_default()
    );
    for arm in &report.treatments {
        if report.treatments.len() > 1 {
            let _ = writeln!(out, "### {} {}: {}\n", icon(arm.verdict), arm.name, arm.verdict);
        }
        let _ =
            writeln!(out, "| Stage | CPU change | CPU-s (control → {}) | Summed elapsed change | Peak memory change | Verdict |", arm.name);
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---|");
        for s in arm.stages.iter().chain(std::iter::once(&arm.total)) {
            let name = if std::ptr::eq(s, &arm.total) { format!("**{}**", s.stage) } else { s.stage.clone() };
            let _ = writeln!(
                out,
                "| {name} | {}{} | {:.2} → {:.2} | {}{} | {} | {} {} |",
                fmt_pct(s.cpu_change_pct),
                interval(s.cpu_interval_pct),
                s.cpu_control,
                s.cpu_treatment,
                fmt_pct(s.elapsed_change_pct),
                interval(s.elapsed_interval_pct),
                mem_change(s),
                icon(s.verdict),
                s.verdict
            );
        }
        let off: Vec<String> = arm
            .stages
            .iter()
            .filter(|s| s.items_change_pct.abs() > t.equivalence_tolerance_pct || s.bytes_change_pct.abs() > t.equivalence_tolerance_pct)
            .map(|s| format!("{} (items {}, bytes {})", s.stage, fmt_pct(s.items_change_pct), fmt_pct(s.bytes_change_pct)))
            .collect();
        let _ = writeln!(out);
        if off.is_empty() {
            let _ = writeln!(out, "Data check: items and bytes match within ±{} % in every paired stage.", t.equivalence_tolerance_pct);
        } else {
            let _ = writeln!(out, "Data check: different work in {}.", off.join("; "));
        }
        let [nc, nt] = arm.trials;
        let elapsed = if nc >= 2 && nt >= 2 {
            format!("Elapsed: from repeated trials ({nc} control, {nt} treatment); intervals are 95 %.")
        } else {
            format!(
                "Elapsed: from one pair ({nc} control, {nt} treatment trial{}); an elapsed-only change needs repeats.",
                if nt == 1 { "" } else { "s" }
            )
        };
        let _ = writeln!(out, "{elapsed}");
        let _ = writeln!(out, "Interpretation: {}\n", interpretation(arm));
    }
    let infra = if report.retried.is_empty() && report.dropped_control_trials.is_empty() && report.duplicates_dropped == 0 {
        "no retries, no dropped trials, no duplicate rows.".to_string()
    } else {
        let mut parts = Vec::new();
        if !report.retried.is_empty() {
            parts.push(format!("retried attempts: {}", report.retried.join(", ")));
        }
        if !report.dropped_control_trials.is_empty() {
            parts.push(format!("dropped control trials: {}", report.dropped_control_trials.join(", ")));
        }
        if report.duplicates_dropped > 0 {
            parts.push(format!("{} identical duplicate row(s) dropped", report.duplicates_dropped));
        }
        parts.join("; ")
    };
    let _ = writeln!(out, "Infrastructure: {infra}");
    out
}

/// A fixed-width table for terminals.
pub fn table(report: &PipelineReport) -> String {
    let mut out = format!("verdict: {} {}\n", icon(report.verdict), report.verdict);
    for arm in &report.treatments {
        let _ = writeln!(out, "\n{} ({} control / {} treatment trials): {}", arm.name, arm.trials[0], arm.trials[1], arm.verdict);
        let _ = writeln!(out, "{:<34} {:>10} {:>16} {:>10} {:>10}  verdict", "stage", "CPU", "CPU-s", "elapsed", "peak mem");
        for s in arm.stages.iter().chain(std::iter::once(&arm.total)) {
            let _ = writeln!(
                out,
                "{:<34} {:>10} {:>16} {:>10} {:>10}  {}",
                s.stage.chars().take(34).collect::<String>(),
                fmt_pct(s.cpu_change_pct),
                format!("{:.2}→{:.2}", s.cpu_control, s.cpu_treatment),
                fmt_pct(s.elapsed_change_pct),
                fmt_pct(s.mem_peak_change_pct),
                s.verdict
            );
        }
    }
    for r in &report.reasons {
        let _ = writeln!(out, "- {r}");
    }
    out
}
