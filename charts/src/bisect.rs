//! A bisection's commit line: every commit of the range left to right (the good end first), and at each
//! probed commit its estimate — the change from the good end — with its interval. The ends' change is
//! drawn as a level to compare with; the culprit is marked, commits that could not be built are crossed.

use crate::svg::{finish, Tip, INK};
use crate::{ChartError, ALERT, CONTROL};
use judge::bisect::{Outcome, Reading, Search, StepRole};
use judge::pipeline::report::fmt_pct;
use plotters::prelude::*;

const FONT: &str = "sans-serif";
/// The axis never reaches further than this (%): an interval past it is cut at the edge.
const MAX_REACH: f64 = 400.0;

fn draw_err<E: std::fmt::Display>(e: E) -> ChartError {
    ChartError::Draw(e.to_string())
}

/// The commit line of a bisection; `href` links a step's experiment.
pub fn bisection_line(
    title: &str,
    metric: &str,
    search: &Search,
    outcome: Option<&Outcome>,
    href: &dyn Fn(i64) -> String,
) -> Result<String, ChartError> {
    let n = search.commits.len();
    if n == 0 {
        return Err(ChartError::Empty(format!("{title}: the range holds no commit")));
    }
    // Points: x = position (0 the good end, i + 1 commit i); against the good end only (a confirmation's
    // estimate is against the parent: it is listed in the steps, not drawn on this scale).
    let points: Vec<(usize, &judge::bisect::Step)> =
        search.steps.iter().filter(|s| s.against.is_none() && s.role != StepRole::Confirm).map(|s| (s.commit + 1, s)).collect();
    let clip = |v: f64| v.clamp(-MAX_REACH, MAX_REACH);
    let mut lo: f64 = 0.0;
    let mut hi: f64 = 0.0;
    for (_, s) in &points {
        for v in s.change_pct.into_iter().chain(s.interval_pct.into_iter().flatten()) {
            if v.is_finite() {
                lo = lo.min(clip(v));
                hi = hi.max(clip(v));
            }
        }
    }
    let span = (hi - lo).max(4.0);
    let (y0, y1) = (lo - span * 0.12, hi + span * 0.18);
    let culprit = match outcome {
        Some(Outcome::Culprit { commit, .. }) => Some(commit + 1),
        _ => None,
    };
    let mut tips = Vec::new();
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (900, 380)).into_drawing_area();
        root.draw(&Text::new(title.to_string(), (10, 8), (FONT, 18).into_font().style(FontStyle::Bold).color(&INK))).map_err(draw_err)?;
        let sub = format!("{metric}: change from the good end at each probed commit, with its interval");
        root.draw(&Text::new(sub, (10, 32), (FONT, 13).into_font().color(&INK))).map_err(draw_err)?;
        let x1 = n as f64 + 0.6;
        let mut chart = ChartBuilder::on(&root)
            .margin_top(52)
            .margin_right(24)
            .x_label_area_size(if n <= 24 { 64 } else { 40 })
            .y_label_area_size(70)
            .build_cartesian_2d(-0.6..x1, y0..y1)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_labels(7)
            .y_label_formatter(&|v| format!("{v:+.0} %"))
            .y_desc("change from the good end")
            .axis_style(INK)
            .label_style((FONT, 13).into_font().color(&INK))
            .axis_desc_style((FONT, 13).into_font().color(&INK))
            .light_line_style(RGBColor(128, 128, 128).mix(0.12))
            .bold_line_style(RGBColor(128, 128, 128).mix(0.25))
            .draw()
            .map_err(draw_err)?;
        // Zero, and the ends' change as a level.
        chart.draw_series(std::iter::once(PathElement::new(vec![(-0.6, 0.0), (x1, 0.0)], INK.mix(0.5)))).map_err(draw_err)?;
        if let Some(total) = search.total_pct().filter(|t| t.is_finite()) {
            let t = clip(total);
            let dashes: Vec<f64> = (0..=60).map(|k| -0.6 + (x1 + 0.6) * k as f64 / 60.0).collect();
            chart
                .draw_series(
                    dashes.chunks(2).filter(|c| c.len() == 2).map(|c| PathElement::new(vec![(c[0], t), (c[1], t)], ALERT.mix(0.6))),
                )
                .map_err(draw_err)?;
            let (px, py) = chart.backend_coord(&(-0.5, t));
            root.draw(&Text::new(format!("the ends: {}", fmt_pct(total)), (px + 2, py - 16), (FONT, 12).into_font().color(&ALERT)))
                .map_err(draw_err)?;
        }
        // The commit axis: a tick per commit, its short SHA when they fit (else the probed ones).
        let tick_font = (FONT, 12).into_font().color(&INK).pos(plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Center,
            plotters::style::text_anchor::VPos::Top,
        ));
        for x in 0..=n {
            let (px, py) = chart.backend_coord(&(x as f64, y0));
            root.draw(&PathElement::new(vec![(px, py), (px, py + 4)], INK)).map_err(draw_err)?;
            let probed = points.iter().any(|p| p.0 == x);
            if n <= 24 || x == 0 || probed || culprit == Some(x) {
                let sha = if x == 0 { &search.good.sha } else { &search.commits[x - 1].sha };
                let label = if x == 0 { "good".to_string() } else { sha[..sha.len().min(7)].to_string() };
                root.draw(&Text::new(label, (px, py + 7), tick_font.clone())).map_err(draw_err)?;
                if x == 0 {
                    root.draw(&Text::new(sha[..sha.len().min(7)].to_string(), (px, py + 22), tick_font.clone())).map_err(draw_err)?;
                }
            }
            if x > 0 && search.commits[x - 1].merge {
                root.draw(&Text::new("merge", (px, py + 22), tick_font.clone())).map_err(draw_err)?;
            }
        }
        if let Some(x) = culprit {
            chart
                .draw_series(std::iter::once(Rectangle::new([(x as f64 - 0.45, y0), (x as f64 + 0.45, y1)], ALERT.mix(0.12).filled())))
                .map_err(draw_err)?;
            let (px, py) = chart.backend_coord(&(x as f64, y1));
            root.draw(&Text::new("culprit", (px - 20, py + 4), (FONT, 13).into_font().style(FontStyle::Bold).color(&ALERT)))
                .map_err(draw_err)?;
        }
        // The good end: zero, by definition.
        chart.draw_series(std::iter::once(Circle::new((0.0, 0.0), 6, CONTROL.filled()))).map_err(draw_err)?;
        // Steps still running: named above their commit.
        for s in search.steps.iter().filter(|s| s.reading.is_none() && s.role != StepRole::Confirm) {
            let (px, py) = chart.backend_coord(&((s.commit + 1) as f64, 0.0));
            root.draw(&Text::new("running…", (px - 22, py - 18), (FONT, 12).into_font().color(&INK))).map_err(draw_err)?;
        }
        for (x, s) in &points {
            let xf = *x as f64;
            let color = match s.reading {
                Some(Reading::Moved) => ALERT,
                Some(Reading::Unmoved) => CONTROL,
                _ => RGBColor(120, 120, 120),
            };
            if s.reading == Some(Reading::Broken) {
                let (px, py) = chart.backend_coord(&(xf, 0.0));
                root.draw(&Text::new("✕ not built", (px - 28, py - 18), (FONT, 12).into_font().color(&ALERT))).map_err(draw_err)?;
            }
            if let Some([a, b]) = s.interval_pct.filter(|i| i.iter().all(|v| v.is_finite())) {
                chart
                    .draw_series(std::iter::once(PathElement::new(vec![(xf, clip(a)), (xf, clip(b))], color.stroke_width(3))))
                    .map_err(draw_err)?;
                for v in [a, b] {
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            vec![(xf - 0.12, clip(v)), (xf + 0.12, clip(v))],
                            color.stroke_width(2),
                        )))
                        .map_err(draw_err)?;
                }
            }
            if let Some(c) = s.change_pct.filter(|c| c.is_finite()) {
                chart.draw_series(std::iter::once(Circle::new((xf, clip(c)), 6, color.filled()))).map_err(draw_err)?;
                let (px, py) = chart.backend_coord(&(xf, clip(c)));
                root.draw(&Text::new(fmt_pct(c), (px + 9, py - 7), (FONT, 12).into_font().color(&color))).map_err(draw_err)?;
            }
            let (px, _) = chart.backend_coord(&(xf, y0));
            let (_, top) = chart.backend_coord(&(xf, y1));
            let (_, bottom) = chart.backend_coord(&(xf, y0));
            let sha = &search.commits[x - 1].sha;
            tips.push(Tip {
                x0: px - 12,
                y0: top,
                x1: px + 12,
                y1: bottom,
                text: format!("{} {} — {}", judge::units::short_sha(sha), search.commits[x - 1].subject, s.words),
                href: s.experiment_id.map(href),
            });
        }
        root.present().map_err(draw_err)?;
    }
    Ok(finish(buf, title, &tips))
}

