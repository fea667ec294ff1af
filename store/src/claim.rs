//! The dispatcher's claim: which queued trials start next, given what already runs. The choice is a pure
//! function (`choose`) of the queue and the running trials; `Store::claim_trials` reads both and marks the
//! chosen trials running in one transaction that no other claim interleaves with (PostgreSQL: an advisory
//! transaction lock; SQLite: `BEGIN IMMEDIATE`), so replicas sharing a store never exceed a cap.
//!
//! The rules, in one place:
//! * **Slots.** An experiment's trials run in its *lane*: `local` (one measured trial per host: local
//!   pipeline trials and local warp phases share it), `engine:KEY` (a cluster engine: at most the suite's
//!   `max_parallel` trials of one suite, and at most the server's per-engine cap across suites), or
//!   `endpoint:URL` (an external warp endpoint: one phase at a time, every server together; its load driver
//!   runs here, so it also takes this host's measured slot).
//! * **Canaries wait.** A same-code canary's trials start only when no other experiment's trial can.
//! * **Fair order.** The next trial comes from the launcher with the fewest trials in flight, ties going to
//!   the one served least recently; within that launcher, the experiment with the fewest in flight, then the
//!   one served least recently, then the oldest; within the experiment, plan order.
//! * **Pairs stay pairs.** On an engine lane the queued first attempts of one repeat (a pair: control and
//!   treatment) are claimed together when the slots hold all of them, so they are submitted within moments
//!   of each other, in the plan's order (itself balanced: `engine::launch::plan::repeat_order`).
//!   A pair that does not fit yet waits for slots rather than being split, unless it could never fit.
//! * **Positions as they ran.** When a trial starts, the positions in its pair are recomputed
//!   (`pair_positions`): the latest attempt of each planned trial of the repeat (and warp cell), ordered
//!   by start, then by the rank a cluster pair was submitted in, then by plan order. A retried trial thus
//!   runs second, and its partner moves first. The judge's order covariate reads these.

use crate::{now_ms, on_pool, Store, StoreError};
use std::collections::HashMap;

/// A queued trial, as the claim sees it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Candidate {
    pub id: i64,
    pub experiment_id: i64,
    pub seq: i64,
    pub attempt: i64,
    pub repeat_index: i64,
    pub launched_by: Option<i64>,
    pub suite_id: Option<i64>,
    pub lane: String,
    pub lane_cap: i64,
    /// 1 for a same-code canary's trial (it waits behind every other).
    pub canary: i64,
}

/// A running trial, as the claim sees it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Busy {
    pub experiment_id: i64,
    pub launched_by: Option<i64>,
    pub suite_id: Option<i64>,
    pub lane: String,
    pub claimed_by: Option<String>,
}

/// What one server may claim now.
#[derive(Debug, Clone)]
pub struct ClaimRules<'a> {
    /// This host's name (`trials.claimed_by`): the local lane is one trial per host.
    pub worker: &'a str,
    /// The most trials in flight on one cluster engine, all suites and servers together.
    pub cluster_cap: i64,
    /// Lanes not to claim from now (an engine that did not answer, during its back-off).
    pub parked: &'a [String],
}

/// When each launcher and each experiment was last served (the latest start of any of its trials).
#[derive(Debug, Clone, Default)]
pub struct Served {
    pub launchers: HashMap<Option<i64>, i64>,
    pub experiments: HashMap<i64, i64>,
}

/// A claimed trial and the lane it runs in.
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    pub trial: wire::experiment::Trial,
    pub lane: String,
    /// Its place in a pair submitted together (0 first), or None when claimed alone.
    pub pair_rank: Option<i64>,
}

fn is_engine(lane: &str) -> bool {
    lane.starts_with("engine:")
}

