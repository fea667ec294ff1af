//! A horizontal grouped bar chart: one group per stage or cell, one bar per arm, with optional
//! interval whiskers, a shaded noise band, a limit line (worker RAM) and FAIL/WARN marks in words.
//! Horizontal, so long stage and cell names stay readable and fifty stages still fit.

use crate::svg::{finish, Tip, INK};
use crate::{ChartError, Scale, ALERT, CAUTION};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// A warp row over the fail budget.
    Fail,
    /// A warp row over the warn budget.
    Warn,
    /// A warp row without evidence.
    Missing,
    /// A pipeline stage judged a regression.
    Regression,
    /// A value above the chart's limit line (a stage's peak memory above the worker's RAM).
    OverLimit,
}

impl Mark {
    fn text_and_color(self) -> (&'static str, RGBColor) {
        match self {
            Mark::Fail => ("✖ FAIL", ALERT),
            Mark::Warn => ("▲ WARN", CAUTION),
            Mark::Missing => ("? MISSING", ALERT),
            Mark::Regression => ("✖ regression", ALERT),
            Mark::OverLimit => ("▲ above RAM", ALERT),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// None: the arm has no value here (drawn as the word "missing").
    pub value: Option<f64>,
    /// An interval around the value, in the value's unit.
    pub whisker: Option<(f64, f64)>,
    pub tip: String,
    /// The observations behind the value (a warp cell's rounds), drawn as dots on the bar: filled for
    /// the arm's first phase, hollow for its second (ABBA).
    pub dots: Vec<Dot>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dot {
    pub value: f64,
    pub hollow: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub label: String,
    /// One bar per series, in series order.
    pub bars: Vec<Bar>,
    /// The band within which a change is noise, in the value's unit.
    pub band: Option<(f64, f64)>,
    pub mark: Option<Mark>,
}

#[derive(Debug, Clone)]
pub struct BarChart {
    pub title: String,
    /// The value axis' caption with its unit.
    pub axis: String,
    pub series: Vec<(String, RGBColor)>,
    pub groups: Vec<Group>,
    /// A vertical limit line and its label (e.g. the worker's RAM).
    pub limit: Option<(f64, String)>,
    /// Legend entry of the noise band, when groups carry one.
    pub band_label: Option<String>,
    /// Formats an axis value.
    pub format: fn(f64) -> String,
}

const WIDTH: u32 = 780;
const TOP: u32 = 56;
const LEFT: u32 = 200;
const RIGHT: u32 = 96;
const BOTTOM: u32 = 44;
const FONT: &str = "sans-serif";

fn draw_err<E: std::fmt::Display>(e: E) -> ChartError {
    ChartError::Draw(e.to_string())
}

/// "stage0-Map → Scatter → …" cut to fit the label column; the tooltip keeps the full name.
pub(crate) fn clip(label: &str, max: usize) -> String {
    if label.chars().count() <= max {
        label.to_string()
    } else {
        label.chars().take(max - 1).collect::<String>() + "…"
    }
}

/// Draws the legend across the top, after the title; returns nothing but ink.
pub(crate) fn legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    entries: &[(String, RGBColor, bool)],
) -> Result<(), ChartError> {
    let mut x = 10;
    for (name, color, filled) in entries {
        let style = if *filled { color.filled() } else { color.stroke_width(2) };
        root.draw(&Rectangle::new([(x, 31), (x + 12, 43)], style)).map_err(draw_err)?;
        root.draw(&Text::new(name.clone(), (x + 17, 30), (FONT, 15).into_font().color(&INK))).map_err(draw_err)?;
        x += 17 + (name.chars().count() as i32) * 8 + 20;
    }
    Ok(())
}

impl BarChart {
    pub fn render(&self, scale: Scale) -> Result<String, ChartError> {
        if self.groups.is_empty() {
            return Err(ChartError::Empty(format!("{}: no stage or cell has a value", self.title)));
        }
        let mut values: Vec<f64> = Vec::new();
        for g in &self.groups {
            for b in &g.bars {
                values.extend(b.value);
                values.extend(b.dots.iter().map(|d| d.value));
                values.extend(b.whisker.iter().flat_map(|(l, h)| [*l, *h]));
            }
            values.extend(g.band.iter().flat_map(|(l, h)| [*l, *h]));
        }
        values.extend(self.limit.as_ref().map(|(v, _)| *v));
        let max = values.iter().copied().filter(|v| v.is_finite()).fold(0.0_f64, f64::max);
        let min_pos = values.iter().copied().filter(|v| v.is_finite() && *v > 0.0).fold(f64::INFINITY, f64::min);
        let (lo, hi) = match scale {
            Scale::Linear => (0.0, if max > 0.0 { max * 1.08 } else { 1.0 }),
            Scale::Log if min_pos.is_finite() => {
                let (l, h) = (min_pos.log10().floor(), max.log10().ceil());
                (l, if h > l { h } else { l + 1.0 })
            }
            Scale::Log => (0.0, 1.0),
        };
        let t = move |v: f64| match scale {
            Scale::Linear => v,
            Scale::Log => v.max(10f64.powf(lo)).log10(),
        };
        let per_group = self.series.len().max(1);
        let row_h = (per_group as u32) * 12 + 12;
        let n = self.groups.len();
        let height = TOP + n as u32 * row_h + BOTTOM;
        let format = self.format;
        let mut tips = Vec::new();
        let mut buf = String::new();
        {
            let root = SVGBackend::with_string(&mut buf, (WIDTH, height)).into_drawing_area();
            root.draw(&Text::new(self.title.clone(), (10, 8), (FONT, 19).into_font().style(FontStyle::Bold).color(&INK)))
                .map_err(draw_err)?;
            let mut entries: Vec<(String, RGBColor, bool)> = self.series.iter().map(|(n, c)| (n.clone(), *c, true)).collect();
            if let Some(l) = &self.band_label {
                entries.push((l.clone(), RGBColor(150, 150, 150), true));
            }
            if let Some((_, l)) = &self.limit {
                entries.push((l.clone(), ALERT, false));
            }
            legend(&root, &entries)?;
            let mut chart = ChartBuilder::on(&root)
                .margin_top(TOP)
                .margin_right(RIGHT)
                .x_label_area_size(BOTTOM)
                .y_label_area_size(LEFT)
                .build_cartesian_2d(lo..hi, 0.0..n as f64)
                .map_err(draw_err)?;
            let x_fmt = move |v: &f64| match scale {
                Scale::Linear => format(*v),
                Scale::Log => format(10f64.powf(*v)),
            };
            chart
                .configure_mesh()
                .disable_y_mesh()
                .y_labels(0)
                .x_labels(if scale == Scale::Log { (hi - lo) as usize + 1 } else { 8 })
                .x_label_formatter(&x_fmt)
                .x_desc(self.axis.clone())
                .axis_style(INK)
                .label_style((FONT, 14).into_font().color(&INK))
                .axis_desc_style((FONT, 15).into_font().color(&INK))
                .light_line_style(RGBColor(128, 128, 128).mix(0.12))
                .bold_line_style(RGBColor(128, 128, 128).mix(0.25))
                .draw()
                .map_err(draw_err)?;
            let pad = 0.14;
            let h = (1.0 - 2.0 * pad) / per_group as f64;
            for (i, g) in self.groups.iter().enumerate() {
                let top = (n - i) as f64;
                let mid = top - 0.5;
                if let Some((b0, b1)) = g.band {
                    chart
                        .draw_series(std::iter::once(Rectangle::new(
                            [(t(b0), top - 0.04), (t(b1), top - 0.96)],
                            RGBColor(150, 150, 150).mix(0.28).filled(),
                        )))
                        .map_err(draw_err)?;
                }
                for (j, (bar, (_, color))) in g.bars.iter().zip(&self.series).enumerate() {
                    let (ya, yb) = (top - pad - j as f64 * h, top - pad - (j + 1) as f64 * h + 0.02);
                    let ym = (ya + yb) / 2.0;
                    let Some(v) = bar.value.filter(|v| v.is_finite()) else {
                        let (px, py) = chart.backend_coord(&(lo, ym));
                        root.draw(&Text::new(
                            "missing",
                            (px + 4, py),
                            (FONT, 13).into_font().color(&ALERT).pos(Pos::new(HPos::Left, VPos::Center)),
                        ))
                        .map_err(draw_err)?;
                        continue;
                    };
                    chart.draw_series(std::iter::once(Rectangle::new([(lo, ya), (t(v), yb)], color.filled()))).map_err(draw_err)?;
                    if let Some((wl, wh)) = bar.whisker {
                        let ink = INK.stroke_width(1);
                        let tick = (ya - yb) * 0.35;
                        chart
                            .draw_series([
                                PathElement::new(vec![(t(wl), ym), (t(wh), ym)], ink),
                                PathElement::new(vec![(t(wl), ym - tick), (t(wl), ym + tick)], ink),
                                PathElement::new(vec![(t(wh), ym - tick), (t(wh), ym + tick)], ink),
                            ])
                            .map_err(draw_err)?;
                    }
                    for dot in bar.dots.iter().filter(|d| d.value.is_finite()) {
                        let at = chart.backend_coord(&(t(dot.value), ym));
                        let style = if dot.hollow { INK.stroke_width(1) } else { INK.filled() };
                        root.draw(&Circle::new(at, 3, style)).map_err(draw_err)?;
                    }
                    let (x0, y0) = chart.backend_coord(&(lo, ya));
                    let (x1, y1) = chart.backend_coord(&(t(v), yb));
                    tips.push(Tip { x0, y0, x1, y1, text: bar.tip.clone(), href: None });
                }
                let (lx, ly) = chart.backend_coord(&(lo, mid));
                root.draw(&Text::new(
                    clip(&g.label, 28),
                    (lx - 8, ly),
                    (FONT, 14).into_font().color(&INK).pos(Pos::new(HPos::Right, VPos::Center)),
                ))
                .map_err(draw_err)?;
                tips.push(Tip {
                    x0: 4,
                    y0: ly - (row_h as i32) / 2 + 2,
                    x1: lx - 4,
                    y1: ly + (row_h as i32) / 2 - 2,
                    text: g.label.clone(),
                    href: None,
                });
                if let Some(mark) = g.mark {
                    let (text, color) = mark.text_and_color();
                    let (rx, ry) = chart.backend_coord(&(hi, mid));
                    root.draw(&Text::new(
                        text,
                        (rx + 6, ry),
                        (FONT, 14).into_font().style(FontStyle::Bold).color(&color).pos(Pos::new(HPos::Left, VPos::Center)),
                    ))
                    .map_err(draw_err)?;
                }
            }
            if let Some((v, label)) = &self.limit {
                chart
                    .draw_series(std::iter::once(PathElement::new(vec![(t(*v), 0.0), (t(*v), n as f64)], ALERT.stroke_width(2))))
                    .map_err(draw_err)?;
                let (x0, y0) = chart.backend_coord(&(t(*v), n as f64));
                let (_, y1) = chart.backend_coord(&(t(*v), 0.0));
                tips.push(Tip { x0: x0 - 3, y0, x1: x0 + 3, y1, text: format!("{label}: {}", format(*v)), href: None });
            }
            root.present().map_err(draw_err)?;
        }
        Ok(finish(buf, &self.title, &tips))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CONTROL, TREATMENTS};

    fn chart(groups: Vec<Group>) -> BarChart {
        BarChart {
            title: "CPU per stage".into(),
            axis: "CPU-seconds".into(),
            series: vec![("control".into(), CONTROL), ("treatment".into(), TREATMENTS[0])],
            groups,
            limit: Some((5.0, "worker RAM".into())),
            band_label: Some("noise band".into()),
            format: crate::fmt_num,
        }
    }

    fn bar(v: Option<f64>, tip: &str) -> Bar {
        Bar { value: v, whisker: v.map(|v| (v * 0.9, v * 1.1)), tip: tip.into(), dots: vec![] }
    }

    #[test]
    fn bars_whiskers_marks_and_tips_are_drawn() {
        let svg = chart(vec![
            Group {
                label: "stage0-Map → Scatter".into(),
                bars: vec![bar(Some(1.0), "c0"), bar(Some(2.0), "t0")],
                band: Some((0.9, 1.1)),
                mark: Some(Mark::Fail),
            },
            Group { label: "stage1".into(), bars: vec![bar(Some(3.0), "c1"), bar(None, "t1")], band: None, mark: Some(Mark::Warn) },
        ])
        .render(Scale::Linear)
        .unwrap();
        assert!(svg.contains("<title>CPU per stage</title>"));
        assert!(svg.contains("stage0-Map → Scatter"), "labels are drawn");
        assert!(svg.contains("✖ FAIL") && svg.contains("▲ WARN"), "marks are words, not colour alone");
        assert!(svg.contains("missing"), "a missing value is said");
        for tip in ["c0", "t0", "c1", "worker RAM: 5.00"] {
            assert!(svg.contains(&format!("<title>{tip}</title>")), "tooltip {tip}");
        }
        assert!(!svg.contains("<title>t1</title>"), "no hover area for a missing bar");
        assert!(svg.contains("#0072B2") || svg.contains("#0072b2"), "control is blue");
        assert!(svg.contains("currentColor"), "ink follows the theme");
    }

    #[test]
    fn log_scale_labels_decades_and_empty_is_an_error() {
        let svg = chart(vec![Group { label: "s".into(), bars: vec![bar(Some(0.02), "a"), bar(Some(300.0), "b")], band: None, mark: None }])
            .render(Scale::Log)
            .unwrap();
        assert!(svg.contains("\n0.010\n") && svg.contains("\n1000\n"), "decade labels from 0.01 to 1000: {svg}");
        assert!(matches!(chart(vec![]).render(Scale::Linear), Err(ChartError::Empty(_))));
    }
}
