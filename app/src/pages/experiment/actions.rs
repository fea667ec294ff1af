//! Cancel, re-run and re-judge, for those allowed: buttons that call the REST API from the hydrated page
//! (`POST /api/v1/experiments/{id}/cancel` and `…/rerun`), so the page and a CI job share one path.

use crate::client::{go, reload, spawn_call, Method};
use leptos::prelude::*;

#[island]
pub fn Actions(id: i64, may_cancel: bool, may_rerun: bool) -> impl IntoView {
    let busy = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let act = move |what: &'static str| {
        busy.set(true);
        error.set(None);
        spawn_call(Method::Post, format!("/api/v1/experiments/{id}/{what}"), None, move |result| {
            busy.set(false);
            match result {
                // A re-run answers with the new experiment (`JsonLaunched`); the others with what they did.
                Ok(body) => match serde_json::from_value::<wire::plan::JsonLaunched>(body).ok().filter(|_| what == "rerun") {
                    Some(new) => go(&format!("/experiments/{}", new.id)),
                    None => reload(),
                },
                Err(e) => error.set(Some(e)),
            }
        });
    };
    // No `into_any` in islands: it would bring both hydration paths of the view into the bundle.
    (may_cancel || may_rerun).then(|| {
        view! {
            <div class="actions">
                {may_cancel.then(|| view! {
                    <button type="button" class="danger" disabled=move || busy.get() on:click=move |_| act("cancel")>"Cancel experiment"</button>
                })}
                {may_rerun.then(|| view! {
                    <button type="button" disabled=move || busy.get() on:click=move |_| act("rerun")>"Re-run"</button>
                })}
                {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            </div>
        }
    })
}

/// Re-judges an experiment judged by an older method (`POST /api/v1/experiments/{id}/rejudge`), then
/// reloads the page, which shows both verdicts.
#[island]
pub fn Rejudge(id: i64, method: u32) -> impl IntoView {
    let busy = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let act = move |_| {
        busy.set(true);
        error.set(None);
        spawn_call(Method::Post, format!("/api/v1/experiments/{id}/rejudge"), None, move |result| {
            busy.set(false);
            match result {
                Ok(_) => reload(),
                Err(e) => error.set(Some(e)),
            }
        });
    };
    view! {
        <span class="actions inline">
            <button type="button" disabled=move || busy.get() on:click=act>{format!("Re-judge by method v{method}")}</button>
            {move || error.get().map(|e| view! { <span class="error" role="alert">{e}</span> })}
        </span>
    }
}
