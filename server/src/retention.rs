//! Retention: how long the data dir keeps trial logs, other experiment files, worktrees and cached
//! binaries, and the pruning that applies it. A file that a stored experiment links to (a row in the
//! `artifacts` table) is never deleted, nor the worktree of an experiment that has not finished.

use crate::cli::RetentionArgs;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use store::Store;

const DAY: Duration = Duration::from_secs(86_400);

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retention {
    pub logs: Duration,
    pub artifacts: Duration,
    pub worktrees: Duration,
    pub binaries: Duration,
}

impl Retention {
    pub fn from_args(a: &RetentionArgs) -> Retention {
        let days = |d: u32| DAY * d;
        Retention {
            logs: days(a.retain_logs_days),
            artifacts: days(a.retain_artifacts_days),
            worktrees: days(a.retain_worktrees_days),
            binaries: days(a.retain_binaries_days),
        }
    }
}

#[derive(Debug, Default, PartialEq)]
pub struct PruneReport {
    /// Paths deleted (or, on a dry run, that would be), relative to the data dir.
    pub deleted: Vec<String>,
    pub bytes: u64,
    /// Old files kept because a stored experiment links to them.
    pub kept_linked: usize,
}

fn age(meta: &std::fs::Metadata, now: SystemTime) -> Duration {
    meta.modified().ok().and_then(|m| now.duration_since(m).ok()).unwrap_or_default()
}

fn relative(data_dir: &Path, p: &Path) -> String {
    p.strip_prefix(data_dir).unwrap_or(p).to_string_lossy().replace('\\', "/")
}

/// Every regular file under `dir` (symlinks are not followed, so pruning never leaves the data dir).
fn files_under(dir: &Path, out: &mut Vec<(PathBuf, std::fs::Metadata)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let Ok(meta) = entry.path().symlink_metadata() else { continue };
        if meta.is_dir() {
            files_under(&entry.path(), out);
        } else {
            out.push((entry.path(), meta));
        }
    }
}

fn dir_size(dir: &Path) -> u64 {
    let mut files = Vec::new();
    files_under(dir, &mut files);
    files.iter().map(|(_, m)| m.len()).sum()
}

/// Applies `retention` to `data_dir` as of `now`.
pub async fn prune(data_dir: &Path, store: &Store, retention: &Retention, now: SystemTime, dry_run: bool) -> Result<PruneReport, String> {
    let linked: HashSet<String> = store.linked_artifact_paths().await.map_err(|e| e.to_string())?.into_iter().collect();
    let unfinished: HashSet<String> =
        store.unfinished_experiment_ids().await.map_err(|e| e.to_string())?.into_iter().map(|id| id.to_string()).collect();
    // Walking and deleting files blocks: off the async threads.
    let (data_dir, retention) = (data_dir.to_path_buf(), *retention);
    tokio::task::spawn_blocking(move || prune_files(&data_dir, &linked, &unfinished, &retention, now, dry_run))
        .await
        .map_err(|e| format!("pruning stopped: {e}"))
}

fn prune_files(
    data_dir: &Path,
    linked: &HashSet<String>,
    unfinished: &HashSet<String>,
    retention: &Retention,
    now: SystemTime,
    dry_run: bool,
) -> PruneReport {
    let mut report = PruneReport::default();
    let remove_file = |path: &Path, meta: &std::fs::Metadata, report: &mut PruneReport| {
        let rel = relative(data_dir, path);
        if linked.contains(&rel) {
            report.kept_linked += 1;
            return;
        }
        if dry_run || std::fs::remove_file(path).is_ok() {
            report.bytes += meta.len();
            report.deleted.push(rel);
        }
    };
    // Experiment files: logs/ by the log limit, everything else by the artifact limit.
    let mut files = Vec::new();
    files_under(&data_dir.join("experiments"), &mut files);
    for (path, meta) in &files {
        let rel = relative(data_dir, path);
        let is_log = rel.split('/').nth(2) == Some("logs");
        let limit = if is_log { retention.logs } else { retention.artifacts };
        if age(meta, now) > limit {
            remove_file(path, meta, &mut report);
        }
    }
    // Cached binaries.
    let mut files = Vec::new();
    files_under(&data_dir.join("cache"), &mut files);
    for (path, meta) in &files {
        if age(meta, now) > retention.binaries {
            remove_file(path, meta, &mut report);
        }
    }
    // Worktrees: `worktrees/{experiment id}-…`, whole directories, only once the experiment finished.
    if let Ok(entries) = std::fs::read_dir(data_dir.join("worktrees")) {
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = path.symlink_metadata() else { continue };
            let name = entry.file_name().to_string_lossy().to_string();
            let experiment = name.split('-').next().unwrap_or("");
            if !meta.is_dir() || unfinished.contains(experiment) || age(&meta, now) <= retention.worktrees {
                continue;
            }
            let bytes = dir_size(&path);
            if !dry_run {
                // A capped worktree's overlay comes off first: deleting through it would only hide files.
                engine::queue::mounts::uncap_worktree(data_dir, &path);
            }
            if dry_run || std::fs::remove_dir_all(&path).is_ok() {
                report.bytes += bytes;
                report.deleted.push(relative(data_dir, &path));
            }
        }
    }
    report.deleted.sort();
    report
}

/// Prunes every `period` until the task is aborted.
pub fn spawn(data_dir: PathBuf, store: Store, retention: Retention, period: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        loop {
            tick.tick().await;
            match prune(&data_dir, &store, &retention, SystemTime::now(), false).await {
                Ok(r) if !r.deleted.is_empty() => {
                    tracing::info!(files = r.deleted.len(), bytes = r.bytes, kept_linked = r.kept_linked, "pruned")
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "pruning failed"),
            }
        }
    })
}

/// `arbiter prune [--dry-run]`.
pub async fn run(args: crate::cli::PruneArgs) -> Result<i32, String> {
    let (data_dir, url) = args.store.resolve().map_err(|e| e.to_string())?;
    let store = Store::open(&url).await.map_err(|e| e.to_string())?;
    let report = prune(&data_dir, &store, &Retention::from_args(&args.retention), SystemTime::now(), args.dry_run).await?;
    store.close().await;
    let verb = if args.dry_run { "would delete" } else { "deleted" };
    for p in &report.deleted {
        println!("{verb} {p}");
    }
    println!(
        "{verb} {} paths, {} bytes; kept {} old files that experiments link to",
        report.deleted.len(),
        report.bytes,
        report.kept_linked
    );
    Ok(0)
}
