//! The suite editor (an island, admins): the suite as TOML, saved through `save_suite`, which checks it
//! exactly as a suite file is checked and names the line and field of any problem.

use leptos::prelude::*;

#[server(prefix = "/fn", endpoint = "save_suite")]
pub async fn save_suite(original: Option<String>, toml: String) -> Result<String, ServerFnError> {
    let me = crate::auth::require(crate::auth::Role::Admin)?;
    let ctx = crate::context::server_context()?;
    let store = crate::error::store()?;
    let (name, kind, definition) = (ctx.parse_suite)(&toml).map_err(crate::error::bad_request)?;
    match original.as_deref() {
        Some(o) if o != name => {
            return Err(crate::error::bad_request(format!("name: this page edits suite {o:?}; to make {name:?}, create a new suite")));
        }
        None if store.suite_by_name(&name).await.is_ok() => {
            return Err(crate::error::bad_request(format!("name: suite {name:?} exists; edit it on its page")));
        }
        _ => {}
    }
    let failed = crate::error::read_failed("the suite");
    let id = store.upsert_suite(&name, kind, &definition, "ui").await.map_err(failed)?;
    let action = if original.is_some() { "suite.edit" } else { "suite.create" };
    store.audit(me.user_id(), action, &format!("suite:{id}"), None, &serde_json::json!({"name": name})).await.map_err(failed)?;
    Ok(name)
}

#[island]
pub fn SuiteEditor(original: Option<String>, toml: String) -> impl IntoView {
    let text = RwSignal::new(toml);
    let error = RwSignal::new(None::<String>);
    let saved = RwSignal::new(false);
    let save = Action::new(move |(original, toml): &(Option<String>, String)| save_suite(original.clone(), toml.clone()));
    Effect::new(move |_| {
        if let Some(result) = save.value().get() {
            match result {
                Ok(name) => {
                    error.set(None);
                    saved.set(true);
                    #[cfg(feature = "hydrate")]
                    if let Some(w) = web_sys::window() {
                        let _ = w.location().set_href(&format!("/suites/{name}"));
                    }
                    #[cfg(not(feature = "hydrate"))]
                    let _ = name;
                }
                Err(e) => error.set(Some(crate::error::AppError::from(e).to_string())),
            }
        }
    });
    let original_for_submit = original.clone();
    view! {
        <form class="suite-editor" on:submit=move |ev: leptos::ev::SubmitEvent| {
            ev.prevent_default();
            saved.set(false);
            save.dispatch((original_for_submit.clone(), text.get_untracked()));
        }>
            <label>"Suite (TOML, the same fields as a suite file)"
                <textarea name="toml" rows="24" spellcheck="false" prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            </label>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            {move || saved.get().then(|| view! { <p class="muted" role="status">"Saved."</p> })}
            <button type="submit" disabled=move || save.pending().get()>{if original.is_some() { "Save the suite" } else { "Create the suite" }}</button>
        </form>
    }
}
