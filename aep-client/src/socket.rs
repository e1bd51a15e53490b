//! A managed WebSocket connection to a relay (AEP-0003 §3.5, §4): it says
//! `hello`, keeps the connection alive, reconnects with backoff, sends
//! queued events through a bounded outbox and hands
//! every inbound event and frame to the caller.
//!
//! After a reconnect the last few lines sent before the drop are sent
//! again with the same ids (at-least-once, AEP-0003 §3.2.4: the relay's
//! buffer deduplicates, consumers dedupe on `(source, id)`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep::frame::{self, Decoded, Frame, Hello, Identity, Ping, Role};
use aep::Severity;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::{timeout, Instant};
use tokio_tungstenite::tungstenite::Message;

use crate::backoff::Backoff;
use crate::error::Error;
use crate::outbox::{Outbox, Queued, TryPush};
use crate::transport::{Flushed, Transport};

mod connect;

#[cfg(test)]
use connect::socket_url;
pub(crate) use connect::{greet, open};

/// The largest message accepted from a relay.
pub(crate) const MAX_MESSAGE: usize = 16 << 20;

pub(crate) type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// How a [`Socket`] connects.
#[derive(Debug, Clone)]
pub struct SocketConfig {
    /// The relay's base URL (`http://127.0.0.1:8787`; `ws://` works too).
    pub relay: String,
    /// The bearer token, if the relay wants one.
    pub token: Option<String>,
    /// The `hello` frame to open every connection with.
    pub hello: Hello,
    /// Lines the outbox holds (default 4 096).
    pub outbox: usize,
    /// Lines sent again after a reconnect (default 64).
    pub resend: usize,
    /// The longest wait between reconnects (default 5 s).
    pub max_backoff: Duration,
    /// How often to ping, and how long silence may last (default 30 s and
    /// 90 s, AEP-0003 §3.5).
    pub ping: (Duration, Duration),
}

impl SocketConfig {
    /// A configuration with the defaults.
    pub fn new(relay: impl Into<String>, token: Option<String>, hello: Hello) -> SocketConfig {
        SocketConfig {
            relay: relay.into(),
            token,
            hello,
            outbox: 4096,
            resend: 64,
            max_backoff: Duration::from_secs(5),
            ping: (Duration::from_secs(30), Duration::from_secs(90)),
        }
    }
}

/// Why [`Socket::try_send`] did not queue a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrySendError {
    /// The outbox is full of `notice`-and-above lines (the relay is slow
    /// or unreachable).
    Full,
    /// The socket was closed.
    Closed,
}

impl std::fmt::Display for TrySendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrySendError::Full => f.write_str("the outbox is full"),
            TrySendError::Closed => f.write_str("the connection is closed"),
        }
    }
}

impl std::error::Error for TrySendError {}

/// What the connection hands the caller.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// Connected (again): the relay's `hello`.
    Connected(Hello),
    /// The connection dropped; it is being re-established.
    Disconnected(String),
    /// An event (a command for a target, a delivery for a consumer), as
    /// its exact text.
    Event(String),
    /// A frame other than `hello`, `ping` and `pong` (frames of types
    /// this revision does not define are ignored, AEP-0003 §2).
    Frame(Frame),
    /// The relay refused the connection for good (bad token, version);
    /// nothing more follows.
    Failed(String),
}

enum Control {
    Frame(Value),
    Close(oneshot::Sender<()>),
}

/// Aborts the connection task when the last handle goes.
#[derive(Debug)]
struct TaskGuard(Mutex<Option<JoinHandle<()>>>);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        if let Some(task) = self.0.lock().unwrap_or_else(|e| e.into_inner()).take() {
            task.abort();
        }
    }
}

/// The sending half of a [`Socket`], shared by the crate's layers.
#[derive(Clone)]
pub(crate) struct Handle {
    outbox: Outbox,
    control: mpsc::Sender<Control>,
    task: Arc<TaskGuard>,
}

impl Handle {
    pub(crate) async fn send(&self, line: String, severity: Severity) -> Result<(), Error> {
        self.outbox
            .push(Queued { line, severity })
            .await
            .map_err(|_| Error::Closed)
    }

