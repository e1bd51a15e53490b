//! OpenCode and Kilo Code moments (AEP-0002 Annex A.7, A.8): the plugin's
//! bus events and interception hooks, the SSE channel's bare bus events,
//! and the todo snapshots diffed into transitions.
//!
//! Kilo Code is an OpenCode fork carried whole on its own identity, plus
//! the ask and settle moments of its `>=7.4.6` runtime (`permission.asked`,
//! `permission.replied`, `question.asked`, `question.replied`). Runs are
//! the runtime's (a user message opens one, `session.idle` closes it), and
//! so is the suppression of a settle its own control loop already
//! resolved: the pure mapping emits. There is no `tool.failed` on this
//! surface: failures ride `x.{vendor}.session.error`.

use serde_json::Value;

use aep::attention_requested::{Kind, RespondVia};
use aep::attention_resolved::Resolution;
use aep::form::claude_code::{AskUserQuestion, Question, QuestionOption};
use aep::{
    AttentionRequested, AttentionResolved, Capture, Choice, Payload, ProgressStatus,
    ProgressTaskCompleted, ProgressTaskPlanned, RunFinished, RunStarted, SessionCompacted,
    SessionStarted,
};

use crate::build::Cx;
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::hooks::todo_task;
use crate::hooks::{self, normal_end};
use crate::json;
use crate::names;
use crate::posture::Mode;

/// Which member of the family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fork {
    /// OpenCode.
    Opencode,
    /// Kilo Code.
    Kilocode,
}

impl Fork {
    fn vendor(self) -> &'static str {
        match self {
            Fork::Opencode => "opencode",
            Fork::Kilocode => "kilocode",
        }
    }
}

/// Maps one plugin moment: `{kind: "bus", event}`, `{kind: "tool.before",
/// input, output}`, `{kind: "tool.after", input, output}` or
/// `{kind: "permission.ask", permission}`.
pub fn map(input: &Value, cx: &Cx<'_>, fork: Fork) -> Result<Vec<MappedEvent>, MapError> {
    let vendor = fork.vendor();
    json::object(input, vendor)?;
    let kind = json::req_str(input, "kind", vendor)?;
    let event = match kind {
        "bus" => {
            let event = input
                .get("event")
                .ok_or_else(|| MapError::new("bus: missing member `event`"))?;
            return bus(event, cx, fork, Channel::Plugin);
        }
        "tool.before" | "tool.after" => {
            let hook = input.get("input").unwrap_or(&Value::Null);
            let output = input.get("output").unwrap_or(&Value::Null);
            let name = json::req_str(hook, "tool", kind)?;
            let tool = hooks::tool_ref(name, json::opt_str(hook, "callID", kind)?);
            if kind == "tool.before" {
                hooks::tool_requested(cx, tool, output.get("args")).build()?
            } else {
                hooks::tool_completed(cx, tool, output.get("output")).build()?
            }
        }
        "permission.ask" => {
            let permission = input.get("permission").unwrap_or(&Value::Null);
            let (subject, prompt) = permission_prompt(permission, kind)?;
            let mut request = AttentionRequested::new(Kind::Permission, prompt);
            request.options = Some(vec![
                Choice::new("allow", "Allow"),
                Choice::new("deny", "Deny"),
            ]);
            request.respond_via = Some(vec![RespondVia::Control]);
            cx.core(Payload::AttentionRequested(request))
                .subject(Some(subject))
                .build()?
        }
        other => cx
            .vendor(names::vendor_type(vendor, names::segments(other, &['.'])))
            .build()?,
    };
    Ok(vec![event])
}

/// Maps one bus event as the SSE channel delivers it, in the posture's
/// mode: companion keeps only the channel-visible `x.{vendor}.*` family
/// (a core or suppressed moment as `x.{vendor}.{bus type}` with empty
/// data), primary maps the whole bus with every ask shedding its answer
/// affordances.
pub fn sse(event: &Value, cx: &Cx<'_>, fork: Fork) -> Result<Vec<MappedEvent>, MapError> {
    match cx.posture.mode {
        Mode::Primary => bus(event, cx, fork, Channel::Sse),
        Mode::Companion => {
            let mapped = bus(event, cx, fork, Channel::Plugin)?;
            if !mapped.is_empty() && mapped.iter().all(|e| e.type_.starts_with("x.")) {
                return Ok(mapped);
            }
            let kind = json::req_str(event, "type", "bus event")?;
            let vendor_type = names::vendor_type(fork.vendor(), names::segments(kind, &['.']));
            Ok(vec![cx.vendor(vendor_type).build()?])
        }
    }
}

