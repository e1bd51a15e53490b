//! Building mapped events at the posture: typed payloads through the
//! generated types and the emitter's capture gate, vendor payloads member
//! by member, every event checked against the schemas before it leaves.

use serde_json::Value;

use aep::emit::Emitter;
use aep::{Capture, Event, Object, Payload};

use crate::error::MapError;
use crate::event::MappedEvent;
use crate::posture::Posture;

/// What one mapping call works with: the agent name the vocabulary
/// speaks for, the posture, the emitter (and its redaction pipeline).
#[derive(Debug, Clone, Copy)]
pub struct Cx<'a> {
    /// The agent name (the vocabulary's name), used in synthesized text.
    pub agent: &'a str,
    /// The posture.
    pub posture: &'a Posture,
    /// The emitter.
    pub emitter: &'a Emitter,
}

impl<'a> Cx<'a> {
    /// The ceiling of `event_type` at this posture.
    pub fn ceiling(&self, event_type: &str) -> Capture {
        self.posture.ceiling_for(event_type)
    }

    /// Whether content (`redacted`-level members) may ride on events of
    /// `event_type`.
    pub fn carries_content(&self, event_type: &str) -> bool {
        self.ceiling(event_type) >= Capture::Redacted
    }

    /// Free text for an event of `event_type` that the payload schema
    /// does not gate itself: absent below `redacted`, through the
    /// redaction pipeline at `redacted`, verbatim at `full`.
    pub fn content_text(&self, event_type: &str, text: &str) -> Option<String> {
        match self.ceiling(event_type) {
            Capture::Full => Some(text.to_owned()),
            Capture::Redacted => Some(self.emitter.redactor().redact_str(text).into_owned()),
            _ => None,
        }
    }

    /// [`content_text`](Cx::content_text) for any JSON value (strings
    /// inside it redacted).
    pub fn content_value(&self, event_type: &str, value: &Value) -> Option<Value> {
        match self.ceiling(event_type) {
            Capture::Full => Some(value.clone()),
            Capture::Redacted => {
                let mut value = value.clone();
                self.emitter.redactor().redact_value(&mut value);
                Some(value)
            }
            _ => None,
        }
    }

    /// A core event from a payload holding full content: the emitter gates
    /// it to the type's ceiling (digests first, redaction at `redacted`,
    /// structural synthesis below).
    pub fn core(&self, payload: Payload) -> Core<'a> {
        Core {
            cx: *self,
            payload,
            subject: None,
            step: None,
            pregated: false,
        }
    }

    /// A core event whose payload was already made for the ceiling of its
    /// type by a capture-aware mapping (the form mappings, which replace
    /// labels with structural placeholders themselves): below `redacted`
    /// it is only cut to `metadata`, not synthesized again.
    pub fn pregated(&self, payload: Payload) -> Core<'a> {
        Core {
            pregated: true,
            ..self.core(payload)
        }
    }

    /// A vendor `x.*` event. Its data has no schema, so the mapping says
    /// which members are structural ([`Vendor::meta`]) and which are
    /// content ([`Vendor::content`]).
    pub fn vendor(&self, event_type: impl Into<String>) -> Vendor<'a> {
        Vendor {
            cx: *self,
            type_: event_type.into(),
            data: Object::new(),
            subject: None,
            step: None,
        }
    }
}

/// A core event being built.
#[derive(Debug)]
pub struct Core<'a> {
    cx: Cx<'a>,
    payload: Payload,
    subject: Option<String>,
    step: Option<String>,
    pregated: bool,
}

impl Core<'_> {
    /// Sets the envelope `subject` (an empty one stays absent).
    pub fn subject(mut self, subject: Option<impl Into<String>>) -> Self {
        self.subject = non_empty(subject);
        self
    }

    /// Sets the envelope `step` (an empty one stays absent).
    pub fn step(mut self, step: Option<impl Into<String>>) -> Self {
        self.step = non_empty(step);
        self
    }

    /// The same event with its payload changed by `f`.
    pub fn map_payload(mut self, f: impl FnOnce(Payload) -> Payload) -> Self {
        self.payload = f(self.payload);
        self
    }

    /// The event at the ceiling of its type, checked against the schemas.
    pub fn build(self) -> Result<MappedEvent, MapError> {
        let Some(event_type) = self.payload.event_type() else {
            return Err(MapError::new(
                "internal: an untyped payload as a core event",
            ));
        };
        let cx = self.cx;
        let ceiling = cx.ceiling(event_type);
        let mut event = envelope(cx.agent, event_type);
        event.subject = self.subject;
        event.step = self.step;
        event.capture = Some(Capture::Full);
        event
            .set_payload(&self.payload)
            .map_err(|e| MapError::new(format!("`{event_type}` payload: {e}")))?;
        let out = if self.pregated && ceiling < Capture::Redacted {
            let mut payload = self.payload;
            let level = ceiling.max(Capture::Metadata);
            payload.drop_members_above(level);
            let mut out = event.with_data(None);
            out.set_payload(&payload)
                .map_err(|e| MapError::new(format!("`{event_type}` payload: {e}")))?;
            if ceiling == Capture::None {
                out.data = None;
            }
            out.capture = Some(ceiling);
            out
        } else {
            cx.emitter
                .emit(&event, ceiling)
                .map_err(|e| MapError::new(format!("`{event_type}`: {e}")))?
        };
        finish(out)
    }
}

