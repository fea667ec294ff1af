//! The matrix judge the server uses: per cell (workload, object size, drive-sync), the rounds of each
//! phase → medians → a compare row → the gate. With ABBA order (A1 B1 B2 A2) the baseline is the mean of
//! A1 and A2, the candidate the mean of B1 and B2, and a baseline that moved between A1 and A2 by more
//! than the warn budget (in obj/s or throughput) makes the result INCONCLUSIVE.

use super::compare_csv::CompareRow;
use super::gate::{baseline_drift_pct, gate, GateConfig, GateReport};
use super::rounds::{compare_fields, PhaseSummary, Round};

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

    /// The cell as one compare row (candidate against baseline), built from the same printed fields
    /// `baseline_compare.csv` would hold, so the gate sees exactly what a CSV of this cell would give it.
    pub fn compare_row(&self) -> CompareRow {
        let base = PhaseSummary::mean_of(&self.summaries(&self.baseline));
        let fields = match PhaseSummary::mean_of(&self.summaries(&self.candidate)) {
            Some(c) => compare_fields(&c, base.as_ref()),
            // No candidate phase at all: every value is missing.
            None => [self.size.clone(), "warp".into(), self.concurrency.to_string()]
                .into_iter()
                .chain(std::iter::repeat_n("N/A".to_string(), 22))
                .collect(),
        };
        let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
        CompareRow::from_fields(Some(&self.label), 0, &fields)
    }
}

/// Judges a whole matrix.
pub fn judge_matrix(cells: &[Cell], config: &GateConfig) -> GateReport {
    let rows: Vec<CompareRow> = cells.iter().map(Cell::compare_row).collect();
    let drifted = cells.iter().filter(|c| c.baseline_drifted(config.warn_pct)).map(|c| c.label.clone()).collect();
    gate(&rows, config).with_baseline_drift(drifted)
}
