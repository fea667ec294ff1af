//! A `TestEngine`: the engine handle on a migrated SQLite store in a temp dir, with a real git repository
//! (`main` and a `feature/faster` branch) and a pipeline suite reading it. The trial queue has no finelog
//! server and no running loop: launches are resolved and stored, nothing runs.

use engine::{Engine, TrialQueue};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use store::testing::TestDb;

pub struct TestEngine {
    pub engine: Engine,
    pub repo: PathBuf,
    /// The SHAs of `main`'s first commit (the merge-base), `main`'s head and `feature/faster`'s head.
    pub base: String,
    pub later: String,
    pub faster: String,
    _db: TestDb,
    _dir: tempfile::TempDir,
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.email=test@example.com", "-c", "user.name=test", "-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn suite_toml(repository: &Path) -> String {
    format!(
        r#"
name = "dedup"
kind = "pipeline"
repository = "{}"
command = ["python3", "{{worktree}}/bench.py", "--sample", "{{sample}}", "--run-tag", "{{run_tag}}", "--workers", "{{workers}}"]
[resources]
cpu = 1
ram = "2GiB"
[defaults]
trials = 3
[fingerprint.sample]
type = "string"
default = "local/tiny"
[fingerprint.workers]
type = "integer"
allowed = [1, 2, 4]
default = 2
"#,
        repository.display()
    )
}

impl TestEngine {
    pub async fn new() -> TestEngine {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("bench.py"), "print('v1')\n").unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-q", "-m", "base"]);
        let base = git(&repo, &["rev-parse", "HEAD"]);
        git(&repo, &["checkout", "-q", "-b", "feature/faster"]);
        std::fs::write(repo.join("bench.py"), "print('v2')\n").unwrap();
        git(&repo, &["commit", "-q", "-am", "faster"]);
        let faster = git(&repo, &["rev-parse", "HEAD"]);
        git(&repo, &["checkout", "-q", "main"]);
        std::fs::write(repo.join("README"), "later\n").unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-q", "-m", "later"]);
        let later = git(&repo, &["rev-parse", "HEAD"]);

        let db = TestDb::sqlite().await;
        let (name, kind, definition) = suite::parse_for_store(&suite_toml(&repo)).expect("the suite checks");
        db.store.upsert_suite(&name, kind, &definition, "test", None).await.expect("the suite is stored");
        let data_dir = dir.path().join("data");
        std::fs::create_dir_all(&data_dir).unwrap();
        let queue = Arc::new(TrialQueue::new(Err("no finelog server in the engine's tests".into()), None));
        let engine = Engine { store: db.store.clone(), data_dir, base_url: "http://arbiter.test".into(), queue };
        TestEngine { engine, repo, base, later, faster, _db: db, _dir: dir }
    }
}