/// How many more trials of this candidate's kind may start now.
fn room(c: &Candidate, running: &[Busy], rules: &ClaimRules) -> i64 {
    // This host's measured slot: a local trial, or an external warp phase (its load driver runs here).
    let on_host = |b: &&Busy| !is_engine(&b.lane) && b.claimed_by.as_deref() == Some(rules.worker);
    let host_room = 1 - running.iter().filter(on_host).count() as i64;
    if c.lane == "local" {
        return host_room;
    }
    let in_lane = running.iter().filter(|b| b.lane == c.lane).count() as i64;
    if !is_engine(&c.lane) {
        return host_room.min(1 - in_lane); // an endpoint: one phase at a time, every server together
    }
    let of_suite = running.iter().filter(|b| b.lane == c.lane && b.suite_id == c.suite_id).count() as i64;
    (rules.cluster_cap - in_lane).min(c.lane_cap.max(1) - of_suite)
}

/// The trials to start now, in the order to start them, with their place in a pair (or `None`): the
/// rules of this module's header.
pub fn choose(queued: &[Candidate], running: &[Busy], served: &Served, rules: &ClaimRules) -> Vec<(i64, Option<i64>)> {
    let in_flight_of = |f: &dyn Fn(&Busy) -> bool| running.iter().filter(|b| f(b)).count();
    let mut order: Vec<&Candidate> = queued.iter().filter(|c| !rules.parked.contains(&c.lane)).collect();
    order.sort_by_key(|c| {
        (
            c.canary,
            in_flight_of(&|b| b.launched_by == c.launched_by),
            served.launchers.get(&c.launched_by).copied().unwrap_or(i64::MIN),
            in_flight_of(&|b| b.experiment_id == c.experiment_id),
            served.experiments.get(&c.experiment_id).copied().unwrap_or(i64::MIN),
            c.experiment_id,
            c.seq,
            c.attempt,
        )
    });
    for c in order {
        let room = room(c, running, rules);
        if room <= 0 {
            continue;
        }
        if !is_engine(&c.lane) || c.attempt > 1 {
            return vec![(c.id, None)];
        }
        let mut pair: Vec<&Candidate> =
            queued.iter().filter(|o| o.experiment_id == c.experiment_id && o.repeat_index == c.repeat_index && o.attempt == 1).collect();
        pair.sort_by_key(|o| o.seq);
        let size = pair.len() as i64;
        if size <= 1 {
            return vec![(c.id, None)];
        }
        let could_ever_fit = size <= rules.cluster_cap.min(c.lane_cap.max(1));
        if size > room {
            if could_ever_fit {
                continue; // the pair waits for slots rather than being split
            }
            return vec![(c.id, None)];
        }
        return pair.iter().enumerate().map(|(rank, o)| (o.id, Some(rank as i64))).collect();
    }
    Vec::new()
}

const CANDIDATES: &str = "SELECT t.id, t.experiment_id, t.seq, t.attempt, t.repeat_index, e.launched_by, e.suite_id, e.lane, \
     e.lane_cap, e.canary FROM trials t JOIN experiments e ON e.id = t.experiment_id WHERE t.state = 'queued' \
     ORDER BY t.id LIMIT 2000";
const BUSY: &str = "SELECT t.experiment_id, e.launched_by, e.suite_id, e.lane, t.claimed_by FROM trials t \
     JOIN experiments e ON e.id = t.experiment_id WHERE t.state = 'running'";
const SERVED_LAUNCHERS: &str = "SELECT e.launched_by, MAX(t.started_at) FROM trials t JOIN experiments e ON e.id = t.experiment_id \
     WHERE t.started_at IS NOT NULL AND e.id IN (SELECT experiment_id FROM trials WHERE state = 'queued') GROUP BY e.launched_by";
const SERVED_EXPERIMENTS: &str = "SELECT t.experiment_id, MAX(t.started_at) FROM trials t WHERE t.started_at IS NOT NULL \
     AND t.experiment_id IN (SELECT experiment_id FROM trials WHERE state = 'queued') GROUP BY t.experiment_id";
const MARK: &str = "UPDATE trials SET state = 'running', claimed_by = $1, started_at = $2, heartbeat_at = $2, pair_rank = $3 \
     WHERE id = $4 AND state = 'queued'";

const PAIR_TRIALS: &str = "SELECT id, seq, attempt, cell, started_at, pair_rank FROM trials WHERE experiment_id = $1 AND repeat_index = $2";
const SET_POSITION: &str = "UPDATE trials SET pair_position = $1 WHERE id = $2";

