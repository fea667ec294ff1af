//! The command line. Every flag of `serve` can also come from the environment.

use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(name = "arbiter", version, about = "Launch and judge A/B performance experiments")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the web app and API.
    Serve(ServeArgs),
    /// Judge pipeline A/B trials from zephyr.stage rows (exit 0 pass/tradeoff, 1 regression, 3 inconclusive).
    Compare(CompareArgs),
    /// Write a noise profile from same-code (A/A) trials, for `compare --noise`.
    Calibrate(CalibrateArgs),
    /// Measure the pipeline verdict's error rates and power on simulated zephyr.stage rows (a benchmark-style
    /// command: the full table takes minutes).
    Simulate(crate::simulate::SimulateArgs),
    /// Gate warp A/B results from baseline_compare.csv files (a drop-in for the rustfs hotpath gate).
    Gate(GateArgs),
    /// Write the 25-column baseline_compare.csv from two median_summary.csv files, as the upstream driver does.
    WarpCompare(WarpCompareArgs),
    /// Read a warp text report or JSON aggregate and print every operation's results as JSON.
    WarpParse(WarpParseArgs),
    /// Run the built-in S3 load driver (put, get or mixed) against an endpoint and print obj/s,
    /// throughput and latencies (keys in ARBITER_S3_ACCESS_KEY / ARBITER_S3_SECRET_KEY).
    Load(loadgen::command::LoadArgs),
    /// Launch an experiment on a running Arbiter (for CI): --wait prints progress and the verdict and
    /// exits 0 pass/WARN, 1 regression/FAIL, 3 inconclusive, 4 cancelled, 2 on any error.
    Launch(crate::client::LaunchArgs),
    /// Find the commit that moved a metric between a good and a bad commit (a bisection on a running
    /// Arbiter): --dry-run lists the commits and the expected steps; --wait prints each step and the
    /// culprit; exits 0 culprit or no culprit, 3 ambiguous, 4 cancelled, 2 on any error.
    Bisect(crate::bisect_client::BisectArgs),
    /// Store results measured elsewhere as a judged experiment (zephyr.stage rows, or warp
    /// baseline_compare.csv files), with a page, charts and a share link. Writes to the store directly.
    #[command(subcommand)]
    Import(ImportCommand),
    /// Manage user accounts.
    #[command(subcommand)]
    User(UserCommand),
    /// Manage API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Delete logs, artifacts, worktrees and cached binaries past their retention (what a stored
    /// experiment links to is kept). `serve` runs this every hour.
    Prune(PruneArgs),
    /// Judge pipeline experiments again by the current method on their stored rows (an admin's command
    /// on the store): --all takes every one whose verdict is of an older method; --dry-run prints what
    /// would change and stores nothing. New verdicts are kept beside the old ones and audited.
    Rejudge(RejudgeArgs),
    /// Run one trial's command under supervision (used by `serve`; not for people).
    #[command(hide = true)]
    Supervise(engine::queue::supervise::SuperviseArgs),
    /// Inside a trial's sandbox: relay 127.0.0.1:PORT to the supervisor's socket, run the command
    /// (used by `serve`; not for people).
    #[command(hide = true)]
    SandboxRelay(SandboxRelayArgs),
    /// Join a sandboxed server's network namespace and run a command there, or check its health (the warp
    /// load driver's way to the server under test; used by `serve`; not for people).
    #[command(hide = true)]
    SandboxEnter(SandboxEnterArgs),
    /// Host Arbiter's own finelog server: its write and query gates, and finelog in a sandbox of its own
    /// (used by `serve`; not for people).
    #[command(hide = true)]
    FinelogServe(engine::queue::owned_finelog::HostArgs),
    /// Inside finelog's sandbox: become its user, relay a Unix socket to finelog (used by
    /// `finelog-serve`; not for people).
    #[command(hide = true)]
    FinelogInner(engine::queue::owned_finelog::InnerArgs),
}

