//! One memory budget across connections: the bytes queued toward all
//! consumers together (`--max-queued-bytes`) and the bytes of commands
//! waiting for all emitters together (`--max-command-bytes`). Past the
//! first, the consumer being enqueued to is cut off as at its own
//! `--queue-bytes`; past the second, a command is refused `busy` as at a
//! full queue. Every byte charged comes back when delivered or when its
//! connection goes away.

use crate::common;

use std::time::Duration;

use aep_relay::Config;
use common::*;
use serde_json::{json, Value};

/// The payload size of a flood event.
const BIG: usize = 64 * 1024;
/// One queued delivery of a flood event, its overhead included.
const FRAME: u64 = BIG as u64 + 4 * 1024;
/// The relay-wide budget under test: a few flood events.
const BUDGET: usize = 1 << 20;
/// The most flood events a test posts before it gives up: far below what
/// the consumers' own `--queue-bytes` (32 MiB) would cut off.
const MAX_FLOOD: u64 = 300;
const QUEUED: &str = "aep_relay_queued_bytes";
const COMMANDS: &str = "aep_relay_command_bytes";
const TOKEN: &str = "budget-token";

fn big(session: &str, seq: u64) -> Value {
    let mut e = status(session, seq, "notice");
    e["data"] = json!({"message": "x".repeat(BIG)});
    e
}

