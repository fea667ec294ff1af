//! Same-code canaries' alarm: the canary that tips its suite's realised false-alarm rate above the
//! promise beyond doubt (`judge::pipeline::canary`) sends `canary_alarm`, once.

use super::{deliver, slack_escape, Target};
use crate::Engine;
use serde_json::json;
use suite::notify::{NotifyEvent, NotifySpec};

/// The suite's canaries' realised rate, over the latest `judge::pipeline::canary::WINDOW`: (with `experiment_id`, without it).
pub async fn canary_rates(
    store: &store::Store,
    suite_id: i64,
    experiment_id: i64,
    promised: f64,
) -> Result<(judge::pipeline::canary::RealisedRate, judge::pipeline::canary::RealisedRate), store::StoreError> {
    use judge::pipeline::canary::{realised_of, stored_claims_a_change};
    let canaries = store.judged_canaries(suite_id, judge::pipeline::canary::WINDOW).await?;
    let claims: Vec<bool> = canaries.iter().map(|(_, _, report)| stored_claims_a_change(report)).collect();
    let before: Vec<bool> = canaries.iter().zip(&claims).filter(|((id, _, _), _)| *id != experiment_id).map(|(_, c)| *c).collect();
    Ok((realised_of(&claims, promised), realised_of(&before, promised)))
}

/// Sends `canary_alarm` when this canary tipped the suite's realised rate above the promise.
pub(super) async fn alarm(
    engine: &Engine,
    experiment_id: i64,
    spec: &NotifySpec,
    webhook: &str,
    suite_id: i64,
    promised: f64,
) -> Result<(), store::StoreError> {
    let (now, before) = canary_rates(&engine.store, suite_id, experiment_id, promised).await?;
    if !now.alarm || before.alarm {
        return Ok(());
    }
    let summary = engine.store.experiment_summary(experiment_id).await?;
    let suite = summary.suite.clone().unwrap_or_default();
    let url = format!("{}/suites/{suite}", engine.base_url);
    let words = now.words();
    let body = json!({
        "event": NotifyEvent::CanaryAlarm.as_str(),
        "text": format!("*Canary alarm* in suite <{url}|{}>: {}", slack_escape(&suite), slack_escape(&words)),
        "canaries": {"suite": suite, "url": url, "runs": now.runs, "claims": now.claims, "rate": now.rate,
            "interval": now.interval, "promised": now.promised, "words": words, "experiment_id": experiment_id},
    });
    if let Some(id) = engine.store.insert_notification(experiment_id, suite_id, NotifyEvent::CanaryAlarm.as_str(), webhook, &body).await? {
        tokio::spawn(deliver(engine.store.clone(), id, spec.clone(), Target { url: webhook.trim().to_string(), token: None }, body));
    }
    Ok(())
}

