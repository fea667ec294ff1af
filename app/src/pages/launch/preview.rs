//! The dry-run plan, as the server resolved it: arms with their SHAs, every trial's command, the trial
//! count and the time it may take. Nothing is stored until Launch. Its words are the plan's own
//! (`wire::plan::JsonLaunchPlan::words`, which `arbiter launch --dry-run` prints too); this lays them out.

use leptos::prelude::*;
use wire::plan::{JsonLaunchPlan, PowerWords};

/// "Can detect ±3.9 % with 10 trials an arm …; ±2 % needs about 37 trials an arm [Use 37 trials]".
#[component]
fn Power(p: PowerWords, use_trials: Callback<u32>) -> impl IntoView {
    view! {
        <div class="power" aria-label="What these trials can detect">
            <p class="detectable"><strong>{p.detectable}</strong> " " {p.detail}</p>
            {p.noisiest.map(|n| view! { <p class="muted">{n}</p> })}
            {p.no_regression.map(|t| view! { <p class="no-regression">{t}</p> })}
            <p class="needed">
                {p.needed}
                {p.use_trials.map(|t| view! {
                    " " <button type="button" class="use-trials" on:click=move |_| use_trials.run(t)>{if t == 1 { "Use 1 trial".to_string() } else { format!("Use {t} trials") }}</button>
                })}
            </p>
        </div>
    }
}

#[component]
pub fn PlanPreview(plan: JsonLaunchPlan, use_trials: Callback<u32>) -> impl IntoView {
    let w = plan.words();
    view! {
        <section class="plan" aria-label="Plan">
            <h2>"Plan: " {w.title}</h2>
            <p><strong class="trial-count">{w.count}</strong>{w.summary}</p>
            {w.adaptive.map(|a| view! { <p class="adaptive-plan"><strong>"Adaptive: "</strong>{format!("{a}.")}</p> })}
            {w.power.map(|p| view! { <Power p use_trials /> })}
            {w.matrix.map(|m| view! { <p class="matrix"><strong>"Matrix: "</strong>{m}</p> })}
            {w.adaptive_rounds.map(|m| view! { <p class="adaptive-rounds"><strong>"Adaptive rounds: "</strong>{m}</p> })}
            // A warp suite often has no fingerprint: then no empty "Fingerprint:" line.
            {w.context.map(|c| view! { <p class="muted">{c}</p> })}
            <table class="arms-plan">
                <thead><tr><th>"Arm"</th><th>"Role"</th><th>"Ref"</th><th>"SHA"</th><th>"Config"</th></tr></thead>
                <tbody>
                    {w.arms.into_iter().map(|[name, role, git_ref, sha, config]| view! {
                        <tr>
                            <td>{name}</td>
                            <td>{role}</td>
                            <td><code>{git_ref}</code></td>
                            <td><code class="sha">{sha}</code></td>
                            <td>{config}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
            <ol class="commands">
                {w.trials.into_iter().map(|(label, argv)| view! {
                    <li><span class="muted">{label}</span><code>{argv}</code></li>
                }).collect_view()}
            </ol>
        </section>
    }
}
