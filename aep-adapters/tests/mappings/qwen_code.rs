//! Qwen Code hooks, from AEP-0002 Annex A.4 and the vendor's hook
//! reference (todo hooks fire in a `validation` and a `postWrite` phase;
//! the `permission_prompt` notification duplicates `PermissionRequest`).

use crate::common;

use aep::Capture;
use aep_adapters::Vocabulary::QwenCode;
use common::{map, one, one_at};
use serde_json::json;

#[test]
fn todos_emit_once_per_persisted_write() {
    let validation =
        json!({"hook_event_name": "TodoCompleted", "todo_id": "t", "phase": "validation"});
    assert!(map(QwenCode, &validation).is_empty());
    let written = json!({"hook_event_name": "TodoCompleted", "todo_id": "t", "phase": "postWrite",
                         "todo_content": "ship"});
    let event = one(QwenCode, &written);
    assert_eq!(
        event,
        json!({"type": "progress.task.completed", "data": {}, "subject": "t"})
    );
    // The title is content: it rides from `redacted` up.
    let event = one_at(QwenCode, Capture::Redacted, &written);
    assert_eq!(event["data"], json!({"task": {"title": "ship"}}));
    // No phase: fail open to emission.
    let phaseless = json!({"hook_event_name": "TodoCreated", "todo_id": "t"});
    assert_eq!(one(QwenCode, &phaseless)["type"], "progress.task.planned");
}

#[test]
fn the_permission_notification_defers_to_the_first_class_hook() {
    let dup = json!({"hook_event_name": "Notification", "notification_type": "permission_prompt"});
    assert!(map(QwenCode, &dup).is_empty());
    let idle = json!({"hook_event_name": "Notification", "notification_type": "idle_prompt"});
    assert_eq!(one(QwenCode, &idle)["type"], "progress.status");
}

#[test]
fn failures_carry_the_vendor_taxonomy_and_interrupts() {
    let stop = json!({"hook_event_name": "StopFailure", "error": "max_output_tokens",
                      "error_details": "cut"});
    assert_eq!(
        one(QwenCode, &stop)["data"],
        json!({"reason": "max_output_tokens"})
    );
    assert_eq!(
        one_at(QwenCode, Capture::Redacted, &stop)["data"],
        json!({"reason": "max_output_tokens", "error": {"message": "cut"}})
    );
    let tool = json!({"hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                      "tool_use_id": "u", "error": "killed", "is_interrupt": true});
    assert_eq!(
        one(QwenCode, &tool)["data"]["error"],
        json!({"type": "interrupt"})
    );
    let usage = json!({"hook_event_name": "Stop", "input_tokens": 3, "output_tokens": 4});
    assert_eq!(
        one(QwenCode, &usage)["data"],
        json!({"gen_ai.usage.input_tokens": 3, "gen_ai.usage.output_tokens": 4})
    );
}
