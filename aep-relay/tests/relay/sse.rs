//! `GET /stream` (AEP-0003 §3.3, §5, §6, §7): message framing, filters,
//! capture ceilings, and every way to resume.

use crate::common;

use aep_relay::Config;
use common::*;
use serde_json::{json, Value};

fn heartbeat() -> Value {
    json!({
        "aep": "0.1",
        "id": fresh_id(),
        "type": "agent.heartbeat",
        "time": "2026-12-03T09:00:00Z",
        "source": "urn:aep:test:emitter",
        "agent": "test-agent",
    })
}

#[tokio::test]
async fn messages_carry_event_data_and_id_lines() {
    let relay = start(Config::default()).await;
    let mut live = relay.sse(&[]).await;
    let mut positioned = status("team:a", 5, "info");
    positioned["epoch"] = 2.into();
    let line = positioned.to_string();
    relay.post("application/json", line.clone()).await;
    let SseItem::Event { raw, .. } = live.event().await else {
        unreachable!()
    };
    assert_eq!(
        raw,
        format!("event: progress.status\ndata: {line}\nid: team:a:2:5")
    );

    // Agent-scoped events are not resumable positions: no `id:` line.
    let beat = heartbeat();
    relay.post_event(&beat).await;
    let SseItem::Event { raw, event, id, .. } = live.event().await else {
        unreachable!()
    };
    assert_eq!(event.as_deref(), Some("agent.heartbeat"));
    assert_eq!(id, None);
    assert_eq!(raw, format!("event: agent.heartbeat\ndata: {beat}"));
    // ... and not replayed either.
    let all = relay.history(&[("from", "all")]).await;
    assert_eq!(seqs(&all), [5]);
}

#[tokio::test]
async fn the_filter_selects_what_is_delivered() {
    let relay = start(Config::default()).await;
    let filter = json!({"type": ["tool.*"], "severity": {"gte": "notice"}}).to_string();
    let mut live = relay.sse(&[("filter", &filter)]).await;
    let mut wanted = event("tool.failed", "f", 1);
    wanted["severity"] = "error".into();
    let mut quiet = event("tool.requested", "f", 2);
    quiet["severity"] = "info".into();
    let mut other = status("f", 3, "critical");
    other["type"] = "progress.status".into();
    let mut last = event("tool.denied", "f", 4);
    last["severity"] = "warning".into();
    relay
        .post_batch(&[wanted.clone(), quiet, other, last.clone()])
        .await;
    assert_eq!(live.event().await.json(), wanted);
    assert_eq!(live.event().await.json(), last);
}

