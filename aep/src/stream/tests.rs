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
        assert_eq!(
            serde_json::from_value::<Rule>(json!(rule.name())).unwrap(),
            rule
        );
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
            (5, "capture"),
            (6, "unregistered-type"),
            (7, "reserved-type"),
            (9, "envelope"),
        ]
    );
}

#[test]
fn messages_place_json_errors_by_column_and_name_the_rule() {
    let mut found = Vec::new();
    let mut v = Validator::new(Options::default());
    v.check_line(7, b"{\"aep\": tru}", &mut found);
    v.check_line(8, b"{\"aep\":\"0.1\"}", &mut found);
    assert_eq!(found[0].message, "not JSON: expected ident (column 12)");
    assert_eq!((found[0].line, found[0].rule), (7, Rule::Json));
    assert!(
        found[1].message == "invalid event: missing field `id` at column 13",
        "{}",
        found[1].message
    );
    assert!(!found[1].message.contains("line 1"), "{}", found[1].message);
}

#[test]
fn a_byte_order_mark_is_named() {
    let mut found = Vec::new();
    let mut v = Validator::new(Options::default());
    let mut text = b"\xef\xbb\xbf".to_vec();
    text.extend_from_slice(
        line(json!({"id": "e0", "type": "progress.status", "session": "s", "seq": 0})).as_bytes(),
    );
    v.check_line(1, &text, &mut found);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].rule, Rule::Json);
    assert!(
        found[0].message.contains("byte order mark (BOM)"),
        "{}",
        found[0].message
    );
    // The decoders say it too.
    let error = aep_types::Event::from_slice(&text).unwrap_err().to_string();
    assert!(error.contains("(BOM)"), "{error}");
    let error = aep_types::EventRef::from_slice(&text)
        .unwrap_err()
        .to_string();
    assert!(error.contains("(BOM)"), "{error}");
}

#[test]
fn summary_counts_lines_events_findings_and_skipped_versions() {
    let lines = [
        line(json!({"id": "e0", "type": "progress.status", "session": "s", "seq": 0})),
        r#"{"aep":"1.0"}"#.to_owned(),
        r#"{"aep":"7.2","id":"x"}"#.to_owned(),
        line(json!({"id": "e0", "type": "progress.status", "session": "s", "seq": 0})),
        line(json!({"id": "e1", "type": "progress.status", "session": "s", "seq": 0})),
        "nope".to_owned(),
    ];
    let text = lines.join("\n") + "\n";
    let mut found = Vec::new();
    let mut progress = Vec::new();
    let summary = validate_reader(
        text.as_bytes(),
        Options::default(),
        |f| found.push(f),
        |bytes| progress.push(bytes),
    )
    .unwrap();
    assert_eq!(
        summary,
        Summary {
            lines: 6,
            events: 3,
            errors: 2,
            warnings: 2,
            skipped: 2,
        }
    );
    let rules: Vec<_> = found.iter().map(|f| (f.line, f.rule.name())).collect();
    assert_eq!(
        rules,
        [
            (2, "unsupported-version"),
            (4, "duplicate"),
            (5, "seq-regression"),
            (6, "json")
        ]
    );
    assert_eq!(found[0].id, None);
    assert_eq!(found[1].id.as_deref(), Some("e0"));
    // Progress after every line, ending at the input's size.
    assert_eq!(progress.len(), 6);
    assert!(progress.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(progress.last(), Some(&(text.len() as u64)));
}

#[test]
fn a_long_line_is_one_finding_from_check_line_and_from_the_reader() {
    let options = Options { max_line_bytes: 10 };
    let mut found = Vec::new();
    let mut v = Validator::new(options.clone());
    v.check_line(1, b"{\"aep\":\"0.1\"}", &mut found);
    assert_eq!(found[0].rule, Rule::LineTooLong);
    let text = format!("{}\r\n{{}}\n", "x".repeat(100));
    let mut from_reader = Vec::new();
    let summary =
        validate_reader(text.as_bytes(), options, |f| from_reader.push(f), |_| {}).unwrap();
    assert_eq!(summary.lines, 2);
    assert_eq!(from_reader.len(), 2);
    assert_eq!(
        from_reader[0].message,
        // 100 bytes: the `\r\n` ending is not the line's.
        "the line is 100 bytes, over the line limit of 10 bytes; skipped unread"
    );
    assert_eq!(from_reader[1].rule, Rule::Envelope);
    // One message, whichever part met the line first.
    assert_eq!(
        found[0].message,
        "the line is 13 bytes, over the line limit of 10 bytes; skipped unread"
    );
    let error = aep_types::reader::EventReader::with_max_line_bytes(text.as_bytes(), 10)
        .next()
        .unwrap()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("line 1: {}", from_reader[0].message)
    );
}