/// One trial of a repeat, as the positions see it: (id, seq, attempt, cell, started_at, pair_rank).
pub type PairTrial = (i64, i64, i64, Option<String>, Option<i64>, Option<i64>);

/// The positions in the pair of `cell` (the rule in the module's header): (trial id, position) for the
/// latest attempts that have started. Nothing for a repeat of one planned trial (no pair).
pub fn pair_positions(trials: &[PairTrial], cell: &Option<String>) -> Vec<(i64, i64)> {
    let mut latest: HashMap<i64, &PairTrial> = HashMap::new();
    for t in trials.iter().filter(|t| &t.3 == cell) {
        if latest.get(&t.1).is_none_or(|o| t.2 > o.2) {
            latest.insert(t.1, t);
        }
    }
    if latest.len() < 2 {
        return Vec::new();
    }
    let mut started: Vec<&PairTrial> = latest.into_values().filter(|t| t.4.is_some()).collect();
    started.sort_by_key(|t| (t.4, t.5.unwrap_or(0), t.1));
    started.into_iter().enumerate().map(|(i, t)| (t.0, i as i64)).collect()
}

/// Where an experiment's trials run and how many may run at once: see the module's header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lane {
    pub key: String,
    /// A cluster suite's `max_parallel` (1 elsewhere).
    pub cap: i64,
    /// A same-code canary's lane: its trials wait behind every other experiment's.
    pub canary: bool,
}

impl Lane {
    /// How many of its trials run at once: a cluster engine's slots (the suite's cap within the server's
    /// `cluster_cap`), one elsewhere (this host's measured slot, or an endpoint).
    pub fn at_once(&self, cluster_cap: i64) -> i64 {
        if is_engine(&self.key) {
            self.cap.min(cluster_cap).max(1)
        } else {
            1
        }
    }

    pub fn local() -> Lane {
        Lane { key: "local".into(), cap: 1, canary: false }
    }
}

macro_rules! claim_in {
    ($tx:expr, $rules:expr) => {{
        let queued: Vec<Candidate> = sqlx::query_as(CANDIDATES).fetch_all(&mut *$tx).await?;
        if queued.is_empty() {
            return Ok(Vec::new());
        }
        let running: Vec<Busy> = sqlx::query_as(BUSY).fetch_all(&mut *$tx).await?;
        let launchers: Vec<(Option<i64>, Option<i64>)> = sqlx::query_as(SERVED_LAUNCHERS).fetch_all(&mut *$tx).await?;
        let experiments: Vec<(i64, Option<i64>)> = sqlx::query_as(SERVED_EXPERIMENTS).fetch_all(&mut *$tx).await?;
        let served = Served {
            launchers: launchers.into_iter().filter_map(|(l, at)| Some((l, at?))).collect(),
            experiments: experiments.into_iter().filter_map(|(e, at)| Some((e, at?))).collect(),
        };
        let chosen = choose(&queued, &running, &served, $rules);
        let now = now_ms();
        let mut ids = Vec::with_capacity(chosen.len());
        for (id, rank) in chosen {
            let n = sqlx::query(MARK).bind($rules.worker).bind(now).bind(rank).bind(id).execute(&mut *$tx).await?.rows_affected();
            if n == 1 {
                let lane = queued.iter().find(|c| c.id == id).map(|c| c.lane.clone()).unwrap_or_default();
                ids.push((id, lane, rank));
            }
        }
        // A warm-up (repeat −1) belongs to no pair.
        let mut pairs: Vec<(i64, i64)> = ids
            .iter()
            .filter_map(|(id, _, _)| queued.iter().find(|c| c.id == *id))
            .map(|c| (c.experiment_id, c.repeat_index))
            .filter(|(_, repeat)| *repeat >= 0)
            .collect();
        pairs.dedup();
        for (experiment_id, repeat_index) in pairs {
            let rows: Vec<PairTrial> = sqlx::query_as(PAIR_TRIALS).bind(experiment_id).bind(repeat_index).fetch_all(&mut *$tx).await?;
            let mut cells: Vec<Option<String>> = rows.iter().map(|r| r.3.clone()).collect();
            cells.sort();
            cells.dedup();
            for cell in cells {
                for (id, position) in pair_positions(&rows, &cell) {
                    sqlx::query(SET_POSITION).bind(position).bind(id).execute(&mut *$tx).await?;
                }
            }
        }
        ids
    }};
}

