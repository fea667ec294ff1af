//! The gates in front of finelog. finelog's own API cannot be narrowed: whoever reaches it may run
//! DataFusion SQL (`COPY … TO 'file'` writes any file its user may write) and drop tables. So nobody but
//! Arbiter reaches it directly, and every way in passes one of two gates:
//!
//! * [`Policy::Writes`] — what a trial (or a cluster job) may send: the RPCs finelog's Python writer
//!   (`finelog.client.LogClient`, Connect over HTTP/1.1) sends to append rows, named in [`WRITE_RPCS`],
//!   and nothing else. The trial's relay in `arbiter supervise` and the owned finelog's TCP door apply it.
//! * [`Policy::Queries`] — Arbiter's own reads: `StatsService/Query` with a JSON body holding one
//!   read-only `SELECT` ([`read_only_select`]). Only the owned finelog's query socket (0600, in a 0700
//!   folder) applies it; nobody else can connect to that socket.
//!
//! Each gate speaks HTTP/1.1 (hyper): a request is read whole (at most [`MAX_BODY`] bytes), checked, and
//! forwarded on a fresh connection to the upstream. A refused request gets finelog's own error shape
//! (Connect JSON, `permission_denied`) so a writer's log says what happened.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::path::PathBuf;
use std::sync::Arc;

/// The RPCs a trial may send to finelog: registering its table and appending rows (and its log lines).
/// Everything else — `Query`, `DropTable`, `ListNamespaces`, `GetTableSchema`, `FetchLogs`, any other
/// path or method — is refused.
pub const WRITE_RPCS: &[&str] =
    &["/finelog.stats.StatsService/RegisterTable", "/finelog.stats.StatsService/WriteRows", "/finelog.logging.LogService/PushLogs"];

/// The one RPC Arbiter's reads use.
pub const QUERY_RPC: &str = "/finelog.stats.StatsService/Query";

/// The largest request body a gate passes (a row batch of a long trial is well below it).
pub const MAX_BODY: usize = 64 << 20;

/// Which requests a gate passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Writes,
    Queries,
}

/// Where a gate forwards to: finelog's TCP `host:port`, or a Unix socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upstream {
    Tcp(String),
    Unix(PathBuf),
}

/// Why a request is refused, or `None` when the policy passes it (`body` is what was read of it).
pub fn refusal(policy: Policy, method: &hyper::Method, path: &str, content_type: Option<&str>, body: &[u8]) -> Option<String> {
    if method != hyper::Method::POST {
        return Some(format!("{method} is not an RPC finelog's gate passes"));
    }
    match policy {
        Policy::Writes => (!WRITE_RPCS.contains(&path))
            .then(|| format!("{} is not open to trials: only {} (appending rows) pass", shown(path), WRITE_RPCS.join(", "))),
        Policy::Queries => {
            if path != QUERY_RPC {
                return Some(format!("{} is not a query", shown(path)));
            }
            if !content_type.is_some_and(|t| t.starts_with("application/json")) {
                return Some("a query must be Connect JSON (application/json, uncompressed)".into());
            }
            let sql = serde_json::from_slice::<serde_json::Value>(body)
                .ok()
                .and_then(|v| v.get("sql").and_then(|s| s.as_str()).map(str::to_string));
            match sql {
                Some(sql) => read_only_select(&sql).err(),
                None => Some("a query's body must be {\"sql\": \"SELECT …\"}".into()),
            }
        }
    }
}

/// At most 80 characters of what was asked for, for an error message.
fn shown(path: &str) -> String {
    let cut: String = path.chars().take(80).collect();
    if cut.len() < path.len() {
        format!("{cut:?}…")
    } else {
        format!("{cut:?}")
    }
}

/// Words that make a statement do more than read, outside quotes.
const WRITING_WORDS: &[&str] = &[
    "copy",
    "create",
    "drop",
    "insert",
    "delete",
    "update",
    "alter",
    "truncate",
    "external",
    "set",
    "merge",
    "replace",
    "attach",
    "detach",
    "load",
    "install",
    "grant",
    "revoke",
    "prepare",
    "execute",
    "deallocate",
    "reset",
    "use",
];

