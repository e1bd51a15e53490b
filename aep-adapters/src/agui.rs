//! AG-UI stream events (AEP-0002 Annex A.14), `@ag-ui/core` 0.0.57. Real
//! vendor identity (threadId, runId) is the runtime's; `STEP_*` stamps
//! the envelope step; token and argument deltas only with deltas on; the
//! encrypted reasoning value never maps; the reply terminal stays
//! `x.agui.text_message.end` while `message.agent.replied` is reserved.
//! Unknown types fall back mechanically to `x.agui.{family}.{leaf}`.

use serde_json::Value;

use aep::{
    ErrorInfo, Payload, RunFailed, RunFinished, RunStarted, RunStepFinished, RunStepStarted,
    StateDelta, StateSnapshot,
};

use crate::build::Cx;
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::hooks::{self, extras};
use crate::json;
use crate::names;

const VENDOR: &str = "agui";

/// Maps one stream event.
pub fn map(input: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    json::object(input, VENDOR)?;
    let raw_type = json::req_str(input, "type", VENDOR)?;
    // The deprecated THINKING_* names map as their REASONING_* successors.
    let kind = match raw_type {
        "THINKING_START" => "REASONING_START",
        "THINKING_END" => "REASONING_END",
        "THINKING_TEXT_MESSAGE_START" => "REASONING_MESSAGE_START",
        "THINKING_TEXT_MESSAGE_CONTENT" => "REASONING_MESSAGE_CONTENT",
        "THINKING_TEXT_MESSAGE_END" => "REASONING_MESSAGE_END",
        other => other,
    };
    let text = |key: &str| json::opt_str(input, key, raw_type);
    let mechanical = || {
        let snake = names::segment(kind);
        names::vendor_type(VENDOR, names::family_leaf(&snake))
    };
    let event = match kind {
        "RUN_STARTED" => {
            let mut started = RunStarted::new();
            started.trigger = Some(aep::run_started::Trigger::User);
            started.extra = extras([("parent_run", text("parentRunId")?.map(Value::from))]);
            cx.core(Payload::RunStarted(started)).build()?
        }
        "RUN_FINISHED" => {
            let mut finished = RunFinished::new();
            finished.summary = text("result")?.map(str::to_owned);
            cx.core(Payload::RunFinished(finished)).build()?
        }
        "RUN_ERROR" => {
            let code = text("code")?.filter(|c| !c.is_empty()).unwrap_or("error");
            let mut failed = RunFailed::new(code);
            if let Some(message) = text("message")?.filter(|_| cx.carries_content("run.failed")) {
                let mut info = ErrorInfo::new();
                info.message = Some(message.to_owned());
                failed.error = Some(info);
            }
            cx.core(Payload::RunFailed(failed)).build()?
        }
        "STEP_STARTED" | "STEP_FINISHED" => {
            let step = text("stepName")?;
            let payload = if kind == "STEP_STARTED" {
                let mut started = RunStepStarted::new();
                started.name = step.map(str::to_owned);
                Payload::RunStepStarted(started)
            } else {
                Payload::RunStepFinished(RunStepFinished::new())
            };
            cx.core(payload).subject(step).step(step).build()?
        }
        "TOOL_CALL_START" => {
            let name = text("toolCallName")?
                .filter(|n| !n.is_empty())
                .unwrap_or("unknown");
            let tool = hooks::tool_ref(name, text("toolCallId")?);
            hooks::tool_requested(cx, tool, None).build()?
        }
        "TOOL_CALL_RESULT" => {
            // The receiver joins the name from the start; a late attach
            // never saw it.
            let name = text("toolCallName")?
                .filter(|n| !n.is_empty())
                .unwrap_or("unknown");
            let call = text("toolCallId")?;
            let tool = hooks::tool_ref(name, call);
            hooks::tool_completed(cx, tool, input.get("content"))
                .subject(call)
                .build()?
        }
        "TEXT_MESSAGE_START" => cx
            .vendor(mechanical())
            .meta("role", text("role")?)
            .subject(text("messageId")?)
            .build()?,
        "TEXT_MESSAGE_END" => match text("role")? {
            Some(role) if role != "assistant" => return Ok(Vec::new()),
            _ => cx
                .vendor(mechanical())
                .subject(text("messageId")?)
                .build()?,
        },
        "TOOL_CALL_ARGS"
        | "TOOL_CALL_END"
        | "TOOL_CALL_CHUNK"
        | "TEXT_MESSAGE_CONTENT"
        | "TEXT_MESSAGE_CHUNK"
        | "REASONING_MESSAGE_CONTENT"
        | "REASONING_MESSAGE_CHUNK" => {
            if !cx.posture.deltas {
                return Ok(Vec::new());
            }
            cx.vendor(mechanical())
                .content("delta", input.get("delta"))
                .build()?
        }
        // Opaque ciphertext is not observability.
        "REASONING_ENCRYPTED_VALUE" => return Ok(Vec::new()),
        "STATE_SNAPSHOT" => {
            let mut snapshot = StateSnapshot::new();
            snapshot.state = input.get("snapshot").and_then(Value::as_object).cloned();
            cx.core(Payload::StateSnapshot(snapshot)).build()?
        }
        "STATE_DELTA" => {
            let ops = input.get("delta").and_then(Value::as_array);
            let mut delta = StateDelta::new();
            delta.delta =
                ops.map(|ops| ops.iter().filter_map(|o| o.as_object().cloned()).collect());
            delta.extra = extras([("ops", ops.map(|o| Value::from(o.len())))]);
            cx.core(Payload::StateDelta(delta)).build()?
        }
        "RAW" => cx
            .vendor("x.agui.raw.event")
            .content("event", input.get("event"))
            .build()?,
        "CUSTOM" => cx
            .vendor("x.agui.custom.event")
            .meta("name", text("name")?)
            .content("value", input.get("value"))
            .build()?,
        _ => cx.vendor(mechanical()).build()?,
    };
    Ok(vec![event])
}
