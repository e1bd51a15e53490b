//! The emitter (AEP-0003 §9): RFC 8785 canonical JSON and digests against
//! the RFC's published examples, and every sibling relation at every
//! ceiling, each result checked by `Event::validate` and by the stream
//! validator.

use aep::digest::{canonical_json, digest};
use aep::emit::Emitter;
use aep::redact::Options;
use aep::stream::{self, Rule};
use aep::{Capture, Event};
use serde_json::{json, Value};

#[test]
fn rfc8785_sorting_example() {
    // RFC 8785 §3.2.3: names sorted by UTF-16 code units (the emoji's
    // surrogates sort before U+FB33, unlike by code point).
    let input: Value = serde_json::from_str(
        r#"{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh",
            "1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control",
            "\u00f6":"Latin Small Letter O With Diaeresis"}"#,
    )
    .unwrap();
    assert_eq!(
        canonical_json(&input),
        "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\
         \"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\
         \"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}"
    );
}

#[test]
fn rfc8785_serialization_example() {
    // RFC 8785 §3.2.2's example: numbers, string escapes, literals.
    let input: Value = serde_json::from_str(
        r#"{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
            "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
            "literals": [null, true, false]}"#,
    )
    .unwrap();
    assert_eq!(
        canonical_json(&input),
        r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
    );
}

#[test]
fn rfc8785_numbers() {
    // RFC 8785 Appendix B, as ECMAScript prints each double.
    for (json, expected) in [
        ("0", "0"),
        ("-0.0", "0"),
        ("1e21", "1e+21"),
        ("1e20", "100000000000000000000"),
        ("5e-324", "5e-324"),
        ("-1.7976931348623157e308", "-1.7976931348623157e+308"),
        ("9007199254740992", "9007199254740992"),
        ("9007199254740993", "9007199254740992"),
        ("295147905179352830000", "295147905179352830000"),
        ("0.000001", "0.000001"),
        ("1e-7", "1e-7"),
        ("123e-7", "0.0000123"),
        ("-5e-7", "-5e-7"),
        ("333333333.3333332", "333333333.3333332"),
        ("100", "100"),
        ("1.5E+2", "150"),
    ] {
        let value: Value = serde_json::from_str(json).unwrap();
        assert_eq!(canonical_json(&value), expected, "{json}");
    }
}

#[test]
fn digests_are_sha256_prefixes_of_the_canonical_form() {
    // sha256('{"a":"x","b":1}'), computed outside this crate.
    assert_eq!(
        digest(&json!({"b": 1, "a": "x"})),
        "cdab067e9f3beb32d1252cfd63e49259"
    );
    assert_eq!(
        digest(&json!("secret query for ada@example.com")),
        "ff6dc895eb5c1064c21a155acb63e912"
    );
}

const SECRET_TEXT: &str = "token=tok_SUPERSECRET99 mail ada@example.com in /home/ada/x";
const LEAKS: &[&str] = &["tok_SUPERSECRET99", "ada@example.com", "/home/ada"];

fn event(seq: u64, event_type: &str, data: Value) -> Event {
    let mut line = json!({
        "aep": "0.1", "id": format!("e{seq}"), "type": event_type,
        "time": "2026-12-03T09:00:00Z", "source": "urn:aep:agent:demo",
        "agent": "demo", "session": "s1", "seq": seq, "data": data,
    });
    if event_type.starts_with("tool.") {
        line["run"] = json!("r1");
    }
    Event::from_json(&line.to_string()).unwrap()
}

/// One event per sibling relation of the schemas, each holding full
/// content with secrets in it: `(event, pointers of the content members)`.
fn corpus() -> Vec<(Event, Vec<&'static str>)> {
    let document = || json!({"id": "d1", "content": SECRET_TEXT, "score": 0.5});
    vec![
        (
            event(
                1,
                "tool.requested",
                json!({"tool": {"name": "Bash"}, "args": {"cmd": SECRET_TEXT, "n": 2}}),
            ),
            vec!["/args"],
        ),
        (
            event(
                2,
                "tool.completed",
                json!({"tool": {"name": "Bash"}, "result": SECRET_TEXT}),
            ),
            vec!["/result"],
        ),
        (
            event(
                3,
                "tool.completed",
                json!({"tool": {"name": "Read"}, "result": {"lines": [SECRET_TEXT]}}),
            ),
            vec!["/result"],
        ),
        (
            event(
                4,
                "resource.retrieval.requested",
                json!({"query": SECRET_TEXT, "top_k": 3}),
            ),
            vec!["/query"],
        ),
        (
            event(
                5,
                "resource.retrieval.returned",
                json!({"documents": [document(), document()], "count": 2}),
            ),
            vec!["/documents/0/content", "/documents/1/content"],
        ),
        (
            event(
                6,
                "resource.retrieval.reranked",
                json!({
                    "query": SECRET_TEXT, "input_documents": [document()], "output_documents": [document()]
                }),
            ),
            vec![
                "/query",
                "/input_documents/0/content",
                "/output_documents/0/content",
            ],
        ),
        (
            event(
                7,
                "resource.citation.recorded",
                json!({"citations": [
                    {"source": {"id": "d1", "title": SECRET_TEXT}, "cited_text": SECRET_TEXT}
                ]}),
            ),
            vec!["/citations/0/cited_text"],
        ),
    ]
}

