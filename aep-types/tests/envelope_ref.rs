//! `EventRef::validate_envelope` agrees with `Event::validate_envelope`:
//! on envelopes breaking each envelope rule (alone and together), on
//! valid ones, and on every event of the fixture files, both decoders
//! accept and refuse the same text, and where they accept it both checks
//! give the same violations (messages and pointers) in the same order.

use std::path::{Path, PathBuf};

use aep_types::{Event, EventRef};
use serde_json::{json, Map, Value};

/// What checking `text` gives: the decode error, or every violation as
/// its `Display`.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Refused(String),
    Checked(Vec<String>),
}

fn owned(text: &str) -> Outcome {
    match Event::from_json(text) {
        Err(e) => Outcome::Refused(e.to_string()),
        Ok(event) => Outcome::Checked(match event.validate_envelope() {
            Ok(()) => Vec::new(),
            Err(v) => v.0.iter().map(ToString::to_string).collect(),
        }),
    }
}

fn borrowed(text: &str) -> Outcome {
    match EventRef::from_json(text) {
        Err(e) => Outcome::Refused(e.to_string()),
        Ok(event) => Outcome::Checked(match event.validate_envelope() {
            Ok(()) => Vec::new(),
            Err(v) => v.0.iter().map(ToString::to_string).collect(),
        }),
    }
}

/// Tallies of what the compared texts exercised.
#[derive(Default)]
struct Tally {
    texts: usize,
    refused: usize,
    valid: usize,
    violations: Vec<String>,
    disagreements: Vec<String>,
}

impl Tally {
    fn compare(&mut self, label: &str, text: &str) {
        self.texts += 1;
        let (o, b) = (owned(text), borrowed(text));
        if o != b {
            self.disagreements.push(format!(
                "{label}: {text}\n  Event:    {o:?}\n  EventRef: {b:?}"
            ));
        }
        match o {
            Outcome::Refused(_) => self.refused += 1,
            Outcome::Checked(v) if v.is_empty() => self.valid += 1,
            Outcome::Checked(v) => self.violations.extend(v),
        }
    }

    fn assert_agreed(&self) {
        assert!(
            self.disagreements.is_empty(),
            "{} of {} texts checked differently:\n{}",
            self.disagreements.len(),
            self.texts,
            self.disagreements.join("\n")
        );
    }
}

fn base() -> Map<String, Value> {
    let Value::Object(map) = json!({
        "aep": "0.1",
        "id": "e1",
        "type": "run.started",
        "time": "2026-12-03T09:00:00Z",
        "source": "urn:aep:agent:a",
        "agent": "a",
        "session": "s1",
        "seq": 3,
        "data": {"trigger": "user"}
    }) else {
        unreachable!()
    };
    map
}

/// `base()` with `changes` applied: `Value::Null` removes the member.
fn envelope(changes: &[(&str, Value)]) -> String {
    let mut map = base();
    for (name, value) in changes {
        if value.is_null() {
            map.remove(*name);
        } else {
            map.insert((*name).to_owned(), value.clone());
        }
    }
    Value::Object(map).to_string()
}

/// Values for each string attribute: good ones and ones breaking its
/// length, pattern or format.
fn string_values() -> Vec<&'static str> {
    vec![
        "",
        " ",
        "a",
        "e1",
        "not a uri",
        "urn:a",
        "https://example.com/x?y=1#z",
        "//no-scheme",
        "1urn:bad-scheme",
        "agent.heartbeat",
        "agent.idle",
        "run.started",
        "tools.requested",
        "Run.started",
        "run",
        "run.",
        "control.cancel",
        "control.pause",
        "control.attention.respond",
        "attention.routed",
        "x.vendor.control.stop",
        "x.vendor.thing.happened",
        "x.Vendor.thing.happened",
        "x.vendor.thing",
        "2026-12-03T09:00:00Z",
        "2026-12-03T09:00:00.123456+05:30",
        "2026-12-03t09:00:00z",
        "2026-12-03 09:00:00Z",
        "2026-13-03T09:00:00Z",
        "2026-02-30T09:00:00Z",
        "2026-12-03T25:00:00Z",
        "2026-12-03T09:00:00",
        "2026-12-03",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
        "é\u{1F600}\"\\\n",
    ]
}

