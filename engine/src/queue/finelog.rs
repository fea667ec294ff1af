//! The finelog client: `zephyr.stage` rows for a trial's execution ids, through finelog's StatsService
//! Query (Connect JSON: `{"sql": …}` in, `{"arrowIpc": base64 Arrow IPC stream, "rowCount": n}` out),
//! decoded with the Arrow IPC reader into the judge's `StageRow`s.

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_ipc::reader::StreamReader;
use arrow_schema::DataType;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use judge::pipeline::rows::{execution_key, StageRow};
use serde::Deserialize;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum FinelogError {
    #[error("finelog at {url} cannot be reached: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("finelog refused the query: {0}")]
    Refused(String),
    #[error("finelog's answer cannot be read: {0}")]
    Malformed(String),
    #[error("{0}")]
    Invalid(String),
}

/// A finelog server to read rows from: over HTTP at a URL (a server the operator runs), or through the
/// query gate's Unix socket of the one Arbiter runs (`owned_finelog`).
#[derive(Debug, Clone)]
pub struct Finelog {
    url: String,
    target: Target,
}

#[derive(Debug, Clone)]
enum Target {
    Http(reqwest::Client),
    Unix(std::path::PathBuf),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct QueryResponse {
    #[serde(default)]
    arrow_ipc: String,
    #[serde(default)]
    row_count: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ConnectError {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

/// The columns Arbiter reads from `zephyr.stage`.
const COLUMNS: &str = "execution_id, stage_name, status, elapsed, items, bytes_processed, item_rate, byte_rate, total_shards, \
                       cpu_pct_avg, cpu_time_total, mem_bytes_avg, mem_peak_bytes_max, seq, ts";

impl Finelog {
    /// A client for `url` (`http://host:port`).
    pub fn new(url: &str) -> Result<Finelog, FinelogError> {
        let url = url.trim_end_matches('/').to_string();
        if !url.starts_with("http://") {
            return Err(FinelogError::Invalid(format!("finelog URL {url:?}: use http://HOST:PORT (TLS to finelog is not supported yet)")));
        }
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| FinelogError::Invalid(format!("cannot build an HTTP client: {e}")))?;
        Ok(Finelog { url, target: Target::Http(http) })
    }

    /// A client of the query gate at `socket` (Arbiter's own finelog).
    pub fn unix(socket: &std::path::Path) -> Finelog {
        Finelog { url: format!("unix:{}", socket.display()), target: Target::Unix(socket.to_path_buf()) }
    }

    /// Answers once finelog itself answers a query.
    pub async fn ping(&self) -> Result<(), FinelogError> {
        self.query("SELECT 1").await.map(|_| ())
    }

    /// Every `zephyr.stage` row of these executions (ids as the trial's log printed them, with or
    /// without a name slug), oldest first.
    pub async fn stage_rows(&self, execution_ids: &[String]) -> Result<Vec<StageRow>, FinelogError> {
        if execution_ids.is_empty() {
            return Ok(Vec::new());
        }
        // Only well-formed ids reach the SQL text, so quoting cannot be broken out of.
        for id in execution_ids {
            let slug_ok = id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            if execution_key(id).is_none() || !slug_ok || id.len() > 100 {
                return Err(FinelogError::Invalid(format!("{id:?} is not a Zephyr execution id")));
            }
        }
        let list = execution_ids.iter().map(|id| format!("'{id}'")).collect::<Vec<_>>().join(", ");
        let sql = format!("SELECT {COLUMNS} FROM \"zephyr.stage\" WHERE execution_id IN ({list}) ORDER BY seq");
        let table = self.query(&sql).await?;
        let mut rows = Vec::new();
        for batch in &table {
            rows.extend(rows_of(batch)?);
        }
        Ok(rows)
    }

    /// Sends one Connect JSON request; the status and the body of the answer.
    async fn post(&self, rpc: &str, body: Vec<u8>) -> Result<(u16, bytes::Bytes), FinelogError> {
        let unreachable = |reason: String| FinelogError::Unreachable { url: self.url.clone(), reason };
        match &self.target {
            Target::Http(http) => {
                let response = http
                    .post(format!("{}{rpc}", self.url))
                    .header("connect-protocol-version", "1")
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .map_err(|e| unreachable(e.to_string()))?;
                let status = response.status().as_u16();
                Ok((status, response.bytes().await.map_err(|e| unreachable(e.to_string()))?))
            }
            Target::Unix(socket) => {
                use http_body_util::{BodyExt, Full};
                let conn = tokio::net::UnixStream::connect(socket).await.map_err(|e| unreachable(e.to_string()))?;
                let (mut sender, driver) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(conn))
                    .await
                    .map_err(|e| unreachable(e.to_string()))?;
                tokio::spawn(driver);
                let request = hyper::Request::post(rpc)
                    .header("host", "finelog")
                    .header("connect-protocol-version", "1")
                    .header("content-type", "application/json")
                    .body(Full::new(bytes::Bytes::from(body)))
                    .map_err(|e| FinelogError::Invalid(e.to_string()))?;
                let answer = tokio::time::timeout(Duration::from_secs(60), async {
                    let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
                    let status = response.status().as_u16();
                    let body = response.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
                    Ok::<_, String>((status, body))
                })
                .await
                .map_err(|_| unreachable("no answer within 60 s".into()))?;
                answer.map_err(unreachable)
            }
        }
    }

    /// Runs one read-only SQL query (anything else is refused here, before it is sent: the gate in
    /// front of Arbiter's own finelog refuses it too); the batches of its answer.
    pub async fn query(&self, sql: &str) -> Result<Vec<RecordBatch>, FinelogError> {
        crate::queue::finelog_gate::read_only_select(sql).map_err(|why| FinelogError::Invalid(format!("not a read-only query: {why}")))?;
        let request = serde_json::to_vec(&serde_json::json!({ "sql": sql })).map_err(|e| FinelogError::Invalid(e.to_string()))?;
        let (status, body) = self.post(crate::queue::finelog_gate::QUERY_RPC, request).await?;
        if !(200..300).contains(&status) {
            let e: ConnectError =
                serde_json::from_slice(&body).unwrap_or(ConnectError { code: format!("HTTP {status}"), message: String::new() });
            // A table nobody wrote to yet is no rows, not an error.
            if e.message.contains("not found") && e.message.contains("zephyr.stage") {
                return Ok(Vec::new());
            }
            return Err(FinelogError::Refused(format!("{}: {}", e.code, e.message)));
        }
        let answer: QueryResponse = serde_json::from_slice(&body).map_err(|e| FinelogError::Malformed(e.to_string()))?;
        let batches = decode_ipc(&answer.arrow_ipc)?;
        // proto3 JSON writes int64 as a string; either way it must agree with the rows decoded.
        let said = answer.row_count.as_ref().and_then(|v| v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok())));
        let decoded: usize = batches.iter().map(RecordBatch::num_rows).sum();
        if let Some(n) = said.filter(|n| *n as usize != decoded) {
            return Err(FinelogError::Malformed(format!("rowCount says {n} rows, the Arrow stream holds {decoded}")));
        }
        Ok(batches)
    }
}

