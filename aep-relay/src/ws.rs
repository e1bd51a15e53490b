//! `/socket`: the WebSocket duplex (AEP-0003 §3.5, §4, §6.5; AEP-0004 §4).
//!
//! One task per connection reads frames, writes deliveries, forwards the
//! commands routed to it and keeps the connection alive; nothing else
//! writes to the socket. `hello` comes first in each direction; after it,
//! a text frame whose `type` holds a dot is an event (a command is routed,
//! anything else ingested as over POST), and one without is a frame.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use aep::frame::{
    self, Closing, Delivered, Earliest, ErrorCode, ErrorFrame, Frame, Hello, Identity, Ping,
    ReplayExhausted, RequestId,
};
use axum::body::Body;
use axum::extract::{Request as HttpRequest, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use axum::Extension;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;
use tokio::sync::mpsc;
use tokio::time::{interval_at, timeout, timeout_at, Instant, MissedTickBehavior};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::Frame as WireFrame;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role as WsRole, WebSocketConfig};
use tokio_tungstenite::tungstenite::{self, Message, Utf8Bytes};
use tokio_tungstenite::WebSocketStream;

use crate::budget::{Budget, Charge, Share};
use crate::fanout::{bounded, Inbox, Outbox};
use crate::http::{error, App, Params};
use crate::hub::{ReplayItem, Request};
use crate::ingest;
use crate::metrics::Refusal;
use crate::routing::{self, Command, Declared, Role};
use crate::server::ConnectionSlot;
use crate::subscribe::{self, CLOSING_BUDGET, MAX_HELLO_BYTES, MAX_POSITIONS, MAX_POSITION_BYTES};
use crate::wsio::{self, Socket, READ_CHUNK};

/// A peer's WebSocket, read through [`Socket`].
type WebSocket = WebSocketStream<Socket<TokioIo<hyper::upgrade::Upgraded>>>;

/// The largest frame that is not an event (`subscribe`, `roster`, ...)
/// beyond its resume positions: room for a subscription's largest id and
/// filter.
const MAX_CONTROL_FRAME: usize = 64 * 1024;
/// Room for one resume position of a `subscribe` frame's `from`.
const POSITION_TEXT: usize = 600;

/// What is read of a frame before it is known: its `type` and `id`, left
/// as text; every other member is skipped.
#[derive(Default, serde::Deserialize)]
struct Head<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
}

/// Commands waiting for one target connection.
const COMMAND_QUEUE: usize = 256;

/// The largest fragment the relay writes: a longer message goes out in
/// fragments of this size, so a connection's write buffer (at most two
/// of them) stays small however large the events it is sent.
const SEND_FRAGMENT: usize = 16 * 1024;
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
    mut request: HttpRequest,
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
    let accept = match handshake(request.method(), &headers) {
        Ok(accept) => accept,
        Err(refused) => return *refused,
    };
    let Some(on_upgrade) = request
        .extensions_mut()
        .remove::<hyper::upgrade::OnUpgrade>()
    else {
        return error(
            StatusCode::UPGRADE_REQUIRED,
            "upgrade-required",
            "this connection cannot be upgraded to a WebSocket (HTTP/1.1 is needed)",
        );
    };
    let max = app.hub.config.max_frame;
    let config = WebSocketConfig::default()
        .read_buffer_size(READ_CHUNK)
        .write_buffer_size(0)
        .max_write_buffer_size(2 * SEND_FRAGMENT)
        .max_message_size(Some(max))
        .max_frame_size(Some(max));
    let token = app.sockets.token();
    tokio::spawn(async move {
        // A connection that fails to upgrade was the HTTP task's to report.
        if let Ok(upgraded) = on_upgrade.await {
            let socket = Socket::new(
                TokioIo::new(upgraded),
                app.inflight.clone(),
                app.hub.config.max_inflight_bytes,
                max,
                app.hub.config.message_timeout,
            );
            let socket =
                WebSocketStream::from_raw_socket(socket, WsRole::Server, Some(config)).await;
            Connection::new(app, socket).run().await;
        }
        // The socket held its connection's slot until now.
        drop(slot);
        drop(token);
    });
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
    response
}

/// The `Sec-WebSocket-Accept` answering an opening handshake (RFC 6455
/// §4.2.1), or the refusal of a request that is not one.
fn handshake(method: &Method, headers: &HeaderMap) -> Result<HeaderValue, Box<Response>> {
    let has = |name: header::HeaderName, token: &str| {
        headers.get_all(name).iter().any(|value| {
            value.to_str().is_ok_and(|value| {
                value
                    .split(',')
                    .any(|part| part.trim().eq_ignore_ascii_case(token))
            })
        })
    };
    if method != Method::GET
        || !has(header::CONNECTION, "upgrade")
        || !has(header::UPGRADE, "websocket")
    {
        let mut refused = error(
            StatusCode::UPGRADE_REQUIRED,
            "upgrade-required",
            "/socket speaks WebSocket: open it with a WebSocket client (GET with Connection: upgrade and Upgrade: websocket)",
        );
        refused
            .headers_mut()
            .insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        return Err(Box::new(refused));
    }
    if headers
        .get(header::SEC_WEBSOCKET_VERSION)
        .is_none_or(|version| version != "13")
    {
        let mut refused = error(
            StatusCode::BAD_REQUEST,
            "websocket-version",
            "this relay speaks WebSocket version 13 (RFC 6455)",
        );
        refused.headers_mut().insert(
            header::SEC_WEBSOCKET_VERSION,
            HeaderValue::from_static("13"),
        );
        return Err(Box::new(refused));
    }
    let Some(key) = headers.get(header::SEC_WEBSOCKET_KEY) else {
        return Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            "websocket-key",
            "a WebSocket opening handshake needs Sec-WebSocket-Key",
        )));
    };
    Ok(
        HeaderValue::from_str(&derive_accept_key(key.as_bytes()))
            .expect("base64 is a header value"),
    )
}

