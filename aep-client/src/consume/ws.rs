//! The WebSocket binding's consumer side (AEP-0003 §3.5, §6.5): `hello`
//! as a consumer, one `subscribe` (filter, capture ceiling, `from`), then
//! the subscription's events and frames.

use std::collections::VecDeque;
use std::time::Duration;

use aep::frame::{self, Closing, Decoded, Frame, FrameError, Id, Ping, Role, Subscribe};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio::time::{interval_at, Instant, Interval, MissedTickBehavior};
use tokio_tungstenite::tungstenite::Message;

use super::sse::From;
use super::{Position, Raw, Settings};
use crate::error::{excerpt, Error};
use crate::socket::{self, Ws};

/// The id of the one subscription a connection holds.
const SUB: &str = "aep-client";
/// How often the client pings a quiet relay.
const PING: Duration = Duration::from_secs(30);

/// An open, subscribed WebSocket.
pub(crate) struct WsConn {
    ws: Ws,
    pending: VecDeque<Raw>,
    idle: Duration,
    ping: Interval,
    heard: Instant,
}

/// Connects, says hello and subscribes; the relay's refusal of the
/// subscription is [`Error::Refused`] with its §6.5 code.
pub(crate) async fn open(settings: &Settings, from: &From) -> Result<WsConn, Error> {
    let mut ws = socket::open(&settings.relay, settings.token.as_deref()).await?;
    let hello = socket::hello(
        Role::Consumer,
        &settings.agent,
        &settings.instance,
        json!({"filters": ["attr-match"]}),
    );
    socket::greet(&mut ws, &hello).await?;
    let subscribe = Frame::Subscribe(Subscribe {
        id: SUB.into(),
        filter: settings.filter_json.clone(),
        from: from.resume(),
        capture: settings.capture.map(|c| c.as_str().to_owned()),
    });
    ws.send(Message::text(subscribe.encode()))
        .await
        .map_err(Error::from)?;
    let mut pending = VecDeque::new();
    let answer = async {
        // Bounded: the wait is, and so is what it keeps.
        while let Some(message) = ws.next().await {
            let Message::Text(text) = message.map_err(Error::from)? else {
                continue;
            };
            match frame::decode(&text) {
                Ok(Decoded::Frame(Frame::Subscribed(Id { id }))) if id == SUB => return Ok(()),
                Ok(Decoded::Frame(Frame::Error(refused)))
                    if refused.id.as_ref().is_some_and(|id| *id == SUB) =>
                {
                    return Err(refused.into())
                }
                Ok(Decoded::Event(_)) if pending.len() < 1024 => {
                    pending.push_back(Raw::Event(text.to_string(), None));
                }
                _ => {}
            }
        }
        Err(Error::Network(
            "the relay closed before answering the subscription".into(),
        ))
    };
    tokio::time::timeout(Duration::from_secs(10), answer)
        .await
        .map_err(|_| Error::Timeout)??;
    let mut ping = interval_at(Instant::now() + PING, PING);
    ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
    Ok(WsConn {
        ws,
        pending,
        idle: settings.idle_timeout,
        ping,
        heard: Instant::now(),
    })
}

impl WsConn {
    /// The next item; [`Raw::End`] once the connection is over.
    pub async fn next(&mut self) -> Raw {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return item;
            }
            let message = tokio::select! {
                message = self.ws.next() => message,
                _ = self.ping.tick() => {
                    if self.heard.elapsed() > self.idle {
                        return Raw::End(Error::Protocol(format!("the relay was silent for {} s", self.idle.as_secs())));
                    }
                    let ping = Frame::Ping(Ping { t: Some(crate::session::now_ms().into()) });
                    if let Err(e) = self.ws.send(Message::text(ping.encode())).await {
                        return Raw::End(Error::from(e));
                    }
                    continue;
                }
            };
            self.heard = Instant::now();
            let text = match message {
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(Message::Close(_))) | None => {
                    return Raw::End(Error::Network("the relay closed the connection".into()))
                }
                Some(Err(e)) => return Raw::End(Error::from(e)),
                Some(Ok(_)) => continue,
            };
            let frame = match frame::decode(&text) {
                Ok(Decoded::Event(_)) => return Raw::Event(text.to_string(), None),
                Ok(Decoded::Frame(frame)) => frame,
                // Unknown frame types are ignored (AEP-0003 §2).
                Ok(Decoded::Unknown(_)) => continue,
                // A `closing` says the relay is about to close, whatever
                // its members: the positions are ours to keep anyway.
                Err(FrameError::Malformed { kind, .. }) if kind == "closing" => {
                    Frame::Closing(Closing {
                        reason: "closing".into(),
                        delivered: Vec::new(),
                        omitted: None,
                    })
                }
                Err(e) => return Raw::Skipped(e.to_string(), excerpt(&text, 256)),
            };
            match frame {
                Frame::ReplayExhausted(gone) => {
                    return Raw::Exhausted(Position::new(
                        &gone.session,
                        gone.earliest.epoch,
                        gone.earliest.seq,
                    ));
                }
                Frame::Ping(ping) => {
                    if let Err(e) = self
                        .ws
                        .send(Message::text(Frame::Pong(ping).encode()))
                        .await
                    {
                        return Raw::End(Error::from(e));
                    }
                }
                Frame::Closing(closing) => {
                    let _ = self.ws.close(None).await;
                    return Raw::End(Error::Network(
                        format!("the relay is closing: {}", closing.reason).into(),
                    ));
                }
                Frame::Error(error) => {
                    tracing::warn!(code = %error.code, detail = ?error.detail, "the relay sent an error frame")
                }
                // `pong`, `subscribed` again and the rest: nothing to do.
                _ => {}
            }
        }
    }
}
