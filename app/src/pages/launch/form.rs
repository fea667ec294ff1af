//! The launch form (an island): fields from the chosen suite, checked as they are typed with the
//! server's own rules; Preview asks the server for the dry-run plan, Launch and Calibrate store the
//! experiment and open its page.

use super::body::{launch_body, problems, ExtraArm, FormValues};
use super::preview::PlanPreview;
use super::SuiteChoice;
use crate::client::{go, spawn_call, Method};
use judge::launch_rules::FieldSpec;
use leptos::either::Either;
use leptos::prelude::*;

#[derive(Clone, Copy, PartialEq)]
enum Action {
    Preview,
    Launch,
    Calibrate,
}

#[island]
pub fn LaunchForm(suites: Vec<SuiteChoice>, initial: String, head: String, trials: String) -> impl IntoView {
    let start = suites.iter().find(|s| s.name == initial).unwrap_or(&suites[0]).clone();
    let suites = StoredValue::new(suites);
    let suite = RwSignal::new(start.clone());
    let mut first = FormValues { head, ..FormValues::for_suite(&start) };
    if !trials.is_empty() {
        first.trials = trials;
    }
    let values = RwSignal::new(first);
    let tried = RwSignal::new(false);
    let plan = RwSignal::new(None::<wire::plan::JsonLaunchPlan>);
    let error = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let found = Memo::new(move |_| problems(&suite.get(), &values.get()));
    let shown = move |field: &str| {
        let v = values.get();
        let typed = match field.split_once('.') {
            Some(("fingerprint", _)) | Some(("arms", _)) => true,
            _ => match field {
                "head" => !v.head.is_empty(),
                "reason" => !v.reason.is_empty(),
                _ => true,
            },
        };
        (tried.get() || typed).then(|| found.get().get(field).cloned()).flatten()
    };
    let message = move |field: &'static str| move || shown(field).map(|m| view! { <span class="problem" role="alert">{m}</span> });
    let choose = move |name: String| {
        if let Some(s) = suites.with_value(|all| all.iter().find(|s| s.name == name).cloned()) {
            let head = values.get_untracked().head;
            values.set(FormValues { head, ..FormValues::for_suite(&s) });
            suite.set(s);
            plan.set(None);
            error.set(None);
        }
    };
    let send = move |what: Action| {
        tried.set(true);
        error.set(None);
        let problems = found.get_untracked();
        // A calibration sends only the suite, head, trials and fingerprint: other fields do not block it.
        let blocking = problems.keys().any(|k| what != Action::Calibrate || k == "head" || k == "trials" || k.starts_with("fingerprint."));
        if blocking {
            error.set(Some(format!("fix the marked fields first: {}", problems.values().cloned().collect::<Vec<_>>().join("; "))));
            return;
        }
        let body = launch_body(&suite.get_untracked(), &values.get_untracked(), what == Action::Preview, what == Action::Calibrate);
        busy.set(true);
        spawn_call(Method::Post, "/api/v1/experiments".into(), Some(body), move |result| {
            busy.set(false);
            match result {
                Ok(answer) => match serde_json::from_value::<wire::plan::JsonLaunchAnswer>(answer) {
                    Ok(wire::plan::JsonLaunchAnswer::Launched(launched)) => go(&format!("/experiments/{}", launched.id)),
                    Ok(wire::plan::JsonLaunchAnswer::DryRun(dry)) => plan.set(Some(dry.plan)),
                    Err(e) => error.set(Some(format!("the server's answer is not a launch's: {e}"))),
                },
                Err(e) => {
                    plan.set(None);
                    error.set(Some(e));
                }
            }
        });
    };
    // The preview's one click: take the trial count it proposes and preview again.
    let use_trials = Callback::new(move |n: u32| {
        values.update(|v| v.trials = n.to_string());
        send(Action::Preview);
    });
    let edit = move |f: fn(&mut FormValues, String)| move |ev: leptos::ev::Event| values.update(|v| f(v, event_target_value(&ev)));
    let is_warp = move || suite.with(|s| s.budgets.is_some());
    view! {
        // `novalidate`: the fields' own inline messages (the server's words) speak, not the browser's bubble,
        // which would hide them and block the preview.
        <form class="launch" novalidate on:submit=move |ev: leptos::ev::SubmitEvent| { ev.prevent_default(); send(Action::Preview) }>
            <fieldset>
                <legend>"Suite and arms"</legend>
                <label>"Suite"
                    <select name="suite" on:change=move |ev| choose(event_target_value(&ev)) prop:value=move || suite.with(|s| s.name.clone())>
                        {suites.with_value(|all| all.iter().map(|s| view! { <option value=s.name.clone()>{format!("{} ({})", s.name, s.kind.as_str())}</option> }).collect_view())}
                    </select>
                    <span class="hint">{move || suite.with(|s| s.description.clone())}</span>
                </label>
                <label>"Treatment ref (your branch head)"
                    <input name="head" type="text" placeholder="my-branch" list="suite-branches" autocomplete="off" prop:value=move || values.with(|v| v.head.clone()) on:input=edit(|v, x| v.head = x) />
                    // The suite repository's branches as a typeahead (the newest commits first).
                    <datalist id="suite-branches">
                        {move || suite.with(|s| s.branches.iter().filter(|b| **b != s.base_branch).map(|b| view! { <option value=b.clone()></option> }).collect_view())}
                    </datalist>
                    {message("head")}
                </label>
                <label>{move || format!("Control ref (empty: merge-base with {})", suite.with(|s| s.base_branch.clone()))}
                    <input name="base" type="text" placeholder="merge-base" prop:value=move || values.with(|v| v.base.clone()) on:input=edit(|v, x| v.base = x) />
                    {message("base")}
                </label>
                <Show when=move || suite.with(|s| s.kind == judge::ExperimentKind::Pipeline)>
                    <label class="check">
                        <input name="reuse_baseline" type="checkbox" prop:checked=move || values.with(|v| v.reuse_baseline) on:change=move |ev| values.update(|v| v.reuse_baseline = event_target_checked(&ev)) />
                        " Reuse the latest baseline run with this fingerprint as the control (only the treatment runs)"
                    </label>
                </Show>
                <label>"Title (optional)"
                    <input name="title" type="text" prop:value=move || values.with(|v| v.title.clone()) on:input=edit(|v, x| v.title = x) />
                    {message("title")}
                </label>
                <ExtraArms values=values message_of=move |f: String| shown(&f) />
            </fieldset>
            <Show when=move || suite.with(|s| !s.fingerprint.is_empty())>
                <fieldset>
                    <legend>"Workload fingerprint (every arm runs the same)"</legend>
                    {move || suite.with(|s| s.fingerprint.iter().map(|(name, spec)| field_input(name.clone(), spec.clone(), values, move |f: String| shown(&f))).collect_view())}
                </fieldset>
            </Show>
            {move || suite.with(|s| s.warp.clone()).map(|w| view! { <WarpMatrix w values message_of=move |f: String| shown(&f) /> })}
            <fieldset>
                <legend>"Trials"</legend>
                <label>{move || if is_warp() { "Repeats of the phase order" } else { "Trials per arm" }}
                    <input name="trials" type="text" inputmode="numeric" prop:value=move || values.with(|v| v.trials.clone()) on:input=edit(|v, x| v.trials = x) />
                    <Show when=move || !is_warp()>
                        <span class="hint">"A number, or " <code>"auto"</code> ": pairs are added while the verdict is undecided, within a budget."</span>
                    </Show>
                    {message("trials")}
                </label>
                <Show when=move || !is_warp() && values.with(FormValues::is_auto)>
                    <label>"Budget: at most this many trials an arm"
                        <input name="max_trials" type="number" min="2" step="1" placeholder=move || suite.with(|s| format!("{} (the suite's budget)", s.max_trials))
                            prop:value=move || values.with(|v| v.max_trials.clone()) on:input=edit(|v, x| v.max_trials = x) />
                        <span class="hint">"The budget: it stops there undecided if the verdict is not settled by then."</span>
                        {message("max_trials")}
                    </label>
                </Show>
                <Show when=move || suite.with(|s| s.kind == judge::ExperimentKind::Pipeline)>
                    <label>"Size the trials for a CPU change of (%)"
                        <input name="detect_pct" type="number" step="0.5" min="0" placeholder="the suite's margin" prop:value=move || values.with(|v| v.detect_pct.clone()) on:input=edit(|v, x| v.detect_pct = x) />
                        <span class="hint">"The preview then says how many trials an arm need to detect it."</span>
                        {message("detect_pct")}
                    </label>
                </Show>
                <label>"Order"
                    // A warp launch runs its phases AB or ABBA: it offers only those.
                    <select name="order" prop:value=move || values.with(|v| v.order.clone()) on:change=edit(|v, x| v.order = x)>
                        {move || if is_warp() {
                            Either::Left(view! {
                                <option value="interleaved">"AB: baseline, then candidate"</option>
                                <option value="abba">"ABBA: A1 B1 B2 A2 (shows drift)"</option>
                            })
                        } else {
                            Either::Right(view! {
                                <option value="interleaved">"balanced: C,T then T,C, in a random order"</option>
                                <option value="abba">"ABBA: C,T,T,C"</option>
                                <option value="blocked">"blocked: C,C,T,T"</option>
                                <option value="control_first">"control first: C,T,C,T (the old protocol)"</option>
                            })
                        }}
                    </select>
                </label>
                <Show when=is_warp>
                    <label>"FAIL beyond (%)"
                        <input name="fail_pct" type="number" step="0.5" prop:value=move || values.with(|v| v.fail_pct.clone()) on:input=edit(|v, x| v.fail_pct = x) />
                    </label>
                    <label>"WARN beyond (%)"
                        <input name="warn_pct" type="number" step="0.5" prop:value=move || values.with(|v| v.warn_pct.clone()) on:input=edit(|v, x| v.warn_pct = x) />
                        {message("budgets")}
                    </label>
                </Show>
                <label class="check">
                    <input name="exempt" type="checkbox" prop:checked=move || values.with(|v| v.exempt) on:change=move |ev| values.update(|v| v.exempt = event_target_checked(&ev)) />
                    " Request an exemption (a known, accepted regression)"
                </label>
                <Show when=move || values.with(|v| v.exempt)>
                    <label class="wide">"Reason (required; kept in the audit log)"
                        <textarea name="reason" rows="2" prop:value=move || values.with(|v| v.reason.clone()) on:input=edit(|v, x| v.reason = x)></textarea>
                        {message("reason")}
                    </label>
                </Show>
            </fieldset>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <div class="buttons">
                <button type="submit" disabled=move || busy.get()>"Preview"</button>
                <button type="button" class="primary" disabled=move || busy.get() on:click=move |_| send(Action::Launch)>"Launch"</button>
                // A warp suite has no noise profile to calibrate (the server refuses it).
                <Show when=move || !is_warp()>
                    <button type="button" disabled=move || busy.get() on:click=move |_| send(Action::Calibrate)
                        title="Same-code runs of the treatment ref; their spread becomes this fingerprint's noise profile">"Calibrate"</button>
                </Show>
                {move || busy.get().then(|| view! { <span class="muted">"asking the server…"</span> })}
            </div>
            {move || plan.get().map(|p| view! { <PlanPreview plan=p use_trials=use_trials /> })}
        </form>
    }
}

