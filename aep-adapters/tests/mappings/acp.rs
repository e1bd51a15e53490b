//! ACP moments, from AEP-0002 Annex A.13 and the protocol's schema
//! (`stopReason`: end_turn, max_tokens, max_turn_requests, refusal,
//! cancelled; tool call status: pending, in_progress, completed, failed).

use crate::common;

use aep::Capture;
use aep_adapters::{Posture, Vocabulary::Acp};
use common::{map, map_at, one};
use serde_json::json;

#[test]
fn the_stop_reason_decides_the_run_terminal() {
    let stop = |reason: &str| {
        one(
            Acp,
            &json!({"kind": "response", "method": "session/prompt",
                                                "result": {"stopReason": reason}}),
        )
    };
    assert_eq!(
        stop("max_turn_requests"),
        json!({"type": "run.finished", "data": {"stop_reason": "max_turn_requests"}})
    );
    assert_eq!(stop("cancelled")["data"], json!({"by": "user"}));
    assert_eq!(stop("refusal")["type"], "run.failed");
}

#[test]
fn the_editor_gate_is_read_only_and_chunks_need_the_opt_in() {
    let ask = json!({"kind": "request", "method": "session/request_permission",
                     "params": {"toolCall": {"toolCallId": "t"}, "options": []}});
    let event = one(Acp, &ask);
    assert!(event["data"].get("options").is_none() && event["data"].get("respond_via").is_none());
    assert_eq!(event["data"]["options_count"], 0);
    let chunk = json!({"kind": "notification", "method": "session/update",
                       "params": {"update": {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}}});
    assert!(map(Acp, &chunk).is_empty());
    let on = map_at(
        Acp,
        None,
        Posture::uniform(Capture::Redacted).deltas(true),
        &chunk,
    );
    assert_eq!(
        on[0],
        json!({"type": "x.acp.user.message.chunk", "data": {"delta": "hi"}})
    );
    // With deltas on but a metadata ceiling the fact rides without its text.
    let bare = map_at(Acp, None, Posture::default().deltas(true), &chunk);
    assert_eq!(bare[0]["data"], json!({}));
}

#[test]
fn methods_name_their_fallbacks_mechanically() {
    let response = json!({"kind": "response", "method": "authenticate", "result": {}});
    assert_eq!(one(Acp, &response)["type"], "x.acp.authenticate.response");
    let plan = json!({"kind": "notification", "method": "session/update", "params": {"update":
        {"sessionUpdate": "plan", "entries": [{"status": "in_progress"}]}}});
    assert_eq!(one(Acp, &plan)["data"], json!({"entries_in_progress": 1}));
}
