//! Qwen Code hooks (AEP-0002 Annex A.4): the Claude-Code-shaped sibling.
//! The `permission_prompt` notification is suppressed against the
//! first-class `PermissionRequest`; compaction is emitted once, at
//! `PostCompact`; todo hooks fire twice per write and only the persisted
//! (`postWrite`) firing is the event; `permission_mode` rides at metadata.

use serde_json::Value;

use aep::{
    ErrorInfo, Payload, ProgressTaskCompleted, ProgressTaskPlanned, RunFailed, RunFinished,
    SessionStarted, TaskRef,
};

use crate::build::Cx;
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::hooks::{self, normal_end, Hook};
use crate::json;

const VENDOR: &str = "qwen-code";

/// Maps one Qwen Code hook payload.
pub fn map(input: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    let hook = Hook::read(input, VENDOR)?;
    let name = hook.hook_event_name.as_str();
    let text = |key: &str| json::opt_str(input, key, name);
    let event = match name {
        "SessionStart" => {
            let mut started = SessionStarted::new();
            started.client = Some(aep::session_started::Client::new(VENDOR));
            started.gen_ai_request_model = hook.model.clone();
            started.cwd = hook.cwd.clone();
            started.extra = hooks::extras([
                ("trigger", hook.source.clone().map(Value::from)),
                ("permission_mode", text("permission_mode")?.map(Value::from)),
            ]);
            cx.core(Payload::SessionStarted(started)).build()?
        }
        "SessionEnd" => cx.core(Payload::SessionEnded(normal_end())).build()?,
        // Qwen's stop carries the turn's token usage.
        "Stop" => {
            let mut finished = RunFinished::new();
            finished.gen_ai_usage_input_tokens = json::count(input.get("input_tokens"));
            finished.gen_ai_usage_output_tokens = json::count(input.get("output_tokens"));
            cx.core(Payload::RunFinished(finished)).build()?
        }
        "StopFailure" => {
            let kind = hook
                .error
                .as_ref()
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .unwrap_or("error");
            let mut failed = RunFailed::new(kind);
            // The details are free text: an error object only where they may ride.
            if let Some(details) =
                text("error_details")?.filter(|_| cx.carries_content("run.failed"))
            {
                let mut error = ErrorInfo::new();
                error.message = Some(details.to_owned());
                failed.error = Some(error);
            }
            cx.core(Payload::RunFailed(failed)).build()?
        }
        "PostToolUseFailure" => {
            let tool = hooks::tool_ref(hook.tool()?, hook.tool_use_id.as_deref());
            let interrupted = input.get("is_interrupt").and_then(Value::as_bool) == Some(true);
            let kind = if interrupted {
                "interrupt"
            } else {
                "tool_error"
            };
            let message = hook.error.as_ref().and_then(Value::as_str);
            hooks::tool_failed(cx, tool, kind, message).build()?
        }
        // Compaction is one fact, emitted at its post moment.
        "PreCompact" => return Ok(Vec::new()),
        "Notification" if hook.notification_type.as_deref() == Some("permission_prompt") => {
            return Ok(Vec::new())
        }
        "Notification" => hooks::notified(cx, &hook)?,
        "TodoCreated" | "TodoCompleted" => {
            // The validation firing precedes persistence: silent. An absent
            // or unknown phase emits.
            if text("phase")? == Some("validation") {
                return Ok(Vec::new());
            }
            let id = text("todo_id")?;
            let task = todo_task(cx, text("todo_content")?);
            let payload = if name == "TodoCreated" {
                let mut planned = ProgressTaskPlanned::new();
                planned.task = task;
                Payload::ProgressTaskPlanned(planned)
            } else {
                let mut completed = ProgressTaskCompleted::new();
                completed.task = task;
                Payload::ProgressTaskCompleted(completed)
            };
            cx.core(payload).subject(id).build()?
        }
        // The prompt, tool, permission, subagent and post-compaction hooks
        // are the family's.
        _ => hooks::shared(cx, &hook, VENDOR)?,
    };
    Ok(vec![event])
}

/// The task of a todo event: its title where content may ride (the id is
/// the event's subject), nothing below.
pub fn todo_task(cx: &Cx<'_>, title: Option<&str>) -> Option<TaskRef> {
    let title = title.filter(|_| cx.carries_content("progress.task.planned"))?;
    let mut task = TaskRef::new();
    task.title = Some(title.to_owned());
    Some(task)
}
