//! An adaptive (sequential) experiment's course: for each CPU (or elapsed) metric, its interval look by
//! look — pair by pair — against the ±margin band and zero, the two boundaries its decision is read
//! from. The lighter funnel is the sequence at the test's level: the metric is *different* once it
//! clears zero. The darker one inside is the equivalence sequence: *equivalent* once it fits inside the
//! band. Undecided metrics come first; a decided one's course ends at the look that decided it. An
//! interval reaching past the axis is cut at the edge (the first looks' intervals are very wide).

use crate::bars::{clip, legend};
use crate::forest::ForestMetric;
use crate::svg::{finish, Tip, INK};
use crate::{treatment_color, ChartError};
use judge::pipeline::report::{fmt_margin, fmt_pct, MetricOutcome, PipelineReport};
use judge::pipeline::sequential::{CoursePoint, Decision, SequentialMetric};
use plotters::prelude::*;

const FONT: &str = "sans-serif";
const WIDTH: u32 = 900;
const PANEL_H: u32 = 230;
const HEAD_H: u32 = 58;
/// Panels drawn at most; the rest are named under the title.
const MAX_PANELS: usize = 12;
/// The opacity of the interval's funnel and of the equivalence interval's inside it.
const LIGHT: f64 = 0.2;
const DARK: f64 = 0.45;
/// The axis never reaches further than this (%).
const MAX_REACH: f64 = 400.0;

fn draw_err<E: std::fmt::Display>(e: E) -> ChartError {
    ChartError::Draw(e.to_string())
}

