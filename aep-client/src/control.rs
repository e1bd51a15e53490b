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

use aep::control::{Address, Due, Identity, Outgoing, Sender, Settled};
use aep::{Answer, Event, Payload};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use crate::error::Error;
use crate::session::now_ms;
use crate::socket::{self, Ws};

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
type RosterReply = oneshot::Sender<Result<Vec<Value>, Error>>;

enum Request {
    Send(What, SendReply),
    Roster(RosterReply),
}

/// A connected control sender. Dropping it closes the connection.
pub struct ControlClient {
    requests: mpsc::Sender<Request>,
    hello: Value,
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
            "consumer",
            &config.identity.agent,
            &config.instance,
            json!({"filters": ["attr-match"]}),
        );
        let relay_hello = socket::greet(&mut ws, &hello).await?;
        let sender = Sender::new(config.identity.clone())
            .with_window_ms(config.window_ms)
            .with_retries(config.retries.0, config.retries.1);
        let (requests, rx) = mpsc::channel(64);
        let roster = relay_hello["capabilities"].get("roster").is_some();
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
    pub fn relay_hello(&self) -> &Value {
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
    pub async fn roster(&self) -> Result<Vec<Value>, Error> {
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

/// The connection task's state.
struct Link {
    ws: Ws,
    sender: Sender,
    timeout: Duration,
    roster: bool,
    subscribed: HashSet<String>,
    waiting: HashMap<String, SendReply>,
    rosters: HashMap<String, (RosterReply, Instant)>,
    serial: u64,
}

impl Link {
    async fn run(mut self, mut requests: mpsc::Receiver<Request>) {
        let why = loop {
            let due = self.next_due();
            tokio::select! {
                request = requests.recv() => match request {
                    Some(request) => {
                        if let Err(e) = self.request(request).await {
                            break e;
                        }
                    }
                    None => {
                        let _ = self.ws.close(None).await;
                        break Error::Closed;
                    }
                },
                message = self.ws.next() => {
                    if let Err(e) = self.message(message).await {
                        break e;
                    }
                }
                _ = tokio::time::sleep_until(due) => {
                    if let Err(e) = self.poll().await {
                        break e;
                    }
                }
            }
        };
        for (_, reply) in self.waiting.drain() {
            let _ = reply.send(Err(why.clone()));
        }
        for (_, (reply, _)) in self.rosters.drain() {
            let _ = reply.send(Err(why.clone()));
        }
    }

    /// When the sender or a roster wait next needs attention.
    fn next_due(&self) -> Instant {
        let far = Instant::now() + Duration::from_secs(3600);
        let sender = self.sender.next_due_ms().map_or(far, |due| {
            Instant::now() + Duration::from_millis(due.saturating_sub(now_ms()))
        });
        let roster = self
            .rosters
            .values()
            .map(|(_, until)| *until)
            .min()
            .unwrap_or(far);
        sender.min(roster)
    }

    async fn write(&mut self, text: String) -> Result<(), Error> {
        self.ws.send(Message::text(text)).await.map_err(Error::from)
    }

    async fn request(&mut self, request: Request) -> Result<(), Error> {
        match request {
            Request::Roster(reply) => {
                if !self.roster {
                    let _ = reply.send(Err(Error::Protocol(
                        "the relay does not advertise roster (AEP-0003 §4.1)".into(),
                    )));
                    return Ok(());
                }
                self.serial += 1;
                let id = format!("ro-{}", self.serial);
                self.write(json!({"type": "roster", "id": id}).to_string())
                    .await?;
                self.rosters
                    .insert(id, (reply, Instant::now() + self.timeout));
            }
            Request::Send(what, reply) => {
                let session = match &what {
                    What::Command(to, _) => Some(to.session.clone()),
                    What::Respond(request, _) => request.session.clone(),
                    What::Event(command) => command.session.clone(),
                };
                if let Some(session) = session.filter(|s| !self.subscribed.contains(s)) {
                    if let Err(e) = self.subscribe(&session).await {
                        let fatal = !matches!(e, Error::Refused { .. } | Error::Timeout);
                        let _ = reply.send(Err(e.clone()));
                        return if fatal { Err(e) } else { Ok(()) };
                    }
                }
                let now = now_ms();
                let built = match what {
                    What::Command(to, payload) => self.sender.command(&to, &payload, now),
                    What::Respond(request, answer) => self.sender.respond(&request, answer, now),
                    What::Event(command) => self.sender.track(*command, now),
                };
                let command: Outgoing = match built {
                    Ok(command) => command,
                    Err(e) => {
                        let _ = reply.send(Err(Error::Invalid(e.to_string())));
                        return Ok(());
                    }
                };
                self.waiting.insert(command.event().id.clone(), reply);
                self.write(command.into_line()).await?;
            }
        }
        Ok(())
    }

    /// Subscribes to the acks of `session` and waits for the relay's
    /// answer, settling what arrives meanwhile.
    async fn subscribe(&mut self, session: &str) -> Result<(), Error> {
        self.serial += 1;
        let id = format!("acks-{}", self.serial);
        let frame = json!({
            "type": "subscribe",
            "id": id,
            "filter": {"session": session, "type": ["control.accepted", "control.rejected"]},
        });
        self.write(frame.to_string()).await?;
        let until = Instant::now() + self.timeout;
        loop {
            let message = tokio::time::timeout_at(until, self.ws.next())
                .await
                .map_err(|_| Error::Timeout)?;
            let Some(Ok(Message::Text(text))) = &message else {
                self.message(message).await?;
                continue;
            };
            let frame: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            if frame.get("id").and_then(Value::as_str) == Some(id.as_str()) {
                match frame.get("type").and_then(Value::as_str) {
                    Some("subscribed") => {
                        self.subscribed.insert(session.to_owned());
                        return Ok(());
                    }
                    Some("error") => {
                        return Err(Error::Refused {
                            code: frame["code"].as_str().unwrap_or("error").to_owned(),
                            detail: frame["detail"].as_str().unwrap_or_default().to_owned(),
                        })
                    }
                    _ => {}
                }
            }
            self.message(message).await?;
        }
    }

    /// One inbound message.
    async fn message(
        &mut self,
        message: Option<Result<Message, tokio_tungstenite::tungstenite::Error>>,
    ) -> Result<(), Error> {
        let text = match message {
            Some(Ok(Message::Text(text))) => text,
            Some(Ok(Message::Close(_))) | None => {
                return Err(Error::Network("the relay closed the connection".into()))
            }
            Some(Err(e)) => return Err(Error::from(e)),
            Some(Ok(_)) => return Ok(()),
        };
        let Ok(frame) = serde_json::from_str::<Value>(&text) else {
            return Ok(());
        };
        match frame.get("type").and_then(Value::as_str) {
            Some("ping") => {
                let pong =
                    json!({"type": "pong", "t": frame.get("t").cloned().unwrap_or(Value::Null)});
                return self.write(pong.to_string()).await;
            }
            Some("roster") | Some("error") => {
                let id = frame.get("id").and_then(Value::as_str).unwrap_or_default();
                if let Some((reply, _)) = self.rosters.remove(id) {
                    let answer = if frame["type"] == "roster" {
                        Ok(frame["entries"].as_array().cloned().unwrap_or_default())
                    } else {
                        Err(Error::Refused {
                            code: frame["code"].as_str().unwrap_or("error").to_owned(),
                            detail: frame["detail"].as_str().unwrap_or_default().to_owned(),
                        })
                    };
                    let _ = reply.send(answer);
                    return Ok(());
                }
            }
            _ => {}
        }
        if let Some(settled) = self.sender.receive_frame(&frame) {
            self.settle(settled);
        }
        Ok(())
    }

    /// Retries and timeouts due now.
    async fn poll(&mut self) -> Result<(), Error> {
        for due in self.sender.poll(now_ms()) {
            match due {
                Due::Retry(command) => self.write(command.into_line()).await?,
                Due::Settled(settled) => self.settle(settled),
            }
        }
        let now = Instant::now();
        let expired: Vec<String> = self
            .rosters
            .iter()
            .filter(|(_, (_, until))| *until <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            if let Some((reply, _)) = self.rosters.remove(&id) {
                let _ = reply.send(Err(Error::Timeout));
            }
        }
        Ok(())
    }

    fn settle(&mut self, settled: Settled) {
        if let Some(reply) = self.waiting.remove(&settled.command) {
            let _ = reply.send(Ok(settled));
        }
    }
}
