//! Kimi Code CLI (AEP-0002 Annex A.6): the sixteen external hooks, and
//! the web channel (kap-server WebSocket frames, [`web`]).
//!
//! Hooks: runs are the runtime's (one per prompt; a steer submission
//! never opens one); `Interrupt` is the vendor's own cancellation; the
//! approval prompt is observed as an out-of-band permission pair with no
//! options claimed; compaction is the post moment and the pre moment
//! degrades to the fallback; `Notification` is background-task status.

use serde_json::Value;

use aep::attention_requested::{Kind, RespondVia};
use aep::attention_resolved::Resolution;
use aep::{
    Answer, AttentionAnswered, AttentionRequested, AttentionResolved, DelegationSubagentStarted,
    DelegationSubagentStopped, ErrorInfo, Payload, ProgressStatus, RunCancelled, RunFailed,
    SessionCompacted, SessionStarted,
};

use crate::build::Cx;
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::hooks::{self, error_parts, normal_end, Hook};
use crate::json;
use crate::names;

pub mod web;

const VENDOR: &str = "kimi-code";

/// Maps one Kimi Code hook payload.
pub fn map(input: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    let hook = Hook::read(input, VENDOR)?;
    let name = hook.hook_event_name.as_str();
    let text = |key: &str| json::opt_str(input, key, name);
    let fallback = names::session_fallback(VENDOR, name);
    let event = match name {
        "SessionStart" => {
            let mut started = SessionStarted::new();
            started.extra = hooks::extras([("trigger", hook.source.clone().map(Value::from))]);
            cx.core(Payload::SessionStarted(started)).build()?
        }
        "SessionEnd" => cx.core(Payload::SessionEnded(normal_end())).build()?,
        "UserPromptSubmit" if input.get("is_steer").and_then(Value::as_bool) == Some(true) => {
            // A steer rides the running turn: no run boundary.
            let prompt = hooks::prompt_text(hook.prompt.as_ref()).map(Value::from);
            cx.vendor("x.kimi-code.run.steer_submitted")
                .content("prompt", prompt.as_ref())
                .build()?
        }
        "StopFailure" => {
            let kind = text("error_type")?
                .filter(|s| !s.is_empty())
                .unwrap_or("error");
            let mut failed = RunFailed::new(kind);
            let mut error = ErrorInfo::new();
            error.type_ = Some(kind.to_owned());
            error.message = text("error_message")?.map(str::to_owned);
            failed.error = Some(error);
            cx.core(Payload::RunFailed(failed)).build()?
        }
        "Interrupt" => {
            let mut cancelled = RunCancelled::new();
            cancelled.by = Some(aep::run_cancelled::By::User);
            cx.core(Payload::RunCancelled(cancelled)).build()?
        }
        // The tool hooks read Kimi's own members (`tool_call_id`,
        // `tool_output`), not the family's.
        "PreToolUse" => {
            let tool = hooks::tool_ref(hook.tool()?, hook.tool_call_id.as_deref());
            hooks::tool_requested(cx, tool, hook.tool_input.as_ref()).build()?
        }
        "PostToolUse" => {
            let tool = hooks::tool_ref(hook.tool()?, hook.tool_call_id.as_deref());
            hooks::tool_completed(cx, tool, hook.tool_output.as_ref()).build()?
        }
        "PostToolUseFailure" => {
            let tool = hooks::tool_ref(hook.tool()?, hook.tool_call_id.as_deref());
            let (kind, message) = hook
                .error
                .as_ref()
                .map_or(("tool_error".to_owned(), None), error_parts);
            hooks::tool_failed(cx, tool, &kind, message.as_deref()).build()?
        }
        "PermissionRequest" => {
            let tool = hook.tool()?;
            let prompt = match text("display")?.filter(|s| !s.is_empty()) {
                Some(display) => display.to_owned(),
                None => hooks::permission_prompt(tool, hook.tool_input.as_ref()),
            };
            // The vendor's own prompt decides: no options, answers out of band.
            let mut request = AttentionRequested::new(Kind::Permission, prompt);
            request.respond_via = Some(vec![RespondVia::Oob]);
            cx.core(Payload::AttentionRequested(request))
                .subject(Some(tool))
                .build()?
        }
        "PermissionResult" => match text("decision")? {
            Some(decision @ ("approved" | "rejected" | "approved_for_session")) => {
                let mut answer = Answer::new();
                answer.option = Some(decision.to_owned());
                answer.text = text("feedback")?
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned);
                let mut answered = AttentionAnswered::new(answer);
                answered.via = Some(aep::attention_answered::Via::Oob);
                answered.extra =
                    hooks::extras([("label", text("selected_label")?.map(Value::from))]);
                cx.core(Payload::AttentionAnswered(answered)).build()?
            }
            Some("cancelled") => {
                let resolved = AttentionResolved::new(Resolution::Dismissed);
                cx.core(Payload::AttentionResolved(resolved)).build()?
            }
            // An internal gate failure (or a decision not known) is no answer.
            _ => cx.vendor(fallback).build()?,
        },
        "SubagentStart" => {
            let prompt = hooks::prompt_text(hook.prompt.as_ref());
            let mut started = DelegationSubagentStarted::new();
            if let Some(prompt) =
                prompt.and_then(|p| cx.content_text("delegation.subagent.started", &p))
            {
                started.extra = hooks::extras([("prompt", Some(Value::from(prompt)))]);
            }
            cx.core(Payload::DelegationSubagentStarted(started))
                .subject(text("agent_name")?)
                .build()?
        }
        "SubagentStop" => {
            let mut stopped = DelegationSubagentStopped::new();
            let response =
                text("response")?.and_then(|r| cx.content_text("delegation.subagent.stopped", r));
            stopped.extra = hooks::extras([("response", response.map(Value::from))]);
            cx.core(Payload::DelegationSubagentStopped(stopped))
                .subject(text("agent_name")?)
                .build()?
        }
        // The post moment carries the fact; the pre moment stays visible.
        "PreCompact" => cx
            .vendor(fallback)
            .meta("trigger", hook.trigger.clone())
            .meta("token_count", json::count(input.get("token_count")))
            .build()?,
        "PostCompact" => {
            let mut compacted = SessionCompacted::new();
            compacted.trigger = hook.trigger.clone();
            compacted.estimated_token_count = json::count(input.get("estimated_token_count"));
            cx.core(Payload::SessionCompacted(compacted)).build()?
        }
        "Notification" => {
            let mut status = ProgressStatus::new();
            status.message = text("title")?.map(str::to_owned);
            status.extra = hooks::extras([("severity", text("severity")?.map(Value::from))]);
            cx.core(Payload::ProgressStatus(status))
                .subject(hook.notification_type.as_deref())
                .build()?
        }
        // A plain prompt and the stop are the family's.
        _ => hooks::shared(cx, &hook, VENDOR)?,
    };
    Ok(vec![event])
}
