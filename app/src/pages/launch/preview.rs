//! The dry-run plan, as the server resolved it: arms with their SHAs, every trial's command, the trial
//! count and the time it may take. Nothing is stored until Launch.

use leptos::prelude::*;
use serde_json::Value;

fn short(sha: &str) -> String {
    judge::units::short_sha(sha).to_string()
}

fn minutes(m: f64) -> String {
    if m < 1.0 {
        "under a minute".into()
    } else if m >= 90.0 {
        format!("{:.1} h", m / 60.0)
    } else {
        format!("{m:.0} min")
    }
}

/// "With 10 trials an arm this detects ±3.9 % …; ±2 % needs about 37 trials an arm [Use 37 trials]".
#[component]
fn Power(d: Value, use_trials: Callback<u32>) -> impl IntoView {
    use judge::pipeline::report::fmt_margin;
    let num = |k: &str| d[k].as_f64().unwrap_or(f64::NAN);
    let n = d["trials_per_arm"].as_u64().unwrap_or(0);
    let head = format!(
        "— a change that size in a typical stage is found {} of the time at the experiment's {} error rate (spread {} from {}; {} test{} in the family{}, the first at the {} level).",
        fmt_margin(100.0 * num("power")),
        fmt_margin(100.0 * num("alpha")),
        fmt_margin(num("spread_pct")),
        d["spread_source"].as_str().unwrap_or("?"),
        d["family"],
        if d["family"].as_u64() == Some(1) { "" } else { "s" },
        if d["family_assumed"].as_bool() == Some(true) { ", assumed until a calibration lists the stages" } else { "" },
        judge::pipeline::report::fmt_level(num("alpha_test")),
    );
    // Advice that knows the state: a calibrated suite is not told to calibrate.
    let calibrated = d["spread_source"].as_str().is_some_and(|w| w.starts_with("the noise profile"));
    let more_spread = if calibrated { "use a quieter host, or plan more pairs" } else { "calibrate the suite, or plan more pairs" };
    let widen = if calibrated {
        "widen the change, or use a quieter host (its spread is the calibrated one)"
    } else {
        "widen the change, or calibrate the suite to measure its spread"
    };
    let noisiest = d["noisiest"].as_array().and_then(|a| Some((a.first()?.as_str()?.to_string(), a.get(1)?.as_f64()?)));
    let target = fmt_margin(num("target_pct"));
    let need = d["trials_for_target"].as_u64().map(|t| t as u32);
    // The third answer's X, fixed by this plan: printed with every claim the experiment makes.
    let x = &d["no_regression"];
    let third = x.is_object().then(|| match x["pct"].as_f64() {
        Some(pct) => format!(
            "If nothing is detected, it can still pass on \"no regression ≥ {}\" (99 % one-sided bound): {}.",
            fmt_margin(pct),
            x["from"].as_str().unwrap_or("?")
        ),
        None => {
            let why = x["from"].as_str().unwrap_or("?");
            format!("No \"no regression of X %\" answer — {}.", why.strip_prefix("none: ").unwrap_or(why))
        }
    });
    view! {
        <div class="power" aria-label="What these trials can detect">
            <p class="detectable"><strong>{match d["mde_pct"].as_f64() {
                Some(mde) => format!("Can detect ±{} with {}.", fmt_margin(mde), judge::units::trials_an_arm(n)),
                None => format!("{} detect nothing below ±10000 %: they measure too little spread of their own ({more_spread}).", judge::units::trials_an_arm(n)),
            }}</strong> " " {head}</p>
            {noisiest.map(|(stage, m)| view! { <p class="muted">{format!("The noisiest stage, {stage}, needs ±{} to be detected as often.", fmt_margin(m))}</p> })}
            {third.map(|t| view! { <p class="no-regression">{t}</p> })}
            <p class="needed">
                {match need {
                    Some(t) if t as u64 == n => format!("±{target} needs {}: this plan has them.", judge::units::trials_an_arm(t.into())),
                    Some(t) => format!("±{target} needs about {}.", judge::units::trials_an_arm(t.into())),
                    None => format!("±{target} needs more than {} trials an arm (the most a launch may ask for): {widen}.", judge::pipeline::power::MAX_PLANNED_TRIALS),
                }}
                {need.filter(|t| *t as u64 != n).map(|t| view! {
                    " " <button type="button" class="use-trials" on:click=move |_| use_trials.run(t)>{if t == 1 { "Use 1 trial".to_string() } else { format!("Use {t} trials") }}</button>
                })}
            </p>
        </div>
    }
}

