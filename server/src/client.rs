//! The CLI client of the API, `arbiter launch`: launches an experiment on a running Arbiter through `/api/v1` (the CI entry point),
//! optionally waits for it with a line per change, prints the verdict and the page's URL, and exits per
//! the shared exit codes (`judge::vocab`: 0 pass/WARN, 1 regression/FAIL, 3 inconclusive, 4 cancelled, 2 anything else).

use wire::plan::{JsonLaunchAnswer, JsonLaunchPlan, JsonLaunched};
use judge::{ExperimentStatus, TrialState};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use wire::experiment::JsonExperiment;
use wire::launch::{JsonExemption, JsonExtraArm, JsonLaunch, JsonWarpMatrix, LatestWord, ReuseBaseline, WarpPreset};

/// Where the API is and who calls it: the flags every command that talks to a running Arbiter takes.
#[derive(Debug, clap::Args)]
pub struct ServerArgs {
    /// The Arbiter server, e.g. https://arbiter.example.com.
    #[arg(long, env = "ARBITER_SERVER")]
    pub server: String,
    /// An API token of a launcher (or ARBITER_TOKEN).
    #[arg(long, env = "ARBITER_TOKEN", hide_env_values = true)]
    pub token: String,
}

impl ServerArgs {
    /// The server's base URL, without a trailing slash.
    pub fn base(&self) -> String {
        self.server.trim_end_matches('/').to_string()
    }
}

/// Runs a client command on a runtime of its own.
pub fn block_on(command: impl std::future::Future<Output = Result<i32, String>>) -> Result<i32, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?
        .block_on(command)
}

