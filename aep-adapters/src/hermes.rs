//! Hermes Agent shell hooks (AEP-0002 Annex A.10): twelve observation
//! hooks onto core types, observe-only. The per-turn `on_session_end`
//! closes runs, never sessions (`on_session_finalize` ends the session);
//! the reset moment rides `x.hermes.session.reset`; the three-state tool
//! result splits completed/failed/denied; the vendor's own approval gate
//! is observed read-only with its decision menu as options and answers
//! out of band; the `clarify` tool adds a form overlay beside its tool
//! events.

use serde_json::Value;

use aep::attention_requested::{Kind, RespondVia};
use aep::attention_resolved::Resolution;
use aep::{
    Answer, AttentionAnswered, AttentionRequested, AttentionResolved, AttentionTimeout, Choice,
    DelegationSubagentStarted, DelegationSubagentStopped, FieldSpec, FieldSpecType, Object,
    Payload, RunCancelled, RunFailed, RunFinished, RunStarted, SessionRef, SessionStarted,
    ToolDenied,
};

use crate::build::Cx;
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::hooks::{self, extras, normal_end};
use crate::json;
use crate::names;

const VENDOR: &str = "hermes";

/// The most choices the vendor's clarify tool offers.
const MAX_CHOICES: usize = 4;

/// Maps one Hermes hook envelope (`{hook_event_name, tool_name,
/// tool_input, session_id, cwd, extra}`).
pub fn map(input: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    json::object(input, VENDOR)?;
    let name = json::req_str(input, "hook_event_name", VENDOR)?;
    let extra = input.get("extra").unwrap_or(&Value::Null);
    let text = |key: &str| json::opt_str(extra, key, name);
    let tool_name = json::opt_str(input, "tool_name", name)?;
    let tool = || -> Result<_, MapError> {
        let tool = tool_name
            .ok_or_else(|| MapError::new(format!("{name}: missing member `tool_name`")))?;
        Ok(hooks::tool_ref(tool, text("tool_call_id")?))
    };
    let clarify = tool_name == Some("clarify");
    let call_id = text("tool_call_id")?;
    let mut events = Vec::new();
    match name {
        "on_session_start" => {
            let mut started = SessionStarted::new();
            started.client = Some(aep::session_started::Client::new(VENDOR));
            events.push(cx.core(Payload::SessionStarted(started)).build()?);
        }
        "pre_llm_call" => {
            let mut started = RunStarted::new();
            started.trigger = Some(aep::run_started::Trigger::User);
            if let Some(message) = text("user_message")? {
                started.prompt = Some(message.to_owned());
                started.extra = extras([(
                    "message_digest",
                    Some(aep::digest::digest(&Value::from(message)).into()),
                )]);
            }
            events.push(cx.core(Payload::RunStarted(started)).build()?);
        }
        "pre_tool_call" => {
            let args = input.get("tool_input");
            events.push(hooks::tool_requested(cx, tool()?, args).build()?);
            if clarify {
                if let Some(form) = clarify_form(args.unwrap_or(&Value::Null)) {
                    let core = cx.core(Payload::AttentionRequested(form)).subject(call_id);
                    events.push(core.build()?);
                }
            }
        }
        "post_tool_call" => {
            let duration = json::count(extra.get("duration_ms"));
            let status = text("status")?;
            let core = match status {
                None | Some("ok" | "success") => {
                    hooks::tool_completed(cx, tool()?, extra.get("result"))
                }
                Some("blocked") => {
                    let mut denied = ToolDenied::new(tool()?, aep::tool_denied::By::Policy);
                    denied.rule =
                        text("error_message")?.and_then(|m| cx.content_text("tool.denied", m));
                    cx.core(Payload::ToolDenied(denied)).subject(tool_name)
                }
                Some(_) => {
                    let kind = text("error_type")?
                        .filter(|s| !s.is_empty())
                        .unwrap_or("tool_error");
                    hooks::tool_failed(cx, tool()?, kind, text("error_message")?)
                }
            };
            let core = core.map_payload(|payload| with_duration(payload, duration));
            events.push(core.build()?);
            if clarify {
                let outcome = match status {
                    None | Some("ok" | "success") => clarify_outcome(extra.get("result")),
                    Some(_) => Outcome::Dismissed,
                };
                let payload = match outcome {
                    Outcome::Answered(values) => {
                        let mut answer = Answer::new();
                        answer.values = Some(values);
                        let mut answered = AttentionAnswered::new(answer);
                        answered.via = Some(aep::attention_answered::Via::Oob);
                        Payload::AttentionAnswered(answered)
                    }
                    Outcome::Timeout => Payload::AttentionTimeout(AttentionTimeout::new()),
                    Outcome::Dismissed => {
                        Payload::AttentionResolved(AttentionResolved::new(Resolution::Dismissed))
                    }
                };
                events.push(cx.core(payload).subject(call_id).build()?);
            }
        }
        "pre_approval_request" => {
            let prompt = match text("command")?.filter(|c| !c.is_empty()) {
                Some(command) => format!("Approval requested: {command}"),
                None => "Approval requested".to_owned(),
            };
            let mut request = AttentionRequested::new(Kind::Permission, prompt);
            request.options = Some(vec![
                Choice::new("once", "Allow once"),
                Choice::new("session", "Allow for this session"),
                Choice::new("always", "Add to permanent allowlist"),
                Choice::new("deny", "Deny"),
            ]);
            request.respond_via = Some(vec![RespondVia::Oob]);
            let core = cx
                .core(Payload::AttentionRequested(request))
                .subject(text("pattern_key")?);
            events.push(core.build()?);
        }
        "post_approval_response" => {
            let payload = match text("choice")? {
                Some("timeout") => Payload::AttentionTimeout(AttentionTimeout::new()),
                choice => {
                    let mut answer = Answer::new();
                    answer.option = choice.filter(|c| !c.is_empty()).map(str::to_owned);
                    let mut answered = AttentionAnswered::new(answer);
                    answered.via = Some(aep::attention_answered::Via::Oob);
                    Payload::AttentionAnswered(answered)
                }
            };
            events.push(cx.core(payload).subject(text("pattern_key")?).build()?);
        }
        // Fires per turn: it closes the run.
        "on_session_end" => {
            let flag = |k: &str| extra.get(k).and_then(Value::as_bool);
            let payload = if flag("interrupted") == Some(true) {
                let mut cancelled = RunCancelled::new();
                cancelled.by = Some(aep::run_cancelled::By::User);
                Payload::RunCancelled(cancelled)
            } else if flag("completed") == Some(false) {
                Payload::RunFailed(RunFailed::new("incomplete"))
            } else {
                Payload::RunFinished(RunFinished::new())
            };
            events.push(cx.core(payload).build()?);
        }
        "subagent_start" | "subagent_stop" => {
            let child = text("child_session_id")?;
            let child_ref = child.map(|c| {
                let mut r = SessionRef::new();
                r.session = Some(c.to_owned());
                r
            });
            let payload = if name == "subagent_start" {
                let mut started = DelegationSubagentStarted::new();
                started.child = child_ref;
                started.role = text("child_role")?.map(str::to_owned);
                let goal = text("child_goal")?
                    .and_then(|g| cx.content_text("delegation.subagent.started", g));
                started.extra = extras([("goal", goal.map(Value::from))]);
                Payload::DelegationSubagentStarted(started)
            } else {
                let mut stopped = DelegationSubagentStopped::new();
                stopped.child = child_ref;
                stopped.status = text("child_status")?.map(str::to_owned);
                stopped.duration_ms = json::count(extra.get("duration_ms"));
                let summary = text("child_summary")?
                    .and_then(|s| cx.content_text("delegation.subagent.stopped", s));
                stopped.extra = extras([("summary", summary.map(Value::from))]);
                Payload::DelegationSubagentStopped(stopped)
            };
            events.push(cx.core(payload).subject(child).build()?);
        }
        "api_request_error" => {
            let message = extra.get("error").and_then(|e| e.get("message"));
            let event = cx
                .vendor("x.hermes.api.error")
                .meta(
                    "status_code",
                    extra.get("status_code").and_then(Value::as_i64),
                )
                .meta("retry_count", json::count(extra.get("retry_count")))
                .meta("reason", text("reason")?)
                .content("message", message)
                .build()?;
            events.push(event);
        }
        "on_session_finalize" => events.push(cx.core(Payload::SessionEnded(normal_end())).build()?),
        // After the vendor minted the successor id: not an end.
        "on_session_reset" => {
            let event = cx
                .vendor("x.hermes.session.reset")
                .meta("reason", text("reason")?)
                .build()?;
            events.push(event);
        }
        other => {
            let vendor_type = names::vendor_type(VENDOR, names::segments(other, &['_', '.', '-']));
            events.push(cx.vendor(vendor_type).build()?);
        }
    }
    Ok(events)
}

