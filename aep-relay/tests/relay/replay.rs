//! Replay buffers (AEP-0003 §5): eviction is said, never silent, on both
//! consuming bindings; sessions are evicted least recently written first;
//! buffer admission dedupes while live fan-out forwards redelivery.

use crate::common;

use aep_relay::Config;
use common::*;
use serde_json::{json, Value};

fn flood(session: &str, epoch: u64, count: u64) -> Vec<Value> {
    (0..count)
        .map(|seq| {
            let mut e = status(session, seq, "info");
            e["epoch"] = epoch.into();
            e
        })
        .collect()
}

#[tokio::test]
async fn an_evicted_position_is_said_before_any_event_over_sse() {
    let relay = start(Config::default().buffer(4)).await;
    relay.post_batch(&flood("ev", 1, 7)).await;

    let from = json!([{"session": "ev", "epoch": 1, "seq": 0}]).to_string();
    let items = relay.history(&[("from", &from)]).await;
    assert_eq!(items[0], SseItem::Comment("replay-exhausted ev 1:3".into()));
    assert_eq!(seqs(&items), [3, 4, 5, 6]);
    assert_eq!(
        comments(&items).last().map(String::as_str),
        Some("replay-complete")
    );

    // From the start of the session: exhausted too.
    let from = json!([{"session": "ev", "epoch": 0, "seq": -1}]).to_string();
    let items = relay.history(&[("from", &from)]).await;
    assert_eq!(items[0], SseItem::Comment("replay-exhausted ev 1:3".into()));

    // From the last evicted position nothing is missing: no marker.
    let from = json!([{"session": "ev", "epoch": 1, "seq": 2}]).to_string();
    let items = relay.history(&[("from", &from)]).await;
    assert_eq!(comments(&items), ["replay-complete"]);
    assert_eq!(seqs(&items), [3, 4, 5, 6]);

    // A live resume by Last-Event-ID gets the marker first too.
    let request = relay
        .request(reqwest::Method::GET, "/stream")
        .header("last-event-id", "ev:1:1");
    let mut live = relay.sse_with(request).await;
    assert_eq!(
        live.next().await,
        Some(SseItem::Comment("replay-exhausted ev 1:3".into()))
    );
    assert_eq!(seqs(&live.events(4).await), [3, 4, 5, 6]);

    // The buffer holds what it advertises, no more.
    let health = relay.health().await;
    assert_eq!(health["buffered_events"], 4);
}

#[tokio::test]
async fn an_evicted_position_is_said_before_any_event_over_websocket() {
    let relay = start(Config::default().buffer(4)).await;
    let posted: Vec<String> = flood("ev", 1, 7).iter().map(Value::to_string).collect();
    relay.post_lines(&posted).await;
    let mut ws = relay.ws("consumer").await;
    ws.subscribe(json!({
        "type": "subscribe",
        "id": "resume-1",
        "filter": {"session": "ev"},
        "from": [{"session": "ev", "epoch": 1, "seq": 0}],
    }))
    .await;
    assert_eq!(
        ws.json().await,
        json!({"type": "replay-exhausted", "sub": "resume-1", "session": "ev", "earliest": {"epoch": 1, "seq": 3}})
    );
    for line in &posted[3..] {
        assert_eq!(&ws.text().await, line);
    }
    // Nothing more was queued: the next frame answers the next request.
    assert!(ws.sync("end").await.is_empty());
}

#[tokio::test]
async fn the_least_recently_written_session_is_evicted_and_said() {
    let relay = start(Config::default().max_sessions(2)).await;
    relay.post_event(&status("a", 0, "info")).await;
    relay
        .post_batch(&[status("b", 0, "info"), status("b", 1, "info")])
        .await;
    relay.post_event(&status("a", 1, "info")).await; // `a` is written again
    relay.post_event(&status("c", 0, "info")).await; // evicts `b`

    assert_eq!(seqs(&relay.held("a").await), [0, 1]);
    assert!(relay.held("b").await.is_empty());
    assert_eq!(seqs(&relay.held("c").await), [0]);
    assert_eq!(relay.health().await["sessions"], 2);

    // Positions that predate what `b` had are exhausted; the first
    // position it could still hold is the one after its last.
    for seq in [-1, 0] {
        let from = json!([{"session": "b", "seq": seq}]).to_string();
        let items = relay.history(&[("from", &from)]).await;
        let want = [
            SseItem::Comment("replay-exhausted b 0:2".into()),
            SseItem::Comment("replay-complete".into()),
        ];
        assert_eq!(items, want, "from seq {seq}");
    }
    // From its last position nothing was lost.
    let from = json!([{"session": "b", "seq": 1}]).to_string();
    assert_eq!(
        comments(&relay.history(&[("from", &from)]).await),
        ["replay-complete"]
    );
    let mut ws = relay.ws("consumer").await;
    ws.subscribe(json!({"type": "subscribe", "id": 7, "from": [{"session": "b", "seq": 0}]}))
        .await;
    let marker = ws.json().await;
    assert_eq!(
        (
            marker["type"].as_str(),
            &marker["sub"],
            marker["session"].as_str()
        ),
        (Some("replay-exhausted"), &json!(7), Some("b"))
    );
    // `from=all` names no position, so it never says exhausted, and the
    // evicted session is simply absent.
    let items = relay.history(&[("from", "all")]).await;
    assert_eq!(comments(&items), ["replay-complete"]);
    assert_eq!(seqs(&items), [0, 1, 0]);
}

