//! Arbiter's own S3 load driver (warp cannot be installed here): `put`, `get` (objects prepared first)
//! and `mixed` (warp's default mix: 45 % GET, 30 % STAT, 15 % PUT, 10 % DELETE) at a fixed object size
//! and concurrency, for a warm-up and then a measured window. A request counts when it starts and ends
//! inside the window; obj/s and bytes/s are over the window, latencies from request start to last byte.
//! `arbiter load …` runs it standalone; a warp phase runs it as a child process, so its CPU is its own.
//!
//! PUT workers cycle over a bounded ring of keys (at most 256 per worker and 64 MiB of objects per
//! worker), so a long put-4MiB run does not fill the disk; every object made is deleted at the end.

pub mod command;
pub mod report;
pub mod s3;

use report::{LoadReport, OpTally};
use s3::{Op, S3};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use judge::warp::Workload;

#[derive(Debug, Clone)]
pub struct LoadSpec {
    pub endpoint: String,
    pub bucket: String,
    pub region: String,
    pub access_key: String,
    pub secret_key: String,
    pub workload: Workload,
    pub size: u64,
    pub concurrency: u32,
    pub duration: Duration,
    pub warmup: Duration,
    /// Leave the objects in the bucket (default: delete what the run made).
    pub keep_objects: bool,
}

const PREPARED_BYTES: u64 = 256 << 20;
const RING_BYTES: u64 = 64 << 20;

/// Small, fast, deterministic per worker: which object, which operation.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn payload(size: u64) -> bytes::Bytes {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut v = Vec::with_capacity(size as usize + 8);
    while (v.len() as u64) < size {
        v.extend_from_slice(&rng.next().to_le_bytes());
    }
    v.truncate(size as usize);
    bytes::Bytes::from(v)
}

