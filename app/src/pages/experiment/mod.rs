//! One experiment's page: the verdict and why, what was compared, the judge's report as tables and
//! charts, the trials, and the files. Readable by signed-in users and by holders of a share link; it
//! renders completely on the server, charts included, so a reviewer's link works without JavaScript.

mod actions;
mod comment;
mod live;
mod load;
mod pipeline;
pub mod share;
pub(crate) mod trials;
mod warp;

#[cfg(feature = "ssr")]
pub use live::adaptive_progress;
pub use live::{JsonAdaptiveProgress, JsonProgress, JsonRunning};
#[cfg(feature = "ssr")]
pub use load::trial_views;
pub use load::{load_experiment, ArmView, ExperimentView, FileView, VerdictEntry};
pub use wire::progress::JsonTrialRow;

use crate::error::{AppError, ErrorView};
use crate::format::{short_ref, utc_minutes};
use crate::pages::history::VerdictBadge;
use crate::report::{ChartView, StoredReport};
use leptos::prelude::*;
use leptos_meta::{Meta, Title};
use leptos_router::hooks::{use_params_map, use_query_map};

#[component]
pub fn ExperimentPage() -> impl IntoView {
    // Read once: the page is rendered whole on the server (islands: it never re-renders in the browser).
    let id = use_params_map().read_untracked().get("id").and_then(|v| v.parse::<i64>().ok());
    let log = use_query_map().read_untracked().get("scale").as_deref() == Some("log");
    view! {
        {crate::awaited::awaited(async move {
            let loaded = match id {
                Some(id) => load_experiment(id, log).await,
                None => Err(AppError::NotFound("an experiment id is a number".into())),
            };
            match loaded {
                Ok(view) => view! { <ExperimentBody view /> }.into_any(),
                Err(error) => view! { <Title text="Experiment" /> <ErrorView error /> }.into_any(),
            }
        })}
    }
}

