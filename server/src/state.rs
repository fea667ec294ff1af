//! What every request handler can reach, passed explicitly.

use axum::extract::FromRef;
use leptos::config::LeptosOptions;
use store::Store;

#[derive(Clone, Debug)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub store: Store,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos_options.clone()
    }
}
