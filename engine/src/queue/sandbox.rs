//! The sandbox a local trial runs in: a trial is code from a branch, and it must not reach Arbiter's own
//! data. With Debian's `bubblewrap` (`bwrap`), the trial's command runs
//!
//! * as an unprivileged user (uid 65534 in a user namespace of its own, with no capabilities on the host),
//! * in a mount view where `/` is read-only, `/run` (where local services keep their sockets, e.g.
//!   PostgreSQL's) is an empty tmpfs and the data dir is an empty tmpfs — so `arbiter.db`, the binary
//!   cache, other experiments and their logs are absent — with only its own worktree and a scratch folder
//!   (its `HOME` and `TMPDIR`) bound writable,
//! * in a network namespace of its own with nothing but loopback: PostgreSQL, finelog's other clients and
//!   every other port of the host are unreachable. The one way out is finelog: inside, `arbiter
//!   sandbox-relay` listens on 127.0.0.1:PORT and passes each connection through a Unix socket to the
//!   trial's supervisor outside, which connects it to the real finelog.
//!
//! [`probe`] finds a working `bwrap` at start-up; [`wrap`] turns a trial's argv into the sandboxed one;
//! [`relay_inside`] is `arbiter sandbox-relay`; [`relay_outside`] runs in `arbiter supervise`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The user a trial runs as inside its sandbox.
pub const SANDBOX_UID: &str = "65534";

/// How trials are run on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrialSandbox {
    /// Sandboxed with this `bwrap`.
    Bwrap(PathBuf),
    /// An admin started `serve` with `--unsandboxed-trials` (no sandbox here): trials run as the server's
    /// user, with its data dir reachable.
    Unsandboxed,
    /// No sandbox, and none allowed to be skipped: local launches are refused with the reason.
    Missing(String),
}

/// A working `bwrap` on PATH, or why there is none: it must start a command with every namespace the
/// sandbox uses.
pub fn probe() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let bwrap = std::env::split_paths(&path)
        .map(|d| d.join("bwrap"))
        .find(|p| p.is_file())
        .ok_or("bubblewrap (bwrap) is not installed: `apt-get install bubblewrap` (scripts/setup.sh does)")?;
    let out = std::process::Command::new(&bwrap)
        .args(["--unshare-user", "--uid", SANDBOX_UID, "--gid", SANDBOX_UID, "--unshare-pid", "--unshare-net", "--unshare-ipc"])
        .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/run", "true"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bwrap.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} cannot create the sandbox's namespaces here: {}",
            bwrap.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(bwrap)
}

/// What one sandboxed trial sees.
#[derive(Debug, Clone)]
pub struct View {
    /// Arbiter's data dir: replaced by an empty tmpfs.
    pub data_dir: PathBuf,
    /// Bound read-write (the trial's worktree).
    pub writable: Vec<PathBuf>,
    /// A writable folder of the trial's own: its `HOME` and `TMPDIR`.
    pub scratch: PathBuf,
    /// Bound read-only (the Python environment, the `arbiter` binary, the relay's socket folder).
    pub readable: Vec<PathBuf>,
    /// finelog: the port the trial connects to on 127.0.0.1, and the Unix socket that leads out.
    pub finelog: Option<(u16, PathBuf)>,
}

