//! `aep adapter map`: one answer line per input, the exit statuses.

use crate::common;

use common::run;
use serde_json::{json, Value};

fn lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

#[test]
fn every_input_gets_exactly_one_line_in_order() {
    let input = concat!(
        r#"{"hook_event_name":"Stop","session_id":"s"}"#,
        "\n",
        "\n",
        r#"{"hook_event_name":"PreCompact","session_id":"s"}"#,
        "\n",
        "not json\n",
        r#"{"hook_event_name":"PreToolUse"}"#,
        "\n",
    );
    let result = run(&["adapter", "map", "codex"], Some(input.as_bytes()));
    assert_eq!(result.code, 0, "{}", result.stderr);
    let out = lines(&result.stdout);
    assert_eq!(out.len(), 4, "the blank line is skipped: {}", result.stdout);
    assert_eq!(out[0], json!({"type": "run.finished", "data": {}}));
    assert_eq!(out[1], Value::Null);
    assert!(out[2]["error"].as_str().unwrap().contains("not JSON"));
    assert_eq!(
        out[3],
        json!({"error": "PreToolUse: missing member `tool_name`"})
    );
    // The event's members come in their order, absent ones left out.
    assert!(
        result
            .stdout
            .starts_with(r#"{"type":"run.finished","data":{}}"#),
        "{}",
        result.stdout
    );
}

#[test]
fn several_events_are_an_array_and_some_surfaces_always_answer_one() {
    let parented = r#"{"hookName":"agent_start","agent_id":"c","parent_agent_id":"p"}"#;
    let result = run(&["adapter", "map", "cline"], Some(parented.as_bytes()));
    assert_eq!(lines(&result.stdout)[0].as_array().map(Vec::len), Some(2));
    let todos = r#"{"prev":[],"next":[{"id":"a","status":"pending"}]}"#;
    let result = run(
        &["adapter", "map", "opencode", "--surface", "todos"],
        Some(todos.as_bytes()),
    );
    assert_eq!(
        lines(&result.stdout)[0],
        json!([{"type": "progress.task.planned", "data": {}, "subject": "a"}])
    );
    let same = r#"{"prev":"running","next":"running"}"#;
    let result = run(
        &["adapter", "map", "openhands", "--surface", "status"],
        Some(same.as_bytes()),
    );
    assert_eq!(lines(&result.stdout)[0], json!([]));
}

#[test]
fn the_posture_flags_reach_the_mapping() {
    let ask = r#"{"hook_event_name":"PermissionRequest","tool_name":"shell","tool_input":{"command":"ls"}}"#;
    let result = run(
        &["adapter", "map", "codex", "--ceiling", "metadata"],
        Some(ask.as_bytes()),
    );
    assert_eq!(
        lines(&result.stdout)[0]["data"]["prompt"],
        "codex requests permission: shell"
    );
    let result = run(&["adapter", "map", "codex"], Some(ask.as_bytes()));
    assert_eq!(
        lines(&result.stdout)[0]["data"]["prompt"],
        "Permission requested: shell — ls"
    );
    let record =
        r#"{"attributes":{"event.name":"codex.tool_result","tool_name":"t","success":"true"}}"#;
    let result = run(
        &["adapter", "map", "codex-otel", "--mode", "primary"],
        Some(record.as_bytes()),
    );
    assert_eq!(lines(&result.stdout)[0]["type"], "tool.completed");
    let chunk = r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"d"}"#;
    let result = run(
        &["adapter", "map", "agui", "--deltas"],
        Some(chunk.as_bytes()),
    );
    assert_eq!(
        lines(&result.stdout)[0]["type"],
        "x.agui.text_message.content"
    );
    let secret = r#"{"hook_event_name":"SessionStart","cwd":"/srv/me/x"}"#;
    let result = run(
        &[
            "adapter",
            "map",
            "codex",
            "--ceiling",
            "redacted",
            "--home",
            "/srv/me",
        ],
        Some(secret.as_bytes()),
    );
    assert_eq!(lines(&result.stdout)[0]["data"]["cwd"], "~/x");
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["adapter", "map", "nope"][..],
        &["adapter", "map", "codex", "--surface", "todos"],
        &["adapter", "map", "claude-code", "--surface", "todos"],
        &["adapter", "map", "codex", "--mode", "sideways"],
        &["adapter", "map", "codex", "--ceiling", "most"],
        &["adapter", "map", "codex", "--what"],
    ] {
        let result = run(args, Some(b"{}\n"));
        assert_eq!(result.code, 2, "{args:?}: {}", result.stderr);
        assert!(result.stdout.is_empty(), "{args:?}");
    }
}
