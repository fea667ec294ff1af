//! `baseline_compare.csv`, as the upstream hotpath driver writes it: the 12-column schema (reqps, latency,
//! throughput) and the 25-column schema (plus p90/p99 latency, rounds and error rates). Values are kept
//! as printed, because the gate compares the deltas the driver printed, not recomputed ones.

use std::fmt;

/// The legacy 12-column schema: the first twelve columns of the 25-column one.
pub const HEADER_12: &[&str] = HEADER_25.split_at(12).0;

pub const HEADER_25: [&str; 25] = [
    "size",
    "tool",
    "concurrency",
    "new_median_reqps",
    "baseline_median_reqps",
    "delta_reqps_pct",
    "new_median_latency_ms",
    "baseline_median_latency_ms",
    "delta_latency_pct",
    "new_median_throughput_bps",
    "baseline_median_throughput_bps",
    "delta_throughput_pct",
    "new_median_p90_latency_ms",
    "baseline_median_p90_latency_ms",
    "delta_p90_latency_pct",
    "new_median_p99_latency_ms",
    "baseline_median_p99_latency_ms",
    "delta_p99_latency_pct",
    "new_ok_rounds",
    "baseline_ok_rounds",
    "new_failed_rounds",
    "baseline_failed_rounds",
    "new_error_rate_pct",
    "baseline_error_rate_pct",
    "delta_error_rate_pct",
];

/// A gated metric: its upstream name and whether a larger value is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    Reqps,
    Latency,
    Throughput,
    P90Latency,
    P99Latency,
    /// Failed rounds in percent; its delta is in percentage points.
    ErrorRate,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Reqps => "reqps",
            Metric::Latency => "latency",
            Metric::Throughput => "throughput",
            Metric::P90Latency => "p90-latency",
            Metric::P99Latency => "p99-latency",
            Metric::ErrorRate => "error-rate",
        }
    }

    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Reqps | Metric::Throughput)
    }

    /// Column indexes of (new, baseline, delta).
    fn columns(self) -> (usize, usize, usize) {
        match self {
            Metric::Reqps => (3, 4, 5),
            Metric::Latency => (6, 7, 8),
            Metric::Throughput => (9, 10, 11),
            Metric::P90Latency => (12, 13, 14),
            Metric::P99Latency => (15, 16, 17),
            Metric::ErrorRate => (22, 23, 24),
        }
    }
}

/// One metric of one row, as printed.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricCell {
    pub metric: Metric,
    pub new: String,
    pub baseline: String,
    pub delta: String,
}

/// One data row of a compare file.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareRow {
    /// `--label NAME`, or upstream's `size/tool@concurrency`.
    pub label: String,
    pub line: usize,
    pub cells: Vec<MetricCell>,
    /// The 25-column schema's round counts, as printed: new ok, baseline ok, new failed, baseline failed.
    pub rounds: Option<[String; 4]>,
}

impl CompareRow {
    /// A row from the values of one line of either schema (12 or 25 fields, as printed). `label` replaces
    /// upstream's `size/tool@concurrency`.
    pub fn from_fields(label: Option<&str>, line: usize, fields: &[&str]) -> CompareRow {
        let extended = fields.len() == 25;
        let metrics: &[Metric] = if extended {
            &[Metric::Reqps, Metric::Latency, Metric::Throughput, Metric::P90Latency, Metric::P99Latency, Metric::ErrorRate]
        } else {
            &[Metric::Reqps, Metric::Latency, Metric::Throughput]
        };
        let cells = metrics
            .iter()
            .map(|&metric| {
                let (n, b, d) = metric.columns();
                MetricCell { metric, new: fields[n].into(), baseline: fields[b].into(), delta: fields[d].into() }
            })
            .collect();
        CompareRow {
            label: label.map(String::from).unwrap_or_else(|| format!("{}/{}@{}", fields[0], fields[1], fields[2])),
            line,
            cells,
            rounds: extended.then(|| [fields[18].into(), fields[19].into(), fields[20].into(), fields[21].into()]),
        }
    }

    pub fn is_extended(&self) -> bool {
        self.rounds.is_some()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct CompareError {
    pub source: String,
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for CompareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}, line {l}: {}", self.source, self.message),
            None => write!(f, "{}: {}", self.source, self.message),
        }
    }
}

