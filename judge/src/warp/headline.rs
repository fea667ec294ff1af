//! A warp verdict's headline and the measurements to check — Arbiter's own words for its pages, report
//! and PR comment (gate.md stays upstream's). Once the suite is calibrated the verdict already reads the
//! noise; until then the headline keeps upstream's verdict and says what the noise-aware reading makes of
//! the breaching rows: "upstream rule: FAIL; within noise: 24 of 46 breaching rows inconclusive".
//!
//! A cell is **to check** (a measurement, not a verdict; it never changes one) when
//! * its candidate reads at least [`FASTER_FACTOR`]× the baseline's obj/s: gains that large are more often a
//!   cache, a skipped write or a short-circuited request than the change under test;
//! * the suite says its server ignores drive sync (`[warp.drive_sync] ignored = true`) and one workload's
//!   baseline obj/s differs by [`SYNC_FACTOR`]× or more between its sync-on and sync-off cells: the same
//!   code on the same settings, so the host (its disk, its page cache) moved between phases.

use super::gate::{GateReport, RowVerdict};
use super::noise::NoiseVerdict;
use crate::units::fmt_num;

/// A candidate this many times the baseline's obj/s is a measurement to check.
pub const FASTER_FACTOR: f64 = 2.0;
/// A server that ignores drive sync whose sync cells' baselines differ this many times: a measurement to
/// check.
pub const SYNC_FACTOR: f64 = 2.0;

/// (workload with any arm prefix, sync label) of a cell label "put-4KiB/sync-on" or "fast:put-4KiB/sync-on".
fn split_cell(label: &str) -> (&str, &str) {
    label.rsplit_once('/').unwrap_or((label, ""))
}

/// The cells whose numbers deserve a second look before anyone trusts them, in words.
pub fn to_check(gate: &GateReport) -> Vec<String> {
    let mut out = Vec::new();
    let reqps = || gate.rows.iter().filter(|r| r.metric == "reqps");
    for r in reqps() {
        if let (Some(new), Some(base)) = (r.new, r.baseline) {
            if base > 0.0 && new / base >= FASTER_FACTOR {
                out.push(format!(
                    "{}: the candidate reads {:.1}× the baseline's obj/s ({} against {}) — a gain that large is more often a cache, a skipped write or a short-circuited request than the change",
                    r.workload,
                    new / base,
                    fmt_num(new),
                    fmt_num(base)
                ));
            }
        }
    }
    if gate.sync_ignored {
        let mut seen: Vec<&str> = Vec::new();
        for r in reqps() {
            let (workload, _) = split_cell(&r.workload);
            if seen.contains(&workload) {
                continue;
            }
            seen.push(workload);
            let cell = |sync: &str| reqps().find(|x| split_cell(&x.workload) == (workload, sync)).and_then(|x| x.baseline);
            if let (Some(on), Some(off)) = (cell("sync-on"), cell("sync-off")) {
                let (lo, hi) = (on.min(off), on.max(off));
                if lo > 0.0 && hi / lo >= SYNC_FACTOR {
                    out.push(format!(
                        "{workload}: the baseline reads {} obj/s with sync on and {} with sync off, {:.1}× apart, though the suite says the server ignores drive sync — the host moved between phases (its disk or page cache)",
                        fmt_num(on),
                        fmt_num(off),
                        hi / lo
                    ));
                }
            }
        }
    }
    out
}

