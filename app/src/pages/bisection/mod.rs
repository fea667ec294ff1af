//! `/bisections/{id}`: a bisection's commit line (each probed commit's change from the good end, with its
//! interval), its steps as links to their experiments, the culprit with its message, author and diff stat,
//! and the link and PR-comment Markdown to paste into a review (through a share link, `share.rs`, for
//! readers without an account). While it runs the page reloads itself.

pub mod list;
pub mod share;
pub mod start;

use crate::error::{AppError, ErrorView};
use crate::format::utc_minutes;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use leptos_meta::{Meta, Title};
use leptos_router::hooks::use_params_map;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRow {
    pub role: String,
    pub commit: String,
    pub subject: String,
    pub against: String,
    pub experiment_id: Option<i64>,
    pub change: String,
    pub interval: String,
    pub reading: String,
    pub words: String,
    pub trials: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BisectionView {
    pub id: i64,
    pub title: String,
    pub suite: String,
    pub status: String,
    pub metric: String,
    pub range: String,
    pub commits: usize,
    pub created: String,
    pub by: Option<String>,
    pub svg: Result<String, String>,
    pub steps: Vec<StepRow>,
    /// "culprit", "no_culprit", "ambiguous" (none while it runs).
    pub outcome_kind: Option<String>,
    pub outcome: Option<String>,
    pub culprit: Option<wire::bisection::JsonCulprit>,
    pub plan: String,
    pub counts: String,
    pub log: Vec<String>,
    pub markdown: String,
    pub url: String,
    pub may_cancel: bool,
    /// The reader may make and revoke its share links (its launcher or an admin).
    pub may_share: bool,
    /// Its live share links (counted for who may share, else 0).
    pub live_shares: i64,
    /// The reader came through a share link: no sign-in-only links.
    pub via_share: bool,
}

#[server(prefix = "/fn", endpoint = "bisection", input = Json)]
pub async fn load_bisection(id: i64) -> Result<BisectionView, AppError> {
    use judge::bisect::{Reading, StepRole};
    let store = crate::error::store()?;
    let ctx = crate::context::server_context()?;
    let reader = crate::auth::principal();
    if !reader.can_read_bisection(id) {
        crate::auth::set_status(404);
        return Err(AppError::NotFound(format!("there is no bisection {id} for this link")));
    }
    let b = match store.bisection(id, &ctx.base_url).await {
        Ok(b) => b,
        Err(store::StoreError::NotFound { .. }) => {
            crate::auth::set_status(404);
            return Err(AppError::NotFound(format!("there is no bisection {id}")));
        }
        Err(e) => return Err(crate::error::read_failed("the bisection")(e)),
    };
    let (j, owner) = (b.bisection, b.launched_by_id);
    let s = &j.state;
    let search = &s.search;
    let short = |sha: &str| judge::units::short_sha(sha).to_string();
    let steps = search
        .steps
        .iter()
        .map(|st| StepRow {
            role: match st.role {
                StepRole::Ends => "the ends".into(),
                StepRole::Probe => "probe".into(),
                StepRole::Confirm => "confirmation".into(),
            },
            commit: short(&search.commits[st.commit].sha),
            subject: search.commits[st.commit].subject.clone(),
            against: st.against.map_or_else(|| "the good end".to_string(), |i| format!("{} (its parent)", short(&search.commits[i].sha))),
            experiment_id: st.experiment_id,
            change: st.change_pct.map(judge::pipeline::report::fmt_pct).unwrap_or_else(|| "–".into()),
            interval: st
                .interval_pct
                .map(|[a, b]| format!("{} … {}", judge::pipeline::report::fmt_pct(a), judge::pipeline::report::fmt_pct(b)))
                .unwrap_or_default(),
            reading: match st.reading {
                None => "running".into(),
                Some(Reading::Moved) => "moved".into(),
                Some(Reading::Unmoved) => "not moved".into(),
                Some(Reading::Unsure) => "undecided".into(),
                Some(Reading::Opposite) => "moved the other way".into(),
                Some(Reading::Broken) => "not built (skipped)".into(),
            },
            words: st.words.clone(),
            trials: st.trials,
        })
        .collect();
    let (probes, launched) = search.counts();
    let trials: u32 = search.steps.iter().filter(|x| !x.reused).map(|x| x.trials).sum();
    let wall = j.finished_at.unwrap_or_else(store::now_ms) - j.created_at;
    let counts = format!(
        "{launched} experiment{} launched ({probes} probing){}; {trials} trials an arm in all; {} of wall time",
        if launched == 1 { "" } else { "s" },
        if search.steps.iter().any(|x| x.reused) { ", the ends reused from the experiment it started from" } else { "" },
        judge::units::fmt_duration_ms(wall)
    );
    let metric = s.metric.words();
    let svg = charts::bisection_line(&s.title, &metric, search, s.outcome.as_ref(), &|id| format!("/experiments/{id}"))
        .map_err(|e| e.to_string());
    let markdown = judge::bisect::markdown(
        &s.title,
        &j.url,
        &ctx.base_url,
        &metric,
        search,
        s.outcome.as_ref(),
        s.culprit.as_ref().map(|c| judge::bisect::CulpritLine { sha: &c.sha, subject: &c.subject, author: &c.author, stat: &c.stat }),
    );
    let may_cancel = j.status == "running" && reader.may(crate::auth::ExperimentAct::CancelBisection, id, owner).is_ok();
    let may_share = reader.may(crate::auth::ExperimentAct::ShareBisection, id, owner).is_ok();
    let live_shares =
        if may_share { store.bisection_share_count(id).await.map_err(crate::error::read_failed("its share links"))? } else { 0 };
    Ok(BisectionView {
        id,
        title: s.title.clone(),
        suite: j.suite.clone(),
        status: j.status.clone(),
        metric,
        range: format!("{}..{}", short(&j.good_sha), short(&j.bad_sha)),
        commits: search.commits.len(),
        created: utc_minutes(j.created_at),
        by: j.launched_by.clone(),
        svg,
        steps,
        outcome_kind: s.outcome.as_ref().map(|o| o.kind().to_string()),
        outcome: s.outcome.as_ref().map(|o| o.words().to_string()),
        culprit: s.culprit.clone(),
        plan: s.plan.words.clone(),
        counts,
        log: s.log.clone(),
        markdown,
        url: j.url.clone(),
        may_cancel,
        may_share,
        live_shares,
        via_share: matches!(reader, crate::auth::Principal::Share { .. }),
    })
}

#[component]
pub fn BisectionPage() -> impl IntoView {
    let id = use_params_map().read_untracked().get("id").and_then(|v| v.parse::<i64>().ok());
    view! {
        {crate::awaited::awaited(async move {
            let loaded = match id {
                Some(id) => load_bisection(id).await,
                None => Err(AppError::NotFound("a bisection id is a number".into())),
            };
            match loaded {
                Ok(view) => view! { <BisectionBody view /> }.into_any(),
                Err(error) => view! { <Title text="Bisection" /> <ErrorView error /> }.into_any(),
            }
        })}
    }
}

#[component]
fn BisectionBody(view: BisectionView) -> impl IntoView {
    let running = view.status == "running";
    let tone = match view.outcome_kind.as_deref() {
        Some("culprit") => "bad",
        Some("no_culprit") => "good",
        Some(_) => "unknown",
        None => "none",
    };
    let id = view.id;
    view! {
        <Title text=format!("{} · bisection #{}", view.title, view.id) />
        // While it runs, the page reads itself again every 10 s: each step ending fills it in.
        {running.then(|| view! { <Meta http_equiv="refresh" content="10" /> })}
        <div class="page-head">
            <h1>{view.title.clone()} " " <span class="muted">"bisection #" {view.id}</span></h1>
            <div class="head-actions">
                {view.may_cancel.then(|| view! { <CancelBisection id /> })}
            </div>
        </div>
        <section class=format!("banner tone-{tone}") aria-label="Outcome">
            <p class="banner-verdict bisection-status">
                {match view.outcome_kind.as_deref() {
                    Some("culprit") => "🎯 culprit found".to_string(),
                    Some("no_culprit") => "✅ no culprit".to_string(),
                    Some(_) => "❔ ambiguous".to_string(),
                    None if running => "⏳ searching".to_string(),
                    None => view.status.clone(),
                }}
                " " <span class="muted">{view.status.clone()}</span>
            </p>
            {view.outcome.clone().map(|o| view! { <p class="bisection-outcome">{o}</p> })}
        </section>
        {view.culprit.clone().map(|c| view! {
            <section class="culprit" aria-label="Culprit">
                <h2>"Culprit " <code>{judge::units::short_sha(&c.sha).to_string()}</code></h2>
                <p class="culprit-subject"><strong>{c.subject.clone()}</strong></p>
                {(!c.body.is_empty()).then(|| view! { <pre class="culprit-body">{c.body.clone()}</pre> })}
                <dl class="facts">
                    <dt>"Author"</dt><dd>{c.author.clone()}</dd>
                    <dt>"Date"</dt><dd>{judge::units::iso_to_ms(&c.date).map(utc_minutes).unwrap_or_else(|| c.date.clone())}</dd>
                    <dt>"Diff"</dt><dd>{c.stat.clone()}
                        {(!c.files.is_empty()).then(|| view! { <ul class="diffstat">{c.files.iter().map(|f| view! { <li><code>{f.clone()}</code></li> }).collect_view()}</ul> })}
                    </dd>
                    {c.merged.clone().map(|m| view! {
                        <dt>"Merge"</dt><dd>"A merge commit: the change came in with the branch it merged (second parent " <code>{judge::units::short_sha(&m).to_string()}</code> "); bisect that branch to find the commit inside it."</dd>
                    })}
                </dl>
            </section>
        })}
        <dl class="facts">
            <dt>"Suite"</dt><dd>{view.suite.clone()}</dd>
            <dt>"Metric"</dt><dd>{view.metric.clone()}</dd>
            <dt>"Range"</dt><dd><code>{view.range.clone()}</code> {format!(" · {} commit{} on the first-parent line", view.commits, if view.commits == 1 { "" } else { "s" })}</dd>
            <dt>"Started"</dt><dd>{view.created.clone()} {view.by.clone().map(|b| format!(" by {b}"))}</dd>
            <dt>"Plan"</dt><dd>{view.plan.clone()}</dd>
            <dt>"So far"</dt><dd class="bisection-counts">{view.counts.clone()}</dd>
        </dl>
        <figure class="chart-box">
            {match view.svg.clone() {
                Ok(svg) => view! { <div class="chart-svg" inner_html=svg /> }.into_any(),
                Err(e) => view! { <p class="muted">{e}</p> }.into_any(),
            }}
        </figure>
        <section aria-label="Steps">
            <h2>"Steps"</h2>
            <table class="data bisection-steps">
                <thead><tr><th scope="col">"Step"</th><th scope="col">"Commit"</th><th scope="col">"Against"</th><th scope="col">"Experiment"</th>
                    <th scope="col">"Change"</th><th scope="col">"Interval"</th><th scope="col">"Reading"</th><th scope="col">"Pairs"</th></tr></thead>
                <tbody>{view.steps.iter().map(|s| view! {
                    <tr>
                        <td>{s.role.clone()}</td>
                        <td><code>{s.commit.clone()}</code> " " <span class="muted">{s.subject.clone()}</span></td>
                        <td>{s.against.clone()}</td>
                        <td>{s.experiment_id.map(|e| view! { <a href=format!("/experiments/{e}")>{format!("#{e}")}</a> })}</td>
                        <td class="num">{s.change.clone()}</td>
                        <td class="num">{s.interval.clone()}</td>
                        <td title=s.words.clone()>{s.reading.clone()}</td>
                        <td class="num">{s.trials}</td>
                    </tr>
                }).collect_view()}</tbody>
            </table>
        </section>
        <section aria-label="Share">
            <h2>"Share"</h2>
            {(!view.via_share).then(|| view! { <p>"Link for signed-in users: " <a href=view.url.clone()>{view.url.clone()}</a></p> })}
            <share::BisectionShare id may_share=view.may_share live=view.live_shares url=view.url.clone() markdown=view.markdown.clone() />
        </section>
        <details class="bisection-log"><summary>"What happened"</summary>
            <ol>{view.log.iter().map(|l| view! { <li>{l.clone()}</li> }).collect_view()}</ol>
        </details>
    }
}

/// Cancels the bisection and every step still running (its launcher or an admin).
#[island]
pub fn CancelBisection(id: i64) -> impl IntoView {
    use crate::client::{reload, spawn_call, Method};
    let busy = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let act = move |_| {
        busy.set(true);
        spawn_call(Method::Post, format!("/api/v1/bisections/{id}/cancel"), None, move |result| {
            busy.set(false);
            match result {
                Ok(_) => reload(),
                Err(e) => error.set(Some(e)),
            }
        });
    };
    view! {
        <div class="actions">
            <button type="button" class="danger" disabled=move || busy.get() on:click=act>"Cancel bisection"</button>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        </div>
    }
}
