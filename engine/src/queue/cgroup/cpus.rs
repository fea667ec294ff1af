//! The CPUs of a trial and of the house: a set of CPUs, how many a trial needs, which to reserve for it,
//! and Arbiter's own processes kept off them while it runs (the rules in the parent module's header).

/// A set of CPUs (numbers 0–63: a bit each).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuSet(pub u64);

impl CpuSet {
    /// The kernel's list form: `0-3,6`.
    pub fn parse(list: &str) -> Result<CpuSet, String> {
        let mut bits = 0u64;
        for part in list.trim().split(',').filter(|p| !p.is_empty()) {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let (a, b): (u32, u32) = (a.trim().parse().map_err(|_| format!("CPU list {list:?}"))?, b.trim().parse().map_err(|_| format!("CPU list {list:?}"))?);
            if a > b || b > 63 {
                return Err(format!("CPU list {list:?}: CPUs 0–63, ranges low-high"));
            }
            for c in a..=b {
                bits |= 1 << c;
            }
        }
        Ok(CpuSet(bits))
    }

    pub fn count(self) -> u32 {
        self.0.count_ones()
    }

    pub fn cpus(self) -> impl Iterator<Item = u32> {
        (0..64).filter(move |c| self.0 & (1 << c) != 0)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The kernel's list form, ranges folded.
    pub fn list(self) -> String {
        let mut out: Vec<String> = Vec::new();
        let cpus: Vec<u32> = self.cpus().collect();
        let mut i = 0;
        while i < cpus.len() {
            let mut j = i;
            while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
                j += 1;
            }
            out.push(if i == j { cpus[i].to_string() } else { format!("{}-{}", cpus[i], cpus[j]) });
            i = j + 1;
        }
        out.join(",")
    }

    /// The CPUs this process may run on (its affinity: what a container or `taskset` left it).
    pub fn own() -> CpuSet {
        // SAFETY: sched_getaffinity(2) into a zeroed cpu_set_t of the right size.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                return CpuSet(1);
            }
            CpuSet((0..64).filter(|c| libc::CPU_ISSET(*c, &set)).fold(0, |b, c| b | 1 << c))
        }
    }

    pub(super) fn to_libc(self) -> libc::cpu_set_t {
        // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET only sets bits below 64 here.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for c in self.cpus() {
                libc::CPU_SET(c as usize, &mut set);
            }
            set
        }
    }

    /// Moves one thread (a task id) onto these CPUs.
    pub fn pin(self, tid: i32) -> bool {
        let set = self.to_libc();
        // SAFETY: sched_setaffinity(2) with a set of the right size.
        unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
    }
}

/// The CPUs a trial needs: the suite's `resources.cpu` rounded up, no more than its workers where the
/// fingerprint has `workers` (a pipeline of one worker keeps one CPU busy), at least one.
pub fn cpus_needed(cpu: f64, workers: Option<f64>) -> u32 {
    let need = workers.map_or(cpu, |w| cpu.min(w)).ceil();
    if need.is_finite() && need >= 1.0 { need as u32 } else { 1 }
}

/// The CPUs to reserve for a trial that needs `need` of `available` (this process's): the highest
/// `need` of them, the others (at least one) kept for Arbiter, its finelog and the rest of the host.
/// Returns (the trial's, the house's), or why nothing can be reserved.
pub fn reserve(need: u32, available: CpuSet) -> Result<(CpuSet, CpuSet), String> {
    let n = available.count();
    if n <= need {
        return Err(format!(
            "no CPU set reserved: the trial needs {need} CPU{} and this host has {n} (one at least stays with Arbiter and finelog); run fewer workers or on a larger host to isolate trials",
            if need == 1 { "" } else { "s" }
        ));
    }
    let trial = available.cpus().collect::<Vec<_>>().into_iter().rev().take(need as usize).fold(0u64, |b, c| b | 1 << c);
    Ok((CpuSet(trial), CpuSet(available.0 & !trial)))
}

/// Every thread of this process (not its children: a trial's supervisor is one) and of `trees` and
/// their descendants (from /proc).
fn house_tasks(trees: &[u32]) -> Vec<i32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        if let Some(ppid) = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok()) {
            parents.push((pid, ppid));
        }
    }
    let mut family: Vec<u32> = trees.iter().copied().filter(|p| *p > 1 && *p != std::process::id()).collect();
    let mut i = 0;
    while i < family.len() {
        let parent = family[i];
        for (pid, ppid) in &parents {
            if *ppid == parent && !family.contains(pid) {
                family.push(*pid);
            }
        }
        i += 1;
    }
    family.insert(0, std::process::id());
    let mut tasks = Vec::new();
    for pid in family {
        for t in std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
            if let Some(tid) = t.file_name().to_str().and_then(|t| t.parse().ok()) {
                tasks.push(tid);
            }
        }
    }
    tasks
}

/// Arbiter's own processes kept off a trial's reserved CPUs while it runs: made with the house's CPUs,
/// it pins every thread of this process and of `trees` (its finelog server) and their children there;
/// dropped, it gives them back every CPU they had (threads started meanwhile inherit the house's set and
/// are widened too). A trial's supervisor started meanwhile inherits the house's set; the trial itself
/// moves onto its own CPUs as it starts ([`join_on_spawn`]).
pub struct HouseCpus {
    trees: Vec<u32>,
    all: CpuSet,
}

impl HouseCpus {
    pub fn keep(trees: Vec<u32>, house: CpuSet, all: CpuSet) -> HouseCpus {
        for tid in house_tasks(&trees) {
            house.pin(tid);
        }
        HouseCpus { trees, all }
    }
}

impl Drop for HouseCpus {
    fn drop(&mut self) {
        for tid in house_tasks(&self.trees) {
            self.all.pin(tid);
        }
    }
}

