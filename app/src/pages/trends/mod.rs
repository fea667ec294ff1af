//! `/trends`: for a suite, one metric of one stage or cell over time — the control arm of every judged
//! experiment, one point each, linking back to it; one series per workload fingerprint (a changed
//! fingerprint starts a new series, drawn as such), with its change points. Suite, metric, item and range
//! live in the URL.

mod changes;

pub use changes::ChangeView;

use crate::error::ErrorView;
use crate::format::utc_minutes;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrendFilter {
    pub suite: Option<String>,
    pub metric: Option<String>,
    pub item: Option<String>,
    pub since: Option<String>,
    pub until: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendLine {
    pub experiment_id: i64,
    pub at: i64,
    pub series: usize,
    pub value: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendsView {
    pub suites: Vec<String>,
    /// The filter as applied (defaults filled in).
    pub chosen: TrendFilter,
    pub metrics: Vec<(String, String)>,
    pub items: Vec<String>,
    pub svg: Result<String, String>,
    /// Fingerprints in words, in series order.
    pub series: Vec<String>,
    pub unit: String,
    /// Newest first.
    pub points: Vec<TrendLine>,
    pub changes: Vec<ChangeView>,
    /// The caller may mark change points (launchers).
    pub may_mark: bool,
}

#[cfg(feature = "ssr")]
fn words(fingerprint: &str) -> String {
    let line = crate::format::fingerprint_line(&serde_json::from_str(fingerprint).unwrap_or_default());
    if line.is_empty() {
        "no fingerprint".into()
    } else {
        line
    }
}

/// The margin the verdicts hold a metric to, for the band around a trend's level: a pipeline suite's CPU
/// or elapsed margin (its `[judge]`, or the defaults), a warp suite's WARN budget; none for memory and
/// failed rounds (judged against limits, not margins).
#[cfg(feature = "ssr")]
fn band_of(metric: &str, definition: &serde_json::Value) -> Option<charts::TrendBand> {
    let (m, _) = crate::format::suite_judge_method(definition);
    let (pct, what) = match metric {
        "cpu-s" | "cpu-s-per-item" => (m.cpu_margin_pct, "CPU margin"),
        "elapsed-s" => (m.elapsed_margin_pct, "elapsed margin"),
        "reqps" | "throughput" | "latency" | "p90-latency" | "p99-latency" => {
            (definition["warp"]["warn_pct"].as_f64().unwrap_or(judge::warp::gate::GateConfig::default().warn_pct), "WARN budget")
        }
        _ => return None,
    };
    Some(charts::TrendBand { pct, what: what.into() })
}

#[server(prefix = "/fn", endpoint = "trends", input = Json)]
pub async fn load_trends(filter: TrendFilter) -> Result<TrendsView, crate::error::AppError> {
    let store = crate::error::store()?;
    let failed = crate::error::read_failed("the trends");
    let suites = store.suites().await.map_err(failed)?;
    // Without a choice, the first suite that has something to chart (not merely the first by name).
    let mut charted = None;
    if filter.suite.is_none() {
        for s in &suites {
            if !store.trend_choices(s.id).await.map_err(failed)?.is_empty() {
                charted = Some(s);
                break;
            }
        }
    }
    let named = filter.suite.as_ref().and_then(|n| suites.iter().find(|s| &s.name == n));
    let Some(suite) = named.or(charted).or(suites.first()).cloned() else {
        let svg = Err("There are no suites yet: trends chart a suite's judged experiments.".to_string());
        return Ok(TrendsView {
            suites: vec![],
            chosen: filter,
            metrics: vec![],
            items: vec![],
            svg,
            series: vec![],
            unit: String::new(),
            points: vec![],
            changes: vec![],
            may_mark: false,
        });
    };
    let (since, until) =
        judge::units::day_range(filter.since.as_deref(), filter.until.as_deref()).map_err(crate::error::AppError::bad_request)?;
    let choices = store.trend_choices(suite.id).await.map_err(failed)?;
    let metrics: Vec<judge::trend::TrendMetric> =
        judge::trend::metrics(suite.kind).iter().copied().filter(|m| choices.iter().any(|c| c.0 == m.name)).collect();
    let metric = filter.metric.as_deref().and_then(|m| metrics.iter().find(|x| x.name == m)).or(metrics.first()).copied();
    let mut items: Vec<String> = choices.iter().filter(|c| metric.is_some_and(|m| m.name == c.0)).map(|c| c.1.clone()).collect();
    items.dedup();
    let default_item = items.iter().find(|i| *i == judge::trend::ALL_STAGES).or(items.first()).cloned();
    let item = filter.item.clone().filter(|i| items.contains(i)).or(default_item);
    let chosen = TrendFilter {
        suite: Some(suite.name.clone()),
        metric: metric.map(|m| m.name.to_string()),
        item: item.clone(),
        since: filter.since.clone(),
        until: filter.until.clone(),
    };
    let mut view = TrendsView {
        suites: suites.iter().map(|s| s.name.clone()).collect(),
        chosen,
        metrics: metrics.iter().map(|m| (m.name.to_string(), m.label.to_string())).collect(),
        items,
        svg: Err("No judged experiment of this suite has trend points yet.".into()),
        series: Vec::new(),
        unit: metric.map(|m| m.unit.to_string()).unwrap_or_default(),
        points: Vec::new(),
        changes: Vec::new(),
        may_mark: crate::auth::principal().has(crate::auth::Role::Launcher),
    };
    let (Some(metric), Some(item)) = (metric, item) else { return Ok(view) };
    let query =
        store::trends::TrendQuery { suite_id: suite.id, metric: metric.name.into(), items: vec![item.clone()], since, until, limit: 1000 };
    let rows = store.trend(&query).await.map_err(failed)?;
    let mut keys: Vec<&str> = Vec::new();
    let mut series: Vec<charts::TrendSeries> = Vec::new();
    for r in &rows {
        let i = keys.iter().position(|k| *k == r.fingerprint).unwrap_or_else(|| {
            keys.push(&r.fingerprint);
            series.push(charts::TrendSeries { label: words(&r.fingerprint), points: Vec::new() });
            keys.len() - 1
        });
        let tip = format!("#{} · {} · {} {}", r.experiment_id, utc_minutes(r.at), charts::fmt_num(r.value), metric.unit);
        series[i].points.push(charts::TrendPoint { at: r.at, value: r.value, href: format!("/experiments/{}", r.experiment_id), tip });
        view.points.push(TrendLine { experiment_id: r.experiment_id, at: r.at, series: i, value: r.value });
    }
    view.points.reverse();
    view.series = series.iter().map(|s| s.label.clone()).collect();
    // Change points per series (each fingerprint on its own), with their marks and commit ranges.
    let key = store::trends::SeriesKey { suite_id: suite.id, metric: metric.name, item: &item };
    let marks = store.change_marks(&key).await.map_err(failed)?;
    for (i, s) in series.iter().enumerate() {
        let values: Vec<f64> = s.points.iter().map(|p| p.value).collect();
        let ids: Vec<i64> = rows.iter().filter(|r| r.fingerprint == keys[i]).map(|r| r.experiment_id).collect();
        for c in judge::changepoint::detect(&values, &judge::changepoint::Params::default()) {
            let (before_id, after_id) = (ids[c.index - 1], ids[c.index]);
            let shas = store.control_shas(&[before_id, after_id]).await.map_err(failed)?;
            let mark = marks.iter().find(|m| m.fingerprint == keys[i] && m.experiment_id == after_id);
            let (good, bad) = (shas[0].1.clone(), shas[1].1.clone());
            let mut bisections = Vec::new();
            let mut bisect = None;
            if let (Some(good), Some(bad)) = (good.filter(|g| Some(g) != shas[1].1.as_ref()), bad) {
                let ctx = crate::context::server_context()?;
                for b in store.bisections_of_range(&suite.name, &good, &bad, &ctx.base_url).await.map_err(failed)? {
                    let found = match (&b.bisection.state.culprit, &b.bisection.state.outcome) {
                        (Some(c), _) => format!("culprit {}", judge::units::short_sha(&c.sha)),
                        (None, Some(o)) => o.kind().replace('_', " "),
                        (None, None) => b.bisection.status.clone(),
                    };
                    bisections.push((b.bisection.id, found));
                }
                let spec = match metric.name {
                    "cpu-s" | "cpu-s-per-item" if item != judge::trend::ALL_STAGES => Some(format!("cpu:{item}")),
                    "reqps" | "throughput" | "latency" | "p90-latency" | "p99-latency" => Some(format!("{item}:{}", metric.name)),
                    _ => None,
                };
                bisect = spec.filter(|_| view.may_mark).map(|spec| crate::pages::bisection::start::BisectOffer {
                    suite: suite.name.clone(),
                    good,
                    bad,
                    metrics: vec![(spec.clone(), format!("{} of {item}", metric.label))],
                    selected: spec,
                    fingerprint: keys[i].to_string(),
                    experiment_id: None,
                });
            }
            view.changes.push(ChangeView {
                bisections,
                bisect,
                series: i,
                fingerprint: keys[i].to_string(),
                at: s.points[c.index].at,
                first_after: after_id,
                last_before: before_id,
                before: c.before,
                after: c.after,
                change_pct: c.change_pct,
                commits: (shas[0].1.clone(), shas[1].1.clone()),
                mark: mark.map(|m| (m.state.clone(), m.reason.clone(), m.marked_by.clone(), m.marked_at)),
            });
        }
    }
    let marked: Vec<charts::TrendChange> = view
        .changes
        .iter()
        .map(|c| {
            let status = match c.mark.as_ref().map(|m| m.0.as_str()) {
                Some("acknowledged") => " · expected",
                Some(_) => " · to investigate",
                None => "",
            };
            charts::TrendChange { at: c.at, series: c.series, label: format!("{}{status}", c.label()) }
        })
        .collect();
    let title = format!("{} of {item} — {}", metric.label, suite.name);
    let band = band_of(metric.name, &suite.definition);
    view.svg = charts::trend_chart(&title, metric.unit, &series, &marked, band.as_ref()).map_err(|e| e.to_string());
    Ok(view)
}

#[component]
pub fn TrendsPage() -> impl IntoView {
    // Read once: the page is rendered whole on the server (islands: it never re-renders in the browser).
    let filter = use_query_map().with_untracked(|q| {
        let get = |k: &str| q.get(k).filter(|v| !v.is_empty());
        TrendFilter { suite: get("suite"), metric: get("metric"), item: get("item"), since: get("since"), until: get("until") }
    });
    view! {
        <Title text="Trends" />
        <h1>"Trends"</h1>
        {crate::awaited::awaited(async move {
            match load_trends(filter).await {
                Ok(v) => view! { <TrendsBody v /> }.into_any(),
                Err(e) => view! { <ErrorView error=e /> }.into_any(),
            }
        })}
    }
}

#[component]
fn TrendsBody(v: TrendsView) -> impl IntoView {
    let c = v.chosen.clone();
    let options = |all: Vec<(String, String)>, current: Option<String>| {
        all.into_iter()
            .map(
                |(value, label)| view! { <option value=value.clone() selected=current.as_deref() == Some(value.as_str())>{label}</option> },
            )
            .collect_view()
    };
    let unit = v.unit.clone();
    view! {
        <form class="filters" method="get" action="/trends" role="search">
            <label>"Suite" <select name="suite">{options(v.suites.iter().map(|s| (s.clone(), s.clone())).collect(), c.suite.clone())}</select></label>
            <label>"Metric" <select name="metric">{options(v.metrics.clone(), c.metric.clone())}</select></label>
            <label>"Stage or cell" <select name="item">{options(v.items.iter().map(|s| (s.clone(), s.clone())).collect(), c.item.clone())}</select></label>
            <label>"From" <input name="since" type="date" value=c.since.clone().unwrap_or_default() /></label>
            <label>"To" <input name="until" type="date" value=c.until.clone().unwrap_or_default() /></label>
            <button type="submit">"Show"</button>
        </form>
        <p class="muted">"Each point is the control arm of one judged experiment; a new workload fingerprint starts a new series."</p>
        {match v.svg.clone() {
            Ok(svg) => view! { <figure class="chart trend"><div class="svg" inner_html=svg></div>
                <figcaption>{format!("{}, {}", count(v.series.len(), "series", "series"), count(v.points.len(), "point", "points"))}</figcaption></figure> }.into_any(),
            Err(why) => view! { <section class="empty"><h2>"Nothing to chart yet"</h2><p>{why}</p></section> }.into_any(),
        }}
        {(!v.points.is_empty()).then(|| view! { <ChangeList v=v.clone() /> })}
        {(!v.points.is_empty()).then(|| view! {
            <details class="trend-points">
                <summary>"The points (newest first)"</summary>
                <table class="data">
                    <thead><tr><th scope="col">"Experiment"</th><th scope="col">"Launched"</th><th scope="col">"Fingerprint"</th><th scope="col">{unit.clone()}</th></tr></thead>
                    <tbody>{v.points.iter().take(200).map(|p| view! {
                        <tr><td><a href=format!("/experiments/{}", p.experiment_id)>{format!("#{}", p.experiment_id)}</a></td>
                            <td>{utc_minutes(p.at)}</td><td>{v.series.get(p.series).cloned()}</td><td class="num">{format!("{:.4}", p.value)}</td></tr>
                    }).collect_view()}</tbody>
                </table>
            </details>
        })}
    }
}

fn short(sha: &Option<String>) -> String {
    sha.as_deref().map(judge::units::short_sha).unwrap_or("?").to_string()
}

/// The change points of the chart, newest first, with what people said about them.
#[component]
fn ChangeList(v: TrendsView) -> impl IntoView {
    let c = v.chosen.clone();
    let (suite, metric, item) = (c.suite.unwrap_or_default(), c.metric.unwrap_or_default(), c.item.unwrap_or_default());
    view! {
        <section class="changes" aria-label="Change points">
            <h2>"Change points"</h2>
            {if v.changes.is_empty() {
                view! { <p class="muted">"None: no series moved beyond its noise (E-divisive means, p < 0.00001, at least 1 %)."</p> }.into_any()
            } else {
                view! {
                    <table class="data">
                        <thead><tr><th scope="col">"From"</th><th scope="col">"Series"</th><th scope="col">"Level"</th><th scope="col">"Change"</th>
                            <th scope="col">"First experiment after"</th><th scope="col">"Commits"</th><th scope="col">"Status"</th></tr></thead>
                        <tbody>{v.changes.iter().rev().map(|ch| view! {
                            <tr>
                                <td>{utc_minutes(ch.at)}</td>
                                <td>{v.series.get(ch.series).cloned()}</td>
                                <td class="num">{ch.label()}</td>
                                <td class="num">{format!("{:+.1} %", ch.change_pct)}</td>
                                <td><a href=format!("/experiments/{}", ch.first_after)>{format!("#{}", ch.first_after)}</a>
                                    " (after " <a href=format!("/experiments/{}", ch.last_before)>{format!("#{}", ch.last_before)}</a> ")"</td>
                                <td><code>{format!("{}..{}", short(&ch.commits.0), short(&ch.commits.1))}</code></td>
                                <td>{match ch.mark.clone() {
                                    Some((state, reason, by, at)) => view! {
                                        <span class=format!("mark mark-{state}")>{if state == "acknowledged" { "expected" } else { "regression to investigate" }}</span>
                                        {format!(": {reason} ({}, {})", by.unwrap_or_else(|| "someone".into()), utc_minutes(at))}
                                    }.into_any(),
                                    None => view! { <span class="muted">"not marked"</span> }.into_any(),
                                }}
                                {v.may_mark.then(|| view! {
                                    <changes::MarkChange suite=suite.clone() metric=metric.clone() item=item.clone() fingerprint=ch.fingerprint.clone() experiment_id=ch.first_after />
                                })}
                                {(!ch.bisections.is_empty()).then(|| view! {
                                    <p class="change-bisections">"Bisected: " {ch.bisections.iter().map(|(id, found)| view! {
                                        <a href=format!("/bisections/{id}")>{format!("#{id} ({found})")}</a> " "
                                    }).collect_view()}</p>
                                })}
                                {ch.bisect.clone().map(|offer| view! { <crate::pages::bisection::start::FindCommit offer /> })}</td>
                            </tr>
                        }).collect_view()}</tbody>
                    </table>
                }.into_any()
            }}
        </section>
    }
}

/// "1 point", "12 points".
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
