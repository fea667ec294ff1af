//! Cancel and re-run, for those allowed: buttons that call the REST API from the hydrated page
//! (`POST /api/v1/experiments/{id}/cancel` and `…/rerun`), so the page and a CI job share one path.

use leptos::prelude::*;

#[cfg(feature = "hydrate")]
async fn post(url: String) -> Result<serde_json::Value, String> {
    let response = gloo_net::http::Request::post(&url).send().await.map_err(|e| format!("the server could not be reached ({e})"))?;
    let ok = response.ok();
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    if ok {
        Ok(body)
    } else {
        Err(body["error"].as_str().map(str::to_string).unwrap_or_else(|| format!("the server answered {}", response.status())))
    }
}

#[island]
pub fn Actions(id: i64, may_cancel: bool, may_rerun: bool) -> impl IntoView {
    let busy = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let act = move |what: &'static str| {
        busy.set(true);
        error.set(None);
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            let result = post(format!("/api/v1/experiments/{id}/{what}")).await;
            busy.set(false);
            match result {
                Ok(body) => {
                    if let Some(w) = web_sys::window() {
                        let _ = match body["id"].as_i64().filter(|_| what == "rerun") {
                            Some(new) => w.location().set_href(&format!("/experiments/{new}")),
                            None => w.location().reload(),
                        };
                    }
                }
                Err(e) => error.set(Some(e)),
            }
        });
        #[cfg(not(feature = "hydrate"))]
        let _ = (what, id);
    };
    if !may_cancel && !may_rerun {
        return ().into_any();
    }
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
    .into_any()
}
