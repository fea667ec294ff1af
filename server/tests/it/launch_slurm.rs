//! The cluster launcher on a real single-node Slurm (started and stopped by the test, on loopback): the
//! example suite with `launcher = "cluster"` and the shipped Slurm profile. Arbiter submits its fixed
//! wrapper script with the arm's argv as arguments, polls `scontrol`, cancels with `scancel`, reads the
//! `--output` file, and judges as for local trials.

use crate::common;

use common::example::{arm_report, example_suite_text, trial_of};
use common::finelog::python;
use common::slurm::Slurm;
use common::test_app::{Client, TestApp};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use store::people::Role;

/// Polls the experiment until `pred` holds for it.
async fn wait_for(client: &Client, id: i64, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let e = client.get(&format!("/api/v1/experiments/{id}")).await.json();
        if pred(&e) {
            return e;
        }
        assert!(Instant::now() < deadline, "{what}: {e}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn trials(e: &Value) -> &Vec<Value> {
    e["trials"].as_array().unwrap()
}

#[tokio::test]
async fn measured_the_example_suite_runs_on_a_real_slurm() {
    let _measuring = common::measuring().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut slurm = Slurm::start();
    let app = TestApp::builder().python(python()).scheduler(None).start().await;
    let suites = app.dir.path().join("suites");
    std::fs::create_dir_all(&suites).unwrap();
    let (text, _) = example_suite_text(tmp.path());
    // The job's memory limit (sbatch --mem) is the suite's RAM: the baseline's driver and two shard
    // processes peak at ~470 MiB together, memory-hungry's tokenize shards at ~930 MiB each.
    let text = text.replace("launcher = \"local\"", "launcher = \"cluster\"").replace("ram = \"512MiB\"", "ram = \"800MiB\"")
        + &format!(
            "\n[cluster]\nprofile = \"slurm\"\nunreachable_after_secs = 4\npoll_max_secs = 1\nenv = {{ SLURM_CONF = {:?} }}\n",
            slurm.conf.display().to_string()
        );
    std::fs::write(suites.join("zephyr-slurm.toml"), text).unwrap();
    engine::sync_suites(&app.store, &suite::load_dir(&suites).unwrap()).await.unwrap();
    let launcher = app.signed_in(Role::Launcher).await;

    // A/B with the CPU-heavier treatment and a memory-hungry arm, one trial each.
    let id = launcher
        .launch(json!({"suite": "zephyr-pipeline", "head": "cpu-heavier", "base": "main", "trials": 1,
                       "arms": [{"name": "memory-hungry", "ref": "memory-hungry"}]}))
        .await;
    let e = launcher.wait_until_ended(id, 600).await;
    assert_eq!(e["status"], "judged", "{e}");
    assert_eq!(e["verdict"], "regression", "{e}");
    for arm in ["control", "treatment"] {
        let t = trial_of(&e, arm);
        assert_eq!((t["state"].as_str(), t["engine_state"].as_str()), (Some("succeeded"), Some("COMPLETED")), "{t}");
        let job = t["job_id"].as_str().unwrap();
        assert!(job.parse::<u32>().is_ok(), "the Slurm job id is shown: {t}");
        assert!(slurm.cli("scontrol", &["show", "job", job, "-o"]).contains("JobState=COMPLETED"));
        let page = launcher.get(&format!("/experiments/{id}")).await.text;
        assert!(page.contains(&format!("{job} (COMPLETED)")), "the experiment page shows the job and its engine state");
    }
    let heavier = arm_report(&e, "treatment");
    assert_eq!(heavier["verdict"], "regression", "{heavier}");
    let minhash = heavier["stages"].as_array().unwrap().iter().find(|s| s["stage"] == "stage3-Map → Write").unwrap();
    assert_eq!(minhash["verdict"], "regression", "{minhash}");
    // Slurm samples memory once a second and kills the job above --mem ("oom: the engine killed job …");
    // when the short-lived peak slips between its samples, Zephyr's own peak row is above the limit
    // ("oom: stage … peaked at …"). Either way: failed, oom.
    let memory = trial_of(&e, "memory-hungry");
    assert_eq!(memory["state"], "failed", "{memory}");
    assert!(memory["detail"].as_str().unwrap().starts_with("oom: "), "{memory}");

    // Cancel through Arbiter while the job runs: scancel, and the trial is cancelled.
    let id = launcher.launch(json!({"suite": "zephyr-pipeline", "head": "main", "base": "main", "trials": 1})).await;
    let e = wait_for(&launcher, id, "a job running", |e| trials(e).iter().any(|t| t["engine_state"] == "RUNNING")).await;
    let job = trials(&e).iter().find(|t| t["engine_state"] == "RUNNING").unwrap()["job_id"].as_str().unwrap().to_string();
    let r = launcher.post_json(&format!("/api/v1/experiments/{id}/cancel"), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let e = wait_for(&launcher, id, "the cancel to land", |e| trials(e).iter().all(|t| t["state"] == "cancelled")).await;
    assert_eq!(e["status"], "cancelled");
    assert!(slurm.cli("scontrol", &["show", "job", &job, "-o"]).contains("JobState=CANCELLED"), "scancel ran");

    // The controller stops mid-experiment: the running trial is lost with a clear reason, the queued ones
    // wait, and the experiment completes once the controller is back.
    let id = launcher.launch(json!({"suite": "zephyr-pipeline", "head": "main", "base": "main", "trials": 2})).await;
    wait_for(&launcher, id, "a job running", |e| trials(e).iter().any(|t| t["engine_state"] == "RUNNING")).await;
    slurm.stop_controller();
    let e = wait_for(&launcher, id, "the running trial to be lost", |e| trials(e).iter().any(|t| t["state"] == "infra_failed")).await;
    let lost = trials(&e).iter().find(|t| t["state"] == "infra_failed").unwrap().clone();
    assert_eq!(lost["infra_reason"], "engine_unreachable", "{lost}");
    assert!(lost["detail"].as_str().unwrap().contains("did not answer"), "{lost}");
    // Away a while longer: the queued trials wait (unspent) instead of failing.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let e = launcher.get(&format!("/api/v1/experiments/{id}")).await.json();
    assert_eq!(trials(&e).iter().filter(|t| t["state"] == "infra_failed").count(), 1, "{e}");
    slurm.start_controller();
    let e = launcher.wait_until_ended(id, 600).await;
    assert_eq!(e["status"], "judged", "{e}");
    let again = trials(&e).iter().find(|t| t["seq"] == lost["seq"] && t["attempt"] == 2).expect("the lost trial ran again");
    assert_eq!(again["state"], "succeeded", "{e}");
    // The lost attempt's job kept running on the node while the controller was away; it is not left
    // running beside its re-run (Arbiter cancels it once the engine answers, unless it finished first).
    let orphan = slurm.cli("scontrol", &["show", "job", lost["job_id"].as_str().unwrap(), "-o"]);
    assert!(orphan.contains("JobState=CANCELLED") || orphan.contains("JobState=COMPLETED"), "{orphan}");
    // No verdict is asserted here: the lost attempt's job ran on beside the next trials while the
    // controller was away (nothing could stop it), which is real interference an A/A may show.
}

/// `arbiter serve` killed while its trial's Slurm job runs: the restarted server follows the job by its
/// id (no re-queue) and the experiment completes.
#[tokio::test]
async fn a_restarted_server_follows_its_cluster_jobs() {
    let _trials = common::running_trials().await;
    use common::git::git;
    use common::RunningServer;
    let tmp = tempfile::tempdir().unwrap();
    let slurm = Slurm::start();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let bench = include_str!("../data/stage_bench.py").replace("SLEEP = 0.0", "SLEEP = 2.0");
    std::fs::write(repo.join("bench.py"), bench).unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "a benchmark that waits 2 s a stage"]);
    let suites = tmp.path().join("suites");
    std::fs::create_dir_all(&suites).unwrap();
    let toml = format!(
        "name = \"bench-slurm\"\nkind = \"pipeline\"\nrepository = {:?}\nlauncher = \"cluster\"\n\
         command = [\"{{python}}\", \"{{worktree}}/bench.py\", \"--run-tag\", \"{{run_tag}}\", \"--finelog\", \"{{finelog_url}}\"]\n\
         timeout_minutes = 5\n[resources]\ncpu = 1\nram = \"1GiB\"\n[cluster]\nprofile = \"slurm\"\npoll_max_secs = 1\nenv = {{ SLURM_CONF = {:?} }}\n",
        repo.display().to_string(),
        slurm.conf.display().to_string()
    );
    std::fs::write(suites.join("bench.toml"), toml).unwrap();
    let data = tmp.path().join("data");
    let py = python();
    let args = ["--suites-dir", suites.to_str().unwrap(), "--python", py.to_str().unwrap()];
    let server = RunningServer::start_with(&data, None, &args).await;
    server.sign_in().await;
    let (status, body) =
        server.post_json("/api/v1/experiments", &json!({"suite": "bench-slurm", "head": "main", "base": "main", "trials": 1})).await;
    assert_eq!(status, 201, "{body}");
    let id = body["id"].as_i64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let e = server.get_json(&format!("/api/v1/experiments/{id}")).await;
        if trials(&e).iter().any(|t| t["engine_state"] == "RUNNING") {
            break;
        }
        assert!(Instant::now() < deadline, "no job ran: {e}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    server.crash();

    let server = RunningServer::start_with(&data, None, &args).await;
    server.sign_in().await;
    let deadline = Instant::now() + Duration::from_secs(180);
    let e = loop {
        let e = server.get_json(&format!("/api/v1/experiments/{id}")).await;
        if e["status"] == "judged" || e["status"] == "errored" {
            break e;
        }
        assert!(Instant::now() < deadline, "the experiment did not end: {e}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(e["status"], "judged", "{e}");
    assert!(trials(&e).iter().all(|t| t["state"] == "succeeded" && t["attempt"] == 1), "followed, not re-queued: {e}");
    assert!(server.log_text().contains("following the cluster job again"), "{}", server.log_text());
    assert!(server.stop().success(), "a clean stop (which also stops the finelog server it adopted)");
}
