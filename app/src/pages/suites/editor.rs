//! The suite editor (an island, admins): the suite as TOML, saved through the REST API
//! (`POST /api/v1/suites`, `PUT /api/v1/suites/{name}`), which checks it exactly as a suite file is
//! checked and names the line and field of any problem.

use crate::client::{go, spawn_call, Method};
use leptos::prelude::*;

#[island]
pub fn SuiteEditor(original: Option<String>, toml: String) -> impl IntoView {
    let text = RwSignal::new(toml);
    let error = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let editing = original.is_some();
    let save = move || {
        busy.set(true);
        error.set(None);
        let (method, url) = match &original {
            Some(name) => (Method::Put, format!("/api/v1/suites/{name}")),
            None => (Method::Post, "/api/v1/suites".to_string()),
        };
        let body = serde_json::json!({ "toml": text.get_untracked() });
        spawn_call(method, url, Some(body), move |result| {
            busy.set(false);
            match result {
                Ok(saved) => go(&format!("/suites/{}", saved["name"].as_str().unwrap_or_default())),
                Err(e) => error.set(Some(e)),
            }
        });
    };
    view! {
        <form class="suite-editor" on:submit=move |ev: leptos::ev::SubmitEvent| {
            ev.prevent_default();
            save();
        }>
            <label>"Suite (TOML, the same fields as a suite file)"
                <textarea name="toml" rows="24" spellcheck="false" prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            </label>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <button type="submit" disabled=move || busy.get()>{if editing { "Save the suite" } else { "Create the suite" }}</button>
        </form>
    }
}
