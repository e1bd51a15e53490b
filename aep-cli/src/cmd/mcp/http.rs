//! `aep mcp --http`: the same server over MCP's streamable HTTP transport
//! (rmcp's, served with axum), one server instance per MCP session and so
//! one AEP session and relay connection each.
//!
//! In front of rmcp's service: the bearer token (compared in constant
//! time, never logged), a bound on the MCP sessions open at once, and a
//! refusal of the sessionless protocol revisions (2026-07-28 on), whose
//! every request would be a server, and an AEP session, of its own. rmcp
//! bounds a request body (4 MiB) and, on a loopback address, refuses a
//! `Host` that is not loopback (DNS rebinding). A request from a web page
//! (one with an `Origin`) is refused unless the page is on a loopback host
//! or on the host the request names (the MCP transport's rule against DNS
//! rebinding, beside the `Host` check).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use aep_relay::Token;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::OnceCell;
use tokio::task::JoinSet;

use super::link::{self, Link, Settings};
use super::server::Server;
use crate::cmd::Status;
use crate::diag;

/// The path MCP is served at.
pub const PATH: &str = "/mcp";
/// The first protocol revision without sessions.
const SESSIONLESS: &str = "2026-07-28";
/// How long a request that opens a session may take (others wait for it).
const OPENING: Duration = Duration::from_secs(30);
/// How long an MCP session may go without a message before rmcp drops it
/// (and its AEP session ends): longer than `ask_human`'s longest wait (an
/// hour), during which nothing need pass.
const IDLE: Duration = Duration::from_secs(65 * 60);
/// How long the HTTP server may take to close its connections at the end.
const CLOSING: Duration = Duration::from_secs(3);

/// The shared relay connection's `hello` agent without `--agent` (each
/// session's events still carry its MCP client's name).
const SHARED_AGENT: &str = "aep-mcp";

/// What `aep mcp --http` serves with.
pub struct Options {
    pub listen: SocketAddr,
    /// The bearer token MCP clients present; `None` on loopback only.
    pub token: Option<Token>,
    pub max_sessions: usize,
    pub relay: String,
    /// The relay's token.
    pub relay_token: Option<String>,
    /// Session ids are `<prefix>-<ULID>`.
    pub prefix: String,
    pub agent: Option<String>,
    /// Whether `ask_human` also asks through MCP elicitation.
    pub elicit: bool,
}

/// The servers alive, each with its session once started.
#[derive(Default)]
struct Links {
    next: u64,
    live: HashMap<u64, Arc<OnceCell<Link>>>,
    /// Sessions ending after their MCP session closed.
    ending: JoinSet<()>,
    /// Set at shutdown, which ends what is left itself.
    closed: bool,
}

type Shared = Arc<Mutex<Links>>;

fn lock(links: &Shared) -> MutexGuard<'_, Links> {
    links.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Held by a server: when rmcp lets the server go (its MCP session
/// closed), its AEP session ends.
struct Held {
    id: u64,
    links: Shared,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut links = lock(&self.links);
        while links.ending.try_join_next().is_some() {}
        let Some(cell) = links.live.remove(&self.id) else {
            return;
        };
        if cell.initialized() && !links.closed {
            links.ending.spawn(async move {
                if let Some(link) = cell.get() {
                    link.end().await;
                }
            });
        }
    }
}

/// What every request passes before rmcp's service.
struct Gate {
    token: Option<Token>,
    max_sessions: usize,
    sessions: Arc<LocalSessionManager>,
    /// Held while a session opens, so two cannot pass the bound at once.
    opening: tokio::sync::Mutex<()>,
}

/// Serves MCP over HTTP on `options.listen` until a stop signal, then ends
/// every session.
pub async fn serve(options: Options) -> Status {
    let listener = match tokio::net::TcpListener::bind(options.listen).await {
        Ok(listener) => listener,
        Err(e) => {
            diag!("aep mcp: error: cannot listen on {}: {e}", options.listen);
            return Status::Failure;
        }
    };
    let local = listener.local_addr().unwrap_or(options.listen);
    let links: Shared = Arc::default();
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(IDLE);
    let sessions = Arc::new(manager);
    let mut config = StreamableHttpServerConfig::default();
    if !options.listen.ip().is_loopback() {
        // Reached by name or address from elsewhere; the token (or
        // --insecure) guards it instead.
        config = config.disable_allowed_hosts();
    } else {
        // Reached by the address it listens on too (127.0.0.2, say).
        let ip = options.listen.ip().to_string();
        if !config.allowed_hosts.contains(&ip) {
            config.allowed_hosts.push(ip);
        }
    }
    let cancel = config.cancellation_token.clone();
    // One relay connection for every MCP session; sessions still ending
    // hold their place a moment, hence the margin.
    let shared = link::shared(
        &options.relay,
        options.relay_token.clone(),
        options.agent.as_deref().unwrap_or(SHARED_AGENT),
        options.max_sessions.saturating_mul(2).max(16),
    );
    let factory = {
        let shared = shared.clone();
        let links = links.clone();
        let relay = options.relay.clone();
        let relay_token = options.relay_token.clone();
        let prefix = options.prefix.clone();
        let agent = options.agent.clone();
        let elicit = options.elicit;
        move || {
            let cell: Arc<OnceCell<Link>> = Arc::default();
            let id = {
                let mut held = lock(&links);
                let id = held.next;
                held.next += 1;
                held.live.insert(id, cell.clone());
                id
            };
            let settings = Settings {
                relay: relay.clone(),
                token: relay_token.clone(),
                session: format!("{prefix}-{}", super::session_suffix()),
                agent: agent.clone(),
                elicit,
                shared: Some(shared.clone()),
            };
            let held = Held {
                id,
                links: links.clone(),
            };
            Ok(Server::new(settings, cell, Some(Arc::new(held))))
        }
    };
    let service = StreamableHttpService::new(factory, sessions.clone(), config);
    let has_token = options.token.is_some();
    let gate = Arc::new(Gate {
        token: options.token,
        max_sessions: options.max_sessions,
        sessions,
        opening: tokio::sync::Mutex::new(()),
    });
    let app = axum::Router::new()
        .route_service(PATH, service)
        .layer(axum::middleware::from_fn_with_state(gate, guard));
    diag!(
        "aep mcp: listening on http://{local}{PATH} ({}, --max-sessions {})",
        if has_token {
            "bearer token required"
        } else {
            "no token"
        },
        options.max_sessions
    );
    let shutdown = cancel.clone();
    let mut serving = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .await
    });
    let mut status = Status::Clean;
    tokio::select! {
        _ = crate::live::stop_signal() => {}
        served = &mut serving => {
            if let Ok(Err(e)) = served {
                diag!("aep mcp: error: serving HTTP on {local}: {e}");
            }
            status = Status::Failure;
        }
    }
    // No new requests; every MCP session and its streams end.
    cancel.cancel();
    let mut ending = {
        let mut held = lock(&links);
        held.closed = true;
        let mut ending = std::mem::take(&mut held.ending);
        for (_, cell) in held.live.drain() {
            ending.spawn(async move {
                if let Some(link) = cell.get() {
                    link.end().await;
                }
            });
        }
        ending
    };
    while ending.join_next().await.is_some() {}
    shared.close(CLOSING).await;
    let _ = tokio::time::timeout(CLOSING, serving).await;
    status
}

