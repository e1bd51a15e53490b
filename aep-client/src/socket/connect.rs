//! Opening a relay's WebSocket: the URL, the bearer token, the message
//! size bound, and the `hello` exchange (AEP-0003 §3.5, §4).

use std::time::Duration;

use aep::frame::{self, Decoded, Frame, Hello};
use futures_util::{SinkExt, StreamExt};
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message;

use super::{Ws, MAX_MESSAGE};
use crate::error::Error;

/// The socket URL of a relay base URL.
pub(crate) fn socket_url(relay: &str) -> String {
    let base = relay.trim_end_matches('/');
    let base = if let Some(rest) = base.strip_prefix("http://") {
        format!("ws://{rest}")
    } else if let Some(rest) = base.strip_prefix("https://") {
        format!("wss://{rest}")
    } else {
        base.to_owned()
    };
    if base.ends_with("/socket") {
        base
    } else {
        format!("{base}/socket")
    }
}

pub(crate) async fn open(relay: &str, token: Option<&str>) -> Result<Ws, Error> {
    let mut request = socket_url(relay)
        .into_client_request()
        .map_err(|e| Error::Invalid(format!("bad relay URL {relay}: {e}")))?;
    if let Some(token) = token {
        let value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| Error::Invalid("the token is not a valid header value".into()))?;
        request.headers_mut().insert("authorization", value);
    }
    let limits = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE));
    let (ws, _) = timeout(
        Duration::from_secs(10),
        tokio_tungstenite::connect_async_with_config(request, Some(limits), true),
    )
    .await
    .map_err(|_| Error::Timeout)?
    .map_err(Error::from)?;
    Ok(ws)
}

/// Says hello and waits for the relay's.
pub(crate) async fn greet(ws: &mut Ws, hello: &Hello) -> Result<Hello, Error> {
    ws.send(Message::text(Frame::Hello(hello.clone()).encode()))
        .await
        .map_err(Error::from)?;
    let wait = async {
        while let Some(message) = ws.next().await {
            let Message::Text(text) = message.map_err(Error::from)? else {
                continue;
            };
            match frame::decode(&text) {
                Ok(Decoded::Frame(Frame::Hello(hello))) => return Ok(hello),
                Ok(Decoded::Frame(Frame::Error(refused))) => return Err(refused.into()),
                Ok(_) => continue,
                Err(e) => return Err(Error::Protocol(format!("the relay's hello: {e}"))),
            }
        }
        Err(Error::Protocol("the relay closed before its hello".into()))
    };
    timeout(Duration::from_secs(10), wait)
        .await
        .map_err(|_| Error::Timeout)?
}