/// One subscription's identity.
struct Sub {
    /// The `id` the consumer gave, echoed in every frame about it (at
    /// most [`subscribe::MAX_ID_BYTES`] of JSON).
    id: RequestId,
    /// What it holds of `--max-state-bytes`.
    _state: Option<Charge>,
}

/// What each WebSocket connection may keep about itself (its `hello` and
/// subscriptions) before it is charged to `--max-state-bytes`: a modest
/// hello and a few subscriptions, so connections that others' state has
/// filled the budget against still get in.
const STATE_ALLOWANCE: usize = 8 * 1024;

/// What a connection's `hello` of `text` bytes is charged to
/// `--max-state-bytes`, the relay keeping `held` bytes of it
/// ([`Declared::held_bytes`]: its declarations' compact JSON once and
/// the command types it accepts, as text): twice its text, or what is
/// kept when more (a number written longer than sent, `1e15` kept as
/// `1000000000000000.0`), and 1 KiB for the connection's own
/// bookkeeping. What is kept is never more than is charged.
fn hello_cost(text: usize, held: usize) -> usize {
    (2 * text).max(held) + 1024
}

/// What a subscription is charged to `--max-state-bytes`: its id (kept
/// twice), its filter as parsed (taken as three times its text) and the
/// tables that hold it.
fn subscription_cost(id: usize, filter: usize) -> usize {
    2 * id + 3 * filter + 1024
}

/// Bytes one remembered position costs beyond its session id's two
/// copies: the map entries, the stamp and the position itself.
const POSITION_OVERHEAD: usize = 96;

/// The last position each subscription of a connection delivered per
/// session, for the `closing` frame: at most [`MAX_POSITIONS`] entries
/// and [`MAX_POSITION_BYTES`] bytes for the whole connection, the least
/// recently delivered forgotten first.
#[derive(Default)]
struct Positions {
    /// The relay's budget for connection state (`--max-state-bytes`),
    /// which holds `bytes` of it.
    budget: Arc<Budget>,
    /// (subscription, session) → (epoch, seq, stamp of the last delivery).
    at: HashMap<u64, HashMap<String, (u64, u64, u64)>>,
    /// Stamp → (subscription, session), oldest first.
    recent: BTreeMap<u64, (u64, String)>,
    next: u64,
    /// Bytes held, by [`Positions::cost`].
    bytes: usize,
    /// Positions forgotten to stay within the bounds.
    forgotten: u64,
}

impl Drop for Positions {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

impl Positions {
    fn cost(session: &str) -> usize {
        2 * session.len() + POSITION_OVERHEAD
    }

    /// Positions remembered within `budget`.
    fn within(budget: &Arc<Budget>) -> Positions {
        let mut positions = Positions::default();
        positions.budget = budget.clone();
        positions
    }

    fn record(&mut self, sub: u64, session: &str, epoch: u64, seq: u64) {
        let stamp = self.next;
        self.next += 1;
        if let Some(position) = self.at.get_mut(&sub).and_then(|at| at.get_mut(session)) {
            if let Some(key) = self.recent.remove(&position.2) {
                self.recent.insert(stamp, key);
            }
            *position = (epoch, seq, stamp);
            return;
        }
        // Room within the connection's bounds and the relay's budget:
        // the least recently delivered are forgotten first.
        let cost = Self::cost(session);
        while self.recent.len() >= MAX_POSITIONS
            || self.bytes + cost > MAX_POSITION_BYTES
            || !self.budget.reserve(cost)
        {
            self.forgotten += 1;
            let Some((_, (sub, session))) = self.recent.pop_first() else {
                // Nothing left to forget: this one is not remembered.
                return;
            };
            self.forget(sub, &session);
        }
        self.bytes += cost;
        self.at
            .entry(sub)
            .or_default()
            .insert(session.to_owned(), (epoch, seq, stamp));
        self.recent.insert(stamp, (sub, session.to_owned()));
    }

    fn forget(&mut self, sub: u64, session: &str) {
        if let Some(subs) = self.at.get_mut(&sub) {
            if subs.remove(session).is_some() {
                self.bytes -= Self::cost(session);
                self.budget.release(Self::cost(session));
            }
            if subs.is_empty() {
                self.at.remove(&sub);
            }
        }
    }

    /// Drops what an ended subscription delivered.
    fn remove(&mut self, sub: u64) {
        for (session, (_, _, stamp)) in self.at.remove(&sub).unwrap_or_default() {
            self.recent.remove(&stamp);
            self.bytes -= Self::cost(&session);
            self.budget.release(Self::cost(&session));
        }
    }

