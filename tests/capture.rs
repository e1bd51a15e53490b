//! `Event::validate_capture`: no payload member, at any depth, above the
//! event's declared capture level (AEP-0002 §5.1), each violation named by
//! its JSON Pointer; `validate` includes it, `validate_schema` does not.

use aep_types::{Event, Violation};
use serde_json::{json, Value};

fn event(event_type: &str, capture: Option<&str>, data: Value) -> Event {
    let mut event = json!({
        "aep": "0.1", "id": "e1", "type": event_type, "time": "2026-11-30T12:00:00Z",
        "source": "urn:aep:agent:t", "agent": "t", "session": "s", "seq": 1, "data": data,
    });
    if let Some(capture) = capture {
        event["capture"] = json!(capture);
    }
    serde_json::from_value(event).expect("the envelope decodes")
}

fn violations(result: Result<(), aep_types::Violations>) -> Vec<(String, String)> {
    match result {
        Ok(()) => Vec::new(),
        Err(found) => found
            .0
            .into_iter()
            .map(|Violation { pointer, message }| (pointer, message))
            .collect(),
    }
}

fn pointers(result: Result<(), aep_types::Violations>) -> Vec<String> {
    violations(result).into_iter().map(|(p, _)| p).collect()
}

#[test]
fn a_full_member_in_a_metadata_event_is_reported_with_both_levels() {
    // No `capture`: the event is `metadata`; `args` is `full`.
    let e = event(
        "tool.requested",
        None,
        json!({"tool": {"name": "Bash"}, "args": {"cmd": "ls"}}),
    );
    let found = violations(e.validate_capture());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "/data/args");
    assert!(
        found[0].1.contains("`full`") && found[0].1.contains("`metadata`"),
        "names the member's level and the event's: {}",
        found[0].1
    );
    assert_eq!(violations(e.validate()), found, "validate includes it");
    assert_eq!(
        violations(e.validate_schema()),
        Vec::new(),
        "the JSON Schema keywords alone do not state it"
    );
}

#[test]
fn members_at_or_below_the_level_pass() {
    let data =
        json!({"tool": {"name": "Bash"}, "args_digest": "d", "args_redacted": {}, "args": {}});
    assert!(event("tool.requested", Some("full"), data.clone())
        .validate()
        .is_ok());
    assert_eq!(
        pointers(event("tool.requested", Some("redacted"), data.clone()).validate_capture()),
        ["/data/args"]
    );
    assert_eq!(
        pointers(event("tool.requested", Some("metadata"), data).validate_capture()),
        ["/data/args_redacted", "/data/args"]
    );
}

#[test]
fn nested_members_are_checked_at_their_depth() {
    // `error_info.message` is `redacted`, inside a `metadata` member.
    let e = event(
        "run.failed",
        Some("metadata"),
        json!({"reason": "crash", "error": {"type": "E", "message": "disk full"}}),
    );
    assert_eq!(pointers(e.validate_capture()), ["/data/error/message"]);
    let e = event(
        "run.failed",
        Some("redacted"),
        json!({"reason": "crash", "error": {"type": "E", "message": "disk full"}}),
    );
    assert!(e.validate_capture().is_ok());
}

#[test]
fn array_items_are_checked_with_their_index() {
    // `citations[].cited_text` is `full`.
    let e = event(
        "resource.citation.recorded",
        Some("redacted"),
        json!({"citations": [{"id": "c0"}, {"id": "c1", "cited_text": "quoted"}]}),
    );
    assert_eq!(
        pointers(e.validate_capture()),
        ["/data/citations/1/cited_text"]
    );
}

#[test]
fn unknown_members_count_as_metadata_at_every_depth() {
    let data = json!({"reason": "crash", "vendor": 1, "error": {"type": "E", "hint": "x"}});
    assert!(event("run.failed", Some("metadata"), data.clone())
        .validate_capture()
        .is_ok());
    // At `none` nothing of the payload may be present, required members included.
    assert_eq!(
        pointers(event("run.failed", Some("none"), data).validate_capture()),
        ["/data/reason", "/data/error", "/data/vendor"]
    );
}

#[test]
fn untyped_data_has_nothing_to_check() {
    for event_type in ["x.acme.tool.scan", "message.user.submitted"] {
        let e = event(event_type, Some("none"), json!({"text": "secret"}));
        assert!(e.validate_capture().is_ok(), "{event_type}");
    }
}

#[test]
fn data_that_does_not_decode_fails_both_checks() {
    let e = event("run.failed", None, json!({"reason": 3}));
    assert_eq!(pointers(e.validate_capture()), ["/data"]);
    assert_eq!(pointers(e.validate_schema()), ["/data/reason"]);
    assert_eq!(pointers(e.validate()), ["/data/reason", "/data"]);
}

#[test]
fn a_payload_that_does_not_decode_does_not_pass_the_capture_check() {
    // `args` is `full` in a `metadata` event; `args_digest` breaks the
    // payload's shape, so the typed payload cannot be read. Passing would
    // let the `full` member through unchecked.
    let e = event(
        "tool.requested",
        None,
        json!({"tool": {"name": "B"}, "args": {"command": "cat ~/.ssh/id_ed25519"}, "args_digest": 5}),
    );
    let found = violations(e.validate_capture());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "/data");
    assert!(
        found[0].1.contains("capture cannot be verified"),
        "says why: {}",
        found[0].1
    );
    let all = pointers(e.validate());
    assert!(
        all.contains(&"/data/args_digest".to_owned()) && all.contains(&"/data".to_owned()),
        "validate lists the decode error and the capture one: {all:?}"
    );
    assert!(
        !pointers(e.validate_schema()).contains(&"/data".to_owned()),
        "the schema check names the failing member only"
    );
}
