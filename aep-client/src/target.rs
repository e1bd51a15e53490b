//! An emitter's WebSocket that is also a control target (AEP-0004): an
//! [`Agent`] (one session) or [`Agents`] (many) says `hello` as an
//! emitter declaring its `control.accepts`, emits its sessions' events,
//! and runs [`aep::control::Target`] on every command the relay routes to
//! it. Nacks the target makes itself (`unsupported`, `invalid`) and the
//! recorded ack of a redelivered command are written automatically; each
//! new command arrives on the [`Commands`] of its session for the caller
//! to decide, once, with [`accept`](Agent::accept) or
//! [`reject`](Agent::reject) (a [`SessionHandle`]'s, on [`Agents`]),
//! followed by its outcome events ([`answered`](Agent::answered),
//! [`outcome`](Agent::outcome)).
//!
//! One connection serves many sessions: [`Agents::open`] connects with
//! none, and [`Agents::open_session`] adds one, handing back its
//! [`SessionHandle`] (its own `(epoch, seq)` counter, from its
//! [`SessionEmitter`]) and its own [`Commands`]. The connection claims
//! each session with that session's first positioned event (the relay
//! routes a command to the connection that claimed its session), and
//! after a reconnect it sends each open session's last event again, so
//! every claim is taken back. [`Agent::connect`] is the case of one
//! session, opened at once and served by the [`Agent`]'s own methods;
//! an [`Agents`] has no session of its own, so the session methods are
//! only a [`SessionHandle`]'s.
//!
//! A command is dispatched by its `session`:
//!
//! - to an open session: onto that session's [`Commands`], a bounded
//!   queue ([`AgentConfig::command_queue`]); past the bound the command
//!   is nacked `busy` (the sender may try again later), never waited on,
//!   so one session's slow caller holds up no other session;
//! - to a session closed on this connection (its handle dropped or
//!   [closed](SessionHandle::close)), or whose [`Commands`] is dropped:
//!   nacked `refused`, since the agent no longer serves it (the
//!   connection's claim lasts until the relay forgets it); so are the
//!   commands still queued when a [`Commands`] is dropped;
//! - to a session this connection never served: dropped with a log; the
//!   connection holds no position in it to place an ack at, and the
//!   sender's window runs out.
//!
//! Acks and outcomes take the command's session's next positions from the
//! same [`SessionEmitter`] as the session's own events, and are queued so
//! they are never dropped under backpressure (they count as `notice`).
//! Sessions open at once are bounded ([`AgentConfig::max_sessions`]):
//! past it [`open_session`](Agents::open_session) fails until one closes.
//! A session opened again after it closed here continues after the
//! positions its closed opening took (the refusals of its late commands),
//! so none repeats.
//!
//! ```no_run
//! # async fn run() -> Result<(), aep_client::Error> {
//! use aep::control::{Identity, Target};
//! use aep::{NackReason, Payload};
//! use aep_client::session::SessionEmitter;
//! use aep_client::target::{Agent, AgentConfig};
//!
//! let session = SessionEmitter::new("urn:aep:agent:demo", "demo", "s1", 0);
//! let target = Target::new(Identity::new("urn:aep:agent:demo", "demo"), ["control.cancel"])
//!     .map_err(|e| aep_client::Error::Invalid(e.to_string()))?;
//! let config = AgentConfig::new("http://127.0.0.1:8787", Some("token".into()), "host-a/1");
//! let (agent, mut commands) = Agent::connect(config, session, target);
//! while let Some(command) = commands.recv().await {
//!     match command.payload() {
//!         Payload::ControlCancel(_) => { agent.accept(&command).await?; }
//!         _ => { agent.reject(&command, NackReason::Refused, Some("not now")).await?; }
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! Many sessions on one connection:
//!
//! ```no_run
//! # async fn run() -> Result<(), aep_client::Error> {
//! use aep::control::{Identity, Target};
//! use aep::{Capture, Payload, SessionStarted};
//! use aep_client::session::{Attrs, SessionEmitter};
//! use aep_client::target::{AgentConfig, Agents};
//!
//! let target = Target::new(Identity::new("urn:aep:agent:demo", "demo"), ["control.cancel"])
//!     .map_err(|e| aep_client::Error::Invalid(e.to_string()))?;
//! let config = AgentConfig::new("http://127.0.0.1:8787", Some("token".into()), "host-a/1");
//! let agents = Agents::open(config, "demo", Capture::Metadata, target);
//! for id in ["s1", "s2"] {
//!     let emitter = SessionEmitter::new("urn:aep:agent:demo", "demo", id, 0);
//!     let (session, mut commands) = agents.open_session(emitter)?;
//!     session.emit(&Payload::SessionStarted(SessionStarted::new()), Attrs::default()).await?;
//!     tokio::spawn(async move {
//!         while let Some(command) = commands.recv().await {
//!             let _ = session.accept(&command).await;
//!         }
//!     });
//! }
//! # Ok(()) }
//! ```

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use aep::control::{Command, Outgoing, Received, Stamp, Stamper, Target, TargetError};
use aep::frame::{ErrorCode, Frame, Hello, Role};
use aep::{Answer, Capture, Event, NackReason, Payload, Severity};
use futures_util::Stream;
use serde_json::json;
use tokio::sync::{mpsc, watch};

