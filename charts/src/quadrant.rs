//! The CPU-vs-elapsed quadrant: each stage of each treatment as a point, CPU change across, summed
//! elapsed change up; the shaded box is the margin both changes are held to (the noise threshold in
//! method 1). A stage with nothing measurable to place (under both floors, or failed in the treatment)
//! is left out and counted under the plot; a point beyond the axis is pinned to its edge as an arrow.
//! Labels are placed where they overlap no other label or point; a stage whose name finds no free
//! place gets a number, and the numbers are explained in a key under the plot.

use crate::bars::{clip, legend};
use crate::svg::{finish, Tip, INK};
use crate::{treatment_color, ChartError, Scale};
use judge::pipeline::report::{fmt_pct, PipelineReport};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const FONT: &str = "sans-serif";
const WIDTH: u32 = 780;
const PLOT_HEIGHT: u32 = 520;
/// A key row's height, and the label font's rough advance per character (13 px sans-serif).
const KEY_ROW: u32 = 18;
const CHAR_W: f64 = 7.0;
const LABEL_H: i32 = 15;
/// The axis never reaches further than this (%): a stage beyond it is pinned to the edge.
const MAX_REACH: f64 = 400.0;

fn draw_err<E: std::fmt::Display>(e: E) -> ChartError {
    ChartError::Draw(e.to_string())
}

struct Point<'a> {
    arm: usize,
    stage: &'a str,
    x: f64,
    y: f64,
    tip: String,
}

/// A placed label's box in pixels: [x0, y0, x1, y1].
type Rect = [i32; 4];

fn overlaps(a: &Rect, b: &Rect) -> bool {
    a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]
}

/// Where a label of `w` × LABEL_H pixels could go around a point at (px, py), nearest first: right,
/// left, above, below, then the diagonals, then the same farther out. Each is (box, anchor, h-pos).
fn candidates(px: i32, py: i32, w: i32, reach: &[i32]) -> Vec<(Rect, (i32, i32), HPos)> {
    let h = LABEL_H;
    let mut out = Vec::new();
    for &d in reach {
        for (dx, dy, hpos) in [
            (d, 0, HPos::Left),
            (-d, 0, HPos::Right),
            (0, -d - 4, HPos::Center),
            (0, d + 4, HPos::Center),
            (d - 2, -d, HPos::Left),
            (-d + 2, -d, HPos::Right),
            (d - 2, d, HPos::Left),
            (-d + 2, d, HPos::Right),
        ] {
            let (ax, ay) = (px + dx, py + dy);
            let x0 = match hpos {
                HPos::Left => ax,
                HPos::Right => ax - w,
                HPos::Center => ax - w / 2,
            };
            out.push(([x0, ay - h / 2, x0 + w, ay + h / 2], (ax, ay), hpos));
        }
    }
    out
}

