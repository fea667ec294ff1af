//! A phase in local mode: the arm's binary, a fresh server on a free loopback port with fresh data dirs,
//! throwaway keys and the phase's environment; health polled until the suite's timeout (failing fast when
//! the process exits first, with the last 50 lines of its log); the rounds; then the server is stopped
//! (SIGTERM to its process group, SIGKILL after 10 s) and its data dirs removed. The server is code from
//! the branch: it runs in the trial sandbox (`queue::sandbox`), its data dirs writable, its binary
//! read-only, in a network namespace of its own which the health check and the load driver join.

use crate::launch::request::PlannedArm;
use crate::launch::submit::StoredPlan;
use crate::queue::runner::Outcome;
use crate::queue::sandbox::{inner_pid, scratch_dir, wrap, View};
use crate::warp::phase::{binary_for, phase_file, Phase, PhaseRecord};
use crate::warp::rounds::{healthy, rounds, Enter};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// A free loopback port (the kernel's choice; the listener is dropped right before the server binds).
fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).map_err(|e| format!("no free port: {e}"))
}

/// Runs the phase on a server Arbiter starts; `on_server` gets its pid.
pub(super) async fn local(
    p: &mut Phase<'_>,
    plan: &StoredPlan,
    arm: &PlannedArm,
    drive_sync: bool,
    record: &mut PhaseRecord,
    on_server: impl FnOnce(u32),
) -> Outcome {
    let spec = p.spec;
    let bwrap = match p.l.sandbox.bwrap() {
        Ok(b) => b,
        Err(e) => return Outcome::launcher_error(e),
    };
    let binary = match binary_for(p, plan, arm, record).await {
        Ok(Some(b)) => b,
        Ok(None) => return Outcome::launcher_error("the suite names no binary".into()),
        Err(o) => return o,
    };
    let port = match free_port() {
        Ok(port) => port,
        Err(e) => return Outcome::launcher_error(e),
    };
    let endpoint = format!("http://127.0.0.1:{port}");
    record.endpoint = endpoint.clone();
    // The server's disks live with the phase's scratch (removed after it, and with the trial's scratch),
    // never under `experiments/{id}/`, the tree downloads serve: what the branch's server does with its
    // disks (a link swapped in for a folder, say) is nothing a download ever walks.
    let data_root = p.l.data_dir.join("sandbox").join(format!("trial-{}-{}-disks", p.trial.id, p.trial.attempt));
    let _ = std::fs::remove_dir_all(&data_root);
    let dirs: Vec<String> = (1..=spec.disks).map(|i| data_root.join(format!("d{i}")).to_string_lossy().into_owned()).collect();
    for d in &dirs {
        if let Err(e) = std::fs::create_dir_all(d) {
            return Outcome::launcher_error(format!("cannot make the data dir {d}: {e}"));
        }
    }
    // Throwaway keys, hex so that any server accepts their characters.
    let hex = crate::random_hex;
    let (access_key, secret_key) = (format!("arb{}", hex(16)), hex(40));
    let vars: std::collections::BTreeMap<&str, String> = [
        ("binary", binary.to_string_lossy().into_owned()),
        ("port", port.to_string()),
        ("data_dirs", dirs.join(",")),
        ("access_key", access_key.clone()),
        ("secret_key", secret_key.clone()),
    ]
    .into_iter()
    .collect();
    // `{data_dirs}` alone in an element becomes one element per dir; inside other text, a comma list.
    let mut template = Vec::new();
    for e in &spec.server {
        if e == "{data_dirs}" {
            template.extend(dirs.iter().cloned());
        } else {
            template.push(e.clone());
        }
    }
    let mut argv = match plan.suite.render(&template, &plan.launch.fingerprint, &vars) {
        Ok(a) => a,
        Err(e) => return Outcome::launcher_error(e),
    };
    let mut env: Vec<(String, String)> = Vec::new();
    for keep in crate::queue::runner::KEPT_ENV {
        if let Ok(v) = std::env::var(keep) {
            env.push((keep.to_string(), v));
        }
    }
    if let Some(name) = &spec.drive_sync.env {
        env.push((name.clone(), if drive_sync { spec.drive_sync.on.clone() } else { spec.drive_sync.off.clone() }));
    }
    for (k, v) in &spec.server_env {
        let value = v.replace("{access_key}", &access_key).replace("{secret_key}", &secret_key);
        env.push((k.clone(), value));
    }
    if let Some(crate::launch::request::JsonConfigDiff::Overrides(map)) = &arm.config {
        env.extend(map.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    let redact = |s: &str| s.replace(&secret_key, "<redacted>").replace(&access_key, "<access-key>");
    let env_file = phase_file(p.l.data_dir, p.trial, "server.env");
    let env_text: String =
        env.iter().map(|(k, v)| format!("{k}={}\n", redact(v))).collect::<String>() + &format!("# argv: {}\n", redact(&argv.join(" ")));
    let _ = std::fs::write(&env_file, env_text);
    p.say(&format!(
        "starting the server on port {port}{}: {}",
        if bwrap.is_some() { " in the trial sandbox" } else { " (unsandboxed)" },
        redact(&argv.join(" "))
    ));
    if let Some(bwrap) = bwrap {
        let scratch = match scratch_dir(p.l.data_dir, &format!("trial-{}-{}", p.trial.id, p.trial.attempt)) {
            Ok(s) => s,
            Err(e) => return Outcome::launcher_error(e),
        };
        let (identity, drop_to) = crate::queue::sandbox::Identity::of(p.l.trial_user);
        let view = View {
            data_dir: p.l.data_dir.to_path_buf(),
            writable: vec![data_root.clone()],
            scratch,
            readable: vec![binary.clone()],
            finelog: None,
            tie_to_parent: false,
            identity,
            remapped: vec![],
            home_inside: None,
            drop_to,
        };
        // The server under test runs as the trial user, on disks and a scratch folder of its own.
        if let Some(user) = p.l.trial_user {
            for dir in [data_root.as_path(), view.scratch.parent().unwrap_or(&view.scratch)] {
                if let Err(e) = crate::queue::runner::give_to(user, dir) {
                    return Outcome::launcher_error(e);
                }
            }
        }
        argv = wrap(bwrap, p.l.supervisor, &view, &argv);
    }
    let server_log_path = phase_file(p.l.data_dir, p.trial, "server.log");
    let server_log = match std::fs::File::create(&server_log_path) {
        Ok(f) => f,
        Err(e) => return Outcome::launcher_error(format!("cannot write the server log: {e}")),
    };
    let mut cmd = tokio::process::Command::new(&argv[0]);
    cmd.args(&argv[1..]).env_clear().envs(env).current_dir(&data_root).stdin(std::process::Stdio::null());
    cmd.stdout(server_log.try_clone().map(std::process::Stdio::from).unwrap_or_else(|_| std::process::Stdio::null()));
    cmd.stderr(server_log);
    cmd.process_group(0).kill_on_drop(true);
    // Its limits (queue::runner::warp_limits: memory and processes, no CPU budget), in a control group
    // of its own where the host gives one.
    let (_, limits) = crate::queue::runner::warp_limits(&plan.suite);
    let group = match crate::queue::cgroup::TrialGroup::create(&format!("arbiter-server-{}-{}", p.trial.id, crate::random_hex(8)), &limits)
    {
        Ok(g) => Some(g),
        Err(why) => {
            p.say(&format!("the server runs without its memory and process limits here: {why}"));
            None
        }
    };
    let procs = crate::queue::cgroup::join_on_spawn(&mut cmd, group.as_ref(), None, Some(crate::queue::runner::file_limit(&plan.suite)));
    let spawned = cmd.spawn();
    drop(procs);
    let group = Removed(group);
    let mut server = match spawned {
        Ok(c) => c,
        Err(e) => return Outcome::failed(format!("cannot start the server {:?}: {e}", argv[0])),
    };
    let pid = server.id().unwrap_or(0);
    on_server(pid);
    let outcome = async {
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(2))
            .build()
            .map_err(|e| Outcome::launcher_error(e.to_string()))?;
        let health_url = format!("{endpoint}{}", spec.health_path);
        let started = Instant::now();
        loop {
            if p.cancelled.load(Ordering::Relaxed) {
                return Err(Outcome::cancelled("cancelled"));
            }
            if let Ok(Some(status)) = server.try_wait() {
                return Err(Outcome::failed(format!(
                    "the server exited ({status}) before becoming healthy; last lines of its log:\n{}",
                    crate::tail(&server_log_path, 50, 64 * 1024)
                )));
            }
            let enter = bwrap.map(|_| inner_pid(pid).map(|inner| Enter { exe: p.l.supervisor, pid: inner }));
            let ready = match enter {
                None => healthy(&http, &health_url, None).await,
                Some(None) => false,
                Some(Some(e)) => healthy(&http, &health_url, Some(e)).await,
            };
            if ready {
                break;
            }
            if started.elapsed() > Duration::from_secs(spec.health_timeout_secs) {
                return Err(Outcome::failed(format!(
                    "health timeout: {health_url} did not answer within {} s; last lines of the server log:\n{}",
                    spec.health_timeout_secs,
                    crate::tail(&server_log_path, 50, 64 * 1024)
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        p.say(&format!("healthy after {:.1} s", started.elapsed().as_secs_f64()));
        Ok(())
    }
    .await;
    let outcome = match outcome {
        Err(o) => o,
        Ok(()) => match bwrap.map(|_| inner_pid(pid)) {
            Some(None) => Outcome::failed("the server's sandbox ended right after its health check"),
            inner => {
                let enter = inner.flatten().map(|pid| Enter { exe: p.l.supervisor, pid });
                rounds(p, &endpoint, drive_sync, (&access_key, &secret_key), Some((&mut server, &server_log_path)), enter).await
            }
        },
    };
    // Stop the server: SIGTERM to its group, then SIGKILL after 10 s.
    crate::queue::process::signal_group(pid, libc::SIGTERM);
    if tokio::time::timeout(Duration::from_secs(10), server.wait()).await.is_err() {
        crate::queue::process::signal_group(pid, libc::SIGKILL);
        let _ = server.wait().await;
    }
    // A server stopped by its limit fails its phase with that as the reason.
    let outcome = match group.0.as_ref().and_then(|g| g.hit()) {
        Some(hit) if outcome.state == judge::TrialState::Failed || outcome.state == judge::TrialState::InfraFailed => {
            Outcome::failed(format!("the server under test stopped at its {}: {}", hit.words(&limits), outcome.detail))
        }
        _ => outcome,
    };
    drop(group);
    let _ = std::fs::remove_dir_all(&data_root);
    // A server may print its arguments or environment: the keys never stay in a file people download.
    if let Ok(text) = std::fs::read(&server_log_path) {
        let text = String::from_utf8_lossy(&text);
        if text.contains(&secret_key) || text.contains(&access_key) {
            let _ = std::fs::write(&server_log_path, redact(&text));
        }
    }
    outcome
}

/// A server's control group, removed (every process in it killed) however the phase ends.
struct Removed(Option<crate::queue::cgroup::TrialGroup>);

impl Drop for Removed {
    fn drop(&mut self) {
        if let Some(g) = self.0.take() {
            g.remove_in_background();
        }
    }
}