use crate::error::Error;
use crate::session::{Attrs, SessionEmitter};
use crate::socket::{hello, Handle, Inbound, Socket, SocketConfig};
use crate::transport::Flushed;

/// How an [`Agent`] or [`Agents`] connects.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The relay's base URL.
    pub relay: String,
    /// The bearer token (AEP-0004 §4.1: commands reach only authenticated
    /// connections).
    pub token: Option<String>,
    /// `hello.identity.instance`: this process (`host/pid`).
    pub instance: String,
    /// `hello.capabilities.emits`: the categories it emits (a routing
    /// hint).
    pub emits: Vec<String>,
    /// Lines the outbox holds (default 4 096).
    pub outbox: usize,
    /// Sessions open on the connection at once (default 1 024); closed
    /// sessions remembered to refuse their late commands are bounded the
    /// same.
    pub max_sessions: usize,
    /// Commands waiting undecided in one session's [`Commands`] (default
    /// 256); one more is nacked `busy`.
    pub command_queue: usize,
}

impl AgentConfig {
    /// A configuration with the defaults.
    pub fn new(
        relay: impl Into<String>,
        token: Option<String>,
        instance: impl Into<String>,
    ) -> AgentConfig {
        AgentConfig {
            relay: relay.into(),
            token,
            instance: instance.into(),
            emits: Vec::new(),
            outbox: 4096,
            max_sessions: 1024,
            command_queue: 256,
        }
    }
}

/// The state of the agent's connection.
#[derive(Debug, Clone, PartialEq)]
pub enum Link {
    /// Not connected yet, or reconnecting.
    Connecting,
    /// Connected; the relay's `hello`.
    Connected(Hello),
    /// Dropped, reconnecting; why.
    Disconnected(String),
    /// Refused for good (a bad token, a version); nothing more follows.
    Failed(String),
}

/// A session's positions, and its own target when it has one (else the
/// connection's answers for it).
struct Place {
    emitter: SessionEmitter,
    target: Option<Target>,
}

/// A session served on the connection.
struct Open {
    place: Place,
    commands: mpsc::Sender<Command>,
    /// The last positioned event sent in the session: its claim, sent
    /// again after a reconnect.
    last: Option<String>,
    /// Which opening this is (a session closed and opened again is a new
    /// one; the old handle's drop must not close it).
    opening: u64,
}

struct State {
    target: Target,
    open: HashMap<String, Open>,
    /// Sessions closed here, newest last: their late commands are
    /// refused in their own positions.
    closed: VecDeque<Place>,
    openings: u64,
}

impl State {
    /// Whether `session` is open or closed here.
    fn knows(&self, session: &str) -> bool {
        self.open.contains_key(session)
            || self.closed.iter().any(|p| p.emitter.session() == session)
    }