/// Passes one read-only `SELECT` (or `WITH … SELECT`): no second statement, none of [`WRITING_WORDS`]
/// outside quoted text. A conservative lexical check: it refuses some harmless queries (a column
/// named `update` must be quoted), never a writing one.
pub fn read_only_select(sql: &str) -> Result<(), String> {
    if sql.len() > 64 * 1024 {
        return Err("a query of over 64 KiB is refused".into());
    }
    let mut words: Vec<String> = Vec::new();
    let mut chars = sql.chars().peekable();
    let mut word = String::new();
    let flush = |word: &mut String, words: &mut Vec<String>| {
        if !word.is_empty() {
            words.push(std::mem::take(word).to_ascii_lowercase());
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                flush(&mut word, &mut words);
                // A quoted string or identifier: skip to its closing quote ('' and "" stay inside).
                loop {
                    match chars.next() {
                        None => return Err("a quote is not closed".into()),
                        Some(q) if q == c => {
                            if chars.peek() == Some(&c) {
                                chars.next();
                            } else {
                                break;
                            }
                        }
                        Some(_) => {}
                    }
                }
            }
            '-' if chars.peek() == Some(&'-') => return Err("comments are refused in a query".into()),
            '/' if chars.peek() == Some(&'*') => return Err("comments are refused in a query".into()),
            ';' => {
                flush(&mut word, &mut words);
                if chars.clone().any(|c| !c.is_whitespace()) {
                    return Err("one statement only".into());
                }
            }
            c if c.is_alphanumeric() || c == '_' => word.push(c),
            _ => flush(&mut word, &mut words),
        }
    }
    flush(&mut word, &mut words);
    match words.first().map(String::as_str) {
        Some("select" | "with") => {}
        _ => return Err("only a SELECT is allowed".into()),
    }
    if let Some(w) = words.iter().find(|w| WRITING_WORDS.contains(&w.as_str())) {
        return Err(format!("{w:?} is not allowed in a read-only query"));
    }
    Ok(())
}

fn connect_error(status: StatusCode, code: &str, message: &str) -> Response<Full<Bytes>> {
    let body = serde_json::json!({ "code": code, "message": format!("arbiter: {message}") }).to_string();
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}

/// Sends one request to the upstream on a fresh connection and returns its answer, read whole.
async fn forward(upstream: &Upstream, req: Request<Full<Bytes>>) -> Result<Response<Full<Bytes>>, String> {
    async fn over<IO>(io: IO, req: Request<Full<Bytes>>) -> Result<Response<Full<Bytes>>, String>
    where
        IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await.map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        let answer = sender.send_request(req).await.map_err(|e| e.to_string())?;
        let (parts, body) = answer.into_parts();
        let bytes = Limited::new(body, MAX_BODY).collect().await.map_err(|e| e.to_string())?.to_bytes();
        Ok(Response::from_parts(parts, Full::new(bytes)))
    }
    match upstream {
        Upstream::Tcp(addr) => over(tokio::net::TcpStream::connect(addr).await.map_err(|e| format!("{addr}: {e}"))?, req).await,
        Upstream::Unix(path) => {
            over(tokio::net::UnixStream::connect(path).await.map_err(|e| format!("{}: {e}", path.display()))?, req).await
        }
    }
}

/// Checks one request against the policy and forwards it, or answers the refusal.
async fn handle(
    policy: Policy,
    upstream: Arc<Upstream>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let (parts, body) = req.into_parts();
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return Ok(connect_error(StatusCode::PAYLOAD_TOO_LARGE, "resource_exhausted", &format!("request body refused: {e}"))),
    };
    let content_type = parts.headers.get("content-type").and_then(|v| v.to_str().ok());
    if let Some(why) = refusal(policy, &parts.method, parts.uri.path(), content_type, &body) {
        tracing::warn!(policy = ?policy, path = %shown(parts.uri.path()), "finelog gate refused a request: {why}");
        eprintln!("arbiter finelog gate: refused: {why}");
        return Ok(connect_error(StatusCode::FORBIDDEN, "permission_denied", &why));
    }
    let mut forwarded = Request::builder().method(parts.method).uri(parts.uri.path());
    for (name, value) in parts.headers.iter() {
        // Hop-by-hop headers stay on this side; the body is sent whole with its length.
        if !matches!(name.as_str(), "connection" | "keep-alive" | "transfer-encoding" | "upgrade" | "te" | "trailer" | "content-length") {
            forwarded = forwarded.header(name, value);
        }
    }
    let Ok(forwarded) = forwarded.body(Full::new(body)) else {
        return Ok(connect_error(StatusCode::BAD_REQUEST, "invalid_argument", "a request that cannot be forwarded"));
    };
    match forward(&upstream, forwarded).await {
        Ok(answer) => Ok(answer),
        Err(e) => Ok(connect_error(StatusCode::BAD_GATEWAY, "unavailable", &format!("finelog cannot be reached: {e}"))),
    }
}

/// Serves one accepted connection until it closes.
pub async fn serve_connection<IO>(io: IO, policy: Policy, upstream: Arc<Upstream>)
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req| handle(policy, upstream.clone(), req));
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(std::time::Duration::from_secs(30))
        .serve_connection(TokioIo::new(io), service)
        .await;
}

/// Accepts on a Unix socket forever, each connection through the gate.
pub async fn serve_unix(listener: tokio::net::UnixListener, policy: Policy, upstream: Upstream) {
    let upstream = Arc::new(upstream);
    loop {
        if let Ok((conn, _)) = listener.accept().await {
            tokio::spawn(serve_connection(conn, policy, upstream.clone()));
        }
    }
}