#[component]
fn ExperimentBody(view: ExperimentView) -> impl IntoView {
    let s = view.summary.clone();
    let refs = format!("{} → {}", s.base_ref.as_deref().map(short_ref).unwrap_or("?"), s.head_ref.as_deref().map(short_ref).unwrap_or("?"));
    // Every arm at one commit with no config of its own: a same-code run (an A/A), said as such.
    let shas: Vec<&str> = view.arms.iter().filter_map(|a| a.sha.as_deref()).collect();
    let same_code = view.arms.len() >= 2
        && shas.len() == view.arms.len()
        && shas.iter().all(|x| *x == shas[0])
        && view.arms.iter().all(|a| a.config_diff.is_none());
    let refs = match (&view.calibration, same_code) {
        // A calibration runs one commit again and again: "main at 1a2b3c4d5e — a calibration: …", not "main → main".
        (Some(_), _) if !shas.is_empty() && shas.iter().all(|x| *x == shas[0]) => format!(
            "{} at {} — a calibration: every trial runs this commit",
            s.head_ref.as_deref().map(short_ref).unwrap_or("?"),
            judge::units::short_sha(shas[0])
        ),
        (_, true) => format!("{refs} — an A/A: every arm runs commit {}", judge::units::short_sha(shas[0])),
        _ => refs,
    };
    let og = view.shared.then(|| {
        let verdict = s.verdict.map(|v| v.as_str().to_string()).unwrap_or_else(|| "not judged yet".into());
        let description = view.reasons.first().cloned().unwrap_or_else(|| format!("{} experiment, {}", s.kind.as_str(), s.status.as_str()));
        view! {
            <Meta property="og:title" content=format!("{} — {verdict}", s.title) />
            <Meta property="og:description" content=description />
            <Meta property="og:type" content="article" />
        }
    });
    let id = s.id;
    // A cancelled experiment whose trials are still stopping keeps its live table until they have.
    let running = matches!(s.status, judge::ExperimentStatus::Queued | judge::ExperimentStatus::Running)
        || view.trials.iter().any(|t| t.state == "running");
    view! {
        <Title text=format!("{} · #{}", s.title, s.id) />
        {og}
        <div class="page-head">
            <h1>{s.title.clone()} " " <span class="muted">"#" {s.id}</span></h1>
            <div class="head-actions">
                <actions::Actions id may_cancel=view.may_cancel may_rerun=view.may_rerun />
            </div>
        </div>
        <section class=format!("banner tone-{}", s.verdict.map(|v| format!("{:?}", v.tone()).to_lowercase()).unwrap_or_else(|| "none".into())) aria-label="Verdict">
            <p class="banner-verdict">
                {match (&view.calibration, s.status) {
                    (Some(_), judge::ExperimentStatus::Judged) => view! { <span class="verdict tone-none">"◆ calibration measured"</span> }.into_any(),
                    (Some(_), _) => view! { <span class="verdict tone-none">"◆ calibration"</span> }.into_any(),
                    _ => view! { <VerdictBadge verdict=s.verdict status=Some(s.status) /> }.into_any(),
                }}
                {match &view.report {
                    Some(crate::report::StoredReport::Pipeline(r)) if view.calibration.is_none() => {
                        r.news().map(|n| view! { " " <span class="headline">{format!("— {n}")}</span> })
                    }
                    Some(crate::report::StoredReport::Warp { gate, .. }) => {
                        judge::warp::headline::news(gate).map(|n| view! { " " <span class="headline">{format!("— {n}")}</span> })
                    }
                    _ => None,
                }}
                " " <span class="muted">{s.status.as_str()}</span>
            </p>
            {(!view.reasons.is_empty()).then(|| view! {
                <ul class="reasons">{view.reasons.iter().map(|r| view! { <li>{r.clone()}</li> }).collect_view()}</ul>
            })}
        </section>
        // What to do with the answer, under it: paste it into the review, share the page, find the commit.
        <section class="follow-up" aria-label="Share and follow up">
            <share::ShareBox id shared=view.shared may_share=view.may_share links=view.share_links.clone()
                comment={s.verdict.is_some() && view.reader_signed_in} />
            {view.bisect.clone().map(|offer| view! { <crate::pages::bisection::start::FindCommit offer /> })}
            {(!view.bisections.is_empty()).then(|| view! {
                <p class="bisections-of">"Bisections of this range: "
                    {view.bisections.iter().map(|(b, status)| view! { <a href=format!("/bisections/{b}")>"#" {*b} " " <span class="muted">{status.clone()}</span></a> " " }).collect_view()}
                </p>
            })}
        </section>
        // While it runs, the trials table lives in the progress island, which redraws it with each event.
        {running.then(|| view! { <live::LiveProgress id trials=view.trials.clone() adaptive=view.adaptive.clone() /> })}
        <dl class="facts">
            <dt>"Kind"</dt><dd>{s.kind.as_str()} {s.suite.clone().map(|x| format!(" · suite {x}"))}</dd>
            // A warp page speaks upstream's words: baseline and candidate (the gate and charts do).
            <dt>{if s.kind == judge::ExperimentKind::Warp { "Baseline → candidate" } else { "Control → treatment" }}</dt><dd class="refs">{refs}</dd>
            <dt>"Launched"</dt><dd>{utc_minutes(s.created_at)} {s.launched_by.clone().map(|w| format!(" by {w}"))}</dd>
            {view.warp_matrix.clone().map(|(m, asked)| view! {
                <dt>"Matrix"</dt><dd class="matrix">{m} <span class="muted">{if asked { " (set at launch)" } else { " (the suite's)" }}</span></dd>
            })}
            {(!view.noise.is_empty()).then(|| view! {
                <dt>"Judged with"</dt>
                <dd>
                    <ul class="judged-with">{view.noise.iter().map(|(k, v)| view! { <li><span class="muted">{k.clone()}</span> " " {v.clone()}</li> }).collect_view()}</ul>
                    {view.tested.clone().map(|t| view! { <details class="tested"><summary>"How the stages were tested"</summary><p>{t}</p></details> })}
                </dd>
            })}
            {view.method_version.map(|v| {
                let old = v < view.current_method;
                view! {
                    <dt>"Method"</dt>
                    <dd class=old.then_some("old-method")>
                        {format!("judged by method v{v}")}
                        {old.then(|| format!(" — an older method: the current one is v{}; re-judging applies it to the stored rows and keeps this verdict beside the new one", view.current_method))}
                        {(old && view.may_rejudge).then(|| view! { " " <actions::Rejudge id method=view.current_method /> })}
                    </dd>
                }
            })}
            {view.baseline.then(|| view! {
                <dt>"Baseline"</dt><dd>"Measured, not compared: it has no verdict; its levels feed the suite's trends, and a launch with the same fingerprint may reuse it as its control (" <code>"reuse_baseline"</code> ")."</dd>
            })}
            {view.reused_baseline.map(|b| view! {
                <dt>"Control"</dt><dd>"Baseline " <a href=format!("/experiments/{b}")>"#" {b}</a> " reused: its trials were not run again."</dd>
            })}
            {view.imported.then(|| view! {
                <dt>"Imported"</dt><dd>"Arbiter did not run this experiment: it judged results measured elsewhere (" <code>"arbiter import"</code> ")."</dd>
            })}
        </dl>
        <Arms arms=view.arms.clone() fingerprint=view.fingerprint.clone() warp=s.kind == judge::ExperimentKind::Warp />
        // Pipeline: the stage table leads and the charts follow. Warp: the charts summarise the matrix
        // above its long gate table (six rows per cell).
        {match view.report.clone() {
            Some(StoredReport::Pipeline(r)) => view! {
                <pipeline::PipelineReportView report=*r />
                <Charts id charts=view.charts.clone() log=view.log />
            }.into_any(),
            Some(StoredReport::Warp { gate, provenance }) => view! {
                <Charts id charts=view.charts.clone() log=view.log />
                <warp::GateView gate=*gate provenance />
            }.into_any(),
            None if view.calibration.is_some() => view.calibration.clone().map(|c| view! { <CalibrationResult c /> }).into_any(),
            None if view.baseline && s.status == judge::ExperimentStatus::Judged => view! { <p class="muted">"A baseline has no report of its own: see its stages on the suite's trends."</p> }.into_any(),
            None if s.status == judge::ExperimentStatus::Cancelled => view! { <p class="muted">"No report: it was cancelled before every trial had ended, so it is not judged."</p> }.into_any(),
            None if s.status == judge::ExperimentStatus::Errored => view! { <p class="muted">"No report: it ended in an error before it could be judged (see the reasons above and the trials' logs)."</p> }.into_any(),
            None => view! { <p class="muted">"No report yet: the judge runs when every trial has ended."</p> }.into_any(),
        }}
        <VerdictHistory verdicts=view.verdicts.clone() />
        {(!running).then(|| view! { <trials::Timeline trials=view.trials.clone() /> })}
        <Downloads id kind=s.kind judged=view.report.is_some() calibration=view.calibration.is_some() files=view.files.clone() />
    }
}