#[test]
fn an_io_error_is_returned() {
    struct Broken;
    impl std::io::Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("unplugged"))
        }
    }
    let result = validate_reader(
        std::io::BufReader::new(Broken),
        Options::default(),
        |_| {},
        |_| {},
    );
    assert_eq!(result.unwrap_err().to_string(), "unplugged");
}

#[test]
fn an_empty_stream_is_valid() {
    let summary = validate_reader(&b""[..], Options::default(), |_| panic!(), |_| {}).unwrap();
    assert_eq!(summary, Summary::default());
}

#[test]
fn stream_rule_messages_say_what_and_where() {
    let lines = [
        line(
            json!({"id": "q", "type": "attention.requested", "session": "s", "seq": 4, "data": {"kind": "input", "prompt": "1"}}),
        ),
        line(json!({"id": "e", "type": "progress.status", "session": "s", "seq": 2})),
        line(json!({"id": "f", "type": "progress.status", "session": "s", "seq": 3, "epoch": 2})),
        line(json!({"id": "g", "type": "progress.status", "session": "s", "seq": 9, "epoch": 1})),
        line(json!({"id": "end", "type": "session.ended", "session": "s", "seq": 0, "epoch": 3})),
    ];
    let text = lines.join("\n");
    let mut found = Vec::new();
    validate_reader(
        text.as_bytes(),
        Options::default(),
        |f| found.push(f),
        |_| {},
    )
    .unwrap();
    let messages: Vec<_> = found.iter().map(|f| f.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "seq 2 does not advance past 4 in epoch 0 of session `s` from `urn:a` (AEP-0001 §7)",
            "epoch 1 goes back from 2 in session `s` from `urn:a` (AEP-0001 §7)",
            "session `s` ends with 1 attention request(s) unresolved (`q`); close each with \
             `attention.resolved` or `attention.timeout` first (AEP-0002 §7)",
        ]
    );
    assert_eq!(found[2].id.as_deref(), Some("end"));
}

#[test]
fn deep_nesting_is_a_finding_not_a_stack_overflow() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let inside = line(json!({"id": "e", "type": "progress.status", "session": "s", "seq": 0}));
    let inside = format!(
        "{},\"data\":{{\"x\":{deep}}}}}",
        &inside[..inside.len() - 1]
    );
    let lines = [deep.clone(), inside.clone(), inside];
    let text = lines.join("\n");
    let mut found = Vec::new();
    validate_reader(
        text.as_bytes(),
        Options::default(),
        |f| found.push(f),
        |_| {},
    )
    .unwrap();
    let got: Vec<_> = found.iter().map(|f| (f.line, f.rule.name())).collect();
    // The bare array is not an event; inside `data` the payload cannot be
    // typed (so neither can its capture be verified); the same line again
    // is still recognised as a redelivery.
    assert_eq!(
        got,
        [
            (1, "envelope"),
            (2, "payload"),
            (2, "capture"),
            (3, "duplicate")
        ]
    );
    assert!(
        found[1].message.contains("recursion limit"),
        "{}",
        found[1].message
    );
}

#[test]
fn a_full_member_beside_an_undecodable_one_is_a_capture_finding() {
    let lines = [line(json!({
        "id": "e1", "type": "tool.requested", "session": "s", "seq": 1,
        "data": {"tool": {"name": "B"}, "args": {"command": "cat ~/.ssh/id_ed25519"}, "args_digest": 5},
    }))];
    let found = findings(&lines);
    assert!(found.contains(&(1, "payload")), "{found:?}");
    assert!(found.contains(&(1, "capture")), "{found:?}");
}

/// A `kind: "form"` request `id` from `source` with one closed select `db`.
fn form_request(source: &str, id: &str, seq: u64) -> String {
    line(json!({
        "id": id, "source": source, "type": "attention.requested", "session": "s", "seq": seq,
        "capture": "redacted",
        "data": {"kind": "form", "prompt": "p", "fields": [
            {"id": "db", "type": "select", "label": "1", "choices": [{"id": "pg", "label": "1"}]}
        ]}
    }))
}

#[test]
fn form_requests_of_two_sources_with_one_id_stay_apart() {
    let lines = [
        form_request("urn:a", "r1", 1),
        line(json!({
            "id": "r1", "source": "urn:b", "type": "attention.requested", "session": "s", "seq": 1,
            "data": {"kind": "permission", "prompt": "p"}
        })),
        line(json!({
            "id": "b2", "source": "urn:b", "type": "attention.resolved", "session": "s", "seq": 2,
            "subject": "r1", "data": {"resolution": "answered"}
        })),
        line(json!({
            "id": "a2", "source": "urn:a", "type": "attention.answered", "session": "s", "seq": 2,
            "subject": "r1", "capture": "redacted",
            "data": {"answer": {"values": {"db": "mysql"}}}
        })),
    ];
    assert_eq!(findings(&lines), [(4, "form-values")]);
}