/// `c` at opacity `a` over white, for a legend swatch.
fn tint(c: RGBColor, a: f64) -> RGBColor {
    let mix = |v: u8| (f64::from(v) * a + 255.0 * (1.0 - a)).round() as u8;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

/// The lower edge of a ±`margin` % band: the margin is a ratio, so its lower edge is 1/(1 + m) − 1.
pub fn band_floor(margin_pct: f64) -> f64 {
    (1.0 / (1.0 + margin_pct / 100.0) - 1.0) * 100.0
}

/// A metric's state in words, for its panel's caption.
fn state(m: &SequentialMetric, used: usize, unit: &str) -> String {
    let units = |n: usize| if n == 1 { format!("1 {unit}") } else { format!("{n} {unit}s") };
    match (m.decision, m.decided_after) {
        (Decision::Continue, _) | (_, None) => format!("undecided after {}", units(used)),
        (Decision::Different, Some(k)) => {
            let dir = if m.outcome == MetricOutcome::Lower { "lower" } else { "higher" };
            format!("{dir}, decided after {}", units(k))
        }
        (Decision::Equivalent, Some(k)) => format!("equivalent, decided after {}", units(k)),
        (Decision::NoRegression, Some(k)) => format!("no regression ≥ X (bounded below it), decided after {}", units(k)),
    }
}

/// The value axis: the margin band (and some room around it), every estimate, and the latest look's
/// interval in full; earlier (wider) intervals are cut at its edges. A change cannot fall below −100 %.
fn axis(course: &[CoursePoint]) -> (f64, f64) {
    let margin = course.iter().map(|p| p.margin_pct).fold(0.0, f64::max).max(0.5);
    let (mut lo, mut hi) = (band_floor(margin) * 2.5, margin * 2.5);
    for p in course {
        lo = lo.min(p.estimate_pct);
        hi = hi.max(p.estimate_pct);
    }
    if let Some(last) = course.last() {
        lo = lo.min(last.interval_pct[0]);
        hi = hi.max(last.interval_pct[1]);
    }
    let pad = (hi - lo) * 0.08;
    ((lo - pad).max(-100.0), (hi + pad).min(MAX_REACH))
}

/// The course chart of `metric` ("CPU change pair by pair…"); `Empty` when the report is not sequential.
pub fn sequential_course(report: &PipelineReport, metric: ForestMetric) -> Result<String, ChartError> {
    let (name, what) = match metric {
        ForestMetric::Cpu => ("cpu", "CPU"),
        ForestMetric::Elapsed => ("elapsed", "Summed elapsed"),
    };
    let Some(seq) = report.sequential.as_ref() else {
        return Err(ChartError::Empty("a fixed design has no look-by-look course".into()));
    };
    let unit = seq.unit.word();
    let title = format!("{what} change {unit} by {unit}: interval against the margin");
    let arm_index = |arm: &str| report.treatments.iter().position(|a| a.name == arm).unwrap_or(0);
    let mut metrics: Vec<&SequentialMetric> = seq.metrics.iter().filter(|m| m.metric == name && !m.course.is_empty()).collect();
    if metrics.is_empty() {
        return Err(ChartError::Empty(format!("{title}: no {name} metric has two {unit}s yet")));
    }
    // Undecided first, then the decided, each in stage order (the record's).
    metrics.sort_by_key(|m| m.decided_after.is_some() && m.decision != Decision::Continue);
    let hidden: Vec<String> = metrics.iter().skip(MAX_PANELS).map(|m| m.stage.clone()).collect();
    metrics.truncate(MAX_PANELS);
    let cols = if metrics.len() == 1 { 1 } else { 2 };
    let rows = metrics.len().div_ceil(cols);
    let height = HEAD_H + PANEL_H * rows as u32 + if hidden.is_empty() { 0 } else { 22 };
    let last_look = seq.pairs_used.max(2);
    let mut tips = Vec::new();
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (WIDTH, height)).into_drawing_area();
        root.draw(&Text::new(title.clone(), (10, 8), (FONT, 19).into_font().style(FontStyle::Bold).color(&INK))).map_err(draw_err)?;
        let c = treatment_color(0);
        legend(
            &root,
            &[
                ("interval: different once it clears 0".into(), tint(c, LIGHT), true),
                ("equivalence interval: equivalent inside the band".into(), tint(c, DARK), true),
                ("±margin".into(), RGBColor(190, 190, 190), true),
            ],
        )?;
        let (_, body) = root.split_vertically(HEAD_H);
        let (body, foot) = body.split_vertically(PANEL_H * rows as u32);
        if !hidden.is_empty() {
            let text = format!("and {} more: {}", hidden.len(), clip(&hidden.join(", "), 110));
            foot.draw(&Text::new(text, (10, 4), (FONT, 13).into_font().color(&INK))).map_err(draw_err)?;
        }
        let panels = body.split_evenly((rows, cols));
        for (m, area) in metrics.iter().zip(panels.iter()) {
            let color = treatment_color(arm_index(&m.arm));
            let (y0, y1) = axis(&m.course);
            let cut = |v: f64| v.clamp(y0, y1);
            let x1 = last_look.max(m.course.last().map_or(2, |p| p.pairs)) as f64 + 0.5;
            let x0 = m.course.first().map_or(2, |p| p.pairs).min(2) as f64 - 0.5;
            let arm = if report.treatments.len() > 1 { format!(" · {}", m.arm) } else { String::new() };
            let caption = format!("{}{arm}: {}", clip(&m.stage, 40), state(m, seq.pairs_used, unit));
            let mut chart = ChartBuilder::on(area)
                .caption(caption, (FONT, 14).into_font().style(FontStyle::Bold).color(&INK))
                .margin(8)
                .margin_right(18)
                .x_label_area_size(30)
                .y_label_area_size(58)
                .build_cartesian_2d(x0..x1, y0..y1)
                .map_err(draw_err)?;
            let span = (x1 - x0).round() as usize;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(span.min(10) + 1)
                .x_label_formatter(&|v| if (v - v.round()).abs() < 1e-6 { format!("{}", v.round() as i64) } else { String::new() })
                .y_labels(5)
                .y_label_formatter(&|v| fmt_pct(*v))
                .x_desc(format!("{unit}s"))
                .axis_style(INK)
                .label_style((FONT, 12).into_font().color(&INK))
                .axis_desc_style((FONT, 12).into_font().color(&INK))
                .light_line_style(RGBColor(128, 128, 128).mix(0.10))
                .bold_line_style(RGBColor(128, 128, 128).mix(0.22))
                .draw()
                .map_err(draw_err)?;
            // The margin is symmetric on the log scale: ±2 % reaches down to −1.96 %.
            let margin = m.course.last().map_or(0.0, |p| p.margin_pct);
            let band = (band_floor(margin), margin);
            let grey = RGBColor(110, 110, 110);
            chart.draw_series(std::iter::once(Rectangle::new([(x0, band.0), (x1, band.1)], grey.mix(0.22).filled()))).map_err(draw_err)?;
            let funnel = |pick: fn(&CoursePoint) -> [f64; 2]| -> Vec<(f64, f64)> {
                let mut pts: Vec<(f64, f64)> = m.course.iter().map(|p| (p.pairs as f64, cut(pick(p)[1]))).collect();
                pts.extend(m.course.iter().rev().map(|p| (p.pairs as f64, cut(pick(p)[0]))));
                pts
            };
            if m.course.len() == 1 {
                // One look: its intervals as bars.
                let p = m.course[0];
                let x = p.pairs as f64;
                for (i, a) in [(p.interval_pct, LIGHT), (p.equivalence_interval_pct, DARK)] {
                    chart
                        .draw_series(std::iter::once(Rectangle::new([(x - 0.15, cut(i[0])), (x + 0.15, cut(i[1]))], color.mix(a).filled())))
                        .map_err(draw_err)?;
                }
            } else {
                chart
                    .draw_series(std::iter::once(Polygon::new(funnel(|p| p.interval_pct), color.mix(LIGHT).filled())))
                    .map_err(draw_err)?;
                chart
                    .draw_series(std::iter::once(Polygon::new(funnel(|p| p.equivalence_interval_pct), color.mix(DARK).filled())))
                    .map_err(draw_err)?;
            }
            // The boundaries on top of the intervals: the band's edges and zero.
            for y in [band.0, band.1] {
                chart.draw_series(std::iter::once(PathElement::new(vec![(x0, y), (x1, y)], grey.stroke_width(2)))).map_err(draw_err)?;
            }
            chart.draw_series(std::iter::once(PathElement::new(vec![(x0, 0.0), (x1, 0.0)], INK.stroke_width(1)))).map_err(draw_err)?;
            let est: Vec<(f64, f64)> = m.course.iter().map(|p| (p.pairs as f64, cut(p.estimate_pct))).collect();
            chart.draw_series(std::iter::once(PathElement::new(est.clone(), INK.stroke_width(1)))).map_err(draw_err)?;
            chart.draw_series(est.iter().map(|p| Circle::new(*p, 3, INK.filled()))).map_err(draw_err)?;
            // Hover: each look's figures in words.
            for p in &m.course {
                let (px, top) = chart.backend_coord(&(p.pairs as f64, y1));
                let (_, bottom) = chart.backend_coord(&(p.pairs as f64, y0));
                tips.push(Tip {
                    x0: px - 6,
                    y0: top,
                    x1: px + 6,
                    y1: bottom,
                    text: format!(
                        "{} · {} after {} {unit}{}: {} (interval {} … {}; equivalence {} … {}; margin ±{})",
                        m.stage,
                        what,
                        p.pairs,
                        if p.pairs == 1 { "" } else { "s" },
                        fmt_pct(p.estimate_pct),
                        fmt_pct(p.interval_pct[0]),
                        fmt_pct(p.interval_pct[1]),
                        fmt_pct(p.equivalence_interval_pct[0]),
                        fmt_pct(p.equivalence_interval_pct[1]),
                        fmt_margin(p.margin_pct)
                    ),
                    href: None,
                });
            }
        }
        root.present().map_err(draw_err)?;
    }
    Ok(finish(buf, &title, &tips))
}

