//! Reading warp's results: the text report (warp ≥ 1.1 `Report: OP` blocks, printed alphabetically for
//! mixed runs; warp 1.0's `Operation: OP` blocks without latencies) and the JSON aggregate (`--json`).
//! Numbers come only from an operation's own `* Average:` and `* Reqs:` lines — never from the
//! "Throughput, split into N x 1s" section that follows (upstream once read "1 s" from it as a latency).

use serde::{Deserialize, Serialize};

/// One operation's results from one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpResult {
    /// PUT, GET, DELETE, STAT…
    pub op: String,
    pub reqps: f64,
    pub throughput_bps: Option<f64>,
    pub latency_avg_ms: Option<f64>,
    pub latency_p50_ms: Option<f64>,
    pub latency_p90_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub errors: Option<u64>,
}

/// "3.91 MiB/s" → bytes per second.
fn rate_bytes(value: &str, unit: &str) -> Option<f64> {
    let v: f64 = value.parse().ok()?;
    let f = match unit {
        "B/s" => 1.0,
        "KiB/s" => 1024.0,
        "MiB/s" => 1048576.0,
        "GiB/s" => 1073741824.0,
        "KB/s" => 1e3,
        "MB/s" => 1e6,
        "GB/s" => 1e9,
        _ => return None,
    };
    Some(v * f)
}

/// "4.1ms", "1.2s", "850µs", "850us", "3m2s"-free durations → milliseconds.
fn duration_ms(text: &str) -> Option<f64> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = t.split_at(split);
    let v: f64 = num.parse().ok()?;
    match unit {
        "ns" => Some(v / 1e6),
        "µs" | "us" => Some(v / 1e3),
        "ms" => Some(v),
        "s" => Some(v * 1e3),
        _ => None,
    }
}

/// ` * Average: 68.75 MiB/s, 275.00 obj/s` or ` * Average: 61.12 obj/s`.
fn parse_average(line: &str) -> Option<(Option<f64>, f64)> {
    let rest = line.trim().trim_start_matches('*').trim().strip_prefix("Average:")?;
    let (mut bps, mut ops) = (None, None);
    for part in rest.split(',') {
        let mut words = part.split_whitespace();
        let (Some(v), Some(unit)) = (words.next(), words.next()) else { continue };
        if unit == "obj/s" {
            ops = v.parse().ok();
        } else if let Some(b) = rate_bytes(v, unit) {
            bps = Some(b);
        }
    }
    Some((bps, ops?))
}

/// ` * Reqs: Avg: 9.0ms, 50%: 8.1ms, 90%: 14.0ms, 99%: 30.5ms, …`.
fn parse_reqs(line: &str) -> Option<[Option<f64>; 4]> {
    let rest = line.trim().trim_start_matches('*').trim().strip_prefix("Reqs:")?;
    let mut out = [None; 4];
    for part in rest.split(',') {
        let Some((key, value)) = part.split_once(':') else { continue };
        let slot = match key.trim() {
            "Avg" => 0,
            "50%" => 1,
            "90%" => 2,
            "99%" => 3,
            _ => continue,
        };
        out[slot] = duration_ms(value);
    }
    Some(out)
}

/// The operation a block header names: `Report: GET. Concurrency: 8…` or `Operation: PUT. Concurrency: 8`.
fn block_op(line: &str) -> Option<String> {
    let t = line.trim();
    let rest = t.strip_prefix("Report:").or_else(|| t.strip_prefix("Operation:"))?;
    let op = rest.trim().split(['.', ' ']).next()?.trim();
    (!op.is_empty()).then(|| op.to_ascii_uppercase())
}

