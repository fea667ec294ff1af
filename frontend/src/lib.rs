//! Hydrates the islands of the page the server rendered: after this runs, its widgets are interactive.

// The islands' exported hydrate functions live in `app`: link it even though nothing here names it.
extern crate app;

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    // Pages are server-rendered; only the #[island] widgets (theme switch, share box, actions) hydrate.
    leptos::mount::hydrate_islands();
}