/// Two todo snapshots (`{prev, next}`) as transitions, in `next`'s order:
/// an id not in `prev` is planned, a change to `completed` is completed;
/// removals and other changes stay silent.
pub fn todos(input: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    json::object(input, "todos")?;
    let list = |key: &str| -> Result<Vec<Value>, MapError> {
        match input.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => Ok(items.clone()),
            Some(other) => Err(MapError::new(format!(
                "todos: `{key}`: expected an array, got {}",
                json::kind(other)
            ))),
        }
    };
    let (prev, next) = (list("prev")?, list("next")?);
    let id = |todo: &Value| todo.get("id").and_then(Value::as_str).map(str::to_owned);
    let status = |todo: &Value| {
        todo.get("status")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let mut events = Vec::new();
    for todo in &next {
        let Some(todo_id) = id(todo).filter(|i| !i.is_empty()) else {
            continue;
        };
        let before = prev
            .iter()
            .find(|p| id(p).as_deref() == Some(todo_id.as_str()));
        let title = todo.get("content").and_then(Value::as_str);
        if before.is_none() {
            let mut planned = ProgressTaskPlanned::new();
            planned.task = todo_task(cx, title);
            events.push(
                cx.core(Payload::ProgressTaskPlanned(planned))
                    .subject(Some(todo_id.as_str()))
                    .build()?,
            );
        }
        let done = status(todo).as_deref() == Some("completed");
        let was_done = before.and_then(status).as_deref() == Some("completed");
        if done && !was_done {
            let mut completed = ProgressTaskCompleted::new();
            completed.task = todo_task(cx, title);
            events.push(
                cx.core(Payload::ProgressTaskCompleted(completed))
                    .subject(Some(todo_id.as_str()))
                    .build()?,
            );
        }
    }
    Ok(events)
}

/// Where a bus event arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Channel {
    /// The plugin's `event` hook, beside the hold-open `permission.ask`.
    Plugin,
    /// The read-only SSE channel in primary mode.
    Sse,
}

fn bus(
    event: &Value,
    cx: &Cx<'_>,
    fork: Fork,
    channel: Channel,
) -> Result<Vec<MappedEvent>, MapError> {
    let vendor = fork.vendor();
    json::object(event, "bus event")?;
    let kind = json::req_str(event, "type", "bus event")?;
    let props = event.get("properties").unwrap_or(&Value::Null);
    let text = |v: &Value, key: &str| json::opt_str(v, key, kind).map(|s| s.map(str::to_owned));
    let vendor_type = names::vendor_type(vendor, names::segments(kind, &['.']));
    let kilo = fork == Fork::Kilocode;
    let event = match kind {
        "session.created" => {
            let info = props.get("info").unwrap_or(&Value::Null);
            let mut started = SessionStarted::new();
            let mut client = aep::session_started::Client::new(vendor);
            client.version = text(info, "version")?;
            started.client = Some(client);
            started.parent = text(info, "parentID")?
                .filter(|p| !p.is_empty())
                .map(aep::session_started::Parent::new);
            started.label = text(info, "title")?;
            started.cwd = text(info, "directory")?;
            cx.core(Payload::SessionStarted(started)).build()?
        }
        "session.deleted" => cx.core(Payload::SessionEnded(normal_end())).build()?,
        "session.idle" => cx.core(Payload::RunFinished(RunFinished::new())).build()?,
        "session.compacted" => cx
            .core(Payload::SessionCompacted(SessionCompacted::new()))
            .build()?,
        "session.status" => {
            let status = props.get("status").unwrap_or(&Value::Null);
            let mut progress = ProgressStatus::new();
            progress.message = text(status, "message")?;
            cx.core(Payload::ProgressStatus(progress))
                .subject(text(status, "type")?)
                .build()?
        }
        "session.error" => {
            let error = props.get("error").unwrap_or(&Value::Null);
            let message = error.get("data").and_then(|d| d.get("message"));
            cx.vendor(vendor_type)
                .meta("type", text(error, "name")?)
                .content("message", message)
                .build()?
        }
        "message.updated" => {
            let info = props.get("info").unwrap_or(&Value::Null);
            let role = text(info, "role")?;
            if role.as_deref() == Some("user") {
                let mut started = RunStarted::new();
                started.trigger = Some(aep::run_started::Trigger::User);
                cx.core(Payload::RunStarted(started)).build()?
            } else {
                let tokens = info.get("tokens");
                cx.vendor(vendor_type)
                    .meta("role", role)
                    .meta(
                        "gen_ai.usage.input_tokens",
                        json::count(tokens.and_then(|t| t.get("input"))),
                    )
                    .meta(
                        "gen_ai.usage.output_tokens",
                        json::count(tokens.and_then(|t| t.get("output"))),
                    )
                    .build()?
            }
        }
        // The hold-open hook carries this ask on the plugin; only a
        // read-only channel maps it, without options.
        "permission.updated" if channel == Channel::Plugin => return Ok(Vec::new()),
        "permission.updated" => {
            let (subject, prompt) = permission_prompt(props, kind)?;
            let request = AttentionRequested::new(Kind::Permission, prompt);
            cx.core(Payload::AttentionRequested(request))
                .subject(Some(subject))
                .build()?
        }
        "permission.asked" if kilo => {
            let (subject, prompt) = permission_prompt(props, kind)?;
            let mut request = AttentionRequested::new(Kind::Permission, prompt);
            if channel == Channel::Plugin {
                request.options = Some(vec![
                    Choice::new("once", "Allow once"),
                    Choice::new("always", "Always allow"),
                    Choice::new("reject", "Reject"),
                ]);
                request.respond_via = Some(vec![RespondVia::Control]);
            }
            cx.core(Payload::AttentionRequested(request))
                .subject(Some(subject))
                .build()?
        }
        "permission.replied" => {
            let resolved = AttentionResolved::new(Resolution::Answered);
            cx.core(Payload::AttentionResolved(resolved))
                .subject(text(props, "permissionID")?)
                .build()?
        }
        "question.asked" if kilo => {
            let mut request = question_form(props, cx)?;
            if channel == Channel::Sse {
                request.respond_via = None;
            }
            cx.pregated(Payload::AttentionRequested(request))
                .subject(text(props, "id")?)
                .build()?
        }
        "question.replied" if kilo => {
            let resolved = AttentionResolved::new(Resolution::Answered);
            cx.core(Payload::AttentionResolved(resolved))
                .subject(text(props, "requestID")?)
                .build()?
        }
        // A whole-list snapshot: the todos surface diffs two of them.
        "todo.updated" => return Ok(Vec::new()),
        "file.edited" => cx
            .vendor(vendor_type)
            .content("file", props.get("file"))
            .build()?,
        "command.executed" => cx
            .vendor(vendor_type)
            .meta("name", text(props, "name")?)
            .content("arguments", props.get("arguments"))
            .build()?,
        _ => cx.vendor(vendor_type).build()?,
    };
    Ok(vec![event])
}

