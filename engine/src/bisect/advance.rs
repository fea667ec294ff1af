//! Moving a bisection on: read the steps that ended, ask the search what is next, launch it, and at the
//! end name the culprit (its message, author and diff stat) and tell the suite's webhook.

use super::step_request;
use crate::error::{EngineError, EngineResult};
use crate::launch::git::Repo;
use crate::launch::{launch, Launched};
use crate::Engine;
use judge::bisect::{read_pipeline, read_warp, BisectMetric, Next, Outcome, Reading, Step, StepReading, StepRole};
use judge::ExperimentStatus;
use serde_json::json;
use store::bisections::StoredBisection;
use suite::notify::NotifyEvent;
use wire::bisection::JsonBisectionState;

/// One bisection moves at a time in this server: a step ending and a start never launch the same step twice.
static MOVING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Reads the ended steps of bisection `id` and launches what comes next (or ends it). Errors are logged
/// and, when the search cannot go on (a step cannot be launched), end it as errored with the reason.
pub async fn advance(engine: &Engine, id: i64) {
    let _one = MOVING.lock().await;
    if let Err(e) = advance_locked(engine, id).await {
        tracing::error!(error = %e, bisection = id, "cannot move the bisection on");
    }
}

async fn advance_locked(engine: &Engine, id: i64) -> EngineResult<()> {
    let stored = engine.store.bisection(id, &engine.base_url).await?;
    if stored.bisection.status != "running" {
        return Ok(());
    }
    let mut state = stored.bisection.state.clone();
    let suite = stored.bisection.suite.clone();
    read_steps(engine, &mut state).await?;
    let launched = state.search.steps.iter().filter(|s| !s.reused).count() as u32;
    let ran_minutes = (store::now_ms() - stored.bisection.created_at) as f64 / 60_000.0;
    let next = match state.search.next() {
        Next::Launch(_) if launched >= state.budget.max_steps => {
            Next::Done(spent(&state, format!("its {} experiments are spent", state.budget.max_steps)))
        }
        Next::Launch(_) if ran_minutes >= f64::from(state.budget.max_minutes) => {
            Next::Done(spent(&state, format!("its {} minutes are spent", state.budget.max_minutes)))
        }
        next => next,
    };
    match next {
        Next::Wait => save(engine, &stored, &state, "running").await,
        Next::Launch(planned) => {
            let room = (state.budget.max_steps - launched) as usize;
            for p in planned.into_iter().take(room) {
                let req = step_request(&suite, &state, p.role, p.commit, p.against, false);
                let mut step = Step::new(p.role, p.commit, p.against);
                match launch(engine, stored.launched_by_id, &req).await {
                    Ok(Launched::Stored { id: eid, .. }) => {
                        step.experiment_id = Some(eid);
                        state.log.push(format!(
                            "{}: {} launched as experiment #{eid}",
                            role_words(p.role),
                            versus(&state, p.commit, p.against)
                        ));
                        state.search.steps.push(step);
                    }
                    Ok(Launched::DryRun(_)) => unreachable!("a step is never a dry run"),
                    Err(e) => {
                        state.log.push(format!(
                            "{}: {} could not be launched: {e}",
                            role_words(p.role),
                            versus(&state, p.commit, p.against)
                        ));
                        state.outcome = Some(Outcome::Ambiguous { words: format!("stopped: a step could not be launched ({e})") });
                        save(engine, &stored, &state, "errored").await?;
                        notify(engine, &stored, &state).await;
                        return Err(e);
                    }
                }
            }
            save(engine, &stored, &state, "running").await
        }
        Next::Done(outcome) => {
            if let Outcome::Culprit { commit, .. } = &outcome {
                let sha = state.search.commits[*commit].sha.clone();
                state.culprit = match culprit(engine, &suite, &sha).await {
                    Ok(c) => Some(c),
                    Err(e) => {
                        state.log.push(format!("the culprit's message and diff stat could not be read: {e}"));
                        None
                    }
                };
            }
            state.log.push(format!("ended: {}", outcome.words()));
            state.outcome = Some(outcome);
            save(engine, &stored, &state, "finished").await?;
            notify(engine, &stored, &state).await;
            Ok(())
        }
    }
}

/// Ends the search within its budget: where the change lies so far.
fn spent(state: &JsonBisectionState, why: String) -> Outcome {
    let s = &state.search;
    let moved: Vec<usize> =
        s.steps.iter().filter(|x| x.role != StepRole::Confirm && x.reading == Some(Reading::Moved)).map(|x| x.commit).collect();
    let unmoved: Vec<usize> =
        s.steps.iter().filter(|x| x.role == StepRole::Probe && x.reading == Some(Reading::Unmoved)).map(|x| x.commit).collect();
    let hi = moved.iter().min().copied();
    let lo = unmoved.iter().max().copied();
    let place = match hi {
        Some(hi) => format!("; the change lies after {} up to {}", s.name(lo), s.name(Some(hi))),
        None => String::new(),
    };
    Outcome::Ambiguous { words: format!("ambiguous: the budget ran out ({why}){place}") }
}