#[tokio::test]
async fn redelivery_is_forwarded_live_but_replayed_once() {
    let relay = start(Config::default()).await;
    let filter = json!({"session": "d"}).to_string();
    let mut live = relay.sse(&[("filter", &filter)]).await;
    let mut ws = relay.ws("consumer").await;
    ws.subscribe(json!({"type": "subscribe", "id": "d", "filter": {"session": "d"}}))
        .await;

    let first = status("d", 0, "notice").to_string();
    relay.post("application/json", first.clone()).await;
    relay.post("application/json", first.clone()).await; // an at-least-once retry
    let marker = status("d", 1, "info").to_string();
    relay.post("application/json", marker.clone()).await;

    let delivered: Vec<String> = live
        .events(3)
        .await
        .iter()
        .map(|i| i.data().to_owned())
        .collect();
    assert_eq!(delivered, [first.clone(), first.clone(), marker.clone()]);
    for want in [&first, &first, &marker] {
        assert_eq!(&ws.text().await, want);
    }
    let held: Vec<String> = relay
        .held("d")
        .await
        .iter()
        .map(|i| i.data().to_owned())
        .collect();
    assert_eq!(held, [first, marker]);
    assert_eq!(relay.metric("aep_relay_duplicates_total").await, 1);
}

#[tokio::test]
async fn replay_then_live_has_no_gap_and_no_duplicate() {
    let relay = start(Config::default()).await;
    relay.post_batch(&flood("seam", 0, 3)).await;
    let from = json!([{"session": "seam", "seq": 0}]).to_string();
    let mut live = relay.sse(&[("from", &from)]).await;
    let more = flood("seam", 0, 6);
    relay.post_batch(&more[3..]).await;
    assert_eq!(seqs(&live.events(5).await), [1, 2, 3, 4, 5]);
    let marker = status("seam", 99, "info");
    relay.post_event(&marker).await;
    assert_eq!(live.event().await.json(), marker);
}

#[tokio::test]
async fn a_session_id_cannot_break_the_sse_framing() {
    let relay = start(Config::default().buffer(1)).await;
    let evil = "evil\n\nid: other:0:9\ndata: {}\r";
    let mut live = relay.sse(&[]).await;
    let events = flood(evil, 0, 2);
    relay.post_batch(&events).await;
    for event in &events {
        let item = live.event().await;
        let SseItem::Event { raw, id, .. } = &item else {
            unreachable!()
        };
        assert_eq!(id, &None, "no id line for a session an id line cannot hold");
        assert_eq!(raw.lines().count(), 2, "{raw:?}");
        assert_eq!(&item.json(), event);
    }
    // The exhaustion comment stays one line: the session is JSON-quoted.
    let from = json!([{"session": evil, "seq": -1}]).to_string();
    let items = relay.history(&[("from", &from)]).await;
    let quoted = serde_json::to_string(evil).unwrap();
    assert_eq!(
        items[0],
        SseItem::Comment(format!("replay-exhausted {quoted} 0:1"))
    );
    assert_eq!(seqs(&items), [1]);
    // A session with a space is quoted too, so the comment splits cleanly.
    relay.post_batch(&flood("two words", 0, 2)).await;
    let from = json!([{"session": "two words", "seq": -1}]).to_string();
    let items = relay.history(&[("from", &from)]).await;
    assert_eq!(
        items[0],
        SseItem::Comment("replay-exhausted \"two words\" 0:1".into())
    );
}

#[tokio::test]
async fn a_history_read_says_when_the_start_of_its_session_is_gone() {
    // A history read (`live=0`, the filter naming the session, no `from`)
    // asks for the session from its start: eviction is said, first.
    let relay = start(Config::default().buffer(3).max_sessions(1)).await;
    relay.post_batch(&flood("kept", 0, 3)).await;
    let items = relay.history(&[("filter", r#"{"session":"kept"}"#)]).await;
    assert_eq!(comments(&items), ["replay-complete"], "nothing evicted yet");

    relay.post_batch(&flood("kept", 0, 5)[3..]).await;
    let items = relay.history(&[("filter", r#"{"session":"kept"}"#)]).await;
    assert_eq!(
        items[0],
        SseItem::Comment("replay-exhausted kept 0:2".into())
    );
    assert_eq!(seqs(&items), [2, 3, 4]);

    // A session evicted whole says so too, with nothing after.
    relay.post_batch(&flood("other", 0, 1)).await;
    let items = relay.history(&[("filter", r#"{"session":"kept"}"#)]).await;
    assert_eq!(
        items[0],
        SseItem::Comment("replay-exhausted kept 0:5".into())
    );
    assert!(seqs(&items).is_empty());

    // `from=all` is what is held, by definition: no marker.
    let items = relay.history(&[("from", "all")]).await;
    assert_eq!(comments(&items), ["replay-complete"]);
}