#[derive(Debug, Clone, Args)]
pub struct SandboxEnterArgs {
    /// A process inside the sandbox.
    #[arg(long)]
    pub pid: u32,
    /// Exit 0 when this `http://127.0.0.1:PORT/path` answers below 500, else 1.
    #[arg(long, conflicts_with = "argv")]
    pub health: Option<String>,
    #[arg(last = true, required_unless_present = "health")]
    pub argv: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct SandboxRelayArgs {
    #[arg(long, requires = "socket")]
    pub port: Option<u16>,
    #[arg(long, requires = "port")]
    pub socket: Option<PathBuf>,
    /// Become this host user (with the seccomp filter) before running the command.
    #[arg(long)]
    pub user: Option<String>,
    #[arg(last = true, required = true)]
    pub argv: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a user. The password comes from a prompt, or the first line of standard input.
    Add(UserAddArgs),
}

#[derive(Debug, Clone, Args)]
pub struct UserAddArgs {
    /// The user name (letters, digits, '-', '_', '.', '@').
    pub name: String,
    /// viewer (read), launcher (read, launch), or admin (everything).
    #[arg(long)]
    pub role: String,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create an API token for a user; it is printed once and only its hash is stored.
    Create(TokenCreateArgs),
    /// List API tokens (name, role, created, expires, last used, revoked), never their secrets.
    List(TokenListArgs),
    /// Revoke an API token by id.
    Revoke(TokenRevokeArgs),
}

#[derive(Debug, Clone, Args)]
pub struct TokenListArgs {
    /// Only this user's tokens.
    #[arg(long)]
    pub user: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Clone, Args)]
pub struct TokenRevokeArgs {
    /// The token's id, as `token list` shows it.
    pub id: i64,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Clone, Args)]
pub struct TokenCreateArgs {
    /// The user the token acts for (a launcher or an admin).
    #[arg(long)]
    pub user: String,
    /// What the token is for, e.g. "ci-nightly".
    #[arg(long)]
    pub name: String,
    /// The token's role; at most its user's.
    #[arg(long, default_value = "launcher")]
    pub role: String,
    /// Days until it expires (default: never).
    #[arg(long)]
    pub expires_in_days: Option<u32>,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Clone, Args)]
