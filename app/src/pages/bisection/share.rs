//! A bisection's share link from its page: its launcher or an admin makes one (shown once, with a copy
//! button; 7, 30 or 90 days or until revoked) or revokes them all, through the REST API
//! (`/api/v1/bisections/{id}/shares`), which checks who may and writes the audit log. The link opens the
//! bisection's page and its steps' experiment pages, never their logs. Once a link is made, the PR comment
//! below links it instead of the sign-in-only page.

use crate::client::{spawn_call, Method};
use crate::pages::experiment::share::{Expires, NewLink};
use leptos::prelude::*;

#[island]
pub fn BisectionShare(id: i64, may_share: bool, live: i64, url: String, markdown: String) -> impl IntoView {
    let live = RwSignal::new(live);
    let link = RwSignal::new(None::<String>);
    let error = RwSignal::new(None::<String>);
    let days = RwSignal::new("30".to_string());
    let create = move |_| {
        error.set(None);
        let body = serde_json::json!({"expires_in_days": days.get_untracked().parse::<u32>().ok()});
        spawn_call(Method::Post, format!("/api/v1/bisections/{id}/shares"), Some(body), move |result| match result {
            Ok(b) => {
                link.set(serde_json::from_value::<wire::answers::JsonNewBisectionLink>(b).ok().map(|l| l.url));
                live.update(|n| *n += 1);
            }
            Err(e) => error.set(Some(e)),
        });
    };
    let revoke = move |_| {
        error.set(None);
        spawn_call(Method::Delete, format!("/api/v1/bisections/{id}/shares"), None, move |result| match result {
            Ok(_) => {
                live.set(0);
                link.set(None);
            }
            Err(e) => error.set(Some(e)),
        });
    };
    // The comment links the share link once there is one to give.
    let first = markdown.clone();
    let comment = move || match link.get() {
        Some(shared) => markdown.replace(&url, &shared),
        None => markdown.clone(),
    };
    view! {
        <div class="share">
            {may_share.then(|| view! {
                <p class="share-state">{move || match live.get() {
                    0 => "🔒 Private: signed-in users only".to_string(),
                    n => format!("🔗 Shared: {n} live link{} — anyone holding one can read this bisection and its steps' pages", if n == 1 { "" } else { "s" }),
                }}</p>
                <div class="share-actions">
                    <Expires days />
                    <button type="button" on:click=create>{move || if live.get() == 0 { "Share…" } else { "New share link" }}</button>
                    <Show when=move || { live.get() > 0 }>
                        <button type="button" class="danger" on:click=revoke>"Revoke all links"</button>
                    </Show>
                </div>
            })}
            <NewLink link />
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        </div>
        <details class="pr-markdown"><summary>"PR comment (Markdown)"</summary>
            <textarea class="markdown" readonly rows="14" aria-label="PR comment Markdown" prop:value=comment>{first}</textarea>
        </details>
    }
}
