//! `/socket` (AEP-0003 §2, §3.5, §4, §6.5): the `hello` exchange,
//! subscriptions, in-band refusals that leave the connection standing,
//! and the frame rules.

use crate::common;

use aep_relay::Config;
use common::*;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;

#[tokio::test]
async fn hello_must_come_first() {
    let relay = start(Config::default()).await;
    for first in [
        status("h", 0, "info"),
        json!({"type": "subscribe", "id": 1}),
        json!({"versions": ["0.1"]}),
    ] {
        let mut ws = relay.ws_connect().await;
        ws.send(&first).await;
        let (frames, code) = ws.closed().await;
        assert_eq!(frames[0]["type"], "error", "after {first}");
        assert_eq!(frames[0]["code"], "hello-required");
        assert_eq!(code, Some(1002));
    }
    assert!(relay.held("h").await.is_empty());
}

#[tokio::test]
async fn an_unshared_version_is_refused_with_the_relays_versions() {
    let relay = start(Config::default()).await;
    let mut ws = relay.ws_connect().await;
    ws.send(&json!({"type": "hello", "versions": ["9.9", "1.0"], "role": "consumer"}))
        .await;
    let (frames, code) = ws.closed().await;
    assert_eq!(frames[0]["type"], "error");
    assert_eq!(frames[0]["code"], "version-unsupported");
    assert_eq!(frames[0]["versions"], json!(["0.1"]));
    assert_eq!(code, Some(1002));
}

#[tokio::test]
async fn the_hello_reply_selects_exactly_one_version() {
    let relay = start(Config::default()).await;
    let mut ws = relay.ws_connect().await;
    ws.send(&json!({"type": "hello", "versions": ["0.2", "0.1"], "role": "consumer", "capabilities": {"x-unknown": {"deep": [1]}}})).await;
    let reply = ws.json().await;
    assert_eq!(reply["type"], "hello");
    assert_eq!(reply["versions"], json!(["0.1"]));
    assert_eq!(reply["capabilities"]["filters"], json!(["attr-match"]));
    // A role the protocol does not know is refused.
    let mut ws = relay.ws_connect().await;
    ws.send(&json!({"type": "hello", "versions": ["0.1"], "role": "admin"}))
        .await;
    let (frames, _) = ws.closed().await;
    assert_eq!(frames[0]["type"], "error");
}

fn subscribe(id: Value, filter: Value) -> Value {
    json!({"type": "subscribe", "id": id, "filter": filter})
}

#[tokio::test]
async fn one_connection_holds_several_subscriptions() {
    let relay = start(Config::default()).await;
    let mut ws = relay.ws("consumer").await;
    ws.subscribe(subscribe(json!("tools"), json!({"type": "tool.*"})))
        .await;
    ws.subscribe(subscribe(json!(2), json!({"severity": {"gte": "error"}})))
        .await;

    let tool = event("tool.requested", "m", 0).to_string();
    let loud = status("m", 1, "critical").to_string();
    let quiet = status("m", 2, "info").to_string();
    relay.post_lines(&[tool.clone(), quiet, loud.clone()]).await;
    assert_eq!(ws.text().await, tool);
    assert_eq!(ws.text().await, loud);

    ws.send(&json!({"type": "unsubscribe", "id": "tools"}))
        .await;
    assert_eq!(
        ws.json().await,
        json!({"type": "unsubscribed", "id": "tools"})
    );
    let tool = event("tool.requested", "m", 3).to_string();
    let loud = status("m", 4, "error").to_string();
    relay.post_lines(&[tool, loud.clone()]).await;
    assert_eq!(
        ws.text().await,
        loud,
        "the unsubscribed filter no longer delivers"
    );
    // The same id can be used again once it is free.
    ws.subscribe(subscribe(json!("tools"), json!({"type": "tool.*"})))
        .await;
    assert_eq!(relay.health().await["subscriptions"], 2);
}

