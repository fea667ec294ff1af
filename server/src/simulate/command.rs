//! `arbiter simulate`'s arguments: checked, turned into cells, run, printed.

use super::table::markdown;
use super::{grid, run_cells, Design, Looks};

/// What `arbiter simulate` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Kind {
    /// The pipeline verdict (the default).
    #[default]
    Pipeline,
    /// The warp gate: upstream's rule against the noise-aware one.
    Warp,
}

#[derive(Debug, Clone, clap::Args)]
pub struct SimulateArgs {
    /// Which verdict: the pipeline judge, or the warp gate (`--kind warp`: the options below marked warp).
    #[arg(long, value_enum, default_value_t = Kind::Pipeline)]
    pub kind: Kind,
    /// warp: fit the cells' phase and round spreads from an A/A warp experiment's JSON
    /// (`GET /api/v1/experiments/{id}`) instead of this machine's built-in fit.
    #[arg(long)]
    pub fit: Option<std::path::PathBuf>,
    /// warp: cells in the matrix (the fitted cells repeated as needed).
    #[arg(long, default_value_t = 24)]
    pub cells: usize,
    /// warp: rounds a phase, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [3])]
    pub rounds: Vec<u32>,
    /// warp: A/A calibrations behind the profile, comma-separated; 0 is none (the default spread).
    #[arg(long, value_delimiter = ',', default_values_t = [0, 1, 3])]
    pub calibrations: Vec<u32>,
    /// warp: the obj/s drop of one cell in the power experiments, percent.
    #[arg(long, default_value_t = 15.0)]
    pub drop: f64,
    /// warp: adaptive rounds' caps of a cell's rounds an arm, comma-separated; 0 is off (planned phases only).
    #[arg(long, value_delimiter = ',', default_values_t = [0])]
    pub max_rounds: Vec<u32>,
    /// warp: run each arm's phase twice (A1 B1 B2 A2) instead of once.
    #[arg(long)]
    pub abba: bool,
    /// Experiments per power cell (at least 2000 for the README's table).
    #[arg(long, default_value_t = 2000)]
    pub replications: u64,
    /// Experiments per A/A cell: more, so that rates near 1 % read to ±0.2 %.
    #[arg(long, default_value_t = 10000)]
    pub aa_replications: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Stages per pipeline, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [3, 5, 20, 50])]
    pub stages: Vec<usize>,
    /// Trials per arm, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 2, 3, 5, 10, 20, 24, 30])]
    pub trials: Vec<usize>,
    /// Same-code trials behind the profile, comma-separated; 0 is no profile.
    #[arg(long, value_delimiter = ',', default_values_t = [0, 3, 5, 10])]
    pub profiles: Vec<usize>,
    /// True CPU changes of one stage in percent, comma-separated; 0 is the A/A cells.
    #[arg(long, value_delimiter = ',', default_values_t = [0.0, 2.0, 3.0, 5.0, 10.0])]
    pub effects: Vec<f64>,
    /// The CPU CV of every stage in the power cells, percent.
    #[arg(long, default_value_t = 2.0)]
    pub power_cv: f64,
    /// The CPU CV of every stage in the A/A cells, percent (default: each stage's drawn from 1–5 %).
    #[arg(long)]
    pub aa_cv: Option<f64>,
    /// Judge with Welch on all trials instead of as interleaved pairs (the fixed design only).
    #[arg(long)]
    pub unpaired: bool,
    /// When the judge looks: once (fixed), after every pair (sequential; --trials is then the budget),
    /// or after every ABBA block.
    #[arg(long, value_enum, default_value_t = Looks::Fixed)]
    pub design: Looks,
    /// A linear CPU drift per trial in run order, percent (every stage, both arms): what ABBA blocks cancel.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub drift: f64,
    /// The profile's own CPU noise as a multiple of the run's (1: accurate; 0.5: calibrated on a day with
    /// half the run's noise).
    #[arg(long, default_value_t = 1.0)]
    pub profile_noise: f64,
    /// Shrink each profile's stage spreads toward their common one before judging (empirical Bayes): what
    /// Arbiter does not do, to measure why.
    #[arg(long)]
    pub shrink_profiles: bool,
    /// A bisection's probe (`--design sequential` only): stage 0 is the focus, decided by which end it
    /// resembles, the bad end this CPU change (percent) from the good end. `--effects 0` is an unmoved probe,
    /// `--effects` equal to this a moved one.
    #[arg(long)]
    pub bisect_ends: Option<f64>,
    /// Print the counts as JSON instead of the Markdown table.
    /// Which arm runs first in each pair: every pair control first, or balanced (each block of two pairs
    /// one C T and one T C, in random order).
    #[arg(long, value_enum, default_value_t = super::Order::ControlFirst)]
    pub order: super::Order,
    /// The first trial of each pair costs this many percent more (CPU and elapsed, every stage).
    #[arg(long, default_value_t = 0.0)]
    pub order_effect: f64,
    /// The experiment's first trial costs this many percent more (a cold host), on top of any order effect.
    #[arg(long, default_value_t = 0.0)]
    pub warm_up: f64,
    #[arg(long)]
    pub json: bool,
    /// Worker threads (default: the machine's cores).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// `--kind warp`: upstream's rule and the noise-aware one on the same simulated matrices.
