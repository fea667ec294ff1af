//! The forest plot: per stage and treatment arm, the change's interval (at the level the verdict
//! decided it) against zero and the ±margin band it is held to — CPU in one chart, summed elapsed in a
//! second. Detected changes come first (largest first), then the undecided and flat ones in stage order;
//! a stage under its floor is listed and draws no interval. An interval reaching past the axis ends in
//! an arrow, so one huge stage cannot squash the others into a line.

use crate::bars::{clip, legend};
use crate::svg::{finish, Tip, INK};
use crate::{treatment_color, ChartError};
use judge::pipeline::family::MetricTest;
use judge::pipeline::report::{fmt_level, fmt_margin, fmt_needs, fmt_pct, MetricOutcome, PipelineReport, StageReport};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const FONT: &str = "sans-serif";
const ROW: i32 = 22;
const LABEL_W: i32 = 200;
const WIDTH: i32 = 820;
/// The axis never reaches further than this (%), whatever an interval does.
const MAX_REACH: f64 = 400.0;

fn draw_err<E: std::fmt::Display>(e: E) -> ChartError {
    ChartError::Draw(e.to_string())
}

/// Which metric a forest plot draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForestMetric {
    Cpu,
    Elapsed,
}

struct Row<'a> {
    arm: usize,
    arm_name: &'a str,
    stage: &'a StageReport,
    test: Option<&'a MetricTest>,
    outcome: MetricOutcome,
    below: bool,
    change: f64,
    margin: f64,
}

impl ForestMetric {
    fn row<'a>(self, arm: usize, arm_name: &'a str, s: &'a StageReport) -> Row<'a> {
        let (test, outcome, below, change, margin) = match self {
            ForestMetric::Cpu => (s.cpu_test.as_ref(), s.cpu_outcome, s.cpu_below_floor, s.cpu_change_pct, s.thresholds.cpu_pct),
            ForestMetric::Elapsed => {
                (s.elapsed_test.as_ref(), s.elapsed_outcome, s.elapsed_below_floor, s.elapsed_change_pct, s.thresholds.elapsed_pct)
            }
        };
        Row { arm, arm_name, stage: s, test, outcome, below, change, margin: test.map_or(margin, |t| t.margin_pct) }
    }

    fn title(self) -> &'static str {
        match self {
            ForestMetric::Cpu => "CPU change per stage: interval against the margin",
            ForestMetric::Elapsed => "Summed elapsed change per stage: interval against the margin",
        }
    }

    fn floor(self, report: &PipelineReport) -> String {
        match self {
            ForestMetric::Cpu => format!("{} CPU-s", report.thresholds.cpu_floor_s),
            ForestMetric::Elapsed => format!("{} s", report.thresholds.elapsed_floor_s),
        }
    }
}

/// What a row says in words (its tooltip), and the short status drawn at its right end.
fn words(r: &Row, floor: &str, metric: ForestMetric) -> (String, String) {
    let head = format!("{} · {}", r.stage.stage, r.arm_name);
    if let Some(missing) = r.stage.missing_treatment() {
        return (format!("{head}: {missing}, so no change to draw"), missing);
    }
    if r.below {
        return (format!("{head}: below the {floor} floor ({}), not tested", fmt_pct(r.change)), "below floor".into());
    }
    let Some(t) = r.test else {
        return match metric {
            ForestMetric::Elapsed => (
                format!("{head}: {} — not tested: too few trials an arm (elapsed needs 3)", fmt_pct(r.change)),
                format!("untested: < {} trials", judge::pipeline::method::MIN_ELAPSED_TRIALS),
            ),
            // One pair and no noise profile: no spread measured to test against (method 3).
            ForestMetric::Cpu => (
                format!("{head}: {} — not tested: one pair and no noise profile measure no spread", fmt_pct(r.change)),
                "untested: no spread".to_string(),
            ),
        };
    };
    let interval = format!("{} interval {} … {}", fmt_level(t.alpha), fmt_pct(t.interval_pct[0]), fmt_pct(t.interval_pct[1]));
    // The verdict's own outcome for the metric, in words.
    let status = match (t.negligible, t.detected, r.outcome) {
        (true, _, _) => "negligible".to_string(),
        (_, true, _) => "detected".to_string(),
        (_, _, MetricOutcome::Flat) => "flat".to_string(),
        _ => fmt_needs(t).map_or_else(|| "undecided".to_string(), |n| format!("undecided: {n}")),
    };
    (format!("{head}: {} ({interval}), margin ±{} — {status}", fmt_pct(t.estimate_pct), fmt_margin(r.margin)), status)
}