#[test]
fn a_command_answers_the_request_of_the_session_it_names() {
    let lines = [
        form_request("urn:a", "r1", 1),
        line(json!({
            "id": "c1", "source": "urn:console", "type": "control.attention.respond",
            "session": "s", "subject": "r1", "capture": "redacted",
            "data": {"answer": {"values": {"db": "mysql"}}}
        })),
    ];
    assert_eq!(findings(&lines), [(2, "form-values")]);
}

#[test]
fn a_session_end_drops_its_pending_forms() {
    let mut forms = Forms::default();
    let mut problems = Vec::new();
    let event = |text: String| -> Event { serde_json::from_str(&text).unwrap() };
    forms.check(&event(form_request("urn:a", "r1", 1)), &mut problems);
    forms.check(&event(form_request("urn:b", "r1", 1)), &mut problems);
    assert_eq!(forms.len(), 2);
    let ended = line(json!({
        "id": "end", "source": "urn:a", "type": "session.ended", "session": "s", "seq": 2,
        "data": {"reason": "normal"}
    }));
    forms.check(&event(ended), &mut problems);
    assert_eq!(forms.len(), 1, "only urn:a's session ended");
    assert!(problems.is_empty());
}

#[test]
fn form_findings_escape_field_ids_in_their_pointer() {
    let request = line(json!({
        "id": "q", "type": "attention.requested", "session": "s", "seq": 1,
        "data": {"kind": "form", "prompt": "p", "fields": [
            {"id": "t/x~y", "type": "select", "label": "1", "choices": [{"id": "pg", "label": "1"}]},
            {"id": "n/o", "type": "string", "label": "2"}
        ]}
    }));
    let answer = line(json!({
        "id": "a", "type": "attention.answered", "session": "s", "seq": 2, "subject": "q",
        "data": {"answer": {"values": {"t/x~y": "mysql", "n/o": "words"}}}
    }));
    let text = [request, answer].join("\n");
    let mut messages = Vec::new();
    validate_reader(
        text.as_bytes(),
        Options::default(),
        |f| messages.push(f.message),
        |_| {},
    )
    .unwrap();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("/data/answer/values/t~1x~0y: ")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("/data/answer/values/n~1o: ")),
        "{messages:?}"
    );
}

/// Raw JSONL lines of `tool.requested` event `e1` with the given `data`
/// text, the first at seq 1 and the second at seq 2 (so only dedupe can
/// speak about the second).
fn redelivery(first_data: &str, second_data: &str) -> Vec<String> {
    [first_data, second_data]
        .iter()
        .map(|data| {
            format!(
                r#"{{"aep":"0.1","id":"e1","type":"tool.requested","time":"2026-12-01T10:00:00Z","source":"urn:a","agent":"a","session":"s","seq":1,"capture":"full","data":{data}}}"#
            )
        })
        .collect()
}

#[test]
fn strings_of_nul_characters_in_another_order_are_another_event() {
    // Empty and NUL-only strings swapped, or split differently.
    for (a, b) in [
        (r#"[0,"","\u0000"]"#, r#"[0,"\u0000",""]"#),
        (r#"[-1,"","\u0000\u0000",2]"#, r#"[-1,"\u0000\u0000","",2]"#),
        (r#"[0,"","\u0000\u0000"]"#, r#"[0,"\u0000","\u0000"]"#),
    ] {
        for name in ["x", "k", "q"] {
            let first =
                format!(r#"{{"tool":{{"name":"Bash","call_id":"t"}},"args":{{"{name}":{a}}}}}"#);
            let second =
                format!(r#"{{"tool":{{"name":"Bash","call_id":"t"}},"args":{{"{name}":{b}}}}}"#);
            assert_eq!(
                findings(&redelivery(&first, &second)),
                [(2, "id-collision")],
                "{a} then {b} under `{name}`"
            );
        }
    }
}

#[test]
fn a_reordered_redelivery_with_a_lone_surrogate_is_a_redelivery() {
    let first = r#"{"tool":{"name":"Bash","call_id":"t"},"args":{"command":"\ud800","x":1}}"#;
    let second = r#"{"args":{"x":1,"command":"\ud800"},"tool":{"call_id":"t","name":"Bash"}}"#;
    // The typed payload refuses the surrogate (`payload` and `capture`
    // findings); dedupe still reads the data as the JSON it is.
    let dedupe = |lines: &[String]| -> Vec<_> {
        findings(lines)
            .into_iter()
            .filter(|&(_, rule)| matches!(rule, "duplicate" | "id-collision"))
            .collect()
    };
    assert_eq!(dedupe(&redelivery(first, second)), [(2, "duplicate")]);
    let other = r#"{"tool":{"name":"Bash","call_id":"t"},"args":{"command":"\udc00","x":1}}"#;
    assert_eq!(dedupe(&redelivery(first, other)), [(2, "id-collision")]);
}
