//! From rounds to medians to `baseline_compare.csv`, as the upstream driver does it: per phase, medians
//! over successful rounds (an even count takes the mean of the two middle values), failed-round counts,
//! error rate = failed / (ok + failed) in percent; deltas (candidate − baseline) / baseline × 100 printed
//! with two decimals, the error-rate delta in points.

use super::compare_csv::HEADER_25;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// One round (after its retries) of one load run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    pub ok: bool,
    pub reqps: Option<f64>,
    pub throughput_bps: Option<f64>,
    pub latency_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

/// A round fails above this share of failed requests (percent) unless the suite says otherwise.
pub const DEFAULT_MAX_REQUEST_ERROR_PCT: f64 = 1.0;

/// Whether one attempt of a round counts: the load tool finished, it made requests, and no more than
/// `max_error_pct` of them failed (strictly more fails the round).
pub fn round_ok(tool_succeeded: bool, requests: u64, failed_requests: u64, max_error_pct: f64) -> bool {
    tool_succeeded && requests > 0 && (failed_requests as f64 / requests as f64 * 100.0) <= max_error_pct
}

/// One phase of one cell, summarised: upstream's `median_summary.csv` row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseSummary {
    pub size: String,
    pub tool: String,
    pub concurrency: u32,
    pub ok_rounds: u32,
    pub failed_rounds: u32,
    pub throughput_bps: Option<f64>,
    pub reqps: Option<f64>,
    pub latency_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

pub use crate::stats::median;

impl PhaseSummary {
    pub fn from_rounds(size: &str, tool: &str, concurrency: u32, rounds: &[Round]) -> PhaseSummary {
        let ok: Vec<&Round> = rounds.iter().filter(|r| r.ok).collect();
        let m = |f: fn(&Round) -> Option<f64>| median(&ok.iter().filter_map(|r| f(r)).collect::<Vec<_>>());
        PhaseSummary {
            size: size.into(),
            tool: tool.into(),
            concurrency,
            ok_rounds: ok.len() as u32,
            failed_rounds: (rounds.len() - ok.len()) as u32,
            throughput_bps: m(|r| r.throughput_bps),
            reqps: m(|r| r.reqps),
            latency_ms: m(|r| r.latency_ms),
            p90_ms: m(|r| r.p90_ms),
            p99_ms: m(|r| r.p99_ms),
        }
    }

    /// Failed rounds in percent of all rounds (0 with no rounds).
    pub fn error_rate_pct(&self) -> f64 {
        let all = self.ok_rounds + self.failed_rounds;
        if all == 0 {
            0.0
        } else {
            self.failed_rounds as f64 / all as f64 * 100.0
        }
    }

    /// The mean of several phases of the same cell (ABBA: A1 and A2), rounds added up.
    pub fn mean_of(phases: &[PhaseSummary]) -> Option<PhaseSummary> {
        let first = phases.first()?;
        let avg = |f: fn(&PhaseSummary) -> Option<f64>| -> Option<f64> {
            let v: Vec<f64> = phases.iter().filter_map(f).collect();
            (v.len() == phases.len()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        Some(PhaseSummary {
            size: first.size.clone(),
            tool: first.tool.clone(),
            concurrency: first.concurrency,
            ok_rounds: phases.iter().map(|p| p.ok_rounds).sum(),
            failed_rounds: phases.iter().map(|p| p.failed_rounds).sum(),
            throughput_bps: avg(|p| p.throughput_bps),
            reqps: avg(|p| p.reqps),
            latency_ms: avg(|p| p.latency_ms),
            p90_ms: avg(|p| p.p90_ms),
            p99_ms: avg(|p| p.p99_ms),
        })
    }
}

pub const MEDIAN_SUMMARY_HEADER: &str =
    "size,tool,concurrency,successful_rounds,failed_rounds,median_throughput_bps,median_reqps,median_latency_ms,median_req_p90_ms,median_req_p99_ms";

fn num6(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.6}")).unwrap_or_else(|| "N/A".into())
}

/// Writes upstream's `median_summary.csv`.
pub fn write_median_summary(phases: &[PhaseSummary]) -> String {
    let mut out = format!("{MEDIAN_SUMMARY_HEADER}\n");
    for p in phases {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{}",
            p.size,
            p.tool,
            p.concurrency,
            p.ok_rounds,
            p.failed_rounds,
            num6(p.throughput_bps),
            num6(p.reqps),
            num6(p.latency_ms),
            num6(p.p90_ms),
            num6(p.p99_ms)
        );
    }
    out
}

