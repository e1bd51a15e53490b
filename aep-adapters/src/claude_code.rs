//! Claude Code (AEP-0002 Annex A.1): the hook table, and the two
//! structured-input surfaces, AskUserQuestion and MCP elicitation, as one
//! `attention.requested` (`kind: "form"`) each. The pure form mappings
//! are `aep::form`'s; this module runs them at the posture.
//!
//! The hooks: the family's shared ones (prompt, stop, tools, permission,
//! subagents, post-compaction), plus Claude Code's own: `StopFailure` as
//! `run.failed`, `PostToolUseFailure` as `tool.failed`, `PermissionDenied`
//! (the auto-mode classifier's block) as `tool.denied`, the task hooks as
//! `progress.task.*`, `TeammateIdle` as `agent.idle`, an `Elicitation`
//! with a requested schema as a form request. `PreCompact` emits nothing
//! (compaction is one fact, at `PostCompact`); a `Notification` that
//! duplicates a `PermissionRequest` or an `Elicitation` is suppressed;
//! `ElicitationResult` settles a pending request, which is runtime state,
//! so the pure mapping emits nothing for it. AskUserQuestion reaches the
//! hooks as a `PermissionRequest` for that tool: it is the form, not a
//! permission card (the tool is the agent asking the person).

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use aep::form::{claude_code, mcp};
use aep::tool_denied::By;
use aep::{AgentIdle, Capture, Payload, SessionStarted, ToolDenied};

use crate::build::Cx;
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::hooks::{self, normal_end, Hook};
use crate::{json, names};

const VENDOR: &str = "claude-code";

/// The notification types that duplicate a first-class hook.
const DUPLICATE_NOTIFICATIONS: [&str; 2] = ["permission_prompt", "elicitation_dialog"];

/// Maps one Claude Code hook payload (`text` is `input` as it was read:
/// an elicitation's fields follow its schema's text order).
pub fn map(text: &str, input: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    let hook = Hook::read(input, VENDOR)?;
    let name = hook.hook_event_name.as_str();
    let member = |key: &str| json::opt_str(input, key, name);
    let event = match name {
        "SessionStart" => {
            let mut started = SessionStarted::new();
            started.client = Some(aep::session_started::Client::new(VENDOR));
            started.gen_ai_request_model = hook.model.clone();
            started.cwd = hook.cwd.clone();
            started.extra = hooks::extras([
                ("trigger", hook.source.clone().map(Value::from)),
                (
                    "permission_mode",
                    member("permission_mode")?.map(Value::from),
                ),
            ]);
            cx.core(Payload::SessionStarted(started)).build()?
        }
        // Every vendor reason (clear, logout, prompt_input_exit, other) is
        // an orderly end.
        "SessionEnd" => cx.core(Payload::SessionEnded(normal_end())).build()?,
        "StopFailure" => hooks::stop_failure(cx, &hook, input)?,
        "PostToolUseFailure" => hooks::tool_use_failure(cx, &hook, input)?,
        "PermissionDenied" => {
            let tool = hooks::tool_ref(hook.tool()?, hook.tool_use_id.as_deref());
            let name = tool.name.clone();
            cx.core(Payload::ToolDenied(ToolDenied::new(tool, By::Policy)))
                .subject(Some(name))
                .build()?
        }
        "TaskCreated" | "TaskCompleted" => hooks::task(
            cx,
            name == "TaskCreated",
            member("task_id")?,
            member("task_subject")?,
        )?,
        "TeammateIdle" => cx
            .core(Payload::AgentIdle(AgentIdle::new()))
            .subject(member("teammate_name")?)
            .build()?,
        "PermissionRequest" if hook.tool_name.as_deref() == Some(ASK_USER_QUESTION) => {
            match input.get("tool_input").filter(|i| questions(i)) {
                Some(call) => ask_user_question(call, cx)?,
                None => hooks::shared(cx, &hook, VENDOR)?,
            }
        }
        "Elicitation" => match elicitation_params(text)? {
            Some(params) => elicitation(&params, cx)?,
            // A URL-mode elicitation has no form to state.
            None => cx.vendor(names::session_fallback(VENDOR, name)).build()?,
        },
        // Settling a pending request is the runtime's (it holds them).
        "ElicitationResult" => return Ok(Vec::new()),
        // Compaction is one fact, emitted at its post moment.
        "PreCompact" => return Ok(Vec::new()),
        "Notification"
            if hook
                .notification_type
                .as_deref()
                .is_some_and(|t| DUPLICATE_NOTIFICATIONS.contains(&t)) =>
        {
            return Ok(Vec::new())
        }
        "Notification" => hooks::notified(cx, &hook)?,
        _ => hooks::shared(cx, &hook, VENDOR)?,
    };
    Ok(vec![event])
}

