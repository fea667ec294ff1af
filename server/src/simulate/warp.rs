//! `arbiter simulate --kind warp`: the warp gate's false-FAIL rate and power, for upstream's rule (a
//! relative budget on two medians) and Arbiter's noise-aware one, measured on simulated rounds judged by
//! the real code (`judge::warp::matrix::judge_matrix`, `judge::warp::noise::noise_gate`; a profile cell
//! calibrates through `WarpNoiseProfile::add_calibration` first).
//!
//! The noise model (log scale, seeded): a matrix of cells, each with a **phase spread** σ_p (a phase's
//! shift: its server, caches and the disk's state at that moment, shared by its rounds and by every metric
//! of the cell) and a **round spread** σ_r (each round's own scatter); obj/s and throughput move together,
//! mean latency inversely, p90/p99 latency as the mean plus a tail's own phase and round noise of twice
//! the size. Each phase runs `rounds` rounds; AB order runs one phase an arm, ABBA two. The cells' spreads
//! come from a fitted model: by default this machine's (below, with the command that measured it), or one
//! fitted from an A/A warp experiment's JSON (`--fit FILE`: `GET /api/v1/experiments/{id}` of an A/A, its
//! cells' phase and round spreads of obj/s). A power cell drops one cell's obj/s by `--drop` percent.

use judge::warp::gate::GateConfig;
use judge::warp::matrix::{judge_matrix, Cell};
use judge::warp::noise::{noise_gate_at, Look, WarpNoiseProfile};
use judge::warp::rounds::{CellRounds, Round};
use judge::Verdict;
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use serde::Serialize;

/// One cell's spreads (log sd): (label, phase, round).
pub type CellNoise = (String, f64, f64);

/// This machine's cells, fitted by `--fit` from a same-code ABBA run of the example suite (experiment 6 of a
/// `scripts/run.sh` server on 2026-12-03: 3 rounds of 3 s, both drive-sync values, the machine otherwise
/// idle; its A/A read WARN in 4 cells and a baseline drift above 5 % in 10 of 12). Phase spreads from the
/// four same-binary phases of each cell less their rounds' share, round spreads pooled within phases. The
/// 4 KiB cells are bimodal (see the suite's notes): their round spreads are a lognormal's poor stand-in.
pub const MACHINE: &[(&str, f64, f64)] = &[
    ("put-4KiB/sync-on", 0.0, 0.667),
    ("put-4MiB/sync-on", 0.075, 0.078),
    ("get-4KiB/sync-on", 0.227, 0.153),
    ("get-4MiB/sync-on", 0.041, 0.074),
    ("get-10MiB/sync-on", 0.151, 0.175),
    ("mixed-256KiB/sync-on", 0.063, 0.056),
    ("put-4KiB/sync-off", 0.0, 0.536),
    ("put-4MiB/sync-off", 0.135, 0.080),
    ("get-4KiB/sync-off", 0.062, 0.108),
    ("get-4MiB/sync-off", 0.070, 0.050),
    ("get-10MiB/sync-off", 0.086, 0.083),
    ("mixed-256KiB/sync-off", 0.018, 0.030),
];

