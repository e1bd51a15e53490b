//! OpenHands agent-server events (AEP-0002 Annex A.15), as the transport
//! delivers them (`kind`-discriminated, `parent_id` stripped), and the
//! execution-status transitions behind run synthesis ([`status`]).
//!
//! Every event carries the vendor's naive timestamp and event id at
//! metadata (`vendor_ts`, `vendor_event_id`); `llm_response_id` stamps the
//! step of action and message events; the observation's `is_error` splits
//! the tool terminal; a hook rejection is a policy denial while a user
//! rejection stays vendor-scoped; messages stay `x.openhands.message.event`;
//! `TokenEvent` never maps; the vendor plane is named mechanically from
//! the kind.

use serde_json::Value;

use aep::attention_requested::Kind;
use aep::attention_resolved::Resolution;
use aep::{
    AttentionRequested, AttentionResolved, ErrorInfo, ErrorRaised, Object, Payload, RunCancelled,
    RunFailed, RunFinished, RunStarted, SessionCompacted, SessionEnded, StateDelta, StateSnapshot,
    ToolDenied,
};

use crate::build::Cx;
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::hooks;
use crate::json;
use crate::names;

const VENDOR: &str = "openhands";

/// Maps one transport event.
pub fn map(input: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    json::object(input, VENDOR)?;
    let kind = json::req_str(input, "kind", VENDOR)?;
    let text = |key: &str| json::opt_str(input, key, kind);
    let vendor_members = [
        ("vendor_ts", text("timestamp")?.map(Value::from)),
        ("vendor_event_id", text("id")?.map(Value::from)),
    ];
    let stamp = |payload: Payload| add_members(payload, &vendor_members);
    let step = text("llm_response_id")?;
    let tool_name = text("tool_name")?;
    let tool = || -> Result<_, MapError> {
        let name = tool_name
            .ok_or_else(|| MapError::new(format!("{kind}: missing member `tool_name`")))?;
        Ok(hooks::tool_ref(name, text("tool_call_id")?))
    };
    let mechanical = || {
        let snake = names::snake_case(kind);
        let snake = snake.strip_suffix("_event").unwrap_or(&snake).to_owned();
        names::vendor_type(VENDOR, names::family_leaf(&snake))
    };
    let vendor = |type_: String| {
        let mut builder = cx.vendor(type_);
        for (name, value) in &vendor_members {
            builder = builder.meta(name, value.clone());
        }
        builder
    };
    let event = match kind {
        "ActionEvent" => {
            let risk = text("security_risk")?.filter(|r| !r.is_empty() && *r != "UNKNOWN");
            let thought = input.get("thought").and_then(json::text_of);
            let thought = thought.and_then(|t| cx.content_text("tool.requested", &t));
            hooks::tool_requested(cx, tool()?, input.get("action"))
                .map_payload(|p| {
                    let p = stamp(p);
                    add_members(
                        p,
                        &[
                            ("risk", risk.map(Value::from)),
                            ("thought", thought.map(Value::from)),
                        ],
                    )
                })
                .step(step)
                .build()?
        }
        "ObservationEvent" => {
            let observation = input.get("observation").unwrap_or(&Value::Null);
            let content = observation
                .get("content")
                .and_then(json::text_of)
                .map(Value::from);
            let core = if observation.get("is_error").and_then(Value::as_bool) == Some(true) {
                hooks::tool_failed(
                    cx,
                    tool()?,
                    "tool_error",
                    content.as_ref().and_then(Value::as_str),
                )
            } else {
                hooks::tool_completed(cx, tool()?, content.as_ref())
            };
            core.map_payload(stamp).step(step).build()?
        }
        "UserRejectObservation" if text("rejection_source")? == Some("hook") => {
            let mut denied = ToolDenied::new(tool()?, aep::tool_denied::By::Policy);
            denied.rule = text("rejection_reason")?.and_then(|r| cx.content_text("tool.denied", r));
            cx.core(stamp(Payload::ToolDenied(denied)))
                .subject(tool_name)
                .build()?
        }
        "UserRejectObservation" => {
            let tool = tool()?;
            let mut reference = Object::new();
            reference.insert("name".to_owned(), Value::from(tool.name.clone()));
            if let Some(call) = &tool.call_id {
                reference.insert("call_id".to_owned(), Value::from(call.clone()));
            }
            vendor("x.openhands.user_reject.observation".to_owned())
                .meta("tool", Some(Value::Object(reference)))
                .content("reason", input.get("rejection_reason"))
                .subject(tool_name)
                .build()?
        }
        "AgentErrorEvent" => hooks::tool_failed(cx, tool()?, "agent_error", text("error")?)
            .map_payload(stamp)
            .build()?,
        "MessageEvent" => {
            let message = input.get("llm_message").unwrap_or(&Value::Null);
            let skills = input
                .get("activated_skills")
                .and_then(Value::as_array)
                .map(Vec::len);
            vendor(mechanical())
                .meta("role", json::opt_str(message, "role", kind)?)
                .meta("skills", skills)
                .content(
                    "content",
                    message
                        .get("content")
                        .and_then(json::text_of)
                        .map(Value::from)
                        .as_ref(),
                )
                .step(step)
                .build()?
        }
        "Condensation" => {
            let mut compacted = SessionCompacted::new();
            compacted.forgotten = input
                .get("forgotten_event_ids")
                .and_then(Value::as_array)
                .map(|ids| ids.len() as u64);
            let summary = text("summary")?.and_then(|s| cx.content_text("session.compacted", s));
            let payload = add_members(
                Payload::SessionCompacted(compacted),
                &[("summary", summary.map(Value::from))],
            );
            cx.core(stamp(payload)).build()?
        }
        "ConversationStateUpdateEvent" => {
            let key = text("key")?;
            let value = input.get("value").filter(|v| !v.is_null());
            let payload = if key == Some("full_state") {
                let mut snapshot = StateSnapshot::new();
                snapshot.state = value.and_then(Value::as_object).cloned();
                Payload::StateSnapshot(snapshot)
            } else {
                let mut delta = StateDelta::new();
                delta.key = key.map(str::to_owned);
                if let (Some(key), Some(value)) = (key, value) {
                    let mut op = Object::new();
                    op.insert("op".to_owned(), Value::from("replace"));
                    op.insert("path".to_owned(), Value::from(format!("/{key}")));
                    op.insert("value".to_owned(), value.clone());
                    delta.delta = Some(vec![op]);
                }
                Payload::StateDelta(delta)
            };
            cx.core(stamp(payload)).build()?
        }
        "ConversationErrorEvent" => {
            let mut raised = ErrorRaised::new();
            raised.code = text("code")?.map(str::to_owned);
            if let Some(detail) = text("detail")?.filter(|_| cx.carries_content("error.raised")) {
                let mut info = ErrorInfo::new();
                info.message = Some(detail.to_owned());
                raised.error = Some(info);
            }
            cx.core(stamp(Payload::ErrorRaised(raised))).build()?
        }
        "StreamingDeltaEvent" if !cx.posture.deltas => return Ok(Vec::new()),
        "StreamingDeltaEvent" => vendor(mechanical())
            .content("content", input.get("content"))
            .build()?,
        // Raw token ids are not observability, whatever the posture.
        "TokenEvent" => return Ok(Vec::new()),
        _ => vendor(mechanical()).build()?,
    };
    Ok(vec![event])
}