const STRING_ATTRIBUTES: &[&str] = &[
    "id",
    "type",
    "subject",
    "time",
    "source",
    "agent",
    "session",
    "run",
    "step",
    "cause",
    "traceparent",
];

fn other_values() -> Vec<Value> {
    vec![
        Value::Null,
        json!(0),
        json!(1),
        json!(-1),
        json!(1.5),
        json!(u64::MAX),
        json!(18446744073709551616.0),
        json!("3"),
        json!(true),
        json!("0.1"),
        json!("0.2"),
        json!("info"),
        json!("error"),
        json!("loud"),
        json!("none"),
        json!("metadata"),
        json!("redacted"),
        json!("full"),
        json!({}),
        json!([]),
    ]
}

const OTHER_ATTRIBUTES: &[&str] = &["aep", "seq", "epoch", "severity", "capture", "data"];

#[test]
fn each_rule_alone() {
    let mut tally = Tally::default();
    tally.compare("base", &envelope(&[]));
    for name in STRING_ATTRIBUTES {
        tally.compare(&format!("no {name}"), &envelope(&[(name, Value::Null)]));
        for value in string_values() {
            tally.compare(name, &envelope(&[(name, json!(value))]));
        }
    }
    for name in OTHER_ATTRIBUTES {
        for value in other_values() {
            tally.compare(name, &envelope(&[(name, value)]));
        }
    }
    tally.assert_agreed();
    assert!(tally.valid > 10, "too few valid envelopes: {}", tally.valid);
    assert!(tally.refused > 10, "too few refused: {}", tally.refused);
    for expected in [
        "/id: shorter than 1 character",
        "/type: does not match the pattern",
        "/time: not an RFC 3339 date-time",
        "/source: not an absolute URI",
        "/traceparent: does not match the pattern",
        "/session: must be absent when `type` starts with `agent.`",
        "/seq: must be absent when `type` is one of",
        "(root): missing member `session`, required unless",
        "(root): missing member `seq`, required unless",
    ] {
        assert!(
            tally.violations.iter().any(|v| v.contains(expected)),
            "no violation has {expected:?}"
        );
    }
}

#[test]
fn scoping_rules_across_types() {
    let mut tally = Tally::default();
    let scoped = ["session", "run", "step", "seq", "epoch"];
    let types = [
        "agent.heartbeat",
        "agent.presence",
        "run.started",
        "progress.status",
        "control.cancel",
        "control.pause",
        "control.resume",
        "control.attention.respond",
        "control.accepted",
        "attention.routed",
        "attention.requested",
        "x.vendor.control.stop",
        "x.vendor.thing.happened",
        "agentx.thing",
        "bad",
    ];
    for event_type in types {
        // Every subset of the scoped attributes, present or absent.
        for mask in 0..(1u32 << scoped.len()) {
            let mut changes = vec![("type", json!(event_type))];
            for (bit, name) in scoped.iter().enumerate() {
                let value = if mask & (1 << bit) == 0 {
                    Value::Null
                } else if matches!(*name, "seq" | "epoch") {
                    json!(bit)
                } else {
                    json!(format!("{name}-1"))
                };
                changes.push((*name, value));
            }
            tally.compare(event_type, &envelope(&changes));
        }
    }
    tally.assert_agreed();
    assert!(tally.valid > 0 && tally.violations.len() > 100);
}