/// A vendor event being built.
#[derive(Debug)]
pub struct Vendor<'a> {
    cx: Cx<'a>,
    type_: String,
    data: Object,
    subject: Option<String>,
    step: Option<String>,
}

impl Vendor<'_> {
    /// A structural member, carried at every ceiling but `none`. A `None`
    /// value is left out.
    pub fn meta(mut self, name: &str, value: Option<impl Into<Value>>) -> Self {
        if let Some(value) = value {
            self.data.insert(name.to_owned(), value.into());
        }
        self
    }

    /// A content member: absent below `redacted`, redacted at `redacted`,
    /// verbatim at `full`. A `None` value is left out.
    pub fn content(mut self, name: &str, value: Option<&Value>) -> Self {
        if let Some(value) = value.and_then(|v| self.cx.content_value(&self.type_, v)) {
            self.data.insert(name.to_owned(), value);
        }
        self
    }

    /// Sets the envelope `subject` (an empty one stays absent).
    pub fn subject(mut self, subject: Option<impl Into<String>>) -> Self {
        self.subject = non_empty(subject);
        self
    }

    /// Sets the envelope `step` (an empty one stays absent).
    pub fn step(mut self, step: Option<impl Into<String>>) -> Self {
        self.step = non_empty(step);
        self
    }

    /// The event at the ceiling of its type, checked against the schemas.
    pub fn build(self) -> Result<MappedEvent, MapError> {
        let ceiling = self.cx.ceiling(&self.type_);
        let mut event = envelope(self.cx.agent, &self.type_);
        event.subject = self.subject;
        event.step = self.step;
        event.capture = Some(ceiling);
        if ceiling != Capture::None {
            event.data = Some(aep::Data::from_object(&self.data));
        }
        finish(event)
    }
}

fn non_empty(value: Option<impl Into<String>>) -> Option<String> {
    value.map(Into::into).filter(|s| !s.is_empty())
}

/// A placeholder envelope around a mapped event: the schemas check the
/// event as a whole, and the emitter needs one.
fn envelope(agent: &str, event_type: &str) -> Event {
    let agent = if agent.is_empty() { "agent" } else { agent };
    Event::new(
        "aep-adapters",
        event_type,
        "1970-01-01T00:00:00Z",
        format!("urn:aep:agent:{agent}"),
        agent,
    )
}

/// Checks the event (with a session and a sequence number where its
/// category is session-scoped, as a runtime sends it) and keeps the part
/// a mapping decides.
fn finish(mut event: Event) -> Result<MappedEvent, MapError> {
    if !agent_scoped(&event.type_) {
        event.session = Some("session".to_owned());
        event.seq = Some(0);
    }
    if let Err(violations) = event.validate() {
        return Err(MapError::new(format!(
            "the mapped `{}` event is not valid: {violations}",
            event.type_
        )));
    }
    let data = match &event.data {
        Some(data) => data
            .to_object()
            .map_err(|e| MapError::new(format!("`{}` data: {e}", event.type_)))?,
        None => Object::new(),
    };
    Ok(MappedEvent {
        type_: event.type_,
        data,
        subject: event.subject,
        step: event.step,
        capture: event.capture.unwrap_or(Capture::Metadata),
    })
}

/// Whether events of `event_type` are agent-scoped (no `session`, no
/// `seq`), from the registry's category scopes.
pub fn agent_scoped(event_type: &str) -> bool {
    event_type
        .split('.')
        .next()
        .and_then(|c| c.parse::<aep::Category>().ok())
        .is_some_and(|c| c.scope() == aep::CategoryScope::Agent)
}