fn role_words(role: StepRole) -> &'static str {
    match role {
        StepRole::Ends => "the ends",
        StepRole::Probe => "probe",
        StepRole::Confirm => "confirmation",
    }
}

fn versus(state: &JsonBisectionState, commit: usize, against: Option<usize>) -> String {
    let s = &state.search;
    format!(
        "{} vs {}",
        judge::units::short_sha(&s.commits[commit].sha),
        judge::units::short_sha(against.map_or(s.good.sha.as_str(), |i| s.commits[i].sha.as_str()))
    )
}

async fn save(engine: &Engine, stored: &StoredBisection, state: &JsonBisectionState, status: &str) -> EngineResult<()> {
    if state == &stored.bisection.state && status == "running" {
        return Ok(());
    }
    let culprit = state.culprit.as_ref().map(|c| c.sha.as_str());
    if !engine.store.update_bisection(stored.bisection.id, stored.version, state, status, culprit).await? {
        return Err(EngineError::Conflict(format!("bisection {} was changed meanwhile (cancelled?)", stored.bisection.id)));
    }
    Ok(())
}

/// Fills in the reading of each step whose experiment has ended.
async fn read_steps(engine: &Engine, state: &mut JsonBisectionState) -> EngineResult<()> {
    for i in 0..state.search.steps.len() {
        let step = &state.search.steps[i];
        let Some(eid) = step.experiment_id.filter(|_| step.reading.is_none()) else { continue };
        let summary = engine.store.experiment_summary(eid).await?;
        let want = if step.role == StepRole::Ends { None } else { state.search.direction() };
        let read = match summary.status {
            ExperimentStatus::Judged => match engine.store.latest_verdict(eid).await? {
                Some((_, reasons, report)) => reading(&state.metric, &report, want, &reasons),
                None => broken("judged without a report".into()),
            },
            ExperimentStatus::Errored => broken("the experiment errored".into()),
            ExperimentStatus::Cancelled => broken("the experiment was cancelled".into()),
            _ => continue,
        };
        let trials = store::trials::measured(&engine.store.trials(eid).await?)
            .iter()
            .filter(|t| t.state == judge::TrialState::Succeeded)
            .count()
            .div_ceil(2) as u32;
        let step = &mut state.search.steps[i];
        (step.reading, step.change_pct, step.interval_pct, step.words, step.trials) =
            (Some(read.reading), read.change_pct, read.interval_pct, read.words, trials);
        let what = match read.reading {
            Reading::Moved => "moved",
            Reading::Unmoved => "not moved",
            Reading::Unsure => "undecided",
            Reading::Opposite => "moved the other way",
            Reading::Broken => "could not be measured (skipped)",
        };
        let line = format!("{} (experiment #{eid}): {what} — {}", role_words(step.role), state.search.steps[i].words);
        state.log.push(line);
    }
    Ok(())
}

fn broken(words: String) -> StepReading {
    StepReading { reading: Reading::Broken, change_pct: None, interval_pct: None, words }
}

/// What a judged step's report says of the bisection's metric.
fn reading(metric: &BisectMetric, report: &serde_json::Value, want: Option<judge::bisect::Direction>, reasons: &[String]) -> StepReading {
    match metric {
        BisectMetric::StageCpu { stage } => match serde_json::from_value::<judge::pipeline::PipelineReport>(report.clone()) {
            Ok(r) => read_pipeline(&r, stage, want),
            Err(_) => broken(reasons.first().cloned().unwrap_or_else(|| "no report".into())),
        },
        // A warp experiment's stored report is `{"gate": …, "provenance": …}`.
        BisectMetric::WarpCell { cell, metric } => {
            match serde_json::from_value::<judge::warp::gate::GateReport>(report.get("gate").unwrap_or(report).clone()) {
                Ok(r) => read_warp(&r, cell, metric, want),
                Err(_) => broken(reasons.first().cloned().unwrap_or_else(|| "no report".into())),
            }
        }
    }
}

async fn culprit(engine: &Engine, suite: &str, sha: &str) -> Result<wire::bisection::JsonCulprit, String> {
    let stored = engine.store.suite_by_name(suite).await.map_err(|e| e.to_string())?;
    let definition: suite::SuiteDefinition = serde_json::from_value(stored.definition).map_err(|e| e.to_string())?;
    let repo = Repo::open(&definition.repository, &engine.data_dir).await?;
    repo.describe(sha).await
}

