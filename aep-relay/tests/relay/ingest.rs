//! `POST /events` (AEP-0003 §3.2) and discovery (§3.4): what is accepted,
//! what is refused and how, and that a refused batch leaves no trace.

use crate::common;

use aep_relay::Config;
use common::*;
use serde_json::{json, Value};

#[tokio::test]
async fn single_events_and_batches_are_accepted_in_order() {
    let relay = start(Config::default()).await;
    let response = relay
        .post(
            "application/json",
            event("session.started", "s", 0).to_string(),
        )
        .await;
    assert_eq!(
        json_body(response).await,
        (202, json!({"accepted": 1, "duplicates": 0}))
    );
    let batch: Vec<String> = (1..4)
        .map(|seq| status("s", seq, "info").to_string())
        .collect();
    let response = relay.post_lines(&batch).await;
    assert_eq!(
        json_body(response).await,
        (202, json!({"accepted": 3, "duplicates": 0}))
    );
    // The same lines again: taken, and said to be held already.
    let response = relay.post_lines(&batch).await;
    assert_eq!(
        json_body(response).await,
        (202, json!({"accepted": 3, "duplicates": 3}))
    );
    // A content type with parameters is the same type.
    let response = relay
        .post(
            "application/x-ndjson; charset=utf-8",
            status("s", 4, "info").to_string(),
        )
        .await;
    assert_eq!(response.status(), 202);
    assert_eq!(seqs(&relay.held("s").await), [0, 1, 2, 3, 4]);
}

#[tokio::test]
async fn the_version_header_is_required_and_checked() {
    let relay = start(Config::default()).await;
    let body = event("session.started", "v", 0).to_string();
    let missing = relay
        .request(reqwest::Method::POST, "/events")
        .header("content-type", "application/json")
        .body(body.clone());
    let (status, refusal) = json_body(send(missing).await).await;
    assert_eq!(status, 400);
    assert!(refusal["error"].is_string(), "{refusal}");
    for other in ["0.2", "1.0", "9.9", ""] {
        let request = relay
            .request(reqwest::Method::POST, "/events")
            .header("aep-version", other)
            .header("content-type", "application/json")
            .body(body.clone());
        let (status, refusal) = json_body(send(request).await).await;
        assert_eq!(
            (status, refusal),
            (426, json!({"versions": ["0.1"]})),
            "AEP-Version {other:?}"
        );
    }
    assert!(relay.held("v").await.is_empty());
    assert_eq!(relay.metric("aep_relay_events_in_total").await, 0);
}

#[tokio::test]
async fn only_json_and_ndjson_are_taken() {
    let relay = start(Config::default()).await;
    let body = event("session.started", "t", 0).to_string();
    for content_type in ["text/plain", "application/xml", "application/ndjson-ish"] {
        let response = relay.post(content_type, body.clone()).await;
        let (status, refusal) = json_body(response).await;
        assert_eq!(status, 415, "{content_type}");
        assert!(refusal["error"].is_string());
    }
    let untyped = relay
        .request(reqwest::Method::POST, "/events")
        .header("aep-version", "0.1")
        .body(body);
    assert_eq!(send(untyped).await.status(), 415);
    assert!(relay.held("t").await.is_empty());
}

/// Posts `body` as NDJSON and returns the 400 body.
async fn refused(relay: &TestRelay, body: Vec<u8>) -> Value {
    let (status, refusal) = json_body(relay.post("application/x-ndjson", body).await).await;
    assert_eq!(status, 400, "{refusal}");
    refusal
}

fn line(value: &Value) -> Vec<u8> {
    let mut line = value.to_string().into_bytes();
    line.push(b'\n');
    line
}

#[tokio::test]
async fn a_bad_line_is_named_by_code_and_zero_based_index() {
    let relay = start(Config::default()).await;
    let good = |seq| line(&status("b", seq, "info"));

    let mut body = good(0);
    body.extend(b"{\"aep\": \"0.1\", \"id\": \n");
    let refusal = refused(&relay, body).await;
    assert_eq!(refusal["error"], "invalid-json");
    assert_eq!(refusal["line"], 1);
    assert!(refusal["detail"].as_str().is_some_and(|d| !d.is_empty()));

    let mut body = good(0);
    body.extend(good(1));
    body.extend(b"{\"aep\":\"0.1\",\"id\":\"\xff\xfe\"}\n");
    let refusal = refused(&relay, body).await;
    assert_eq!(refusal["error"], "invalid-utf8");
    assert_eq!(refusal["line"], 2);
    assert!(refusal["detail"].is_string());

    let mut no_id = status("b", 0, "info");
    no_id.as_object_mut().unwrap().remove("id");
    let refusal = refused(&relay, line(&no_id)).await;
    assert_eq!(refusal["error"], "invalid-event");
    assert_eq!(refusal["line"], 0);
    assert!(refusal["detail"].is_string());

    // A session event without a session fails the envelope too.
    let mut unscoped = status("b", 0, "info");
    unscoped.as_object_mut().unwrap().remove("session");
    let (status, refusal) =
        json_body(relay.post("application/json", unscoped.to_string()).await).await;
    assert_eq!(
        (status, refusal["error"].clone(), refusal["line"].clone()),
        (400, json!("invalid-event"), json!(0))
    );

    assert!(relay.held("b").await.is_empty());
    assert_eq!(relay.metric("aep_relay_events_in_total").await, 0);
}

