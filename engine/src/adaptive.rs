//! Adaptive trials (`trials = "auto"`): after each trial ends, the engine judges the pairs settled so far
//! with the sequential design (`judge::pipeline::sequential`) and adds the next pair while the verdict is
//! undecided, within the launch's budget. The rules, in one place:
//!
//! * **Looks.** A repeat (one trial of each arm) is *settled* when the latest attempt of each of its trials
//!   has ended. The design looks at the longest run of settled repeats from the first one on — never a later
//!   repeat that overtook an earlier one — so the looks, and where it stops, are the same however the trials
//!   interleave and after a restart (everything is read back from the store).
//! * **Stop.** Once the look at the settled repeats is a verdict the design stops at (a regression decided,
//!   or every CPU metric decided), trials still queued are not needed: they are cancelled with that reason,
//!   so the experiment ends and is judged (`lifecycle`). No pair is added, but the planned ones run, once the
//!   experiment plans `max_trials` repeats or has run for the suite's `max_minutes`; and none after a cancel.
//! * **Add.** Otherwise pairs are added until as many are in flight as the lane holds at once (one on this
//!   host; a cluster suite's `max_parallel` ÷ arms), each as one compare-and-set in the store
//!   ([`store::Store::add_repeats`]): of two trials ending at once, one adds the pair.
//! * **Budget.** A re-queued infrastructure failure is the same repeat again and adds nothing to the count;
//!   the budget counts repeats planned.
//!
//! **What the page sees.** Each look's report is kept on the experiment (`Store::set_look`, forward only),
//! so the page's live chart draws each metric's interval narrowing pair by pair while it runs.
//!
//! The verdict itself is the sequential design's over every settled repeat (`judging::verdict`): the report
//! of the look it stopped at, or of the last look when the budget ran out (inconclusive, with the interval
//! reached and what a decision would take).

use crate::judging;
use crate::launch::submit::StoredPlan;
use crate::Engine;
use judge::{ExperimentStatus, TrialState, Verdict};
pub use store::trials::settled_prefix;
use store::trials::{InsertTrial, Trial};

/// What one step of an adaptive experiment did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// Not adaptive, or nothing more to add: the experiment ends when its trials have.
    Settle,
    /// This many repeats were added (or another caller added them first): trials are queued again.
    Added(usize),
}

/// Why no more pairs are added, if none are.
#[derive(Debug, Clone, PartialEq)]
pub enum Halt {
    /// The design stopped (or a failure decided a regression): pairs still queued are not needed.
    Decided(String),
    /// The budget or the time is spent: the pairs already planned run, none is added.
    Spent(String),
}

/// Whether pairs may still be added after this look (`None` before the first look).
pub fn halt(
    look: Option<&(Verdict, serde_json::Value)>,
    planned: i64,
    max_trials: u32,
    ran_minutes: f64,
    max_minutes: Option<u32>,
) -> Option<Halt> {
    if let Some((verdict, report)) = look {
        let seq = report.get("sequential");
        if seq.and_then(|q| q.get("stopped")).and_then(serde_json::Value::as_bool) == Some(true) {
            let why = seq.and_then(|q| q.get("stop_reason")).and_then(|r| r.as_str()).unwrap_or("decided");
            return Some(Halt::Decided(why.to_string()));
        }
        // A focused experiment (a bisection's step) stops on its one metric, not on another stage's change.
        let focused = seq.and_then(|q| q.get("focus")).is_some_and(|f| !f.is_null());
        if *verdict == Verdict::Regression && !focused {
            return Some(Halt::Decided("a regression is decided (a failure, or a guardrail)".into()));
        }
    }
    if planned >= i64::from(max_trials) {
        return Some(Halt::Spent(format!("the budget of {max_trials} trials an arm is planned")));
    }
    if let Some(max) = max_minutes.filter(|m| ran_minutes >= f64::from(*m)) {
        return Some(Halt::Spent(format!("the experiment has run {ran_minutes:.0} minutes, its ceiling is {max}")));
    }
    None
}

