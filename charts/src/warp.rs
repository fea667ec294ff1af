//! Warp charts: one metric (obj/s, throughput or p99 latency) per workload × drive-sync cell, baseline
//! against candidate, with the gate's FAIL/WARN/MISSING marks. Each bar is a median; the rounds behind
//! it are dots on it (hollow for an arm's second ABBA phase), and the tooltip lists them with the drift.

use crate::bars::{Bar, BarChart, Dot, Group, Mark};
use crate::{fmt_num, ChartError, Scale, CONTROL, TREATMENTS};
use judge::warp::gate::{GateReport, RowVerdict};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarpChart {
    ObjPerS,
    Throughput,
    P99Latency,
}

impl WarpChart {
    pub fn from_name(name: &str) -> Option<WarpChart> {
        match name {
            "obj-per-s" => Some(WarpChart::ObjPerS),
            "throughput" => Some(WarpChart::Throughput),
            "p99-latency" => Some(WarpChart::P99Latency),
            _ => None,
        }
    }

    /// (the gate's metric name, title, axis, unit, divisor from the stored unit)
    fn spec(self) -> (&'static str, &'static str, &'static str, &'static str, f64) {
        match self {
            WarpChart::ObjPerS => {
                ("reqps", "Objects per second (higher is better)", "objects per second (bars: medians; dots: rounds)", "obj/s", 1.0)
            }
            WarpChart::Throughput => {
                ("throughput", "Throughput (higher is better)", "MiB per second (bars: medians; dots: rounds)", "MiB/s", 1048576.0)
            }
            WarpChart::P99Latency => {
                ("p99-latency", "p99 latency (lower is better)", "p99 in milliseconds (bars: medians; dots: rounds)", "ms", 1.0)
            }
        }
    }
}

pub fn warp_metric(report: &GateReport, chart: WarpChart, scale: Scale) -> Result<String, ChartError> {
    let (metric, title, axis, unit, div) = chart.spec();
    let groups: Vec<Group> = report
        .rows
        .iter()
        .filter(|r| r.metric == metric)
        .map(|r| {
            let mark = match r.verdict {
                RowVerdict::Fail => Some(Mark::Fail),
                RowVerdict::Warn => Some(Mark::Warn),
                RowVerdict::Missing => Some(Mark::Missing),
                RowVerdict::Pass => None,
            };
            let value = |v: Option<f64>| v.map(|v| v / div);
            let shown = |v: Option<f64>| value(v).map(|v| format!("{} {unit}", fmt_num(v))).unwrap_or_else(|| "N/A".into());
            let why = r.missing_reason.as_deref().map(|m| format!(" ({m})")).unwrap_or_default();
            let cell = report.cells.iter().find(|c| c.label == r.workload);
            // The rounds of the baseline's or the candidate's phases: dots, and "A1: 410, 415 · A2: 398" for the tip.
            let rounds = |baseline: bool| -> (Vec<Dot>, String) {
                let phases = cell.map(|c| c.values(metric, baseline)).unwrap_or_default();
                let dots = phases
                    .iter()
                    .enumerate()
                    .flat_map(|(i, (_, vs))| vs.iter().map(move |v| Dot { value: v / div, hollow: i > 0 }))
                    .collect();
                let words: Vec<String> = phases
                    .iter()
                    .map(|(leg, vs)| format!("{leg}: {}", vs.iter().map(|v| fmt_num(v / div)).collect::<Vec<_>>().join(", ")))
                    .collect();
                let words = if words.is_empty() { String::new() } else { format!("\nrounds {}", words.join(" · ")) };
                (dots, words)
            };
            let ((base_dots, base_words), (cand_dots, cand_words)) = (rounds(true), rounds(false));
            let drift =
                cell.and_then(|c| c.drift_pct).map(|d| format!("\nbaseline drift between its phases: {d:.1} %")).unwrap_or_default();
            Group {
                label: r.workload.clone(),
                bars: vec![
                    Bar {
                        value: value(r.baseline),
                        whisker: None,
                        tip: format!("{}\nbaseline: {} (median){base_words}{drift}", r.workload, shown(r.baseline)),
                        dots: base_dots,
                    },
                    Bar {
                        value: value(r.new),
                        whisker: None,
                        tip: format!(
                            "{}\ncandidate: {} (median), Δ {} — {}{why}{cand_words}",
                            r.workload,
                            shown(r.new),
                            r.delta,
                            r.verdict.label()
                        ),
                        dots: cand_dots,
                    },
                ],
                band: None,
                mark,
            }
        })
        .collect();
    if groups.is_empty() {
        return Err(ChartError::Empty(format!("the gate has no {metric} rows")));
    }
    BarChart {
        title: title.into(),
        axis: axis.into(),
        series: vec![("baseline".into(), CONTROL), ("candidate".into(), TREATMENTS[0])],
        groups,
        limit: None,
        band_label: None,
        format: fmt_num,
    }
    .render(scale)
}
