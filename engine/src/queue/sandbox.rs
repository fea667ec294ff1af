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
//!   trial's supervisor outside, whose gate passes only the RPCs that append rows
//!   (`finelog_gate::Policy::Writes`) on to finelog.
//!
//! A warp phase runs the same way: its build and its server under test each in a sandbox of their own (no
//! finelog relay), and the load driver joins the server's network namespace (`arbiter sandbox-enter`, which
//! enters it and execs the driver: the load goes over the namespace's own loopback, with no relay in its
//! path to distort what is measured). The health check enters it the same way.
//!
//! [`probe`] finds a working `bwrap` at start-up; [`wrap`] turns a trial's argv into the sandboxed one;
//! [`relay_inside`] is `arbiter sandbox-relay`; [`relay_outside`] runs in `arbiter supervise`; [`enter`] is
//! `arbiter sandbox-enter`.

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

/// Checks, as `serve` (root) starts, that a trial can run as `user`: a sandbox started as root drops to
/// it (capabilities gone, the seccomp filter on) and runs `python` (the suites' `{python}`), which must
/// be readable by that user. The reason when it cannot; local launches are then refused with it.
pub fn probe_trial_user(
    bwrap: &Path,
    arbiter: &Path,
    python: Option<&Path>,
    data_dir: &Path,
    user: &crate::queue::host_user::HostUser,
) -> Result<(), String> {
    let scratch = scratch_dir(data_dir, "probe-trial-user")?;
    crate::queue::host_user::chown_tree(scratch.parent().unwrap_or(&scratch), user)?;
    let program: Vec<String> = match python {
        Some(p) => vec![p.to_string_lossy().into_owned(), "-c".into(), "import os; print(os.getuid())".into()],
        None => vec!["/usr/bin/id".into(), "-u".into()],
    };
    let view = View {
        data_dir: data_dir.to_path_buf(),
        writable: vec![],
        scratch: scratch.clone(),
        readable: python.map(python_paths).unwrap_or_default().into_iter().chain([arbiter.to_path_buf()]).collect(),
        finelog: None,
        tie_to_parent: true,
        identity: Identity::HostRoot,
        remapped: vec![],
        home_inside: None,
        drop_to: Some(user.name.clone()),
    };
    let argv = wrap(bwrap, arbiter, &view, &program);
    let out = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bwrap.display()))?;
    let _ = std::fs::remove_dir_all(scratch.parent().unwrap_or(&scratch));
    let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() && said == user.uid.to_string() {
        return Ok(());
    }
    Err(format!(
        "a trial cannot run as {} here ({}): {}",
        user.name,
        program[0],
        judge::text::clip(String::from_utf8_lossy(&out.stderr).trim(), 300)
    ))
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
    /// The sandbox dies with the thread that started it (`--die-with-parent`): right for a supervisor's
    /// single thread, wrong for a server under test started from an async runtime's thread.
    pub tie_to_parent: bool,
    /// Who the sandbox's first process is.
    pub identity: Identity,
    /// Host folders bound read-write at another path inside (`(host, inside)`): for a sandbox whose user
    /// could not traverse the host path's parents (a 0700 data dir).
    pub remapped: Vec<(PathBuf, PathBuf)>,
    /// `HOME` and `TMPDIR` inside, when not the scratch folder's own path (a remapped one).
    pub home_inside: Option<PathBuf>,
    /// With [`Identity::HostRoot`]: the host user `arbiter sandbox-relay` becomes (and confines with the
    /// seccomp filter) before it runs the command.
    pub drop_to: Option<String>,
}

/// Who a sandbox's first process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// uid 65534 in a user namespace of its own (mapped onto the user `bwrap` runs as).
    Mapped,
    /// `bwrap` runs as root with no user namespace, and the first process is Arbiter's own, which becomes
    /// an unprivileged host user ([`crate::queue::host_user::drop_to`]) before it runs anything else.
    HostRoot,
}

impl Identity {
    /// How a sandbox of a branch's code starts, and whom its first process becomes: the trial user
    /// (`Some` when serve runs as root), else the mapped uid.
    pub fn of(trial_user: Option<&crate::queue::host_user::HostUser>) -> (Identity, Option<String>) {
        match trial_user {
            Some(u) => (Identity::HostRoot, Some(u.name.clone())),
            None => (Identity::Mapped, None),
        }
    }
}

