//! Nothing a peer sends makes a client panic or grow without bound: fake
//! servers answer junk, and every client ends in an error or a notice.

use std::time::Duration;

use crate::common::*;
use aep::control::{Address, Identity};
use aep::{ControlPause, Payload, Severity};
use aep_client::consume::{Binding, Item, Notice, Subscribe};
use aep_client::control::ControlClient;
use aep_client::http::{HttpConfig, HttpEmitter};
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

/// A server that reads a little and answers `reply` to every connection.
async fn junk_server(reply: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let reply = reply.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ =
                    tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf)).await;
                let _ = stream.write_all(&reply).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    format!("http://{addr}")
}

fn sse_junk() -> Vec<u8> {
    let mut body = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n".to_vec();
    body.extend_from_slice(b"data: not json\n\n");
    body.extend_from_slice(b"data: {\"aep\":\"9.9\",\"id\":\"x\"}\n\n");
    body.extend_from_slice(b"data: \xff\xfe\n\n");
    body.extend_from_slice(b": replay-exhausted\n: replay-exhausted s x:y\n");
    body.extend_from_slice(b"id: \0\nretry: -1\nevent\n");
    body.extend(std::iter::repeat_n(b'A', 200_000));
    body.extend_from_slice(b"\n\n\x00\x01\x02 data:{}\n");
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_junk_event_stream_gives_notices_not_panics() {
    let base = junk_server(sse_junk()).await;
    let mut sub = Subscribe::new(&base)
        .max_event_bytes(4096)
        .backoff(Duration::from_millis(10), Duration::from_millis(50))
        .start();
    let mut skipped = 0;
    let mut disconnects = 0;
    within(20, "a few rounds of junk", async {
        while disconnects < 3 {
            match sub.recv().await.expect("the stream goes on") {
                Ok(Item::Event(d)) => panic!("junk became an event: {d:?}"),
                Ok(Item::Notice(Notice::Skipped { .. })) => skipped += 1,
                Ok(Item::Notice(Notice::Disconnected(_))) => disconnects += 1,
                Ok(Item::Notice(_)) => {}
                Err(e) => panic!("junk is not a final refusal: {e}"),
            }
        }
    })
    .await;
    assert!(skipped >= 5, "each bad line is said: {skipped}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_is_not_http_is_a_network_error_everywhere() {
    let base = junk_server(b"\x16\x03\x01 this is not HTTP at all \xff\r\n\r\n".to_vec()).await;
    for binding in [Binding::Sse, Binding::WebSocket] {
        let mut sub = Subscribe::new(&base)
            .binding(binding)
            .backoff(Duration::from_millis(10), Duration::from_millis(50))
            .start();
        let item = within(10, "a notice", sub.recv()).await;
        assert!(
            matches!(item, Some(Ok(Item::Notice(Notice::Disconnected(_))))),
            "{binding:?}: {item:?}"
        );
    }
    let control = ControlClient::connect(&base, None, Identity::new("urn:a", "a")).await;
    assert!(control.is_err());

    let mut config = HttpConfig::new(&base, None);
    config.backoff = (Duration::from_millis(10), Duration::from_millis(50));
    let emitter = HttpEmitter::start(config);
    emitter
        .send(line("s", 0, "warning"), Severity::Warning)
        .await
        .unwrap();
    let flushed = emitter.close(Duration::from_millis(500)).await;
    assert_eq!(
        flushed.undelivered, 1,
        "kept and counted, not lost silently"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_relay_answering_nonsense_statuses() {
    let base = junk_server(
        b"HTTP/1.1 400 Bad Request\r\ncontent-length: 23\r\n\r\n{\"line\":999999999999999".to_vec(),
    )
    .await;
    let emitter = HttpEmitter::start(HttpConfig::new(&base, None));
    for seq in 0..3 {
        emitter
            .send(line("s", seq, "info"), Severity::Info)
            .await
            .unwrap();
    }
    within(10, "the batch is settled", async {
        while emitter.pending() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    // A 400 that names no usable line is bisected until each line stands
    // alone, then each is reported.
    assert_eq!(emitter.stats().rejected, 3);
    assert_eq!(emitter.rejected().len(), 3);
    let flushed = emitter.close(Duration::from_secs(5)).await;
    assert_eq!(flushed.undelivered, 0);
}

/// A WebSocket peer that says hello, acknowledges subscriptions, and
/// otherwise sends junk frames.
async fn junk_socket() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else {
                    return;
                };
                let junk = [
                    Message::text("not json"),
                    Message::text("[1,2,3]"),
                    Message::text(r#"{"type": 7}"#),
                    Message::text(r#"{"type": "replay-exhausted", "session": 5}"#),
                    Message::text(r#"{"type": "control.accepted", "cause": 12}"#),
                    Message::text(r#"{"type": "error", "cause": null, "code": {}}"#),
                    Message::text(r#"{"type": "roster", "id": "ro-1", "entries": "nope"}"#),
                    Message::text(r#"{"type": "x.y.z.w", "id": "e"}"#),
                    Message::binary(vec![0u8, 159, 146, 150]),
                    Message::text(r#"{"type": "closing", "delivered": "junk"}"#),
                ];
                while let Some(Ok(Message::Text(text))) = ws.next().await {
                    let frame: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
                    let answer = match frame["type"].as_str() {
                        Some("hello") => {
                            serde_json::json!({"type": "hello", "versions": ["0.1"], "capabilities": {"roster": {}}})
                        }
                        Some("subscribe") => {
                            serde_json::json!({"type": "subscribed", "id": frame["id"]})
                        }
                        _ => serde_json::json!({"type": "pong"}),
                    };
                    if ws.send(Message::text(answer.to_string())).await.is_err() {
                        return;
                    }
                    for message in junk.iter().cloned() {
                        if ws.send(message).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn junk_frames_do_not_break_the_websocket_clients() {
    let base = junk_socket().await;
    let mut sub = Subscribe::new(&base)
        .binding(Binding::WebSocket)
        .backoff(Duration::from_millis(10), Duration::from_millis(50))
        .start();
    let mut disconnects = 0;
    within(20, "rounds of junk frames", async {
        while disconnects < 2 {
            match sub.recv().await.expect("the stream goes on") {
                Ok(Item::Notice(Notice::Disconnected(_))) => disconnects += 1,
                Ok(Item::Event(d)) => panic!("junk became an event: {d:?}"),
                Ok(_) => {}
                Err(e) => panic!("{e}"),
            }
        }
    })
    .await;

    let mut config =
        aep_client::control::ControlConfig::new(&base, None, Identity::new("urn:a", "a"));
    config.window_ms = 200;
    config.retries = (50, 1);
    config.answer_timeout = Duration::from_secs(1);
    let client = ControlClient::connect_with(config).await.unwrap();
    let pause = Payload::ControlPause(ControlPause::new());
    // The junk peer closes after its `closing` frame or keeps talking:
    // either way the command ends (an error or a timeout), never a panic.
    let outcome = within(
        10,
        "the command ends",
        client.send(&Address::session("s"), &pause),
    )
    .await;
    if let Ok(settled) = outcome {
        assert_eq!(settled.outcome, aep::control::Outcome::Timeout);
    }
    let roster = within(10, "the roster ends", client.roster()).await;
    assert!(
        !matches!(roster, Ok(ref entries) if !entries.is_empty()),
        "{roster:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_keeps_its_cause_as_the_source() {
    use std::error::Error as _;
    let addr = free_addr().await;
    let config = aep::control::Identity::new("urn:a", "a");
    let failed = within(
        20,
        "the refused connection",
        ControlClient::connect(&format!("http://{addr}"), None, config),
    )
    .await
    .err()
    .expect("nothing listens there");
    assert!(
        matches!(&failed, aep_client::Error::Network(cause) if cause.words().contains("connection refused")),
        "{failed:?}"
    );
    // The chain reaches the operating system's refusal.
    let mut source = failed.source();
    let mut refused = false;
    for _ in 0..16 {
        let Some(err) = source else { break };
        refused |= err
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused);
        source = err.source();
    }
    assert!(refused, "no ConnectionRefused in the chain of {failed:?}");
}
