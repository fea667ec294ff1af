//! The pipeline report for people: Markdown for a code review, a plain table for terminals.

use super::report::{fmt_applied_margin, fmt_level, fmt_margin, fmt_needs, fmt_pct, ArmReport, MetricOutcome, PipelineReport, StageReport};
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
        Verdict::Pass => {
            "No stage's CPU got more expensive by more than its margin, and every stage's CPU was decided (elapsed is context)."
        }
        Verdict::Tradeoff => "The change trades CPU cost against elapsed time; decide which one matters for this pipeline.",
        Verdict::Regression => "The treatment costs more (or failed, or broke the memory limit) in at least one stage.",
        _ => "The data cannot tell yet: see the reasons (each undecided stage says what it would take), then repeat or fix the comparison.",
    }
}

/// When and why an adaptive (sequential) run stopped, and when each CPU metric was decided: "**Stopped after
/// 3 of at most 20 pairs:** a regression is decided after 3 pairs: map: CPU higher. CPU: map higher after 3
/// pairs; reduce equivalent after 3 pairs; 1 undecided."
pub fn sequential_line(report: &PipelineReport) -> Option<String> {
    use super::sequential::Decision;
    let q = report.sequential.as_ref()?;
    let unit = q.unit.word();
    let units = |n: usize| if n == 1 { format!("1 {unit}") } else { format!("{n} {unit}s") };
    let of = match q.max_pairs {
        Some(max) => format!("{} of at most {max}", q.pairs_used),
        None => format!("{} of {}", q.pairs_used, q.pairs_given),
    };
    let head = if q.stopped { format!("**Stopped after {of} {unit}s:**") } else { format!("**Not stopped, {of} {unit}s used:**") };
    let many = report.treatments.len() > 1;
    let mut decided = Vec::new();
    let mut open = 0;
    let x = report.method.as_ref().and_then(|m| m.no_regression.as_ref()).and_then(|n| n.pct).map_or("X".into(), super::report::fmt_margin);
    for m in q.metrics.iter().filter(|m| m.metric == "cpu") {
        let who = if many { format!("{} ({})", m.stage, m.arm) } else { m.stage.clone() };
        match (m.decision, m.decided_after) {
            (Decision::Continue, _) | (_, None) => open += 1,
            (Decision::Different, Some(k)) => {
                decided.push(format!("{who} {} after {}", if m.outcome == MetricOutcome::Lower { "lower" } else { "higher" }, units(k)))
            }
            (Decision::Equivalent, Some(k)) => decided.push(format!("{who} equivalent after {}", units(k))),
            (Decision::NoRegression, Some(k)) => decided.push(format!("{who} no regression ≥ {x} after {}", units(k))),
        }
    }
    let shown = decided.len().min(6);
    let mut cpu = decided[..shown].join("; ");
    if decided.len() > shown {
        cpu.push_str(&format!("; {} more", decided.len() - shown));
    }
    if open > 0 {
        cpu.push_str(&format!("{}{open} undecided", if cpu.is_empty() { "" } else { "; " }));
    }
    Some(format!("{head} {}. CPU: {}.", q.stop_reason, if cpu.is_empty() { "none tested".into() } else { cpu }))
}

