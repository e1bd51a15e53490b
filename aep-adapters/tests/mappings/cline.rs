//! Cline subprocess hooks, from AEP-0002 Annex A.9 and the published zod
//! schemas (`hookName`, `taskId`, `agent_id`, `parent_agent_id`,
//! `iteration`, `ToolCallRecord.error`).

use crate::common;

use aep::Capture;
use aep_adapters::Posture;
use aep_adapters::Vocabulary::Cline;
use common::{map, map_at};
use serde_json::json;

#[test]
fn a_child_agent_closes_its_delegation_on_every_terminal() {
    for (hook, run) in [
        ("agent_end", "run.finished"),
        ("agent_abort", "run.cancelled"),
        ("agent_error", "run.failed"),
    ] {
        let input = json!({"hookName": hook, "taskId": "t", "agent_id": "child",
                           "parent_agent_id": "root", "iteration": 4, "error": {"name": "E"}});
        let events = map(Cline, &input);
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types, [run, "delegation.subagent.stopped"], "{hook}");
        assert_eq!(events[0]["step"], "4");
        assert_eq!(events[1]["subject"], "child");
        assert!(events[1].get("step").is_none());
    }
}

#[test]
fn the_tool_record_error_decides_the_terminal() {
    let record = |error: serde_json::Value| {
        json!({"hookName": "tool_result", "iteration": 1,
        "tool_result": {"id": "c", "name": "read_file", "output": "x", "error": error, "durationMs": 9}})
    };
    assert_eq!(
        map(Cline, &record(json!(null)))[0]["type"],
        "tool.completed"
    );
    assert_eq!(map(Cline, &record(json!("")))[0]["type"], "tool.completed");
    let failed = map_at(
        Cline,
        None,
        Posture::uniform(Capture::Redacted),
        &record(json!("EACCES")),
    );
    assert_eq!(
        failed[0]["data"]["error"],
        json!({"type": "tool_error", "message": "EACCES"})
    );
    assert_eq!(failed[0]["data"]["duration_ms"], 9);
}

#[test]
fn reserved_and_unknown_hooks_stay_vendor_scoped() {
    assert_eq!(
        map(Cline, &json!({"hookName": "prompt_submit"}))[0]["type"],
        "x.cline.prompt.submitted"
    );
    assert_eq!(
        map(Cline, &json!({"hookName": "notify"}))[0]["type"],
        "x.cline.notify.event"
    );
    let resumed = map(
        Cline,
        &json!({"hookName": "agent_resume", "parent_agent_id": "root"}),
    );
    assert_eq!(
        resumed.len(),
        1,
        "a resume reopens the run, not the delegation"
    );
}
