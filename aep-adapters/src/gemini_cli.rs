//! Gemini CLI hooks (AEP-0002 Annex A.3): eleven hooks, eight onto core
//! types and the model plane (`BeforeModel`, `AfterModel`,
//! `BeforeToolSelection`) in `x.gemini-cli.session.*` by design. Runs are
//! the runtime's (no turn id); `tool_response.error` splits `tool.failed`
//! off; compaction rides the only (pre) moment; `Notification` is
//! observability, never an attention request.

use serde_json::Value;

use aep::{Payload, RunFinished, SessionStarted};

use crate::build::Cx;
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::hooks::{self, error_parts, normal_end, Hook};
use crate::names;

const VENDOR: &str = "gemini-cli";

/// Maps one Gemini CLI hook payload.
pub fn map(input: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    let hook = Hook::read(input, VENDOR)?;
    let name = hook.hook_event_name.as_str();
    let event = match name {
        "SessionStart" => {
            let mut started = SessionStarted::new();
            started.client = Some(aep::session_started::Client::new(VENDOR));
            started.cwd = hook.cwd.clone();
            started.extra = hooks::extras([("trigger", hook.source.clone().map(Value::from))]);
            cx.core(Payload::SessionStarted(started)).build()?
        }
        // Every vendor reason (exit, clear, logout, ...) is an orderly end.
        "SessionEnd" => cx.core(Payload::SessionEnded(normal_end())).build()?,
        "BeforeAgent" => hooks::prompt_submitted(cx, &hook)?,
        "AfterAgent" => cx.core(Payload::RunFinished(RunFinished::new())).build()?,
        "BeforeTool" => {
            let tool = hooks::tool_ref(hook.tool()?, None);
            hooks::tool_requested(cx, tool, hook.tool_input.as_ref()).build()?
        }
        "AfterTool" => {
            let tool = hooks::tool_ref(hook.tool()?, None);
            let response = hook.tool_response.as_ref();
            match response
                .and_then(|r| r.get("error"))
                .filter(|e| !e.is_null())
            {
                Some(error) => {
                    let (kind, message) = error_parts(error);
                    hooks::tool_failed(cx, tool, &kind, message.as_deref()).build()?
                }
                None => hooks::tool_completed(cx, tool, response).build()?,
            }
        }
        "BeforeModel" | "AfterModel" | "BeforeToolSelection" => {
            let model = input
                .get("llm_request")
                .and_then(|r| r.get("model"))
                .and_then(Value::as_str);
            cx.vendor(names::session_fallback(VENDOR, name))
                .meta("model", model)
                .build()?
        }
        "PreCompress" => hooks::compacted(cx, &hook)?,
        "Notification" => hooks::notified(cx, &hook)?,
        other => cx.vendor(names::session_fallback(VENDOR, other)).build()?,
    };
    Ok(vec![event])
}
