//! Byte identity over the bindings (AEP-0001 §4.2, AEP-0003 §10): what
//! an emitter sent is what every consumer reads, byte for byte, unless a
//! capture ceiling had to change it.

use crate::common;

use aep_relay::Config;
use common::*;
use serde_json::{json, Value};

/// Odd spacing, a member order no serialiser would choose, escapes that
/// decode to other characters, and raw multi-byte UTF-8.
const ODD: &str = r#"{ "type" :"progress.status","aep":"0.1" ,"session":"id\u0065nt","seq":0,"id":"odd-\u0031","time":"2026-12-03T09:00:00Z","source":"urn:aep:test:emitter","agent":"test-agent","data":{"message":"caf\u00e9 \ud83d\ude00 ☕ \"q\" \\ b\/s","z":1.50,"a":[1, 2 ,3e0]}}"#;

/// A single event spread over lines, as `application/json` may carry it.
const PRETTY: &str = "{\n  \"aep\": \"0.1\",\n  \"id\": \"pretty-1\",\n  \"type\": \"progress.status\",\r\n  \"time\": \"2026-12-03T09:00:00Z\",\n\t\"source\": \"urn:aep:test:emitter\",\n  \"agent\": \"test-agent\",\n  \"session\": \"ident\",\n  \"seq\": 1,\n  \"data\": {\n    \"message\": \"two  spaces, a \\n newline escape, { braces }\",\n    \"b\": [ 1 , 2 ]\n  }\n}\n";

/// `PRETTY` with the whitespace between tokens removed, by hand.
const PRETTY_COMPACT: &str = r#"{"aep":"0.1","id":"pretty-1","type":"progress.status","time":"2026-12-03T09:00:00Z","source":"urn:aep:test:emitter","agent":"test-agent","session":"ident","seq":1,"data":{"message":"two  spaces, a \n newline escape, { braces }","b":[1,2]}}"#;

async fn watchers(relay: &TestRelay) -> (Sse, Ws) {
    let filter = json!({"session": "ident"}).to_string();
    let sse = relay.sse(&[("filter", &filter)]).await;
    let mut ws = relay.ws("consumer").await;
    ws.subscribe(json!({"type": "subscribe", "id": 1, "filter": {"session": "ident"}}))
        .await;
    (sse, ws)
}

#[tokio::test]
async fn an_ndjson_line_comes_back_byte_for_byte() {
    let relay = start(Config::default()).await;
    let (mut sse, mut ws) = watchers(&relay).await;
    assert_eq!(relay.post_lines(&[ODD.to_owned()]).await.status(), 202);

    let live = sse.event().await;
    assert_eq!(live.data(), ODD);
    assert_eq!(live.id(), Some("ident:0:0"));
    assert_eq!(ws.text().await, ODD);

    let replayed = relay.held("ident").await;
    assert_eq!(replayed[0].data(), ODD);
    let mut late = relay.ws("consumer").await;
    late.subscribe(
        json!({"type": "subscribe", "id": 2, "from": [{"session": "ident", "seq": -1}]}),
    )
    .await;
    assert_eq!(late.text().await, ODD);
}

#[tokio::test]
async fn a_crlf_terminated_line_loses_only_its_terminator() {
    let relay = start(Config::default()).await;
    let (mut sse, mut ws) = watchers(&relay).await;
    let body = format!("{ODD}\r\n");
    assert_eq!(relay.post("application/x-ndjson", body).await.status(), 202);
    assert_eq!(sse.event().await.data(), ODD);
    assert_eq!(ws.text().await, ODD);
}

#[tokio::test]
async fn a_pretty_printed_body_comes_back_compacted_with_the_same_value() {
    let relay = start(Config::default()).await;
    let (mut sse, mut ws) = watchers(&relay).await;
    assert_eq!(relay.post("application/json", PRETTY).await.status(), 202);

    let live = sse.event().await;
    assert_eq!(live.data(), PRETTY_COMPACT);
    let parsed: Value = serde_json::from_str(PRETTY).unwrap();
    assert_eq!(live.json(), parsed);
    assert_eq!(ws.text().await, PRETTY_COMPACT);
    assert_eq!(relay.held("ident").await[0].data(), PRETTY_COMPACT);
}

#[tokio::test]
async fn an_event_sent_over_the_websocket_comes_back_byte_for_byte() {
    let relay = start(Config::default()).await;
    let (mut sse, mut ws) = watchers(&relay).await;
    let mut emitter = relay.ws("emitter").await;
    emitter.send_text(ODD).await;
    assert!(
        emitter.sync("sent").await.is_empty(),
        "an accepted event is not answered"
    );
    assert_eq!(sse.event().await.data(), ODD);
    assert_eq!(ws.text().await, ODD);
    assert_eq!(relay.held("ident").await[0].data(), ODD);
}

#[tokio::test]
async fn a_carriage_return_between_tokens_never_reaches_an_sse_line() {
    let relay = start(Config::default()).await;
    let (mut sse, mut ws) = watchers(&relay).await;
    // CR is JSON whitespace, and an SSE line break: the line is compacted.
    let line = PRETTY_COMPACT.replace(r#","seq":1,"#, ",\r\"seq\":1,\r");
    assert_eq!(relay.post_lines(&[line]).await.status(), 202);
    let live = sse.event().await;
    let SseItem::Event { raw, .. } = &live else {
        unreachable!()
    };
    assert!(!raw.contains('\r'), "{raw:?}");
    assert_eq!(live.data(), PRETTY_COMPACT);
    assert_eq!(ws.text().await, PRETTY_COMPACT);
}