/// Waits (bounded) until the metric `sample` reads `want`.
async fn wait_metric(relay: &TestRelay, sample: &str, want: u64) {
    let mut last = 0;
    for _ in 0..400 {
        last = relay.metric(sample).await;
        if last == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{sample} stayed at {last}, never {want}");
}

#[tokio::test]
async fn consumers_past_the_relay_wide_budget_are_cut_off_and_one_that_reads_keeps_up() {
    let config = Config::default()
        .max_queued_bytes(BUDGET)
        .buffer(16)
        .max_subscriptions(4);
    let relay = start(config).await;
    // Two SSE consumers and two WebSocket consumers that never read, each
    // far below its own `--queue-bytes`.
    let mut slow_sse = Vec::new();
    for _ in 0..2 {
        slow_sse.push(RawSse::open(relay.addr, "/stream", None).await);
    }
    let mut slow_ws = Vec::new();
    for n in 0..2 {
        let mut ws = relay.ws_connect_with(Some(4096)).await;
        ws.send(&hello("consumer")).await;
        assert_eq!(ws.json().await["type"], "hello");
        ws.subscribe(
            json!({"type": "subscribe", "id": format!("slow-{n}"), "filter": {"session": "flood"}}),
        )
        .await;
        slow_ws.push(ws);
    }
    // One consumer that reads every event before the next is posted.
    let mut reader = relay.sse(&[]).await;
    relay
        .wait_health("five subscriptions", |h| h["subscriptions"] == 5)
        .await;

    let mut posted = 0;
    while relay.health().await["subscriptions"] != 1 {
        assert!(
            posted < MAX_FLOOD,
            "the consumers that never read were never cut off: {}",
            relay.health().await
        );
        relay.post_event(&big("flood", posted)).await;
        let got = reader.event().await.json();
        assert_eq!(got["seq"], posted, "the reader keeps up");
        // The budget, one batch past it, and the one delivery each of
        // the four consumers that stopped reading may be writing (counted,
        // never refused: the relay holds those bytes all the same).
        let queued = relay.metric(QUEUED).await;
        assert!(
            queued <= BUDGET as u64 + FRAME + 4 * FRAME,
            "{queued} bytes queued, the budget is {BUDGET}"
        );
        posted += 1;
    }

    // Each is told, as at its own bound.
    for mut sse in slow_sse {
        assert!(sse.head().await.contains(" 200 "));
        let mut items = sse.read_to_end().await;
        let last = items.pop().expect("items");
        let reason = last.comment().expect("a closing comment");
        assert!(reason.starts_with("disconnected: backpressure"), "{reason}");
        assert!((items.len() as u64) < posted);
    }
    for mut ws in slow_ws {
        let (mut frames, code) = ws.closed().await;
        assert_eq!(code, Some(1013), "try again later");
        let closing = frames.pop().expect("a closing frame");
        assert_eq!(closing["type"], "closing");
        assert_eq!(closing["reason"], "backpressure");
    }
    relay
        .wait_health("the cut consumers gone", |h| {
            h["sse"] == 1 && h["websockets"] == 0
        })
        .await;
    assert_eq!(relay.metric("aep_relay_disconnected_total").await, 4);
    // What they held came back; the reader still takes every event.
    wait_metric(&relay, QUEUED, 0).await;
    relay.post_event(&big("flood", posted)).await;
    assert_eq!(reader.event().await.json()["seq"], posted);
    drop(reader);
    relay.wait_health("all gone", |h| h["sse"] == 0).await;
    wait_metric(&relay, QUEUED, 0).await;
}

/// A command of about `BIG` bytes to `session`.
fn big_command(session: &str) -> Value {
    let mut c = command("control.cancel", session);
    c["data"]["reason"] = "x".repeat(BIG / 4).into();
    c
}

#[tokio::test]
async fn a_command_past_the_relay_wide_command_bytes_is_refused_busy() {
    const COMMAND_BUDGET: usize = 64 * 1024;
    let relay = start_with_token(Config::default().max_command_bytes(COMMAND_BUDGET), TOKEN).await;
    // An emitter that claims its session, then never reads its commands.
    let mut owner = relay.ws_connect_with(Some(4096)).await;
    owner
        .send(&emitter_hello("stuck/1", &["control.cancel"]))
        .await;
    assert_eq!(owner.json().await["type"], "hello");
    owner.send(&event("session.started", "job", 0)).await;
    assert!(owner.sync("claimed").await.is_empty());

    let mut sender = relay.ws("consumer").await;
    let mut refused = None;
    for n in 0..200 {
        let cmd = big_command("job");
        sender.send(&cmd).await;
        let frames = sender.sync(&format!("sent-{n}")).await;
        let queued = relay.metric(COMMANDS).await;
        assert!(
            queued <= (COMMAND_BUDGET + BIG) as u64,
            "{queued} bytes of commands queued, the budget is {COMMAND_BUDGET}"
        );
        if let Some(frame) = frames.into_iter().next() {
            assert_eq!(frame["cause"], cmd["id"], "{frame}");
            refused = Some(frame);
            break;
        }
    }
    // Far below the owner's own 256 commands and 16 MiB.
    let frame = refused.expect("a command past the budget was refused");
    assert_eq!(frame["type"], "error");
    assert_eq!(frame["code"], "busy", "{frame}");
    assert!(
        frame["detail"]
            .as_str()
            .is_some_and(|d| d.contains("the relay's command queues")),
        "{frame}"
    );
    // The owner gone, what its queue held comes back.
    drop(owner);
    relay
        .wait_roster("the owner gone", |r| {
            r.iter().all(|e| e["instance"] != "stuck/1")
        })
        .await;
    wait_metric(&relay, COMMANDS, 0).await;
}

#[tokio::test]
async fn one_batch_cuts_off_no_consumer_that_keeps_up() {
    // Eight consumers that read as fast as they can, and one batch whose
    // deliveries to them all come to several times the relay-wide
    // budget: the budget counts each event once, however many queues
    // hold it, so none is cut off for the others' share of the same
    // events.
    const READERS: usize = 8;
    const EVENTS: u64 = 12;
    let config = Config::default().max_queued_bytes(BUDGET).buffer(64);
    let relay = start(config).await;
    let mut readers = Vec::new();
    for _ in 0..READERS {
        readers.push(relay.sse(&[]).await);
    }
    relay
        .wait_health("the readers", |h| h["subscriptions"] == READERS as u64)
        .await;
    let tasks: Vec<_> = readers
        .into_iter()
        .map(|mut reader| {
            tokio::spawn(async move {
                for seq in 0..EVENTS {
                    let got = reader.event().await.json();
                    assert_eq!(got["seq"], seq, "every event, in order");
                }
            })
        })
        .collect();
    let batch: Vec<Value> = (0..EVENTS).map(|seq| big("batch", seq)).collect();
    assert!(
        READERS as u64 * EVENTS * FRAME > 2 * BUDGET as u64,
        "the deliveries together pass the budget"
    );
    assert!(EVENTS * FRAME < BUDGET as u64, "the batch fits it");
    relay.post_batch(&batch).await;
    for task in tasks {
        task.await.expect("a reader got every event");
    }
    assert_eq!(relay.metric("aep_relay_disconnected_total").await, 0);
    wait_metric(&relay, QUEUED, 0).await;
}

/// The first `sent` bytes of a client's text frame of `len` payload bytes
/// (masked with the zero key, so the payload reads as sent).
fn partial_frame(len: usize, sent: usize) -> Vec<u8> {
    let mut frame = vec![0x81, 0x80 | 127];
    frame.extend_from_slice(&(len as u64).to_be_bytes());
    frame.extend_from_slice(&[0; 4]);
    frame.extend(std::iter::repeat_n(b' ', sent));
    frame
}

#[tokio::test]
async fn websocket_messages_are_read_under_the_in_flight_budget_and_stalled_ones_let_go() {
    use tokio::io::AsyncWriteExt;
    const INFLIGHT: &str = "aep_relay_inflight_bytes";
    let budget = 192 * 1024;
    let config = Config::default()
        .max_frame(128 * 1024)
        .max_body(128 * 1024)
        .max_inflight_bytes(budget)
        .message_timeout(Duration::from_millis(800));
    let relay = start(config).await;
    let mut consumer = relay.ws("consumer").await;
    consumer
        .subscribe(json!({"type": "subscribe", "id": "all", "filter": {"session": ["big"]}}))
        .await;
    // An emitter that only says `hello` holds nothing and is never timed
    // out for it.
    let mut idle = relay.ws("emitter").await;
    // Six emitters each send 80 KB of a 120 KB message and stall: 480 KB
    // begun, at most the budget of it read.
    let mut stalled = Vec::new();
    for _ in 0..6 {
        let mut ws = relay.ws("emitter").await;
        ws.socket
            .get_mut()
            .write_all(&partial_frame(120_000, 80_000))
            .await
            .unwrap();
        stalled.push(ws);
    }
    let mut peak = 0;
    for _ in 0..20 {
        let held = relay.metric(INFLIGHT).await;
        assert!(held <= budget as u64, "{held} bytes in flight");
        peak = peak.max(held);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(peak >= 80_000, "the begun messages were read: {peak}");
    // Each is closed once its message outlives the timeout: stalled
    // (1008), or left waiting for the budget (1013).
    let mut codes = Vec::new();
    for mut ws in stalled {
        let code = loop {
            match ws.next().await {
                Got::Text(text) => {
                    let frame: Value = serde_json::from_str(&text).unwrap();
                    assert_eq!(frame["type"], "closing", "{frame}");
                }
                Got::Close(code) => break code,
                Got::Ended => panic!("ended without a close frame"),
            }
        };
        codes.push(code);
    }
    assert!(codes.contains(&Some(1008)), "{codes:?}");
    assert!(
        codes.iter().all(|c| matches!(c, Some(1008 | 1013))),
        "{codes:?}"
    );
    wait_metric(&relay, INFLIGHT, 0).await;
    idle.send(&json!({"type": "ping", "t": 7})).await;
    assert_eq!(idle.json().await, json!({"type": "pong", "t": 7}));

    // A whole message larger than one fragment goes through both ways.
    let mut emitter = relay.ws("emitter").await;
    let mut event = status("big", 0, "notice");
    event["data"] = json!({"message": "é".repeat(50_000)});
    emitter.send(&event).await;
    let got = consumer.json().await;
    assert_eq!(got["data"], event["data"]);
    wait_metric(&relay, INFLIGHT, 0).await;
    relay.stop().await;
}

#[tokio::test]
async fn a_roster_reply_is_charged_to_the_in_flight_budget_and_refused_busy_without_room() {
    use tokio::io::AsyncWriteExt;
    let config = Config::default()
        .max_frame(96 * 1024)
        .max_body(64 * 1024)
        .max_inflight_bytes(160 * 1024)
        .message_timeout(Duration::from_millis(800));
    let relay = start(config).await;
    let mut watcher = relay.ws("consumer").await;
    // A reply is charged twice its bound, a quarter of the budget: 80 KiB.
    // A message of 90 KB being read leaves it no room.
    let mut stalled = relay.ws("emitter").await;
    stalled
        .socket
        .get_mut()
        .write_all(&partial_frame(95_000, 90_000))
        .await
        .unwrap();
    let mut refused = None;
    for n in 0..100 {
        watcher.send(&json!({"type": "roster", "id": n})).await;
        let reply = watcher.json().await;
        if reply["type"] == "error" {
            refused = Some(reply);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let refused = refused.expect("a roster refused while a message is read");
    assert_eq!(refused["code"], "busy", "{refused}");
    // The stalled message is let go; the roster is answered again.
    loop {
        if let Got::Close(_) | Got::Ended = stalled.next().await {
            break;
        }
    }
    wait_metric(&relay, "aep_relay_inflight_bytes", 0).await;
    watcher
        .send(&json!({"type": "roster", "id": "again"}))
        .await;
    let reply = watcher.json().await;
    assert_eq!(reply["type"], "roster", "{reply}");
    wait_metric(&relay, "aep_relay_inflight_bytes", 0).await;
    relay.stop().await;
}

#[tokio::test]
async fn connection_state_is_bounded_across_connections_and_given_back() {
    const STATE: &str = "aep_relay_state_bytes";
    let max = 64 * 1024;
    let relay = start(Config::default().max_state_bytes(max)).await;
    // Subscriptions with 8.8 KB filters, each charged about 28 KB: the
    // third passes the budget and is refused, naming it.
    let sessions: Vec<String> = (0..200).map(|i| format!("s{i:040}")).collect();
    let mut ws = relay.ws("consumer").await;
    let mut refused = None;
    for n in 0..10 {
        ws.send(&json!({"type": "subscribe", "id": n, "filter": {"session": sessions}}))
            .await;
        let reply = ws.json().await;
        if reply["type"] == "error" {
            refused = Some((n, reply));
            break;
        }
        assert_eq!(reply["type"], "subscribed", "{reply}");
    }
    let (n, refused) = refused.expect("a subscription past --max-state-bytes is refused");
    assert_eq!(n, 2, "two fit in 64 KiB");
    assert_eq!(refused["code"], "limit-exceeded", "{refused}");
    assert!(
        refused["detail"]
            .as_str()
            .unwrap()
            .contains("--max-state-bytes"),
        "{refused}"
    );
    let held = relay.metric(STATE).await;
    assert!(held > 50_000 && held <= max as u64, "{held}");
    // A new connection's hello, 8 KB of declarations, has no room:
    // refused busy, closed 1013.
    let mut late = relay.ws_connect().await;
    let mut big_hello = hello("emitter");
    big_hello["identity"] = json!({"agent": "a", "instance": "i".repeat(8_000)});
    late.send(&big_hello).await;
    let said = late.json().await;
    assert_eq!(said["code"], "busy", "{said}");
    let code = loop {
        match late.next().await {
            Got::Close(code) => break code,
            Got::Ended => break None,
            Got::Text(_) => {}
        }
    };
    assert_eq!(code, Some(1013));
    // A connection whose hello and subscription fit the allowance each
    // connection has of its own gets in all the same: a full budget
    // locks nobody out who keeps little.
    let mut small = relay.ws("consumer").await;
    small
        .subscribe(json!({"type": "subscribe", "id": "a", "filter": {"session": "s0"}}))
        .await;
    assert_eq!(relay.metric(STATE).await, held, "not charged to the budget");
    // Unsubscribing and leaving give every byte back.
    ws.send(&json!({"type": "unsubscribe", "id": 0})).await;
    assert_eq!(ws.json().await["type"], "unsubscribed");
    assert!(relay.metric(STATE).await < held);
    drop(ws);
    wait_metric(&relay, STATE, 0).await;
    relay.stop().await;
}

#[tokio::test]
async fn a_large_event_an_sse_consumer_has_not_read_stays_counted_after_the_buffer_lets_it_go() {
    // One 8 MiB event to a consumer that reads nothing: its queue hands
    // it on to be written, and the buffer then evicts it (other
    // sessions' events take its room). The relay still holds it, and
    // `--max-queued-bytes` says so until the consumer goes.
    let config = Config::default()
        .max_body(16 << 20)
        .max_buffered_bytes(9 << 20)
        .max_buffer_bytes(9 << 20);
    let relay = start(config).await;
    let mut slow = RawSse::open(
        relay.addr,
        "/stream?filter=%7B%22session%22%3A%22big%22%7D",
        None,
    )
    .await;
    assert!(slow.head().await.contains("200"));
    relay
        .wait_health("the consumer", |h| h["subscriptions"] == 1)
        .await;
    let mut large = status("big", 0, "notice");
    large["data"] = json!({"message": "x".repeat(8 << 20)});
    relay.post_event(&large).await;
    // Other sessions' events push it out of the buffer.
    for n in 0..6 {
        relay.post_event(&big(&format!("other-{n}"), 0)).await;
        let mut filler = status(&format!("filler-{n}"), 0, "notice");
        filler["data"] = json!({"message": "y".repeat(2 << 20)});
        relay.post_event(&filler).await;
    }
    assert!(
        relay.held("big").await.is_empty(),
        "evicted from the buffer"
    );
    let queued = relay.metric(QUEUED).await;
    assert!(
        queued >= 8 << 20,
        "the event being written is counted: {queued}"
    );
    drop(slow);
    wait_metric(&relay, QUEUED, 0).await;
}
