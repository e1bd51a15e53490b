//! Legal oddities become usable Rust: the field and variant names below
//! are the generator's naming rules at work (this file would not compile
//! otherwise), and every instance round-trips to the same JSON value.

use aep_oddities::odd_names::OddValues;
use aep_oddities::odd_shapes::{
    AnythingScalar, IntegerOrNumber, NumberOrBoolean, ObjectOrString, StringOrInteger,
};
use aep_oddities::{Event, Payload, Severity};
use serde_json::{json, Value};

fn event(event_type: &str, data: Value) -> Value {
    json!({"aep": "9.9", "type": event_type, "tag": "t", "data": data})
}

/// Decodes, types and re-encodes; returns the payload.
fn round_trip(value: &Value) -> Payload {
    let event: Event = serde_json::from_value(value.clone()).expect("the event decodes");
    let payload = event.payload().expect("the payload types");
    assert_eq!(
        &serde_json::to_value(&event).expect("encodes"),
        value,
        "event round trip"
    );
    assert_eq!(
        &serde_json::to_value(&payload).expect("encodes"),
        &value["data"],
        "payload round trip"
    );
    payload
}

#[test]
fn names_that_are_not_identifiers() {
    let value = event(
        "odd.names",
        json!({
            "type": "t", "self": true, "match": -4, "gen_ai.usage.input_tokens": 12,
            "content-type": "text/plain", "with space": "s", "2fa": "123456", "_private": "p",
            "$dollar": "d", "Mixed-Case.Name": "m", "odd values": "", "fixed": "exactly this",
            "local": {"fn": "f"}, "unknown member": [1, {"x": null}]
        }),
    );
    let Payload::OddNames(p) = round_trip(&value) else {
        panic!("wrong variant")
    };
    assert_eq!((p.type_.as_str(), p.self_, p.match_), ("t", true, Some(-4)));
    assert_eq!(p.gen_ai_usage_input_tokens, Some(12));
    assert_eq!(p.content_type.as_deref(), Some("text/plain"));
    assert_eq!(p.with_space.as_deref(), Some("s"));
    assert_eq!(p._2fa.as_deref(), Some("123456"));
    assert_eq!(p.private.as_deref(), Some("p"));
    assert_eq!(p.dollar.as_deref(), Some("d"));
    assert_eq!(p.mixed_case_name.as_deref(), Some("m"));
    assert_eq!(p.odd_values, Some(OddValues::Empty));
    assert_eq!(p.local.map(|l| l.fn_), Some("f".to_owned()));
    assert_eq!(p.extra["unknown member"], json!([1, {"x": null}]));
}

#[test]
fn enum_values_that_are_not_identifiers() {
    let expected = [
        ("", OddValues::Empty),
        ("2xx", OddValues::V2xx),
        ("self", OddValues::Self_),
        ("match", OddValues::Match),
        ("a.b", OddValues::AB),
        ("Upper", OddValues::Upper),
        ("snake_case", OddValues::SnakeCase),
        ("err", OddValues::Err),
        ("ok", OddValues::Ok),
    ];
    for (json, variant) in expected {
        let value = event(
            "odd.names",
            json!({"type": "t", "self": false, "odd values": json}),
        );
        let Payload::OddNames(p) = round_trip(&value) else {
            panic!("wrong variant")
        };
        assert_eq!(p.odd_values, Some(variant));
        assert_eq!(variant.as_str(), json);
        assert_eq!(json.parse(), Ok(variant));
    }
    assert_eq!(OddValues::ALL.len(), expected.len());
}