#[tokio::test]
async fn the_line_index_is_the_index_in_the_batch() {
    let relay = start(Config::default()).await;
    // Blank lines are tolerated and are not part of the batch: the index
    // is the bad event's among the batch's events, as the published
    // reference relay reports it, so a client maps it back to what it
    // sent whatever blank lines its body held.
    let mut body = line(&status("i", 0, "info"));
    body.extend(b"\n   \n");
    body.extend(b"not json\n");
    let refusal = refused(&relay, body).await;
    assert_eq!(refusal["error"], "invalid-json");
    assert_eq!(refusal["line"], 1, "{refusal}");
}

#[tokio::test]
async fn a_batch_with_one_bad_line_ingests_nothing() {
    let relay = start(Config::default()).await;
    let filter = json!({"session": "whole"}).to_string();
    let mut live = relay.sse(&[("filter", &filter)]).await;
    let mut body = Vec::new();
    for seq in 0..3 {
        body.extend(line(&status("whole", seq, "error")));
    }
    body.extend(b"{\"broken\"\n");
    body.extend(line(&status("whole", 4, "error")));
    let refusal = refused(&relay, body).await;
    assert_eq!(refusal["line"], 3);
    // Nothing reached the live subscriber: the next thing it sees is the
    // event posted after the refusal.
    let marker = status("whole", 10, "info");
    relay.post_event(&marker).await;
    assert_eq!(live.event().await.json(), marker);
    assert_eq!(seqs(&relay.held("whole").await), [10]);
    assert_eq!(relay.metric("aep_relay_events_in_total").await, 1);
}

#[tokio::test]
async fn an_oversized_declared_body_is_413() {
    let relay = start(Config::default().max_body(1024)).await;
    let mut big = status("big", 0, "info");
    big["data"] = json!({"message": "x".repeat(2048)});
    let (status, refusal) = json_body(relay.post("application/json", big.to_string()).await).await;
    assert_eq!(status, 413);
    assert_eq!(
        refusal,
        json!({"error": "payload-too-large", "max_bytes": 1024})
    );
    assert!(relay.held("big").await.is_empty());
}

#[tokio::test]
async fn an_oversized_chunked_body_is_answered_not_reset() {
    let relay = start(Config::default().max_body(4096)).await;
    // A body without Content-Length, many times the limit, sent in chunks.
    let chunk = bytes::Bytes::from(line(&status("chunked", 0, "info")).repeat(64));
    let chunks: Vec<Result<bytes::Bytes, std::io::Error>> =
        (0..32).map(|_| Ok(chunk.clone())).collect();
    let body = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
    let (status, refusal) = json_body(relay.post("application/x-ndjson", body).await).await;
    assert_eq!(status, 413);
    assert_eq!(refusal["error"], "payload-too-large");
    assert!(relay.held("chunked").await.is_empty());
}

#[tokio::test]
async fn too_many_events_is_413_and_ingests_nothing() {
    let relay = start(Config::default().max_batch(3)).await;
    let events: Vec<String> = (0..4)
        .map(|seq| status("many", seq, "info").to_string())
        .collect();
    let (status, refusal) = json_body(relay.post_lines(&events).await).await;
    assert_eq!(status, 413);
    assert_eq!(
        refusal,
        json!({"error": "too-many-events", "max": 3, "count": 4})
    );
    assert!(relay.held("many").await.is_empty());
    // At the limit it is fine.
    assert_eq!(relay.post_lines(&events[..3]).await.status(), 202);
    assert_eq!(seqs(&relay.held("many").await), [0, 1, 2]);
}

