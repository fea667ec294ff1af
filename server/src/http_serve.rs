//! The HTTP server loop: HTTP/1.1 (hyper) on the router, as `axum::serve` does, with what it lacks:
//! a connection must send its request's head within [`HEADER_READ_TIMEOUT`] (a client that opens
//! hundreds of connections and trickles headers holds nothing for long), and a graceful stop waits
//! at most [`DRAIN`] for open requests (a live event stream never ends by itself).

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::time::Duration;
use tower::ServiceExt;

/// How long a connection may take to send a request's head.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a graceful stop waits for open requests.
pub const DRAIN: Duration = Duration::from_secs(10);

/// Serves `router` on `listener` until `shutdown` resolves; every request carries its peer's
/// `ConnectInfo<std::net::SocketAddr>`.
pub async fn serve(listener: tokio::net::TcpListener, router: Router, shutdown: impl std::future::Future<Output = ()>) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(HEADER_READ_TIMEOUT).keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of descriptors, say: wait a moment instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service = router.clone().map_request(move |mut req: axum::http::Request<Incoming>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            req
        });
        let connection = http.serve_connection(TokioIo::new(stream), hyper_util::service::TowerToHyperService::new(service));
        let watched = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = watched.await;
        });
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(DRAIN) => tracing::info!("stopped with requests still open"),
    }
}
