//! A trend: one metric of one stage or cell over time, one point per judged experiment (its control
//! arm), one line per workload fingerprint. A later fingerprint starts a new series, drawn in its own
//! colour with a dashed rule where it begins, so a level change from a workload change is never read
//! as a regression. Every point links to its experiment.

use crate::bars::legend;
use crate::svg::{finish, Tip, INK};
use crate::{treatment_color, ChartError, CONTROL};
use plotters::prelude::*;

const FONT: &str = "sans-serif";
const DAY_MS: f64 = 86_400_000.0;

fn draw_err<E: std::fmt::Display>(e: E) -> ChartError {
    ChartError::Draw(e.to_string())
}

#[derive(Debug, Clone, PartialEq)]
pub struct TrendPoint {
    /// ms since the epoch.
    pub at: i64,
    pub value: f64,
    pub href: String,
    pub tip: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TrendSeries {
    /// The fingerprint in words (legend).
    pub label: String,
    pub points: Vec<TrendPoint>,
}

/// The band a trend draws around each series' level (the median of each stretch between change
/// points): ±`pct` %, the margin the verdicts hold this metric to, so a wobble inside it reads as noise.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendBand {
    pub pct: f64,
    /// Where it comes from, for the legend ("CPU margin", "WARN budget").
    pub what: String,
}

/// A change point to mark: where the new level starts, on which series, and its label (e.g. "+5.2 %").
#[derive(Debug, Clone, PartialEq)]
pub struct TrendChange {
    pub at: i64,
    pub series: usize,
    pub label: String,
}

/// The colour of the `i`-th series (first fingerprint blue, later ones in palette order).
pub fn series_color(i: usize) -> RGBColor {
    if i == 0 {
        CONTROL
    } else {
        treatment_color(i - 1)
    }
}

/// Tick steps a time axis may take, in seconds: every tick then falls on a round time.
const STEPS_S: &[i64] = &[
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400, 172_800, 604_800, 1_209_600, 2_592_000,
    7_776_000, 31_536_000,
];

/// The time axis' ticks (ms) and their labels: round steps, at most `max` of them, each label distinct —
/// the date when the step is a day or more, the day and minute when it is a minute or more, else the
/// time to the second.
fn time_ticks(x0: f64, x1: f64, max: usize) -> Vec<(f64, String)> {
    let span_s = ((x1 - x0) / 1000.0).max(1.0);
    let step = STEPS_S.iter().copied().find(|s| span_s / *s as f64 <= max as f64).unwrap_or(*STEPS_S.last().unwrap());
    let first = ((x0 / 1000.0) / step as f64).ceil() as i64 * step;
    let one_day = (x1 - x0) < DAY_MS
        && judge::units::utc_rfc3339((x0 / 1000.0) as i64)[..10] == judge::units::utc_rfc3339((x1 / 1000.0) as i64)[..10];
    (0..)
        .map(|k| first + k * step)
        .take_while(|t| (*t as f64) * 1000.0 <= x1)
        .map(|t| {
            let stamp = judge::units::utc_rfc3339(t);
            let label = if step >= 86_400 {
                stamp[..10].to_string()
            } else if step >= 60 && one_day {
                stamp[11..16].to_string()
            } else if step >= 60 {
                stamp[5..16].replace('T', " ")
            } else {
                stamp[11..19].to_string()
            };
            (t as f64 * 1000.0, label)
        })
        .collect()
}

