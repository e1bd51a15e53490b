//! `/socket`: the WebSocket duplex (AEP-0003 §3.5, §4, §6.5; AEP-0004 §4).
//!
//! One task per connection reads frames, writes deliveries, forwards the
//! commands routed to it and keeps the connection alive; nothing else
//! writes to the socket. `hello` comes first in each direction; after it,
//! a text frame whose `type` holds a dot is an event (a command is routed,
//! anything else ingested as over POST), and one without is a frame.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::Extension;
use bytes::Bytes;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::time::{interval_at, timeout, timeout_at, Instant, MissedTickBehavior};

use crate::fanout::{queue, Inbox, Outbox};
use crate::http::{error, App, Params};
use crate::hub::{ReplayItem, Request};
use crate::ingest;
use crate::metrics::Refusal;
use crate::routing::{Declared, Role};
use crate::server::ConnectionSlot;
use crate::subscribe::{self, MAX_HELLO_BYTES};

/// Commands waiting for one target connection.
const COMMAND_QUEUE: usize = 256;
/// Positions remembered per subscription for the `closing` frame.
const POSITIONS: usize = 1024;
/// How long a closing peer gets to answer the close handshake.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// WebSocket close codes.
const GOING_AWAY: u16 = 1001;
const PROTOCOL_ERROR: u16 = 1002;
const UNSUPPORTED_DATA: u16 = 1003;
const POLICY: u16 = 1008;
const MESSAGE_TOO_BIG: u16 = 1009;
const TRY_AGAIN_LATER: u16 = 1013;

pub(crate) async fn upgrade(
    State(app): State<App>,
    headers: HeaderMap,
    params: Params,
    slot: Option<Extension<ConnectionSlot>>,
    upgrade: WebSocketUpgrade,
) -> Response {
    if !app.authorized(&headers, &params.0) {
        return app.unauthorized();
    }
    // Browsers let any page open a WebSocket anywhere: without a token,
    // only pages on this machine or served by the relay itself may (see
    // `http::browsers`).
    if !app.hub.config.authenticated()
        && headers.get(header::ORIGIN).is_some_and(|origin| {
            !crate::http::origin_is_loopback(origin)
                && !crate::http::same_origin(origin, headers.get(header::HOST))
        })
    {
        return error(
            StatusCode::FORBIDDEN,
            "forbidden-origin",
            "without a token this relay takes WebSocket connections only from pages on this machine",
        );
    }
    let max = app.hub.config.max_frame;
    let token = app.sockets.token();
    upgrade
        .max_message_size(max)
        .max_frame_size(max)
        .write_buffer_size(64 * 1024)
        .max_write_buffer_size(2 * max + 64 * 1024)
        .on_upgrade(move |socket| async move {
            Connection::new(app, socket).run().await;
            // The socket held its connection's slot until now.
            drop(slot);
            drop(token);
        })
}

/// One subscription's identity and the positions it delivered.
struct Sub {
    /// The `id` the consumer gave, echoed in every frame about it.
    id: Value,
    delivered: HashMap<String, (u64, u64)>,
    order: VecDeque<String>,
}

impl Sub {
    fn record(&mut self, session: &str, epoch: u64, seq: u64) {
        if let Some(position) = self.delivered.get_mut(session) {
            *position = (epoch, seq);
            return;
        }
        if self.order.len() >= POSITIONS {
            if let Some(old) = self.order.pop_front() {
                self.delivered.remove(&old);
            }
        }
        self.order.push_back(session.to_owned());
        self.delivered.insert(session.to_owned(), (epoch, seq));
    }
}

