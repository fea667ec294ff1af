//! "Find the commit": start a bisection from a regression's experiment page (its stage or cell
//! preselected, the experiment reused as the first step) or from a change point on the trends page (its
//! commit range). A dry run first lists the commits and the expected steps and trials.

use crate::client::{go, spawn_call, Method};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// What a page offers to bisect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BisectOffer {
    pub suite: String,
    pub good: String,
    pub bad: String,
    /// (metric spec, label): the moved ones first.
    pub metrics: Vec<(String, String)>,
    pub selected: String,
    /// The fingerprint as a JSON object.
    pub fingerprint: String,
    /// The experiment that already compared the ends.
    pub experiment_id: Option<i64>,
}

#[island]
pub fn FindCommit(offer: BisectOffer) -> impl IntoView {
    let open = RwSignal::new(false);
    let metric = RwSignal::new(offer.selected.clone());
    let plan = RwSignal::new(None::<String>);
    let error = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let stored = StoredValue::new(offer.clone());
    let send = move |dry_run: bool| {
        let o = stored.get_value();
        busy.set(true);
        error.set(None);
        let request = wire::bisection::JsonBisectionRequest {
            suite: o.suite,
            good: o.good,
            bad: o.bad,
            metric: metric.get_untracked(),
            fingerprint: serde_json::from_str(&o.fingerprint).unwrap_or_default(),
            experiment_id: o.experiment_id,
            dry_run,
            ..Default::default()
        };
        let body = serde_json::to_value(&request).unwrap_or_default();
        spawn_call(Method::Post, "/api/v1/bisections".into(), Some(body), move |result| {
            busy.set(false);
            match result {
                Ok(answer) if dry_run => {
                    plan.set(serde_json::from_value::<wire::answers::JsonBisectionDryRun>(answer).ok().map(|d| d.plan.plan.words))
                }
                Ok(answer) => match serde_json::from_value::<wire::answers::JsonCreated>(answer) {
                    Ok(created) => go(&format!("/bisections/{}", created.id)),
                    Err(_) => error.set(Some("the server's answer has no bisection id".into())),
                },
                Err(e) => error.set(Some(e)),
            }
        });
    };
    let metrics = offer.metrics.clone();
    view! {
        <div class="find-commit">
            <button type="button" class="find-commit-open" on:click=move |_| open.update(|o| *o = !*o)>"Find the commit"</button>
            <div class="find-commit-box" hidden=move || !open.get()>
                <form class="find-commit-form" on:submit=move |ev: leptos::ev::SubmitEvent| { ev.prevent_default(); send(false); }>
                    <p class="muted">{format!("Bisect {}..{} on suite {}: each step is an adaptive experiment gated on this metric alone.",
                        judge::units::short_sha(&offer.good), judge::units::short_sha(&offer.bad), offer.suite)}</p>
                    <label>"Metric that moved "
                        <select name="metric" prop:value=move || metric.get() on:change=move |ev| metric.set(event_target_value(&ev))>
                            {metrics.iter().map(|(spec, label)| view! { <option value=spec.clone()>{label.clone()}</option> }).collect_view()}
                        </select>
                    </label>
                    <button type="button" disabled=move || busy.get() on:click=move |_| send(true)>"Dry run"</button>
                    <button type="submit" disabled=move || busy.get()>"Start bisection"</button>
                    {move || plan.get().map(|p| view! { <p class="bisect-plan">{p}</p> })}
                    {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
                </form>
            </div>
        </div>
    }
}