/// A report a reviewer reads in a pull request.
pub fn markdown(report: &PipelineReport, arms: &[ArmIds]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## {} Pipeline A/B: {}\n", icon(report.verdict), report.verdict);
    if let Some(line) = sequential_line(report) {
        let _ = writeln!(out, "{line}\n");
    }
    // The news in a line (kept by the PR comment, whose own heading replaces the one above).
    if let Some(news) = report.news() {
        let _ = writeln!(out, "**In short:** {} — {news}.\n", report.verdict);
    }
    // What was detected leads, with its interval; then the rest of the reasons.
    let found = detected(report);
    if found.is_empty() {
        let _ = writeln!(out, "**Detected changes:** none at the experiment's error rate.\n");
    } else {
        let _ = writeln!(out, "**Detected changes** (largest first):\n");
        for d in &found {
            let _ = writeln!(out, "- {d}");
        }
        let _ = writeln!(out);
    }
    if report.verdict == Verdict::Inconclusive {
        let many = report.treatments.len() > 1;
        let mut needs: Vec<(u64, String)> = Vec::new();
        for arm in &report.treatments {
            for s in &arm.stages {
                for (what, outcome, test) in [("CPU", s.cpu_outcome, &s.cpu_test), ("elapsed", s.elapsed_outcome, &s.elapsed_test)] {
                    let Some(t) = test.as_ref().filter(|_| outcome == MetricOutcome::Unclear) else { continue };
                    let (Some(more), Some(need)) = (t.more_pairs, fmt_needs(t)) else { continue };
                    let who = if many { format!("{} ({})", s.stage, arm.name) } else { s.stage.clone() };
                    needs.push((more, format!("{who} {what}: {need}")));
                }
            }
        }
        needs.sort_by_key(|n| std::cmp::Reverse(n.0));
        if let Some((most, _)) = needs.first() {
            let list: Vec<&str> = needs.iter().take(4).map(|n| n.1.as_str()).collect();
            let _ = writeln!(
                out,
                "**What it would take:** about {most} more pair{} of trials (one more trial an arm each) to decide every undecided metric, if the spread holds — {}{}.\n",
                if *most == 1 { "" } else { "s" },
                list.join("; "),
                if needs.len() > 4 { format!("; {} more", needs.len() - 4) } else { String::new() }
            );
        }
    }
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
    let _ = writeln!(out, "{}\n", method_line(report));
    let _ = writeln!(
        out,
        "Margins: CPU ±{}, summed elapsed ±{} (the smallest changes that matter; never below {} CPU-s / {} s in a stage{}); spread: {}{}\n",
        fmt_margin(t.cpu_pct),
        fmt_margin(t.elapsed_pct),
        t.cpu_floor_s,
        t.elapsed_floor_s,
        widened(report),
        t.source,
        t.worker_ram_bytes.map(|b| format!("; worker RAM {:.0} MiB", b / 1048576.0)).unwrap_or_default()
    );
    if let Some(order) = report.order_line() {
        let _ = writeln!(out, "{order}\n");
    }
    for arm in &report.treatments {
        if report.treatments.len() > 1 {
            let _ = writeln!(out, "### {} {}: {}\n", icon(arm.verdict), arm.name, arm.verdict);
        }
        let _ =
            writeln!(out, "| Stage | CPU change | CPU-s (control → {}) | Summed elapsed change | Peak memory change | Verdict |", arm.name);
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---|");
        for s in arm.stages.iter().chain(std::iter::once(&arm.total)) {
            let is_total = std::ptr::eq(s, &arm.total);
            let name = if is_total { format!("**{}**", s.stage) } else { s.stage.clone() };
            if let Some(failed) = if is_total { arm.total_missing() } else { s.missing_treatment() } {
                let _ = writeln!(out, "| {name} | {failed} | {:.2} → — | — | — | {} {} |", s.cpu_control, icon(s.verdict), s.verdict);
                continue;
            }
            let _ = writeln!(
                out,
                "| {name} | {}{} | {} → {} | {}{} | {} | {} {} |",
                fmt_pct(s.cpu_change_pct),
                interval(s.cpu_interval_pct),
                crate::units::fmt_num(s.cpu_control),
                crate::units::fmt_num(s.cpu_treatment),
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
            .filter(|s| s.missing_treatment().is_none())
            .filter(|s| !s.same_work(t.equivalence_tolerance_pct))
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
            format!("Elapsed: from repeated trials ({nc} control, {nt} treatment); each interval is at the level its test was decided at.")
        } else {
            format!(
                "Elapsed: from one pair ({nc} control, {nt} treatment trial{}); an elapsed-only change needs repeats.",
                if nt == 1 { "" } else { "s" }
            )
        };
        let _ = writeln!(out, "{elapsed}");
        let undecided = undecided(arm);
        if !undecided.is_empty() {
            let _ = writeln!(out, "Undecided: {}.", undecided.join("; "));
        }
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
    if let Some(pairing) = &report.pairing {
        let _ = writeln!(out, "\nPairing: {pairing}");
    }
    if let Some(m) = report.measurement.as_ref().filter(|m| !m.lines.is_empty()) {
        let _ = writeln!(out, "\nMeasurement ({}, the stage with the most CPU):", m.stage);
        for line in &m.lines {
            let _ = writeln!(out, "- {line}");
        }
    }
    out
}

/// "Method 2: CPU and elapsed tested per stage at a family-wise error rate of 1 % (Holm; 0.8 % to CPU over
/// 3 tests), paired t on log ratios", or the method-1 note for old reports.
pub fn method_line(report: &PipelineReport) -> String {
    let Some(m) = &report.method else {
        return "Method 1: fixed thresholds (judged before margins and error-rate control).".into();
    };
    let analyses: Vec<&str> = {
        let mut a: Vec<&str> = report
            .treatments
            .iter()
            .flat_map(|arm| arm.stages.iter())
            .flat_map(|s| [s.cpu_test.as_ref(), s.elapsed_test.as_ref()])
            .flatten()
            .map(|t| t.analysis.as_str())
            .collect();
        a.sort_unstable();
        a.dedup();
        a
    };
    let elapsed = match m.family_elapsed {
        0 => "elapsed untested (under 3 trials an arm, or below its floor)".to_string(),
        n => format!("{} to elapsed over {n} test{}", fmt_margin(100.0 * m.alpha_elapsed), if n == 1 { "" } else { "s" }),
    };
    if let Some(q) = &report.sequential {
        return format!(
            "Method {} (sequential): each stage's CPU and summed elapsed looked at after every {} from {} on, at a family-wise error rate of {} \
             that holds however often it looks (Bonferroni over mixture confidence sequences: {} to CPU over {} test{}, {elapsed}). {}: {} of {} {}s used.",
            m.version,
            q.unit.word(),
            q.min_pairs,
            fmt_margin(100.0 * m.alpha),
            fmt_margin(100.0 * m.alpha_cpu),
            m.family_cpu,
            if m.family_cpu == 1 { "" } else { "s" },
            if q.stopped { "Stopped" } else { "Not stopped" },
            q.pairs_used,
            q.pairs_given,
            q.unit.word(),
        ) + &format!(" {}.", capitalise(&q.stop_reason));
    }
    format!(
        "Method {}: each stage's CPU and summed elapsed tested at a family-wise error rate of {} (Holm: {} to CPU over {} test{}, {elapsed}){}{}",
        m.version,
        fmt_margin(100.0 * m.alpha),
        fmt_margin(100.0 * m.alpha_cpu),
        m.family_cpu,
        if m.family_cpu == 1 { "" } else { "s" },
        if analyses.is_empty() { String::new() } else { format!("; {}", analyses.join(", ")) },
        if m.paired && !analyses.contains(&"paired t on log ratios") { " (pairing asked for, but no stage had every partner)" } else { "" }
    )
}

/// Each detected change, largest first: "**stage1-Map → Scatter** CPU +27.5 % (99.6 % interval +1.1 % …
/// +60.8 %, margin ±4.4 %)", with the arm when there are several and "negligible" when inside the margin.
/// "; 2 stages held to a wider margin by the floor, each says which": the header's margins are the suite's,
/// and a stage whose floor raised its margin says so in its own line.
fn widened(report: &PipelineReport) -> String {
    let n = report
        .treatments
        .iter()
        .flat_map(|a| &a.stages)
        .filter(|s| [&s.cpu_test, &s.elapsed_test].into_iter().flatten().any(|t| t.margin_why.is_some()))
        .count();
    match n {
        0 => String::new(),
        1 => "; 1 stage held to a wider margin by the floor, its line says why".into(),
        n => format!("; {n} stages held to a wider margin by the floor, each line says why"),
    }
}

fn detected(report: &PipelineReport) -> Vec<String> {
    let many = report.treatments.len() > 1;
    let mut found: Vec<(f64, String)> = Vec::new();
    for arm in &report.treatments {
        for s in &arm.stages {
            for (what, test) in [("CPU", &s.cpu_test), ("summed elapsed", &s.elapsed_test)] {
                let Some(t) = test.as_ref().filter(|t| t.detected) else { continue };
                let who = if many { format!("**{}** ({})", s.stage, arm.name) } else { format!("**{}**", s.stage) };
                found.push((
                    t.estimate_pct.abs(),
                    format!(
                        "{who} {what} {} ({} interval {} … {}, margin {}{})",
                        fmt_pct(t.estimate_pct),
                        fmt_level(t.alpha),
                        fmt_pct(t.interval_pct[0]),
                        fmt_pct(t.interval_pct[1]),
                        fmt_applied_margin(t),
                        if t.negligible { "; negligible: inside the margin" } else { "" }
                    ),
                ));
            }
        }
    }
    found.sort_by(|a, b| b.0.total_cmp(&a.0));
    found.into_iter().map(|f| f.1).collect()
}

/// Each undecided metric with what it would take: "stage3 CPU: detects ±12.3 %, about 18 more pairs".
fn undecided(arm: &ArmReport) -> Vec<String> {
    let mut out = Vec::new();
    for s in &arm.stages {
        for (what, outcome, test) in [("CPU", s.cpu_outcome, &s.cpu_test), ("elapsed", s.elapsed_outcome, &s.elapsed_test)] {
            if let (MetricOutcome::Unclear, Some(t)) = (outcome, test) {
                out.push(format!(
                    "{} {what}: {} interval {} … {}, {} to decide against {}",
                    s.stage,
                    fmt_level(t.alpha),
                    fmt_pct(t.interval_pct[0]),
                    fmt_pct(t.interval_pct[1]),
                    fmt_needs(t).unwrap_or_else(|| "more pairs".into()),
                    fmt_applied_margin(t)
                ));
            }
        }
    }
    out
}

/// A fixed-width table for terminals.
pub fn table(report: &PipelineReport) -> String {
    let mut out = format!("verdict: {} {}\n{}\n", icon(report.verdict), report.verdict, method_line(report));
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

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}