#[tokio::test]
async fn an_invalid_subscription_is_400_readable_by_a_page() {
    // With a token any page may read the relay (a tokenless one grants
    // only pages on this machine, see `auth.rs`).
    let relay = start_with_token(Config::default(), "page-token").await;
    let refusals: [(&str, &str); 7] = [
        ("filter", "{\"seq\": 1}"),
        ("filter", "{\"type\": \"*\"}"),
        ("filter", "not json"),
        ("filter", "[1, 2]"),
        ("capture", "everything"),
        ("from", "{\"session\": \"s\"}"),
        ("from", "[{\"session\": \"s\", \"seq\": -2}]"),
    ];
    for (name, value) in refusals {
        let request = relay
            .request(reqwest::Method::GET, "/stream")
            .header("origin", "https://dashboard.example")
            .query(&[(name, value)]);
        let response = send(request).await;
        assert_eq!(
            response
                .headers()
                .get("access-control-allow-origin")
                .map(|v| v.to_str().unwrap()),
            Some("*"),
            "{name}={value}"
        );
        let (status, refusal) = json_body(response).await;
        assert_eq!(status, 400, "{name}={value}");
        assert_eq!(refusal["error"], "invalid-filter", "{name}={value}");
        assert!(refusal["detail"].is_string());
    }
    let many = serde_json::to_string(&vec![json!({"session": "s"}); 3]).unwrap();
    let relay = start(Config::default().max_from(2)).await;
    let (status, refusal) = json_body(
        relay
            .get(&format!("/stream?from={}", urlencode(&many)))
            .await,
    )
    .await;
    assert_eq!(
        (status, refusal["error"].as_str()),
        (400, Some("limit-exceeded"))
    );
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

const CANARY: &str = "CANARY-prompt-text never below redacted";

fn run_started(session: &str, seq: u64, capture: &str) -> Value {
    let mut e = event("run.started", session, seq);
    e["run"] = "r1".into();
    e["capture"] = capture.into();
    e["data"] = json!({"trigger": "user", "prompt": CANARY});
    e
}

#[tokio::test]
async fn the_capture_ceiling_down_levels_and_never_up_levels() {
    let relay = start(Config::default()).await;
    let filter = json!({"session": "cap"}).to_string();
    let mut at_metadata = relay
        .sse(&[("filter", &filter), ("capture", "metadata")])
        .await;
    let mut at_redacted = relay
        .sse(&[("filter", &filter), ("capture", "redacted")])
        .await;
    let mut at_full = relay.sse(&[("filter", &filter), ("capture", "full")]).await;
    let mut at_none = relay.sse(&[("filter", &filter), ("capture", "none")]).await;

    let redacted = run_started("cap", 0, "redacted").to_string();
    let full = run_started("cap", 1, "full").to_string();
    let mut metadata = event("run.started", "cap", 2);
    metadata["data"] = json!({"trigger": "schedule"});
    let metadata = metadata.to_string();
    relay
        .post_lines(&[redacted.clone(), full.clone(), metadata.clone()])
        .await;

    // At `metadata`: the redacted prompt is gone, the metadata member kept.
    for _ in 0..2 {
        let item = at_metadata.event().await;
        assert!(!item.data().contains("CANARY"), "leaked: {}", item.data());
        let got = item.json();
        assert_eq!(got["capture"], "metadata");
        assert_eq!(got["data"], json!({"trigger": "user"}));
    }
    assert_eq!(at_metadata.event().await.data(), metadata);

    // At `redacted`: a redacted event passes as received; a full one lands
    // on metadata (a relay never mints the `redacted` claim).
    assert_eq!(at_redacted.event().await.data(), redacted);
    let item = at_redacted.event().await;
    assert!(!item.data().contains("CANARY"));
    assert_eq!(item.json()["capture"], "metadata");
    assert_eq!(at_redacted.event().await.data(), metadata);

    // At `full`: everything as received, nothing up-levelled.
    for posted in [&redacted, &full, &metadata] {
        assert_eq!(at_full.event().await.data(), posted.as_str());
    }

    // A type without a payload schema cannot be classified: its data
    // goes whole below its level, never passes.
    let mut vendor = event("x.acme.secret.dumped", "cap", 3);
    vendor["capture"] = "full".into();
    vendor["data"] = json!({"blob": CANARY, "size": 3});
    relay.post_event(&vendor).await;
    let got = at_metadata.event().await;
    assert!(!got.data().contains("CANARY"));
    assert_eq!(got.json()["capture"], "metadata");
    assert!(got.json().get("data").is_none(), "{}", got.data());

    // At `none`: the envelope only.
    for _ in 0..3 {
        let got = at_none.event().await.json();
        assert_eq!(got["capture"], "none");
        assert!(got.get("data").is_none(), "{got}");
    }

    // Replays are down-levelled the same way.
    for query in [vec![("filter", filter.as_str())], vec![("from", "all")]] {
        let mut query = query;
        query.push(("capture", "metadata"));
        let items = relay.history(&query).await;
        let events: Vec<_> = items.iter().filter(|i| i.is_event()).collect();
        assert_eq!(events.len(), 4);
        for item in events {
            assert!(
                !item.data().contains("CANARY"),
                "replay leaked: {}",
                item.data()
            );
            let level = item.json()["capture"]
                .as_str()
                .unwrap_or("metadata")
                .to_owned();
            assert_eq!(level, "metadata");
        }
    }
}

#[tokio::test]
async fn from_resumes_strictly_after_each_position() {
    let relay = start(Config::default()).await;
    let mut batch = Vec::new();
    for (epoch, seq) in [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)] {
        let mut e = status("a", seq, "info");
        e["epoch"] = epoch.into();
        batch.push(e);
    }
    batch.extend((0..3).map(|seq| status("b", seq, "info")));
    relay.post_batch(&batch).await;

    let from = json!([
        {"session": "a", "epoch": 0, "seq": 2},
        {"session": "b", "seq": -1},
    ])
    .to_string();
    let items = relay.history(&[("from", &from)]).await;
    let got: Vec<(String, u64, u64)> = items
        .iter()
        .filter(|i| i.is_event())
        .map(|i| {
            let e = i.json();
            let session = e["session"].as_str().unwrap().to_owned();
            (
                session,
                e["epoch"].as_u64().unwrap_or(0),
                e["seq"].as_u64().unwrap(),
            )
        })
        .collect();
    let want = [
        ("a", 1, 0),
        ("a", 1, 1),
        ("b", 0, 0),
        ("b", 0, 1),
        ("b", 0, 2),
    ];
    let want: Vec<(String, u64, u64)> = want
        .iter()
        .map(|(s, e, q)| (s.to_string(), *e, *q))
        .collect();
    assert_eq!(got, want);
    assert_eq!(comments(&items), ["replay-complete"]);

    // A position past the last one replays nothing; live delivery follows.
    let from = json!([{"session": "b", "seq": 2}]).to_string();
    let filter = json!({"session": "b"}).to_string();
    let mut resumed = relay.sse(&[("from", &from), ("filter", &filter)]).await;
    let next = status("b", 3, "info");
    relay.post_event(&next).await;
    assert_eq!(resumed.event().await.json(), next);
}

