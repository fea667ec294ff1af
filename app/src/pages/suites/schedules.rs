//! The suite page's schedules: each `[[schedules]]` entry with its next tick (UTC), and what the
//! recent ticks did — launched (with the experiment), skipped (the ref had not moved) or failed (why).

use crate::format::utc_minutes;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleLine {
    pub name: String,
    pub cron: String,
    pub git_ref: String,
    pub mode: String,
    pub next_tick: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleRunLine {
    pub schedule: String,
    pub tick_at: i64,
    pub outcome: String,
    pub sha: Option<String>,
    pub experiment_id: Option<i64>,
    pub detail: String,
}

/// The schedules of a stored suite definition, with their next tick after `now`.
#[cfg(feature = "ssr")]
pub fn schedule_lines(definition: &serde_json::Value, now: i64) -> Vec<ScheduleLine> {
    let text = |s: &serde_json::Value, k: &str| s[k].as_str().unwrap_or_default().to_string();
    let list = definition["schedules"].as_array().cloned().unwrap_or_default();
    list.iter()
        .map(|s| ScheduleLine {
            name: text(s, "name"),
            cron: text(s, "cron"),
            git_ref: text(s, "ref"),
            mode: s["mode"].as_str().unwrap_or("baseline").to_string(),
            next_tick: judge::cron::Cron::parse(s["cron"].as_str().unwrap_or_default()).ok().and_then(|c| c.next_tick(now)),
        })
        .collect()
}

#[cfg(feature = "ssr")]
impl From<store::schedules::ScheduleRun> for ScheduleRunLine {
    fn from(r: store::schedules::ScheduleRun) -> Self {
        ScheduleRunLine {
            schedule: r.schedule,
            tick_at: r.tick_at,
            outcome: r.outcome,
            sha: r.sha,
            experiment_id: r.experiment_id,
            detail: r.detail.unwrap_or_default(),
        }
    }
}

#[component]
pub fn Schedules(schedules: Vec<ScheduleLine>, runs: Vec<ScheduleRunLine>) -> impl IntoView {
    if schedules.is_empty() && runs.is_empty() {
        return view! {
            <h2>"Schedules"</h2>
            <p class="muted">"None. A " <code>"[[schedules]]"</code> " entry (name, cron in UTC, ref, mode) runs a baseline — or an A/B against the last good SHA — whenever the ref has moved."</p>
        }
        .into_any();
    }
    view! {
        <h2>"Schedules"</h2>
        <table class="data schedules">
            <thead><tr><th scope="col">"Schedule"</th><th scope="col">"Cron (UTC)"</th><th scope="col">"Ref"</th><th scope="col">"Mode"</th><th scope="col">"Next tick"</th></tr></thead>
            <tbody>{schedules.into_iter().map(|s| view! {
                <tr><td>{s.name}</td><td><code>{s.cron}</code></td><td><code>{s.git_ref}</code></td><td>{s.mode}</td>
                    <td>{s.next_tick.map(utc_minutes).unwrap_or_else(|| "never (within a year)".into())}</td></tr>
            }).collect_view()}</tbody>
        </table>
        {(!runs.is_empty()).then(|| view! {
            <table class="data schedule-runs">
                <caption>"Recent ticks"</caption>
                <thead><tr><th scope="col">"Tick"</th><th scope="col">"Schedule"</th><th scope="col">"Outcome"</th><th scope="col">"SHA"</th><th scope="col">"Experiment"</th><th scope="col">"Detail"</th></tr></thead>
                <tbody>{runs.into_iter().map(|r| view! {
                    <tr><td>{utc_minutes(r.tick_at)}</td><td>{r.schedule}</td><td class=format!("tick-{}", r.outcome)>{r.outcome.clone()}</td>
                        <td><code>{r.sha.as_deref().map(judge::units::short_sha).unwrap_or_default().to_string()}</code></td>
                        <td>{r.experiment_id.map(|id| view! { <a href=format!("/experiments/{id}")>{format!("#{id}")}</a> })}</td>
                        <td>{r.detail}</td></tr>
                }).collect_view()}</tbody>
            </table>
        })}
    }
    .into_any()
}