/// The payload with structural vendor members added (those that are
/// `Some`).
fn add_members(payload: Payload, members: &[(&str, Option<Value>)]) -> Payload {
    let mut payload = payload;
    let extra = match &mut payload {
        Payload::ToolRequested(p) => &mut p.extra,
        Payload::ToolCompleted(p) => &mut p.extra,
        Payload::ToolFailed(p) => &mut p.extra,
        Payload::ToolDenied(p) => &mut p.extra,
        Payload::SessionCompacted(p) => &mut p.extra,
        Payload::StateSnapshot(p) => &mut p.extra,
        Payload::StateDelta(p) => &mut p.extra,
        Payload::ErrorRaised(p) => &mut p.extra,
        Payload::RunFinished(p) => &mut p.extra,
        _ => return payload,
    };
    for (name, value) in members {
        if let Some(value) = value {
            extra.insert((*name).to_owned(), value.clone());
        }
    }
    payload
}

/// The moments of one execution-status transition (`{"prev": STATUS|null,
/// "next": STATUS}`), in emission order: leaving `waiting_for_confirmation`
/// resolves the attention request (dismissed when the exit is `paused` or
/// `deleting`); `running` opens a run unless one is open (`paused`,
/// `waiting_for_confirmation`); `finished`, `error` and `stuck` close an
/// open run; `idle` closes a running run with `reason: idle`; `deleting`
/// cancels an open run and ends the session (`killed`); entering
/// `waiting_for_confirmation` raises a read-only permission request.
pub fn status(input: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    json::object(input, "status")?;
    let prev = json::opt_str(input, "prev", "status")?;
    let next = json::req_str(input, "next", "status")?;
    if prev == Some(next) {
        return Ok(Vec::new());
    }
    const WAITING: &str = "waiting_for_confirmation";
    let open = matches!(prev, Some("running" | "paused" | WAITING));
    let mut payloads = Vec::new();
    if prev == Some(WAITING) {
        let resolution = if matches!(next, "paused" | "deleting") {
            Resolution::Dismissed
        } else {
            Resolution::Answered
        };
        payloads.push(Payload::AttentionResolved(AttentionResolved::new(
            resolution,
        )));
    }
    match next {
        "running" if !open => payloads.push(Payload::RunStarted(RunStarted::new())),
        "finished" if open => payloads.push(Payload::RunFinished(RunFinished::new())),
        "error" | "stuck" if open => payloads.push(Payload::RunFailed(RunFailed::new(next))),
        "idle" if prev == Some("running") => {
            let finished = RunFinished::new();
            payloads.push(add_members(
                Payload::RunFinished(finished),
                &[("reason", Some(Value::from("idle")))],
            ));
        }
        "deleting" => {
            if open {
                let mut cancelled = RunCancelled::new();
                cancelled.reason = Some("deleting".to_owned());
                payloads.push(Payload::RunCancelled(cancelled));
            }
            let mut ended = SessionEnded::new();
            ended.reason = Some(aep::session_ended::Reason::Killed);
            payloads.push(Payload::SessionEnded(ended));
        }
        WAITING => {
            let prompt = "Awaiting confirmation for a pending action";
            payloads.push(Payload::AttentionRequested(AttentionRequested::new(
                Kind::Permission,
                prompt,
            )));
        }
        _ => {}
    }
    payloads.into_iter().map(|p| cx.core(p).build()).collect()
}
