//! Qwen Code hooks (AEP-0002 Annex A.4): the Claude-Code-shaped sibling.
//! The `permission_prompt` notification is suppressed against the
//! first-class `PermissionRequest`; compaction is emitted once, at
//! `PostCompact`; todo hooks fire twice per write and only the persisted
//! (`postWrite`) firing is the event; `permission_mode` rides at metadata.

use serde_json::Value;

use aep::{
    DelegationSubagentStarted, DelegationSubagentStopped, ErrorInfo, Payload, ProgressStatus,
    ProgressTaskCompleted, ProgressTaskPlanned, RunFailed, RunFinished, RunStarted,
    SessionCompacted, SessionStarted, TaskRef,
};

use crate::build::Cx;
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::hooks::{self, normal_end, Hook};
use crate::json;
use crate::names;

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
        "UserPromptSubmit" => {
            let mut started = RunStarted::new();
            started.trigger = Some(aep::run_started::Trigger::User);
            started.prompt = hooks::prompt_text(hook.prompt.as_ref());
            cx.core(Payload::RunStarted(started)).build()?
        }
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
        "PreToolUse" => {
            let tool = hooks::tool_ref(hook.tool()?, hook.tool_use_id.as_deref());
            hooks::tool_requested(cx, tool, hook.tool_input.as_ref()).build()?
        }
        "PostToolUse" => {
            let tool = hooks::tool_ref(hook.tool()?, hook.tool_use_id.as_deref());
            hooks::tool_completed(cx, tool, hook.tool_response.as_ref()).build()?
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
        "PermissionRequest" => {
            let tool = hook.tool()?;
            let prompt = hooks::permission_prompt(tool, hook.tool_input.as_ref());
            let request = hooks::permission_over_control(prompt);
            cx.core(Payload::AttentionRequested(request))
                .subject(Some(tool))
                .build()?
        }
        "SubagentStart" => {
            let mut started = DelegationSubagentStarted::new();
            started.agent_type = hook.agent_type.clone();
            cx.core(Payload::DelegationSubagentStarted(started))
                .subject(hook.agent_id.as_deref())
                .build()?
        }
        "SubagentStop" => {
            let mut stopped = DelegationSubagentStopped::new();
            stopped.agent_type = hook.agent_type.clone();
            cx.core(Payload::DelegationSubagentStopped(stopped))
                .subject(hook.agent_id.as_deref())
                .build()?
        }
        "PreCompact" => return Ok(Vec::new()),
        "PostCompact" => {
            let mut compacted = SessionCompacted::new();
            compacted.trigger = hook.trigger.clone();
            cx.core(Payload::SessionCompacted(compacted)).build()?
        }
        "Notification" if hook.notification_type.as_deref() == Some("permission_prompt") => {
            return Ok(Vec::new())
        }
        "Notification" => {
            let mut status = ProgressStatus::new();
            status.message = hook.message.clone();
            cx.core(Payload::ProgressStatus(status))
                .subject(hook.notification_type.as_deref())
                .build()?
        }
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
        other => cx.vendor(names::session_fallback(VENDOR, other)).build()?,
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
