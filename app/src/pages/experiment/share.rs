//! Share links from the page: the experiment's launcher or an admin makes a link (shown once, with a
//! copy button) or revokes every link, through the REST API (`/api/v1/experiments/{id}/shares`), which
//! checks who may and writes the audit log.

use crate::client::{spawn_call, Method};
use leptos::prelude::*;

#[island]
pub fn ShareBox(id: i64, shared: bool, may_share: bool) -> impl IntoView {
    let live = RwSignal::new(shared);
    let link = RwSignal::new(None::<String>);
    let copied = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let act = move |create: bool| {
        error.set(None);
        let method = if create { Method::Post } else { Method::Delete };
        spawn_call(method, format!("/api/v1/experiments/{id}/shares"), None, move |result| match result {
            Ok(body) => {
                link.set(body["url"].as_str().map(str::to_string));
                live.set(create);
                copied.set(false);
            }
            Err(e) => error.set(Some(e)),
        });
    };
    let copy = move |_| {
        if let Some(url) = link.get_untracked() {
            copied.set(crate::client::copy_to_clipboard(&url));
        }
    };
    view! {
        <div class="share">
            <p class="share-state">{move || if live.get() { "🔗 Shared: anyone with a link can read this page" } else { "🔒 Private: signed-in users only" }}</p>
            {may_share.then(|| view! {
                <div class="share-actions">
                    <button type="button" on:click=move |_| act(true)>{move || if live.get() { "New share link" } else { "Share…" }}</button>
                    <Show when=move || live.get()>
                        <button type="button" class="danger" on:click=move |_| act(false)>"Revoke links"</button>
                    </Show>
                </div>
            })}
            {move || link.get().map(|url| view! {
                <div class="share-link">
                    <label>"Share link (shown once)" <input type="text" readonly value=url.clone() aria-label="Share link" /></label>
                    <button type="button" on:click=copy>{move || if copied.get() { "Copied ✓" } else { "Copy link" }}</button>
                </div>
            })}
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        </div>
    }
}
