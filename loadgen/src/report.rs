//! What a load run measured, per operation: counts, bytes and a latency histogram per worker, merged
//! at the end into obj/s, bytes/s and latency avg/p50/p90/p99 — the fields of warp's own report, so a
//! run of the built-in driver and a run of warp are judged alike.

use super::s3::{Done, Op};
use hdrhistogram::Histogram;
use judge::warp::warp_output::OpResult;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One worker's tally of one operation.
pub struct OpTally {
    pub op: Op,
    pub requests: u64,
    pub errors: u64,
    pub bytes: u64,
    pub first_error: Option<String>,
    /// Latencies of successful requests, in microseconds (1 µs .. 10 min, 3 significant digits).
    pub latency_us: Histogram<u64>,
}

impl OpTally {
    pub fn new(op: Op) -> OpTally {
        let latency_us = Histogram::new_with_bounds(1, 600_000_000, 3).expect("static histogram bounds are valid");
        OpTally { op, requests: 0, errors: 0, bytes: 0, first_error: None, latency_us }
    }

    pub fn record(&mut self, done: &Done) {
        self.requests += 1;
        match &done.error {
            Some(e) => {
                self.errors += 1;
                if self.first_error.is_none() {
                    self.first_error = Some(e.clone());
                }
            }
            None => {
                self.bytes += done.bytes;
                let us = (done.latency.as_micros() as u64).clamp(1, 600_000_000);
                let _ = self.latency_us.record(us);
            }
        }
    }

    /// Adds another tally (of any operation) into this one.
    pub fn merge(&mut self, other: &OpTally) {
        self.requests += other.requests;
        self.errors += other.errors;
        self.bytes += other.bytes;
        if self.first_error.is_none() {
            self.first_error.clone_from(&other.first_error);
        }
        let _ = self.latency_us.add(&other.latency_us);
    }

    /// The operation's figures over a measured window.
    pub fn report(&self, window: Duration) -> OpReport {
        let secs = window.as_secs_f64().max(1e-9);
        let ok = self.requests - self.errors;
        let ms = |us: f64| us / 1000.0;
        let h = &self.latency_us;
        let has = ok > 0;
        OpReport {
            result: OpResult {
                op: self.op.name().to_string(),
                reqps: ok as f64 / secs,
                throughput_bps: matches!(self.op, Op::Put | Op::Get | Op::Total).then_some(self.bytes as f64 / secs),
                latency_avg_ms: has.then(|| ms(h.mean())),
                latency_p50_ms: has.then(|| ms(h.value_at_quantile(0.50) as f64)),
                latency_p90_ms: has.then(|| ms(h.value_at_quantile(0.90) as f64)),
                latency_p99_ms: has.then(|| ms(h.value_at_quantile(0.99) as f64)),
                errors: Some(self.errors),
            },
            requests: self.requests,
            first_error: self.first_error.clone(),
        }
    }
}

/// One operation of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpReport {
    #[serde(flatten)]
    pub result: OpResult,
    /// Requests measured (successful and failed).
    pub requests: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

/// `arbiter load --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    pub tool: String,
    pub workload: String,
    pub object_size: u64,
    pub concurrency: u32,
    /// The measured window (after the warm-up).
    pub duration_secs: f64,
    pub ops: Vec<OpReport>,
    /// CPU the driver used in the measured window (user + system), and per measured request.
    pub driver_cpu_secs: f64,
    pub driver_cpu_us_per_request: Option<f64>,
}

impl LoadReport {
    /// The operation a cell of this workload is judged on: PUT, GET, or TOTAL for a mixed run.
    pub fn judged_op(&self) -> Option<&OpReport> {
        let want = match self.workload.as_str() {
            "put" => "PUT",
            "get" => "GET",
            _ => "TOTAL",
        };
        self.ops.iter().find(|o| o.result.op == want)
    }

    /// A human-readable summary, warp-like.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "{} · {} B objects · concurrency {} · {:.2} s measured · driver CPU {:.3} s{}\n",
            self.workload,
            self.object_size,
            self.concurrency,
            self.duration_secs,
            self.driver_cpu_secs,
            self.driver_cpu_us_per_request.map(|v| format!(" ({v:.1} µs/request)")).unwrap_or_default()
        );
        for o in &self.ops {
            let r = &o.result;
            let ms = |v: Option<f64>| v.map(|x| format!("{x:.2}ms")).unwrap_or_else(|| "N/A".into());
            out.push_str(&format!(
                "{:<6} {:>10.2} obj/s {:>10} requests {:>6} errors  avg {}  p50 {}  p90 {}  p99 {}{}{}\n",
                r.op,
                r.reqps,
                o.requests,
                r.errors.unwrap_or(0),
                ms(r.latency_avg_ms),
                ms(r.latency_p50_ms),
                ms(r.latency_p90_ms),
                ms(r.latency_p99_ms),
                r.throughput_bps.map(|b| format!("  {:.2} MiB/s", b / 1048576.0)).unwrap_or_default(),
                o.first_error.as_ref().map(|e| format!("  first error: {e}")).unwrap_or_default()
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(ms: u64, bytes: u64, error: Option<&str>) -> Done {
        Done { latency: Duration::from_millis(ms), bytes, error: error.map(str::to_string) }
    }

    #[test]
    fn tallies_merge_into_rates_and_percentiles() {
        let mut a = OpTally::new(Op::Get);
        let mut b = OpTally::new(Op::Get);
        for i in 1..=50 {
            a.record(&done(i, 1024, None));
            b.record(&done(50 + i, 1024, None));
        }
        b.record(&done(5, 0, Some("HTTP 403: AccessDenied")));
        a.merge(&b);
        let r = a.report(Duration::from_secs(2));
        assert_eq!(r.requests, 101);
        assert_eq!(r.result.errors, Some(1));
        assert_eq!(r.first_error.as_deref(), Some("HTTP 403: AccessDenied"));
        assert!((r.result.reqps - 50.0).abs() < 1e-9, "100 ok requests over 2 s");
        assert!((r.result.throughput_bps.unwrap() - 51200.0).abs() < 1e-9);
        let p50 = r.result.latency_p50_ms.unwrap();
        let p99 = r.result.latency_p99_ms.unwrap();
        assert!((49.9..=50.1).contains(&p50), "p50 {p50}");
        assert!((98.9..=99.1).contains(&p99), "p99 {p99}");
        assert!((r.result.latency_avg_ms.unwrap() - 50.5).abs() < 0.1);
    }

    #[test]
    fn no_success_means_no_latency_and_no_rate() {
        let mut t = OpTally::new(Op::Put);
        t.record(&done(3, 0, Some("connection refused")));
        let r = t.report(Duration::from_secs(1));
        assert_eq!(r.result.reqps, 0.0);
        assert_eq!(r.result.latency_p99_ms, None);
        assert_eq!(r.result.errors, Some(1));
    }
}
