//! What the hook vocabularies of the Claude Code family share (Codex,
//! Gemini CLI, Qwen Code, VS Code, Kimi Code): the stdin payload's common
//! members, and the events the same moment means in each. The tool, error
//! and session-end pieces serve the other vocabularies too.

use serde::Deserialize;
use serde_json::Value;

use aep::attention_requested::{Kind, RespondVia};
use aep::{
    AttentionRequested, Choice, DelegationSubagentStarted, DelegationSubagentStopped, ErrorInfo,
    Object, Payload, ProgressStatus, ProgressTaskCompleted, ProgressTaskPlanned, RunFailed,
    RunFinished, RunStarted, SessionCompacted, SessionEnded, TaskRef, ToolCompleted, ToolFailed,
    ToolRef, ToolRequested,
};

use crate::build::{Core, Cx};
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::json;
use crate::names;

/// A hook's stdin payload: the members the family's hooks carry, each
/// optional (a hook reads the ones it has). Unknown members are ignored.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Hook {
    /// The hook's name (`PreToolUse`, ...).
    pub hook_event_name: String,
    /// The vendor session id.
    pub session_id: Option<String>,
    /// Why a session started (`startup`, `resume`, ...).
    pub source: Option<String>,
    /// The model.
    pub model: Option<String>,
    /// The working directory.
    pub cwd: Option<String>,
    /// The user's prompt: text, or content parts.
    pub prompt: Option<Value>,
    /// The tool's name.
    pub tool_name: Option<String>,
    /// The tool call id (Codex, Qwen Code, VS Code).
    pub tool_use_id: Option<String>,
    /// The tool call id (Kimi Code).
    pub tool_call_id: Option<String>,
    /// The tool's arguments.
    pub tool_input: Option<Value>,
    /// The tool's result.
    pub tool_response: Option<Value>,
    /// The tool's output (Kimi Code).
    pub tool_output: Option<Value>,
    /// A subagent's id.
    pub agent_id: Option<String>,
    /// A subagent's (or the session's agent's) type.
    pub agent_type: Option<String>,
    /// What triggered a compaction (`auto`, `manual`).
    pub trigger: Option<String>,
    /// A notification's type.
    pub notification_type: Option<String>,
    /// A notification's text.
    pub message: Option<String>,
    /// An error: text, or an object.
    pub error: Option<Value>,
    /// Why a session ended or a turn was interrupted.
    pub reason: Option<String>,
}

impl Hook {
    /// Reads a hook payload; `Ok(None)` when it has no `hook_event_name`
    /// string is impossible: that is an error naming the member.
    pub fn read(input: &Value, vendor: &str) -> Result<Hook, MapError> {
        json::object(input, vendor)?;
        json::req_str(input, "hook_event_name", vendor)?;
        json::decode(input, vendor)
    }

    /// The tool name, required by the tool hooks.
    pub fn tool(&self) -> Result<&str, MapError> {
        self.tool_name.as_deref().ok_or_else(|| {
            MapError::new(format!(
                "{}: missing member `tool_name`",
                self.hook_event_name
            ))
        })
    }
}