impl TrialSandbox {
    /// The `bwrap` to wrap a trial in; `None` when unsandboxed; the reason when there is no sandbox.
    pub fn bwrap(&self) -> Result<Option<&Path>, String> {
        match self {
            TrialSandbox::Bwrap(b) => Ok(Some(b)),
            TrialSandbox::Unsandboxed => Ok(None),
            TrialSandbox::Missing(why) => {
                Err(format!("no trial sandbox on this host ({why}); an admin may start serve with --unsandboxed-trials"))
            }
        }
    }
}

/// A folder of a sandboxed run's own under `data-dir/sandbox/NAME`, made afresh: the run's `HOME` and
/// `TMPDIR` (the relay's socket sits beside it).
pub fn scratch_dir(data_dir: &Path, name: &str) -> Result<PathBuf, String> {
    let dir = data_dir.join("sandbox").join(name);
    let home = dir.join("home");
    crate::queue::mounts::unmount(&home);
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
    Ok(home)
}

/// What a sandbox must not read although it lies under the read-only `/`: the user namespace maps the
/// sandbox's user to the user `serve` runs as (root, often), so files only that user may read would be
/// readable by owner rights. Hidden: the home folders (the serving user's `HOME`, `/root`, `/home`), the
/// password and group shadows, SSH host keys, TLS private keys, and `/var`'s state, logs, mail and backups.
/// Each `(path, is a folder)`; only what exists.
pub fn host_secrets() -> Vec<(PathBuf, bool)> {
    let home = std::env::var_os("HOME").map(PathBuf::from).filter(|h| h.is_absolute() && h != Path::new("/"));
    let dirs = ["/root", "/home", "/etc/ssh", "/etc/ssl/private", "/var/lib", "/var/log", "/var/backups", "/var/mail", "/var/spool"];
    let files = ["/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-"];
    let mut out: Vec<(PathBuf, bool)> = Vec::new();
    for dir in home.into_iter().chain(dirs.iter().map(PathBuf::from)) {
        if dir.is_dir() && !out.iter().any(|(p, _)| dir.starts_with(p)) {
            out.push((dir, true));
        }
    }
    out.extend(files.iter().map(PathBuf::from).filter(|f| f.is_file()).map(|f| (f, false)));
    out
}

/// Where cargo and rustup live (`CARGO_HOME`, `RUSTUP_HOME`, by default in `HOME`), which a build and a
/// server launched through a cargo-installed tool need.
pub fn toolchain_homes() -> Vec<(&'static str, PathBuf)> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    [("CARGO_HOME", ".cargo"), ("RUSTUP_HOME", ".rustup")]
        .into_iter()
        .filter_map(|(var, default)| {
            let dir = std::env::var_os(var).map(PathBuf::from).or_else(|| home.as_ref().map(|h| h.join(default)))?;
            dir.is_dir().then_some((var, dir))
        })
        .collect()
}

/// What every sandbox reads back from a hidden home: the toolchain (rustup's toolchains; cargo's
/// installed programs and its registry and git caches — not its credentials or configuration).
fn toolchain() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (var, dir) in toolchain_homes() {
        match var {
            "CARGO_HOME" => out.extend(["bin", "registry", "git"].iter().map(|sub| dir.join(sub))),
            _ => out.push(dir),
        }
    }
    out
}

/// What a Python environment needs read back in a sandbox whose home folders are hidden: the environment
/// (`python`'s grandparent), and the installation it was made from (pyvenv.cfg's `home`, e.g. pyenv's
/// under `~/.pyenv`; and wherever the interpreter's links lead).
pub fn python_paths(python: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = python.parent().and_then(Path::parent).map(Path::to_path_buf).into_iter().collect();
    if let Some(env) = out.first().cloned() {
        let cfg = std::fs::read_to_string(env.join("pyvenv.cfg")).unwrap_or_default();
        let home = cfg.lines().find_map(|l| l.split_once('=').filter(|(k, _)| k.trim() == "home").map(|(_, v)| v.trim().to_string()));
        out.extend(home.map(PathBuf::from).and_then(|bin| bin.parent().map(Path::to_path_buf)));
    }
    if let Ok(real) = std::fs::canonicalize(python) {
        out.extend(real.parent().and_then(Path::parent).map(Path::to_path_buf));
    }
    out.dedup();
    out
}

/// What a trial's program (its argv's first element, when a path) needs read back: a virtual
/// environment's interpreter brings its environment and installation ([`python_paths`]); any other
/// program, the folder it really lives in.
pub fn program_paths(program: &str) -> Vec<PathBuf> {
    let path = Path::new(program);
    if !path.is_absolute() {
        return vec![];
    }
    if path.parent().and_then(Path::parent).is_some_and(|env| env.join("pyvenv.cfg").is_file()) {
        return python_paths(path);
    }
    std::fs::canonicalize(path).ok().and_then(|p| p.parent().map(Path::to_path_buf)).into_iter().collect()
}

