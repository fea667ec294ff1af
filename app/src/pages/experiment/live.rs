//! Live progress while an experiment runs (an island): it listens to `/experiments/{id}/events`
//! (server-sent events) and redraws the counts, the bar, the times, each running trial's log tail and
//! the trials table with its timeline without a reload; when the verdict is stored it loads the page
//! again to show the result.

use leptos::either::Either;
use leptos::prelude::*;
pub use wire::progress::{JsonAdaptiveProgress, JsonProgress, JsonRunning};

/// The adaptive progress of an experiment whose stored plan is `plan` (`None` when it is not adaptive),
/// from its trials and its latest kept look (`Store::look`); the chart is drawn only when `draw`.
#[cfg(feature = "ssr")]
pub fn adaptive_progress(
    plan: &serde_json::Value,
    trials: &[store::trials::Trial],
    look: Option<&(i64, serde_json::Value)>,
    draw: bool,
) -> Option<JsonAdaptiveProgress> {
    let a = plan.get("launch")?.get("adaptive").filter(|a| !a.is_null())?;
    let max = a.get("max_trials")?.as_u64()? as u32;
    let expected = a.get("expected_trials").and_then(serde_json::Value::as_u64).map(|n| n as u32);
    let (settled, _) = store::trials::settled_prefix(trials);
    let planned = trials.iter().map(|t| t.repeat_index + 1).max().unwrap_or(0).max(0) as usize;
    let report = look.and_then(|(_, r)| serde_json::from_value::<judge::pipeline::report::PipelineReport>(r.clone()).ok());
    let seq = report.as_ref().and_then(|r| r.sequential.as_ref());
    let status = match seq {
        None => format!("first look after {} pairs", judge::pipeline::sequential::MIN_PAIRS),
        Some(q) if q.stopped => format!("stopped: {}", q.stop_reason),
        Some(q) => {
            let open =
                q.metrics.iter().filter(|m| m.metric == "cpu" && m.decision == judge::pipeline::sequential::Decision::Continue).count();
            let pairs = if q.pairs_used == 1 { "1 pair".to_string() } else { format!("{} pairs", q.pairs_used) };
            format!("{open} CPU metric{} undecided after {pairs}", if open == 1 { "" } else { "s" })
        }
    };
    let chart_svg = match (&report, draw) {
        (Some(r), true) => charts::sequential_course(r, charts::ForestMetric::Cpu).ok(),
        _ => None,
    };
    Some(JsonAdaptiveProgress {
        settled: settled.max(0) as usize,
        planned,
        expected,
        max,
        look: seq.map_or(0, |q| q.pairs_used),
        status,
        chart_svg,
    })
}

use judge::units::fmt_duration_s as duration;

/// "3/8 pairs done (8 expected: the fixed design's figure for the margin; at most 20; 4 planned) · 2 CPU
/// metrics undecided after 3 pairs", or "3 of at most 8 pairs done (4 planned) · …" when the budget is
/// smaller than the fixed design's figure.
fn pairs_line(a: &JsonAdaptiveProgress) -> String {
    let planned = if a.planned > a.settled { format!("; {} planned", a.planned) } else { String::new() };
    let head = match a.expected.filter(|e| *e < a.max) {
        Some(e) => {
            format!("{}/{e} pairs done ({e} expected: the fixed design's figure for the margin; at most {}{planned})", a.settled, a.max)
        }
        None => format!("{} of at most {} pairs done ({} planned)", a.settled, a.max, a.planned.max(a.settled)),
    };
    format!("{head} · {}", a.status)
}

