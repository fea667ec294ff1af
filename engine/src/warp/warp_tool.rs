//! A real `warp` instead of the built-in driver (when the suite selects `tool = "warp"` and warp is on
//! PATH): its text report or JSON aggregate, read by the warp parsers, as the driver's report.

use judge::warp::warp_output::{parse_warp_json, parse_warp_text, OpResult};
use loadgen::report::{LoadReport, OpReport};

/// warp prints rates, not request counts: the count is estimated as rate × window (+ errors), which is
/// all `round_ok` needs (no requests → no evidence).
pub fn report_from_warp(stdout: &str, argv: &[String]) -> Result<LoadReport, String> {
    let ops = if stdout.trim_start().starts_with('{') { parse_warp_json(stdout) } else { parse_warp_text(stdout) }
        .map_err(|e| format!("unreadable warp output: {e}"))?;
    let arg = |flag: &str| argv.iter().position(|a| a == flag).and_then(|i| argv.get(i + 1)).cloned().unwrap_or_default();
    let duration = loadgen::parse_duration(&arg("--duration")).unwrap_or_default().as_secs_f64();
    let workload = argv.get(1).cloned().unwrap_or_default();
    let to_report = |r: OpResult| {
        let requests = (r.reqps * duration).round() as u64 + r.errors.unwrap_or(0);
        OpReport { result: r, requests, first_error: None }
    };
    let mut reports: Vec<OpReport> = ops.clone().into_iter().map(to_report).collect();
    if workload == "mixed" && !ops.is_empty() {
        // warp reports mixed runs per operation; the cell is judged on all of them together: summed
        // rates, the request-weighted mean latency, and the worst operation's percentiles.
        let total_reqps: f64 = ops.iter().map(|o| o.reqps).sum();
        let weighted = |f: fn(&OpResult) -> Option<f64>| -> Option<f64> {
            let parts: Option<Vec<f64>> = ops.iter().map(|o| f(o).map(|v| v * o.reqps)).collect();
            parts.map(|p| p.iter().sum::<f64>() / total_reqps.max(1e-9))
        };
        let worst = |f: fn(&OpResult) -> Option<f64>| ops.iter().filter_map(f).reduce(f64::max);
        let total = OpResult {
            op: "TOTAL".into(),
            reqps: total_reqps,
            throughput_bps: Some(ops.iter().filter_map(|o| o.throughput_bps).sum()),
            latency_avg_ms: weighted(|o| o.latency_avg_ms),
            latency_p50_ms: worst(|o| o.latency_p50_ms),
            latency_p90_ms: worst(|o| o.latency_p90_ms),
            latency_p99_ms: worst(|o| o.latency_p99_ms),
            errors: Some(ops.iter().filter_map(|o| o.errors).sum()),
        };
        reports.push(to_report(total));
    }
    Ok(LoadReport {
        tool: "warp".into(),
        workload,
        object_size: judge::units::parse_size(&arg("--obj.size")).unwrap_or(0.0) as u64,
        concurrency: arg("--concurrent").parse().unwrap_or(0),
        duration_secs: duration,
        ops: reports,
        driver_cpu_secs: 0.0,
        driver_cpu_us_per_request: None,
    })
}
