//! A warp experiment's verdict from its stored phases: per treatment, workload and drive-sync value a
//! matrix cell (the rounds of each baseline and candidate phase, in run order; the last attempt of each
//! round counts) → the matrix judge → the gate report and gate.md with its Provenance. Phases that failed
//! leave MISSING evidence, which fails; phases lost to infrastructure make the result INCONCLUSIVE unless
//! something measured failed.
//! The trial queue gathers the phases and writes the result.

use crate::warp::phase::PhaseRecord;
use crate::warp::plan::sync_label;
use judge::warp::gate::{GateConfig, GateReport, RowVerdict};
use judge::warp::gate_md::Provenance;
use judge::warp::matrix::{judge_matrix, Cell};
use judge::warp::noise::{noise_gate_at, Look, NoiseGate, NoiseVerdict, WarpNoiseProfile};
use judge::warp::rounds::Round;
use judge::{TrialState, Verdict};
use std::collections::BTreeMap;
use store::observations::WarpRound;
use suite::warp::WarpSpec;

/// One phase as the trial queue found it (the last attempt of its planned position).
#[derive(Debug, Clone)]
pub struct PhaseData {
    pub seq: i64,
    pub arm: String,
    pub leg: String,
    pub drive_sync: bool,
    pub state: TrialState,
    pub detail: String,
    pub rounds: Vec<WarpRound>,
    pub record: Option<PhaseRecord>,
    /// A phase added by adaptive rounds ran only these workloads (`None`: the whole matrix).
    pub only: Option<Vec<String>>,
}

impl PhaseData {
    /// Whether the phase was meant to run workload `w`.
    pub fn runs(&self, w: &str) -> bool {
        self.only.as_ref().is_none_or(|only| only.iter().any(|o| o == w))
    }
}

pub struct WarpVerdict {
    pub verdict: Verdict,
    pub reasons: Vec<String>,
    pub report: GateReport,
    pub provenance: Provenance,
    pub gate_md: String,
}

/// The rounds of one workload in one phase, the last attempt of each round.
fn rounds_of(phase: &PhaseData, workload: &str) -> Vec<Round> {
    let mut by_round: BTreeMap<i64, &WarpRound> = BTreeMap::new();
    for r in phase.rounds.iter().filter(|r| r.workload == workload) {
        if by_round.get(&r.round).is_none_or(|prev| prev.attempt < r.attempt) {
            by_round.insert(r.round, r);
        }
    }
    by_round
        .values()
        .map(|r| Round {
            ok: r.ok,
            reqps: r.reqps,
            throughput_bps: r.throughput_bps,
            latency_ms: r.latency_avg_ms,
            p90_ms: r.latency_p90_ms,
            p99_ms: r.latency_p99_ms,
        })
        .collect()
}

fn measured(p: &PhaseData) -> bool {
    matches!(p.state, TrialState::Succeeded | TrialState::Failed)
}

/// The matrix cells: per treatment arm (labelled by arm when there is more than one), workload and
/// drive-sync value.
pub fn cells(spec: &WarpSpec, arms: &[String], phases: &[PhaseData]) -> Vec<Cell> {
    let mut out = Vec::new();
    let Some((control, treatments)) = arms.split_first() else { return out };
    let mut ordered: Vec<&PhaseData> = phases.iter().filter(|p| measured(p)).collect();
    ordered.sort_by_key(|p| p.seq);
    for t in treatments {
        for sync in spec.sync_values() {
            for w in &spec.workloads {
                let phases_of = |arm: &str| -> Vec<&PhaseData> {
                    ordered.iter().copied().filter(|p| p.arm == arm && p.drive_sync == sync && p.runs(w)).collect()
                };
                let of = |arm: &str| -> Vec<Vec<Round>> { phases_of(arm).into_iter().map(|p| rounds_of(p, w)).collect() };
                let label = match treatments.len() {
                    1 => format!("{w}/{}", sync_label(sync)),
                    _ => format!("{t}:{w}/{}", sync_label(sync)),
                };
                out.push(Cell {
                    label,
                    size: w.split_once('-').map_or(w.as_str(), |(_, s)| s).to_string(),
                    concurrency: spec.concurrency,
                    baseline: of(control),
                    candidate: of(t),
                    legs: phases_of(control).into_iter().chain(phases_of(t)).map(|p| p.leg.clone()).collect(),
                    note: spec.note_for(w, sync_label(sync)),
                });
            }
        }
    }
    out
}

/// "SHA - where its binary came from": one source for every phase of the arm, or, when the phases
/// differ (the first built it, the others found it cached), "see the phases below".
fn commit_line(sha: &str, records: &[&PhaseRecord]) -> String {
    let sources: Vec<&str> = records.iter().filter_map(|r| r.binary_source.map(|s| s.describe())).collect();
    match sources.first() {
        Some(first) if sources.iter().all(|s| s == first) => format!("{sha} - {first}"),
        Some(_) => format!("{sha} - per phase, see the phase binaries"),
        None => format!("{sha} - external endpoint (deployed by the hook)"),
    }
}

