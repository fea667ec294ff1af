//! Git, run as a program with argv (never a shell): resolving refs to full SHAs and merge-bases in a
//! suite's repository. A clone URL is mirrored once into the data dir and fetched before each use.
//!
//! Every git command Arbiter runs is built by [`command`]: the repositories it reads hold branches
//! anyone who may launch can push, and git runs programs named in configuration (`core.fsmonitor`,
//! hooks, `core.sshCommand`, `ext::` remotes). So no configuration from outside the repository is read
//! (no system file, an empty global one: a file a trial managed to write into `HOME` cannot reach git),
//! and the keys that run programs are set on the command line, which wins over the repository's own.
//! Arbiter never runs git inside a worktree after a trial ran in it (`queue::runner::remove_worktrees`
//! deletes the folder and prunes from the repository).

use std::path::{Path, PathBuf};
use tokio::process::Command;

/// The configuration every git command gets on its command line, where it outranks every file.
pub const NEUTRAL_CONFIG: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    // Plain ssh from PATH (an empty value would make git run an empty command).
    "core.sshCommand=ssh",
    "core.askPass=",
    "core.editor=true",
    "core.pager=cat",
    "credential.helper=",
    "protocol.ext.allow=never",
];

/// Environment variables a git process must not inherit from the server's (they would point git at
/// another repository, configuration or program).
const CLEARED_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_EXEC_PATH",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_TRACE",
];

/// A git command, in `dir` when given (`-C dir`, which is also the one `safe.directory` allowed: with no
/// system or global file, that is the only place it could come from), with the neutral configuration.
pub fn command(dir: Option<&Path>) -> Command {
    let mut cmd = Command::new("git");
    for var in CLEARED_ENV {
        cmd.env_remove(var);
    }
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .kill_on_drop(true);
    for setting in NEUTRAL_CONFIG {
        cmd.arg("-c").arg(setting);
    }
    if let Some(dir) = dir {
        cmd.arg("-c").arg(format!("safe.directory={}", dir.display())).arg("-C").arg(dir);
    }
    cmd
}

/// Characters a ref may hold here (branch, tag, SHA, `HEAD~2`, `origin/main`); never a leading '-'.
pub use judge::launch_rules::is_safe_ref;

async fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = command(Some(dir)).args(args).output().await.map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().lines().last().unwrap_or("git failed").to_string())
    }
}

use judge::units::short_sha as short;

/// Why a ref did not resolve: the request's fault, or git's.
#[derive(Debug, thiserror::Error)]
pub enum RefError {
    /// The ref names no commit in the repository (or cannot be a ref at all): the request's to fix.
    #[error("{0}")]
    NoCommit(String),
    /// git itself failed (it could not run, or the repository cannot be read): not the request's fault.
    #[error("{0}")]
    Git(String),
}

impl RefError {
    /// The engine's error for a ref that came in as `field` (`head`, `base`, `arms[0].ref`): a field's
    /// problem, or git's failure.
    pub fn at(self, field: &str) -> crate::EngineError {
        match self {
            RefError::NoCommit(m) => crate::EngineError::field(field, m),
            RefError::Git(m) => crate::EngineError::Upstream(m),
        }
    }
}

/// A repository Arbiter can read refs from.
#[derive(Debug, Clone)]
pub struct Repo {
    pub dir: PathBuf,
    /// How a message names it: the clone URL, or "the suite's repository" for a local path (a path on
    /// the server says nothing to the user who typed a ref).
    pub shown: String,
}

impl Repo {
    /// The suite's repository as it is now, without fetching: a local path, or a URL's mirror once a launch
    /// has made it; `None` when there is none yet (a page offers no branches rather than wait on a clone).
    pub fn as_it_is(repository: &str, data_dir: &Path) -> Option<Repo> {
        let is_url = repository.contains("://") || repository.starts_with("git@");
        let dir = if is_url {
            data_dir.join("repos").join(&crate::sha256_hex(repository.as_bytes())[..16])
        } else {
            PathBuf::from(repository)
        };
        dir.exists().then(|| Repo { dir, shown: "the suite's repository".into() })
    }