/// Why the loop ended, and what to tell the peer.
enum End {
    /// The peer left or the socket failed: nothing more to send.
    Gone,
    /// Close with a `closing` frame and this code and reason.
    Close(u16, &'static str),
}

struct Connection {
    app: App,
    id: u64,
    socket: WebSocket,
    role: Role,
    outbox: Outbox,
    inbox: Inbox,
    /// Frame id (as JSON text) → internal subscription id.
    by_name: HashMap<String, u64>,
    subs: HashMap<u64, Sub>,
    last_heard: Instant,
}

impl Connection {
    fn new(app: App, socket: WebSocket) -> Connection {
        let (outbox, inbox) = queue(
            app.hub.config.queue_soft,
            app.hub.config.queue_hard,
            app.hub.config.max_batch,
        );
        Connection {
            id: app.hub.next_id(),
            app,
            socket,
            role: Role::Both,
            outbox,
            inbox,
            by_name: HashMap::new(),
            subs: HashMap::new(),
            last_heard: Instant::now(),
        }
    }

    async fn run(mut self) {
        let metrics = self.app.hub.clone();
        metrics.metrics.websockets.inc();
        let (commands, received) = mpsc::channel(COMMAND_QUEUE);
        let end = match self.hello(commands).await {
            Ok(()) => self.serve(received).await,
            Err(end) => end,
        };
        if let End::Close(code, reason) = end {
            self.close(code, reason).await;
        }
        self.app.hub.unsubscribe_outbox(&self.outbox);
        self.app.hub.disconnect(self.id);
        metrics.metrics.websockets.dec();
    }

    /// The first frame must be `hello`; the relay answers with its own.
    async fn hello(&mut self, commands: mpsc::Sender<Bytes>) -> Result<(), End> {
        // WebSocket pings are not AEP frames: the first frame that is not
        // one must be `hello`, within the same deadline however many come.
        let deadline = Instant::now() + self.app.hub.config.ping_timeout;
        let first = loop {
            let frame = tokio::select! {
                _ = self.app.shutdown.cancelled() => return Err(End::Close(GOING_AWAY, "shutting-down")),
                frame = timeout_at(deadline, self.socket.recv()) => frame,
            };
            if !matches!(frame, Ok(Some(Ok(Message::Ping(_) | Message::Pong(_))))) {
                break frame;
            }
        };
        let text = match first {
            Err(_) => return Err(End::Close(POLICY, "no hello")),
            Ok(Some(Err(e))) if too_big(&e) => {
                return Err(End::Close(MESSAGE_TOO_BIG, "frame-too-large"))
            }
            Ok(None | Some(Err(_)) | Some(Ok(Message::Close(_)))) => return Err(End::Gone),
            Ok(Some(Ok(Message::Text(text)))) => text,
            Ok(Some(Ok(Message::Binary(_)))) => {
                self.send_json(json!({"type": "error", "code": "binary-unsupported", "detail": "binary frames are reserved in AEP 0.1"})).await?;
                return Err(End::Close(UNSUPPORTED_DATA, "binary frames are reserved"));
            }
            Ok(Some(Ok(_))) => {
                self.send_json(hello_required()).await?;
                return Err(End::Close(PROTOCOL_ERROR, "hello required"));
            }
        };
        if text.len() > MAX_HELLO_BYTES {
            self.send_json(json!({"type": "error", "code": "limit-exceeded", "detail": format!(
                "hello is {} bytes; this relay takes at most {MAX_HELLO_BYTES}: declare less identity and capabilities",
                text.len()
            )}))
            .await?;
            return Err(End::Close(MESSAGE_TOO_BIG, "hello-too-large"));
        }
        let hello: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if hello.get("type").and_then(Value::as_str) != Some("hello") {
            self.send_json(hello_required()).await?;
            return Err(End::Close(PROTOCOL_ERROR, "hello required"));
        }
        let speaks = hello
            .get("versions")
            .and_then(Value::as_array)
            .is_some_and(|v| v.iter().any(|v| v.as_str() == Some("0.1")));
        if !speaks {
            self.send_json(json!({"type": "error", "code": "version-unsupported", "versions": ["0.1"], "detail": "this relay speaks AEP 0.1"})).await?;
            return Err(End::Close(PROTOCOL_ERROR, "version unsupported"));
        }
        let role = match hello.get("role") {
            None => Some(Role::Both),
            Some(role) => role.as_str().and_then(Role::parse),
        };
        let Some(role) = role else {
            self.send_json(json!({"type": "error", "code": "invalid-hello", "detail": "role must be emitter, consumer or both"})).await?;
            return Err(End::Close(PROTOCOL_ERROR, "invalid role"));
        };
        self.role = role;
        let identity = hello.get("identity");
        let capabilities = hello.get("capabilities");
        let declared = Declared {
            role,
            agent: identity.and_then(|i| i.get("agent")).cloned(),
            instance: identity.and_then(|i| i.get("instance")).cloned(),
            control: capabilities.and_then(|c| c.get("control")).cloned(),
            emits: capabilities.and_then(|c| c.get("emits")).cloned(),
        };
        self.app.hub.connect(self.id, declared, commands);
        let reply = json!({
            "type": "hello",
            "versions": ["0.1"],
            "role": "both",
            "identity": {"agent": "aep-relay", "instance": format!("aep-relay/{}", env!("CARGO_PKG_VERSION"))},
            "capabilities": self.app.capabilities(),
        });
        self.send_json(reply).await
    }

