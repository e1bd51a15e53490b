//! pi extension-bus events (AEP-0002 Annex A.12), observe-only by
//! non-subscription. The input is `{session, event}`. An agent loop is a
//! run, closed by the last assistant message's typed `stopReason`;
//! `turnIndex` stamps the envelope step of the turn pair; `isError` splits
//! the tool terminal; message boundaries stay `x.pi.message.*` while the
//! message sub-profile is reserved; stream updates only with deltas on.

use serde_json::Value;

use aep::{
    ErrorInfo, Object, Payload, RunCancelled, RunFailed, RunFinished, RunStarted, RunStepFinished,
    RunStepStarted, SessionCompacted, SessionStarted,
};

use crate::build::Cx;
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::hooks::{self, extras, normal_end};
use crate::json;
use crate::names;

const VENDOR: &str = "pi";

/// Maps one `{session, event}`.
pub fn map(input: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    json::object(input, VENDOR)?;
    let event = input
        .get("event")
        .ok_or_else(|| MapError::new("pi: missing member `event`"))?;
    json::object(event, "pi event")?;
    let kind = json::req_str(event, "type", "pi event")?;
    let text = |key: &str| json::opt_str(event, key, kind);
    let message = event.get("message").unwrap_or(&Value::Null);
    let role = json::opt_str(message, "role", kind)?;
    let turn = match event.get("turnIndex") {
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let mapped = match kind {
        "session_start" => {
            let mut started = SessionStarted::new();
            started.client = Some(aep::session_started::Client::new(VENDOR));
            let previous =
                text("previousSessionFile")?.and_then(|f| cx.content_text("session.started", f));
            started.extra = extras([
                ("reason", text("reason")?.map(Value::from)),
                ("previous_session_file", previous.map(Value::from)),
            ]);
            cx.core(Payload::SessionStarted(started)).build()?
        }
        "session_shutdown" => {
            let mut ended = normal_end();
            ended.extra = extras([("vendor_reason", text("reason")?.map(Value::from))]);
            cx.core(Payload::SessionEnded(ended)).build()?
        }
        "session_compact" => {
            let mut compacted = SessionCompacted::new();
            compacted.extra = extras([
                ("reason", text("reason")?.map(Value::from)),
                (
                    "will_retry",
                    event
                        .get("willRetry")
                        .and_then(Value::as_bool)
                        .map(Value::from),
                ),
            ]);
            cx.core(Payload::SessionCompacted(compacted)).build()?
        }
        "agent_start" => cx.core(Payload::RunStarted(RunStarted::new())).build()?,
        "agent_end" => {
            let messages = event.get("messages").and_then(Value::as_array);
            let last = messages
                .into_iter()
                .flatten()
                .rev()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("assistant"));
            cx.core(agent_end(last)).build()?
        }
        "agent_settled" => cx.vendor("x.pi.agent.settled").build()?,
        "turn_start" => cx
            .core(Payload::RunStepStarted(RunStepStarted::new()))
            .step(turn)
            .build()?,
        "turn_end" => cx
            .core(Payload::RunStepFinished(RunStepFinished::new()))
            .step(turn)
            .build()?,
        "message_start" if role == Some("user") => {
            let content = message
                .get("content")
                .and_then(json::text_of)
                .map(Value::from);
            cx.vendor("x.pi.message.submitted")
                .meta("content_digest", content.as_ref().map(aep::digest::digest))
                .content("content", content.as_ref())
                .build()?
        }
        // The assistant boundary is taken once, at its end.
        "message_start" => return Ok(Vec::new()),
        "message_end" if role == Some("assistant") => {
            let content = message
                .get("content")
                .and_then(json::text_of)
                .map(Value::from);
            let (input_tokens, output_tokens) = usage(message);
            cx.vendor("x.pi.message.replied")
                .meta("stop_reason", json::opt_str(message, "stopReason", kind)?)
                .meta("gen_ai.usage.input_tokens", input_tokens)
                .meta("gen_ai.usage.output_tokens", output_tokens)
                .meta("content_digest", content.as_ref().map(aep::digest::digest))
                .content("content", content.as_ref())
                .build()?
        }
        // Tool results belong to the tool events; other roles are not replies.
        "message_end" => return Ok(Vec::new()),
        "message_update" if cx.posture.deltas => {
            let update = event.get("assistantMessageEvent").unwrap_or(&Value::Null);
            cx.vendor("x.pi.message.delta")
                .meta("kind", json::opt_str(update, "type", kind)?)
                .content("delta", update.get("delta"))
                .build()?
        }
        "message_update" | "tool_execution_update" if !cx.posture.deltas => return Ok(Vec::new()),
        "tool_execution_start" | "tool_execution_update" | "tool_execution_end" => {
            let name = json::req_str(event, "toolName", kind)?;
            let tool = hooks::tool_ref(name, text("toolCallId")?);
            match kind {
                "tool_execution_start" => {
                    hooks::tool_requested(cx, tool, event.get("args")).build()?
                }
                "tool_execution_update" => {
                    let partial = event.get("partialResult").filter(|p| !p.is_null());
                    let mut data = Object::new();
                    data.insert("name".to_owned(), Value::from(tool.name.clone()));
                    if let Some(call) = &tool.call_id {
                        data.insert("call_id".to_owned(), Value::from(call.clone()));
                    }
                    cx.vendor("x.pi.tool.update")
                        .meta("tool", Some(Value::Object(data)))
                        .meta("partial_digest", partial.map(aep::digest::digest))
                        .content("partial", partial)
                        .subject(Some(name))
                        .build()?
                }
                _ if event.get("isError").and_then(Value::as_bool) == Some(true) => {
                    let message = event
                        .get("result")
                        .and_then(|r| r.get("content"))
                        .and_then(json::text_of);
                    hooks::tool_failed(cx, tool, "error", message.as_deref()).build()?
                }
                _ => hooks::tool_completed(cx, tool, event.get("result")).build()?,
            }
        }
        "session_info_changed" => cx
            .vendor("x.pi.session.info")
            .content("name", event.get("name"))
            .build()?,
        "session_tree" => cx.vendor("x.pi.session.tree").build()?,
        "model_select" => {
            let model = event
                .get("model")
                .and_then(|m| m.get("id"))
                .and_then(Value::as_str);
            cx.vendor("x.pi.model.select")
                .meta("source", text("source")?)
                .meta("model", model)
                .build()?
        }
        "thinking_level_select" => cx
            .vendor("x.pi.thinking.select")
            .meta("level", text("level")?)
            .build()?,
        other => {
            let vendor_type =
                names::vendor_type(VENDOR, vec!["event".to_owned(), names::segment(other)]);
            cx.vendor(vendor_type).build()?
        }
    };
    Ok(vec![mapped])
}