/// Base64 Arrow IPC stream → record batches.
pub fn decode_ipc(b64: &str) -> Result<Vec<RecordBatch>, FinelogError> {
    if b64.is_empty() {
        return Ok(Vec::new());
    }
    let bytes = STANDARD.decode(b64).map_err(|e| FinelogError::Malformed(format!("arrowIpc is not base64: {e}")))?;
    let reader = StreamReader::try_new(std::io::Cursor::new(bytes), None).map_err(|e| FinelogError::Malformed(e.to_string()))?;
    reader.collect::<Result<Vec<_>, _>>().map_err(|e| FinelogError::Malformed(e.to_string()))
}

fn text_at(col: &ArrayRef, i: usize) -> Option<String> {
    if col.is_null(i) {
        return None;
    }
    use arrow_array::cast::AsArray;
    match col.data_type() {
        DataType::Utf8 => Some(col.as_string::<i32>().value(i).to_string()),
        DataType::LargeUtf8 => Some(col.as_string::<i64>().value(i).to_string()),
        DataType::Utf8View => Some(col.as_string_view().value(i).to_string()),
        _ => None,
    }
}

fn number_at(col: &ArrayRef, i: usize) -> Option<f64> {
    if col.is_null(i) {
        return None;
    }
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt64Type};
    match col.data_type() {
        DataType::Float64 => Some(col.as_primitive::<Float64Type>().value(i)),
        DataType::Float32 => Some(f64::from(col.as_primitive::<Float32Type>().value(i))),
        DataType::Int64 => Some(col.as_primitive::<Int64Type>().value(i) as f64),
        DataType::Int32 => Some(f64::from(col.as_primitive::<Int32Type>().value(i))),
        DataType::UInt64 => Some(col.as_primitive::<UInt64Type>().value(i) as f64),
        _ => None,
    }
}

