//! `Event::validate`: every valid event passes; each invalid case lists
//! exactly the violations it pins, in order, with their pointers.

use aep_tests::{read_fixture, Report};
use aep_types::Event;
use serde_json::Value;

#[test]
fn every_valid_event_validates() {
    let mut report = Report::default();
    for (i, line) in read_fixture("valid.jsonl")
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let outcome = serde_json::from_str::<Event>(line)
            .map_err(|e| e.to_string())
            .and_then(|event| event.validate().map_err(|v| v.to_string()));
        report.case(format!("valid.jsonl:{}", i + 1), outcome);
    }
    report.finish("valid.jsonl");
}

#[test]
fn each_broken_rule_is_reported_where_it_breaks() {
    let cases: Vec<Value> =
        serde_json::from_str(&read_fixture("invalid-events.json")).expect("fixture is JSON");
    let mut report = Report::default();
    for case in &cases {
        report.case(case["name"].as_str().unwrap_or("?"), check(case));
    }
    report.finish("invalid-events.json");
}

fn check(case: &Value) -> Result<(), String> {
    let event: Event =
        serde_json::from_value(case["event"].clone()).map_err(|e| format!("decode: {e}"))?;
    let found = match event.validate() {
        Ok(()) => return Err("validated".into()),
        Err(violations) => violations.0,
    };
    let expected = case["violations"].as_array().cloned().unwrap_or_default();
    let matches = found.len() == expected.len()
        && found.iter().zip(&expected).all(|(v, e)| {
            v.pointer == e[0].as_str().unwrap_or_default()
                && v.message.contains(e[1].as_str().unwrap_or_default())
        });
    if matches {
        Ok(())
    } else {
        let found: Vec<String> = found
            .iter()
            .map(|v| format!("{:?} {}", v.pointer, v.message))
            .collect();
        Err(format!("found {found:#?}\nexpected {expected:?}"))
    }
}

#[test]
fn an_event_without_data_is_valid_whatever_its_payload_requires() {
    let event = Event::new(
        "e1",
        "agent.presence",
        "2026-11-30T12:00:00Z",
        "urn:aep:agent:t",
        "t",
    );
    assert_eq!(event.validate(), Ok(()));
}

#[test]
fn violations_display_every_pointer() {
    let mut event = Event::new("", "agent.presence", "yesterday", "urn:aep:agent:t", "t");
    event.session = Some("s".into());
    let text = event.validate().expect_err("three violations").to_string();
    assert_eq!(
        text,
        "3 violation(s)\n  /id: shorter than 1 character(s)\n  /time: not an RFC 3339 date-time\n  \
         /session: must be absent when `type` starts with `agent.`"
    );
}
