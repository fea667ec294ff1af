//! `arbiter bisect`: starts a bisection on a running Arbiter through `/api/v1/bisections` (or, with
//! `--dry-run`, lists the commits and the expected steps and trials), optionally waits with a line per
//! step, and prints the culprit. Exit codes: 0 a culprit or no culprit, 3 ambiguous, 4 cancelled, 2 any error.

use crate::client::{call, fingerprint_from};
use std::time::Duration;
use wire::bisection::{JsonBisection, JsonBisectionRequest};

#[derive(Debug, clap::Args)]
pub struct BisectArgs {
    #[command(flatten)]
    pub api: crate::client::ServerArgs,
    #[arg(long)]
    pub suite: String,
    /// The last commit known good.
    #[arg(long)]
    pub good: String,
    /// The first commit known bad; the range is good..bad on bad's first-parent line.
    #[arg(long)]
    pub bad: String,
    /// The metric that moved: a stage (`cpu:STAGE`) or a warp cell's metric (`get-4KiB/sync-off:reqps`).
    #[arg(long)]
    pub metric: String,
    /// A fingerprint field, FIELD=VALUE.
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// An experiment that already compared good (control) with bad (treatment): the first step, not run again.
    #[arg(long)]
    pub experiment: Option<i64>,
    /// Experiments in all.
    #[arg(long)]
    pub max_steps: Option<u32>,
    /// Trials an arm of each step.
    #[arg(long)]
    pub max_trials: Option<u32>,
    /// Wall time of the whole bisection, in minutes.
    #[arg(long)]
    pub max_minutes: Option<u32>,
    /// Probes at once.
    #[arg(long)]
    pub parallel: Option<u32>,
    /// Pipeline: the smallest CPU change worth finding, in percent (default: the suite's CPU margin).
    #[arg(long)]
    pub margin: Option<f64>,
    /// Warp: each step's rounds per workload, within the suite's [warp.limits].
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Warp: each load run's duration (e.g. 3s).
    #[arg(long)]
    pub duration: Option<String>,
    /// Warp: warm-up before each load run.
    #[arg(long)]
    pub warmup: Option<String>,
    /// Warp: cool-down after each load run.
    #[arg(long)]
    pub cooldown: Option<String>,
    /// List the commits and the expected steps and trials; start nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Wait for the end, a line per step.
    #[arg(long)]
    pub wait: bool,
}

pub fn run_bisect(args: BisectArgs) -> Result<i32, String> {
    crate::client::block_on(bisect(args))
}

async fn bisect(args: BisectArgs) -> Result<i32, String> {
    let base = args.api.base();
    let http = reqwest::Client::builder().timeout(Duration::from_secs(120)).build().map_err(|e| e.to_string())?;
    let body = JsonBisectionRequest {
        suite: args.suite.clone(),
        good: args.good.clone(),
        bad: args.bad.clone(),
        metric: args.metric.clone(),
        fingerprint: fingerprint_from(&args.set)?,
        experiment_id: args.experiment,
        max_steps: args.max_steps,
        max_trials: args.max_trials,
        max_minutes: args.max_minutes,
        parallel: args.parallel,
        margin_pct: args.margin,
        warp: Some(wire::launch::JsonWarpMatrix {
            rounds: args.rounds,
            duration: args.duration.clone(),
            warmup: args.warmup.clone(),
            cooldown: args.cooldown.clone(),
            ..Default::default()
        })
        .filter(|m| !m.is_empty()),
        dry_run: args.dry_run,
        ..JsonBisectionRequest::default()
    };
    let r = call(http.post(format!("{base}/api/v1/bisections")).bearer_auth(&args.api.token).json(&body), "bisect").await?;
    let not_ours = |e: serde_json::Error| format!("bisect: the server's answer is not a bisection's: {e}");
    if args.dry_run {
        let plan = serde_json::from_value::<wire::answers::JsonBisectionDryRun>(r).map_err(not_ours)?.plan;
        println!("{}", plan.plan.words);
        println!("good  {}  {}", short_sha(&plan.search.good.sha), plan.search.good.subject);
        for (i, c) in plan.search.commits.iter().enumerate() {
            let merge = if c.merge { " (merge)" } else { "" };
            println!("{:>4}  {}  {}{merge}", i + 1, short_sha(&c.sha), c.subject);
        }
        return Ok(0);
    }
    let wire::answers::JsonCreated { id, url } = serde_json::from_value(r).map_err(not_ours)?;
    println!("started bisection {id}: {url}");
    if !args.wait {
        return Ok(0);
    }
    let mut shown = 0;
    loop {
        let answer = call(http.get(format!("{base}/api/v1/bisections/{id}")).bearer_auth(&args.api.token), "status").await?;
        let b: JsonBisection =
            serde_json::from_value(answer).map_err(|e| format!("status: the server's answer is not a bisection: {e}"))?;
        for line in b.state.log.iter().skip(shown) {
            println!("  {line}");
        }
        shown = b.state.log.len();
        if b.status != "running" {
            if let Some(c) = &b.state.culprit {
                println!("culprit: {} {}\n  {}\n  {}", short_sha(&c.sha), c.subject, c.author, c.stat);
            }
            println!("{url}");
            return Ok(match (b.status.as_str(), b.state.outcome.as_ref().map(|o| o.kind())) {
                ("cancelled", _) => judge::ExitCode::NoVerdict.code(),
                (_, Some("culprit" | "no_culprit")) => judge::ExitCode::Ok.code(),
                (_, Some("ambiguous")) => judge::ExitCode::Inconclusive.code(),
                _ => judge::ExitCode::Usage.code(),
            });
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

use judge::units::short_sha;
