//! Build an event with a typed payload and extension attributes, then
//! decode it and match exhaustively on its payload.

use std::collections::HashSet;

use aep_types::attention_requested::{Kind, RespondVia};
use aep_types::{
    AttentionRequested, Capture, Event, ExtensionName, ExtensionValue, Object, Payload, RegisteredType, RunStarted,
    Severity, ToolRef, ToolRequested,
};

fn describe(payload: &Payload) -> &'static str {
    match payload {
        Payload::ToolRequested(_) | Payload::ToolCompleted(_) | Payload::ToolFailed(_) | Payload::ToolDenied(_) => "tool",
        Payload::AttentionRequested(request) if request.fields.is_some() => "form",
        Payload::Untyped(_) => "untyped",
        _ => "other",
    }
}

fn main() {
    let mut event = Event::new("e1", "tool.requested", "2026-11-30T12:00:00Z", "urn:aep:agent:t", "t");
    event.session = Some("s1".to_owned());
    event.seq = Some(0);
    event.severity = Some(Severity::Notice);
    event.capture = Some(Capture::Full);
    event.extensions.insert(ExtensionName::new("region").unwrap(), ExtensionValue::from("eu"));
    event.extensions.insert(ExtensionName::new("retries").unwrap(), ExtensionValue::from(2));
    // Constructors take the required members; optional ones are set after.
    let mut tool = ToolRef::new("Bash");
    tool.call_id = Some("c1".into());
    let mut payload = ToolRequested::new(tool.clone());
    payload.args = Some(Object::new());
    event.set_payload(&Payload::ToolRequested(payload)).unwrap();
    event.validate().unwrap();

    let text = serde_json::to_string(&event).unwrap();
    let decoded: Event = serde_json::from_str(&text).unwrap();
    assert_eq!(decoded.registered_type(), Some(RegisteredType::ToolRequested));
    assert_eq!(describe(&decoded.payload().unwrap()), "tool");
    assert_eq!(decoded.down_level(Capture::Metadata).capture, Some(Capture::Metadata));

    // Nested types are named through their payload's module.
    let mut request = AttentionRequested::new(Kind::Permission, "Run `ls`?");
    request.respond_via = Some(vec![RespondVia::Control]);
    // Every member optional: `Default`.
    let _started = RunStarted::default();
    // Value types without numbers are `Eq` and `Hash`.
    let tools: HashSet<ToolRef> = [tool.clone(), tool].into_iter().collect();
    assert_eq!(tools.len(), 1);
    // Schema enums are `#[non_exhaustive]`: a match needs a wildcard.
    let word = match Kind::Permission {
        Kind::Permission => "permission",
        _ => "other",
    };
    assert_eq!(word, "permission");
    assert_eq!(ExtensionValue::from(true), ExtensionValue::Boolean(true));
    assert_eq!(ExtensionValue::from(String::from("x")), ExtensionValue::String("x".into()));
}
