//! The measurement report: what an experiment's trials say about how they were measured, rather than
//! about the change — the control's drift over the experiment, outlier trials, the warm-up's cost and the
//! trials that ran beside heavy load — each with what to do about it. The order effect is the order
//! covariate's (`family::OrderTest`, `PipelineReport::order_line`). Pure: the engine hands it each trial's
//! CPU-seconds per stage, in run order. Nothing here changes a verdict: an outlier is named, never dropped
//! (dropping it would choose the data after seeing it).
//!
//! The rules, in one place:
//! * **The stage** the figures are of: the one with the most CPU in the control's measured trials (the
//!   one whose noise matters most for the pipeline's cost).
//! * **Drift**: the least-squares slope of the control's log CPU in that stage against each trial's place
//!   in the run (`seq`), from 4 measured control trials on, with its 95 % t interval (n − 2 df), as % per
//!   trial. Said as drifting when the interval excludes 0.
//! * **Outliers**: within an arm and a stage with 4 measured trials or more whose median CPU is at least
//!   the CPU floor (`method::CPU_FLOOR_S`: a smaller stage is counted in a few clock ticks, and a trial
//!   reading 0 of them is no outlier), a trial whose log CPU is more than [`OUTLIER_Z`] robust standard
//!   deviations (1.4826 × the median absolute deviation, at least [`MIN_ROBUST_SD`]) from the arm's
//!   median, and at least [`OUTLIER_MIN_PCT`] % off it.
//! * **Warm-up cost**: each warm-up's CPU in the stage against its arm's measured median. Without a measured
//!   warm-up (none ran, or it failed), the experiment's first measured trial against its arm's median
//!   instead (what a warm-up would have taken).
//! * **Heavy load**: the trials the host facts flagged (`wire`'s `JsonHostFacts::heavy_load`).
//! * **Spread**: each stage's per-trial CPU spread within arms — the pooled standard deviation of the
//!   arms' log CPU over their measured trials, as %, for stages whose median is at least the CPU floor
//!   (what a same-code canary adds to the noise profile, and the suite page charts over time).
//! * **Isolation**: how many measured trials ran on CPUs reserved for them, and why the others did not.
//! * **Cross-check**: a trial whose rows report more CPU-seconds than its control group counted (by more
//!   than [`CROSS_CHECK_SLACK`]) — rows it did not write, or a clock that is off. The group counts
//!   everything the trial ran (interpreter start-up, the driver), so it is normally the larger.

use crate::stats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A trial further than this many robust standard deviations from its arm's median is an outlier.
pub const OUTLIER_Z: f64 = 3.5;
/// …and at least this far off it, in percent (a near-zero spread makes tiny differences look extreme).
pub const OUTLIER_MIN_PCT: f64 = 5.0;
/// The smallest robust standard deviation (of log CPU) an outlier is measured in: 1 %. CPU-seconds come in
/// clock ticks, so a stage's trials often read exactly alike, and a median absolute deviation of almost 0
/// would make any other reading "10^14 robust SDs" away.
pub const MIN_ROBUST_SD: f64 = 0.01;
/// Rows may report this much more than the control group counted (a fraction, plus 0.2 CPU-s of tick
/// rounding) before the cross-check names the trial.
pub const CROSS_CHECK_SLACK: f64 = 0.02;
/// A warm-up or first trial this far above its arm's median (percent) is a cost worth a warm-up.
pub const WARM_UP_MATTERS_PCT: f64 = 5.0;

/// One trial as the measurement report reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialCpu {
    /// Its place in the plan (run order on a host), from 0.
    pub seq: i64,
    pub arm: String,
    pub control: bool,
    pub warm_up: bool,
    /// Why it ran beside heavy load, if it did.
    pub heavy_load: Option<String>,
    /// CPU-seconds per stage.
    pub cpu: BTreeMap<String, f64>,
    /// Its host facts' isolation: the CPUs reserved for it, or why none were (neither: no facts).
    pub reserved_cpus: Option<String>,
    pub shared_why: Option<String>,
    /// The CPU-seconds its control group counted, where it had one.
    pub group_cpu: Option<f64>,
}