/// One fingerprint field: a select when the suite lists the allowed values, else a typed input.
fn field_input(
    name: String,
    spec: FieldSpec,
    values: RwSignal<FormValues>,
    shown: impl Fn(String) -> Option<String> + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let key = name.clone();
    let value = move || values.with(|v| v.fingerprint.get(&key).cloned().unwrap_or_default());
    let key = name.clone();
    let set = move |ev: leptos::ev::Event| {
        let x = event_target_value(&ev);
        values.update(|v| drop(v.fingerprint.insert(key.clone(), x)));
    };
    let options: Vec<String> = match &spec {
        FieldSpec::String { allowed, .. } => allowed.clone(),
        FieldSpec::Integer { allowed, .. } => allowed.iter().map(i64::to_string).collect(),
        FieldSpec::Bool { .. } => vec!["true".into(), "false".into()],
    };
    let field = format!("fingerprint.{name}");
    let input = if options.is_empty() {
        let (kind, min, max) = match &spec {
            FieldSpec::Integer { min, max, .. } => ("number", min.map(|m| m.to_string()), max.map(|m| m.to_string())),
            _ => ("text", None, None),
        };
        Either::Left(view! { <input name=field.clone() type=kind min=min max=max prop:value=value on:input=set /> })
    } else {
        Either::Right(view! {
            <select name=field.clone() prop:value=value on:change=set>
                {options.into_iter().map(|o| view! { <option value=o.clone()>{o.clone()}</option> }).collect_view()}
            </select>
        })
    };
    view! { <label>{name}{input}{move || shown(field.clone()).map(|m| view! { <span class="problem" role="alert">{m}</span> })}</label> }
}

