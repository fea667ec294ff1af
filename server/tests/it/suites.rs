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
    let err = |v: Value| s.validate_fingerprint(&given(v)).unwrap_err().to_string();
    assert_eq!(err(json!({"workers": 9})), "fingerprint.workers: 9: must be between 1 and 8");
    assert!(err(json!({"workers": "2"})).contains("\"2\" is not an integer"));
    assert!(err(json!({"first_stage": "all"})).contains("use one of exact, tokenize, minhash, fuzzy"));
    assert!(err(json!({"colour": "red"})).starts_with("fingerprint.colour: not a field of suite"));
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
    assert_eq!(e.field, "fingerprint.sample");
    let e = e.to_string();
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

/// The suite page shows a suite as its author wrote it: a file's comments (its webhook redacted for a
/// launcher), the branches of its repository as launch links; an admin saving that text keeps them.
#[tokio::test]
async fn the_suite_page_keeps_the_files_comments_and_lists_its_branches() {
    use crate::common::{git::git, test_app::TestApp};
    use store::people::Role;
    let app = TestApp::builder().start().await;
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("bench.py"), "print(1)\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "one"]);
    git(&repo, &["branch", "cpu-heavier"]);
    git(&repo, &["branch", "smaller-buffers"]);
    let text = format!(
        "# Ask Ana before changing the sample: the branches cpu-heavier and smaller-buffers compare against it.\n{}\n[notify]\n# the team's channel\nwebhook = \"https://hooks.example/T0/secret-part\"\n",
        SUITE.trim()
    );
    std::fs::write(dir.path().join("zephyr-dedup.toml"), &text).unwrap();
    let loaded = load_dir(dir.path()).unwrap();
    assert!(loaded[0].text.is_some(), "the file's text is kept");
    engine::sync_suites(&app.store, &loaded).await.unwrap();

    let launcher = app.signed_in(Role::Launcher).await;
    let page = launcher.get("/suites/zephyr-dedup").await.text;
    assert!(page.contains("# Ask Ana before changing the sample"), "the file's comments are shown");
    assert!(page.contains("# the team&#x27;s channel") || page.contains("# the team's channel"), "{page}");
    assert!(!page.contains("secret-part") && page.contains("&lt;redacted&gt;"), "the webhook is redacted for a launcher");
    for branch in ["cpu-heavier", "smaller-buffers"] {
        assert!(page.contains(&format!("/launch?suite=zephyr-dedup&amp;head={branch}")), "{branch} offered as a launch");
    }

    // An admin sees the webhook and saves the text as shown: the comments stay.
    let (admin, _) = app.with_token(Role::Admin).await;
    let stored = app.store.suite_by_name("zephyr-dedup").await.unwrap().toml.unwrap();
    assert!(stored.contains("secret-part") && stored.contains(&format!("repository = \"{}\"", repo.display())), "{stored}");
    let edited = stored.replace("trials = 4", "trials = 5");
    let r = admin.send(reqwest::Method::PUT, "/api/v1/suites/zephyr-dedup", Some(crate::common::test_app::Body::Json(serde_json::json!({"toml": edited})))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let saved = app.store.suite_by_name("zephyr-dedup").await.unwrap();
    assert_eq!(saved.toml.as_deref(), Some(edited.as_str()), "saved as written");
    assert_eq!(saved.definition["defaults"]["trials"], 5);
    assert!(launcher.get("/suites/zephyr-dedup").await.text.contains("# Ask Ana before changing the sample"));
    // The launch form offers the branches as the treatment's typeahead.
    let form = launcher.post_json("/fn/launch_suites", serde_json::json!({})).await;
    assert_eq!(form.status, 200, "{}", form.text);
    let branches = form.json()["suites"][0]["branches"].clone();
    assert!(branches.as_array().unwrap().iter().any(|b| b == "smaller-buffers"), "{branches}");
}
