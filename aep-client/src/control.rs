//! The control sender (AEP-0004) over a relay's WebSocket: a
//! [`ControlClient`] says `hello` as a consumer, subscribes to the acks of
//! each session it commands before its first command there (so an ack
//! cannot slip past), and settles every command with exactly one
//! [`Outcome`](aep::control::Outcome) through [`aep::control::Sender`]: the target's ack or nack,
//! a relay's refusal on the target's behalf, or a local timeout after the
//! retries (each the same bytes, the same id).
//!
//! ```no_run
//! # async fn run() -> Result<(), aep_client::Error> {
//! use aep::control::{Address, Identity, Outcome};
//! use aep::control_cancel::Scope;
//! use aep::{ControlCancel, Payload};
//! use aep_client::control::ControlClient;
//!
//! let client = ControlClient::connect(
//!     "http://127.0.0.1:8787",
//!     Some("secret"),
//!     Identity::new("aep://host-a/agent/console", "console"),
//! )
//! .await?;
//! let cancel = Payload::ControlCancel(ControlCancel::new(Scope::Session));
//! let settled = client.send(&Address::session("s1"), &cancel).await?;
//! match settled.outcome {
//!     Outcome::Accepted(_) => println!("{} accepted", settled.command),
//!     Outcome::Rejected { reason, detail, .. } => println!("nack {reason:?}: {detail:?}"),
//!     Outcome::Refused { code, .. } => println!("the relay refused: {code}"),
//!     Outcome::Timeout => println!("no answer"),
//!     _ => {}
//! }
//! # Ok(()) }
//! ```

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use aep::control::{Address, Identity, Sender, Settled};
use aep::frame::{Hello, Role, RosterEntry};
use aep::{Answer, Event, Payload};
use serde_json::json;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::error::Error;
use crate::socket;

mod link;

use link::Link;

/// How a [`ControlClient`] connects and retries.
#[derive(Debug, Clone)]
pub struct ControlConfig {
    /// The relay's base URL.
    pub relay: String,
    /// The bearer token (a relay routes commands only on authenticated
    /// connections, AEP-0004 §4.1).
    pub token: Option<String>,
    /// The sender's `source` and `agent`.
    pub identity: Identity,
    /// `hello.identity.instance`.
    pub instance: String,
    /// The ack window after each attempt (default 10 000 ms).
    pub window_ms: u64,
    /// The pause between attempts and the retries after the first
    /// (default 2 000 ms, 2).
    pub retries: (u64, u32),
    /// How long a subscription or a roster may take to be answered
    /// (default 10 s).
    pub answer_timeout: Duration,
}

impl ControlConfig {
    /// The defaults.
    pub fn new(
        relay: impl Into<String>,
        token: Option<String>,
        identity: Identity,
    ) -> ControlConfig {
        ControlConfig {
            relay: relay.into(),
            token,
            instance: format!("{}/{}", identity.agent, std::process::id()),
            identity,
            window_ms: aep::control::DEFAULT_ACK_WINDOW_MS,
            retries: (2_000, 2),
            answer_timeout: Duration::from_secs(10),
        }
    }
}

enum What {
    Command(Address, Box<Payload>),
    Respond(Box<Event>, Answer),
    Event(Box<Event>),
}

type SendReply = oneshot::Sender<Result<Settled, Error>>;
type RosterReply = oneshot::Sender<Result<Vec<RosterEntry>, Error>>;

enum Request {
    Send(What, SendReply),
    Roster(RosterReply),
}

/// A connected control sender. Dropping it closes the connection.
pub struct ControlClient {
    requests: mpsc::Sender<Request>,
    hello: Hello,
    task: JoinHandle<()>,
}

impl ControlClient {
    /// Connects to `relay` as `identity` with the default window and
    /// retries.
    pub async fn connect(
        relay: &str,
        token: Option<&str>,
        identity: Identity,
    ) -> Result<ControlClient, Error> {
        ControlClient::connect_with(ControlConfig::new(
            relay,
            token.map(str::to_owned),
            identity,
        ))
        .await
    }

    /// Connects with `config`: the WebSocket, then the `hello` exchange.
    pub async fn connect_with(config: ControlConfig) -> Result<ControlClient, Error> {
        let mut ws = socket::open(&config.relay, config.token.as_deref()).await?;
        let hello = socket::hello(
            Role::Consumer,
            &config.identity.agent,
            &config.instance,
            json!({"filters": ["attr-match"]}),
        );
        let relay_hello = socket::greet(&mut ws, &hello).await?;
        let sender = Sender::new(config.identity.clone())
            .with_window_ms(config.window_ms)
            .with_retries(config.retries.0, config.retries.1);
        let (requests, rx) = mpsc::channel(64);
        let roster = relay_hello.declares("roster");
        let task = tokio::spawn(
            Link {
                ws,
                sender,
                timeout: config.answer_timeout,
                roster,
                subscribed: HashSet::new(),
                waiting: HashMap::new(),
                rosters: HashMap::new(),
                serial: 0,
            }
            .run(rx),
        );
        Ok(ControlClient {
            requests,
            hello: relay_hello,
            task,
        })
    }

    /// The relay's `hello` (its capabilities: `roster`, `replay`...).
    pub fn relay_hello(&self) -> &Hello {
        &self.hello
    }

    async fn ask(&self, what: What) -> Result<Settled, Error> {
        let (reply, answer) = oneshot::channel();
        self.requests
            .send(Request::Send(what, reply))
            .await
            .map_err(|_| Error::Closed)?;
        answer.await.map_err(|_| Error::Closed)?
    }

    /// Sends a command carrying `payload` to `to` and waits for its one
    /// outcome (at most the window times the attempts).
    pub async fn send(&self, to: &Address, payload: &Payload) -> Result<Settled, Error> {
        self.ask(What::Command(to.clone(), Box::new(payload.clone())))
            .await
    }

    /// Answers an `attention.requested` (`control.attention.respond` with
    /// `subject` and `cause` = its id) and waits for the outcome.
    pub async fn respond(&self, request: &Event, answer: Answer) -> Result<Settled, Error> {
        self.ask(What::Respond(Box::new(request.clone()), answer))
            .await
    }

    /// Sends a command built by the caller (a vendor
    /// `x.{vendor}.control.{verb}`) and waits for its outcome.
    pub async fn send_event(&self, command: Event) -> Result<Settled, Error> {
        self.ask(What::Event(Box::new(command))).await
    }

    /// The relay's roster (AEP-0003 §4.1): one entry per live emitter
    /// claim, declarations verbatim. Refused locally when the relay did
    /// not advertise `roster` (it would never answer).
    pub async fn roster(&self) -> Result<Vec<RosterEntry>, Error> {
        let (reply, answer) = oneshot::channel();
        self.requests
            .send(Request::Roster(reply))
            .await
            .map_err(|_| Error::Closed)?;
        answer.await.map_err(|_| Error::Closed)?
    }

    /// Closes the connection; pending commands end with [`Error::Closed`].
    pub fn close(self) {}
}

impl Drop for ControlClient {
    fn drop(&mut self) {
        self.task.abort();
    }
}
