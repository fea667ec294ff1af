//! The matrix judge the server uses: per cell (workload, object size, drive-sync), the rounds of each
//! phase → medians → a compare row → the gate. With ABBA order (A1 B1 B2 A2) the baseline is the mean of
//! A1 and A2, the candidate the mean of B1 and B2, and a baseline that moved between A1 and A2 by more
//! than the warn budget (in obj/s or throughput) makes the result INCONCLUSIVE.

use super::compare_csv::parse_compare_csv;
use super::compare_csv::HEADER_25;
use super::gate::{baseline_drift_pct, gate, GateConfig, GateReport};
use super::rounds::{compare_row, PhaseSummary, Round};

/// One cell of the matrix and the rounds of each of its phases, in run order.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// e.g. `put-4KiB/sync-on`, or `mixed-256KiB:GET/sync-on` for one operation of a mixed run.
    pub label: String,
    pub size: String,
    pub concurrency: u32,
    /// One entry per baseline phase: A (AB order) or A1, A2 (ABBA).
    pub baseline: Vec<Vec<Round>>,
    /// One entry per candidate phase: B, or B1, B2.
    pub candidate: Vec<Vec<Round>>,
}

impl Cell {
    fn summaries(&self, phases: &[Vec<Round>]) -> Vec<PhaseSummary> {
        phases.iter().map(|rounds| PhaseSummary::from_rounds(&self.size, "warp", self.concurrency, rounds)).collect()
    }

    /// The baseline moved between its first and last phase by more than `warn_pct` (ABBA only).
    pub fn baseline_drifted(&self, warn_pct: f64) -> bool {
        let phases = self.summaries(&self.baseline);
        let (Some(a1), Some(a2)) = (phases.first(), phases.last()) else { return false };
        if phases.len() < 2 {
            return false;
        }
        [(a1.reqps, a2.reqps), (a1.throughput_bps, a2.throughput_bps)]
            .into_iter()
            .filter_map(|(x, y)| baseline_drift_pct(x?, y?))
            .any(|d| d > warn_pct)
    }

    /// The cell as one 25-column compare row (candidate against baseline).
    pub fn compare_row(&self) -> String {
        let base = PhaseSummary::mean_of(&self.summaries(&self.baseline));
        let cand = PhaseSummary::mean_of(&self.summaries(&self.candidate));
        match cand {
            Some(c) => compare_row(&c, base.as_ref()),
            // No candidate phase at all: every value is missing.
            None => format!("{},warp,{},{}", self.size, self.concurrency, vec!["N/A"; 22].join(",")),
        }
    }
}

/// Judges a whole matrix.
pub fn judge_matrix(cells: &[Cell], config: &GateConfig) -> GateReport {
    let mut rows = Vec::with_capacity(cells.len());
    for cell in cells {
        let text = format!("{}\n{}\n", HEADER_25.join(","), cell.compare_row());
        // The text is ours and well-formed; a parse failure would be a bug, shown as MISSING evidence.
        rows.extend(parse_compare_csv(&cell.label, &text, Some(&cell.label), false).unwrap_or_default());
    }
    let drifted = cells.iter().filter(|c| c.baseline_drifted(config.warn_pct)).map(|c| c.label.clone()).collect();
    gate(&rows, config).with_baseline_drift(drifted)
}
