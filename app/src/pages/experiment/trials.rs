//! The trials as a timeline: when each ran and for how long, in the arm's colour, with its state and
//! reason. Bars are SVG rectangles (the page's CSP allows no inline styles).

use super::JsonTrialRow;
use crate::format::{duration, utc_minutes};
use leptos::prelude::*;

/// (offset, width) of each trial in percent of the span from the first start to the last end.
fn spans(trials: &[JsonTrialRow], now: i64) -> Vec<Option<(f64, f64)>> {
    let start = trials.iter().filter_map(|t| t.started_at).min();
    let end = trials.iter().filter_map(|t| t.finished_at.or(t.started_at.map(|_| now))).max();
    let (Some(start), Some(end)) = (start, end) else { return vec![None; trials.len()] };
    let span = (end - start).max(1) as f64;
    trials
        .iter()
        .map(|t| {
            let s = t.started_at?;
            let e = t.finished_at.unwrap_or(now).max(s);
            Some(((s - start) as f64 / span * 100.0, ((e - s) as f64 / span * 100.0).max(0.4)))
        })
        .collect()
}

/// 1st, 2nd, 3rd, 4th…
fn ordinal(n: i64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// `now`: the server's clock at a live update (a running trial's bar grows with it); without one the
/// newest start or end stands in, so that server and browser draw the same bars.
#[component]
pub fn Timeline(trials: Vec<JsonTrialRow>, #[prop(default = None)] now: Option<i64>) -> impl IntoView {
    if trials.is_empty() {
        return view! { <h2>"Trials"</h2> <p class="muted">"No trials: this experiment was imported or not planned yet."</p> }.into_any();
    }
    let newest = trials.iter().filter_map(|t| t.finished_at.or(t.started_at)).max().unwrap_or(0);
    let now = now.map_or(newest, |n| n.max(newest));
    let spans = spans(&trials, now);
    view! {
        <h2>"Trials"</h2>
        <div class="table-wrap">
            <table class="data trials">
                <thead>
                    <tr>
                        <th scope="col" class="num">"#"</th><th scope="col">"Arm"</th><th scope="col">"In pair"</th><th scope="col">"Started"</th>
                        <th scope="col" class="num">"Duration"</th><th scope="col" class="timeline-col">"Timeline"</th>
                        <th scope="col">"State"</th><th scope="col">"Job"</th><th scope="col">"Reason"</th>
                    </tr>
                </thead>
                <tbody>
                    {trials.into_iter().zip(spans).map(|(t, span)| {
                        let took = match (t.started_at, t.finished_at) {
                            (Some(s), Some(e)) => duration(e - s),
                            (Some(_), None) => "running".into(),
                            _ => "—".into(),
                        };
                        // A warp phase (it has a cell) names its arm in the gate's words.
                        let arm = match &t.cell {
                            Some(c) => format!("{} · {c}", match t.arm.as_str() { "control" => "baseline", "treatment" => "candidate", other => other }),
                            None => t.arm.clone(),
                        };
                        let attempt = (t.attempt > 1).then(|| format!(" (attempt {})", t.attempt));
                        // The order it ran in within its pair (a warp phase's pair is its cell's AB).
                        let in_pair = match (t.warm_up, t.position) {
                            (true, _) => "warm-up (not judged)".to_string(),
                            (false, Some(p)) => format!("{} · {}", t.pair + 1, ordinal(p + 1)),
                            (false, None) => "—".into(),
                        };
                        view! {
                            <tr class=format!("state-{}{}", t.state, if t.warm_up { " warm-up" } else { "" })>
                                <td class="num">{t.seq + 1}</td>
                                <td><span class=format!("swatch arm-{}", t.colour) aria-hidden="true"></span> {arm} {attempt}</td>
                                <td title="the pair (repeat) and whether this trial ran first or second in it">{in_pair}</td>
                                <td class="when">{t.started_at.map(utc_minutes).unwrap_or_else(|| "not started".into())}</td>
                                <td class="num">{took}</td>
                                <td class="timeline-col">
                                    {span.map(|(x, w)| view! {
                                        <svg class="timeline" viewBox="0 0 100 10" preserveAspectRatio="none" role="img" aria-label=format!("trial {} ran for {}", t.seq + 1, duration(t.finished_at.unwrap_or(now) - t.started_at.unwrap_or(now)))>
                                            <rect class=format!("bar arm-{}", t.colour) x=format!("{x:.2}") y="1" width=format!("{w:.2}") height="8" />
                                        </svg>
                                    })}
                                </td>
                                <td>{t.state.clone()}</td>
                                <td><code>{t.job.clone()}</code></td>
                                <td>{t.note.clone()}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}
