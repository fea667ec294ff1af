//! The `change_point` notification: after an experiment's trend points are written, each series it
//! belongs to (suite, fingerprint, metric, item) is searched for change points with the trends page's
//! detector and parameters; a change among the series' last points is new, and is sent once per first
//! experiment after it (the store's notification key), listing every series that changed there.

use crate::notify::{deliver, NotifySpec, Target};
use crate::Engine;
use judge::changepoint::{detect, Params};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// How far back a change point still counts as new: enabling the event on a suite with a long history
/// does not replay it, and a change is found as soon as `min_segment` points follow it.
pub const RECENT_POINTS: usize = 8;

/// The newest points read per series.
const SERIES_POINTS: u32 = 400;

pub async fn after_points(
    engine: &Engine,
    experiment_id: i64,
    spec: &NotifySpec,
    webhook: &str,
    suite_id: i64,
) -> Result<(), store::StoreError> {
    let store = &engine.store;
    let mut found: BTreeMap<i64, Vec<Value>> = BTreeMap::new();
    for (metric, item, fingerprint) in store.experiment_series(experiment_id).await? {
        let query = store::trends::TrendQuery {
            suite_id,
            metric: metric.clone(),
            items: vec![item.clone()],
            since: None,
            until: None,
            limit: SERIES_POINTS,
        };
        let rows: Vec<_> = store.trend(&query).await?.into_iter().filter(|r| r.fingerprint == fingerprint).collect();
        let values: Vec<f64> = rows.iter().map(|r| r.value).collect();
        for c in detect(&values, &Params::default()).into_iter().filter(|c| c.index + RECENT_POINTS >= rows.len()) {
            let (before, after) = (rows[c.index - 1].experiment_id, rows[c.index].experiment_id);
            found.entry(after).or_default().push(json!({
                "metric": metric, "item": item, "fingerprint": fingerprint, "before": c.before, "after": c.after,
                "change_pct": c.change_pct, "last_before": before, "first_after": after,
            }));
        }
    }
    for (after, changes) in found {
        let summary = store.experiment_summary(after).await?;
        let url = format!("{}/experiments/{after}", engine.base_url);
        let body = payload(&summary, &url, &changes);
        if let Some(id) = store.insert_notification(after, suite_id, "change_point", webhook, &body).await? {
            tokio::spawn(deliver(store.clone(), id, spec.clone(), Target { url: webhook.trim().to_string(), token: None }, body));
        }
    }
    Ok(())
}

/// The payload (pure): the first experiment after the change, every series that changed there, and a
/// Slack-compatible line naming the largest changes.
pub fn payload(summary: &store::experiments::ExperimentSummary, url: &str, changes: &[Value]) -> Value {
    let suite = summary.suite.clone().unwrap_or_default();
    let mut words: Vec<String> = changes
        .iter()
        .take(3)
        .map(|c| {
            let pct = c["change_pct"].as_f64().unwrap_or(0.0);
            format!("{} of {} {pct:+.1} %", c["metric"].as_str().unwrap_or(""), c["item"].as_str().unwrap_or(""))
        })
        .collect();
    if changes.len() > 3 {
        words.push(format!("{} more", changes.len() - 3));
    }
    json!({
        "event": "change_point",
        "text": format!(
            "*Change point* in suite {} from <{url}|#{} {}>: {}",
            super::slack_escape(&suite),
            summary.id,
            super::slack_escape(&summary.title),
            super::slack_escape(&words.join(", "))
        ),
        "experiment": {"id": summary.id, "title": summary.title, "url": url, "suite": suite, "kind": summary.kind.as_str()},
        "changes": changes,
    })
}
