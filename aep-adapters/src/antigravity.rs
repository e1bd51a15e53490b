//! Antigravity hooks (AEP-0002 Annex A.11): the five-hook `hooks.json`
//! system. No payload names its own hook, so the input is
//! `{"hook", "input", "join"?}`: the registration's hook name, the
//! payload, and the runtime's (conversationId, stepIdx) join result. The
//! thin `PostToolUse` closes a joined call honestly and falls back to
//! `x.antigravity.step.completed` unjoined (a name is never invented);
//! invocations are run steps; `Stop`'s typed reason closes the run.

use serde_json::Value;

use aep::{ErrorInfo, Payload, RunFailed, RunFinished, RunStepFinished, RunStepStarted};

use crate::build::Cx;
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::hooks;
use crate::json;
use crate::names;

const VENDOR: &str = "antigravity";

/// Maps one `{"hook", "input", "join"?}`.
pub fn map(input: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    json::object(input, VENDOR)?;
    let hook = json::req_str(input, "hook", VENDOR)?;
    let payload = input.get("input").unwrap_or(&Value::Null);
    json::object(payload, hook)?;
    let step_idx = payload.get("stepIdx").and_then(Value::as_i64);
    let with_step_idx = |p: Payload| add_extra(p, "step_idx", step_idx.map(Value::from));
    let error = json::opt_str(payload, "error", hook)?.filter(|e| !e.is_empty());
    let invocation = match payload.get("invocationNum") {
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let event = match hook {
        "PreToolUse" => {
            let call = payload.get("toolCall").unwrap_or(&Value::Null);
            let tool = hooks::tool_ref(json::req_str(call, "name", hook)?, None);
            hooks::tool_requested(cx, tool, call.get("args"))
                .map_payload(with_step_idx)
                .build()?
        }
        "PostToolUse" => {
            let joined = input
                .get("join")
                .and_then(|j| j.get("name"))
                .and_then(Value::as_str);
            match joined.filter(|n| !n.is_empty()) {
                Some(name) => {
                    let tool = hooks::tool_ref(name, None);
                    let core = match error {
                        Some(message) => hooks::tool_failed(cx, tool, "tool_error", Some(message)),
                        None => hooks::tool_completed(cx, tool, None),
                    };
                    core.map_payload(with_step_idx).build()?
                }
                None => cx
                    .vendor("x.antigravity.step.completed")
                    .meta("failed", Some(error.is_some()))
                    .meta("step_idx", step_idx)
                    .content("error", error.map(Value::from).as_ref())
                    .build()?,
            }
        }
        "PreInvocation" => {
            let mut started = RunStepStarted::new();
            started.initial_num_steps = json::count(payload.get("initialNumSteps"));
            cx.core(Payload::RunStepStarted(started))
                .step(invocation)
                .build()?
        }
        "PostInvocation" => cx
            .core(Payload::RunStepFinished(RunStepFinished::new()))
            .step(invocation)
            .build()?,
        "Stop" => {
            let reason = json::opt_str(payload, "terminationReason", hook)?;
            let execution = json::count(payload.get("executionNum")).map(Value::from);
            let idle = payload
                .get("fullyIdle")
                .and_then(Value::as_bool)
                .map(Value::from);
            let payload = if reason == Some("error") {
                let mut info = ErrorInfo::new();
                info.type_ = Some("error".to_owned());
                info.message = error.map(str::to_owned);
                let mut failed = RunFailed::new("error");
                failed.error = Some(info);
                Payload::RunFailed(failed)
            } else {
                // Bounded terminations are completions, the reason kept.
                let finished = RunFinished::new();
                add_extra(
                    Payload::RunFinished(finished),
                    "termination_reason",
                    reason.map(Value::from),
                )
            };
            let payload = add_extra(payload, "execution_num", execution);
            cx.core(add_extra(payload, "fully_idle", idle)).build()?
        }
        other => {
            let name = names::segment(&other.to_lowercase());
            cx.vendor(names::vendor_type(VENDOR, vec!["hook".to_owned(), name]))
                .build()?
        }
    };
    Ok(vec![event])
}

/// The payload with a vendor member added (structural, metadata).
fn add_extra(payload: Payload, name: &str, value: Option<Value>) -> Payload {
    let Some(value) = value else {
        return payload;
    };
    let mut payload = payload;
    let extra = match &mut payload {
        Payload::ToolRequested(p) => &mut p.extra,
        Payload::ToolCompleted(p) => &mut p.extra,
        Payload::ToolFailed(p) => &mut p.extra,
        Payload::RunFinished(p) => &mut p.extra,
        Payload::RunFailed(p) => &mut p.extra,
        _ => return payload,
    };
    extra.insert(name.to_owned(), value);
    payload
}
