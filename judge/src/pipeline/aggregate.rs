//! From rows to per-trial, per-stage sums: only END rows count; identical duplicates are dropped and
//! counted; a FAILED row later retried under another execution id in the same trial is churn, not failure.

use super::rows::{execution_key, StageRow};
use std::collections::{BTreeMap, HashMap, HashSet};
/// rustc's Fx hash: the keys are the user's own rows, so SipHash's DoS resistance buys nothing here, and
/// it was a fifth of the judging time.
pub(crate) type FxBuild = rustc_hash::FxBuildHasher;

/// One trial as the user named it: execution ids whose rows are summed, and its pair key (the repeat
/// index of an interleaved plan, or the position given to `compare --paired`): a control and a treatment
/// trial with the same key ran side by side.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrialSpec {
    pub execution_ids: Vec<String>,
    pub pair: Option<u32>,
    /// Where the trial ran in its pair (0: first), when known: the judge's order covariate reads it.
    pub position: Option<u32>,
}

impl TrialSpec {
    /// An unpaired trial of these execution ids.
    pub fn new(execution_ids: Vec<String>) -> TrialSpec {
        TrialSpec { execution_ids, pair: None, position: None }
    }
}

/// A stage's numbers in one trial.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StageSums {
    pub cpu: f64,
    pub elapsed: f64,
    pub items: f64,
    pub bytes: f64,
    pub mem_peak: f64,
}

impl StageSums {
    fn add(&mut self, r: &StageRow) {
        self.cpu += r.cpu_time_total;
        self.elapsed += r.elapsed;
        self.items += r.items;
        self.bytes += r.bytes_processed;
        self.mem_peak = self.mem_peak.max(r.mem_peak_bytes_max);
    }

    /// The sum over stages (peak memory: the largest).
    pub fn total<'a>(stages: impl IntoIterator<Item = &'a StageSums>) -> StageSums {
        stages.into_iter().fold(StageSums::default(), |mut acc, s| {
            acc.cpu += s.cpu;
            acc.elapsed += s.elapsed;
            acc.items += s.items;
            acc.bytes += s.bytes;
            acc.mem_peak = acc.mem_peak.max(s.mem_peak);
            acc
        })
    }
}

/// One trial, aggregated.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrialSums {
    pub label: String,
    pub pair: Option<u32>,
    /// Where the trial ran in its pair (0: first), when known.
    pub position: Option<u32>,
    pub stages: BTreeMap<String, StageSums>,
    /// Stages with a FAILED row that no END row under another execution id retried.
    pub failed_stages: Vec<String>,
    /// FAILED attempts that were retried successfully (infrastructure churn).
    pub retried_stages: Vec<String>,
}

/// Rows indexed by execution key, with duplicates dropped.
pub struct RowIndex<'a> {
    by_key: HashMap<&'a str, Vec<&'a StageRow>, FxBuild>,
    pub duplicates_dropped: usize,
}

impl<'a> RowIndex<'a> {
    pub fn new(rows: &'a [StageRow]) -> RowIndex<'a> {
        let mut seen: HashSet<_, FxBuild> = HashSet::with_capacity_and_hasher(rows.len(), FxBuild::default());
        let mut by_key: HashMap<&str, Vec<&StageRow>, FxBuild> = HashMap::default();
        let mut duplicates_dropped = 0;
        for row in rows {
            if !seen.insert(row.identity()) {
                duplicates_dropped += 1;
                continue;
            }
            let key = execution_key(&row.execution_id).unwrap_or(row.execution_id.as_str());
            by_key.entry(key).or_default().push(row);
        }
        RowIndex { by_key, duplicates_dropped }
    }

    /// The ids of `spec` that match no row.
    pub fn missing<'s>(&self, spec: &'s TrialSpec) -> Vec<&'s str> {
        spec.execution_ids
            .iter()
            .filter(|id| !self.by_key.contains_key(execution_key(id).unwrap_or(id.as_str())))
            .map(String::as_str)
            .collect()
    }

    /// Sums one trial's rows per stage.
    pub fn trial(&self, label: String, spec: &TrialSpec) -> TrialSums {
        let rows: Vec<&StageRow> = spec
            .execution_ids
            .iter()
            .filter_map(|id| self.by_key.get(execution_key(id).unwrap_or(id.as_str())))
            .flatten()
            .copied()
            .collect();
        let mut sums = TrialSums { label, pair: spec.pair, position: spec.position, ..Default::default() };
        for r in rows.iter().filter(|r| r.is_end()) {
            match sums.stages.get_mut(r.stage_name.as_str()) {
                Some(stage) => stage.add(r),
                None => sums.stages.entry(r.stage_name.clone()).or_default().add(r),
            }
        }
        for failed in rows.iter().filter(|r| r.is_failed()) {
            let retried = rows.iter().any(|r| r.is_end() && r.stage_name == failed.stage_name && r.execution_id != failed.execution_id);
            let list = if retried { &mut sums.retried_stages } else { &mut sums.failed_stages };
            if !list.contains(&failed.stage_name) {
                list.push(failed.stage_name.clone());
            }
        }
        sums
    }
}