impl Store {
    /// Records an experiment's lane (before its trials are queued).
    pub async fn set_experiment_lane(&self, experiment_id: i64, lane: &Lane) -> Result<(), StoreError> {
        on_pool!(self, pool => {
            sqlx::query("UPDATE experiments SET lane = $1, lane_cap = $2, canary = $3 WHERE id = $4")
                .bind(&lane.key).bind(lane.cap).bind(i64::from(lane.canary)).bind(experiment_id)
                .execute(pool).await.map(|r| r.rows_affected())
        })?;
        Ok(())
    }

    /// Claims the trials to start now under `rules` (none, one, or a pair to submit together), marking
    /// them running for `rules.worker`. No other claim runs meanwhile, on any server sharing the store.
    pub async fn claim_trials(&self, rules: &ClaimRules<'_>) -> Result<Vec<Claimed>, StoreError> {
        let ids = match self {
            Store::Sqlite(pool) => {
                let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
                let ids = claim_in!(tx, rules);
                tx.commit().await?;
                ids
            }
            Store::Postgres(pool) => {
                let mut tx = pool.begin().await?;
                sqlx::query("SELECT pg_advisory_xact_lock(7274, 1)").execute(&mut *tx).await?;
                let ids = claim_in!(tx, rules);
                tx.commit().await?;
                ids
            }
        };
        let mut claimed = Vec::with_capacity(ids.len());
        for (id, lane, pair_rank) in ids {
            claimed.push(Claimed { trial: self.trial(id).await?, lane, pair_rank });
        }
        Ok(claimed)
    }

