//! Pipeline charts: CPU per stage (control against each treatment, interval whiskers, the noise band)
//! and peak memory per stage against the worker's RAM.

use crate::bars::{Bar, BarChart, Group, Mark};
use crate::{fmt_bytes, fmt_num, treatment_color, ChartError, Scale, CONTROL};
use judge::pipeline::report::{fmt_pct, PipelineReport, StageReport};
use judge::Verdict;

/// Stage names in the order the first treatment lists them, then any stage only another treatment ran.
fn stage_names(report: &PipelineReport) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for arm in &report.treatments {
        for s in &arm.stages {
            if !names.contains(&s.stage) {
                names.push(s.stage.clone());
            }
        }
    }
    names
}

fn series(report: &PipelineReport) -> Vec<(String, plotters::style::RGBColor)> {
    let mut s = vec![("control".to_string(), CONTROL)];
    s.extend(report.treatments.iter().enumerate().map(|(i, a)| (a.name.clone(), treatment_color(i))));
    s
}

/// Each treatment's report of one stage (None where that arm did not run it).
fn stage_of<'a>(report: &'a PipelineReport, name: &str) -> Vec<Option<&'a StageReport>> {
    report.treatments.iter().map(|a| a.stages.iter().find(|s| s.stage == name)).collect()
}

/// ", 99.6 % interval +1.1 % … +60.8 %": the interval at the level its test was decided at.
fn interval(s: &judge::pipeline::report::StageReport) -> String {
    match (&s.cpu_test, s.cpu_interval_pct) {
        (Some(t), Some([l, h])) => format!(", {} interval {} … {}", judge::pipeline::report::fmt_level(t.alpha), fmt_pct(l), fmt_pct(h)),
        (None, Some([l, h])) => format!(", interval {} … {}", fmt_pct(l), fmt_pct(h)),
        _ => String::new(),
    }
}

pub fn pipeline_cpu(report: &PipelineReport, scale: Scale) -> Result<String, ChartError> {
    let names = stage_names(report);
    let mut groups = Vec::new();
    for name in &names {
        let arms = stage_of(report, name);
        let Some(first) = arms.iter().flatten().next() else { continue };
        let c = first.cpu_control;
        let mut bars = vec![Bar {
            value: Some(c),
            whisker: None,
            tip: format!("{name}\ncontrol: {} CPU-s ({} trials)", fmt_num(c), first.trials[0]),
            dots: vec![],
        }];
        for (arm, s) in report.treatments.iter().zip(&arms) {
            bars.push(match s {
                Some(s) => Bar {
                    value: Some(s.cpu_treatment),
                    whisker: s.cpu_interval_pct.map(|[l, h]| (c * (1.0 + l / 100.0), c * (1.0 + h / 100.0))),
                    tip: format!(
                        "{name}\n{}: {} CPU-s, {} against control{} — {}",
                        arm.name,
                        fmt_num(s.cpu_treatment),
                        fmt_pct(s.cpu_change_pct),
                        interval(s),
                        s.verdict.as_str()
                    ),
                    dots: vec![],
                },
                None => Bar { value: None, whisker: None, tip: format!("{name}: {} did not run this stage", arm.name), dots: vec![] },
            });
        }
        let band = first.thresholds.cpu_pct / 100.0;
        groups.push(Group {
            label: name.clone(),
            bars,
            band: Some((c * (1.0 - band), c * (1.0 + band))),
            mark: arms.iter().flatten().any(|s| s.verdict == Verdict::Regression).then_some(Mark::Regression),
        });
    }
    let band_label = report.treatments.first().and_then(|a| a.stages.first()).map(|s| match &report.method {
        // Method 2: the band is each stage's margin (the suite's, or the floor's for a small stage).
        Some(_) => {
            let margin = judge::pipeline::report::fmt_margin(report.thresholds.cpu_pct);
            format!("margin ±{margin} (or {} CPU-s, if more)", report.thresholds.cpu_floor_s)
        }
        None => {
            let source = if s.thresholds.calibrated { "calibrated" } else { "default" };
            format!("noise band ±{} % ({source})", fmt_num(s.thresholds.cpu_pct))
        }
    });
    BarChart {
        title: "CPU per stage".into(),
        axis: "CPU-seconds (mean over trials)".into(),
        series: series(report),
        groups,
        limit: None,
        band_label,
        format: fmt_num,
    }
    .render(scale)
}

const MIB: f64 = 1048576.0;

/// An axis value already in MiB: "150 MiB", "2.5 MiB".
fn fmt_mib(v: f64) -> String {
    let n = fmt_num(v);
    let n = if n.contains('.') && !n.contains('e') { n.trim_end_matches('0').trim_end_matches('.').to_string() } else { n };
    format!("{n} MiB")
}

pub fn pipeline_memory(report: &PipelineReport, scale: Scale) -> Result<String, ChartError> {
    let ram = report.thresholds.worker_ram_bytes;
    let mut groups = Vec::new();
    for name in stage_names(report) {
        let arms = stage_of(report, &name);
        let Some(first) = arms.iter().flatten().next() else { continue };
        let c = first.mem_peak_control;
        let mut bars = vec![Bar { value: Some(c / MIB), whisker: None, tip: format!("{name}\ncontrol: peak {}", fmt_bytes(c)), dots: vec![] }];
        let mut over = false;
        for (arm, s) in report.treatments.iter().zip(&arms) {
            bars.push(match s {
                Some(s) => {
                    over |= ram.is_some_and(|r| s.mem_peak_treatment > r);
                    Bar {
                        value: Some(s.mem_peak_treatment / MIB),
                        whisker: None,
                        tip: format!("{name}\n{}: peak {} ({})", arm.name, fmt_bytes(s.mem_peak_treatment), fmt_pct(s.mem_peak_change_pct)),
                        dots: vec![],
                    }
                }
                None => Bar { value: None, whisker: None, tip: format!("{name}: {} did not run this stage", arm.name), dots: vec![] },
            });
        }
        groups.push(Group { label: name, bars, band: None, mark: over.then_some(Mark::OverLimit) });
    }
    BarChart {
        title: "Peak memory per stage".into(),
        axis: "peak memory of the stage's busiest worker".into(),
        series: series(report),
        groups,
        limit: ram.map(|r| (r / MIB, format!("worker RAM {}", fmt_bytes(r)))),
        band_label: None,
        // Drawn in MiB, so the axis ticks fall on round MiB (50, 100, 150), not on round bytes.
        format: fmt_mib,
    }
    .render(scale)
}
