//! The server binary of an arm: a prebuilt path from the suite, or built from the arm's SHA (with its
//! config diff) in its worktree and cached by SHA under `data-dir/cache/binaries/`. A cache hit skips
//! the build; which of the three happened goes into the provenance. The build is code from the branch:
//! it runs in the trial sandbox (`queue::sandbox`) with its worktree writable and no network, and what it
//! leaves must be a regular file (not a link to Arbiter's data) before Arbiter copies it into the cache.

use crate::launch::request::{worktree_dir, PlannedArm};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;
use suite::SuiteDefinition;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BinarySource {
    Prebuilt,
    CacheHit,
    Built,
}

impl BinarySource {
    pub fn describe(self) -> &'static str {
        match self {
            BinarySource::Prebuilt => "prebuilt binary from the suite",
            BinarySource::CacheHit => "binary cache hit (no build)",
            BinarySource::Built => "source build (now cached)",
        }
    }
}

pub use crate::warp::plan::planned_binary;

/// The arm's binary, building and caching it when needed (in the launch's sandbox, with the scratch folder
/// `scratch`); the build's output goes to `log`.
pub async fn ensure_binary(
    l: &crate::queue::runner::Launch<'_>,
    scratch: &str,
    repo_dir: &Path,
    experiment_id: i64,
    suite: &SuiteDefinition,
    arm: &PlannedArm,
    log: &mut std::fs::File,
) -> Result<(PathBuf, BinarySource), String> {
    let data_dir = l.data_dir;
    let warp = suite.warp.as_ref().ok_or("the suite has no [warp] table")?;
    let path = planned_binary(data_dir, suite, arm).ok_or("the suite names no binary for this arm")?;
    if warp.binaries.contains_key(&arm.name) {
        return match path.is_file() {
            true => Ok((path, BinarySource::Prebuilt)),
            false => Err(format!("the prebuilt binary of arm {:?}, {}, does not exist", arm.name, path.display())),
        };
    }
    if path.is_file() {
        // Touch it: the pruning job keeps cache entries by age of use.
        let _ = std::fs::File::options().append(true).open(&path).and_then(|f| f.set_modified(std::time::SystemTime::now()));
        // Cached by an older version with its build's mode: runnable by the user servers run as.
        let _ = std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755));
        return Ok((path, BinarySource::CacheHit));
    }
    let sandbox = l.sandbox.bwrap()?;
    let worktree = worktree_dir(data_dir, &experiment_id.to_string(), &arm.name);
    crate::queue::runner::ensure_worktree(repo_dir, &worktree, arm).await?;
    let _ = writeln!(log, "[arbiter] building {} at {} in {}: {:?}", arm.name, arm.sha, worktree.display(), warp.build);
    let mut argv = suite.render(
        &warp.build,
        &Default::default(),
        &[("worktree", worktree.to_string_lossy().into_owned()), ("sha", arm.sha.clone())].into_iter().collect(),
    )?;
    let homes = crate::queue::sandbox::toolchain_homes();
    if let Some(bwrap) = sandbox {
        let (identity, drop_to) = crate::queue::sandbox::Identity::of(l.trial_user);
        let view = crate::queue::sandbox::View {
            data_dir: data_dir.to_path_buf(),
            writable: vec![worktree.clone()],
            scratch: crate::queue::sandbox::scratch_dir(data_dir, scratch)?,
            readable: vec![],
            finelog: None,
            tie_to_parent: false,
            identity,
            remapped: vec![],
            home_inside: None,
            drop_to,
        };
        // As a pipeline trial: the build runs as the trial user, in folders that are its own.
        if let Some(user) = l.trial_user {
            crate::queue::runner::give_to(user, &worktree)?;
            crate::queue::runner::give_to(user, view.scratch.parent().unwrap_or(&view.scratch))?;
            let cap = crate::queue::runner::file_limit(suite);
            if let Some(backing) = crate::queue::mounts::cap_worktree_off_runtime(data_dir, &worktree, cap, user).await? {
                let _ = writeln!(log, "[arbiter] what the build writes in its worktree is capped at {} MiB ({backing:?})", cap >> 20);
            }
        }
        argv = crate::queue::sandbox::wrap(bwrap, l.supervisor, &view, &argv);
    }
    let mut cmd = tokio::process::Command::new(&argv[0]);
    cmd.args(&argv[1..]).current_dir(&worktree).kill_on_drop(true).stdin(std::process::Stdio::null());
    crate::queue::runner::clean_env(&mut cmd).envs(homes);
    let (out, err) = (log.try_clone().map_err(|e| e.to_string())?, log.try_clone().map_err(|e| e.to_string())?);
    cmd.stdout(out).stderr(err);
    // Its limits (queue::runner::warp_limits), in a control group of its own where the host gives one.
    let (limits, _) = crate::queue::runner::warp_limits(suite);
    let group = match crate::queue::cgroup::TrialGroup::create(&format!("arbiter-build-{scratch}-{}", crate::random_hex(8)), &limits) {
        Ok(g) => Some(g),
        Err(why) => {
            let _ = writeln!(log, "[arbiter] the build runs without its memory and process limits here: {why}");
            None
        }
    };
    let procs = crate::queue::cgroup::join_on_spawn(&mut cmd, group.as_ref(), None, Some(crate::queue::runner::file_limit(suite)));
    let spawned = cmd.spawn().map_err(|e| format!("cannot run the build {:?}: {e}", argv[0]));
    drop(procs);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            group.into_iter().for_each(crate::queue::cgroup::TrialGroup::remove_in_background);
            return Err(e);
        }
    };
    let limit = Duration::from_secs(u64::from(suite.timeout_minutes) * 60);
    let waited = tokio::time::timeout(limit, child.wait()).await;
    let hit = group.as_ref().and_then(|g| g.hit());
    group.into_iter().for_each(crate::queue::cgroup::TrialGroup::remove_in_background);
    let status = match waited {
        Ok(s) => s.map_err(|e| e.to_string())?,
        Err(_) => return Err(format!("the build did not finish within the suite's {} minutes", suite.timeout_minutes)),
    };
    if !status.success() {
        if let Some(hit) = hit {
            return Err(format!("the build of {} stopped at its {}", arm.name, hit.words(&limits)));
        }
        return Err(format!("the build of {} at {} failed ({status}); see the phase log", arm.name, judge::units::short_sha(&arm.sha)));
    }
    let built = worktree.join(warp.binary.as_deref().unwrap_or_default());
    // Not followed: a build that leaves a link (to arbiter.db, say) would have Arbiter copy what the link
    // names into the cache, where the server under test may read it.
    match std::fs::symlink_metadata(&built) {
        Ok(m) if m.file_type().is_file() => {}
        Ok(_) => return Err(format!("the build left {} as a link or folder, not a regular file", built.display())),
        Err(_) => return Err(format!("the build succeeded but left no {}", built.display())),
    }
    let dir = path.parent().ok_or("bad cache path")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    let tmp = dir.join(".incoming");
    // A release binary can be hundreds of MiB: copied without holding an async worker thread.
    tokio::fs::copy(&built, &tmp).await.map_err(|e| format!("cannot cache the binary: {e}"))?;
    // Readable and runnable by the user servers run as (the build's own mode may be its user's alone).
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).map_err(|e| format!("cannot cache the binary: {e}"))?;
    }
    tokio::fs::rename(&tmp, &path).await.map_err(|e| format!("cannot cache the binary: {e}"))?;
    let _ = writeln!(log, "[arbiter] cached {}", path.display());
    Ok((path, BinarySource::Built))
}
