//! The emitter's side of capture (AEP-0003 §9): from an event whose
//! `data` holds full content, the event to emit at a capture ceiling.
//!
//! An adapter holds what its runtime hands it (a tool's real arguments,
//! a model's real prompt) and must emit an honest event at its configured
//! ceiling. [`Emitter::emit`] does it in the order the standard states:
//!
//! 1. every member with a `*_digest` sibling gets its digest from the
//!    original content first ([`digest`]; the relations come from the
//!    schemas, [`aep_types::capture::SIBLINGS`]);
//! 2. at ceiling `full`, that is all;
//! 3. at ceiling `redacted`, every `*_redacted` sibling is made from its
//!    member through the redaction pipeline ([`redact`]) and the member is
//!    dropped; every other `redacted`-level member
//!    ([`aep_types::capture::FREE_TEXT`]) and the members that are
//!    `metadata` only by exception (`attention.requested` `prompt` and
//!    labels, `answer.values`) go through the pipeline; every `full`
//!    member goes. Data of a type without a payload schema goes through
//!    the pipeline whole;
//! 4. at ceiling `metadata`, the hop's down-levelling
//!    ([`Event::down_level`]): everything above `metadata` goes and the
//!    "metadata by exception" members are synthesized structurally;
//! 5. at ceiling `none`, the envelope alone.
//!
//! `capture` is set to the level honoured: the ceiling, or the input's own
//! `capture` when that is lower, since no hop may raise an event's level
//! (AEP-0001 §8.2(b)); an input that declares no `capture` is taken as
//! the full content it is meant to carry. An input without `data` is
//! emitted without it.
//! Members a payload schema does not describe count as `metadata`, as
//! everywhere in the standard: an adapter must not put content there.
//!
//! An adapter's use: a full tool call in, the redacted and metadata events
//! out. (The digest is SHA-256 of `{"api_key":"k-1","command":…,"cwd":…}`,
//! the arguments with sorted keys, as any RFC 8785 implementation gives it.)
//!
//! ```
//! use aep::emit::Emitter;
//! use aep::redact::Options;
//! use aep::{Capture, Event};
//!
//! let line = r#"{"aep":"0.1","id":"e1","type":"tool.requested","time":"2026-12-03T09:00:00Z",
//!   "source":"urn:aep:agent:demo","agent":"demo","session":"s1","seq":1,
//!   "data":{"tool":{"name":"Bash"},
//!     "args":{"command":"curl -H 'Authorization: Bearer abc123.def456' https://api.example.com",
//!             "cwd":"/home/ada/project","api_key":"k-1"}}}"#;
//! let full = Event::from_json(line)?;
//! let emitter = Emitter::new(Options::default().home("/home/ada"));
//!
//! let redacted = emitter.emit(&full, Capture::Redacted)?;
//! assert_eq!(redacted.capture, Some(Capture::Redacted));
//! let data = redacted.data.as_ref().unwrap().to_object()?;
//! assert_eq!(
//!     serde_json::Value::Object(data.clone()),
//!     serde_json::json!({
//!         "tool": {"name": "Bash"},
//!         "args_digest": "21dff6e6973d64db7b636256d49f8b94",
//!         "args_redacted": {
//!             "command": "curl -H 'Authorization: Bearer [REDACTED:secret]' https://api.example.com",
//!             "cwd": "~/project",
//!             "api_key": "[REDACTED:secret]"
//!         }
//!     })
//! );
//!
//! let metadata = emitter.emit(&full, Capture::Metadata)?;
//! assert_eq!(metadata.capture, Some(Capture::Metadata));
//! assert_eq!(
//!     metadata.data.as_ref().unwrap().get(),
//!     r#"{"tool":{"name":"Bash"},"args_digest":"21dff6e6973d64db7b636256d49f8b94"}"#
//! );
//! assert!(redacted.validate().is_ok() && metadata.validate().is_ok());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`digest`]: crate::digest
//! [`redact`]: crate::redact

use std::fmt;

use serde_json::Value;

use crate::digest::digest;
use crate::redact::{Options, Redactor};
use crate::{capture, Capture, Data, Event, Object, Payload};

/// Turns events holding full content into events at a capture ceiling.
/// Build it once: it holds the compiled redaction pipeline.
#[derive(Debug, Clone, Default)]
pub struct Emitter {
    redactor: Redactor,
}

/// The members of a payload that are `metadata` only by exception
/// (AEP-0002 §5.3) and carry text at `redacted`: `(event type, pointer)`.
const BY_EXCEPTION: &[(&str, &str)] = &[
    ("attention.requested", "/prompt"),
    ("attention.requested", "/options/*/label"),
    ("attention.requested", "/fields/*/label"),
    ("attention.requested", "/fields/*/choices/*/label"),
    ("attention.answered", "/answer/values"),
    ("control.attention.respond", "/answer/values"),
];

impl Emitter {
    /// An emitter with the pipeline for `options`.
    pub fn new(options: Options) -> Emitter {
        Emitter::with_redactor(Redactor::new(options))
    }

    /// An emitter using an already compiled pipeline.
    pub fn with_redactor(redactor: Redactor) -> Emitter {
        Emitter { redactor }
    }

