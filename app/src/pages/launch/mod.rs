//! The launch page: choose a suite, fill in what differs from its defaults, preview the dry-run plan,
//! launch (or calibrate), then go to the experiment's page. The form is an island that posts the same
//! JSON as `POST /api/v1/experiments` and `arbiter launch`.

mod body;
mod form;
mod preview;

pub use body::{launch_body, FormValues};
use judge::launch_rules::FieldSpec;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the form needs to know about a suite (read from its stored definition).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteChoice {
    pub name: String,
    pub kind: judge::ExperimentKind,
    pub description: String,
    pub base_branch: String,
    pub trials: u32,
    pub order: String,
    pub fingerprint: BTreeMap<String, FieldSpec>,
    /// Warp suites: the relative budgets (FAIL beyond, WARN beyond), in %.
    pub budgets: Option<(f64, f64)>,
}

impl SuiteChoice {
    /// Reads the parts of a stored suite definition the form shows.
    pub fn from_definition(name: &str, kind: judge::ExperimentKind, d: &serde_json::Value) -> Result<SuiteChoice, String> {
        let fingerprint = serde_json::from_value(d.get("fingerprint").cloned().unwrap_or_else(|| serde_json::json!({})))
            .map_err(|e| format!("suite {name:?}: fingerprint: {e}"))?;
        let text = |v: &serde_json::Value, default: &str| v.as_str().unwrap_or(default).to_string();
        Ok(SuiteChoice {
            name: name.to_string(),
            kind,
            description: text(&d["description"], ""),
            base_branch: text(&d["base_branch"], "main"),
            trials: d["defaults"]["trials"].as_u64().unwrap_or(3) as u32,
            order: text(&d["defaults"]["order"], "interleaved"),
            fingerprint,
            budgets: d["warp"]["fail_pct"].as_f64().zip(d["warp"]["warn_pct"].as_f64()),
        })
    }
}

/// The suites a launch may use, and the one the form opens on without `?suite=`: the suite of the caller's
/// newest launch, else the first pipeline suite (the example most people start with), else the first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchChoices {
    pub suites: Vec<SuiteChoice>,
    pub preferred: Option<String>,
}

#[server(prefix = "/fn", endpoint = "launch_suites")]
pub async fn launch_suites() -> Result<LaunchChoices, ServerFnError> {
    let store = crate::error::store()?;
    let failed = crate::error::read_failed("the suites");
    let suites = store.suites().await.map_err(failed)?;
    let suites: Vec<SuiteChoice> = suites
        .iter()
        .map(|s| SuiteChoice::from_definition(&s.name, s.kind, &s.definition))
        .collect::<Result<_, _>>()
        .map_err(ServerFnError::new)?;
    let last_used = match crate::auth::principal() {
        crate::auth::Principal::User { name, .. } => {
            let query =
                store::experiments::HistoryParams { by: Some(name), ..Default::default() }.query(1).map_err(crate::error::bad_request)?;
            let failed = crate::error::read_failed("your last launch");
            store.list_experiments(&query).await.map_err(failed)?.experiments.into_iter().next().and_then(|e| e.suite)
        }
        _ => None,
    };
    let preferred = last_used
        .filter(|n| suites.iter().any(|s| &s.name == n))
        .or_else(|| suites.iter().find(|s| s.kind == judge::ExperimentKind::Pipeline).map(|s| s.name.clone()));
    Ok(LaunchChoices { suites, preferred })
}

#[component]
pub fn LaunchPage() -> impl IntoView {
    let chosen = use_query_map().read_untracked().get("suite").unwrap_or_default();
    view! {
        <Title text="Launch" />
        <h1>"Launch an experiment"</h1>
        <p class="muted">
            "Control is the merge-base of the suite's base branch and your head; the treatment is the head. Extra "
            "arms run only when you add them. Preview shows every trial's command before anything runs."
        </p>
        {crate::awaited::awaited(async move {
            match launch_suites().await {
                Ok(c) if c.suites.is_empty() => view! {
                    <section class="empty"><h2>"No suites yet"</h2>
                        <p>"Put a suite file in the server's suites folder, or have an admin create one on " <a href="/suites">"Suites"</a> "."</p>
                    </section>
                }.into_any(),
                Ok(c) => {
                    let initial = if chosen.is_empty() { c.preferred.unwrap_or_default() } else { chosen };
                    view! { <form::LaunchForm suites=c.suites initial /> }.into_any()
                }
                Err(e) => view! { <crate::error::ErrorView error=crate::error::AppError::from(e) /> }.into_any(),
            }
        })}
    }
}
