//! The OTLP export (AEP-0005 §3, §5.3) against hand-written fixtures.

use std::path::PathBuf;

use aep::bridge::otlp::{
    severity, severity_from_number, to_log_record, LogRecord, Options, OtlpError, TraceContext,
};
use aep::{Capture, Event, Severity};
use serde_json::Value;

fn fixtures() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bridge/otlp.json");
    let text = std::fs::read_to_string(path).expect("the OTLP fixtures");
    serde_json::from_str(&text).expect("the fixtures are JSON")
}

fn event(value: &Value) -> Event {
    serde_json::from_str(&value.to_string()).expect("a fixture event decodes")
}

fn record(e: &Event, options: &Options) -> Value {
    let record: LogRecord =
        to_log_record(e, options).unwrap_or_else(|err| panic!("{}: {err}", e.id));
    serde_json::to_value(record).expect("encodes")
}

#[test]
fn records_follow_the_field_mapping() {
    for case in fixtures()["records"].as_array().expect("cases") {
        let name = case["name"].as_str().unwrap();
        let got = record(&event(&case["event"]), &Options::default());
        assert_eq!(got, case["expected"], "{name}");
        // The data model's members, in the data model's spelling.
        let members: Vec<&str> = got
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for member in members {
            assert!(
                [
                    "time_unix_nano",
                    "event_name",
                    "severity_text",
                    "severity_number",
                    "resource",
                    "attributes",
                    "trace_id",
                    "span_id",
                    "flags",
                    "body"
                ]
                .contains(&member),
                "{name}: {member}"
            );
        }
    }
}

/// A `full` event at each ceiling: whole at `full`, its envelope alone
/// (and its own `capture`) below.
#[test]
fn each_max_capture_level() {
    let fixtures = fixtures();
    let cases = &fixtures["max_capture"];
    let e = event(&cases["event"]);
    let expected = |capture: Capture| {
        let level = &cases["levels"][capture.as_str()];
        let mut expected = cases["common"].clone();
        let object = expected.as_object_mut().unwrap();
        object.insert("attributes".into(), level["attributes"].clone());
        if let Some(body) = level.get("body") {
            object.insert("body".into(), body.clone());
        }
        expected
    };
    for capture in Capture::ALL {
        let options = Options {
            max_capture: capture,
            ..Options::default()
        };
        assert_eq!(
            record(&e, &options),
            expected(capture),
            "max_capture {capture}"
        );
    }
    // The default ceiling is `metadata`.
    assert_eq!(record(&e, &Options::default()), expected(Capture::Metadata));
}

#[test]
fn each_severity_both_ways() {
    let fixtures = fixtures();
    for row in fixtures["severities"].as_array().unwrap() {
        let aep: Severity = row[0].as_str().unwrap().parse().unwrap();
        let (text, number) = (row[1].as_str().unwrap(), row[2].as_i64().unwrap() as i32);
        assert_eq!(severity(aep), (text, number), "{aep}");
        assert_eq!(severity_from_number(number), Some(aep), "{aep}");
        let mut e = Event::new("s", "agent.idle", "2026-11-30T12:00:00Z", "urn:x", "a");
        e.severity = Some(aep);
        let got = record(&e, &Options::default());
        assert_eq!(got["severity_text"], text);
        assert_eq!(got["severity_number"], number);
    }
    let buckets = fixtures["buckets"].as_array().unwrap();
    for number in -1..=26 {
        let expected = buckets
            .iter()
            .find(|b| (b[0].as_i64().unwrap()..=b[1].as_i64().unwrap()).contains(&number.into()))
            .map(|b| b[2].as_str().unwrap().parse::<Severity>().unwrap());
        assert_eq!(severity_from_number(number), expected, "{number}");
    }
}

#[test]
fn refusals_name_the_attribute() {
    for case in fixtures()["refused"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let error = to_log_record(&event(&case["event"]), &Options::default()).expect_err(name);
        let kind = match &error {
            OtlpError::Time(_) => "Time",
            OtlpError::Traceparent(_) => "Traceparent",
            OtlpError::Data(_) => "Data",
            _ => "other",
        };
        assert_eq!(kind, case["error"].as_str().unwrap(), "{name}");
        assert!(error.to_string().contains("`"), "{error}");
    }
}

#[test]
fn the_service_name_can_be_overridden() {
    let e = Event::new("o", "agent.idle", "2026-11-30T12:00:00Z", "urn:x", "a");
    let options = Options {
        service_name: Some("relay-7".into()),
        ..Options::default()
    };
    let got = record(&e, &options);
    assert_eq!(got["resource"]["service.name"], "relay-7");
    assert_eq!(got["attributes"]["aep.agent_id"], "a");
}