    /// The `delivered` entries of a `closing` frame, the most recent that
    /// fit in `budget` bytes of JSON (oldest first), and how many
    /// positions are left out (forgotten earlier or past the budget).
    fn closing(&self, subs: &HashMap<u64, Sub>, budget: usize) -> (Vec<Delivered>, u64) {
        let mut kept = Vec::new();
        let mut used = 0;
        let mut omitted = self.forgotten;
        for (n, (sub, session)) in self.recent.values().rev().enumerate() {
            let (Some(s), Some((epoch, seq, _))) = (
                subs.get(sub),
                self.at.get(sub).and_then(|at| at.get(session)),
            ) else {
                continue;
            };
            let entry = Delivered {
                sub: s.id.clone(),
                session: session.to_string(),
                epoch: *epoch,
                seq: *seq,
            };
            let len = subscribe::json_len(&entry, budget) + 1;
            if used + len > budget {
                omitted += (self.recent.len() - n) as u64;
                break;
            }
            used += len;
            kept.push(entry);
        }
        kept.reverse();
        (kept, omitted)
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
    positions: Positions,
    last_heard: Instant,
    /// What its `hello` holds of `--max-state-bytes`.
    state: Option<Charge>,
    /// Its own [`STATE_ALLOWANCE`].
    allowance: Arc<Budget>,
}

impl Connection {
    fn new(app: App, socket: WebSocket) -> Connection {
        let positions = Positions::within(&app.hub.metrics.state);
        let (outbox, inbox) = bounded(
            app.hub.config.queue_soft,
            app.hub.config.queue_hard,
            app.hub.config.max_batch,
            app.hub.config.queue_bytes,
            &app.hub.metrics.queued,
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
            positions,
            last_heard: Instant::now(),
            state: None,
            allowance: Budget::new(STATE_ALLOWANCE),
        }
    }