pub struct WarpParseArgs {
    /// warp's stdout (text report) or its `--json` output.
    pub file: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct WarpCompareArgs {
    /// The baseline phase's median_summary.csv.
    #[arg(long, value_name = "FILE")]
    pub baseline: PathBuf,
    /// The candidate phase's median_summary.csv.
    #[arg(long, value_name = "FILE")]
    pub candidate: PathBuf,
    /// Write here instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GateFormat {
    Markdown,
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct GateArgs {
    /// A baseline_compare.csv (12- or 25-column schema). Repeat for several cells; the worst decides.
    #[arg(long = "compare-csv", value_name = "FILE")]
    pub compare_csv: Vec<PathBuf>,
    /// Label FILE's rows NAME (e.g. put-4KiB/sync-on=put.csv); the file is gated too.
    #[arg(long = "label", value_name = "NAME=FILE")]
    pub label: Vec<String>,
    /// A cell from the driver's round files: NAME=BASELINE_ROUNDS.csv,CANDIDATE_ROUNDS.csv
    /// (round_results.csv), summarised and compared as the driver does.
    #[arg(long = "rounds", value_name = "NAME=BASELINE,CANDIDATE")]
    pub rounds: Vec<String>,
    /// A regression beyond this percentage fails.
    #[arg(long, default_value_t = 10.0)]
    pub fail_pct: f64,
    /// A regression beyond this percentage warns.
    #[arg(long, default_value_t = 5.0)]
    pub warn_pct: f64,
    /// Budgets of p90/p99 latency, when they differ from --fail-pct / --warn-pct.
    #[arg(long)]
    pub tail_fail_pct: Option<f64>,
    #[arg(long)]
    pub tail_warn_pct: Option<f64>,
    /// Turn an overall FAIL into an exempted WARN (exit 0); never exempts MISSING evidence.
    #[arg(long)]
    pub allow_regression: bool,
    /// Why the regression is accepted (shown in gate.md).
    #[arg(long, default_value = "deliberate correctness tradeoff")]
    pub exemption_reason: String,
    /// List MISSING cells and skip them instead of failing.
    #[arg(long)]
    pub allow_missing: bool,
    /// Validate tail and error evidence exactly as upstream's strict mode.
    #[arg(long, alias = "require-tail-error")]
    pub strict: bool,
    /// Also write gate.md here.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: GateFormat,
    /// Provenance: the load tool and its version.
    #[arg(long, value_name = "TEXT")]
    pub load_tool: Option<String>,
    /// Provenance: matrix parameters (duration, rounds, cooldown, concurrency, disks).
    #[arg(long, value_name = "TEXT")]
    pub matrix: Option<String>,
    /// Provenance: the baseline binary's path.
    #[arg(long, value_name = "PATH")]
    pub baseline_binary: Option<String>,
    /// Provenance: the candidate binary's path.
    #[arg(long, value_name = "PATH")]
    pub candidate_binary: Option<String>,
    /// Provenance: the baseline commit and where its binary came from ("SHA - binary cache").
    #[arg(long, value_name = "TEXT")]
    pub baseline_commit: Option<String>,
    /// Provenance: the candidate commit and where its binary came from ("SHA - source build").
    #[arg(long, value_name = "TEXT")]
    pub candidate_commit: Option<String>,
    /// Provenance: a free-form note. Repeatable.
    #[arg(long = "note", value_name = "TEXT")]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Json,
    Markdown,
    Table,
}

#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// zephyr.stage rows and which execution ids form each trial (the arguments of `compare`).
    Pipeline(Box<ImportPipelineArgs>),
    /// warp baseline_compare.csv files (the arguments of `gate`).
    Warp(Box<ImportWarpArgs>),
}

/// What an imported experiment is called and where it came from.
#[derive(Debug, Clone, Args)]
pub struct ImportMeta {
    #[command(flatten)]
    pub store: StoreArgs,
    /// The experiment's title.
    #[arg(long)]
    pub title: String,
    /// The control's git ref (e.g. the merge-base's branch).
    #[arg(long, value_name = "REF")]
    pub control_ref: Option<String>,
    /// The treatment's git ref.
    #[arg(long, value_name = "REF")]
    pub treatment_ref: Option<String>,
    #[arg(long, value_name = "SHA")]
    pub control_sha: Option<String>,
    #[arg(long, value_name = "SHA")]
    pub treatment_sha: Option<String>,
    /// The user it is recorded as launched by (their launcher rights then let them share it).
    #[arg(long, value_name = "USER")]
    pub by: Option<String>,
    /// File it under this suite (same kind): it then joins the suite's trends.
    #[arg(long, value_name = "NAME")]
    pub suite: Option<String>,
    /// Where suite files are read from when the suite is not in the store yet.
    #[arg(long, env = "ARBITER_SUITES_DIR", default_value = "suites", value_name = "DIR")]
    pub suites_dir: std::path::PathBuf,
    /// When the results were measured (UTC: 2026-11-30 or 2026-11-30T03:15:00Z): the experiment and its
    /// trend points are dated then, so a backlog of nightly results lands on the trend where it happened.
    #[arg(long, value_name = "WHEN")]
    pub measured_at: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct ImportPipelineArgs {
    #[command(flatten)]
    pub meta: ImportMeta,
    #[command(flatten)]
    pub compare: CompareArgs,
    /// Keep this report as the verdict instead of judging the rows now: the JSON `arbiter compare --json`
    /// writes, or an experiment's report.json — e.g. history moved from another (perhaps older) Arbiter.
    /// Its arms must be the import's. The page then names the method that judged it, and `arbiter
    /// rejudge` (or the page's button) judges the stored rows by the current one.
    #[arg(long, value_name = "FILE")]
    pub judged_report: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ImportWarpArgs {
    #[command(flatten)]
    pub meta: ImportMeta,
    #[command(flatten)]
    pub gate: GateArgs,
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// zephyr.stage rows: CSV with a header, a JSON array, or JSON lines. Repeat to merge files.
    #[arg(long = "rows", value_name = "FILE", required_unless_present = "finelog_url")]
    pub rows: Vec<PathBuf>,
    /// Read the trials' zephyr.stage rows from this finelog server (by their execution ids) instead of,
    /// or besides, --rows files.
    #[arg(long, value_name = "URL")]
    pub finelog_url: Option<String>,
    /// One control trial: execution ids, comma-separated, whose rows are summed. Repeat per trial.
    #[arg(long = "control", value_name = "IDS", required = true)]
    pub control: Vec<String>,
    /// One treatment trial, optionally of a named arm: [NAME=]IDS. Repeat per trial.
    #[arg(long = "treatment", value_name = "[NAME=]IDS", required = true)]
    pub treatment: Vec<String>,
    /// The worker's RAM: a peak above it is a regression. Bytes, or KiB/MiB/GiB/TiB, KB/MB/GB/TB.
    #[arg(long, value_name = "SIZE")]
    pub worker_ram: Option<String>,
    /// Items and bytes must match within this percentage.
    #[arg(long, value_name = "PCT", default_value_t = 0.5)]
    pub equivalence_tolerance: f64,
    /// Compare CPU per item (or byte) when the arms processed different amounts of work.
    #[arg(long)]
    pub accept_workload_mismatch: bool,
    /// A noise profile written by `arbiter calibrate`: the spread of each stage (never the margin).
    #[arg(long, value_name = "FILE")]
    pub noise: Option<PathBuf>,
    /// The smallest CPU change that matters, in percent: decides only "flat" and "negligible".
    #[arg(long, value_name = "PCT", default_value_t = judge::pipeline::method::DEFAULT_CPU_MARGIN_PCT)]
    pub cpu_margin: f64,
    /// The smallest summed-elapsed change that matters, in percent.
    #[arg(long, value_name = "PCT", default_value_t = judge::pipeline::method::DEFAULT_ELAPSED_MARGIN_PCT)]
    pub elapsed_margin: f64,
    /// The experiment's family-wise error rate: the chance that a same-code comparison claims any change.
    #[arg(long, value_name = "RATE", default_value_t = judge::pipeline::method::ALPHA)]
    pub alpha: f64,
    /// Pair the i-th --control trial with the i-th trial of each treatment arm (they ran side by side,
    /// interleaved or ABBA): the paired log-ratio removes what adjacent trials share.
    #[arg(long)]
    pub paired: bool,
    /// Which trial of each pair ran first, for the order covariate (with --paired or --sequential): one
    /// word a pair, `ct` (control first) or `tc` (treatment first), comma-separated — or `timestamps`,
    /// each trial's earliest row `ts` deciding. With both orders the change is adjusted for the order.
    #[arg(long, value_name = "ct,tc,…|timestamps")]
    pub order: Option<String>,
    /// The third answer's X, "no regression of X % or more", fixed before looking: a percent (at least
    /// --cpu-margin), or "off". Default: planned from the pairs given (--max-pairs with --sequential) and
    /// the noise profile's spread (or the default one).
    #[arg(long, value_name = "PCT|off")]
    pub no_regression: Option<String>,
    /// The cap on X: a planned X above it gives no third answer (inconclusive instead).
    #[arg(long, value_name = "PCT", default_value_t = judge::pipeline::method::DEFAULT_MAX_NO_REGRESSION_PCT)]
    pub max_no_regression: f64,
    /// Judge the pairs as the sequential design would have seen them: a look after each pair (the i-th
    /// --control with the i-th trial of each arm), stopping as soon as the verdict is settled; the report
    /// is the look it stopped at, and its `sequential` part says after which pair each metric was decided.
    #[arg(long)]
    pub sequential: bool,
    /// With --sequential: the trials ran in ABBA blocks (C T T C); pairs 2b and 2b+1 are judged as one block.
    #[arg(long, requires = "sequential")]
    pub abba: bool,
    /// With --sequential: the budget, in pairs (blocks with --abba); it stops there even if undecided.
    #[arg(long, value_name = "N", requires = "sequential")]
    pub max_pairs: Option<usize>,
    /// Output format; default json when stdout is not a terminal, else table.
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,
}

#[derive(Debug, Clone, Args)]
pub struct CalibrateArgs {
    /// zephyr.stage rows (as for compare).
    #[arg(long = "rows", value_name = "FILE", required = true)]
    pub rows: Vec<PathBuf>,
    /// One same-code trial: comma-separated execution ids. At least two.
    #[arg(long = "trial", value_name = "IDS", required = true)]
    pub trial: Vec<String>,
    /// The workload fingerprint the profile belongs to, as JSON.
    #[arg(long, value_name = "JSON")]
    pub fingerprint: Option<String>,
    /// Add these trials to an existing profile of the same fingerprint (their spreads are pooled) instead
    /// of starting a new one.
    #[arg(long, value_name = "PROFILE")]
    pub grow: Option<PathBuf>,
    /// Write the profile here instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Where the store is: shared by every command that opens it.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// Database URL: sqlite://PATH or postgres://USER@HOST:PORT/DB. Default: SQLite in the data dir.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,

    /// Where Arbiter keeps its SQLite database, logs and artifacts.
    #[arg(long, env = "ARBITER_DATA_DIR", default_value = ".arbiter")]
    pub data_dir: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "ARBITER_ADDR", default_value = "127.0.0.1:3000")]
    pub addr: SocketAddr,

