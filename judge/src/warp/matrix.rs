//! The matrix judge the server uses: per cell (workload, object size, drive-sync), the rounds of each
//! phase → medians → a compare row → the gate. With ABBA order (A1 B1 B2 A2) the baseline is the mean of
//! A1 and A2, the candidate the mean of B1 and B2, and a baseline that moved between A1 and A2 by more
//! than the warn budget (in obj/s or throughput) makes the result INCONCLUSIVE.

use super::compare_csv::CompareRow;
use super::gate::{baseline_drift_pct, gate, GateConfig, GateReport};
use super::rounds::{compare_fields, CellRounds, PhaseRounds, PhaseSummary, Round};

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
    /// The phases' names, baseline phases then candidate phases (the plan's legs: A1, B1, C1…); empty:
    /// A/B, or A1, A2 and B1, B2 when an arm ran twice.
    pub legs: Vec<String>,
    /// What the suite says about this cell (`[warp.notes]`), e.g. why it moves for a known reason.
    pub note: Option<String>,
}

impl Cell {
    fn summaries(&self, phases: &[Vec<Round>]) -> Vec<PhaseSummary> {
        phases.iter().map(|rounds| PhaseSummary::from_rounds(&self.size, "warp", self.concurrency, rounds)).collect()
    }

    /// How far the baseline moved between its first and last phase, the larger of obj/s and throughput,
    /// in percent (ABBA only: `None` with one baseline phase or no usable values).
    pub fn baseline_drift(&self) -> Option<f64> {
        let phases = self.summaries(&self.baseline);
        let (Some(a1), Some(a2)) = (phases.first(), phases.last()) else { return None };
        if phases.len() < 2 {
            return None;
        }
        [(a1.reqps, a2.reqps), (a1.throughput_bps, a2.throughput_bps)]
            .into_iter()
            .filter_map(|(x, y)| baseline_drift_pct(x?, y?))
            .reduce(f64::max)
    }

    /// The baseline moved between its first and last phase by more than `warn_pct` (ABBA only).
    pub fn baseline_drifted(&self, warn_pct: f64) -> bool {
        self.baseline_drift().is_some_and(|d| d > warn_pct)
    }

    /// The phases' names in run order: A, B (AB) or A1, B1, B2, A2 (ABBA), numbered when an arm ran twice.
    pub fn rounds(&self) -> CellRounds {
        let generic = |letter: &str, i: usize, n: usize| if n > 1 { format!("{letter}{}", i + 1) } else { letter.to_string() };
        let given = self.legs.len() == self.baseline.len() + self.candidate.len();
        let of = |phases: &[Vec<Round>], letter: &str, baseline: bool, first: usize| -> Vec<PhaseRounds> {
            phases
                .iter()
                .enumerate()
                .map(|(i, rounds)| PhaseRounds {
                    leg: if given { self.legs[first + i].clone() } else { generic(letter, i, phases.len()) },
                    baseline,
                    rounds: rounds.clone(),
                })
                .collect::<Vec<_>>()
        };
        let mut phases = of(&self.baseline, "A", true, 0);
        phases.extend(of(&self.candidate, "B", false, self.baseline.len()));
        CellRounds { label: self.label.clone(), phases, drift_pct: self.baseline_drift(), note: self.note.clone() }
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
    let mut report = gate(&rows, config).with_baseline_drift(drifted);
    report.cells = cells.iter().map(Cell::rounds).collect();
    report
}
