//! `/bisections`: every bisection, newest first — what it searched (suite, metric, range), how it ended
//! (culprit, none, ambiguous, or still searching), who started it and when — each a link to its page.

use crate::error::{AppError, ErrorView};
use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

/// How many bisections the page lists.
#[cfg(feature = "ssr")]
const SHOWN: i64 = 200;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BisectionRow {
    pub id: i64,
    pub title: String,
    pub suite: String,
    pub metric: String,
    pub range: String,
    pub status: String,
    /// "🎯 culprit 3e39ee3ffd", "✅ no culprit", "❔ ambiguous", "⏳ searching", or the status.
    pub outcome: String,
    pub tone: String,
    pub started: String,
    pub by: Option<String>,
}

#[server(prefix = "/fn", endpoint = "bisections")]
pub async fn load_bisections() -> Result<Vec<BisectionRow>, AppError> {
    crate::auth::require(crate::auth::Role::Viewer)?;
    let store = crate::error::store()?;
    let rows = store.bisections(None, SHOWN, "").await.map_err(crate::error::read_failed("the bisections"))?;
    let short = |sha: &str| judge::units::short_sha(sha).to_string();
    Ok(rows
        .into_iter()
        .map(|b| {
            let j = b.bisection;
            let (outcome, tone) = match (j.state.outcome.as_ref().map(|o| o.kind()), &j.state.culprit) {
                (Some("culprit"), Some(c)) => (format!("🎯 culprit {}", short(&c.sha)), "bad"),
                (Some("culprit"), None) => ("🎯 culprit".to_string(), "bad"),
                (Some("no_culprit"), _) => ("✅ no culprit".to_string(), "good"),
                (Some(_), _) => ("❔ ambiguous".to_string(), "unknown"),
                (None, _) if j.status == "running" => ("⏳ searching".to_string(), "none"),
                (None, _) => (j.status.clone(), "none"),
            };
            BisectionRow {
                id: j.id,
                title: j.state.title.clone(),
                suite: j.suite.clone(),
                metric: j.state.metric.words(),
                range: format!("{}..{}", short(&j.good_sha), short(&j.bad_sha)),
                status: j.status.clone(),
                outcome,
                tone: tone.to_string(),
                started: crate::format::utc_minutes(j.created_at),
                by: j.launched_by.clone(),
            }
        })
        .collect())
}

#[component]
pub fn BisectionsPage() -> impl IntoView {
    view! {
        <Title text="Bisections" />
        <h1>"Bisections"</h1>
        <p class="muted">"Each searches a suite's first-parent commits for the one that moved a metric. Start one with "
            <strong>"Find the commit"</strong> " on a regression's page, or from a change point on " <a href="/trends">"Trends"</a> "."</p>
        {crate::awaited::awaited(async move {
            match load_bisections().await {
                Ok(rows) if rows.is_empty() => view! {
                    <section class="empty"><h2>"No bisections yet"</h2>
                        <p>"A bisection appears here as soon as it starts; it links the experiments it ran."</p></section>
                }.into_any(),
                Ok(rows) => view! {
                    <div class="table-wrap">
                        <table class="data bisections">
                            <thead><tr><th scope="col">"Bisection"</th><th scope="col">"Outcome"</th><th scope="col">"Suite"</th>
                                <th scope="col">"Metric"</th><th scope="col">"Range"</th><th scope="col">"Started"</th></tr></thead>
                            <tbody>{rows.into_iter().map(|r| view! {
                                <tr>
                                    <td><a href=format!("/bisections/{}", r.id)>{r.title.clone()}</a> " " <span class="muted">"#" {r.id}</span></td>
                                    <td><span class=format!("verdict tone-{}", r.tone)>{r.outcome.clone()}</span> " " <span class="muted">{r.status.clone()}</span></td>
                                    <td>{r.suite.clone()}</td>
                                    <td>{r.metric.clone()}</td>
                                    <td><code>{r.range.clone()}</code></td>
                                    <td>{r.started.clone()} {r.by.clone().map(|b| view! { <br /><span class="muted">{format!("by {b}")}</span> })}</td>
                                </tr>
                            }).collect_view()}</tbody>
                        </table>
                    </div>
                }.into_any(),
                Err(error) => view! { <ErrorView error /> }.into_any(),
            }
        })}
    }
}