#[test]
fn traceparent_fields() {
    let parsed = TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03")
        .expect("valid");
    assert_eq!(parsed.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(parsed.span_id, "00f067aa0ba902b7");
    assert_eq!(parsed.flags, 3);
    // A later version may append fields; version 00 may not.
    assert!(
        TraceContext::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-ext")
            .is_some()
    );
    assert!(
        TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-ext")
            .is_none()
    );
    assert!(
        TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01").is_none()
    );
    assert!(
        TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01").is_none()
    );
    assert!(TraceContext::parse("").is_none());
}

/// The wire form (cargo feature `otlp-proto`) carries the same fields.
#[cfg(feature = "otlp-proto")]
#[test]
fn the_wire_form_carries_the_data_model() {
    use opentelemetry_proto::tonic::common::v1::any_value::Value as V;
    let fixtures = fixtures();
    let case = &fixtures["records"][0];
    let data_model = to_log_record(&event(&case["event"]), &Options::default()).unwrap();
    let wire = data_model.to_proto();
    assert_eq!(wire.time_unix_nano, 1_796_040_004_221_000_000);
    assert_eq!(wire.event_name, "dev.aep.tool.completed");
    assert_eq!(
        (wire.severity_text.as_str(), wire.severity_number),
        ("INFO", 9)
    );
    assert_eq!(
        wire.trace_id,
        [
            0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e,
            0x47, 0x36
        ]
    );
    assert_eq!(
        wire.span_id,
        [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]
    );
    assert_eq!(wire.flags, 1);
    let attribute = |key: &str| {
        wire.attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.clone())
            .and_then(|v| v.value)
    };
    assert_eq!(attribute("aep.sequence"), Some(V::IntValue(187)));
    assert_eq!(
        attribute("aep.session_id"),
        Some(V::StringValue("s_8f2c".into()))
    );
    assert_eq!(
        attribute("gen_ai.usage.input_tokens"),
        Some(V::IntValue(142))
    );
    assert_eq!(wire.attributes.len(), 13);
    let Some(V::KvlistValue(body)) = wire.body.and_then(|b| b.value) else {
        panic!("the body is a map");
    };
    // Member order follows the JSON map (insertion order only with
    // serde_json's `preserve_order`), so compare the members as a set.
    let mut keys: Vec<&str> = body.values.iter().map(|kv| kv.key.as_str()).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["duration_ms", "status", "tool"]);
    let member = |kvs: &[opentelemetry_proto::tonic::common::v1::KeyValue], key: &str| {
        kvs.iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.clone())
            .and_then(|v| v.value)
    };
    let Some(V::KvlistValue(tool)) = member(&body.values, "tool") else {
        panic!("tool is a map");
    };
    assert!(member(&tool.values, "call_id").is_some());
    let resource = data_model.resource_proto();
    assert_eq!(resource.attributes.len(), 1);
    assert_eq!(
        resource.attributes[0].value.clone().and_then(|v| v.value),
        Some(V::StringValue("claude-code".into()))
    );
    // No trace context: empty ids and zero flags, as OTLP spells "none".
    let bare = Event::new("b", "agent.idle", "2026-11-30T12:00:00Z", "urn:x", "a");
    let wire = to_log_record(&bare, &Options::default())
        .unwrap()
        .to_proto();
    assert!(wire.trace_id.is_empty() && wire.span_id.is_empty() && wire.flags == 0);
    assert!(wire.body.is_none());
}

/// A `tool.failed` at capture `redacted` whose payload has a member of
/// each kind: structural, redacted-level free text, and `gen_ai.*`.
fn redacted_tool_failed() -> Event {
    serde_json::from_str(
        r#"{"aep":"0.1","id":"f1","type":"tool.failed","subject":"Write",
            "time":"2026-11-30T12:00:00Z","source":"aep://h/agent/a","agent":"a",
            "session":"s","seq":4,"severity":"error","capture":"redacted",
            "data":{"tool":{"name":"Write","call_id":"t_3"},"duration_ms":310,
                    "error":{"type":"io_error","message":"ENOSPC writing /srv/out.log"},
                    "gen_ai.usage.input_tokens":12}}"#,
    )
    .expect("the event decodes")
}

/// AEP-0005 §3.3 as the published pins read it: an event above the
/// exporter's ceiling leaves as its envelope alone. No member of its
/// payload is exported, not even the ones a down-levelled copy would keep,
/// and `aep.capture` is the event's own level.
#[test]
fn an_event_above_the_ceiling_is_exported_from_its_envelope_alone() {
    let e = redacted_tool_failed();
    for max_capture in [Capture::None, Capture::Metadata] {
        let options = Options {
            max_capture,
            ..Options::default()
        };
        let got = record(&e, &options);
        assert_eq!(got.get("body"), None, "max_capture {max_capture}");
        assert_eq!(
            got["attributes"],
            serde_json::json!({
                "aep.event_id": "f1", "aep.source": "aep://h/agent/a", "aep.subject": "Write",
                "aep.agent_id": "a", "aep.session_id": "s", "aep.sequence": 4,
                "aep.capture": "redacted"
            }),
            "max_capture {max_capture}"
        );
    }
    // At or below the ceiling, the payload is exported as it is.
    for max_capture in [Capture::Redacted, Capture::Full] {
        let options = Options {
            max_capture,
            ..Options::default()
        };
        let got = record(&e, &options);
        assert_eq!(got["attributes"]["gen_ai.usage.input_tokens"], 12);
        assert_eq!(
            got["body"]["error"]["message"],
            "ENOSPC writing /srv/out.log"
        );
        assert_eq!(got["attributes"]["aep.capture"], "redacted");
    }
}
