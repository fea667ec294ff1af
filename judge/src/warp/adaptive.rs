//! Adaptive rounds' rules (pure): which cells of a judged matrix get another pair of phases — those
//! with an unsure row (`super::noise::NoiseRow::unsure`) that more phases could decide by the cap — and
//! how far (`super::noise::Reach`). A cell's rounds so far are `CellRounds::rounds_an_arm`. The engine's step is `engine/src/warp/adaptive.rs`.

use super::noise::NoiseGate;
use super::rounds::CellRounds;
use crate::Verdict;

/// Adaptive rounds: the cells (labels, in the report's order) that get another pair of phases of `rounds`
/// rounds each, none once the matrix FAILs — those with an unsure row that more phases could decide by the cap ([`super::noise::Reach::decidable`]
/// at `cap / rounds` phases an arm), whose arms stay within `cap` rounds an arm after it.
pub fn cells_to_extend(gate: &NoiseGate, cells: &[CellRounds], rounds: u32, cap: u32) -> Vec<String> {
    // A FAIL is decided (or exempted) already: more phases would refine other cells, not the answer.
    if matches!(gate.verdict, Verdict::WarpFail | Verdict::WarpExempted) {
        return Vec::new();
    }
    let at_cap = |c: &CellRounds| {
        let [a, b] = c.rounds_an_arm();
        let done = a.max(b);
        let phases = c.phases.iter().filter(|p| p.baseline).count().max(c.phases.iter().filter(|p| !p.baseline).count()) as u32;
        phases + cap.saturating_sub(done) / rounds.max(1)
    };
    cells
        .iter()
        .filter(|c| gate.rows.iter().any(|r| r.unsure && r.workload == c.label && r.reach.is_none_or(|x| x.decidable(at_cap(c)))))
        .filter(|c| c.rounds_an_arm().into_iter().max().unwrap_or(0) + rounds <= cap)
        .map(|c| c.label.clone())
        .collect()
}