    /// Runs `f` on the target with a stamper of `session`'s positions.
    fn stamped<T>(
        &mut self,
        session: &str,
        f: impl FnOnce(&mut Target, &mut Stamps<'_>) -> Result<T, TargetError>,
    ) -> Result<T, Error> {
        let State {
            target,
            open,
            closed,
            ..
        } = self;
        let place = match open.get_mut(session) {
            Some(open) => &mut open.place,
            None => closed
                .iter_mut()
                .find(|p| p.emitter.session() == session)
                .ok_or_else(|| Error::Invalid(format!("session `{session}` is not served here")))?,
        };
        let target = place.target.as_mut().unwrap_or(target);
        f(target, &mut Stamps(&mut place.emitter)).map_err(|e| Error::Invalid(e.to_string()))
    }

    /// Remembers `line` as the claim of its session when it is a
    /// positioned event of an open one.
    fn sent(&mut self, event: &Event, line: &str) {
        if event.seq.is_none() {
            return;
        }
        if let Some(open) = event.session.as_ref().and_then(|s| self.open.get_mut(s)) {
            open.last = Some(line.to_owned());
        }
    }
}

/// The positions of one session, for the target's answers in it.
struct Stamps<'a>(&'a mut SessionEmitter);

impl Stamper for Stamps<'_> {
    fn stamp(&mut self, _: &str) -> Stamp {
        self.0.stamp()
    }
}

struct Shared {
    state: Mutex<State>,
    max_sessions: usize,
    command_queue: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Closes `session` if it is still the same opening.
    fn close(&self, session: &str, opening: u64) {
        let mut state = self.lock();
        if state.open.get(session).map(|o| o.opening) != Some(opening) {
            return;
        }
        let Some(open) = state.open.remove(session) else {
            return;
        };
        state.closed.retain(|p| p.emitter.session() != session);
        state.closed.push_back(open.place);
        while state.closed.len() > self.max_sessions {
            state.closed.pop_front();
        }
    }
}

/// Closes its session when the last clone of its handle goes.
struct Opening {
    shared: Arc<Shared>,
    session: String,
    opening: u64,
}

impl Drop for Opening {
    fn drop(&mut self) {
        self.shared.close(&self.session, self.opening);
    }
}

/// What an [`Agents`] and its [`SessionHandle`]s share: the sessions and
/// the socket.
#[derive(Clone)]
struct Core {
    shared: Arc<Shared>,
    socket: Handle,
}

/// An emitter connection that answers commands, for the one session
/// given to [`connect`](Agent::connect): its events
/// ([`emit`](Agent::emit), [`emit_full`](Agent::emit_full),
/// [`emit_agent`](Agent::emit_agent)) and the answers to its commands
/// ([`accept`](Agent::accept), [`reject`](Agent::reject),
/// [`answered`](Agent::answered), [`outcome`](Agent::outcome)). The
/// session stays open while a clone of the agent lives. Cloning shares
/// it. For many sessions on one connection, see [`Agents`].
#[derive(Clone)]
pub struct Agent {
    connection: Agents,
    session: SessionHandle,
}

/// An emitter connection that answers commands, for many sessions: it
/// connects serving none ([`open`](Agents::open)), and each session is
/// added with [`open_session`](Agents::open_session) (or
/// [`open_session_as`](Agents::open_session_as)) and served through its
/// [`SessionHandle`]. Cloning shares it.
#[derive(Clone)]
pub struct Agents {
    core: Core,
    link: watch::Receiver<Link>,
}

/// One session served on an [`Agents`] connection: its events, stamped
/// with its own `(epoch, seq)`, and the answers to its commands. Cloning
/// shares it; when the last clone is dropped, or on
/// [`close`](SessionHandle::close), the session closes: its
/// [`Commands`] ends, and a command that still comes for it is nacked
/// `refused`.
#[derive(Clone)]
pub struct SessionHandle {
    core: Core,
    opening: Arc<Opening>,
}

/// The new commands of one session to decide, in arrival order; ends when
/// the session closes, or when the agent's connection is refused for good
/// or closed.
pub struct Commands {
    rx: mpsc::Receiver<Command>,
    /// To refuse what is left in the queue when it is dropped.
    shared: Arc<Shared>,
    socket: Handle,
}