    /// Trials queued or running in a lane: what a new launch there waits behind at most.
    pub async fn trials_in_lane(&self, lane: &str) -> Result<i64, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_scalar("SELECT COUNT(*) FROM trials t JOIN experiments e ON e.id = t.experiment_id \
                 WHERE e.lane = $1 AND t.state IN ('queued', 'running')")
                .bind(lane).fetch_one(pool).await
        })?)
    }

    /// Marks an experiment concluded; true for the one caller that did it (two trials ending at once
    /// conclude their experiment once).
    pub async fn claim_conclusion(&self, experiment_id: i64) -> Result<bool, StoreError> {
        let now = now_ms();
        let n = on_pool!(self, pool => {
            sqlx::query("UPDATE experiments SET concluded_at = $1 WHERE id = $2 AND concluded_at IS NULL")
                .bind(now).bind(experiment_id).execute(pool).await.map(|r| r.rows_affected())
        })?;
        Ok(n == 1)
    }

    /// How each of an experiment's trials was submitted within its pair: trial id → rank (0 first).
    pub async fn pair_ranks(&self, experiment_id: i64) -> Result<Vec<(i64, i64, i64)>, StoreError> {
        Ok(on_pool!(self, pool => {
            sqlx::query_as("SELECT repeat_index, seq, pair_rank FROM trials WHERE experiment_id = $1 AND pair_rank IS NOT NULL ORDER BY repeat_index, pair_rank")
                .bind(experiment_id).fetch_all(pool).await
        })?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(id: i64, experiment_id: i64, seq: i64, by: i64, lane: &str, cap: i64) -> Candidate {
        Candidate {
            id,
            experiment_id,
            seq,
            attempt: 1,
            repeat_index: seq / 2,
            launched_by: Some(by),
            suite_id: Some(1),
            lane: lane.into(),
            lane_cap: cap,
            canary: 0,
        }
    }
    fn busy(experiment_id: i64, by: i64, lane: &str, host: &str) -> Busy {
        Busy { experiment_id, launched_by: Some(by), suite_id: Some(1), lane: lane.into(), claimed_by: Some(host.into()) }
    }
    fn rules(parked: &[String]) -> ClaimRules<'_> {
        ClaimRules { worker: "h1", cluster_cap: 8, parked }
    }
    fn pick(q: &[Candidate], r: &[Busy], s: &Served, rules: &ClaimRules) -> Vec<(i64, Option<i64>)> {
        choose(q, r, s, rules)
    }

    #[test]
    fn positions_follow_the_order_trials_started_in() {
        let t = |id, seq, attempt, started: Option<i64>, rank: Option<i64>| (id, seq, attempt, None, started, rank);
        let got = |rows: &[PairTrial]| {
            let mut p = pair_positions(rows, &None);
            p.sort();
            p
        };
        // The plan put the treatment (seq 5) first: it started first.
        assert_eq!(got(&[t(1, 4, 1, Some(20), None), t(2, 5, 1, Some(10), None)]), [(1, 1), (2, 0)]);
        // The partner has not started yet: the started one is first so far.
        assert_eq!(got(&[t(1, 4, 1, Some(10), None), t(2, 5, 1, None, None)]), [(1, 0)]);
        // The control's first attempt failed and was retried after the treatment ran: the treatment is first.
        assert_eq!(got(&[t(1, 4, 1, Some(10), None), t(2, 5, 1, Some(20), None), t(3, 4, 2, Some(30), None)]), [(2, 0), (3, 1)]);
        // A retry still queued: the started partner alone is placed.
        assert_eq!(got(&[t(1, 4, 1, Some(10), None), t(2, 5, 1, Some(20), None), t(3, 4, 2, None, None)]), [(2, 0)]);
        // A cluster pair started at one moment: the submission rank decides.
        assert_eq!(got(&[t(1, 4, 1, Some(10), Some(1)), t(2, 5, 1, Some(10), Some(0))]), [(1, 1), (2, 0)]);
        // One planned trial in the repeat (a calibration): no pair, no position.
        assert!(got(&[t(1, 0, 1, Some(10), None)]).is_empty());
        // Warp cells are pairs of their own.
        let w = |id, seq, cell: &str, started| (id, seq, 1, Some(cell.to_string()), Some(started), None);
        let rows = [w(1, 0, "on", 5), w(2, 1, "on", 3), w(3, 2, "off", 9)];
        assert_eq!(pair_positions(&rows, &Some("on".into())).len(), 2);
        assert!(pair_positions(&rows, &Some("off".into())).is_empty());
    }

    #[test]
    fn a_canary_waits_behind_every_real_launch() {
        let mut canary = cand(1, 1, 0, 1, "local", 1);
        canary.canary = 1;
        // Launched earlier, served long ago, by a launcher with nothing in flight: it still waits.
        let real = cand(2, 2, 0, 7, "local", 1);
        let mut served = Served::default();
        served.launchers.insert(Some(7), 100);
        assert_eq!(pick(&[canary.clone(), real], &[], &served, &rules(&[])), [(2, None)]);
        assert_eq!(pick(&[canary], &[], &served, &rules(&[])), [(1, None)], "alone, it runs");
    }

    #[test]
    fn the_local_lane_runs_one_trial_per_host() {
        let q = [cand(1, 1, 0, 1, "local", 1), cand(2, 1, 1, 1, "local", 1)];
        assert_eq!(pick(&q, &[], &Served::default(), &rules(&[])), [(1, None)], "local trials one at a time, never as a pair");
        assert!(pick(&q, &[busy(9, 2, "local", "h1")], &Served::default(), &rules(&[])).is_empty());
        assert_eq!(pick(&q, &[busy(9, 2, "local", "h2")], &Served::default(), &rules(&[])), [(1, None)], "another host's slot");
    }

    #[test]
    fn pairs_on_an_engine_are_claimed_together_within_the_caps() {
        let e = "engine:a";
        let q: Vec<Candidate> = (0..4).map(|s| cand(10 + s, 1, s, 1, e, 4)).collect();
        assert_eq!(pick(&q, &[], &Served::default(), &rules(&[])), [(10, Some(0)), (11, Some(1))]);
        // Three of the suite's four slots taken: the pair waits rather than splitting.
        let three = [busy(7, 2, e, "h1"), busy(7, 2, e, "h1"), busy(7, 2, e, "h1")];
        assert!(pick(&q, &three, &Served::default(), &rules(&[])).is_empty());
        // The engine's server-wide cap binds across suites.
        let mut other_suite = busy(7, 2, e, "h1");
        other_suite.suite_id = Some(2);
        let seven = vec![other_suite; 7];
        assert!(pick(&q, &seven, &Served::default(), &rules(&[])).is_empty(), "8 - 7 leaves one slot, a pair needs two");
        assert_eq!(pick(&q, &seven[..6], &Served::default(), &rules(&[])).len(), 2);
        // A pair that could never fit (max_parallel 1) runs one trial at a time.
        let single: Vec<Candidate> = (0..2).map(|s| cand(20 + s, 2, s, 1, e, 1)).collect();
        assert_eq!(pick(&single, &[], &Served::default(), &rules(&[])), [(20, None)]);
        // A retry goes alone.
        let mut retry = cand(30, 3, 1, 1, e, 4);
        retry.attempt = 2;
        assert_eq!(pick(&[retry], &[], &Served::default(), &rules(&[])), [(30, None)]);
        // A parked engine is skipped; an endpoint runs one phase at a time.
        assert!(pick(&q, &[], &Served::default(), &rules(&["engine:a".into()])).is_empty());
        let ep = [cand(40, 4, 0, 1, "endpoint:http://s3", 1)];
        assert!(pick(&ep, &[busy(8, 2, "endpoint:http://s3", "h2")], &Served::default(), &rules(&[])).is_empty());
        assert!(pick(&ep, &[busy(8, 2, "local", "h1")], &Served::default(), &rules(&[])).is_empty(), "its driver needs this host's slot");
        assert_eq!(pick(&ep, &[busy(8, 2, e, "h1")], &Served::default(), &rules(&[])), [(40, None)], "cluster jobs run elsewhere");
        let local = [cand(41, 5, 0, 1, "local", 1)];
        assert!(pick(&local, &[busy(8, 2, "endpoint:http://s3", "h1")], &Served::default(), &rules(&[])).is_empty());
    }

    #[test]
    fn the_queue_is_fair_across_launchers_then_experiments() {
        let e = "engine:a";
        // Launcher 1's big experiment was queued first; launcher 2's comes after it.
        let mut q: Vec<Candidate> = (0..20).map(|s| cand(100 + s, 1, s, 1, e, 8)).collect();
        q.extend((0..4).map(|s| cand(200 + s, 2, s, 2, e, 8)));
        // Launcher 1 has a pair in flight: launcher 2 goes next.
        let r = [busy(1, 1, e, "h1"), busy(1, 1, e, "h1")];
        assert_eq!(pick(&q, &r, &Served::default(), &rules(&[])), [(200, Some(0)), (201, Some(1))]);
        // Nothing in flight (a serial lane): the one served least recently goes next.
        let local: Vec<Candidate> = q.iter().map(|c| Candidate { lane: "local".into(), ..c.clone() }).collect();
        let mut served = Served::default();
        served.launchers.insert(Some(1), 5_000);
        served.launchers.insert(Some(2), 4_000);
        assert_eq!(pick(&local, &[], &served, &rules(&[])), [(200, None)]);
        served.launchers.insert(Some(2), 6_000);
        assert_eq!(pick(&local, &[], &served, &rules(&[])), [(100, None)]);
        // One launcher's two experiments take turns too.
        let mut mine: Vec<Candidate> = (0..4).map(|s| cand(300 + s, 5, s, 1, "local", 1)).collect();
        mine.extend((0..4).map(|s| cand(400 + s, 6, s, 1, "local", 1)));
        let mut served = Served::default();
        served.experiments.insert(5, 9_000);
        served.experiments.insert(6, 1_000);
        assert_eq!(pick(&mine, &[], &served, &rules(&[])), [(400, None)]);
    }
}
