//! Keep-alive (AEP-0003 §3.3.4, §3.5.5): `: ping` on SSE, `ping` frames
//! on a WebSocket, and a silent WebSocket peer let go.

use crate::common;

use std::time::Duration;

use aep_relay::Config;
use common::*;
use serde_json::{json, Value};

#[tokio::test]
async fn an_idle_sse_stream_is_kept_warm() {
    let relay =
        start(Config::default().ping(Duration::from_millis(50), Duration::from_secs(5))).await;
    let mut live = relay.sse(&[]).await;
    for _ in 0..3 {
        assert_eq!(live.next_raw().await, Some(SseItem::Comment("ping".into())));
    }
    // Pings do not get in the way of events.
    let event = status("warm", 0, "info");
    relay.post_event(&event).await;
    assert_eq!(live.event().await.json(), event);
}

/// The next relay `ping` frame.
async fn relay_ping(ws: &mut Ws) -> Value {
    match ws.next_any().await {
        Got::Text(text) => {
            let frame: Value = serde_json::from_str(&text).expect("JSON");
            assert_eq!(frame["type"], "ping", "{frame}");
            assert!(frame["t"].is_u64(), "{frame}");
            frame
        }
        other => panic!("expected a ping frame, got {other:?}"),
    }
}

#[tokio::test]
async fn a_websocket_peer_that_answers_pings_is_kept() {
    let timeout = Duration::from_secs(1);
    let relay = start(Config::default().ping(Duration::from_millis(100), timeout)).await;
    let mut ws = relay.ws("consumer").await;
    // Fifteen pings span well over the timeout; each pong resets it.
    for _ in 0..15 {
        let ping = relay_ping(&mut ws).await;
        ws.send(&json!({"type": "pong", "t": ping["t"]})).await;
    }
    ws.send(&json!({"type": "ping", "t": "still here"})).await;
    let frames = ws.until(|f| f["type"] == "pong").await;
    assert_eq!(
        frames.last(),
        Some(&json!({"type": "pong", "t": "still here"}))
    );
}

#[tokio::test]
async fn a_silent_websocket_peer_is_let_go_with_a_reason() {
    let relay =
        start(Config::default().ping(Duration::from_millis(50), Duration::from_millis(200))).await;
    let mut ws = relay.ws("consumer").await;
    // Read, never answer.
    let (frames, code) = ws.closed().await;
    assert_eq!(code, Some(1001));
    assert_eq!(
        frames.last().map(|f| f["type"].clone()),
        Some(json!("closing"))
    );
    assert_eq!(
        frames.last().map(|f| f["reason"].clone()),
        Some(json!("no-pong"))
    );
    relay
        .wait_health("the socket gone", |h| h["websockets"] == 0)
        .await;
}

#[tokio::test]
async fn a_websocket_that_never_says_hello_is_let_go() {
    let relay =
        start(Config::default().ping(Duration::from_millis(20), Duration::from_millis(100))).await;
    let mut ws = relay.ws_connect().await;
    let (frames, code) = ws.closed().await;
    assert_eq!(code, Some(1008));
    assert!(frames.iter().all(|f| f["type"] == "closing"), "{frames:?}");
}
