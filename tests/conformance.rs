//! The fixture corpus: valid events decode, type and round-trip; invalid
//! envelopes and payloads are refused with the message (and, for
//! payloads, the pointer) each case pins.

use aep_tests::{read_fixture, Report};
use aep_types::{Event, Payload};
use serde_json::Value;

/// Decodes one line and checks everything a valid event promises.
fn check_valid(line: &str) -> Result<(), String> {
    let original: Value =
        serde_json::from_str(line).map_err(|e| format!("fixture is not JSON: {e}"))?;
    let event: Event = serde_json::from_str(line).map_err(|e| format!("decode: {e}"))?;
    let payload = event.payload().map_err(|e| format!("payload: {e}"))?;
    let has_schema = event.registered_type().and_then(|t| t.schema()).is_some();
    let untyped = matches!(payload, Payload::Untyped(_));
    if has_schema == untyped {
        return Err(format!(
            "has a schema: {has_schema}, but the payload is untyped: {untyped}"
        ));
    }
    if payload.event_type().is_some_and(|t| t != event.type_) {
        return Err(format!(
            "payload of `{:?}` for a `{}` event",
            payload.event_type(),
            event.type_
        ));
    }
    let encoded = serde_json::to_value(&event).map_err(|e| format!("encode: {e}"))?;
    if encoded != original {
        return Err(format!(
            "round trip changed the event:\n  in:  {original}\n  out: {encoded}"
        ));
    }
    let data = original
        .get("data")
        .cloned()
        .unwrap_or_else(|| Value::Object(Default::default()));
    let typed = serde_json::to_value(&payload).map_err(|e| format!("encode payload: {e}"))?;
    if typed != data {
        return Err(format!(
            "payload round trip changed data:\n  in:  {data}\n  out: {typed}"
        ));
    }
    Ok(())
}

#[test]
fn valid_events_decode_type_and_round_trip() {
    let text = read_fixture("valid.jsonl");
    let mut report = Report::default();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        report.case(format!("valid.jsonl:{}", i + 1), check_valid(line));
    }
    let cases = report.finish("valid.jsonl");
    assert!(cases >= 46, "the corpus covers every registered type");
}

#[test]
fn every_registered_type_is_in_the_corpus() {
    let text = read_fixture("valid.jsonl");
    let seen: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["type"].as_str().map(str::to_owned))
        .collect();
    let missing: Vec<&str> = aep_types::RegisteredType::ALL
        .iter()
        .map(|t| t.as_str())
        .filter(|t| !seen.iter().any(|s| s == t))
        .collect();
    assert!(missing.is_empty(), "types without a fixture: {missing:?}");
}

#[test]
fn invalid_payloads_are_refused_where_they_break() {
    let cases: Vec<Value> =
        serde_json::from_str(&read_fixture("invalid-payloads.json")).expect("fixture is JSON");
    let mut report = Report::default();
    for case in &cases {
        let name = case["name"].as_str().unwrap_or("?");
        report.case(name, check_invalid(case));
    }
    report.finish("invalid-payloads.json");
}

fn check_invalid(case: &Value) -> Result<(), String> {
    let event: Event =
        serde_json::from_value(case["event"].clone()).map_err(|e| format!("envelope: {e}"))?;
    let error = match event.payload() {
        Ok(payload) => return Err(format!("accepted: {payload:?}")),
        Err(error) => error,
    };
    let pointer = case["pointer"].as_str().unwrap_or_default();
    let message = case["message"].as_str().unwrap_or_default();
    if error.pointer() != Some(pointer) {
        return Err(format!(
            "pointer {:?}, expected {pointer:?} ({error})",
            error.pointer()
        ));
    }
    if !error.to_string().contains(message) {
        return Err(format!("message `{error}` lacks `{message}`"));
    }
    Ok(())
}

#[test]
fn invalid_envelopes_are_refused_saying_why() {
    let cases: Vec<Value> =
        serde_json::from_str(&read_fixture("invalid-envelopes.json")).expect("fixture is JSON");
    let mut report = Report::default();
    for case in &cases {
        let text = case["text"].as_str().unwrap_or_default();
        let message = case["message"].as_str().unwrap_or_default();
        let outcome = match Event::from_json(text) {
            Ok(event) => Err(format!("accepted: {event:?}")),
            Err(e) if !e.to_string().contains(message) => Err(format!("`{e}` lacks `{message}`")),
            Err(e) => match case["pointer"].as_str() {
                Some(pointer) if e.pointer() != Some(pointer) => Err(format!(
                    "pointer {:?}, expected {pointer:?} ({e})",
                    e.pointer()
                )),
                Some(pointer) if !pointer.is_empty() && !e.to_string().contains(pointer) => {
                    Err(format!("`{e}` does not name `{pointer}`"))
                }
                _ => Ok(()),
            },
        };
        report.case(case["name"].as_str().unwrap_or("?"), outcome);
    }
    report.finish("invalid-envelopes.json");
}