#[derive(Debug, clap::Args)]
pub struct LaunchArgs {
    #[command(flatten)]
    pub api: ServerArgs,
    #[arg(long)]
    pub suite: String,
    /// The control; default: the merge-base of the suite's base branch and the treatment.
    #[arg(long)]
    pub control_ref: Option<String>,
    /// The treatment ref; repeat as NAME=REF for extra arms.
    #[arg(long, required = true)]
    pub treatment_ref: Vec<String>,
    /// Reuse a baseline run as the control instead of running one: `latest` (the newest that matches) or
    /// its experiment id. Refused, with the field named, unless it is truly comparable.
    #[arg(long, value_name = "latest|ID", conflicts_with = "control_ref")]
    pub reuse_baseline: Option<String>,
    /// Measure the --treatment-ref alone as a baseline run: no control and no verdict; its levels feed
    /// the suite's trends and later launches may reuse it (--reuse-baseline). With --wait: exit 0 once
    /// it is measured.
    #[arg(long, conflicts_with_all = ["control_ref", "reuse_baseline", "allow_regression", "comment_file"])]
    pub baseline: bool,
    /// Trials an arm: a number, or `auto` (pairs added while the verdict is undecided, up to --max-trials).
    #[arg(long)]
    pub trials: Option<wire::launch::JsonTrials>,
    /// With --trials auto: the most trials an arm (default: the suite's max_trials).
    #[arg(long)]
    pub max_trials: Option<u32>,
    /// The trial order: interleaved (balanced; also `balanced`), abba, blocked or control_first (default:
    /// the suite's).
    #[arg(long, value_name = "ORDER", value_parser = parse_order)]
    pub order: Option<wire::launch::TrialOrder>,
    /// Unmeasured warm-up trials before the first pair, 0–10 (default: the suite's; one on this host).
    #[arg(long = "warm-up", value_name = "N")]
    pub warm_up: Option<u32>,
    /// Local pipeline trials on the host's shared CPUs: no CPU set reserved for them (by default a trial
    /// gets CPUs of its own where the host has one to spare).
    #[arg(long)]
    pub shared_cpus: bool,
    /// A same-code canary of --treatment-ref (no control ref): judged, counted in the suite's realised
    /// false-alarm rate, then added to its noise profile.
    #[arg(long)]
    pub canary: bool,
    /// Pipeline suites: X of the third answer, "no regression of X % or more", for this experiment
    /// (default: the suite's `[judge] no_regression_pct`, else planned from the budget).
    #[arg(long = "no-regression", value_name = "PCT")]
    pub no_regression: Option<f64>,
    /// A fingerprint field, FIELD=VALUE (integers and true/false are typed).
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// Record a deliberate regression as an exempted one (needs --reason).
    #[arg(long, requires = "reason")]
    pub allow_regression: bool,
    #[arg(long)]
    pub reason: Option<String>,
    /// Warp suites: `smoke` runs the suite's quick matrix (a first answer in minutes), `full` its own.
    #[arg(long, value_enum, value_name = "smoke|full")]
    pub preset: Option<MatrixPreset>,
    /// Warp suites: only these of the suite's workloads (comma-separated, e.g. put-4KiB,get-4KiB).
    #[arg(long, value_delimiter = ',')]
    pub workloads: Vec<String>,
    /// Warp suites: only these drive-sync values (on, off; comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub drive_sync: Vec<String>,
    /// Warp suites: rounds per workload, within the suite's [warp.limits].
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Warp suites: each round's measured window (e.g. 5s), within the suite's [warp.limits].
    #[arg(long)]
    pub duration: Option<String>,
    /// Warp suites: the warm-up before each round.
    #[arg(long)]
    pub warmup: Option<String>,
    /// Warp suites: the pause between rounds.
    #[arg(long)]
    pub cooldown: Option<String>,
    /// Warp suites: concurrent requests of the load driver.
    #[arg(long)]
    pub concurrency: Option<u32>,
    /// Warp suites: no adaptive rounds (by default, once the suite is calibrated, a cell whose reading more
    /// phases could change gets another pair of phases).
    #[arg(long)]
    pub no_adaptive_rounds: bool,
    /// Warp suites: the most rounds a cell takes an arm with adaptive rounds (default: 18, or three times the planned if more).
    #[arg(long)]
    pub max_rounds: Option<u32>,
    /// Print the plan (every argv, the expected time, what the trials can detect) and launch nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// How --dry-run prints the plan: readable text, or the API's JSON.
    #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
    pub format: PlanFormat,
    /// Wait for the verdict and exit with its code.
    #[arg(long)]
    pub wait: bool,
    /// Give up waiting after this many seconds (exit 2; the experiment goes on).
    #[arg(long, default_value_t = 6 * 3600)]
    pub timeout_secs: u64,
    /// With --wait: write the pull-request comment (verdict, key table, chart images) here. It makes a
    /// share link, so reviewers without an account can open the page and see the charts.
    #[arg(long, value_name = "FILE", requires = "wait")]
    pub comment_file: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MatrixPreset {
    Smoke,
    Full,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlanFormat {
    Text,
    Json,
}

/// A dry run's plan for a person: title, arms with SHAs, trial count and time, power, every command.
pub fn plan_text(plan: &JsonLaunchPlan) -> String {
    use std::fmt::Write;
    let w = plan.words();
    let mut out = format!("plan: {}\n", w.title);
    for [name, role, git_ref, sha, _] in &w.arms {
        let _ = writeln!(out, "  {name:<12} {role} at {sha} ({git_ref})");
    }
    let _ = writeln!(out, "{}{}", w.count, w.summary);
    let lines = [
        w.adaptive.map(|a| format!("adaptive: {a}")),
        w.matrix.map(|m| format!("matrix: {m}")),
        w.adaptive_rounds.map(|r| format!("adaptive rounds: {r}")),
        w.context,
    ];
    for line in lines.into_iter().flatten() {
        let _ = writeln!(out, "{line}");
    }
    if let Some(p) = w.power {
        let _ = writeln!(out, "{} {}", p.detectable, p.detail);
        for line in [p.noisiest, p.no_regression, Some(p.needed)].into_iter().flatten() {
            let _ = writeln!(out, "{line}");
        }
    }
    for (i, (label, argv)) in w.trials.iter().enumerate() {
        let _ = writeln!(out, "  {:>3}. {label}: {argv}", i + 1);
    }
    out
}

/// The launch request the flags describe: the API's own type, the same one the form sends.
pub fn request(args: &LaunchArgs) -> Result<JsonLaunch, String> {
    if args.baseline && args.treatment_ref.len() > 1 {
        return Err("--baseline measures one ref: give a single --treatment-ref".into());
    }
    let mut refs = args.treatment_ref.iter();
    let head = refs.next().ok_or("--treatment-ref: give the treatment's ref")?;
    let head = head.split_once('=').map_or(head.as_str(), |(_, r)| r);
    let mut arms = Vec::new();
    for extra in refs {
        let (name, r) = extra.split_once('=').ok_or_else(|| format!("--treatment-ref {extra:?}: name an extra arm, NAME=REF"))?;
        arms.push(JsonExtraArm { name: name.to_string(), git_ref: r.to_string(), config: None });
    }
    let fingerprint = fingerprint_from(&args.set)?;
    let reuse_baseline = match args.reuse_baseline.as_deref().map(|r| (r, r.parse::<i64>())) {
        None => None,
        Some(("latest", _)) => Some(ReuseBaseline::Latest(LatestWord::Latest)),
        Some((_, Ok(id))) if id > 0 => Some(ReuseBaseline::Experiment(id)),
        Some((other, _)) => return Err(format!("--reuse-baseline {other:?}: give `latest` or a baseline's experiment id")),
    };
    Ok(JsonLaunch {
        suite: args.suite.clone(),
        head: head.to_string(),
        base: args.control_ref.clone(),
        arms,
        fingerprint,
        trials: args.trials,
        max_trials: args.max_trials,
        order: args.order,
        warm_up: args.warm_up,
        shared_cpus: args.shared_cpus,
        canary: args.canary,
        no_regression_pct: args.no_regression,
        baseline: args.baseline,
        reuse_baseline,
        exemption: args.allow_regression.then(|| JsonExemption { reason: args.reason.clone().unwrap_or_default() }),
        dry_run: args.dry_run,
        warp: Some(JsonWarpMatrix {
            preset: args.preset.map(|p| match p {
                MatrixPreset::Smoke => WarpPreset::Smoke,
                MatrixPreset::Full => WarpPreset::Full,
            }),
            workloads: Some(args.workloads.clone()).filter(|w| !w.is_empty()),
            drive_sync: Some(args.drive_sync.clone()).filter(|d| !d.is_empty()),
            rounds: args.rounds,
            duration: args.duration.clone(),
            warmup: args.warmup.clone(),
            cooldown: args.cooldown.clone(),
            concurrency: args.concurrency,
            adaptive_rounds: args.no_adaptive_rounds.then_some(false),
            max_rounds: args.max_rounds,
        })
        .filter(|m| !m.is_empty()),
        ..JsonLaunch::default()
    })
}

/// The fingerprint `--set FIELD=VALUE` flags give (integers and true/false are typed).
pub fn fingerprint_from(sets: &[String]) -> Result<serde_json::Map<String, Value>, String> {
    let mut fingerprint = serde_json::Map::new();
    for s in sets {
        let (k, v) = s.split_once('=').ok_or_else(|| format!("--set {s:?}: expected FIELD=VALUE"))?;
        let value = match (v.parse::<i64>(), v) {
            (Ok(n), _) => json!(n),
            (_, "true") => json!(true),
            (_, "false") => json!(false),
            _ => json!(v),
        };
        fingerprint.insert(k.to_string(), value);
    }
    Ok(fingerprint)
}

pub(crate) async fn call(req: reqwest::RequestBuilder, what: &str) -> Result<Value, String> {
    let resp = req.send().await.map_err(|e| format!("{what}: cannot reach the server: {e}"))?;
    let status = resp.status();
    let bytes = resp.bytes().await.unwrap_or_default();
    if status.is_success() {
        return Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null));
    }
    // The server's refusal (`wire::error::JsonError`); a refused value is named by the flag that carries it.
    let refusal: Option<wire::error::JsonError> = serde_json::from_slice(&bytes).ok();
    let message = match &refusal {
        Some(r) => r.field_error().map(|f| f.for_cli()).unwrap_or_else(|| r.error.clone()),
        None => "(no message)".to_string(),
    };
    Err(match status.as_u16() {
        401 => format!("{what}: the server refused the token (HTTP 401): {message}"),
        403 => format!("{what}: the token may not do this (HTTP 403): {message}"),
        code => format!("{what}: HTTP {code}: {message}"),
    })
}

