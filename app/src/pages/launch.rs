//! The launch page. The form arrives with browser launching; until then it says how experiments start.

use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn LaunchPage() -> impl IntoView {
    view! {
        <Title text="Launch" />
        <h1>"Launch an experiment"</h1>
        <section class="empty">
            <h2>"The launch form is not in this build yet"</h2>
            <p>
                "An experiment compares a control (by default the merge-base of your branch) with a treatment "
                "(the branch head), and only the extra arms you name. This build stores and lists experiments; "
                "launching them from this page comes with the launch form."
            </p>
            <p><a href="/experiments">"Back to the experiments"</a></p>
        </section>
    }
}
