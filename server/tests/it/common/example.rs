//! The example suite (`examples/zephyr-pipeline`) for tests: its repository made by its own script, and
//! the shipped `suites/zephyr-pipeline.toml` pointed at it.

#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};

pub const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// Makes the repository under `tmp` and returns (the suite file's text, the repository).
pub fn example_suite_text(tmp: &Path) -> (String, PathBuf) {
    let repo = tmp.join("zephyr-repo");
    let out = std::process::Command::new(format!("{ROOT}/examples/zephyr-pipeline/make-repo.sh")).arg(&repo).output().unwrap();
    assert!(out.status.success(), "make-repo.sh: {}", String::from_utf8_lossy(&out.stderr));
    let shipped = std::fs::read_to_string(format!("{ROOT}/suites/zephyr-pipeline.toml")).unwrap();
    let line = "repository = \"../examples/zephyr-pipeline/repo\"";
    assert!(shipped.contains(line), "the shipped suite names the example repository");
    (shipped.replace(line, &format!("repository = {:?}", repo.display().to_string())), repo)
}

/// Writes the example suite (as `text` says) into `suites/` and returns the repository.
pub fn example_suite(tmp: &Path, suites: &Path) -> PathBuf {
    let (text, repo) = example_suite_text(tmp);
    std::fs::create_dir_all(suites).unwrap();
    std::fs::write(suites.join("zephyr-pipeline.toml"), text).unwrap();
    repo
}

/// The trial of an arm (by name) in `GET /api/v1/experiments/{id}`.
pub fn trial_of<'a>(e: &'a Value, arm: &str) -> &'a Value {
    let arm_id = &e["arms"].as_array().unwrap().iter().find(|a| a["name"] == arm).unwrap_or_else(|| panic!("no arm {arm}: {e}"))["id"];
    // The arm's first measured trial (a warm-up may have run the arm's code first).
    e["trials"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| &t["arm_id"] == arm_id && t["role"] == "measured")
        .unwrap_or_else(|| panic!("no trial of {arm}: {e}"))
}

/// The judge's report of a treatment arm.
pub fn arm_report<'a>(e: &'a Value, arm: &str) -> &'a Value {
    e["report"]["treatments"].as_array().unwrap().iter().find(|a| a["name"] == arm).unwrap_or_else(|| panic!("no report for {arm}: {e}"))
}
