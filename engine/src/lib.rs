//! Arbiter's experiment engine: a launch request becomes a plan and queued trials (`launch`), the trial
//! queue runs them — locally under a supervisor, on a cluster through the suite's command templates, or
//! as warp phases (`queue`, `warp`) — an ended experiment is judged by the pure core (`lifecycle`, `judging`), and
//! its notifications are delivered (`notify`); the suites' cron schedules launch baselines
//! (`schedules`). Everything goes through one explicit handle, [`Engine`]. No HTTP, no pages: the server
//! holds an `Engine` and serves it.

pub mod adaptive;
pub mod bisect;
pub mod lifecycle;
pub mod error;
pub mod import;
pub mod judging;
pub mod launch;
pub mod notify;
pub mod queue;
pub mod rejudge;
pub mod schedules;
pub mod warp;

pub use error::EngineError;
pub use queue::TrialQueue;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use store::Store;

/// What the engine works with, passed explicitly: the store, the data folder (logs, reports, worktrees),
/// the base of the links it prints and sends, and the trial queue's runtime handle.
#[derive(Clone, Debug)]
pub struct Engine {
    pub store: Store,
    pub data_dir: PathBuf,
    /// The base of experiment links in notifications and launch answers, e.g. `https://arbiter.example`.
    pub base_url: String,
    pub queue: Arc<TrialQueue>,
}

/// Stops an experiment: queued trials are cancelled, running ones stopped (their process groups), and no
/// verdict is given. Conflict when it has already ended. Answers (queued trials cancelled, running stopping).
pub async fn cancel_experiment(engine: &Engine, id: i64) -> Result<(u64, usize), EngineError> {
    use judge::ExperimentStatus as S;
    let summary = engine.store.experiment_summary(id).await?;
    if matches!(summary.status, S::Judged | S::Errored | S::Cancelled) {
        return Err(EngineError::Conflict(format!("experiment {id} has already ended ({})", summary.status.as_str())));
    }
    engine.store.set_experiment_status(id, S::Cancelled).await?;
    let queued = engine.store.cancel_queued_trials(id).await?;
    let running = engine.queue.cancel_running(id);
    // No trial is left to end it: conclude it now (worktrees go; a bisection it is a step of moves on).
    // Spawned: a bisection's cancel holds the bisection lock the conclusion's hook takes.
    if running == 0 {
        let engine = engine.clone();
        tokio::spawn(async move { lifecycle::experiment_step(&engine, id).await });
    }
    Ok((queued, running))
}

/// `data-dir/experiments/{id}`: where an experiment's files live.
pub fn experiment_dir(data_dir: &Path, id: i64) -> PathBuf {
    data_dir.join("experiments").join(id.to_string())
}

/// SHA-256, hex-encoded: token digests, fingerprint keys, mirror folder names.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// `n` random hex digits from the operating system's generator (one-off S3 credentials).
pub fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n.div_ceil(2)];
    getrandom::fill(&mut bytes).expect("the operating system's random generator");
    bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()[..n].to_string()
}

/// The last `lines` lines of a file, read from at most its last `max_bytes`; empty when it does not
/// exist (yet). Logs grow without bound, so nothing reads them whole.
pub fn tail(path: &std::path::Path, lines: usize, max_bytes: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else { return String::new() };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(max_bytes)));
    let mut bytes = Vec::new();
    let _ = f.take(max_bytes).read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Copies the loaded suite files into the store (creating or replacing each by name). A suite last
/// saved from the suites page stays as saved: its file is not loaded over it (a warning says so).
pub async fn sync_suites(store: &Store, suites: &[suite::LoadedSuite]) -> Result<(), String> {
    let edited: Vec<String> = store
        .suites()
        .await
        .map_err(|e| format!("cannot read the stored suites: {e}"))?
        .into_iter()
        .filter(|s| s.source == "ui")
        .map(|s| s.name)
        .collect();
    for s in suites {
        for w in s.definition.notify.iter().flat_map(suite::notify::NotifySpec::warnings) {
            tracing::warn!(suite = %s.definition.name, file = %s.path.display(), "{w}");
        }
        if edited.contains(&s.definition.name) {
            tracing::warn!(suite = %s.definition.name, file = %s.path.display(), "the suite was edited on the suites page; its file is not loaded over it");
            continue;
        }
        let json = serde_json::to_value(&s.definition).map_err(|e| e.to_string())?;
        store
            .upsert_suite(&s.definition.name, s.definition.kind, &json, &format!("file:{}", s.path.display()), s.text.as_deref())
            .await
            .map_err(|e| format!("cannot store suite {:?}: {e}", s.definition.name))?;
    }
    Ok(())
}
