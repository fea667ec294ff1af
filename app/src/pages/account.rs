//! `/account`: who you are and your API tokens (name, role, created, expires, last used, revoked).
//! `/admin`: users and the audit log, for admins. Secrets are never shown here: a token is shown once
//! when it is made (`arbiter token create` or `POST /api/v1/tokens`).

use crate::error::{AppError, ErrorView};
use crate::format::utc_minutes;
use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenLine {
    pub id: i64,
    pub name: String,
    pub role: String,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccountView {
    pub name: String,
    pub role: String,
    pub tokens: Vec<TokenLine>,
}

#[server(prefix = "/fn", endpoint = "account")]
pub async fn load_account() -> Result<AccountView, ServerFnError> {
    let me = crate::auth::require(crate::auth::Role::Viewer)?;
    let crate::auth::Principal::User { id, name, role, .. } = me else {
        return Err(ServerFnError::new("unauthorized: sign in first"));
    };
    let tokens = crate::error::store()?.list_api_tokens(Some(id)).await.map_err(crate::error::read_failed("your tokens"))?;
    Ok(AccountView {
        name,
        role: role.as_str().to_string(),
        tokens: tokens
            .into_iter()
            .map(|t| TokenLine {
                id: t.id,
                name: t.name,
                role: t.role.as_str().to_string(),
                created_at: t.created_at,
                expires_at: t.expires_at,
                last_used_at: t.last_used_at,
                revoked_at: t.revoked_at,
            })
            .collect(),
    })
}

fn when(t: Option<i64>) -> String {
    t.map(utc_minutes).unwrap_or_else(|| "—".into())
}

#[component]
pub fn AccountPage() -> impl IntoView {
    view! {
        <Title text="Account" />
        {crate::awaited::awaited(async move {
            match load_account().await {
                Ok(a) => view! { <AccountBody account=a /> }.into_any(),
                Err(e) => view! { <ErrorView error=AppError::from(e) /> }.into_any(),
            }
        })}
    }
}

#[component]
fn AccountBody(account: AccountView) -> impl IntoView {
    let empty = account.tokens.is_empty();
    view! {
        <div class="page-head"><h1>"Account"</h1></div>
        <p>"Signed in as " <strong>{account.name}</strong> " (" {account.role} ")."</p>
        <h2>"API tokens"</h2>
        <p class="muted">
            "Make one with " <code>"arbiter token create --user NAME --name ci-nightly"</code> " or "
            <code>"POST /api/v1/tokens"</code> "; it is shown once. Revoke with " <code>"arbiter token revoke ID"</code>
            " or " <code>"DELETE /api/v1/tokens/ID"</code> "."
        </p>
        {if empty {
            view! { <p>"You have no API tokens."</p> }.into_any()
        } else {
            view! {
                <table class="history">
                    <thead><tr>
                        <th scope="col">"Id"</th><th scope="col">"Name"</th><th scope="col">"Role"</th>
                        <th scope="col">"Created"</th><th scope="col">"Expires"</th><th scope="col">"Last used"</th>
                        <th scope="col">"Revoked"</th>
                    </tr></thead>
                    <tbody>
                        {account.tokens.into_iter().map(|t| view! {
                            <tr>
                                <td class="num">{t.id}</td><td>{t.name}</td><td>{t.role}</td>
                                <td class="when">{utc_minutes(t.created_at)}</td><td class="when">{when(t.expires_at)}</td>
                                <td class="when">{when(t.last_used_at)}</td><td class="when">{when(t.revoked_at)}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            }.into_any()
        }}
    }
}
