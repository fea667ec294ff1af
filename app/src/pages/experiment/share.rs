//! Share links from the page: the experiment's launcher or an admin makes a link (shown once, with a
//! copy button) — with or without the trial logs and files, lasting 7, 30 or 90 days or until revoked —
//! sees the live links with who made each, and revokes one or all, through the REST API
//! (`/api/v1/experiments/{id}/shares`), which checks who may and writes the audit log.

use crate::client::{spawn_call, Method};
use crate::format::utc_minutes;
use leptos::prelude::*;
use wire::share::JsonShareLink;

fn scope_words(files: bool) -> &'static str {
    if files {
        "page, reports, logs, files"
    } else {
        "page and reports"
    }
}

/// "2026-12-02": the day (UTC) of an epoch-ms time.
fn day(ms: i64) -> String {
    utc_minutes(ms).chars().take(10).collect()
}

/// The panel under the verdict: "Copy PR comment" (when `comment`: a judged experiment and a signed-in
/// reader), whether the page is shared, and for who may share, its links.
#[island]
pub fn ShareBox(id: i64, shared: bool, may_share: bool, links: Vec<JsonShareLink>, comment: bool) -> impl IntoView {
    let links = RwSignal::new(links);
    // A link made here, or the comment link "Copy PR comment" made or found, joins the live links (once).
    let on_link = move |made: JsonShareLink| {
        links.update(|l| {
            if !l.iter().any(|x| x.id == made.id) {
                l.insert(0, made)
            }
        })
    };
    let link = RwSignal::new(None::<String>);
    let error = RwSignal::new(None::<String>);
    let files = RwSignal::new(false);
    let days = RwSignal::new("30".to_string());
    let create = move |_| {
        error.set(None);
        let body = serde_json::json!({
            "files": files.get_untracked(),
            "expires_in_days": days.get_untracked().parse::<u32>().ok(),
        });
        spawn_call(Method::Post, format!("/api/v1/experiments/{id}/shares"), Some(body), move |result| match result {
            Ok(b) => {
                // The answer is the link with its secret, shown once; the panel lists its row.
                if let Ok(made) = serde_json::from_value::<wire::answers::JsonNewShareLink>(b) {
                    on_link(made.listing());
                    link.set(Some(made.url));
                }
            }
            Err(e) => error.set(Some(e)),
        });
    };
    let revoke = move |one: Option<i64>| {
        error.set(None);
        let url = match one {
            Some(s) => format!("/api/v1/experiments/{id}/shares/{s}"),
            None => format!("/api/v1/experiments/{id}/shares"),
        };
        spawn_call(Method::Delete, url, None, move |result| match result {
            Ok(_) => {
                links.update(|l| l.retain(|x| one.is_some_and(|s| x.id != s)));
                link.set(None);
            }
            Err(e) => error.set(Some(e)),
        });
    };
    view! {
        {comment.then(|| view! { <super::comment::CopyComment id on_link /> })}
        <div class="share">
            // Who may share sees the links; anyone else only whether there are any.
            <p class="share-state">{move || {
                let n = links.with(Vec::len);
                if may_share && n > 0 {
                    format!("🔗 Shared: {n} live link{} — anyone holding one can read this page", if n == 1 { "" } else { "s" })
                } else if !may_share && shared {
                    "🔗 Shared: anyone holding a link can read this page".to_string()
                } else {
                    "🔒 Private: signed-in users only".to_string()
                }
            }}</p>
            {may_share.then(|| view! {
                <div class="share-actions">
                    <label class="inline"><input type="checkbox" prop:checked=move || files.get() on:change=move |ev| files.set(event_target_checked(&ev)) />" Include logs and files"</label>
                    <Expires days />
                    <button type="button" on:click=create>{move || if links.with(|l| l.is_empty()) { "Share…" } else { "New share link" }}</button>
                    <Show when=move || links.with(|l| l.len() > 1)>
                        <button type="button" class="danger" on:click=move |_| revoke(None)>"Revoke all links"</button>
                    </Show>
                </div>
                <Show when=move || links.with(|l| !l.is_empty())>
                    <details class="share-links">
                        <summary>"Live links: who made each, expiry, revoke"</summary>
                        <table class="data share-links" aria-label="Live share links">
                            <thead><tr><th scope="col">"Link"</th><th scope="col">"Made by"</th><th scope="col">"Made"</th><th scope="col">"Expires"</th><th scope="col">"Opens"</th><th scope="col"></th></tr></thead>
                            <tbody>
                                <For each=move || links.get() key=|l| l.id let:l>
                                    <tr>
                                        <td>{format!("#{}", l.id)}</td>
                                        <td>{l.created_by.clone().unwrap_or_else(|| "a deleted user".into())}</td>
                                        <td>{day(l.created_at)}</td>
                                        <td>{l.expires_at.map(day).unwrap_or_else(|| "never".into())}</td>
                                        <td>{scope_words(l.files)}</td>
                                        <td><button type="button" class="danger" on:click=move |_| revoke(Some(l.id))>"Revoke"</button></td>
                                    </tr>
                                </For>
                            </tbody>
                        </table>
                    </details>
                </Show>
            })}
            <NewLink link />
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        </div>
    }
}

/// How long a new share link lasts (the experiment's and the bisection's panels): `days` holds 7, 30, 90
/// or "never".
#[component]
pub fn Expires(days: RwSignal<String>) -> impl IntoView {
    view! {
        <label class="inline">"Expires "
            <select aria-label="Expires" on:change=move |ev| days.set(event_target_value(&ev)) prop:value=move || days.get()>
                <option value="7">"in 7 days"</option>
                <option value="30" selected>"in 30 days"</option>
                <option value="90">"in 90 days"</option>
                <option value="never">"never (until revoked)"</option>
            </select>
        </label>
    }
}

/// A share link just made, shown once with a copy button.
#[component]
pub fn NewLink(link: RwSignal<Option<String>>) -> impl IntoView {
    let copied = RwSignal::new(false);
    let copy = move |_| {
        if let Some(url) = link.get_untracked() {
            copied.set(crate::client::copy_to_clipboard(&url));
        }
    };
    move || {
        copied.set(false);
        link.get().map(|url| {
            view! {
                <div class="share-link">
                    <label>"Share link (shown once)" <input type="text" readonly value=url aria-label="Share link" /></label>
                    <button type="button" on:click=copy>{move || if copied.get() { "Copied ✓" } else { "Copy link" }}</button>
                </div>
            }
        })
    }
}
