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
    /// Trials an arm by default: a number, or "auto".
    pub trials: judge::launch_rules::JsonTrials,
    /// With trials "auto": the most trials an arm by default (the suite's budget).
    #[serde(default)]
    pub max_trials: u32,
    pub order: String,
    pub fingerprint: BTreeMap<String, FieldSpec>,
    /// Warp suites: the relative budgets (FAIL beyond, WARN beyond), in %.
    pub budgets: Option<(f64, f64)>,
    /// Warp suites: the matrix a launch may shape.
    #[serde(default)]
    pub warp: Option<WarpChoice>,
    /// The suite repository's branches, most recently committed first (the treatment field's typeahead).
    #[serde(default)]
    pub branches: Vec<String>,
}

/// A warp suite's matrix as the form offers it: its workloads and drive-sync values (a launch runs a
/// subset), its own settings (the fields' placeholders) and the limits a launch must keep within.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WarpChoice {
    pub workloads: Vec<String>,
    pub drive_sync: Vec<String>,
    pub rounds: u32,
    pub duration: String,
    pub warmup: String,
    pub cooldown: String,
    pub concurrency: u32,
    /// The suite's `[warp.limits]` in words: "rounds 1–10 · duration 1s–5m · …".
    pub limits: String,
    /// The suite's phase order is ABBA.
    pub abba: bool,
    /// The smoke preset's settings [rounds, duration, warm-up, cool-down, concurrency]: the fields'
    /// placeholders while it is chosen (the full matrix's otherwise).
    #[serde(default)]
    pub smoke: Option<[String; 5]>,
}

impl SuiteChoice {
    /// The parts of a suite's definition the form shows, with the suite's own defaults.
    #[cfg(feature = "ssr")]
    pub fn from_definition(d: &suite::SuiteDefinition) -> SuiteChoice {
        SuiteChoice {
            name: d.name.clone(),
            kind: d.kind,
            description: d.description.clone(),
            base_branch: d.base_branch.clone(),
            trials: d.defaults.trials,
            max_trials: d.defaults.max_trials,
            order: d.defaults.order.as_str().to_string(),
            fingerprint: d.fingerprint.clone(),
            budgets: d.warp.as_ref().map(|w| (w.fail_pct, w.warn_pct)),
            warp: d.warp.as_ref().filter(|_| d.kind == judge::ExperimentKind::Warp).map(|w| WarpChoice {
                workloads: w.workloads.clone(),
                drive_sync: w.drive_sync.values.clone(),
                rounds: w.rounds,
                duration: w.duration.clone(),
                warmup: w.warmup.clone(),
                cooldown: w.cooldown.clone(),
                concurrency: w.concurrency,
                limits: w.limits.describe(),
                abba: w.order == suite::warp::PhaseOrder::Abba,
                smoke: w
                    .with_matrix(&wire::launch::JsonWarpMatrix { preset: Some(wire::launch::WarpPreset::Smoke), ..Default::default() })
                    .ok()
                    .map(|m| [m.rounds.to_string(), m.duration.clone(), m.warmup.clone(), m.cooldown.clone(), m.concurrency.to_string()]),
            }),
            branches: Vec::new(),
        }
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
pub async fn launch_suites() -> Result<LaunchChoices, crate::error::AppError> {
    let store = crate::error::store()?;
    let failed = crate::error::read_failed("the suites");
    let suites = store.suites().await.map_err(failed)?;
    let ctx = crate::context::server_context()?;
    let mut choices: Vec<SuiteChoice> = Vec::with_capacity(suites.len());
    for s in &suites {
        let d = serde_json::from_value::<suite::SuiteDefinition>(s.definition.clone())
            .map_err(|e| crate::error::AppError::Server(format!("the stored suite {:?} cannot be read: {e}", s.name)))?;
        let mut choice = SuiteChoice::from_definition(&d);
        choice.branches = (ctx.branches)(d.repository.clone()).await;
        choices.push(choice);
    }
    let suites = choices;
    let last_used = match crate::auth::principal() {
        crate::auth::Principal::User { name, .. } => {
            let mine = store::experiments::HistoryFilter { by: Some(name), ..Default::default() };
            let query = store::experiments::HistoryQuery::from_filter(&mine, 1).map_err(crate::error::AppError::bad_request)?;
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
    // A link may name the treatment too (the suite page's branches, the empty home page's example).
    let head = use_query_map().read_untracked().get("head").filter(|h| judge::launch_rules::is_safe_ref(h)).unwrap_or_default();
    // …and the trials ("auto", or a number): the example's link asks for pairs until the verdict is decided.
    let trials = use_query_map().read_untracked().get("trials").filter(|t| t == "auto" || t.parse::<u32>().is_ok()).unwrap_or_default();
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
                    view! { <form::LaunchForm suites=c.suites initial head trials /> }.into_any()
                }
                Err(e) => view! { <crate::error::ErrorView error=e /> }.into_any(),
            }
        })}
    }
}
