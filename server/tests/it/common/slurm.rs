//! A real single-node Slurm on loopback for the cluster launcher's tests (Debian `slurm-wlm`, which
//! `scripts/setup.sh --test` installs): a private munge, `slurmctld` and `slurmd` as root without
//! systemd, a minimal `slurm.conf` with memory enforcement (jobacct_gather/linux + OverMemoryKill) in a
//! temp dir. Daemons are stopped by their pids, never by name.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Slurm {
    dir: tempfile::TempDir,
    pub conf: PathBuf,
    ctld: Option<Child>,
    slurmd: Child,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn conf(r: &Path, ctld_port: u16, slurmd_port: u16, cpus: u32) -> String {
    let r = r.display();
    format!(
        "ClusterName=arbiter-test\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={ctld_port}\nSlurmdPort={slurmd_port}\n\
         CommunicationParameters=NoInAddrAny,NoCtldInAddrAny\nSlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\n\
         AuthInfo=socket={r}/munge/munge.socket\nCredType=cred/munge\nStateSaveLocation={r}/state\nSlurmdSpoolDir={r}/spool\n\
         SlurmctldPidFile={r}/run/slurmctld.pid\nSlurmdPidFile={r}/run/slurmd.pid\nSlurmctldLogFile={r}/log/slurmctld.log\n\
         SlurmdLogFile={r}/log/slurmd.log\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
         JobAcctGatherType=jobacct_gather/linux\nJobAcctGatherFrequency=task=1\nJobAcctGatherParams=OverMemoryKill\n\
         AccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/none\nMpiDefault=none\nSchedulerType=sched/backfill\n\
         SchedulerParameters=batch_sched_delay=0\n\
         SelectType=select/cons_tres\nSelectTypeParameters=CR_Core_Memory\nReturnToService=2\nMinJobAge=3600\nKillWait=2\n\
         SlurmdParameters=config_overrides\n\
         NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=16000 State=UNKNOWN\n\
         PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n"
    )
}

impl Slurm {
    pub fn start() -> Slurm {
        Slurm::start_with_cpus(2)
    }

    /// A node declared with `cpus` CPUs (`SlurmdParameters=config_overrides` lets slurmd accept more than
    /// the hardware has): for sleep-bound jobs that test how many run at once, not how fast.
    pub fn start_with_cpus(cpus: u32) -> Slurm {
        assert!(Path::new("/usr/sbin/slurmctld").exists(), "no slurm-wlm: run scripts/setup.sh --test");
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        for d in ["munge", "state", "spool", "run", "log"] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        let conf_path = r.join("slurm.conf");
        std::fs::write(&conf_path, conf(r, free_port(), free_port(), cpus)).unwrap();
        let key = r.join("munge/munge.key");
        let bytes: Vec<u8> = (0..1024).map(|i| (i as u8).wrapping_mul(31).wrapping_add(std::process::id() as u8)).collect();
        std::fs::write(&key, bytes).unwrap();
        Command::new("chmod").arg("400").arg(&key).status().unwrap();
        Command::new("chmod").arg("700").arg(r.join("munge")).status().unwrap();
        let m = |f: &str| format!("{}/munge/{f}", r.display());
        let status = Command::new("munged")
            .args(["--force", &format!("--socket={}", m("munge.socket")), &format!("--key-file={}", m("munge.key"))])
            .args([
                format!("--pid-file={}", m("munged.pid")),
                format!("--log-file={}", m("munged.log")),
                format!("--seed-file={}", m("munged.seed")),
            ])
            .status()
            .unwrap();
        assert!(status.success(), "munged did not start");
        let mut slurm = Slurm { conf: conf_path, ctld: None, slurmd: daemon(r, "slurmd", &["-D", "-N", "localhost"]), dir };
        slurm.ctld = Some(daemon(slurm.dir.path(), "slurmctld", &["-D", "-c"]));
        slurm.wait_idle();
        slurm
    }

    fn wait_idle(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = self.cli("sinfo", &["-h", "-o", "%T"]);
            if out.trim() == "idle" || out.trim() == "mixed" || out.trim() == "allocated" {
                return;
            }
            assert!(Instant::now() < deadline, "slurm did not become idle: {out}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Runs a Slurm client command; its stdout and stderr.
    pub fn cli(&self, program: &str, args: &[&str]) -> String {
        let out = Command::new(program).args(args).env("SLURM_CONF", &self.conf).output().unwrap();
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    }

    /// The jobs the controller knows that are pending or running (`squeue`).
    pub fn in_flight(&self) -> usize {
        self.cli("squeue", &["-h", "-t", "PENDING,RUNNING,CONFIGURING,COMPLETING", "-o", "%i"])
            .lines()
            .filter(|l| !l.trim().is_empty())
            .count()
    }

    /// A job's start and end time in seconds (Slurm's `StartTime=`/`EndTime=`, one-second resolution).
    /// A job's (submit, start, end) times in seconds, as Slurm records them.
    pub fn job_times(&self, job: &str) -> (i64, i64, i64) {
        let out = self.cli("scontrol", &["show", "job", job, "-o"]);
        let field = |name: &str| -> i64 {
            let v = out.split_whitespace().find_map(|w| w.strip_prefix(name)).unwrap_or_else(|| panic!("no {name} in {out}"));
            chrono_free_parse(v).unwrap_or_else(|| panic!("{name}{v}: not a time"))
        };
        (field("SubmitTime="), field("StartTime="), field("EndTime="))
    }

    /// Stops the controller (the node daemon and its jobs keep running).
    pub fn stop_controller(&mut self) {
        if let Some(mut c) = self.ctld.take() {
            stop(&mut c);
        }
    }

    /// Starts the controller again, recovering its saved state.
    pub fn start_controller(&mut self) {
        assert!(self.ctld.is_none());
        self.ctld = Some(daemon(self.dir.path(), "slurmctld", &["-D"]));
        self.wait_idle();
    }
}

fn daemon(r: &Path, program: &str, args: &[&str]) -> Child {
    use std::os::unix::process::CommandExt;
    let log = std::fs::File::create(r.join(format!("log/{program}.out"))).unwrap();
    Command::new(program)
        .args(args)
        .env("SLURM_CONF", r.join("slurm.conf"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .process_group(0)
        .spawn()
        .unwrap()
}

fn stop(child: &mut Child) {
    let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().ok().flatten().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        let _ = self.cli("scancel", &["--user=root"]);
        self.stop_controller();
        stop(&mut self.slurmd);
        if let Ok(pid) = std::fs::read_to_string(self.dir.path().join("munge/munged.pid")) {
            let _ = Command::new("kill").arg("-TERM").arg(pid.trim()).status();
        }
    }
}

/// `2026-12-03T09:55:01` (local time, which is UTC here) → seconds since an arbitrary origin, enough to
/// compare the times of one run.
fn chrono_free_parse(v: &str) -> Option<i64> {
    let (date, time) = v.split_once('T')?;
    let d: Vec<i64> = date.split('-').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let t: Vec<i64> = time.split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    (d.len() == 3 && t.len() == 3).then(|| ((d[0] * 400 + d[1] * 32 + d[2]) * 86_400) + t[0] * 3600 + t[1] * 60 + t[2])
}
