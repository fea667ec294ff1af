//! The measured table as Markdown: what `arbiter simulate` prints.

use super::{fixed_n, fixed_n_t, CellResult, Cv, Design, Looks};

fn pct(r: f64) -> String {
    let p = 100.0 * r;
    if p == 0.0 {
        "0".into()
    } else if p < 1.0 {
        format!("{p:.2}")
    } else {
        format!("{p:.1}")
    }
}

/// The measured table as Markdown.
pub fn markdown(results: &[CellResult], seed: u64, design: Design, power_cv: f64) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let mut trials: Vec<usize> = results.iter().map(|r| r.cell.trials).collect();
    trials.sort_unstable();
    trials.dedup();
    let head = |out: &mut String| {
        let _ = writeln!(out, "| stages | profile | {} |", trials.iter().map(|n| format!("n={n}")).collect::<Vec<_>>().join(" | "));
        let _ = writeln!(out, "|---:|---|{}", "---:|".repeat(trials.len()));
    };
    let how = match design.looks {
        Looks::Fixed if design.paired => "interleaved, judged paired once every trial has run; n = trials per arm",
        Looks::Fixed => "judged unpaired (Welch) once every trial has run; n = trials per arm",
        Looks::Sequential => "interleaved C T, judged after every pair and stopped as soon as the verdict is settled; n = the budget, trials per arm",
        Looks::Abba => "in ABBA blocks (C T T C), judged after every block and stopped as soon as the verdict is settled; n = the budget, trials per arm",
    };
    let shrunk = if design.shrink_profiles { "; profiles shrunk across stages (--shrink-profiles, not what Arbiter does)" } else { "" };
    let drift =
        if design.drift_pct != 0.0 { format!("; a CPU drift of {:+} % per trial in run order", design.drift_pct) } else { String::new() };
    let bisect = design
        .bisect_ends_pct
        .map(|b| {
            format!(
                "; a bisection's probe: stage 0 is the focus, decided by which end it resembles with the bad end +{b} % from the good end \
                 (A/A: an unmoved probe, \"every stage's CPU decided equivalent\" = read unmoved; power: a moved probe, \"regression\" = read moved)"
            )
        })
        .unwrap_or_default();
    let mut order = match design.order {
        super::Order::Balanced if design.looks != Looks::Abba => {
            "; orders balanced (each block of two pairs one C T and one T C, in random order; the judge fits the order covariate)"
                .to_string()
        }
        _ => String::new(),
    };
    if design.order_effect_pct > 0.0 {
        order.push_str(&format!("; a pair's first trial costs +{} %", design.order_effect_pct));
    }
    if design.warm_up_pct > 0.0 {
        order.push_str(&format!("; the experiment's first trial costs +{} % (warm-up)", design.warm_up_pct));
    }
    let _ = writeln!(out, "Seed {seed}; trials {how}{shrunk}{drift}{order}{bisect}. Figures are percent of experiments.\n");
    let sequential = design.looks != Looks::Fixed;
    let used = |r: &CellResult| format!("{:.1}/{}/{}", r.mean_trials, r.median_trials, r.p95_trials);
    // The third answer: passes resting on it, and the X it was planned at.
    let third = |r: &CellResult| {
        if r.with_x == 0 {
            "no X".to_string()
        } else {
            format!("{} (X {:.1} %)", pct(r.rate(r.bounded)), r.mean_x_pct)
        }
    };
    let mut groups: Vec<(usize, usize)> = results.iter().map(|r| (r.cell.stages, r.cell.profile)).collect();
    groups.sort_unstable();
    groups.dedup();
    let row = |out: &mut String, effect: f64, f: &dyn Fn(&CellResult) -> String| {
        for &(stages, profile) in &groups {
            let cells: Vec<String> = trials
                .iter()
                .map(|&n| {
                    results
                        .iter()
                        .find(|r| r.cell.stages == stages && r.cell.profile == profile && r.cell.trials == n && r.cell.effect_pct == effect)
                        .map_or("–".into(), f)
                })
                .collect();
            if cells.iter().all(|c| c == "–") {
                continue;
            }
            let prof = if profile == 0 { "none".to_string() } else { format!("{profile} trials") };
            let _ = writeln!(out, "| {stages} | {prof} | {} |", cells.join(" | "));
        }
    };
    if results.iter().any(|r| r.cell.effect_pct == 0.0) {
        let reps = results.iter().find(|r| r.cell.effect_pct == 0.0).map_or(0, |r| r.replications);
        let cv = match results.iter().find(|r| r.cell.effect_pct == 0.0).map(|r| r.cell.cv) {
            Some(Cv::Fixed(c)) => format!("{c} %"),
            _ => "1–5 % per stage".to_string(),
        };
        let _ = writeln!(out, "### A/A: experiments claiming any change (CPU CV {cv}; {reps} experiments a cell)\n");
        if sequential {
            let _ = writeln!(
                out,
                "Each cell: claims % [95 % Clopper–Pearson upper bound] · every stage's CPU decided equivalent % · passed on \"no regression ≥ X\" % (mean X) · trials per arm used, mean/median/95th percentile.\n"
            );
        } else {
            let _ = writeln!(
                out,
                "Each cell: claims % [95 % Clopper–Pearson upper bound] · inconclusive % · passed on \"no regression ≥ X\" % (mean X).\n"
            );
        }
        head(&mut out);
        row(&mut out, 0.0, &|r| {
            let (_, hi) = judge::stats::clopper_pearson(r.claims, r.replications, 0.95);
            if sequential {
                format!("{} [≤{}] · {} · {} · {}", pct(r.rate(r.claims)), pct(hi), pct(r.rate(r.equivalent)), third(r), used(r))
            } else {
                format!("{} [≤{}] · {} · {}", pct(r.rate(r.claims)), pct(hi), pct(r.rate(r.inconclusive)), third(r))
            }
        });
        let _ = writeln!(out);
    }
    let mut effects: Vec<f64> = results.iter().map(|r| r.cell.effect_pct).filter(|e| *e != 0.0).collect();
    effects.sort_by(f64::total_cmp);
    effects.dedup();
    for effect in effects {
        let reps = results.iter().find(|r| r.cell.effect_pct == effect).map_or(0, |r| r.replications);
        let _ = writeln!(out, "### Power: a true +{effect} % CPU change in one stage (CPU CV {power_cv} %; {reps} experiments a cell)\n");
        if sequential {
            let _ = writeln!(
                out,
                "Each cell: judged a regression % · pass % (of which on \"no regression ≥ X\" with X at or below the true change) · trials per arm used, mean/median/95th percentile · the mean and the 95th percentile over the fixed-N t-test at the family's first Holm level (below).\n"
            );
        } else {
            let _ = writeln!(out, "Each cell: judged a regression % · pass % (of which on \"no regression ≥ X\" with X at or below the true change) · inconclusive %.\n");
        }
        head(&mut out);
        row(&mut out, effect, &|r| {
            if sequential {
                let t_test = fixed_n_t(power_cv, effect, 0.008 / r.cell.stages as f64, 0.95) as f64;
                let wrong = pct(r.rate(r.wrongly_bounded));
                format!(
                    "{} · {} ({wrong}) · {} · {:.2}× / {:.2}×",
                    pct(r.rate(r.regressions)),
                    pct(r.rate(r.passes)),
                    used(r),
                    r.mean_trials / t_test,
                    r.p95_trials as f64 / t_test
                )
            } else {
                let wrong = pct(r.rate(r.wrongly_bounded));
                format!("{} · {} ({wrong}) · {}", pct(r.rate(r.regressions)), pct(r.rate(r.passes)), pct(r.rate(r.inconclusive)))
            }
        });
        let sizes: std::collections::BTreeSet<usize> = groups.iter().map(|g| g.0).collect();
        let per_size = |f: &dyn Fn(usize) -> String| sizes.iter().map(|&s| format!("S={s}: {}", f(s))).collect::<Vec<_>>().join(", ");
        let _ = writeln!(
            out,
            "\nFixed-design bound n = 2(z_α/2 + z_β)²σ²/δ² at σ = {power_cv} %: {:.1} trials per arm at α = 0.01, power 95 % (one test); \
             at the family's level for S stages (α = 0.008/S): {}. The fixed-N paired t-test (spread unknown) at that level, power 95 %: {}.\n",
            fixed_n(power_cv, effect, 0.01, 0.95),
            per_size(&|s| format!("{:.1}", fixed_n(power_cv, effect, 0.008 / s as f64, 0.95))),
            per_size(&|s| format!("{} pairs", fixed_n_t(power_cv, effect, 0.008 / s as f64, 0.95))),
        );
    }
    out
}