#[tokio::test]
async fn from_all_replays_every_held_session_without_exhaustion() {
    let relay = start(Config::default().buffer(2)).await;
    relay
        .post_batch(
            &(0..4)
                .map(|seq| status("x", seq, "info"))
                .collect::<Vec<_>>(),
        )
        .await;
    relay.post_batch(&[status("y", 0, "info")]).await;
    let items = relay.history(&[("from", "all")]).await;
    assert_eq!(seqs(&items), [2, 3, 0]);
    assert_eq!(
        comments(&items),
        ["replay-complete"],
        "no replay-exhausted for from=all"
    );
    // Live delivery follows a live replay-all.
    let mut live = relay.sse(&[("from", "all")]).await;
    assert_eq!(seqs(&live.events(3).await), [2, 3, 0]);
    let next = status("z", 0, "info");
    relay.post_event(&next).await;
    assert_eq!(live.event().await.json(), next);
}

#[tokio::test]
async fn live_0_reads_history_and_ends() {
    let relay = start(Config::default()).await;
    relay
        .post_batch(
            &(0..3)
                .map(|seq| status("h", seq, "info"))
                .collect::<Vec<_>>(),
        )
        .await;
    relay.post_batch(&[status("other", 0, "info")]).await;

    // Without `from`: the whole history of the session the filter names.
    let filter = json!({"session": "h"}).to_string();
    let items = relay.history(&[("filter", &filter)]).await;
    assert_eq!(seqs(&items), [0, 1, 2]);
    assert_eq!(
        items.last().and_then(SseItem::comment),
        Some("replay-complete")
    );

    // With `from`: strictly after it, still ending.
    let from = json!([{"session": "h", "seq": 0}]).to_string();
    let items = relay.history(&[("filter", &filter), ("from", &from)]).await;
    assert_eq!(seqs(&items), [1, 2]);
    assert_eq!(comments(&items), ["replay-complete"]);

    // Neither: nothing to replay, and still an end.
    let items = relay.history(&[]).await;
    assert_eq!(items, [SseItem::Comment("replay-complete".into())]);
}