impl Drop for Commands {
    /// The commands still queued will never be decided: each is nacked
    /// `refused` in its session (else it would wait undecided for good,
    /// its redeliveries answered by nothing).
    fn drop(&mut self) {
        self.rx.close();
        while let Ok(command) = self.rx.try_recv() {
            let detail = "nobody takes this session's commands any more";
            let out = {
                let mut state = self.shared.lock();
                let out = state.stamped(command.session(), |target, stamp| {
                    target.reject(command.key(), NackReason::Refused, Some(detail), stamp)
                });
                if let Ok(out) = &out {
                    state.sent(out.event(), out.line());
                }
                out
            };
            match out {
                Ok(out) => {
                    if self
                        .socket
                        .try_send(out.into_line(), Severity::Notice)
                        .is_err()
                    {
                        tracing::warn!(command = %command.key(), "cannot send the refusal of a queued command");
                    }
                }
                Err(e) => {
                    tracing::warn!(command = %command.key(), error = %e, "cannot nack a queued command")
                }
            }
        }
    }
}

impl Commands {
    /// The next command; `None` at the end.
    pub async fn recv(&mut self) -> Option<Command> {
        self.rx.recv().await
    }
}

impl Stream for Commands {
    type Item = Command;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Command>> {
        self.rx.poll_recv(cx)
    }
}

impl Agent {
    /// Connects in the background as an emitter for `session`, declaring
    /// `target`'s `accepts` and ack window in its `hello`.
    pub fn connect(
        config: AgentConfig,
        session: SessionEmitter,
        target: Target,
    ) -> (Agent, Commands) {
        let connection = Agents::open(config, session.agent(), session.ceiling(), target);
        let (session, commands) = connection
            .core
            .open_session(session, None)
            .expect("the first session of a new connection opens");
        (
            Agent {
                connection,
                session,
            },
            commands,
        )
    }

    /// Stamps `payload` as the session's next event (`capture` as
    /// `attrs` claims it), lets the target [observe](Target::observe) it
    /// (form requests), and sends it.
    pub async fn emit(&self, payload: &Payload, attrs: Attrs) -> Result<Event, Error> {
        self.session.emit(payload, attrs).await
    }

    /// As [`emit`](Agent::emit), from full content at the session's
    /// ceiling ([`SessionEmitter::full`]).
    pub async fn emit_full(&self, payload: &Payload, attrs: Attrs) -> Result<Event, Error> {
        self.session.emit_full(payload, attrs).await
    }

    /// Stamps `payload` as an agent-scoped event (`agent.*`: a heartbeat,
    /// say; no session position) of this agent's identity, and sends it
    /// at `severity`.
    pub async fn emit_agent(&self, payload: &Payload, severity: Severity) -> Result<Event, Error> {
        self.session.emit_agent(payload, severity).await
    }

    /// The session's id.
    pub fn session(&self) -> &str {
        self.session.session()
    }

    /// Sends an event built elsewhere at its own severity.
    pub async fn send_event(&self, event: &Event) -> Result<(), Error> {
        self.session.send_event(event).await
    }

    /// Accepts a command handed over on [`Commands`]: its
    /// `control.accepted`, in the command's session, recorded and sent.
    pub async fn accept(&self, command: &Command) -> Result<Event, Error> {
        self.session.accept(command).await
    }

    /// Rejects a command handed over on [`Commands`]: its
    /// `control.rejected`, in the command's session, with `reason`
    /// (`refused` is the agent's sovereign no) and `detail` (kept only at
    /// a `redacted` ceiling).
    pub async fn reject(
        &self,
        command: &Command,
        reason: NackReason,
        detail: Option<&str>,
    ) -> Result<Event, Error> {
        self.session.reject(command, reason, detail).await
    }

    /// The outcome of an accepted respond: `attention.answered` then
    /// `attention.resolved`, `cause`-linked to the command, sent.
    pub async fn answered(&self, command: &Command, answer: &Answer) -> Result<[Event; 2], Error> {
        self.session.answered(command, answer).await
    }

    /// An outcome event of `command` (`run.cancelled`, a
    /// `progress.status`...), `cause`-linked to it, sent.
    pub async fn outcome(&self, command: &Command, payload: &Payload) -> Result<Event, Error> {
        self.session.outcome(command, payload).await
    }

    /// As [`Agents::link`].
    pub fn link(&self) -> Link {
        self.connection.link()
    }