/// A calibration's page: the noise profile it fed, per stage, and where it is used.
#[component]
fn CalibrationResult(c: load::CalibrationView) -> impl IntoView {
    let suite_href = format!("/suites/{}", c.suite);
    let Some(id) = c.profile_id else {
        return view! {
            <section class="report" aria-label="Calibration">
                <h2>"Calibration"</h2>
                <p class="muted">"No noise profile of this fingerprint is stored: the calibration had too few succeeded trials, or an admin reset the profile since. See the trials below and the suite's " <a href=suite_href>"noise profiles"</a> "."</p>
            </section>
        }
        .into_any();
    };
    let standing = if c.trusted { "trusted".to_string() } else { "not yet trusted (5 trials needed)".to_string() };
    view! {
        <section class="report" aria-label="Calibration">
            <h2>"Calibration"</h2>
            <p>{format!(
                "Its same-code trials went into noise profile #{id} of suite {}: now {} trials from {} calibration{}, {standing}. Later experiments of this suite with this fingerprint take each stage's spread from it (never its margin).",
                c.suite, c.trials, c.calibrations, if c.calibrations == 1 { "" } else { "s" }
            )} " " <a href=suite_href>"The suite's noise profiles"</a></p>
            <div class="table-wrap">
                <table class="data stages">
                    <thead><tr><th scope="col">"Stage"</th><th scope="col" class="num">"Trials"</th><th scope="col" class="num">"CPU spread"</th><th scope="col" class="num">"Summed elapsed spread"</th></tr></thead>
                    <tbody>{c.stages.into_iter().map(|(name, n, cpu, elapsed)| view! {
                        <tr><th scope="row">{name}</th><td class="num">{n}</td>
                            <td class="num">{format!("±{}", judge::pipeline::report::fmt_margin(cpu))}</td>
                            <td class="num">{format!("±{}", judge::pipeline::report::fmt_margin(elapsed))}</td></tr>
                    }).collect_view()}</tbody>
                </table>
            </div>
        </section>
    }
    .into_any()
}