#[tokio::test]
async fn last_event_id_resumes_a_session_whose_id_holds_colons() {
    let relay = start(Config::default()).await;
    let session = "team:a:b";
    relay
        .post_batch(
            &(0..4)
                .map(|seq| status(session, seq, "info"))
                .collect::<Vec<_>>(),
        )
        .await;
    let filter = json!({"session": session}).to_string();
    let held = relay.held(session).await;
    let id = held[1].id().expect("an id").to_owned();
    assert_eq!(id, "team:a:b:0:1");

    let request = relay
        .request(reqwest::Method::GET, "/stream")
        .query(&[("filter", filter.as_str())])
        .header("last-event-id", &id);
    let mut resumed = relay.sse_with(request).await;
    assert_eq!(seqs(&resumed.events(2).await), [2, 3]);
    let next = status(session, 4, "info");
    relay.post_event(&next).await;
    assert_eq!(resumed.event().await.json(), next);

    // `from` takes precedence over Last-Event-ID.
    let from = json!([{"session": session, "seq": 2}]).to_string();
    let request = relay
        .request(reqwest::Method::GET, "/stream")
        .query(&[("from", from.as_str()), ("live", "0")])
        .header("last-event-id", &id);
    let items = relay.sse_with(request).await.read_to_end().await;
    assert_eq!(seqs(&items), [3, 4]);
}

#[tokio::test]
async fn a_ceiling_holds_against_an_event_that_under_declares_its_capture() {
    // No `capture`, so `metadata` by default, yet a `full` member and a
    // `redacted` one: under any ceiling below `full` neither may pass, live
    // or replayed; without a ceiling the event is delivered as sent.
    let relay = start(Config::default()).await;
    let filter = json!({"session": "liar"}).to_string();
    let mut ceilings = Vec::new();
    for ceiling in ["redacted", "metadata", "none"] {
        let sse = relay
            .sse(&[("filter", &filter), ("capture", ceiling)])
            .await;
        ceilings.push((ceiling, sse));
    }
    let mut uncapped = relay.sse(&[("filter", &filter)]).await;
    let mut lying = event("tool.requested", "liar", 0);
    lying["data"] = json!({
        "tool": {"name": "Bash", "call_id": "c1"},
        "args": {"cmd": format!("cat /etc/shadow {CANARY}")},
        "args_redacted": {"cmd": format!("cat {CANARY}")},
    });
    let lying = lying.to_string();
    relay.post_lines(std::slice::from_ref(&lying)).await;

    for (ceiling, sse) in &mut ceilings {
        let got = sse.event().await;
        assert!(!got.data().contains("CANARY"), "{ceiling}: {}", got.data());
        let event = aep::Event::from_json(got.data()).expect("an event");
        assert!(
            event.validate_capture().is_ok(),
            "{ceiling}: {}",
            got.data()
        );
        assert_eq!(
            got.json()["data"]["tool"]["name"].as_str().is_some(),
            *ceiling != "none"
        );
    }
    assert_eq!(uncapped.event().await.data(), lying);

    for ceiling in ["redacted", "metadata", "none"] {
        let items = relay
            .history(&[("filter", &filter), ("capture", ceiling)])
            .await;
        assert_eq!(seqs(&items), [0], "{ceiling}");
        assert!(!items[0].data().contains("CANARY"), "{ceiling}: replayed");
    }
}

#[tokio::test]
async fn a_last_event_id_that_is_no_position_is_refused_not_taken_as_now() {
    let relay = start(Config::default()).await;
    for garbage in ["s:0:-1", "no-position", "s:x:1", ":0:1"] {
        let request = relay
            .request(reqwest::Method::GET, "/stream")
            .header("last-event-id", garbage);
        let (status, body) = json_body(send(request).await).await;
        assert_eq!(status, 400, "{garbage}");
        assert_eq!(body["error"], "invalid-filter", "{garbage}: {body}");
    }
}

