//! The event an answer is written as, and the checks it passes before it
//! is written.
//!
//! The event is built as JSON and decoded as an [`Event`], so it is held to
//! the same decoding as any event read from a capture; then
//! [`Event::validate`] and the capture checks run on it. An event that
//! fails them is a bug in this command, never written.

use std::time::SystemTime;

use aep::emit::Emitter;
use aep::form::gate_values;
use aep::{Capture, Event, Payload};
use serde_json::json;

use super::answer::{fields, Answer};
use super::Request;
use crate::common::error::{Context, Error, Result};
use crate::common::sender::{DEFAULT_AGENT, DEFAULT_SOURCE};

/// Which event an answer is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Emit {
    /// The `control.attention.respond` command (AEP-0004 §5), sent to the
    /// emitter.
    Respond,
    /// The emitter's `attention.answered` echo (`via: "control"`), for an
    /// adapter that takes the answer locally.
    Answered,
}

/// The `--source` and `--agent` flags.
#[derive(Debug, Clone, Default)]
pub struct Sender {
    /// `--source`.
    pub source: Option<String>,
    /// `--agent`.
    pub agent: Option<String>,
}

/// How free text in an answer is written.
#[derive(Debug, Clone, Copy)]
pub enum FreeText<'a> {
    /// Through the redaction pipeline, at `redacted` (AEP-0001 §8.2(e):
    /// `redacted` claims the pipeline ran).
    Redacted(&'a Emitter),
    /// Verbatim, at `full`: the person asked for it.
    Full,
}

/// Builds the event answering `request` and checks it: the envelope and
/// payload schemas ([`Event::validate`]), the capture ceiling of every
/// payload member, and the type-dependent gate of form values. An answer
/// with free text is written as `text` says; one without is `metadata`.
/// The error lists what is wrong.
pub fn build(
    request: &Request,
    answer: &Answer,
    emit: Emit,
    sender: &Sender,
    text: FreeText<'_>,
) -> Result<Event> {
    let asked = &request.event;
    let capture = if answer.carries_free_text(fields(&request.payload)) {
        // Built at `full`, as typed; the pipeline below makes it `redacted`.
        Capture::Full
    } else {
        Capture::Metadata
    };
    let now = SystemTime::now();
    let mut event = json!({
        "aep": "0.1",
        "id": ulid::Ulid::from_datetime(now).to_string(),
        "type": match emit {
            Emit::Respond => "control.attention.respond",
            Emit::Answered => "attention.answered",
        },
        "subject": asked.id,
        "time": humantime::format_rfc3339_millis(now).to_string(),
        "session": asked.session,
        "cause": asked.id,
        "capture": capture.as_str(),
    });
    let members = event.as_object_mut().expect("a JSON object literal");
    match emit {
        Emit::Respond => {
            // A command names its sender, and carries no seq (AEP-0004 §2).
            members.insert(
                "source".into(),
                sender.source.as_deref().unwrap_or(DEFAULT_SOURCE).into(),
            );
            members.insert(
                "agent".into(),
                sender.agent.as_deref().unwrap_or(DEFAULT_AGENT).into(),
            );
            members.insert("data".into(), json!({ "answer": answer.to_json() }));
        }
        Emit::Answered => {
            // The emitter's own event: its identity, the request's run and
            // the next position of its session.
            members.insert(
                "source".into(),
                sender.source.as_deref().unwrap_or(&asked.source).into(),
            );
            members.insert(
                "agent".into(),
                sender.agent.as_deref().unwrap_or(&asked.agent).into(),
            );
            if let Some(run) = &asked.run {
                members.insert("run".into(), run.as_str().into());
            }
            let (epoch, seq) = request
                .position
                .unwrap_or((asked.epoch_or_default(), asked.seq.unwrap_or(0)));
            members.insert("seq".into(), (seq + 1).into());
            if epoch > 0 {
                members.insert("epoch".into(), epoch.into());
            }
            members.insert(
                "data".into(),
                json!({ "answer": answer.to_json(), "via": "control" }),
            );
        }
    }
    let mut event: Event = serde_json::from_value(event).context("the event does not decode")?;
    if let (Capture::Full, FreeText::Redacted(emitter)) = (capture, text) {
        event = emitter
            .emit(&event, Capture::Redacted)
            .context("the answer cannot be redacted")?;
    }
    check(&event, request)?;
    Ok(event)
}

