//! Accepting connections (plain or TLS), serving HTTP/1.1 with upgrades,
//! and shutting down: stop accepting, tell every stream, wait a bounded
//! time, return.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::config::Config;
use crate::http::{self, App};
use crate::hub::Hub;
use crate::metrics::Refusal;

/// How often a refused connection is logged at most (the rest are
/// counted, in the metrics and in the next line logged).
const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(10);
/// The most an HTTP connection buffers either way: its request head, and
/// what a response has handed on and the socket has not yet taken (an
/// SSE stream adds chunks only while less than this waits).
const HTTP_BUFFER: usize = 64 * 1024;
/// How long a TLS handshake may take.
#[cfg(feature = "tls")]
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A relay, ready to serve on a listener.
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use aep_relay::{Config, Relay};
///
/// let relay = Relay::new(Config::default())?;
/// let shutdown = relay.shutdown_handle();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let server = tokio::spawn(relay.serve(listener));
/// // ... later:
/// shutdown.shutdown();
/// server.await.expect("the server task")?;
/// # Ok(()) }
/// ```
pub struct Relay {
    app: App,
    #[cfg(feature = "tls")]
    tls: Option<tokio_rustls::TlsAcceptor>,
}

/// A connection's place under `--max-connections`, held while the
/// connection lives: by its HTTP task, and by its WebSocket task after an
/// upgrade (which outlives the HTTP connection).
#[derive(Clone)]
pub(crate) struct ConnectionSlot {
    _permit: Arc<OwnedSemaphorePermit>,
}

/// Starts a relay's drain from anywhere (a signal handler, a test).
#[derive(Clone)]
pub struct ShutdownHandle(CancellationToken);

impl ShutdownHandle {
    /// Stops accepting, ends every SSE stream with `: shutting-down`,
    /// sends every WebSocket a `closing` frame and close 1001; `serve`
    /// returns once they are gone or the grace period ends.
    pub fn shutdown(&self) {
        self.0.cancel();
    }
}

/// How a shutdown went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// Whether every connection ended within the grace period (those that
    /// did not were dropped).
    pub clean: bool,
}

