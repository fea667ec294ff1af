//! The pipeline report: per treatment arm, the stage table led by the CPU change, then the totals.

use crate::format::{bytes, pct};
use crate::pages::history::VerdictBadge;
use judge::pipeline::report::{ArmReport, PipelineReport, StageReport};
use leptos::prelude::*;

fn interval(i: Option<[f64; 2]>) -> String {
    i.map(|[l, h]| format!("{} … {}", pct(l), pct(h))).unwrap_or_default()
}

/// The CPU interval's cell: the interval and, under it, the level its test was decided at (method 2), or
/// that the stage was too small to test.
fn interval_cell(s: &StageReport) -> (String, String) {
    if s.cpu_below_floor {
        return ("below the floor".into(), String::new());
    }
    // Untested: one pair (or one trial an arm) and no noise profile measure no spread (method 3).
    if s.cpu_test.is_none() && s.reasons.iter().any(|r| r.contains("CPU unclear") && r.contains("untested: one pair")) {
        return ("untested".into(), "one pair and no noise profile: no spread to test against".into());
    }
    let level = s.cpu_test.as_ref().map(|t| judge::pipeline::report::fmt_level(t.alpha)).unwrap_or_default();
    let need = s.cpu_test.as_ref().and_then(what_it_takes).map(|n| format!(" · {n}")).unwrap_or_default();
    (interval(s.cpu_interval_pct), format!("{level}{need}"))
}

/// An undecided metric's "undecided: detects ±31 %, about 4 more pairs" (the reasons' words); `None` when
/// decided.
fn what_it_takes(t: &judge::pipeline::family::MetricTest) -> Option<String> {
    judge::pipeline::report::fmt_needs(t).map(|n| format!("undecided: {n}"))
}

/// The elapsed cell's second line: what an undecided elapsed would take, or why it was not tested.
fn elapsed_note(s: &StageReport) -> Option<String> {
    if s.elapsed_below_floor {
        return Some("below the floor".into());
    }
    match &s.elapsed_test {
        Some(t) => what_it_takes(t),
        None if s.trials[0].min(s.trials[1]) < judge::pipeline::method::MIN_ELAPSED_TRIALS => {
            Some(format!("untested: under {} trials an arm", judge::pipeline::method::MIN_ELAPSED_TRIALS))
        }
        None => None,
    }
}

/// Items and bytes must match within the judge's tolerance (`StageReport::same_work`): "✓ same", "✓ within
/// ±0.5 % (…)" when they moved a little, or "✗ …" with what moved.
fn work_check(s: &StageReport, tolerance: f64) -> (bool, String) {
    let moved = format!("items {}, bytes {}", pct(s.items_change_pct), pct(s.bytes_change_pct));
    if s.items_change_pct == 0.0 && s.bytes_change_pct == 0.0 {
        (true, "✓ same".into())
    } else if s.same_work(tolerance) {
        (true, format!("✓ within ±{tolerance} % ({moved})"))
    } else {
        (false, format!("✗ {moved}"))
    }
}

/// The CPU-s cell's tooltip: these are means, and the ratio of the means is a second statistic, not the
/// change the verdict rests on (that one is the test's estimate, in the CPU change column).
fn means_title(s: &StageReport) -> String {
    match s.cpu_means_change_pct {
        Some(m) => format!("mean CPU-seconds per trial; their ratio, {}, is not the tested change (the CPU change column is, from the trials' logs)", pct(m)),
        None => "mean CPU-seconds per trial".into(),
    }
}