/// The forest plot of one metric over every treatment arm's stages.
pub fn pipeline_forest(report: &PipelineReport, metric: ForestMetric) -> Result<String, ChartError> {
    if report.method.is_none() {
        return Err(ChartError::Empty("judged by method 1, which computed no intervals: re-judge it to draw them".into()));
    }
    let mut rows: Vec<Row> = report
        .treatments
        .iter()
        .enumerate()
        .flat_map(|(k, arm)| arm.stages.iter().map(move |s| metric.row(k, &arm.name, s)))
        .filter(|r| r.change.is_finite() || r.below)
        .collect();
    if rows.is_empty() {
        return Err(ChartError::Empty("no stage has a change to draw".into()));
    }
    // Detected first, largest change first; then the rest in stage order (their order in the report).
    let detected = |r: &Row| r.test.is_some_and(|t| t.detected && !t.negligible);
    rows.sort_by(|a, b| {
        detected(b).cmp(&detected(a)).then_with(|| {
            if detected(a) {
                b.change.abs().partial_cmp(&a.change.abs()).unwrap_or(std::cmp::Ordering::Equal)
            } else {
                std::cmp::Ordering::Equal
            }
        })
    });
    let floor = metric.floor(report);
    // The axis: every estimate and margin in view, intervals as far as they fit.
    let spans = rows.iter().filter(|r| !r.below).flat_map(|r| {
        let iv = r.test.map(|t| t.interval_pct).unwrap_or([r.change, r.change]);
        [
            r.change.abs(),
            r.margin,
            iv[0].abs().min(r.change.abs() * 2.0 + r.margin * 2.0),
            iv[1].abs().min(r.change.abs() * 2.0 + r.margin * 2.0),
        ]
    });
    let reach = (spans.filter(|v| v.is_finite()).fold(1.0, f64::max) * 1.12).min(MAX_REACH);
    let decimals = if reach < 5.0 { 1 } else { 0 };
    let title = metric.title();
    let height = 64 + 44 + ROW * rows.len() as i32 + 8;
    let mut tips = Vec::new();
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (WIDTH as u32, height as u32)).into_drawing_area();
        root.draw(&Text::new(title, (10, 8), (FONT, 19).into_font().style(FontStyle::Bold).color(&INK))).map_err(draw_err)?;
        let mut entries: Vec<(String, RGBColor, bool)> =
            report.treatments.iter().enumerate().map(|(k, a)| (a.name.clone(), treatment_color(k), true)).collect();
        entries.push(("margin band".into(), RGBColor(150, 150, 150), true));
        entries.push(("hollow: not detected".into(), INK, false));
        legend(&root, &entries)?;
        let (left, right) = (LABEL_W, 270);
        let plot = root.margin(58, 0, left, right);
        let mut chart =
            ChartBuilder::on(&plot).x_label_area_size(40).build_cartesian_2d(-reach..reach, 0.0..rows.len() as f64).map_err(draw_err)?;
        let unit = match metric {
            ForestMetric::Cpu => "CPU-seconds change against control (%)",
            ForestMetric::Elapsed => "summed elapsed change against control (%)",
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_desc(unit)
            .x_labels(9)
            .x_label_formatter(&|v| format!("{v:+.decimals$}"))
            .axis_style(INK)
            .label_style((FONT, 14).into_font().color(&INK))
            .axis_desc_style((FONT, 15).into_font().color(&INK))
            .light_line_style(TRANSPARENT)
            .bold_line_style(RGBColor(128, 128, 128).mix(0.22))
            .draw()
            .map_err(draw_err)?;
        let n = rows.len() as f64;
        chart.draw_series(std::iter::once(PathElement::new(vec![(0.0, 0.0), (0.0, n)], INK.mix(0.7).stroke_width(1)))).map_err(draw_err)?;
        for (i, r) in rows.iter().enumerate() {
            let y = n - i as f64 - 0.5;
            let colour = treatment_color(r.arm);
            let (_, py) = chart.backend_coord(&(0.0, y));
            let (text, status) = words(r, &floor, metric);
            let label = if report.treatments.len() > 1 {
                format!("{} · {}", clip(&r.stage.stage, 22), clip(r.arm_name, 10))
            } else {
                clip(&r.stage.stage, 28)
            };
            root.draw(&Text::new(label, (LABEL_W - 8, py), (FONT, 13).into_font().color(&INK).pos(Pos::new(HPos::Right, VPos::Center))))
                .map_err(draw_err)?;
            root.draw(&Text::new(
                clip(&status, 48),
                (WIDTH - right + 8, py),
                (FONT, 12).into_font().color(&INK.mix(0.75)).pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(draw_err)?;
            tips.push(Tip { x0: 0, y0: py - ROW / 2, x1: WIDTH, y1: py + ROW / 2, text, href: None });
            if r.below || r.stage.missing_treatment().is_some() {
                continue;
            }
            // A ratio band, as the judge reads it: ±2 % reaches from −1.96 % to +2 %.
            let (m_lo, m_hi) = (crate::course::band_floor(r.margin).max(-reach), r.margin.min(reach));
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(m_lo, y - 0.36), (m_hi, y + 0.36)],
                    RGBColor(150, 150, 150).mix(0.30).filled(),
                )))
                .map_err(draw_err)?;
            let Some(t) = r.test else {
                chart
                    .draw_series(std::iter::once(Circle::new((r.change.clamp(-reach, reach), y), 4, colour.stroke_width(2))))
                    .map_err(draw_err)?;
                continue;
            };
            let (lo, hi) = (t.interval_pct[0].max(-reach), t.interval_pct[1].min(reach));
            if lo < hi {
                chart.draw_series(std::iter::once(PathElement::new(vec![(lo, y), (hi, y)], colour.stroke_width(3)))).map_err(draw_err)?;
                for (end, cut, dir) in [(lo, t.interval_pct[0] < -reach, -1), (hi, t.interval_pct[1] > reach, 1)] {
                    let (px, py) = chart.backend_coord(&(end, y));
                    if cut {
                        let tip = px + 7 * dir;
                        root.draw(&Polygon::new(vec![(px, py - 5), (tip, py), (px, py + 5)], colour.filled())).map_err(draw_err)?;
                    } else {
                        root.draw(&PathElement::new(vec![(px, py - 5), (px, py + 5)], colour.stroke_width(2))).map_err(draw_err)?;
                    }
                }
            }
            let dot = (t.estimate_pct.clamp(-reach, reach), y);
            let style = if t.detected { colour.filled() } else { WHITE.filled() };
            chart.draw_series(std::iter::once(Circle::new(dot, 5, style))).map_err(draw_err)?;
            chart.draw_series(std::iter::once(Circle::new(dot, 5, colour.stroke_width(2)))).map_err(draw_err)?;
        }
        root.present().map_err(draw_err)?;
    }
    Ok(finish(buf, title, &tips))
}