    pub(crate) fn try_send(&self, line: String, severity: Severity) -> Result<(), TrySendError> {
        self.outbox
            .try_push(Queued { line, severity })
            .map_err(|e| match e {
                TryPush::Full => TrySendError::Full,
                TryPush::Closed => TrySendError::Closed,
            })
    }

    pub(crate) async fn frame(&self, frame: Value) -> Result<(), Error> {
        self.control
            .send(Control::Frame(frame))
            .await
            .map_err(|_| Error::Closed)
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.outbox.dropped()
    }

    /// A handle that does not keep the connection alive (for a task the
    /// connection itself keeps alive).
    pub(crate) fn detached(&self) -> Handle {
        Handle {
            outbox: self.outbox.clone(),
            control: self.control.clone(),
            task: Arc::new(TaskGuard(Mutex::new(None))),
        }
    }

    pub(crate) async fn close(&self, wait: Duration) -> Flushed {
        self.outbox.close();
        let (done, finished) = oneshot::channel();
        if self.control.send(Control::Close(done)).await.is_ok() {
            let _ = timeout(wait, finished).await;
        }
        if let Some(task) = self.task.0.lock().unwrap_or_else(|e| e.into_inner()).take() {
            task.abort();
        }
        Flushed {
            undelivered: self.outbox.len(),
            dropped: self.outbox.dropped(),
        }
    }
}

/// A managed connection. Dropping it stops the connection task.
///
/// ```no_run
/// # async fn run() -> Result<(), aep_client::Error> {
/// use aep::frame::Role;
/// use aep::Severity;
/// use aep_client::socket::{hello, Inbound, Socket, SocketConfig};
///
/// let hello = hello(Role::Emitter, "demo", "host-a/1", serde_json::json!({}));
/// let mut socket = Socket::connect(SocketConfig::new("http://127.0.0.1:8787", None, hello));
/// socket.send(r#"{"aep":"0.1"}"#.to_owned(), Severity::Info).await?;
/// while let Some(inbound) = socket.recv().await {
///     if let Inbound::Failed(why) = inbound {
///         eprintln!("refused: {why}");
///         break;
///     }
/// }
/// # Ok(()) }
/// ```
pub struct Socket {
    handle: Handle,
    inbound: mpsc::Receiver<Inbound>,
}

impl Socket {
    /// Starts connecting in the background; [`recv`](Socket::recv) says
    /// when the connection is up.
    pub fn connect(config: SocketConfig) -> Socket {
        let outbox = Outbox::new(config.outbox);
        let (control, control_rx) = mpsc::channel(64);
        let (inbound_tx, inbound) = mpsc::channel(1024);
        let task = tokio::spawn(run(config, outbox.clone(), control_rx, inbound_tx));
        Socket {
            handle: Handle {
                outbox,
                control,
                task: Arc::new(TaskGuard(Mutex::new(Some(task)))),
            },
            inbound,
        }
    }

    /// Queues an event line (one JSON object, no newline). It is sent
    /// once the `hello` exchange completes. When the outbox is full,
    /// `debug`/`info` lines are dropped first (and counted); a
    /// `notice`-and-above line waits for room.
    pub async fn send(&self, line: String, severity: Severity) -> Result<(), Error> {
        self.handle.send(line, severity).await
    }

    /// Queues an event line as [`send`](Socket::send) does, without ever
    /// waiting: a `notice`-and-above line that finds the outbox full of
    /// such lines is not queued ([`TrySendError::Full`]), and the caller
    /// decides what to do with it (send it again later, from its own
    /// record).
    pub fn try_send(&self, line: String, severity: Severity) -> Result<(), TrySendError> {
        self.handle.try_send(line, severity)
    }

    /// Sends a frame (`subscribe`, `roster`, ...) on the current
    /// connection; frames are not queued across reconnects.
    pub async fn frame(&self, frame: Value) -> Result<(), Error> {
        self.handle.frame(frame).await
    }

    /// The next thing that arrived; `None` once the connection is closed.
    pub async fn recv(&mut self) -> Option<Inbound> {
        self.inbound.recv().await
    }

    /// Lines dropped from the outbox so far.
    pub fn dropped(&self) -> u64 {
        self.handle.dropped()
    }

    /// Sends what is queued (waiting at most `wait`), closes the
    /// connection and ends the task.
    pub async fn close(self, wait: Duration) -> Flushed {
        self.handle.close(wait).await
    }