/// One line per phase that has a binary, in run order: "A1 (baseline, sync-on): source build (now cached)".
/// The arms are named as the page names them: baseline and candidate, an extra arm by its name.
fn phase_binaries(arms: &[String], phases: &[PhaseData]) -> Vec<String> {
    let mut ordered: Vec<&PhaseData> = phases.iter().collect();
    ordered.sort_by_key(|p| p.seq);
    let role = |arm: &str| match arms.iter().position(|a| a == arm) {
        Some(0) => "baseline".to_string(),
        Some(1) if arms.len() == 2 => "candidate".to_string(),
        _ => arm.to_string(),
    };
    ordered
        .iter()
        .filter_map(|p| {
            let source = p.record.as_ref()?.binary_source?;
            Some(format!("{} ({}, {}): {}", p.leg, role(&p.arm), sync_label(p.drive_sync), source.describe()))
        })
        .collect()
}

/// `settings`: the matrix settings the launch asked for (a Provenance note says so), none for the suite's own.
pub fn judge(
    spec: &WarpSpec,
    arms: &[(String, String)],
    phases: &[PhaseData],
    exemption: Option<&str>,
    settings: Option<&wire::launch::JsonWarpMatrix>,
    generated: String,
    profile: Option<&WarpNoiseProfile>,
) -> WarpVerdict {
    let names: Vec<String> = arms.iter().map(|a| a.0.clone()).collect();
    let config = GateConfig {
        fail_pct: spec.fail_pct,
        warn_pct: spec.warn_pct,
        allow_regression: exemption.is_some(),
        exemption_reason: exemption.unwrap_or(judge::warp::gate::DEFAULT_EXEMPTION_REASON).to_string(),
        tail_fail_pct: spec.tail_fail_pct,
        tail_warn_pct: spec.tail_warn_pct,
        ..GateConfig::default()
    };
    let mut report = judge_matrix(&cells(spec, &names, phases), &config);
    report.sync_ignored = spec.drive_sync.ignored;
    // The noise-aware reading: the verdict once the suite is calibrated for these settings on this host;
    // until then upstream's rule decides and the reading is a reason beside it.
    let calibrated = profile.is_some_and(|p| p.calibrations > 0);
    // With adaptive rounds the matrix is judged at several looks, and each spends its share of the error
    // rate (`judge::warp::noise::Look`); the same conditions as `super::adaptive::step`.
    let look = if calibrated && spec.adaptive_rounds && arms.len() == 2 {
        Look::of(&report.cells, spec.planned_rounds_an_arm(), spec.rounds, spec.round_cap())
    } else {
        Look::ONLY
    };
    let mut noise = noise_gate_at(&report, &config, profile, look);
    noise.planned_rounds = spec.planned_rounds_an_arm();
    let mut verdict = if calibrated { noise.verdict } else { report.verdict };
    let mut reasons = report.reasons();
    reasons.extend(noise_reasons(&noise, calibrated));
    reasons.extend(adaptive_reasons(spec, phases, &report.cells, &noise));
    report.noise = Some(noise);
    for p in phases.iter().filter(|p| p.state == TrialState::Failed) {
        reasons.push(format!("phase {} ({}, {}) failed: {}", p.leg, p.arm, sync_label(p.drive_sync), p.detail));
    }
    let lost: Vec<&PhaseData> = phases.iter().filter(|p| !measured(p)).collect();
    for p in &lost {
        reasons.push(format!("phase {} ({}, {}) was lost: {} ({})", p.leg, p.arm, sync_label(p.drive_sync), p.state.as_str(), p.detail));
    }
    // Lost phases leave MISSING cells that say nothing about the code: the result is INCONCLUSIVE unless
    // something measured failed (a FAIL row, or a phase whose server failed).
    if !lost.is_empty() {
        let measured_fail =
            report.rows.iter().any(|r| r.verdict == RowVerdict::Fail) || phases.iter().any(|p| p.state == TrialState::Failed);
        verdict = if measured_fail { Verdict::WarpFail } else { Verdict::WarpInconclusive };
    }
    if reasons.is_empty() {
        reasons.push(format!("every cell within the {} % warn budget", spec.warn_pct));
    }
    let records_of =
        |arm: &str| -> Vec<&PhaseRecord> { phases.iter().filter(|p| p.arm == arm).filter_map(|p| p.record.as_ref()).collect() };
    let binary_of = |arm: &str| records_of(arm).iter().find_map(|r| r.binary.clone());
    let (control, candidate) = (&arms[0], arms.last().unwrap_or(&arms[0]));
    let provenance = Provenance {
        generated: Some(generated),
        runner: Some(crate::warp::verdict::runner()),
        load_tool: Some(match spec.tool {
            suite::warp::LoadTool::Builtin => format!("arbiter-load {} (built-in driver)", env!("CARGO_PKG_VERSION")),
            suite::warp::LoadTool::Warp => format!("warp ({})", spec.warp_program().unwrap_or_else(|| "not found".into())),
        }),
        matrix: Some(
            format!(
                "workloads={} duration={} warmup={} rounds={} cooldown={} disks={} concurrency={} order={:?} drive_sync={}",
                spec.workloads.join("+"),
                spec.duration,
                spec.warmup,
                spec.rounds,
                spec.cooldown,
                spec.disks,
                spec.concurrency,
                spec.order,
                spec.drive_sync.values.join("+")
            )
            .to_lowercase(),
        ),
        baseline_binary: binary_of(&control.0),
        candidate_binary: binary_of(&candidate.0),
        baseline_commit: Some(commit_line(&control.1, &records_of(&control.0))),
        phase_binaries: phase_binaries(&names, phases),
        candidate_commit: Some(if candidate.1 == control.1 && arms.len() > 1 {
            format!("{} - same commit as baseline", candidate.1)
        } else {
            commit_line(&candidate.1, &records_of(&candidate.0))
        }),
        notes: [
            match (spec.tail_fail_pct, spec.tail_warn_pct) {
                (None, None) => None,
                (f, w) => Some(format!(
                    "p90/p99 latency budget: regression > {}% fails, > {}% warns",
                    f.unwrap_or(spec.fail_pct),
                    w.unwrap_or(spec.warn_pct)
                )),
            },
            settings.map(|m| format!("matrix set at launch: {}", serde_json::to_string(m).unwrap_or_default())),
        ]
        .into_iter()
        .flatten()
        // The suite's word on a cell that did not pass: a known reason it moves.
        .chain(report.cells.iter().filter_map(|c| {
            let flagged = report.rows.iter().any(|r| r.workload == c.label && r.verdict != RowVerdict::Pass);
            c.note.as_ref().filter(|_| flagged).map(|n| format!("{} (from the suite): {n}", c.label))
        }))
        .collect(),
    };
    report.verdict = verdict;
    let gate_md = judge::warp::gate_md::render(&report, Some(&provenance));
    WarpVerdict { verdict, reasons, report, provenance, gate_md }
}

