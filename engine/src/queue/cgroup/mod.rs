//! One control group per trial, nested under the group `arbiter supervise` runs in (read from
//! `/proc/self/cgroup`), on cgroup v1 (a folder per controller) or v2 (one unified folder). It holds
//! the trial's limits — memory (`memory.limit_in_bytes` / `memory.max`), processes (`pids.max`) — and
//! its accounting: CPU-seconds are read from it (`cpuacct.usage` / `cpu.stat`) and compared with a budget
//! by the supervisor, never enforced with a CFS quota (throttling would change what is measured). It
//! also knows every process of the trial, whatever session or group they moved to, so the end of a trial
//! kills them all.
//!
//! **CPU isolation** lives in the same groups: where the host has a CPU to spare beyond what a trial
//! needs ([`reserve`]), the trial's group gets a CPU set of its own (v1 `cpuset`, v2 the `cpuset`
//! controller), and Arbiter's own processes (serve, its finelog server) are kept on the other CPUs for
//! as long as the trial runs ([`HouseCpus`]). Where there is none to spare, the trial runs on the shared
//! CPUs and its facts say why.

mod cpus;

pub use cpus::{cpus_needed, reserve, CpuSet, HouseCpus};
use std::path::{Path, PathBuf};

/// What one trial may use.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    pub memory_bytes: Option<u64>,
    pub processes: Option<u64>,
    pub cpu_seconds: Option<f64>,
    /// The CPUs reserved for the trial, if any.
    pub cpus: Option<CpuSet>,
}

/// Which limit a trial hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    Memory,
    Processes,
    CpuTime,
}

impl Hit {
    pub fn words(self, limits: &Limits) -> String {
        match self {
            Hit::Memory => format!(
                "limit: memory — the trial went above its {} MiB and was stopped by the kernel",
                limits.memory_bytes.unwrap_or(0) / (1 << 20)
            ),
            Hit::Processes => format!("limit: processes — the trial tried to run more than {} at once", limits.processes.unwrap_or(0)),
            Hit::CpuTime => format!("limit: CPU time — the trial used more than its {:.0} CPU-seconds", limits.cpu_seconds.unwrap_or(0.0)),
        }
    }
}

/// A trial's control group: one folder (v2) or one per controller (v1).
#[derive(Debug)]
pub struct TrialGroup {
    unified: bool,
    /// (controller, folder): v1 `memory`, `pids`, `cpuacct`; v2 one entry named "".
    dirs: Vec<(&'static str, PathBuf)>,
}

const ROOT: &str = "/sys/fs/cgroup";

/// The group path of this process for a controller (v1) or the unified hierarchy (`""`).
fn own_path(controller: &str) -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = if controller.is_empty() { names.is_empty() } else { names.split(',').any(|n| n == controller) };
        matches.then(|| path.to_string())
    })
}

fn write(dir: &Path, file: &str, value: &str) -> Result<(), String> {
    std::fs::write(dir.join(file), value).map_err(|e| format!("{}: {e}", dir.join(file).display()))
}

fn read(dir: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(file)).ok()
}

/// `key value` lines (cpu.stat, memory.events, pids.events, memory.oom_control): the value of `key`.
fn field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
}