/// CPU this process has used so far (user + system).
fn cpu_now() -> Duration {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own; RUSAGE_SELF is always valid.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Runs the workload and reports what the measured window saw.
pub async fn run(spec: &LoadSpec) -> Result<LoadReport, String> {
    if spec.size == 0 || spec.concurrency == 0 || spec.duration.is_zero() {
        return Err("size, concurrency and duration must all be above zero".into());
    }
    let s3 = Arc::new(S3::new(&spec.endpoint, &spec.bucket, &spec.region, &spec.access_key, &spec.secret_key, spec.concurrency as usize)?);
    s3.create_bucket().await?;
    let body = payload(spec.size);
    let run_id = format!("arb-{:x}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    // Objects GET, STAT and DELETE work on, made before the clock starts.
    let prepared = match spec.workload {
        Workload::Put => Vec::new(),
        Workload::Get | Workload::Mixed => {
            let n = (PREPARED_BYTES / spec.size).clamp(1, 500) as usize;
            let keys: Vec<String> = (0..n).map(|i| format!("{run_id}/prep-{i}")).collect();
            for_each_concurrent(&s3, &keys, spec.concurrency as usize, Op::Put, &body)
                .await
                .map_err(|e| format!("preparing objects: {e}"))?;
            keys
        }
    };
    let pool = Arc::new(Mutex::new(prepared));
    let start = Instant::now();
    let window_start = start + spec.warmup;
    let window_end = window_start + spec.duration;
    let ring = (RING_BYTES / spec.size).clamp(1, 256) as usize;
    let mut workers = Vec::new();
    for w in 0..spec.concurrency as usize {
        let (s3, body, pool, run_id, workload) = (s3.clone(), body.clone(), pool.clone(), run_id.clone(), spec.workload);
        workers.push(tokio::spawn(async move {
            let mut tallies: Vec<OpTally> = [Op::Put, Op::Get, Op::Stat, Op::Delete].into_iter().map(OpTally::new).collect();
            let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ ((w as u64 + 1) * 0x9e37_79b9));
            let mut made: Vec<String> = Vec::new();
            let mut signed: std::collections::HashMap<String, url::Url> = std::collections::HashMap::new();
            let mut n = 0usize;
            while Instant::now() < window_end {
                let (op, key) = match workload {
                    Workload::Put => {
                        n += 1;
                        (Op::Put, format!("{run_id}/w{w}-{}", n % ring))
                    }
                    Workload::Get => {
                        let pool = pool.lock().unwrap_or_else(|e| e.into_inner());
                        (Op::Get, pool[rng.below(pool.len())].clone())
                    }
                    Workload::Mixed => pick_mixed(&mut rng, &pool, &run_id, w, &mut n),
                };
                // PUT and GET runs cycle over a bounded set of keys: their URLs are signed once per worker.
                let url = match workload {
                    Workload::Mixed => s3.sign(op, &key),
                    _ => signed.entry(key.clone()).or_insert_with(|| s3.sign(op, &key)).clone(),
                };
                let began = Instant::now();
                let done = s3.send(op, url, &body).await;
                let ended = Instant::now();
                if op == Op::Put && done.error.is_none() {
                    if workload == Workload::Mixed {
                        pool.lock().unwrap_or_else(|e| e.into_inner()).push(key.clone());
                    } else if n <= ring {
                        made.push(key.clone());
                    }
                }
                if began >= window_start && ended <= window_end {
                    tallies.iter_mut().find(|t| t.op == op).expect("every op has a tally").record(&done);
                }
            }
            (tallies, made)
        }));
    }
    // The driver's CPU over the measured window.
    tokio::time::sleep_until(window_start.into()).await;
    let cpu_start = cpu_now();
    tokio::time::sleep_until(window_end.into()).await;
    let cpu_used = cpu_now().saturating_sub(cpu_start);
    let mut totals: Vec<OpTally> = [Op::Put, Op::Get, Op::Stat, Op::Delete].into_iter().map(OpTally::new).collect();
    let mut made = Vec::new();
    for w in workers {
        let (tallies, keys) = w.await.map_err(|e| format!("a load worker failed: {e}"))?;
        for (total, t) in totals.iter_mut().zip(&tallies) {
            total.merge(t);
        }
        made.extend(keys);
    }
    if !spec.keep_objects {
        made.extend(pool.lock().unwrap_or_else(|e| e.into_inner()).drain(..));
        // Best effort: a failed clean-up does not change what was measured.
        let _ = for_each_concurrent(&s3, &made, spec.concurrency as usize, Op::Delete, &body).await;
    }
    let mut ops: Vec<_> = totals.iter().filter(|t| t.requests > 0).map(|t| t.report(spec.duration)).collect();
    let requests: u64 = ops.iter().map(|o| o.requests).sum();
    if spec.workload == Workload::Mixed {
        let mut all = OpTally::new(Op::Total);
        totals.iter().for_each(|t| all.merge(t));
        ops.push(all.report(spec.duration));
    }
    Ok(LoadReport {
        tool: "arbiter-load".into(),
        workload: spec.workload.name().into(),
        object_size: spec.size,
        concurrency: spec.concurrency,
        duration_secs: spec.duration.as_secs_f64(),
        ops,
        driver_cpu_secs: cpu_used.as_secs_f64(),
        driver_cpu_us_per_request: (requests > 0).then(|| cpu_used.as_secs_f64() * 1e6 / requests as f64),
    })
}

/// warp's default mix. GET, STAT and DELETE fall back to PUT while there is no object to work on;
/// a deleted key leaves the pool first, so no later GET asks for it.
fn pick_mixed(rng: &mut Rng, pool: &Mutex<Vec<String>>, run_id: &str, w: usize, n: &mut usize) -> (Op, String) {
    let roll = rng.below(100);
    let mut pool = pool.lock().unwrap_or_else(|e| e.into_inner());
    if pool.is_empty() || (45 + 30..45 + 30 + 15).contains(&roll) {
        *n += 1;
        return (Op::Put, format!("{run_id}/m{w}-{n}"));
    }
    let i = rng.below(pool.len());
    match roll {
        0..45 => (Op::Get, pool[i].clone()),
        45..75 => (Op::Stat, pool[i].clone()),
        _ => (Op::Delete, pool.swap_remove(i)),
    }
}

/// `op` on every key, `concurrency` at a time; the first error ends it.
async fn for_each_concurrent(s3: &Arc<S3>, keys: &[String], concurrency: usize, op: Op, body: &bytes::Bytes) -> Result<(), String> {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let keys = Arc::new(keys.to_vec());
    let mut tasks = Vec::new();
    for _ in 0..concurrency.max(1) {
        let (s3, keys, next, body) = (s3.clone(), keys.clone(), next.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(key) = keys.get(i) else { return Ok(()) };
                if let Some(e) = s3.request(op, key, &body).await.error {
                    return Err(format!("{} {key}: {e}", op.name()));
                }
            }
        }));
    }
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    Ok(())
}

pub use judge::units::parse_duration;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        assert!(parse_duration("ten").unwrap_err().contains("\"ten\""));
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn the_mixed_workload_follows_warps_distribution() {
        let pool = Mutex::new((0..1000).map(|i| format!("k{i}")).collect::<Vec<_>>());
        let mut rng = Rng(7);
        let mut counts = std::collections::HashMap::new();
        let mut n = 0;
        for _ in 0..20_000 {
            let (op, _) = pick_mixed(&mut rng, &pool, "r", 0, &mut n);
            *counts.entry(op.name()).or_insert(0usize) += 1;
            if op == Op::Put {
                pool.lock().unwrap().push(format!("p{n}"));
            }
        }
        let share = |op: &str| counts[op] as f64 / 20_000.0 * 100.0;
        for (op, want) in [("GET", 45.0), ("STAT", 30.0), ("PUT", 15.0), ("DELETE", 10.0)] {
            assert!((share(op) - want).abs() < 1.5, "{op}: {:.1} % (want {want} %)", share(op));
        }
    }

    #[test]
    fn payloads_have_the_asked_size_and_are_not_constant() {
        let p = payload(4099);
        assert_eq!(p.len(), 4099);
        assert!(p.windows(8).take(100).collect::<std::collections::HashSet<_>>().len() > 50);
    }
}
