//! Antigravity hooks, from AEP-0002 Annex A.11 and the vendor's hooks
//! documentation (camelCase payloads; `PostToolUse` carries only
//! `stepIdx` and `error`; `Stop` carries `terminationReason`).

use crate::common;

use aep_adapters::Vocabulary::Antigravity;
use common::one;
use serde_json::json;

#[test]
fn a_thin_completion_never_invents_a_tool_name() {
    let post =
        json!({"hook": "PostToolUse", "input": {"conversationId": "c", "stepIdx": 2, "error": ""}});
    assert_eq!(
        one(Antigravity, &post),
        json!({"type": "x.antigravity.step.completed", "data": {"failed": false, "step_idx": 2}})
    );
    let mut joined = post.clone();
    joined["join"] = json!({"name": "view_file"});
    let event = one(Antigravity, &joined);
    assert_eq!(event["type"], "tool.completed");
    assert_eq!(event["subject"], "view_file");
    joined["join"] = json!({"name": ""});
    assert_eq!(
        one(Antigravity, &joined)["type"],
        "x.antigravity.step.completed"
    );
}

#[test]
fn bounded_terminations_complete_and_invocations_are_steps() {
    let stop = |reason: &str| {
        one(
            Antigravity,
            &json!({"hook": "Stop",
        "input": {"conversationId": "c", "terminationReason": reason, "error": "e"}}),
        )
    };
    assert_eq!(stop("max_steps_exceeded")["type"], "run.finished");
    assert_eq!(stop("error")["data"]["reason"], "error");
    let pre = one(
        Antigravity,
        &json!({"hook": "PreInvocation", "input": {"invocationNum": 7}}),
    );
    assert_eq!(
        pre,
        json!({"type": "run.step.started", "data": {}, "step": "7"})
    );
    let future = one(Antigravity, &json!({"hook": "On-Idle", "input": {}}));
    assert_eq!(future["type"], "x.antigravity.hook.on_idle");
}