    /// The suite's repository: a local path as is, a URL through a mirror in `data_dir/repos/`.
    pub async fn open(repository: &str, data_dir: &Path) -> Result<Repo, String> {
        let is_url = repository.contains("://") || repository.starts_with("git@");
        if !is_url {
            let dir = PathBuf::from(repository);
            git(&dir, &["rev-parse", "--git-dir"]).await.map_err(|e| format!("repository {repository} is not a git repository: {e}"))?;
            return Ok(Repo { dir, shown: "the suite's repository".into() });
        }
        let digest = crate::sha256_hex(repository.as_bytes());
        let dir = data_dir.join("repos").join(&digest[..16]);
        if dir.join("HEAD").exists() {
            git(&dir, &["fetch", "--prune", "--quiet", "origin"]).await.map_err(|e| format!("cannot fetch {repository}: {e}"))?;
        } else {
            std::fs::create_dir_all(dir.parent().unwrap_or(data_dir)).map_err(|e| e.to_string())?;
            let out = command(None)
                .args(["clone", "--mirror", "--quiet", "--", repository])
                .arg(&dir)
                .output()
                .await
                .map_err(|e| format!("cannot run git: {e}"))?;
            if !out.status.success() {
                return Err(format!("cannot clone {repository}: {}", String::from_utf8_lossy(&out.stderr).trim()));
            }
        }
        Ok(Repo { dir, shown: format!("the suite's repository {repository}") })
    }

    /// The full SHA of the commit a ref names, or an error naming the ref.
    pub async fn resolve(&self, r: &str) -> Result<String, RefError> {
        if !is_safe_ref(r) {
            return Err(RefError::NoCommit(format!("ref {} holds characters a git ref may not (or starts with '-')", judge::text::quoted(r))));
        }
        let spec = format!("{r}^{{commit}}");
        let args = ["rev-parse", "--verify", "--quiet", "--end-of-options", &spec];
        let out = command(Some(&self.dir)).args(args).output().await.map_err(|e| RefError::Git(format!("cannot run git: {e}")))?;
        let sha = String::from_utf8_lossy(&out.stdout).trim().to_string();
        match out.status.code() {
            Some(0) if sha.len() == 40 => Ok(sha),
            // `--verify --quiet` exits 1, silently, when the name resolves to no commit.
            Some(0 | 1) => {
                let branches = self.branches(8).await;
                let known = if branches.is_empty() { String::new() } else { format!(" (its branches include {})", branches.join(", ")) };
                Err(RefError::NoCommit(format!("ref {} does not name a commit in {}{known}", judge::text::quoted(r), self.shown)))
            }
            _ => {
                let stderr = String::from_utf8_lossy(&out.stderr);
                let why = stderr.trim().lines().last().unwrap_or("git failed");
                Err(RefError::Git(format!("git could not read refs in {}: {why}", self.shown)))
            }
        }
    }

