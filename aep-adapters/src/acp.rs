//! ACP, the Agent Client Protocol (AEP-0002 Annex A.13), observed through
//! a byte-transparent tee that reduces the JSON-RPC wire to moments:
//! `{kind: "request"|"response"|"notification", method, params|result}`
//! (the tee joins a response to its request's method).
//!
//! The prompt turn is the run and its `stopReason` decides the terminal
//! (bounded terminations complete, `cancelled` cancels, `refusal` fails);
//! the tool call's status forks onto the tool trio; the editor's
//! permission gate is observed read-only (no options, answers out of
//! band); plan entries carry no id, so plans stay vendor-scoped counts;
//! message and thought chunks only with deltas on.

use serde_json::Value;

use aep::attention_requested::Kind;
use aep::attention_resolved::Resolution;
use aep::{
    Answer, AttentionAnswered, AttentionRequested, AttentionResolved, Payload, RunCancelled,
    RunFailed, RunFinished, RunStarted, SessionStarted,
};

use crate::build::Cx;
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::hooks::{self, extras};
use crate::json;
use crate::names;

const VENDOR: &str = "acp";

/// Maps one moment.
pub fn map(input: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    json::object(input, VENDOR)?;
    let kind = json::req_str(input, "kind", VENDOR)?;
    let method = json::req_str(input, "method", VENDOR)?;
    let params = input.get("params").unwrap_or(&Value::Null);
    let result = input.get("result").unwrap_or(&Value::Null);
    let mechanical = |suffix: Option<&str>| {
        let mut parts = names::segments(method, &['/', '_', '.', '-']);
        parts.extend(suffix.map(str::to_owned));
        cx.vendor(names::vendor_type(VENDOR, parts))
    };
    let event = match (kind, method) {
        ("request", "session/prompt") => {
            let prompt = params.get("prompt").filter(|p| !p.is_null());
            let mut started = RunStarted::new();
            started.trigger = Some(aep::run_started::Trigger::User);
            started.prompt = prompt.and_then(json::text_of);
            started.extra = extras([(
                "message_digest",
                prompt.map(|p| aep::digest::digest(p).into()),
            )]);
            cx.core(Payload::RunStarted(started)).build()?
        }
        ("request", "session/request_permission") => {
            let call = params.get("toolCall").unwrap_or(&Value::Null);
            let title = json::opt_str(call, "title", method)?.filter(|t| !t.is_empty());
            let prompt = format!("Permission requested: {}", title.unwrap_or("a tool call"));
            let mut request = AttentionRequested::new(Kind::Permission, prompt);
            let count = params
                .get("options")
                .and_then(Value::as_array)
                .map(|o| Value::from(o.len()));
            request.extra = extras([("options_count", count)]);
            cx.core(Payload::AttentionRequested(request))
                .subject(json::opt_str(call, "toolCallId", method)?)
                .build()?
        }
        ("request", _) => mechanical(None).build()?,
        ("response", "session/new") => {
            let mut started = SessionStarted::new();
            started.client = Some(aep::session_started::Client::new(VENDOR));
            cx.core(Payload::SessionStarted(started)).build()?
        }
        ("response", "session/prompt") => {
            let stop = json::opt_str(result, "stopReason", method)?;
            let payload = match stop {
                Some("cancelled") => {
                    let mut cancelled = RunCancelled::new();
                    cancelled.by = Some(aep::run_cancelled::By::User);
                    Payload::RunCancelled(cancelled)
                }
                Some("refusal") => Payload::RunFailed(RunFailed::new("refusal")),
                _ => {
                    let mut finished = RunFinished::new();
                    finished.extra = extras([("stop_reason", stop.map(Value::from))]);
                    Payload::RunFinished(finished)
                }
            };
            cx.core(payload).build()?
        }
        ("response", "session/request_permission") => {
            let outcome = result.get("outcome").unwrap_or(&Value::Null);
            match json::opt_str(outcome, "outcome", method)? {
                Some("selected") => {
                    let mut answer = Answer::new();
                    answer.option = json::opt_str(outcome, "optionId", method)?.map(str::to_owned);
                    let mut answered = AttentionAnswered::new(answer);
                    answered.via = Some(aep::attention_answered::Via::Oob);
                    cx.core(Payload::AttentionAnswered(answered)).build()?
                }
                _ => {
                    let resolved = AttentionResolved::new(Resolution::Dismissed);
                    cx.core(Payload::AttentionResolved(resolved)).build()?
                }
            }
        }
        ("response", _) => mechanical(Some("response")).build()?,
        ("notification", "session/update") => {
            return update(params.get("update").unwrap_or(&Value::Null), cx)
        }
        _ => mechanical(None).build()?,
    };
    Ok(vec![event])
}

/// One `session/update` notification.
fn update(update: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    let kind = json::req_str(update, "sessionUpdate", "session/update")?;
    let text = |key: &str| json::opt_str(update, key, kind);
    let call_id = text("toolCallId")?;
    let tool = || -> Result<_, MapError> {
        let name = text("title")?
            .filter(|t| !t.is_empty())
            .unwrap_or("unknown");
        Ok(hooks::tool_ref(name, call_id))
    };
    let event = match kind {
        "tool_call" => {
            let tool_kind = text("kind")?.map(Value::from);
            hooks::tool_requested(cx, tool()?, update.get("rawInput"))
                .map_payload(|p| match p {
                    Payload::ToolRequested(mut r) => {
                        r.extra = extras([("kind", tool_kind)]);
                        Payload::ToolRequested(r)
                    }
                    other => other,
                })
                .subject(call_id)
                .build()?
        }
        "tool_call_update" => match text("status")? {
            Some("completed") => hooks::tool_completed(cx, tool()?, update.get("rawOutput"))
                .subject(call_id)
                .build()?,
            Some("failed") => hooks::tool_failed(cx, tool()?, "tool_error", None)
                .subject(call_id)
                .build()?,
            status => cx
                .vendor("x.acp.tool_call.update")
                .meta("status", status)
                .subject(call_id)
                .build()?,
        },
        "plan" => {
            let entries = update.get("entries").and_then(Value::as_array);
            let count = |status: &str| {
                let n = entries
                    .into_iter()
                    .flatten()
                    .filter(|e| e.get("status").and_then(Value::as_str) == Some(status))
                    .count();
                (n > 0).then_some(n)
            };
            cx.vendor("x.acp.plan.updated")
                .meta("entries_pending", count("pending"))
                .meta("entries_in_progress", count("in_progress"))
                .meta("entries_completed", count("completed"))
                .build()?
        }
        "agent_message_chunk" | "agent_thought_chunk" | "user_message_chunk" => {
            if !cx.posture.deltas {
                return Ok(Vec::new());
            }
            let delta = update
                .get("content")
                .and_then(json::text_of)
                .map(Value::from);
            let parts = names::segments(kind, &['_']);
            cx.vendor(names::vendor_type(VENDOR, parts))
                .content("delta", delta.as_ref())
                .build()?
        }
        "usage_update" => cx
            .vendor("x.acp.usage.updated")
            .meta(
                "gen_ai.usage.input_tokens",
                json::count(update.get("usedTokens")),
            )
            .meta(
                "gen_ai.usage.output_tokens",
                json::count(update.get("outputTokens")),
            )
            .build()?,
        other => cx
            .vendor(names::vendor_type(
                VENDOR,
                names::segments(other, &['_', '/', '.']),
            ))
            .build()?,
    };
    Ok(vec![event])
}