    async fn serve(&mut self, mut commands: mpsc::Receiver<Bytes>) -> End {
        let period = self.app.hub.config.ping_interval;
        let mut ping = interval_at(Instant::now() + period, period);
        ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let shutdown = self.app.shutdown.clone();
        loop {
            let step = tokio::select! {
                biased;
                _ = shutdown.cancelled() => Err(End::Close(GOING_AWAY, "shutting-down")),
                message = self.socket.recv() => match message {
                    Some(Ok(message)) => self.on_message(message).await,
                    Some(Err(e)) if too_big(&e) => Err(End::Close(MESSAGE_TOO_BIG, "frame-too-large")),
                    None | Some(Err(_)) => Err(End::Gone),
                },
                Some(command) = commands.recv() => self.send_text(command).await,
                delivery = self.inbox.rx.recv() => match delivery {
                    Some((sub, stored)) if !self.inbox.overflowed.load(Ordering::Acquire) => {
                        if let (Some(session), Some(seq), Some(s)) = (&stored.session, stored.seq, self.subs.get_mut(&sub)) {
                            s.record(session, stored.epoch, seq);
                        }
                        self.send_text(stored.json()).await
                    }
                    _ => {
                        self.app.hub.metrics.disconnected_backpressure.inc();
                        Err(End::Close(TRY_AGAIN_LATER, "backpressure"))
                    }
                },
                _ = ping.tick() => {
                    if self.last_heard.elapsed() > self.app.hub.config.ping_timeout {
                        Err(End::Close(GOING_AWAY, "no-pong"))
                    } else {
                        self.send_json(json!({"type": "ping", "t": unix_millis()})).await
                    }
                }
            };
            if let Err(end) = step {
                return end;
            }
        }
    }

    async fn on_message(&mut self, message: Message) -> Result<(), End> {
        self.last_heard = Instant::now();
        let text = match message {
            Message::Text(text) => text,
            Message::Binary(_) => {
                self.send_json(json!({"type": "error", "code": "binary-unsupported", "detail": "binary frames are reserved in AEP 0.1"})).await?;
                return Err(End::Close(UNSUPPORTED_DATA, "binary frames are reserved"));
            }
            Message::Close(_) => return Err(End::Gone),
            Message::Ping(_) | Message::Pong(_) => return Ok(()),
        };
        let frame: Value = match serde_json::from_str(&text) {
            Ok(frame) => frame,
            Err(e) => {
                return self
                    .send_json(json!({"type": "error", "code": "bad-json", "detail": format!("frame is not JSON: {e}")}))
                    .await
            }
        };
        let Some(kind) = frame.get("type").and_then(Value::as_str) else {
            return self
                .send_json(json!({"type": "error", "code": "bad-frame", "detail": "a frame is a JSON object with a string type"}))
                .await;
        };
        if kind.contains('.') {
            return self.on_event(text, &frame).await;
        }
        match kind {
            "subscribe" => self.on_subscribe(&frame).await,
            "unsubscribe" => self.on_unsubscribe(&frame).await,
            "roster" => self.on_roster(&frame).await,
            "ping" => {
                let t = frame.get("t").cloned().unwrap_or(Value::Null);
                self.send_json(json!({"type": "pong", "t": t})).await
            }
            // `pong`, `hello` again, `closing` and every unknown frame type
            // are ignored (AEP-0003 §2).
            _ => Ok(()),
        }
    }