    /// As [`Agents::links`].
    pub fn links(&self) -> watch::Receiver<Link> {
        self.connection.links()
    }

    /// As [`Agents::connected`].
    pub async fn connected(&self, wait: Duration) -> Result<Hello, Error> {
        self.connection.connected(wait).await
    }

    /// As [`Agents::dropped`].
    pub fn dropped(&self) -> u64 {
        self.connection.dropped()
    }

    /// As [`Agents::close`].
    pub async fn close(&self, wait: Duration) -> Flushed {
        self.connection.close(wait).await
    }
}

impl Agents {
    /// Connects in the background as an emitter of `agent` serving no
    /// session yet, declaring `target`'s `accepts` and ack window, and the
    /// capture levels up to `ceiling`, in its `hello`. Sessions are added
    /// with [`open_session`](Agents::open_session); their ceilings should
    /// not pass `ceiling`.
    pub fn open(config: AgentConfig, agent: &str, ceiling: Capture, target: Target) -> Agents {
        let levels = ["none", "metadata", "redacted", "full"];
        let capture: Vec<&str> = levels
            .iter()
            .copied()
            .filter(|l| l.parse::<Capture>().is_ok_and(|c| c <= ceiling))
            .collect();
        let mut capabilities = json!({"capture": capture, "control": target.capability()});
        if !config.emits.is_empty() {
            capabilities["emits"] = json!(config.emits);
        }
        let hello = hello(Role::Emitter, agent, &config.instance, capabilities);
        let mut socket_config = SocketConfig::new(config.relay, config.token, hello);
        socket_config.outbox = config.outbox;
        let (socket, inbound) = Socket::connect(socket_config).split();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                target,
                open: HashMap::new(),
                closed: VecDeque::new(),
                openings: 0,
            }),
            max_sessions: config.max_sessions.max(1),
            command_queue: config.command_queue.max(1),
        });
        let (link_tx, link) = watch::channel(Link::Connecting);
        tokio::spawn(read(inbound, shared.clone(), socket.detached(), link_tx));
        Agents {
            core: Core { shared, socket },
            link,
        }
    }

    /// Serves `session` on this connection from now on: its handle (its
    /// events, stamped from `session`) and its commands. The relay routes
    /// the session's commands here once its first positioned event is
    /// sent. Fails with [`Error::Invalid`] when the session is open here
    /// already, or when [`AgentConfig::max_sessions`] are.
    pub fn open_session(
        &self,
        session: SessionEmitter,
    ) -> Result<(SessionHandle, Commands), Error> {
        self.core.open_session(session, None)
    }

    /// As [`open_session`](Agents::open_session), with the session's own
    /// `target`: its acks and outcomes carry that target's identity
    /// (`source`, `agent`) and its commands are checked against that
    /// target's `accepts`, rather than the connection's target's. For
    /// sessions whose identities differ (a source per session, say) on
    /// one connection. The relay still refuses on the connection's behalf
    /// the types the connection's `hello` does not declare.
    pub fn open_session_as(
        &self,
        session: SessionEmitter,
        target: Target,
    ) -> Result<(SessionHandle, Commands), Error> {
        self.core.open_session(session, Some(target))
    }

    /// The sessions open on the connection now, in no order.
    pub fn sessions(&self) -> Vec<String> {
        self.core.shared.lock().open.keys().cloned().collect()
    }

    /// The connection's state now.
    pub fn link(&self) -> Link {
        self.link.borrow().clone()
    }

    /// The connection's state as it changes (connected, dropped, refused
    /// for good), to watch: [`watch::Receiver::changed`] wakes at each.
    pub fn links(&self) -> watch::Receiver<Link> {
        self.link.clone()
    }

    /// Waits until the connection is up (or refused for good), at most
    /// `wait`.
    pub async fn connected(&self, wait: Duration) -> Result<Hello, Error> {
        let mut link = self.link.clone();
        let outcome = tokio::time::timeout(wait, async {
            loop {
                match link.borrow_and_update().clone() {
                    Link::Connected(hello) => return Ok(hello),
                    Link::Failed(why) => {
                        return Err(Error::Refused {
                            code: ErrorCode::Other("connect".into()),
                            detail: why,
                        })
                    }
                    _ => {}
                }
                if link.changed().await.is_err() {
                    return Err(Error::Closed);
                }
            }
        })
        .await;
        outcome.unwrap_or(Err(Error::Timeout))
    }

    /// Lines dropped from the outbox (`debug`/`info` only).
    pub fn dropped(&self) -> u64 {
        self.core.socket.dropped()
    }

    /// Sends what is queued (within `wait`) and closes the connection.
    pub async fn close(&self, wait: Duration) -> Flushed {
        self.core.socket.close(wait).await
    }
}

