//! What a mapping produces: the part of an event the vocabulary decides.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use aep::{Capture, Object};

/// One mapped event: its `type`, `data` and, where the mapping sets them,
/// `subject` and `step`. The rest of the envelope (ids, time, session,
/// run, sequence) is the runtime's: it comes from state no single input
/// carries.
///
/// `capture` is the level the data was gated to, the envelope's
/// `capture`; it is not serialized (a mapping's pins state the rest).
///
/// It serializes as `{"type", "data", "subject"?, "step"?}`: members the
/// mapping does not set are absent, never `null`, and `data` is always an
/// object (`{}` when empty).
#[derive(Debug, Clone, PartialEq)]
pub struct MappedEvent {
    /// The event type.
    pub type_: String,
    /// The payload, already at the capture ceiling of its type.
    pub data: Object,
    /// The envelope `subject`.
    pub subject: Option<String>,
    /// The envelope `step`.
    pub step: Option<String>,
    /// The capture level `data` honours.
    pub capture: Capture,
}

impl MappedEvent {
    /// Whether the event is agent-scoped (`agent.*`: no `session`, no
    /// `seq`, AEP-0001 §5.2), so a runtime stamps it without a position.
    pub fn agent_scoped(&self) -> bool {
        crate::build::agent_scoped(&self.type_)
    }
}

impl Serialize for MappedEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = 2 + usize::from(self.subject.is_some()) + usize::from(self.step.is_some());
        let mut map = serializer.serialize_map(Some(len))?;
        map.serialize_entry("type", &self.type_)?;
        map.serialize_entry("data", &self.data)?;
        if let Some(subject) = &self.subject {
            map.serialize_entry("subject", subject)?;
        }
        if let Some(step) = &self.step {
            map.serialize_entry("step", step)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_members_are_left_out_and_data_is_always_there() {
        let event = MappedEvent {
            type_: "run.finished".into(),
            data: Object::new(),
            subject: None,
            step: None,
            capture: Capture::Metadata,
        };
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            r#"{"type":"run.finished","data":{}}"#
        );
        let event = MappedEvent {
            subject: Some("plan".into()),
            step: Some("plan".into()),
            ..event
        };
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            r#"{"type":"run.finished","data":{},"subject":"plan","step":"plan"}"#
        );
    }
}
