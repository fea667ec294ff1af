//! The 404 page; on the server it also sets the HTTP status.

use crate::error::{AppError, ErrorView};
use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(http::StatusCode::NOT_FOUND);
    }
    let path = leptos_router::hooks::use_location().pathname.get_untracked();
    view! {
        <Title text="Not found" />
        <ErrorView error=AppError::NotFound(format!("There is no page at {path}.")) />
        <p><a href="/experiments">"Go to the experiments"</a></p>
    }
}
