//! The envelope's promises beyond the fixture corpus: extension names are
//! checked when made, extensions and unknown members survive, defaults
//! come from the registry, and the registry facts are Rust values.

use aep_types::{
    Capture, Category, CategoryScope, Event, ExtensionName, ExtensionValue, NackReason, Payload,
    RegisteredType, Scope, Severity, Status, MANDATORY,
};
use serde_json::{json, Value};

const BASE: &str = r#""aep":"0.1","id":"e1","type":"run.started","time":"2026-11-30T12:00:00Z","source":"urn:aep:agent:t","agent":"t","session":"s","seq":0"#;

fn decode(members: &str) -> Result<Event, String> {
    serde_json::from_str(&format!("{{{BASE}{members}}}")).map_err(|e| e.to_string())
}

#[test]
fn extension_names_are_checked_when_made() {
    assert_eq!(
        ExtensionName::new("host").map(|n| n.to_string()),
        Ok("host".to_owned())
    );
    assert!(
        ExtensionName::new("a1b2c3d4e5f6g7h8i9j0").is_ok(),
        "20 characters"
    );
    for bad in ["", "Host", "a-b", "time", "data", "a1b2c3d4e5f6g7h8i9j0k"] {
        let error = ExtensionName::new(bad).expect_err(bad);
        assert!(error.to_string().contains(&format!("`{bad}`")), "{error}");
    }
}

#[test]
fn extensions_and_unknown_members_survive_a_round_trip() {
    let line = format!(
        r#"{{{BASE},"zone":"eu","retries":-3,"big":9007199254740993,"canary":true,"data":{{"trigger":"user","vendor":{{"k":[1,2]}}}}}}"#
    );
    let event: Event = serde_json::from_str(&line).expect("decodes");
    assert_eq!(
        event.extensions.get("retries"),
        Some(&ExtensionValue::Integer(-3))
    );
    assert_eq!(
        event.extensions.get("canary"),
        Some(&ExtensionValue::Boolean(true))
    );
    let Payload::RunStarted(payload) = event.payload().expect("types") else {
        panic!("wrong variant")
    };
    assert_eq!(payload.extra["vendor"], json!({"k": [1, 2]}));
    let original: Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(serde_json::to_value(&event).expect("encodes"), original);
}