#[cfg(test)]
mod tests {
    use super::*;
    use judge::bisect::{Commit, Step};

    #[test]
    fn the_line_names_commits_and_reads_short_numbers() {
        let commits: Vec<Commit> =
            (0..8).map(|i| Commit { sha: format!("{i:x}abcdef0123456789"), subject: format!("c{i}"), merge: i == 5 }).collect();
        let mut steps = Vec::new();
        for (role, commit, change) in
            [(StepRole::Ends, 7, 21.345_678_9), (StepRole::Probe, 3, 0.123_456_7), (StepRole::Probe, 5, 20.987_654_3)]
        {
            let mut s = Step::new(role, commit, None);
            s.experiment_id = Some(commit as i64 + 10);
            s.reading = Some(if change > 5.0 { Reading::Moved } else { Reading::Unmoved });
            s.change_pct = Some(change);
            s.interval_pct = Some([change - 3.333_333, change + 2.222_222]);
            steps.push(s);
        }
        let search =
            Search { good: Commit { sha: "ffff000011112222".into(), subject: "good".into(), merge: false }, commits, steps, parallel: 1 };
        let outcome = Outcome::Culprit { commit: 4, suspects: vec![], share: Some(1.0), words: String::new() };
        let svg = bisection_line("bisect #1", "CPU of stage3", &search, Some(&outcome), &|id| format!("/experiments/{id}")).unwrap();
        assert!(svg.contains("culprit") && svg.contains("good") && svg.contains("merge"));
        assert!(svg.contains("+21.3 %") && svg.contains("href=\"/experiments/13\""), "{svg}");
        // No number past 8 digits anywhere in the text a reader sees.
        let texts: Vec<&str> =
            svg.split("<text").skip(1).filter_map(|t| t.split('>').nth(1)).map(|t| t.split('<').next().unwrap_or("")).collect();
        for t in texts {
            let longest = t.split(|c: char| !c.is_ascii_digit()).map(str::len).max().unwrap_or(0);
            assert!(longest <= 8, "{t:?}");
        }
    }
}