    /// The redaction pipeline it applies.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// The event to emit at `ceiling`, from `event` whose `data` is full
    /// content (see the [module documentation](self) for the steps).
    ///
    /// Fails when `data` is not a JSON object or does not decode as the
    /// event type's payload (the error names the place).
    pub fn emit(&self, event: &Event, ceiling: Capture) -> Result<Event, EmitError> {
        // Never above what the input declares (AEP-0001 §8.2(b)).
        let ceiling = ceiling.min(event.capture.unwrap_or(Capture::Full));
        let (typed, mut data) = match &event.data {
            Some(data) => {
                let payload = event.payload().map_err(EmitError::Payload)?;
                let object = data.to_object().map_err(EmitError::NotAnObject)?;
                (
                    !matches!(payload, Payload::Untyped(_)),
                    Some(Value::Object(object)),
                )
            }
            None => (false, None),
        };
        if ceiling == Capture::None {
            let mut out = event.with_data(None);
            out.capture = Some(Capture::None);
            return Ok(out);
        }
        if let Some(value) = &mut data {
            self.digests(&event.type_, value);
        }
        let mut out = match ceiling {
            Capture::Redacted => {
                if let Some(value) = &mut data {
                    if typed {
                        self.redact_members(&event.type_, value);
                    } else {
                        self.redactor.redact_value(value);
                    }
                }
                let mut out = event.with_data(data.as_ref().map(to_data));
                if typed && out.data.is_some() {
                    let mut payload = out.payload().map_err(EmitError::Payload)?;
                    payload.drop_members_above(Capture::Redacted);
                    out.set_payload(&payload).map_err(EmitError::NotAnObject)?;
                }
                out
            }
            _ => {
                let mut full = event.with_data(data.as_ref().map(to_data));
                full.capture = Some(Capture::Full);
                full.down_level(ceiling)
            }
        };
        out.capture = Some(ceiling);
        Ok(out)
    }

    /// Step 1: each digest from the original content.
    fn digests(&self, event_type: &str, data: &mut Value) {
        for sibling in capture::siblings(event_type) {
            let Some(digest_at) = sibling.digest else {
                continue;
            };
            let (parent, member) = split(sibling.pointer);
            let (_, digest_member) = split(digest_at);
            visit(data, &parent, &mut |object| {
                if let Value::Object(object) = object {
                    if let Some(content) = object.get(&member) {
                        let hex = digest(content);
                        object.insert(digest_member.clone(), Value::String(hex));
                    }
                }
            });
        }
    }

    /// Step 3: the redacted siblings, the free text, the members that are
    /// `metadata` by exception.
    fn redact_members(&self, event_type: &str, data: &mut Value) {
        for sibling in capture::siblings(event_type) {
            let Some(redacted_at) = sibling.redacted else {
                continue;
            };
            let (parent, member) = split(sibling.pointer);
            let (_, redacted_member) = split(redacted_at);
            visit(data, &parent, &mut |object| {
                if let Value::Object(object) = object {
                    let source = object
                        .get(&member)
                        .or_else(|| object.get(&redacted_member))
                        .cloned();
                    if let Some(mut value) = source {
                        self.redactor.redact_value(&mut value);
                        object.insert(redacted_member.clone(), value);
                    }
                }
            });
        }
        let free_text = capture::free_text(event_type).map(|f| f.pointer);
        let by_exception = BY_EXCEPTION
            .iter()
            .filter(|(t, _)| *t == event_type)
            .map(|(_, pointer)| *pointer);
        for pointer in free_text.chain(by_exception) {
            visit(data, &tokens(pointer), &mut |value| {
                self.redactor.redact_value(value)
            });
        }
    }
}

fn to_data(value: &Value) -> Data {
    match value {
        Value::Object(object) => Data::from_object(object),
        // Decoded from an object above.
        _ => Data::from_object(&Object::new()),
    }
}

/// A pointer's tokens, unescaped (RFC 6901).
fn tokens(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// A pointer's parent tokens and last token.
fn split(pointer: &str) -> (Vec<String>, String) {
    let mut all = tokens(pointer);
    let last = all.pop().unwrap_or_default();
    (all, last)
}

/// Calls `f` on every value `tokens` reaches, `*` standing for every item
/// of an array.
fn visit(value: &mut Value, tokens: &[String], f: &mut dyn FnMut(&mut Value)) {
    match tokens.split_first() {
        None => f(value),
        Some((token, rest)) if token == "*" => {
            if let Value::Array(items) = value {
                items.iter_mut().for_each(|item| visit(item, rest, f));
            }
        }
        Some((token, rest)) => {
            if let Some(member) = value.as_object_mut().and_then(|o| o.get_mut(token)) {
                visit(member, rest, f);
            }
        }
    }
}

/// Why an event could not be emitted.
#[derive(Debug)]
pub enum EmitError {
    /// `data` does not decode as the event type's payload.
    Payload(crate::Error),
    /// `data` is not a JSON object.
    NotAnObject(serde_json::Error),
}

impl fmt::Display for EmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmitError::Payload(e) => write!(f, "{e}"),
            EmitError::NotAnObject(e) => write!(f, "data: not a JSON object: {e}"),
        }
    }
}

impl std::error::Error for EmitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EmitError::Payload(e) => Some(e),
            EmitError::NotAnObject(e) => Some(e),
        }
    }
}