impl TrialGroup {
    /// Makes the group `name` under this process's own, with the limits set. An error says why (no
    /// cgroup file system, no rights): the caller runs the trial without and says so.
    pub fn create(name: &str, limits: &Limits) -> Result<TrialGroup, String> {
        let unified = Path::new(ROOT).join("cgroup.controllers").is_file();
        let group = if unified {
            let own = own_path("").ok_or("no unified cgroup in /proc/self/cgroup")?;
            let dir = Path::new(ROOT).join(own.trim_start_matches('/')).join(name);
            TrialGroup { unified, dirs: vec![("", dir)] }
        } else {
            let mut dirs = Vec::new();
            let controllers: &[&'static str] =
                if limits.cpus.is_some() { &["memory", "pids", "cpuacct", "cpuset"] } else { &["memory", "pids", "cpuacct"] };
            for &controller in controllers {
                let own = own_path(controller).ok_or_else(|| format!("no {controller} cgroup in /proc/self/cgroup"))?;
                let base = Path::new(ROOT).join(controller);
                if !base.is_dir() {
                    return Err(format!("{} is not mounted", base.display()));
                }
                dirs.push((controller, base.join(own.trim_start_matches('/')).join(name)));
            }
            TrialGroup { unified, dirs }
        };
        for (_, dir) in &group.dirs {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let dir = |c: &str| group.dirs.iter().find(|(n, _)| *n == c || group.unified).map(|(_, d)| d.clone());
        if let (Some(bytes), Some(d)) = (limits.memory_bytes, dir("memory")) {
            if unified {
                write(&d, "memory.max", &bytes.to_string())?;
                let _ = write(&d, "memory.swap.max", "0");
            } else {
                write(&d, "memory.limit_in_bytes", &bytes.to_string())?;
                let _ = write(&d, "memory.memsw.limit_in_bytes", &bytes.to_string());
            }
        }
        if let (Some(n), Some(d)) = (limits.processes, dir("pids")) {
            write(&d, "pids.max", &n.to_string())?;
        }
        if let (Some(cpus), Some(d)) = (limits.cpus, dir("cpuset")) {
            if let Err(e) = group.confine(&d, cpus) {
                group.remove();
                return Err(e);
            }
        }
        Ok(group)
    }

    /// The group's CPU set: v1 copies its parent's memory nodes first (a cpuset without them takes no
    /// task); v2 enables the controller for its parent's children first.
    fn confine(&self, dir: &Path, cpus: CpuSet) -> Result<(), String> {
        let parent = dir.parent().ok_or("a control group at the root")?;
        if self.unified {
            let enabled = read(parent, "cgroup.subtree_control").unwrap_or_default();
            if !enabled.split_whitespace().any(|c| c == "cpuset") {
                write(parent, "cgroup.subtree_control", "+cpuset")
                    .map_err(|e| format!("the cpuset controller cannot be enabled for trials ({e})"))?;
            }
        } else {
            let mems = read(parent, "cpuset.mems").or_else(|| read(parent, "cpuset.effective_mems")).unwrap_or_else(|| "0".into());
            write(dir, "cpuset.mems", mems.trim())?;
        }
        write(dir, "cpuset.cpus", &cpus.list())
    }

    /// The `cgroup.procs` files a process writes `0` into to join (opened before a fork; the child
    /// writes into them between fork and exec).
    pub fn procs_files(&self) -> Result<Vec<std::fs::File>, String> {
        self.dirs
            .iter()
            .map(|(_, d)| std::fs::OpenOptions::new().write(true).open(d.join("cgroup.procs")).map_err(|e| format!("{}: {e}", d.display())))
            .collect()
    }

    fn dir(&self, controller: &str) -> Option<&Path> {
        self.dirs.iter().find(|(n, _)| self.unified || *n == controller).map(|(_, d)| d.as_path())
    }

    /// CPU-seconds the group's processes used so far.
    pub fn cpu_seconds(&self) -> Option<f64> {
        if self.unified {
            field(&read(self.dir("")?, "cpu.stat")?, "usage_usec").map(|us| us as f64 / 1e6)
        } else {
            read(self.dir("cpuacct")?, "cpuacct.usage")?.trim().parse::<u64>().ok().map(|ns| ns as f64 / 1e9)
        }
    }

    /// Seconds the kernel throttled the group's CPU (v2 `cpu.stat` `throttled_usec`, present where the
    /// cpu controller is enabled for it); `None` where the host does not report it (v1 here: no `cpu`
    /// controller in the trial's group, since no quota is set).
    pub fn throttled_seconds(&self) -> Option<f64> {
        if !self.unified {
            return None;
        }
        field(&read(self.dir("")?, "cpu.stat")?, "throttled_usec").map(|us| us as f64 / 1e6)
    }

    /// The memory or process limit was hit (the kernel refused or killed).
    pub fn hit(&self) -> Option<Hit> {
        let memory = self.dir("memory").and_then(|d| {
            if self.unified {
                field(&read(d, "memory.events")?, "oom_kill")
            } else {
                field(&read(d, "memory.oom_control")?, "oom_kill").or_else(|| read(d, "memory.failcnt")?.trim().parse().ok())
            }
        });
        if memory.unwrap_or(0) > 0 {
            return Some(Hit::Memory);
        }
        let pids = self.dir("pids").and_then(|d| field(&read(d, "pids.events")?, "max"));
        (pids.unwrap_or(0) > 0).then_some(Hit::Processes)
    }

    /// Every process in the group now.
    pub fn pids(&self) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        for (_, d) in &self.dirs {
            for pid in read(d, "cgroup.procs").unwrap_or_default().split_whitespace().filter_map(|p| p.parse().ok()) {
                if !out.contains(&pid) {
                    out.push(pid);
                }
            }
        }
        out
    }

    /// Kills every process in the group (also those that left the trial's process group).
    pub fn kill_all(&self) {
        for pid in self.pids() {
            crate::queue::process::signal_pid(pid, libc::SIGKILL);
        }
    }

    /// Kills what is left and removes the group (waiting up to 2 s for the processes to go).
    pub fn remove(&self) {
        for _ in 0..40 {
            self.kill_all();
            if self.pids().is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        for (_, d) in &self.dirs {
            let _ = std::fs::remove_dir(d);
        }
    }

    /// [`TrialGroup::remove`] on a thread of its own: for callers on the async runtime, which its waits
    /// (up to 2 s for the processes to go) must not block.
    pub fn remove_in_background(self) {
        std::thread::spawn(move || self.remove());
    }
}

/// What this host offers trials, for `serve`'s log: a test group made and removed (with a CPU set of
/// this process's highest CPU), or why none can be made.
pub fn probe() -> Result<String, String> {
    let own = CpuSet::own();
    let top = own.cpus().last().map(|c| CpuSet(1 << c));
    let limits = Limits { memory_bytes: Some(1 << 30), processes: Some(64), cpu_seconds: None, cpus: top };
    let name = format!("arbiter-probe-{}", std::process::id());
    let version = if Path::new(ROOT).join("cgroup.controllers").is_file() { "v2" } else { "v1" };
    match TrialGroup::create(&name, &limits) {
        Ok(g) => {
            g.remove();
            Ok(format!(
                "local trials run in control groups of their own (cgroup {version}); a trial gets CPUs reserved for it where it needs fewer than the {} this server may use, Arbiter and finelog kept off them",
                own.count()
            ))
        }
        Err(cpuset) => match TrialGroup::create(&name, &Limits { cpus: None, ..limits }) {
            Ok(g) => {
                g.remove();
                Ok(format!("local trials run in control groups of their own (cgroup {version}) without a CPU set: {cpuset}; a reserved trial is pinned by affinity only"))
            }
            Err(why) => Err(format!("local trials run without control groups (no memory or process limits, no CPU accounting or CPU set): {why}")),
        },
    }
}

/// Makes a command join `group` (its `cgroup.procs`, written between fork and exec), runs it on `cpus`
/// where given (its affinity: the group's CPU set enforces it where there is one) and, with
/// `file_bytes`, limits the size of any file it writes (RLIMIT_FSIZE). Returns the open `cgroup.procs`
/// files: keep them until the command has been spawned.
pub fn join_on_spawn(
    cmd: &mut tokio::process::Command,
    group: Option<&TrialGroup>,
    cpus: Option<CpuSet>,
    file_bytes: Option<u64>,
) -> Vec<std::fs::File> {
    let files = group.map(TrialGroup::procs_files).transpose().unwrap_or_default().unwrap_or_default();
    let fds: Vec<i32> = files.iter().map(std::os::fd::AsRawFd::as_raw_fd).collect();
    let affinity = cpus.map(CpuSet::to_libc);
    // SAFETY: between fork and exec only write(2) on descriptors opened above, sched_setaffinity(2) with a
    // set built before the fork, and setrlimit(2).
    unsafe {
        cmd.pre_exec(move || {
            for fd in &fds {
                libc::write(*fd, b"0".as_ptr().cast(), 1);
            }
            if let Some(set) = &affinity {
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set);
            }
            if let Some(bytes) = file_bytes {
                let limit = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
                libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
            }
            Ok(())
        });
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_and_reservations() {
        assert_eq!(CpuSet::parse("0-3,6").unwrap(), CpuSet(0b100_1111));
        assert_eq!(CpuSet(0b100_1111).list(), "0-3,6");
        assert_eq!(CpuSet::parse("1\n").unwrap().list(), "1");
        assert!(CpuSet::parse("3-1").is_err() && CpuSet::parse("x").is_err() && CpuSet::parse("64").is_err());
        // The example on 2 CPUs: 2 workers need both, nothing is reserved (and it says why); 1 worker gets CPU 1.
        assert_eq!(cpus_needed(2.0, Some(2.0)), 2);
        assert_eq!(cpus_needed(2.0, Some(1.0)), 1);
        assert_eq!(cpus_needed(0.5, None), 1);
        assert_eq!(cpus_needed(2.5, None), 3);
        let why = reserve(2, CpuSet(0b11)).unwrap_err();
        assert!(why.contains("needs 2 CPUs and this host has 2"), "{why}");
        assert_eq!(reserve(1, CpuSet(0b11)).unwrap(), (CpuSet(0b10), CpuSet(0b01)));
        assert_eq!(reserve(2, CpuSet::parse("0-1,4-5").unwrap()).unwrap(), (CpuSet::parse("4-5").unwrap(), CpuSet(0b11)));
    }

    #[test]
    fn key_value_files_are_read() {
        assert_eq!(field("usage_usec 1500000\nuser_usec 1\n", "usage_usec"), Some(1_500_000));
        assert_eq!(field("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", "oom_kill"), Some(2));
        assert_eq!(field("max 0\n", "max"), Some(0));
    }

    /// For real where this process may make groups (root here and in CI): a memory-hungry child is
    /// killed by the kernel and the hit is read; a fork bomb is held at the process limit; CPU-seconds
    /// are accounted.
    #[test]
    fn limits_hold_and_are_read_back() {
        let limits = Limits { memory_bytes: Some(64 << 20), processes: Some(16), cpu_seconds: Some(1.0), cpus: None };
        let group = match TrialGroup::create(&format!("arbiter-test-{}", std::process::id()), &limits) {
            Ok(g) => g,
            Err(why) => {
                eprintln!("no cgroups here ({why}); nothing to check");
                return;
            }
        };
        let run = |script: &str| {
            use std::io::Write;
            use std::os::unix::process::CommandExt;
            let files = group.procs_files().unwrap();
            let fds: Vec<i32> = files.iter().map(std::os::fd::AsRawFd::as_raw_fd).collect();
            let mut cmd = std::process::Command::new("sh");
            cmd.arg("-c").arg(script);
            // SAFETY: write(2) between fork and exec on descriptors opened above.
            unsafe {
                cmd.pre_exec(move || {
                    for fd in &fds {
                        libc::write(*fd, b"0".as_ptr().cast(), 1);
                    }
                    Ok(())
                });
            }
            let status = cmd.status().unwrap();
            let _ = std::io::stderr().flush();
            status
        };
        // Busy for a moment: accounted.
        let status = run("i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done");
        assert!(status.success());
        assert!(group.cpu_seconds().unwrap() > 0.05, "{:?}", group.cpu_seconds());
        assert_eq!(group.hit(), None);
        // 40 processes at once against a limit of 16.
        let _ = run("for i in $(seq 40); do sleep 1 & done; wait");
        assert_eq!(group.hit(), Some(Hit::Processes));
        group.remove();

        let group = TrialGroup::create(&format!("arbiter-test-mem-{}", std::process::id()), &limits).unwrap();
        let files = group.procs_files().unwrap();
        let fds: Vec<i32> = files.iter().map(std::os::fd::AsRawFd::as_raw_fd).collect();
        let mut cmd = std::process::Command::new("python3");
        cmd.arg("-c").arg("x = bytearray(512 << 20); print(len(x))");
        use std::os::unix::process::CommandExt;
        // SAFETY: as above.
        unsafe {
            cmd.pre_exec(move || {
                for fd in &fds {
                    libc::write(*fd, b"0".as_ptr().cast(), 1);
                }
                Ok(())
            });
        }
        let status = cmd.output().unwrap().status;
        assert!(!status.success(), "512 MiB in a 64 MiB group");
        assert_eq!(group.hit(), Some(Hit::Memory));
        group.remove();
    }

    /// For real where this process may make groups and has 2 CPUs or more: a trial's group with a CPU set
    /// of one CPU runs its processes there (the kernel's own account of the process says so), and a
    /// process cannot widen its affinity beyond it.
    #[test]
    fn a_reserved_cpu_set_holds_the_trial() {
        let own = CpuSet::own();
        let Ok((mine, _house)) = reserve(1, own) else {
            eprintln!("one CPU here: nothing to reserve, nothing to check");
            return;
        };
        let limits = Limits { cpus: Some(mine), ..Limits::default() };
        let group = match TrialGroup::create(&format!("arbiter-test-cpus-{}", std::process::id()), &limits) {
            Ok(g) => g,
            Err(why) => {
                eprintln!("no CPU set here ({why}); nothing to check");
                return;
            }
        };
        let files = group.procs_files().unwrap();
        let fds: Vec<i32> = files.iter().map(std::os::fd::AsRawFd::as_raw_fd).collect();
        // It asks for every CPU, then reads what it has.
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c").arg(format!("taskset -pc {} $$ >/dev/null 2>&1; grep Cpus_allowed_list /proc/self/status", own.list()));
        use std::os::unix::process::CommandExt;
        // SAFETY: write(2) between fork and exec on descriptors opened above.
        unsafe {
            cmd.pre_exec(move || {
                for fd in &fds {
                    libc::write(*fd, b"0".as_ptr().cast(), 1);
                }
                Ok(())
            });
        }
        let out = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
        group.remove();
        assert_eq!(out.split(':').nth(1).map(str::trim), Some(mine.list().as_str()), "{out}");
    }
}
