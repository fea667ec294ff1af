//! How a page waits for its data: `awaited(async move { … view … })`.
//!
//! Every route renders whole on the server before its first byte (`SsrMode::Async`), and pages are never
//! re-rendered in the browser (islands), so a page simply awaits its loader where the data is shown —
//! no `Resource`, no `<Suspense>`. Under parallel load Leptos 0.8.23's `<Suspense>` now and then never
//! resolved, leaving the request open for good (README, "Experiment pages").
//!
//! The view the future returns is rendered inside the owner it was built in. A bare `Suspend` renders
//! it wherever the response stream happens to be polled: on a multi-threaded server that thread may have
//! no owner, and `<Meta>` tags (the share preview) silently missed the page's head.

use leptos::prelude::*;
use leptos::tachys::reactive_graph::OwnedView;
use std::future::Future;

/// Renders the view `page` resolves to, in the owner it was built in.
pub fn awaited<V>(page: impl Future<Output = V> + Send + 'static) -> impl IntoView
where
    V: IntoView + 'static,
{
    Suspend::new(async move {
        let view = page.await;
        OwnedView::new(view)
    })
}
