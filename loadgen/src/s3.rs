//! The S3 requests the load driver makes: SigV4-presigned URLs (rusty-s3) sent with reqwest over
//! keep-alive HTTP/1.1. Every request is timed from its start to the last byte of its response body.

use rusty_s3::actions::{CreateBucket, DeleteObject, GetObject, HeadObject, PutObject, S3Action};
use rusty_s3::{Bucket, Credentials, UrlStyle};
use std::time::{Duration, Instant};

/// How long a presigned URL stays valid; far longer than any request.
const URL_TTL: Duration = Duration::from_secs(3600);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Put,
    Get,
    Stat,
    Delete,
    /// Every operation of a mixed run together (warp's "Cluster Total").
    Total,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Put => "PUT",
            Op::Get => "GET",
            Op::Stat => "STAT",
            Op::Delete => "DELETE",
            Op::Total => "TOTAL",
        }
    }
}

/// The result of one request.
pub struct Done {
    pub latency: Duration,
    /// Object bytes moved (sent for PUT, received for GET).
    pub bytes: u64,
    /// `None` when the server answered 2xx.
    pub error: Option<String>,
}

pub struct S3 {
    http: reqwest::Client,
    bucket: Bucket,
    credentials: Credentials,
}

impl S3 {
    pub fn new(endpoint: &str, bucket: &str, region: &str, access_key: &str, secret_key: &str, concurrency: usize) -> Result<S3, String> {
        let url: url::Url = endpoint.parse().map_err(|e| format!("endpoint {endpoint:?}: {e}"))?;
        let bucket = Bucket::new(url, UrlStyle::Path, bucket.to_string(), region.to_string())
            .map_err(|e| format!("endpoint {endpoint:?} / bucket {bucket:?}: {e}"))?;
        let http = reqwest::Client::builder()
            .no_proxy()
            .http1_only()
            .pool_max_idle_per_host(concurrency)
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| format!("cannot make the HTTP client: {e}"))?;
        Ok(S3 { http, bucket, credentials: Credentials::new(access_key.to_string(), secret_key.to_string()) })
    }

    /// Creates the bucket; one that already exists (owned by us) is fine.
    pub async fn create_bucket(&self) -> Result<(), String> {
        let url = CreateBucket::new(&self.bucket, &self.credentials).sign(URL_TTL);
        let resp = self.http.put(url).send().await.map_err(|e| format!("create bucket: {}", describe(&e)))?;
        let status = resp.status();
        let body = resp.text().await.unwrap_or_default();
        if status.is_success() || body.contains("BucketAlreadyOwnedByYou") || body.contains("BucketAlreadyExists") {
            Ok(())
        } else {
            Err(format!("create bucket: HTTP {status}: {}", s3_error(&body)))
        }
    }

    /// A presigned URL for one operation on one key (valid for an hour).
    pub fn sign(&self, op: Op, key: &str) -> url::Url {
        let c = Some(&self.credentials);
        match op {
            Op::Put => PutObject::new(&self.bucket, c, key).sign(URL_TTL),
            Op::Get => GetObject::new(&self.bucket, c, key).sign(URL_TTL),
            Op::Stat => HeadObject::new(&self.bucket, c, key).sign(URL_TTL),
            Op::Delete | Op::Total => DeleteObject::new(&self.bucket, c, key).sign(URL_TTL),
        }
    }

    /// One request, signed now; `body` is sent for PUT.
    pub async fn request(&self, op: Op, key: &str, body: &bytes::Bytes) -> Done {
        self.send(op, self.sign(op, key), body).await
    }

    /// One request to a presigned URL. The server checks the signature of every request alike, so a
    /// worker may reuse the URL of a key it sends again: signing leaves the measured path.
    pub async fn send(&self, op: Op, url: url::Url, body: &bytes::Bytes) -> Done {
        let started = Instant::now();
        let sent = match op {
            Op::Put => self.http.put(url).body(body.clone()),
            Op::Get => self.http.get(url),
            Op::Stat => self.http.head(url),
            Op::Delete | Op::Total => self.http.delete(url),
        }
        .send()
        .await;
        let mut resp = match sent {
            Ok(r) => r,
            Err(e) => return Done { latency: started.elapsed(), bytes: 0, error: Some(describe(&e)) },
        };
        let status = resp.status();
        if !status.is_success() {
            let body = resp.text().await.unwrap_or_default();
            return Done { latency: started.elapsed(), bytes: 0, error: Some(format!("HTTP {}: {}", status.as_u16(), s3_error(&body))) };
        }
        let mut received = 0u64;
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => received += chunk.len() as u64,
                Ok(None) => break,
                Err(e) => return Done { latency: started.elapsed(), bytes: received, error: Some(describe(&e)) },
            }
        }
        let bytes = match op {
            Op::Put => body.len() as u64,
            Op::Get => received,
            Op::Stat | Op::Delete | Op::Total => 0,
        };
        Done { latency: started.elapsed(), bytes, error: None }
    }
}

/// A transport error with its cause (reqwest's top-level message alone says little).
fn describe(e: &reqwest::Error) -> String {
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// The `<Code>` of an S3 error body, or the start of the body.
fn s3_error(body: &str) -> String {
    let code = body.split_once("<Code>").and_then(|(_, rest)| rest.split_once("</Code>")).map(|(c, _)| c.to_string());
    code.unwrap_or_else(|| body.chars().take(120).collect::<String>().trim().to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn s3_error_codes() {
        let body = "<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>x</Message></Error>";
        assert_eq!(super::s3_error(body), "SignatureDoesNotMatch");
        assert_eq!(super::s3_error("plain text"), "plain text");
    }
}