pub fn trend_chart(
    title: &str,
    unit: &str,
    series: &[TrendSeries],
    changes: &[TrendChange],
    band: Option<&TrendBand>,
) -> Result<String, ChartError> {
    let all: Vec<&TrendPoint> = series.iter().flat_map(|s| &s.points).filter(|p| p.value.is_finite()).collect();
    if all.is_empty() {
        return Err(ChartError::Empty(format!("{title}: no judged experiment has this metric yet")));
    }
    let (t0, t1) = all.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.at as f64), b.max(p.at as f64)));
    let pad = ((t1 - t0) * 0.04).max(60_000.0);
    let (x0, x1) = (t0 - pad, t1 + pad);
    // Each series' stretches between its change points, with their level (median).
    let stretches: Vec<(usize, f64, f64, f64)> = band
        .map(|_| {
            series
                .iter()
                .enumerate()
                .flat_map(|(i, s)| {
                    let pts: Vec<&TrendPoint> = s.points.iter().filter(|p| p.value.is_finite()).collect();
                    let mut cuts: Vec<i64> = changes.iter().filter(|c| c.series == i).map(|c| c.at).collect();
                    cuts.sort_unstable();
                    let mut out = Vec::new();
                    let mut start = 0;
                    for k in 1..=pts.len() {
                        if k == pts.len() || cuts.contains(&pts[k].at) {
                            let values: Vec<f64> = pts[start..k].iter().map(|p| p.value).collect();
                            if let Some(level) = judge::stats::median(&values) {
                                out.push((i, pts[start].at as f64, pts[k - 1].at as f64, level));
                            }
                            start = k;
                        }
                    }
                    out
                })
                .collect()
        })
        .unwrap_or_default();
    let band_reach = |level: f64| band.map_or((level, level), |b| (level * (1.0 - b.pct / 100.0), level * (1.0 + b.pct / 100.0)));
    let (v0, v1) = all
        .iter()
        .map(|p| p.value)
        .chain(stretches.iter().flat_map(|s| {
            let (lo, hi) = band_reach(s.3);
            [lo, hi]
        }))
        .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    let span = (v1 - v0).max(v1.abs() * 0.05).max(1e-9);
    let y0 = if v0 >= 0.0 { (v0 - span * 0.15).max(0.0) } else { v0 - span * 0.15 };
    let y1 = v1 + span * 0.15;
    let mut tips = Vec::new();
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (900, 420)).into_drawing_area();
        root.draw(&Text::new(title, (10, 8), (FONT, 19).into_font().style(FontStyle::Bold).color(&INK))).map_err(draw_err)?;
        let mut entries: Vec<(String, RGBColor, bool)> =
            series.iter().enumerate().map(|(i, s)| (crate::bars::clip(&s.label, 60), series_color(i), true)).collect();
        if let Some(b) = band {
            entries.push((
                format!("{} ±{} around the level", b.what, judge::pipeline::report::fmt_margin(b.pct)),
                RGBColor(150, 150, 150),
                true,
            ));
        }
        legend(&root, &entries)?;
        let mut chart = ChartBuilder::on(&root)
            .margin_top(56)
            .margin_right(24)
            .x_label_area_size(40)
            .y_label_area_size(76)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_label_formatter(&|v| crate::fmt_num(*v))
            .y_desc(unit)
            .axis_style(INK)
            .label_style((FONT, 13).into_font().color(&INK))
            .axis_desc_style((FONT, 14).into_font().color(&INK))
            .light_line_style(RGBColor(128, 128, 128).mix(0.12))
            .bold_line_style(RGBColor(128, 128, 128).mix(0.25))
            .draw()
            .map_err(draw_err)?;
        // The time axis: round ticks, each labelled once (plotters' own would repeat "11-29 07:22").
        let ticks = time_ticks(x0, x1, 6);
        chart
            .draw_series(ticks.iter().map(|(t, _)| PathElement::new(vec![(*t, y0), (*t, y1)], RGBColor(128, 128, 128).mix(0.18))))
            .map_err(draw_err)?;
        let tick_font = (FONT, 13).into_font().color(&INK).pos(plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Center,
            plotters::style::text_anchor::VPos::Top,
        ));
        for (t, label) in &ticks {
            let (px, py) = chart.backend_coord(&(*t, y0));
            root.draw(&PathElement::new(vec![(px, py), (px, py + 5)], INK)).map_err(draw_err)?;
            root.draw(&Text::new(label.clone(), (px, py + 8), tick_font.clone())).map_err(draw_err)?;
        }
        let band_pad = (x1 - x0) * 0.01;
        for &(i, from, to, level) in &stretches {
            let (lo, hi) = band_reach(level);
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(from - band_pad, lo), (to + band_pad, hi)],
                    series_color(i).mix(0.16).filled(),
                )))
                .map_err(draw_err)?;
        }
        for (i, s) in series.iter().enumerate() {
            let color = series_color(i);
            let pts: Vec<(f64, f64)> = s.points.iter().filter(|p| p.value.is_finite()).map(|p| (p.at as f64, p.value)).collect();
            if let (true, Some(first)) = (i > 0, pts.first()) {
                rule(&mut chart, first.0, (y0, y1), color, 1)?;
                let (px, _) = chart.backend_coord(first);
                root.draw(&Text::new("new fingerprint", (px + 4, 60), (FONT, 12).into_font().color(&color))).map_err(draw_err)?;
            }
            chart.draw_series(std::iter::once(PathElement::new(pts.clone(), color.stroke_width(2)))).map_err(draw_err)?;
            chart.draw_series(pts.iter().map(|p| Circle::new(*p, 4, color.filled()))).map_err(draw_err)?;
            for p in s.points.iter().filter(|p| p.value.is_finite()) {
                let (px, py) = chart.backend_coord(&(p.at as f64, p.value));
                tips.push(Tip { x0: px - 6, y0: py - 6, x1: px + 6, y1: py + 6, text: p.tip.clone(), href: Some(p.href.clone()) });
            }
        }
        for c in changes {
            let color = series_color(c.series);
            rule(&mut chart, c.at as f64, (y0, y1), color, 2)?;
            let (px, py) = chart.backend_coord(&(c.at as f64, y1));
            root.draw(&Text::new(
                format!("change {}", c.label),
                (px + 4, py + 14),
                (FONT, 13).into_font().style(FontStyle::Bold).color(&color),
            ))
            .map_err(draw_err)?;
            tips.push(Tip {
                x0: px - 4,
                y0: py,
                x1: px + 4,
                y1: chart.backend_coord(&(c.at as f64, y0)).1,
                text: format!("change point: {}", c.label),
                href: None,
            });
        }
        root.present().map_err(draw_err)?;
    }
    Ok(finish(buf, title, &tips))
}

