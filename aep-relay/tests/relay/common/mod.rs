//! What every integration test shares: a relay served in-process on
//! `127.0.0.1:0`, event builders, and HTTP, SSE and WebSocket clients.
//!
//! Every wait is bounded by [`WAIT`] and every loop by a count, so a
//! broken relay fails a test instead of hanging it.
// Each test binary uses a part of these helpers.
#![allow(dead_code, unused_imports)]

mod raw;
mod sse;
mod ws;

pub use raw::RawSse;
pub use sse::{comments, parse_block, seqs, Sse, SseItem};
pub use ws::{Got, Ws};

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use aep_relay::{Config, Drained, Relay, ShutdownHandle, Token};
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

/// The longest any single wait in a test may take.
pub const WAIT: Duration = Duration::from_secs(10);
/// How many times a polling wait looks before giving up.
const POLLS: usize = 400;
/// The pause between two looks of a polling wait.
const POLL_PAUSE: Duration = Duration::from_millis(25);

/// A relay serving on an ephemeral loopback port.
pub struct TestRelay {
    pub addr: SocketAddr,
    /// The token clients send, when the relay requires one.
    pub token: Option<String>,
    pub http: reqwest::Client,
    shutdown: ShutdownHandle,
    server: Option<JoinHandle<std::io::Result<Drained>>>,
}

/// Starts a relay with `config` (no token).
pub async fn start(config: Config) -> TestRelay {
    serve(config, None).await
}

/// Starts a relay that requires `token` on every surface.
pub async fn start_with_token(config: Config, token: &str) -> TestRelay {
    let config = config.token(Some(Token::new(token).expect("a non-empty token")));
    serve(config, Some(token.to_owned())).await
}

async fn serve(config: Config, token: Option<String>) -> TestRelay {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local address");
    let relay = Relay::new(config).expect("a relay without TLS");
    let shutdown = relay.shutdown_handle();
    let server = tokio::spawn(relay.serve(listener));
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("an HTTP client");
    TestRelay {
        addr,
        token,
        http,
        shutdown,
        server: Some(server),
    }
}

impl Drop for TestRelay {
    fn drop(&mut self) {
        self.shutdown.shutdown();
    }
}