/// Sends `frame` and returns the error frame it draws; then proves the
/// connection still stands and its subscription still delivers.
async fn refused(relay: &TestRelay, ws: &mut Ws, frame: Value, session: &str) -> Value {
    ws.send(&frame).await;
    let error = ws.json().await;
    assert_eq!(error["type"], "error", "{frame}");
    assert_eq!(error["id"], frame["id"], "{frame}");
    assert!(error["detail"].is_string());
    let probe = status(session, 0, "notice");
    relay.post_event(&probe).await;
    assert_eq!(
        ws.json().await,
        probe,
        "the standing subscription after {frame}"
    );
    error
}

#[tokio::test]
async fn subscription_refusals_are_in_band_and_the_connection_survives() {
    let relay = start(Config::default().max_from(2).max_subscriptions(2)).await;
    let mut ws = relay.ws("consumer").await;
    ws.subscribe(subscribe(json!("standing"), json!({"session": "keep"})))
        .await;

    for bad in [
        subscribe(json!("k1"), json!({"seq": 1})),
        subscribe(json!("k2"), json!({"type": "*"})),
        subscribe(json!("k3"), json!("not an object")),
        json!({"type": "subscribe", "id": "k4", "from": "some"}),
        json!({"type": "subscribe", "id": "k5", "capture": "everything"}),
        subscribe(json!("standing"), json!({})),
    ] {
        let error = refused(&relay, &mut ws, bad.clone(), "keep").await;
        assert_eq!(error["code"], "invalid-filter", "{bad}");
    }
    let from: Vec<Value> = (0..3)
        .map(|i| json!({"session": format!("s{i}")}))
        .collect();
    let many = json!({"type": "subscribe", "id": "many-from", "from": from});
    assert_eq!(
        refused(&relay, &mut ws, many, "keep").await["code"],
        "limit-exceeded"
    );

    ws.subscribe(subscribe(json!("second"), json!({"session": "other"})))
        .await;
    let third = subscribe(json!("third"), json!({}));
    let error = refused(&relay, &mut ws, third, "keep").await;
    assert_eq!(error["code"], "limit-exceeded");
    assert_eq!(
        relay
            .metric("aep_relay_refused_total{reason=\"limit-exceeded\"}")
            .await,
        2
    );
}

#[tokio::test]
async fn unknown_frame_types_are_ignored() {
    let relay = start(Config::default()).await;
    let mut ws = relay.ws("both").await;
    for frame in [
        json!({"type": "frobnicate", "id": 1}),
        json!({"type": "pong", "t": 1}),
        json!({"type": "closing", "reason": "not really", "delivered": []}),
        json!({"type": "hello", "versions": ["0.1"]}),
    ] {
        ws.send(&frame).await;
    }
    assert!(ws.sync("after-unknown").await.is_empty());
}

#[tokio::test]
async fn ping_is_answered_with_its_t() {
    let relay = start(Config::default()).await;
    let mut ws = relay.ws("consumer").await;
    for t in [json!(12345), json!("abc"), json!({"nested": [1, 2]})] {
        ws.send(&json!({"type": "ping", "t": t})).await;
        assert_eq!(ws.json().await, json!({"type": "pong", "t": t}));
    }
}

