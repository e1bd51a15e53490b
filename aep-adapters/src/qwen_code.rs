//! Qwen Code hooks (AEP-0002 Annex A.4): the Claude-Code-shaped sibling.
//! The `permission_prompt` notification is suppressed against the
//! first-class `PermissionRequest`; compaction is emitted once, at
//! `PostCompact`; todo hooks fire twice per write and only the persisted
//! (`postWrite`) firing is the event; `permission_mode` rides at metadata.

use serde_json::Value;

use aep::{Payload, RunFinished, SessionStarted};

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
        "StopFailure" => hooks::stop_failure(cx, &hook, input)?,
        "PostToolUseFailure" => hooks::tool_use_failure(cx, &hook, input)?,
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
            let created = name == "TodoCreated";
            hooks::task(cx, created, text("todo_id")?, text("todo_content")?)?
        }
        // The prompt, tool, permission, subagent and post-compaction hooks
        // are the family's.
        _ => hooks::shared(cx, &hook, VENDOR)?,
    };
    Ok(vec![event])
}
