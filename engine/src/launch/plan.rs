//! The plan of an experiment: which arm runs at which position. Pure.
//!
//! The order rules, in one place (`repeat_order`):
//! * **interleaved** (the default, balanced): one repeat (a pair: each arm once) after another. The repeats
//!   come in blocks of as many repeats as there are arms; within a block each arm goes first exactly once
//!   (the arms rotate: with two arms one pair runs control first and one treatment first), and which
//!   repeat of the block gets which rotation is drawn from the plan's stored seed. A restart, or an
//!   adaptive experiment adding pairs, reads the same seed and so continues the same plan.
//! * **control_first**: C,T,C,T…, the control first in every pair (the protocol before balanced orders).
//! * **abba**: C,T,T,C,C,T… (each repeat reverses the one before).
//! * **blocked**: every control trial, then every treatment trial (no pairs).
//!
//! **Warm-ups** (`warm_ups`) run before all of these (seq 0…), alternating arms from one the seed draws;
//! they belong to no repeat, are never judged and count toward no budget (`judge::TrialRole`).

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

/// `trials` repeats of each of `arms` arms in `order` (see the module's rules), the balanced order drawn
/// from `seed`.
pub fn plan(arms: usize, trials: usize, order: TrialOrder, seed: u64) -> Vec<PlannedTrial> {
    let mut pairs = Vec::with_capacity(arms * trials);
    match order {
        TrialOrder::Blocked => (0..arms).for_each(|a| (0..trials).for_each(|r| pairs.push((a, r)))),
        _ => (0..trials).for_each(|r| repeat_order(order, seed, arms, r).into_iter().for_each(|a| pairs.push((a, r)))),
    }
    pairs.into_iter().enumerate().map(|(seq, (arm, repeat))| PlannedTrial { seq, arm, repeat }).collect()
}

/// The order of the arms within repeat `repeat` (arm indices, 0 = control). `blocked` has no repeats of
/// its own; asked anyway, it answers the plain order.
pub fn repeat_order(order: TrialOrder, seed: u64, arms: usize, repeat: usize) -> Vec<usize> {
    let arms = arms.max(1);
    match order {
        TrialOrder::Interleaved => {
            let rotations = shuffled(arms, mix(seed ^ (repeat / arms) as u64));
            let first = rotations[repeat % arms];
            (0..arms).map(|i| (first + i) % arms).collect()
        }
        TrialOrder::Abba if repeat % 2 == 1 => (0..arms).rev().collect(),
        TrialOrder::Abba | TrialOrder::ControlFirst | TrialOrder::Blocked => (0..arms).collect(),
    }
}

/// The arms `count` warm-up trials run (arm indices, in run order): they alternate, starting at an arm
/// drawn from `seed`, so over many experiments no arm's code is the one warmed more often.
pub fn warm_ups(arms: usize, count: usize, seed: u64) -> Vec<usize> {
    let arms = arms.max(1);
    let start = (mix(seed ^ 0x5741_524D) % arms as u64) as usize;
    (0..count).map(|k| (start + k) % arms).collect()
}

/// A seed for a new plan: random per launch (the standard library's per-process keys and the clock).
pub fn new_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.finish()
}