#[tokio::test]
async fn frames_that_are_not_json_objects_are_answered_in_band() {
    let relay = start(Config::default()).await;
    let mut ws = relay.ws("both").await;
    for text in [
        "this is not json",
        "[1, 2, 3]",
        // Arrays whose members line up with a frame's are not frames.
        "[\"ping\"]",
        " [\"ping\", 7]",
        "{\"no\": \"type\"}",
        "{\"type\": 7}",
    ] {
        ws.send_text(text).await;
        let error = ws.json().await;
        assert_eq!(error["type"], "error", "{text}");
        assert!(error["code"].is_string());
    }
    // A frame that names its type twice is refused as such.
    ws.send_text(r#"{"type": "ping", "type": "subscribe"}"#)
        .await;
    let error = ws.json().await;
    assert_eq!(error["code"], "bad-frame", "{error}");
    assert!(
        error["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("once"),
        "{error}"
    );
    // An event frame that fails the envelope names its id as the cause.
    let mut bad = status("w", 0, "info");
    bad.as_object_mut().unwrap().remove("time");
    ws.send(&bad).await;
    let error = ws.json().await;
    assert_eq!(
        (error["code"].as_str(), &error["cause"]),
        (Some("invalid-event"), &bad["id"])
    );
    assert!(ws.sync("still-open").await.is_empty());
    assert!(relay.held("w").await.is_empty());
}

#[tokio::test]
async fn a_binary_frame_is_refused_and_closes() {
    let relay = start(Config::default()).await;
    let mut ws = relay.ws("both").await;
    ws.send_message(Message::Binary(bytes::Bytes::from_static(
        b"{\"type\":\"ping\"}",
    )))
    .await;
    let (frames, code) = ws.closed().await;
    assert_eq!(frames[0]["type"], "error");
    assert_eq!(frames[0]["code"], "binary-unsupported");
    assert_eq!(code, Some(1003));
}

#[tokio::test]
async fn the_frame_size_limit_is_enforced() {
    let relay = start(Config::default().max_frame(1024)).await;
    let mut ws = relay.ws("emitter").await;
    let mut small = status("size", 0, "info");
    small["data"] = json!({"message": "x".repeat(300)});
    ws.send(&small).await;
    assert!(ws.sync("small").await.is_empty());
    let mut big = status("size", 1, "info");
    big["data"] = json!({"message": "x".repeat(4096)});
    ws.send(&big).await;
    let (frames, code) = ws.closed().await;
    assert_eq!(
        code,
        Some(1009),
        "a message over the limit is closed as too big"
    );
    assert!(frames.iter().all(|f| f["type"] == "closing"), "{frames:?}");
    assert_eq!(seqs(&relay.held("size").await), [0]);
    // The first frame too.
    let mut ws = relay.ws_connect().await;
    let mut hello = hello("consumer");
    hello["padding"] = "x".repeat(4096).into();
    ws.send(&hello).await;
    assert_eq!(ws.closed().await.1, Some(1009));
}

#[tokio::test]
async fn websockets_count_toward_max_connections() {
    let relay = start(Config::default().max_connections(1)).await;
    let mut ws = relay.ws("consumer").await;
    assert!(ws.sync("held").await.is_empty());
    // The upgraded socket still holds the one slot: another connection
    // is closed on accept, unanswered.
    let mut other = tcp_connect(relay.addr, None).await;
    let request = format!(
        "GET /healthz HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        relay.addr
    );
    let _ = other.write_all(request.as_bytes()).await;
    let mut answer = Vec::new();
    let read = tokio::time::timeout(WAIT, other.read_to_end(&mut answer)).await;
    assert!(
        read.expect("closed in time").is_err() || answer.is_empty(),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    // Once the socket is gone, the slot is free again.
    drop(ws);
    let mut answered = false;
    for _ in 0..200 {
        let mut next = tcp_connect(relay.addr, None).await;
        let _ = next.write_all(request.as_bytes()).await;
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(WAIT, next.read_to_end(&mut answer)).await;
        if answer.starts_with(b"HTTP/1.1 200") {
            answered = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(answered, "the slot was never released");
}

#[tokio::test]
async fn a_subscription_capture_ceiling_applies_live_and_in_replay() {
    let relay = start(Config::default()).await;
    let mut secret = event("run.started", "ceil", 0);
    secret["capture"] = "redacted".into();
    secret["data"] = json!({"trigger": "user", "prompt": "CANARY over the socket"});
    relay.post_event(&secret).await;
    let mut ws = relay.ws("consumer").await;
    ws.subscribe(json!({
        "type": "subscribe", "id": "c", "capture": "metadata",
        "filter": {"session": "ceil"}, "from": [{"session": "ceil", "seq": -1}],
    }))
    .await;
    let mut live = secret.clone();
    live["seq"] = 1.into();
    live["id"] = fresh_id().into();
    relay.post_event(&live).await;
    for seq in [0, 1] {
        let text = ws.text().await;
        assert!(!text.contains("CANARY"), "leaked: {text}");
        let got: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (got["seq"].clone(), got["capture"].clone()),
            (json!(seq), json!("metadata"))
        );
        assert_eq!(got["data"], json!({"trigger": "user"}));
    }
    // Without a ceiling the same socket gets the event as sent.
    ws.subscribe(json!({"type": "subscribe", "id": "raw", "filter": {"session": "ceil"}}))
        .await;
    let mut third = secret.clone();
    third["seq"] = 2.into();
    third["id"] = fresh_id().into();
    let sent = third.to_string();
    relay.post("application/json", sent.clone()).await;
    let (a, b) = (ws.text().await, ws.text().await);
    assert!(a == sent || b == sent, "one delivery as sent: {a} / {b}");
    assert!(
        !a.contains("CANARY") || !b.contains("CANARY"),
        "one delivery down-levelled"
    );
}

#[tokio::test]
async fn websocket_pings_before_hello_are_not_taken_for_frames() {
    // Pings are WebSocket control frames, not AEP frames: `hello` after
    // them is still the first frame.
    let relay = start(Config::default()).await;
    let mut ws = relay.ws_connect().await;
    for _ in 0..3 {
        ws.send_message(Message::Ping(b"are you there".to_vec().into()))
            .await;
    }
    ws.send(&hello("consumer")).await;
    let reply = ws.json().await;
    assert_eq!(reply["type"], "hello", "{reply}");
}

/// An id whose JSON text is `bytes` long, unique by `n`.
fn long_id(n: usize, bytes: usize) -> Value {
    let mut id = format!("{n:04}-");
    id.push_str(&"i".repeat(bytes - 2 - id.len()));
    let id = json!(id);
    assert_eq!(id.to_string().len(), bytes);
    id
}

#[tokio::test]
async fn the_closing_frame_keeps_the_latest_positions_within_its_budget() {
    // 64 subscriptions with ids at the bound, each delivered 50 sessions
    // with long ids: 3,200 positions, about 1.6 MB as a `closing` frame
    // if all were kept.
    const SUBS: usize = 64;
    const SESSIONS: usize = 50;
    let relay = start(Config::default().queue(8192, 8192)).await;
    let mut ws = relay.ws("consumer").await;
    let ids: Vec<Value> = (0..SUBS).map(|n| long_id(n, 256)).collect();
    for id in &ids {
        ws.subscribe(subscribe(id.clone(), json!({}))).await;
    }
    let session = |n: usize| format!("{n:04}-{}", "s".repeat(200));
    let events: Vec<Value> = (0..SESSIONS)
        .map(|n| status(&session(n), 0, "notice"))
        .collect();
    relay.post_batch(&events).await;
    for n in 0..SUBS * SESSIONS {
        let frame = ws.json().await;
        assert!(frame.get("seq").is_some(), "delivery {n}: {frame}");
    }
    // A binary frame closes the connection with a `closing` frame.
    ws.send_message(Message::Binary(bytes::Bytes::from_static(b"x")))
        .await;
    let mut ws_frames = Vec::new();
    for _ in 0..4 {
        match ws.next().await {
            Got::Text(text) => ws_frames.push(text),
            _ => break,
        }
    }
    let closing = ws_frames
        .iter()
        .find(|text| text.contains("\"closing\""))
        .unwrap_or_else(|| panic!("no closing frame among {ws_frames:?}"));
    assert!(
        closing.len() <= 64 * 1024 + 256,
        "the closing frame is {} bytes",
        closing.len()
    );
    let closing: Value = serde_json::from_str(closing).unwrap();
    let delivered = closing["delivered"].as_array().expect("delivered");
    assert!(delivered.len() > 10, "{} positions", delivered.len());
    let omitted = closing["omitted"].as_u64().expect("omitted is said");
    assert_eq!(delivered.len() as u64 + omitted, (SUBS * SESSIONS) as u64);
    for entry in delivered {
        assert!(ids.contains(&entry["sub"]), "{entry}");
        assert_eq!((&entry["epoch"], &entry["seq"]), (&json!(0), &json!(0)));
    }
    // The most recent delivery, the last session to the last
    // subscription fanned out, is among those kept.
    let last = session(SESSIONS - 1);
    assert!(
        delivered.iter().any(|e| e["session"] == last.as_str()),
        "the latest session is kept"
    );
}

#[tokio::test]
async fn an_oversize_subscription_id_is_refused_naming_the_limit() {
    let relay = start(Config::default()).await;
    let mut ws = relay.ws("consumer").await;
    ws.subscribe(subscribe(long_id(0, 256), json!({"session": "keep"})))
        .await;
    for id in [long_id(1, 257), long_id(2, 16 * 1024)] {
        let error = refused(&relay, &mut ws, subscribe(id, json!({})), "keep").await;
        assert_eq!(error["code"], "limit-exceeded");
        let detail = error["detail"].as_str().unwrap();
        assert!(detail.contains("256 bytes"), "{detail}");
    }
    assert_eq!(relay.health().await["subscriptions"], 1);
}

#[tokio::test]
async fn oversize_filters_are_refused_naming_the_limit() {
    let relay = start(Config::default()).await;
    let mut ws = relay.ws("consumer").await;
    ws.subscribe(subscribe(json!("standing"), json!({"session": "keep"})))
        .await;
    let sessions: Vec<String> = (0..256).map(|n| format!("s{n}")).collect();
    ws.subscribe(subscribe(json!("at-bound"), json!({ "session": sessions })))
        .await;
    let many: Vec<String> = (0..257).map(|n| format!("s{n}")).collect();
    let wide = (json!({ "session": many }), "at most 256");
    let long = (json!({"session": "s".repeat(20_000)}), "16384 bytes");
    let keys: serde_json::Map<String, Value> =
        (0..33).map(|n| (format!("x{n}"), json!(1))).collect();
    let keyed = (Value::Object(keys), "at most 32");
    for (n, (filter, limit)) in [wide, long, keyed].into_iter().enumerate() {
        let error = refused(&relay, &mut ws, subscribe(json!(n), filter), "keep").await;
        assert_eq!(error["code"], "limit-exceeded");
        let detail = error["detail"].as_str().unwrap();
        assert!(detail.contains(limit), "{detail}");
    }
}

#[tokio::test]
async fn an_oversize_hello_is_refused_and_closed() {
    let relay = start(Config::default()).await;
    let mut big = emitter_hello("big/1", &["control.attention.respond"]);
    big["identity"]["instance"] = "i".repeat(70 * 1024).into();
    let mut ws = relay.ws_connect().await;
    ws.send(&big).await;
    let (frames, code) = ws.closed().await;
    assert_eq!(frames[0]["type"], "error", "{frames:?}");
    assert_eq!(frames[0]["code"], "limit-exceeded");
    let detail = frames[0]["detail"].as_str().unwrap();
    assert!(detail.contains("65536"), "{detail}");
    assert_eq!(code, Some(1009));
    // A hello under the bound is taken.
    let mut fits = emitter_hello("fits/1", &[]);
    fits["capabilities"]["experimental"] = json!({"note": "x".repeat(60 * 1024)});
    relay.ws_hello(fits).await;
}

#[tokio::test]
async fn a_frame_that_is_not_an_event_is_bounded_and_an_event_is_not_parsed_whole() {
    let relay = start(Config::default()).await;
    let mut ws = relay.ws("both").await;
    // A subscribe frame past 64 KiB and room for the default 500 resume
    // positions: refused, naming the limit and
    // answering its id.
    let padding = "p".repeat(400 * 1024);
    ws.send(&json!({"type": "subscribe", "id": "wide", "filter": {}, "x": padding}))
        .await;
    let refused = ws.json().await;
    assert_eq!(refused["type"], "error", "{refused}");
    assert_eq!(refused["code"], "limit-exceeded", "{refused}");
    assert_eq!(refused["id"], "wide", "{refused}");
    assert!(
        refused["detail"].as_str().unwrap().contains("365536"),
        "{refused}"
    );
    // An unknown frame type of any size is ignored, as before.
    ws.send(&json!({"type": "x-later", "x": padding})).await;
    // An event whose data is a wide array of small values is admitted
    // and delivered as sent.
    ws.subscribe(json!({"type": "subscribe", "id": "s", "filter": {"session": ["wide"]}}))
        .await;
    let mut event = status("wide", 0, "notice");
    event["data"] = json!({"message": "m", "values": vec![0; 500_000]});
    ws.send(&event).await;
    let got = ws.json().await;
    assert_eq!(got["id"], event["id"]);
    assert_eq!(got["data"]["values"].as_array().unwrap().len(), 500_000);
    relay.stop().await;
}