/// The origin, the token, the protocol revision and the bound on
/// sessions.
async fn guard(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        if !origin.to_str().is_ok_and(|o| origin_allowed(o, host)) {
            return (
                StatusCode::FORBIDDEN,
                "forbidden: a request from a web page on another host (its Origin); MCP \
                 clients send none\n",
            )
                .into_response();
        }
    }
    if let Some(token) = &gate.token {
        let presented = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(bearer);
        if !presented.is_some_and(|presented| token.matches(presented.trim())) {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))],
                "unauthorized: send `Authorization: Bearer <token>` with the token aep mcp \
                 was given (--http-token, AEP_MCP_TOKEN or --http-token-file)\n",
            )
                .into_response();
        }
    }
    let sessionless = request
        .headers()
        .get("mcp-protocol-version")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|version| version.trim() >= SESSIONLESS);
    if sessionless {
        return (
            StatusCode::BAD_REQUEST,
            format!(
                "this server keeps MCP sessions: connect with `initialize` and a protocol \
                 revision before {SESSIONLESS}\n"
            ),
        )
            .into_response();
    }
    // As rmcp reads it: an id that is not text is none, and opens a session.
    let named = request
        .headers()
        .get("mcp-session-id")
        .is_some_and(|id| id.to_str().is_ok());
    let opens = request.method() == Method::POST && !named;
    if !opens {
        return next.run(request).await;
    }
    let _opening = gate.opening.lock().await;
    let open = gate.sessions.sessions.read().await.len();
    if open >= gate.max_sessions {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, HeaderValue::from_static("10"))],
            format!(
                "too many MCP sessions: {open} open, at most {} (--max-sessions); end one \
                 (DELETE with its Mcp-Session-Id) or try again later\n",
                gate.max_sessions
            ),
        )
            .into_response();
    }
    match tokio::time::timeout(OPENING, next.run(request)).await {
        Ok(response) => response,
        Err(_) => (
            StatusCode::REQUEST_TIMEOUT,
            format!("the request did not complete within {OPENING:?}\n"),
        )
            .into_response(),
    }
}

/// Whether a web page at `origin` may call: one on a loopback host, or on
/// the host the request names (`host`, the `Host` header), port aside.
fn origin_allowed(origin: &str, host: Option<&str>) -> bool {
    let Some(authority) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let name = host_name(authority.split('/').next().unwrap_or_default());
    let loopback = name.eq_ignore_ascii_case("localhost")
        || name
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    loopback || host.is_some_and(|host| host_name(host).eq_ignore_ascii_case(name))
}

/// The host of an authority (`host:port`, `[v6]:port`), without its port.
fn host_name(authority: &str) -> &str {
    match authority.rfind(':') {
        Some(colon) if !authority[colon..].contains(']') => &authority[..colon],
        _ => authority,
    }
}

/// The token of an `Authorization: Bearer <token>` value; the scheme is
/// case-insensitive (RFC 9110 §11.1).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_or_same_host_pages_may_call() {
        for origin in [
            "http://localhost:3000",
            "http://127.0.0.1:8788",
            "http://127.0.0.2",
            "http://[::1]:6274",
            "https://LOCALHOST",
        ] {
            assert!(origin_allowed(origin, Some("127.0.0.1:8788")), "{origin}");
        }
        for origin in [
            "http://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example:80",
            "null",
            "file://",
            "",
        ] {
            assert!(!origin_allowed(origin, Some("127.0.0.1:8788")), "{origin}");
        }
        assert!(origin_allowed(
            "https://mcp.internal:8443",
            Some("mcp.internal:8788")
        ));
        assert!(!origin_allowed("https://mcp.internal", None));
        assert_eq!(host_name("[::1]:80"), "[::1]");
        assert_eq!(host_name("[::1]"), "[::1]");
        assert_eq!(host_name("a.b:1"), "a.b");
    }
}