/// A tool terminal's payload with its duration: `tool.denied` has no
/// `duration_ms` member, so there it rides as an extra.
fn with_duration(payload: Payload, duration: Option<u64>) -> Payload {
    match payload {
        Payload::ToolDenied(mut p) => {
            if let Some(d) = duration {
                p.extra.insert("duration_ms".to_owned(), Value::from(d));
            }
            Payload::ToolDenied(p)
        }
        other => hooks::with_duration(other, duration),
    }
}

/// A choice as the vendor's clarify tool shows it: a string trimmed, an
/// object's `label`, `description`, `text` or `title`, a list's items
/// joined, anything else as text.
fn flatten_choice(choice: &Value) -> String {
    match choice {
        Value::Null => String::new(),
        Value::String(s) => s.trim().to_owned(),
        Value::Object(o) => ["label", "description", "text", "title"]
            .iter()
            .find_map(|k| {
                o.get(*k)
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
            })
            .unwrap_or_default()
            .to_owned(),
        Value::Array(items) => items
            .iter()
            .map(flatten_choice)
            .collect::<Vec<_>>()
            .join(" ")
            .trim()
            .to_owned(),
        other => other.to_string(),
    }
}

/// The form a clarify call asks: one required field, a select with free
/// text (the vendor always appends "Other") over the normalized choices,
/// or a string field when none is left; no form without a question.
fn clarify_form(args: &Value) -> Option<AttentionRequested> {
    let question = args
        .get("question")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|q| !q.is_empty())?;
    let choices: Vec<String> = choices_of(args);
    let mut field = if choices.is_empty() {
        FieldSpec::new("1", FieldSpecType::String, question)
    } else {
        let mut field = FieldSpec::new("1", FieldSpecType::Select, question);
        field.other = Some(true);
        field.choices = Some(
            choices
                .iter()
                .enumerate()
                .map(|(i, c)| Choice::new((i + 1).to_string(), c.clone()))
                .collect(),
        );
        field
    };
    field.required = Some(true);
    let mut form = AttentionRequested::new(Kind::Form, format!("{VENDOR} asks a question"));
    form.fields = Some(vec![field]);
    form.respond_via = Some(vec![RespondVia::Oob]);
    Some(form)
}