/// The sandboxed argv of `argv`: `bwrap` with the view, then (with finelog) `arbiter sandbox-relay`.
pub fn wrap(bwrap: &Path, arbiter: &Path, view: &View, argv: &[String]) -> Vec<String> {
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let mut out: Vec<String> = [
        s(bwrap).as_str(),
        "--die-with-parent",
        "--unshare-user",
        "--uid",
        SANDBOX_UID,
        "--gid",
        SANDBOX_UID,
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-net",
        "--unshare-cgroup-try",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/run",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    out.extend(["--tmpfs".into(), s(&view.data_dir)]);
    for r in view.readable.iter().filter(|p| p.exists()) {
        out.extend(["--ro-bind".into(), s(r), s(r)]);
    }
    for w in view.writable.iter().chain([&view.scratch]) {
        out.extend(["--bind".into(), s(w), s(w)]);
    }
    if let Some((_, socket)) = &view.finelog {
        let dir = socket.parent().unwrap_or(Path::new("/"));
        out.extend(["--bind".into(), s(dir), s(dir)]);
    }
    out.extend(["--setenv".into(), "HOME".into(), s(&view.scratch), "--setenv".into(), "TMPDIR".into(), s(&view.scratch)]);
    if let Some((port, socket)) = &view.finelog {
        out.extend([s(arbiter), "sandbox-relay".into(), "--port".into(), port.to_string(), "--socket".into(), s(socket), "--".into()]);
    } else {
        out.push("--".into());
    }
    out.extend(argv.iter().cloned());
    out
}

/// Copies both ways between two connected streams until either side closes.
fn pipe<A, B>(a: A, b: B)
where
    A: Read + Write + Send + 'static + TryCloneStream,
    B: Read + Write + Send + 'static + TryCloneStream,
{
    let (Ok(mut a2), Ok(mut b2)) = (a.try_clone_stream(), b.try_clone_stream()) else { return };
    let (mut a, mut b) = (a, b);
    let up = std::thread::spawn(move || {
        let _ = std::io::copy(&mut a, &mut b2);
        b2.shutdown_write();
    });
    let _ = std::io::copy(&mut b, &mut a2);
    a2.shutdown_write();
    let _ = up.join();
}

/// A stream that can be split for copying both ways.
pub trait TryCloneStream: Sized {
    fn try_clone_stream(&self) -> std::io::Result<Self>;
    fn shutdown_write(&self);
}

impl TryCloneStream for std::net::TcpStream {
    fn try_clone_stream(&self) -> std::io::Result<Self> {
        self.try_clone()
    }
    fn shutdown_write(&self) {
        let _ = self.shutdown(std::net::Shutdown::Write);
    }
}

impl TryCloneStream for std::os::unix::net::UnixStream {
    fn try_clone_stream(&self) -> std::io::Result<Self> {
        self.try_clone()
    }
    fn shutdown_write(&self) {
        let _ = self.shutdown(std::net::Shutdown::Write);
    }
}

/// `arbiter sandbox-relay`: inside the sandbox, listens on 127.0.0.1:`port`, passes each connection
/// through the Unix socket `socket`, runs `argv` and exits as it did.
pub fn relay_inside(port: u16, socket: &Path, argv: &[String]) -> Result<i32, String> {
    let listener =
        std::net::TcpListener::bind(("127.0.0.1", port)).map_err(|e| format!("sandbox relay: cannot listen on port {port}: {e}"))?;
    let socket = socket.to_path_buf();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let socket = socket.clone();
            std::thread::spawn(move || {
                if let Ok(out) = std::os::unix::net::UnixStream::connect(&socket) {
                    pipe(conn, out);
                }
            });
        }
    });
    let (program, args) = argv.split_first().ok_or("sandbox relay: no command")?;
    let status = std::process::Command::new(program).args(args).status().map_err(|e| format!("cannot start {program:?}: {e}"))?;
    use std::os::unix::process::ExitStatusExt;
    Ok(status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

/// In the supervisor, outside the sandbox: accepts on the Unix socket `socket` and connects each to
/// `target` (finelog's host:port). Runs until the process ends.
pub fn relay_outside(socket: &Path, target: String) -> Result<(), String> {
    let _ = std::fs::remove_file(socket);
    let listener = std::os::unix::net::UnixListener::bind(socket).map_err(|e| format!("{}: {e}", socket.display()))?;
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let target = target.clone();
            std::thread::spawn(move || {
                if let Ok(out) = std::net::TcpStream::connect(&target) {
                    pipe(conn, out);
                }
            });
        }
    });
    Ok(())
}

/// The host:port of an `http://host:port` URL.
pub fn host_port(url: &str) -> Option<(String, u16)> {
    let rest = url.strip_prefix("http://")?;
    let authority = rest.split('/').next()?;
    let (host, port) = authority.rsplit_once(':')?;
    Some((host.to_string(), port.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_hides_the_data_dir_and_binds_only_what_the_trial_needs() {
        let view = View {
            data_dir: "/srv/arbiter".into(),
            writable: vec!["/srv/arbiter/worktrees/7-control".into()],
            scratch: "/srv/arbiter/sandbox/trial-3/home".into(),
            readable: vec!["/".into()],
            finelog: Some((4711, "/srv/arbiter/sandbox/trial-3/finelog.sock".into())),
        };
        let argv = wrap(Path::new("/usr/bin/bwrap"), Path::new("/opt/arbiter"), &view, &["python3".into(), "bench.py".into()]);
        let text = argv.join(" ");
        assert!(text.starts_with("/usr/bin/bwrap --die-with-parent --unshare-user --uid 65534"), "{text}");
        assert!(text.contains("--unshare-net") && text.contains("--ro-bind / /") && text.contains("--tmpfs /srv/arbiter"), "{text}");
        // The data dir is hidden before the worktree is bound back in.
        assert!(text.find("--tmpfs /srv/arbiter").unwrap() < text.find("--bind /srv/arbiter/worktrees/7-control").unwrap(), "{text}");
        assert!(
            text.ends_with("/opt/arbiter sandbox-relay --port 4711 --socket /srv/arbiter/sandbox/trial-3/finelog.sock -- python3 bench.py")
        );
        assert_eq!(host_port("http://127.0.0.1:4711"), Some(("127.0.0.1".into(), 4711)));
        assert_eq!(host_port("https://x:1"), None);
    }
}
