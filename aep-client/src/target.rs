//! An emitter's WebSocket that is also a control target (AEP-0004): the
//! [`Agent`] says `hello` as an emitter declaring its `control.accepts`,
//! emits its session's events, and runs [`aep::control::Target`] on every
//! command the relay routes to it. Nacks the target makes itself
//! (`unsupported`, `invalid`) and the recorded ack of a redelivered
//! command are written automatically; each new command arrives on
//! [`Commands`] for the caller to decide, once, with
//! [`accept`](Agent::accept) or [`reject`](Agent::reject), followed by its
//! outcome events ([`answered`](Agent::answered),
//! [`outcome`](Agent::outcome)).
//!
//! Acks and outcomes take the session's next positions from the same
//! [`SessionEmitter`] as the agent's own events, and are queued so they
//! are never dropped under backpressure (they count as `notice`).
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

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use aep::control::{Command, Outgoing, Received, Target};
use aep::frame::{ErrorCode, Frame, Hello, Role};
use aep::{Answer, Capture, Event, NackReason, Payload, Severity};
use futures_util::Stream;
use serde_json::json;
use tokio::sync::{mpsc, watch};

use crate::error::Error;
use crate::session::{Attrs, SessionEmitter};
use crate::socket::{hello, Handle, Inbound, Socket, SocketConfig};
use crate::transport::Flushed;

/// Commands waiting for the caller.
const COMMAND_QUEUE: usize = 256;

/// How an [`Agent`] connects.
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

struct State {
    session: SessionEmitter,
    target: Target,
}

/// An emitter connection that answers commands. Cloning shares it.
#[derive(Clone)]
pub struct Agent {
    state: Arc<Mutex<State>>,
    socket: Handle,
    link: watch::Receiver<Link>,
}