/// A trial whose rows report more CPU than its control group counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrossCheck {
    pub seq: i64,
    pub rows_cpu: f64,
    pub group_cpu: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    pub pct_per_trial: f64,
    /// 95 % interval of the slope, % per trial.
    pub interval_pct: [f64; 2],
    /// Measured control trials it rests on.
    pub trials: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outlier {
    pub seq: i64,
    pub arm: String,
    pub stage: String,
    /// How far off its arm's median, percent.
    pub off_pct: f64,
    pub robust_z: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirstTrialCost {
    pub seq: i64,
    pub arm: String,
    /// Its CPU in the stage against its arm's measured median, percent.
    pub pct: f64,
    /// A warm-up (not judged), or the experiment's first measured trial (judged: there was no warm-up).
    pub warm_up: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasurementReport {
    /// The stage the drift and the warm-up cost are of.
    pub stage: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Drift>,
    #[serde(default)]
    pub outliers: Vec<Outlier>,
    /// The warm-ups' cost (or, without one, the first trial's).
    #[serde(default)]
    pub first_trials: Vec<FirstTrialCost>,
    /// Trials beside heavy load: (seq, why).
    #[serde(default)]
    pub heavy_load: Vec<(i64, String)>,
    /// Measured trials with host facts (what `heavy_load` is out of).
    #[serde(default)]
    pub watched: usize,
    /// Measured trials that ran on CPUs reserved for them (out of `watched`).
    #[serde(default)]
    pub isolated: usize,
    #[serde(default)]
    pub cross_checks: Vec<CrossCheck>,
    /// Per stage: the per-trial CPU spread within arms, % (the rule in the module's header).
    #[serde(default)]
    pub spread_pct: BTreeMap<String, f64>,
    /// One line per finding, with what to do about it.
    pub lines: Vec<String>,
}

fn median(xs: &[f64]) -> f64 {
    stats::median(xs).unwrap_or(f64::NAN)
}

/// The drift of `ys` (log CPU) against `xs` (run places): slope and its 95 % interval, per unit of x.
fn slope(xs: &[f64], ys: &[f64]) -> Option<(f64, f64, f64)> {
    let n = xs.len();
    if n < 4 {
        return None;
    }
    let (mx, my) = (stats::mean(xs), stats::mean(ys));
    let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let b = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum::<f64>() / sxx;
    let a = my - b * mx;
    let rss: f64 = xs.iter().zip(ys).map(|(x, y)| (y - a - b * x).powi(2)).sum();
    let se = (rss / (n as f64 - 2.0) / sxx).sqrt();
    let t = stats::t_quantile(0.975, n as f64 - 2.0);
    Some((b, b - t * se, b + t * se))
}

/// The measurement report of `trials` (every trial that measured something, warm-ups included).
pub fn report(trials: &[TrialCpu]) -> Option<MeasurementReport> {
    let measured: Vec<&TrialCpu> = trials.iter().filter(|t| !t.warm_up).collect();
    let controls: Vec<&TrialCpu> = measured.iter().copied().filter(|t| t.control).collect();
    let stages: Vec<&String> = measured.iter().flat_map(|t| t.cpu.keys()).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    let mean_in = |ts: &[&TrialCpu], s: &str| stats::mean(&ts.iter().filter_map(|t| t.cpu.get(s).copied()).collect::<Vec<_>>());
    let base = if controls.is_empty() { &measured } else { &controls };
    let stage = stages.iter().max_by(|a, b| mean_in(base, a).total_cmp(&mean_in(base, b)))?.to_string();
    let mut lines = Vec::new();

    // Drift of the control.
    let mut ordered: Vec<(f64, f64)> = controls.iter().filter_map(|t| Some((t.seq as f64, stats::ln_pos(*t.cpu.get(&stage)?)))).collect();
    ordered.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (xs, ys): (Vec<f64>, Vec<f64>) = ordered.into_iter().unzip();
    let drift = slope(&xs, &ys).map(|(b, lo, hi)| Drift {
        pct_per_trial: stats::pct(b),
        interval_pct: [stats::pct(lo), stats::pct(hi)],
        trials: xs.len(),
    });
    if let Some(d) = &drift {
        let moving = d.interval_pct[0] > 0.0 || d.interval_pct[1] < 0.0;
        lines.push(if moving {
            format!(
                "Drift: the control's {stage} drifted {} per trial over the experiment (95 % interval {} … {}, {} trials). A balanced order keeps a steady drift out of the change; ABBA (order = \"abba\") cancels it within each block; a quieter host removes it.",
                fmt(d.pct_per_trial), fmt(d.interval_pct[0]), fmt(d.interval_pct[1]), d.trials
            )
        } else {
            format!(
                "Drift: none detected in the control's {stage} ({} per trial, 95 % interval {} … {}, {} trials).",
                fmt(d.pct_per_trial), fmt(d.interval_pct[0]), fmt(d.interval_pct[1]), d.trials
            )
        });
    }

    // Outliers, within each arm and stage.
    let mut outliers = Vec::new();
    let arms: Vec<&String> = measured.iter().map(|t| &t.arm).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    for arm in &arms {
        for s in &stages {
            let of: Vec<(&TrialCpu, f64)> =
                measured.iter().filter(|t| &t.arm == *arm).filter_map(|t| Some((*t, stats::ln_pos(*t.cpu.get(*s)?)))).collect();
            if of.len() < 4 {
                continue;
            }
            let logs: Vec<f64> = of.iter().map(|(_, l)| *l).collect();
            let m = median(&logs);
            if m.exp() < super::method::CPU_FLOOR_S {
                continue;
            }
            let mad = (1.4826 * median(&logs.iter().map(|l| (l - m).abs()).collect::<Vec<_>>())).max(MIN_ROBUST_SD);
            for (t, l) in &of {
                let z = (l - m) / mad;
                let off = stats::pct(l - m);
                if z.abs() > OUTLIER_Z && off.abs() >= OUTLIER_MIN_PCT {
                    outliers.push(Outlier { seq: t.seq, arm: (*arm).clone(), stage: (*s).clone(), off_pct: off, robust_z: z });
                }
            }
        }
    }
    for o in &outliers {
        let beside = trials.iter().find(|t| t.seq == o.seq).and_then(|t| t.heavy_load.as_deref());
        lines.push(format!(
            "Outlier: trial #{} ({}) used {} CPU in {} against its arm's median ({:.1} robust SDs {}); it is kept and judged{}.",
            o.seq + 1,
            o.arm,
            fmt(o.off_pct),
            o.stage,
            o.robust_z.abs(),
            if o.robust_z > 0.0 { "above" } else { "below" },
            match beside {
                Some(why) => format!(" — it ran beside heavy load ({why}): a quieter host"),
                None => " — if trials like it recur, look for what else runs on the host".into(),
            }
        ));
    }

    // The warm-ups' cost, or the first trial's without one.
    let arm_median =
        |arm: &str| median(&measured.iter().filter(|t| t.arm == arm).filter_map(|t| t.cpu.get(&stage).copied()).collect::<Vec<_>>());
    let against = |t: &TrialCpu| -> Option<f64> {
        let m = arm_median(&t.arm);
        let own = t.cpu.get(&stage)?;
        (m > 0.0).then(|| 100.0 * (own / m - 1.0))
    };
    let warm: Vec<&TrialCpu> = trials.iter().filter(|t| t.warm_up).collect();
    let mut first_trials: Vec<FirstTrialCost> =
        warm.iter().filter_map(|t| Some(FirstTrialCost { seq: t.seq, arm: t.arm.clone(), pct: against(t)?, warm_up: true })).collect();
    if warm.is_empty() {
        if let Some(first) = measured.iter().min_by_key(|t| t.seq) {
            first_trials.extend(against(first).map(|pct| FirstTrialCost { seq: first.seq, arm: first.arm.clone(), pct, warm_up: false }));
        }
    }
    for f in &first_trials {
        lines.push(match (f.warm_up, f.pct >= WARM_UP_MATTERS_PCT) {
            (true, true) => format!(
                "Warm-up: trial #{} ({}) used {} CPU in {stage} against its arm's median; it was not judged, which is what it is for.",
                f.seq + 1, f.arm, fmt(f.pct)
            ),
            (true, false) => format!(
                "Warm-up: trial #{} ({}) used {} CPU in {stage} against its arm's median: on this host the first trial costs little, and warm_up = 0 would save a trial.",
                f.seq + 1, f.arm, fmt(f.pct)
            ),
            (false, true) => format!(
                "First trial: #{} ({}) used {} CPU in {stage} against its arm's median and was judged (no warm-up was measured): a warm-up trial (warm_up = 1) would take that cost.",
                f.seq + 1, f.arm, fmt(f.pct)
            ),
            (false, false) => format!("First trial: #{} ({}) used {} CPU in {stage} against its arm's median (no warm-up was measured).", f.seq + 1, f.arm, fmt(f.pct)),
        });
    }

    // Heavy load.
    let heavy_load: Vec<(i64, String)> = measured.iter().filter_map(|t| Some((t.seq, t.heavy_load.clone()?))).collect();
    if !heavy_load.is_empty() {
        lines.push(format!(
            "Heavy load: {} of {} measured trials ran beside it ({}): their CPU-seconds may be inflated — a quieter host, or more pairs.",
            heavy_load.len(),
            measured.len(),
            heavy_load.iter().map(|(s, _)| format!("#{}", s + 1)).collect::<Vec<_>>().join(", ")
        ));
    }

    // Isolation.
    let with_facts: Vec<&&TrialCpu> = measured.iter().filter(|t| t.reserved_cpus.is_some() || t.shared_why.is_some()).collect();
    let isolated = with_facts.iter().filter(|t| t.reserved_cpus.is_some()).count();
    let why = with_facts.iter().find_map(|t| t.shared_why.as_deref());
    if !with_facts.is_empty() {
        let cpus = with_facts.iter().filter_map(|t| t.reserved_cpus.as_deref()).collect::<std::collections::BTreeSet<_>>();
        let cpus = cpus.into_iter().collect::<Vec<_>>().join(", ");
        lines.push(match (isolated, why) {
            (n, _) if n == with_facts.len() => format!(
                "Isolation: every measured trial ran on CPU{} {cpus} reserved for it, Arbiter and its finelog kept off.",
                if cpus.contains([',', '-']) { "s" } else { "" }
            ),
            (0, Some(why)) => format!("Isolation: none — {why}."),
            (n, why) => format!(
                "Isolation: {n} of {} measured trials ran on CPUs reserved for them; the others on the shared CPUs ({}).",
                with_facts.len(),
                why.unwrap_or("no reason recorded")
            ),
        });
    }

    // Rows against the control group's count.
    let cross_checks: Vec<CrossCheck> = measured
        .iter()
        .filter_map(|t| {
            let group_cpu = t.group_cpu?;
            let rows_cpu: f64 = t.cpu.values().sum();
            (rows_cpu > group_cpu * (1.0 + CROSS_CHECK_SLACK) + 0.2).then_some(CrossCheck { seq: t.seq, rows_cpu, group_cpu })
        })
        .collect();
    for c in &cross_checks {
        lines.push(format!(
            "Cross-check: trial #{}'s rows report {:.2} CPU-s, more than the {:.2} its control group counted: rows it did not write, or a clock that is off — read its log before trusting it.",
            c.seq + 1,
            c.rows_cpu,
            c.group_cpu
        ));
    }
    let spread_pct = stages.iter().filter_map(|s| Some((s.to_string(), spread(&measured, s)?))).collect();
    Some(MeasurementReport {
        stage,
        drift,
        outliers,
        first_trials,
        heavy_load,
        watched: measured.len(),
        isolated,
        cross_checks,
        spread_pct,
        lines,
    })
}

/// The pooled within-arm SD of log CPU in `stage`, as %: `None` below the CPU floor or without an arm of
/// two measured trials.
fn spread(measured: &[&TrialCpu], stage: &str) -> Option<f64> {
    let all: Vec<f64> = measured.iter().filter_map(|t| t.cpu.get(stage).copied()).collect();
    if all.is_empty() || median(&all) < super::method::CPU_FLOOR_S {
        return None;
    }
    let arms: std::collections::BTreeSet<&str> = measured.iter().map(|t| t.arm.as_str()).collect();
    let (mut ss, mut df) = (0.0, 0usize);
    for arm in arms {
        let logs: Vec<f64> =
            measured.iter().filter(|t| t.arm == arm).filter_map(|t| t.cpu.get(stage).copied()).filter(|c| *c > 0.0).map(f64::ln).collect();
        if logs.len() >= 2 {
            ss += stats::sample_var(&logs) * (logs.len() - 1) as f64;
            df += logs.len() - 1;
        }
    }
    (df > 0).then(|| 100.0 * (ss / df as f64).sqrt())
}

fn fmt(p: f64) -> String {
    crate::units::fmt_pct(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(seq: i64, arm: &str, warm_up: bool, cpu: &[(&str, f64)]) -> TrialCpu {
        TrialCpu {
            seq,
            arm: arm.into(),
            control: arm == "control",
            warm_up,
            heavy_load: None,
            cpu: cpu.iter().map(|(s, c)| (s.to_string(), *c)).collect(),
            reserved_cpus: None,
            shared_why: None,
            group_cpu: None,
        }
    }

    /// A warm-up, then 8 pairs: `control(k)` and `treatment(k)` give each trial's CPU in "big".
    fn run(control: impl Fn(i64) -> f64, treatment: impl Fn(i64) -> f64, warm: f64) -> Vec<TrialCpu> {
        let mut v = vec![trial(0, "treatment", true, &[("big", warm), ("small", 1.0)])];
        for k in 0..8 {
            v.push(trial(1 + 2 * k, "control", false, &[("big", control(k)), ("small", 1.0 + 0.01 * (k % 3) as f64)]));
            v.push(trial(2 + 2 * k, "treatment", false, &[("big", treatment(k)), ("small", 1.0 + 0.01 * (k % 2) as f64)]));
        }
        v
    }

    #[test]
    fn a_steady_control_has_no_drift_and_a_costly_warm_up_is_said_to_be_doing_its_job() {
        let jitter = |k: i64| 10.0 * (1.0 + 0.01 * ((k * 7) % 5 - 2) as f64);
        let r = report(&run(jitter, jitter, 13.0)).unwrap();
        assert_eq!(r.stage, "big");
        let d = r.drift.as_ref().unwrap();
        assert!(d.interval_pct[0] < 0.0 && d.interval_pct[1] > 0.0 && d.trials == 8, "{d:?}");
        assert!(r.lines[0].starts_with("Drift: none detected in the control's big"), "{:?}", r.lines);
        assert!(r.outliers.is_empty(), "{:?}", r.outliers);
        let w = &r.first_trials[0];
        assert!(w.warm_up && (w.pct - 30.0).abs() < 1.0, "{w:?}");
        assert!(
            r.lines.iter().any(|l| l.starts_with("Warm-up: trial #1 (treatment) used +30.") && l.contains("not judged")),
            "{:?}",
            r.lines
        );
    }

    #[test]
    fn a_drifting_control_and_an_outlier_are_named_never_dropped() {
        // +2 % a pair: the control runs every other trial, so +1 % a trial.
        let drifting = |k: i64| 10.0 * (1.02f64).powi(k as i32) * (1.0 + 0.002 * ((k * 7) % 5) as f64);
        let mut trials = run(drifting, |k| if k == 5 { 20.0 } else { 10.0 * (1.0 + 0.01 * ((k * 3) % 4) as f64) }, 10.1);
        trials.iter_mut().find(|t| t.seq == 12).unwrap().heavy_load = Some("other processes used 1.2 CPUs on average".into());
        let r = report(&trials).unwrap();
        let d = r.drift.as_ref().unwrap();
        assert!(d.interval_pct[0] > 0.0 && (d.pct_per_trial - 1.0).abs() < 0.3, "2 % a pair is 1 % a trial: {d:?}");
        assert!(r.lines[0].starts_with("Drift: the control's big drifted +") && r.lines[0].contains("ABBA"), "{:?}", r.lines);
        assert_eq!(r.outliers.len(), 1, "{:?}", r.outliers);
        let o = &r.outliers[0];
        assert_eq!((o.seq, o.arm.as_str(), o.stage.as_str()), (12, "treatment", "big"));
        assert!(r
            .lines
            .iter()
            .any(|l| l.starts_with("Outlier: trial #13 (treatment)") && l.contains("kept and judged") && l.contains("heavy load")));
        assert!(
            r.lines.iter().any(|l| l.starts_with("Warm-up: trial #1") && l.contains("warm_up = 0 would save a trial")),
            "{:?}",
            r.lines
        );
        assert!(r.lines.iter().any(|l| l.starts_with("Heavy load: 1 of 16 measured trials ran beside it (#13)")), "{:?}", r.lines);
        assert!(r.lines.iter().any(|l| l.contains("robust SDs above); it is kept and judged")), "{:?}", r.lines);
    }

    #[test]
    fn trials_that_read_alike_give_a_readable_distance() {
        // Clock ticks: seven trials read exactly 0.431 CPU-s, one 0.402.
        let mut trials = run(|k| if k == 2 { 0.402 } else { 0.431 }, |_| 0.431, 0.431);
        trials.retain(|t| t.cpu["big"] > 0.0);
        let r = report(&trials).unwrap();
        let o = &r.outliers[0];
        assert!((o.robust_z + 7.0).abs() < 0.1, "at most 1/MIN_ROBUST_SD per unit of log: {o:?}");
        assert!(r.lines.iter().any(|l| l.contains("(7.0 robust SDs below)")), "{:?}", r.lines);
    }

    #[test]
    fn a_stage_too_small_to_measure_has_no_outliers() {
        // A tiny stage counted in clock ticks: 0–0.03 CPU-s, 0 in a quarter of the trials.
        let mut trials = run(|_| 10.0, |_| 10.0, 10.0);
        for t in trials.iter_mut() {
            t.cpu.insert("tiny".into(), [0.0, 0.01, 0.02, 0.03][t.seq as usize % 4]);
        }
        let r = report(&trials).unwrap();
        assert!(r.outliers.is_empty(), "{:?}", r.outliers);
    }

    #[test]
    fn without_a_warm_up_the_first_trials_cost_is_reported() {
        let mut trials = run(|k| if k == 0 { 12.0 } else { 10.0 }, |_| 10.0, 10.0);
        trials.remove(0);
        let r = report(&trials).unwrap();
        let f = &r.first_trials[0];
        assert!(!f.warm_up && f.seq == 1 && (f.pct - 20.0).abs() < 1e-9, "{f:?}");
        assert!(
            r.lines.iter().any(|l| l.starts_with("First trial: #2 (control) used +20.0 %") && l.contains("warm_up = 1")),
            "{:?}",
            r.lines
        );
        assert_eq!(report(&[]), None, "nothing measured, nothing to say");
    }

    #[test]
    fn isolation_and_the_control_groups_count_are_reported() {
        let mut trials = run(|_| 10.0, |_| 10.0, 10.0);
        assert!(!report(&trials).unwrap().lines.iter().any(|l| l.starts_with("Isolation") || l.starts_with("Cross-check")), "no facts: nothing said");
        for t in trials.iter_mut() {
            t.reserved_cpus = Some("1".into());
            t.group_cpu = Some(11.5);
        }
        let r = report(&trials).unwrap();
        assert_eq!(r.isolated, 16);
        assert!(r.lines.iter().any(|l| l == "Isolation: every measured trial ran on CPU 1 reserved for it, Arbiter and its finelog kept off."), "{:?}", r.lines);
        assert!(r.cross_checks.is_empty(), "the group counts more than the rows: as it should");
        let why = "no CPU set reserved: the trial needs 2 CPUs and this host has 2";
        for t in trials.iter_mut() {
            t.reserved_cpus = None;
            t.shared_why = Some(why.into());
        }
        // Trial #4's rows say 11 CPU-s; its group counted 9.
        trials[3].group_cpu = Some(9.0);
        let r = report(&trials).unwrap();
        assert_eq!(r.isolated, 0);
        assert!(r.lines.contains(&format!("Isolation: none — {why}.")), "{:?}", r.lines);
        assert_eq!((r.cross_checks.len(), r.cross_checks[0].seq, r.cross_checks[0].group_cpu), (1, 3, 9.0), "{:?}", r.cross_checks);
        assert!(r.lines.iter().any(|l| l.starts_with("Cross-check: trial #4's rows report 11.01 CPU-s, more than the 9.00")), "{:?}", r.lines);
        // Every trial alike: no spread in "big"; "small" wobbles by 1 % within each arm.
        assert!(r.spread_pct["big"] < 1e-9, "{:?}", r.spread_pct);
        assert!(r.spread_pct["small"] > 0.3 && r.spread_pct["small"] < 1.0, "{:?}", r.spread_pct);
    }
}