/// The verdict's news after its word: "upstream rule: FAIL; within noise: 24 of 46 breaching rows
/// inconclusive", "3 of 46 rows beyond their budget and the noise", "every row within budget"; with the
/// cells to check counted. `None` when there is nothing to add.
pub fn news(gate: &GateReport) -> Option<String> {
    let breaching: Vec<_> = gate.rows.iter().filter(|r| matches!(r.verdict, RowVerdict::Fail | RowVerdict::Warn)).collect();
    let mut parts: Vec<String> = Vec::new();
    match &gate.noise {
        Some(noise) if noise.calibrations == 0 && noise.verdict != gate.verdict && !breaching.is_empty() => {
            let within = noise
                .rows
                .iter()
                .filter(|n| matches!(n.upstream, RowVerdict::Fail | RowVerdict::Warn) && n.verdict == NoiseVerdict::Inconclusive)
                .count();
            parts.push(format!(
                "upstream rule: {}; within noise: {within} of {} breaching row{} inconclusive (uncalibrated: calibrate the suite for the noise-aware verdict)",
                gate.verdict.as_str(),
                breaching.len(),
                if breaching.len() == 1 { "" } else { "s" }
            ));
        }
        Some(noise) if noise.calibrations > 0 => {
            let beyond = noise.rows.iter().filter(|n| matches!(n.verdict, NoiseVerdict::Fail | NoiseVerdict::Warn)).count();
            let unsure = noise.rows.iter().filter(|n| n.verdict == NoiseVerdict::Inconclusive).count();
            parts.push(match (beyond, unsure) {
                (0, 0) => "every row within budget or noise".to_string(),
                (0, u) => format!("nothing beyond the noise; {u} row{} undecided", if u == 1 { "" } else { "s" }),
                (b, _) => format!("{b} of {} rows beyond their budget and the noise", noise.rows.len()),
            });
        }
        _ if breaching.is_empty() => parts.push("every row within budget".into()),
        _ => parts.push(format!("{} of {} rows beyond their budget", breaching.len(), gate.rows.len())),
    }
    let check = to_check(gate).len();
    if check > 0 {
        parts.push(format!("{check} measurement{} to check", if check == 1 { "" } else { "s" }));
    }
    Some(parts.join("; "))
}

pub use super::gate::{change, metric_label};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warp::gate::GateRow;
    use crate::Verdict;

    fn row(cell: &str, metric: &str, base: f64, new: f64, verdict: RowVerdict) -> GateRow {
        GateRow {
            workload: cell.into(),
            metric: metric.into(),
            delta: format!("{:.2}%", (new / base - 1.0) * 100.0),
            new: Some(new),
            baseline: Some(base),
            regress: None,
            verdict,
            missing_reason: None,
        }
    }

    fn gate(rows: Vec<GateRow>, sync_ignored: bool) -> GateReport {
        GateReport {
            verdict: Verdict::WarpFail,
            fail_pct: 10.0,
            warn_pct: 5.0,
            rows,
            exemption: None,
            missing_skipped: 0,
            drifted: vec![],
            cells: vec![],
            noise: None,
            sync_ignored,
        }
    }

    #[test]
    fn a_candidate_twice_as_fast_and_sync_cells_apart_are_measurements_to_check() {
        let rows = vec![
            row("put-4KiB/sync-on", "reqps", 1061.0, 980.0, RowVerdict::Warn),
            row("put-4KiB/sync-off", "reqps", 255.0, 250.0, RowVerdict::Pass),
            row("get-4KiB/sync-on", "reqps", 300.0, 780.0, RowVerdict::Pass),
            row("get-4KiB/sync-off", "reqps", 310.0, 305.0, RowVerdict::Pass),
        ];
        let found = to_check(&gate(rows.clone(), true));
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("get-4KiB/sync-on: the candidate reads 2.6× the baseline's obj/s (780 against 300)"), "{found:?}");
        assert!(found[1].starts_with("put-4KiB: the baseline reads 1061 obj/s with sync on and 255 with sync off, 4.2× apart"), "{found:?}");
        // A server that honours drive sync may well differ between its sync cells.
        assert_eq!(to_check(&gate(rows, false)).len(), 1);
        assert_eq!(news(&gate(vec![row("a/sync-on", "reqps", 100.0, 80.0, RowVerdict::Fail)], false)).unwrap(), "1 of 1 rows beyond their budget");
    }

    #[test]
    fn rows_read_in_arbiters_units() {
        let r = row("put-4KiB/sync-on", "reqps", 1000.0, 80.1, RowVerdict::Fail);
        assert_eq!((metric_label(&r.metric), change(&r).as_str()), ("obj/s", "−92.0 %"));
        assert_eq!(r.delta, "-91.99%", "upstream's words stay in the row for gate.md");
        assert_eq!(metric_label("p99-latency"), "p99-latency");
    }
}
