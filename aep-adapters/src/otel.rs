//! The OpenTelemetry log channels of Codex and the VS Code agent
//! (AEP-0002 Annex A.2, A.5): one log record, flattened
//! (`{resource, attributes}`), per input.
//!
//! Companion mode (the default: a hook adapter observes the same agent and
//! is the only source of core types) emits the channel's own
//! `x.{vendor}.otel.*` family; primary mode (no hook adapter) maps the core
//! subset. Only named structural attributes ride at metadata; content
//! attributes ride from `redacted` up; unknown records are never guessed
//! at (`x.{vendor}.otel.unknown`).

use serde_json::{Map, Value};

use aep::{Payload, SessionStarted, ToolDenied};

use crate::build::{Cx, Vendor};
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::hooks;
use crate::json;
use crate::posture::Mode;

/// Maps one Codex record.
pub fn codex(input: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    record(input, cx, "codex", codex_members, codex_core)
}

/// Maps one VS Code agent record (`copilot_chat.*` and the GenAI
/// inference-details record).
pub fn vscode(input: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    record(input, cx, "vscode", vscode_members, vscode_core)
}

/// A known record's `x.{vendor}.otel.*` leaf, its structural attributes
/// (at metadata) and its content attributes (from `redacted` up).
type Members = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

/// The core events a record means in primary mode: `None` where the
/// record is not in the core subset (it keeps its channel event), an
/// empty list where it deliberately means nothing.
type CoreEvents = Result<Option<Vec<MappedEvent>>, MapError>;

