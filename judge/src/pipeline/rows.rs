//! `zephyr.stage` rows: the row type, and parsers for the formats finelog prints (CSV with a header,
//! a JSON array, JSON lines). Parsing is pure: it takes text and a name for messages.

use serde::{Deserialize, Serialize};
use std::fmt;

/// One `zephyr.stage` row. The eight judged columns are required; the rest are context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageRow {
    pub execution_id: String,
    pub stage_name: String,
    /// `END` or `FAILED` (other words are kept and ignored by the judge).
    pub status: String,
    pub cpu_time_total: f64,
    pub elapsed: f64,
    pub items: f64,
    pub bytes_processed: f64,
    pub mem_peak_bytes_max: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_shards: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_pct_avg: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_bytes_avg: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub byte_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<i64>,
}

impl StageRow {
    /// A row with the judged columns; the context columns empty.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        execution_id: &str,
        stage_name: &str,
        status: &str,
        cpu: f64,
        elapsed: f64,
        items: f64,
        bytes: f64,
        mem_peak: f64,
    ) -> StageRow {
        StageRow {
            execution_id: execution_id.into(),
            stage_name: stage_name.into(),
            status: status.into(),
            cpu_time_total: cpu,
            elapsed,
            items,
            bytes_processed: bytes,
            mem_peak_bytes_max: mem_peak,
            total_shards: None,
            cpu_pct_avg: None,
            mem_bytes_avg: None,
            item_rate: None,
            byte_rate: None,
            ts: None,
            seq: None,
        }
    }

    pub fn is_end(&self) -> bool {
        self.status == "END"
    }
    pub fn is_failed(&self) -> bool {
        self.status == "FAILED"
    }

    /// Identity for duplicate detection: every judged field, bit for bit, and the timestamp (finelog's
    /// `seq` differs between two writes of the same row, so it is left out). Execution ids compare by key.
    pub(crate) fn identity(&self) -> (&str, &str, &str, Option<&str>, [u64; 6]) {
        (
            execution_key(&self.execution_id).unwrap_or(&self.execution_id),
            &self.stage_name,
            &self.status,
            self.ts.as_deref(),
            [
                self.cpu_time_total,
                self.elapsed,
                self.items,
                self.bytes_processed,
                self.mem_peak_bytes_max,
                self.total_shards.unwrap_or(-1.0),
            ]
            .map(f64::to_bits),
        )
    }
}

/// A row file that cannot be read, with where and why.
#[derive(Debug, Clone, PartialEq)]
pub struct RowsError {
    pub source: String,
    pub line: Option<usize>,
    pub column: Option<String>,
    pub message: String,
}