/// Fits each cell's phase and round spread of obj/s from an A/A experiment's JSON (its gate's cells: every
/// phase ran the same binary).
pub fn fit(experiment: &serde_json::Value) -> Result<Vec<CellNoise>, String> {
    let cells: Vec<CellRounds> = serde_json::from_value(experiment["report"]["gate"]["cells"].clone())
        .map_err(|e| format!("not a warp experiment's JSON with its gate's cells: {e}"))?;
    let mut out = Vec::new();
    for c in &cells {
        let phases: Vec<Vec<f64>> = [true, false]
            .into_iter()
            .flat_map(|b| c.values("reqps", b))
            .map(|(_, v)| v.into_iter().filter(|x| *x > 0.0).map(f64::ln).collect::<Vec<_>>())
            .filter(|v| !v.is_empty())
            .collect();
        if phases.len() < 2 {
            continue;
        }
        let means: Vec<f64> = phases.iter().map(|p| judge::stats::mean(p)).collect();
        let (mut w_ss, mut w_df) = (0.0, 0.0);
        for p in phases.iter().filter(|p| p.len() > 1) {
            let m = judge::stats::mean(p);
            w_ss += p.iter().map(|x| (x - m).powi(2)).sum::<f64>();
            w_df += (p.len() - 1) as f64;
        }
        let round = if w_df > 0.0 { (w_ss / w_df).sqrt() } else { 0.0 };
        let rounds = phases.iter().map(Vec::len).min().unwrap_or(1) as f64;
        // The spread of phase means holds the rounds' too: what is left is the phase's own.
        let phase = (judge::stats::sample_var(&means) - round * round / rounds).max(0.0).sqrt();
        out.push((c.label.clone(), phase, round));
    }
    if out.is_empty() {
        return Err("no cell of the experiment has two phases with successful rounds".into());
    }
    Ok(out)
}

/// What one configuration of the warp simulation measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WarpResult {
    pub cells: usize,
    pub rounds: u32,
    pub abba: bool,
    /// A/A calibrations behind the profile (0: none, the default spread).
    pub calibrations: u32,
    /// The obj/s drop of one cell in the power experiments, percent.
    pub drop_pct: f64,
    pub replications: u64,
    /// Adaptive rounds' cap of a cell's rounds an arm (0: off, the planned phases only).
    pub max_rounds: u32,
    /// Phases adaptive rounds added, over all A/A experiments and over all power experiments.
    pub aa_added_phases: u64,
    pub power_added_phases: u64,
    /// A/A: experiments whose verdict was FAIL, by upstream's rule and by Arbiter's.
    pub aa_fail_upstream: u64,
    pub aa_fail_arbiter: u64,
    /// A/A: Arbiter's INCONCLUSIVE (a breach it could not support).
    pub aa_inconclusive_arbiter: u64,
    /// Power: experiments that FAILed with the dropped cell's obj/s row FAIL, per rule.
    pub power_upstream: u64,
    pub power_arbiter: u64,
    /// Power: Arbiter found the drop beyond the warn budget at least (FAIL or WARN on that row).
    pub power_arbiter_warn: u64,
}

fn round(v: f64) -> Round {
    // obj/s v; 1 MiB objects' throughput; latency from concurrency 8 over the rate.
    Round { ok: true, reqps: Some(v), throughput_bps: Some(v * 1048576.0), latency_ms: Some(8000.0 / v), p90_ms: None, p99_ms: None }
}

/// One phase's rounds of a cell: the phase's shift, then each round's scatter, around `level` × `factor`.
fn phase(rng: &mut StdRng, noise: &CellNoise, rounds: u32, factor: f64) -> Vec<Round> {
    let shift = Normal::new(0.0, noise.1.max(1e-9)).expect("sd").sample(rng);
    let tail_shift = Normal::new(0.0, 2.0 * noise.1.max(1e-9)).expect("sd").sample(rng);
    let scatter = Normal::new(0.0, noise.2.max(1e-9)).expect("sd");
    (0..rounds)
        .map(|_| {
            let v = 100.0 * factor * (shift + scatter.sample(rng)).exp();
            let mut r = round(v);
            let lat = r.latency_ms.unwrap_or(1.0);
            r.p90_ms = Some(lat * 1.8 * (tail_shift + 2.0 * scatter.sample(rng)).exp());
            r.p99_ms = Some(lat * 3.0 * (tail_shift + 2.0 * scatter.sample(rng)).exp());
            r
        })
        .collect()
}