fn data(event: &Event) -> Value {
    event
        .data
        .as_ref()
        .map_or(Value::Null, |d| Value::Object(d.to_object().unwrap()))
}

/// The sibling of a content pointer: `/args` -> `/args_digest`.
fn sibling(pointer: &str, suffix: &str) -> String {
    format!("{pointer}{suffix}")
}

/// The stream validator's findings on the emitted events, as JSONL.
fn stream_findings(events: &[Event]) -> Vec<stream::Finding> {
    let text: String = events
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect();
    let mut findings = Vec::new();
    stream::validate_reader(
        text.as_bytes(),
        stream::Options::default(),
        |f| findings.push(f),
        |_| {},
    )
    .unwrap();
    findings
}

#[test]
fn every_sibling_relation_at_every_ceiling() {
    let emitter = Emitter::new(Options::default().home("/home/ada"));
    for ceiling in Capture::ALL {
        let mut emitted = Vec::new();
        for (full, pointers) in corpus() {
            let original = data(&full);
            let out = emitter.emit(&full, ceiling).unwrap();
            let what = format!("{} at {ceiling:?}", full.type_);
            assert_eq!(out.capture, Some(ceiling), "{what}");
            out.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
            let got = data(&out);
            let text = got.to_string();
            for pointer in &pointers {
                let content = original.pointer(pointer).unwrap();
                let digest_at = sibling(pointer, "_digest");
                let redacted_at = sibling(pointer, "_redacted");
                let has_digest_member = !pointer.contains("content") && !pointer.contains("cited");
                match ceiling {
                    Capture::None => assert_eq!(out.data, None, "{what}"),
                    Capture::Full => {
                        assert_eq!(got.pointer(pointer), Some(content), "{what}");
                        if has_digest_member {
                            assert_eq!(
                                got.pointer(&digest_at),
                                Some(&json!(digest(content))),
                                "{what}"
                            );
                        }
                    }
                    _ => {
                        for leak in LEAKS {
                            assert!(!text.contains(leak), "{what}: {leak} leaked in {text}");
                        }
                        if has_digest_member {
                            // Digests come from the original, not the redacted content.
                            assert_eq!(
                                got.pointer(&digest_at),
                                Some(&json!(digest(content))),
                                "{what}"
                            );
                        }
                        if *pointer == "/query" {
                            let kept = got.pointer(pointer);
                            match ceiling {
                                Capture::Redacted => assert_eq!(
                                    kept,
                                    Some(&json!(
                                        "token=[REDACTED:secret] mail [REDACTED:pii] in ~/x"
                                    )),
                                    "{what}"
                                ),
                                _ => assert_eq!(kept, None, "{what}"),
                            }
                        } else {
                            assert_eq!(got.pointer(pointer), None, "{what}");
                            let redacted = got.pointer(&redacted_at);
                            if ceiling == Capture::Redacted {
                                assert!(redacted.is_some(), "{what}: no {redacted_at} in {text}");
                                assert!(text.contains("[REDACTED:secret]"), "{what}");
                            } else {
                                assert_eq!(redacted, None, "{what}");
                            }
                        }
                    }
                }
            }
            emitted.push(out);
        }
        let findings = stream_findings(&emitted);
        assert!(
            !findings.iter().any(|f| f.rule == Rule::Capture),
            "{ceiling:?}: {findings:?}"
        );
    }
}

#[test]
fn redacted_text_of_tool_results_keeps_its_shape() {
    let emitter = Emitter::default();
    let (full, _) = corpus().remove(2);
    let out = emitter.emit(&full, Capture::Redacted).unwrap();
    assert_eq!(
        data(&out)["result_redacted"],
        json!({"lines": ["token=[REDACTED:secret] mail [REDACTED:pii] in ~/x"]})
    );
}

