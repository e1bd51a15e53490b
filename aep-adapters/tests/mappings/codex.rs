//! Codex hooks, from AEP-0002 Annex A.2 and the vendor's hook reference
//! (SessionStart's `source` is `startup`, `resume` or `clear`).

use crate::common;

use aep::Capture;
use aep_adapters::Vocabulary::Codex;
use common::{error, map, one, one_at};
use serde_json::json;

#[test]
fn a_session_start_keeps_its_source_and_gates_the_working_directory() {
    let input = json!({"hook_event_name": "SessionStart", "session_id": "t1", "source": "clear",
                       "model": "m-1", "cwd": "/home/ada/repo"});
    let event = one(Codex, &input);
    assert_eq!(event["type"], "session.started");
    assert_eq!(
        event["data"],
        json!({"client": {"name": "codex"}, "trigger": "clear", "gen_ai.request.model": "m-1"})
    );
    // At `redacted` the directory rides through the pipeline: home becomes `~`.
    let event = one_at(Codex, Capture::Redacted, &input);
    assert_eq!(event["data"]["cwd"], "~/repo");
    let event = one_at(Codex, Capture::Full, &input);
    assert_eq!(event["data"]["cwd"], "/home/ada/repo");
}

#[test]
fn tool_arguments_ride_as_a_digest_below_full() {
    let input = json!({"hook_event_name": "PreToolUse", "session_id": "t1", "turn_id": "u1",
                       "tool_name": "apply_patch", "tool_use_id": "c9",
                       "tool_input": {"patch": "*** Begin Patch"}});
    let event = one(Codex, &input);
    assert_eq!(event["subject"], "apply_patch");
    assert_eq!(
        event["data"]["tool"],
        json!({"name": "apply_patch", "call_id": "c9"})
    );
    let digest = event["data"]["args_digest"].as_str().unwrap().to_owned();
    assert_eq!(
        digest,
        aep::digest::digest(&json!({"patch": "*** Begin Patch"}))
    );
    assert!(event["data"].get("args").is_none());
    let redacted = one_at(Codex, Capture::Redacted, &input);
    assert_eq!(
        redacted["data"]["args_redacted"],
        json!({"patch": "*** Begin Patch"})
    );
    assert!(redacted["data"].get("args").is_none());
    assert_eq!(redacted["data"]["args_digest"], digest.as_str());
    let full = one_at(Codex, Capture::Full, &input);
    assert_eq!(full["data"]["args"], json!({"patch": "*** Begin Patch"}));
    // Arguments that are not an object still get their digest.
    let input = json!({"hook_event_name": "PreToolUse", "tool_name": "shell", "tool_input": "ls"});
    let full = one_at(Codex, Capture::Full, &input);
    assert_eq!(
        full["data"]["args_digest"],
        aep::digest::digest(&json!("ls")).as_str()
    );
    assert!(full["data"].get("args").is_none());
}

#[test]
fn a_failed_tool_still_completes_on_codex() {
    let input = json!({"hook_event_name": "PostToolUse", "tool_name": "shell",
                       "tool_response": {"exit_code": 2, "output": "boom"}});
    let event = one(Codex, &input);
    assert_eq!(event["type"], "tool.completed");
    assert_eq!(
        event["data"]["result_digest"],
        aep::digest::digest(&json!({"exit_code": 2, "output": "boom"})).as_str()
    );
}

#[test]
fn permission_requests_go_over_control_and_degrade_at_metadata() {
    let input = json!({"hook_event_name": "PermissionRequest", "tool_name": "shell",
                       "tool_input": {"command": "curl -H 'Authorization: Bearer s3cr3t.tok' x"}});
    let event = one(Codex, &input);
    assert_eq!(event["type"], "attention.requested");
    assert_eq!(event["data"]["kind"], "permission");
    assert_eq!(event["data"]["respond_via"], json!(["control"]));
    // The default attention ceiling is `redacted`: the command passes the pipeline.
    let prompt = event["data"]["prompt"].as_str().unwrap();
    assert!(
        prompt.starts_with("Permission requested: shell — curl"),
        "{prompt}"
    );
    assert!(!prompt.contains("s3cr3t"), "{prompt}");
    // At `metadata` the prompt is synthesized from structure only.
    let event = one_at(Codex, Capture::Metadata, &input);
    assert_eq!(event["data"]["prompt"], "codex requests permission: shell");
    assert_eq!(
        event["data"]["options"],
        json!([{"id": "allow", "label": "allow"}, {"id": "deny", "label": "deny"}])
    );
}

#[test]
fn compaction_is_one_fact_at_its_post_moment() {
    assert!(map(
        Codex,
        &json!({"hook_event_name": "PreCompact", "trigger": "manual"})
    )
    .is_empty());
    let event = one(
        Codex,
        &json!({"hook_event_name": "PostCompact", "trigger": "manual"}),
    );
    assert_eq!(
        event,
        json!({"type": "session.compacted", "data": {"trigger": "manual"}})
    );
}

#[test]
fn unknown_hooks_fall_back_to_the_vendor_namespace() {
    let event = one(
        Codex,
        &json!({"hook_event_name": "TurnAborted", "reason": "x"}),
    );
    assert_eq!(
        event,
        json!({"type": "x.codex.session.turn_aborted", "data": {}})
    );
    let event = one(Codex, &json!({"hook_event_name": "Ünïcode Höok"}));
    assert_eq!(event["type"], "x.codex.session.n_code_h_ok");
}

#[test]
fn malformed_payloads_are_errors_naming_the_place() {
    assert_eq!(
        error(Codex, &json!({"hook_event_name": "PreToolUse"})),
        "PreToolUse: missing member `tool_name`"
    );
    assert!(error(
        Codex,
        &json!({"hook_event_name": "Stop", "session_id": ["s"]})
    )
    .contains("session_id"));
    assert_eq!(
        error(Codex, &json!({"hook_event_name": 3})),
        "codex: `hook_event_name`: expected a string, got a number"
    );
}