#[island]
pub fn LiveProgress(id: i64, trials: Vec<super::JsonTrialRow>, adaptive: Option<JsonAdaptiveProgress>) -> impl IntoView {
    let progress = RwSignal::new(None::<JsonProgress>);
    let table = RwSignal::new(trials);
    let updates = RwSignal::new(0u32);
    // The adaptive run's latest figures, and its latest chart (an event carries one only when the look changed).
    let course = RwSignal::new(adaptive.as_ref().and_then(|a| a.chart_svg.clone()));
    let pairs = RwSignal::new(adaptive.map(|a| JsonAdaptiveProgress { chart_svg: None, ..a }));
    #[cfg(feature = "hydrate")]
    listen(id, progress, table, updates, course, pairs);
    #[cfg(not(feature = "hydrate"))]
    let _ = id;
    let states = ["queued", "running", "succeeded", "failed", "infra_failed", "cancelled"];
    view! {
        <section class="live" aria-label="Progress" data-updates=move || updates.get().to_string()>
            <h2>"Progress"</h2>
            {move || match progress.get() {
                None => Either::Left(view! { <p class="muted">"Waiting for the first update…"</p> }),
                Some(p) => Either::Right(view! {
                    <p class="live-summary">
                        <progress max=p.total.max(1).to_string() value=p.ended.to_string()></progress>
                        " " <strong class="live-count">{format!("{}/{} trials ended", p.ended, p.total)}</strong>
                        {format!(" · {}{} · elapsed {} · {}", p.status,
                            if p.at_once > 1 { format!(" · up to {} trials at once", p.at_once) } else { String::new() },
                            p.elapsed_s.map(duration).unwrap_or_else(|| "not started".into()),
                            match (p.remaining_s, p.done) {
                                (_, true) => "ended: loading the result…".to_string(),
                                (Some(r), _) => format!("about {} left", duration(r)),
                                (None, _) if p.queued_ahead > 0 => format!("waiting behind at most {} trials of other experiments; remaining time known after the first trial", p.queued_ahead),
                                (None, _) => "remaining time known after the first trial".to_string(),
                            })}
                    </p>
                    <ul class="live-states">
                        {states.iter().map(|s| view! { <li class=format!("state-{s}")>{format!("{s}: {}", p.states.get(*s).copied().unwrap_or(0))}</li> }).collect_view()}
                    </ul>
                    {p.running.into_iter().map(|r| view! {
                        <details class="running" open=true>
                            <summary>{format!("trial {} · {}{}{} · attempt {}", r.seq + 1, r.arm, r.cell.map(|c| format!(" · {c}")).unwrap_or_default(),
                                r.job_id.as_deref().map(|j| format!(" · job {}", super::shown_job(j))).unwrap_or_default(), r.attempt)}
                                {r.engine_state.map(|s| format!(" · engine: {s}"))}</summary>
                            <pre class="log-tail">{if r.log_tail.is_empty() { "(no output yet)".to_string() } else { r.log_tail }}</pre>
                        </details>
                    }).collect_view()}
                }),
            }}
        </section>
        {move || pairs.get().map(|a| view! {
            <section class="adaptive" aria-label="Pairs" data-look=a.look.to_string()>
                <h2>"Pairs"</h2>
                <p class="pairs-line"><progress max=a.expected.filter(|e| *e < a.max).unwrap_or(a.max).max(a.settled as u32).max(1).to_string() value=a.settled.to_string()></progress>
                    " " {pairs_line(&a)}</p>
                {move || match course.get() {
                    Some(svg) => view! { <figure class="chart course"><div class="svg" inner_html=svg></div>
                        <figcaption>"Each CPU metric's interval at every look: the lighter band is decided different once it clears 0, the darker one equivalent once it fits inside the grey ±margin."</figcaption></figure> }.into_any(),
                    None => view! { <p class="muted">"The chart of each metric's interval appears at the first look whose interval is finite (uncalibrated, about four pairs: no spread is borrowed)."</p> }.into_any(),
                }}
            </section>
        })}
        {move || view! { <super::trials::Timeline trials=table.get() now=progress.with(|p| p.as_ref().and_then(|p| p.now_ms)) /> }}
    }
}

#[cfg(feature = "hydrate")]
fn listen(
    id: i64,
    progress: RwSignal<Option<JsonProgress>>,
    table: RwSignal<Vec<super::JsonTrialRow>>,
    updates: RwSignal<u32>,
    course: RwSignal<Option<String>>,
    pairs: RwSignal<Option<JsonAdaptiveProgress>>,
) {
    use leptos::wasm_bindgen::{closure::Closure, JsCast};
    let Ok(source) = web_sys::EventSource::new(&format!("/experiments/{id}/events")) else { return };
    let on_progress = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
        if let Some(p) = ev.data().as_string().and_then(|t| serde_json::from_str::<JsonProgress>(&t).ok()) {
            if !p.trials.is_empty() {
                table.set(p.trials.clone());
            }
            if let Some(mut a) = p.adaptive.clone() {
                if let Some(svg) = a.chart_svg.take() {
                    course.set(Some(svg));
                }
                pairs.set(Some(a));
            }
            progress.set(Some(JsonProgress { adaptive: None, ..p }));
            updates.update(|n| *n += 1);
        }
    });
    let closing = source.clone();
    let on_done = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
        closing.close();
        if let Some(p) = ev.data().as_string().and_then(|t| serde_json::from_str::<JsonProgress>(&t).ok()) {
            progress.set(Some(p));
        }
        if let Some(w) = web_sys::window() {
            let _ = w.location().reload();
        }
    });
    // The server ended the stream because this visitor may no longer read the page (a revoked link, an
    // ended session): stop listening and load the page again, which says so.
    let ended = source.clone();
    let on_closed = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |_ev: web_sys::MessageEvent| {
        ended.close();
        if let Some(w) = web_sys::window() {
            let _ = w.location().reload();
        }
    });
    let _ = source.add_event_listener_with_callback("progress", on_progress.as_ref().unchecked_ref());
    let _ = source.add_event_listener_with_callback("done", on_done.as_ref().unchecked_ref());
    let _ = source.add_event_listener_with_callback("closed", on_closed.as_ref().unchecked_ref());
    on_progress.forget();
    on_done.forget();
    on_closed.forget();
}