impl std::error::Error for CompareError {}

/// Parses a compare file. `strict` demands the exact 25-column header and at least one data row
/// (upstream's `--require-tail-error` schema check); otherwise either schema is read.
pub fn parse_compare_csv(source: &str, text: &str, label: Option<&str>, strict: bool) -> Result<Vec<CompareRow>, CompareError> {
    let err = |line: Option<usize>, message: String| CompareError { source: source.to_string(), line, message };
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else { return Err(err(None, "the file is empty; expected a baseline_compare.csv".into())) };
    let header: Vec<&str> = header.trim_start_matches('\u{feff}').split(',').map(str::trim).collect();
    let width = if header == HEADER_25 {
        25
    } else if header == HEADER_12 && !strict {
        12
    } else if strict {
        return Err(err(
            Some(1),
            format!(
                "header does not match the 25-column schema ({} columns found); strict mode requires: {}",
                header.len(),
                HEADER_25.join(",")
            ),
        ));
    } else {
        return Err(err(
            Some(1),
            format!("header matches neither the 12- nor the 25-column baseline_compare.csv schema ({} columns found)", header.len()),
        ));
    };
    let mut rows = Vec::new();
    for (i, line) in lines {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != width {
            return Err(err(Some(i + 1), format!("{} columns where the header has {width}", fields.len())));
        }
        // Every value is a number or upstream's N/A. In strict mode the tail, round and error columns are
        // left to the evidence check instead (upstream turns a malformed one into an invalid-evidence FAIL).
        let checked = if strict { 12 } else { width };
        for (col, value) in fields.iter().enumerate().take(checked).skip(3) {
            if number(value).is_none() && !value.eq_ignore_ascii_case("n/a") {
                return Err(err(Some(i + 1), format!("column {}: {value:?} is not a number (or N/A)", header[col])));
            }
        }
        rows.push(CompareRow::from_fields(label, i + 1, &fields));
    }
    if rows.is_empty() && strict {
        return Err(err(None, "no data rows (strict mode needs evidence)".into()));
    }
    Ok(rows)
}

/// A printed number, if it is one (upstream prints `N/A` for missing values).
pub fn number(text: &str) -> Option<f64> {
    // `N/A`, `0x0` and empty text fail to parse; `inf` and `NaN` parse and are refused here.
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Upstream's strict evidence check of the tail and error columns of one 25-column row: every value a
/// plain number, round counts whole and non-negative, error rates within 0–100 and equal (to the printed
/// two decimals) to failed/(ok+failed), and the error-rate delta equal to the difference of the exact
/// rates (upstream prints 16.67 for 33.33 − 16.67, from 33.333… − 16.666…).
pub fn tail_error_evidence_is_valid(row: &CompareRow) -> bool {
    let Some(rounds) = &row.rounds else { return false };
    let tail = row.cells.iter().filter(|c| matches!(c.metric, Metric::P90Latency | Metric::P99Latency | Metric::ErrorRate));
    let mut values = Vec::new();
    for c in tail {
        for v in [&c.new, &c.baseline, &c.delta] {
            match number(v) {
                Some(x) => values.push(x),
                None => return false,
            }
        }
    }
    let counts: Option<Vec<f64>> = rounds.iter().map(|r| number(r).filter(|v| *v >= 0.0 && v.fract() == 0.0)).collect();
    let Some(counts) = counts else { return false };
    let (new_ok, base_ok, new_failed, base_failed) = (counts[0], counts[1], counts[2], counts[3]);
    let Some(err) = row.cells.iter().find(|c| c.metric == Metric::ErrorRate) else { return false };
    let (Some(new_rate), Some(base_rate), Some(delta)) = (number(&err.new), number(&err.baseline), number(&err.delta)) else {
        return false;
    };
    let in_range = |r: f64| (0.0..=100.0).contains(&r);
    let rate = |ok: f64, failed: f64| if ok + failed > 0.0 { failed / (ok + failed) * 100.0 } else { 0.0 };
    let same = |a: f64, b: f64| (a - b).abs() <= 0.005 + 1e-9;
    in_range(new_rate)
        && in_range(base_rate)
        && same(new_rate, rate(new_ok, new_failed))
        && same(base_rate, rate(base_ok, base_failed))
        && same(delta, rate(new_ok, new_failed) - rate(base_ok, base_failed))
}
