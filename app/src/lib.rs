//! Arbiter's user interface: the HTML shell, the layout and navigation, and one module per route family.
//! Server functions live beside the page that calls them; on the server they read the store from context.

// The experiment page's view type is deep; leptos' typed views need more than the default 128.
#![recursion_limit = "256"]

// cargo unifies features across the packages of one build: `cargo build --workspace` would give this crate
// both features and a server that runs browser-only code. Fail the build instead of the server.
#[cfg(all(feature = "ssr", feature = "hydrate"))]
compile_error!(
    "app: the `ssr` and `hydrate` features exclude each other; build `frontend` for wasm32 on its own (see default-members in Cargo.toml)"
);

pub mod auth;
mod awaited;
pub mod client;
#[cfg(feature = "ssr")]
pub mod context;
pub mod error;
pub mod format;
mod layout;
pub mod pages;
pub mod report;

use layout::Layout;
use leptos::prelude::*;
use leptos_meta::{provide_meta_context, Link, MetaTags, Stylesheet, Title};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::{path, SsrMode};
use pages::account::AccountPage;
use pages::admin::AdminPage;
use pages::bisection::list::BisectionsPage;
use pages::bisection::BisectionPage;
use pages::experiment::ExperimentPage;
use pages::import::ImportPage;
use pages::login::{LoginPage, SetupPage};
use pages::{
    history::HistoryPage,
    launch::LaunchPage,
    not_found::NotFound,
    suites::{SuitePage, SuitesPage},
    trends::TrendsPage,
};

/// The HTML document around the app (rendered on the server only).
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <meta name="color-scheme" content="light dark" />
                <AutoReload options=options.clone() />
                <HydrationScripts options islands=true />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Stylesheet id="arbiter" href="/pkg/arbiter.css" />
        <Link rel="icon" type_="image/svg+xml" href="/favicon.svg" />
        <Title formatter=|page: String| if page.is_empty() { "Arbiter".to_string() } else { format!("{page} · Arbiter") } />
        <Router>
            <Layout>
                <Routes fallback=|| view! { <NotFound /> }>
                    // Async: the page is sent only when its data is in it, so it reads fine without JavaScript.
                    <Route path=path!("/") view=HistoryPage ssr=SsrMode::Async />
                    <Route path=path!("/experiments") view=HistoryPage ssr=SsrMode::Async />
                    <Route path=path!("/experiments/:id") view=ExperimentPage ssr=SsrMode::Async />
                    <Route path=path!("/launch") view=LaunchPage ssr=SsrMode::Async />
                    <Route path=path!("/import") view=ImportPage />
                    <Route path=path!("/trends") view=TrendsPage ssr=SsrMode::Async />
                    <Route path=path!("/bisections") view=BisectionsPage ssr=SsrMode::Async />
                    <Route path=path!("/bisections/:id") view=BisectionPage ssr=SsrMode::Async />
                    <Route path=path!("/suites") view=SuitesPage ssr=SsrMode::Async />
                    <Route path=path!("/suites/:name") view=SuitePage ssr=SsrMode::Async />
                    <Route path=path!("/account") view=AccountPage ssr=SsrMode::Async />
                    <Route path=path!("/admin") view=AdminPage ssr=SsrMode::Async />
                    <Route path=path!("/login") view=LoginPage />
                    <Route path=path!("/setup") view=SetupPage />
                </Routes>
            </Layout>
        </Router>
    }
}
