//! Arbiter's own finelog server, for local suites when no `ARBITER_FINELOG_URL` is given: finelog's
//! `EmbeddedServer` (PyPI `marin-finelog-server`, in the venv the setup makes) on loopback, storing in
//! `data-dir/finelog/`. It runs detached, so trials keep reporting through a crash of `arbiter serve`;
//! the next start adopts it (same process, same port). A clean stop stops it unless trials still run.

use serde::{Deserialize, Serialize};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const SCRIPT: &str = include_str!("finelog_serve.py");
const SCRIPT_NAME: &str = "finelog_serve.py";

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct ServerState {
    pid: u32,
    port: u16,
}

#[derive(Debug)]
pub struct OwnedFinelog {
    pub url: String,
    pub pid: u32,
    /// True when this process started it (false: adopted from a previous run).
    pub started: bool,
    state_file: PathBuf,
    child: Mutex<Option<Child>>,
}

fn read_state(path: &Path) -> Option<ServerState> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// The process is our finelog script (not a recycled pid).
fn is_ours(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.windows(SCRIPT_NAME.len()).any(|w| w == SCRIPT_NAME.as_bytes()))
}

async fn answers(port: u16) -> bool {
    matches!(tokio::time::timeout(Duration::from_secs(2), tokio::net::TcpStream::connect(("127.0.0.1", port))).await, Ok(Ok(_)))
}

fn log_tail(path: &Path) -> String {
    crate::tail(path, 5, 64 * 1024).replace('\n', " | ")
}

impl OwnedFinelog {
    /// Adopts the finelog a previous `arbiter serve` left running in `dir`, or starts one with `python`.
    pub async fn start_or_adopt(python: &Path, dir: &Path) -> Result<OwnedFinelog, String> {
        let io = |what: &str, e: std::io::Error| format!("{what}: {e}");
        std::fs::create_dir_all(dir.join("store")).map_err(|e| io(&dir.display().to_string(), e))?;
        let state_file = dir.join("server.json");
        let previous = read_state(&state_file);
        if let Some(s) = previous {
            if is_ours(s.pid) && answers(s.port).await {
                tracing::info!(pid = s.pid, port = s.port, "adopted the finelog server a previous run left");
                return Ok(OwnedFinelog::new(s, false, state_file, None));
            }
        }
        let _ = std::fs::remove_file(&state_file);
        let script = dir.join(SCRIPT_NAME);
        std::fs::write(&script, SCRIPT).map_err(|e| io(&script.display().to_string(), e))?;
        let log_path = dir.join("server.log");
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&log_path).map_err(|e| io("finelog log", e))?;
        let err_log = log.try_clone().map_err(|e| io("finelog log", e))?;
        let mut child = Command::new(python)
            .arg(&script)
            .arg(dir.join("store"))
            .arg(&state_file)
            .arg(previous.map_or(0, |s| s.port).to_string())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err_log)
            .env_remove("PYTHONPATH")
            // Its own process group: a Ctrl-C meant for `arbiter serve` does not stop it mid-trial.
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", python.display()))?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(s) = read_state(&state_file).filter(|s| s.pid == child.id()) {
                if answers(s.port).await {
                    tracing::info!(pid = s.pid, port = s.port, dir = %dir.display(), "started a finelog server");
                    return Ok(OwnedFinelog::new(s, true, state_file, Some(child)));
                }
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("the finelog server exited ({status}): {}", log_tail(&log_path)));
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("the finelog server did not start within 60 s: {}", log_tail(&log_path)));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn new(s: ServerState, started: bool, state_file: PathBuf, child: Option<Child>) -> OwnedFinelog {
        OwnedFinelog { url: format!("http://127.0.0.1:{}", s.port), pid: s.pid, started, state_file, child: Mutex::new(child) }
    }

    /// Stops the server (SIGTERM, then SIGKILL after 10 s) and forgets it.
    pub fn stop(&self) {
        crate::queue::supervise::signal_pid(self.pid, libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let gone = match child.as_mut() {
                Some(c) => !matches!(c.try_wait(), Ok(None)),
                None => !crate::queue::supervise::is_alive(self.pid) || !is_ours(self.pid),
            };
            if gone {
                break;
            }
            if Instant::now() > deadline {
                crate::queue::supervise::signal_pid(self.pid, libc::SIGKILL);
                if let Some(c) = child.as_mut() {
                    let _ = c.wait();
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = std::fs::remove_file(&self.state_file);
        tracing::info!(pid = self.pid, "stopped the finelog server");
    }
}