/// A warp suite's matrix: a preset, the workloads and drive-sync values that run (a subset of the
/// suite's), and the settings a launch may change within the suite's limits (empty: the preset's or the
/// suite's own, shown as the placeholder).
#[component]
fn WarpMatrix(
    w: super::WarpChoice,
    values: RwSignal<FormValues>,
    message_of: impl Fn(String) -> Option<String> + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let problem =
        move |field: &'static str| move || message_of(field.into()).map(|m| view! { <span class="problem" role="alert">{m}</span> });
    let ticks = move |name: &'static str, all: Vec<String>, pick: fn(&mut FormValues) -> &mut Vec<String>| {
        all.clone()
            .into_iter()
            .map(|item| {
                let (shown, key) = (item.clone(), item.clone());
                let all = all.clone();
                view! {
                    <label class="check">
                        <input name=name type="checkbox" value=item.clone()
                            prop:checked=move || values.with(|v| { let mut v = v.clone(); pick(&mut v).contains(&key) })
                            on:change=move |ev| {
                                let on = event_target_checked(&ev);
                                values.update(|v| {
                                    let list = pick(v);
                                    // The suite's order, whatever order they were ticked in.
                                    *list = all.iter().filter(|x| if **x == item { on } else { list.contains(x) }).cloned().collect();
                                });
                            } />
                        " " {shown}
                    </label>
                }
            })
            .collect_view()
    };
    // The placeholders follow the preset: a smoke run shows its own rounds and durations, not the nightly's.
    let smoke = w.smoke.clone();
    let text = move |name: &'static str, label: &'static str, full: String, field: fn(&mut FormValues) -> &mut String| {
        let i = ["rounds", "duration", "warmup", "cooldown", "concurrency"].iter().position(|n| *n == name).unwrap_or(0);
        let smoke_value = smoke.as_ref().map(|s| s[i].clone());
        let placeholder = move || match (&smoke_value, values.with(|v| v.preset == "smoke")) {
            (Some(s), true) => s.clone(),
            _ => full.clone(),
        };
        view! {
            <label>{label}
                <input name=format!("warp.{name}") type="text" placeholder=placeholder
                    prop:value=move || values.with(|v| { let mut v = v.clone(); field(&mut v).clone() })
                    on:input=move |ev| { let x = event_target_value(&ev); values.update(|v| *field(v) = x) } />
                {problem(match name { "rounds" => "warp.rounds", "duration" => "warp.duration", "warmup" => "warp.warmup", "cooldown" => "warp.cooldown", _ => "warp.concurrency" })}
            </label>
        }
    };
    view! {
        <fieldset class="matrix">
            <legend>"Matrix (what runs, and for how long)"</legend>
            <label>"Preset"
                <select name="warp.preset" prop:value=move || values.with(|v| v.preset.clone()) on:change=move |ev| { let x = event_target_value(&ev); values.update(|v| v.preset = x) }>
                    <option value="full">"full matrix (the nightly)"</option>
                    <option value="smoke">"smoke: a first answer in minutes"</option>
                </select>
                <span class="hint">"The fields below change the preset's values; Preview shows the matrix and its time."</span>
            </label>
            <div class="wide ticks" role="group" aria-label="Workloads">
                <span class="label">"Workloads"</span>
                {ticks("warp.workloads", w.workloads.clone(), |v| &mut v.workloads)}
                {problem("warp.workloads")}
            </div>
            <div class="wide ticks" role="group" aria-label="Drive sync">
                <span class="label">"Drive sync"</span>
                {ticks("warp.drive_sync", w.drive_sync.clone(), |v| &mut v.drive_sync)}
                {problem("warp.drive_sync")}
            </div>
            {text("rounds", "Rounds", w.rounds.to_string(), |v| &mut v.rounds)}
            {text("duration", "Duration of a round", w.duration.clone(), |v| &mut v.duration)}
            {text("warmup", "Warm-up", w.warmup.clone(), |v| &mut v.warmup)}
            {text("cooldown", "Cool-down", w.cooldown.clone(), |v| &mut v.cooldown)}
            {text("concurrency", "Concurrency", w.concurrency.to_string(), |v| &mut v.concurrency)}
            <p class="hint wide">{format!("This suite allows {}.", w.limits)}</p>
        </fieldset>
    }
}

