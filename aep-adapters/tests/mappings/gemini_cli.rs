//! Gemini CLI hooks, from AEP-0002 Annex A.3 and the vendor's hook
//! reference (eleven events; `AfterTool` carries `tool_response`, whose
//! `error` marks a failed call).

use crate::common;

use aep::Capture;
use aep_adapters::Vocabulary::GeminiCli;
use common::{one, one_at};
use serde_json::json;

#[test]
fn a_tool_error_is_an_honest_failure() {
    let input = json!({"hook_event_name": "AfterTool", "tool_name": "run_shell_command",
                       "tool_response": {"error": "exit status 1"}});
    let event = one(GeminiCli, &input);
    assert_eq!(event["type"], "tool.failed");
    assert_eq!(event["data"]["error"], json!({"type": "tool_error"}));
    let event = one_at(GeminiCli, Capture::Redacted, &input);
    assert_eq!(event["data"]["error"]["message"], "exit status 1");
    let ok = json!({"hook_event_name": "AfterTool", "tool_name": "ls",
                    "tool_response": {"llmContent": "a b", "error": null}});
    assert_eq!(one(GeminiCli, &ok)["type"], "tool.completed");
}

#[test]
fn notifications_are_progress_never_attention() {
    let input = json!({"hook_event_name": "Notification", "notification_type": "ToolPermission",
                       "message": "wants to write"});
    let event = one_at(GeminiCli, Capture::Full, &input);
    assert_eq!(event["type"], "progress.status");
    assert_eq!(event["subject"], "ToolPermission");
    assert_eq!(event["data"], json!({"message": "wants to write"}));
}

#[test]
fn the_model_plane_stays_vendor_scoped_and_every_end_is_normal() {
    let input = json!({"hook_event_name": "AfterModel", "llm_request": {"model": "g-2"},
                       "llm_response": {"candidates": [{"text": "secret"}]}});
    assert_eq!(
        one_at(GeminiCli, Capture::Full, &input),
        json!({"type": "x.gemini-cli.session.after_model", "data": {"model": "g-2"}})
    );
    for reason in ["exit", "clear", "logout", "other"] {
        let end = one(
            GeminiCli,
            &json!({"hook_event_name": "SessionEnd", "reason": reason}),
        );
        assert_eq!(end["data"], json!({"reason": "normal"}));
    }
    let compacted = one(
        GeminiCli,
        &json!({"hook_event_name": "PreCompress", "trigger": "manual"}),
    );
    assert_eq!(compacted["type"], "session.compacted");
}
