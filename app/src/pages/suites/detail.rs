//! `/suites/{name}`: one suite as TOML (editable by admins), its noise profiles (which thresholds its
//! pipeline experiments are judged with, per fingerprint), its schedules and their ticks, its
//! notifications and its recent experiments.

use crate::error::ErrorView;
use crate::format::utc_minutes;
use crate::pages::history::{ExperimentSummary, ExperimentTable};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileLine {
    pub id: i64,
    pub fingerprint: String,
    pub trials: i64,
    pub updated_at: i64,
    /// Per stage: the CPU spread it gives, in %; `None` for a stage whose mean CPU is below the floor
    /// (its spread is never used: such a stage is not tested).
    pub stages: Vec<(String, Option<f64>)>,
    /// 1: stored before method 2 (thresholds only; still used, recalibrate to measure spreads).
    pub version: u32,
    /// At least `TRUSTED_PROFILE_TRIALS` same-code trials stand behind it.
    pub trusted: bool,
    /// How many calibrations were pooled into it.
    pub calibrations: usize,
}

/// One notification and how its delivery went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotificationLine {
    pub experiment_id: i64,
    pub event: String,
    pub status: String,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub created_at: i64,
}

/// One recent experiment's measurement report in a line (the suite page's "Measurement" table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasurementLine {
    pub experiment_id: i64,
    /// The stage the figures are of.
    pub stage: String,
    /// The order covariate's largest first-trial effect, % (when both orders ran and it was fitted).
    pub order_pct: Option<f64>,
    /// The control's drift, % per trial, and whether its 95 % interval excludes 0.
    pub drift: Option<(f64, bool)>,
    /// The warm-up's cost against its arm's median, % (or the first trial's without one: `false`).
    pub first_trial: Option<(f64, bool)>,
    pub outliers: usize,
    /// Measured trials beside heavy load, of those watched.
    pub heavy_load: (usize, usize),
}

#[cfg(feature = "ssr")]
fn measurement_line(experiment_id: i64, report: &serde_json::Value) -> Option<MeasurementLine> {
    let r: judge::pipeline::report::PipelineReport = serde_json::from_value(report.clone()).ok()?;
    let m = r.measurement?;
    let order_pct = r
        .treatments
        .iter()
        .flat_map(|a| &a.stages)
        .filter_map(|s| s.cpu_test.as_ref()?.order.as_ref().filter(|o| o.adjusted)?.first_pct)
        .max_by(|a, b| a.abs().total_cmp(&b.abs()));
    Some(MeasurementLine {
        experiment_id,
        stage: m.stage,
        order_pct,
        drift: m.drift.map(|d| (d.pct_per_trial, d.interval_pct[0] > 0.0 || d.interval_pct[1] < 0.0)),
        first_trial: m.first_trials.first().map(|f| (f.pct, f.warm_up)),
        outliers: m.outliers.len(),
        heavy_load: (m.heavy_load.len(), m.watched),
    })
}

/// The suite's same-code canaries: their realised false-alarm rate against the promise, and each stage's
/// per-trial CPU spread canary by canary (newest first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CanaryView {
    /// `judge::pipeline::canary::RealisedRate::words`.
    pub words: String,
    pub alarm: bool,
    /// The stages the spreads are of (columns).
    pub stages: Vec<String>,
    pub runs: Vec<CanaryLine>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CanaryLine {
    pub experiment_id: i64,
    pub created_at: i64,
    pub claimed: bool,
    /// Per stage of `CanaryView::stages`: the spread, % (none below the CPU floor).
    pub spread_pct: Vec<Option<f64>>,
}

/// Canaries shown in the table (the rate counts up to `judge::pipeline::canary::WINDOW`, as the alarm does).
#[cfg(feature = "ssr")]
pub const CANARY_ROWS: usize = 20;
/// Stage columns at most.
#[cfg(feature = "ssr")]
pub const CANARY_STAGES: usize = 6;