    /// The two halves, for a layer that reads in one task and writes in
    /// another.
    pub(crate) fn split(self) -> (Handle, mpsc::Receiver<Inbound>) {
        (self.handle, self.inbound)
    }
}

impl Transport for Socket {
    async fn send(&self, line: String, severity: Severity) -> Result<(), Error> {
        self.handle.send(line, severity).await
    }

    fn dropped(&self) -> u64 {
        self.handle.dropped()
    }

    async fn close(self, wait: Duration) -> Flushed {
        self.handle.close(wait).await
    }
}

/// A `hello` frame (AEP-0003 §4) for `role` with `identity.agent` and
/// `identity.instance`, speaking AEP 0.1, declaring `capabilities`
/// (`control.accepts` for a target): a JSON object; anything else
/// declares nothing.
///
/// ```
/// use aep::frame::Role;
///
/// let hello = aep_client::socket::hello(Role::Emitter, "demo", "host-a/7", serde_json::json!({
///     "control": {"accepts": ["control.cancel"], "ack_window_ms": 10000},
/// }));
/// assert_eq!(hello.versions, ["0.1"]);
/// assert_eq!(hello.accepts(), ["control.cancel"]);
/// ```
pub fn hello(role: Role, agent: &str, instance: &str, capabilities: Value) -> Hello {
    Hello {
        versions: vec!["0.1".into()],
        role: Some(role),
        identity: Some(Identity {
            agent: Some(agent.into()),
            instance: Some(instance.into()),
            card: None,
        }),
        capabilities: match capabilities {
            Value::Object(declared) => declared,
            _ => Map::new(),
        },
    }
}

async fn run(
    config: SocketConfig,
    outbox: Outbox,
    mut control: mpsc::Receiver<Control>,
    inbound: mpsc::Sender<Inbound>,
) {
    let mut recent: VecDeque<Queued> = VecDeque::new();
    let mut attempt = Backoff::new(Duration::from_millis(100), config.max_backoff);
    loop {
        let mut ws = match open(&config.relay, config.token.as_deref()).await {
            Ok(ws) => ws,
            Err(Error::Http { status: 401, .. } | Error::Http { status: 403, .. }) => {
                let why = match config.token {
                    Some(_) => {
                        "the relay refused the token: it is not the one the relay was started with"
                    }
                    None => "the relay needs a token (AEP_TOKEN) and none was given",
                };
                let _ = inbound.send(Inbound::Failed(why.into())).await;
                return;
            }
            Err(Error::Invalid(why)) => {
                let _ = inbound.send(Inbound::Failed(why)).await;
                return;
            }
            Err(e) => {
                let _ = inbound.send(Inbound::Disconnected(e.to_string())).await;
                if !backoff(&config, &mut attempt, &mut control).await {
                    return;
                }
                continue;
            }
        };
        let hello = match greet(&mut ws, &config.hello).await {
            Ok(hello) => hello,
            Err(Error::Refused { code, detail }) => {
                let _ = inbound
                    .send(Inbound::Failed(format!("{code}: {detail}")))
                    .await;
                return;
            }
            Err(e) => {
                let _ = inbound.send(Inbound::Disconnected(e.to_string())).await;
                if !backoff(&config, &mut attempt, &mut control).await {
                    return;
                }
                continue;
            }
        };
        attempt.reset();
        if inbound.send(Inbound::Connected(hello)).await.is_err() {
            return;
        }
        let mut resent_ok = true;
        for item in recent.iter() {
            if ws.send(Message::text(item.line.clone())).await.is_err() {
                resent_ok = false;
                break;
            }
        }
        let why = if resent_ok {
            serve(
                &config,
                &mut ws,
                &outbox,
                &mut control,
                &inbound,
                &mut recent,
            )
            .await
        } else {
            Ended::Dropped("send failed".into())
        };
        match why {
            Ended::Closed => return,
            Ended::Dropped(reason) => {
                if inbound.send(Inbound::Disconnected(reason)).await.is_err() {
                    return;
                }
                if !backoff(&config, &mut attempt, &mut control).await {
                    return;
                }
            }
        }
    }
}

enum Ended {
    Closed,
    Dropped(String),
}

