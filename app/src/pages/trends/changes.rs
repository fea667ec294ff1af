//! Change points on a trend (`judge::changepoint`): where a series' level moved, by how much, the first
//! experiment after it and the commit range; launchers mark one as expected (with a reason) or as a
//! regression to investigate — kept with the series and in the audit log.

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
}

impl ChangeView {
    pub fn label(&self) -> String {
        format!("{:+.1} % ({} → {})", self.change_pct, judge::units::fmt_num(self.before), judge::units::fmt_num(self.after))
    }
}

#[server(prefix = "/fn", endpoint = "mark_change")]
pub async fn mark_change(
    suite: String,
    metric: String,
    item: String,
    fingerprint: String,
    experiment_id: i64,
    state: String,
    reason: String,
) -> Result<(), ServerFnError> {
    let me = crate::auth::require(crate::auth::Role::Launcher)?;
    if !matches!(state.as_str(), "acknowledged" | "investigate") {
        return Err(crate::error::bad_request(format!("state: {state:?} is not acknowledged or investigate")));
    }
    judge::launch_rules::check_text("reason", &reason, 500).map_err(crate::error::bad_request)?;
    let store = crate::error::store()?;
    let failed = crate::error::read_failed("the change point");
    let suite = store.suite_by_name(&suite).await.map_err(|_| crate::error::bad_request(format!("suite: there is no suite {suite:?}")))?;
    let key = store::trends::SeriesKey { suite_id: suite.id, metric: &metric, item: &item };
    store.mark_change(&key, &fingerprint, experiment_id, &state, reason.trim(), me.user_id()).await.map_err(failed)?;
    let detail = serde_json::json!({"suite": suite.name, "metric": metric, "item": item, "fingerprint": fingerprint});
    let action = if state == "acknowledged" { "changepoint.acknowledge" } else { "changepoint.investigate" };
    store.audit(me.user_id(), action, &format!("experiment:{experiment_id}"), Some(reason.trim()), &detail).await.map_err(failed)?;
    Ok(())
}

/// Acknowledge a change point or mark it for investigation (an island: it posts, then reloads).
#[island]
pub fn MarkChange(suite: String, metric: String, item: String, fingerprint: String, experiment_id: i64) -> impl IntoView {
    let state = RwSignal::new("acknowledged".to_string());
    let reason = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let send = Action::new(move |args: &(String, String)| {
        let (s, r) = args.clone();
        mark_change(suite.clone(), metric.clone(), item.clone(), fingerprint.clone(), experiment_id, s, r)
    });
    Effect::new(move |_| match send.value().get() {
        Some(Ok(())) =>
        {
            #[cfg(feature = "hydrate")]
            if let Some(w) = web_sys::window() {
                let _ = w.location().reload();
            }
        }
        Some(Err(e)) => error.set(Some(crate::error::AppError::from(e).to_string())),
        None => {}
    });
    view! {
        <form class="mark-change" on:submit=move |ev: leptos::ev::SubmitEvent| { ev.prevent_default(); send.dispatch((state.get_untracked(), reason.get_untracked())); }>
            <select name="state" aria-label="What this change is" prop:value=move || state.get() on:change=move |ev| state.set(event_target_value(&ev))>
                <option value="acknowledged">"expected"</option>
                <option value="investigate">"a regression to investigate"</option>
            </select>
            <input name="reason" type="text" aria-label="Reason" placeholder="why (required)" prop:value=move || reason.get() on:input=move |ev| reason.set(event_target_value(&ev)) />
            <button type="submit" disabled=move || send.pending().get()>"Mark"</button>
            {move || error.get().map(|e| view! { <span class="problem" role="alert">{e}</span> })}
        </form>
    }
}
