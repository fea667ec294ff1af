//! The plan of an experiment: which arm runs at which position. Pure.

use suite::definition::TrialOrder;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedTrial {
    /// Position in the run order, from 0.
    pub seq: usize,
    /// Index into the experiment's arms (0 = control).
    pub arm: usize,
    /// Which repeat of its arm this is, from 0.
    pub repeat: usize,
}

/// `trials` repeats of each of `arms` arms in `order`: interleaved C,T,C,T; ABBA C,T,T,C,C,T (each
/// repeat reverses the previous one, so neither arm always goes first); blocked C,C,…,T,T,….
pub fn plan(arms: usize, trials: usize, order: TrialOrder) -> Vec<PlannedTrial> {
    let mut pairs = Vec::with_capacity(arms * trials);
    match order {
        TrialOrder::Interleaved => (0..trials).for_each(|r| (0..arms).for_each(|a| pairs.push((a, r)))),
        TrialOrder::Abba => (0..trials).for_each(|r| {
            let forward = r % 2 == 0;
            (0..arms).for_each(|i| pairs.push((if forward { i } else { arms - 1 - i }, r)))
        }),
        TrialOrder::Blocked => (0..arms).for_each(|a| (0..trials).for_each(|r| pairs.push((a, r)))),
    }
    pairs.into_iter().enumerate().map(|(seq, (arm, repeat))| PlannedTrial { seq, arm, repeat }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arms_of(p: &[PlannedTrial]) -> Vec<usize> {
        p.iter().map(|t| t.arm).collect()
    }

    #[test]
    fn orders() {
        assert_eq!(arms_of(&plan(2, 3, TrialOrder::Interleaved)), [0, 1, 0, 1, 0, 1]);
        assert_eq!(arms_of(&plan(2, 3, TrialOrder::Abba)), [0, 1, 1, 0, 0, 1]);
        assert_eq!(arms_of(&plan(2, 2, TrialOrder::Blocked)), [0, 0, 1, 1]);
        assert_eq!(arms_of(&plan(3, 2, TrialOrder::Abba)), [0, 1, 2, 2, 1, 0]);
        let p = plan(3, 4, TrialOrder::Interleaved);
        assert_eq!(p.len(), 12);
        assert!((0..3).all(|a| p.iter().filter(|t| t.arm == a).map(|t| t.repeat).eq(0..4)), "each arm runs each repeat once");
        assert!(p.iter().enumerate().all(|(i, t)| t.seq == i));
    }
}