impl fmt::Display for RowsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.source)?;
        if let Some(line) = self.line {
            write!(f, ", line {line}")?;
        }
        if let Some(column) = &self.column {
            write!(f, ", column {column}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for RowsError {}

const REQUIRED: [&str; 8] =
    ["execution_id", "stage_name", "status", "cpu_time_total", "items", "bytes_processed", "mem_peak_bytes_max", "elapsed"];
const NUMERIC: [&str; 11] = [
    "cpu_time_total",
    "elapsed",
    "items",
    "bytes_processed",
    "mem_peak_bytes_max",
    "total_shards",
    "cpu_pct_avg",
    "mem_bytes_avg",
    "item_rate",
    "byte_rate",
    "seq",
];

/// Parses rows from CSV (with a header), a JSON array, or JSON lines — told apart by the first character.
pub fn parse_rows(source: &str, text: &str) -> Result<Vec<StageRow>, RowsError> {
    let err = |line: Option<usize>, column: Option<&str>, message: String| RowsError {
        source: source.to_string(),
        line,
        column: column.map(String::from),
        message,
    };
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.is_empty() {
        return Err(err(None, None, "the file is empty; expected zephyr.stage rows as CSV, JSON or JSON lines".into()));
    }
    let records: Vec<Record> = match trimmed.as_bytes()[0] {
        b'[' => {
            let values: Vec<serde_json::Value> =
                serde_json::from_str(trimmed).map_err(|e| err(Some(e.line()), None, format!("not a JSON array of rows: {e}")))?;
            values
                .into_iter()
                .enumerate()
                .map(|(i, v)| json_record(v).map(|r| (i + 1, r)).map_err(|m| err(None, None, format!("row {}: {m}", i + 1))))
                .collect::<Result<_, _>>()?
        }
        b'{' => {
            let mut out = Vec::new();
            for (i, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let v: serde_json::Value =
                    serde_json::from_str(line).map_err(|e| err(Some(i + 1), None, format!("not a JSON object: {e}")))?;
                out.push((i + 1, json_record(v).map_err(|m| err(Some(i + 1), None, m))?));
            }
            out
        }
        _ => csv_records(trimmed).map_err(|(line, m)| err(line, None, m))?,
    };
    if records.is_empty() {
        return Err(err(None, None, "the file holds no rows".into()));
    }
    records.into_iter().map(|(line, fields)| to_row(fields).map_err(|(col, m)| err(Some(line), Some(&col), m))).collect()
}

enum Field {
    Text(String),
    Number(f64),
    Null,
}

fn json_record(v: serde_json::Value) -> Result<Vec<(String, Field)>, String> {
    let serde_json::Value::Object(map) = v else { return Err("each row must be a JSON object".into()) };
    Ok(map
        .into_iter()
        .map(|(k, v)| {
            let field = match v {
                serde_json::Value::Null => Field::Null,
                serde_json::Value::Number(n) => Field::Number(n.as_f64().unwrap_or(f64::NAN)),
                serde_json::Value::String(s) => Field::Text(s),
                other => Field::Text(other.to_string()),
            };
            (k, field)
        })
        .collect())
}

/// A record: its line number and its named fields.
type Record = (usize, Vec<(String, Field)>);

fn csv_records(text: &str) -> Result<Vec<Record>, (Option<usize>, String)> {
    let mut reader = csv::ReaderBuilder::new().has_headers(true).flexible(false).from_reader(text.as_bytes());
    let headers: Vec<String> =
        reader.headers().map_err(|e| (Some(1), format!("not CSV: {e}")))?.iter().map(|h| h.trim().to_string()).collect();
    if !headers.iter().any(|h| REQUIRED.contains(&h.as_str())) {
        return Err((Some(1), "not zephyr.stage rows: the first line is not a CSV header naming execution_id, stage_name, …".into()));
    }
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| (e.position().map(|p| p.line() as usize), format!("malformed CSV: {e}")))?;
        let line = record.position().map(|p| p.line() as usize).unwrap_or(0);
        let fields = headers
            .iter()
            .zip(record.iter())
            .map(|(h, v)| {
                let v = v.trim();
                let field = if v.is_empty() { Field::Null } else { Field::Text(v.to_string()) };
                (h.clone(), field)
            })
            .collect();
        out.push((line, fields));
    }
    Ok(out)
}