pub fn pipeline_quadrant(report: &PipelineReport, _scale: Scale) -> Result<String, ChartError> {
    let mut left_out = 0usize;
    let mut points: Vec<Point> = Vec::new();
    for (k, arm) in report.treatments.iter().enumerate() {
        for s in &arm.stages {
            let placeable = s.missing_treatment().is_none() && !(s.cpu_below_floor && s.elapsed_below_floor);
            if !placeable || !s.cpu_change_pct.is_finite() || !s.elapsed_change_pct.is_finite() {
                left_out += 1;
                continue;
            }
            let floor = |below: bool| if below { " (below its floor)" } else { "" };
            let tip = format!(
                "{}\n{}: CPU {}{}, summed elapsed {}{} — {}",
                s.stage,
                arm.name,
                fmt_pct(s.cpu_change_pct),
                floor(s.cpu_below_floor),
                fmt_pct(s.elapsed_change_pct),
                floor(s.elapsed_below_floor),
                s.verdict.as_str()
            );
            points.push(Point { arm: k, stage: &s.stage, x: s.cpu_change_pct, y: s.elapsed_change_pct, tip });
        }
    }
    if points.is_empty() {
        return Err(ChartError::Empty("no stage has both a CPU and an elapsed change to place".into()));
    }
    let (cpu_th, el_th) = (report.thresholds.cpu_pct, report.thresholds.elapsed_pct);
    // Each axis reaches past its farthest point, and shows its margin whole unless the margin dwarfs
    // the points (a ±25 % elapsed margin around ±1 % changes): then the shaded box is cut at the edge,
    // and the points spread out instead of huddling on one line.
    let reach_of = |values: &mut dyn Iterator<Item = f64>, margin: f64| {
        let far = values.fold(0.0, f64::max);
        (far * 1.25).max((margin * 1.1).min((far * 3.0).max(1.0))).clamp(1.0, MAX_REACH)
    };
    let reach_x = reach_of(&mut points.iter().map(|p| p.x.abs()), cpu_th);
    let reach_y = reach_of(&mut points.iter().map(|p| p.y.abs()), el_th);
    let title = "CPU change against elapsed change, per stage";

    // Placement first (in pixels of the plot as it will be drawn), so the key's height is known.
    let mut probe = String::new();
    let (pixels, plot_box) = {
        let root = SVGBackend::with_string(&mut probe, (WIDTH, PLOT_HEIGHT)).into_drawing_area();
        let chart = build(&root, reach_x, reach_y)?;
        let px: Vec<(i32, i32)> =
            points.iter().map(|p| chart.backend_coord(&(p.x.clamp(-reach_x, reach_x), p.y.clamp(-reach_y, reach_y)))).collect();
        let (xr, yr) = (chart.plotting_area().get_pixel_range().0, chart.plotting_area().get_pixel_range().1);
        (px, [xr.start, yr.start, xr.end, yr.end])
    };
    let mut taken: Vec<Rect> = pixels.iter().map(|&(x, y)| [x - 6, y - 6, x + 6, y + 6]).collect();
    // Corner captions occupy their corners.
    taken.push([plot_box[0], plot_box[1], plot_box[0] + 120, plot_box[1] + 22]);
    taken.push([plot_box[2] - 120, plot_box[1], plot_box[2], plot_box[1] + 22]);
    taken.push([plot_box[0], plot_box[3] - 30, plot_box[0] + 120, plot_box[3]]);
    taken.push([plot_box[2] - 120, plot_box[3] - 30, plot_box[2], plot_box[3]]);
    let inside = |r: &Rect| r[0] >= plot_box[0] && r[2] <= plot_box[2] && r[1] >= plot_box[1] && r[3] <= plot_box[3];
    // Labels go in order of crowding: a point far from the others is easy, so the crowded ones pick first.
    let mut order: Vec<usize> = (0..points.len()).collect();
    let crowd = |i: usize| pixels.iter().filter(|q| (q.0 - pixels[i].0).pow(2) + (q.1 - pixels[i].1).pow(2) < 60 * 60).count();
    order.sort_by_key(|&i| std::cmp::Reverse(crowd(i)));
    type Label = (String, (i32, i32), HPos);
    let mut labels: Vec<Option<Label>> = vec![None; points.len()];
    let mut numbered: Vec<usize> = Vec::new();
    // A number placed away from its point is tied to it by a thin line.
    let mut leaders: Vec<((i32, i32), (i32, i32))> = Vec::new();
    for &i in &order {
        let name = clip(points[i].stage, 24);
        let w = (name.chars().count() as f64 * CHAR_W).ceil() as i32;
        let (x, y) = pixels[i];
        if let Some((r, at, h)) =
            candidates(x, y, w, &[8, 20]).into_iter().find(|(r, ..)| inside(r) && !taken.iter().any(|t| overlaps(t, r)))
        {
            taken.push(r);
            labels[i] = Some((name, at, h));
        } else {
            numbered.push(i);
        }
    }
    // A point whose name did not fit gets a number, placed the same way (or on top of it, at worst).
    numbered.sort();
    for (n, &i) in numbered.iter().enumerate() {
        let text = (n + 1).to_string();
        let w = (text.len() as f64 * CHAR_W).ceil() as i32 + 2;
        let (x, y) = pixels[i];
        let all = candidates(x, y, w, &[8, 20, 32, 44, 56]);
        let &(r, at, h) = all.iter().find(|(r, ..)| inside(r) && !taken.iter().any(|t| overlaps(t, r))).unwrap_or(&all[0]);
        taken.push(r);
        if (at.0 - x).abs().max((at.1 - y).abs()) >= 30 {
            leaders.push(((x, y), (r[0] + (r[2] - r[0]) / 2, r[1] + (r[3] - r[1]) / 2)));
        }
        labels[i] = Some((text, at, h));
    }
    let key_rows = numbered.len() + usize::from(left_out > 0);
    let height = PLOT_HEIGHT + if key_rows > 0 { 8 + KEY_ROW * key_rows as u32 } else { 0 };

    let mut tips = Vec::new();
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (WIDTH, height)).into_drawing_area();
        root.draw(&Text::new(title, (10, 8), (FONT, 19).into_font().style(FontStyle::Bold).color(&INK))).map_err(draw_err)?;
        let mut entries: Vec<(String, RGBColor, bool)> =
            report.treatments.iter().enumerate().map(|(k, a)| (a.name.clone(), treatment_color(k), true)).collect();
        let what = if report.method.is_some() { "margin" } else { "noise" };
        entries.push((format!("{what}: ±{} % CPU, ±{} % elapsed", cpu_th, el_th), RGBColor(150, 150, 150), true));
        legend(&root, &entries)?;
        let (plot, key) = root.split_vertically(PLOT_HEIGHT);
        let mut chart = build(&plot, reach_x, reach_y)?;
        chart
            .configure_mesh()
            .x_desc("CPU-seconds change against control (%)")
            .y_desc("summed elapsed change (%)")
            .x_label_formatter(&|v| tick(*v, reach_x))
            .y_label_formatter(&|v| tick(*v, reach_y))
            .axis_style(INK)
            .label_style((FONT, 14).into_font().color(&INK))
            .axis_desc_style((FONT, 15).into_font().color(&INK))
            .light_line_style(RGBColor(128, 128, 128).mix(0.12))
            .bold_line_style(RGBColor(128, 128, 128).mix(0.25))
            .draw()
            .map_err(draw_err)?;
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(-cpu_th.min(reach_x), -el_th.min(reach_y)), (cpu_th.min(reach_x), el_th.min(reach_y))],
                RGBColor(150, 150, 150).mix(0.28).filled(),
            )))
            .map_err(draw_err)?;
        chart
            .draw_series([
                PathElement::new(vec![(-reach_x, 0.0), (reach_x, 0.0)], INK.mix(0.6).stroke_width(1)),
                PathElement::new(vec![(0.0, -reach_y), (0.0, reach_y)], INK.mix(0.6).stroke_width(1)),
            ])
            .map_err(draw_err)?;
        let corner = (FONT, 14).into_font().color(&INK.mix(0.7));
        for (x, y, text, h) in [
            (-reach_x * 0.96, reach_y * 0.94, "cheaper, slower", HPos::Left),
            (reach_x * 0.96, reach_y * 0.94, "costlier, slower", HPos::Right),
            (-reach_x * 0.96, -reach_y * 0.90, "cheaper, faster", HPos::Left),
            (reach_x * 0.96, -reach_y * 0.90, "costlier, faster", HPos::Right),
        ] {
            let p = chart.backend_coord(&(x, y));
            plot.draw(&Text::new(text, p, corner.pos(Pos::new(h, VPos::Center)))).map_err(draw_err)?;
        }
        for (p, &(px, py)) in points.iter().zip(&pixels) {
            let color = treatment_color(p.arm);
            let pinned = p.x.abs() > reach_x || p.y.abs() > reach_y;
            if pinned {
                // Beyond the axis: an arrowhead at the edge, pointing the way the point lies.
                let (dx, dy) =
                    (p.x.signum() * f64::from(u8::from(p.x.abs() > reach_x)), -p.y.signum() * f64::from(u8::from(p.y.abs() > reach_y)));
                let len = (dx * dx + dy * dy).sqrt().max(1e-9);
                let (ux, uy) = (dx / len, dy / len);
                let tip_at = (px + (ux * 6.0) as i32, py + (uy * 6.0) as i32);
                let back = |s: f64| (px - (ux * 6.0 + uy * s) as i32, py - (uy * 6.0 - ux * s) as i32);
                plot.draw(&Polygon::new(vec![tip_at, back(6.0), back(-6.0)], color.filled())).map_err(draw_err)?;
            } else {
                plot.draw(&Circle::new((px, py), 5, color.filled())).map_err(draw_err)?;
            }
            tips.push(Tip { x0: px - 6, y0: py - 6, x1: px + 6, y1: py + 6, text: p.tip.clone(), href: None });
        }
        for (from, to) in &leaders {
            plot.draw(&PathElement::new(vec![*from, *to], INK.mix(0.35).stroke_width(1))).map_err(draw_err)?;
        }
        for (at, text, h) in labels.iter().flatten().map(|(t, at, h)| (*at, t, *h)) {
            plot.draw(&Text::new(text.clone(), at, (FONT, 13).into_font().color(&INK).pos(Pos::new(h, VPos::Center)))).map_err(draw_err)?;
        }
        let key_font = (FONT, 13).into_font().color(&INK);
        let mut y = 8;
        for (n, &i) in numbered.iter().enumerate() {
            let p = &points[i];
            let text = format!("{}  {} · {}", n + 1, clip(p.stage, 60), report.treatments[p.arm].name);
            key.draw(&Text::new(text, (16, y), key_font.clone())).map_err(draw_err)?;
            y += KEY_ROW as i32;
        }
        if left_out > 0 {
            let what = if left_out == 1 { "1 stage is" } else { "stages are" };
            let text = if left_out == 1 {
                format!("{what} not drawn: under both floors or failed in the treatment (see the stage table)")
            } else {
                format!("{left_out} {what} not drawn: under both floors or failed in the treatment (see the stage table)")
            };
            key.draw(&Text::new(text, (16, y), key_font.color(&INK.mix(0.7)))).map_err(draw_err)?;
        }
        root.present().map_err(draw_err)?;
    }
    Ok(finish(buf, title, &tips))
}

type Quadrant<'a, DB> = ChartContext<'a, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>>;

/// An axis tick in %, signed, with a decimal only where the axis is short enough to need one.
fn tick(v: f64, reach: f64) -> String {
    if v.abs() < 1e-9 {
        "0".into()
    } else if reach < 6.0 {
        format!("{v:+.1}")
    } else {
        format!("{v:+.0}")
    }
}

fn build<'a, DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    reach_x: f64,
    reach_y: f64,
) -> Result<Quadrant<'a, DB>, ChartError> {
    ChartBuilder::on(area)
        .margin_top(56)
        .margin_right(24)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(-reach_x..reach_x, -reach_y..reach_y)
        .map_err(draw_err)
}