/// The subject (the permission type) and prompt of a permission ask:
/// `Permission requested: {type} — {title}`.
fn permission_prompt(permission: &Value, place: &str) -> Result<(String, String), MapError> {
    let kind = json::opt_str(permission, "type", place)?
        .or(json::opt_str(permission, "permission", place)?)
        .filter(|s| !s.is_empty())
        .unwrap_or("tool");
    let mut prompt = format!("Permission requested: {kind}");
    if let Some(title) = json::opt_str(permission, "title", place)?.filter(|s| !s.is_empty()) {
        prompt.push_str(" — ");
        prompt.push_str(title);
    }
    Ok((kind.to_owned(), prompt))
}

/// A followup-question ask as one form on the AskUserQuestion shape
/// (index ids, labels at `redacted` up); `custom` (true by default) says
/// whether free text is taken.
fn question_form(props: &Value, cx: &Cx<'_>) -> Result<AttentionRequested, MapError> {
    let questions = props.get("questions").and_then(Value::as_array);
    let mut call = AskUserQuestion {
        questions: Vec::new(),
    };
    let mut custom = Vec::new();
    for q in questions.into_iter().flatten() {
        let text = |k: &str| {
            q.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let options = q.get("options").and_then(Value::as_array);
        call.questions.push(Question {
            question: text("question"),
            header: text("header"),
            multi_select: q.get("multiple").and_then(Value::as_bool).unwrap_or(false),
            options: options
                .into_iter()
                .flatten()
                .map(|o| QuestionOption {
                    label: o
                        .get("label")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    description: None,
                })
                .collect(),
        });
        custom.push(q.get("custom").and_then(Value::as_bool).unwrap_or(true));
    }
    let capture = cx.ceiling("attention.requested").max(Capture::Metadata);
    let mut request = aep::form::claude_code::request(&call, cx.agent, capture);
    for (field, custom) in request.fields.iter_mut().flatten().zip(custom) {
        field.other = custom.then_some(true);
        if field.label.starts_with(": ") {
            field.label = field.label.trim_start_matches(": ").to_owned();
        }
    }
    Ok(request)
}
