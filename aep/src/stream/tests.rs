use serde_json::{json, Value};

use super::*;

/// A JSONL line of an event, with the envelope members a test does not
/// care about filled in.
fn line(members: Value) -> String {
    let mut object = json!({
        "aep": "0.1",
        "time": "2026-12-01T10:00:00Z",
        "source": "urn:a",
        "agent": "a",
    });
    let o = object.as_object_mut().unwrap();
    for (k, v) in members.as_object().unwrap() {
        o.insert(k.clone(), v.clone());
    }
    serde_json::to_string(&object).unwrap()
}

/// `(line, rule)` of every finding of a stream of lines.
fn findings(lines: &[String]) -> Vec<(u64, &'static str)> {
    let text = lines.join("\n");
    let mut found = Vec::new();
    let summary = validate_reader(
        text.as_bytes(),
        Options::default(),
        |f| found.push(f),
        |_| {},
    )
    .unwrap();
    let errors = found.iter().filter(|f| f.level == Level::Error).count() as u64;
    assert_eq!(summary.errors, errors);
    assert_eq!(summary.warnings, found.len() as u64 - errors);
    found.iter().map(|f| (f.line, f.rule.name())).collect()
}

#[test]
fn rule_names_round_trip_and_the_module_doc_lists_every_rule() {
    let doc = include_str!("../stream.rs");
    for &rule in Rule::ALL {
        assert_eq!(Rule::from_name(rule.name()), Some(rule));
        let row = format!(
            "//! | `{}` | {} | {} |",
            rule.name(),
            rule.severity(),
            rule.description()
        );
        assert!(doc.contains(&row), "the module doc lacks\n{row}");
        assert_eq!(serde_json::to_value(rule).unwrap(), json!(rule.name()));
    }
    assert_eq!(
        serde_json::to_value(Level::Warning).unwrap(),
        json!("warning")
    );
}

#[test]
fn a_form_request_is_kept_until_resolved() {
    let mut forms = Forms::default();
    let mut problems = Vec::new();
    let request: Event = serde_json::from_str(&line(json!({
        "id": "q", "type": "attention.requested", "session": "s", "seq": 1,
        "data": {"kind": "form", "prompt": "p", "fields": [
            {"id": "db", "type": "select", "label": "1", "choices": [{"id": "pg", "label": "1"}]}
        ]}
    })))
    .unwrap();
    forms.check(&request, &mut problems);
    assert_eq!(forms.len(), 1);
    let resolved: Event = serde_json::from_str(&line(json!({
        "id": "r", "type": "attention.resolved", "session": "s", "seq": 2, "subject": "q",
        "data": {"resolution": "answered"}
    })))
    .unwrap();
    forms.check(&resolved, &mut problems);
    assert_eq!(forms.len(), 0);
    assert!(problems.is_empty());
}

#[test]
fn per_line_rules() {
    let lines = [
        "".to_owned(),
        "{not json".to_owned(),
        "[1, 2]".to_owned(),
        line(json!({"id": "e1", "type": "progress.status", "session": "s", "seq": -3})),
        line(
            json!({"id": "e2", "type": "progress.status", "session": "s", "seq": 1, "data": {"percent": "half"}}),
        ),
        line(json!({"id": "e3", "type": "progress.nonesuch", "session": "s", "seq": 2})),
        line(json!({"id": "e4", "type": "message.user.submitted", "session": "s", "seq": 3})),
        line(json!({"id": "e5", "type": "x.acme.progress.nonesuch", "session": "s", "seq": 4})),
        line(json!({"id": "e6", "type": "agent.heartbeat", "session": "s"})),
    ];
    assert_eq!(
        findings(&lines),
        [
            (1, "json"),
            (2, "json"),
            (3, "envelope"),
            (4, "envelope"),
            (5, "payload"),
            (6, "unregistered-type"),
            (7, "reserved-type"),
            (9, "envelope"),
        ]
    );
}