impl TestRelay {
    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// A request with the bearer token when the relay has one.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let builder = self.http.request(method, self.url(path));
        match &self.token {
            Some(token) => builder.bearer_auth(token),
            None => builder,
        }
    }

    /// A GET with the token, bounded.
    pub async fn get(&self, path: &str) -> reqwest::Response {
        send(self.request(reqwest::Method::GET, path)).await
    }

    /// A POST to `/events` with `AEP-Version: 0.1`, the token and this
    /// content type.
    pub async fn post(
        &self,
        content_type: &str,
        body: impl Into<reqwest::Body>,
    ) -> reqwest::Response {
        let request = self
            .request(reqwest::Method::POST, "/events")
            .header("aep-version", "0.1")
            .header("content-type", content_type)
            .body(body);
        send(request).await
    }

    /// POSTs one event as `application/json`; asserts 202.
    pub async fn post_event(&self, event: &Value) {
        let response = self.post("application/json", event.to_string()).await;
        assert_eq!(response.status(), 202, "POST one event");
    }

    /// POSTs lines as an NDJSON batch.
    pub async fn post_lines(&self, lines: &[String]) -> reqwest::Response {
        let mut body = lines.join("\n");
        body.push('\n');
        self.post("application/x-ndjson", body).await
    }

    /// POSTs events as an NDJSON batch; asserts 202.
    pub async fn post_batch(&self, events: &[Value]) {
        let lines: Vec<String> = events.iter().map(Value::to_string).collect();
        let response = self.post_lines(&lines).await;
        assert_eq!(response.status(), 202, "POST a batch");
    }

    /// The `/metrics` text.
    pub async fn metrics_text(&self) -> String {
        let response = self.get("/metrics").await;
        assert_eq!(response.status(), 200, "GET /metrics");
        text(response).await
    }

    /// One sample of `/metrics`, by its full name with labels.
    pub async fn metric(&self, sample: &str) -> u64 {
        let text = self.metrics_text().await;
        metric_in(&text, sample)
    }

    /// The `/healthz` body (with counts when the token is sent).
    pub async fn health(&self) -> Value {
        json_body(self.get("/healthz").await).await.1
    }

    /// Waits until `/healthz` satisfies `ready`.
    pub async fn wait_health(&self, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..POLLS {
            let health = self.health().await;
            if ready(&health) {
                return health;
            }
            tokio::time::sleep(POLL_PAUSE).await;
        }
        panic!("healthz never showed {what}: {}", self.health().await);
    }

    /// Opens `GET /stream` with these query parameters; asserts 200.
    pub async fn sse(&self, query: &[(&str, &str)]) -> Sse {
        self.sse_with(self.request(reqwest::Method::GET, "/stream").query(query))
            .await
    }

    /// Opens an SSE stream from a prepared request; asserts 200.
    pub async fn sse_with(&self, request: reqwest::RequestBuilder) -> Sse {
        let response = send(request.header("accept", "text/event-stream")).await;
        assert_eq!(response.status(), 200, "GET /stream");
        let content_type = response.headers()["content-type"].to_str().unwrap_or("");
        assert_eq!(content_type, "text/event-stream");
        Sse::new(response)
    }

    /// The whole of a `live=0` read: every item up to the end of the body.
    pub async fn history(&self, query: &[(&str, &str)]) -> Vec<SseItem> {
        let mut query = query.to_vec();
        query.push(("live", "0"));
        let mut sse = self.sse(&query).await;
        sse.read_to_end().await
    }

    /// The events of `session` the relay holds, in replay order.
    pub async fn held(&self, session: &str) -> Vec<SseItem> {
        let filter = json!({ "session": session }).to_string();
        self.history(&[("filter", &filter)])
            .await
            .into_iter()
            .filter(|item| item.is_event())
            .collect()
    }

    /// `ws://127.0.0.1:PORT/socket`.
    pub fn ws_url(&self) -> String {
        format!("ws://{}/socket", self.addr)
    }

    /// A WebSocket connection with the token, before any `hello`.
    pub async fn ws_connect(&self) -> Ws {
        self.ws_connect_with(None).await
    }

    /// A WebSocket connection whose socket receive buffer is `recv_buffer`
    /// bytes (a small one makes a consumer that stops reading back up
    /// quickly).
    pub async fn ws_connect_with(&self, recv_buffer: Option<u32>) -> Ws {
        let mut request = self.ws_url().into_client_request().expect("a WS request");
        if let Some(token) = &self.token {
            let value = HeaderValue::from_str(&format!("Bearer {token}")).expect("a header");
            request.headers_mut().insert("authorization", value);
        }
        let stream = tcp_connect(self.addr, recv_buffer).await;
        let (socket, _) = timeout(WAIT, tokio_tungstenite::client_async(request, stream))
            .await
            .expect("the WS handshake in time")
            .expect("the WS handshake");
        Ws { socket }
    }

    /// A WebSocket connection after `hello` with `role` (the relay's
    /// `hello` reply is read and checked).
    pub async fn ws(&self, role: &str) -> Ws {
        self.ws_hello(hello(role)).await
    }

    /// A WebSocket connection after this `hello`.
    pub async fn ws_hello(&self, hello: Value) -> Ws {
        let mut ws = self.ws_connect().await;
        ws.send(&hello).await;
        let reply = ws.json().await;
        assert_eq!(reply["type"], "hello", "the relay's hello: {reply}");
        ws
    }

    /// Waits until a roster snapshot satisfies `ready`; returns it.
    pub async fn wait_roster(&self, what: &str, ready: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let mut watcher = self.ws("consumer").await;
        let mut last = Vec::new();
        for n in 0..POLLS {
            last = watcher.roster(&format!("wait-{n}")).await;
            if ready(&last) {
                return last;
            }
            tokio::time::sleep(POLL_PAUSE).await;
        }
        panic!("the roster never showed {what}: {last:?}");
    }

    /// Starts the drain and waits (bounded) for `serve` to return.
    pub async fn stop(mut self) -> Drained {
        self.shutdown.shutdown();
        let server = self.server.take().expect("serving");
        timeout(WAIT, server)
            .await
            .expect("serve returns in time")
            .expect("the server task")
            .expect("serve")
    }

    /// Starts the drain without waiting.
    pub fn begin_shutdown(&self) {
        self.shutdown.shutdown();
    }

    /// Waits (bounded) for `serve` to return after `begin_shutdown`.
    pub async fn drained(mut self) -> Drained {
        let server = self.server.take().expect("serving");
        timeout(WAIT, server)
            .await
            .expect("serve returns in time")
            .expect("the server task")
            .expect("serve")
    }
}