#[test]
fn attention_prompts_and_labels() {
    let emitter = Emitter::default();
    let full = event(
        8,
        "attention.requested",
        json!({
            "kind": "permission",
            "prompt": "Allow reading /home/bob/.aws with AKIAIOSFODNN7EXAMPLE?",
            "options": [{"id": "yes", "label": "Yes, mail bob@example.com"}],
            "context": {"raw": "full only"}
        }),
    );
    let redacted = data(&emitter.emit(&full, Capture::Redacted).unwrap());
    assert_eq!(
        redacted,
        json!({
            "kind": "permission",
            "prompt": "Allow reading ~/.aws with [REDACTED:secret]?",
            "options": [{"id": "yes", "label": "Yes, mail [REDACTED:pii]"}]
        })
    );
    // At metadata, the hop's structural synthesis.
    let metadata = data(&emitter.emit(&full, Capture::Metadata).unwrap());
    assert_eq!(
        metadata,
        json!({
            "kind": "permission",
            "prompt": "demo requests permission",
            "options": [{"id": "yes", "label": "yes"}]
        })
    );
}

#[test]
fn form_values_and_answer_text() {
    let emitter = Emitter::default();
    let full = event(
        9,
        "attention.answered",
        json!({"answer": {"text": "call 415-555-2671", "values": {"n": 3, "note": "mail a@b.io", "password": "x"}}}),
    );
    let redacted = data(&emitter.emit(&full, Capture::Redacted).unwrap());
    assert_eq!(
        redacted,
        json!({"answer": {"text": "call [REDACTED:pii]", "values": {"n": 3, "note": "mail [REDACTED:pii]", "password": "[REDACTED:secret]"}}})
    );
    let metadata = data(&emitter.emit(&full, Capture::Metadata).unwrap());
    assert_eq!(metadata, json!({"answer": {"values": {"n": 3}}}));
}

#[test]
fn untyped_data_goes_through_the_pipeline_whole() {
    let emitter = Emitter::default();
    let full = event(10, "x.acme.note", json!({"text": SECRET_TEXT, "n": 1}));
    let redacted = emitter.emit(&full, Capture::Redacted).unwrap();
    assert_eq!(
        data(&redacted),
        json!({"text": "token=[REDACTED:secret] mail [REDACTED:pii] in /home/ada/x".replace("/home/ada", "~"), "n": 1})
    );
    assert_eq!(emitter.emit(&full, Capture::Metadata).unwrap().data, None);
}

#[test]
fn bad_data_is_an_error_naming_the_place() {
    let full = event(11, "tool.requested", json!({"tool": "Bash"}));
    let error = Emitter::default()
        .emit(&full, Capture::Redacted)
        .unwrap_err();
    assert!(error.to_string().contains("/data/tool"), "{error}");
}

/// AEP-0001 §8.2(b): an event that declares its level is never raised
/// above it, whatever the ceiling; the level written is the lower of the
/// two. An event that declares none is the emitter's input, full content.
#[test]
fn a_declared_level_is_never_raised() {
    let emitter = Emitter::default();
    let line = |capture: &str| {
        let capture = if capture.is_empty() {
            String::new()
        } else {
            format!(r#","capture":"{capture}""#)
        };
        Event::from_json(&format!(
            r#"{{"aep":"0.1","id":"e1","type":"tool.requested","time":"2026-12-03T09:00:00Z",
               "source":"urn:a","agent":"a","session":"s","seq":1{capture},
               "data":{{"tool":{{"name":"Bash"}},"args":{{"cmd":"ls /home/ada"}}}}}}"#
        ))
        .unwrap()
    };
    for declared in Capture::ALL {
        for ceiling in Capture::ALL {
            let out = emitter.emit(&line(declared.as_str()), ceiling).unwrap();
            let level = declared.min(ceiling);
            assert_eq!(out.capture, Some(level), "{declared:?} at {ceiling:?}");
            out.validate()
                .unwrap_or_else(|e| panic!("{declared:?} at {ceiling:?}: {e}"));
            let text = out.data.as_ref().map_or("", |d| d.get()).to_owned();
            if level < Capture::Full {
                assert!(
                    !text.contains("/home/ada"),
                    "{declared:?} at {ceiling:?}: {text}"
                );
            }
        }
    }
    let out = emitter.emit(&line(""), Capture::Full).unwrap();
    assert_eq!(out.capture, Some(Capture::Full));
}

/// `data` is optional (AEP-0001 §5.1): an event without it is emitted
/// with none, whatever its type needs when it has data.
#[test]
fn an_event_without_data_is_emitted() {
    let event = Event::from_json(
        r#"{"aep":"0.1","id":"n2","type":"attention.requested","time":"2026-12-03T09:00:00Z",
           "source":"urn:a","agent":"a","session":"s","seq":1,"capture":"none"}"#,
    )
    .unwrap();
    assert!(event.validate().is_ok(), "absent data is valid");
    for ceiling in Capture::ALL {
        let out = Emitter::default().emit(&event, ceiling).unwrap();
        assert_eq!(
            (out.data.as_ref(), out.capture),
            (None, Some(Capture::None))
        );
    }
}
