//! A real webhook receiver on a free local port: what a suite's `[notify]` posts is kept, in order.

use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Receiver {
    /// The URL to put in `[notify] webhook`.
    pub url: String,
    pub seen: Arc<Mutex<Vec<Value>>>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
        let keep = seen.clone();
        let router = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
                let keep = keep.clone();
                async move {
                    keep.lock().unwrap().push(body);
                    axum::http::StatusCode::OK
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Receiver { url, seen }
    }

    /// The first payload received, waiting up to 20 s for it.
    pub async fn first(&self) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(v) = self.seen.lock().unwrap().first() {
                return v.clone();
            }
            assert!(Instant::now() < deadline, "the webhook was not called");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
