//! The CPU-vs-elapsed quadrant: each stage of each treatment as a point, CPU change across, summed
//! elapsed change up; the shaded box is the noise both changes must leave to count.

use crate::bars::{clip, legend};
use crate::svg::{finish, Tip, INK};
use crate::{treatment_color, ChartError, Scale};
use judge::pipeline::report::{fmt_pct, PipelineReport};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const FONT: &str = "sans-serif";

fn draw_err<E: std::fmt::Display>(e: E) -> ChartError {
    ChartError::Draw(e.to_string())
}

pub fn pipeline_quadrant(report: &PipelineReport, _scale: Scale) -> Result<String, ChartError> {
    let points: Vec<(usize, &str, f64, f64, String)> = report
        .treatments
        .iter()
        .enumerate()
        .flat_map(|(k, arm)| {
            arm.stages.iter().map(move |s| {
                let tip = format!(
                    "{}\n{}: CPU {}, summed elapsed {} — {}",
                    s.stage,
                    arm.name,
                    fmt_pct(s.cpu_change_pct),
                    fmt_pct(s.elapsed_change_pct),
                    s.verdict.as_str()
                );
                (k, s.stage.as_str(), s.cpu_change_pct, s.elapsed_change_pct, tip)
            })
        })
        .filter(|p| p.2.is_finite() && p.3.is_finite())
        .collect();
    if points.is_empty() {
        return Err(ChartError::Empty("no stage has both a CPU and an elapsed change".into()));
    }
    let (cpu_th, el_th) = (report.thresholds.cpu_pct, report.thresholds.elapsed_pct);
    let reach = points.iter().flat_map(|p| [p.2.abs(), p.3.abs()]).chain([cpu_th, el_th, 10.0]).fold(0.0, f64::max) * 1.15;
    let title = "CPU change against elapsed change, per stage";
    let mut tips = Vec::new();
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (780, 520)).into_drawing_area();
        root.draw(&Text::new(title, (10, 8), (FONT, 19).into_font().style(FontStyle::Bold).color(&INK))).map_err(draw_err)?;
        let mut entries: Vec<(String, RGBColor, bool)> =
            report.treatments.iter().enumerate().map(|(k, a)| (a.name.clone(), treatment_color(k), true)).collect();
        let what = if report.method.is_some() { "margins" } else { "noise" };
        entries.push((format!("{what} (±{} % CPU, ±{} % elapsed)", cpu_th, el_th), RGBColor(150, 150, 150), true));
        legend(&root, &entries)?;
        let mut chart = ChartBuilder::on(&root)
            .margin_top(56)
            .margin_right(24)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(-reach..reach, -reach..reach)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("CPU-seconds change against control (%)")
            .y_desc("summed elapsed change (%)")
            .x_label_formatter(&|v| format!("{v:+.0}"))
            .y_label_formatter(&|v| format!("{v:+.0}"))
            .axis_style(INK)
            .label_style((FONT, 14).into_font().color(&INK))
            .axis_desc_style((FONT, 15).into_font().color(&INK))
            .light_line_style(RGBColor(128, 128, 128).mix(0.12))
            .bold_line_style(RGBColor(128, 128, 128).mix(0.25))
            .draw()
            .map_err(draw_err)?;
        chart
            .draw_series(std::iter::once(Rectangle::new([(-cpu_th, -el_th), (cpu_th, el_th)], RGBColor(150, 150, 150).mix(0.28).filled())))
            .map_err(draw_err)?;
        chart
            .draw_series([
                PathElement::new(vec![(-reach, 0.0), (reach, 0.0)], INK.mix(0.6).stroke_width(1)),
                PathElement::new(vec![(0.0, -reach), (0.0, reach)], INK.mix(0.6).stroke_width(1)),
            ])
            .map_err(draw_err)?;
        let corner = (FONT, 14).into_font().color(&INK.mix(0.7));
        for (x, y, text, h) in [
            (-reach * 0.96, reach * 0.94, "cheaper, slower", HPos::Left),
            (reach * 0.96, reach * 0.94, "costlier, slower", HPos::Right),
            (-reach * 0.96, -reach * 0.90, "cheaper, faster", HPos::Left),
            (reach * 0.96, -reach * 0.90, "costlier, faster", HPos::Right),
        ] {
            let p = chart.backend_coord(&(x, y));
            root.draw(&Text::new(text, p, corner.pos(Pos::new(h, VPos::Center)))).map_err(draw_err)?;
        }
        let label = points.len() <= 12;
        for (k, stage, x, y, tip) in &points {
            chart.draw_series(std::iter::once(Circle::new((*x, *y), 5, treatment_color(*k).filled()))).map_err(draw_err)?;
            let (px, py) = chart.backend_coord(&(*x, *y));
            if label {
                // Labels point inwards, so a stage far to the right is not cut off.
                let (dx, h) = if *x > reach * 0.3 { (-8, HPos::Right) } else { (8, HPos::Left) };
                root.draw(&Text::new(clip(stage, 24), (px + dx, py), (FONT, 13).into_font().color(&INK).pos(Pos::new(h, VPos::Center))))
                    .map_err(draw_err)?;
            }
            tips.push(Tip { x0: px - 6, y0: py - 6, x1: px + 6, y1: py + 6, text: tip.clone(), href: None });
        }
        root.present().map_err(draw_err)?;
    }
    Ok(finish(buf, title, &tips))
}
