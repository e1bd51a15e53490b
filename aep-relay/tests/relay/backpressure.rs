//! Back-pressure (AEP-0003 §8.4): `debug`/`info` may be shed toward a
//! slow consumer, and are counted; `notice` and above are delivered or
//! the consumer is cut off, and told so, never dropped silently. What
//! the relay holds stays bounded meanwhile.

use crate::common;

use aep_relay::Config;
use common::*;
use serde_json::{json, Value};

/// The payload size of a flood event: a few of them fill a small socket.
const BIG: usize = 64 * 1024;
/// The most flood events a test posts before it gives up.
const MAX_FLOOD: u64 = 400;
const DROPPED: &str = "aep_relay_dropped_total{reason=\"backpressure\"}";

fn big(session: &str, seq: u64, severity: &str) -> Value {
    let mut e = status(session, seq, severity);
    e["data"] = json!({"message": "x".repeat(BIG)});
    e
}

/// Posts big `notice` events until no subscription is live any more;
/// returns how many were posted.
async fn flood_until_cut_off(relay: &TestRelay, session: &str) -> u64 {
    for seq in 0..MAX_FLOOD {
        relay.post_event(&big(session, seq, "notice")).await;
        if relay.health().await["subscriptions"] == 0 {
            return seq + 1;
        }
    }
    panic!("a consumer that never reads was never cut off");
}

/// What the relay holds is within its configured bounds.
async fn assert_bounded(relay: &TestRelay, buffer: u64) {
    let health = relay.health().await;
    let events = health["buffered_events"].as_u64().expect("buffered_events");
    assert!(events <= buffer, "{health}");
    let bytes = relay.metric("aep_relay_buffered_bytes").await;
    assert!(
        bytes <= buffer * (BIG as u64 + 1024),
        "{bytes} bytes buffered"
    );
    assert_eq!(health["subscriptions"], 0, "{health}");
}

/// `events` are `seq` 0, 1, 2 ... in order.
fn assert_prefix(events: &[SseItem]) {
    let got = seqs(events);
    let want: Vec<u64> = (0..got.len() as u64).collect();
    assert_eq!(got, want, "what was delivered is a gapless prefix");
}

#[tokio::test]
async fn an_sse_consumer_that_never_reads_is_cut_off_and_told() {
    let relay = start(Config::default().queue(2, 8).buffer(16)).await;
    let mut slow = RawSse::open(relay.addr, "/stream", None).await;
    relay
        .wait_health("the subscription", |h| h["subscriptions"] == 1)
        .await;
    let posted = flood_until_cut_off(&relay, "flood").await;
    assert_bounded(&relay, 16).await;

    // When it reads at last: what was delivered, then the reason, then
    // the end of the stream.
    assert!(slow.head().await.contains(" 200 "));
    let mut items = slow.read_to_end().await;
    let last = items.pop().expect("items");
    let reason = last.comment().expect("a closing comment");
    assert!(reason.starts_with("disconnected: backpressure"), "{reason}");
    assert!(
        items.iter().all(SseItem::is_event),
        "{:?}",
        comments(&items)
    );
    assert_prefix(&items);
    assert!((items.len() as u64) < posted);
    assert_eq!(relay.metric("aep_relay_disconnected_total").await, 1);
    relay
        .wait_health("the stream gone", |h| h["sse"] == 0)
        .await;

    // It resumes from its last id and learns exactly what it missed:
    // the rest, or that the rest predates the buffer.
    let last = items
        .last()
        .and_then(SseItem::id)
        .expect("an id")
        .to_owned();
    let request = relay
        .request(reqwest::Method::GET, "/stream")
        .query(&[("live", "0")]);
    let mut resumed = relay.sse_with(request.header("last-event-id", last)).await;
    let replay = resumed.read_to_end().await;
    let next = items.len() as u64;
    let earliest = posted - 16;
    let want: Vec<u64> = (next.max(earliest)..posted).collect();
    assert_eq!(seqs(&replay), want);
    if next < earliest {
        let marker = format!("replay-exhausted flood 0:{earliest}");
        assert_eq!(replay[0], SseItem::Comment(marker));
    }
}

#[tokio::test]
async fn a_websocket_consumer_that_stops_reading_is_cut_off_and_told() {
    let relay = start(Config::default().queue(2, 8).buffer(16)).await;
    let mut slow = relay.ws_connect_with(Some(4096)).await;
    slow.send(&hello("consumer")).await;
    assert_eq!(slow.json().await["type"], "hello");
    slow.subscribe(json!({"type": "subscribe", "id": "slow", "filter": {"session": "flood"}}))
        .await;
    let posted = flood_until_cut_off(&relay, "flood").await;
    assert_bounded(&relay, 16).await;

    let (mut frames, code) = slow.closed().await;
    assert_eq!(code, Some(1013), "try again later");
    let closing = frames.pop().expect("a closing frame");
    assert_eq!(closing["type"], "closing");
    assert_eq!(closing["reason"], "backpressure");
    let got: Vec<u64> = frames
        .iter()
        .map(|f| f["seq"].as_u64().expect("an event"))
        .collect();
    assert_eq!(
        got,
        (0..got.len() as u64).collect::<Vec<_>>(),
        "a gapless prefix"
    );
    assert!((got.len() as u64) < posted);
    // The closing frame names the last position delivered, to resume from.
    let last = got.last().copied().expect("some events were delivered");
    assert_eq!(
        closing["delivered"],
        json!([{"sub": "slow", "session": "flood", "epoch": 0, "seq": last}])
    );
    assert_eq!(relay.metric("aep_relay_disconnected_total").await, 1);
    relay
        .wait_health("the socket gone", |h| h["websockets"] == 0)
        .await;
}