/// Every verdict of a re-judged experiment, newest first, each with its method and reasons.
#[component]
fn VerdictHistory(verdicts: Vec<VerdictEntry>) -> impl IntoView {
    if verdicts.len() < 2 {
        return ().into_any();
    }
    view! {
        <section class="verdict-history" aria-label="Verdicts">
            <h2>{format!("Verdicts ({})", verdicts.len())}</h2>
            <ol class="verdicts">
                {verdicts.into_iter().enumerate().map(|(i, v)| view! {
                    <li>
                        <VerdictBadge verdict=Some(v.verdict) />
                        {format!(" method v{} · {}", v.method_version, utc_minutes(v.judged_at))}
                        {match &v.judged_by { Some(w) => format!(" · re-judged by {w}"), None => " · at its end".to_string() }}
                        {(i == 0).then(|| view! { " " <span class="muted">"(shown)"</span> })}
                        <details><summary>{format!("Reasons ({})", v.reasons.len())}</summary>
                            <ul class="reasons">{v.reasons.into_iter().map(|r| view! { <li>{r}</li> }).collect_view()}</ul>
                        </details>
                    </li>
                }).collect_view()}
            </ol>
        </section>
    }
    .into_any()
}

#[component]
fn Arms(arms: Vec<ArmView>, fingerprint: Vec<(String, String)>, warp: bool) -> impl IntoView {
    // Warp: the control is the baseline and the treatment the candidate (extra arms keep their names).
    let word = move |w: String| match (warp, w.as_str()) {
        (true, "control") => "baseline".to_string(),
        (true, "treatment") => "candidate".to_string(),
        _ => w,
    };
    view! {
        <h2>"Arms"</h2>
        <table class="data arms">
            <thead><tr><th scope="col">"Arm"</th><th scope="col">"Role"</th><th scope="col">"Ref"</th><th scope="col">"SHA"</th><th scope="col">"Config diff"</th></tr></thead>
            <tbody>
                {arms.into_iter().map(|a| view! {
                    <tr>
                        <td><span class=format!("swatch arm-{}", a.colour) aria-hidden="true"></span> <strong>{word(a.name)}</strong></td>
                        <td>{word(a.role)}</td>
                        <td><code>{a.git_ref.unwrap_or_default()}</code></td>
                        <td><code>{a.sha.unwrap_or_else(|| "not recorded".into())}</code></td>
                        <td>{a.config_diff.map(|d| view! { <pre class="diff">{d}</pre> })}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        {(!fingerprint.is_empty()).then(|| view! {
            <details class="fingerprint">
                <summary>"Workload fingerprint (" {fingerprint.len()} " fields)"</summary>
                <dl class="facts">{fingerprint.into_iter().map(|(k, v)| view! { <dt>{k}</dt><dd><code>{v}</code></dd> }).collect_view()}</dl>
            </details>
        })}
    }
    .into_any()
}

#[component]
fn Charts(id: i64, charts: Vec<ChartView>, log: bool) -> impl IntoView {
    if charts.is_empty() {
        return ().into_any();
    }
    let any_scalable = charts.iter().any(|c| c.scalable);
    view! {
        <section class="charts" aria-label="Charts">
            <div class="section-head">
                <h2>"Charts"</h2>
                {any_scalable.then(|| view! {
                    <p class="scale">"Value axis: "
                        <a href=format!("/experiments/{id}") aria-current=(!log).then_some("true")>"linear"</a> " · "
                        <a href=format!("/experiments/{id}?scale=log") aria-current=log.then_some("true")>"log"</a>
                    </p>
                })}
            </div>
            {charts.into_iter().map(|c| {
                let href = format!("/experiments/{id}/charts/{}.svg{}", c.name, if log && c.scalable { "?scale=log" } else { "" });
                view! {
                    <figure class="chart" id=format!("chart-{}", c.name)>
                        {match c.svg {
                            Ok(svg) => view! { <div class="svg" inner_html=svg></div> }.into_any(),
                            Err(why) => view! { <p class="muted">{why}</p> }.into_any(),
                        }}
                        <figcaption>{c.caption} " · " <a href=href>"SVG"</a></figcaption>
                    </figure>
                }
            }).collect_view()}
        </section>
    }
    .into_any()
}

#[component]
fn Downloads(id: i64, kind: judge::ExperimentKind, judged: bool, calibration: bool, files: Vec<FileView>) -> impl IntoView {
    let exports: &[(&str, &str)] = match kind {
        judge::ExperimentKind::Pipeline => {
            &[("report.md", "Markdown report"), ("stages.csv", "Stage table (CSV)"), ("report.json", "Everything (JSON)")]
        }
        judge::ExperimentKind::Warp => &[("gate.md", "gate.md"), ("gate.csv", "Gate table (CSV)"), ("report.json", "Everything (JSON)")],
    };
    view! {
        <h2>"Downloads"</h2>
        {if calibration {
            view! { <p class="muted">"A calibration has no report to download: what it measured is the noise profile above; its trials' logs are below."</p> }.into_any()
        } else if judged {
            view! {
                <ul class="downloads">
                    {exports.iter().map(|(name, label)| view! {
                        <li><a href=format!("/experiments/{id}/export/{name}") download=*name>{*label}</a></li>
                    }).collect_view()}
                </ul>
            }.into_any()
        } else {
            view! { <p class="muted">"Reports can be downloaded once the experiment is judged."</p> }.into_any()
        }}
        {(!files.is_empty()).then(|| view! {
            <details class="files">
                <summary>"Logs and artifacts (" {files.len()} " files)"</summary>
                <ul>
                    {files.into_iter().map(|f| view! {
                        <li><a href=format!("/experiments/{id}/files/{}", f.path)>{f.path.clone()}</a> " " <span class="muted">{crate::format::bytes(f.size as f64)}</span></li>
                    }).collect_view()}
                </ul>
            </details>
        })}
    }
    .into_any()
}

/// A job id as people read it: a local process's `PID@START` (its start time is for Arbiter's own
/// recovery check) shows as the pid; a cluster's job id as it is.
pub fn shown_job(job: &str) -> &str {
    match job.split_once('@') {
        Some((pid, start)) if pid.bytes().all(|b| b.is_ascii_digit()) && start.bytes().all(|b| b.is_ascii_digit()) => pid,
        _ => job,
    }
}