#[test]
fn several_violations_keep_their_order() {
    let mut tally = Tally::default();
    let cases: &[&[(&str, Value)]] = &[
        &[
            ("id", json!("")),
            ("type", json!("agent.heartbeat")),
            ("time", json!("yesterday")),
            ("source", json!("")),
            ("agent", json!("")),
            ("run", json!("")),
            ("step", json!("")),
            ("cause", json!("")),
            ("traceparent", json!("nope")),
        ],
        &[
            ("type", json!("control.cancel")),
            ("session", Value::Null),
            ("subject", json!("")),
            ("time", json!("2026-12-03")),
        ],
        &[
            ("type", json!("Nope")),
            ("session", Value::Null),
            ("seq", Value::Null),
            ("source", json!("no scheme")),
        ],
    ];
    for changes in cases {
        let text = envelope(changes);
        tally.compare("several", &text);
        let Outcome::Checked(v) = owned(&text) else {
            panic!("{text} does not decode");
        };
        assert!(v.len() >= 3, "{text}: {v:?}");
    }
    tally.assert_agreed();
}

#[test]
fn extension_attributes() {
    let mut tally = Tally::default();
    let names = [
        "ext",
        "a",
        "z9",
        "x_y",
        "Host",
        "x-b",
        "",
        "id",
        "type",
        "data",
        "seq",
        "averyveryverylongname1",
        "abcdefghijklmnopqrst",
        "é",
    ];
    let values = [
        json!("v"),
        json!(""),
        json!(1),
        json!(-1),
        json!(1.5),
        json!(true),
        json!(u64::MAX),
        json!({"a": 1}),
        json!([1]),
    ];
    for name in names {
        for value in &values {
            let mut map = base();
            map.insert(name.to_owned(), value.clone());
            tally.compare(name, &Value::Object(map).to_string());
        }
    }
    // Many extensions (past the scan limit), a duplicate among them, and
    // a bad envelope beside them.
    let many: String = (0..40).map(|i| format!(r#","e{i}":{i}"#)).collect();
    let line = envelope(&[("id", json!(""))]);
    let open = &line[..line.len() - 1];
    tally.compare("many", &format!("{open}{many}}}"));
    tally.compare("duplicate", &format!(r#"{open}{many},"e7":1}}"#));
    tally.compare("duplicate core", &format!(r#"{open},"id":"x"}}"#));
    tally.assert_agreed();
    assert!(tally.refused > 0 && !tally.violations.is_empty());
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

fn read(name: &str) -> String {
    let path = fixtures().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every fixture event: the valid lines, the raw texts of the invalid
/// envelopes, and the events (and expected events) of the other files;
/// then each valid line with each string attribute emptied or replaced.
#[test]
fn every_fixture_event() {
    let mut tally = Tally::default();
    let valid = read("valid.jsonl");
    let lines: Vec<&str> = valid.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() > 100);
    for line in &lines {
        tally.compare("valid.jsonl", line);
    }
    assert_eq!(tally.valid, lines.len(), "a valid line fails its checks");
    let cases: Vec<Value> = serde_json::from_str(&read("invalid-envelopes.json")).unwrap();
    assert!(!cases.is_empty());
    for case in &cases {
        tally.compare("invalid-envelopes.json", case["text"].as_str().unwrap());
    }
    for (file, members) in [
        ("invalid-events.json", &["event"][..]),
        ("invalid-payloads.json", &["event"][..]),
        ("down-level.json", &["event", "expected"][..]),
    ] {
        let cases: Vec<Value> = serde_json::from_str(&read(file)).unwrap();
        assert!(!cases.is_empty(), "{file}");
        for case in &cases {
            for member in members {
                tally.compare(file, &case[*member].to_string());
            }
        }
    }
    for line in &lines {
        let Value::Object(event) = serde_json::from_str::<Value>(line).unwrap() else {
            panic!("{line} is not an object");
        };
        for name in STRING_ATTRIBUTES {
            for value in [Value::Null, json!(""), json!("a b"), json!("agent.x")] {
                let mut changed = event.clone();
                if value.is_null() {
                    changed.remove(*name);
                } else {
                    changed.insert((*name).to_owned(), value);
                }
                tally.compare("mutated valid line", &Value::Object(changed).to_string());
            }
        }
    }
    tally.assert_agreed();
    assert!(tally.violations.len() > 100);
}
