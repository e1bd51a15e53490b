//! `Event::down_level`: data-driven cases of input, ceiling and the exact
//! event a hop must forward.

use aep_tests::{read_fixture, Report};
use aep_types::{Capture, Event};
use serde_json::Value;

fn check(case: &Value) -> Result<(), String> {
    let event: Event =
        serde_json::from_value(case["event"].clone()).map_err(|e| format!("decode: {e}"))?;
    let ceiling: Capture = case["ceiling"]
        .as_str()
        .unwrap_or_default()
        .parse()
        .map_err(|e| format!("{e}"))?;
    let forwarded = event.down_level(ceiling);
    let got = serde_json::to_value(&forwarded).map_err(|e| e.to_string())?;
    if got != case["expected"] {
        return Err(format!(
            "\n  got:      {got}\n  expected: {}",
            case["expected"]
        ));
    }
    forwarded
        .validate()
        .map_err(|v| format!("the forwarded event is invalid: {v}"))?;
    if forwarded.down_level(ceiling) != forwarded {
        return Err("down-levelling twice changes the event again".into());
    }
    Ok(())
}

#[test]
fn down_level_cases() {
    let cases: Vec<Value> =
        serde_json::from_str(&read_fixture("down-level.json")).expect("fixture is JSON");
    let mut report = Report::default();
    for case in &cases {
        report.case(case["name"].as_str().unwrap_or("?"), check(case));
    }
    report.finish("down-level.json");
}

#[test]
fn no_member_above_the_ceiling_survives_in_the_corpus() {
    // Every valid event, at every ceiling, forwards a valid event whose
    // capture is at or below the ceiling.
    let mut report = Report::default();
    for (i, line) in read_fixture("valid.jsonl")
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let event: Event = serde_json::from_str(line).expect("valid fixture");
        for ceiling in Capture::ALL {
            let forwarded = event.down_level(ceiling);
            let outcome = if forwarded.capture_or_default() > ceiling {
                Err(format!(
                    "capture {} above ceiling {ceiling}",
                    forwarded.capture_or_default()
                ))
            } else {
                forwarded.validate().map_err(|v| v.to_string())
            };
            report.case(format!("valid.jsonl:{} at {ceiling}", i + 1), outcome);
        }
    }
    report.finish("valid.jsonl down-levelled");
}