    async fn on_event(&mut self, text: Utf8Bytes, frame: &Value) -> Result<(), End> {
        let cause = frame.get("id").cloned().unwrap_or(Value::Null);
        let admitted = match ingest::admit(text.as_bytes()) {
            Ok(admitted) => admitted,
            Err(e) => {
                self.app.hub.metrics.refuse(Refusal::InvalidEvent);
                return self
                    .send_json(json!({"type": "error", "code": e.code(), "detail": e.detail(), "cause": cause}))
                    .await;
            }
        };
        if !admitted.is_command() {
            self.app
                .hub
                .ingest(std::slice::from_ref(&admitted), Some(self.id));
            return Ok(());
        }
        let frame_bytes = Bytes::copy_from_slice(text.as_bytes());
        match self.app.hub.route(&admitted, frame_bytes) {
            Ok(()) => Ok(()),
            Err(refused) => {
                self.app.hub.metrics.refuse(Refusal::Command);
                let session = admitted.event.session().unwrap_or_default();
                let detail = refused.detail(session, admitted.event.type_());
                self.send_json(json!({"type": "error", "cause": cause, "code": refused.code(), "detail": detail}))
                    .await
            }
        }
    }

    async fn on_subscribe(&mut self, frame: &Value) -> Result<(), End> {
        let id = frame.get("id").cloned().unwrap_or(Value::Null);
        let refuse = |code: &str, detail: String| json!({"type": "error", "id": id, "code": code, "detail": detail});
        let hub = self.app.hub.clone();
        let name = match subscribe::id(&id) {
            Ok(name) => name,
            Err(r) => {
                hub.metrics.refuse(Refusal::Limit);
                return self.send_json(refuse(r.code, r.detail)).await;
            }
        };
        if id.is_null() {
            hub.metrics.refuse(Refusal::InvalidFilter);
            return self
                .send_json(refuse("invalid-filter", "subscribe needs an id".into()))
                .await;
        }
        if self.by_name.contains_key(&name) {
            hub.metrics.refuse(Refusal::InvalidFilter);
            return self
                .send_json(refuse(
                    "invalid-filter",
                    format!("subscription {name} is already active"),
                ))
                .await;
        }
        if self.subs.len() >= hub.config.max_subscriptions {
            hub.metrics.refuse(Refusal::Limit);
            let detail = format!(
                "this connection holds {} subscriptions, the limit",
                self.subs.len()
            );
            return self.send_json(refuse("limit-exceeded", detail)).await;
        }
        let parsed = subscribe::filter(frame.get("filter")).and_then(|filter| {
            let ceiling = match frame.get("capture") {
                None | Some(Value::Null) => None,
                Some(Value::String(c)) => subscribe::ceiling(Some(c))?,
                Some(other) => subscribe::ceiling(Some(&other.to_string()))?,
            };
            let from = subscribe::from(frame.get("from"), hub.config.max_positions())?;
            Ok((filter, ceiling, from))
        });
        let (filter, ceiling, from) = match parsed {
            Ok(parsed) => parsed,
            Err(r) => {
                hub.metrics.refuse(if r.code == "limit-exceeded" {
                    Refusal::Limit
                } else {
                    Refusal::InvalidFilter
                });
                return self.send_json(refuse(r.code, r.detail)).await;
            }
        };
        let internal = hub.next_id();
        let replay = hub.subscribe(Request {
            filter,
            ceiling,
            from,
            history: None,
            live: Some((internal, self.outbox.clone())),
        });
        self.by_name.insert(name, internal);
        self.subs.insert(
            internal,
            Sub {
                id: id.clone(),
                delivered: HashMap::new(),
                order: VecDeque::new(),
            },
        );
        self.send_json(json!({"type": "subscribed", "id": id}))
            .await?;
        for item in replay {
            match item {
                ReplayItem::Exhausted { session, earliest } => {
                    self.send_json(json!({
                        "type": "replay-exhausted",
                        "sub": id,
                        "session": session,
                        "earliest": {"epoch": earliest.epoch, "seq": earliest.seq},
                    }))
                    .await?;
                }
                ReplayItem::Event(stored) => {
                    if let (Some(session), Some(seq), Some(s)) =
                        (&stored.session, stored.seq, self.subs.get_mut(&internal))
                    {
                        s.record(session, stored.epoch, seq);
                    }
                    self.send_text(stored.json()).await?;
                }
            }
        }
        Ok(())
    }

