//! The trends page: how a suite's numbers move across experiments over time.

use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn TrendsPage() -> impl IntoView {
    view! {
        <Title text="Trends" />
        <h1>"Trends"</h1>
        <section class="empty">
            <h2>"No trends to show yet"</h2>
            <p>
                "Trends chart a suite's judged metrics (CPU-seconds per stage, obj/s and p99 per warp cell) across "
                "experiments. They appear once experiments with verdicts are stored."
            </p>
            <p><a href="/experiments">"Back to the experiments"</a></p>
        </section>
    }
}
