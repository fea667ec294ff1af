//! The trial sandbox (`engine/src/queue/sandbox.rs`), for real: branches whose code tries to reach
//! Arbiter's database, its binary cache, other experiments' files and the PostgreSQL store — from a
//! pipeline trial, from a warp build and from a warp server under test — are refused at each and still
//! judged; rows and binaries a trial leaves are not trusted to it.

use crate::common;
use crate::launch_run::{app, launch_with};
use crate::launch_warp::app_with;
use common::finelog::FinelogServer;
use common::warp::{example_repo, fast, s3s_fs, suite_text};
use serde_json::{json, Value};
use std::path::Path;
use store::people::Role;

/// A Python program that tries each way out of the sandbox and prints `SANDBOX {label} {what}: reached`
/// or `…: refused (Error)`.
fn probes(label: &str, db: &Path, cache: &Path, other_log: &Path) -> String {
    format!(
        r#"import os, socket
label = {label:?}
def attempt(what, f):
    try:
        f()
        print(f"SANDBOX {{label}} {{what}}: reached", flush=True)
    except Exception as e:
        print(f"SANDBOX {{label}} {{what}}: refused ({{type(e).__name__}})", flush=True)
attempt("read arbiter.db", lambda: open({db:?}, "rb").read(16))
attempt("write the cache", lambda: open({cache:?}, "w").write("planted"))
attempt("read another experiment's log", lambda: open({log:?}).read())
def must(found):
    if not found:
        raise PermissionError("hidden")
attempt("read /etc/shadow", lambda: must(open("/etc/shadow").read()))
attempt("read a file in the server user's home", lambda: must(open({home:?}).read()))
attempt("connect to PostgreSQL", lambda: socket.create_connection(("127.0.0.1", 5432), timeout=2).close())
def unix_postgres():
    s = socket.socket(socket.AF_UNIX)
    s.connect("/var/run/postgresql/.s.PGSQL.5432")
    s.close()
attempt("connect to PostgreSQL's socket", unix_postgres)
if os.geteuid() != 0 and os.path.exists({root_only:?}):
    attempt("read a file only root may read", lambda: must(open({root_only:?}).read()))
"#,
        db = db.display().to_string(),
        cache = cache.display().to_string(),
        log = other_log.display().to_string(),
        home = home_secret().display().to_string(),
        root_only = root_only_file().display().to_string(),
    )
}