/// What the noise-aware reading adds to the reasons: each row it judges differently from upstream, and
/// (uncalibrated) its overall reading beside upstream's verdict.
fn noise_reasons(noise: &NoiseGate, calibrated: bool) -> Vec<String> {
    let differ: Vec<String> = noise
        .rows
        .iter()
        .filter(|r| r.verdict == NoiseVerdict::Inconclusive || (calibrated && r.verdict.label() != r.upstream.label()))
        .map(|r| {
            // Arbiter's units and signs, as the rows and the headline print them ("obj/s −79.2 %").
            let change = r.change_pct.map(|c| format!(" {}", judge::pipeline::report::fmt_pct(c))).unwrap_or_default();
            format!("{} {}{change}: {} ({})", r.workload, judge::warp::gate::metric_label(&r.metric), r.words, r.verdict.label())
        })
        .collect();
    let mut out = Vec::new();
    if !calibrated && !differ.is_empty() {
        out.push(format!(
            "noise-aware reading (uncalibrated, not the verdict): {} — {} breach(es) within the default phase spread; an A/A run of this suite calibrates it",
            noise.verdict.as_str(),
            differ.len()
        ));
    }
    out.extend(differ.into_iter().take(6));
    out
}

/// What adaptive rounds did, when they added phases: how many pairs, the rounds an arm of each cell they
/// extended, and the cells still unsure at the cap.
fn adaptive_reasons(spec: &WarpSpec, phases: &[PhaseData], cells: &[judge::warp::rounds::CellRounds], noise: &NoiseGate) -> Vec<String> {
    let added = phases.iter().filter(|p| p.only.is_some()).count();
    if added == 0 {
        return Vec::new();
    }
    let planned = spec.planned_rounds_an_arm();
    let extended: Vec<String> = cells
        .iter()
        .filter_map(|c| {
            let n = c.rounds_an_arm().into_iter().max().unwrap_or(0);
            (n > planned).then(|| format!("{} {n}", c.label))
        })
        .collect();
    let mut out = vec![format!(
        "adaptive rounds: {} more phase{} for cells still unsure after {planned} round{} an arm — rounds an arm now: {}",
        added,
        if added == 1 { "" } else { "s" },
        if planned == 1 { "" } else { "s" },
        extended.join(", ")
    )];
    let still: Vec<&str> = cells
        .iter()
        .filter(|c| noise.rows.iter().any(|r| r.unsure && r.workload == c.label))
        .filter(|c| c.rounds_an_arm().into_iter().max().unwrap_or(0) + spec.rounds > spec.round_cap())
        .map(|c| c.label.as_str())
        .collect();
    if !still.is_empty() {
        out.push(format!("still unsure at the cap of {} rounds an arm: {}", spec.round_cap(), still.join(", ")));
    }
    out
}

/// The machine a gate ran on, as gate.md names it: kernel, release, architecture.
pub fn runner() -> String {
    let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_default();
    format!("{} {} {}", read("/proc/sys/kernel/ostype"), read("/proc/sys/kernel/osrelease"), std::env::consts::ARCH).trim().to_string()
}