async fn launch(args: LaunchArgs) -> Result<i32, String> {
    let base = args.api.base();
    let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().map_err(|e| e.to_string())?;
    let body = request(&args)?;
    // Registered before anything is launched (tokio's ctrl_c() would only listen from its first poll, and
    // a Ctrl-C before that would kill the process without asking).
    let mut interrupt =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).map_err(|e| format!("cannot listen for Ctrl-C: {e}"))?;
    let r = call(http.post(format!("{base}/api/v1/experiments")).bearer_auth(&args.api.token).json(&body), "launch").await?;
    let answer: JsonLaunchAnswer = serde_json::from_value(r).map_err(|e| format!("launch: the server's answer is not a launch's: {e}"))?;
    let JsonLaunched { id, url, .. } = match answer {
        JsonLaunchAnswer::DryRun(dry) => {
            match args.format {
                PlanFormat::Json => println!("{}", serde_json::to_string_pretty(&dry.plan).map_err(|e| e.to_string())?),
                PlanFormat::Text => print!("{}", plan_text(&dry.plan)),
            }
            return Ok(0);
        }
        JsonLaunchAnswer::Launched(launched) => launched,
    };
    println!("launched experiment {id}: {url}");
    if !args.wait {
        return Ok(0);
    }
    let started = Instant::now();
    let mut progress = Progress::new();
    loop {
        let answer = call(http.get(format!("{base}/api/v1/experiments/{id}")).bearer_auth(&args.api.token), "status").await?;
        let e: JsonExperiment =
            serde_json::from_value(answer).map_err(|e| format!("status: the server's answer is not an experiment: {e}"))?;
        let ended = e.trials.iter().filter(|t| !matches!(t.state, TrialState::Queued | TrialState::Running)).count();
        let status = e.summary.status;
        progress.show(started.elapsed(), status.as_str(), ended, e.trials.len());
        match status {
            ExperimentStatus::Judged => {
                progress.done();
                let Some(v) = e.summary.verdict else {
                    // Only a baseline run ends judged without a verdict: it was measured, not compared.
                    println!("measured: a baseline run has no verdict; its levels are in the suite's trends\n{url}");
                    return Ok(judge::ExitCode::Ok.code());
                };
                println!("verdict: {}", v.as_str());
                for reason in &e.reasons {
                    println!("  - {}", reason.lines().next().unwrap_or_default());
                }
                println!("{url}");
                if let Some(path) = &args.comment_file {
                    let text = comment(&http, &base, &args.api.token, id).await?;
                    std::fs::write(path, text).map_err(|e| format!("--comment-file {}: {e}", path.display()))?;
                    println!("comment written to {}", path.display());
                }
                return Ok(v.exit_code().code());
            }
            ExperimentStatus::Cancelled => {
                progress.done();
                println!("cancelled: no verdict\n{url}");
                return Ok(judge::ExitCode::NoVerdict.code());
            }
            ExperimentStatus::Errored => return Err(format!("experiment {id} could not be judged (errored); see {url}")),
            _ => {}
        }
        if started.elapsed() > Duration::from_secs(args.timeout_secs) {
            return Err(format!("gave up waiting after {} s; experiment {id} goes on: {url}", args.timeout_secs));
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            _ = interrupt.recv() => {
                progress.done();
                return interrupted(&http, &base, &args.api.token, id, &url).await;
            }
        }
    }
}

