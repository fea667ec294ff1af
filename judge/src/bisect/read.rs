//! What a step's report says of the bisection's metric: a pipeline stage's CPU, or a warp cell's metric
//! (noise-aware when the suite is calibrated, upstream's rule otherwise).

use super::{Direction, Reading};
use crate::pipeline::report::{fmt_pct, MetricOutcome, PipelineReport};
use crate::warp::gate::{GateReport, RowVerdict};
use crate::warp::noise::NoiseVerdict;

/// What a step's report says of the metric: the reading (relative to the ends' direction; the ends step
/// itself passes `None`), the change and its interval, and words.
pub struct StepReading {
    pub reading: Reading,
    pub change_pct: Option<f64>,
    pub interval_pct: Option<[f64; 2]>,
    pub words: String,
}

pub(crate) fn relative(raw: Option<Direction>, want: Option<Direction>, flat: bool) -> Reading {
    match (raw, want) {
        (None, _) if flat => Reading::Unmoved,
        (None, _) => Reading::Unsure,
        (Some(_), None) => Reading::Moved,
        (Some(r), Some(w)) if r == w => Reading::Moved,
        (Some(_), Some(_)) => Reading::Opposite,
    }
}

/// A pipeline step: the stage's CPU in the (only) treatment arm.
pub fn read_pipeline(report: &PipelineReport, stage: &str, want: Option<Direction>) -> StepReading {
    let found = report
        .treatments
        .first()
        .and_then(|a| a.stages.iter().find(|s| s.stage == stage))
        .or_else(|| report.stages.iter().find(|s| s.stage == stage));
    let Some(s) = found else {
        return StepReading {
            reading: Reading::Broken,
            change_pct: None,
            interval_pct: None,
            words: format!("no stage {stage:?} in its report"),
        };
    };
    if s.treatment_failed() || s.trials[1] == 0 {
        return StepReading {
            reading: Reading::Broken,
            change_pct: None,
            interval_pct: None,
            words: s.missing_treatment().unwrap_or_else(|| "no treatment numbers".into()),
        };
    }
    if s.cpu_below_floor {
        return StepReading {
            reading: Reading::Unsure,
            change_pct: Some(s.cpu_change_pct),
            interval_pct: s.cpu_interval_pct,
            words: format!("{stage}: below the CPU floor, not tested"),
        };
    }
    let raw = match s.cpu_outcome {
        MetricOutcome::Higher if !s.cpu_negligible => Some(Direction::Up),
        MetricOutcome::Lower if !s.cpu_negligible => Some(Direction::Down),
        _ => None,
    };
    let flat = matches!(s.cpu_outcome, MetricOutcome::Flat) || s.cpu_negligible;
    let interval = s.cpu_interval_pct.map(|[a, b]| format!(", interval {} … {}", fmt_pct(a), fmt_pct(b))).unwrap_or_default();
    let said = match s.cpu_outcome {
        MetricOutcome::Higher if !s.cpu_negligible => "higher",
        MetricOutcome::Lower if !s.cpu_negligible => "lower",
        MetricOutcome::Unclear => "undecided",
        _ => "flat",
    };
    StepReading {
        reading: relative(raw, want, flat),
        change_pct: Some(s.cpu_change_pct),
        interval_pct: s.cpu_interval_pct,
        words: format!("{stage} CPU {said} {}{interval}, {} pairs", fmt_pct(s.cpu_change_pct), s.trials[1]),
    }
}

/// A warp step: the cell's metric, noise-aware when the suite is calibrated, upstream's rule otherwise.
/// Directions are the metric's own, as its change's sign (obj/s and MiB/s fall when worse, latencies rise),
/// so the ends' direction (`Search::direction`, from their change) and a probe's compare alike.
pub fn read_warp(report: &GateReport, cell: &str, metric: &str, want: Option<Direction>) -> StepReading {
    let higher_is_better = matches!(metric, "reqps" | "throughput");
    let (worse, better) = if higher_is_better { (Direction::Down, Direction::Up) } else { (Direction::Up, Direction::Down) };
    if let Some(row) = report.noise.as_ref().and_then(|n| n.rows.iter().find(|r| r.workload == cell && r.metric == metric)) {
        let raw = match row.verdict {
            NoiseVerdict::Fail | NoiseVerdict::Warn => Some(worse),
            NoiseVerdict::Pass => {
                // Better beyond the warn budget, and surely so: moved the better way.
                let surely_better = row.interval_pct.is_some_and(|[a, b]| {
                    let (lo, hi) = if higher_is_better { (-b, -a) } else { (a, b) };
                    hi < -report.warn_pct && lo < hi
                });
                surely_better.then_some(better)
            }
            _ => None,
        };
        let reading = match row.verdict {
            NoiseVerdict::Missing => Reading::Broken,
            NoiseVerdict::Inconclusive => Reading::Unsure,
            _ => relative(raw, want, true),
        };
        return StepReading {
            reading,
            change_pct: row.change_pct,
            interval_pct: row.interval_pct,
            words: format!("{cell} {metric}: {} — {}", row.verdict.label(), row.words),
        };
    }
    let Some(row) = report.rows.iter().find(|r| r.workload == cell && r.metric == metric) else {
        return StepReading {
            reading: Reading::Broken,
            change_pct: None,
            interval_pct: None,
            words: format!("no row {cell} {metric} in its report"),
        };
    };
    let change = match (row.new, row.baseline) {
        (Some(n), Some(b)) if b != 0.0 => Some((n / b - 1.0) * 100.0),
        _ => None,
    };
    // Upstream's rule has no interval: a FAIL (beyond the fail budget) moved; a WARN lies between "as the
    // good end" and "as the bad end" and is read as undecided rather than guessed either way.
    let raw = match row.verdict {
        RowVerdict::Fail => Some(worse),
        RowVerdict::Pass if row.regress.is_some_and(|r| r < -report.fail_pct) => Some(better),
        _ => None,
    };
    let reading = match row.verdict {
        RowVerdict::Missing => Reading::Broken,
        RowVerdict::Warn => Reading::Unsure,
        _ => relative(raw, want, true),
    };
    StepReading {
        reading,
        change_pct: change,
        interval_pct: None,
        words: format!("{cell} {metric}: {} {} (uncalibrated: upstream's rule)", row.verdict.label(), row.delta),
    }
}