/// One record of a channel: an unknown one as `x.{vendor}.otel.unknown`;
/// a known one as its core events in primary mode where it has them, else
/// as the channel's own `x.{vendor}.otel.{leaf}`.
fn record(
    input: &Value,
    cx: &Cx<'_>,
    vendor: &str,
    members_of: fn(&str) -> Option<Members>,
    core: fn(&str, &Map<String, Value>, &Cx<'_>) -> CoreEvents,
) -> Result<Vec<MappedEvent>, MapError> {
    let attributes = attributes(input)?;
    let name = attributes
        .get("event.name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some((leaf, meta, content)) = members_of(name) else {
        let unknown = cx
            .vendor(format!("x.{vendor}.otel.unknown"))
            .meta("event.name", Some(name).filter(|n| !n.is_empty()));
        return Ok(vec![unknown.build()?]);
    };
    if cx.posture.mode == Mode::Primary {
        if let Some(events) = core(name, attributes, cx)? {
            return Ok(events);
        }
    }
    let builder = members(
        cx.vendor(format!("x.{vendor}.otel.{leaf}")),
        attributes,
        meta,
        content,
    );
    Ok(vec![builder.build()?])
}

fn codex_members(name: &str) -> Option<Members> {
    Some(match name {
        "codex.conversation_starts" => (
            "conversation_starts",
            &[
                "provider_name",
                "model",
                "reasoning_effort",
                "reasoning_summary",
                "context_window",
                "max_output_tokens",
                "auto_compact_token_limit",
                "approval_policy",
                "sandbox_policy",
                "mcp_servers",
                "active_profile",
            ],
            &[],
        ),
        "codex.user_prompt" => ("user_prompt", &["prompt_length"], &["prompt"]),
        "codex.tool_decision" => (
            "tool_decision",
            &["tool_name", "call_id", "decision", "source"],
            &[],
        ),
        "codex.tool_result" => (
            "tool_result",
            &["tool_name", "call_id", "success", "duration_ms"],
            &["arguments", "output", "error"],
        ),
        "codex.api_request" => (
            "api_request",
            &["status", "duration_ms", "attempt", "attempts"],
            &["error"],
        ),
        "codex.sse_event" => (
            "sse_event",
            &[
                "kind",
                "event.kind",
                "success",
                "duration_ms",
                "input_token_count",
                "output_token_count",
                "cached_token_count",
                "reasoning_token_count",
                "tool_token_count",
            ],
            &["error"],
        ),
        "codex.websocket_event" => (
            "websocket_event",
            &["kind", "success", "duration_ms"],
            &["error"],
        ),
        _ => return None,
    })
}

/// Codex's core subset: the session start, a denied tool decision (not
/// an approval, nor a user's deny) and the tool result.
fn codex_core(name: &str, attributes: &Map<String, Value>, cx: &Cx<'_>) -> CoreEvents {
    let text = |key: &str| attributes.get(key).and_then(Value::as_str);
    match name {
        "codex.conversation_starts" => session_started(cx, "codex", text("model")),
        "codex.tool_decision" => {
            let denied = matches!(
                text("decision"),
                Some("deny" | "denied" | "abort" | "rejected")
            );
            // A user's deny is a human decision, not a policy block.
            let by = match text("source") {
                Some("config") => aep::tool_denied::By::Policy,
                Some("automation" | "auto") => aep::tool_denied::By::Runtime,
                _ => return Ok(Some(Vec::new())),
            };
            if !denied {
                return Ok(Some(Vec::new()));
            }
            let tool_name = text("tool_name").unwrap_or("unknown");
            let tool = hooks::tool_ref(tool_name, text("call_id"));
            let payload = Payload::ToolDenied(ToolDenied::new(tool, by));
            let event = cx.core(payload).subject(Some(tool_name)).build()?;
            Ok(Some(vec![event]))
        }
        "codex.tool_result" => {
            let tool_name = text("tool_name").unwrap_or("unknown");
            let tool = hooks::tool_ref(tool_name, text("call_id"));
            let success = flag(attributes.get("success"));
            let event = if success == Some(false) {
                hooks::tool_failed(cx, tool, "tool_error", text("error")).build()?
            } else {
                let duration = json::count(attributes.get("duration_ms"));
                hooks::tool_completed(cx, tool, None)
                    .map_payload(|p| hooks::with_duration(p, duration))
                    .build()?
            };
            Ok(Some(vec![event]))
        }
        _ => Ok(None),
    }
}

fn vscode_members(name: &str) -> Option<Members> {
    Some(match name {
        "copilot_chat.session.start" => (
            "session.start",
            &["gen_ai.request.model", "gen_ai.agent.name"],
            &[],
        ),
        "copilot_chat.tool.call" => (
            "tool.call",
            &[
                "gen_ai.tool.name",
                "gen_ai.tool.call.id",
                "duration_ms",
                "success",
                "error.type",
            ],
            &["error.message"],
        ),
        "copilot_chat.agent.turn" => (
            "agent.turn",
            &[
                "turn.index",
                "gen_ai.usage.input_tokens",
                "gen_ai.usage.output_tokens",
                "tool_call_count",
            ],
            &[],
        ),
        "gen_ai.client.inference.operation.details" => (
            "inference_details",
            &[
                "gen_ai.operation.name",
                "gen_ai.request.model",
                "gen_ai.response.model",
                "gen_ai.usage.input_tokens",
                "gen_ai.usage.output_tokens",
            ],
            &[
                "gen_ai.input.messages",
                "gen_ai.output.messages",
                "gen_ai.system_instructions",
            ],
        ),
        "copilot_chat.edit.feedback" => (
            "edit.feedback",
            &[
                "outcome",
                "language_id",
                "participant",
                "request_id",
                "edit_surface",
                "has_remaining_edits",
                "is_notebook",
            ],
            &[],
        ),
        _ => return None,
    })
}

/// VS Code's core subset: the session start and the tool call.
fn vscode_core(name: &str, attributes: &Map<String, Value>, cx: &Cx<'_>) -> CoreEvents {
    let text = |key: &str| attributes.get(key).and_then(Value::as_str);
    match name {
        "copilot_chat.session.start" => session_started(cx, "vscode", text("gen_ai.request.model")),
        "copilot_chat.tool.call" => {
            let tool_name = text("gen_ai.tool.name").unwrap_or("unknown");
            let tool = hooks::tool_ref(tool_name, text("gen_ai.tool.call.id"));
            let duration = json::count(attributes.get("duration_ms"));
            let core = if flag(attributes.get("success")) == Some(false) {
                let kind = text("error.type")
                    .filter(|t| !t.is_empty())
                    .unwrap_or("tool_error");
                hooks::tool_failed(cx, tool, kind, text("error.message"))
            } else {
                hooks::tool_completed(cx, tool, None)
            };
            let event = core
                .map_payload(|p| hooks::with_duration(p, duration))
                .build()?;
            Ok(Some(vec![event]))
        }
        _ => Ok(None),
    }
}

/// A channel's session start as `session.started`: the client and the
/// requested model.
fn session_started(cx: &Cx<'_>, client: &str, model: Option<&str>) -> CoreEvents {
    let mut started = SessionStarted::new();
    started.client = Some(aep::session_started::Client::new(client));
    started.gen_ai_request_model = model.map(str::to_owned);
    Ok(Some(vec![cx
        .core(Payload::SessionStarted(started))
        .build()?]))
}

fn attributes(input: &Value) -> Result<&Map<String, Value>, MapError> {
    json::object(input, "record")?;
    match input.get("attributes") {
        Some(attributes) => json::object(attributes, "record: `attributes`"),
        None => Err(MapError::new("record: missing member `attributes`")),
    }
}

/// A boolean attribute, written as a boolean or as `"true"`/`"false"`.
fn flag(value: Option<&Value>) -> Option<bool> {
    match value? {
        Value::Bool(b) => Some(*b),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// The record's named attributes: structural ones at metadata, content
/// from `redacted` up.
fn members<'a>(
    mut builder: Vendor<'a>,
    attributes: &Map<String, Value>,
    meta: &[&str],
    content: &[&str],
) -> Vendor<'a> {
    for key in meta {
        let value = attributes
            .get(*key)
            .filter(|v| !v.is_object() && !v.is_array());
        builder = builder.meta(key, value.cloned());
    }
    for key in content {
        builder = builder.content(key, attributes.get(*key));
    }
    builder
}