#[cfg(feature = "ssr")]
fn canary_view(canaries: &[(i64, i64, serde_json::Value)], promised: f64) -> CanaryView {
    use judge::pipeline::canary::{realised_of, stored_claims_a_change};
    let claims: Vec<bool> = canaries.iter().map(|(_, _, r)| stored_claims_a_change(r)).collect();
    let rate = realised_of(&claims, promised);
    let reports: Vec<(i64, i64, Option<judge::pipeline::report::PipelineReport>)> =
        canaries.iter().map(|(id, at, r)| (*id, *at, serde_json::from_value(r.clone()).ok())).collect();
    let spread = |r: &Option<judge::pipeline::report::PipelineReport>| r.as_ref().and_then(|r| r.measurement.as_ref()).map(|m| m.spread_pct.clone());
    // The stages the newest canaries measured above the floor, most often first.
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for (_, _, r) in reports.iter().take(CANARY_ROWS) {
        for stage in spread(r).unwrap_or_default().into_keys() {
            *counts.entry(stage).or_default() += 1;
        }
    }
    let mut stages: Vec<(String, usize)> = counts.into_iter().collect();
    stages.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let stages: Vec<String> = stages.into_iter().take(CANARY_STAGES).map(|(s, _)| s).collect();
    CanaryView {
        words: rate.words(),
        alarm: rate.alarm,
        runs: reports
            .iter()
            .take(CANARY_ROWS)
            .zip(&claims)
            .map(|((id, at, r), claimed)| {
                let spread = spread(r).unwrap_or_default();
                CanaryLine {
                    experiment_id: *id,
                    created_at: *at,
                    claimed: *claimed,
                    spread_pct: stages.iter().map(|s| spread.get(s).copied()).collect(),
                }
            })
            .collect(),
        stages,
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteView {
    pub name: String,
    pub kind: String,
    pub source: String,
    pub updated_at: i64,
    pub toml: String,
    pub profiles: Vec<ProfileLine>,
    pub recent: Vec<ExperimentSummary>,
    /// The recent experiments' measurement reports, newest first (those that have one).
    #[serde(default)]
    pub measurement: Vec<MeasurementLine>,
    /// A pipeline suite's same-code canaries (when it has any, or a canary schedule).
    #[serde(default)]
    pub canaries: Option<CanaryView>,
    pub notifications: Vec<NotificationLine>,
    pub schedules: Vec<super::schedules::ScheduleLine>,
    pub schedule_runs: Vec<super::schedules::ScheduleRunLine>,
    pub may_edit: bool,
    /// A pipeline suite's judging margins and error rate (its `[judge]`, or the defaults), in words.
    pub margins: Option<String>,
    /// A warp suite's settings in words (server, matrix, budgets, limits, smoke preset, cell notes).
    #[serde(default)]
    pub warp: Vec<(String, String)>,
    /// The suite repository's base branch and its other branches, newest commits first (each a launch).
    #[serde(default)]
    pub base_branch: String,
    #[serde(default)]
    pub branches: Vec<String>,
}

/// "CPU ±2 %, elapsed ±25 %, family-wise error rate 1 % (the defaults)" from a suite's `[judge]`.
#[cfg(feature = "ssr")]
pub fn margin_words(definition: &serde_json::Value) -> String {
    let (m, own) = crate::format::suite_judge_method(definition);
    let (cpu, elapsed, alpha) = (m.cpu_margin_pct, m.elapsed_margin_pct, m.alpha);
    let source = if own { "its [judge]" } else { "the defaults" };
    use judge::pipeline::report::fmt_margin;
    format!(
        "margins CPU ±{}, elapsed ±{}; family-wise error rate {} ({source})",
        fmt_margin(cpu),
        fmt_margin(elapsed),
        fmt_margin(100.0 * alpha)
    )
}

#[server(prefix = "/fn", endpoint = "suite")]
pub async fn load_suite(name: String) -> Result<SuiteView, crate::error::AppError> {
    let me = crate::auth::require(crate::auth::Role::Launcher)?;
    let store = crate::error::store()?;
    let ctx = crate::context::server_context()?;
    let failed = crate::error::read_failed("the suite");
    let suite = match store.suite_by_name(&name).await {
        Ok(s) => s,
        Err(store::StoreError::NotFound { .. }) => {
            crate::auth::set_status(404);
            return Err(crate::error::AppError::NotFound(format!("there is no suite {name:?}")));
        }
        Err(e) => return Err(failed(e)),
    };
    // Secrets (webhook URL, env values) only to admins, who edit them.
    // Its text as written (comments and all) when it is kept; else the definition written out.
    let admin = me.has(crate::auth::Role::Admin);
    let as_written = match suite.toml.as_deref() {
        Some(text) if admin => Some(text.to_string()),
        Some(text) => suite::redacted_text(text, &suite.definition),
        None => None,
    };
    let toml = match as_written {
        Some(t) => t,
        None => {
            let shown = if admin { suite.definition.clone() } else { suite::redacted(&suite.definition) };
            (ctx.suite_toml)(&shown).map_err(crate::error::AppError::Server)?
        }
    };
    let profiles = store.noise_profiles(suite.id).await.map_err(failed)?;
    let filter = store::experiments::HistoryFilter { suite: Some(name.clone()), ..Default::default() };
    let query = store::experiments::HistoryQuery::from_filter(&filter, 10).map_err(crate::error::AppError::bad_request)?;
    let recent = store.list_experiments(&query).await.map_err(failed)?;
    let mut measurement = Vec::new();
    for e in recent.experiments.iter().filter(|e| e.kind == judge::ExperimentKind::Pipeline) {
        if let Some((_, _, report)) = store.latest_verdict(e.id).await.map_err(failed)? {
            measurement.extend(measurement_line(e.id, &report));
        }
    }
    let definition = serde_json::from_value::<suite::SuiteDefinition>(suite.definition.clone()).ok();
    let has_canary_schedule =
        definition.as_ref().is_some_and(|d| d.schedules.iter().any(|s| s.mode == suite::schedule::ScheduleMode::Canary));
    let canaries = store.judged_canaries(suite.id, judge::pipeline::canary::WINDOW).await.map_err(failed)?;
    let canaries = (suite.kind == judge::ExperimentKind::Pipeline && (has_canary_schedule || !canaries.is_empty()))
        .then(|| canary_view(&canaries, crate::format::suite_judge_method(&suite.definition).0.alpha));
    let notifications = store.notifications(suite.id, 20).await.map_err(failed)?;
    let (base_branch, branches) = match &definition {
        Some(d) => (d.base_branch.clone(), (ctx.branches)(d.repository.clone()).await),
        None => (String::new(), Vec::new()),
    };
    let schedule_runs = store.schedule_runs(suite.id, 20).await.map_err(failed)?;
    Ok(SuiteView {
        schedules: super::schedules::schedule_lines(&suite.definition, store::now_ms()),
        schedule_runs: schedule_runs.into_iter().map(Into::into).collect(),
        kind: suite.kind.as_str().into(),
        source: suite.source,
        updated_at: suite.updated_at,
        toml,
        profiles: profiles
            .into_iter()
            .map(|p| ProfileLine {
                id: p.id,
                fingerprint: crate::format::fingerprint_line(&p.fingerprint),
                trials: p.trials,
                updated_at: p.updated_at,
                stages: p.profile["stages"]
                    .as_object()
                    // The CPU spread per stage, as a CV in percent (method 2's log sd, else the CV).
                    .map(|m| {
                        m.iter()
                            .map(|(s, n)| {
                                let below = n["cpu"]["mean"].as_f64().is_some_and(|m| m < judge::pipeline::method::CPU_FLOOR_S);
                                let spread = 100.0 * n["cpu"]["log_sd"].as_f64().or(n["cpu"]["cv"].as_f64()).unwrap_or(f64::NAN);
                                (s.clone(), (!below).then_some(spread))
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                version: p.profile["version"].as_u64().unwrap_or(1) as u32,
                trusted: p.profile["trusted"].as_bool().unwrap_or(false),
                calibrations: p.profile["calibrations"].as_u64().unwrap_or(1) as usize,
            })
            .collect(),
        margins: (suite.kind == judge::ExperimentKind::Pipeline).then(|| margin_words(&suite.definition)),
        warp: serde_json::from_value::<suite::SuiteDefinition>(suite.definition.clone())
            .ok()
            .and_then(|d| d.warp)
            .map(|w| w.facts().into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            .unwrap_or_default(),
        recent: recent.experiments,
        measurement,
        canaries,
        notifications: notifications
            .into_iter()
            .map(|n| NotificationLine {
                experiment_id: n.experiment_id,
                event: n.event,
                status: n.status,
                attempts: n.attempts,
                last_error: n.last_error,
                created_at: n.created_at,
            })
            .collect(),
        may_edit: me.has(crate::auth::Role::Admin),
        base_branch,
        branches,
        name: suite.name,
    })
}

#[component]
pub fn SuitePage() -> impl IntoView {
    let name = use_params_map().read_untracked().get("name").unwrap_or_default();
    view! {
        {crate::awaited::awaited(async move {
            match load_suite(name).await {
                Ok(v) => view! { <SuiteBody v /> }.into_any(),
                Err(e) => view! { <Title text="Suite" /> <ErrorView error=e /> }.into_any(),
            }
        })}
    }
}

#[component]
fn SuiteBody(v: SuiteView) -> impl IntoView {
    let launch = format!("/launch?suite={}", v.name);
    let trends = format!("/trends?suite={}", v.name);
    view! {
        <Title text=format!("Suite {}", v.name) />
        <div class="page-head">
            <h1>"Suite " {v.name.clone()}</h1>
            <p><a href=launch>"Launch with it"</a> " · " <a href=trends>"Trends"</a> " · " <a href="/suites">"All suites"</a></p>
        </div>
        <dl class="facts">
            <dt>"Kind"</dt><dd>{v.kind.clone()}</dd>
            <dt>"Source"</dt><dd>{super::source_words(&v.source)} ", updated " {utc_minutes(v.updated_at)}</dd>
            {v.margins.clone().map(|m| view! { <dt>"Judged with"</dt><dd class="margins">{m}</dd> })}
            {(!v.branches.is_empty()).then(|| {
                let others: Vec<String> = v.branches.iter().filter(|b| **b != v.base_branch).cloned().collect();
                let suite = v.name.clone();
                view! {
                    <dt>"Branches"</dt>
                    <dd class="branches">
                        <span class="muted">{format!("control: the merge-base with {}; treatment: one of ", v.base_branch)}</span>
                        {others.into_iter().map(|b| {
                            let href = format!("/launch?suite={}&head={}", crate::format::encode_query(&suite), crate::format::encode_query(&b));
                            view! { <a href=href><code>{b}</code></a> " " }
                        }).collect_view()}
                    </dd>
                }
            })}
        </dl>
        {(!v.warp.is_empty()).then(|| view! {
            <h2>"Warp settings"</h2>
            <p class="muted">"What a launch of this suite runs and how it is judged; a launch may shape the matrix within these limits. Warp experiments are judged against relative budgets, not a noise profile."</p>
            <dl class="facts warp-settings">{v.warp.clone().into_iter().map(|(k, val)| view! { <dt>{k}</dt><dd>{val}</dd> }).collect_view()}</dl>
        })}
        <h2>"Definition"</h2>
        {if v.may_edit {
            view! {
                <p class="muted">"Saving replaces the stored suite for new launches (running experiments keep the copy they started with). A suite saved here is no longer loaded from its file at start-up."</p>
                <super::editor::SuiteEditor original=Some(v.name.clone()) toml=v.toml.clone() />
            }.into_any()
        } else {
            view! { <pre class="toml">{v.toml.clone()}</pre> }.into_any()
        }}
        {if v.warp.is_empty() {
            view! {
            <h2>"Noise profiles"</h2>
            {if v.profiles.is_empty() {
                view! { <p class="muted">"None yet: a calibration (Calibrate on the launch page) measures one per fingerprint. Until then pipeline experiments take the spread from their own trials (and a documented default where they are too few)."</p> }.into_any()
            } else {
                view! {
                    <p class="muted">"A calibration of the same fingerprint adds its same-code trials to the profile; from 5 trials a profile is trusted. Resetting one removes it: the next calibration starts afresh."</p>
                    <table class="data profiles">
                        <thead><tr><th scope="col">"#"</th><th scope="col">"Fingerprint"</th><th scope="col">"Same-code trials"</th><th scope="col">"CPU spread per stage"</th><th scope="col">"Updated"</th>{v.may_edit.then(|| view! { <th scope="col">"Reset"</th> })}</tr></thead>
                        <tbody>{v.profiles.into_iter().map(|p| {
                            let name = v.name.clone();
                            let standing = match (p.version, p.trusted) {
                                (1, _) => "stored by method 1: thresholds only — recalibrate to measure spreads".to_string(),
                                (_, true) => format!("trusted · {} calibration{}", p.calibrations, if p.calibrations == 1 { "" } else { "s" }),
                                (_, false) => format!("not yet trusted (5 needed) · {} calibration{}", p.calibrations, if p.calibrations == 1 { "" } else { "s" }),
                            };
                            view! {
                            <tr><td>{p.id}</td><td><code>{p.fingerprint}</code></td><td><strong>{p.trials}</strong>" "<span class="muted">{standing}</span></td>
                                <td>{p.stages.iter().map(|(s, t)| match t {
                                    Some(t) => format!("{s} ±{t:.1} %"),
                                    None => format!("{s}: below the {} CPU-s floor, not tested", judge::pipeline::method::CPU_FLOOR_S),
                                }).collect::<Vec<_>>().join(" · ")}</td>
                                <td>{utc_minutes(p.updated_at)}</td>
                                {v.may_edit.then(|| view! { <td><ResetProfile suite=name id=p.id /></td> })}</tr>
                        }}).collect_view()}</tbody>
                    </table>
                }.into_any()
            }}
            }.into_any()
        } else {
            ().into_any()
        }}
        {(!v.measurement.is_empty()).then(|| {
            use judge::pipeline::report::fmt_pct;
            view! {
            <section aria-label="Measurement over recent experiments">
                <h2>"Measurement over recent experiments"</h2>
                <p class="muted">"What each recent experiment's trials said about how they were measured (its Measurement section): the order effect the judge adjusted for, the control's drift (bold when its 95 % interval excludes 0), the warm-up's cost (or the first trial's, without one), outlier trials and trials beside heavy load."</p>
                <table class="data measurement">
                    <thead><tr><th scope="col">"Experiment"</th><th scope="col">"Stage"</th><th scope="col" class="num">"Order effect"</th><th scope="col" class="num">"Drift a trial"</th><th scope="col" class="num">"Warm-up"</th><th scope="col" class="num">"Outliers"</th><th scope="col" class="num">"Beside heavy load"</th></tr></thead>
                    <tbody>{v.measurement.clone().into_iter().map(|m| view! {
                        <tr>
                            <td><a href=format!("/experiments/{}", m.experiment_id)>{format!("#{}", m.experiment_id)}</a></td>
                            <td>{m.stage}</td>
                            <td class="num">{m.order_pct.map(fmt_pct).unwrap_or_else(|| "—".into())}</td>
                            <td class="num">{match m.drift {
                                Some((d, true)) => view! { <strong>{fmt_pct(d)}</strong> }.into_any(),
                                Some((d, false)) => fmt_pct(d).into_any(),
                                None => "—".into_any(),
                            }}</td>
                            <td class="num">{match m.first_trial {
                                Some((p, true)) => fmt_pct(p),
                                Some((p, false)) => format!("{} (first trial, no warm-up)", fmt_pct(p)),
                                None => "—".into(),
                            }}</td>
                            <td class="num">{m.outliers}</td>
                            <td class="num">{format!("{} of {}", m.heavy_load.0, m.heavy_load.1)}</td>
                        </tr>
                    }).collect_view()}</tbody>
                </table>
            </section>
        }})}
        {v.canaries.clone().map(|c| view! {
            <section aria-label="Same-code canaries">
                <h2>"Same-code canaries"</h2>
                <p class=if c.alarm { "canary-rate alarm" } else { "canary-rate" }>{c.words.clone()}</p>
                <p class="muted">"A canary runs one SHA against itself (a schedule with " <code>"mode = \"canary\""</code> ", or " <code>"arbiter launch --canary"</code> "): any change it claims is a false alarm. Each is judged against the noise profile as it stood, then its trials grow it. Below, each stage's per-trial CPU spread in each canary (the pooled within-arm SD, %): the host's noise over time."</p>
                {(!c.runs.is_empty()).then(|| view! {
                    <table class="data canaries">
                        <thead><tr><th scope="col">"When"</th><th scope="col">"Experiment"</th><th scope="col">"Claimed a change"</th>
                            {c.stages.iter().map(|s| view! { <th scope="col" class="num">{s.clone()}</th> }).collect_view()}</tr></thead>
                        <tbody>{c.runs.clone().into_iter().map(|r| view! {
                            <tr>
                                <td>{utc_minutes(r.created_at)}</td>
                                <td><a href=format!("/experiments/{}", r.experiment_id)>{format!("#{}", r.experiment_id)}</a></td>
                                <td>{if r.claimed { view! { <strong>"yes"</strong> }.into_any() } else { "no".into_any() }}</td>
                                {r.spread_pct.iter().map(|p| view! { <td class="num">{p.map(|p| format!("{p:.1} %")).unwrap_or_else(|| "—".into())}</td> }).collect_view()}
                            </tr>
                        }).collect_view()}</tbody>
                    </table>
                })}
            </section>
        })}
        <super::schedules::Schedules schedules=v.schedules.clone() runs=v.schedule_runs.clone() />
        <h2>"Notifications"</h2>
        {if v.notifications.is_empty() {
            view! { <p class="muted">"None sent. A " <code>"[notify]"</code> " table with a " <code>"webhook"</code> " URL sends one on a regression, a gate FAIL, an infrastructure failure or a new change point."</p> }.into_any()
        } else {
            view! {
                <table class="data notifications">
                    <thead><tr><th scope="col">"When"</th><th scope="col">"Experiment"</th><th scope="col">"Event"</th><th scope="col">"Delivery"</th><th scope="col">"Attempts"</th><th scope="col">"Last error"</th></tr></thead>
                    <tbody>{v.notifications.into_iter().map(|n| view! {
                        <tr><td>{utc_minutes(n.created_at)}</td><td><a href=format!("/experiments/{}", n.experiment_id)>{format!("#{}", n.experiment_id)}</a></td>
                            <td>{n.event}</td><td class=format!("delivery-{}", n.status)>{n.status.clone()}</td><td class="num">{n.attempts}</td><td>{n.last_error.unwrap_or_default()}</td></tr>
                    }).collect_view()}</tbody>
                </table>
            }.into_any()
        }}
        <h2>"Recent experiments"</h2>
        {if v.recent.is_empty() {
            view! { <p class="muted">"None yet."</p> }.into_any()
        } else {
            view! { <ExperimentTable rows=v.recent /> }.into_any()
        }}
    }
}

/// An admin's reset of one noise profile (`DELETE /api/v1/suites/{name}/noise-profiles/{id}`), asked twice.
#[island]
fn ResetProfile(suite: String, id: i64) -> impl IntoView {
    use crate::client::{reload, spawn_call, Method};
    let armed = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let click = move |_| {
        if !armed.get() {
            armed.set(true);
            return;
        }
        spawn_call(Method::Delete, format!("/api/v1/suites/{suite}/noise-profiles/{id}"), None, move |r| match r {
            Ok(_) => reload(),
            Err(e) => error.set(Some(e)),
        });
    };
    view! {
        <button type="button" class="danger" on:click=click>{move || if armed.get() { format!("Really reset #{id}?") } else { "Reset".to_string() }}</button>
        {move || error.get().map(|e| view! { <span class="error" role="alert">{e}</span> })}
    }
}