/// A dashed vertical rule at `x` across the plot.
fn rule<DB: DrawingBackend>(
    chart: &mut ChartContext<DB, Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>>,
    x: f64,
    (y0, y1): (f64, f64),
    color: RGBColor,
    width: u32,
) -> Result<(), ChartError> {
    let dashes: Vec<f64> = (0..=40).map(|k| y0 + (y1 - y0) * k as f64 / 40.0).collect();
    chart
        .draw_series(
            dashes.chunks(2).filter(|c| c.len() == 2).map(|c| PathElement::new(vec![(x, c[0]), (x, c[1])], color.stroke_width(width))),
        )
        .map_err(draw_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trend_links_every_point_and_marks_a_new_fingerprint() {
        let point = |day: i64, value: f64, id: i64| TrendPoint {
            at: day * 86_400_000,
            value,
            href: format!("/experiments/{id}"),
            tip: format!("#{id}: {value}"),
        };
        let series = vec![
            TrendSeries { label: "workers=2".into(), points: vec![point(20_000, 10.0, 1), point(20_005, 11.0, 2)] },
            TrendSeries { label: "workers=4".into(), points: vec![point(20_010, 6.0, 3)] },
        ];
        let change = TrendChange { at: 20_005 * 86_400_000, series: 0, label: "+10.0 % (10 → 11)".into() };
        let band = TrendBand { pct: 2.0, what: "CPU margin".into() };
        let svg = trend_chart("CPU-seconds of tokenize", "CPU-s", &series, std::slice::from_ref(&change), Some(&band)).unwrap();
        assert!(svg.contains("CPU margin ±2 % around the level"), "the band is in the legend");
        // One band per stretch between change points, per series: 10 | 11 on the first, 6 on the second.
        let bands = svg.matches("fill-opacity=\"0.16\"").count().max(svg.matches("opacity=\"0.16\"").count());
        assert_eq!(bands, 3, "{svg}");
        assert!(svg.contains("change +10.0 % (10 → 11)"), "the change point is marked with its size");
        for id in 1..=3 {
            assert!(svg.contains(&format!("<a href=\"/experiments/{id}\">")), "point {id} links to its experiment");
        }
        assert!(svg.contains("new fingerprint") && svg.contains("workers=4") && svg.contains("2024-10-04"), "{svg}");
        assert!(matches!(trend_chart("x", "s", &[], &[], None), Err(ChartError::Empty(_))));
        // Ticks fall on round times and never repeat a label, however short the span.
        let day = 20_000.0 * DAY_MS;
        for (from, to, first) in [
            (day + 3_723_000.0, day + 3_723_000.0 + 40_000.0, "01:02:10"),
            (day, day + 5.0 * 3_600_000.0, "00:00"),
            (day - 3_600_000.0, day + 3_600_000.0, "10-03 23:00"),
            (day, day + 3.2 * DAY_MS, "2024-10-04"),
        ] {
            let ticks = time_ticks(from, to, 6);
            assert!((2..=6).contains(&ticks.len()), "{ticks:?}");
            assert_eq!(ticks[0].1, first, "{ticks:?}");
            let mut labels: Vec<&String> = ticks.iter().map(|t| &t.1).collect();
            labels.dedup();
            assert_eq!(labels.len(), ticks.len(), "no label repeats: {ticks:?}");
        }
    }
}