/// Reads upstream's `median_summary.csv`; errors name the line.
pub fn parse_median_summary(source: &str, text: &str) -> Result<Vec<PhaseSummary>, String> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    match lines.next() {
        Some((_, h)) if h.trim().trim_start_matches('\u{feff}') == MEDIAN_SUMMARY_HEADER => {}
        Some(_) => return Err(format!("{source}, line 1: not a median_summary.csv header (expected {MEDIAN_SUMMARY_HEADER})")),
        None => return Err(format!("{source}: the file is empty")),
    }
    let mut out = Vec::new();
    for (i, line) in lines {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() != 10 {
            return Err(format!("{source}, line {}: {} columns where the header has 10", i + 1, f.len()));
        }
        let int =
            |s: &str, what: &str| s.parse::<u32>().map_err(|_| format!("{source}, line {}: {what} {s:?} is not a whole number", i + 1));
        let opt = |s: &str, what: &str| -> Result<Option<f64>, String> {
            if s.eq_ignore_ascii_case("n/a") {
                return Ok(None);
            }
            s.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .map(Some)
                .ok_or_else(|| format!("{source}, line {}: {what} {s:?} is not a number", i + 1))
        };
        out.push(PhaseSummary {
            size: f[0].into(),
            tool: f[1].into(),
            concurrency: int(f[2], "concurrency")?,
            ok_rounds: int(f[3], "successful_rounds")?,
            failed_rounds: int(f[4], "failed_rounds")?,
            throughput_bps: opt(f[5], "median_throughput_bps")?,
            reqps: opt(f[6], "median_reqps")?,
            latency_ms: opt(f[7], "median_latency_ms")?,
            p90_ms: opt(f[8], "median_req_p90_ms")?,
            p99_ms: opt(f[9], "median_req_p99_ms")?,
        });
    }
    Ok(out)
}

/// Upstream's `round_results.csv` (one line per attempt of each round) → one summary per (size, tool,
/// concurrency), as the driver summarises it: the last attempt of each round counts, `status = ok` is a
/// successful round, medians over successful rounds.
pub fn parse_round_results(source: &str, text: &str) -> Result<Vec<PhaseSummary>, String> {
    let mut reader = csv::ReaderBuilder::new().trim(csv::Trim::All).from_reader(text.trim_start_matches('\u{feff}').as_bytes());
    let headers = reader.headers().map_err(|e| format!("{source}: {e}"))?.clone();
    let col = |name: &str| {
        headers.iter().position(|h| h == name).ok_or_else(|| format!("{source}, line 1: no {name} column (not a round_results.csv)"))
    };
    let [size, tool, round, attempt, conc, status, bps, reqps, lat, p90, p99] =
        ["size", "tool", "round", "attempt", "concurrency", "status", "throughput_bps", "reqps", "latency_ms", "req_p90_ms", "req_p99_ms"]
            .map(col);
    let (size, tool, round, attempt, conc, status) = (size?, tool?, round?, attempt?, conc?, status?);
    let (bps, reqps, lat, p90, p99) = (bps?, reqps?, lat?, p90?, p99?);
    // (size, tool, concurrency) in first-seen order → round → (attempt, Round).
    type Phase = ((String, String, u32), std::collections::BTreeMap<u32, (u32, Round)>);
    let mut phases: Vec<Phase> = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let line = i + 2;
        let r = record.map_err(|e| format!("{source}, line {line}: {e}"))?;
        let field = |c: usize| r.get(c).unwrap_or("");
        let int = |c: usize, what: &str| {
            field(c).parse::<u32>().map_err(|_| format!("{source}, line {line}: {what} {:?} is not a whole number", field(c)))
        };
        let num = |c: usize| field(c).parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0);
        let key = (field(size).to_string(), field(tool).to_string(), int(conc, "concurrency")?);
        let this = Round {
            ok: field(status) == "ok",
            reqps: num(reqps),
            throughput_bps: num(bps),
            latency_ms: num(lat),
            p90_ms: num(p90),
            p99_ms: num(p99),
        };
        let (n, a) = (int(round, "round")?, int(attempt, "attempt")?);
        let rounds = match phases.iter_mut().find(|(k, _)| *k == key) {
            Some((_, rounds)) => rounds,
            None => {
                phases.push((key, Default::default()));
                &mut phases.last_mut().expect("just pushed").1
            }
        };
        if rounds.get(&n).is_none_or(|(prev, _)| *prev < a) {
            rounds.insert(n, (a, this));
        }
    }
    if phases.is_empty() {
        return Err(format!("{source}: no rounds"));
    }
    Ok(phases
        .into_iter()
        .map(|((size, tool, conc), rounds)| {
            PhaseSummary::from_rounds(&size, &tool, conc, &rounds.into_values().map(|(_, r)| r).collect::<Vec<_>>())
        })
        .collect())
}

fn delta(new: Option<f64>, base: Option<f64>) -> String {
    match (new, base) {
        (Some(n), Some(b)) if b != 0.0 => format!("{:.2}", (n - b) / b * 100.0),
        _ => "N/A".into(),
    }
}

