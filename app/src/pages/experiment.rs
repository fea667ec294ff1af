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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentView {
    pub summary: HistoryRow,
    pub arms: Vec<ArmView>,
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
    let store = use_context::<store::Store>().ok_or_else(|| ServerFnError::new("the store is not available"))?;
    let summary = match store.experiment_summary(id).await {
        Ok(s) => s,
        Err(store::StoreError::NotFound { .. }) => return Err(not_found()),
        Err(e) => {
            tracing::error!(error = %e, id, "experiment query failed");
            return Err(ServerFnError::new("the experiment could not be read; the server log has the details"));
        }
    };
    let arms = store.arms(id).await.map_err(|e| {
        tracing::error!(error = %e, id, "arms query failed");
        ServerFnError::new("the experiment could not be read; the server log has the details")
    })?;
    Ok(ExperimentView { summary: summary.into(), arms: arms.into_iter().map(|(_, name, role, sha)| ArmView { name, role, sha }).collect() })
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
        <h2>"Arms"</h2>
        <ul class="arms">
            {view.arms.into_iter().map(|a| view! {
                <li><strong>{a.name}</strong> " (" {a.role} ") " <code>{a.sha.unwrap_or_else(|| "sha not recorded".into())}</code></li>
            }).collect_view()}
        </ul>
    }
}
