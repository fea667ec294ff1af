//! Suite files: parsing and checks, fingerprint validation, data locality, argv rendering, loading.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use suite::{definition::SuiteDefinition, load_dir};

const SUITE: &str = r#"
name = "zephyr-dedup"
kind = "pipeline"
repository = "repo"
command = ["python", "{worktree}/bench.py", "--sample-prefix", "{sample}", "--run-tag", "{run_tag}-{arm}",
           "--pool-workers", "{workers}", "--region", "{region}", "--finelog", "{finelog_url}"]
timeout_minutes = 20

[defaults]
trials = 4
order = "abba"

[resources]
cpu = 1
ram = "2GiB"
disk = "5GiB"

[fingerprint.sample]
type = "string"
default = "gs://marin-eu-west4/datakit/sample_100b"

[fingerprint.workers]
type = "integer"
min = 1
max = 8
default = 2

[fingerprint.first_stage]
type = "string"
allowed = ["exact", "tokenize", "minhash", "fuzzy"]
default = "exact"

[[locality]]
prefix = "gs://marin-eu-west4/"
region = "europe-west4"

[[locality]]
prefix = "gs://marin-us-central1/"
region = "us-central1"
"#;

fn suite() -> SuiteDefinition {
    SuiteDefinition::from_toml(SUITE).unwrap()
}

fn given(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn a_suite_parses_with_its_defaults() {
    let s = suite();
    assert_eq!((s.defaults.trials, s.timeout_minutes, s.base_branch.as_str()), (wire::launch::JsonTrials::Fixed(4), 20, "main"));
    assert_eq!(s.resources.ram_bytes().unwrap(), 2 * 1024 * 1024 * 1024);
    let fp = s.validate_fingerprint(&Map::new()).unwrap();
    assert_eq!(fp["workers"], 2);
    assert_eq!(fp["first_stage"], "exact");
}

#[test]
fn bad_suites_are_refused_with_the_problem_named() {
    let cases = [
        (SUITE.replace("\"{worktree}/bench.py\"", "\"{worktre}/bench.py\""), "unknown placeholder {worktre}"),
        (SUITE.replace("\"{run_tag}-{arm}\"", "\"fixed\""), "{run_tag}"),
        (SUITE.replace("ram = \"2GiB\"", "ram = \"lots\""), "resources.ram"),
        (SUITE.replace("kind = \"pipeline\"", "kind = \"benchmark\""), "benchmark"),
        (SUITE.replace("timeout_minutes = 20", "timeout_minutes = 20\ncolour = \"red\""), "colour"),
        (SUITE.replace("default = \"exact\"", "default = \"everything\""), "fingerprint.first_stage.default"),
        (SUITE.replace("name = \"zephyr-dedup\"", "name = \"zephyr dedup; rm -rf /\""), "name"),
        (SUITE.replace("region = \"us-central1\"", "region = \"$(reboot)\""), "not a plain region"),
    ];
    for (text, needle) in cases {
        let err = SuiteDefinition::from_toml(&text).unwrap_err();
        assert!(err.contains(needle), "{needle:?} not in {err:?}");
    }
}

#[test]
fn fingerprints_are_checked_against_the_suite() {
    let s = suite();
    let err = |v: Value| s.validate_fingerprint(&given(v)).unwrap_err();
    assert!(err(json!({"workers": 9})).contains("9: must be between 1 and 8"));
    assert!(err(json!({"workers": "2"})).contains("\"2\" is not an integer"));
    assert!(err(json!({"first_stage": "all"})).contains("use one of exact, tokenize, minhash, fuzzy"));
    assert!(err(json!({"colour": "red"})).contains("\"colour\" is not one of"));
    for evil in ["a; rm -rf /", "$(id)", "`id`", "a b", "x|y", "--delete", "a\nb", "a&b", "a>b"] {
        let e = err(json!({ "sample": evil }));
        assert!(e.contains("characters"), "{evil:?} must be refused: {e}");
    }
}

#[test]
fn data_locality_comes_from_the_sample_prefix_and_unknown_ones_refuse() {
    let s = suite();
    let fp = s.validate_fingerprint(&given(json!({"sample": "gs://marin-us-central1/datakit/x"}))).unwrap();
    assert_eq!(s.locality_for(&fp).unwrap().unwrap().region.as_deref(), Some("us-central1"));
    let fp = s.validate_fingerprint(&given(json!({"sample": "s3://marin-us-east-02a/datakit/x"}))).unwrap();
    let e = s.locality_for(&fp).unwrap_err();
    assert!(e.contains("no data locality is known") && e.contains("s3://marin-us-east-02a/datakit/x"), "{e}");
}

#[test]
fn argv_is_rendered_element_by_element() {
    let s = suite();
    let fp = s.validate_fingerprint(&given(json!({"workers": 4}))).unwrap();
    let mut run = BTreeMap::new();
    run.insert("worktree", "/data/worktrees/7-control".to_string());
    run.insert("run_tag", "ab-7-3".to_string());
    run.insert("arm", "control".to_string());
    run.insert("region", "europe-west4".to_string());
    run.insert("finelog_url", "http://127.0.0.1:9500".to_string());
    let argv = s.render_argv(&fp, &run).unwrap();
    assert_eq!(
        argv,
        [
            "python",
            "/data/worktrees/7-control/bench.py",
            "--sample-prefix",
            "gs://marin-eu-west4/datakit/sample_100b",
            "--run-tag",
            "ab-7-3-control",
            "--pool-workers",
            "4",
            "--region",
            "europe-west4",
            "--finelog",
            "http://127.0.0.1:9500"
        ]
    );
    run.insert("arm", "x; reboot".to_string());
    assert!(s.render_argv(&fp, &run).unwrap_err().contains("{arm}"));
}

#[test]
fn a_folder_of_suites_loads_and_refuses_duplicates_and_broken_files() {
    let dir = tempfile::tempdir().unwrap();
    assert!(load_dir(&dir.path().join("missing")).unwrap().is_empty(), "no folder, no suites");
    std::fs::write(dir.path().join("a.toml"), SUITE).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a suite").unwrap();
    let loaded = load_dir(dir.path()).unwrap();
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0].definition.repository, dir.path().join("repo").to_string_lossy(), "relative to the suite file");
    std::fs::write(dir.path().join("b.toml"), SUITE).unwrap();
    assert!(load_dir(dir.path()).unwrap_err().contains("defined twice"));
    std::fs::write(dir.path().join("b.toml"), "name = ").unwrap();
    let e = load_dir(dir.path()).unwrap_err();
    assert!(e.contains("b.toml"), "{e}");
}

#[tokio::test]
async fn suites_are_copied_into_the_store() {
    let db = store::testing::TestDb::sqlite().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.toml"), SUITE).unwrap();
    let loaded = load_dir(dir.path()).unwrap();
    engine::sync_suites(&db.store, &loaded).await.unwrap();
    engine::sync_suites(&db.store, &loaded).await.unwrap();
    let stored = db.store.suites().await.unwrap();
    assert_eq!(stored.len(), 1, "reloading replaces, never duplicates");
    let back: SuiteDefinition = serde_json::from_value(stored[0].definition.clone()).unwrap();
    assert_eq!(back, loaded[0].definition);
    assert!(stored[0].source.ends_with("a.toml"));
    db.cleanup().await;
}