/// Extra arms: none unless added on purpose.
#[component]
fn ExtraArms(values: RwSignal<FormValues>, message_of: impl Fn(String) -> Option<String> + Copy + Send + Sync + 'static) -> impl IntoView {
    let count = move || values.with(|v| v.arms.len());
    let set = move |i: usize, f: fn(&mut ExtraArm, String)| {
        move |ev: leptos::ev::Event| {
            values.update(|v| {
                if let Some(a) = v.arms.get_mut(i) {
                    f(a, event_target_value(&ev))
                }
            })
        }
    };
    let get = move |i: usize, f: fn(&ExtraArm) -> String| move || values.with(|v| v.arms.get(i).map(f).unwrap_or_default());
    let problem = move |field: String| move || message_of(field.clone()).map(|m| view! { <span class="problem" role="alert">{m}</span> });
    view! {
        <div class="arms wide">
            {move || (0..count()).map(|i| view! {
                <div class="arm">
                    <label>"Arm name"<input name=format!("arms.{i}.name") type="text" placeholder="low-mem" prop:value=get(i, |a| a.name.clone()) on:input=set(i, |a, x| a.name = x) />{problem(format!("arms.{i}.name"))}</label>
                    <label>"Ref"<input name=format!("arms.{i}.ref") type="text" placeholder="main" prop:value=get(i, |a| a.git_ref.clone()) on:input=set(i, |a, x| a.git_ref = x) />{problem(format!("arms.{i}.ref"))}</label>
                    <label>"Config overrides (KEY=value per line, optional)"<textarea name=format!("arms.{i}.overrides") rows="1" prop:value=get(i, |a| a.overrides.clone()) on:input=set(i, |a, x| a.overrides = x)></textarea>{problem(format!("arms.{i}.overrides"))}</label>
                    <button type="button" on:click=move |_| values.update(|v| drop(v.arms.remove(i)))>"Remove"</button>
                </div>
            }).collect_view()}
            <button type="button" on:click=move |_| values.update(|v| v.arms.push(ExtraArm::default()))>"Add an arm"</button>
        </div>
    }
}