    /// Charges `cost` bytes of what the connection keeps about itself: to
    /// its own allowance while that lasts, then to `--max-state-bytes`.
    fn charge_state(&self, cost: usize) -> Option<Charge> {
        self.allowance
            .charge_strict(cost)
            .or_else(|| Some(self.app.hub.metrics.state.charge(cost)?.0))
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
    async fn hello(&mut self, commands: mpsc::Sender<Command>) -> Result<(), End> {
        // WebSocket pings are not AEP frames: the first frame that is not
        // one must be `hello`, within the same deadline however many come.
        let deadline = Instant::now() + self.app.hub.config.ping_timeout;
        let first = loop {
            let frame = tokio::select! {
                _ = self.app.shutdown.cancelled() => return Err(End::Close(GOING_AWAY, "shutting-down")),
                frame = timeout_at(deadline, self.socket.next()) => frame,
            };
            if !matches!(frame, Ok(Some(Ok(Message::Ping(_) | Message::Pong(_))))) {
                break frame;
            }
            self.socket.get_mut().release();
        };
        let text = match first {
            Err(_) => return Err(End::Close(POLICY, "no hello")),
            Ok(Some(Err(e))) => return Err(read_failed(&e)),
            Ok(None | Some(Ok(Message::Close(_)))) => return Err(End::Gone),
            Ok(Some(Ok(Message::Text(text)))) => text,
            Ok(Some(Ok(Message::Binary(_)))) => {
                self.refuse(
                    ErrorCode::BinaryUnsupported,
                    "binary frames are reserved in AEP 0.1",
                )
                .await?;
                return Err(End::Close(UNSUPPORTED_DATA, "binary frames are reserved"));
            }
            Ok(Some(Ok(_))) => {
                self.send_frame(hello_required()).await?;
                return Err(End::Close(PROTOCOL_ERROR, "hello required"));
            }
        };
        if text.len() > MAX_HELLO_BYTES {
            self.refuse(ErrorCode::LimitExceeded, format!(
                "hello is {} bytes; this relay takes at most {MAX_HELLO_BYTES}: declare less identity and capabilities",
                text.len()
            ))
            .await?;
            return Err(End::Close(MESSAGE_TOO_BIG, "hello-too-large"));
        }
        let Ok(Some(hello)) = frame::HelloRequest::read(&text) else {
            self.send_frame(hello_required()).await?;
            return Err(End::Close(PROTOCOL_ERROR, "hello required"));
        };
        // Only what is kept of the hello lives past here: the parsed hello
        // can take many times its text, and a peer that reads nothing can
        // hold the sends below.
        let speaks = hello.speaks("0.1");
        let role = hello.role.map(|role| role.map_or(Role::Both, Role::from));
        // A malformed `identity` or `capabilities` declares nothing.
        let declared = role.as_ref().ok().map(|role| {
            Declared::new(
                *role,
                &hello.identity.unwrap_or_default(),
                &hello.capabilities.unwrap_or_default(),
            )
        });
        drop(hello.versions);
        if !speaks {
            let mut refused =
                ErrorFrame::new(ErrorCode::VersionUnsupported, "this relay speaks AEP 0.1");
            refused.versions = Some(vec!["0.1".into()]);
            self.send_frame(Frame::Error(refused)).await?;
            return Err(End::Close(PROTOCOL_ERROR, "version unsupported"));
        }
        let (Ok(role), Some(declared)) = (role, declared) else {
            self.refuse(
                ErrorCode::InvalidHello,
                "role must be emitter, consumer or both",
            )
            .await?;
            return Err(End::Close(PROTOCOL_ERROR, "invalid role"));
        };
        self.role = role;
        match self.charge_state(hello_cost(text.len(), declared.held_bytes())) {
            Some(charge) => self.state = Some(charge),
            None => {
                self.app.hub.metrics.refuse(Refusal::Limit);
                self.refuse(
                    ErrorCode::Busy,
                    "the relay holds its --max-state-bytes of connection state (hellos, subscriptions, positions): connect again shortly",
                )
                .await?;
                return Err(End::Close(TRY_AGAIN_LATER, "busy"));
            }
        }
        self.app.hub.connect(self.id, declared, commands);
        let reply = Hello {
            versions: vec!["0.1".into()],
            role: Some(frame::Role::Both),
            identity: Some(Identity {
                agent: Some("aep-relay".into()),
                instance: Some(format!("aep-relay/{}", env!("CARGO_PKG_VERSION"))),
                card: None,
            }),
            capabilities: match self.app.capabilities() {
                Value::Object(declared) => declared,
                _ => Map::new(),
            },
        };
        self.send_frame(Frame::Hello(reply)).await
    }

    async fn serve(&mut self, mut commands: mpsc::Receiver<Command>) -> End {
        // The `hello` is handled: its bytes are given back.
        self.socket.get_mut().release();
        let period = self.app.hub.config.ping_interval;
        let mut ping = interval_at(Instant::now() + period, period);
        ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let shutdown = self.app.shutdown.clone();
        loop {
            let step = tokio::select! {
                biased;
                _ = shutdown.cancelled() => Err(End::Close(GOING_AWAY, "shutting-down")),
                message = self.socket.next() => match message {
                    Some(Ok(message)) => {
                        let handled = self.on_message(message).await;
                        // Its bytes are let go of: given back.
                        self.socket.get_mut().release();
                        handled
                    }
                    Some(Err(e)) => Err(read_failed(&e)),
                    None => Err(End::Gone),
                },
                Some((command, charge)) = commands.recv() => {
                    // Taken from the queue: its bytes are given back.
                    drop(charge);
                    self.send_text(command).await
                }
                delivery = self.inbox.recv() => match delivery {
                    Some(taken) if !self.inbox.overflowed.load(Ordering::Acquire) => {
                        let (sub, stored) = (taken.sub, &taken.stored);
                        if let (Some(session), Some(seq)) = (&stored.session, stored.seq) {
                            if self.subs.contains_key(&sub) {
                                self.positions.record(sub, session, stored.epoch, seq);
                            }
                        }
                        // Counted until it is written.
                        let json = stored.json();
                        let written = self.send_text(json).await;
                        drop(taken);
                        written
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
                        self.send_frame(Frame::Ping(Ping { t: Some(unix_millis().into()) })).await
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
                self.refuse(
                    ErrorCode::BinaryUnsupported,
                    "binary frames are reserved in AEP 0.1",
                )
                .await?;
                return Err(End::Close(UNSUPPORTED_DATA, "binary frames are reserved"));
            }
            Message::Close(_) => return Err(End::Gone),
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => return Ok(()),
        };
        // Only `type` and `id` are read before the frame is known: an
        // event's other members are skipped, not built into a tree (a
        // tree of small values takes many times its text).
        let head = match serde_json::from_str::<Head>(&text) {
            // A JSON array deserialises into a struct too: not a frame.
            Ok(head)
                if text
                    .trim_start_matches([' ', '\t', '\n', '\r'])
                    .starts_with('{') =>
            {
                head
            }
            Ok(_) => Head::default(),
            Err(e) if serde_json::from_str::<IgnoredAny>(&text).is_err() => {
                return self
                    .refuse(ErrorCode::BadJson, format!("frame is not JSON: {e}"))
                    .await
            }
            Err(e) if e.to_string().starts_with("duplicate field") => {
                return self
                    .refuse(
                        ErrorCode::BadFrame,
                        "a frame names its type and its id once each",
                    )
                    .await
            }
            Err(_) => Head::default(),
        };
        let Some(kind) = head
            .kind
            .and_then(|kind| serde_json::from_str::<Cow<str>>(kind.get()).ok())
        else {
            return self
                .refuse(
                    ErrorCode::BadFrame,
                    "a frame is a JSON object with a string type",
                )
                .await;
        };
        if kind.contains('.') {
            let cause = head
                .id
                .and_then(|id| serde_json::from_str::<String>(id.get()).ok());
            return self.on_event(text.as_bytes(), cause).await;
        }
        if !matches!(&*kind, "subscribe" | "unsubscribe" | "roster" | "ping") {
            // `pong`, `hello` again, `closing` and every unknown frame type
            // are ignored (AEP-0003 §2).
            return Ok(());
        }
        let config = &self.app.hub.config;
        let max =
            (MAX_CONTROL_FRAME + POSITION_TEXT * config.max_positions()).min(config.max_frame);
        if text.len() > max {
            self.app.hub.metrics.refuse(Refusal::Limit);
            let id = head
                .id
                .and_then(|id| serde_json::from_str::<Value>(id.get()).ok());
            return self
                .send_frame(Frame::Error(ErrorFrame {
                    id: id.map(RequestId),
                    ..ErrorFrame::new(
                        ErrorCode::LimitExceeded,
                        format!(
                            "a {kind} frame is {} bytes; this relay takes at most {max}",
                            text.len()
                        ),
                    )
                }))
                .await;
        }
        // The text is a JSON object with a string type: read, it is a
        // request (a frame of another type was let go of above).
        match frame::Request::read(&text) {
            Ok(Some(frame::Request::Subscribe(request))) => self.on_subscribe(request).await,
            Ok(Some(frame::Request::Unsubscribe(frame::Id { id }))) => {
                self.on_unsubscribe(id).await
            }
            Ok(Some(frame::Request::Roster(frame::Id { id }))) => self.on_roster(id).await,
            Ok(Some(frame::Request::Ping(ping))) => self.send_frame(Frame::Pong(ping)).await,
            Ok(None) | Err(_) => Ok(()),
        }
    }

    /// An event's text; `cause`, its `id` when that is a string, is
    /// echoed in a refusal.
    async fn on_event(&mut self, text: &[u8], cause: Option<String>) -> Result<(), End> {
        let admitted = match ingest::admit(text) {
            Ok(admitted) => admitted,
            Err(e) => {
                self.app.hub.metrics.refuse(Refusal::InvalidEvent);
                return self
                    .send_frame(Frame::Error(ErrorFrame {
                        cause,
                        ..ErrorFrame::new(e.code(), e.detail())
                    }))
                    .await;
            }
        };
        let kind = admitted.event.type_();
        // A consumer sends commands and `attention.routed` only; an ack is
        // believed only from the connection its command was routed to.
        let refusal = if !self.role.emits() && !routing::consumer_may_send(kind) {
            Some(format!("a consumer connection sends only commands (control.*) and attention.routed; {kind} is an emitter's event (connect with role emitter or both)"))
        } else if routing::is_ack(kind) {
            self.app.hub.check_ack(self.id, &admitted).err()
        } else {
            None
        };
        if let Some(detail) = refusal {
            self.app.hub.metrics.refuse(Refusal::Unauthorized);
            return self
                .send_frame(Frame::Error(ErrorFrame {
                    cause,
                    ..ErrorFrame::new(ErrorCode::Unauthorized, detail)
                }))
                .await;
        }
        #[cfg(feature = "nats")]
        let nats = self.app.nats.clone();
        #[cfg(not(feature = "nats"))]
        let nats: Option<()> = None;
        if !admitted.is_command() {
            #[cfg(feature = "nats")]
            if let Some(nats) = &nats {
                return self.publish(nats, &admitted, cause).await;
            }
            self.app
                .hub
                .ingest(std::slice::from_ref(&admitted), Some(self.id));
            return Ok(());
        }
        let frame_bytes = Bytes::copy_from_slice(text);
        let routed = self
            .app
            .hub
            .route(&admitted, frame_bytes.clone(), nats.is_none(), false);
        // An owner on another node of the cluster: that node delivers it.
        #[cfg(feature = "nats")]
        let routed = match (routed, &nats) {
            (Ok(routing::Routed::Node(node)), Some(nats)) => nats
                .forward(&node, frame_bytes)
                .await
                .map(|()| routing::Routed::Node(node)),
            (routed, _) => routed,
        };
        #[cfg(not(feature = "nats"))]
        drop(frame_bytes);
        match routed {
            #[cfg_attr(not(feature = "nats"), allow(unused_variables))]
            Ok(routed) => {
                // A node of a cluster keeps the command in every node's
                // history through the stream (the node that delivered it:
                // this one, or the owner's).
                #[cfg(feature = "nats")]
                if let (Some(nats), routing::Routed::Here) = (nats, routed) {
                    if let Err(e) = nats
                        .publish(vec![crate::nats::Outgoing::of(&admitted)])
                        .await
                    {
                        tracing::warn!(error = %e, "a routed command was not kept in the stream");
                    }
                }
                Ok(())
            }
            Err(refused) => {
                self.app.hub.metrics.refuse(Refusal::Command);
                let session = admitted.event.session().unwrap_or_default();
                let detail = refused.detail(session, admitted.event.type_());
                self.send_frame(Frame::Error(ErrorFrame {
                    cause,
                    ..ErrorFrame::new(refused.code(), detail)
                }))
                .await
            }
        }
    }

    /// A node of a cluster's ingest of an event: published, and claimed
    /// here once the stream holds it (the stream delivers it).
    #[cfg(feature = "nats")]
    async fn publish(
        &mut self,
        nats: &crate::nats::Nats,
        admitted: &crate::ingest::Admitted<'_>,
        cause: Option<String>,
    ) -> Result<(), End> {
        match nats
            .publish(vec![crate::nats::Outgoing::of(admitted)])
            .await
        {
            Ok(duplicates) => {
                self.app.hub.claim(admitted, self.id, duplicates > 0);
                Ok(())
            }
            Err(failed) => {
                self.app.hub.metrics.refuse(Refusal::Limit);
                let code = match failed {
                    crate::nats::Failed::TooLarge { .. } => ErrorCode::LimitExceeded,
                    crate::nats::Failed::Unavailable(_) => ErrorCode::Busy,
                };
                self.send_frame(Frame::Error(ErrorFrame {
                    cause,
                    ..ErrorFrame::new(code, failed.to_string())
                }))
                .await
            }
        }
    }

    async fn on_subscribe(&mut self, request: frame::SubscribeRequest) -> Result<(), End> {
        let id = request.id;
        let refuse = |code: ErrorCode, detail: String| {
            Frame::Error(ErrorFrame {
                id: Some(id.clone()),
                ..ErrorFrame::new(code, detail)
            })
        };
        let hub = self.app.hub.clone();
        let name = match subscribe::id(&id.0) {
            Ok(name) => name,
            Err(r) => {
                hub.metrics.refuse(Refusal::Limit);
                return self.send_frame(refuse(r.code, r.detail)).await;
            }
        };
        if id.0.is_null() {
            hub.metrics.refuse(Refusal::InvalidFilter);
            return self
                .send_frame(refuse(
                    ErrorCode::InvalidFilter,
                    "subscribe needs an id".into(),
                ))
                .await;
        }
        if self.by_name.contains_key(&name) {
            hub.metrics.refuse(Refusal::InvalidFilter);
            return self
                .send_frame(refuse(
                    ErrorCode::InvalidFilter,
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
            return self
                .send_frame(refuse(ErrorCode::LimitExceeded, detail))
                .await;
        }
        let parsed = subscribe::filter(request.filter.as_ref()).and_then(|filter| {
            let ceiling = subscribe::read_ceiling(request.capture)?;
            let from = subscribe::positions(request.from, hub.config.max_positions())?;
            Ok((filter, ceiling, from))
        });
        let (filter, ceiling, from) = match parsed {
            Ok(parsed) => parsed,
            Err(r) => {
                hub.metrics.refuse(if r.code == ErrorCode::LimitExceeded {
                    Refusal::Limit
                } else {
                    Refusal::InvalidFilter
                });
                return self.send_frame(refuse(r.code, r.detail)).await;
            }
        };
        let filter_len = request.filter.as_ref().map_or(0, |f| f.to_string().len());
        let cost = subscription_cost(name.len(), filter_len);
        let Some(state) = self.charge_state(cost) else {
            hub.metrics.refuse(Refusal::Limit);
            return self
                .send_frame(refuse(
                    ErrorCode::LimitExceeded,
                    "the relay holds its --max-state-bytes of connection state (hellos, subscriptions, positions): unsubscribe elsewhere or subscribe again shortly".into(),
                ))
                .await;
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
                _state: Some(state),
            },
        );
        self.send_frame(Frame::Subscribed(frame::Id { id: id.clone() }))
            .await?;
        for item in replay {
            match item {
                ReplayItem::Exhausted { session, earliest } => {
                    self.send_frame(Frame::ReplayExhausted(ReplayExhausted {
                        sub: Some(id.clone()),
                        session: session.to_string(),
                        earliest: Earliest {
                            epoch: earliest.epoch,
                            seq: earliest.seq,
                        },
                    }))
                    .await?;
                }
                ReplayItem::Event(stored) => {
                    // A large event is counted in the relay's budget for
                    // all queues while it is written (the buffer may let
                    // it go meanwhile); past twice that budget the
                    // consumer is cut off, as a live one would be.
                    let queued = &self.app.hub.metrics.queued;
                    let _writing = match stored.size() > SEND_FRAGMENT {
                        true => {
                            match Share::take(&stored, queued, queued.max().saturating_mul(2)) {
                                Some(share) => Some(share),
                                None => {
                                    self.app.hub.metrics.disconnected_backpressure.inc();
                                    return Err(End::Close(TRY_AGAIN_LATER, "backpressure"));
                                }
                            }
                        }
                        false => None,
                    };
                    if let (Some(session), Some(seq)) = (&stored.session, stored.seq) {
                        self.positions.record(internal, session, stored.epoch, seq);
                    }
                    self.send_text(stored.json()).await?;
                }
            }
        }
        Ok(())
    }

    async fn on_unsubscribe(&mut self, id: RequestId) -> Result<(), End> {
        if let Some(internal) = self.by_name.remove(&id.0.to_string()) {
            self.subs.remove(&internal);
            self.positions.remove(internal);
            self.app.hub.unsubscribe(&[internal]);
        }
        self.send_frame(Frame::Unsubscribed(frame::Id { id })).await
    }

    async fn on_roster(&mut self, id: RequestId) -> Result<(), End> {
        if !self.role.watches() {
            return self
                .send_frame(Frame::Error(ErrorFrame {
                    id: Some(id),
                    ..ErrorFrame::new(
                        ErrorCode::Unauthorized,
                        "roster is answered on consumer and both connections (AEP-0003 §4.1)",
                    )
                }))
                .await;
        }
        // The reply stays under the frame limit; past it, `truncated` and
        // `omitted` say how many entries were left out.
        // The entries and the frame made of them are held until it is
        // written: charged to `--max-inflight-bytes` at their bound (twice
        // the reply's), as a body being read is, and refused `busy` when it
        // has no room. A reply takes at most a quarter of that budget.
        let config = &self.app.hub.config;
        let limit = config.max_frame.min(config.max_inflight_bytes / 4);
        let envelope = 128 + id.0.to_string().len();
        let budget = limit.saturating_sub(envelope);
        let charge = 2 * limit;
        let Some(mut held) = u32::try_from(charge)
            .ok()
            .and_then(|n| self.app.inflight.clone().try_acquire_many_owned(n).ok())
        else {
            self.app.hub.metrics.refuse(Refusal::Limit);
            return self
                .send_frame(Frame::Error(ErrorFrame {
                    id: Some(id),
                    ..ErrorFrame::new(
                        ErrorCode::Busy,
                        "the relay is reading and answering other requests up to its --max-inflight-bytes; ask again shortly",
                    )
                }))
                .await;
        };
        let roster = self.app.hub.roster(budget);
        let frame = Bytes::from(roster.frame(&id.0));
        drop(roster);
        // While it is written, only the frame is held.
        drop(held.split(held.num_permits().saturating_sub(frame.len())));
        self.send_text(frame).await
    }

    async fn send_frame(&mut self, frame: Frame) -> Result<(), End> {
        self.send_text(Bytes::from(frame.encode())).await
    }

    /// An `error` frame answering nothing in particular.
    async fn refuse(&mut self, code: ErrorCode, detail: impl Into<String>) -> Result<(), End> {
        self.send_frame(Frame::Error(ErrorFrame::new(code, detail)))
            .await
    }

    /// A text message; one longer than [`SEND_FRAGMENT`] goes as fragments of
    /// that size, each written before the next is made, so the socket's
    /// write buffer never holds more than one.
    async fn send_text(&mut self, text: Bytes) -> Result<(), End> {
        send_text(&mut self.socket, text)
            .await
            .map_err(|_| End::Gone)
    }

    /// A `closing` frame with the delivered positions, the close frame,
    /// and a short wait for the peer's close (a peer that never answers
    /// is dropped).
    ///
    /// The frame holds the most recent positions within [`CLOSING_BUDGET`]
    /// bytes (a quarter of `--max-frame` when that is less); when some
    /// were forgotten or are left out, `omitted` says how many (a session
    /// delivered again after it was forgotten counts twice).
    async fn close(&mut self, code: u16, reason: &'static str) {
        let budget = CLOSING_BUDGET.min(self.app.hub.config.max_frame / 4);
        let (delivered, omitted) = self.positions.closing(&self.subs, budget);
        let closing = Frame::Closing(Closing {
            reason: reason.to_owned(),
            delivered,
            omitted: (omitted > 0).then_some(omitted),
        });
        let frame = CloseFrame {
            code: CloseCode::from(code),
            reason: reason.into(),
        };
        let goodbye = async {
            send_text(&mut self.socket, Bytes::from(closing.encode())).await?;
            self.socket.send(Message::Close(Some(frame))).await?;
            while let Some(Ok(message)) = self.socket.next().await {
                self.socket.get_mut().release();
                if matches!(message, Message::Close(_)) {
                    break;
                }
            }
            Ok::<(), tungstenite::Error>(())
        };
        let _ = timeout(CLOSE_WAIT, goodbye).await;
    }
}

/// What to tell a peer whose read failed: a message over `--max-frame`
/// is refused with close 1009, a read that waited too long for
/// `--max-inflight-bytes` with 1013, a message that stalled with 1008;
/// anything else means the peer is gone.
fn read_failed(error: &tungstenite::Error) -> End {
    match error {
        tungstenite::Error::Capacity(_) => End::Close(MESSAGE_TOO_BIG, "frame-too-large"),
        tungstenite::Error::Io(e) => match e.get_ref() {
            Some(inner) if inner.is::<wsio::Busy>() => End::Close(TRY_AGAIN_LATER, "busy"),
            Some(inner) if inner.is::<wsio::Stalled>() => End::Close(POLICY, "message-stalled"),
            _ => End::Gone,
        },
        _ => End::Gone,
    }
}

/// Writes `text` as one text message, in fragments of at most
/// [`SEND_FRAGMENT`] bytes; text that is not UTF-8 (admitted text always is)
/// is not sent.
async fn send_text(socket: &mut WebSocket, text: Bytes) -> Result<(), tungstenite::Error> {
    if text.len() <= SEND_FRAGMENT {
        return match Utf8Bytes::try_from(text) {
            Ok(text) => socket.send(Message::Text(text)).await,
            Err(_) => Ok(()),
        };
    }
    if std::str::from_utf8(&text).is_err() {
        return Ok(());
    }
    let mut start = 0;
    while start < text.len() {
        let end = (start + SEND_FRAGMENT).min(text.len());
        let opcode = if start == 0 {
            OpCode::Data(Data::Text)
        } else {
            OpCode::Data(Data::Continue)
        };
        let fragment = WireFrame::message(text.slice(start..end), opcode, end == text.len());
        socket.send(Message::Frame(fragment)).await?;
        start = end;
    }
    Ok(())
}

fn hello_required() -> Frame {
    Frame::Error(ErrorFrame::new(
        ErrorCode::HelloRequired,
        "the first frame must be hello (AEP-0003 §3.5)",
    ))
}

fn unix_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What the relay keeps of `hello` (as `hello()` reads it), and what
    /// it is charged.
    fn kept_and_charged(text: &str) -> (usize, usize, usize) {
        assert!(text.len() <= MAX_HELLO_BYTES, "{}", text.len());
        let read = frame::HelloRequest::read(text).unwrap().unwrap();
        let declared = Declared::new(
            Role::Both,
            &read.identity.unwrap_or_default(),
            &read.capabilities.unwrap_or_default(),
        );
        let held = declared.held_bytes();
        (text.len(), held, hello_cost(text.len(), held))
    }

    /// A hello whose `capabilities` are `capabilities` and whose
    /// `identity` is `identity`.
    fn hello_of(identity: Value, capabilities: Value) -> Value {
        json!({"type": "hello", "versions": ["0.1"], "role": "both", "identity": identity, "capabilities": capabilities})
    }

    #[test]
    fn what_is_kept_of_a_hello_is_bounded_by_its_charge() {
        // Room for declarations near the hello limit.
        let n = (MAX_HELLO_BYTES - 200) / 2;
        let deep = (0..100).fold(json!(0), |v, _| json!([v]));
        let tiny_members: Map<String, Value> =
            (0..n / 8).map(|i| (format!("{i:x}"), json!(0))).collect();
        let adversarial = [
            // About 32 000 tiny numbers: as `Value`s, 32 bytes each.
            hello_of(json!({}), json!({"emits": vec![0; n]})),
            // Many one-character command types.
            hello_of(json!({}), json!({"control": {"accepts": vec!["a"; n / 2]}})),
            // Many tiny members.
            hello_of(json!({"agent": tiny_members}), json!({})),
            // Deep nesting, and every declaration at once.
            hello_of(
                json!({"agent": deep, "instance": vec![json!({}); n / 6]}),
                json!({"control": {"accepts": vec![""; n / 6]}, "emits": vec![json!([]); n / 6]}),
            ),
        ];
        for hello in &adversarial {
            let (text, held, charged) = kept_and_charged(&hello.to_string());
            // About its text: within what a hello was always charged.
            assert!(held <= 2 * text + 1024, "{held} kept of {text}");
            assert!(held <= charged, "{held} kept, {charged} charged");
        }
        // Numbers re-written longer than sent (`1e15`, 4 bytes, kept as
        // `1000000000000000.0`): the charge follows what is kept.
        let long = format!(
            r#"{{"type":"hello","versions":["0.1"],"capabilities":{{"emits":[{}1]}}}}"#,
            "1e15,".repeat(n / 3)
        );
        let (text, held, charged) = kept_and_charged(&long);
        assert!(held > 2 * text, "{held} kept of {text}");
        assert!(held <= charged, "{held} kept, {charged} charged");
    }

    fn subs(n: u64, id_bytes: usize) -> HashMap<u64, Sub> {
        (0..n)
            .map(|i| {
                let id = format!("{i:04}{}", "i".repeat(id_bytes - 6));
                (
                    i,
                    Sub {
                        id: id.into(),
                        _state: None,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn positions_are_bounded_per_connection_in_entries_and_bytes() {
        let mut positions = Positions::default();
        // Short sessions: the entry bound holds.
        for sub in 0..64 {
            for session in 0..1024 {
                positions.record(sub, &format!("s{session}"), 0, 1);
            }
        }
        assert_eq!(positions.recent.len(), MAX_POSITIONS);
        let held: usize = positions.at.values().map(HashMap::len).sum();
        assert_eq!(held, MAX_POSITIONS);
        assert_eq!(positions.forgotten, 64 * 1024 - MAX_POSITIONS as u64);
        // Long sessions: the byte bound holds, counting their length.
        let mut positions = Positions::default();
        let long = "l".repeat(16 * 1024);
        for sub in 0..64 {
            for session in 0..16 {
                positions.record(sub, &format!("{session:02}{long}"), 0, 1);
            }
        }
        assert!(positions.bytes <= MAX_POSITION_BYTES, "{}", positions.bytes);
        let counted: usize = positions
            .at
            .values()
            .flat_map(HashMap::keys)
            .map(|s| Positions::cost(s))
            .sum();
        assert_eq!(counted, positions.bytes);
        assert_eq!(
            positions.recent.len(),
            MAX_POSITION_BYTES / (2 * (long.len() + 2) + POSITION_OVERHEAD)
        );
        // Removing a subscription gives its bytes back.
        for sub in 0..64 {
            positions.remove(sub);
        }
        assert_eq!((positions.bytes, positions.recent.len()), (0, 0));
        assert!(positions.at.is_empty());
    }

    #[test]
    fn a_redelivered_position_is_the_most_recent() {
        let mut positions = Positions::default();
        positions.record(1, "old", 0, 1);
        for n in 0..MAX_POSITIONS - 1 {
            positions.record(1, &format!("s{n}"), 0, 1);
        }
        // `old` moves ahead: `s0` is now the one forgotten first.
        positions.record(1, "old", 0, 2);
        positions.record(1, "new", 0, 1);
        assert!(positions.at[&1].contains_key("old"));
        assert!(!positions.at[&1].contains_key("s0"));
        assert_eq!(positions.at[&1]["old"].1, 2);
    }

    #[test]
    fn the_closing_entries_fit_the_budget_most_recent_kept() {
        let subs = subs(64, 256);
        let mut positions = Positions::default();
        for session in 0..64 {
            for sub in 0..64 {
                positions.record(sub, &format!("{session:03}{}", "s".repeat(200)), 3, 9);
            }
        }
        let (kept, omitted) = positions.closing(&subs, CLOSING_BUDGET);
        let bytes = json!(kept).to_string().len();
        assert!(bytes <= CLOSING_BUDGET, "{bytes}");
        assert!(kept.len() > 100, "{}", kept.len());
        assert_eq!(kept.len() as u64 + omitted, 64 * 64);
        let last = kept.last().unwrap();
        assert_eq!(last.sub, subs[&63].id);
        assert!(last.session.starts_with("063"));
        // A tiny budget keeps nothing and says so.
        let (kept, omitted) = positions.closing(&subs, 10);
        assert!(kept.is_empty());
        assert_eq!(omitted, 64 * 64);
    }
}