impl Relay {
    /// A relay with `config`; fails when a limit is out of its range
    /// (see [`Config::validate`]) or the TLS files cannot be read.
    pub fn new(config: Config) -> io::Result<Relay> {
        config
            .validate()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        #[cfg(feature = "tls")]
        let tls = config.tls.as_ref().map(crate::tls::acceptor).transpose()?;
        #[cfg(not(feature = "tls"))]
        if config.tls.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this build of aep-relay has no TLS (the `tls` feature is off)",
            ));
        }
        Ok(Relay {
            app: App {
                inflight: Arc::new(tokio::sync::Semaphore::new(
                    config
                        .max_inflight_bytes
                        .min(tokio::sync::Semaphore::MAX_PERMITS),
                )),
                hub: Arc::new(Hub::new(config)),
                shutdown: CancellationToken::new(),
                sockets: TaskTracker::new(),
                started: Instant::now(),
                #[cfg(feature = "nats")]
                nats: None,
            },
            #[cfg(feature = "tls")]
            tls,
        })
    }

    /// A handle that shuts this relay down.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle(self.app.shutdown.clone())
    }

    /// Serves until shut down, then drains (at most the configured grace
    /// period, 4 s by default).
    ///
    /// A node of a cluster ([`Config::nats`]) first connects to its NATS
    /// server and reads what the stream holds; it fails when it cannot.
    pub async fn serve(self, listener: TcpListener) -> io::Result<Drained> {
        #[allow(unused_mut)]
        let mut app = self.app;
        if let Some(server) = app.hub.config.nats.clone() {
            #[cfg(feature = "nats")]
            {
                let nats =
                    crate::nats::start(&server, app.hub.clone(), app.shutdown.clone()).await?;
                app.nats = Some(Arc::new(nats));
            }
            #[cfg(not(feature = "nats"))]
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "this build of aep-relay has no NATS (the `nats` feature is off); {} is not used",
                    server.url
                ),
            ));
        }
        let router = http::router(app.clone());
        let limit = Arc::new(Semaphore::new(app.hub.config.max_connections));
        let connections = TaskTracker::new();
        let mut refusals = Throttle::new(REFUSAL_LOG_INTERVAL);
        let head_timeout = app.hub.config.head_timeout;
        loop {
            let (stream, peer) = tokio::select! {
                _ = app.shutdown.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let Ok(permit) = limit.clone().try_acquire_owned() else {
                app.hub.metrics.refuse(Refusal::Connections);
                if let Some(suppressed) = refusals.allow(Instant::now()) {
                    tracing::warn!(
                        %peer,
                        suppressed,
                        "connection refused: at --max-connections (raise it, or lower --head-timeout-secs); further refusals in the next {}s are counted, not logged",
                        REFUSAL_LOG_INTERVAL.as_secs()
                    );
                }
                drop(stream);
                continue;
            };
            let _ = stream.set_nodelay(true);
            // A peer that stops reading stalls our writes; past the write
            // timeout its connection is closed, so a stuck consumer can
            // hold neither a task nor a slot (SSE and WebSocket alike).
            let mut stream = tokio_io_timeout::TimeoutStream::new(stream);
            stream.set_write_timeout(Some(app.hub.config.write_timeout));
            let stream = Box::pin(stream);
            let slot = ConnectionSlot {
                _permit: Arc::new(permit),
            };
            let service = TowerToHyperService::new(router.clone().map_request(
                move |mut request: hyper::Request<hyper::body::Incoming>| {
                    request.extensions_mut().insert(slot.clone());
                    request
                },
            ));
            let shutdown = app.shutdown.clone();
            #[cfg(feature = "tls")]
            let tls = self.tls.clone();
            connections.spawn(async move {
                #[cfg(feature = "tls")]
                if let Some(tls) = tls {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(stream)).await {
                        Ok(Ok(stream)) => {
                            serve_one(stream, service, shutdown, peer, head_timeout).await
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                    return;
                }
                serve_one(stream, service, shutdown, peer, head_timeout).await;
            });
        }
        drop(listener);
        let grace = app.hub.config.grace;
        let deadline = tokio::time::Instant::now() + grace;
        connections.close();
        app.sockets.close();
        let sockets = tokio::time::timeout_at(deadline, app.sockets.wait())
            .await
            .is_ok();
        let http = tokio::time::timeout_at(deadline, connections.wait())
            .await
            .is_ok();
        // A node of a cluster returns once its claims are deleted from the
        // bucket (else they would live their TTL after the process).
        #[cfg(feature = "nats")]
        if let Some(nats) = &app.nats {
            let _ = tokio::time::timeout(Duration::from_secs(3), nats.left()).await;
        }
        Ok(Drained {
            clean: http && sockets,
        })
    }

    /// Binds `addr` and serves; a convenience for `serve`.
    pub async fn bind_and_serve(self, addr: SocketAddr) -> io::Result<Drained> {
        let listener = TcpListener::bind(addr).await?;
        self.serve(listener).await
    }
}

async fn serve_one<S, T>(
    stream: S,
    service: TowerToHyperService<T>,
    shutdown: CancellationToken,
    peer: SocketAddr,
    head_timeout: Duration,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    T: tower::Service<
            hyper::Request<hyper::body::Incoming>,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    T::Future: Send + 'static,
{
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .max_buf_size(HTTP_BUFFER)
        .header_read_timeout(head_timeout)
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    let mut connection = std::pin::pin!(connection);
    let ended = tokio::select! {
        ended = connection.as_mut() => ended,
        _ = shutdown.cancelled() => {
            // Finish the request in flight (an SSE stream ends itself on
            // the same signal), then close.
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(e) = ended {
        tracing::trace!(%peer, error = %e, "connection ended with an error");
    }
}

/// Lets one event through per interval, counting the rest.
#[derive(Debug)]
pub(crate) struct Throttle {
    interval: Duration,
    last: Option<Instant>,
    suppressed: u64,
}

impl Throttle {
    pub(crate) fn new(interval: Duration) -> Throttle {
        Throttle {
            interval,
            last: None,
            suppressed: 0,
        }
    }

    /// `Some(suppressed since the last one let through)` when this one
    /// may be logged; `None` when it is only counted.
    pub(crate) fn allow(&mut self, now: Instant) -> Option<u64> {
        match self.last {
            Some(last) if now.saturating_duration_since(last) < self.interval => {
                self.suppressed += 1;
                None
            }
            _ => {
                self.last = Some(now);
                Some(std::mem::take(&mut self.suppressed))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_logged_at_most_once_per_interval() {
        let mut throttle = Throttle::new(Duration::from_secs(10));
        let start = Instant::now();
        assert_eq!(throttle.allow(start), Some(0));
        for ms in 1..1000 {
            assert_eq!(throttle.allow(start + Duration::from_millis(ms)), None);
        }
        assert_eq!(throttle.allow(start + Duration::from_secs(10)), Some(999));
        assert_eq!(throttle.allow(start + Duration::from_secs(11)), None);
    }
}