#[tokio::test]
async fn commands_are_refused_on_post() {
    let relay = start_with_token(Config::default(), "tok").await;
    let cancel = command("control.cancel", "cmd");
    let (status, refusal) =
        json_body(relay.post("application/json", cancel.to_string()).await).await;
    assert_eq!(
        (status, refusal["error"].clone(), refusal["line"].clone()),
        (400, json!("command-refused"), json!(0))
    );
    let vendor = command("x.acme.control.reboot", "cmd");
    let lines = [status_line("cmd", 0), vendor.to_string()];
    let (status, refusal) = json_body(relay.post_lines(&lines).await).await;
    assert_eq!((status, refusal["line"].clone()), (400, json!(1)));
    assert!(relay.held("cmd").await.is_empty());
    // The acknowledgements are events, not commands.
    let mut accepted = event("control.accepted", "cmd", 0);
    accepted["cause"] = cancel["id"].clone();
    relay.post_event(&accepted).await;
}

fn status_line(session: &str, seq: u64) -> String {
    status(session, seq, "info").to_string()
}

#[tokio::test]
async fn discovery_is_true_to_the_config() {
    let relay = start(Config::default().buffer(37)).await;
    for path in ["/events", "/.well-known/aep"] {
        let response = relay.get(path).await;
        assert_eq!(response.headers()["content-type"], "application/json");
        let (status, doc) = json_body(response).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(doc["aep"], json!(["0.1"]));
        assert_eq!(
            doc["endpoints"],
            json!({"events": "/events", "stream": "/stream", "socket": "/socket"})
        );
        let capabilities = &doc["capabilities"];
        assert_eq!(capabilities["replay"], json!({"buffer": 37, "all": true}));
        assert_eq!(capabilities["filters"], json!(["attr-match"]));
        assert_eq!(capabilities["roster"], json!({}));
        assert!(capabilities["control"].is_object());
        // Without a token this relay routes no command, and says so.
        assert_eq!(doc["control"], json!({"routed": false}));
    }
    // The WebSocket hello declares the same facts.
    let mut ws = relay.ws_connect().await;
    ws.send(&hello("consumer")).await;
    let reply = ws.json().await;
    assert_eq!(
        reply["capabilities"]["replay"],
        json!({"buffer": 37, "all": true})
    );
}

#[tokio::test]
async fn discovery_says_commands_are_routed_when_a_token_is_set() {
    let relay = start_with_token(Config::default(), "t0k3n").await;
    let response = relay.get("/.well-known/aep").await;
    let (status, doc) = json_body(response).await;
    assert_eq!(status, 200);
    assert_eq!(doc["control"], json!({"routed": true}));
    assert!(
        !doc.to_string().contains("t0k3n"),
        "the token is never in it"
    );
}

/// A `progress.status` of about `pad` bytes more than a bare one.
fn padded(session: &str, seq: u64, pad: usize) -> Value {
    let mut e = status(session, seq, "info");
    e["message"] = "x".repeat(pad).into();
    e
}

#[tokio::test]
async fn a_session_buffer_is_bounded_in_bytes_and_says_what_it_evicted() {
    let relay = start(
        Config::default()
            .max_buffer_bytes(4096)
            .max_buffered_bytes(1 << 20),
    )
    .await;
    for seq in 0..10 {
        relay.post_event(&padded("big", seq, 1000)).await;
    }
    let held = relay.held("big").await;
    assert!(
        held.len() < 4,
        "held {} events of ~1 KiB in 4 KiB",
        held.len()
    );
    let bytes = relay.metric("aep_relay_buffered_bytes").await;
    assert!(bytes <= 4096, "{bytes} bytes held");
    let first = seqs(&held)[0];
    let from = json!([{"session": "big", "epoch": 0, "seq": -1}]).to_string();
    let items = relay.history(&[("from", &from)]).await;
    assert_eq!(
        items[0],
        SseItem::Comment(format!("replay-exhausted big 0:{first}"))
    );

    // An event larger than a session may hold is delivered live only, and
    // a resume across it is told so.
    let mut live = relay.sse(&[]).await;
    relay.post_event(&padded("huge", 0, 5000)).await;
    assert_eq!(seqs(&live.events(1).await), [0]);
    assert!(relay.held("huge").await.is_empty());
    let from = json!([{"session": "huge", "epoch": 0, "seq": -1}]).to_string();
    let items = relay.history(&[("from", &from)]).await;
    assert!(
        matches!(&items[0], SseItem::Comment(c) if c.starts_with("replay-exhausted huge")),
        "{items:?}"
    );
}

#[tokio::test]
async fn past_the_global_bytes_the_least_recently_written_session_goes() {
    let relay = start(
        Config::default()
            .max_buffer_bytes(4096)
            .max_buffered_bytes(5000),
    )
    .await;
    relay.post_event(&padded("one", 0, 1500)).await;
    relay.post_event(&padded("two", 0, 1500)).await;
    relay.post_event(&padded("three", 0, 1500)).await;
    assert!(relay.metric("aep_relay_buffered_bytes").await <= 5000);
    assert!(relay.held("one").await.is_empty());
    assert_eq!(relay.held("two").await.len(), 1);
    assert_eq!(relay.held("three").await.len(), 1);
    let from = json!([{"session": "one", "epoch": 0, "seq": -1}]).to_string();
    let items = relay.history(&[("from", &from)]).await;
    assert_eq!(
        items[0],
        SseItem::Comment("replay-exhausted one 0:1".into())
    );
}