/// Accepts on a TCP socket forever, each connection through the gate.
pub async fn serve_tcp(listener: tokio::net::TcpListener, policy: Policy, upstream: Upstream) {
    let upstream = Arc::new(upstream);
    loop {
        if let Ok((conn, _)) = listener.accept().await {
            tokio::spawn(serve_connection(conn, policy, upstream.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::Method;

    #[test]
    fn trials_may_only_append_rows() {
        for path in WRITE_RPCS {
            assert_eq!(refusal(Policy::Writes, &Method::POST, path, Some("application/proto"), b""), None, "{path}");
        }
        for path in [
            QUERY_RPC,
            "/finelog.stats.StatsService/DropTable",
            "/finelog.stats.StatsService/ListNamespaces",
            "/finelog.stats.StatsService/GetTableSchema",
            "/finelog.logging.LogService/FetchLogs",
            "/finelog.stats.StatsService/WriteRows/../Query",
            "/",
        ] {
            let why = refusal(Policy::Writes, &Method::POST, path, Some("application/json"), b"{}").expect(path);
            assert!(why.contains("not open to trials"), "{why}");
        }
        assert!(refusal(Policy::Writes, &Method::GET, WRITE_RPCS[1], None, b"").is_some());
    }

    #[test]
    fn arbiter_queries_are_one_read_only_select() {
        let body = |sql: &str| serde_json::json!({ "sql": sql }).to_string();
        let ok = "SELECT execution_id FROM \"zephyr.stage\" WHERE execution_id IN ('a-1', 'it''s') ORDER BY seq";
        assert_eq!(refusal(Policy::Queries, &Method::POST, QUERY_RPC, Some("application/json"), body(ok).as_bytes()), None);
        assert!(read_only_select("with t as (select 1) select * from t").is_ok());
        for bad in [
            "COPY (SELECT 1) TO '/root/.gitconfig' STORED AS CSV",
            "SELECT 1; COPY (SELECT 1) TO '/tmp/x'",
            "select 1; drop table x",
            "CREATE EXTERNAL TABLE t STORED AS CSV LOCATION '/etc/'",
            "INSERT INTO \"zephyr.stage\" VALUES (1)",
            "DROP TABLE \"zephyr.stage\"",
            "SET datafusion.catalog.location = '/'",
            "SELECT 1 -- ; COPY",
            "SELECT '1",
            "EXPLAIN ANALYZE SELECT 1",
        ] {
            let why = refusal(Policy::Queries, &Method::POST, QUERY_RPC, Some("application/json"), body(bad).as_bytes());
            assert!(why.is_some(), "{bad} passed");
        }
        // Quoted text is data: a stage named "drop" is readable.
        assert!(read_only_select("SELECT * FROM \"zephyr.stage\" WHERE stage_name = 'drop table'").is_ok());
        // Not JSON, or another RPC: refused.
        assert!(refusal(Policy::Queries, &Method::POST, QUERY_RPC, Some("application/proto"), b"\x0a\x08SELECT 1").is_some());
        assert!(refusal(Policy::Queries, &Method::POST, "/finelog.stats.StatsService/DropTable", Some("application/json"), b"{}").is_some());
    }

    /// The gate for real: a write passes to the upstream and its answer comes back; a query is
    /// answered `permission_denied` by the gate and never reaches the upstream.
    #[tokio::test]
    async fn the_gate_forwards_writes_and_answers_refusals_itself() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = upstream.local_addr().unwrap().to_string();
        let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            loop {
                let (mut c, _) = upstream.accept().await.unwrap();
                let mut buf = vec![0u8; 4096];
                let n = c.read(&mut buf).await.unwrap();
                log.lock().unwrap().push(String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or("").to_string());
                c.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/proto\r\ncontent-length: 2\r\n\r\nok").await.unwrap();
            }
        });
        let dir = std::env::temp_dir().join(format!("arbiter-gate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let socket = dir.join("gate.sock");
        let _ = std::fs::remove_file(&socket);
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        tokio::spawn(serve_unix(listener, Policy::Writes, Upstream::Tcp(addr)));
        let send = |path: &'static str| {
            let socket = socket.clone();
            async move {
                let conn = tokio::net::UnixStream::connect(&socket).await.unwrap();
                let (mut sender, driver) = hyper::client::conn::http1::handshake(TokioIo::new(conn)).await.unwrap();
                tokio::spawn(driver);
                let req = Request::post(path).header("host", "x").body(Full::new(Bytes::from_static(b"rows"))).unwrap();
                let answer = sender.send_request(req).await.unwrap();
                let status = answer.status().as_u16();
                let body = answer.into_body().collect().await.unwrap().to_bytes();
                (status, String::from_utf8_lossy(&body).into_owned())
            }
        };
        assert_eq!(send("/finelog.stats.StatsService/WriteRows").await, (200, "ok".to_string()));
        let (status, body) = send("/finelog.stats.StatsService/Query").await;
        assert_eq!(status, 403, "{body}");
        assert!(body.contains("permission_denied") && body.contains("not open to trials"), "{body}");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen, vec!["POST /finelog.stats.StatsService/WriteRows HTTP/1.1".to_string()], "only the write reached finelog");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