/// A finished (or errored) bisection tells its suite's webhook, when the suite's `[notify]` has one and
/// asks for `bisection`.
async fn notify(engine: &Engine, stored: &StoredBisection, state: &JsonBisectionState) {
    let Some(suite_id) = stored.suite_id else { return };
    let Ok(suite) = engine.store.suite_by_name(&stored.bisection.suite).await else { return };
    let Ok(definition) = serde_json::from_value::<suite::SuiteDefinition>(suite.definition) else { return };
    let Some(spec) = definition.notify.filter(|n| n.events.contains(&NotifyEvent::Bisection)) else { return };
    let Some(webhook) = spec.webhook.clone() else { return };
    // The notification log keys on an experiment: the bisection's last step.
    let Some(eid) = state.search.steps.iter().rev().find_map(|s| s.experiment_id) else { return };
    let url = format!("{}/bisections/{}", engine.base_url, stored.bisection.id);
    let outcome = state.outcome.as_ref();
    let words = outcome.map(|o| o.words().to_string()).unwrap_or_default();
    let body = json!({
        "event": "bisection",
        "text": format!("*Bisection* in suite {}: <{url}|#{} {}>: {}", crate::notify::slack_escape(&stored.bisection.suite), stored.bisection.id,
            crate::notify::slack_escape(&state.title), crate::notify::slack_escape(&words)),
        "bisection": {
            "id": stored.bisection.id, "url": url, "suite": stored.bisection.suite, "metric": stored.bisection.metric,
            "good": stored.bisection.good_sha, "bad": stored.bisection.bad_sha,
            "outcome": outcome.map(Outcome::kind), "words": words,
            "culprit": state.culprit.as_ref().map(|c| json!({"sha": c.sha, "subject": c.subject, "author": c.author})),
            "steps": state.search.steps.iter().filter_map(|s| s.experiment_id).collect::<Vec<_>>(),
        },
    });
    let event = format!("bisection:{}", stored.bisection.id);
    match engine.store.insert_notification(eid, suite_id, &event, &webhook, &body).await {
        Ok(Some(nid)) => {
            let target = crate::notify::Target { url: webhook.trim().to_string(), token: None };
            tokio::spawn(crate::notify::deliver(engine.store.clone(), nid, spec, target, body));
        }
        Ok(None) => {}
        Err(e) => tracing::error!(error = %e, bisection = stored.bisection.id, "cannot queue the bisection's notification"),
    }
}

/// An experiment ended: move on every running bisection it is a step of.
pub async fn experiment_ended(engine: &Engine, experiment_id: i64) {
    let Ok(running) = engine.store.bisections(Some("running"), 1000, &engine.base_url).await else { return };
    for b in running {
        if b.bisection.state.search.steps.iter().any(|s| s.experiment_id == Some(experiment_id)) {
            advance(engine, b.bisection.id).await;
        }
    }
}

/// At start-up: move on every bisection left running (a step may have ended while the server was down).
pub async fn resume_all(engine: &Engine) {
    let Ok(running) = engine.store.bisections(Some("running"), 1000, &engine.base_url).await else { return };
    for b in running {
        advance(engine, b.bisection.id).await;
    }
}

/// Cancels a running bisection and every step still running; answers how many steps were stopped.
pub async fn cancel(engine: &Engine, id: i64, me: Option<i64>, who: &str) -> EngineResult<usize> {
    let _one = MOVING.lock().await;
    let stored = engine.store.bisection(id, &engine.base_url).await?;
    if stored.bisection.status != "running" {
        return Err(EngineError::Conflict(format!("bisection {id} has already ended ({})", stored.bisection.status)));
    }
    let mut state = stored.bisection.state.clone();
    let running: Vec<i64> = state.search.steps.iter().filter(|s| s.reading.is_none()).filter_map(|s| s.experiment_id).collect();
    state.log.push(format!("cancelled by {who}; {} running step(s) stopped", running.len()));
    save(engine, &stored, &state, "cancelled").await?;
    let mut stopped = 0;
    for eid in &running {
        if crate::cancel_experiment(engine, *eid).await.is_ok() {
            stopped += 1;
        }
    }
    engine.store.audit(me, "bisection.cancel", &format!("bisection:{id}"), None, &json!({"steps_stopped": running})).await?;
    Ok(stopped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warp_steps_stored_report_is_read_through_its_gate() {
        let csv = include_str!("../../../judge/tests/data/warp/compare_fail.csv");
        let rows = judge::warp::compare_csv::parse_compare_csv("compare_fail.csv", csv, None, false).unwrap();
        let gate = judge::warp::gate::gate(&rows, &judge::warp::gate::GateConfig::default());
        // As the engine stores a warp verdict: the gate beside its provenance.
        let stored = json!({"gate": gate, "provenance": null});
        let metric = BisectMetric::WarpCell { cell: "4KiB/warp@8".into(), metric: "reqps".into() };
        let r = reading(&metric, &stored, None, &[]);
        assert_eq!(r.reading, Reading::Moved, "{}", r.words);
        assert!(r.change_pct.is_some_and(|c| c < -10.0), "{:?}", r.change_pct);
        // A probe as slow as the bad end reads moved in the ends' direction (obj/s down), not the other way.
        let again = reading(&metric, &stored, Some(judge::bisect::Direction::Down), &[]);
        assert_eq!(again.reading, Reading::Moved, "{}", again.words);
        let latency = BisectMetric::WarpCell { cell: "4KiB/warp@8".into(), metric: "latency".into() };
        assert_eq!(reading(&latency, &stored, Some(judge::bisect::Direction::Up), &[]).reading, Reading::Moved);
    }
}
