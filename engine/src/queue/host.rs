//! What the host was doing while a local trial ran (`wire::experiment::JsonHostFacts`): read by `arbiter
//! supervise` from /proc at the trial's start, every second while it runs (the load average) and at its
//! end, with the trial's own CPU from its control group. Other processes' CPU is the host's busy time
//! less the trial's; a trial beside heavy load is flagged by `JsonHostFacts::heavy_load` (thresholds
//! there, and in the README's "Host facts").

use std::time::{Duration, Instant};
use wire::experiment::JsonHostFacts;

/// The `cpu` line of /proc/stat, in clock ticks: (busy, steal, total).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTimes {
    pub busy: u64,
    pub steal: u64,
    pub total: u64,
}

/// Parses /proc/stat's first line: `cpu user nice system idle iowait irq softirq steal guest guest_nice`.
/// Busy is what processes and interrupts used (user, nice, system, irq, softirq; guest time is already in
/// user); total adds idle, iowait and steal.
pub fn cpu_times(stat: &str) -> Option<CpuTimes> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line.split_whitespace().skip(1).map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    let busy = at(0) + at(1) + at(2) + at(5) + at(6);
    let steal = at(7);
    Some(CpuTimes { busy, steal, total: busy + at(3) + at(4) + steal })
}

/// The 1-minute load average from /proc/loadavg.
pub fn load_1m(loadavg: &str) -> Option<f64> {
    loadavg.split_whitespace().next()?.parse().ok()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// The start of a trial's watch: the host's facts and its CPU times then.
pub struct Watch {
    started: Instant,
    start: Option<CpuTimes>,
    loads: std::sync::Arc<std::sync::Mutex<Vec<f64>>>,
    sampler: tokio::task::JoinHandle<()>,
}

impl Watch {
    /// Starts watching (a task samples the load average each second; needs a tokio runtime).
    pub fn start() -> Watch {
        let loads = std::sync::Arc::new(std::sync::Mutex::new(load_1m(&read("/proc/loadavg")).into_iter().collect::<Vec<_>>()));
        let into = loads.clone();
        let sampler = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                if let (Some(l), Ok(mut v)) = (load_1m(&read("/proc/loadavg")), into.lock()) {
                    v.push(l);
                }
            }
        });
        Watch { started: Instant::now(), start: cpu_times(&read("/proc/stat")), loads, sampler }
    }

    /// The facts at the trial's end; `trial_cpu_secs` and `throttled_secs` from its control group, if it
    /// had one.
    pub fn finish(self, trial_cpu_secs: Option<f64>, throttled_secs: Option<f64>) -> JsonHostFacts {
        self.sampler.abort();
        let end = cpu_times(&read("/proc/stat"));
        let loads = self.loads.lock().map(|v| v.clone()).unwrap_or_default();
        facts(
            self.started.elapsed().as_secs_f64(),
            self.start.zip(end),
            ticks_per_second(),
            &loads,
            trial_cpu_secs,
            throttled_secs,
            (read("/proc/sys/kernel/osrelease"), read("/proc/cpuinfo")),
            std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        )
    }
}

/// The facts from what was read (pure).
#[allow(clippy::too_many_arguments)]
pub fn facts(
    wall_secs: f64,
    times: Option<(CpuTimes, CpuTimes)>,
    ticks: f64,
    loads: &[f64],
    trial_cpu_secs: Option<f64>,
    throttled_secs: Option<f64>,
    (osrelease, cpuinfo): (String, String),
    cpus_online: u32,
) -> JsonHostFacts {
    let (busy_secs, steal_pct) = match times {
        Some((a, b)) if b.total > a.total => {
            let total = (b.total - a.total) as f64;
            (Some(b.busy.saturating_sub(a.busy) as f64 / ticks), 100.0 * b.steal.saturating_sub(a.steal) as f64 / total)
        }
        _ => (None, 0.0),
    };
    let cpu_model = cpuinfo.lines().find_map(|l| l.strip_prefix("model name")?.split_once(':').map(|(_, m)| m.trim().to_string()));
    JsonHostFacts {
        kernel: osrelease.trim().to_string(),
        cpu_model: cpu_model.unwrap_or_default(),
        cpus_online,
        wall_secs,
        trial_cpu_secs,
        // Both are needed: without the trial's own CPU the host's busy time is not "others".
        others_cpu_secs: busy_secs.zip(trial_cpu_secs).map(|(b, t)| (b - t).max(0.0)),
        steal_pct,
        load_max: loads.iter().copied().fold(0.0, f64::max),
        load_mean: if loads.is_empty() { 0.0 } else { loads.iter().sum::<f64>() / loads.len() as f64 },
        throttled_secs,
        reserved_cpus: None,
        shared_cpus_why: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_is_read_from_proc_stat_and_the_trials_own_cpu() {
        let a = cpu_times("cpu  100 0 50 1000 10 0 0 0 0 0\ncpu0 50 0 25 500 5 0 0 0 0 0\n").unwrap();
        assert_eq!(a, CpuTimes { busy: 150, steal: 0, total: 1160 });
        // 10 s of a 2-CPU host: 2000 ticks; 1200 busy, 100 stolen.
        let b = cpu_times("cpu  1200 0 150 1700 10 0 0 100 0 0\n").unwrap();
        let f = facts(
            10.0,
            Some((a, b)),
            100.0,
            &[1.0, 2.0, 3.0],
            Some(4.0),
            None,
            ("6.1.0\n".into(), "processor : 0\nmodel name\t: Test CPU @ 2GHz\n".into()),
            2,
        );
        assert_eq!((f.kernel.as_str(), f.cpu_model.as_str(), f.cpus_online), ("6.1.0", "Test CPU @ 2GHz", 2));
        assert!((f.others_cpu_secs.unwrap() - 8.0).abs() < 1e-9, "12 busy seconds less the trial's 4: {f:?}");
        assert!((f.steal_pct - 100.0 * 100.0 / 2000.0).abs() < 1e-9, "{f:?}");
        assert_eq!((f.load_max, f.load_mean), (3.0, 2.0));
        assert_eq!(f.heavy_load().as_deref(), Some("other processes used 0.8 CPUs on average, the hypervisor took 5 % of CPU time"));
        // Without the trial's own CPU nothing is said about others.
        let blind = facts(10.0, Some((a, b)), 100.0, &[], None, None, (String::new(), String::new()), 2);
        assert_eq!((blind.others_cpu_secs, blind.heavy_load().is_some()), (None, true), "steal alone still counts");
        assert_eq!(cpu_times("garbage"), None);
    }

    #[tokio::test]
    async fn a_watch_reads_this_hosts_facts() {
        let w = Watch::start();
        let busy = std::time::Instant::now();
        while busy.elapsed() < Duration::from_millis(200) {
            std::hint::black_box(1 + 1);
        }
        let f = w.finish(Some(0.0), None);
        assert!(!f.kernel.is_empty() && f.cpus_online >= 1 && f.wall_secs >= 0.2, "{f:?}");
        assert!(f.others_cpu_secs.is_some(), "/proc/stat is readable here: {f:?}");
    }
}
