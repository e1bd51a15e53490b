//! The WebSocket binding's consumer side (AEP-0003 §3.5, §6.5): `hello`
//! as a consumer, one `subscribe` (filter, capture ceiling, `from`), then
//! the subscription's events and frames.

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
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
        "consumer",
        &settings.agent,
        &settings.instance,
        json!({"filters": ["attr-match"]}),
    );
    socket::greet(&mut ws, &hello).await?;
    let mut subscribe = json!({"type": "subscribe", "id": SUB});
    if let Some(filter) = &settings.filter_json {
        subscribe["filter"] = filter.clone();
    }
    if let Some(capture) = settings.capture {
        subscribe["capture"] = json!(capture.as_str());
    }
    if let Some(from) = from.to_json() {
        subscribe["from"] = from;
    }
    ws.send(Message::text(subscribe.to_string()))
        .await
        .map_err(Error::from)?;
    let mut pending = VecDeque::new();
    let answer = async {
        // Bounded: the wait is, and so is what it keeps.
        while let Some(message) = ws.next().await {
            let Message::Text(text) = message.map_err(Error::from)? else {
                continue;
            };
            let Ok(frame) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            let kind = frame
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let ours = frame.get("id").and_then(Value::as_str) == Some(SUB);
            match kind {
                "subscribed" if ours => return Ok(()),
                "error" if ours => {
                    return Err(Error::Refused {
                        code: frame["code"].as_str().unwrap_or("error").to_owned(),
                        detail: frame["detail"].as_str().unwrap_or_default().to_owned(),
                    })
                }
                _ if kind.contains('.') && pending.len() < 1024 => {
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
                    let ping = json!({"type": "ping", "t": crate::session::now_ms()});
                    if let Err(e) = self.ws.send(Message::text(ping.to_string())).await {
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
            let frame: Value = match serde_json::from_str(&text) {
                Ok(frame @ Value::Object(_)) => frame,
                _ => {
                    return Raw::Skipped(
                        "a frame that is not a JSON object".into(),
                        excerpt(&text, 256),
                    )
                }
            };
            let kind = frame
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if kind.contains('.') {
                return Raw::Event(text.to_string(), None);
            }
            match kind {
                "replay-exhausted" => {
                    let earliest = &frame["earliest"];
                    let position = frame["session"].as_str().and_then(|s| {
                        Some(Position::new(
                            s,
                            earliest.get("epoch").map_or(Some(0), Value::as_u64)?,
                            earliest.get("seq")?.as_u64()?,
                        ))
                    });
                    return match position {
                        Some(position) => Raw::Exhausted(position),
                        None => Raw::Skipped(
                            "a replay-exhausted frame that does not parse".into(),
                            excerpt(&text, 256),
                        ),
                    };
                }
                "ping" => {
                    let pong = json!({"type": "pong", "t": frame.get("t").cloned().unwrap_or(Value::Null)});
                    if let Err(e) = self.ws.send(Message::text(pong.to_string())).await {
                        return Raw::End(Error::from(e));
                    }
                }
                "closing" => {
                    let reason = frame["reason"].as_str().unwrap_or("closing").to_owned();
                    let _ = self.ws.close(None).await;
                    return Raw::End(Error::Network(format!("the relay is closing: {reason}")));
                }
                "error" => tracing::warn!(%frame, "the relay sent an error frame"),
                // `pong`, `subscribed` again, unknown frames: ignored (§2).
                _ => {}
            }
        }
    }
}