impl SessionHandle {
    /// The session's id.
    pub fn session(&self) -> &str {
        &self.opening.session
    }

    /// Stamps `payload` as the session's next event (`capture` as
    /// `attrs` claims it), lets the target [observe](Target::observe) it
    /// (form requests), and sends it. [`Error::Closed`] once the session
    /// is closed.
    pub async fn emit(&self, payload: &Payload, attrs: Attrs) -> Result<Event, Error> {
        self.core.emit(self.session(), payload, attrs, false).await
    }

    /// As [`emit`](SessionHandle::emit), from full content at the
    /// session's ceiling ([`SessionEmitter::full`]).
    pub async fn emit_full(&self, payload: &Payload, attrs: Attrs) -> Result<Event, Error> {
        self.core.emit(self.session(), payload, attrs, true).await
    }

    /// Stamps `payload` as an agent-scoped event (`agent.*`, no session
    /// position) of the session's identity, and sends it at `severity`.
    pub async fn emit_agent(&self, payload: &Payload, severity: Severity) -> Result<Event, Error> {
        self.core
            .emit_agent(self.session(), payload, severity)
            .await
    }

    /// Sends an event built elsewhere at its own severity.
    pub async fn send_event(&self, event: &Event) -> Result<(), Error> {
        self.core.send_event(event).await
    }

    /// As [`Agent::accept`].
    pub async fn accept(&self, command: &Command) -> Result<Event, Error> {
        self.core.accept(command).await
    }

    /// As [`Agent::reject`].
    pub async fn reject(
        &self,
        command: &Command,
        reason: NackReason,
        detail: Option<&str>,
    ) -> Result<Event, Error> {
        self.core.reject(command, reason, detail).await
    }

    /// As [`Agent::answered`].
    pub async fn answered(&self, command: &Command, answer: &Answer) -> Result<[Event; 2], Error> {
        self.core.answered(command, answer).await
    }

    /// As [`Agent::outcome`].
    pub async fn outcome(&self, command: &Command, payload: &Payload) -> Result<Event, Error> {
        self.core.outcome(command, payload).await
    }

    /// Closes the session for every clone of this handle: its
    /// [`Commands`] ends; commands it had not decided can still be
    /// answered, and later ones are nacked `refused`.
    pub fn close(&self) {
        self.core
            .shared
            .close(&self.opening.session, self.opening.opening);
    }
}

impl Core {
    fn open_session(
        &self,
        session: SessionEmitter,
        target: Option<Target>,
    ) -> Result<(SessionHandle, Commands), Error> {
        let id = session.session().to_owned();
        let (tx, rx) = mpsc::channel(self.shared.command_queue);
        let opening = {
            let mut state = self.shared.lock();
            if state.open.contains_key(&id) {
                return Err(Error::Invalid(format!(
                    "session `{id}` is open on this connection already"
                )));
            }
            if state.open.len() >= self.shared.max_sessions {
                return Err(Error::Invalid(format!(
                    "{} sessions are open on this connection, the most it serves",
                    state.open.len()
                )));
            }
            let session = match state.closed.iter().find(|p| p.emitter.session() == id) {
                // A target of its own remembers which commands it decided;
                // a session served by one, or to be, opened again under
                // another would acknowledge a retransmitted command twice.
                Some(old) if old.target.is_some() || target.is_some() => {
                    return Err(Error::Invalid(format!(
                        "session `{id}` was closed on this connection and a target of its own serves it (then or now): it cannot be opened again here, or a command it decided could be acknowledged twice"
                    )));
                }
                Some(old) => continued(session, &old.emitter)?,
                None => session,
            };
            state.closed.retain(|p| p.emitter.session() != id);
            state.openings += 1;
            let opening = state.openings;
            state.open.insert(
                id.clone(),
                Open {
                    place: Place {
                        emitter: session,
                        target,
                    },
                    commands: tx,
                    last: None,
                    opening,
                },
            );
            opening
        };
        let opening = Arc::new(Opening {
            shared: self.shared.clone(),
            session: id,
            opening,
        });
        Ok((
            SessionHandle {
                core: self.clone(),
                opening,
            },
            Commands {
                rx,
                shared: self.shared.clone(),
                socket: self.socket.detached(),
            },
        ))
    }

