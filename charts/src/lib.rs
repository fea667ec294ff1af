//! Arbiter's charts: the judge's reports drawn as SVG with plotters. Pure (no IO), used by the server's
//! pages (inlined, so tooltips work through SVG `<title>`s) and by the standalone chart images a PR
//! comment embeds. Never compiled into the browser bundle.
//!
//! Colours: the Okabe–Ito palette (safe for the common colour-vision deficiencies); control is always
//! blue and the treatments orange, green, pink in arm order, on every chart of the app. Ink (axes, text)
//! is `currentColor`, so an inlined chart follows the page's light or dark theme.

mod bars;
mod bisect;
mod course;
mod forest;
mod pipeline;
mod quadrant;
mod svg;
mod trend;
mod warp;

pub use bars::{Bar, BarChart, Group, Mark};
pub use bisect::bisection_line;
pub use course::sequential_course;
pub use forest::{pipeline_forest, ForestMetric};
pub use pipeline::{pipeline_cpu, pipeline_memory};
pub use quadrant::pipeline_quadrant;
pub use trend::{series_color, trend_chart, TrendBand, TrendChange, TrendPoint, TrendSeries};
pub use warp::{warp_metric, WarpChart};

use plotters::style::RGBColor;

/// Control's colour (blue).
pub const CONTROL: RGBColor = RGBColor(0x00, 0x72, 0xB2);
/// Treatments' colours, in arm order (orange, bluish green, reddish purple, sky blue).
pub const TREATMENTS: [RGBColor; 4] =
    [RGBColor(0xE6, 0x9F, 0x00), RGBColor(0x00, 0x9E, 0x73), RGBColor(0xCC, 0x79, 0xA7), RGBColor(0x56, 0xB4, 0xE9)];
/// FAIL marks and limit lines (vermillion).
pub const ALERT: RGBColor = RGBColor(0xD5, 0x5E, 0x00);
/// WARN marks (a dark yellow that reads on white and on near-black).
pub const CAUTION: RGBColor = RGBColor(0xB0, 0x84, 0x00);

/// The colour of the `i`-th treatment arm.
pub fn treatment_color(i: usize) -> RGBColor {
    TREATMENTS[i % TREATMENTS.len()]
}

/// Linear or logarithmic value axis (log helps when one stage or cell dwarfs the others).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scale {
    #[default]
    Linear,
    Log,
}

impl Scale {
    /// `log` → Log; anything else is linear.
    pub fn from_query(value: Option<&str>) -> Scale {
        if value == Some("log") {
            Scale::Log
        } else {
            Scale::Linear
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    #[error("there is nothing to draw: {0}")]
    Empty(String),
    #[error("drawing the chart failed: {0}")]
    Draw(String),
}

/// One chart a report offers: its name in URLs and its caption.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChartName {
    pub name: &'static str,
    pub caption: &'static str,
    /// Whether a log axis is offered.
    pub scalable: bool,
}

pub const PIPELINE_CHARTS: &[ChartName] = &[
    ChartName { name: "cpu-forest", caption: "CPU change per stage: interval against the margin", scalable: false },
    ChartName { name: "elapsed-forest", caption: "Summed elapsed change per stage: interval against the margin", scalable: false },
    ChartName { name: "stage-cpu", caption: "CPU per stage", scalable: true },
    ChartName { name: "stage-memory", caption: "Peak memory per stage", scalable: true },
    ChartName { name: "cpu-vs-elapsed", caption: "CPU change against elapsed change", scalable: false },
];

/// The charts only a sequential (adaptive) report has: each metric's interval look by look.
pub const SEQUENTIAL_CHARTS: &[ChartName] = &[
    ChartName { name: "cpu-course", caption: "CPU change pair by pair: interval against the margin", scalable: false },
    ChartName { name: "elapsed-course", caption: "Summed elapsed change pair by pair: interval against the margin", scalable: false },
];

pub const WARP_CHARTS: &[ChartName] = &[
    ChartName { name: "obj-per-s", caption: "Objects per second", scalable: true },
    ChartName { name: "throughput", caption: "Throughput", scalable: true },
    ChartName { name: "p99-latency", caption: "p99 latency", scalable: true },
];

/// Human units: "1.5 GiB", "512 MiB".
pub use judge::units::fmt_bytes;

/// Three significant digits: "0.00123", "12.3", "1234".
pub use judge::units::fmt_num;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(fmt_bytes(512.0 * 1024.0 * 1024.0), "512 MiB");
        assert_eq!(fmt_bytes(1.5 * 1024.0 * 1024.0 * 1024.0), "1.5 GiB");
        assert_eq!(fmt_bytes(100.0), "100 B");
        assert_eq!(fmt_num(1234.4), "1234");
        assert_eq!(fmt_num(0.5), "0.500");
        assert_eq!(Scale::from_query(Some("log")), Scale::Log);
        assert_eq!(Scale::from_query(Some("LOG")), Scale::Linear);
    }
}
