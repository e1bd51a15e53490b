//! The Kimi web channel: kap-server WebSocket frames
//! (`{type, seq, session_id, timestamp, payload, volatile?}`).
//!
//! Volatile frames never emit, nor do the internal `permission.approval.*`
//! bus echoes of the `event.approval.*` wire frames. Companion mode emits
//! the channel-visible `x.kimi-code.web.*` family only, with empty data;
//! primary mode maps the wire: the vendor's real turn boundaries, the
//! tool call, and every ask as an `attention.requested` without options or
//! a response channel (nothing can answer through a read-only channel).

use serde_json::Value;

use aep::attention_requested::Kind;
use aep::attention_resolved::Resolution;
use aep::{
    Answer, AttentionAnswered, AttentionRequested, AttentionResolved, Choice, FieldSpec,
    FieldSpecType, Payload, RunCancelled, RunFailed, RunFinished, RunStarted,
};

use crate::build::Cx;
use crate::error::MapError;
use crate::event::MappedEvent;
use crate::hooks;
use crate::json;
use crate::names;
use crate::posture::Mode;

/// Maps one WebSocket frame.
pub fn map(input: &Value, cx: &Cx<'_>) -> Result<Vec<MappedEvent>, MapError> {
    json::object(input, "frame")?;
    let kind = json::req_str(input, "type", "frame")?;
    if input.get("volatile").and_then(Value::as_bool) == Some(true)
        || kind.starts_with("permission.approval.")
    {
        return Ok(Vec::new());
    }
    let vendor_type = names::vendor_type("kimi-code", {
        let mut parts = vec!["web".to_owned()];
        parts.extend(names::segments(kind, &['.']));
        parts
    });
    let payload = input.get("payload").unwrap_or(&Value::Null);
    let place = kind;
    let text = |key: &str| json::opt_str(payload, key, place);
    if cx.posture.mode == Mode::Companion {
        return Ok(vec![cx.vendor(vendor_type).build()?]);
    }
    let event = match kind {
        "turn.started" => {
            let mut started = RunStarted::new();
            let origin = payload
                .get("origin")
                .and_then(|o| o.get("kind"))
                .and_then(Value::as_str);
            started.trigger = origin.and_then(|o| serde_json::from_value(Value::from(o)).ok());
            started.prompt = json::opt_str(payload, "prompt", place)?.map(str::to_owned);
            cx.core(Payload::RunStarted(started)).build()?
        }
        "turn.ended" => match text("reason")? {
            None | Some("completed") => {
                cx.core(Payload::RunFinished(RunFinished::new())).build()?
            }
            Some("cancelled" | "interrupted" | "aborted") => cx
                .core(Payload::RunCancelled(RunCancelled::new()))
                .build()?,
            Some(reason) => cx
                .core(Payload::RunFailed(RunFailed::new(reason)))
                .build()?,
        },
        "tool.call.started" => {
            let name = json::req_str(payload, "name", place)?;
            let tool = hooks::tool_ref(name, text("toolCallId")?);
            hooks::tool_requested(cx, tool, payload.get("args")).build()?
        }
        // The result names no tool: pairing it is the receiver's.
        "tool.result" => return Ok(Vec::new()),
        "event.approval.requested" => {
            let prompt = match text("action")?.filter(|s| !s.is_empty()) {
                Some(action) => action.to_owned(),
                None => format!(
                    "Permission requested: {}",
                    text("tool_name")?.unwrap_or("a tool")
                ),
            };
            let request = AttentionRequested::new(Kind::Permission, prompt);
            cx.core(Payload::AttentionRequested(request))
                .subject(text("approval_id")?)
                .build()?
        }
        "event.approval.resolved" => {
            let subject = text("approval_id")?;
            match text("decision")? {
                None | Some("cancelled" | "dismissed") => dismissed(cx, subject)?,
                Some(decision) => {
                    let mut answer = Answer::new();
                    answer.option = Some(decision.to_owned());
                    answer.text = text("feedback")?
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned);
                    answered(cx, answer, subject)?
                }
            }
        }
        "event.question.requested" => {
            let questions = payload.get("questions").and_then(Value::as_array);
            let questions = questions.map(Vec::as_slice).unwrap_or_default();
            let fields: Vec<FieldSpec> = questions
                .iter()
                .enumerate()
                .map(|(i, q)| field(i, q))
                .collect();
            let prompt = match fields.as_slice() {
                [one] => one.label.clone(),
                _ => format!("{} asks {} questions", cx.agent, fields.len()),
            };
            let mut request = AttentionRequested::new(Kind::Form, prompt);
            request.fields = Some(fields);
            cx.core(Payload::AttentionRequested(request))
                .subject(text("question_id")?)
                .build()?
        }
        "event.question.answered" => {
            let mut answer = Answer::new();
            answer.values = payload.get("answers").and_then(Value::as_object).cloned();
            answered(cx, answer, text("question_id")?)?
        }
        "event.question.dismissed" => dismissed(cx, text("question_id")?)?,
        "event.session.work_changed" => cx
            .vendor(vendor_type)
            .meta("busy", payload.get("busy").and_then(Value::as_bool))
            .meta("pending_interaction", text("pending_interaction")?)
            .build()?,
        _ => cx.vendor(vendor_type).build()?,
    };
    Ok(vec![event])
}

/// One question as a field: a select over its options, or free text.
fn field(index: usize, question: &Value) -> FieldSpec {
    let id = question
        .get("id")
        .and_then(Value::as_str)
        .map_or_else(|| (index + 1).to_string(), str::to_owned);
    let label = question
        .get("question")
        .and_then(Value::as_str)
        .unwrap_or(&id)
        .to_owned();
    let options = question.get("options").and_then(Value::as_array);
    let choices: Vec<Choice> = options
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(j, o)| {
            let cid = o
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| (j + 1).to_string(), str::to_owned);
            let label = o
                .get("label")
                .and_then(Value::as_str)
                .unwrap_or(&cid)
                .to_owned();
            Choice::new(cid, label)
        })
        .collect();
    if choices.is_empty() {
        FieldSpec::new(id, FieldSpecType::String, label)
    } else {
        let mut field = FieldSpec::new(id, FieldSpecType::Select, label);
        field.choices = Some(choices);
        field
    }
}

fn answered(cx: &Cx<'_>, answer: Answer, subject: Option<&str>) -> Result<MappedEvent, MapError> {
    let mut answered = AttentionAnswered::new(answer);
    answered.via = Some(aep::attention_answered::Via::Oob);
    cx.core(Payload::AttentionAnswered(answered))
        .subject(subject)
        .build()
}

fn dismissed(cx: &Cx<'_>, subject: Option<&str>) -> Result<MappedEvent, MapError> {
    let resolved = AttentionResolved::new(Resolution::Dismissed);
    cx.core(Payload::AttentionResolved(resolved))
        .subject(subject)
        .build()
}
