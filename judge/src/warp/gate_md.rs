//! gate.md, in the upstream gate's layout (heading, budget line, exemption blockquote, the table), with an
//! optional Provenance section in upstream's `write_provenance()` shape.

use super::gate::GateReport;
use crate::pipeline::report::fmt_pct;
use crate::Verdict;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// Where a gate result came from. Every field is optional; absent ones are left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// UTC, e.g. 2026-07-16T07:42:11Z.
    pub generated: Option<String>,
    /// OS, kernel and architecture.
    pub runner: Option<String>,
    /// Load tool and version.
    pub load_tool: Option<String>,
    /// e.g. "duration=12s rounds=2 cooldown=5 disks=4 concurrency=8".
    pub matrix: Option<String>,
    pub baseline_binary: Option<String>,
    pub candidate_binary: Option<String>,
    /// "SHA - where the binary came from" (binary cache or source build).
    pub baseline_commit: Option<String>,
    pub candidate_commit: Option<String>,
    /// Per phase in run order, where its server binary came from: "A1 (main, sync-on): source build
    /// (now cached)". Arbiter's addition: a cached second phase beside a built first one is no contradiction.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phase_binaries: Vec<String>,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// "10", "10.5": budgets as a person typed them.
fn budget(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{p:.0}")
    } else {
        format!("{p}")
    }
}

fn heading(v: Verdict) -> &'static str {
    match v {
        Verdict::WarpPass => "✅ PASS",
        Verdict::WarpWarn | Verdict::WarpExempted => "⚠️ WARN",
        Verdict::WarpInconclusive => "❔ INCONCLUSIVE",
        _ => "❌ FAIL",
    }
}

/// Arbiter's addition: the same rows judged against their noise (`super::noise`). Rows that pass in
/// both readings are counted, not listed.
fn noise_section(out: &mut String, n: &super::noise::NoiseGate) {
    use super::noise::NoiseVerdict;
    let _ = writeln!(out, "\n## Noise-aware (Arbiter) — {}\n", heading(n.verdict));
    let spread = if n.calibrations == 0 {
        "the default phase spread: the suite has no warp noise profile for these settings on this host (an A/A run of it makes one)"
            .to_string()
    } else {
        format!("the suite's warp noise profile ({} calibration{})", n.calibrations, if n.calibrations == 1 { "" } else { "s" })
    };
    let _ = writeln!(
        out,
        "Each row's change has an interval from its rounds and {spread}, at a {}% error rate over the matrix: Holm over the cells' obj/s rows (throughput and mean latency read at their cell's level) and over the tail latencies, each end of a row's interval a one-sided bound at its own level (the first {}; the adaptive looks share the rate). A breach inside the noise is INCONCLUSIVE, not PASS.\n",
        budget(100.0 * n.alpha),
        crate::pipeline::report::fmt_level(n.row_alpha)
    );
    let listed: Vec<&super::noise::NoiseRow> =
        n.rows.iter().filter(|r| r.verdict != NoiseVerdict::Pass || r.upstream != super::gate::RowVerdict::Pass).collect();
    if !listed.is_empty() {
        let _ = writeln!(out, "| Workload | Metric | Change | Interval | Upstream | Noise-aware | Why |");
        let _ = writeln!(out, "| --- | --- | --- | --- | --- | --- | --- |");
        for r in &listed {
            let change = r.change_pct.map(fmt_pct).unwrap_or_else(|| "—".into());
            let interval = r.interval_pct.map(|[l, h]| format!("{} … {}", fmt_pct(l), fmt_pct(h))).unwrap_or_else(|| "—".into());
            let _ = writeln!(
                out,
                "| {} | {} | {change} | {interval} | {} | {} | {} |",
                r.workload,
                r.metric,
                r.upstream.label(),
                r.verdict.label(),
                r.words
            );
        }
    }
    let quiet = n.rows.len() - listed.len();
    if quiet > 0 {
        let _ = writeln!(out, "\n{quiet} other row(s) pass in both readings.");
    }
}

pub fn render(report: &GateReport, provenance: Option<&Provenance>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### Hotpath warp A/B gate — {}\n", heading(report.verdict));
    let _ = writeln!(
        out,
        "Budget: regression > {}% fails, > {}% warns (relative to baseline).\n",
        budget(report.fail_pct),
        budget(report.warn_pct)
    );
    if let Some(reason) = &report.exemption {
        let _ = writeln!(out, "> Gate FAIL exempted via `--allow-regression`: {reason}.\n");
    }
    if !report.drifted.is_empty() {
        let _ = writeln!(
            out,
            "> Baseline drifted between A1 and A2 beyond the warn budget in {}: re-run before trusting this result.\n",
            report.drifted.join(", ")
        );
    }
    if report.missing_skipped > 0 {
        let _ = writeln!(out, "> {} MISSING row(s) skipped via `--allow-missing`.\n", report.missing_skipped);
    }
    let _ = writeln!(out, "| Workload | Metric | Δ vs baseline | Verdict |");
    let _ = writeln!(out, "| --- | --- | --- | --- |");
    for r in &report.rows {
        let _ = writeln!(out, "| {} | {} | {} | {} |", r.workload, r.metric, r.delta, r.verdict.label());
    }
    if let Some(n) = &report.noise {
        noise_section(&mut out, n);
    }
    if let Some(p) = provenance {
        let _ = writeln!(out, "\n## Provenance\n");
        let lines = [
            ("generated", &p.generated),
            ("runner", &p.runner),
            ("warp", &p.load_tool),
            ("matrix", &p.matrix),
            ("baseline binary", &p.baseline_binary),
            ("candidate binary", &p.candidate_binary),
            ("baseline commit", &p.baseline_commit),
            ("candidate commit", &p.candidate_commit),
        ];
        for (key, value) in lines {
            if let Some(v) = value {
                let _ = writeln!(out, "- {key}: {v}");
            }
        }
        for phase in &p.phase_binaries {
            let _ = writeln!(out, "- phase binary: {phase}");
        }
        for note in &p.notes {
            let _ = writeln!(out, "- note: {note}");
        }
    }
    out
}
