//! The warp gate table: cell, metric, baseline, candidate, Δ and the row's verdict; MISSING rows say why.
//! What failed leads; the suite's notes explain a flagged cell; the rounds and the ABBA drift behind each
//! cell's medians follow, collapsed.

use judge::pipeline::report::fmt_pct;
use judge::warp::gate::{GateReport, GateRow, RowVerdict};
use judge::warp::gate_md::Provenance;
use judge::warp::headline::{change, metric_label};
use judge::warp::noise::{NoiseGate, NoiseRow, NoiseVerdict};
use judge::warp::rounds::CellRounds;
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
            <td>{metric_label(&row.metric).to_string()}</td>
            <td class="num">{value(&row.metric, row.baseline)}</td>
            <td class="num">{value(&row.metric, row.new)}</td>
            <td class="num strong" title=format!("gate.md (upstream's words): {}", row.delta)>{change(&row)}</td>
            <td class="verdict-cell">{row.verdict.label()} <span class="muted">{why}</span></td>
        </tr>
    }
}

#[component]
fn GateTable(rows: Vec<GateRow>, label: &'static str) -> impl IntoView {
    view! {
        <div class="table-wrap">
            <table class="data gate" aria-label=label>
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
                <tbody>{rows.into_iter().map(|row| view! { <GateLine row /> }).collect_view()}</tbody>
            </table>
        </div>
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
            .chain(p.phase_binaries.into_iter().map(|b| ("Phase binary", b)))
            .chain(p.notes.into_iter().map(|n| ("Note", n)))
            .collect()
        })
        .unwrap_or_default();
    // What failed, is missing or warned leads (FAIL and MISSING before WARN, in matrix order within);
    // the passing rows follow grouped by cell, collapsed: a full matrix is 72 rows.
    let total = gate.rows.len();
    let rank = |v: RowVerdict| match v {
        RowVerdict::Fail | RowVerdict::Missing => 0,
        RowVerdict::Warn => 1,
        RowVerdict::Pass => 2,
    };
    let (mut flagged, passed): (Vec<GateRow>, Vec<GateRow>) = gate.rows.iter().cloned().partition(|r| r.verdict != RowVerdict::Pass);
    flagged.sort_by_key(|r| rank(r.verdict));
    let passing = passed.len();
    // The suite's word on each flagged cell, once per cell.
    let mut notes: Vec<(String, String)> = Vec::new();
    for row in &flagged {
        if let Some(n) = gate.cells.iter().find(|c| c.label == row.workload).and_then(|c| c.note.clone()) {
            if !notes.iter().any(|(c, _)| *c == row.workload) {
                notes.push((row.workload.clone(), n));
            }
        }
    }
    let drifted = !gate.drifted.is_empty();
    let to_check = judge::warp::headline::to_check(&gate);
    let flagged_cells: Vec<String> = flagged.iter().map(|r| r.workload.clone()).collect();
    let planned = gate.noise.as_ref().map_or(0, |n| n.planned_rounds);
    let cell_rounds = gate.cells.clone();
    let mut cells: Vec<(String, Vec<GateRow>)> = Vec::new();
    for row in passed {
        match cells.iter_mut().find(|(c, _)| *c == row.workload) {
            Some((_, rows)) => rows.push(row),
            None => cells.push((row.workload.clone(), vec![row])),
        }
    }
    view! {
        <section class="report" aria-label="Gate">
            <h2>"Gate"</h2>
            <p class="muted">
                "Each metric's change against the baseline; FAIL beyond " {gate.fail_pct} " %, WARN beyond " {gate.warn_pct}
                " % (in the bad direction). Missing evidence never passes."
            </p>
            {(!to_check.is_empty()).then(|| view! {
                <div class="to-check" aria-label="Measurements to check">
                    <p><strong>"Measurements to check"</strong> <span class="muted">{format!(" — numbers that say more about the host than the code (a candidate {}× the baseline or more; the sync cells of a server that ignores drive sync {}× apart or more). They do not change the verdict.", judge::warp::headline::FASTER_FACTOR, judge::warp::headline::SYNC_FACTOR)}</span></p>
                    <ul>{to_check.into_iter().map(|c| view! { <li>{c}</li> }).collect_view()}</ul>
                </div>
            })}
            {gate.exemption.clone().map(|e| view! { <p class="note">"Exempted: " {e}</p> })}
            {(!gate.drifted.is_empty()).then(|| view! {
                <p class="note">"ABBA drift: the baseline moved between its first and last phase in " {gate.drifted.join(", ")}
                    {gate.noise.as_ref().filter(|n| n.calibrations > 0).map(|_| " — upstream's rule reads that as inconclusive; the noise-aware verdict counts it in each cell's phase spread instead")}</p>
            })}
            {(!flagged.is_empty()).then(|| view! {
                <h3>{format!("Failed, missing or warned: {} of {} rows", flagged.len(), total)}</h3>
                <GateTable rows=flagged label="Rows that failed, are missing or warned" />
            })}
            {gate.noise.clone().map(|noise| view! { <NoiseView noise /> })}
            {(!notes.is_empty()).then(|| view! {
                <div class="cell-notes" aria-label="What the suite says about these cells">
                    {notes.into_iter().map(|(cell, note)| view! { <p class="note"><strong>{cell}</strong> " — known behaviour (from the suite): " {note}</p> }).collect_view()}
                </div>
            })}
            {(!cells.is_empty()).then(|| view! {
                <details class="passing">
                    <summary>{format!("Rows within budget: {passing} of {total}, in {} cell{}", cells.len(), plural(cells.len()))}</summary>
                    {cells.into_iter().map(|(cell, rows)| {
                        // A cell may have flagged rows too (listed above): say so, so "PASS" is not misread.
                        let also = if flagged_cells.contains(&cell) { " (its other rows are flagged above)" } else { "" };
                        view! {
                        <details class="cell">
                            <summary>{format!("{cell} — {} row{} PASS{also}", rows.len(), plural(rows.len()))}</summary>
                            <GateTable rows label="Rows within budget" />
                        </details>
                    }}).collect_view()}
                </details>
            })}
            {(!cell_rounds.is_empty()).then(|| view! { <RoundsTable cells=cell_rounds open=drifted planned /> })}
            {(!provenance.is_empty()).then(|| view! {
                <h3>"Provenance"</h3>
                <dl class="facts">{provenance.into_iter().map(|(k, v)| view! { <dt>{k}</dt><dd><code>{v}</code></dd> }).collect_view()}</dl>
            })}
        </section>
    }
}