#[tokio::test]
async fn a_utf8_last_event_id_the_relay_sent_resumes() {
    let relay = start(Config::default()).await;
    let session = "café-☕:1";
    for seq in 0..3 {
        relay.post_event(&status(session, seq, "info")).await;
    }
    let id = format!("{session}:0:0");
    let request = relay.request(reqwest::Method::GET, "/stream").header(
        "last-event-id",
        reqwest::header::HeaderValue::from_bytes(id.as_bytes()).unwrap(),
    );
    let mut resumed = relay.sse_with(request).await;
    assert_eq!(seqs(&resumed.events(2).await), [1, 2]);
}

#[tokio::test]
async fn absurd_limits_are_refused_at_start() {
    let refused = aep_relay::Relay::new(Config::default().max_batch(4_611_686_018_427_387_904))
        .err()
        .expect("refused");
    assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
    assert!(refused.to_string().contains("--max-batch"), "{refused}");
}

#[tokio::test]
async fn posts_past_the_in_flight_budget_are_busy_until_it_frees() {
    use tokio::io::AsyncWriteExt;
    // A body counts what has arrived of it: a slow upload of 131 000
    // bytes so far takes nearly the whole 128 KiB budget; one that has
    // sent only its head takes nothing. (The budget is the least a
    // 1 KiB `--max-frame` allows: a WebSocket message is read under it.)
    let budget = 128 * 1024;
    let relay = start(
        Config::default()
            .max_frame(1024)
            .max_body(budget)
            .max_inflight_bytes(budget),
    )
    .await;
    let head = format!(
        "POST /events HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-ndjson\r\nAEP-Version: 0.1\r\nContent-Length: {budget}\r\n\r\n",
        relay.addr
    );
    let mut idle = tcp_connect(relay.addr, None).await;
    idle.write_all(head.as_bytes()).await.unwrap();
    let mut slow = tcp_connect(relay.addr, None).await;
    slow.write_all(head.as_bytes()).await.unwrap();
    slow.write_all(&[b' '; 131_000]).await.unwrap();
    let line = json!({"aep":"0.1","id":"b1","type":"progress.status","time":"2026-12-06T10:00:00Z","source":"urn:a","agent":"a","session":"s","seq":0}).to_string();
    // The slow body is read as soon as it arrives (bounded wait): until
    // it all is, a POST could take the room its last bytes need.
    let mut held = 0;
    for _ in 0..400 {
        held = relay.metric("aep_relay_inflight_bytes").await;
        if held >= 131_000 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(held >= 131_000, "the slow body holds {held} bytes");
    let mut busy = None;
    for _ in 0..200 {
        let response = relay.post_lines(std::slice::from_ref(&line)).await;
        if response.status() == 503 {
            busy = Some(response);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let busy = busy.expect("a POST past the budget is answered 503");
    assert_eq!(busy.headers()["retry-after"], "1");
    let (_, body) = json_body(busy).await;
    assert_eq!(body["error"], "busy", "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("--max-inflight-bytes"),
        "{body}"
    );
    assert!(
        relay
            .metric("aep_relay_refused_total{reason=\"limit-exceeded\"}")
            .await
            >= 1
    );

    // The slow client goes: its share is free again (the idle one held
    // none of it).
    drop(slow);
    let mut accepted = false;
    for _ in 0..200 {
        if relay.post_lines(std::slice::from_ref(&line)).await.status() == 202 {
            accepted = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(accepted, "the budget is given back when a request ends");
    drop(idle);
    relay.stop().await;
}

#[test]
fn an_in_flight_budget_below_the_body_or_frame_limit_is_refused_at_start() {
    let error = Config::default()
        .max_body(1 << 20)
        .max_inflight_bytes(4096)
        .validate()
        .unwrap_err();
    assert!(error.contains("--max-inflight-bytes 4096"), "{error}");
    // A WebSocket message is read under the same budget: it must hold
    // the largest message and a read past it.
    let error = Config::default()
        .max_body(1024)
        .max_frame(1 << 20)
        .max_inflight_bytes(1 << 20)
        .validate()
        .unwrap_err();
    assert!(error.contains("--max-frame plus 64 KiB"), "{error}");
    assert!(Config::default()
        .max_body(1024)
        .max_frame(1 << 20)
        .max_inflight_bytes((1 << 20) + 64 * 1024)
        .validate()
        .is_ok());
}
