//! Adaptive rounds' rules (pure): which cells of a judged matrix get another pair of phases — those
//! with an unsure row (`super::noise::NoiseRow::unsure`) that more phases could decide by the cap — and
//! how many rounds an arm a cell has taken. The engine's step is `engine/src/warp/adaptive.rs`.

use super::noise::NoiseGate;
use super::rounds::CellRounds;
use crate::stats::t_quantile;
use crate::Verdict;
use serde::{Deserialize, Serialize};

/// What an unsure row's interval would be with more phases: its spread and degrees of freedom now, its
/// phases, its estimate and the budget it must clear (all in regress terms, log scale).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Reach {
    /// The spread of a phase mean (log), and its degrees of freedom.
    pub sd: f64,
    pub df: f64,
    pub phases: [u32; 2],
    /// How much worse the candidate is (log: ln of the ratio, positive is worse).
    pub regress: f64,
    /// The budget the row must clear to be decided (log of 1 + budget).
    pub target: f64,
    /// The row's share of the error rate.
    pub alpha: f64,
}

impl Reach {
    /// Whether, with `phases` an arm, the interval could clear the budget if the estimate stayed where it
    /// is (each added phase a degree of freedom more). A row it could not is left as it is: more phases would
    /// only cost time (a same-code cell 7 % off with a ±30 % interval stays INCONCLUSIVE however long it runs).
    pub fn decidable(&self, phases: u32) -> bool {
        let [p, q] = self.phases.map(|n| n.max(phases) as f64);
        let df = self.df + (p - self.phases[0] as f64) + (q - self.phases[1] as f64);
        let half = t_quantile(1.0 - self.alpha / 2.0, df) * self.sd * (1.0 / p + 1.0 / q).sqrt();
        self.regress - half > self.target
    }
}

/// A cell's rounds an arm so far: [baseline, candidate], every phase's rounds (ok or not).
pub fn rounds_an_arm(cell: &CellRounds) -> [u32; 2] {
    let of = |baseline: bool| cell.phases.iter().filter(|p| p.baseline == baseline).map(|p| p.rounds.len() as u32).sum();
    [of(true), of(false)]
}

/// Adaptive rounds: the cells (labels, in the report's order) that get another pair of phases of `rounds`
/// rounds each, none once the matrix FAILs — those with an unsure row that more phases could decide by the cap ([`Reach::decidable`]
/// at `cap / rounds` phases an arm), whose arms stay within `cap` rounds an arm after it.
pub fn cells_to_extend(gate: &NoiseGate, cells: &[CellRounds], rounds: u32, cap: u32) -> Vec<String> {
    // A FAIL is decided (or exempted) already: more phases would refine other cells, not the answer.
    if matches!(gate.verdict, Verdict::WarpFail | Verdict::WarpExempted) {
        return Vec::new();
    }
    let at_cap = |c: &CellRounds| {
        let [a, b] = rounds_an_arm(c);
        let done = a.max(b);
        let phases = c.phases.iter().filter(|p| p.baseline).count().max(c.phases.iter().filter(|p| !p.baseline).count()) as u32;
        phases + cap.saturating_sub(done) / rounds.max(1)
    };
    cells
        .iter()
        .filter(|c| gate.rows.iter().any(|r| r.unsure && r.workload == c.label && r.reach.is_none_or(|x| x.decidable(at_cap(c)))))
        .filter(|c| rounds_an_arm(c).into_iter().max().unwrap_or(0) + rounds <= cap)
        .map(|c| c.label.clone())
        .collect()
}