/// A timestamp column's value in epoch milliseconds (any unit; an integer column is taken as ms).
fn epoch_ms_at(col: &ArrayRef, i: usize) -> Option<i64> {
    if col.is_null(i) {
        return None;
    }
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int64Type, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType};
    use arrow_schema::TimeUnit;
    match col.data_type() {
        DataType::Timestamp(TimeUnit::Millisecond, _) => Some(col.as_primitive::<TimestampMillisecondType>().value(i)),
        DataType::Timestamp(TimeUnit::Second, _) => Some(col.as_primitive::<TimestampSecondType>().value(i) * 1000),
        DataType::Timestamp(TimeUnit::Microsecond, _) => Some(col.as_primitive::<TimestampMicrosecondType>().value(i) / 1000),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => Some(col.as_primitive::<TimestampNanosecondType>().value(i) / 1_000_000),
        DataType::Int64 => Some(col.as_primitive::<Int64Type>().value(i)),
        _ => None,
    }
}

/// One batch's rows; a row without an id, stage, status or one of the judged numbers is refused.
fn rows_of(batch: &RecordBatch) -> Result<Vec<StageRow>, FinelogError> {
    let col = |name: &str| batch.column_by_name(name).ok_or_else(|| FinelogError::Malformed(format!("the answer has no column {name}")));
    let (id, stage, status) = (col("execution_id")?, col("stage_name")?, col("status")?);
    let (cpu, elapsed, items, bytes, mem) =
        (col("cpu_time_total")?, col("elapsed")?, col("items")?, col("bytes_processed")?, col("mem_peak_bytes_max")?);
    let optional = |name: &str| batch.column_by_name(name).cloned();
    let ts = optional("ts");
    let (shards, cpu_pct, mem_avg, item_rate, byte_rate, seq) = (
        optional("total_shards"),
        optional("cpu_pct_avg"),
        optional("mem_bytes_avg"),
        optional("item_rate"),
        optional("byte_rate"),
        optional("seq"),
    );
    let opt = |c: &Option<ArrayRef>, i: usize| c.as_ref().and_then(|c| number_at(c, i));
    (0..batch.num_rows())
        .map(|i| {
            let missing = |what: &str| FinelogError::Malformed(format!("row {i} has no {what}"));
            let mut row = StageRow::new(
                &text_at(id, i).ok_or_else(|| missing("execution_id"))?,
                &text_at(stage, i).ok_or_else(|| missing("stage_name"))?,
                &text_at(status, i).ok_or_else(|| missing("status"))?,
                number_at(cpu, i).ok_or_else(|| missing("cpu_time_total"))?,
                number_at(elapsed, i).ok_or_else(|| missing("elapsed"))?,
                number_at(items, i).ok_or_else(|| missing("items"))?,
                number_at(bytes, i).ok_or_else(|| missing("bytes_processed"))?,
                number_at(mem, i).ok_or_else(|| missing("mem_peak_bytes_max"))?,
            );
            row.total_shards = opt(&shards, i);
            row.cpu_pct_avg = opt(&cpu_pct, i);
            row.mem_bytes_avg = opt(&mem_avg, i);
            row.item_rate = opt(&item_rate, i);
            row.byte_rate = opt(&byte_rate, i);
            row.seq = opt(&seq, i).map(|s| s as i64);
            row.ts = ts.as_ref().and_then(|c| epoch_ms_at(c, i)).map(judge::units::utc_rfc3339_ms);
            Ok(row)
        })
        .collect()
}