fn run_warp(args: &SimulateArgs) -> Result<i32, String> {
    use super::warp::{drop_cell, fit, markdown, simulate, CellNoise, MACHINE};
    if args.max_rounds.iter().any(|c| *c > suite::warp::MAX_ROUNDS_CAP) {
        return Err(format!("--max-rounds takes 0 (off) to {}", suite::warp::MAX_ROUNDS_CAP));
    }
    if args.cells == 0 || args.cells > 500 || args.rounds.iter().any(|r| *r == 0 || *r > 50) || args.calibrations.iter().any(|c| *c > 50) {
        return Err("--cells takes 1–500, --rounds 1–50 and --calibrations 0–50".into());
    }
    if !(args.drop > 0.0 && args.drop < 100.0) {
        return Err("--drop takes a percentage above 0 and below 100".into());
    }
    let (base, fitted): (Vec<CellNoise>, String) = match &args.fit {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
            let cells = fit(&json).map_err(|e| format!("{}: {e}", path.display()))?;
            let words = cells
                .iter()
                .map(|(l, p, r)| format!("{l} phase {:.1} % round {:.1} %", 100.0 * p, 100.0 * r))
                .collect::<Vec<_>>()
                .join("; ");
            (cells, format!("fitted from {} ({words})", path.display()))
        }
        None => (MACHINE.iter().map(|(l, p, r)| (l.to_string(), *p, *r)).collect(), "this machine's fit (simulate/warp.rs)".into()),
    };
    let model: Vec<CellNoise> = (0..args.cells)
        .map(|i| base[i % base.len()].clone())
        .enumerate()
        .map(|(i, (l, p, r))| (if i < base.len() { l } else { format!("{l}#{}", i / base.len() + 1) }, p, r))
        .collect();
    let started = std::time::Instant::now();
    let mut results = Vec::new();
    for &rounds in &args.rounds {
        for &calibrations in &args.calibrations {
            for &cap in &args.max_rounds {
                results.push(simulate(&model, rounds, args.abba, calibrations, args.drop, args.replications, args.seed, cap));
            }
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results).map_err(|e| e.to_string())?);
    } else {
        print!("{}", markdown(&results, args.seed, &fitted, &model[drop_cell(&model)].0));
        eprintln!(
            "simulate: {} configurations of {} A/A and power experiments in {:.0} s",
            results.len(),
            args.replications,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(0)
}

pub fn run_simulate(args: SimulateArgs) -> Result<i32, String> {
    if args.kind == Kind::Warp {
        if args.replications == 0 {
            return Err("--replications must be at least 1".into());
        }
        return run_warp(&args);
    }
    if args.replications == 0 || args.aa_replications == 0 {
        return Err("--replications and --aa-replications must be at least 1".into());
    }
    if args.stages.iter().any(|&s| s == 0 || s > 500) || args.trials.iter().any(|&n| n == 0 || n > 500) {
        return Err("--stages and --trials take whole numbers from 1 to 500".into());
    }
    if args.profiles.iter().any(|&k| k == 1 || k > 500) {
        return Err("--profiles takes 0 (none) or 2–500 same-code trials".into());
    }
    if args.effects.iter().any(|e| !(e.is_finite() && *e >= 0.0 && *e < 1000.0)) || !(args.power_cv >= 1.0 && args.power_cv < 50.0) {
        return Err("--effects take percentages from 0 to 1000; --power-cv a CV from 1 % (the shared shift alone) to below 50 %".into());
    }
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if args.aa_cv.is_some_and(|c| !(1.0..50.0).contains(&c)) {
        return Err("--aa-cv takes a CV from 1 % (the shared shift alone) to below 50 %".into());
    }
    let cells = grid(&args.stages, &args.trials, &args.profiles, &args.effects, args.power_cv, args.aa_cv);
    let started = std::time::Instant::now();
    if args.unpaired && args.design != Looks::Fixed {
        return Err("--unpaired: the sequential designs judge pairs".into());
    }
    if args.design == Looks::Abba && args.trials.iter().any(|n| n % 2 == 1) {
        return Err("--design abba: --trials takes even numbers (two trials an arm a block)".into());
    }
    if !(args.drift.is_finite() && args.drift.abs() < 10.0) {
        return Err("--drift takes a percentage per trial between −10 and 10".into());
    }
    if !(args.profile_noise > 0.0 && args.profile_noise <= 4.0) {
        return Err("--profile-noise takes a multiple of the run's noise above 0 and at most 4".into());
    }
    if let Some(b) = args.bisect_ends {
        if args.design != Looks::Sequential || !(b > 0.0 && b < 1000.0) {
            return Err(
                "--bisect-ends takes the bad end's CPU change, a percentage above 0 and below 1000, with --design sequential".into()
            );
        }
    }
    let in_range = |pct: f64| pct.is_finite() && (0.0..100.0).contains(&pct);
    if !in_range(args.order_effect) || !in_range(args.warm_up) {
        return Err("--order-effect and --warm-up take a percentage from 0 to below 100".into());
    }
    let design = Design {
        order: args.order,
        order_effect_pct: args.order_effect,
        warm_up_pct: args.warm_up,
        profile_noise: args.profile_noise,
        paired: !args.unpaired,
        shrink_profiles: args.shrink_profiles,
        looks: args.design,
        drift_pct: args.drift,
        bisect_ends_pct: args.bisect_ends,
    };
    let results = run_cells(&cells, args.replications, args.aa_replications, args.seed, design, threads);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results).map_err(|e| e.to_string())?);
    } else {
        print!("{}", markdown(&results, args.seed, design, args.power_cv));
        let total: u64 = results.iter().map(|r| r.replications).sum();
        eprintln!("simulate: {} cells, {total} experiments in {:.0} s on {threads} threads", cells.len(), started.elapsed().as_secs_f64());
    }
    Ok(0)
}