/// The checks an event passes before it is written: the schemas and the
/// capture rule (`Event::validate`), then the form values' capture gate.
fn check(event: &Event, request: &Request) -> Result<()> {
    event.validate().map_err(Error::msg)?;
    let ceiling = event.capture_or_default();
    let payload = event.payload().map_err(Error::msg)?;
    let answer = match &payload {
        Payload::ControlAttentionRespond(p) => &p.answer,
        Payload::AttentionAnswered(p) => &p.answer,
        other => {
            return Err(Error::msg(format_args!(
                "unexpected payload {:?}",
                other.event_type()
            )))
        }
    };
    if let Some(values) = &answer.values {
        if &gate_values(fields(&request.payload), values, ceiling) != values {
            return Err(Error::msg(format_args!(
                "answer.values carries entries above its capture `{ceiling}`"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn request(line: &str) -> Request {
        let event: Event = serde_json::from_str(line).expect("a test event");
        let payload = match event.payload().expect("a test payload") {
            Payload::AttentionRequested(p) => p,
            other => panic!("not a request: {other:?}"),
        };
        Request {
            event,
            payload,
            position: Some((0, 7)),
        }
    }

    fn redacted() -> FreeText<'static> {
        static EMITTER: std::sync::OnceLock<Emitter> = std::sync::OnceLock::new();
        FreeText::Redacted(EMITTER.get_or_init(Emitter::default))
    }

    const FORM: &str = r#"{"aep":"0.1","id":"req-1","type":"attention.requested","time":"2026-12-01T10:00:00Z","source":"urn:a","agent":"a","session":"s","run":"r","seq":3,"data":{"kind":"form","prompt":"Set up","fields":[{"id":"name","type":"string","label":"Name"},{"id":"n","type":"number","label":"N"}]}}"#;

    #[test]
    fn a_command_names_the_request_and_the_sender_and_has_no_seq() {
        let req = request(FORM);
        let answer = Answer::Values(serde_json::from_str(r#"{"n":2}"#).unwrap());
        let event = build(&req, &answer, Emit::Respond, &Sender::default(), redacted()).unwrap();
        assert_eq!(event.type_, "control.attention.respond");
        assert_eq!(event.subject.as_deref(), Some("req-1"));
        assert_eq!(event.cause.as_deref(), Some("req-1"));
        assert_eq!(event.session.as_deref(), Some("s"));
        assert_eq!(event.seq, None);
        assert_eq!(event.run, None);
        assert_eq!(event.source, DEFAULT_SOURCE);
        assert_eq!(event.agent, DEFAULT_AGENT);
        assert_eq!(event.capture, Some(Capture::Metadata));
        assert_eq!(event.id.len(), 26, "a ULID: {}", event.id);
        assert!(event.id.parse::<ulid::Ulid>().is_ok());
    }

    #[test]
    fn the_echo_takes_the_emitters_identity_and_the_next_position() {
        let req = request(FORM);
        let answer = Answer::Values(serde_json::from_str(r#"{"name":"x"}"#).unwrap());
        let sender = Sender {
            source: None,
            agent: Some("console".into()),
        };
        let event = build(&req, &answer, Emit::Answered, &sender, redacted()).unwrap();
        assert_eq!(event.type_, "attention.answered");
        assert_eq!(event.source, "urn:a");
        assert_eq!(event.agent, "console");
        assert_eq!(event.run.as_deref(), Some("r"));
        assert_eq!(event.seq, Some(8));
        assert_eq!(event.capture, Some(Capture::Redacted));
        let data: Value = serde_json::from_str(event.data.unwrap().get()).unwrap();
        assert_eq!(
            data,
            json!({"answer": {"values": {"name": "x"}}, "via": "control"})
        );
    }

    #[test]
    fn an_invalid_event_is_refused_with_its_violations() {
        let req = request(FORM);
        let sender = Sender {
            source: Some("not a uri".into()),
            agent: None,
        };
        let error = build(
            &req,
            &Answer::Text("t".into()),
            Emit::Respond,
            &sender,
            FreeText::Full,
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("/source"), "{error}");
    }
}
