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

/// A repository whose benchmark waits `sleep` seconds in each of its two stages (sleep-bound jobs: how
/// many run at once is what is measured, not how fast).
fn sleepy_repo(dir: &std::path::Path, sleep: f64) -> std::path::PathBuf {
    use common::git::git;
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let bench = include_str!("../data/stage_bench.py").replace("SLEEP = 0.0", &format!("SLEEP = {sleep:?}"));
    std::fs::write(repo.join("bench.py"), bench).unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "a benchmark that waits in each stage"]);
    repo
}

/// The `bench-slurm` suite: the sleepy benchmark on the test Slurm, 1 CPU and 256 MiB a job.
fn sleepy_suite(repo: &std::path::Path, slurm: &Slurm, max_parallel: u32) -> String {
    format!(
        "name = \"bench-slurm\"\nkind = \"pipeline\"\nrepository = {:?}\nlauncher = \"cluster\"\n\
         command = [\"{{python}}\", \"{{worktree}}/bench.py\", \"--run-tag\", \"{{run_tag}}\", \"--finelog\", \"{{finelog_url}}\"]\n\
         timeout_minutes = 5\n[resources]\ncpu = 1\nram = \"256MiB\"\n\
         [cluster]\nprofile = \"slurm\"\npoll_max_secs = 1\nmax_parallel = {max_parallel}\nenv = {{ SLURM_CONF = {:?} }}\n",
        repo.display().to_string(),
        slurm.conf.display().to_string()
    )
}

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
    let app = TestApp::builder().python(python()).dispatcher(None).start().await;
    let suites = app.dir.path().join("suites");
    std::fs::create_dir_all(&suites).unwrap();
    let (text, _) = example_suite_text(tmp.path());
    // The job's memory limit (sbatch --mem) is the suite's RAM: the baseline's driver and two shard
    // processes peak at ~470 MiB together, memory-hungry's tokenize shards at ~930 MiB each.
    // max_parallel = 1: the test's node is this 2-core machine, where jobs side by side would measure each
    // other's CPU (and the controller stop below is about one running trial and the queued ones).
    let text = text.replace("launcher = \"local\"", "launcher = \"cluster\"").replace("ram = \"512MiB\"", "ram = \"800MiB\"")
        + &format!(
            "\n[cluster]\nprofile = \"slurm\"\nunreachable_after_secs = 4\npoll_max_secs = 1\nmax_parallel = 1\nenv = {{ SLURM_CONF = {:?} }}\n",
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
    // One pair, uncalibrated: the minhash stage's +100 % and more is measured, but untested (one pair
    // measures no spread; launch_zephyr decides it with a profile). The memory-hungry arm's oom is the
    // experiment's regression.
    let heavier = arm_report(&e, "treatment");
    assert_eq!(heavier["verdict"], "inconclusive", "{heavier}");
    let minhash = heavier["stages"].as_array().unwrap().iter().find(|s| s["stage"] == "stage3-Map → Write").unwrap();
    assert!(minhash["cpu_change_pct"].as_f64().unwrap() > 100.0, "{minhash}");
    assert!(minhash["reasons"].to_string().contains("untested: one pair"), "{minhash}");
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

/// `arbiter serve` killed (SIGKILL) with 6 Slurm jobs in flight: the restarted server follows every job by
/// its id (no re-queue, all at once) and the experiment is judged once.
#[tokio::test]
async fn a_restarted_server_follows_its_cluster_jobs() {
    let _trials = common::running_trials().await;
    use common::RunningServer;
    let tmp = tempfile::tempdir().unwrap();
    let slurm = Slurm::start_with_cpus(8);
    let repo = sleepy_repo(tmp.path(), 3.0);
    let suites = tmp.path().join("suites");
    std::fs::create_dir_all(&suites).unwrap();
    let toml = sleepy_suite(&repo, &slurm, 6);
    std::fs::write(suites.join("bench.toml"), toml).unwrap();
    let data = tmp.path().join("data");
    let py = python();
    let args = ["--suites-dir", suites.to_str().unwrap(), "--python", py.to_str().unwrap()];
    let server = RunningServer::start_with(&data, None, &args).await;
    server.sign_in().await;
    let (status, body) =
        server.post_json("/api/v1/experiments", &json!({"suite": "bench-slurm", "head": "main", "base": "main", "trials": 3})).await;
    assert_eq!(status, 201, "{body}");
    let id = body["id"].as_i64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let e = server.get_json(&format!("/api/v1/experiments/{id}")).await;
        if trials(&e).iter().filter(|t| t["engine_state"] == "RUNNING").count() == 6 {
            break;
        }
        assert!(Instant::now() < deadline, "6 jobs did not run at once: {e}");
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
    let log = server.log_text();
    assert!(
        log.contains("adopted the finelog server a previous run left"),
        "the restarted server reads the finelog its jobs write to: {log}"
    );
    assert_eq!(trials(&e).len(), 6, "{e}");
    assert!(trials(&e).iter().all(|t| t["state"] == "succeeded" && t["attempt"] == 1), "followed, not re-queued: {e}\n{log}");
    assert_eq!(log.matches("following the cluster job again").count(), 6, "{log}");
    assert_eq!(log.matches("experiment judged").count(), 1, "judged once: {log}");
    assert!(server.stop().success(), "a clean stop (which also stops the finelog server it adopted)");
}

/// A cluster holds many trials at once: two launchers' experiments × 2 arms × 4 trials of a sleep-bound
/// job on a node declared with 8 CPUs, the suite's `max_parallel = 4`. They finish in a few job durations,
/// not 16; never more than 4 jobs are in flight; each pair's two jobs start together; the second
/// launcher's trials start before the first one's last (a fair queue, not first-in-first-out). A cancel
/// with jobs in flight stops all of them.
#[tokio::test]
async fn a_cluster_runs_pairs_side_by_side_within_its_caps_and_fairly() {
    let _trials = common::running_trials().await;
    let tmp = tempfile::tempdir().unwrap();
    let slurm = Slurm::start_with_cpus(8);
    let repo = sleepy_repo(tmp.path(), 2.0);
    let app = TestApp::builder().python(python()).dispatcher(None).cluster_cap(8).start().await;
    let suites = app.dir.path().join("suites");
    std::fs::create_dir_all(&suites).unwrap();
    let toml = sleepy_suite(&repo, &slurm, 4);
    std::fs::write(suites.join("bench.toml"), toml).unwrap();
    engine::sync_suites(&app.store, &suite::load_dir(&suites).unwrap()).await.unwrap();
    let (first, second) = (app.signed_in(Role::Launcher).await, app.signed_in(Role::Launcher).await);
    let launch = json!({"suite": "bench-slurm", "head": "main", "base": "main", "trials": 4});
    let a = first.launch(launch.clone()).await;
    let b = second.launch(launch).await;

    // Sample the engine's queue while both run.
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let (conf, sampling) = (slurm.conf.clone(), sampling.clone());
        std::thread::spawn(move || {
            let mut most = 0;
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                let out = std::process::Command::new("squeue")
                    .args(["-h", "-t", "PENDING,RUNNING,CONFIGURING,COMPLETING", "-o", "%i"])
                    .env("SLURM_CONF", &conf)
                    .output()
                    .unwrap();
                most = most.max(String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.trim().is_empty()).count());
                std::thread::sleep(Duration::from_millis(250));
            }
            most
        })
    };
    let ea = first.wait_until_ended(a, 600).await;
    let eb = second.wait_until_ended(b, 600).await;
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    let most = sampler.join().unwrap();
    for e in [&ea, &eb] {
        assert_eq!(e["status"], "judged", "{e}");
        assert!(trials(e).iter().all(|t| t["state"] == "succeeded" && t["attempt"] == 1), "{e}");
    }
    assert!((3..=4).contains(&most), "at most max_parallel = 4 jobs in flight, and more than one pair at a time: {most}");

    // Job times as Slurm reports them (one-second resolution).
    // (repeat, start, end, submit): the submit time says whether a late start was Arbiter's or the engine's.
    let times = |e: &Value| -> Vec<(i64, i64, i64, i64)> {
        trials(e)
            .iter()
            .map(|t| {
                let (submit, start, end) = slurm.job_times(t["job_id"].as_str().unwrap());
                (t["repeat_index"].as_i64().unwrap(), start, end, submit)
            })
            .collect()
    };
    let (ta, tb) = (times(&ea), times(&eb));
    let all: Vec<&(i64, i64, i64, i64)> = ta.iter().chain(&tb).collect();
    let mut durations: Vec<i64> = all.iter().map(|(_, s, e, _)| e - s).collect();
    durations.sort();
    let job = durations[durations.len() / 2].max(1);
    let span = all.iter().map(|t| t.2).max().unwrap() - all.iter().map(|t| t.1).min().unwrap();
    eprintln!("16 jobs of ~{job} s at max_parallel 4: {span} s end to end ({:.1} job durations; serial: 16)", span as f64 / job as f64);
    assert!(span < 8 * job, "16 jobs of {job} s took {span} s: not run side by side");
    for t in [&ta, &tb] {
        for repeat in 0..4 {
            // Arbiter's part: both jobs handed to Slurm at one moment (its clock has whole seconds).
            let submits: Vec<i64> = t.iter().filter(|x| x.0 == repeat).map(|x| x.3).collect();
            assert!((submits[0] - submits[1]).abs() <= 1, "a pair's jobs are submitted together (repeat, start, end, submit): {t:?}");
            // Slurm's part (the test cluster schedules a batch job at submit: batch_sched_delay=0).
            let starts: Vec<i64> = t.iter().filter(|x| x.0 == repeat).map(|x| x.1).collect();
            assert_eq!(starts.len(), 2, "{t:?}");
            assert!((starts[0] - starts[1]).abs() <= 2, "a pair's jobs start within 2 s of each other (repeat, start, end, submit): {t:?}");
        }
    }
    let first_of_b = tb.iter().map(|t| t.1).min().unwrap();
    let last_of_a = ta.iter().map(|t| t.1).max().unwrap();
    assert!(first_of_b < last_of_a, "the second launcher did not wait for the first one's experiment: {ta:?} {tb:?}");
    let pairing = ea["report"]["pairing"].as_str().unwrap_or_default();
    assert!(pairing.starts_with("4 of 4 repeats ran as pairs submitted to the cluster together"), "{pairing}");
    assert!(pairing.contains("drawn at random"), "{pairing}");
    // Balanced: 4 pairs are two blocks of two, one control-first and one treatment-first pair in each.
    assert!(pairing.contains("the control went first in 2 of 4, a treatment in 2"), "{pairing}");
    // The order within each pair was planned and recorded, as each trial's position.
    let ranks = app.store.pair_ranks(a).await.unwrap();
    assert_eq!(ranks.len(), 8, "{ranks:?}");
    assert!(ranks.chunks(2).all(|p| p[0].0 == p[1].0 && p[0].2 == 0 && p[1].2 == 1), "{ranks:?}");

    // The preview's estimate knows the slots: two waves of four, not eight trials one after another.
    let dry = first
        .post_json("/api/v1/experiments", json!({"suite": "bench-slurm", "head": "main", "base": "main", "trials": 4, "dry_run": true}))
        .await;
    let plan = &dry.json()["plan"];
    assert!(plan["estimate_basis"].as_str().unwrap().contains("up to 4 at once"), "{plan}");
    let secs = plan["estimated_minutes"].as_f64().unwrap() * 60.0;
    assert!(secs < 4.0 * (job as f64 + 3.0), "8 trials of ~{job} s, 4 at once: estimated {secs} s");

    // A cancel with jobs in flight stops every one of them.
    let c = first.launch(json!({"suite": "bench-slurm", "head": "main", "base": "main", "trials": 4})).await;
    wait_for(&first, c, "jobs running", |e| trials(e).iter().filter(|t| t["engine_state"] == "RUNNING").count() >= 2).await;
    let r = first.post_json(&format!("/api/v1/experiments/{c}/cancel"), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let e = wait_for(&first, c, "the cancel to land", |e| trials(e).iter().all(|t| t["state"] == "cancelled")).await;
    assert_eq!(e["status"], "cancelled", "{e}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while slurm.in_flight() > 0 {
        assert!(Instant::now() < deadline, "jobs left after the cancel: {}", slurm.cli("squeue", &[]));
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Two `serve` replicas on one PostgreSQL share the engine's slots: with `--engine-cap 4` on both, never
/// more than 4 jobs are in flight (sampled from `squeue`), though each replica alone would allow 4.
#[tokio::test]
async fn two_replicas_on_one_postgres_never_exceed_the_engine_cap() {
    let _trials = common::running_trials().await;
    let db = store::testing::TestDb::postgres().await;
    let tmp = tempfile::tempdir().unwrap();
    let slurm = Slurm::start_with_cpus(8);
    let repo = sleepy_repo(tmp.path(), 2.0);
    let replica = || TestApp::builder().python(python()).dispatcher(None).cluster_cap(4).database_url(&db.url).start();
    let (a, b) = (replica().await, replica().await);
    let suites = tmp.path().join("suites");
    std::fs::create_dir_all(&suites).unwrap();
    let toml = sleepy_suite(&repo, &slurm, 8);
    std::fs::write(suites.join("bench.toml"), toml).unwrap();
    engine::sync_suites(&a.store, &suite::load_dir(&suites).unwrap()).await.unwrap();
    let launcher = a.signed_in(Role::Launcher).await;
    let launch = json!({"suite": "bench-slurm", "head": "main", "base": "main", "trials": 4});
    let ids = [launcher.launch(launch.clone()).await, launcher.launch(launch).await];
    let mut most = 0;
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut ended = Vec::new();
    while ended.len() < 2 {
        most = most.max(slurm.in_flight());
        ended.clear();
        for id in ids {
            let e = launcher.get(&format!("/api/v1/experiments/{id}")).await.json();
            if ["judged", "errored", "cancelled"].contains(&e["status"].as_str().unwrap_or("")) {
                ended.push(e);
            }
        }
        assert!(Instant::now() < deadline, "the experiments did not end");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(most <= 4, "at most the engine cap of 4 in flight across both replicas: {most}");
    assert!(most >= 3, "side by side: {most}");
    for e in &ended {
        assert_eq!(e["status"], "judged", "{e}");
    }
    drop((a, b));
    db.cleanup().await;
}

/// Benchmark (not in the test command: `scripts/bench-cluster.sh`): the wall time of one 2 arms × 8 trials
/// experiment of a sleep-bound ~8 s job on the test Slurm (node declared with 8 CPUs) at `max_parallel`
/// 1, 2, 4 and 8, and its ratio to the serial time.
#[tokio::test]
#[ignore = "a benchmark: scripts/bench-cluster.sh"]
async fn bench_cluster_parallelism() {
    let _trials = common::running_trials().await;
    let tmp = tempfile::tempdir().unwrap();
    let slurm = Slurm::start_with_cpus(8);
    let repo = sleepy_repo(tmp.path(), 3.0);
    let mut serial = None;
    println!("bench: 2 arms x 8 trials of a sleep-bound job on the test Slurm (8 CPUs declared), --engine-cap 8");
    for max_parallel in [1u32, 2, 4, 8] {
        let app = TestApp::builder().python(python()).dispatcher(None).cluster_cap(8).start().await;
        let suites = app.dir.path().join("suites");
        std::fs::create_dir_all(&suites).unwrap();
        std::fs::write(suites.join("bench.toml"), sleepy_suite(&repo, &slurm, max_parallel)).unwrap();
        engine::sync_suites(&app.store, &suite::load_dir(&suites).unwrap()).await.unwrap();
        let launcher = app.signed_in(Role::Launcher).await;
        let started = Instant::now();
        let id = launcher.launch(json!({"suite": "bench-slurm", "head": "main", "base": "main", "trials": 8})).await;
        let e = launcher.wait_until_ended(id, 1200).await;
        let wall = started.elapsed().as_secs_f64();
        assert_eq!(e["status"], "judged", "{e}");
        let jobs: Vec<(i64, i64)> = trials(&e)
            .iter()
            .map(|t| {
                let (_, start, end) = slurm.job_times(t["job_id"].as_str().unwrap());
                (start, end)
            })
            .collect();
        let mut durations: Vec<i64> = jobs.iter().map(|(s, e)| e - s).collect();
        durations.sort();
        let serial_wall = *serial.get_or_insert(wall);
        println!(
            "bench: max_parallel {max_parallel}: {wall:.1} s wall, {:.2}x the serial time ({:.1}x faster); median job {} s",
            wall / serial_wall,
            serial_wall / wall,
            durations[durations.len() / 2]
        );
    }
}
