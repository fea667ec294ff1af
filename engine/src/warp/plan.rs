//! The phases of a warp experiment: per repeat and drive-sync value, each arm once (AB: A B; ABBA:
//! A1 B1 B2 A2), and the load driver's argv of every workload — the one plan the dry run shows and the
//! runner executes. Pure.

use suite::warp::{LoadTool, PhaseOrder, WarpSpec, WorkloadSpec};

pub use wire::plan::PlannedPhase;

/// `sync-on/A1`: what a warp trial's `cell` column holds.
pub fn cell(drive_sync: bool, leg: &str) -> String {
    format!("{}/{leg}", sync_label(drive_sync))
}

pub fn sync_label(drive_sync: bool) -> &'static str {
    if drive_sync {
        "sync-on"
    } else {
        "sync-off"
    }
}

/// An added phase's cell (adaptive rounds): only these workloads run — `sync-on/B3/get-4KiB,put-4KiB`.
pub fn cell_with(drive_sync: bool, leg: &str, workloads: &[String]) -> String {
    format!("{}/{leg}/{}", sync_label(drive_sync), workloads.join(","))
}

/// The drive-sync value and leg of a trial's cell.
pub fn parse_cell(cell: &str) -> Option<(bool, &str)> {
    parse_phase(cell).map(|(sync, leg, _)| (sync, leg))
}

/// The drive-sync value, leg and — for a phase added by adaptive rounds — the workloads it runs
/// (`None`: every workload of the matrix).
pub fn parse_phase(cell: &str) -> Option<(bool, &str, Option<Vec<&str>>)> {
    let (sync, rest) = cell.split_once('/')?;
    let (leg, only) = match rest.split_once('/') {
        Some((leg, list)) => (leg, Some(list.split(',').filter(|w| !w.is_empty()).collect::<Vec<_>>())),
        None => (rest, None),
    };
    match sync {
        "sync-on" => Some((true, leg, only)),
        "sync-off" => Some((false, leg, only)),
        _ => None,
    }
}

/// One phase of the order: (arm index, drive-sync, leg, repeat).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseSlot {
    pub arm: usize,
    pub drive_sync: bool,
    pub leg: String,
    pub repeat: usize,
}

/// Every phase in run order: repeats outermost, then drive-sync values, then the arms in AB order
/// (A B C) or mirrored (A1 B1 B2 A2; with three arms A1 B1 C1 C2 B2 A2).
pub fn phases(arms: usize, repeats: usize, order: PhaseOrder, sync: &[bool]) -> Vec<PhaseSlot> {
    // Runs of each arm per drive-sync value: legs count on across repeats (A1 B1 B2 A2 A3 B3 B4 A4).
    let mut runs = vec![vec![0usize; arms]; sync.len()];
    let mut out = Vec::new();
    for repeat in 0..repeats {
        for (s, &drive_sync) in sync.iter().enumerate() {
            let forward: Vec<usize> = (0..arms).collect();
            let sequence: Vec<usize> = match order {
                PhaseOrder::Ab => forward,
                PhaseOrder::Abba => forward.iter().copied().chain(forward.iter().rev().copied()).collect(),
            };
            for arm in sequence {
                runs[s][arm] += 1;
                let leg = format!("{}{}", (b'A' + arm as u8) as char, runs[s][arm]);
                out.push(PhaseSlot { arm, drive_sync, leg, repeat });
            }
        }
    }
    out
}

/// The bucket of one workload's load runs in one phase (`label` is the experiment id, `dry` in a dry run).
pub fn bucket(label: &str, seq: usize, w: &WorkloadSpec) -> String {
    format!("arb-{label}-{seq}-{}", w.name.to_ascii_lowercase())
}

/// The built-in driver's argv for one workload (the keys are in its environment, never here).
pub fn driver_argv(exe: &str, endpoint: &str, w: &WorkloadSpec, spec: &WarpSpec, bucket: &str) -> Vec<String> {
    match spec.tool {
        LoadTool::Builtin => [
            exe,
            "load",
            "--endpoint",
            endpoint,
            "--workload",
            w.kind.name(),
            "--size",
            &w.size.to_string(),
            "--concurrency",
            &spec.concurrency.to_string(),
            "--duration",
            &spec.duration,
            "--warmup",
            &spec.warmup,
            "--bucket",
            bucket,
            "--json",
        ]
        .map(str::to_string)
        .to_vec(),
        LoadTool::Warp => {
            let host = endpoint.trim_start_matches("http://").trim_start_matches("https://").trim_end_matches('/');
            let warp = spec.warp_program().or_else(|| spec.warp_bin.clone()).unwrap_or_else(|| "warp".into());
            let mut argv = [
                warp.as_str(),
                w.kind.name(),
                "--host",
                host,
                "--obj.size",
                &w.size.to_string(),
                "--concurrent",
                &spec.concurrency.to_string(),
                "--duration",
                &spec.duration,
                "--bucket",
                bucket,
                "--noclear",
                "--no-color",
            ]
            .map(str::to_string)
            .to_vec();
            if endpoint.starts_with("https://") {
                argv.push("--tls".into());
            }
            argv
        }
    }
}