/// Ctrl-C while waiting: on a terminal, ask whether to cancel the experiment; otherwise (CI) leave it
/// running and say so — stopping a colleague's measurement needs a yes.
async fn interrupted(http: &reqwest::Client, base: &str, token: &str, id: i64, url: &str) -> Result<i32, String> {
    use std::io::{BufRead, IsTerminal, Write};
    let ask = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let cancel = ask && {
        eprint!("\ninterrupted: cancel experiment {id} on the server too? [y/N] ");
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        matches!(answer.trim(), "y" | "Y" | "yes")
    };
    if !cancel {
        return Err(format!("interrupted; experiment {id} goes on: {url}"));
    }
    call(http.post(format!("{base}/api/v1/experiments/{id}/cancel")).bearer_auth(token), "cancel").await?;
    println!("cancelled experiment {id}: {url}");
    Ok(judge::ExitCode::NoVerdict.code())
}

/// Progress while waiting: a redrawn bar on a terminal, a plain line per change otherwise (CI logs).
struct Progress {
    tty: bool,
    last: String,
}

impl Progress {
    fn new() -> Progress {
        use std::io::IsTerminal;
        Progress { tty: std::io::stdout().is_terminal(), last: String::new() }
    }

    fn show(&mut self, elapsed: Duration, status: &str, ended: usize, total: usize) {
        use std::io::Write;
        let line = format!("{status}: {ended}/{total} trials ended");
        if self.tty {
            let width = 30;
            let filled = (ended * width).checked_div(total).unwrap_or(0);
            print!("\r[{}{}] {line}, {:.0} s   ", "#".repeat(filled), ".".repeat(width - filled), elapsed.as_secs_f64());
            let _ = std::io::stdout().flush();
        } else if line != self.last {
            println!("[{:>5.0} s] {line}", elapsed.as_secs_f64());
        }
        self.last = line;
    }

