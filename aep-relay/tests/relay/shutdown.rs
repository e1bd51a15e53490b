//! Shutdown: every open stream is told (`: shutting-down` on SSE, a
//! `closing` frame and close 1001 on a WebSocket), and `serve` returns
//! within the grace period whatever the peers do.

use crate::common;

use std::time::Duration;

use aep_relay::Config;
use common::*;
use serde_json::json;

#[tokio::test]
async fn an_open_sse_stream_is_told_and_ends() {
    let relay = start(Config::default()).await;
    let mut live = relay.sse(&[]).await;
    let event = status("bye", 0, "info");
    relay.post_event(&event).await;
    assert_eq!(live.event().await.json(), event);
    let mut second = relay.sse(&[("from", "all")]).await;
    assert_eq!(second.event().await.json(), event);

    relay.begin_shutdown();
    for stream in [&mut live, &mut second] {
        assert_eq!(
            stream.next().await,
            Some(SseItem::Comment("shutting-down".into()))
        );
        assert_eq!(stream.next().await, None, "the stream ends");
    }
    assert!(relay.drained().await.clean);
}

#[tokio::test]
async fn a_websocket_gets_closing_with_positions_then_1001() {
    let relay = start(Config::default()).await;
    let mut ws = relay.ws("consumer").await;
    ws.subscribe(json!({"type": "subscribe", "id": "s-1", "filter": {"session": "bye"}}))
        .await;
    let mut other = status("other", 0, "info");
    other["epoch"] = 3.into();
    let mut events = vec![status("bye", 0, "info"), status("bye", 1, "info"), other];
    events[1]["epoch"] = 2.into();
    relay.post_batch(&events).await;
    assert_eq!(ws.json().await["seq"], 0);
    assert_eq!(ws.json().await["seq"], 1);
    let mut idle = relay.ws("both").await;

    relay.begin_shutdown();
    let (frames, code) = ws.closed().await;
    assert_eq!(code, Some(1001));
    assert_eq!(
        frames,
        [json!({
            "type": "closing",
            "reason": "shutting-down",
            "delivered": [{"sub": "s-1", "session": "bye", "epoch": 2, "seq": 1}],
        })]
    );
    let (frames, code) = idle.closed().await;
    assert_eq!(code, Some(1001));
    assert_eq!(
        frames,
        [json!({"type": "closing", "reason": "shutting-down", "delivered": []})]
    );
    assert!(relay.drained().await.clean);
}

#[tokio::test]
async fn serve_returns_when_a_websocket_never_answers_the_close() {
    let relay = start(Config::default().grace(Duration::from_millis(300))).await;
    // Connected and greeted, then never read again: the close handshake
    // is never answered.
    let mute = relay.ws("consumer").await;
    relay
        .wait_health("the socket", |h| h["websockets"] == 1)
        .await;
    let drained = relay.stop().await;
    assert!(
        !drained.clean,
        "a peer that never closed is not a clean drain"
    );
    drop(mute);
}

#[tokio::test]
async fn serve_returns_when_an_sse_consumer_is_stuck() {
    let relay = start(
        Config::default()
            .queue(2, 100_000)
            .buffer(16)
            .grace(Duration::from_millis(300)),
    )
    .await;
    let _stuck = RawSse::open(relay.addr, "/stream", None).await;
    relay
        .wait_health("the subscription", |h| h["subscriptions"] == 1)
        .await;
    // Fill its socket until its queue backs up: the stream is blocked on
    // a write and cannot send `: shutting-down`.
    let dropped = "aep_relay_dropped_total{reason=\"backpressure\"}";
    let mut backed_up = false;
    for seq in 0..400 {
        let mut e = status("stuck", seq, "info");
        e["data"] = json!({"message": "x".repeat(64 * 1024)});
        relay.post_event(&e).await;
        if relay.metric(dropped).await > 0 {
            backed_up = true;
            break;
        }
    }
    assert!(backed_up, "the consumer's queue never backed up");
    let drained = relay.stop().await;
    assert!(!drained.clean);
}

#[tokio::test]
async fn after_shutdown_nothing_is_accepted() {
    let relay = start(Config::default()).await;
    let addr = relay.addr;
    assert!(relay.stop().await.clean);
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    let connected = tokio::time::timeout(WAIT, socket.connect(addr))
        .await
        .expect("an answer in time");
    assert!(connected.is_err(), "the listener is closed");
}

/// While a large batch is fanned out, a subscription gets in and
/// `/healthz` answers: the batch takes the relay's lock a chunk at a time
/// and lets those waiting for it in between, so the subscription takes
/// the rest of the batch live (with the lock held for the whole batch, it
/// could only register once the batch was done, and would take none of
/// it), and no worker thread stays blocked behind the batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_and_healthz_get_in_while_a_large_batch_is_fanned_out() {
    let relay = std::sync::Arc::new(start(Config::default()).await);
    // Subscriptions that take nothing of the batch but keep its fan-out
    // busy.
    let mut consumers = Vec::new();
    for c in 0..20 {
        let mut ws = relay.ws("consumer").await;
        for s in 0..64 {
            ws.subscribe(json!({"type": "subscribe", "id": format!("{c}-{s}"), "filter": {"session": "elsewhere"}}))
                .await;
        }
        consumers.push(ws);
    }
    let mut late = relay.ws("consumer").await;
    let total = 10_000;
    let lines: Vec<String> = (0..total)
        .map(|seq| status("big", seq, "info").to_string())
        .collect();
    let poster = relay.clone();
    let post = tokio::spawn(async move { poster.post_lines(&lines).await.status() });

    // Once the batch is being fanned out (bounded look)...
    let mut started = false;
    for _ in 0..2_000 {
        let seen = relay.metric("aep_relay_events_in_total").await;
        if seen > 0 && seen < total {
            started = true;
            break;
        }
        assert!(!post.is_finished(), "the batch ended before it was seen");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert!(started, "the batch was never seen in flight");
    // ...a live subscription asks for the lock, and /healthz is asked.
    late.send(&json!({"type": "subscribe", "id": "late", "filter": {"session": "big"}}))
        .await;
    let health = tokio::time::timeout(WAIT, relay.health())
        .await
        .expect("/healthz answers");
    assert_eq!(health["ok"], true);
    assert_eq!(
        late.json().await,
        json!({"type": "subscribed", "id": "late"})
    );
    assert_eq!(
        tokio::time::timeout(WAIT, post)
            .await
            .expect("the POST ends")
            .unwrap(),
        202
    );
    // The late subscription took the end of the batch live, in order.
    let frames = late.until(|f| f["seq"] == total - 1).await;
    let seqs: Vec<u64> = frames.iter().filter_map(|f| f["seq"].as_u64()).collect();
    assert!(
        seqs.len() > 1,
        "the subscription registered only after the whole batch"
    );
    let first = seqs[0];
    assert_eq!(seqs, (first..total).collect::<Vec<_>>());
    drop(consumers);
}
