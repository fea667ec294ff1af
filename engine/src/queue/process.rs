//! The host's processes as the queue sees them: signalling a process or its group, the job id a local
//! process is recorded under (pid and start time) and whether a recorded one still runs and is ours.

/// Signals the whole process group `pgid`.
pub fn signal_group(pgid: u32, signal: i32) {
    if let Ok(pid) = i32::try_from(pgid) {
        // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
        unsafe {
            libc::kill(-pid, signal);
        }
    }
}

/// Signals one process.
pub fn signal_pid(pid: u32, signal: i32) {
    if let Ok(pid) = i32::try_from(pid) {
        // SAFETY: kill(2) on one process id; no memory is touched.
        unsafe {
            libc::kill(pid, signal);
        }
    }
}

/// The job id a local process is recorded under: `PID@START`, START its start time in clock ticks after
/// boot (field 22 of `/proc/PID/stat`), so that after a restart a reused pid is never taken for it.
pub fn job_id(pid: u32) -> String {
    match start_time(pid) {
        Some(start) => format!("{pid}@{start}"),
        None => pid.to_string(),
    }
}

/// The pid a local job id (`PID@START`, or a bare `PID` from before the start time was recorded) names.
pub fn pid_of(job_id: &str) -> Option<u32> {
    job_id.split_once('@').map_or(job_id, |(pid, _)| pid).parse().ok()
}

fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

/// The pid a recorded job id names, if that process still runs and is the one recorded: started at the
/// recorded time (an id without one, from before this check, is taken on its command line alone), with
/// `marker` in its command line. Only such a process is waited on or signalled after a restart.
pub fn still_ours(job_id: &str, marker: &str) -> Option<u32> {
    let pid = pid_of(job_id)?;
    let start = match job_id.split_once('@') {
        Some((_, start)) => Some(start.parse::<u64>().ok()?),
        None => None,
    };
    if pid == 0 || !is_alive(pid) || start.is_some_and(|s| start_time(pid) != Some(s)) {
        return None;
    }
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    cmdline.contains(marker).then_some(pid)
}

/// True while a process with this id exists.
pub fn is_alive(pid: u32) -> bool {
    // SAFETY: kill(2) with signal 0 only checks that the process exists.
    i32::try_from(pid).is_ok_and(|p| unsafe { libc::kill(p, 0) } == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_process_is_recognised_by_its_start_time_and_command_line() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        let job = job_id(pid);
        assert!(job.starts_with(&format!("{pid}@")), "{job}");
        // Right after the fork the child may not have exec'd `sleep` yet.
        for _ in 0..100 {
            if still_ours(&job, "sleep 30").is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(still_ours(&job, "sleep 30"), Some(pid));
        assert_eq!(still_ours(&job, "supervise"), None, "another command line");
        assert_eq!(still_ours(&format!("{pid}@1"), "sleep"), None, "another start time: the pid was reused");
        assert_eq!(still_ours(&pid.to_string(), "sleep"), Some(pid), "an id recorded before start times");
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(still_ours(&job, "sleep"), None, "gone");
        assert_eq!(still_ours("garbage", ""), None);
    }
}