#[test]
fn deep_nesting_arrays_of_arrays_and_numbers() {
    let value = event(
        "odd.shapes",
        json!({
            "deep": {"a": {"b": {"c": {"d": {"leaf": 2.5}, "more": 1}}}},
            "grid": [[{"x": 1}, {"x": -0.5}], [], [{"x": 3, "y": "kept"}]],
            "numbers": [1, 2.5, -3, 1e-7],
            "matrix": [[1, 2], [0.25]],
            "free": [{}, {"k": [true]}],
            "tags": ["x", "y", "x"],
            "kind": "plain"
        }),
    );
    let Payload::OddShapes(p) = round_trip(&value) else {
        panic!("wrong variant")
    };
    let leaf = p
        .deep
        .and_then(|d| d.a)
        .and_then(|a| a.b)
        .and_then(|b| b.c)
        .and_then(|c| c.d)
        .and_then(|d| d.leaf);
    assert_eq!(leaf, Some(2.5));
    let grid = p.grid.expect("grid");
    assert_eq!(grid[0][1].x, -0.5);
    assert_eq!(grid[2][0].extra["y"], "kept");
    assert_eq!(p.numbers, Some(vec![1.0, 2.5, -3.0, 1e-7]));
}

#[test]
fn every_primitive_type_list() {
    let value = event(
        "odd.shapes",
        json!({
            "object_or_string": {"a": 1},
            "string_or_integer": 7,
            "integer_or_number": 7.5,
            "number_or_boolean": 7,
            "anything_scalar": false
        }),
    );
    let Payload::OddShapes(p) = round_trip(&value) else {
        panic!("wrong variant")
    };
    assert!(matches!(
        p.object_or_string,
        Some(ObjectOrString::Object(_))
    ));
    assert_eq!(p.string_or_integer, Some(StringOrInteger::Integer(7)));
    assert_eq!(p.integer_or_number, Some(IntegerOrNumber::Number(7.5)));
    assert_eq!(p.number_or_boolean, Some(NumberOrBoolean::Number(7.0)));
    assert_eq!(p.anything_scalar, Some(AnythingScalar::Boolean(false)));

    for (member, json, wrong) in [
        ("object_or_string", json!("s"), json!(1)),
        ("string_or_integer", json!("s"), json!(1.5)),
        ("integer_or_number", json!(3), json!("3")),
        ("number_or_boolean", json!(true), json!({})),
        ("anything_scalar", json!({"o": 1}), json!([1])),
    ] {
        round_trip(&event("odd.shapes", json!({ member: json })));
        let bad: Event = serde_json::from_value(event("odd.shapes", json!({ member: wrong })))
            .expect("envelope");
        let error = bad.payload().expect_err(member);
        assert_eq!(
            error.pointer(),
            Some(format!("/data/{member}").as_str()),
            "{error}"
        );
    }
}

#[test]
fn the_registry_of_another_protocol_version() {
    let reserved = round_trip(&event("odd.reserved", json!({"anything": [1, 2]})));
    assert!(matches!(reserved, Payload::Untyped(_)));
    assert_eq!(aep_oddities::AEP_VERSION, "9.9");
    assert!(Severity::Low < Severity::High);
    let bare: Event =
        serde_json::from_value(json!({"aep": "9.9", "type": "odd.names"})).expect("decodes");
    assert_eq!(bare.severity_or_default(), Severity::Low);
    let long =
        serde_json::from_value::<Event>(json!({"aep": "9.9", "type": "x", "toolongname": "v"}));
    assert!(long
        .expect_err("name rule")
        .to_string()
        .contains("invalid extension attribute name `toolongname`"));
}

#[test]
fn objects_in_the_envelope_are_validated() {
    let good: Event = serde_json::from_value(
        json!({"aep": "9.9", "type": "odd.names", "trace": {"tid": "00af"}}),
    )
    .expect("decodes");
    assert_eq!(good.validate(), Ok(()));
    let bad: Event = serde_json::from_value(
        json!({"aep": "9.9", "type": "odd.names", "trace": {"tid": "NOT HEX"}}),
    )
    .expect("decodes");
    let violations = bad.validate().expect_err("the pattern is checked").0;
    assert_eq!(violations.len(), 1);
    assert_eq!(violations[0].pointer, "/trace/tid");
}

#[test]
fn large_integral_numbers_stay_integers() {
    let value = event(
        "odd.shapes",
        json!({"numbers": [1152921504606846976u64, -4611686018427387904i64, 0.5]}),
    );
    round_trip(&value);
}
