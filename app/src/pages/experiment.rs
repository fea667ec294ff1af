//! One experiment's page: what was compared and the verdict. Signed-in users and holders of the
//! experiment's share link read it; the experiment-pages issue adds the reports, charts and downloads.

use crate::error::{AppError, ErrorView};
use crate::format::{short_ref, utc_minutes};
use crate::pages::history::{HistoryRow, VerdictBadge};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmView {
    pub name: String,
    pub role: String,
    pub sha: Option<String>,
}

/// One trial as the page lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialView {
    pub seq: i64,
    pub arm: String,
    pub attempt: i64,
    pub state: String,
    /// The launcher's job: a local supervisor's pid or a cluster engine's job id, with the engine's state.
    pub job: String,
    /// The infrastructure reason or the failure's detail.
    pub note: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentView {
    pub summary: HistoryRow,
    pub arms: Vec<ArmView>,
    pub trials: Vec<TrialView>,
    /// The verdict's reasons, most important first.
    pub reasons: Vec<String>,
}

#[server(prefix = "/fn", endpoint = "experiment")]
pub async fn load_experiment(id: i64) -> Result<ExperimentView, ServerFnError> {
    let not_found = || {
        crate::auth::set_status(404);
        ServerFnError::new(format!("not found: there is no experiment {id} you can see"))
    };
    // A share link for another experiment must not learn whether this one exists.
    if !crate::auth::principal().can_read_experiment(id) {
        return Err(not_found());
    }
    let store = crate::error::store()?;
    let failed = crate::error::read_failed("the experiment");
    let summary = match store.experiment_summary(id).await {
        Ok(s) => s,
        Err(store::StoreError::NotFound { .. }) => return Err(not_found()),
        Err(e) => return Err(failed(e)),
    };
    let arms = store.arms(id).await.map_err(failed)?;
    let trials = store.trials(id).await.map_err(failed)?;
    let reasons = store.latest_verdict(id).await.map_err(failed)?.map(|(_, reasons, _)| reasons).unwrap_or_default();
    let arm_name = |arm_id: i64| arms.iter().find(|a| a.0 == arm_id).map(|a| a.1.clone()).unwrap_or_default();
    let trials = trials
        .into_iter()
        .map(|t| TrialView {
            seq: t.seq,
            arm: arm_name(t.arm_id),
            attempt: t.attempt,
            state: t.state.as_str().to_string(),
            job: match (t.job_id, t.engine_state) {
                (Some(j), Some(e)) => format!("{j} ({e})"),
                (Some(j), None) => j,
                (None, _) => String::new(),
            },
            note: [t.infra_reason.map(|r| r.as_str().to_string()), t.detail]
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(": "),
        })
        .collect();
    Ok(ExperimentView {
        summary: summary.into(),
        arms: arms.into_iter().map(|(_, name, role, sha)| ArmView { name, role, sha }).collect(),
        trials,
        reasons,
    })
}

#[component]
pub fn ExperimentPage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").and_then(|v| v.parse::<i64>().ok());
    let experiment = Resource::new(id, |id| async move {
        match id {
            Some(id) => load_experiment(id).await.map_err(AppError::from),
            None => Err(AppError::NotFound("an experiment id is a number".into())),
        }
    });
    view! {
        <Suspense fallback=|| view! { <p class="muted">"Loading the experiment…"</p> }>
            {move || Suspend::new(async move {
                match experiment.await {
                    Ok(view) => view! { <ExperimentBody view /> }.into_any(),
                    Err(error) => view! { <Title text="Experiment" /> <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn ExperimentBody(view: ExperimentView) -> impl IntoView {
    let s = view.summary;
    let refs = format!("{} → {}", s.base_ref.as_deref().map(short_ref).unwrap_or("?"), s.head_ref.as_deref().map(short_ref).unwrap_or("?"));
    view! {
        <Title text=s.title.clone() />
        <div class="page-head">
            <h1>{s.title.clone()} " " <span class="muted">"#" {s.id}</span></h1>
        </div>
        <dl class="facts">
            <dt>"Verdict"</dt><dd><VerdictBadge verdict=s.verdict /></dd>
            <dt>"Status"</dt><dd>{s.status.as_str()}</dd>
            <dt>"Kind"</dt><dd>{s.kind.as_str()}</dd>
            <dt>"Control → treatment"</dt><dd class="refs">{refs}</dd>
            <dt>"Launched"</dt><dd>{utc_minutes(s.created_at)} {s.launched_by.map(|w| format!(" by {w}"))}</dd>
        </dl>
        {(!view.reasons.is_empty()).then(|| view! {
            <h2>"Why"</h2>
            <ul class="reasons">{view.reasons.iter().map(|r| view! { <li>{r.clone()}</li> }).collect_view()}</ul>
        })}
        <h2>"Arms"</h2>
        <ul class="arms">
            {view.arms.into_iter().map(|a| view! {
                <li><strong>{a.name}</strong> " (" {a.role} ") " <code>{a.sha.unwrap_or_else(|| "sha not recorded".into())}</code></li>
            }).collect_view()}
        </ul>
        <h2>"Trials"</h2>
        {if view.trials.is_empty() {
            view! { <p class="muted">"No trials were planned."</p> }.into_any()
        } else {
            view! {
                <table class="history">
                    <thead><tr><th scope="col">"#"</th><th scope="col">"Arm"</th><th scope="col">"Attempt"</th><th scope="col">"State"</th><th scope="col">"Job"</th><th scope="col">"Note"</th></tr></thead>
                    <tbody>
                        {view.trials.into_iter().map(|t| view! {
                            <tr><td class="num">{t.seq + 1}</td><td>{t.arm}</td><td class="num">{t.attempt}</td><td>{t.state}</td><td><code>{t.job}</code></td><td>{t.note}</td></tr>
                        }).collect_view()}
                    </tbody>
                </table>
            }.into_any()
        }}
    }
}
