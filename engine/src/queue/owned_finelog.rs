//! Arbiter's own finelog server, for local suites when no `ARBITER_FINELOG_URL` is given. finelog's
//! `EmbeddedServer` (PyPI `marin-finelog-server`, in the venv the setup makes) answers any SQL, `COPY …
//! TO 'file'` included, to whoever reaches it; so it is kept off every path but Arbiter's own:
//!
//! ```text
//!  trials' relays, cluster jobs ──► 127.0.0.1:PORT ─┐ write gate (RegisterTable, WriteRows, PushLogs)
//!                                                    ├──► finelog/inner/finelog.sock ──► finelog (sandbox)
//!  arbiter serve ──► finelog/query.sock (0600) ─────┘ query gate (one read-only SELECT)
//! ```
//!
//! `arbiter finelog-serve` (this module's [`host`]) is the detached process `serve` starts: it holds both
//! gates (`finelog_gate`) and runs finelog in a sandbox of its own — its own network namespace (no port of
//! it is reachable from the host), a mount view with the data dir hidden but for its store, and as the
//! unprivileged host user `arbiter-finelog` when `serve` is root (the store is that user's, 0700). Inside,
//! `arbiter finelog-inner` drops to that user, listens on a Unix socket in the bound `inner/` folder and
//! passes each connection to finelog on the namespace's loopback. If finelog exits, the host restarts it
//! (counted in `server.json`, which `/readyz` reads). The host runs detached, so trials keep reporting
//! through a crash of `serve`; the next start adopts it (same process, same port). A clean stop stops it
//! unless trials still run.

use crate::queue::finelog_gate::{serve_tcp, serve_unix, Policy, Upstream};
use crate::queue::host_user::{self, HostUser};
use crate::queue::sandbox;
use serde::{Deserialize, Serialize};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const SCRIPT: &str = include_str!("finelog_serve.py");
const SCRIPT_NAME: &str = "finelog_serve.py";
/// What the host's command line holds, to tell it from a recycled pid.
const MARKER: &str = "finelog-serve";
/// finelog's port inside its own network namespace (nothing else listens there).
const INNER_PORT: u16 = 7070;

/// What the host writes once its gates listen, and again at each restart of finelog.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HostState {
    /// The host process.
    pub pid: u32,
    /// The write gate's port on 127.0.0.1.
    pub port: u16,
    /// Times finelog was restarted after it exited.
    #[serde(default)]
    pub restarts: u32,
    /// finelog runs now (false between an exit and its restart).
    #[serde(default)]
    pub up: bool,
    /// How finelog last ended, when it did.
    #[serde(default)]
    pub last_exit: Option<String>,
}

#[derive(Debug)]
pub struct OwnedFinelog {
    /// The write gate: what trials and cluster jobs are given as finelog's URL.
    pub url: String,
    /// The query gate, Arbiter's own way to read rows.
    pub query_socket: PathBuf,
    pub pid: u32,
    /// True when this process started it (false: adopted from a previous run).
    pub started: bool,
    state_file: PathBuf,
    child: Mutex<Option<Child>>,
}

/// The host's state file in `dir`, when it can be read.
pub fn read_state(path: &Path) -> Option<HostState> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

fn write_state(path: &Path, state: &HostState) {
    let tmp = path.with_extension("tmp");
    if std::fs::write(&tmp, serde_json::to_vec(state).unwrap_or_default()).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

/// The process is a finelog host (not a recycled pid).
fn is_ours(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.windows(MARKER.len()).any(|w| w == MARKER.as_bytes()))
}

/// The process is an older version's finelog: its script run directly, not under a host.
fn runs_old_script(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
        let text = String::from_utf8_lossy(&c);
        text.contains(SCRIPT_NAME) && !text.contains("finelog-inner") && !text.contains("bwrap")
    })
}

fn answers(socket: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(socket).is_ok()
}

fn log_tail(path: &Path) -> String {
    crate::tail(path, 5, 64 * 1024).replace('\n', " | ")
}

/// The query gate's socket in a finelog folder.
pub fn query_socket(dir: &Path) -> PathBuf {
    dir.join("query.sock")
}

