//! A PostgreSQL server of one test's own, which the test may stop and start again (the shared one on
//! TEST_POSTGRES_URL serves every other test): initdb and pg_ctl from Debian's postgresql package, as the
//! `postgres` user when the tests run as root.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct PrivatePostgres {
    dir: tempfile::TempDir,
    pub port: u16,
    pub url: String,
    as_root: bool,
}

fn pg_binary(name: &str) -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("Debian's postgresql package (scripts/setup.sh --test installs it)")
        .filter_map(|e| e.ok().map(|e| e.path().join("bin").join(name)))
        .filter(|p| p.exists())
        .collect();
    found.sort();
    found.pop().unwrap_or_else(|| panic!("no {name} under /usr/lib/postgresql"))
}

impl PrivatePostgres {
    pub fn start() -> PrivatePostgres {
        let dir = tempfile::Builder::new().prefix("arbiter-pg-own-").tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let as_root = unsafe { libc::geteuid() } == 0;
        if as_root {
            assert!(Command::new("chown").args(["-R", "postgres:"]).arg(dir.path()).status().unwrap().success());
        }
        let pg = PrivatePostgres { dir, port, url: format!("postgres://postgres@127.0.0.1:{port}/postgres"), as_root };
        let out = pg
            .run(&pg_binary("initdb"))
            .args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "-D"])
            .arg(pg.data())
            .output()
            .unwrap();
        assert!(out.status.success(), "initdb: {}", String::from_utf8_lossy(&out.stderr));
        pg.up();
        pg
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn run(&self, program: &Path) -> Command {
        if self.as_root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    /// Starts it (again) on its port and waits until it accepts connections.
    pub fn up(&self) {
        let options = format!("-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off", self.port, self.dir.path().display());
        let out = self
            .run(&pg_binary("pg_ctl"))
            .args(["-w", "-t", "60", "-D"])
            .arg(self.data())
            .arg("-o")
            .arg(options)
            .arg("-l")
            .arg(self.dir.path().join("server.log"))
            .arg("start")
            .output()
            .unwrap();
        assert!(out.status.success(), "pg_ctl start: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Stops it at once (connections are cut).
    pub fn down(&self) {
        let out = self.run(&pg_binary("pg_ctl")).args(["-w", "-m", "immediate", "-D"]).arg(self.data()).arg("stop").output().unwrap();
        assert!(out.status.success(), "pg_ctl stop: {}", String::from_utf8_lossy(&out.stderr));
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let _ = self.run(&pg_binary("pg_ctl")).args(["-m", "immediate", "-D"]).arg(self.data()).arg("stop").output();
    }
}