fn choices_of(args: &Value) -> Vec<String> {
    let Some(list) = args.get("choices").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .map(flatten_choice)
        .filter(|c| !c.is_empty())
        .take(MAX_CHOICES)
        .collect()
}

/// How a clarify call ended.
enum Outcome {
    Answered(Object),
    Timeout,
    Dismissed,
}

/// Reads the clarify result (`{question, choices_offered, user_response}`,
/// as JSON text): the vendor's timeout sentinels time out; cancellation,
/// undeliverable prompts, empty or unreadable results dismiss; a picked
/// choice answers with its 1-based id, other text with itself.
fn clarify_outcome(result: Option<&Value>) -> Outcome {
    let parsed = match result {
        Some(Value::String(text)) => serde_json::from_str::<Value>(text).ok(),
        Some(other) => Some(other.clone()),
        None => None,
    };
    let Some(result) = parsed.filter(|r| r.get("error").is_none_or(Value::is_null)) else {
        return Outcome::Dismissed;
    };
    let Some(response) = result
        .get("user_response")
        .and_then(Value::as_str)
        .map(str::trim)
    else {
        return Outcome::Dismissed;
    };
    let folded = response.to_lowercase();
    if folded.starts_with("the user did not provide a response")
        || folded.starts_with("[user did not respond")
    {
        return Outcome::Timeout;
    }
    if response.is_empty()
        || folded.starts_with("the user cancelled")
        || folded.starts_with("[clarify prompt could not be delivered")
        || folded.starts_with("[user cancelled")
        || folded.starts_with("[user declined")
        || folded.starts_with("[oneshot mode:")
    {
        return Outcome::Dismissed;
    }
    let offered = result.get("choices_offered").and_then(Value::as_array);
    let picked = offered
        .into_iter()
        .flatten()
        .position(|c| c.as_str() == Some(response));
    let value = match picked {
        Some(i) => (i + 1).to_string(),
        None => response.to_owned(),
    };
    Outcome::Answered(extras([("1", Some(Value::from(value)))]))
}