#[component]
fn StageLine(
    s: StageReport,
    tolerance: f64,
    #[prop(optional)] total: bool,
    #[prop(default = None)] missing: Option<String>,
) -> impl IntoView {
    let (same, work) = work_check(&s, tolerance);
    let name = if total { "All stages".to_string() } else { s.stage.clone() };
    let detail = s.reasons.join("; ");
    let (cpu_interval, level) = interval_cell(&s);
    // The total's stand-in comes from its arm (`ArmReport::total_missing`).
    if let Some(missing) = missing.or_else(|| s.missing_treatment()) {
        // Failed in every treatment trial: no treatment numbers to show, only the failure.
        return view! {
            <tr class:total=total title=detail.clone()>
                <th scope="row">{name}</th>
                <td><VerdictBadge verdict=Some(s.verdict) /></td>
                <td class="bad">{missing}</td>
                <td class="num">{format!("{:.3} → —", s.cpu_control)}</td>
                <td class="num">"—"</td>
                <td class="num">"—"</td>
                <td>"—"</td>
            </tr>
        }
        .into_any();
    }
    view! {
        <tr class:total=total title=detail>
            <th scope="row">{name}</th>
            <td><VerdictBadge verdict=Some(s.verdict) /></td>
            <td class="num"><strong>{pct(s.cpu_change_pct)}</strong>
                {(!cpu_interval.is_empty()).then(|| view! { <br /><span class="muted">{cpu_interval}</span> })}
                {(!level.is_empty()).then(|| view! { <br /><small class="muted">{level}</small> })}</td>
            <td class="num" title=means_title(&s)>{format!("{:.3} → {:.3}", s.cpu_control, s.cpu_treatment)}</td>
            <td class="num">{pct(s.elapsed_change_pct)} {elapsed_note(&s).map(|n| view! { <br /><small class="muted">{n}</small> })}</td>
            <td class="num">{pct(s.mem_peak_change_pct)} <br /><small class="muted">{bytes(s.mem_peak_treatment)}</small></td>
            <td class=if same { "ok" } else { "bad" }>{work}</td>
        </tr>
    }
    .into_any()
}

#[component]
fn ArmTable(arm: ArmReport, tolerance: f64) -> impl IntoView {
    let total = arm.total.clone();
    let missing = arm.total_missing();
    view! {
        <h3>
            <VerdictBadge verdict=Some(arm.verdict) /> " " {arm.name.clone()}
            <span class="muted">" — " {arm.trials[0]} " control, " {arm.trials[1]} " treatment trials"</span>
        </h3>
        <div class="table-wrap">
            <table class="data stages">
                <thead>
                    <tr>
                        <th scope="col">"Stage"</th>
                        <th scope="col">"Verdict"</th>
                        <th scope="col" class="num" title="the change, its interval at the level each stage's test was decided at (its share of the experiment's error rate), and what an undecided one would take">"CPU change"</th>
                        <th scope="col" class="num">"CPU-s (control → treatment)"</th>
                        <th scope="col" class="num">"Summed elapsed"</th>
                        <th scope="col" class="num">"Peak memory"</th>
                        <th scope="col">"Items / bytes"</th>
                    </tr>
                </thead>
                <tbody>
                    {arm.stages.into_iter().map(|s| view! { <StageLine s tolerance /> }).collect_view()}
                    <StageLine s=total tolerance total=true missing=missing />
                </tbody>
            </table>
        </div>
        {(!arm.unpaired_stages.is_empty()).then(|| view! {
            <p class="muted">"Stages only one arm ran: " {arm.unpaired_stages.join(", ")}</p>
        })}
    }
}

#[component]
pub fn PipelineReportView(report: PipelineReport) -> impl IntoView {
    let notes: Vec<String> = [
        (report.duplicates_dropped > 0).then(|| format!("{} duplicate rows dropped", report.duplicates_dropped)),
        (!report.dropped_control_trials.is_empty())
            .then(|| format!("control trials dropped (a stage failed): {}", report.dropped_control_trials.join(", "))),
        (!report.retried.is_empty()).then(|| format!("retried after infrastructure failures: {}", report.retried.join(", "))),
        report.thresholds.worker_ram_bytes.map(|r| format!("worker RAM limit {}", bytes(r))),
        report.pairing.clone(),
    ]
    .into_iter()
    .flatten()
    .collect();
    let tolerance = report.thresholds.equivalence_tolerance_pct;
    view! {
        <section class="report" aria-label="Stage report">
            <h2>"Stages"</h2>
            <p class="muted">{format!("CPU-seconds decide; summed elapsed time is context (noisier); items and bytes must match within ±{tolerance} %.")}</p>
            {report.treatments.into_iter().map(|arm| view! { <ArmTable arm tolerance /> }).collect_view()}
            {(!notes.is_empty()).then(|| view! { <ul class="notes">{notes.into_iter().map(|n| view! { <li>{n}</li> }).collect_view()}</ul> })}
        </section>
        {report.measurement.filter(|m| !m.lines.is_empty()).map(|m| view! {
            <section class="measurement" aria-label="Measurement">
                <h2>"Measurement"</h2>
                <p class="muted">{format!("What the trials say about how they were measured, in {} (the stage with the most CPU). Nothing here changes the verdict: trials are named, never dropped.", m.stage)}</p>
                <ul class="notes">{m.lines.into_iter().map(|l| view! { <li>{l}</li> }).collect_view()}</ul>
            </section>
        })}
    }
}
