//! Encoding never produces what the crate refuses to read: a member the
//! schema describes cannot also be written from `extra`, a non-finite
//! number is an error rather than `null`, `set_payload` keeps `type` and
//! `data` in agreement, and untyped data is kept as it came.

use aep_types::{Data, Event, Payload};
use serde_json::json;

fn payload(event_type: &str, data: &str) -> Payload {
    let data = Data::from_json(data).expect("an object");
    Payload::from_data(event_type, Some(&data)).expect("decodes")
}

fn heartbeat() -> Event {
    Event::new(
        "e1",
        "agent.heartbeat",
        "2026-11-30T12:00:00Z",
        "urn:aep:agent:t",
        "t",
    )
}

#[test]
fn a_described_member_in_extra_is_refused_naming_it() {
    let Payload::ToolRequested(mut p) = payload("tool.requested", r#"{"tool":{"name":"Bash"}}"#)
    else {
        panic!("typed")
    };
    p.extra.insert("tool".into(), json!({"name": "Other"}));
    let error = Payload::ToolRequested(p.clone())
        .to_data()
        .expect_err("`tool` would be written twice");
    assert!(error.to_string().starts_with("/data/tool: "), "{error}");
    assert!(serde_json::to_string(&p).is_err(), "the struct alone too");

    // Nested: `tool.name` both as the field and inside `tool.extra`.
    p.extra.clear();
    p.tool.extra.insert("name".into(), json!("Other"));
    let error = serde_json::to_string(&p).expect_err("`name` twice");
    assert!(error.to_string().starts_with("/tool/name: "), "{error}");

    // A name the schema does not describe is written as it is.
    p.tool.extra.clear();
    p.extra.insert("vendor".into(), json!(1));
    assert_eq!(
        serde_json::to_value(&p).expect("encodes"),
        json!({"tool": {"name": "Bash"}, "vendor": 1})
    );
}

#[test]
fn non_finite_numbers_are_an_error_not_null() {
    let text = r#"{"trigger":"user","cost":{"currency":"USD","total":0.5}}"#;
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let Payload::RunStarted(mut p) = payload("run.started", text) else {
            panic!("typed")
        };
        p.cost.as_mut().expect("cost").total = Some(bad);
        let error = serde_json::to_string(&p).expect_err("not a JSON number");
        let message = error.to_string();
        assert!(
            message.starts_with("/cost/total: ") && message.contains("not a JSON number"),
            "{message}"
        );
        let mut event = heartbeat();
        assert!(event.set_payload(&Payload::RunStarted(p)).is_err());
        assert_eq!(event, heartbeat(), "a failed set_payload changes nothing");
    }
}

#[test]
fn set_payload_sets_the_type_the_payload_follows() {
    let mut event = heartbeat();
    event
        .set_payload(&payload("tool.requested", r#"{"tool":{"name":"Bash"}}"#))
        .expect("encodes");
    assert_eq!(event.type_, "tool.requested");
    assert!(matches!(event.payload(), Ok(Payload::ToolRequested(_))));

    // Untyped data has no type of its own: the event keeps its type.
    let mut event = heartbeat();
    event.type_ = "x.acme.tool.scan".into();
    event
        .set_payload(&payload("x.acme.tool.scan", r#"{"a":1}"#))
        .expect("encodes");
    assert_eq!(event.type_, "x.acme.tool.scan");
}

#[test]
fn untyped_data_is_kept_as_it_is_never_an_error() {
    let text = r#"{"a": 1e400, "b": -0.0, "c": 12345678901234567890123}"#;
    let Payload::Untyped(kept) = payload("x.acme.tool.scan", text) else {
        panic!("no schema, so untyped")
    };
    assert_eq!(kept.get(), text, "byte for byte");
    let line = format!(
        r#"{{"aep":"0.1","id":"e1","type":"x.acme.tool.scan","time":"2026-11-30T12:00:00Z","source":"urn:a:b","agent":"t","session":"s","seq":0,"data":{text}}}"#
    );
    let event = Event::from_json(&line).expect("decodes");
    event.validate().expect("untyped data is valid as it is");
    assert_eq!(
        serde_json::to_string(&event.payload().expect("untyped")).expect("encodes"),
        text
    );
    assert_eq!(serde_json::to_string(&event).expect("encodes"), line);
}

#[test]
fn an_encoding_error_names_the_array_item_from_the_event_root() {
    let text = r#"{"kind":"form","prompt":"p","fields":[
        {"id":"a","type":"number","label":"A"},
        {"id":"b","type":"number","label":"B","max":10}]}"#;
    let Payload::AttentionRequested(mut p) = payload("attention.requested", text) else {
        panic!("typed")
    };
    p.fields.as_mut().expect("fields")[1].max = Some(f64::INFINITY);
    let error = Payload::AttentionRequested(p)
        .to_data()
        .expect_err("not a JSON number");
    assert!(
        error.to_string().starts_with("/data/fields/1/max: "),
        "{error}"
    );
}