#[cfg(test)]
mod tests {
    use super::*;
    use judge::pipeline::aggregate::TrialSpec;
    use judge::pipeline::rows::StageRow;
    use judge::pipeline::{judge_sequential, ArmSpec, PipelineConfig, SequentialConfig};

    /// `pairs` pairs of a two-stage pipeline: "map" 20 % dearer in the treatment, "reduce" unchanged,
    /// each wobbling by about ±3 %.
    fn report(pairs: u32, max_pairs: Option<usize>) -> PipelineReport {
        let id = |tag: u32| format!("20261201-000000-{tag:08x}");
        let wobble = |tag: u32, s: usize| ((tag as f64 * 12.9898 + s as f64 * 78.233).sin() * 43758.5453).fract() * 2.0 - 1.0;
        let (mut rows, mut c, mut t) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..pairs {
            for (arm, tag) in [(0, i + 1), (1, 1000 + i)] {
                for (s, name) in ["map", "reduce"].iter().enumerate() {
                    let effect = if arm == 1 && s == 0 { 1.2 } else { 1.0 };
                    let cpu = 20.0 * effect * (1.0 + 0.03 * wobble(tag, s));
                    rows.push(StageRow::new(&id(tag), name, "END", cpu, cpu * 2.0, 1e5, 1e7, 1e8));
                }
                let spec = TrialSpec { execution_ids: vec![id(tag)], pair: Some(i), position: None };
                if arm == 0 {
                    c.push(spec)
                } else {
                    t.push(spec)
                }
            }
        }
        let arms = [ArmSpec { name: "treatment".into(), trials: t }];
        judge_sequential(&rows, &c, &arms, &PipelineConfig::default(), &SequentialConfig { max_pairs, ..Default::default() }).unwrap()
    }