/// A matrix run: every cell's baseline and candidate phases; cell `dropped` (if any) runs `factor` slower.
fn matrix(rng: &mut StdRng, model: &[CellNoise], rounds: u32, abba: bool, dropped: Option<(usize, f64)>) -> Vec<Cell> {
    let per_arm = if abba { 2 } else { 1 };
    model
        .iter()
        .enumerate()
        .map(|(i, noise)| {
            let factor = dropped.filter(|d| d.0 == i).map_or(1.0, |d| d.1);
            Cell {
                label: noise.0.clone(),
                size: "1MiB".into(),
                concurrency: 8,
                baseline: (0..per_arm).map(|_| phase(rng, noise, rounds, 1.0)).collect(),
                candidate: (0..per_arm).map(|_| phase(rng, noise, rounds, factor)).collect(),
                legs: Vec::new(),
                note: None,
            }
        })
        .collect()
}

/// The cell a power experiment slows: the one of median noise (phase² + round²/rounds), a typical cell.
pub fn drop_cell(model: &[CellNoise]) -> usize {
    let mut order: Vec<usize> = (0..model.len()).collect();
    order.sort_by(|a, b| {
        let v = |i: usize| model[i].1.powi(2) + model[i].2.powi(2) / 3.0;
        v(*a).total_cmp(&v(*b))
    });
    order[order.len() / 2]
}

/// Adaptive rounds on a simulated matrix, as the engine runs them (`engine::warp::adaptive`): while
/// `cells_to_extend` names cells, each gets one more phase an arm; returns the phases added.
fn extend(
    rng: &mut StdRng,
    cells: &mut [Cell],
    model: &[CellNoise],
    rounds: u32,
    cap: u32,
    dropped: Option<(usize, f64)>,
    judge_cells: impl Fn(&[Cell]) -> (judge::warp::gate::GateReport, judge::warp::noise::NoiseGate),
) -> u64 {
    let mut added = 0;
    loop {
        let (report, noise) = judge_cells(cells);
        let labels = judge::warp::adaptive::cells_to_extend(&noise, &report.cells, rounds, cap);
        if labels.is_empty() {
            return added;
        }
        for (i, c) in cells.iter_mut().enumerate().filter(|(_, c)| labels.contains(&c.label)) {
            let factor = dropped.filter(|d| d.0 == i).map_or(1.0, |d| d.1);
            c.baseline.push(phase(rng, &model[i], rounds, 1.0));
            c.candidate.push(phase(rng, &model[i], rounds, factor));
            added += 2;
        }
    }
}