/// One step of an adaptive experiment, after one of its trials ended.
pub(crate) async fn step(engine: &Engine, experiment_id: i64, trials: &[Trial], plan: &StoredPlan) -> Step {
    let Some(adaptive) = plan.launch.adaptive else { return Step::Settle };
    let store = &engine.store;
    if store.experiment_summary(experiment_id).await.is_ok_and(|s| s.status == ExperimentStatus::Cancelled) {
        return Step::Settle; // a cancel stops the adding
    }
    let planned = trials.iter().map(|t| t.repeat_index + 1).max().unwrap_or(0);
    let (settled, prefix) = settled_prefix(trials);
    let look = if settled >= judge::pipeline::sequential::MIN_PAIRS as i64 {
        match judging::verdict(store, plan, &prefix).await {
            Ok((verdict, _, report, _)) => {
                // The page's live chart draws this look until the verdict is stored.
                if let Err(e) = store.set_look(experiment_id, settled, &report).await {
                    tracing::warn!(experiment_id, error = %e, "cannot keep the look for the page");
                }
                Some((verdict, report))
            }
            Err(e) => {
                tracing::warn!(experiment_id, error = %e, "cannot judge the settled pairs; adding none");
                return Step::Settle;
            }
        }
    } else {
        None
    };
    let now = store::now_ms();
    let started = trials.iter().filter_map(|t| t.started_at).min().unwrap_or(now);
    let ran_minutes = (now - started) as f64 / 60_000.0;
    match halt(look.as_ref(), planned, adaptive.max_trials, ran_minutes, adaptive.max_minutes) {
        Some(Halt::Decided(why)) => {
            let not_needed = format!("not needed: {why}");
            for t in trials.iter().filter(|t| t.state == TrialState::Queued) {
                // A trial claimed meanwhile runs on; the verdict is the stopping look's all the same.
                if let Err(e) = store.finish_trial(t.id, TrialState::Cancelled, None, Some(&not_needed)).await {
                    tracing::debug!(experiment_id, trial = t.id, error = %e, "a trial no longer needed had started");
                }
            }
            tracing::info!(experiment_id, settled, planned, reason = %why, "adaptive trials: decided, no more pairs");
            return Step::Settle;
        }
        Some(Halt::Spent(why)) => {
            tracing::debug!(experiment_id, settled, planned, reason = %why, "adaptive trials: no more pairs");
            return Step::Settle;
        }
        None => {}
    }
    // As many repeats in flight as the lane runs at once.
    let arms = plan.launch.arms.len() as i64;
    let lane = crate::launch::submit::lane(&plan.suite);
    let at_once = lane.at_once(engine.queue.cluster_cap);
    let in_flight = planned - settled;
    let room = (at_once / arms).max(1) - in_flight;
    let add = room.min(i64::from(adaptive.max_trials) - planned);
    if add <= 0 {
        return Step::Settle;
    }
    let arm_ids: Vec<i64> = match store.arms(experiment_id).await {
        Ok(a) => a.into_iter().map(|a| a.0).collect(),
        Err(e) => {
            tracing::warn!(experiment_id, error = %e, "cannot read the arms; adding no pair");
            return Step::Settle;
        }
    };
    let next_seq = trials.iter().map(|t| t.seq + 1).max().unwrap_or(0);
    // Each added repeat runs its arms in the plan's order for that repeat (balanced blocks continue).
    let (order, seed) = (plan.launch.order, plan.launch.order_seed);
    let new: Vec<InsertTrial> = (0..add)
        .flat_map(|r| {
            let arm_ids = &arm_ids;
            crate::launch::plan::repeat_order(order, seed, arm_ids.len(), (planned + r) as usize).into_iter().enumerate().map(
                move |(k, a)| InsertTrial {
                    arm_id: arm_ids[a],
                    seq: next_seq + r * arms + k as i64,
                    cell: None,
                    repeat_index: planned + r,
                },
            )
        })
        .collect();
    match store.add_repeats(experiment_id, planned, planned + add, &new).await {
        Ok(true) => {
            tracing::info!(experiment_id, settled, added = add, planned = planned + add, "adaptive trials: undecided, pairs added");
            engine.queue.notify.notify_one();
            Step::Added(add as usize)
        }
        Ok(false) => Step::Added(0),
        Err(e) => {
            tracing::error!(experiment_id, error = %e, "cannot add a pair");
            Step::Settle
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(seq: i64, repeat: i64, attempt: i64, state: TrialState) -> Trial {
        Trial {
            id: seq * 10 + attempt,
            experiment_id: 1,
            arm_id: seq % 2,
            seq,
            cell: None,
            repeat_index: repeat,
            attempt,
            state,
            infra_reason: None,
            detail: None,
            claimed_by: None,
            created_at: 0,
            started_at: None,
            finished_at: None,
            job_id: None,
            engine_state: None,
            position: None,
            role: judge::TrialRole::Measured,
            host: None,
        }
    }

    #[test]
    fn looks_take_the_settled_repeats_from_the_first_on() {
        use TrialState::*;
        // Repeat 0 done; repeat 1's treatment re-queued (its first attempt lost); repeat 2 done early.
        let trials = [
            trial(0, 0, 1, Succeeded),
            trial(1, 0, 1, Succeeded),
            trial(2, 1, 1, Succeeded),
            trial(3, 1, 1, InfraFailed),
            trial(3, 1, 2, Queued),
            trial(4, 2, 1, Succeeded),
            trial(5, 2, 1, Succeeded),
        ];
        let (settled, prefix) = settled_prefix(&trials);
        assert_eq!(settled, 1, "repeat 2 overtook repeat 1 but is not looked at before it");
        assert_eq!(prefix.iter().map(|t| t.seq).collect::<Vec<_>>(), [0, 1]);
        // The re-queued attempt ends: three repeats are settled, the lost attempt kept beside its retry.
        let mut done = trials.to_vec();
        done[4].state = Succeeded;
        let (settled, prefix) = settled_prefix(&done);
        assert_eq!((settled, prefix.len()), (3, 7));
        // A warm-up (repeat −1, run first) is in no look, whatever its state, and counts toward no repeat.
        let mut warm = trial(9, judge::TrialRole::WARM_UP_REPEAT, 1, Running);
        warm.role = judge::TrialRole::WarmUp;
        let with_warm_up: Vec<Trial> = std::iter::once(warm).chain(done.iter().cloned()).collect();
        let (settled, prefix) = settled_prefix(&with_warm_up);
        assert_eq!((settled, prefix.len()), (3, 7));
        assert!(prefix.iter().all(|t| t.role == judge::TrialRole::Measured));
        assert_eq!(store::trials::measured(&with_warm_up).len(), done.len());
    }

    #[test]
    fn adding_stops_at_a_decision_the_budget_or_the_ceiling() {
        let undecided = (Verdict::Inconclusive, serde_json::json!({"sequential": {"stopped": false, "stop_reason": "…"}}));
        assert_eq!(halt(Some(&undecided), 4, 20, 1.0, None), None);
        assert_eq!(halt(None, 2, 20, 1.0, None), None, "before the first look");
        let decided = (
            Verdict::Pass,
            serde_json::json!({"sequential": {"stopped": true, "stop_reason": "every CPU metric is decided after 3 pairs"}}),
        );
        assert_eq!(halt(Some(&decided), 3, 20, 1.0, None), Some(Halt::Decided("every CPU metric is decided after 3 pairs".into())));
        let failed = (Verdict::Regression, serde_json::json!({"sequential": {"stopped": false}}));
        assert!(matches!(halt(Some(&failed), 2, 20, 1.0, None), Some(Halt::Decided(w)) if w.starts_with("a regression is decided")));
        // A spent budget adds nothing, but the pairs it planned still run (a budget of 2 is the first look).
        assert_eq!(halt(None, 2, 2, 0.1, None), Some(Halt::Spent("the budget of 2 trials an arm is planned".into())));
        assert_eq!(halt(Some(&undecided), 20, 20, 1.0, None), Some(Halt::Spent("the budget of 20 trials an arm is planned".into())));
        assert!(matches!(halt(Some(&undecided), 5, 20, 31.0, Some(30)), Some(Halt::Spent(w)) if w.contains("its ceiling is 30")));
        assert_eq!(halt(Some(&undecided), 5, 20, 29.0, Some(30)), None);
    }
}
