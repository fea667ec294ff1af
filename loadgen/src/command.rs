//! `arbiter load`: the load driver standalone. Keys come from the environment
//! (`ARBITER_S3_ACCESS_KEY`, `ARBITER_S3_SECRET_KEY`) or a credentials file, never from the command line.

use super::{parse_duration, run, LoadSpec, Workload};
use clap::builder::TypedValueParser as _;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct LoadArgs {
    /// The S3 endpoint, e.g. http://127.0.0.1:9000.
    #[arg(long)]
    pub endpoint: String,
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(["put", "get", "mixed"]).map(|w| w.parse::<Workload>().expect("a listed workload")))]
    pub workload: Workload,
    /// Object size, e.g. 4KiB, 4MiB, 10MiB.
    #[arg(long)]
    pub size: String,
    #[arg(long, default_value_t = 8)]
    pub concurrency: u32,
    /// The measured window, e.g. 10s.
    #[arg(long, default_value = "10s")]
    pub duration: String,
    /// Requests before the measured window, not counted.
    #[arg(long, default_value = "1s")]
    pub warmup: String,
    #[arg(long, default_value = "arbiter-load")]
    pub bucket: String,
    #[arg(long, default_value = "us-east-1")]
    pub region: String,
    /// A file with `access_key=…` and `secret_key=…` lines (instead of the environment).
    #[arg(long)]
    pub credentials_file: Option<PathBuf>,
    /// Leave the objects the run made in the bucket.
    #[arg(long)]
    pub keep_objects: bool,
    /// Print the report as JSON (the form a warp phase stores).
    #[arg(long)]
    pub json: bool,
}

/// `access_key=…` / `secret_key=…` lines (`#` comments and blank lines allowed).
pub fn read_credentials_file(path: &Path) -> Result<(String, String), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("credentials file {}: {e}", path.display()))?;
    let (mut access, mut secret) = (None, None);
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
            Some(("access_key", v)) if !v.is_empty() => access = Some(v.to_string()),
            Some(("secret_key", v)) if !v.is_empty() => secret = Some(v.to_string()),
            _ => return Err(format!("credentials file {}, line {}: expected access_key=… or secret_key=…", path.display(), i + 1)),
        }
    }
    match (access, secret) {
        (Some(a), Some(s)) => Ok((a, s)),
        _ => Err(format!("credentials file {}: give both access_key=… and secret_key=…", path.display())),
    }
}

pub fn credentials(file: Option<&Path>) -> Result<(String, String), String> {
    if let Some(f) = file {
        return read_credentials_file(f);
    }
    let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
    match (var("ARBITER_S3_ACCESS_KEY"), var("ARBITER_S3_SECRET_KEY")) {
        (Some(a), Some(s)) => Ok((a, s)),
        _ => Err("give the S3 keys in ARBITER_S3_ACCESS_KEY and ARBITER_S3_SECRET_KEY, or --credentials-file".into()),
    }
}

pub fn run_load(args: LoadArgs) -> Result<i32, String> {
    let (access_key, secret_key) = credentials(args.credentials_file.as_deref())?;
    let size = judge::units::parse_size(&args.size).map_err(|e| format!("--size {:?}: {e}", args.size))?;
    if !(1.0..=(5u64 << 30) as f64).contains(&size) {
        return Err(format!("--size {:?}: give 1 B to 5 GiB", args.size));
    }
    if !(1..=1024).contains(&args.concurrency) {
        return Err(format!("--concurrency {}: give 1–1024", args.concurrency));
    }
    let spec = LoadSpec {
        endpoint: args.endpoint.clone(),
        bucket: args.bucket.clone(),
        region: args.region.clone(),
        access_key,
        secret_key,
        workload: args.workload,
        size: size as u64,
        concurrency: args.concurrency,
        duration: parse_duration(&args.duration).map_err(|e| format!("--duration: {e}"))?,
        warmup: parse_duration(&args.warmup).map_err(|e| format!("--warmup: {e}"))?,
        keep_objects: args.keep_objects,
    };
    // One thread: at these rates it keeps up, and it spares the cross-thread wake-ups a work-stealing
    // runtime pays per request (the driver must cost the machine as little as it can).
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let report = runtime.block_on(run(&spec))?;
    if args.json {
        println!("{}", serde_json::to_string(&report).map_err(|e| e.to_string())?);
    } else {
        print!("{}", report.to_text());
    }
    // Like warp: the run itself succeeded; failed requests are in the report.
    Ok(0)
}