/// The 25 fields of one compare row, as printed: candidate (`new`) against baseline; a missing baseline
/// prints N/A.
pub fn compare_fields(new: &PhaseSummary, base: Option<&PhaseSummary>) -> Vec<String> {
    let b = |f: fn(&PhaseSummary) -> Option<f64>| base.and_then(f);
    let new_rate = new.error_rate_pct();
    let mut out = vec![new.size.clone(), new.tool.clone(), new.concurrency.to_string()];
    let metrics: [fn(&PhaseSummary) -> Option<f64>; 5] = [|p| p.reqps, |p| p.latency_ms, |p| p.throughput_bps, |p| p.p90_ms, |p| p.p99_ms];
    for f in metrics {
        out.extend([num6(f(new)), num6(b(f)), delta(f(new), b(f))]);
    }
    let base_text = |f: fn(&PhaseSummary) -> String| base.map(f).unwrap_or_else(|| "N/A".into());
    // A phase with no round at all has no error rate (0 of 0 is not 0 %).
    let ran = |p: &PhaseSummary| p.ok_rounds + p.failed_rounds > 0;
    let rate = |p: &PhaseSummary| if ran(p) { format!("{:.2}", p.error_rate_pct()) } else { "N/A".into() };
    out.extend([
        new.ok_rounds.to_string(),
        base_text(|p| p.ok_rounds.to_string()),
        new.failed_rounds.to_string(),
        base_text(|p| p.failed_rounds.to_string()),
        rate(new),
        base.map(rate).unwrap_or_else(|| "N/A".into()),
        base.filter(|b| ran(b) && ran(new)).map(|p| format!("{:.2}", new_rate - p.error_rate_pct())).unwrap_or_else(|| "N/A".into()),
    ]);
    out
}

/// One labelled cell from two round_results.csv texts (baseline, candidate): summarised and compared as
/// the driver does, then read back as the rows the gate takes. `source` names the cell in errors.
pub fn compare_rows_from_rounds(
    source: &str,
    label: &str,
    baseline: &str,
    candidate: &str,
    strict: bool,
) -> Result<Vec<super::compare_csv::CompareRow>, String> {
    let base = parse_round_results(&format!("{source} (baseline)"), baseline)?;
    let cand = parse_round_results(&format!("{source} (candidate)"), candidate)?;
    let csv = write_compare_csv(&base, &cand);
    super::compare_csv::parse_compare_csv(source, &csv, Some(label), strict).map_err(|e| e.to_string())
}

/// The whole `baseline_compare.csv`: each candidate row against the baseline of the same size, tool and
/// concurrency.
pub fn write_compare_csv(baseline: &[PhaseSummary], candidate: &[PhaseSummary]) -> String {
    let mut out = format!("{}\n", HEADER_25.join(","));
    for c in candidate {
        let base = baseline.iter().find(|b| b.size == c.size && b.tool == c.tool && b.concurrency == c.concurrency);
        let _ = writeln!(out, "{}", compare_fields(c, base).join(","));
    }
    out
}

/// One phase of a cell as the page and the charts show it: its name and its rounds in run order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseRounds {
    /// "A", "B" (AB order) or "A1", "B1", "B2", "A2" (ABBA).
    pub leg: String,
    pub baseline: bool,
    pub rounds: Vec<Round>,
}

/// The evidence behind one cell's medians.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellRounds {
    pub label: String,
    /// Baseline phases first, then candidate phases, each in run order.
    pub phases: Vec<PhaseRounds>,
    /// How far the baseline moved between its first and last phase (the larger of obj/s and
    /// throughput), in percent; ABBA only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl CellRounds {
    /// The cell's rounds an arm so far: [baseline, candidate], every phase's rounds (ok or not).
    pub fn rounds_an_arm(&self) -> [u32; 2] {
        let of = |baseline: bool| self.phases.iter().filter(|p| p.baseline == baseline).map(|p| p.rounds.len() as u32).sum();
        [of(true), of(false)]
    }

    /// The rounds of one metric ("reqps", "throughput", "latency", "p90-latency", "p99-latency") of the
    /// baseline or candidate phases, per phase: (leg, values of the successful rounds).
    pub fn values(&self, metric: &str, baseline: bool) -> Vec<(String, Vec<f64>)> {
        let pick = |r: &Round| match metric {
            "reqps" => r.reqps,
            "throughput" => r.throughput_bps,
            "latency" => r.latency_ms,
            "p90-latency" => r.p90_ms,
            "p99-latency" => r.p99_ms,
            _ => None,
        };
        self.phases
            .iter()
            .filter(|p| p.baseline == baseline)
            .map(|p| (p.leg.clone(), p.rounds.iter().filter(|r| r.ok).filter_map(pick).filter(|v| v.is_finite()).collect()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_fail_on_tool_failure_or_too_many_request_errors() {
        assert!(round_ok(true, 1000, 10, DEFAULT_MAX_REQUEST_ERROR_PCT), "exactly 1 % passes");
        assert!(!round_ok(true, 1000, 11, DEFAULT_MAX_REQUEST_ERROR_PCT));
        assert!(!round_ok(false, 1000, 0, DEFAULT_MAX_REQUEST_ERROR_PCT), "the tool failed");
        assert!(!round_ok(true, 0, 0, DEFAULT_MAX_REQUEST_ERROR_PCT), "no requests is no evidence");
    }
}