/// A TCP connection to `addr`, optionally with a small receive buffer.
pub async fn tcp_connect(addr: SocketAddr, recv_buffer: Option<u32>) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("a socket");
    if let Some(size) = recv_buffer {
        socket.set_recv_buffer_size(size).expect("SO_RCVBUF");
    }
    timeout(WAIT, socket.connect(addr))
        .await
        .expect("connect in time")
        .expect("connect")
}

/// Sends a request, bounded.
pub async fn send(request: reqwest::RequestBuilder) -> reqwest::Response {
    timeout(WAIT, request.send())
        .await
        .expect("a response in time")
        .expect("a response")
}

/// A response body as text, bounded.
pub async fn text(response: reqwest::Response) -> String {
    timeout(WAIT, response.text())
        .await
        .expect("a body in time")
        .expect("a body")
}

/// A response's status and JSON body.
pub async fn json_body(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let body = text(response).await;
    let value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
    (status, value)
}

/// One sample of a Prometheus text exposition, by full name with labels.
pub fn metric_in(text: &str, sample: &str) -> u64 {
    text.lines()
        .find_map(|line| line.strip_prefix(sample)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {sample} in:\n{text}"))
        .trim()
        .parse()
        .expect("an integer sample")
}

static IDS: AtomicU64 = AtomicU64::new(1);

/// A fresh event id.
pub fn fresh_id() -> String {
    format!("ev-{}", IDS.fetch_add(1, Ordering::Relaxed))
}

/// A valid positioned session event with a fresh id.
pub fn event(event_type: &str, session: &str, seq: u64) -> Value {
    json!({
        "aep": "0.1",
        "id": fresh_id(),
        "type": event_type,
        "time": "2026-12-03T09:00:00Z",
        "source": "urn:aep:test:emitter",
        "agent": "test-agent",
        "session": session,
        "seq": seq,
    })
}

/// `progress.status` at `seq` with this severity.
pub fn status(session: &str, seq: u64, severity: &str) -> Value {
    let mut e = event("progress.status", session, seq);
    e["severity"] = severity.into();
    e
}

/// A command (no `seq`) addressed to `session`.
pub fn command(command_type: &str, session: &str) -> Value {
    json!({
        "aep": "0.1",
        "id": fresh_id(),
        "type": command_type,
        "time": "2026-12-03T09:00:01Z",
        "source": "urn:aep:test:operator",
        "agent": "test-operator",
        "session": session,
        "data": {"scope": "session"},
    })
}

/// A client `hello` with `role`.
pub fn hello(role: &str) -> Value {
    json!({
        "type": "hello",
        "versions": ["0.1"],
        "role": role,
        "identity": {"agent": "test-agent", "instance": "test/1"},
        "capabilities": {},
    })
}

/// An emitter's `hello` declaring the commands it accepts.
pub fn emitter_hello(instance: &str, accepts: &[&str]) -> Value {
    json!({
        "type": "hello",
        "versions": ["0.1"],
        "role": "emitter",
        "identity": {"agent": "test-agent", "instance": instance},
        "capabilities": {"control": {"accepts": accepts, "ack_window_ms": 10000}},
    })
}
