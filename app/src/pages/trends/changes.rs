//! Change points on a trend (`judge::changepoint`): where a series' level moved, by how much, the first
//! experiment after it and the commit range; launchers mark one as expected (with a reason) or as a
//! regression to investigate — kept with the series and in the audit log.

use crate::client::{reload, spawn_call, Method};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeView {
    pub series: usize,
    /// The series' fingerprint as stored (names the change point with the first experiment after it).
    pub fingerprint: String,
    pub at: i64,
    pub first_after: i64,
    pub last_before: i64,
    pub before: f64,
    pub after: f64,
    pub change_pct: f64,
    /// Control SHAs of the last experiment before and the first after.
    pub commits: (Option<String>, Option<String>),
    /// (state, reason, by, when)
    pub mark: Option<(String, String, Option<String>, i64)>,
    /// Bisections over this range: (id, what they found).
    #[serde(default)]
    pub bisections: Vec<(i64, String)>,
    /// "Find the commit" over this range, for a launcher when both ends are known.
    #[serde(default)]
    pub bisect: Option<crate::pages::bisection::start::BisectOffer>,
}

impl ChangeView {
    pub fn label(&self) -> String {
        format!("{:+.1} % ({} → {})", self.change_pct, judge::units::fmt_num(self.before), judge::units::fmt_num(self.after))
    }
}

/// Acknowledge a change point or mark it for investigation (an island: it posts, then reloads).
#[island]
pub fn MarkChange(suite: String, metric: String, item: String, fingerprint: String, experiment_id: i64) -> impl IntoView {
    let state = RwSignal::new("acknowledged".to_string());
    let reason = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let send = move || {
        busy.set(true);
        let body = serde_json::json!({"suite": suite, "metric": metric, "item": item, "fingerprint": fingerprint,
            "experiment_id": experiment_id, "state": state.get_untracked(), "reason": reason.get_untracked()});
        spawn_call(Method::Post, "/api/v1/change-points".into(), Some(body), move |result| {
            busy.set(false);
            match result {
                Ok(_) => reload(),
                Err(e) => error.set(Some(e)),
            }
        });
    };
    view! {
        <form class="mark-change" on:submit=move |ev: leptos::ev::SubmitEvent| { ev.prevent_default(); send(); }>
            <select name="state" aria-label="What this change is" prop:value=move || state.get() on:change=move |ev| state.set(event_target_value(&ev))>
                <option value="acknowledged">"expected"</option>
                <option value="investigate">"a regression to investigate"</option>
            </select>
            <input name="reason" type="text" aria-label="Reason" placeholder="why (required)" prop:value=move || reason.get() on:input=move |ev| reason.set(event_target_value(&ev)) />
            <button type="submit" disabled=move || busy.get()>"Mark"</button>
            {move || error.get().map(|e| view! { <span class="problem" role="alert">{e}</span> })}
        </form>
    }
}