/// The tool that asks the person questions (its permission request is
/// the question, not a permission gate).
const ASK_USER_QUESTION: &str = "AskUserQuestion";

/// Whether a tool input reads as AskUserQuestion's.
fn questions(input: &Value) -> bool {
    claude_code::AskUserQuestion::deserialize(input).is_ok()
}

/// The MCP `elicitation/create` parameters (`{message, requestedSchema}`,
/// as JSON text) of a Claude Code `Elicitation` hook payload (`text`, as
/// read: its `message` and `requested_schema`), the schema's text kept as
/// it came so the form's fields follow its order; `None` for an
/// elicitation without a schema (URL mode).
pub fn elicitation_params(text: &str) -> Result<Option<String>, MapError> {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(default)]
        message: Option<String>,
        #[serde(borrow, default)]
        requested_schema: Option<&'a RawValue>,
    }
    let params: Params<'_> =
        serde_json::from_str(text).map_err(|e| MapError::new(format!("Elicitation: {e}")))?;
    let Some(schema) = params.requested_schema.filter(|s| s.get() != "null") else {
        return Ok(None);
    };
    let message = serde_json::to_string(&params.message.unwrap_or_default())
        .map_err(|e| MapError::new(format!("Elicitation: {e}")))?;
    Ok(Some(format!(
        r#"{{"message":{message},"requestedSchema":{}}}"#,
        schema.get()
    )))
}

const REQUESTED: &str = "attention.requested";

/// An AskUserQuestion tool input (`{"questions": [...]}`) as one form
/// request: a field per question, real labels from `redacted` up,
/// structural placeholders below.
pub fn ask_user_question(input: &Value, cx: &Cx<'_>) -> Result<MappedEvent, MapError> {
    let call: claude_code::AskUserQuestion = json::decode(input, "AskUserQuestion")?;
    let capture = cx.ceiling(REQUESTED).max(Capture::Metadata);
    let request = claude_code::request(&call, cx.agent, capture);
    cx.pregated(Payload::AttentionRequested(request)).build()
}

