//! A real finelog server for tests (finelog's EmbeddedServer from the venv `scripts/setup.sh --test` makes).

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

pub fn python() -> PathBuf {
    let p = std::env::var_os("ARBITER_FINELOG_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.venv/bin/python")));
    assert!(p.exists(), "no finelog venv at {}: run scripts/setup.sh --test", p.display());
    p
}

pub struct FinelogServer {
    child: Child,
    pub url: String,
    _dir: tempfile::TempDir,
}

impl FinelogServer {
    pub fn start(rows: Option<&str>) -> FinelogServer {
        let dir = tempfile::tempdir().unwrap();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/finelog/serve_fixture.py");
        let mut cmd = Command::new(python());
        cmd.arg(script).arg(dir.path());
        if let Some(r) = rows {
            cmd.arg(r);
        }
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().strip_prefix("ready ").unwrap_or_else(|| panic!("finelog fixture said {line:?}"));
        FinelogServer { child, url: format!("http://127.0.0.1:{port}"), _dir: dir }
    }
}

impl Drop for FinelogServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        if self.child.wait_timeout_secs(10).is_none() {
            self.child.kill().ok();
        }
    }
}

trait WaitTimeout {
    fn wait_timeout_secs(&mut self, secs: u64) -> Option<std::process::ExitStatus>;
}

impl WaitTimeout for Child {
    fn wait_timeout_secs(&mut self, secs: u64) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(s)) = self.try_wait() {
                return Some(s);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        None
    }
}
