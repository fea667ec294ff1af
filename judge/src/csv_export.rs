//! The reports as CSV for spreadsheets: one row per (arm, stage) of a pipeline report, one row per gate
//! row of a warp report. Numbers as stored (unrounded where the report keeps them), empty when absent.

use crate::pipeline::report::PipelineReport;
use crate::warp::gate::GateReport;

fn write(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    // Writing to memory cannot fail; a record of the header's length is always valid.
    let _ = w.write_record(header);
    for r in rows {
        let _ = w.write_record(&r);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

fn opt(v: Option<f64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

pub fn pipeline_stages_csv(report: &PipelineReport) -> String {
    let header = [
        "arm",
        "stage",
        "verdict",
        "cpu_control_s",
        "cpu_treatment_s",
        "cpu_change_pct",
        "cpu_interval_low_pct",
        "cpu_interval_high_pct",
        "elapsed_control_s",
        "elapsed_treatment_s",
        "elapsed_change_pct",
        "items_change_pct",
        "bytes_change_pct",
        "mem_peak_control_bytes",
        "mem_peak_treatment_bytes",
        "mem_peak_change_pct",
        "control_trials",
        "treatment_trials",
    ];
    let mut rows = Vec::new();
    for arm in &report.treatments {
        for s in arm.stages.iter().chain(std::iter::once(&arm.total)) {
            let stage = if std::ptr::eq(s, &arm.total) { "TOTAL".to_string() } else { s.stage.clone() };
            rows.push(vec![
                arm.name.clone(),
                stage,
                s.verdict.as_str().to_string(),
                s.cpu_control.to_string(),
                s.cpu_treatment.to_string(),
                s.cpu_change_pct.to_string(),
                opt(s.cpu_interval_pct.map(|i| i[0])),
                opt(s.cpu_interval_pct.map(|i| i[1])),
                s.elapsed_control.to_string(),
                s.elapsed_treatment.to_string(),
                s.elapsed_change_pct.to_string(),
                s.items_change_pct.to_string(),
                s.bytes_change_pct.to_string(),
                s.mem_peak_control.to_string(),
                s.mem_peak_treatment.to_string(),
                s.mem_peak_change_pct.to_string(),
                s.trials[0].to_string(),
                s.trials[1].to_string(),
            ]);
        }
    }
    write(&header, rows)
}

pub fn warp_gate_csv(report: &GateReport) -> String {
    let header = ["workload", "metric", "baseline", "candidate", "delta", "regress", "verdict", "missing_reason"];
    let rows = report
        .rows
        .iter()
        .map(|r| {
            let verdict = serde_json::to_value(r.verdict).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
            vec![
                r.workload.clone(),
                r.metric.clone(),
                opt(r.baseline),
                opt(r.new),
                r.delta.clone(),
                opt(r.regress),
                verdict,
                r.missing_reason.clone().unwrap_or_default(),
            ]
        })
        .collect();
    write(&header, rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warp::compare_csv::parse_compare_csv;
    use crate::warp::gate::{gate, GateConfig};

    #[test]
    fn gate_rows_become_csv_rows() {
        let text = "size,tool,concurrency,new_median_reqps,baseline_median_reqps,delta_reqps_pct,new_median_latency_ms,baseline_median_latency_ms,delta_latency_pct,new_median_throughput_bps,baseline_median_throughput_bps,delta_throughput_pct\n4KiB,warp,8,880,1000,-12.00,9.1,8,13.75,3604480,4096000,-12.00\n";
        let rows = parse_compare_csv("c.csv", text, Some("put, \"quoted\""), false).unwrap();
        let csv = warp_gate_csv(&gate(&rows, &GateConfig::default()));
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "workload,metric,baseline,candidate,delta,regress,verdict,missing_reason");
        assert_eq!(lines[1], "\"put, \"\"quoted\"\"\",reqps,1000,880,-12.00%,12,FAIL,");
        assert_eq!(lines.len(), 4, "reqps, latency and throughput rows");
    }
}
