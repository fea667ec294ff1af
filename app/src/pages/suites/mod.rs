//! `/suites` (launchers read, admins write): every suite with where it came from, and for admins a
//! form to create one. `/suites/{name}`: one suite as TOML, its noise profiles and recent experiments;
//! admins edit it there. The TOML is checked by the same code that checks suite files.

mod detail;
mod editor;
mod schedules;

pub use detail::{load_suite, SuitePage};

use crate::error::ErrorView;
use crate::format::utc_minutes;
use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteLine {
    pub name: String,
    pub kind: String,
    pub description: String,
    pub source: String,
    pub updated_at: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuitesView {
    pub suites: Vec<SuiteLine>,
    pub may_edit: bool,
}

/// Where a suite came from, in words.
pub fn source_words(source: &str) -> String {
    match source.strip_prefix("file:") {
        Some(path) => format!("file {path}"),
        None if source == "ui" => "saved on this page".into(),
        None => source.to_string(),
    }
}

#[server(prefix = "/fn", endpoint = "suites")]
pub async fn load_suites() -> Result<SuitesView, crate::error::AppError> {
    let me = crate::auth::require(crate::auth::Role::Launcher)?;
    let store = crate::error::store()?;
    let suites = store.suites().await.map_err(crate::error::read_failed("the suites"))?;
    Ok(SuitesView {
        suites: suites
            .into_iter()
            .map(|s| SuiteLine {
                description: s.definition["description"].as_str().unwrap_or("").to_string(),
                name: s.name,
                kind: s.kind.as_str().into(),
                source: s.source,
                updated_at: s.updated_at,
            })
            .collect(),
        may_edit: me.has(crate::auth::Role::Admin),
    })
}

const TEMPLATE: &str = r#"name = "my-suite"
kind = "pipeline"
description = "What this suite measures"
# An absolute path or a clone URL.
repository = "/srv/repos/my-pipeline"
base_branch = "main"
command = ["python", "{worktree}/bench.py", "--run-tag", "{run_tag}", "--finelog-url", "{finelog_url}"]
timeout_minutes = 30

[resources]
cpu = 2
ram = "4GiB"

[defaults]
trials = 3
order = "interleaved"
"#;

#[component]
pub fn SuitesPage() -> impl IntoView {
    view! {
        <Title text="Suites" />
        <h1>"Suites"</h1>
        <p class="muted">"A suite is a named benchmark: its repository, the arm's command, the fingerprint fields a launch fills in, and its budgets. Files in the server's suites folder load at start-up; admins create and edit suites here."</p>
        {crate::awaited::awaited(async move {
            match load_suites().await {
                Ok(v) => view! {
                    <table class="data suites">
                        <thead><tr><th scope="col">"Suite"</th><th scope="col">"Kind"</th><th scope="col">"Description"</th><th scope="col">"Source"</th><th scope="col">"Updated"</th></tr></thead>
                        <tbody>
                            {v.suites.into_iter().map(|s| view! {
                                <tr>
                                    <td><a href=format!("/suites/{}", s.name)>{s.name.clone()}</a></td>
                                    <td>{s.kind}</td>
                                    <td>{s.description}</td>
                                    <td>{source_words(&s.source)}</td>
                                    <td>{utc_minutes(s.updated_at)}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                    {v.may_edit.then(|| view! {
                        <details class="new-suite">
                            <summary>"Create a suite"</summary>
                            <editor::SuiteEditor original=None toml=TEMPLATE.to_string() />
                        </details>
                    })}
                }.into_any(),
                Err(e) => view! { <ErrorView error=e /> }.into_any(),
            }
        })}
    }
}