    async fn emit(
        &self,
        session: &str,
        payload: &Payload,
        attrs: Attrs,
        full: bool,
    ) -> Result<Event, Error> {
        let (event, line) = {
            let mut state = self.shared.lock();
            let State { target, open, .. } = &mut *state;
            let open = open.get_mut(session).ok_or(Error::Closed)?;
            let event = match full {
                true => open.place.emitter.full(payload, attrs),
                false => open.place.emitter.event(payload, attrs),
            }
            .map_err(|v| Error::Invalid(v.to_string()))?;
            let line = serde_json::to_string(&event).map_err(|e| Error::Invalid(e.to_string()))?;
            open.last = Some(line.clone());
            open.place.target.as_mut().unwrap_or(target).observe(&event);
            (event, line)
        };
        self.socket.send(line, event.severity_or_default()).await?;
        Ok(event)
    }

    async fn emit_agent(
        &self,
        session: &str,
        payload: &Payload,
        severity: Severity,
    ) -> Result<Event, Error> {
        let event = {
            let mut state = self.shared.lock();
            let open = state.open.get_mut(session).ok_or(Error::Closed)?;
            open.place
                .emitter
                .agent_event(payload)
                .map_err(|v| Error::Invalid(v.to_string()))?
        };
        let line = serde_json::to_string(&event).map_err(|e| Error::Invalid(e.to_string()))?;
        self.socket.send(line, severity).await?;
        Ok(event)
    }

    async fn send_event(&self, event: &Event) -> Result<(), Error> {
        let line = serde_json::to_string(event).map_err(|e| Error::Invalid(e.to_string()))?;
        self.shared.lock().sent(event, &line);
        self.socket.send(line, event.severity_or_default()).await
    }

    async fn accept(&self, command: &Command) -> Result<Event, Error> {
        let out = self
            .shared
            .lock()
            .stamped(command.session(), |target, stamp| {
                target.accept(command.key(), stamp)
            })?;
        self.write(out).await
    }

    async fn reject(
        &self,
        command: &Command,
        reason: NackReason,
        detail: Option<&str>,
    ) -> Result<Event, Error> {
        let out = self
            .shared
            .lock()
            .stamped(command.session(), |target, stamp| {
                target.reject(command.key(), reason, detail, stamp)
            })?;
        self.write(out).await
    }

    async fn answered(&self, command: &Command, answer: &Answer) -> Result<[Event; 2], Error> {
        let [answered, resolved] = self
            .shared
            .lock()
            .stamped(command.session(), |target, stamp| {
                target.answered(command, answer, stamp)
            })?;
        Ok([self.write(answered).await?, self.write(resolved).await?])
    }

    async fn outcome(&self, command: &Command, payload: &Payload) -> Result<Event, Error> {
        let out = self
            .shared
            .lock()
            .stamped(command.session(), |target, stamp| {
                target.outcome(command, payload, stamp)
            })?;
        self.write(out).await
    }

    /// Sends a control line so it is never dropped.
    async fn write(&self, out: Outgoing) -> Result<Event, Error> {
        let event = out.event().clone();
        let severity = event.severity_or_default().max(Severity::Notice);
        self.shared.lock().sent(&event, out.line());
        self.socket.send(out.into_line(), severity).await?;
        Ok(event)
    }
}