/// Runs `replications` A/A and as many power experiments of one configuration; `max_rounds` above 0 runs
/// adaptive rounds up to that cap (with a profile only, as the engine does; upstream's rule is judged on
/// the planned phases).
#[allow(clippy::too_many_arguments)]
pub fn simulate(
    model: &[CellNoise],
    rounds: u32,
    abba: bool,
    calibrations: u32,
    drop_pct: f64,
    replications: u64,
    seed: u64,
    max_rounds: u32,
) -> WarpResult {
    let config = GateConfig::default();
    let mut rng = StdRng::seed_from_u64(seed ^ (u64::from(calibrations) << 32) ^ u64::from(rounds) << 16 ^ u64::from(abba));
    let mut r = WarpResult {
        cells: model.len(),
        rounds,
        abba,
        calibrations,
        drop_pct,
        replications,
        max_rounds,
        aa_added_phases: 0,
        power_added_phases: 0,
        aa_fail_upstream: 0,
        aa_fail_arbiter: 0,
        aa_inconclusive_arbiter: 0,
        power_upstream: 0,
        power_arbiter: 0,
        power_arbiter_warn: 0,
    };
    let dropped = drop_cell(model);
    let dropped_label = &model[dropped].0;
    for _ in 0..replications {
        // The profile: this many A/A calibrations of the same matrix, as the server would keep them.
        let profile = (calibrations > 0).then(|| {
            let mut p = WarpNoiseProfile::default();
            for _ in 0..calibrations {
                let cells: Vec<CellRounds> = matrix(&mut rng, model, rounds, abba, None).iter().map(Cell::rounds).collect();
                p.add_calibration(&cells);
            }
            p
        });
        let adaptive = max_rounds > 0 && profile.is_some();
        // Each look spends its share of the error rate, as the engine's (`judge::warp::noise::Look`).
        let planned = rounds * if abba { 2 } else { 1 };
        let judge_both = |cells: &[Cell]| {
            let report = judge_matrix(cells, &config);
            let look = if adaptive { Look::of(&report.cells, planned, rounds, max_rounds.max(planned)) } else { Look::ONLY };
            let noise = noise_gate_at(&report, &config, profile.as_ref(), look);
            (report, noise)
        };
        // Arbiter's verdict after adaptive rounds (when on); upstream's on the planned phases.
        let run = |rng: &mut StdRng, drop: Option<(usize, f64)>| {
            let mut cells = matrix(rng, model, rounds, abba, drop);
            let (up, _) = judge_both(&cells);
            let added = if adaptive { extend(rng, &mut cells, model, rounds, max_rounds, drop, judge_both) } else { 0 };
            let (_, ar) = judge_both(&cells);
            (up, ar, added)
        };
        let (up, ar, added) = run(&mut rng, None);
        r.aa_added_phases += added;
        r.aa_fail_upstream += u64::from(up.verdict == Verdict::WarpFail);
        r.aa_fail_arbiter += u64::from(ar.verdict == Verdict::WarpFail);
        r.aa_inconclusive_arbiter += u64::from(ar.verdict == Verdict::WarpInconclusive);
        let (up, ar, added) = run(&mut rng, Some((dropped, 1.0 - drop_pct / 100.0)));
        r.power_added_phases += added;
        let row_fails_up =
            up.rows.iter().any(|x| &x.workload == dropped_label && x.metric == "reqps" && x.verdict == judge::warp::gate::RowVerdict::Fail);
        let row = ar.rows.iter().find(|x| &x.workload == dropped_label && x.metric == "reqps");
        use judge::warp::noise::NoiseVerdict;
        r.power_upstream += u64::from(up.verdict == Verdict::WarpFail && row_fails_up);
        r.power_arbiter += u64::from(ar.verdict == Verdict::WarpFail && row.is_some_and(|x| x.verdict == NoiseVerdict::Fail));
        r.power_arbiter_warn += u64::from(row.is_some_and(|x| matches!(x.verdict, NoiseVerdict::Fail | NoiseVerdict::Warn)));
    }
    r
}

