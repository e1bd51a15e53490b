//! `EventRef` agrees with `Event`: on every line of the valid corpus, on
//! every invalid envelope and payload and on mutated lines it accepts and
//! refuses the same text, with the same error (message and pointer), the
//! same values and the same payload; and typing in one read
//! (`decode_typed`) agrees with decoding, then typing.

use aep_tests::{mutate_bytes, read_fixture, valid_lines, Report, Rng};
use aep_types::{Capture, Event, EventRef, ExtensionValueRef, Severity};
use serde_json::Value;

/// Every attribute read through the accessors equals `Event`'s field.
fn same_attributes(r: &EventRef<'_>, e: &Event) -> Result<(), String> {
    let pairs: [(&str, Option<&str>, Option<&str>); 12] = [
        ("id", Some(r.id()), Some(&e.id)),
        ("type", Some(r.type_()), Some(&e.type_)),
        ("time", Some(r.time()), Some(&e.time)),
        ("source", Some(r.source()), Some(&e.source)),
        ("agent", Some(r.agent()), Some(&e.agent)),
        ("subject", r.subject(), e.subject.as_deref()),
        ("session", r.session(), e.session.as_deref()),
        ("run", r.run(), e.run.as_deref()),
        ("step", r.step(), e.step.as_deref()),
        ("cause", r.cause(), e.cause.as_deref()),
        ("traceparent", r.traceparent(), e.traceparent.as_deref()),
        (
            "data",
            r.data().map(|d| d.get()),
            e.data.as_ref().map(|d| d.get()),
        ),
    ];
    for (name, borrowed, owned) in pairs {
        if borrowed != owned {
            return Err(format!("{name}: {borrowed:?} != {owned:?}"));
        }
    }
    let scalars = [
        (r.seq() == e.seq, "seq"),
        (r.epoch_or_default() == e.epoch_or_default(), "epoch"),
        (
            r.severity_or_default() == e.severity_or_default(),
            "severity",
        ),
        (r.capture_or_default() == e.capture_or_default(), "capture"),
        (
            r.extensions().len() == e.extensions.len(),
            "extension count",
        ),
        (
            r.dedupe_key() == (e.source.as_str(), e.id.as_str()),
            "dedupe key",
        ),
    ];
    if let Some((_, name)) = scalars.iter().find(|(same, _)| !same) {
        return Err(format!("{name} differs"));
    }
    for (name, value) in &e.extensions {
        let borrowed = r.extension(name.as_str()).map(ExtensionValueRef::to_owned);
        if borrowed.as_ref() != Some(value) {
            return Err(format!("extension {name}: {borrowed:?} != {value:?}"));
        }
    }
    Ok(())
}

/// Decodes `bytes` both ways and compares everything.
fn agree(bytes: &[u8]) -> Result<bool, String> {
    let owned = Event::from_slice(bytes);
    let borrowed = EventRef::from_slice(bytes);
    match (&borrowed, &owned) {
        (Ok(r), Ok(e)) => {
            if &r.to_owned() != e {
                return Err(format!("to_owned() {:?} != {e:?}", r.to_owned()));
            }
            same_attributes(r, e)?;
            if r.payload() != e.payload() {
                return Err(format!("payload {:?} != {:?}", r.payload(), e.payload()));
            }
        }
        (Err(a), Err(b)) if a == b => {}
        _ => return Err(format!("EventRef: {borrowed:?}\nEvent:    {owned:?}")),
    }
    // Typing in one read agrees with decoding, then typing.
    if let Ok(text) = std::str::from_utf8(bytes) {
        let two_pass = Event::from_json(text).and_then(|e| e.payload().map(|p| (e, p)));
        let single = Event::decode_typed(text);
        if single != two_pass {
            return Err(format!(
                "decode_typed {single:?}\ntwo passes   {two_pass:?}"
            ));
        }
        let single = EventRef::decode_typed(text).map(|(r, p)| (r.to_owned(), p));
        if single != two_pass {
            return Err(format!(
                "EventRef::decode_typed {single:?}\ntwo passes {two_pass:?}"
            ));
        }
    }
    // Through serde_json directly, as callers also decode.
    let owned = serde_json::from_slice::<Event>(bytes).map_err(|e| e.to_string());
    let borrowed = serde_json::from_slice::<EventRef<'_>>(bytes).map_err(|e| e.to_string());
    match (&borrowed, &owned) {
        (Ok(r), Ok(e)) if &r.to_owned() == e => {}
        (Err(a), Err(b)) if a == b => {}
        _ => {
            return Err(format!(
                "serde_json: EventRef {borrowed:?}\nEvent {owned:?}"
            ))
        }
    }
    Ok(owned.is_ok())
}

#[test]
fn agrees_on_every_valid_line() {
    let mut report = Report::default();
    for (i, line) in valid_lines().iter().enumerate() {
        let outcome = agree(line.as_bytes()).and_then(|ok| {
            ok.then_some(())
                .ok_or_else(|| "a valid line was refused".to_owned())
        });
        report.case(format!("valid.jsonl:{}", i + 1), outcome);
    }
    report.finish("valid.jsonl");
}

#[test]
fn agrees_on_every_invalid_envelope() {
    let cases: Vec<Value> =
        serde_json::from_str(&read_fixture("invalid-envelopes.json")).expect("fixture is JSON");
    let mut report = Report::default();
    for case in &cases {
        let text = case["text"].as_str().unwrap_or_default();
        let outcome = agree(text.as_bytes()).and_then(|ok| {
            (!ok)
                .then_some(())
                .ok_or_else(|| "an invalid envelope was accepted".to_owned())
        });
        report.case(case["name"].as_str().unwrap_or("?"), outcome);
    }
    report.finish("invalid-envelopes.json");
}

