//! Trend points: what one judged experiment contributes to its suite's trend charts — the control
//! arm's level of every stage (pipeline) or workload × drive-sync cell (warp), per metric. Pure: the
//! store calls it when it records a verdict, so every judged experiment feeds the trends the same way.

use crate::pipeline::report::PipelineReport;
use crate::warp::gate::GateReport;
use crate::ExperimentKind;

/// The item of a pipeline experiment's all-stages total.
pub const ALL_STAGES: &str = "(all stages)";

/// A metric a trend can chart: its name in URLs and the store, its words and its unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrendMetric {
    pub name: &'static str,
    pub label: &'static str,
    pub unit: &'static str,
}

pub const PIPELINE_METRICS: &[TrendMetric] = &[
    TrendMetric { name: "cpu-s", label: "CPU-seconds", unit: "CPU-s" },
    TrendMetric { name: "cpu-s-per-item", label: "CPU-seconds per item", unit: "CPU-s/item" },
    TrendMetric { name: "elapsed-s", label: "Elapsed seconds (summed over shards)", unit: "s" },
    TrendMetric { name: "mem-peak-mib", label: "Peak memory", unit: "MiB" },
];

pub const WARP_METRICS: &[TrendMetric] = &[
    TrendMetric { name: "reqps", label: "Objects per second", unit: "obj/s" },
    TrendMetric { name: "throughput", label: "Throughput", unit: "MiB/s" },
    TrendMetric { name: "latency", label: "Average latency", unit: "ms" },
    TrendMetric { name: "p90-latency", label: "p90 latency", unit: "ms" },
    TrendMetric { name: "p99-latency", label: "p99 latency", unit: "ms" },
    TrendMetric { name: "error-rate", label: "Failed rounds", unit: "%" },
];

pub fn metrics(kind: ExperimentKind) -> &'static [TrendMetric] {
    match kind {
        ExperimentKind::Pipeline => PIPELINE_METRICS,
        ExperimentKind::Warp => WARP_METRICS,
    }
}

/// One point: (item, metric, value).
pub type Point = (String, &'static str, f64);

/// The control arm's levels in a stored report (an unparsable or empty report gives none).
pub fn points(kind: ExperimentKind, report: &serde_json::Value) -> Vec<Point> {
    let mut out = Vec::new();
    match kind {
        ExperimentKind::Pipeline => {
            let Ok(r) = serde_json::from_value::<PipelineReport>(report.clone()) else { return out };
            let (stages, total) = match r.treatments.first() {
                Some(t) => (&t.stages, Some(&t.total)),
                None => (&r.stages, r.total.as_ref()),
            };
            let named = stages.iter().map(|s| (s.stage.clone(), s)).chain(total.map(|t| (ALL_STAGES.to_string(), t)));
            for (item, s) in named {
                out.push((item.clone(), "cpu-s", s.cpu_control));
                if s.items_control > 0.0 {
                    out.push((item.clone(), "cpu-s-per-item", s.cpu_control / s.items_control));
                }
                out.push((item.clone(), "elapsed-s", s.elapsed_control));
                if s.mem_peak_control > 0.0 {
                    out.push((item, "mem-peak-mib", s.mem_peak_control / 1048576.0));
                }
            }
        }
        ExperimentKind::Warp => {
            let Some(gate) = report.get("gate").and_then(|g| serde_json::from_value::<GateReport>(g.clone()).ok()) else { return out };
            for row in gate.rows {
                let (Some(m), Some(v)) = (WARP_METRICS.iter().find(|m| m.name == row.metric), row.baseline) else { continue };
                let v = if m.name == "throughput" { v / 1048576.0 } else { v };
                out.push((row.workload, m.name, v));
            }
        }
    }
    out.retain(|p| p.2.is_finite());
    out
}
