//! The control client's connection task: requests in, frames in, retries
//! and timeouts on time, each command settled once.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use aep::control::{Due, Outgoing, Sender, Settled};
use aep::frame::{self, Decoded, Frame, RequestId, Roster, Subscribe};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use super::{Request, RosterReply, SendReply, What};
use crate::error::Error;
use crate::session::now_ms;
use crate::socket::Ws;

/// The connection task's state.
pub(super) struct Link {
    pub(super) ws: Ws,
    pub(super) sender: Sender,
    pub(super) timeout: Duration,
    pub(super) roster: bool,
    pub(super) subscribed: HashSet<String>,
    pub(super) waiting: HashMap<String, SendReply>,
    pub(super) rosters: HashMap<String, (RosterReply, Instant)>,
    pub(super) serial: u64,
}

impl Link {
    pub(super) async fn run(mut self, mut requests: mpsc::Receiver<Request>) {
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
                let request = Frame::Roster(Roster {
                    id: id.as_str().into(),
                    entries: None,
                });
                self.write(request.encode()).await?;
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
        let frame = Frame::Subscribe(Subscribe {
            id: id.as_str().into(),
            filter: Some(
                json!({"session": session, "type": ["control.accepted", "control.rejected"]}),
            ),
            from: None,
            capture: None,
        });
        self.write(frame.encode()).await?;
        let until = Instant::now() + self.timeout;
        loop {
            let message = tokio::time::timeout_at(until, self.ws.next())
                .await
                .map_err(|_| Error::Timeout)?;
            let Some(Ok(Message::Text(text))) = &message else {
                self.message(message).await?;
                continue;
            };
            match frame::decode(text) {
                Ok(Decoded::Frame(Frame::Subscribed(answer))) if answer.id == id.as_str() => {
                    self.subscribed.insert(session.to_owned());
                    return Ok(());
                }
                Ok(Decoded::Frame(Frame::Error(refused)))
                    if refused
                        .id
                        .as_ref()
                        .is_some_and(|refused| *refused == id.as_str()) =>
                {
                    return Err(refused.into())
                }
                _ => {}
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
        let settled = match frame::decode(&text) {
            Ok(Decoded::Frame(Frame::Ping(ping))) => {
                return self.write(Frame::Pong(ping).encode()).await;
            }
            Ok(Decoded::Frame(Frame::Roster(roster))) => {
                if let Some((reply, _)) = roster.id.as_str().and_then(|id| self.rosters.remove(id))
                {
                    let _ = reply.send(Ok(roster.entries.unwrap_or_default()));
                }
                return Ok(());
            }
            Ok(Decoded::Frame(Frame::Error(error))) => {
                let roster = error
                    .id
                    .as_ref()
                    .and_then(RequestId::as_str)
                    .and_then(|id| self.rosters.remove(id));
                match roster {
                    Some((reply, _)) => {
                        let _ = reply.send(Err(error.into()));
                        return Ok(());
                    }
                    None => self.sender.receive_error(error),
                }
            }
            Ok(Decoded::Event(event)) => self.sender.receive_frame(&event),
            // Other frames, unknown ones and what does not parse: nothing
            // to settle.
            _ => None,
        };
        if let Some(settled) = settled {
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