/// Every operation block of a warp text report, in printed order; the `Total` block is left out.
pub fn parse_warp_text(text: &str) -> Result<Vec<OpResult>, String> {
    let mut out: Vec<OpResult> = Vec::new();
    let mut current: Option<OpResult> = None;
    let mut in_block_stats = false;
    for line in text.lines() {
        if let Some(op) = block_op(line) {
            out.extend(current.take().filter(|r| r.reqps > 0.0 || r.throughput_bps.is_some()));
            in_block_stats = op != "TOTAL";
            current = in_block_stats.then_some(OpResult {
                op,
                reqps: 0.0,
                throughput_bps: None,
                latency_avg_ms: None,
                latency_p50_ms: None,
                latency_p90_ms: None,
                latency_p99_ms: None,
                errors: None,
            });
            continue;
        }
        let t = line.trim();
        if t.starts_with("Throughput, split into") || t.starts_with("Throughput by host") || t.starts_with('─') || t.starts_with("---") {
            in_block_stats = false;
            continue;
        }
        let Some(cur) = current.as_mut().filter(|_| in_block_stats) else { continue };
        if let Some((bps, ops)) = parse_average(t) {
            cur.reqps = ops;
            cur.throughput_bps = bps;
        } else if let Some([avg, p50, p90, p99]) = parse_reqs(t) {
            (cur.latency_avg_ms, cur.latency_p50_ms, cur.latency_p90_ms, cur.latency_p99_ms) = (avg, p50, p90, p99);
        } else if let Some(rest) = t.strip_prefix("Errors:") {
            cur.errors = rest.split_whitespace().next().and_then(|n| n.parse().ok());
        }
    }
    out.extend(current.take().filter(|r| r.reqps > 0.0 || r.throughput_bps.is_some()));
    if out.is_empty() {
        return Err("unknown warp output: no `Report: OP` or `Operation: OP` block with an `* Average:` line".into());
    }
    Ok(out)
}

/// Every operation of warp's JSON aggregate (`by_op_type`): rates from the measured throughput window,
/// latencies as request-weighted means over clients' single-sized request stats.
pub fn parse_warp_json(text: &str) -> Result<Vec<OpResult>, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not warp JSON: {e}"))?;
    let ops = v.get("by_op_type").and_then(|o| o.as_object()).ok_or("unknown warp JSON: no by_op_type object")?;
    let mut out = Vec::new();
    for (name, op) in ops {
        let tp = op.get("throughput").ok_or_else(|| format!("{name}: no throughput"))?;
        let secs = tp
            .get("measure_duration_millis")
            .and_then(|m| m.as_f64())
            .filter(|m| *m > 0.0)
            .ok_or_else(|| format!("{name}: no measure_duration_millis"))?
            / 1000.0;
        let count =
            tp.get("objects").or_else(|| tp.get("ops")).and_then(|x| x.as_f64()).ok_or_else(|| format!("{name}: no object count"))?;
        let bytes = tp.get("bytes").and_then(|x| x.as_f64());
        let mut weighted = [0.0; 4];
        let mut weight = 0.0;
        for segments in op.get("requests_by_client").and_then(|c| c.as_object()).into_iter().flat_map(|c| c.values()) {
            for seg in segments.as_array().into_iter().flatten() {
                let Some(s) = seg.get("single_sized_requests") else { continue };
                let n = s.get("requests").and_then(|x| x.as_f64()).unwrap_or(0.0);
                for (slot, key) in ["dur_avg_millis", "dur_median_millis", "dur_90_millis", "dur_99_millis"].iter().enumerate() {
                    weighted[slot] += n * s.get(key).and_then(|x| x.as_f64()).unwrap_or(0.0);
                }
                weight += n;
            }
        }
        let lat = |i: usize| (weight > 0.0).then(|| weighted[i] / weight);
        out.push(OpResult {
            op: name.to_ascii_uppercase(),
            reqps: count / secs,
            throughput_bps: bytes.map(|b| b / secs),
            latency_avg_ms: lat(0),
            latency_p50_ms: lat(1),
            latency_p90_ms: lat(2),
            latency_p99_ms: lat(3),
            errors: op.get("total_errors").and_then(|x| x.as_u64()),
        });
    }
    if out.is_empty() {
        return Err("unknown warp JSON: by_op_type is empty".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_rates() {
        assert_eq!(duration_ms("4.1ms"), Some(4.1));
        assert_eq!(duration_ms("1.5s"), Some(1500.0));
        assert_eq!(duration_ms("850µs"), Some(0.85));
        assert_eq!(duration_ms("11 x 1s"), None);
        assert_eq!(rate_bytes("3.91", "MiB/s"), Some(3.91 * 1048576.0));
    }
}
