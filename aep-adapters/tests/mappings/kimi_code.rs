//! Kimi Code hooks and web channel, from AEP-0002 Annex A.6 (the
//! prompt is an array of content parts; only the literal `deny` blocks;
//! the web channel's frames carry `volatile` on do-not-persist frames).

use crate::common;

use aep::Capture;
use aep_adapters::{Mode, Surface, Vocabulary::KimiCode};
use common::{map, map_mode, one, one_at};
use serde_json::json;

#[test]
fn prompts_are_content_parts_and_steers_open_no_run() {
    let input = json!({"hook_event_name": "UserPromptSubmit",
                       "prompt": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]});
    assert_eq!(
        one_at(KimiCode, Capture::Full, &input)["data"]["prompt"],
        "a\nb"
    );
    let steer = json!({"hook_event_name": "UserPromptSubmit", "is_steer": true,
                       "prompt": [{"type": "text", "text": "also"}]});
    let event = one(KimiCode, &steer);
    assert_eq!(
        event,
        json!({"type": "x.kimi-code.run.steer_submitted", "data": {}})
    );
    assert_eq!(
        one_at(KimiCode, Capture::Full, &steer)["data"]["prompt"],
        "also"
    );
}

#[test]
fn the_permission_pair_is_observed_out_of_band() {
    let ask = json!({"hook_event_name": "PermissionRequest", "tool_name": "Bash",
                     "tool_input": {"command": "make"}});
    let event = one(KimiCode, &ask);
    assert_eq!(event["data"]["respond_via"], json!(["oob"]));
    assert!(event["data"].get("options").is_none());
    assert_eq!(event["data"]["prompt"], "Permission requested: Bash — make");
    let error = json!({"hook_event_name": "PermissionResult", "decision": "error"});
    assert_eq!(
        one(KimiCode, &error)["type"],
        "x.kimi-code.session.permission_result"
    );
    let cancelled = json!({"hook_event_name": "PermissionResult", "decision": "cancelled"});
    assert_eq!(
        one(KimiCode, &cancelled)["data"],
        json!({"resolution": "dismissed"})
    );
}

#[test]
fn web_frames_follow_the_mode() {
    let frame = json!({"type": "turn.ended", "seq": 3, "payload": {"reason": "error"}});
    let companion = map_mode(KimiCode, Some(Surface::Ws), Mode::Companion, &frame);
    assert_eq!(
        companion,
        [json!({"type": "x.kimi-code.web.turn.ended", "data": {}})]
    );
    let primary = map_mode(KimiCode, Some(Surface::Ws), Mode::Primary, &frame);
    assert_eq!(
        primary,
        [json!({"type": "run.failed", "data": {"reason": "error"}})]
    );
    let volatile = json!({"type": "turn.started", "volatile": true, "payload": {}});
    assert!(map_mode(KimiCode, Some(Surface::Ws), Mode::Primary, &volatile).is_empty());
    // An ask on the read-only channel carries no way to answer.
    let ask = json!({"type": "event.approval.requested",
                     "payload": {"approval_id": "a1", "tool_name": "Bash"}});
    let event = &map_mode(KimiCode, Some(Surface::Ws), Mode::Primary, &ask)[0];
    assert_eq!(
        event["data"],
        json!({"kind": "permission", "prompt": "Permission requested: Bash"})
    );
    assert!(map(KimiCode, &json!({"hook_event_name": "Stop"}))[0]["type"] == "run.finished");
}