impl OwnedFinelog {
    /// Adopts the finelog host a previous `arbiter serve` left running in `dir`, or starts one
    /// (`arbiter` the binary to run it with, `python` finelog's).
    pub async fn start_or_adopt(arbiter: &Path, python: &Path, dir: &Path) -> Result<OwnedFinelog, String> {
        let io = |what: &str, e: std::io::Error| format!("{what}: {e}");
        std::fs::create_dir_all(dir).map_err(|e| io(&dir.display().to_string(), e))?;
        let state_file = dir.join("server.json");
        let previous = read_state(&state_file);
        if let Some(s) = &previous {
            if is_ours(s.pid) && answers(&query_socket(dir)) {
                tracing::info!(pid = s.pid, port = s.port, "adopted the finelog server a previous run left");
                return Ok(OwnedFinelog::new(s, dir, false, state_file, None));
            }
        }
        // An older Arbiter ran finelog's script itself, unsandboxed, on this same store: it is stopped
        // before the store is handed to the sandboxed one (two servers must not share a store).
        if let Some(old) = previous.as_ref().filter(|s| !is_ours(s.pid) && runs_old_script(s.pid)) {
            tracing::info!(pid = old.pid, "stopping the finelog server an older version left running (unsandboxed)");
            crate::queue::process::signal_pid(old.pid, libc::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(10);
            while runs_old_script(old.pid) && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            if runs_old_script(old.pid) {
                crate::queue::process::signal_pid(old.pid, libc::SIGKILL);
            }
        }
        let _ = std::fs::remove_file(&state_file);
        let log_path = dir.join("server.log");
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&log_path).map_err(|e| io("finelog log", e))?;
        let err_log = log.try_clone().map_err(|e| io("finelog log", e))?;
        let mut child = Command::new(arbiter)
            .arg(MARKER)
            .arg("--dir")
            .arg(dir)
            .arg("--python")
            .arg(python)
            .arg("--port")
            .arg(previous.map_or(0, |s| s.port).to_string())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err_log)
            .env_remove("PYTHONPATH")
            // Its own process group: a Ctrl-C meant for `arbiter serve` does not stop it mid-trial.
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", arbiter.display()))?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(s) = read_state(&state_file).filter(|s| s.pid == child.id() && s.up) {
                if answers(&query_socket(dir)) && crate::queue::finelog::Finelog::unix(&query_socket(dir)).ping().await.is_ok() {
                    tracing::info!(pid = s.pid, port = s.port, dir = %dir.display(), "started a finelog server");
                    return Ok(OwnedFinelog::new(&s, dir, true, state_file, Some(child)));
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

    fn new(s: &HostState, dir: &Path, started: bool, state_file: PathBuf, child: Option<Child>) -> OwnedFinelog {
        OwnedFinelog {
            url: format!("http://127.0.0.1:{}", s.port),
            query_socket: query_socket(dir),
            pid: s.pid,
            started,
            state_file,
            child: Mutex::new(child),
        }
    }

    /// The host's state now (restarts, whether finelog is up), `None` when the host is gone.
    pub fn state(&self) -> Option<HostState> {
        read_state(&self.state_file).filter(|s| s.pid == self.pid && is_ours(s.pid))
    }

    /// Stops the host and finelog with it (SIGTERM, then SIGKILL after 10 s) and forgets it.
    pub fn stop(&self) {
        crate::queue::process::signal_pid(self.pid, libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let gone = match child.as_mut() {
                Some(c) => !matches!(c.try_wait(), Ok(None)),
                None => !crate::queue::process::is_alive(self.pid) || !is_ours(self.pid),
            };
            if gone {
                break;
            }
            if Instant::now() > deadline {
                crate::queue::process::signal_pid(self.pid, libc::SIGKILL);
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

/// `arbiter finelog-serve`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct HostArgs {
    /// The finelog folder (`data-dir/finelog`): `store/`, `inner/`, `query.sock`, `server.json`.
    #[arg(long)]
    pub dir: PathBuf,
    /// finelog's Python (the venv with marin-finelog-server).
    #[arg(long)]
    pub python: PathBuf,
    /// The write gate's port on 127.0.0.1 (0: any; a previous one is tried first).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
}

/// `arbiter finelog-inner`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct InnerArgs {
    /// Listen on this Unix socket…
    #[arg(long)]
    pub socket: PathBuf,
    /// …and pass each connection to 127.0.0.1:PORT.
    #[arg(long)]
    pub port: u16,
    /// Become this host user first (when started as root).
    #[arg(long)]
    pub user: Option<String>,
    #[arg(last = true, required = true)]
    pub argv: Vec<String>,
}

/// The folders of a finelog dir, made with the modes they need: the dir itself 0700 (Arbiter's), the
/// store and `inner/` 0700 and owned by finelog's user (an existing store is taken over on upgrade).
fn lay_out(dir: &Path, user: Option<&HostUser>) -> Result<(PathBuf, PathBuf, PathBuf), String> {
    use std::os::unix::fs::PermissionsExt;
    let (store, inner, home) = (dir.join("store"), dir.join("inner"), dir.join("home"));
    for d in [dir, &store, &inner, &home] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    if let Some(user) = user {
        for d in [&store, &inner, &home] {
            host_user::chown_tree(d, user)?;
        }
    }
    Ok((store, inner, home))
}

/// `arbiter finelog-serve`: lays out the folder, binds both gates, writes the state file and keeps
/// finelog running in its sandbox until SIGTERM (or until its folder is removed).
pub fn host(args: HostArgs) -> Result<i32, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(host_async(args))
}

async fn host_async(args: HostArgs) -> Result<i32, String> {
    let dir = std::path::absolute(&args.dir).map_err(|e| e.to_string())?;
    let user = match host_user::is_root() {
        true => Some(host_user::ensure(host_user::FINELOG_USER)?),
        false => None,
    };
    let (store, inner, home) = lay_out(&dir, user.as_ref())?;
    let bwrap = sandbox::probe().map_err(|e| format!("finelog runs only in a sandbox: {e}"))?;
    let arbiter = std::env::current_exe().map_err(|e| e.to_string())?;
    let script = home.join(SCRIPT_NAME);
    std::fs::write(&script, SCRIPT).map_err(|e| format!("{}: {e}", script.display()))?;
    if let Some(u) = &user {
        host_user::chown_tree(&script, u)?;
    }
    let inner_socket = inner.join("finelog.sock");

    // The gates.
    let tcp = match tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await {
        Ok(l) => l,
        Err(_) => tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?,
    };
    let port = tcp.local_addr().map_err(|e| e.to_string())?.port();
    let query = query_socket(&dir);
    let _ = std::fs::remove_file(&query);
    let unix = tokio::net::UnixListener::bind(&query).map_err(|e| format!("{}: {e}", query.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&query, std::fs::Permissions::from_mode(0o600)).map_err(|e| e.to_string())?;
    }
    tokio::spawn(serve_tcp(tcp, Policy::Writes, Upstream::Unix(inner_socket.clone())));
    tokio::spawn(serve_unix(unix, Policy::Queries, Upstream::Unix(inner_socket.clone())));

    // Inside, finelog's folders and its Python environment sit under /run/finelog (the sandbox's own
    // tmpfs): the unprivileged user could not walk the host paths' parents (the data dir is 0700, a
    // checkout may be too). The installation the environment was made from stays where it is (its
    // pyvenv.cfg names it), visible through the hidden homes' read-back.
    let at = |name: &str| PathBuf::from("/run/finelog").join(name);
    let python_env = args.python.parent().and_then(Path::parent).map(Path::to_path_buf);
    let python_inside = match (&python_env, args.python.file_name()) {
        (Some(_), Some(name)) => at("venv").join("bin").join(name),
        _ => args.python.clone(),
    };
    let mut remapped = vec![(store.clone(), at("store")), (inner.clone(), at("inner")), (home.clone(), at("home"))];
    remapped.extend(python_env.iter().map(|env| (env.clone(), at("venv"))));
    let view = sandbox::View {
        data_dir: dir.parent().unwrap_or(&dir).to_path_buf(),
        writable: vec![],
        scratch: home.clone(),
        readable: sandbox::python_paths(&args.python).into_iter().skip(1).chain([arbiter.clone()]).collect(),
        finelog: None,
        tie_to_parent: true,
        identity: if user.is_some() { sandbox::Identity::HostRoot } else { sandbox::Identity::Mapped },
        remapped,
        home_inside: Some(at("home")),
        drop_to: None,
    };
    let mut inner_argv: Vec<String> = vec![
        arbiter.to_string_lossy().into_owned(),
        "finelog-inner".into(),
        "--socket".into(),
        at("inner/finelog.sock").to_string_lossy().into_owned(),
        "--port".into(),
        INNER_PORT.to_string(),
    ];
    if let Some(u) = &user {
        inner_argv.extend(["--user".into(), u.name.clone()]);
    }
    inner_argv.extend([
        "--".into(),
        python_inside.to_string_lossy().into_owned(),
        at("home").join(SCRIPT_NAME).to_string_lossy().into_owned(),
        at("store").to_string_lossy().into_owned(),
        INNER_PORT.to_string(),
    ]);
    let argv = sandbox::wrap(&bwrap, &arbiter, &view, &inner_argv);
    // `wrap` ends with `--` then the command: the sandbox's first process is finelog-inner.
    let state_file = dir.join("server.json");
    let mut state = HostState { pid: std::process::id(), port, restarts: 0, up: false, last_exit: None };
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).map_err(|e| e.to_string())?;
    let mut backoff = Duration::from_secs(1);
    loop {
        let _ = std::fs::remove_file(&inner_socket);
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..]).stdin(Stdio::null()).kill_on_drop(true);
        crate::queue::runner::clean_env(&mut cmd);
        cmd.env("HOME", &home).env("TMPDIR", &home);
        // bwrap makes the folders of its mount view with the umask it inherits: Arbiter's 077 would make
        // them root's alone, and finelog's user could not walk /run/finelog.
        // SAFETY: umask(2) between fork and exec, async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::umask(0o022);
                Ok(())
            });
        }
        let started = Instant::now();
        let mut child = cmd.spawn().map_err(|e| format!("cannot start finelog's sandbox: {e}"))?;
        // Up once the inner socket answers.
        let up_by = Instant::now() + Duration::from_secs(60);
        while !answers(&inner_socket) && Instant::now() < up_by && matches!(child.try_wait(), Ok(None)) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        state.up = answers(&inner_socket);
        write_state(&state_file, &state);
        println!("arbiter finelog host: gates on 127.0.0.1:{port} (writes) and {} (queries); finelog up: {}", query.display(), state.up);
        let ended = tokio::select! {
            s = child.wait() => Some(s),
            _ = term.recv() => None,
            _ = int.recv() => None,
            _ = gone(&dir) => None,
        };
        let Some(status) = ended else {
            let _ = child.start_kill();
            let _ = child.wait().await;
            let _ = std::fs::remove_file(&query);
            println!("arbiter finelog host: stopped");
            return Ok(0);
        };
        let why = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
        state.up = false;
        state.restarts += 1;
        state.last_exit = Some(why.clone());
        write_state(&state_file, &state);
        eprintln!("arbiter finelog host: finelog ended ({why}); restarting it in {} s", backoff.as_secs());
        if started.elapsed() > Duration::from_secs(60) {
            backoff = Duration::from_secs(1);
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(30));
    }
}

/// Resolves when the folder is gone (nobody could adopt the host any more).
async fn gone(dir: &Path) {
    while dir.is_dir() {
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

/// `arbiter finelog-inner`, inside finelog's sandbox: becomes the finelog user (when told to), listens
/// on the Unix socket, runs finelog and passes each connection to it on the namespace's loopback.
pub fn inner(args: InnerArgs) -> Result<i32, String> {
    if let Some(name) = &args.user {
        let user = host_user::lookup(name).ok_or_else(|| format!("no host user {name}"))?;
        host_user::drop_to(&user)?;
    }
    let _ = std::fs::remove_file(&args.socket);
    let listener = std::os::unix::net::UnixListener::bind(&args.socket).map_err(|e| format!("{}: {e}", args.socket.display()))?;
    let port = args.port;
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                // finelog may still be starting: try for a few seconds.
                for _ in 0..50 {
                    if let Ok(out) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                        sandbox::pipe(conn, out);
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
        }
    });
    let (program, rest) = args.argv.split_first().ok_or("finelog-inner: no command")?;
    let status = std::process::Command::new(program).args(rest).status().map_err(|e| format!("cannot start {program:?}: {e}"))?;
    use std::os::unix::process::ExitStatusExt;
    Ok(status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}
