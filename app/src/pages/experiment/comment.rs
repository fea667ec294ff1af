//! "Copy PR comment": the judged experiment's pull-request comment from the page — the Markdown
//! `arbiter launch --comment-file` writes, charts included — made by the server
//! (`POST /api/v1/experiments/{id}/comment`), which makes or reuses the experiment's comment link when the
//! reader may share, and otherwise says why the comment links the sign-in page. The text is put on the
//! clipboard and shown, selected, for browsers that refuse the clipboard (a plain-http address). It lives
//! inside the share panel's island (`share::ShareBox`), which it tells of the comment link, so the panel
//! counts it among the live links at once.

use crate::client::{copy_to_clipboard, spawn_call, Method};
use leptos::prelude::*;
use wire::share::JsonShareLink;

#[component]
pub fn CopyComment(id: i64, #[prop(into)] on_link: Callback<JsonShareLink>) -> impl IntoView {
    let text = RwSignal::new(None::<String>);
    let note = RwSignal::new(None::<String>);
    let copied = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let make = move |_| {
        busy.set(true);
        error.set(None);
        spawn_call(Method::Post, format!("/api/v1/experiments/{id}/comment"), None, move |result| {
            busy.set(false);
            match result {
                Ok(b) => {
                    let Ok(comment) = serde_json::from_value::<wire::share::JsonComment>(b) else {
                        error.set(Some("the server's answer was not a comment".into()));
                        return;
                    };
                    if let Some(made) = comment.share_link {
                        on_link.run(made);
                    }
                    copied.set(copy_to_clipboard(&comment.markdown));
                    note.set(match (comment.share_url, comment.no_link_why) {
                        (Some(url), _) => Some(format!("Links through the comment link {url} (revoke it under Share)")),
                        (None, why) => why,
                    });
                    text.set(Some(comment.markdown));
                }
                Err(e) => error.set(Some(e)),
            }
        });
    };
    view! {
        <div class="pr-comment">
            <button type="button" on:click=make disabled=move || busy.get()>
                {move || if copied.get() { "PR comment copied ✓" } else { "Copy PR comment" }}
            </button>
            {move || text.get().map(|t| view! {
                <div class="comment-text">
                    <p class="muted">{move || if copied.get() { "Copied to the clipboard; paste it into the pull request." } else { "Select it and copy (this browser refused the clipboard):" }}
                        {move || note.get().map(|n| view! { " " {n} })}</p>
                    <textarea readonly rows="8" aria-label="PR comment">{t}</textarea>
                </div>
            })}
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        </div>
    }
}