/// The new commands to decide, in arrival order; ends when the agent's
/// connection is refused for good or closed.
pub struct Commands {
    rx: mpsc::Receiver<Command>,
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
        let levels = ["none", "metadata", "redacted", "full"];
        let ceiling = session.ceiling();
        let capture: Vec<&str> = levels
            .iter()
            .copied()
            .filter(|l| l.parse::<Capture>().is_ok_and(|c| c <= ceiling))
            .collect();
        let mut capabilities = json!({"capture": capture, "control": target.capability()});
        if !config.emits.is_empty() {
            capabilities["emits"] = json!(config.emits);
        }
        let hello = hello(
            Role::Emitter,
            session.agent(),
            &config.instance,
            capabilities,
        );
        let mut socket_config = SocketConfig::new(config.relay, config.token, hello);
        socket_config.outbox = config.outbox;
        let (socket, inbound) = Socket::connect(socket_config).split();
        let state = Arc::new(Mutex::new(State { session, target }));
        let (link_tx, link) = watch::channel(Link::Connecting);
        let (commands_tx, rx) = mpsc::channel(COMMAND_QUEUE);
        tokio::spawn(read(
            inbound,
            state.clone(),
            socket.detached(),
            link_tx,
            commands_tx,
        ));
        (
            Agent {
                state,
                socket,
                link,
            },
            Commands { rx },
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stamps `payload` as the session's next event (`capture` as
    /// `attrs` claims it), lets the target [observe](Target::observe) it
    /// (form requests), and sends it.
    pub async fn emit(&self, payload: &Payload, attrs: Attrs) -> Result<Event, Error> {
        let event = {
            let mut state = self.lock();
            let event = state
                .session
                .event(payload, attrs)
                .map_err(|v| Error::Invalid(v.to_string()))?;
            state.target.observe(&event);
            event
        };
        self.send_event(&event).await?;
        Ok(event)
    }

    /// As [`emit`](Agent::emit), from full content at the session's
    /// ceiling ([`SessionEmitter::full`]).
    pub async fn emit_full(&self, payload: &Payload, attrs: Attrs) -> Result<Event, Error> {
        let event = {
            let mut state = self.lock();
            let event = state
                .session
                .full(payload, attrs)
                .map_err(|v| Error::Invalid(v.to_string()))?;
            state.target.observe(&event);
            event
        };
        self.send_event(&event).await?;
        Ok(event)
    }

    /// Stamps `payload` as an agent-scoped event (`agent.*`: a heartbeat,
    /// say; no session position) of this agent's identity, and sends it
    /// at `severity`.
    pub async fn emit_agent(&self, payload: &Payload, severity: Severity) -> Result<Event, Error> {
        let event = self
            .lock()
            .session
            .agent_event(payload)
            .map_err(|v| Error::Invalid(v.to_string()))?;
        let line = serde_json::to_string(&event).map_err(|e| Error::Invalid(e.to_string()))?;
        self.socket.send(line, severity).await?;
        Ok(event)
    }

    /// The session's id.
    pub fn session(&self) -> String {
        self.lock().session.session().to_owned()
    }

    /// Sends an event built elsewhere at its own severity.
    pub async fn send_event(&self, event: &Event) -> Result<(), Error> {
        let line = serde_json::to_string(event).map_err(|e| Error::Invalid(e.to_string()))?;
        self.socket.send(line, event.severity_or_default()).await
    }

    /// Accepts a command handed over on [`Commands`]: its
    /// `control.accepted`, recorded and sent.
    pub async fn accept(&self, command: &Command) -> Result<Event, Error> {
        let out = {
            let mut guard = self.lock();
            let State { session, target } = &mut *guard;
            target
                .accept(command.key(), &mut |_: &str| session.stamp())
                .map_err(|e| Error::Invalid(e.to_string()))?
        };
        self.write(out).await
    }

    /// Rejects a command handed over on [`Commands`]: its
    /// `control.rejected` with `reason` (`refused` is the agent's
    /// sovereign no) and `detail` (kept only at a `redacted` ceiling).
    pub async fn reject(
        &self,
        command: &Command,
        reason: NackReason,
        detail: Option<&str>,
    ) -> Result<Event, Error> {
        let out = {
            let mut guard = self.lock();
            let State { session, target } = &mut *guard;
            target
                .reject(command.key(), reason, detail, &mut |_: &str| {
                    session.stamp()
                })
                .map_err(|e| Error::Invalid(e.to_string()))?
        };
        self.write(out).await
    }

    /// The outcome of an accepted respond: `attention.answered` then
    /// `attention.resolved`, `cause`-linked to the command, sent.
    pub async fn answered(&self, command: &Command, answer: &Answer) -> Result<[Event; 2], Error> {
        let [answered, resolved] = {
            let mut guard = self.lock();
            let State { session, target } = &mut *guard;
            target
                .answered(command, answer, &mut |_: &str| session.stamp())
                .map_err(|e| Error::Invalid(e.to_string()))?
        };
        Ok([self.write(answered).await?, self.write(resolved).await?])
    }

    /// An outcome event of `command` (`run.cancelled`, a
    /// `progress.status`...), `cause`-linked to it, sent.
    pub async fn outcome(&self, command: &Command, payload: &Payload) -> Result<Event, Error> {
        let out = {
            let mut guard = self.lock();
            let State { session, target } = &mut *guard;
            target
                .outcome(command, payload, &mut |_: &str| session.stamp())
                .map_err(|e| Error::Invalid(e.to_string()))?
        };
        self.write(out).await
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
        self.socket.dropped()
    }

    /// Sends what is queued (within `wait`) and closes the connection.
    pub async fn close(&self, wait: Duration) -> Flushed {
        self.socket.close(wait).await
    }

    /// Sends a control line so it is never dropped.
    async fn write(&self, out: Outgoing) -> Result<Event, Error> {
        let event = out.event().clone();
        let severity = event.severity_or_default().max(Severity::Notice);
        self.socket.send(out.into_line(), severity).await?;
        Ok(event)
    }
}

/// Reads the connection: commands through the target, the rest to the
/// link state.
async fn read(
    mut inbound: mpsc::Receiver<Inbound>,
    state: Arc<Mutex<State>>,
    socket: Handle,
    link: watch::Sender<Link>,
    commands: mpsc::Sender<Command>,
) {
    while let Some(item) = inbound.recv().await {
        match item {
            Inbound::Event(line) => {
                let received = {
                    let mut guard = state.lock().unwrap_or_else(|e| e.into_inner());
                    let State { session, target } = &mut *guard;
                    target.receive_line(&line, &mut |_: &str| session.stamp())
                };
                match received {
                    Ok(Received::Decide(command)) => {
                        if commands.send(command).await.is_err() {
                            tracing::debug!(
                                "the commands stream is gone; a command waits undecided"
                            );
                        }
                    }
                    Ok(Received::Nack(out) | Received::Resend(out)) => {
                        let _ = socket.send(out.into_line(), Severity::Notice).await;
                    }
                    Ok(Received::InProgress) => {}
                    Err(e) => tracing::debug!(error = %e, "an inbound event that is no command"),
                }
            }
            Inbound::Connected(hello) => {
                let _ = link.send(Link::Connected(hello));
            }
            Inbound::Disconnected(why) => {
                let _ = link.send(Link::Disconnected(why));
            }
            Inbound::Failed(why) => {
                let _ = link.send(Link::Failed(why));
                return;
            }
            Inbound::Frame(Frame::Error(error)) => {
                tracing::warn!(code = %error.code, detail = ?error.detail, cause = ?error.cause, "the relay refused something this agent sent");
            }
            Inbound::Frame(_) => {}
        }
    }
}