#[test]
fn duplicate_payload_members_are_refused_with_their_place() {
    let event =
        decode(r#","data":{"trigger":"user","trigger":"agent"}"#).expect("the envelope is fine");
    let error = event.payload().expect_err("duplicate member");
    assert_eq!(
        error.pointer(),
        Some("/data"),
        "the object holding the duplicate"
    );
    assert!(
        error.to_string().contains("duplicate field `trigger`"),
        "{error}"
    );
}

#[test]
fn built_events_encode_with_defaults_left_absent() {
    let mut event = Event::new(
        "e9",
        "agent.presence",
        "2026-11-30T12:00:00Z",
        "urn:aep:agent:t",
        "t",
    );
    assert_eq!(event.epoch_or_default(), 0);
    assert_eq!(event.severity_or_default(), Severity::Info);
    assert_eq!(event.capture_or_default(), Capture::Metadata);
    event.extensions.insert(
        ExtensionName::new("host").expect("valid"),
        ExtensionValue::String("h1".into()),
    );
    let payload: Payload = Payload::from_data(
        "agent.presence",
        Some(&aep_types::Data::from_json(r#"{"state":"busy"}"#).unwrap()),
    )
    .expect("types");
    event.set_payload(&payload).expect("encodes");
    assert_eq!(
        serde_json::to_value(&event).expect("encodes"),
        json!({"aep": "0.1", "id": "e9", "type": "agent.presence", "time": "2026-11-30T12:00:00Z",
               "source": "urn:aep:agent:t", "agent": "t", "host": "h1", "data": {"state": "busy"}})
    );
    event.severity = Some(Severity::Error);
    assert_eq!(event.severity_or_default(), Severity::Error);
}

#[test]
fn types_without_a_schema_keep_their_data() {
    for event_type in ["message.user.submitted", "x.acme.tool.scan", "tool.retried"] {
        let data = aep_types::Data::from_json(r#"{"text":"hi","n":[1]}"#).expect("object");
        match Payload::from_data(event_type, Some(&data)).expect(event_type) {
            Payload::Untyped(kept) => assert_eq!(kept.get(), r#"{"text":"hi","n":[1]}"#),
            other => panic!("{event_type}: {other:?}"),
        }
    }
}

#[test]
fn registry_facts_are_rust_values() {
    assert_eq!(RegisteredType::ALL.len(), 46);
    assert_eq!(
        RegisteredType::ALL
            .iter()
            .filter(|t| t.schema().is_some())
            .count(),
        44
    );
    assert_eq!(MANDATORY.len(), 14);
    assert!(MANDATORY.iter().all(|t| t.status() == Status::Mandatory));
    assert_eq!(
        RegisteredType::MessageUserSubmitted.status(),
        Status::Reserved
    );
    assert_eq!(RegisteredType::ControlCancel.scope(), Scope::Command);
    assert_eq!(RegisteredType::AgentHeartbeat.scope(), Scope::Agent);
    assert_eq!("tool.requested".parse(), Ok(RegisteredType::ToolRequested));
    assert_eq!(
        RegisteredType::ToolRequested.schema(),
        Some("types/tool.requested.schema.json")
    );

    assert!(Severity::Debug < Severity::Info && Severity::Error < Severity::Critical);
    assert_eq!(Severity::default(), Severity::Info);
    assert_eq!(Severity::Warning.otlp_severity_number(), 13);
    assert_eq!(Severity::Critical.ocsf_severity_id(), 5);
    assert!(Capture::None < Capture::Metadata && Capture::Redacted < Capture::Full);
    assert_eq!(Capture::default(), Capture::Metadata);
    assert_eq!(
        NackReason::ALL.map(NackReason::as_str),
        ["unsupported", "unauthorized", "busy", "refused", "invalid"]
    );

    assert_eq!(Category::of("x.acme.tool.scan"), Some(Category::X));
    assert_eq!(Category::X.scope(), CategoryScope::Any);
    assert_eq!(Category::of("nope.thing"), None);
}

#[test]
fn envelope_errors_name_the_attribute_by_pointer() {
    let line = format!(r#"{{{}}}"#, BASE.replace(r#""seq":0"#, r#""seq":-3"#));
    let error = Event::from_json(&line).expect_err("a negative seq");
    assert_eq!(error.pointer(), Some("/seq"));
    let text = error.to_string();
    assert!(
        text.contains("`/seq`")
            && text.contains("expected a non-negative integer")
            && text.contains("-3"),
        "{text}"
    );

    let line = format!(
        r#"{{{}}}"#,
        BASE.replace(r#""aep":"0.1""#, r#""aep":"0.2""#)
    );
    let error = Event::from_json(&line).expect_err("another version");
    assert_eq!(error.pointer(), Some("/aep"));
    let text = error.to_string();
    assert!(
        text.contains("`/aep`") && text.contains("`0.2`") && text.contains("`0.1`"),
        "{text}"
    );

    // The reader reports the same error, with the line number.
    let stream = format!("{line}\n");
    let failure = aep_types::reader::EventReader::new(stream.as_bytes())
        .next()
        .expect("one line")
        .expect_err("refused");
    assert_eq!(failure.line(), 1);
    assert_eq!(
        failure.decode_error().and_then(|e| e.pointer()),
        Some("/aep")
    );
}

#[test]
fn scoping_violations_say_the_rule_in_words() {
    let mut event = Event::new(
        "e1",
        "control.cancel",
        "2026-11-30T12:00:00Z",
        "urn:a:b",
        "t",
    );
    event.session = Some("s".into());
    event.seq = Some(4);
    let violations = event.validate().expect_err("a command with seq").0;
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!(violations[0].pointer, "/seq");
    assert_eq!(
        violations[0].message,
        "must be absent when `type` is one of control.attention.respond, control.cancel, \
         control.pause, control.resume, x.*.control.* or attention.routed"
    );
}

#[test]
fn enums_take_a_json_string_and_nothing_else() {
    // serde's externally tagged form of a unit variant, `{"value": null}`.
    for (attribute, value) in [("severity", "error"), ("capture", "full"), ("aep", "0.1")] {
        let base = BASE.replace(r#""aep":"0.1","#, "");
        let line = format!(r#"{{{base},"aep":"0.1","{attribute}":{{"{value}":null}}}}"#)
            .replace(r#""aep":"0.1","aep":"#, r#""aep":"#);
        let error = Event::from_json(&line).expect_err(attribute);
        assert_eq!(
            error.pointer(),
            Some(format!("/{attribute}").as_str()),
            "{error}"
        );
        assert!(error.to_string().contains("invalid type: map"), "{error}");
    }
    let payloads = [
        (
            "attention.requested",
            r#"{"kind":{"form":null},"prompt":"p"}"#,
            "/data/kind",
        ),
        (
            "attention.requested",
            r#"{"kind":"form","prompt":"p","fields":[{"id":"a","label":"A","type":{"text":null}}]}"#,
            "/data/fields/0/type",
        ),
        (
            "attention.requested",
            r#"{"kind":"permission","prompt":"p","respond_via":[{"control":null}]}"#,
            "/data/respond_via/0",
        ),
        (
            "control.rejected",
            r#"{"reason":{"unsupported":null}}"#,
            "/data/reason",
        ),
    ];
    for (event_type, data, pointer) in payloads {
        let data = aep_types::Data::from_json(data).expect("an object");
        let error = Payload::from_data(event_type, Some(&data)).expect_err(pointer);
        assert_eq!(error.pointer(), Some(pointer), "{error}");
        assert!(error.to_string().contains("invalid type: map"), "{error}");
    }
    // What a plain string decodes to is written back as that string.
    assert_eq!(
        serde_json::to_string(&Severity::Error).unwrap(),
        r#""error""#
    );
    assert_eq!(
        serde_json::from_str::<NackReason>(r#""unsupported""#)
            .expect("a plain string")
            .as_str(),
        "unsupported"
    );
}
