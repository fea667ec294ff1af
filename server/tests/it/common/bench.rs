//! The stage benchmark (`data/stage_bench.py`) in a git repository whose branches change its CPU cost,
//! memory or success, and a pipeline suite that runs it in worktrees.

#![allow(dead_code)]

use super::git::git;
use std::path::Path;

pub const BENCH: &str = include_str!("../../data/stage_bench.py");

/// main: the benchmark; branches heavier (×3 CPU), lighter (÷3), leaky (3 GiB peak), broken (a stage
/// fails), slow.
pub fn repository(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("bench.py"), BENCH).unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "benchmark"]);
    for (branch, from, to) in [
        ("heavier", "WORK = 2_000_000", "WORK = 6_000_000"),
        ("lighter", "WORK = 2_000_000", "WORK = 667_000"),
        ("leaky", "MEM_PEAK = 100 * 2**20", "MEM_PEAK = 3 * 2**30"),
        ("broken", "FAIL_STAGE = None", "FAIL_STAGE = \"stage1-Reduce\""),
        ("slow", "SLEEP = 0.0", "SLEEP = 60.0"),
    ] {
        git(dir, &["checkout", "-q", "-b", branch, "main"]);
        std::fs::write(dir.join("bench.py"), BENCH.replace(from, to)).unwrap();
        git(dir, &["commit", "-q", "-am", branch]);
    }
    git(dir, &["checkout", "-q", "main"]);
}

/// The `stage-bench` suite's TOML for `repo`, run with `python`, three trials by default.
pub fn suite_toml(repo: &Path, python: &Path) -> String {
    format!(
        r#"
name = "stage-bench"
kind = "pipeline"
repository = "{}"
command = ["{}", "{{worktree}}/bench.py", "--run-tag", "{{run_tag}}", "--finelog", "{{finelog_url}}"]
timeout_minutes = 1
[resources]
cpu = 1
ram = "2GiB"
[defaults]
trials = 3
"#,
        repo.display(),
        python.display()
    )
}
