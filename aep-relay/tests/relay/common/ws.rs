//! A WebSocket client that speaks the relay's frames.

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::WAIT;

/// Whether a text frame is the relay's keep-alive `ping` frame.
fn is_relay_ping(text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_ok_and(|v| v["type"] == "ping" && v.get("aep").is_none())
}

/// A WebSocket client.
pub struct Ws {
    pub socket: WebSocketStream<TcpStream>,
}

/// What a WebSocket read gave.
#[derive(Debug)]
pub enum Got {
    Text(String),
    Close(Option<u16>),
    Ended,
}

impl Ws {
    /// Sends a JSON frame.
    pub async fn send(&mut self, frame: &Value) {
        self.send_text(&frame.to_string()).await;
    }

    /// Sends a text frame as is.
    pub async fn send_text(&mut self, text: &str) {
        self.send_message(Message::Text(text.into())).await;
    }

    pub async fn send_message(&mut self, message: Message) {
        timeout(WAIT, self.socket.send(message))
            .await
            .expect("a WS send in time")
            .expect("a WS send");
    }

    /// The next text frame or close, skipping the relay's `ping` frames
    /// (and WebSocket-level pings, which the client answers itself).
    pub async fn next(&mut self) -> Got {
        for _ in 0..10_000 {
            match self.next_any().await {
                Got::Text(text) if is_relay_ping(&text) => continue,
                got => return got,
            }
        }
        panic!("only pings on the socket");
    }

    /// The next text frame or close, the relay's `ping` frames included.
    pub async fn next_any(&mut self) -> Got {
        for _ in 0..10_000 {
            let message = timeout(WAIT, self.socket.next())
                .await
                .unwrap_or_else(|_| panic!("no WS frame within {WAIT:?}"));
            match message {
                None | Some(Err(_)) => return Got::Ended,
                Some(Ok(Message::Text(text))) => return Got::Text(text.to_string()),
                Some(Ok(Message::Close(frame))) => return Got::Close(frame.map(|f| f.code.into())),
                Some(Ok(Message::Binary(b))) => panic!("the relay sent a binary frame: {b:?}"),
                Some(Ok(_)) => continue,
            }
        }
        panic!("only WebSocket-level frames on the socket");
    }

    /// The next text frame (panics on close).
    pub async fn text(&mut self) -> String {
        match self.next().await {
            Got::Text(text) => text,
            other => panic!("expected a text frame, got {other:?}"),
        }
    }

    /// The next text frame, parsed.
    pub async fn json(&mut self) -> Value {
        let text = self.text().await;
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("a frame that is not JSON ({e}): {text}"))
    }

    /// Reads frames until one satisfies `stop`; returns them all, that one
    /// last (at most 100 000).
    pub async fn until(&mut self, stop: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut out = Vec::new();
        for _ in 0..100_000 {
            let frame = self.json().await;
            let done = stop(&frame);
            out.push(frame);
            if done {
                return out;
            }
        }
        panic!("no matching frame among 100 000");
    }

    /// Subscribes and waits for `subscribed` (anything before it is an
    /// error); replayed frames after it are left unread.
    pub async fn subscribe(&mut self, frame: Value) {
        let id = frame["id"].clone();
        self.send(&frame).await;
        let reply = self.json().await;
        assert_eq!(
            reply,
            json!({"type": "subscribed", "id": id}),
            "subscribe {frame}"
        );
    }

    /// Asks for the roster; returns its entries.
    pub async fn roster(&mut self, id: &str) -> Vec<Value> {
        self.send(&json!({"type": "roster", "id": id})).await;
        let frames = self.until(|f| f["type"] == "roster" && f["id"] == id).await;
        let roster = frames.last().expect("the roster frame");
        roster["entries"].as_array().expect("entries").clone()
    }

    /// A `ping` round trip: proves the connection is open and every frame
    /// sent before it was handled. Returns the frames that came first.
    pub async fn sync(&mut self, t: &str) -> Vec<Value> {
        self.send(&json!({"type": "ping", "t": t})).await;
        let mut frames = self.until(|f| f["type"] == "pong" && f["t"] == t).await;
        frames.pop();
        frames
    }

    /// Reads until the close frame; returns its code (frames before it
    /// are returned too).
    pub async fn closed(&mut self) -> (Vec<Value>, Option<u16>) {
        let mut frames = Vec::new();
        for _ in 0..100_000 {
            match self.next().await {
                Got::Text(text) => {
                    frames.push(serde_json::from_str(&text).unwrap_or(Value::String(text)))
                }
                Got::Close(code) => return (frames, code),
                Got::Ended => return (frames, None),
            }
        }
        panic!("the socket never closed");
    }
}