/// The hooks the family shares, by their Claude Code names, mapped the
/// one way every member that has them means them; any other name takes
/// the vendor's session fallback (`x.{vendor}.session.*`).
///
/// A member whose hook of one of these names means something else, or
/// reads other members, or that has no such hook at all, matches that
/// name itself before handing the rest here.
pub fn shared(cx: &Cx<'_>, hook: &Hook, vendor: &str) -> Result<MappedEvent, MapError> {
    match hook.hook_event_name.as_str() {
        "UserPromptSubmit" => prompt_submitted(cx, hook),
        "Stop" => cx.core(Payload::RunFinished(RunFinished::new())).build(),
        "PreToolUse" => {
            let tool = tool_ref(hook.tool()?, hook.tool_use_id.as_deref());
            tool_requested(cx, tool, hook.tool_input.as_ref()).build()
        }
        "PostToolUse" => {
            let tool = tool_ref(hook.tool()?, hook.tool_use_id.as_deref());
            tool_completed(cx, tool, hook.tool_response.as_ref()).build()
        }
        "PermissionRequest" => {
            let tool = hook.tool()?;
            let prompt = permission_prompt(tool, hook.tool_input.as_ref());
            let request = permission_over_control(prompt);
            cx.core(Payload::AttentionRequested(request))
                .subject(Some(tool))
                .build()
        }
        "SubagentStart" => {
            let mut started = DelegationSubagentStarted::new();
            started.agent_type = hook.agent_type.clone();
            cx.core(Payload::DelegationSubagentStarted(started))
                .subject(hook.agent_id.as_deref())
                .build()
        }
        "SubagentStop" => {
            let mut stopped = DelegationSubagentStopped::new();
            stopped.agent_type = hook.agent_type.clone();
            cx.core(Payload::DelegationSubagentStopped(stopped))
                .subject(hook.agent_id.as_deref())
                .build()
        }
        "PostCompact" => compacted(cx, hook),
        other => cx.vendor(names::session_fallback(vendor, other)).build(),
    }
}

/// `run.started` for a user's prompt, its text at `full`.
pub fn prompt_submitted(cx: &Cx<'_>, hook: &Hook) -> Result<MappedEvent, MapError> {
    let mut started = RunStarted::new();
    started.trigger = Some(aep::run_started::Trigger::User);
    started.prompt = prompt_text(hook.prompt.as_ref());
    cx.core(Payload::RunStarted(started)).build()
}

/// `session.compacted`, with what triggered it.
pub fn compacted(cx: &Cx<'_>, hook: &Hook) -> Result<MappedEvent, MapError> {
    let mut compacted = SessionCompacted::new();
    compacted.trigger = hook.trigger.clone();
    cx.core(Payload::SessionCompacted(compacted)).build()
}

/// A notification as observability (`progress.status`, never an
/// attention request): its text the message, its type the subject.
pub fn notified(cx: &Cx<'_>, hook: &Hook) -> Result<MappedEvent, MapError> {
    let mut status = ProgressStatus::new();
    status.message = hook.message.clone();
    cx.core(Payload::ProgressStatus(status))
        .subject(hook.notification_type.as_deref())
        .build()
}

/// `run.failed` for a turn that ended on an API error (`StopFailure`):
/// the error's kind at metadata, its details (free text) only where
/// content may ride.
pub fn stop_failure(cx: &Cx<'_>, hook: &Hook, input: &Value) -> Result<MappedEvent, MapError> {
    let kind = hook
        .error
        .as_ref()
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("error");
    let mut failed = RunFailed::new(kind);
    let details = json::opt_str(input, "error_details", &hook.hook_event_name)?;
    if let Some(details) = details.filter(|_| cx.carries_content("run.failed")) {
        let mut error = ErrorInfo::new();
        error.message = Some(details.to_owned());
        failed.error = Some(error);
    }
    cx.core(Payload::RunFailed(failed)).build()
}

/// `tool.failed` for `PostToolUseFailure`: `interrupt` when the user
/// interrupted the call, `tool_error` otherwise, the error text gated by
/// the schema.
pub fn tool_use_failure(cx: &Cx<'_>, hook: &Hook, input: &Value) -> Result<MappedEvent, MapError> {
    let tool = tool_ref(hook.tool()?, hook.tool_use_id.as_deref());
    let interrupted = input.get("is_interrupt").and_then(Value::as_bool) == Some(true);
    let kind = if interrupted {
        "interrupt"
    } else {
        "tool_error"
    };
    let message = hook.error.as_ref().and_then(Value::as_str);
    tool_failed(cx, tool, kind, message).build()
}

/// `progress.task.planned` (`created`) or `progress.task.completed` for
/// a task or todo hook: the task id is the subject, its title rides where
/// content may.
pub fn task(
    cx: &Cx<'_>,
    created: bool,
    id: Option<&str>,
    title: Option<&str>,
) -> Result<MappedEvent, MapError> {
    let task = todo_task(cx, title);
    let payload = if created {
        let mut planned = ProgressTaskPlanned::new();
        planned.task = task;
        Payload::ProgressTaskPlanned(planned)
    } else {
        let mut completed = ProgressTaskCompleted::new();
        completed.task = task;
        Payload::ProgressTaskCompleted(completed)
    };
    cx.core(payload).subject(id).build()
}