/// `session` opened again after `old`, its closed opening, which may have
/// taken positions its caller never saw (the refusals of late commands):
/// its positions continue after `old`'s, never on them; an earlier epoch
/// fails.
fn continued(session: SessionEmitter, old: &SessionEmitter) -> Result<SessionEmitter, Error> {
    if session.epoch() < old.epoch() {
        return Err(Error::Invalid(format!(
            "session `{}` opened again at epoch {} after epoch {}: its positions would go back",
            session.session(),
            session.epoch(),
            old.epoch()
        )));
    }
    if session.epoch() == old.epoch() && session.next_seq() < old.next_seq() {
        let next = old.next_seq();
        return Ok(session.starting_at(next));
    }
    Ok(session)
}

/// Reads the connection: commands through the target to their sessions,
/// the rest to the link state.
async fn read(
    mut inbound: mpsc::Receiver<Inbound>,
    shared: Arc<Shared>,
    socket: Handle,
    link: watch::Sender<Link>,
) {
    let mut connections = 0u64;
    while let Some(item) = inbound.recv().await {
        match item {
            Inbound::Event(line) => {
                for out in dispatch(&shared, &line) {
                    let _ = socket.send(out, Severity::Notice).await;
                }
            }
            Inbound::Connected(hello) => {
                connections += 1;
                if connections > 1 {
                    // Claim every open session again: its last event,
                    // which the relay's buffer deduplicates.
                    let claims: Vec<String> = shared
                        .lock()
                        .open
                        .values()
                        .filter_map(|o| o.last.clone())
                        .collect();
                    for line in claims {
                        let _ = socket.send(line, Severity::Notice).await;
                    }
                }
                let _ = link.send(Link::Connected(hello));
            }
            Inbound::Disconnected(why) => {
                let _ = link.send(Link::Disconnected(why));
            }
            Inbound::Failed(why) => {
                let _ = link.send(Link::Failed(why));
                // Every session's commands end.
                shared.lock().open.clear();
                return;
            }
            Inbound::Frame(Frame::Error(error)) => {
                tracing::warn!(code = %error.code, detail = ?error.detail, cause = ?error.cause, "the relay refused something this agent sent");
            }
            Inbound::Frame(_) => {}
        }
    }
}

/// One inbound event through the target to its session; the lines to
/// send back (nacks, recorded acks).
fn dispatch(shared: &Shared, line: &str) -> Vec<String> {
    // The session first, to stamp the target's answers in it.
    let addressed = serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .and_then(|v| Some(v.get("session")?.as_str()?.to_owned()));
    let session = match addressed {
        Some(session) => session,
        None => {
            tracing::debug!("an inbound event with no session: no command for this agent");
            return Vec::new();
        }
    };
    let mut guard = shared.lock();
    let state = &mut *guard;
    if !state.knows(&session) {
        tracing::debug!(%session, "an event for a session this connection does not serve: dropped");
        return Vec::new();
    }
    let received = state.stamped(&session, |target, stamp| target.receive_line(line, stamp));
    let command = match received {
        Ok(Received::Decide(command)) => command,
        Ok(Received::Nack(out) | Received::Resend(out)) => {
            state.sent(out.event(), out.line());
            return vec![out.into_line()];
        }
        Ok(Received::InProgress) => return Vec::new(),
        Err(e) => {
            tracing::debug!(error = %e, "an inbound event that is no command");
            return Vec::new();
        }
    };
    let (command, reason, detail) = match state.open.get(&session) {
        Some(open) => match open.commands.try_send(command) {
            Ok(()) => return Vec::new(),
            Err(mpsc::error::TrySendError::Full(command)) => (
                command,
                NackReason::Busy,
                format!(
                    "{} commands of this session wait undecided",
                    shared.command_queue
                ),
            ),
            Err(mpsc::error::TrySendError::Closed(command)) => (
                command,
                NackReason::Refused,
                "nobody takes this session's commands any more".to_owned(),
            ),
        },
        None => (
            command,
            NackReason::Refused,
            "the session is closed on this connection".to_owned(),
        ),
    };
    tracing::debug!(%session, command = %command.key(), %reason, "{detail}");
    match state.stamped(&session, |target, stamp| {
        target.reject(command.key(), reason, Some(&detail), stamp)
    }) {
        Ok(out) => {
            state.sent(out.event(), out.line());
            vec![out.into_line()]
        }
        Err(e) => {
            tracing::warn!(%session, error = %e, "cannot nack a command");
            Vec::new()
        }
    }
}
