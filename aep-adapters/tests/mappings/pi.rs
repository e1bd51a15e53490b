//! pi extension-bus events, from AEP-0002 Annex A.12 and the published
//! extension types (`agent_end` carries the loop's messages;
//! `stopReason` is `stop`, `length`, `toolUse`, `error` or `aborted`).

use crate::common;

use aep::Capture;
use aep_adapters::{Posture, Vocabulary::Pi};
use common::{map, map_at, one};
use serde_json::json;

fn ev(event: serde_json::Value) -> serde_json::Value {
    json!({"session": {"id": "s"}, "event": event})
}

#[test]
fn the_last_assistant_message_decides_the_run_terminal() {
    let end = |messages: serde_json::Value| {
        one(Pi, &ev(json!({"type": "agent_end", "messages": messages})))
    };
    let msgs = json!([{"role": "assistant", "stopReason": "error"},
                      {"role": "user", "content": "again"},
                      {"role": "assistant", "stopReason": "length", "usage": {"input": 5, "output": 6}}]);
    assert_eq!(
        end(msgs)["data"],
        json!({"stop_reason": "length", "gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 6})
    );
    assert_eq!(
        end(json!([{"role": "assistant", "stopReason": "aborted"}]))["type"],
        "run.cancelled"
    );
    assert_eq!(
        end(json!([{"role": "user"}])),
        json!({"type": "run.finished", "data": {}})
    );
}

#[test]
fn stream_updates_need_the_deltas_opt_in() {
    let update = ev(
        json!({"type": "message_update", "assistantMessageEvent": {"type": "thinking_delta", "delta": "hm"}}),
    );
    assert!(map(Pi, &update).is_empty());
    let on = map_at(Pi, None, Posture::default().deltas(true), &update);
    assert_eq!(
        on[0],
        json!({"type": "x.pi.message.delta", "data": {"kind": "thinking_delta"}})
    );
    let full = map_at(
        Pi,
        None,
        Posture::uniform(Capture::Full).deltas(true),
        &update,
    );
    assert_eq!(full[0]["data"]["delta"], "hm");
}

#[test]
fn messages_stay_vendor_scoped_with_a_digest() {
    let user = one(
        Pi,
        &ev(json!({"type": "message_start", "message": {"role": "user", "content": "fix"}})),
    );
    assert_eq!(
        user["data"]["content_digest"],
        aep::digest::digest(&json!("fix")).as_str()
    );
    assert!(user["data"].get("content").is_none());
    assert_eq!(
        one(Pi, &ev(json!({"type": "turn_end", "turnIndex": 3})))["step"],
        "3"
    );
    assert_eq!(
        one(Pi, &ev(json!({"type": "Input!"})))["type"],
        "x.pi.event.input"
    );
}