#[component]
pub fn PlanPreview(plan: Value, use_trials: Callback<u32>) -> impl IntoView {
    let arms = plan["arms"].as_array().cloned().unwrap_or_default();
    let trials = plan["trials"].as_array().cloned().unwrap_or_default();
    let loads: usize = trials.iter().map(|t| t["phase"]["loads"].as_array().map_or(0, Vec::len)).sum();
    let estimate = match (plan["estimated_minutes"].as_f64(), plan["max_minutes"].as_f64()) {
        (Some(e), Some(max)) => format!(
            "{} (from {}), at most {} (every trial to its timeout)",
            if e < 1.0 { minutes(e) } else { format!("about {}", minutes(e)) },
            plan["estimate_basis"].as_str().unwrap_or("earlier runs"),
            minutes(max)
        ),
        (None, Some(max)) => {
            format!("at most {} (every trial to its timeout; no trials of this suite have run yet to estimate from)", minutes(max))
        }
        _ => "unknown".into(),
    };
    let fingerprint = crate::format::fingerprint_line(&plan["fingerprint"]);
    let order = plan["order_words"].as_str().unwrap_or("").to_string();
    let context = [
        Some(fingerprint).filter(|f| !f.is_empty()).map(|f| format!("Fingerprint: {f}")),
        plan["cluster"].as_str().map(|c| format!("runs on {c}")),
        plan["exemption"].as_str().map(|r| format!("exemption requested: {r}")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join("; ");
    view! {
        <section class="plan" aria-label="Plan">
            <h2>"Plan: " {plan["title"].as_str().unwrap_or("").to_string()}</h2>
            <p>
                <strong class="trial-count">{format!("{} trials", trials.len())}</strong>
                {format!(" ({} per arm, {} order{}{}); time: {estimate}.", plan["trials_per_arm"], order,
                    if loads > 0 { format!(", {loads} load runs") } else { String::new() }, wire::launch::warm_up_words(&plan))}
            </p>
            {wire::launch::adaptive_plan_words(&plan).map(|w| view! {
                <p class="adaptive-plan"><strong>"Adaptive: "</strong>{format!("the first look after {} trials an arm; {}.", plan["trials_per_arm"], w.trim_start_matches("trials auto: "))}</p>
            })}
            {(!plan["detectable"].is_null()).then(|| view! { <Power d=plan["detectable"].clone() use_trials /> })}
            {plan["warp_matrix"].as_str().map(|m| view! { <p class="matrix"><strong>"Matrix: "</strong>{m.to_string()}</p> })}
            {plan["warp_adaptive"].as_str().map(|m| view! { <p class="adaptive-rounds"><strong>"Adaptive rounds: "</strong>{m.to_string()}</p> })}
            // A warp suite often has no fingerprint: then no empty "Fingerprint:" line.
            {(!context.is_empty()).then(|| view! { <p class="muted">{context}</p> })}
            <table class="arms-plan">
                <thead><tr><th>"Arm"</th><th>"Role"</th><th>"Ref"</th><th>"SHA"</th><th>"Config"</th></tr></thead>
                <tbody>
                    {arms.into_iter().map(|a| view! {
                        <tr>
                            <td>{a["name"].as_str().unwrap_or("").to_string()}</td>
                            <td>{a["role"].as_str().unwrap_or("").to_string()}</td>
                            <td><code>{a["ref"].as_str().unwrap_or("").to_string()}</code></td>
                            <td><code class="sha">{short(a["sha"].as_str().unwrap_or(""))}</code></td>
                            <td>{if a["config"].is_null() { String::new() } else { a["config"].to_string() }}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
            <ol class="commands">
                {trials.into_iter().map(|t| {
                    let argv = t["argv"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" ")).unwrap_or_default();
                    let phase = t["phase"]["leg"].as_str().map(|leg| format!(" · phase {leg}, drive-sync {}", t["phase"]["drive_sync"]));
                    view! {
                        <li><span class="muted">{format!("{} · {} #{}", t["run_tag"].as_str().unwrap_or(""), t["arm"].as_str().unwrap_or(""), t["repeat"].as_u64().unwrap_or(0) + 1)}{phase}</span>
                            <code>{argv}</code></li>
                    }
                }).collect_view()}
            </ol>
        </section>
    }
}