    /// Up to `n` branch names, most recently committed first (for a message naming what exists).
    pub async fn branches(&self, n: usize) -> Vec<String> {
        let count = format!("--count={n}");
        git(&self.dir, &["for-each-ref", "--sort=-committerdate", &count, "--format=%(refname:short)", "refs/heads"])
            .await
            .map(|out| out.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// The commits after `good` up to `bad` on bad's first-parent line, oldest first: (sha, is a merge,
    /// subject). `good` must be on that line (an ancestor reached only through a merge's second parent
    /// would make the range the whole history down to the root).
    pub async fn first_parent_range(&self, good: &str, bad: &str, max: usize) -> Result<Vec<(String, bool, String)>, String> {
        if git(&self.dir, &["merge-base", "--is-ancestor", "--end-of-options", good, bad]).await.is_err() {
            return Err(format!(
                "good {} is not an ancestor of bad {}: give a good commit the bad one was built on",
                short(good),
                short(bad)
            ));
        }
        let range = format!("{good}..{bad}");
        let limit = format!("--max-count={}", max + 1);
        let out = git(&self.dir, &["log", "--first-parent", &limit, "--format=%H%x1f%P%x1f%s", "--end-of-options", &range]).await?;
        let mut commits: Vec<(String, Vec<String>, String)> = out
            .lines()
            .filter_map(|l| {
                let mut f = l.split('\u{1f}');
                Some((
                    f.next()?.to_string(),
                    f.next()?.split_whitespace().map(str::to_string).collect(),
                    f.next().unwrap_or("").to_string(),
                ))
            })
            .collect();
        if commits.len() > max {
            return Err(format!("the range holds more than {max} commits: bisect a part of it (a later good or an earlier bad commit)"));
        }
        commits.reverse();
        if let Some(first) = commits.first() {
            if first.1.first().map(String::as_str) != Some(good) {
                return Err(format!(
                    "good {} is not on bad {}'s first-parent line (it came in through a merge): give the merge's first parent as good",
                    short(good),
                    short(bad)
                ));
            }
        }
        Ok(commits.into_iter().map(|(sha, parents, subject)| (sha, parents.len() > 1, subject)).collect())
    }

    /// A commit's subject.
    pub async fn subject(&self, sha: &str) -> Result<String, String> {
        git(&self.dir, &["log", "-1", "--format=%s", "--end-of-options", sha]).await
    }

    /// A commit's message, author, date and diff stat (against its first parent).
    pub async fn describe(&self, sha: &str) -> Result<wire::bisection::JsonCulprit, String> {
        let head = git(&self.dir, &["log", "-1", "--format=%H%x1f%an <%ae>%x1f%aI%x1f%P%x1f%s%x1f%b", "--end-of-options", sha]).await?;
        let f: Vec<&str> = head.splitn(6, '\u{1f}').collect();
        if f.len() < 5 {
            return Err(format!("cannot read commit {}", short(sha)));
        }
        let parents: Vec<&str> = f[3].split_whitespace().collect();
        let stat =
            git(&self.dir, &["show", "--first-parent", "--stat=120", "--format=", "--end-of-options", sha]).await.unwrap_or_default();
        let mut lines: Vec<String> = stat.lines().map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect();
        let summary = lines.pop().unwrap_or_else(|| "no file changed".into());
        Ok(wire::bisection::JsonCulprit {
            sha: f[0].to_string(),
            author: f[1].to_string(),
            date: f[2].to_string(),
            subject: f[4].to_string(),
            body: f.get(5).map(|b| b.trim().to_string()).unwrap_or_default(),
            stat: summary,
            files: lines,
            merged: parents.get(1).map(|p| p.to_string()),
        })
    }

    /// The best common ancestor of two commits.
    pub async fn merge_base(&self, a: &str, b: &str) -> Result<String, String> {
        git(&self.dir, &["merge-base", "--end-of-options", a, b]).await.map_err(|e| format!("no merge-base of {a} and {b}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn safe_refs() {
        for ok in ["main", "feature/faster-dedup", "v1.2.3", "HEAD~2", "origin/main", "0123456789abcdef0123456789abcdef01234567"] {
            assert!(super::is_safe_ref(ok), "{ok}");
        }
        for bad in ["", "-c", "--upload-pack=x", "a b", "a;b", "$(id)", "a..b", "a\nb", "`x`"] {
            assert!(!super::is_safe_ref(bad), "{bad:?}");
        }
    }
}

#[cfg(test)]
mod hardening_tests {
    use super::*;

    /// A repository whose own configuration names an fsmonitor program (as a trial that reached the
    /// repository's config, or a global file, would plant): plain git runs it, Arbiter's git does not.
    #[tokio::test]
    async fn configuration_that_runs_programs_is_neutralised() {
        let tmp = std::env::temp_dir().join(format!("arbiter-git-hardening-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).unwrap();
        let marker = tmp.join("ran");
        let hook = tmp.join("hook.sh");
        std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let repo = tmp.join("repo");
        let run = |args: &[&str]| {
            let ok = std::process::Command::new("git").arg("-C").arg(&tmp).args(args).output().unwrap();
            assert!(ok.status.success(), "{args:?}: {}", String::from_utf8_lossy(&ok.stderr));
        };
        run(&["init", "-q", "repo"]);
        run(&["-C", "repo", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "one"]);
        run(&["-C", "repo", "config", "core.fsmonitor", &hook.to_string_lossy()]);
        std::fs::write(repo.join("f"), "x").unwrap();

        let ours = command(Some(&repo)).args(["status", "--porcelain"]).output().await.unwrap();
        assert!(ours.status.success(), "{}", String::from_utf8_lossy(&ours.stderr));
        assert!(!marker.exists(), "Arbiter's git ran the repository's fsmonitor");
        let origin = command(Some(&repo)).args(["config", "--show-origin", "core.fsmonitor"]).output().await.unwrap();
        assert_eq!(String::from_utf8_lossy(&origin.stdout).trim(), "command line:\tfalse");

        // The same repository with plain git runs the program: the test above could fail.
        run(&["-C", "repo", "status", "--porcelain"]);
        assert!(marker.exists(), "plain git did not run the planted fsmonitor; the test proves nothing here");
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