#[tokio::test]
async fn an_oversize_filter_is_refused_naming_the_limit() {
    let relay = start(Config::default()).await;
    let many: Vec<String> = (0..257).map(|n| format!("s{n}")).collect();
    let refusals = [
        (json!({ "session": many }).to_string(), "at most 256"),
        (
            json!({"session": "s".repeat(20_000)}).to_string(),
            "16384 bytes",
        ),
    ];
    for (filter, limit) in refusals {
        let (status, refusal) = json_body(
            relay
                .get(&format!("/stream?filter={}", urlencode(&filter)))
                .await,
        )
        .await;
        assert_eq!(status, 400);
        assert_eq!(refusal["error"], "limit-exceeded", "{refusal}");
        let detail = refusal["detail"].as_str().unwrap();
        assert!(detail.contains(limit), "{detail}");
    }
    // At the bound the stream opens.
    let at: Vec<String> = (0..256).map(|n| format!("s{n}")).collect();
    relay
        .sse(&[("filter", &json!({ "session": at }).to_string())])
        .await;
}

/// Payload sizes around the relay's write sizes (16 KiB chunks and
/// fragments) and well past them.
const SIZES: [usize; 9] = [
    10,
    16 * 1024 - 300,
    16 * 1024,
    40 * 1024,
    5,
    300 * 1024,
    1 << 20,
    7,
    17 * 1024,
];

/// An event of `session` at `seq` whose message is `len` copies of a
/// letter of its own.
fn sized(session: &str, seq: u64, len: usize) -> Value {
    let mut e = status(session, seq, "notice");
    let letter = char::from(b'a' + seq as u8);
    e["data"] = json!({ "message": letter.to_string().repeat(len) });
    e
}

fn assert_whole(got: &Value, seq: u64) {
    let letter = char::from(b'a' + seq as u8).to_string();
    let message = got["data"]["message"].as_str().unwrap_or_default();
    assert_eq!(got["seq"], seq, "in order");
    assert_eq!(message.len(), SIZES[seq as usize], "seq {seq} whole");
    assert!(
        message.chars().all(|c| c.to_string() == letter),
        "seq {seq} unmixed"
    );
}

#[tokio::test]
async fn events_of_every_size_arrive_whole_and_in_order_live_and_replayed() {
    let relay = start(Config::default()).await;
    let filter = json!({"session": "sizes"}).to_string();
    let mut live = relay.sse(&[("filter", &filter)]).await;
    let mut ws = relay.ws("consumer").await;
    ws.subscribe(json!({"type": "subscribe", "id": "s", "filter": {"session": "sizes"}}))
        .await;
    let batch: Vec<Value> = SIZES
        .iter()
        .enumerate()
        .map(|(seq, len)| sized("sizes", seq as u64, *len))
        .collect();
    relay.post_batch(&batch).await;
    for seq in 0..SIZES.len() as u64 {
        assert_whole(&live.event().await.json(), seq);
        assert_whole(&ws.json().await, seq);
    }
    let held = relay.held("sizes").await;
    assert_eq!(held.len(), SIZES.len());
    for (seq, item) in held.iter().enumerate() {
        assert_whole(&item.json(), seq as u64);
    }
    let mut replay = relay.ws("consumer").await;
    replay
        .subscribe(
            json!({"type": "subscribe", "id": "r", "filter": {"session": "sizes"}, "from": "all"}),
        )
        .await;
    for seq in 0..SIZES.len() as u64 {
        assert_whole(&replay.json().await, seq);
    }
    assert_eq!(
        relay.metric("aep_relay_queued_bytes").await,
        0,
        "all given back"
    );
}
