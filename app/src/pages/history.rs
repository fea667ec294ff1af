//! The history page: every experiment, newest first, filtered through the URL so a view can be shared.

use crate::error::ErrorView;
use crate::format::{short_ref, utc_minutes};
use judge::{ExperimentKind, ExperimentStatus, Verdict};
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use serde::{Deserialize, Serialize};

/// Experiments per history page.
pub const PAGE_SIZE: u32 = 50;

/// One row of the history table: the experiment's summary, as the API gives it too.
pub use wire::experiment::ExperimentSummary;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryView {
    pub rows: Vec<ExperimentSummary>,
    /// Cursor of the next (older) page, as it goes in the URL: `created_at.id`.
    pub older: Option<String>,
    /// With no experiment at all: a first launch to offer — (suite, its base branch, a branch to try).
    #[serde(default)]
    pub first_try: Option<(String, String, String)>,
}

/// The first launch an empty Arbiter offers: the example suite's `cpu-heavier` when it is there, else the
/// first pipeline suite's newest other branch.
#[cfg(feature = "ssr")]
async fn first_try(store: &store::Store) -> Option<(String, String, String)> {
    let ctx = crate::context::server_context().ok()?;
    let suites = store.suites().await.ok()?;
    let mut best: Option<(String, String, String)> = None;
    for s in suites.iter().filter(|s| s.kind == judge::ExperimentKind::Pipeline) {
        let Ok(d) = serde_json::from_value::<suite::SuiteDefinition>(s.definition.clone()) else { continue };
        let branches = (ctx.branches)(d.repository.clone()).await;
        if branches.iter().any(|b| b == "cpu-heavier") {
            return Some((d.name, d.base_branch, "cpu-heavier".into()));
        }
        if best.is_none() {
            best = branches.into_iter().find(|b| *b != d.base_branch).map(|b| (d.name.clone(), d.base_branch.clone(), b));
        }
    }
    best
}

pub use wire::history::HistoryFilter;

/// The URL of the next page with the same filters.
fn older_href(filter: &HistoryFilter, cursor: &str) -> String {
    let mut parts: Vec<String> = filter.pairs().into_iter().map(|(k, v)| format!("{k}={}", encode(v))).collect();
    parts.push(format!("before={cursor}"));
    format!("/experiments?{}", parts.join("&"))
}

use crate::format::encode_query as encode;

// JSON input: a URL-encoded body cannot tell an all-empty filter from a missing one.
#[server(prefix = "/fn", endpoint = "history", input = Json)]
pub async fn load_history(filter: HistoryFilter) -> Result<HistoryView, crate::error::AppError> {
    crate::auth::require(crate::auth::Role::Viewer)?;
    // The page size is the page's, whatever the URL says.
    let filter = HistoryFilter { limit: None, ..filter };
    let query = store::experiments::HistoryQuery::from_filter(&filter, PAGE_SIZE).map_err(crate::error::AppError::bad_request)?;
    let store = crate::error::store()?;
    let page = store.list_experiments(&query).await.map_err(crate::error::read_failed("the experiment history"))?;
    let first_try = if page.experiments.is_empty() && filter.is_empty() { first_try(&store).await } else { None };
    Ok(HistoryView { rows: page.experiments, older: page.next.map(|c| format!("{}.{}", c.created_at, c.id)), first_try })
}

#[component]
pub fn HistoryPage() -> impl IntoView {
    // Read once: the page is rendered whole on the server (islands: it never re-renders in the browser).
    let filter = use_query_map().with_untracked(|q| HistoryFilter::from_query(|k| q.get(k)));
    let form = filter.clone();
    view! {
        <Title text="Experiments" />
        <div class="page-head">
            <h1>"Experiments"</h1>
            <FilterForm filter=form />
        </div>
        {crate::awaited::awaited(async move {
            match load_history(filter.clone()).await {
                Ok(view) => view! { <HistoryTable view filter /> }.into_any(),
                Err(e) => view! { <ErrorView error=e /> }.into_any(),
            }
        })}
    }
}

/// A plain GET form: it works before hydration and keeps the filters in the URL.
#[component]
fn FilterForm(filter: HistoryFilter) -> impl IntoView {
    let select = move |name: &'static str, label: &'static str, options: Vec<&'static str>, current: Option<String>| {
        view! {
            <label>
                {label}
                <select name=name>
                    <option value="">"any"</option>
                    {options
                        .into_iter()
                        .map(|o| view! { <option value=o selected=current.as_deref() == Some(o)>{o}</option> })
                        .collect_view()}
                </select>
            </label>
        }
    };
    let text = |name: &'static str, label: &'static str, placeholder: &'static str, current: Option<String>| {
        view! { <label>{label} <input name=name type="text" value=current.unwrap_or_default() placeholder=placeholder /></label> }
    };
    view! {
        <form class="filters" method="get" action="/experiments" role="search">
            {select("kind", "Kind", ExperimentKind::ALL.iter().map(|k| k.as_str()).collect(), filter.kind.clone())}
            {select("status", "Status", ExperimentStatus::ALL.iter().map(|s| s.as_str()).collect(), filter.status.clone())}
            {select("verdict", "Verdict", Verdict::ALL.iter().map(|v| v.as_str()).collect(), filter.verdict.clone())}
            {text("suite", "Suite", "any", filter.suite.clone())}
            {text("git", "Ref or SHA", "main, 1a2b3c…", filter.git.clone())}
            {text("by", "Launched by", "anyone", filter.by.clone())}
            <label>"From" <input name="since" type="date" value=filter.since.clone().unwrap_or_default() /></label>
            <label>"To" <input name="until" type="date" value=filter.until.clone().unwrap_or_default() /></label>
            <label class="search">"Search" <input name="q" type="search" value=filter.q.clone().unwrap_or_default() placeholder="title, suite or ref" /></label>
            <button type="submit">"Filter"</button>
            {(!filter.pairs().is_empty()).then(|| view! { <a class="clear" href="/experiments">"Clear"</a> })}
        </form>
    }
}