/// The task of a todo event: its title where content may ride (the id is
/// the event's subject), nothing below.
pub fn todo_task(cx: &Cx<'_>, title: Option<&str>) -> Option<TaskRef> {
    let title = title.filter(|_| cx.carries_content("progress.task.planned"))?;
    let mut task = TaskRef::new();
    task.title = Some(title.to_owned());
    Some(task)
}

/// A tool reference with its call id, when there is one.
pub fn tool_ref(name: &str, call_id: Option<&str>) -> ToolRef {
    let mut tool = ToolRef::new(name);
    tool.call_id = call_id.filter(|c| !c.is_empty()).map(str::to_owned);
    tool
}

/// `tool.requested` for a call: the arguments ride at `full`, their
/// digest always, subject the tool name.
pub fn tool_requested<'a>(cx: &Cx<'a>, tool: ToolRef, args: Option<&Value>) -> Core<'a> {
    let name = tool.name.clone();
    let mut payload = ToolRequested::new(tool);
    if let Some(args) = args.filter(|a| !a.is_null()) {
        payload.args_digest = Some(aep::digest::digest(args));
        payload.args = args.as_object().cloned();
    }
    cx.core(Payload::ToolRequested(payload)).subject(Some(name))
}

/// `tool.completed` for a call: the result rides at `full` (an object
/// or a string), its digest always, subject the tool name.
pub fn tool_completed<'a>(cx: &Cx<'a>, tool: ToolRef, result: Option<&Value>) -> Core<'a> {
    let name = tool.name.clone();
    let mut payload = ToolCompleted::new(tool);
    if let Some(result) = result.filter(|r| !r.is_null()) {
        payload.result_digest = Some(aep::digest::digest(result));
        payload.result = match result {
            Value::Object(o) => Some(o.clone().into()),
            Value::String(s) => Some(s.clone().into()),
            _ => None,
        };
    }
    cx.core(Payload::ToolCompleted(payload)).subject(Some(name))
}

/// `tool.failed` for a call, the error's type at metadata, its message
/// gated by the schema.
pub fn tool_failed<'a>(
    cx: &Cx<'a>,
    tool: ToolRef,
    error_type: &str,
    message: Option<&str>,
) -> Core<'a> {
    let name = tool.name.clone();
    let mut error = ErrorInfo::new();
    error.type_ = Some(error_type.to_owned());
    error.message = message.map(str::to_owned);
    cx.core(Payload::ToolFailed(ToolFailed::new(tool, error)))
        .subject(Some(name))
}

/// A tool terminal's payload with its `duration_ms` set (`tool.completed`
/// and `tool.failed`); any other payload is returned as it is.
pub fn with_duration(payload: Payload, duration_ms: Option<u64>) -> Payload {
    match payload {
        Payload::ToolCompleted(mut completed) => {
            completed.duration_ms = duration_ms;
            Payload::ToolCompleted(completed)
        }
        Payload::ToolFailed(mut failed) => {
            failed.duration_ms = duration_ms;
            Payload::ToolFailed(failed)
        }
        other => other,
    }
}