    #[command(flatten)]
    pub store: StoreArgs,

    /// The built site (pkg/arbiter.js, pkg/arbiter.wasm, pkg/arbiter.css, favicon): scripts/build-site.sh output.
    #[arg(long, env = "LEPTOS_SITE_ROOT", default_value = "target/site")]
    pub site_root: PathBuf,

    /// The address users reach Arbiter at, e.g. https://arbiter.example.com: used in printed links and
    /// share links and as the only origin accepted on form posts. An https URL makes cookies Secure
    /// (for a TLS-terminating proxy in front of Arbiter).
    #[arg(long, env = "ARBITER_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// The finelog server trials report `zephyr.stage` rows to (http://HOST:PORT). Unset: Arbiter starts
    /// and owns a local one with the Python below.
    #[arg(long, env = "ARBITER_FINELOG_URL")]
    pub finelog_url: Option<String>,

    /// The Python (3.11, with marin-zephyr and marin-finelog-server) local pipeline suites run with
    /// (`{python}` in a suite's command) and Arbiter's own finelog runs on. Default: .venv/bin/python
    /// when it exists (scripts/setup.sh makes it).
    #[arg(long, env = "ARBITER_PYTHON")]
    pub python: Option<PathBuf>,

    /// Suite definitions (`*.toml`), loaded into the store at start-up.
    #[arg(long, env = "ARBITER_SUITES_DIR", default_value = "suites")]
    pub suites_dir: PathBuf,

