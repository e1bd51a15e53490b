//! Cline subprocess hooks (AEP-0002 Annex A.9): ten zod-typed events.
//! Run boundaries are real (`agent_start`/`agent_resume` open;
//! `agent_end`, `agent_abort`, `agent_error` close, abort a cancellation
//! and error a failure); a typed parent id opens and closes the delegation
//! pair beside the run; the typed `ToolCallRecord.error` splits
//! `tool.completed`/`tool.failed`; the per-turn `iteration` stamps the
//! envelope step; compaction rides the only (pre) moment.

use serde_json::Value;

use aep::{
    DelegationSubagentStarted, DelegationSubagentStopped, ErrorInfo, Payload, RunCancelled,
    RunFailed, RunFinished, RunStarted, SessionCompacted,
};

use crate::build::{Core, Cx};
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::hooks::{self, normal_end};
use crate::json;
use crate::names;

const VENDOR: &str = "cline";

/// Maps one Cline hook payload.
pub fn map(input: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    json::object(input, VENDOR)?;
    let name = json::req_str(input, "hookName", VENDOR)?;
    let text = |key: &str| json::opt_str(input, key, name);
    let agent = text("agent_id")?;
    let parented = text("parent_agent_id")?.is_some_and(|p| !p.is_empty());
    let step = match input.get("iteration") {
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    };
    let stepped = |core: Core<'_>| core.step(step.clone()).build();
    let delegation_started = || {
        cx.core(Payload::DelegationSubagentStarted(
            DelegationSubagentStarted::new(),
        ))
        .subject(agent)
        .build()
    };
    let delegation_stopped = || {
        cx.core(Payload::DelegationSubagentStopped(
            DelegationSubagentStopped::new(),
        ))
        .subject(agent)
        .build()
    };
    let mut events = Vec::new();
    match name {
        "agent_start" | "agent_resume" => {
            if name == "agent_start" && parented {
                events.push(delegation_started()?);
            }
            let mut started = RunStarted::new();
            started.trigger = Some(if name == "agent_start" {
                aep::run_started::Trigger::User
            } else {
                aep::run_started::Trigger::Resume
            });
            events.push(stepped(cx.core(Payload::RunStarted(started)))?);
        }
        "agent_end" | "agent_abort" | "agent_error" => {
            let payload = match name {
                "agent_end" => Payload::RunFinished(RunFinished::new()),
                "agent_abort" => {
                    let mut cancelled = RunCancelled::new();
                    cancelled.by = Some(aep::run_cancelled::By::User);
                    cancelled.reason = text("reason")?.map(str::to_owned);
                    Payload::RunCancelled(cancelled)
                }
                _ => {
                    let error = input.get("error").unwrap_or(&Value::Null);
                    let kind = json::opt_str(error, "name", name)?
                        .filter(|s| !s.is_empty())
                        .unwrap_or("error");
                    let mut info = ErrorInfo::new();
                    info.type_ = Some(kind.to_owned());
                    info.message = json::opt_str(error, "message", name)?.map(str::to_owned);
                    let mut failed = RunFailed::new(kind);
                    failed.error = Some(info);
                    Payload::RunFailed(failed)
                }
            };
            events.push(stepped(cx.core(payload))?);
            if parented {
                events.push(delegation_stopped()?);
            }
        }
        "tool_call" => {
            let call = input.get("tool_call").unwrap_or(&Value::Null);
            let tool = hooks::tool_ref(
                json::req_str(call, "name", name)?,
                json::opt_str(call, "id", name)?,
            );
            events.push(stepped(hooks::tool_requested(cx, tool, call.get("input")))?);
        }
        "tool_result" => {
            let record = input.get("tool_result").unwrap_or(&Value::Null);
            let tool = hooks::tool_ref(
                json::req_str(record, "name", name)?,
                json::opt_str(record, "id", name)?,
            );
            let duration = json::count(record.get("durationMs"));
            let error = match record.get("error") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) if s.is_empty() => None,
                Some(e) => Some(e.as_str().map_or_else(|| e.to_string(), str::to_owned)),
            };
            let core = match error {
                Some(message) => hooks::tool_failed(cx, tool, "tool_error", Some(&message)),
                None => hooks::tool_completed(cx, tool, record.get("output")),
            };
            let core = core.map_payload(|payload| hooks::with_duration(payload, duration));
            events.push(stepped(core)?);
        }
        // `message.user.submitted` is reserved: the fact stays vendor-scoped.
        "prompt_submit" => events.push(
            cx.vendor("x.cline.prompt.submitted")
                .step(step.clone())
                .build()?,
        ),
        "pre_compact" => {
            let pre = input.get("preCompact").unwrap_or(&Value::Null);
            let mut compacted = SessionCompacted::new();
            compacted.strategy = json::opt_str(pre, "compactionStrategy", name)?.map(str::to_owned);
            compacted.gen_ai_usage_input_tokens = json::count(pre.get("tokensIn"));
            compacted.gen_ai_usage_output_tokens = json::count(pre.get("tokensOut"));
            events.push(cx.core(Payload::SessionCompacted(compacted)).build()?);
        }
        "session_shutdown" => events.push(cx.core(Payload::SessionEnded(normal_end())).build()?),
        other => {
            let vendor_type = names::vendor_type(VENDOR, names::segments(other, &['_', '.', '-']));
            events.push(cx.vendor(vendor_type).build()?);
        }
    }
    Ok(events)
}
