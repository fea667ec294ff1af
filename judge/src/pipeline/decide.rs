//! The decision table for one stage (or the pipeline total) of one treatment arm. Every rule of the
//! pipeline verdict is here, in the order the table applies them; the first that matches wins.

use super::aggregate::StageSums;
use super::noise::{StageThresholds, CPU_FLOOR_S, ELAPSED_FLOOR_S};
use super::report::{fmt_pct, pct_change as change_pct, MetricOutcome, StageReport};
use crate::stats;
use crate::Verdict;

/// What the table needs to judge one stage.
pub struct StageInput<'a> {
    pub stage: &'a str,
    pub control: Vec<StageSums>,
    pub treatment: Vec<StageSums>,
    /// Treatment trials in which this stage failed (not retried).
    pub treatment_failures: usize,
    pub worker_ram: Option<f64>,
    pub tolerance_pct: f64,
    pub accept_mismatch: bool,
    pub thresholds: StageThresholds,
}

/// One metric (CPU or summed elapsed), "lower", "flat", "higher" or "unclear" (see the stats module).
pub fn metric_outcome(
    control: &[f64],
    treatment: &[f64],
    raw_delta: f64,
    floor: f64,
    threshold_pct: f64,
) -> (MetricOutcome, Option<[f64; 2]>) {
    let change = change_pct(stats::mean(control), stats::mean(treatment));
    let interval = stats::welch_log_interval(control, treatment).map(|(l, h)| [l, h]);
    if raw_delta.abs() < floor {
        return (MetricOutcome::Flat, interval);
    }
    let outcome = match interval {
        // Repeats in both arms: the interval decides.
        Some([lo, hi]) => {
            if lo > 0.0 && change > threshold_pct {
                MetricOutcome::Higher
            } else if hi < 0.0 && change < -threshold_pct {
                MetricOutcome::Lower
            } else if lo >= -threshold_pct && hi <= threshold_pct {
                MetricOutcome::Flat
            } else {
                separated(control, treatment, change, threshold_pct)
            }
        }
        // One trial in an arm: the means against the threshold, widened (never narrowed) by the spread of
        // an arm that has repeats.
        None => {
            let spread = if control.len() >= 2 { stats::cv(control) } else { stats::cv(treatment) };
            let threshold = threshold_pct.max(2.0 * spread * 100.0);
            if change > threshold {
                MetricOutcome::Higher
            } else if change < -threshold {
                MetricOutcome::Lower
            } else {
                MetricOutcome::Flat
            }
        }
    };
    (outcome, interval)
}

/// When the interval cannot decide. With two or three trials an arm, Welch's interval is very wide (t is
/// 12.7 at one degree of freedom), so even a several-fold change reads as "unclear". An unmistakable one is
/// decided: arms that do not overlap at all, apart by more than three times the threshold and twice the
/// larger arm's coefficient of variation. Three times, because two arms of two trials separate by chance one
/// time in six, and a systematic disturbance (a neighbour on the node) can shift one arm by 20 %.
fn separated(control: &[f64], treatment: &[f64], change: f64, threshold_pct: f64) -> MetricOutcome {
    let max = |v: &[f64]| v.iter().copied().fold(f64::MIN, f64::max);
    let min = |v: &[f64]| v.iter().copied().fold(f64::MAX, f64::min);
    let widened = (3.0 * threshold_pct).max(2.0 * stats::cv(control).max(stats::cv(treatment)) * 100.0);
    if min(treatment) > max(control) && change > widened {
        MetricOutcome::Higher
    } else if max(treatment) < min(control) && change < -widened {
        MetricOutcome::Lower
    } else {
        MetricOutcome::Unclear
    }
}

