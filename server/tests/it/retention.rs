//! Pruning: old logs, artifacts, worktrees and cached binaries go; what a stored experiment links to,
//! and the worktrees of unfinished experiments, stay.

use server::retention::{prune, Retention};
use std::fs::{self, File};
use std::path::Path;
use std::time::{Duration, SystemTime};
use store::testing::TestDb;

const DAY: Duration = Duration::from_secs(86_400);

fn write_aged(path: &Path, days_old: u64) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, b"0123456789").unwrap();
    File::options().write(true).open(path).unwrap().set_modified(SystemTime::now() - DAY * days_old as u32).unwrap();
}

#[tokio::test]
async fn prune_applies_retention_and_keeps_what_experiments_link_to() {
    let db = TestDb::sqlite().await;
    let data = tempfile::tempdir().unwrap();
    let d = data.path();
    let finished = db.store.insert_experiment(&store::testing::sample_experiment(judge::ExperimentKind::Pipeline, "done")).await.unwrap();
    db.store.set_experiment_status(finished, judge::ExperimentStatus::Judged).await.unwrap();
    let running = db.store.insert_experiment(&store::testing::sample_experiment(judge::ExperimentKind::Pipeline, "running")).await.unwrap();

    let f = |rel: &str| d.join(rel);
    write_aged(&f(&format!("experiments/{finished}/logs/old.log")), 40);
    write_aged(&f(&format!("experiments/{finished}/logs/new.log")), 5);
    write_aged(&f(&format!("experiments/{finished}/logs/linked.log")), 400);
    write_aged(&f(&format!("experiments/{finished}/artifacts/report.md")), 40);
    write_aged(&f(&format!("experiments/{finished}/artifacts/ancient.csv")), 100);
    write_aged(&f("cache/bin/arbiter-old"), 20);
    write_aged(&f("cache/bin/arbiter-new"), 1);
    for (name, id) in [("done", finished), ("running", running)] {
        let tree = f(&format!("worktrees/{id}-{name}"));
        write_aged(&tree.join("src/lib.rs"), 10);
        File::open(&tree).unwrap().set_modified(SystemTime::now() - DAY * 10).unwrap();
    }
    db.store.insert_artifact(finished, None, "log", &format!("experiments/{finished}/logs/linked.log"), 10).await.unwrap();

    let retention = Retention { logs: DAY * 30, artifacts: DAY * 90, worktrees: DAY * 2, binaries: DAY * 14 };
    let dry = prune(d, &db.store, &retention, SystemTime::now(), true).await.unwrap();
    let expected = vec![
        "cache/bin/arbiter-old".to_string(),
        format!("experiments/{finished}/artifacts/ancient.csv"),
        format!("experiments/{finished}/logs/old.log"),
        format!("worktrees/{finished}-done"),
    ];
    assert_eq!(dry.deleted, expected);
    assert_eq!(dry.kept_linked, 1);
    assert!(f(&format!("experiments/{finished}/logs/old.log")).exists(), "a dry run deletes nothing");

    let done = prune(d, &db.store, &retention, SystemTime::now(), false).await.unwrap();
    assert_eq!(done, dry);
    assert_eq!(done.bytes, 40);
    for rel in &expected {
        assert!(!f(rel).exists(), "{rel} should be gone");
    }
    for kept in [
        format!("experiments/{finished}/logs/new.log"),
        format!("experiments/{finished}/logs/linked.log"),
        format!("experiments/{finished}/artifacts/report.md"),
        "cache/bin/arbiter-new".into(),
        format!("worktrees/{running}-running/src/lib.rs"),
    ] {
        assert!(f(&kept).exists(), "{kept} should stay");
    }
    db.cleanup().await;
}

#[tokio::test]
async fn prune_never_follows_a_symlink_out_of_the_data_dir() {
    let db = TestDb::sqlite().await;
    let data = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    write_aged(&outside.path().join("precious/file.txt"), 400);
    fs::create_dir_all(data.path().join("cache")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("precious"), data.path().join("cache/link")).unwrap();
    let retention = Retention { logs: DAY, artifacts: DAY, worktrees: DAY, binaries: DAY };
    let r = prune(data.path(), &db.store, &retention, SystemTime::now(), false).await.unwrap();
    assert!(outside.path().join("precious/file.txt").exists(), "the target of a symlink is untouched: {r:?}");
    db.cleanup().await;
}