fn to_row(fields: Vec<(String, Field)>) -> Result<StageRow, (String, String)> {
    let mut map: std::collections::HashMap<String, Field> = fields.into_iter().collect();
    for name in REQUIRED {
        if matches!(map.get(name), None | Some(Field::Null)) {
            return Err((name.into(), "missing required value".into()));
        }
    }
    let mut number = |name: &str| -> Result<Option<f64>, (String, String)> {
        let value = match map.remove(name) {
            None | Some(Field::Null) => return Ok(None),
            Some(Field::Number(n)) => n,
            Some(Field::Text(t)) => t.parse::<f64>().map_err(|_| (name.to_string(), format!("{t:?} is not a number")))?,
        };
        if !value.is_finite() {
            return Err((name.into(), format!("{value} is not a finite number")));
        }
        if value < 0.0 {
            return Err((name.into(), format!("{value} is negative")));
        }
        Ok(Some(value))
    };
    let mut numbers = std::collections::HashMap::new();
    for name in NUMERIC {
        numbers.insert(name, number(name)?);
    }
    let mut text = |name: &str| match map.remove(name) {
        Some(Field::Text(t)) => Some(t),
        Some(Field::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let req = |n: &str| numbers[n].expect("checked above");
    let execution_id = text("execution_id").unwrap_or_default();
    // An execution id is matched, stored and shown in URLs and logs: printable ASCII, of a sane length.
    if execution_id.len() > 200 || !execution_id.bytes().all(|b| b.is_ascii_graphic()) {
        let shown: String = execution_id.chars().take(40).collect();
        return Err((
            "execution_id".into(),
            format!("{shown:?} is not an execution id (printable ASCII without spaces, at most 200 characters)"),
        ));
    }
    Ok(StageRow {
        execution_id,
        stage_name: text("stage_name").unwrap_or_default(),
        status: text("status").unwrap_or_default(),
        ts: text("ts"),
        cpu_time_total: req("cpu_time_total"),
        elapsed: req("elapsed"),
        items: req("items"),
        bytes_processed: req("bytes_processed"),
        mem_peak_bytes_max: req("mem_peak_bytes_max"),
        total_shards: numbers["total_shards"],
        cpu_pct_avg: numbers["cpu_pct_avg"],
        mem_bytes_avg: numbers["mem_bytes_avg"],
        item_rate: numbers["item_rate"],
        byte_rate: numbers["byte_rate"],
        seq: numbers["seq"].map(|s| s as i64),
    })
}

/// The `YYYYMMDD-HHMMSS-<8 hex>` suffix of an execution id (newer Zephyr prefixes a name slug).
pub fn execution_key(id: &str) -> Option<&str> {
    let id = id.trim();
    if id.len() < 24 {
        return None;
    }
    // By bytes, and only ASCII ones: an id with other characters has no key (never a panic mid-character).
    let key = id.get(id.len() - 24..)?;
    let b = key.as_bytes();
    let ok = b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'-'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'-'
        && b[16..].iter().all(|c| c.is_ascii_hexdigit())
        && (id.len() == 24 || id.as_bytes()[id.len() - 25] == b'-');
    ok.then_some(key)
}

/// Execution ids printed in a log (`[slug-]YYYYMMDD-HHMMSS-<8 hex>`), in order of first appearance.
pub fn execution_ids_in(log: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for token in log.split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')) {
        let token = token.trim_matches('-');
        if execution_key(token).is_some() && !ids.iter().any(|i| i == token) {
            ids.push(token.to_string());
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn execution_ids_from_a_log() {
        let log = "starting\nexecution_id=dedup-fineweb-20261129-072203-da99fe05 stage0\nretry 20261129-072210-0badc0de\nagain dedup-fineweb-20261129-072203-da99fe05\nnot 20261129-072203-da99fe0\n";
        assert_eq!(execution_ids_in(log), ["dedup-fineweb-20261129-072203-da99fe05", "20261129-072210-0badc0de"]);
    }

    const HEADER: &str = "execution_id,stage_name,status,cpu_time_total,items,bytes_processed,mem_peak_bytes_max,elapsed";

    #[test]
    fn csv_json_and_jsonl_agree() {
        let csv = format!("{HEADER},extra\n20261129-072203-da99fe05,stage1-Map → Scatter,END,1.11,100000,18400000,179884032,7.45,zz\n");
        let json = r#"[{"execution_id":"20261129-072203-da99fe05","stage_name":"stage1-Map → Scatter","status":"END","cpu_time_total":1.11,"items":100000,"bytes_processed":18400000,"mem_peak_bytes_max":179884032,"elapsed":7.45,"unknown":[1]}]"#;
        let jsonl = "{\"execution_id\":\"20261129-072203-da99fe05\",\"stage_name\":\"stage1-Map → Scatter\",\"status\":\"END\",\"cpu_time_total\":1.11,\"items\":100000,\"bytes_processed\":18400000,\"mem_peak_bytes_max\":179884032,\"elapsed\":7.45}\n\n";
        let a = parse_rows("a.csv", &csv).unwrap();
        assert_eq!(a, parse_rows("a.json", json).unwrap());
        assert_eq!(a, parse_rows("a.jsonl", jsonl).unwrap());
        assert_eq!(a[0].cpu_time_total, 1.11);
    }

    #[test]
    fn bad_input_names_file_line_and_column() {
        let e = parse_rows("r.csv", &format!("{HEADER}\nx-1,s,END,abc,1,1,1,1\n")).unwrap_err();
        assert_eq!(e.to_string(), "r.csv, line 2, column cpu_time_total: \"abc\" is not a number");
        let e = parse_rows("r.csv", &format!("{HEADER}\nx-1,s,END,1,1,1,1,NaN\n")).unwrap_err();
        assert!(e.to_string().contains("column elapsed: NaN is not a finite number"), "{e}");
        let e = parse_rows("r.csv", &format!("{HEADER}\nx-1,s,END,1,1,1,1,inf\n")).unwrap_err();
        assert!(e.to_string().contains("not a finite number"), "{e}");
        let e = parse_rows("r.csv", &format!("{HEADER}\nx-1,s,END,-1,1,1,1,1\n")).unwrap_err();
        assert!(e.to_string().contains("line 2, column cpu_time_total: -1 is negative"), "{e}");
        let e = parse_rows("r.csv", "execution_id,stage_name,status\nx,s,END\n").unwrap_err();
        assert!(e.to_string().contains("column cpu_time_total: missing required value"), "{e}");
        let e = parse_rows("r.csv", &format!("{HEADER}\nx-1,s,END,1,1\n")).unwrap_err();
        assert!(e.to_string().contains("line 2") && e.to_string().contains("malformed CSV"), "{e}");
        assert!(parse_rows("e.csv", "  \n").unwrap_err().to_string().contains("e.csv: the file is empty"));
        assert!(parse_rows("h.csv", HEADER).unwrap_err().to_string().contains("holds no rows"));
        assert!(parse_rows("b.txt", "hello world\nfoo").unwrap_err().to_string().contains("not zephyr.stage rows"));
        let e = parse_rows("j.jsonl", "{\"execution_id\": 1}\n{oops\n").unwrap_err();
        assert!(e.to_string().starts_with("j.jsonl, line 2: not a JSON object"), "{e}");
        assert!(parse_rows("j.json", "[1, 2]").unwrap_err().to_string().contains("row 1: each row must be a JSON object"));
    }

    #[test]
    fn execution_ids_match_by_suffix() {
        assert_eq!(execution_key("20261129-072203-da99fe05"), Some("20261129-072203-da99fe05"));
        assert_eq!(execution_key("dedup-fineweb-20261129-072203-da99fe05"), Some("20261129-072203-da99fe05"));
        assert_eq!(execution_key("x20261129-072203-da99fe05"), None, "a slug is separated by a dash");
        assert_eq!(execution_key("20261129-072203-da99fe0"), None);
        assert_eq!(execution_key("20261129-07220x-da99fe05"), None);
        assert_eq!(execution_key("20261129-072203-da99fg05"), None);
        assert_eq!(execution_key("ä20261129-072203-da99fe0"), None, "a character across the cut is no panic");
        assert_eq!(execution_key("éééééééééééééééééééééééééé"), None);
    }

    #[test]
    fn a_non_ascii_execution_id_is_an_error_naming_the_row() {
        let csv = format!("{HEADER}\n20261129-072203-da99fe05,s,END,1,1,1,1,1\nä20261129-072203-da99fe0,s,END,1,1,1,1,1\n");
        let e = parse_rows("r.csv", &csv).unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("execution_id") && e.contains("not an execution id"), "{e}");
        let jsonl = "{\"execution_id\":\"exec ution\",\"stage_name\":\"s\",\"status\":\"END\",\"cpu_time_total\":1,\"items\":1,\"bytes_processed\":1,\"mem_peak_bytes_max\":1,\"elapsed\":1}\n";
        let e = parse_rows("r.jsonl", jsonl).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("not an execution id"), "{e}");
    }
}
