//! `/account`: who you are and your API tokens (name, role, created, expires, last used, revoked); a
//! launcher or admin makes and revokes them here. A secret is shown once, when it is made (here,
//! `arbiter token create` or `POST /api/v1/tokens`), and never listed.

use crate::error::ErrorView;
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
pub async fn load_account() -> Result<AccountView, crate::error::AppError> {
    let crate::auth::Actor { id, name, role, .. } = crate::auth::require(crate::auth::Role::Viewer)?;
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
                Err(e) => view! { <ErrorView error=e /> }.into_any(),
            }
        })}
    }
}

#[component]
fn AccountBody(account: AccountView) -> impl IntoView {
    let may_make = account.role != "viewer";
    let roles: Vec<String> = ["viewer", "launcher", "admin"]
        .iter()
        .take(match account.role.as_str() {
            "admin" => 3,
            "launcher" => 2,
            _ => 1,
        })
        .map(|r| r.to_string())
        .collect();
    view! {
        <div class="page-head"><h1>"Account"</h1></div>
        <p>{format!("Signed in as {} ({}).", account.name, account.role)}</p>
        <h2>"API tokens"</h2>
        {if may_make {
            view! {
                <p class="muted">
                    "A token lets a CI job or the CLI act as you (" <code>"Authorization: Bearer arb_…"</code>
                    "); its secret is shown once, when it is made. The same from a terminal: "
                    <code>"arbiter token create --user NAME --name ci-nightly"</code> " or " <code>"POST /api/v1/tokens"</code> "."
                </p>
            }.into_any()
        } else {
            view! {
                <p class="muted">"API tokens are made by launchers and admins; ask an admin for the launcher role to make one."</p>
            }.into_any()
        }}
        <Tokens tokens=account.tokens roles=roles may_make=may_make />
    }
}

/// The token list with, for launchers and admins, a form that makes one (its secret shown once, with a
/// copy button) and a revoke button per live token — all through `/api/v1/tokens`, as a CI job would.
#[island]
fn Tokens(tokens: Vec<TokenLine>, roles: Vec<String>, may_make: bool) -> impl IntoView {
    use crate::client::{spawn_call, Method};
    let tokens = RwSignal::new(tokens);
    let name = RwSignal::new(String::new());
    let default_role = if roles.iter().any(|r| r == "launcher") { "launcher".to_string() } else { roles[0].clone() };
    let role = RwSignal::new(default_role);
    let days = RwSignal::new("90".to_string());
    let secret = RwSignal::new(None::<(String, String)>);
    let copied = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let create = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        error.set(None);
        let days_text = days.get_untracked();
        let expires = match days_text.trim() {
            "" => serde_json::Value::Null,
            d => match d.parse::<u32>() {
                Ok(n) if (1..=3650).contains(&n) => n.into(),
                _ => {
                    error.set(Some(format!("expires in {d:?} days: must be between 1 and 3650 days, or empty for never")));
                    return;
                }
            },
        };
        busy.set(true);
        let body = serde_json::json!({"name": name.get_untracked(), "role": role.get_untracked(), "expires_in_days": expires});
        spawn_call(Method::Post, "/api/v1/tokens".into(), Some(body), move |result| {
            busy.set(false);
            match result {
                Ok(t) => {
                    // The answer is the token's line (never used, not revoked) plus its secret.
                    let Ok(line) = serde_json::from_value::<TokenLine>(t.clone()) else {
                        error.set(Some("the server's answer was not a token".into()));
                        return;
                    };
                    let token = serde_json::from_value::<wire::answers::JsonNewToken>(t).map(|t| t.token).ok();
                    secret.set(token.map(|s| (line.name.clone(), s)));
                    copied.set(false);
                    name.set(String::new());
                    tokens.update(|list| list.insert(0, line));
                }
                Err(e) => error.set(Some(e)),
            }
        });
    };
    let revoke = move |id: i64| {
        error.set(None);
        spawn_call(Method::Delete, format!("/api/v1/tokens/{id}"), None, move |result| match result {
            // The time shown is the browser's; the server's own is on the next load.
            Ok(_) => tokens.update(|list| {
                if let Some(t) = list.iter_mut().find(|t| t.id == id) {
                    t.revoked_at = Some(now_ms());
                }
            }),
            Err(e) => error.set(Some(e)),
        });
    };
    let copy = move |_| {
        if let Some((_, s)) = secret.get_untracked() {
            copied.set(crate::client::copy_to_clipboard(&s));
        }
    };
    view! {
        <div class="tokens">
            {may_make.then(|| view! {
                <form class="token-form" novalidate on:submit=create>
                    <label>"Name" <input type="text" maxlength="100" placeholder="ci-nightly"
                        prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev)) /></label>
                    <label>"Role" <select on:change=move |ev| role.set(event_target_value(&ev))>
                        {roles.iter().map(|r| view! { <option value=r.clone() selected=r == &role.get_untracked()>{r.clone()}</option> }).collect_view()}
                    </select></label>
                    <label>"Expires in (days)" <input type="text" inputmode="numeric" size="5" placeholder="never"
                        prop:value=move || days.get() on:input=move |ev| days.set(event_target_value(&ev)) /></label>
                    <button type="submit" disabled=move || busy.get()>"Make a token"</button>
                </form>
            })}
            {move || secret.get().map(|(for_name, s)| view! {
                <div class="share-link token-secret">
                    <label>{format!("Token \"{for_name}\" (shown once: copy it now)")}
                        <input type="text" readonly value=s aria-label="New token" /></label>
                    <button type="button" on:click=copy>{move || if copied.get() { "Copied ✓" } else { "Copy token" }}</button>
                </div>
            })}
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <Show when=move || !tokens.with(Vec::is_empty) fallback=|| view! { <p>"You have no API tokens."</p> }>
                <div class="table-wrap"><table class="history tokens">
                    <thead><tr>
                        <th scope="col">"Id"</th><th scope="col">"Name"</th><th scope="col">"Role"</th>
                        <th scope="col">"Created"</th><th scope="col">"Expires"</th><th scope="col">"Last used"</th>
                        <th scope="col">"Revoked"</th>{may_make.then(|| view! { <th scope="col"><span class="sr-only">"Revoke"</span></th> })}
                    </tr></thead>
                    <tbody>
                        <For each=move || tokens.get() key=|t| (t.id, t.revoked_at) let:t>
                            <tr>
                                <td class="num">{t.id}</td><td>{t.name.clone()}</td><td>{t.role.clone()}</td>
                                <td class="when">{utc_minutes(t.created_at)}</td><td class="when">{when(t.expires_at)}</td>
                                <td class="when">{when(t.last_used_at)}</td><td class="when">{when(t.revoked_at)}</td>
                                {may_make.then(|| view! {
                                    <td>{t.revoked_at.is_none().then(|| {
                                        let id = t.id;
                                        view! { <button type="button" class="danger small" aria-label=format!("Revoke token {}", t.name) on:click=move |_| revoke(id)>"Revoke"</button> }
                                    })}</td>
                                })}
                            </tr>
                        </For>
                    </tbody>
                </table></div>
            </Show>
        </div>
    }
}

/// Now, in ms since the epoch (the browser's clock; 0 on the server, where nothing is revoked).
fn now_ms() -> i64 {
    #[cfg(feature = "hydrate")]
    {
        web_sys::js_sys::Date::now() as i64
    }
    #[cfg(not(feature = "hydrate"))]
    0
}