pub fn judge_stage(input: &StageInput) -> StageReport {
    let mut report = StageReport::numbers(input.stage, &input.control, &input.treatment, input.thresholds);
    let name = input.stage;
    let (nc, nt) = (input.control.len(), input.treatment.len());

    // 2. A failure in the treatment is a regression, whatever else.
    if input.treatment_failures > 0 {
        return report.decide(
            Verdict::Regression,
            format!(
                "{name}: new failure (FAILED in {} of {} treatment trials)",
                input.treatment_failures,
                nt.max(input.treatment_failures)
            ),
        );
    }
    // 3. Memory guardrail: above the worker's RAM where the control was not.
    if let Some(limit) = input.worker_ram {
        let (mc, mt) = (report.mem_peak_control, report.mem_peak_treatment);
        if mt > limit && mc <= limit {
            return report.decide(
                Verdict::Regression,
                format!(
                    "{name}: memory guardrail: peak {:.0} MiB exceeds the worker limit of {:.0} MiB (control {:.0} MiB)",
                    mt / 1048576.0,
                    limit / 1048576.0,
                    mc / 1048576.0
                ),
            );
        }
    }
    // 4. Present in one arm only.
    if nc == 0 || nt == 0 {
        let only = if nc == 0 { "treatment" } else { "control" };
        return report.decide(Verdict::Inconclusive, format!("{name}: only the {only} ran this stage; stages cannot be paired"));
    }
    // 5. Same work? Items first, then bytes; normalise only when the user accepts the mismatch.
    let tolerance = input.tolerance_pct;
    let items_off = report.items_change_pct.abs() > tolerance;
    let bytes_off = report.bytes_change_pct.abs() > tolerance;
    let per = |sums: &[StageSums], f: fn(&StageSums) -> f64| -> Vec<f64> { sums.iter().map(|s| s.cpu / f(s).max(1.0)).collect() };
    let (cpu_c, cpu_t): (Vec<f64>, Vec<f64>) = if items_off || bytes_off {
        if !input.accept_mismatch {
            let what = if items_off {
                format!("items {}", fmt_pct(report.items_change_pct))
            } else {
                format!("bytes {}", fmt_pct(report.bytes_change_pct))
            };
            return report.decide(Verdict::Inconclusive, format!("{name}: different work ({what}, tolerance ±{tolerance} %); pass --accept-workload-mismatch to compare CPU per unit of work"));
        }
        if items_off {
            report.normalised = Some("per_item".into());
            (per(&input.control, |s| s.items), per(&input.treatment, |s| s.items))
        } else {
            report.normalised = Some("per_byte".into());
            (per(&input.control, |s| s.bytes), per(&input.treatment, |s| s.bytes))
        }
    } else {
        (input.control.iter().map(|s| s.cpu).collect(), input.treatment.iter().map(|s| s.cpu).collect())
    };
    // 6. CPU and elapsed as separate outcomes.
    let raw_cpu_delta = report.cpu_treatment - report.cpu_control;
    let (cpu, cpu_interval) = metric_outcome(&cpu_c, &cpu_t, raw_cpu_delta, CPU_FLOOR_S, input.thresholds.cpu_pct);
    let el_c: Vec<f64> = input.control.iter().map(|s| s.elapsed).collect();
    let el_t: Vec<f64> = input.treatment.iter().map(|s| s.elapsed).collect();
    let (elapsed, elapsed_interval) =
        metric_outcome(&el_c, &el_t, report.elapsed_treatment - report.elapsed_control, ELAPSED_FLOOR_S, input.thresholds.elapsed_pct);
    if report.normalised.is_some() {
        report.cpu_change_pct = change_pct(stats::mean(&cpu_c), stats::mean(&cpu_t));
    }
    report.cpu_interval_pct = cpu_interval;
    report.elapsed_interval_pct = elapsed_interval;
    report.cpu_p_value = if nc >= 2 && nt >= 2 { stats::mann_whitney_p(&cpu_c, &cpu_t) } else { None };
    report.cpu_outcome = cpu;
    report.elapsed_outcome = elapsed;
    let detail = report.detail();
    let repeated = nc >= 2 && nt >= 2;
    use MetricOutcome::*;
    let (verdict, why) = match (cpu, elapsed) {
        (Unclear, _) => (Verdict::Inconclusive, "CPU change unclear; needs more trials"),
        (Higher, Lower) => (Verdict::Tradeoff, "faster, more expensive"),
        (Higher, _) => (Verdict::Regression, "more CPU"),
        (Lower, Higher) => (Verdict::Tradeoff, "cheaper, slower"),
        (Lower, _) => (Verdict::Pass, "cheaper"),
        (Flat, Flat) => (Verdict::Pass, "no change"),
        (Flat, Unclear) => (Verdict::Inconclusive, "elapsed change unclear; needs more trials"),
        (Flat, _) if !repeated => (Verdict::Inconclusive, "elapsed-only change from one pair; repeat with alternating trials"),
        (Flat, Lower) => (Verdict::Pass, "latency win"),
        (Flat, Higher) => (Verdict::Regression, "slower at equal cost"),
    };
    report.decide(verdict, format!("{name}: {why}: {detail}"))
}