/// A file only root may read, outside every folder a sandbox hides (a `DATABASE_URL` with its password,
/// say): made once when the tests run as root. Every sandboxed process of a branch runs as an
/// unprivileged host user then (never root mapped into a namespace), and is refused it.
fn root_only_file() -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = std::path::PathBuf::from("/var/tmp/arbiter-root-only-probe");
    if unsafe { libc::geteuid() } == 0 && !path.is_file() {
        std::fs::write(&path, "DATABASE_URL=postgres://arbiter:hunter2@db/arbiter\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    path
}

/// A file only the user the tests (and so `serve`) run as may read, in its home folder: made once.
fn home_secret() -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = Path::new(&std::env::var("HOME").unwrap()).join(".arbiter-sandbox-probe");
    if !path.is_file() {
        std::fs::write(&path, "a secret of the server's user\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    path
}

const WAYS_OUT: [&str; 7] = [
    "read arbiter.db",
    "write the cache",
    "read another experiment's log",
    "read /etc/shadow",
    "read a file in the server user's home",
    "connect to PostgreSQL",
    "connect to PostgreSQL's socket",
];

/// Every way out was tried under `label` and refused.
fn all_refused(label: &str, log: &str) {
    for what in WAYS_OUT {
        assert!(log.contains(&format!("SANDBOX {label} {what}: refused")), "{label} {what}: {log}");
    }
    if unsafe { libc::geteuid() } == 0 {
        let what = "read a file only root may read";
        assert!(log.contains(&format!("SANDBOX {label} {what}: refused")), "{label} runs as an unprivileged host user: {log}");
    }
    assert!(!log.contains(": reached"), "{log}");
}

/// Rows in finelog are not trusted to their writer: a branch whose code only prints another trial's
/// execution id (so finelog has rows for it, written before this trial ran) gets `infra_failed`
/// (foreign_rows), never those rows; the trial that owns them keeps them.
#[tokio::test]
async fn a_trial_cannot_claim_another_trials_execution() {
    let _trials = common::running_trials().await;
    let tmp = tempfile::tempdir().unwrap();
    let finelog = FinelogServer::start(None);
    let (app, launcher) = app(tmp.path(), &finelog).await;
    let first = launch_with(&launcher, "main", 1).await;
    let e = launcher.wait_until_ended(first, 180).await;
    assert_eq!(e["status"], "judged", "{e}");
    let owner = &e["trials"][0];
    let stolen = app.store.trial_run(owner["id"].as_i64().unwrap()).await.unwrap().execution_ids[0].clone();

    // A branch that claims the first trial's execution: it prints the id and exits 0.
    let repo = tmp.path().join("repo");
    common::git::git(&repo, &["checkout", "-q", "-b", "claims", "main"]);
    std::fs::write(repo.join("bench.py"), format!("print('zephyr execution {stolen} finished')\n")).unwrap();
    common::git::git(&repo, &["commit", "-q", "-am", "claims another trial's execution"]);
    common::git::git(&repo, &["checkout", "-q", "main"]);
    let second = launch_with(&launcher, "claims", 1).await;
    let e = launcher.wait_until_ended(second, 240).await;
    let treatment_arm = e["arms"].as_array().unwrap().iter().find(|a| a["name"] == "treatment").unwrap()["id"].clone();
    let claims: Vec<&Value> =
        e["trials"].as_array().unwrap().iter().filter(|t| t["arm_id"] == treatment_arm && t["role"] == "measured").collect();
    assert_eq!(claims.len(), 2, "the first infrastructure failure is retried once: {e}");
    for t in &claims {
        assert_eq!((t["state"].as_str(), t["infra_reason"].as_str()), (Some("infra_failed"), Some("foreign_rows")), "{e}");
        let detail = t["detail"].as_str().unwrap();
        assert!(detail.contains(&format!("execution {stolen} already belongs to trial {}", owner["id"])), "{detail}");
        assert!(app.store.stage_rows(t["id"].as_i64().unwrap()).await.unwrap().is_empty(), "no rows were taken");
    }
    assert_ne!(e["verdict"], "pass", "no verdict rests on stolen rows: {e}");
    let kept = app.store.stage_rows(owner["id"].as_i64().unwrap()).await.unwrap();
    assert!(!kept.is_empty(), "the owner keeps its rows");
    // Each row carries finelog's timestamp, inside its trial's run: what the window check reads.
    let (from, to) = (owner["started_at"].as_i64().unwrap(), owner["finished_at"].as_i64().unwrap());
    for r in &kept {
        let at = r.ts.as_deref().and_then(judge::units::parse_utc_ms).unwrap_or_else(|| panic!("no readable ts: {r:?}"));
        assert!(from - 5_000 <= at && at <= to + 5_000, "{r:?} written at {at}, the trial ran {from}..{to}");
    }
}

/// A trial is code from a branch: it runs sandboxed. A branch whose benchmark first tries to read
/// `arbiter.db`, write into the binary cache, read another experiment's log and connect to PostgreSQL is
/// refused each (its own log says so), and still runs and is judged like any other.
#[tokio::test]
async fn a_trial_cannot_reach_arbiters_data_or_its_database() {
    let _trials = common::running_trials().await;
    let tmp = tempfile::tempdir().unwrap();
    let finelog = FinelogServer::start(None);
    let (app, launcher) = app(tmp.path(), &finelog).await;
    assert!(
        matches!(app.state.engine.queue.sandbox, engine::queue::sandbox::TrialSandbox::Bwrap(_)),
        "scripts/setup.sh installs bubblewrap"
    );
    let first = launch_with(&launcher, "main", 1).await;
    assert_eq!(launcher.wait_until_ended(first, 180).await["status"], "judged");
    let data = app.state.data_dir.clone();
    let other_log = engine::experiment_dir(&data, first).join("logs/trial-0-1.log");
    assert!(data.join("arbiter.db").is_file() && other_log.is_file(), "what the trial will look for exists outside");
    std::fs::create_dir_all(data.join("cache")).unwrap();

    let repo = tmp.path().join("repo");
    let probes = probes("trial", &data.join("arbiter.db"), &data.join("cache/planted"), &other_log);
    // A file only root may read, outside every folder the sandbox hides (a DATABASE_URL's password, say):
    // a trial is an unprivileged host user, not root mapped into a namespace.
    let root_only = std::path::PathBuf::from(format!("/var/tmp/arbiter-root-only-{}", std::process::id()));
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(&root_only, "DATABASE_URL=postgres://arbiter:hunter2@db/arbiter\n").unwrap();
        std::fs::set_permissions(&root_only, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let as_root = unsafe { libc::geteuid() } == 0;
    let who = format!(
        "import os\nprint(f\"SANDBOX trial uid {{os.getuid()}}\", flush=True)\nattempt(\"read a root-only file\", lambda: must(open({:?}).read()))\n",
        root_only.display().to_string()
    );
    common::git::git(&repo, &["checkout", "-q", "-b", "snoops", "main"]);
    let bench = std::fs::read_to_string(repo.join("bench.py")).unwrap();
    std::fs::write(repo.join("bench.py"), format!("{probes}\n{who}\n{bench}")).unwrap();
    common::git::git(&repo, &["commit", "-q", "-am", "looks around first"]);
    common::git::git(&repo, &["checkout", "-q", "main"]);
    let second = launch_with(&launcher, "snoops", 1).await;
    let e = launcher.wait_until_ended(second, 240).await;
    assert_eq!(e["status"], "judged", "{e}");
    let seq = common::measured_seq(&e, "treatment");
    let log = std::fs::read_to_string(engine::experiment_dir(&data, second).join(format!("logs/trial-{seq}-1.log"))).unwrap();
    let _ = std::fs::remove_file(&root_only);
    all_refused("trial", &log);
    assert!(!data.join("cache/planted").exists(), "nothing was planted in the cache");
    if as_root {
        let user = engine::queue::host_user::lookup(engine::queue::host_user::TRIAL_USER).expect("serve made the trial user");
        assert!(log.contains(&format!("SANDBOX trial uid {}", user.uid)), "the trial runs as {}: {log}", user.name);
        assert!(log.contains("SANDBOX trial read a root-only file: refused"), "{log}");
    }
    // Still measured: its stage rows reached finelog through the relay, and the verdict stands on them.
    assert!(e["trials"].as_array().unwrap().iter().all(|t| t["state"] == "succeeded"), "{e}");
}

/// A warp phase's build and server are code from the branch too, sandboxed alike: a branch whose build and
/// whose server (before it execs s3s-fs) try each way out is refused at each, and its phases still run and
/// are judged; the load driver reaches the sandboxed server through its network namespace. A build that
/// leaves a link to Arbiter's database as its binary fails its phase, and nothing is copied into the cache.
#[tokio::test]
async fn a_warp_build_and_server_cannot_reach_arbiters_data_or_its_database() {
    s3s_fs();
    let tmp = tempfile::tempdir().unwrap();
    let repo = example_repo(tmp.path());
    let app = app_with(&[suite_text("s3s-fast", &repo, &fast(), "")]).await;
    let launcher = app.signed_in(Role::Launcher).await;
    let _trials = common::running_trials().await;
    let first = launcher.launch(json!({"suite": "s3s-fast", "head": "main", "base": "main"})).await;
    assert_eq!(launcher.wait_until_ended(first, 180).await["status"], "judged");
    let data = app.state.data_dir.clone();
    let other_log = engine::experiment_dir(&data, first).join("logs/trial-0-1.log");
    assert!(data.join("arbiter.db").is_file() && other_log.is_file(), "what the trial will look for exists outside");
    std::fs::create_dir_all(data.join("cache")).unwrap();
    let probes = |label| probes(label, &data.join("arbiter.db"), &data.join("cache/planted"), &other_log);

    // snoops: build.sh and the server's launcher each run the probes first.
    common::git::git(&repo, &["checkout", "-q", "-b", "snoops", "main"]);
    let build = std::fs::read_to_string(repo.join("build.sh")).unwrap();
    let build = build.replacen("set -eu\n", &format!("set -eu\npython3 - <<'PY'\n{}PY\n", probes("build")), 1);
    std::fs::write(repo.join("build.sh"), build).unwrap();
    std::fs::write(
        repo.join("launcher.sh"),
        format!("#!/bin/sh\npython3 - >&2 <<'PY'\n{}PY\nexec \"@S3S_FS@\" \"$@\"\n", probes("server")),
    )
    .unwrap();
    common::git::git(&repo, &["commit", "-q", "-am", "looks around first"]);
    // links: the build leaves target/s3-server as a link to Arbiter's database.
    common::git::git(&repo, &["checkout", "-q", "-b", "links", "main"]);
    let db = data.join("arbiter.db").display().to_string();
    std::fs::write(repo.join("build.sh"), format!("#!/bin/sh\nmkdir -p target\nln -sf {db:?} target/s3-server\n")).unwrap();
    common::git::git(&repo, &["commit", "-q", "-am", "links the database"]);
    common::git::git(&repo, &["checkout", "-q", "main"]);

    let second =
        launcher.launch(json!({"suite": "s3s-fast", "head": "snoops", "base": "main", "arms": [{"name": "links", "ref": "links"}]})).await;
    let e = launcher.wait_until_ended(second, 240).await;
    assert_eq!(e["status"], "judged", "{e}");
    let trial = |arm: &str| -> Value {
        let id = &e["arms"].as_array().unwrap().iter().find(|a| a["name"] == arm).unwrap()["id"];
        e["trials"].as_array().unwrap().iter().find(|t| &t["arm_id"] == id).unwrap().clone()
    };
    let snoops = trial("treatment");
    assert_eq!(snoops["state"], "succeeded", "measured from inside the sandbox: {e}");
    let logs = engine::experiment_dir(&data, second).join("logs");
    let name = format!("trial-{}-1", snoops["seq"]);
    let build_log = std::fs::read_to_string(logs.join(format!("{name}.log"))).unwrap();
    all_refused("build", &build_log);
    assert!(build_log.contains("in the trial sandbox"), "{build_log}");
    all_refused("server", &std::fs::read_to_string(logs.join(format!("{name}.server.log"))).unwrap());
    assert!(!data.join("cache/planted").exists(), "nothing was planted in the cache");

    let links = trial("links");
    assert_eq!(links["state"], "failed", "{e}");
    assert!(links["detail"].as_str().unwrap().contains("as a link or folder, not a regular file"), "{links}");
    let cached: Vec<_> = walk(&data.join("cache"));
    let db_size = std::fs::metadata(data.join("arbiter.db")).unwrap().len();
    assert!(cached.iter().all(|p| std::fs::metadata(p).unwrap().len() != db_size), "no copy of the database in the cache: {cached:?}");
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// What a trial tries against finelog through its relay, each printed `FINELOG {what}: reached` or
/// `…: refused (Error)`: a `COPY … TO` a file outside the sandbox (finelog, outside, would write it),
/// dropping every experiment's rows, and a plain Connect JSON query.
fn finelog_attacks(marker: &Path) -> String {
    format!(
        r#"import os, json, urllib.request
from finelog.client.log_client import LogClient
url = os.environ["ARBITER_FINELOG_URL"]
client = LogClient.connect(url, timeout_ms=5000)
def attempt(what, f):
    try:
        f()
        print(f"FINELOG {{what}}: reached", flush=True)
    except Exception as e:
        print(f"FINELOG {{what}}: refused ({{type(e).__name__}}: {{str(e)[:160]}})", flush=True)
attempt("COPY to a file", lambda: client.query("COPY (SELECT 'core.fsmonitor' AS a) TO '{marker}' STORED AS CSV"))
attempt("drop zephyr.stage", lambda: client.drop_table("zephyr.stage"))
def raw_query():
    req = urllib.request.Request(url + "/finelog.stats.StatsService/Query", data=json.dumps({{"sql": "SELECT 1"}}).encode(),
                                 headers={{"content-type": "application/json", "connect-protocol-version": "1"}})
    urllib.request.urlopen(req, timeout=5).read()
attempt("query", raw_query)
client.close()
"#,
        marker = marker.display()
    )
}

/// finelog answers any SQL to whoever reaches it, `COPY … TO` included. A trial reaches it only through
/// its relay, whose gate passes the RPCs that append rows and nothing else: a branch whose benchmark
/// first tries `COPY` to a file, `DropTable` and a plain query gets `permission_denied` for each, the
/// file is not written, the rows of an earlier experiment are still there — and the trial's own rows
/// still reach finelog, so it is judged. The same `COPY` sent to finelog directly does write the file:
/// the attack is real, and only the gate stops it.
#[tokio::test]
async fn a_trial_cannot_use_finelog_to_write_files_or_drop_rows() {
    let _trials = common::running_trials().await;
    let tmp = tempfile::tempdir().unwrap();
    let finelog = FinelogServer::start(None);
    let (app, launcher) = app(tmp.path(), &finelog).await;
    let first = launch_with(&launcher, "main", 1).await;
    assert_eq!(launcher.wait_until_ended(first, 180).await["status"], "judged");
    let first_trial = app.store.trials(first).await.unwrap()[0].id;
    let ids = app.store.trial_run(first_trial).await.unwrap().execution_ids;
    let reader = engine::queue::finelog::Finelog::new(&finelog.url).unwrap();
    let before = reader.stage_rows(&ids).await.unwrap().len();
    assert!(before > 0, "finelog has the first experiment's rows: {ids:?}");

    let marker = tmp.path().join("planted.gitconfig");
    let repo = tmp.path().join("repo");
    common::git::git(&repo, &["checkout", "-q", "-b", "attacks", "main"]);
    let bench = std::fs::read_to_string(repo.join("bench.py")).unwrap();
    std::fs::write(repo.join("bench.py"), format!("{}\n{bench}", finelog_attacks(&marker))).unwrap();
    common::git::git(&repo, &["commit", "-q", "-am", "attacks finelog first"]);
    common::git::git(&repo, &["checkout", "-q", "main"]);
    let second = launch_with(&launcher, "attacks", 1).await;
    let e = launcher.wait_until_ended(second, 240).await;
    assert_eq!(e["status"], "judged", "{e}");
    let seq = common::measured_seq(&e, "treatment");
    let log = std::fs::read_to_string(engine::experiment_dir(&app.state.data_dir, second).join(format!("logs/trial-{seq}-1.log"))).unwrap();
    for what in ["COPY to a file", "drop zephyr.stage", "query"] {
        let line = log.lines().find(|l| l.starts_with(&format!("FINELOG {what}:"))).unwrap_or_else(|| panic!("{what}: {log}"));
        assert!(line.contains("refused") && (line.contains("not open to trials") || line.contains("403")), "{line}");
    }
    assert!(!marker.exists(), "finelog wrote the file a trial asked for");
    assert_eq!(reader.stage_rows(&ids).await.unwrap().len(), before, "an earlier experiment's rows are intact");
    assert!(e["trials"].as_array().unwrap().iter().all(|t| t["state"] == "succeeded"), "its own rows passed the gate: {e}");

    // Without the gate, the same COPY writes the file: the test above could fail.
    let direct = reqwest::Client::new()
        .post(format!("{}/finelog.stats.StatsService/Query", finelog.url))
        .header("connect-protocol-version", "1")
        .json(&json!({"sql": format!("COPY (SELECT 'core.fsmonitor' AS a) TO '{}' STORED AS CSV", marker.display())}))
        .send()
        .await
        .unwrap();
    assert!(direct.status().is_success(), "{:?}", direct.text().await);
    assert!(marker.exists(), "finelog itself writes files on request");
}

/// Each limit a trial can hit, from branches of the stage benchmark that first do one thing too much:
/// allocate 1 GiB (memory: 128 MiB a worker → 704 MiB), start 300 processes (256 here), spin two
/// processes past the CPU-seconds budget (cpu 0.05 × 60 s = 3), write a 48 MiB file (disk 32 MiB), write
/// 40 MiB into its scratch folder (`TMPDIR`: a 32 MiB tmpfs when serve is root), write 40 MiB into its
/// worktree in files of 2 MiB (capped at 32 MiB in all when serve is root: `queue::mounts`). Each
/// trial fails with its limit as its reason, once (a branch's failure is not retried). A branch that
/// prints 40 MiB before its benchmark is cut at the log's cap (32 MiB), keeps the execution id it
/// printed after the cut, and is measured.
#[tokio::test]
async fn each_limit_stops_its_trial_with_the_reason() {
    let _trials = common::running_trials().await;
    let tmp = tempfile::tempdir().unwrap();
    let finelog = FinelogServer::start(None);
    let (app, launcher) = app(tmp.path(), &finelog).await;
    let suites = app.dir.path().join("suites");
    let toml = common::bench::suite_toml(&tmp.path().join("repo"), &common::finelog::python())
        .replace("name = \"stage-bench\"", "name = \"limits\"")
        .replace("cpu = 1\nram = \"2GiB\"", "cpu = 0.05\nram = \"128MiB\"\ndisk = \"32MiB\"");
    std::fs::write(suites.join("limits.toml"), toml).unwrap();
    engine::sync_suites(&app.store, &suite::load_dir(&suites).unwrap()).await.unwrap();

    let repo = tmp.path().join("repo");
    let bench = std::fs::read_to_string(repo.join("bench.py")).unwrap();
    let branches = [
        ("hungry", "x = b'x' * (1 << 30)\n"),
        ("forky", "import subprocess\nkids = [subprocess.Popen(['sleep', '20']) for _ in range(300)]\n"),
        ("spinning", "import multiprocessing\ndef spin():\n    while True: pass\nif __name__ == '__main__':\n    [multiprocessing.Process(target=spin).start() for _ in range(2)]\n    spin()\n"),
        ("writer", "open('big.bin', 'wb').write(b'x' * (48 << 20))\n"),
        ("filler", "import os\nfor i in range(20):\n    open(os.path.join(os.environ['TMPDIR'], f'part{i}'), 'wb').write(b'x' * (2 << 20))\n"),
        ("spreader", "for i in range(20):\n    open(f'spread{i}.bin', 'wb').write(b'x' * (2 << 20))\n"),
        ("chatty", "import sys\nfor _ in range(40):\n    sys.stdout.write('y' * (1 << 20) + '\\n')\nsys.stdout.flush()\n"),
    ];
    for (branch, first) in branches {
        common::git::git(&repo, &["checkout", "-q", "-b", branch, "main"]);
        std::fs::write(repo.join("bench.py"), format!("{first}\n{bench}")).unwrap();
        common::git::git(&repo, &["commit", "-q", "-am", branch]);
        common::git::git(&repo, &["checkout", "-q", "main"]);
    }
    let arms: Vec<Value> = branches[1..].iter().map(|(b, _)| json!({"name": b, "ref": b})).collect();
    let r = launcher
        .post_json(
            "/api/v1/experiments",
            json!({"suite": "limits", "head": "hungry", "base": "main", "trials": 1, "warm_up": 0, "arms": arms}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["id"].as_i64().unwrap();
    let e = launcher.wait_until_ended(id, 420).await;
    let trials_of = |arm: &str| -> Vec<Value> {
        let arm_id = &e["arms"].as_array().unwrap().iter().find(|a| a["name"] == arm).unwrap_or_else(|| panic!("{arm}: {e}"))["id"];
        e["trials"].as_array().unwrap().iter().filter(|t| &t["arm_id"] == arm_id).cloned().collect()
    };
    let mut expected =
        vec![("treatment", "limit: memory"), ("forky", "limit: processes"), ("spinning", "limit: CPU time"), ("writer", "limit: disk")];
    // The scratch folder and the worktree are capped in all where serve may mount (as root).
    if unsafe { libc::geteuid() } == 0 {
        expected.push(("filler", "limit: disk"));
        expected.push(("spreader", "limit: disk"));
    }
    for (arm, reason) in expected {
        let trials = trials_of(arm);
        assert_eq!(trials.len(), 1, "{arm}: a limit hit is not retried: {e}");
        assert_eq!(trials[0]["state"], "failed", "{arm}: {e}");
        assert!(trials[0]["detail"].as_str().unwrap().starts_with(reason), "{arm}: {}", trials[0]["detail"]);
    }
    let chatty = &trials_of("chatty")[0];
    assert_eq!(chatty["state"], "succeeded", "{chatty}");
    let log_path = engine::experiment_dir(&app.state.data_dir, id).join(format!("logs/trial-{}-1.log", chatty["seq"]));
    let size = std::fs::metadata(&log_path).unwrap().len();
    assert!(size < (32 << 20) + 4096, "the log is capped: {size} bytes");
    let tail = engine::tail(&log_path, 2, 4096);
    assert!(tail.contains("the log was cut at 32 MiB; execution ids printed after it:"), "{tail}");
}

/// A warp phase's build and its server under test have limits too (memory where the suite gives `ram`,
/// processes, file size; no CPU budget — the server's CPU is what is measured): a build that starts 300
/// processes and a server whose launcher does fail their phases with the limit as the reason.
#[tokio::test]
async fn a_warp_build_and_server_stop_at_their_limits() {
    s3s_fs();
    let tmp = tempfile::tempdir().unwrap();
    let repo = example_repo(tmp.path());
    let app = app_with(&[suite_text("s3s-fast", &repo, &fast(), "")]).await;
    let launcher = app.signed_in(Role::Launcher).await;
    let _trials = common::running_trials().await;
    let fork = "python3 -c \"import subprocess; kids = [subprocess.Popen(['sleep', '20']) for _ in range(300)]\"\n";
    common::git::git(&repo, &["checkout", "-q", "-b", "forky-build", "main"]);
    let build = std::fs::read_to_string(repo.join("build.sh")).unwrap();
    std::fs::write(repo.join("build.sh"), build.replacen("set -eu\n", &format!("set -eu\n{fork}"), 1)).unwrap();
    common::git::git(&repo, &["commit", "-q", "-am", "forks in its build"]);
    common::git::git(&repo, &["checkout", "-q", "-b", "forky-server", "main"]);
    std::fs::write(repo.join("launcher.sh"), format!("#!/bin/sh\nset -e\n{fork}exec \"@S3S_FS@\" \"$@\"\n")).unwrap();
    common::git::git(&repo, &["commit", "-q", "-am", "forks before its server"]);
    common::git::git(&repo, &["checkout", "-q", "main"]);
    let id = launcher
        .launch(
            json!({"suite": "s3s-fast", "head": "forky-build", "base": "main", "arms": [{"name": "forky-server", "ref": "forky-server"}]}),
        )
        .await;
    let e = launcher.wait_until_ended(id, 240).await;
    let trial = |arm: &str| -> Value {
        let arm_id = &e["arms"].as_array().unwrap().iter().find(|a| a["name"] == arm).unwrap()["id"];
        e["trials"].as_array().unwrap().iter().find(|t| &t["arm_id"] == arm_id).unwrap().clone()
    };
    for (arm, what) in [
        ("treatment", "the build of treatment stopped at its limit: processes"),
        ("forky-server", "the server under test stopped at its limit: processes"),
    ] {
        let t = trial(arm);
        assert_eq!(t["state"], "failed", "{arm}: {t}");
        assert!(t["detail"].as_str().unwrap().contains(what), "{arm}: {}", t["detail"]);
    }
}