    /// Run local pipeline trials without a sandbox when this host has none (no working bubblewrap): the
    /// code of every launched ref then runs as this server's user and can reach its data dir and
    /// database. Without it, such a host refuses local pipeline launches and says why at start.
    #[arg(long, env = "ARBITER_UNSANDBOXED_TRIALS")]
    pub unsandboxed_trials: bool,

    /// The most trials in flight on one cluster engine (its profile and environment name it), every
    /// suite and every server sharing this store together; each suite's `[cluster] max_parallel` bounds
    /// its own (default 4). Local trials run one at a time per host whatever this says.
    #[arg(long = "engine-cap", env = "ARBITER_ENGINE_CAP", default_value_t = engine::queue::DEFAULT_CLUSTER_CAP,
          value_parser = clap::value_parser!(i64).range(1..=256))]
    pub cluster_cap: i64,

    /// A reverse proxy (address or CIDR block, repeatable; comma-separated in the variable) whose
    /// X-Forwarded-For names the client: sign-in throttling then counts per real client, not per proxy.
    #[arg(long = "trusted-proxy", env = "ARBITER_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<crate::auth::client_addr::Cidr>,

    /// Sign a browser session out after this many hours without a request.
    #[arg(long, env = "ARBITER_SESSION_IDLE_HOURS", default_value_t = 12)]
    pub session_idle_hours: u32,

    /// Sign a browser session out this many hours after sign-in, however active.
    #[arg(long, env = "ARBITER_SESSION_MAX_HOURS", default_value_t = 168)]
    pub session_max_hours: u32,

    #[command(flatten)]
    pub retention: RetentionArgs,
}

/// How long files in the data dir are kept; a file a stored experiment links to is always kept.
#[derive(Debug, Clone, Args)]
pub struct RetentionArgs {
    /// Days to keep trial logs (data-dir/experiments/*/logs).
    #[arg(long, env = "ARBITER_RETAIN_LOGS_DAYS", default_value_t = 30)]
    pub retain_logs_days: u32,
    /// Days to keep other experiment files (data-dir/experiments/*/artifacts).
    #[arg(long, env = "ARBITER_RETAIN_ARTIFACTS_DAYS", default_value_t = 90)]
    pub retain_artifacts_days: u32,
    /// Days to keep git worktrees of finished experiments (data-dir/worktrees).
    #[arg(long, env = "ARBITER_RETAIN_WORKTREES_DAYS", default_value_t = 2)]
    pub retain_worktrees_days: u32,
    /// Days to keep cached binaries (data-dir/cache).
    #[arg(long, env = "ARBITER_RETAIN_BINARIES_DAYS", default_value_t = 14)]
    pub retain_binaries_days: u32,
}

#[derive(Debug, Clone, Args)]
pub struct RejudgeArgs {
    /// Every pipeline experiment whose latest verdict is of an older judging method.
    #[arg(long, conflicts_with = "id")]
    pub all: bool,
    /// One experiment (repeatable), whatever method judged it.
    #[arg(long)]
    pub id: Vec<i64>,
    /// Print what would change; store nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The user the new verdicts and the audit entries are recorded as asked for by.
    #[arg(long)]
    pub by: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Clone, Args)]
pub struct PruneArgs {
    /// Only list what would be deleted.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub retention: RetentionArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}