/// The terminal of an agent loop from its last assistant message.
fn agent_end(last: Option<&Value>) -> Payload {
    let Some(message) = last else {
        return Payload::RunFinished(RunFinished::new());
    };
    let stop = message.get("stopReason").and_then(Value::as_str);
    let stop_reason = extras([("stop_reason", stop.map(Value::from))]);
    match stop {
        Some("error") => {
            let mut info = ErrorInfo::new();
            info.type_ = Some("error".to_owned());
            info.message = message
                .get("errorMessage")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let mut failed = RunFailed::new("error");
            failed.error = Some(info);
            failed.extra = stop_reason;
            Payload::RunFailed(failed)
        }
        // User Esc and programmatic aborts look alike: no `by` claim.
        Some("aborted") => {
            let mut cancelled = RunCancelled::new();
            cancelled.extra = stop_reason;
            Payload::RunCancelled(cancelled)
        }
        _ => {
            let mut finished = RunFinished::new();
            let (input, output) = usage(message);
            finished.gen_ai_usage_input_tokens = input;
            finished.gen_ai_usage_output_tokens = output;
            finished.extra = stop_reason;
            Payload::RunFinished(finished)
        }
    }
}

fn usage(message: &Value) -> (Option<u64>, Option<u64>) {
    let usage = message.get("usage");
    (
        json::count(usage.and_then(|u| u.get("input"))),
        json::count(usage.and_then(|u| u.get("output"))),
    )
}
