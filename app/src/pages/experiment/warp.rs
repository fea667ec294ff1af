//! The warp gate table: cell, metric, baseline, candidate, Δ and the row's verdict; MISSING rows say why.

use judge::warp::gate::{GateReport, GateRow, RowVerdict};
use judge::warp::gate_md::Provenance;
use leptos::prelude::*;

/// A stored value in its metric's unit: obj/s, MiB/s, ms or %.
fn value(metric: &str, v: Option<f64>) -> String {
    let Some(v) = v else { return "N/A".into() };
    match metric {
        "reqps" => format!("{v:.1} obj/s"),
        "throughput" => format!("{:.2} MiB/s", v / 1048576.0),
        "error-rate" => format!("{v:.2} %"),
        "tail-error-evidence" => "—".into(),
        _ => format!("{v:.2} ms"),
    }
}

fn class(v: RowVerdict) -> &'static str {
    match v {
        RowVerdict::Pass => "row-pass",
        RowVerdict::Warn => "row-warn",
        RowVerdict::Fail | RowVerdict::Missing => "row-fail",
    }
}

#[component]
fn GateLine(row: GateRow) -> impl IntoView {
    let why = row.missing_reason.clone().map(|m| format!(" ({m})")).unwrap_or_default();
    view! {
        <tr class=class(row.verdict)>
            <th scope="row">{row.workload.clone()}</th>
            <td>{row.metric.clone()}</td>
            <td class="num">{value(&row.metric, row.baseline)}</td>
            <td class="num">{value(&row.metric, row.new)}</td>
            <td class="num strong">{row.delta.clone()}</td>
            <td class="verdict-cell">{row.verdict.label()} <span class="muted">{why}</span></td>
        </tr>
    }
}

#[component]
pub fn GateView(gate: GateReport, provenance: Option<Provenance>) -> impl IntoView {
    let provenance: Vec<(&'static str, String)> = provenance
        .map(|p| {
            [
                ("Generated", p.generated),
                ("Runner", p.runner),
                ("Load tool", p.load_tool),
                ("Matrix", p.matrix),
                ("Baseline binary", p.baseline_binary),
                ("Candidate binary", p.candidate_binary),
                ("Baseline commit", p.baseline_commit),
                ("Candidate commit", p.candidate_commit),
            ]
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect()
        })
        .unwrap_or_default();
    view! {
        <section class="report" aria-label="Gate">
            <h2>"Gate"</h2>
            <p class="muted">
                "Each metric's change against the baseline; FAIL beyond " {gate.fail_pct} " %, WARN beyond " {gate.warn_pct}
                " % (in the bad direction). Missing evidence never passes."
            </p>
            {gate.exemption.clone().map(|e| view! { <p class="note">"Exempted: " {e}</p> })}
            {(!gate.drifted.is_empty()).then(|| view! {
                <p class="note">"ABBA drift: the baseline moved between its first and last phase in " {gate.drifted.join(", ")}</p>
            })}
            <div class="table-wrap">
                <table class="data gate">
                    <thead>
                        <tr>
                            <th scope="col">"Cell"</th>
                            <th scope="col">"Metric"</th>
                            <th scope="col" class="num">"Baseline"</th>
                            <th scope="col" class="num">"Candidate"</th>
                            <th scope="col" class="num">"Δ"</th>
                            <th scope="col">"Verdict"</th>
                        </tr>
                    </thead>
                    <tbody>{gate.rows.into_iter().map(|row| view! { <GateLine row /> }).collect_view()}</tbody>
                </table>
            </div>
            {(!provenance.is_empty()).then(|| view! {
                <h3>"Provenance"</h3>
                <dl class="facts">{provenance.into_iter().map(|(k, v)| view! { <dt>{k}</dt><dd><code>{v}</code></dd> }).collect_view()}</dl>
            })}
        </section>
    }
}