#[test]
fn agrees_on_mutated_lines() {
    let corpus = valid_lines();
    let mut rng = Rng(0x0BAD_5EED_0000_0014);
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..20_000 {
        let mut bytes = corpus[rng.below(corpus.len())].clone().into_bytes();
        mutate_bytes(&mut rng, &mut bytes);
        match agree(&bytes) {
            Ok(true) => accepted += 1,
            Ok(false) => refused += 1,
            Err(e) => panic!("{e}\non {:?}", String::from_utf8_lossy(&bytes)),
        }
    }
    assert!(
        accepted > 1_000 && refused > 1_000,
        "{accepted} accepted, {refused} refused"
    );
}

const BASE: &str = r#""aep":"0.1","id":"e1","type":"run.started","time":"2026-11-30T12:00:00Z","source":"urn:aep:agent:t","agent":"t","session":"s","seq":0"#;

#[test]
fn agrees_on_escapes_nulls_enums_and_many_extensions() {
    let many: String = (0..40).map(|i| format!(",\"x{i}\":{i}")).collect();
    let lines = [
        format!(r#"{{{BASE},"subject":"tab\there \u00e9","zone":"e\"u"}}"#),
        format!(r#"{{{BASE},"subject":null}}"#),
        format!(r#"{{{BASE},"zone":null}}"#),
        format!(r#"{{{BASE},"severity":"loud"}}"#),
        format!(r#"{{{BASE},"severity":3}}"#),
        format!(r#"{{{BASE},"capture":"full","epoch":2,"severity":"error"}}"#),
        format!(r#"{{{BASE},"seq":1}}"#),
        format!(r#"{{{BASE},"data":[1]}}"#),
        format!(r#"{{{BASE},"big":18446744073709551615}}"#),
        format!(r#"{{{BASE},"\u007aone":"eu","zone":"us"}}"#),
        format!(r#"{{{BASE}{many}}}"#),
        format!(r#"{{{BASE}{many},"x7":true}}"#),
        format!(r#"{{{BASE}{many},"x39":true}}"#),
        format!(r#"{{{}}}"#, BASE.replace("0.1", "0.2")),
        format!(
            r#"{{{BASE},"data":{}{}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        ),
        format!(
            r#"{{{BASE},"data":{{"a":{}1{}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        ),
    ];
    let mut report = Report::default();
    for line in &lines {
        report.case(line, agree(line.as_bytes()).map(|_| ()));
    }
    report.finish("hand-written lines");
    let event = EventRef::from_json(&lines[5]).expect("valid");
    assert_eq!(event.capture_or_default(), Capture::Full);
    assert_eq!(event.severity_or_default(), Severity::Error);
    assert_eq!(event.epoch_or_default(), 2);
    let event = EventRef::from_json(&lines[10]).expect("valid");
    assert_eq!(
        event.extension("x39"),
        Some(&ExtensionValueRef::Integer(39))
    );
    assert_eq!(event.extension("x40"), None);
    let error = EventRef::from_json(&lines[12]).expect_err("duplicate beyond the scan limit");
    assert!(
        error.to_string().contains("duplicate field `x39`"),
        "{error}"
    );
}

#[test]
fn agrees_on_every_invalid_payload() {
    let cases: Vec<Value> =
        serde_json::from_str(&read_fixture("invalid-payloads.json")).expect("fixture is JSON");
    let mut report = Report::default();
    for case in &cases {
        let text = case["event"].to_string();
        let outcome = agree(text.as_bytes()).and_then(|_| match EventRef::decode_typed(&text) {
            Err(e) if e.pointer() == case["pointer"].as_str() => Ok(()),
            other => Err(format!("decode_typed gave {other:?}")),
        });
        report.case(case["name"].as_str().unwrap_or("?"), outcome);
    }
    report.finish("invalid-payloads.json");
}

#[test]
fn typing_in_one_read_does_not_depend_on_member_order() {
    let mut report = Report::default();
    for (i, line) in valid_lines().iter().enumerate() {
        // `data` first, then the envelope in reverse name order; every
        // value as its exact text (a `Value` would reorder `data`'s own
        // members unless serde_json's `preserve_order` is on).
        let members: std::collections::BTreeMap<String, Box<serde_json::value::RawValue>> =
            serde_json::from_str(line).expect("a JSON object");
        let mut reordered: Vec<String> = members
            .iter()
            .rev()
            .map(|(k, v)| format!("{}:{}", Value::from(k.as_str()), v.get()))
            .collect();
        reordered.sort_by_key(|m| !m.starts_with("\"data\""));
        let text = format!("{{{}}}", reordered.join(","));
        let outcome = agree(text.as_bytes()).and_then(|ok| {
            let (event, payload) = EventRef::decode_typed(&text).map_err(|e| e.to_string())?;
            let original = Event::decode_typed(line).map_err(|e| e.to_string())?;
            // Re-encoding may rewrite escapes inside `data`: compare the
            // envelope without it, and the typed payload.
            let same = event.to_owned().with_data(None) == original.0.with_data(None)
                && payload == original.1;
            (ok && same)
                .then_some(())
                .ok_or_else(|| "reordering changed the result".to_owned())
        });
        report.case(format!("valid.jsonl:{} reordered", i + 1), outcome);
    }
    report.finish("valid.jsonl reordered");
}
