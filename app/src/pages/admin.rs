//! `/admin`: every user and the newest audit entries (who, when, what, why). Changes go through
//! `arbiter user add` or the users API; every one of them lands in the audit log shown here.

use crate::error::ErrorView;
use crate::format::utc_minutes;
use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserLine {
    pub id: i64,
    pub name: String,
    pub role: String,
    pub created_at: i64,
    pub disabled_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditLine {
    pub at: i64,
    pub actor: Option<String>,
    pub action: String,
    pub subject: String,
    pub reason: Option<String>,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdminView {
    pub users: Vec<UserLine>,
    pub audit: Vec<AuditLine>,
}

#[server(prefix = "/fn", endpoint = "admin")]
pub async fn load_admin() -> Result<AdminView, crate::error::AppError> {
    crate::auth::require(crate::auth::Role::Admin)?;
    let store = crate::error::store()?;
    let failed = crate::error::read_failed("the users and the audit log");
    let users = store.list_users().await.map_err(failed)?;
    let audit = store.audit_log(200).await.map_err(failed)?;
    Ok(AdminView {
        users: users
            .into_iter()
            .map(|u| UserLine {
                id: u.id,
                name: u.username,
                role: u.role.as_str().into(),
                created_at: u.created_at,
                disabled_at: u.disabled_at,
            })
            .collect(),
        audit: audit
            .into_iter()
            .map(|a| AuditLine {
                at: a.at,
                actor: a.actor,
                action: a.action,
                subject: a.subject,
                reason: a.reason,
                detail: a.detail.to_string(),
            })
            .collect(),
    })
}

#[component]
pub fn AdminPage() -> impl IntoView {
    view! {
        <Title text="Admin" />
        <div class="page-head"><h1>"Admin"</h1></div>
        {crate::awaited::awaited(async move {
            match load_admin().await {
                Ok(v) => view! { <Users users=v.users /> <Audit audit=v.audit /> }.into_any(),
                Err(e) => view! { <ErrorView error=e /> }.into_any(),
            }
        })}
    }
}

#[component]
fn Users(users: Vec<UserLine>) -> impl IntoView {
    view! {
        <h2>"Users"</h2>
        <table class="history">
            <thead><tr><th scope="col">"Id"</th><th scope="col">"Name"</th><th scope="col">"Role"</th><th scope="col">"Created"</th><th scope="col">"Disabled"</th></tr></thead>
            <tbody>
                {users.into_iter().map(|u| view! {
                    <tr>
                        <td class="num">{u.id}</td><td>{u.name}</td><td>{u.role}</td>
                        <td class="when">{utc_minutes(u.created_at)}</td>
                        <td class="when">{u.disabled_at.map(utc_minutes).unwrap_or_else(|| "—".into())}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}

#[component]
fn Audit(audit: Vec<AuditLine>) -> impl IntoView {
    view! {
        <h2>"Audit log"</h2>
        <table class="history">
            <thead><tr><th scope="col">"When"</th><th scope="col">"Who"</th><th scope="col">"What"</th><th scope="col">"Subject"</th><th scope="col">"Why"</th><th scope="col">"Detail"</th></tr></thead>
            <tbody>
                {audit.into_iter().map(|a| view! {
                    <tr>
                        <td class="when">{utc_minutes(a.at)}</td>
                        <td>{a.actor.unwrap_or_else(|| "(command line)".into())}</td>
                        <td>{a.action}</td><td>{a.subject}</td>
                        <td>{a.reason.unwrap_or_default()}</td>
                        <td><code>{a.detail}</code></td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}
