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
        let queued = relay.metric(QUEUED).await;
        assert!(
            queued <= BUDGET as u64 + FRAME,
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
    // budget: each queue was empty when the batch began, so none is cut
    // off for the others' share of the same events.
    const READERS: usize = 8;
    const EVENTS: u64 = 40;
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
    relay.post_batch(&batch).await;
    for task in tasks {
        task.await.expect("a reader got every event");
    }
    assert_eq!(relay.metric("aep_relay_disconnected_total").await, 0);
    wait_metric(&relay, QUEUED, 0).await;
}
