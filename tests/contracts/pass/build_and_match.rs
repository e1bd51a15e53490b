//! Build an event with a typed payload and extension attributes, then
//! decode it and match exhaustively on its payload.

use aep_types::{
    Capture, Event, ExtensionName, ExtensionValue, Object, Payload, RegisteredType, Severity, ToolRef, ToolRequested,
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
    event.extensions.insert(ExtensionName::new("region").unwrap(), ExtensionValue::String("eu".into()));
    event.extensions.insert(ExtensionName::new("retries").unwrap(), ExtensionValue::Integer(2));
    let payload = ToolRequested {
        tool: ToolRef { name: "Bash".into(), call_id: Some("c1".into()), extra: Object::new() },
        args_digest: None,
        args_redacted: None,
        args: Some(Object::new()),
        extra: Object::new(),
    };
    event.set_payload(&Payload::ToolRequested(payload));
    event.validate().unwrap();

    let text = serde_json::to_string(&event).unwrap();
    let decoded: Event = serde_json::from_str(&text).unwrap();
    assert_eq!(decoded.registered_type(), Some(RegisteredType::ToolRequested));
    assert_eq!(describe(&decoded.payload().unwrap()), "tool");
    assert_eq!(decoded.down_level(Capture::Metadata).capture, Some(Capture::Metadata));
}