    async fn on_unsubscribe(&mut self, frame: &Value) -> Result<(), End> {
        let id = frame.get("id").cloned().unwrap_or(Value::Null);
        if let Some(internal) = self.by_name.remove(&id.to_string()) {
            self.subs.remove(&internal);
            self.app.hub.unsubscribe(&[internal]);
        }
        self.send_json(json!({"type": "unsubscribed", "id": id}))
            .await
    }

    async fn on_roster(&mut self, frame: &Value) -> Result<(), End> {
        let id = frame.get("id").cloned().unwrap_or(Value::Null);
        if !self.role.watches() {
            return self
                .send_json(json!({"type": "error", "id": id, "code": "unauthorized", "detail": "roster is answered on consumer and both connections (AEP-0003 §4.1)"}))
                .await;
        }
        let entries = self.app.hub.roster();
        self.send_json(json!({"type": "roster", "id": id, "entries": entries}))
            .await
    }

    async fn send_json(&mut self, frame: Value) -> Result<(), End> {
        self.send(Message::Text(frame.to_string().into())).await
    }

    async fn send_text(&mut self, text: Bytes) -> Result<(), End> {
        match Utf8Bytes::try_from(text) {
            Ok(text) => self.send(Message::Text(text)).await,
            // Admitted text is UTF-8; anything else is not sent.
            Err(_) => Ok(()),
        }
    }

    async fn send(&mut self, message: Message) -> Result<(), End> {
        self.socket.send(message).await.map_err(|_| End::Gone)
    }

    /// A `closing` frame with the delivered positions, the close frame,
    /// and a short wait for the peer's close (a peer that never answers
    /// is dropped).
    async fn close(&mut self, code: u16, reason: &'static str) {
        let mut delivered = Vec::new();
        for sub in self.subs.values() {
            let mut positions: Vec<_> = sub.delivered.iter().collect();
            positions.sort();
            for (session, (epoch, seq)) in positions {
                delivered
                    .push(json!({"sub": sub.id, "session": session, "epoch": epoch, "seq": seq}));
            }
        }
        let closing = json!({"type": "closing", "reason": reason, "delivered": delivered});
        let frame = CloseFrame {
            code,
            reason: reason.into(),
        };
        let goodbye = async {
            self.socket
                .send(Message::Text(closing.to_string().into()))
                .await?;
            self.socket.send(Message::Close(Some(frame))).await?;
            while let Some(Ok(message)) = self.socket.recv().await {
                if matches!(message, Message::Close(_)) {
                    break;
                }
            }
            Ok::<(), axum::Error>(())
        };
        let _ = timeout(CLOSE_WAIT, goodbye).await;
    }
}

/// Whether a read failed on a message over `--max-frame`: the peer is
/// told so with close 1009 rather than dropped without a word. (The
/// error is the `tungstenite` one inside axum's, so that dependency
/// follows axum's version.)
fn too_big(error: &axum::Error) -> bool {
    use std::error::Error as _;
    matches!(
        error
            .source()
            .and_then(|e| e.downcast_ref::<tungstenite::Error>()),
        Some(tungstenite::Error::Capacity(_))
    )
}

fn hello_required() -> Value {
    json!({"type": "error", "code": "hello-required", "detail": "the first frame must be hello (AEP-0003 §3.5)"})
}

fn unix_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