/// Removes the scratch folders of a run that ended (`NAME` and `NAME-*`: a warp phase's build has its own).
pub fn remove_scratch(data_dir: &Path, name: &str) {
    let root = data_dir.join("sandbox");
    let prefix = format!("{name}-");
    for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        if file == name || file.starts_with(&prefix) {
            crate::queue::mounts::unmount(&entry.path().join("home"));
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The topmost folders above what a view binds (and its data dir) that others may not enter (no
/// `o+x`), outside the folders the sandbox hides anyway; shallowest first.
fn closed_folders(view: &View) -> Vec<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    // What the sandbox hides anyway (the data dir among it) needs no tmpfs of its own.
    let hidden: Vec<PathBuf> =
        host_secrets().into_iter().filter(|(_, d)| *d).map(|(p, _)| p).chain([PathBuf::from("/run"), view.data_dir.clone()]).collect();
    let mut wanted: Vec<&Path> = vec![&view.data_dir, &view.scratch];
    wanted.extend(view.readable.iter().map(PathBuf::as_path));
    wanted.extend(view.writable.iter().map(PathBuf::as_path));
    wanted.extend(view.finelog.iter().filter_map(|(_, s)| s.parent()));
    wanted.extend(view.remapped.iter().map(|(host, _)| host.as_path()));
    let mut out: Vec<PathBuf> = Vec::new();
    for path in wanted {
        let mut ancestors: Vec<&Path> = path.ancestors().skip(1).collect();
        ancestors.reverse();
        for a in ancestors.into_iter().filter(|a| a.parent().is_some()) {
            if hidden.iter().any(|h| a.starts_with(h)) || out.iter().any(|c| a.starts_with(c)) {
                break;
            }
            let open = std::fs::metadata(a).map(|m| m.permissions().mode() & 0o001 != 0).unwrap_or(true);
            if !open {
                out.push(a.to_path_buf());
                break;
            }
        }
    }
    out.sort_by_key(|p| p.components().count());
    out
}

/// The sandboxed argv of `argv`: `bwrap` with the view, then (with finelog) `arbiter sandbox-relay`.
pub fn wrap(bwrap: &Path, arbiter: &Path, view: &View, argv: &[String]) -> Vec<String> {
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let mut out: Vec<String> = vec![s(bwrap)];
    if view.identity == Identity::Mapped {
        out.extend(["--unshare-user", "--uid", SANDBOX_UID, "--gid", SANDBOX_UID].map(String::from));
    }
    out.extend(
        [
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
        .map(String::from),
    );
    if view.tie_to_parent {
        out.insert(1, "--die-with-parent".into());
    }
    // An unprivileged host user (HostRoot) cannot walk a folder only its owner may enter (a 0700 temp
    // dir or checkout above the data dir, say): the first such folder above anything bound is hidden
    // behind an empty tmpfs too, and what is bound is bound back into it.
    let closed = match view.identity {
        Identity::HostRoot => closed_folders(view),
        Identity::Mapped => vec![],
    };
    for c in &closed {
        out.extend(["--tmpfs".into(), s(c)]);
    }
    out.extend(["--tmpfs".into(), s(&view.data_dir)]);
    for (path, dir) in host_secrets() {
        match dir {
            true => out.extend(["--tmpfs".into(), s(&path)]),
            false => out.extend(["--ro-bind".into(), "/dev/null".into(), s(&path)]),
        }
    }
    // bwrap makes the folders leading to a bind inside a tmpfs as root's alone (0700): for an unprivileged
    // host user (HostRoot) they are made 0755 first, so it can walk to what is bound for it.
    let hidden: Vec<PathBuf> = [view.data_dir.clone(), PathBuf::from("/run")]
        .into_iter()
        .chain(host_secrets().into_iter().filter(|(_, d)| *d).map(|(p, _)| p))
        .chain(closed.iter().cloned())
        .collect();
    let walkable = |dest: &Path, out: &mut Vec<String>| {
        if view.identity != Identity::HostRoot {
            return;
        }
        let mut ancestors: Vec<&Path> = dest.ancestors().skip(1).filter(|a| hidden.iter().any(|h| a.starts_with(h) && a != h)).collect();
        ancestors.reverse();
        for a in ancestors {
            out.extend(["--perms".into(), "0755".into(), "--dir".into(), s(a)]);
        }
    };
    let mut binds: Vec<(&str, &Path, &Path)> = Vec::new();
    let toolchain = toolchain();
    for r in view.readable.iter().chain(&toolchain).filter(|p| p.exists()) {
        binds.push(("--ro-bind", r, r));
    }
    for w in view.writable.iter().chain([&view.scratch]) {
        binds.push(("--bind", w, w));
    }
    if let Some((_, socket)) = &view.finelog {
        let dir = socket.parent().unwrap_or(Path::new("/"));
        binds.push(("--bind", dir, dir));
    }
    for (host, inside) in &view.remapped {
        binds.push(("--bind", host, inside));
    }
    for (how, host, inside) in binds {
        walkable(inside, &mut out);
        out.extend([how.into(), s(host), s(inside)]);
    }
    // What is bound into the data dir's tmpfs (and the hidden homes') stays as bound; the tmpfs itself
    // takes no writes.
    out.extend(["--remount-ro".into(), s(&view.data_dir)]);
    for (path, _) in host_secrets().into_iter().filter(|(_, dir)| *dir) {
        out.extend(["--remount-ro".into(), s(&path)]);
    }
    for c in &closed {
        out.extend(["--remount-ro".into(), s(c)]);
    }
    let home = view.home_inside.as_deref().unwrap_or(&view.scratch);
    out.extend(["--setenv".into(), "HOME".into(), s(home), "--setenv".into(), "TMPDIR".into(), s(home)]);
    if view.finelog.is_some() || view.drop_to.is_some() {
        out.extend([s(arbiter), "sandbox-relay".into()]);
        if let Some((port, socket)) = &view.finelog {
            out.extend(["--port".into(), port.to_string(), "--socket".into(), s(socket)]);
        }
        if let Some(user) = &view.drop_to {
            out.extend(["--user".into(), user.clone()]);
        }
    }
    out.push("--".into());
    out.extend(argv.iter().cloned());
    out
}

/// Copies both ways between two connected streams until either side closes.
pub fn pipe<A, B>(a: A, b: B)
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

/// `arbiter sandbox-relay`: the sandbox's first process. With `relay` (port, socket) it listens on
/// 127.0.0.1:PORT and passes each connection through the Unix socket; with `user` (the sandbox was
/// started as root with no user namespace) it becomes that host user for good and installs the seccomp
/// filter before anything else runs; then it runs `argv` and exits as it did.
pub fn relay_inside(relay: Option<(u16, &Path)>, user: Option<&str>, argv: &[String]) -> Result<i32, String> {
    let listener = match relay {
        Some((port, _)) => Some(
            std::net::TcpListener::bind(("127.0.0.1", port)).map_err(|e| format!("sandbox relay: cannot listen on port {port}: {e}"))?,
        ),
        None => None,
    };
    if let Some(name) = user {
        let user = crate::queue::host_user::lookup(name).ok_or_else(|| format!("sandbox: no host user {name}"))?;
        crate::queue::host_user::drop_to(&user)?;
        crate::queue::host_user::confine()?;
    }
    if let (Some(listener), Some((_, socket))) = (listener, relay) {
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
    }
    let (program, args) = argv.split_first().ok_or("sandbox relay: no command")?;
    let status = std::process::Command::new(program).args(args).status().map_err(|e| format!("cannot start {program:?}: {e}"))?;
    use std::os::unix::process::ExitStatusExt;
    Ok(status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

/// The process inside the sandbox that `bwrap` (process `outer`) started: the one whose network namespace
/// a load driver joins. `None` until it exists.
pub fn inner_pid(outer: u32) -> Option<u32> {
    let children = std::fs::read_to_string(format!("/proc/{outer}/task/{outer}/children")).ok()?;
    let inner: u32 = children.split_whitespace().next()?.parse().ok()?;
    let ns = |pid: &str| std::fs::read_link(format!("/proc/{pid}/ns/net")).ok();
    (ns(&inner.to_string()).is_some() && ns(&inner.to_string()) != ns("self")).then_some(inner)
}

/// `arbiter sandbox-enter`: joins the network namespace of process `pid` (a sandboxed server under test;
/// also its user namespace when not root, whose owner may join it), then either answers whether `health`
/// (an `http://127.0.0.1:PORT/path` URL) responds below 500 (exit 0, else 1), or execs `argv`.
pub fn enter(pid: u32, health: Option<&str>, argv: &[String]) -> Result<i32, String> {
    use std::os::fd::AsRawFd;
    let open = |ns: &str| std::fs::File::open(format!("/proc/{pid}/ns/{ns}")).map_err(|e| format!("sandbox-enter: process {pid}: {e}"));
    let net = open("net")?;
    // Not root: join first the user namespace that owns the network namespace (bwrap nests the sandbox's
    // own user namespace inside it), whose owner — this user — holds every capability there.
    const NS_GET_USERNS: libc::c_ulong = 0xb701;
    // SAFETY: plain syscalls on descriptors this function owns; the process is single-threaded here.
    if unsafe { libc::geteuid() } != 0 {
        let owner = unsafe { libc::ioctl(net.as_raw_fd(), NS_GET_USERNS as _) };
        if owner < 0 || unsafe { libc::setns(owner, libc::CLONE_NEWUSER) } != 0 {
            return Err(format!("sandbox-enter: cannot join the user namespace of {pid}: {}", std::io::Error::last_os_error()));
        }
    }
    if unsafe { libc::setns(net.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(format!("sandbox-enter: cannot join the network namespace of {pid}: {}", std::io::Error::last_os_error()));
    }
    if let Some(url) = health {
        return Ok(if http_status(url).is_some_and(|s| s < 500) { 0 } else { 1 });
    }
    use std::os::unix::process::CommandExt;
    let (program, args) = argv.split_first().ok_or("sandbox-enter: no command")?;
    Err(format!("cannot start {program:?}: {}", std::process::Command::new(program).args(args).exec()))
}

/// The status code of a plain `GET url` (`http://host:port/path`), within 2 s.
fn http_status(url: &str) -> Option<u16> {
    let (host, port) = host_port(url)?;
    let path = url.strip_prefix("http://")?.find('/').map(|i| &url["http://".len() + i..]).unwrap_or("/");
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port)).ok()?.next()?;
    let limit = std::time::Duration::from_secs(2);
    let mut conn = std::net::TcpStream::connect_timeout(&addr, limit).ok()?;
    conn.set_read_timeout(Some(limit)).ok()?;
    write!(conn, "GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n").ok()?;
    let mut head = [0u8; 64];
    let n = conn.read(&mut head).ok()?;
    let line = String::from_utf8_lossy(&head[..n]);
    line.strip_prefix("HTTP/1.")?.get(2..)?.trim_start().get(..3)?.parse().ok()
}

/// In the supervisor, outside the sandbox: accepts on the Unix socket `socket` and passes each request
/// that appends rows (and nothing else: `finelog_gate::Policy::Writes`) to `target` (finelog's
/// host:port). Runs on the caller's runtime until the process ends.
pub fn relay_outside(socket: &Path, target: String) -> Result<(), String> {
    use crate::queue::finelog_gate::{serve_unix, Policy, Upstream};
    let _ = std::fs::remove_file(socket);
    let listener = tokio::net::UnixListener::bind(socket).map_err(|e| format!("{}: {e}", socket.display()))?;
    // Any user may connect: the folder it sits in is the trial's own (0700), reachable by the trial
    // user and Arbiter alone.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o666)).map_err(|e| format!("{}: {e}", socket.display()))?;
    tokio::spawn(serve_unix(listener, Policy::Writes, Upstream::Tcp(target)));
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
            tie_to_parent: true,
            identity: Identity::Mapped,
            remapped: vec![],
            home_inside: None,
            drop_to: None,
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

#[cfg(test)]
mod python_tests {
    use super::*;

    #[test]
    fn a_virtual_environment_brings_the_installation_it_was_made_from() {
        let tmp = std::env::temp_dir().join(format!("arbiter-python-paths-{}", std::process::id()));
        let base = tmp.join("pyenv/versions/3.11.7");
        std::fs::create_dir_all(base.join("bin")).unwrap();
        std::fs::write(base.join("bin/python3.11"), "").unwrap();
        let env = tmp.join("work/.venv");
        std::fs::create_dir_all(env.join("bin")).unwrap();
        std::os::unix::fs::symlink(base.join("bin/python3.11"), env.join("bin/python")).unwrap();
        std::fs::write(env.join("pyvenv.cfg"), format!("home = {}\nversion = 3.11.7\n", base.join("bin").display())).unwrap();
        let paths = python_paths(&env.join("bin/python"));
        let _ = std::fs::remove_dir_all(&tmp);
        assert_eq!(paths, vec![env.clone(), base.clone()], "{paths:?}");
        eprintln!("{:?}", python_paths(Path::new("/work/main/server/../.venv/bin/python")));
    }
}