/// An MCP `elicitation/create` request (`{message, requestedSchema}`, as
/// JSON text: the fields follow the schema's property order) as one form
/// request.
pub fn elicitation(text: &str, cx: &Cx<'_>) -> Result<MappedEvent, MapError> {
    let capture = cx.ceiling(REQUESTED).max(Capture::Metadata);
    let request = mcp::request(text, cx.agent, capture)
        .map_err(|e| MapError::new(format!("elicitation: {e}")))?;
    cx.pregated(Payload::AttentionRequested(request)).build()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{Mapper, Posture, Vocabulary};

    fn map(input: &serde_json::Value) -> Vec<crate::MappedEvent> {
        let mapper = Mapper::new(Vocabulary::ClaudeCode, None, Posture::default()).unwrap();
        mapper.map(&input.to_string()).unwrap()
    }

    fn types(input: serde_json::Value) -> Vec<String> {
        map(&input).into_iter().map(|e| e.type_).collect()
    }

    #[test]
    fn every_documented_hook_has_its_meaning() {
        let base = json!({"session_id": "s1", "cwd": "/w", "transcript_path": "/t.jsonl"});
        let cases = [
            (
                json!({"hook_event_name": "SessionStart", "source": "startup"}),
                "session.started",
            ),
            (
                json!({"hook_event_name": "SessionEnd", "reason": "logout"}),
                "session.ended",
            ),
            (
                json!({"hook_event_name": "UserPromptSubmit", "prompt": "hi"}),
                "run.started",
            ),
            (
                json!({"hook_event_name": "Stop", "stop_hook_active": false}),
                "run.finished",
            ),
            (
                json!({"hook_event_name": "StopFailure", "error": "rate_limit"}),
                "run.failed",
            ),
            (
                json!({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "t1",
                       "tool_input": {"command": "ls"}}),
                "tool.requested",
            ),
            (
                json!({"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "t1",
                       "tool_response": {"stdout": "a"}}),
                "tool.completed",
            ),
            (
                json!({"hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                       "tool_use_id": "t1", "error": "exit 1"}),
                "tool.failed",
            ),
            (
                json!({"hook_event_name": "PermissionDenied", "tool_name": "Bash",
                       "tool_use_id": "t2", "reason": "classifier"}),
                "tool.denied",
            ),
            (
                json!({"hook_event_name": "PermissionRequest", "tool_name": "Bash",
                       "tool_input": {"command": "rm -rf x"}}),
                "attention.requested",
            ),
            (
                json!({"hook_event_name": "SubagentStart", "agent_id": "a1", "agent_type": "Explore"}),
                "delegation.subagent.started",
            ),
            (
                json!({"hook_event_name": "SubagentStop", "agent_id": "a1", "agent_type": "Explore"}),
                "delegation.subagent.stopped",
            ),
            (
                json!({"hook_event_name": "PostCompact", "trigger": "auto"}),
                "session.compacted",
            ),
            (
                json!({"hook_event_name": "TaskCreated", "task_id": "7", "task_subject": "x"}),
                "progress.task.planned",
            ),
            (
                json!({"hook_event_name": "TaskCompleted", "task_id": "7", "task_subject": "x"}),
                "progress.task.completed",
            ),
            (
                json!({"hook_event_name": "TeammateIdle", "teammate_name": "bo"}),
                "agent.idle",
            ),
            (
                json!({"hook_event_name": "Notification", "notification_type": "idle_prompt",
                       "message": "waiting"}),
                "progress.status",
            ),
            (
                json!({"hook_event_name": "CwdChanged", "old_cwd": "/a", "new_cwd": "/b"}),
                "x.claude-code.session.cwd_changed",
            ),
        ];
        for (hook, expected) in cases {
            let mut input = base.clone();
            input
                .as_object_mut()
                .unwrap()
                .extend(hook.as_object().unwrap().clone());
            assert_eq!(types(input.clone()), [expected], "{input}");
        }
    }

    #[test]
    fn what_another_moment_already_says_emits_nothing() {
        for input in [
            json!({"hook_event_name": "PreCompact", "trigger": "manual"}),
            json!({"hook_event_name": "Notification", "notification_type": "permission_prompt",
                   "message": "Claude needs your permission to use Bash"}),
            json!({"hook_event_name": "Notification", "notification_type": "elicitation_dialog"}),
            json!({"hook_event_name": "ElicitationResult", "mcp_server_name": "m",
                   "action": "accept", "content": {"a": 1}}),
        ] {
            assert_eq!(types(input.clone()), Vec::<String>::new(), "{input}");
        }
    }

    #[test]
    fn content_stays_below_the_default_ceiling() {
        let events = map(
            &json!({"hook_event_name": "UserPromptSubmit", "session_id": "s",
                                 "prompt": "my secret plan"}),
        );
        assert_eq!(events[0].capture, aep::Capture::Metadata);
        assert!(!serde_json::to_string(&events[0])
            .unwrap()
            .contains("secret"));
        let events = map(
            &json!({"hook_event_name": "PermissionRequest", "tool_name": "Bash",
                                 "tool_input": {"command": "ls /home"}}),
        );
        // Attention rides at redacted: the prompt is readable.
        assert_eq!(events[0].capture, aep::Capture::Redacted);
        assert_eq!(
            events[0].data["prompt"],
            "Permission requested: Bash — ls /home"
        );
        assert_eq!(events[0].data["respond_via"], json!(["control"]));
    }

    #[test]
    fn ask_user_question_asks_for_permission_as_a_form() {
        let questions = json!({"questions": [{"question": "Which db?", "header": "DB",
            "multiSelect": false, "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]});
        let events = map(
            &json!({"hook_event_name": "PermissionRequest", "session_id": "s",
            "tool_name": "AskUserQuestion", "tool_input": questions}),
        );
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].type_, "attention.requested");
        assert_eq!(events[0].data["kind"], "form");
        assert_eq!(events[0].data["fields"][0]["label"], "DB: Which db?");
        assert_eq!(events[0].data["fields"][0]["choices"][1]["label"], "SQLite");
        // An input that is not the tool's stays a permission card.
        let odd = map(
            &json!({"hook_event_name": "PermissionRequest", "session_id": "s",
            "tool_name": "AskUserQuestion", "tool_input": {"questions": "?"}}),
        );
        assert_eq!(odd[0].data["kind"], "permission");
    }

    #[test]
    fn an_elicitation_hook_is_a_form_in_its_schema_order() {
        let text = r#"{"hook_event_name":"Elicitation","session_id":"s","mcp_server_name":"db",
            "message":"Pick a table","requested_schema":{"type":"object","properties":{
            "zeta":{"type":"string","enum":["a","b"]},"alpha":{"type":"integer"}}}}"#;
        let mapper = Mapper::new(Vocabulary::ClaudeCode, None, Posture::default()).unwrap();
        let events = mapper.map(text).unwrap();
        assert_eq!(events[0].type_, "attention.requested");
        assert_eq!(events[0].data["kind"], "form");
        assert_eq!(events[0].data["prompt"], "Pick a table");
        let ids: Vec<_> = events[0].data["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["zeta", "alpha"]);
        // A URL-mode elicitation has no form: the vendor's own event.
        let url = json!({"hook_event_name": "Elicitation", "mode": "url", "url": "https://x"});
        assert_eq!(types(url), ["x.claude-code.session.elicitation"]);
    }
}