#[tokio::test]
async fn only_debug_and_info_are_shed_and_every_drop_is_counted() {
    let relay = start(Config::default().queue(4, 100_000).buffer(64)).await;
    let mut consumer = RawSse::open(relay.addr, "/stream", None).await;
    relay
        .wait_health("the subscription", |h| h["subscriptions"] == 1)
        .await;

    // While the consumer does not read, its queue passes the soft bound.
    let (mut seq, mut loud, mut low) = (0, Vec::new(), 0);
    for _ in 0..MAX_FLOOD {
        let mut batch = vec![big("keep", seq, "notice")];
        loud.push(seq);
        seq += 1;
        for severity in ["info", "debug", "info", "debug"] {
            batch.push(status("keep", seq, severity));
            seq += 1;
            low += 1;
        }
        relay.post_batch(&batch).await;
        if relay.metric(DROPPED).await > 0 {
            break;
        }
    }
    let dropped = relay.metric(DROPPED).await;
    assert!(dropped > 0, "the soft bound was never passed");
    let mut marker = status("keep", seq, "critical");
    marker["data"] = json!({"message": "the end"});
    relay.post_event(&marker).await;

    // Now it keeps up: every notice-and-above event arrives, in order.
    let mut got = Vec::new();
    for _ in 0..100_000 {
        let item = consumer.next().await.expect("the stream stays open");
        let event = item.json();
        let done = event["seq"] == seq;
        got.push(event);
        if done {
            break;
        }
    }
    let severity = |e: &Value| e["severity"].as_str().unwrap_or("info").to_owned();
    let loud_got: Vec<u64> = got
        .iter()
        .filter(|e| ["notice", "critical"].contains(&severity(e).as_str()))
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    loud.push(seq);
    assert_eq!(loud_got, loud, "no notice-and-above event was dropped");
    let low_got = got.len() as u64 - loud_got.len() as u64;
    assert_eq!(low_got + dropped, low, "every shed event is counted");
    assert_eq!(relay.metric("aep_relay_disconnected_total").await, 0);
    assert!(relay.health().await["buffered_events"].as_u64() <= Some(64));
}

/// A consumer that stops reading for good is not kept: past the write
/// timeout its connection is closed and its task ends (the gauges go back
/// to zero), whether it ever reads again or not.
#[tokio::test]
async fn a_consumer_that_never_reads_again_is_closed_after_the_write_timeout() {
    let config = Config::default()
        .queue(2, 8)
        .buffer(16)
        .write_timeout(std::time::Duration::from_millis(300));
    let relay = start(config).await;
    let _sse = RawSse::open(relay.addr, "/stream", None).await;
    let mut ws = relay.ws_connect_with(Some(4096)).await;
    ws.send(&hello("consumer")).await;
    assert_eq!(ws.json().await["type"], "hello");
    ws.subscribe(json!({"type": "subscribe", "id": "stuck", "filter": {"session": "flood"}}))
        .await;
    relay
        .wait_health("both subscriptions", |h| h["subscriptions"] == 2)
        .await;
    flood_until_cut_off(&relay, "flood").await;
    relay
        .wait_health("both connections closed", |h| {
            h["sse"] == 0 && h["websockets"] == 0
        })
        .await;
}

/// The events of one batch, `seq` 0..count, `notice` and `info` taking
/// turns.
fn long_batch(session: &str, count: u64) -> Vec<Value> {
    (0..count)
        .map(|seq| status(session, seq, if seq % 2 == 0 { "notice" } else { "info" }))
        .collect()
}

#[tokio::test]
async fn an_sse_consumer_that_keeps_up_takes_a_batch_longer_than_its_queue() {
    // A batch is fanned out whole before any consumer can drain: its
    // depth before the batch is what counts, so a batch over both bounds
    // reaches a consumer that keeps up, every event of it.
    let relay = start(Config::default().queue(2, 8).buffer(1_000)).await;
    let mut consumer = relay.sse(&[("filter", r#"{"session":"long"}"#)]).await;
    relay
        .wait_health("the subscription", |h| h["subscriptions"] == 1)
        .await;
    relay.post_batch(&long_batch("long", 500)).await;
    let got = consumer.events(500).await;
    assert_eq!(seqs(&got), (0..500).collect::<Vec<_>>());
    assert_eq!(relay.metric(DROPPED).await, 0);
    assert_eq!(relay.metric("aep_relay_disconnected_total").await, 0);
    assert_eq!(relay.health().await["subscriptions"], 1);
}

#[tokio::test]
async fn a_websocket_consumer_that_keeps_up_takes_a_batch_longer_than_its_queue() {
    let relay = start(Config::default().queue(2, 8).buffer(1_000)).await;
    let mut consumer = relay.ws("consumer").await;
    consumer
        .subscribe(json!({"type": "subscribe", "id": "long", "filter": {"session": "long"}}))
        .await;
    relay.post_batch(&long_batch("long", 500)).await;
    let frames = consumer.until(|f| f["seq"] == 499).await;
    let got: Vec<u64> = frames
        .iter()
        .map(|f| f["seq"].as_u64().unwrap_or_else(|| panic!("an event: {f}")))
        .collect();
    assert_eq!(got, (0..500).collect::<Vec<_>>());
    assert_eq!(relay.metric(DROPPED).await, 0);
    assert_eq!(relay.metric("aep_relay_disconnected_total").await, 0);
}
