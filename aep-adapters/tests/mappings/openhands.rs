//! OpenHands agent-server events and status transitions, from AEP-0002
//! Annex A.15 and the SDK's `ConversationExecutionStatus` (idle, running,
//! paused, waiting_for_confirmation, finished, error, stuck, deleting).

use crate::common;

use aep::Capture;
use aep_adapters::{Posture, Surface, Vocabulary::Openhands};
use common::{map, map_at, one};
use serde_json::json;

fn transition(prev: serde_json::Value, next: &str, posture: Posture) -> Vec<serde_json::Value> {
    map_at(
        Openhands,
        Some(Surface::Status),
        posture,
        &json!({"prev": prev, "next": next}),
    )
}

fn types(events: &[serde_json::Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[test]
fn paused_and_waiting_keep_the_run_open() {
    assert!(
        types(&transition(
            json!("paused"),
            "waiting_for_confirmation",
            Posture::default()
        )) == ["attention.requested"]
    );
    assert_eq!(
        types(&transition(json!("paused"), "finished", Posture::default())),
        ["run.finished"]
    );
    assert!(
        transition(json!("idle"), "finished", Posture::default()).is_empty(),
        "no run was open"
    );
    assert_eq!(
        types(&transition(
            json!("waiting_for_confirmation"),
            "stuck",
            Posture::default()
        )),
        ["attention.resolved", "run.failed"]
    );
    assert!(transition(json!("running"), "some_new_status", Posture::default()).is_empty());
}

#[test]
fn a_deletion_cancels_and_ends_with_the_reason_only_where_it_may_ride() {
    // `run.cancelled.reason` is redacted-level: absent at the metadata default.
    let events = transition(json!("running"), "deleting", Posture::default());
    assert_eq!(events[0], json!({"type": "run.cancelled", "data": {}}));
    assert_eq!(events[1]["data"], json!({"reason": "killed"}));
    let events = transition(
        json!("running"),
        "deleting",
        Posture::uniform(Capture::Redacted),
    );
    assert_eq!(events[0]["data"], json!({"reason": "deleting"}));
    assert_eq!(
        types(&transition(json!(null), "deleting", Posture::default())),
        ["session.ended"]
    );
}

#[test]
fn a_user_rejection_is_no_policy_block_and_tokens_never_map() {
    let reject = |source: &str| {
        one(
            Openhands,
            &json!({"kind": "UserRejectObservation", "id": "e",
        "timestamp": "t", "tool_name": "x", "tool_call_id": "c", "rejection_source": source}),
        )
    };
    assert_eq!(
        reject("user")["type"],
        "x.openhands.user_reject.observation"
    );
    assert_eq!(reject("hook")["data"]["by"], "policy");
    let tokens = json!({"kind": "TokenEvent", "prompt_token_ids": [1]});
    assert!(map_at(
        Openhands,
        None,
        Posture::uniform(Capture::Full).deltas(true),
        &tokens
    )
    .is_empty());
    let hook = one(
        Openhands,
        &json!({"kind": "HookExecutionEvent", "id": "h", "timestamp": "t"}),
    );
    assert_eq!(hook["type"], "x.openhands.hook.execution");
    assert!(map(Openhands, &json!({"kind": "StreamingDeltaEvent"})).is_empty());
}
