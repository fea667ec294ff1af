//! A stored verdict's report as the pages use it, and (on the server) its charts. The report is the
//! judge's own type, so the page shows exactly what the judge decided.

use judge::pipeline::report::PipelineReport;
use judge::warp::gate::GateReport;
use judge::warp::gate_md::Provenance;
use serde::{Deserialize, Serialize};

// One value per page load: the size difference of the variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum StoredReport {
    Pipeline(Box<PipelineReport>),
    Warp { gate: Box<GateReport>, provenance: Option<Provenance> },
}

/// A chart as the page inlines it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChartView {
    pub name: String,
    pub caption: String,
    /// Whether a log axis is offered.
    pub scalable: bool,
    /// The SVG, or why there is none.
    pub svg: Result<String, String>,
}

#[cfg(feature = "ssr")]
mod server {
    use super::*;
    use charts::{ChartName, Scale, WarpChart, PIPELINE_CHARTS, SEQUENTIAL_CHARTS, WARP_CHARTS};
    use judge::ExperimentKind;

    impl StoredReport {
        /// The report a verdict stored for an experiment of this kind; None when it holds no report
        /// (e.g. the judge could not compare), so the page says so instead of failing.
        pub fn from_json(kind: ExperimentKind, value: &serde_json::Value) -> Option<StoredReport> {
            match kind {
                ExperimentKind::Pipeline => serde_json::from_value::<judge::pipeline::report::PipelineReport>(value.clone()).ok().map(|mut r| {
                    r.one_estimate_per_claim();
                    StoredReport::Pipeline(Box::new(r))
                }),
                ExperimentKind::Warp => {
                    let gate = Box::new(serde_json::from_value(value.get("gate")?.clone()).ok()?);
                    let provenance = value.get("provenance").and_then(|p| serde_json::from_value(p.clone()).ok());
                    Some(StoredReport::Warp { gate, provenance })
                }
            }
        }

        /// The charts this report offers: a sequential (adaptive) report's course charts first, as its
        /// course is what decided it.
        pub fn chart_names(&self) -> Vec<ChartName> {
            match self {
                StoredReport::Pipeline(r) if r.sequential.is_some() => SEQUENTIAL_CHARTS.iter().chain(PIPELINE_CHARTS).copied().collect(),
                StoredReport::Pipeline(_) => PIPELINE_CHARTS.to_vec(),
                StoredReport::Warp { .. } => WARP_CHARTS.to_vec(),
            }
        }

        /// One chart by its URL name; None for a name this kind of report does not offer.
        pub fn chart(&self, name: &str, scale: Scale) -> Option<Result<String, charts::ChartError>> {
            match self {
                StoredReport::Pipeline(r) => match name {
                    "stage-cpu" => Some(charts::pipeline_cpu(r, scale)),
                    "stage-memory" => Some(charts::pipeline_memory(r, scale)),
                    "cpu-vs-elapsed" => Some(charts::pipeline_quadrant(r, scale)),
                    "cpu-forest" => Some(charts::pipeline_forest(r, charts::ForestMetric::Cpu)),
                    "elapsed-forest" => Some(charts::pipeline_forest(r, charts::ForestMetric::Elapsed)),
                    "cpu-course" => Some(charts::sequential_course(r, charts::ForestMetric::Cpu)),
                    "elapsed-course" => Some(charts::sequential_course(r, charts::ForestMetric::Elapsed)),
                    _ => None,
                },
                StoredReport::Warp { gate, .. } => WarpChart::from_name(name).map(|c| charts::warp_metric(gate, c, scale)),
            }
        }

        /// Every chart of the report, drawn for the page.
        pub fn charts(&self, scale: Scale) -> Vec<ChartView> {
            self.chart_names()
                .iter()
                .map(|c| ChartView {
                    name: c.name.into(),
                    caption: c.caption.into(),
                    scalable: c.scalable,
                    svg: self
                        .chart(c.name, if c.scalable { scale } else { Scale::Linear })
                        .unwrap_or_else(|| Err(charts::ChartError::Empty(c.name.into())))
                        .map_err(|e| e.to_string()),
                })
                .collect()
        }
    }
}
