//! VS Code agent hooks, from AEP-0002 Annex A.5 and the vendor's agent
//! hooks reference (eight events; `tool_response` is a string;
//! `session_id` is optional).

use crate::common;

use aep::Capture;
use aep_adapters::Vocabulary::Vscode;
use common::{one, one_at};
use serde_json::json;

#[test]
fn the_transcript_path_never_rides() {
    let input = json!({"hook_event_name": "SessionStart", "source": "new", "model": "m",
                       "transcript_path": "/home/u/.vscode/t.md", "agent_type": "Ask"});
    let event = one_at(Vscode, Capture::Full, &input);
    assert!(!event.to_string().contains("transcript"), "{event}");
    assert_eq!(event["data"]["agent_type"], "Ask");
}

#[test]
fn a_string_tool_response_is_the_result_and_there_is_no_failure_twin() {
    let input = json!({"hook_event_name": "PostToolUse", "tool_name": "runInTerminal",
                       "tool_use_id": "c", "tool_response": "done"});
    let event = one_at(Vscode, Capture::Full, &input);
    assert_eq!(event["type"], "tool.completed");
    assert_eq!(event["data"]["result"], "done");
    let fallback = one(Vscode, &json!({"hook_event_name": "PostToolUseFailure"}));
    assert_eq!(fallback["type"], "x.vscode.session.post_tool_use_failure");
}

#[test]
fn compaction_rides_the_pre_moment() {
    let event = one(
        Vscode,
        &json!({"hook_event_name": "PreCompact", "trigger": "auto"}),
    );
    assert_eq!(
        event,
        json!({"type": "session.compacted", "data": {"trigger": "auto"}})
    );
}