/// The prompt of a permission request for `tool`: `Permission requested:
/// {tool}`, then ` — {command}` (or the file path the call touches) and
/// ` ({description})` when the arguments carry them.
pub fn permission_prompt(tool: &str, args: Option<&Value>) -> String {
    let mut prompt = format!("Permission requested: {tool}");
    let text = |key: &str| {
        args.and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    if let Some(detail) = text("command")
        .or_else(|| text("file_path"))
        .or_else(|| text("path"))
    {
        prompt.push_str(" — ");
        prompt.push_str(detail);
    }
    if let Some(description) = text("description") {
        prompt.push_str(&format!(" ({description})"));
    }
    prompt
}

/// A permission request answered over the control channel, with the
/// options the hold-open hook can deliver (`allow`, `deny`).
pub fn permission_over_control(prompt: String) -> AttentionRequested {
    let mut request = AttentionRequested::new(Kind::Permission, prompt);
    request.options = Some(vec![
        Choice::new("allow", "Allow"),
        Choice::new("deny", "Deny"),
    ]);
    request.respond_via = Some(vec![RespondVia::Control]);
    request
}

/// The text of a prompt: a string, or the text parts of a content array
/// joined.
pub fn prompt_text(prompt: Option<&Value>) -> Option<String> {
    prompt.and_then(json::text_of)
}

/// An object of the members that are `Some`, for vendor extras.
pub fn extras<const N: usize>(members: [(&str, Option<Value>); N]) -> Object {
    members
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v)))
        .collect()
}

/// `session.ended` with the one reason an orderly vendor end maps to.
pub fn normal_end() -> SessionEnded {
    let mut ended = SessionEnded::new();
    ended.reason = Some(aep::session_ended::Reason::Normal);
    ended
}

/// A tool error's type and message: an object's `type` (or `name`) and
/// `message`, or a string as the message of a `tool_error`.
pub fn error_parts(error: &Value) -> (String, Option<String>) {
    match error {
        Value::String(message) => ("tool_error".to_owned(), Some(message.clone())),
        other => {
            let text = |k: &str| {
                other
                    .get(k)
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
            };
            let kind = text("type")
                .or_else(|| text("name"))
                .unwrap_or("tool_error");
            (kind.to_owned(), text("message").map(str::to_owned))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Mapper, Posture, Vocabulary};
    use serde_json::json;

    #[test]
    fn a_shared_name_a_member_lacks_stays_vendor_scoped() {
        use Vocabulary::{Codex, KimiCode, Vscode};
        let cases = [
            // The VS Code Preview surface has neither hook.
            (
                Vscode,
                "PermissionRequest",
                "x.vscode.session.permission_request",
            ),
            (Vscode, "PostCompact", "x.vscode.session.post_compact"),
            // Codex has no session-end or notification hook.
            (Codex, "SessionEnd", "x.codex.session.session_end"),
            (Codex, "Notification", "x.codex.session.notification"),
            // Where the member has the hook, the shared meaning holds.
            (Codex, "PermissionRequest", "attention.requested"),
            (KimiCode, "Stop", "run.finished"),
        ];
        for (vocabulary, name, expected) in cases {
            let mapper = Mapper::new(vocabulary, None, Posture::default()).unwrap();
            let input = json!({"hook_event_name": name, "tool_name": "shell"});
            let events = mapper.map(&input.to_string()).unwrap();
            let types: Vec<_> = events.iter().map(|e| e.type_.as_str()).collect();
            assert_eq!(types, [expected], "{vocabulary:?} {name}");
        }
    }

    #[test]
    fn permission_prompts_name_the_tool_and_what_it_does() {
        let args = json!({"command": "rm -rf build", "description": "clean build dir"});
        assert_eq!(
            permission_prompt("shell", Some(&args)),
            "Permission requested: shell — rm -rf build (clean build dir)"
        );
        assert_eq!(
            permission_prompt("Edit", Some(&json!({"file_path": "/a.rs"}))),
            "Permission requested: Edit — /a.rs"
        );
        assert_eq!(
            permission_prompt("Web", Some(&json!({"command": 3}))),
            "Permission requested: Web"
        );
        assert_eq!(permission_prompt("Web", None), "Permission requested: Web");
    }

    #[test]
    fn a_hook_needs_its_name() {
        let e = Hook::read(&json!({"session_id": "s"}), "codex").unwrap_err();
        assert_eq!(e.message(), "codex: missing member `hook_event_name`");
        let e = Hook::read(
            &json!({"hook_event_name": "Stop", "session_id": 1}),
            "codex",
        )
        .unwrap_err();
        assert!(e.message().contains("session_id"), "{e}");
        let e = Hook::read(&json!([]), "codex").unwrap_err();
        assert_eq!(e.message(), "codex: expected a JSON object, got an array");
    }
}