/// The noise-aware reading (`judge::warp::noise`): the verdict once the suite is calibrated, a reading
/// beside upstream's until then; its rows that are not PASS, or that upstream did not pass.
#[component]
fn NoiseView(noise: NoiseGate) -> impl IntoView {
    let calibrated = noise.calibrations > 0;
    let rows: Vec<NoiseRow> =
        noise.rows.iter().filter(|r| r.verdict != NoiseVerdict::Pass || r.upstream != RowVerdict::Pass).cloned().collect();
    let quiet = noise.rows.len() - rows.len();
    let verdict = match noise.verdict {
        judge::Verdict::WarpPass => "PASS",
        judge::Verdict::WarpWarn => "WARN",
        judge::Verdict::WarpExempted => "EXEMPTED",
        judge::Verdict::WarpInconclusive => "INCONCLUSIVE",
        _ => "FAIL",
    };
    view! {
        <h3>{format!("Noise-aware: {verdict}{}", if calibrated { "" } else { " (a reading beside upstream's verdict: the suite is not calibrated)" })}</h3>
        <p class="muted">{if calibrated {
            format!("The verdict: each row's change has an interval from its rounds and the suite's warp noise profile ({} calibration{}); a breach the interval does not support is INCONCLUSIVE. A {3} % error rate over the matrix: Holm over the cells' obj/s rows (throughput and mean latency at their cell's level) and the tail latencies, each end of a row's interval a one-sided bound at its own level (the first {2}; adaptive looks share the rate).",
                noise.calibrations, plural(noise.calibrations as usize), judge::pipeline::report::fmt_level(noise.row_alpha), 100.0 * noise.alpha)
        } else {
            "Each row's change with an interval from its rounds and the default phase spread. An A/A run of this suite (the same commit as control and treatment) calibrates it for these matrix settings on this host; then this reading is the verdict.".to_string()
        }}</p>
        {(!rows.is_empty()).then(|| view! {
            <div class="table-wrap">
                <table class="data gate" aria-label="Noise-aware rows">
                    <thead><tr>
                        <th scope="col">"Cell"</th><th scope="col">"Metric"</th><th scope="col" class="num">"Change"</th>
                        <th scope="col">"Interval"</th><th scope="col">"Upstream"</th><th scope="col">"Noise-aware"</th><th scope="col">"Why"</th>
                    </tr></thead>
                    <tbody>{rows.into_iter().map(|r| view! {
                        <tr>
                            <th scope="row">{r.workload.clone()}</th>
                            <td>{metric_label(&r.metric).to_string()}</td>
                            <td class="num">{r.change_pct.map(fmt_pct).unwrap_or_else(|| "—".into())}</td>
                            <td>{r.interval_pct.map(|[l, h]| format!("{} … {}", fmt_pct(l), fmt_pct(h))).unwrap_or_else(|| "—".into())}</td>
                            <td>{r.upstream.label()}</td>
                            <td class="verdict-cell">{r.verdict.label()}</td>
                            <td class="muted">{r.words.clone()}{(!r.spread.is_empty()).then(|| format!(" · spread: {}", r.spread))}</td>
                        </tr>
                    }).collect_view()}</tbody>
                </table>
            </div>
        })}
        {(quiet > 0).then(|| view! { <p class="muted">{format!("{quiet} other row{} pass in both readings.", plural(quiet))}</p> })}
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// "3 / 3", or "9 / 9 (adaptive: +6)" for a cell adaptive rounds gave more phases than the plan's
/// `planned` rounds an arm (baseline / candidate).
fn rounds_taken(c: &CellRounds, planned: u32) -> String {
    let [a, b] = c.rounds_an_arm();
    let more = a.max(b).saturating_sub(planned);
    if more > 0 && planned > 0 {
        format!("{a} / {b} (adaptive: +{more})")
    } else {
        format!("{a} / {b}")
    }
}

/// "A1: 410 · 415 · 398": one phase's rounds of obj/s.
fn phase_words(phases: Vec<(String, Vec<f64>)>) -> String {
    let words: Vec<String> = phases
        .into_iter()
        .map(|(leg, vs)| match vs.is_empty() {
            true => format!("{leg}: no successful round"),
            false => format!("{leg}: {}", vs.iter().map(|v| format!("{v:.1}")).collect::<Vec<_>>().join(" · ")),
        })
        .collect();
    words.join("; ")
}

/// Per cell, the obj/s of every round behind the medians and the baseline's drift between its ABBA
/// phases; open when a drift made the result inconclusive.
#[component]
fn RoundsTable(cells: Vec<CellRounds>, open: bool, planned: u32) -> impl IntoView {
    let abba = cells.iter().any(|c| c.drift_pct.is_some());
    view! {
        <details class="rounds" open=open>
            <summary>{format!("Rounds behind the medians (obj/s){}", if abba { " and the baseline's drift" } else { "" })}</summary>
            <div class="table-wrap">
                <table class="data" aria-label="Rounds per cell">
                    <thead>
                        <tr>
                            <th scope="col">"Cell"</th>
                            <th scope="col">"Baseline rounds"</th>
                            <th scope="col">"Candidate rounds"</th>
                            <th scope="col" class="num">"Rounds an arm"</th>
                            {abba.then(|| view! { <th scope="col" class="num">"Baseline drift"</th> })}
                        </tr>
                    </thead>
                    <tbody>
                        {cells.into_iter().map(|c| {
                            let drift = c.drift_pct.map(|d| format!("{d:.1} %")).unwrap_or_else(|| "—".into());
                            let taken = rounds_taken(&c, planned);
                            view! {
                                <tr>
                                    <th scope="row">{c.label.clone()}</th>
                                    <td>{phase_words(c.values("reqps", true))}</td>
                                    <td>{phase_words(c.values("reqps", false))}</td>
                                    <td class="num">{taken}</td>
                                    {abba.then(|| view! { <td class="num">{drift}</td> })}
                                </tr>
                            }
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
        </details>
    }
}