/// The results as a Markdown table (rates in percent, with the counts).
pub fn markdown(results: &[WarpResult], seed: u64, fitted: &str, dropped: &str) -> String {
    use std::fmt::Write;
    let mut out = format!(
        "Warp gate, simulated (seed {seed}; cell spreads: {fitted}; budgets fail 10 %, warn 5 %; the power experiments slow {dropped}, the cell of median noise)\n\n"
    );
    let _ = writeln!(out, "| cells | rounds | order | profile | adaptive (cap an arm) | A/A FAIL upstream | A/A FAIL Arbiter | A/A INCONCLUSIVE Arbiter | A/A phases added | drop | power upstream | power Arbiter (FAIL) | Arbiter ≥ WARN on the cell | phases added |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let per = |k: u64, n: u64| format!("{:.1}", k as f64 / n.max(1) as f64);
    let rate = |k: u64, n: u64| format!("{:.1} % ({k}/{n})", 100.0 * k as f64 / n.max(1) as f64);
    for r in results {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | −{} % | {} | {} | {} | {} |",
            r.cells,
            r.rounds,
            if r.abba { "ABBA" } else { "AB" },
            if r.calibrations == 0 { "none".to_string() } else { format!("{} A/A", r.calibrations) },
            if r.max_rounds == 0 { "off".to_string() } else { format!("{} rounds", r.max_rounds) },
            rate(r.aa_fail_upstream, r.replications),
            rate(r.aa_fail_arbiter, r.replications),
            rate(r.aa_inconclusive_arbiter, r.replications),
            per(r.aa_added_phases, r.replications),
            r.drop_pct,
            rate(r.power_upstream, r.replications),
            rate(r.power_arbiter, r.replications),
            rate(r.power_arbiter_warn, r.replications),
            per(r.power_added_phases, r.replications),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(n: usize, phase: f64, round: f64) -> Vec<CellNoise> {
        (0..n).map(|i| (format!("put-{i}KiB/sync-on"), phase, round)).collect()
    }

    #[test]
    fn upstream_cries_wolf_on_phase_noise_and_arbiter_does_not() {
        // 24 cells whose phases move by 8 % (sd). AB: upstream's 10 % budget is breached by chance in most
        // matrices (and a 50 % drop always fails).
        let ab = simulate(&model(24, 0.08, 0.02), 3, false, 3, 50.0, 200, 7, 0);
        assert!(ab.aa_fail_upstream > 100 && ab.power_upstream >= 195, "{ab:?}");
        assert!(ab.aa_fail_arbiter <= 4, "{ab:?}");
        // ABBA with a profile of 3 ABBA calibrations: the noise-aware rule almost never fails an A/A and
        // finds the 50 % drop (upstream's drift rule makes nearly every ABBA matrix here inconclusive).
        let abba = simulate(&model(24, 0.08, 0.02), 3, true, 3, 50.0, 200, 7, 0);
        assert!(abba.aa_fail_arbiter <= 4 && abba.power_arbiter >= 150, "{abba:?}");
        let table = markdown(&[ab, abba], 7, "test", "put-12KiB/sync-on");
        assert!(table.contains("| 24 | 3 | AB | 3 A/A | off |") && table.contains("| 24 | 3 | ABBA | 3 A/A | off |"), "{table}");
    }

    #[test]
    fn adaptive_rounds_add_phases_to_unsure_cells_only_and_find_a_drop_the_planned_phases_miss() {
        // 12 cells, phases moving 6 % (sd), one calibration: a 30 % drop in AB order is rarely supported by
        // the planned phases; adaptive rounds up to 15 rounds an arm (4 more phases an arm) support it.
        let fixed = simulate(&model(12, 0.06, 0.02), 3, false, 1, 30.0, 150, 11, 0);
        let adaptive = simulate(&model(12, 0.06, 0.02), 3, false, 1, 30.0, 150, 11, 15);
        assert_eq!((fixed.aa_added_phases, fixed.power_added_phases), (0, 0));
        assert!(adaptive.power_arbiter > fixed.power_arbiter + 30, "fixed {fixed:?}\nadaptive {adaptive:?}");
        assert!(adaptive.aa_fail_arbiter <= 3, "{adaptive:?}");
        // Clear cells stop: a power matrix adds phases for the unsure cells, far fewer than every cell to the cap.
        let every = 150 * 12 * 2 * 4;
        assert!(adaptive.power_added_phases > 0 && adaptive.power_added_phases < every / 2, "{adaptive:?}");
        // No profile: upstream's rule is the verdict and no phase is added.
        let uncalibrated = simulate(&model(12, 0.06, 0.02), 3, false, 0, 30.0, 50, 11, 15);
        assert_eq!(uncalibrated.aa_added_phases + uncalibrated.power_added_phases, 0);
    }

    #[test]
    fn a_fit_reads_the_phase_and_round_spreads_of_an_a_a() {
        let mut rng = StdRng::seed_from_u64(3);
        let cells: Vec<CellRounds> = matrix(&mut rng, &model(1, 0.10, 0.01), 20, true, None).iter().map(Cell::rounds).collect();
        let json = serde_json::json!({"report": {"gate": {"cells": cells}}});
        let fitted = fit(&json).unwrap();
        assert_eq!(fitted.len(), 1);
        let (_, phase, round) = fitted[0].clone();
        assert!((round - 0.01).abs() < 0.004, "{round}");
        assert!(phase > 0.0 && phase < 0.3, "{phase}");
        assert!(fit(&serde_json::json!({"report": {}})).is_err());
    }
}
