//! Same-code canaries: a suite's scheduled A/As of one SHA against itself, and the false-alarm rate they
//! realise — the promise of `[judge] alpha` ("a same-code experiment claims a change at most this often"),
//! checked on the suite's own host rather than in a simulation. Pure.
//!
//! The rules, in one place:
//! * **A claim** ([`claims_a_change`]): a regression or tradeoff verdict, or any stage's CPU or elapsed
//!   detected higher or lower (a negligible detection too: it was still detected). The simulation counts
//!   the same way.
//! * **The realised rate**: claims out of judged canaries, with its exact two-sided 95 % Clopper–Pearson
//!   interval.
//! * **The alarm**: the interval's lower bound above the promised rate — the canaries claim more often
//!   than promised beyond doubt (at 97.5 % one-sided), not merely by bad luck.

use super::report::{MetricOutcome, PipelineReport};
use crate::Verdict;
use serde::{Deserialize, Serialize};

/// Whether a same-code experiment's report claims any change (the rule in the module's header).
pub fn claims_a_change(report: &PipelineReport) -> bool {
    let detected = |o: MetricOutcome| matches!(o, MetricOutcome::Higher | MetricOutcome::Lower);
    matches!(report.verdict, Verdict::Regression | Verdict::Tradeoff)
        || report.treatments.iter().flat_map(|a| &a.stages).any(|s| detected(s.cpu_outcome) || detected(s.elapsed_outcome))
}

/// A suite's realised rate counts its latest this many judged canaries (the page and the alarm alike).
pub const WINDOW: i64 = 200;

/// Whether a stored report (JSON) claims a change; one that cannot be read claims nothing.
pub fn stored_claims_a_change(report: &serde_json::Value) -> bool {
    serde_json::from_value::<PipelineReport>(report.clone()).is_ok_and(|r| claims_a_change(&r))
}

/// The canaries' realised false-alarm rate against the promise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RealisedRate {
    pub runs: u64,
    pub claims: u64,
    /// claims / runs (0 without runs).
    pub rate: f64,
    /// Its 95 % Clopper–Pearson interval.
    pub interval: [f64; 2],
    /// The suite's promised rate (`[judge] alpha`).
    pub promised: f64,
    /// The interval's lower bound lies above the promise.
    pub alarm: bool,
}

/// The realised rate of `claims` in `runs` canaries against `promised`.
pub fn realised(claims: u64, runs: u64, promised: f64) -> RealisedRate {
    let (lo, hi) = crate::stats::clopper_pearson(claims.min(runs), runs, 0.95);
    let rate = if runs == 0 { 0.0 } else { claims as f64 / runs as f64 };
    RealisedRate { runs, claims, rate, interval: [lo, hi], promised, alarm: runs > 0 && lo > promised }
}

/// The realised rate of canaries, one claim flag each.
pub fn realised_of(claims: &[bool], promised: f64) -> RealisedRate {
    realised(claims.iter().filter(|c| **c).count() as u64, claims.len() as u64, promised)
}

impl RealisedRate {
    /// "2 of 40 same-code canaries claimed a change: 5.0 % [0.6–16.9 %] (95 % Clopper–Pearson) against the
    /// promised 1 %: above it beyond doubt."
    pub fn words(&self) -> String {
        let p = |x: f64| super::report::fmt_margin(100.0 * x);
        if self.runs == 0 {
            return format!("No same-code canary has been judged yet (the promise: at most {} claim a change).", p(self.promised));
        }
        let verdict = if self.alarm {
            "above it beyond doubt: the noise here is not what the judge assumes — calibrate, or find what disturbs the host"
        } else if self.interval[1] <= self.promised {
            "within it"
        } else {
            "consistent with it (more canaries narrow the interval)"
        };
        format!(
            "{} of {} same-code canar{} claimed a change: {} [{}–{}] (95 % Clopper–Pearson) against the promised {}: {verdict}.",
            self.claims,
            self.runs,
            if self.runs == 1 { "y" } else { "ies" },
            p(self.rate),
            p(self.interval[0]),
            p(self.interval[1]),
            p(self.promised)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_its_interval_and_the_alarm() {
        let none = realised(0, 0, 0.01);
        assert!(!none.alarm && none.words().starts_with("No same-code canary"));
        // 0 of 20: the upper bound is 16.8 %, far above 1 %: consistent, no alarm.
        let quiet = realised(0, 20, 0.01);
        assert_eq!(quiet.interval[0], 0.0);
        assert!((quiet.interval[1] - 0.1684).abs() < 0.001, "{quiet:?}");
        assert!(!quiet.alarm && quiet.words().contains("consistent with it"), "{}", quiet.words());
        // 1 of 20 (5 %): lower bound 0.13 %, below 1 %: bad luck is possible, no alarm.
        assert!(!realised(1, 20, 0.01).alarm);
        // 4 of 20 (20 %): lower bound 5.7 % > 1 %: the alarm.
        let loud = realised(4, 20, 0.01);
        assert!(loud.alarm && loud.interval[0] > 0.05, "{loud:?}");
        assert!(loud.words().starts_with("4 of 20 same-code canaries claimed a change: 20 % [") && loud.words().contains("beyond doubt"), "{}", loud.words());
        // 0 of 400: the upper bound 0.92 % is within the promise.
        assert!(realised(0, 400, 0.01).words().contains("within it"));
    }
}