    fn done(&self) {
        if self.tty {
            println!();
        }
    }
}

/// The pull-request comment of a judged experiment, with a new share link in its links.
/// The pull-request comment, as the server makes it for the page's "Copy PR comment" too (with the
/// experiment's comment link when this token may share it).
async fn comment(http: &reqwest::Client, base: &str, token: &str, id: i64) -> Result<String, String> {
    let answer = call(http.post(format!("{base}/api/v1/experiments/{id}/comment")).bearer_auth(token), "comment").await?;
    let c: wire::share::JsonComment =
        serde_json::from_value(answer).map_err(|e| format!("comment: the server's answer is not a comment: {e}"))?;
    if let Some(why) = &c.no_link_why {
        eprintln!("{why}");
    }
    Ok(c.markdown)
}

pub fn run_launch(args: LaunchArgs) -> Result<i32, String> {
    block_on(launch(args))
}


/// `--order`: one of the order's API spellings.
fn parse_order(s: &str) -> Result<wire::launch::TrialOrder, String> {
    serde_json::from_value(serde_json::Value::String(s.to_string()))
        .map_err(|_| format!("{s:?}: use interleaved (balanced), abba, blocked or control_first"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        launch: LaunchArgs,
    }

    fn body(extra: &[&str]) -> Result<Value, String> {
        let mut argv = vec!["arbiter", "--server", "http://x", "--token", "t", "--suite", "s", "--treatment-ref", "feature"];
        argv.extend_from_slice(extra);
        request(&Cli::try_parse_from(argv).map_err(|e| e.to_string())?.launch).map(|r| serde_json::to_value(r).unwrap())
    }

    #[test]
    fn reuse_baseline_takes_latest_or_an_id_and_never_a_control_ref() {
        assert_eq!(body(&["--reuse-baseline", "latest"]).unwrap()["reuse_baseline"], "latest");
        assert_eq!(body(&["--reuse-baseline", "12"]).unwrap()["reuse_baseline"], 12);
        assert!(body(&["--reuse-baseline", "newest"]).unwrap_err().contains("give `latest` or a baseline's experiment id"));
        assert!(body(&["--reuse-baseline", "latest", "--control-ref", "main"]).unwrap_err().contains("cannot be used with"));
        assert!(body(&[]).unwrap().get("reuse_baseline").is_none());
    }

    #[test]
    fn baseline_measures_one_ref_with_no_control() {
        assert_eq!(body(&["--baseline"]).unwrap()["baseline"], true);
        assert!(body(&[]).unwrap().get("baseline").is_none());
        assert!(body(&["--baseline", "--control-ref", "main"]).unwrap_err().contains("cannot be used with"));
        assert!(body(&["--baseline", "--reuse-baseline", "latest"]).unwrap_err().contains("cannot be used with"));
        assert!(body(&["--baseline", "--treatment-ref", "extra=topic"]).unwrap_err().contains("give a single --treatment-ref"));
    }
}