    #[test]
    fn each_metric_gets_a_panel_of_its_looks_against_the_margin() {
        let r = report(6, Some(6));
        let svg = sequential_course(&r, ForestMetric::Cpu).unwrap();
        assert!(svg.contains("CPU change pair by pair: interval against the margin"), "{svg}");
        for words in ["interval: different once it clears 0", "equivalence interval: equivalent inside the band", "±margin"] {
            assert!(svg.contains(words), "legend {words}");
        }
        // A panel per CPU metric, named with its state; every look from the second pair has a tooltip.
        let q = r.sequential.as_ref().unwrap();
        for m in q.metrics.iter().filter(|m| m.metric == "cpu") {
            assert!(svg.contains(&format!("{}: {}", m.stage, state(m, q.pairs_used, "pair"))), "{}: {svg}", m.stage);
            for p in &m.course {
                let pairs = if p.pairs == 1 { "1 pair".to_string() } else { format!("{} pairs", p.pairs) };
                assert!(svg.contains(&format!("{} · CPU after {pairs}: ", m.stage)), "look {} of {}", p.pairs, m.stage);
            }
        }
        // Short axis labels and captions: no text with a number of more than a handful of digits.
        let texts: Vec<&str> = svg.split('<').filter_map(|tag| tag.split_once('>').map(|(_, text)| text)).collect();
        let long: Vec<&&str> = texts.iter().filter(|t| t.split(|c: char| !c.is_ascii_digit() && c != '.').any(|w| w.len() > 7)).collect();
        assert!(long.is_empty(), "a number nobody can read: {long:?}");
        // A fixed design has no course; elapsed has its own chart.
        assert!(sequential_course(&report(6, Some(6)), ForestMetric::Elapsed).unwrap().contains("Summed elapsed change pair by pair"));
        let mut fixed = r.clone();
        fixed.sequential = None;
        assert!(matches!(sequential_course(&fixed, ForestMetric::Cpu), Err(ChartError::Empty(_))));
    }

    #[test]
    fn undecided_metrics_come_first_and_the_axis_keeps_the_latest_interval() {
        let r = report(8, Some(8));
        let q = r.sequential.as_ref().unwrap();
        let map = q.metrics.iter().find(|m| m.stage == "map" && m.metric == "cpu").unwrap();
        assert_eq!(map.decision, Decision::Different, "{map:?}");
        let svg = sequential_course(&r, ForestMetric::Cpu).unwrap();
        let (reduce_at, map_at) = (svg.find("reduce: ").unwrap(), svg.find("map: higher, decided after").unwrap());
        if q.metrics.iter().any(|m| m.stage == "reduce" && m.metric == "cpu" && m.decision == Decision::Continue) {
            assert!(reduce_at < map_at, "the undecided panel is drawn first");
        }
        // The axis holds the latest interval and the band, and no room below −100 %.
        let last = map.course.last().unwrap();
        let (lo, hi) = axis(&map.course);
        assert!(hi >= last.interval_pct[1] && hi >= last.estimate_pct && hi >= 2.5 * last.margin_pct, "{hi}: {last:?}");
        assert!(lo <= band_floor(last.margin_pct) && lo >= -100.0, "{lo}");
        let huge = CoursePoint {
            pairs: 2,
            estimate_pct: 250.0,
            interval_pct: [80.0, 700.0],
            equivalence_interval_pct: [90.0, 600.0],
            margin_pct: 10.0,
        };
        assert_eq!(axis(&[huge]).1, MAX_REACH);
        assert!(axis(&[huge]).0 < band_floor(10.0) && axis(&[huge]).0 > -100.0);
    }
}