/// splitmix64's finaliser: a well-mixed 64-bit value from any input.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// 0..n in an order drawn from `state` (Fisher–Yates).
fn shuffled(n: usize, mut state: u64) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        state = mix(state);
        v.swap(i, (state % (i as u64 + 1)) as usize);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arms_of(p: &[PlannedTrial]) -> Vec<usize> {
        p.iter().map(|t| t.arm).collect()
    }

    /// Which arm went first in each repeat.
    fn firsts(p: &[PlannedTrial]) -> Vec<usize> {
        let repeats = p.iter().map(|t| t.repeat + 1).max().unwrap_or(0);
        (0..repeats).map(|r| p.iter().find(|t| t.repeat == r).map(|t| t.arm).unwrap()).collect()
    }

    #[test]
    fn fixed_orders() {
        assert_eq!(arms_of(&plan(2, 3, TrialOrder::ControlFirst, 7)), [0, 1, 0, 1, 0, 1]);
        assert_eq!(arms_of(&plan(2, 3, TrialOrder::Abba, 7)), [0, 1, 1, 0, 0, 1]);
        assert_eq!(arms_of(&plan(2, 2, TrialOrder::Blocked, 7)), [0, 0, 1, 1]);
        assert_eq!(arms_of(&plan(3, 2, TrialOrder::Abba, 7)), [0, 1, 2, 2, 1, 0]);
        for order in [TrialOrder::Interleaved, TrialOrder::ControlFirst, TrialOrder::Abba, TrialOrder::Blocked] {
            let p = plan(3, 4, order, 11);
            assert_eq!(p.len(), 12);
            assert!(
                (0..3).all(|a| p.iter().filter(|t| t.arm == a).map(|t| t.repeat).eq(0..4)),
                "{order:?}: each arm runs each repeat once"
            );
            assert!(p.iter().enumerate().all(|(i, t)| t.seq == i));
        }
    }

    #[test]
    fn balanced_blocks_put_each_arm_first_once() {
        let mut both = [0; 2];
        for seed in 0..200u64 {
            let p = plan(2, 8, TrialOrder::Interleaved, seed);
            // Pairs stay pairs: each repeat's two trials are next to each other.
            assert!(p.chunks(2).enumerate().all(|(r, c)| c.iter().all(|t| t.repeat == r)));
            let f = firsts(&p);
            assert_eq!(f.iter().filter(|&&a| a == 0).count(), 4, "seed {seed}: 8 pairs are 4 control-first and 4 treatment-first");
            assert!(f.chunks(2).all(|b| b[0] != b[1]), "seed {seed}: every block of two has one of each");
            both[f[0]] += 1;
            // An odd count: every complete block balanced, the last pair either way.
            let odd = firsts(&plan(2, 5, TrialOrder::Interleaved, seed));
            assert_eq!(&odd[..4], &f[..4], "a longer plan extends a shorter one");
        }
        assert!(both[0] > 60 && both[1] > 60, "the block's order is drawn, not fixed: {both:?}");
        // Three arms rotate: each arm first once in every block of three, in the rotated order.
        for seed in 0..50u64 {
            let p = plan(3, 6, TrialOrder::Interleaved, seed);
            let f = firsts(&p);
            for b in f.chunks(3) {
                let mut s = b.to_vec();
                s.sort();
                assert_eq!(s, [0, 1, 2], "seed {seed}: {f:?}");
            }
            for (r, &first) in f.iter().enumerate().take(6) {
                let arms: Vec<usize> = p.iter().filter(|t| t.repeat == r).map(|t| t.arm).collect();
                assert_eq!(arms, [first, (first + 1) % 3, (first + 2) % 3]);
            }
        }
    }

    #[test]
    fn the_seed_fixes_the_plan_and_adaptive_repeats_continue_it() {
        let a = plan(2, 10, TrialOrder::Interleaved, 42);
        assert_eq!(a, plan(2, 10, TrialOrder::Interleaved, 42), "a restart reads the same seed: the same plan");
        assert!((0..20).any(|s| firsts(&plan(2, 10, TrialOrder::Interleaved, s)) != firsts(&a)), "another seed, another order");
        // Adaptive pairs are added one repeat at a time with `repeat_order`: the same order as planned.
        for r in 0..10 {
            let planned: Vec<usize> = a.iter().filter(|t| t.repeat == r).map(|t| t.arm).collect();
            assert_eq!(repeat_order(TrialOrder::Interleaved, 42, 2, r), planned);
        }
        assert_eq!(repeat_order(TrialOrder::Abba, 42, 2, 3), [1, 0]);
    }

    #[test]
    fn warm_ups_alternate_from_an_arm_the_seed_draws() {
        assert!(warm_ups(2, 0, 1).is_empty());
        for seed in 0..50 {
            let w = warm_ups(2, 3, seed);
            assert_eq!(w, warm_ups(2, 3, seed), "the seed fixes them");
            assert!(w.windows(2).all(|p| p[0] != p[1]), "they alternate: {w:?}");
        }
        let first: Vec<usize> = (0..200).map(|s| warm_ups(2, 1, s)[0]).collect();
        let control = first.iter().filter(|a| **a == 0).count();
        assert!((60..=140).contains(&control), "either arm is warmed first: control {control} of 200");
        assert_eq!(warm_ups(3, 3, 9).iter().copied().collect::<std::collections::BTreeSet<_>>().len(), 3, "each of three arms once");
    }
}