#[component]
fn HistoryTable(view: HistoryView, filter: HistoryFilter) -> impl IntoView {
    if view.rows.is_empty() {
        return if filter.is_empty() {
            view! {
                <section class="empty">
                    <h2>"No experiments yet"</h2>
                    <p>"Arbiter keeps every A/B comparison you run here, newest first, each behind a permanent link."</p>
                    {view.first_try.clone().map(|(suite, base, branch)| {
                        // "auto": pairs are added until the verdict is decided (three fixed pairs of an uncalibrated
                        // suite rarely decide one).
                        let href = format!("/launch?suite={}&head={}&trials=auto", encode(&suite), encode(&branch));
                        view! {
                            <p class="try">"Try the example: " <a href=href><strong>{suite.clone()}</strong> ", " <code>{branch.clone()}</code> " against " <code>{base.clone()}</code></a>
                                 " — the launch form opens filled in (trials \"auto\": pairs until the verdict is decided); Preview shows what will run, Launch runs it (a few minutes here) and this page lists it."</p>
                        }
                    })}
                    <p>
                        "An experiment appears here as soon as it is launched: from the " <a href="/launch">"Launch"</a>
                        " page, the " <code>"arbiter"</code> " command line, or a CI job through the API."
                    </p>
                </section>
            }
            .into_any()
        } else {
            view! {
                <section class="empty">
                    <h2>"No experiment matches these filters"</h2>
                    <p><a href="/experiments">"Clear the filters"</a> " to see every experiment."</p>
                </section>
            }
            .into_any()
        };
    }
    let older = view.older.as_deref().map(|c| older_href(&filter, c));
    view! {
        <ExperimentTable rows=view.rows />
        {older.map(|href| view! { <p class="pager"><a href=href rel="next">"Older experiments →"</a></p> })}
    }
    .into_any()
}

/// Experiments as the history page lists them (also a suite's recent experiments).
#[component]
pub fn ExperimentTable(rows: Vec<ExperimentSummary>) -> impl IntoView {
    view! {
        <table class="history">
            <thead>
                <tr>
                    <th scope="col">"#"</th>
                    <th scope="col">"Experiment"</th>
                    <th scope="col">"Kind"</th>
                    <th scope="col">"Verdict"</th>
                    <th scope="col">"Change"</th>
                    <th scope="col">"Status"</th>
                    <th scope="col">"Control → treatment"</th>
                    <th scope="col">"Launched"</th>
                </tr>
            </thead>
            <tbody>
                {rows.into_iter().map(|row| view! { <HistoryLine row /> }).collect_view()}
            </tbody>
        </table>
    }
}

#[component]
fn HistoryLine(row: ExperimentSummary) -> impl IntoView {
    let href = format!("/experiments/{}", row.id);
    let refs =
        format!("{} → {}", row.base_ref.as_deref().map(short_ref).unwrap_or("?"), row.head_ref.as_deref().map(short_ref).unwrap_or("?"));
    let launched = match &row.launched_by {
        Some(who) => format!("{} by {who}", utc_minutes(row.created_at)),
        None => utc_minutes(row.created_at),
    };
    view! {
        <tr>
            <td class="num"><a href=href.clone()>{row.id}</a></td>
            <td>
                <a href=href>{row.title}</a>
                {row.suite.map(|s| view! { <span class="suite">{s}</span> })}
            </td>
            <td>{row.kind.as_str()}</td>
            <td><VerdictBadge verdict=row.verdict status=Some(row.status) /></td>
            <td class="news">{row.news.clone().unwrap_or_default()}</td>
            <td>{row.status.as_str()}</td>
            <td class="refs">{refs}</td>
            <td class="when">{launched}</td>
        </tr>
    }
}

/// A verdict as icon, colour and word together (never colour alone).
#[component]
pub fn VerdictBadge(verdict: Option<Verdict>, #[prop(default = None)] status: Option<judge::ExperimentStatus>) -> impl IntoView {
    use judge::ExperimentStatus as S;
    match verdict {
        Some(v) => {
            let tone = v.tone();
            let class = format!("verdict tone-{}", format!("{tone:?}").to_lowercase());
            view! { <span class=class>{tone.icon()} " " {v.as_str()}</span> }.into_any()
        }
        // Without a verdict, say why: still to come, or none by nature (a calibration or baseline is
        // measured, not compared), or none because it stopped.
        None => {
            let why = match status {
                Some(S::Judged) => "— measured, no verdict",
                Some(S::Cancelled) => "— none: cancelled",
                Some(S::Errored) => "— none: errored",
                _ => "— not judged yet",
            };
            view! { <span class="verdict tone-none">{why}</span> }.into_any()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_link_keeps_the_filters() {
        let f = HistoryFilter { kind: Some("warp".into()), suite: Some("s3 hot/path".into()), ..Default::default() };
        assert_eq!(older_href(&f, "1700.42"), "/experiments?kind=warp&suite=s3%20hot%2Fpath&before=1700.42");
    }

    #[test]
    fn blank_query_values_are_no_filter() {
        let f = HistoryFilter::from_query(|k| if k == "kind" { Some(" ".into()) } else { None });
        assert!(f.is_empty());
    }
}