/// Waits before the next attempt (exponential, with jitter). `false`
/// when the caller closed meanwhile.
async fn backoff(
    _config: &SocketConfig,
    attempt: &mut Backoff,
    control: &mut mpsc::Receiver<Control>,
) -> bool {
    let deadline = Instant::now() + attempt.next_wait();
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => return true,
            message = control.recv() => match message {
                Some(Control::Close(done)) => {
                    let _ = done.send(());
                    return false;
                }
                Some(Control::Frame(_)) => continue,
                None => return false,
            },
        }
    }
}

async fn serve(
    config: &SocketConfig,
    ws: &mut Ws,
    outbox: &Outbox,
    control: &mut mpsc::Receiver<Control>,
    inbound: &mpsc::Sender<Inbound>,
    recent: &mut VecDeque<Queued>,
) -> Ended {
    let (every, silence) = config.ping;
    let mut ping = tokio::time::interval_at(Instant::now() + every, every);
    let mut heard = Instant::now();
    loop {
        tokio::select! {
            item = outbox.pop() => {
                let Some(item) = item else {
                    // Closed and drained: wait for the close request.
                    continue_until_close(ws, control).await;
                    return Ended::Closed;
                };
                if ws.send(Message::text(item.line.clone())).await.is_err() {
                    outbox.unpop(item);
                    return Ended::Dropped("send failed".into());
                }
                recent.push_back(item);
                while recent.len() > config.resend {
                    recent.pop_front();
                }
            }
            message = control.recv() => match message {
                Some(Control::Frame(frame)) => {
                    if ws.send(Message::text(frame.to_string())).await.is_err() {
                        return Ended::Dropped("send failed".into());
                    }
                }
                Some(Control::Close(done)) => {
                    flush(ws, outbox).await;
                    let _ = ws.close(None).await;
                    let _ = done.send(());
                    return Ended::Closed;
                }
                None => return Ended::Closed,
            },
            message = ws.next() => {
                heard = Instant::now();
                let text = match message {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_))) | None => return Ended::Dropped("the relay closed the connection".into()),
                    Some(Err(e)) => return Ended::Dropped(e.to_string()),
                    Some(Ok(_)) => continue,
                };
                let item = match frame::decode(&text) {
                    Ok(Decoded::Event(_)) => Inbound::Event(text.to_string()),
                    Ok(Decoded::Frame(Frame::Ping(ping))) => {
                        if ws.send(Message::text(Frame::Pong(ping).encode())).await.is_err() {
                            return Ended::Dropped("send failed".into());
                        }
                        continue;
                    }
                    Ok(Decoded::Frame(Frame::Pong(_) | Frame::Hello(_))) | Ok(Decoded::Unknown(_)) => continue,
                    Ok(Decoded::Frame(frame)) => Inbound::Frame(frame),
                    Err(e) => {
                        tracing::debug!(error = %e, "a frame from the relay that is not one");
                        continue;
                    }
                };
                if inbound.send(item).await.is_err() {
                    return Ended::Closed;
                }
            }
            _ = ping.tick() => {
                if heard.elapsed() > silence {
                    return Ended::Dropped("the relay went silent".into());
                }
                let frame = Frame::Ping(Ping { t: Some(crate::session::now_ms().into()) });
                if ws.send(Message::text(frame.encode())).await.is_err() {
                    return Ended::Dropped("send failed".into());
                }
            }
        }
    }
}

/// Sends what the outbox still holds.
async fn flush(ws: &mut Ws, outbox: &Outbox) {
    while outbox.len() > 0 {
        let Some(item) = outbox.pop().await else {
            break;
        };
        if ws.send(Message::text(item.line)).await.is_err() {
            break;
        }
    }
}

async fn continue_until_close(ws: &mut Ws, control: &mut mpsc::Receiver<Control>) {
    while let Some(message) = control.recv().await {
        match message {
            Control::Frame(frame) => {
                let _ = ws.send(Message::text(frame.to_string())).await;
            }
            Control::Close(done) => {
                let _ = ws.close(None).await;
                let _ = done.send(());
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_urls() {
        assert_eq!(
            socket_url("http://127.0.0.1:8787"),
            "ws://127.0.0.1:8787/socket"
        );
        assert_eq!(
            socket_url("https://relay.example/"),
            "wss://relay.example/socket"
        );
        assert_eq!(socket_url("ws://h:1/socket"), "ws://h:1/socket");
    }
}