/// A phase's expected wall time: a server start, then per workload and round the warm-up, the window
/// and about two seconds of preparing and cleaning up, with the cool-down between rounds.
pub fn estimated_phase_secs(spec: &WarpSpec) -> f64 {
    let Ok((duration, warmup, cooldown)) = spec.durations() else { return 0.0 };
    let rounds = spec.workloads.len() as f64 * f64::from(spec.rounds);
    3.0 + rounds * (warmup + duration).as_secs_f64() + rounds * 2.0 + (rounds - 1.0).max(0.0) * cooldown.as_secs_f64()
}

/// The plan's words on adaptive rounds: off (and why), or when they act, the cap and the worst case —
/// every cell unsure until the cap, each added pair of phases running the whole matrix of a drive-sync value.
pub fn adaptive_words(spec: &WarpSpec, arms: usize) -> String {
    if !spec.adaptive_rounds {
        return "off (the suite's or this launch's setting): the planned phases only".into();
    }
    if arms != 2 {
        return "off: adaptive rounds add phases to a two-arm experiment only".into();
    }
    let planned = spec.planned_rounds_an_arm();
    let cap = spec.round_cap();
    let pairs = (cap - planned) / spec.rounds.max(1);
    if pairs == 0 {
        return format!("off: the cap of {cap} rounds an arm is the planned rounds");
    }
    let worst = estimated_phase_secs(spec) * 2.0 * pairs as f64 * spec.sync_values().len() as f64 / 60.0;
    format!(
        "on once this suite is calibrated for these settings on this host (an A/A run): a cell whose noise-aware reading more phases could change gets another pair of phases ({} round{} each), up to {cap} rounds an arm ({pairs} more pair{}); clear cells stop; at worst about {:.0} more minutes",
        spec.rounds,
        if spec.rounds == 1 { "" } else { "s" },
        if pairs == 1 { "" } else { "s" },
        worst.max(1.0)
    )
}

/// Where the arm's binary is (or will be): the suite's prebuilt path, or its cache entry — keyed by the
/// SHA, plus a hash of the config diff when the arm has one.
pub fn planned_binary(
    data_dir: &std::path::Path,
    suite: &suite::SuiteDefinition,
    arm: &crate::launch::request::PlannedArm,
) -> Option<std::path::PathBuf> {
    let warp = suite.warp.as_ref()?;
    if let Some(p) = warp.binaries.get(&arm.name) {
        return Some(std::path::PathBuf::from(p));
    }
    let name = std::path::Path::new(warp.binary.as_deref()?).file_name()?.to_owned();
    let mut key = arm.sha.clone();
    if let Some(config) = &arm.config {
        let json = serde_json::to_string(config).unwrap_or_default();
        key.push('-');
        key.push_str(&crate::sha256_hex(json.as_bytes())[..12]);
    }
    Some(data_dir.join("cache").join("binaries").join(&suite.name).join(key).join(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn legs(p: &[PhaseSlot]) -> Vec<String> {
        p.iter().map(|s| cell(s.drive_sync, &s.leg)).collect()
    }

    #[test]
    fn orders() {
        assert_eq!(legs(&phases(2, 1, PhaseOrder::Ab, &[true, false])), ["sync-on/A1", "sync-on/B1", "sync-off/A1", "sync-off/B1"]);
        assert_eq!(legs(&phases(2, 1, PhaseOrder::Abba, &[true])), ["sync-on/A1", "sync-on/B1", "sync-on/B2", "sync-on/A2"]);
        let three = phases(3, 1, PhaseOrder::Abba, &[false]);
        assert_eq!(three.iter().map(|s| s.leg.as_str()).collect::<Vec<_>>(), ["A1", "B1", "C1", "C2", "B2", "A2"]);
        let repeated = phases(2, 2, PhaseOrder::Abba, &[true]);
        assert_eq!(repeated.iter().map(|s| s.leg.as_str()).collect::<Vec<_>>(), ["A1", "B1", "B2", "A2", "A3", "B3", "B4", "A4"]);
        assert_eq!(repeated.iter().map(|s| s.repeat).collect::<Vec<_>>(), [0, 0, 0, 0, 1, 1, 1, 1]);
        assert_eq!(parse_cell("sync-off/B2"), Some((false, "B2")));
        assert_eq!(parse_cell("on/B2"), None);
        let added = cell_with(true, "B3", &["get-4KiB".into(), "put-4MiB".into()]);
        assert_eq!(added, "sync-on/B3/get-4KiB,put-4MiB");
        assert_eq!(parse_phase(&added), Some((true, "B3", Some(vec!["get-4KiB", "put-4MiB"]))));
        assert_eq!(parse_cell(&added), Some((true, "B3")));
        assert_eq!(parse_phase("sync-off/A1"), Some((false, "A1", None)));
    }
}
