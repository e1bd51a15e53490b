//! The CloudEvents bridge (AEP-0005 §1, §2, §5.1, §5.2, §5.5) against
//! hand-written fixtures and the project's valid-event corpus.

use std::path::PathBuf;

use aep::bridge::cloudevents::{
    forward, inverse, CloudEvent, ForwardError, InverseError, ATTRIBUTE_TABLE,
};
use aep::{Event, ExtensionName, ExtensionValue};
use serde_json::Value;

fn path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn fixtures() -> Value {
    let text = std::fs::read_to_string(path("tests/fixtures/bridge/cloudevents.json"))
        .expect("the CloudEvents fixtures");
    serde_json::from_str(&text).expect("the fixtures are JSON")
}

/// The events of the project's valid corpus.
fn corpus() -> Vec<Event> {
    let text = std::fs::read_to_string(path("../tests/fixtures/valid.jsonl"))
        .expect("tests/fixtures/valid.jsonl");
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("valid.jsonl:{}: {e}", i + 1))
        })
        .collect()
}

fn event(value: &Value) -> Event {
    serde_json::from_str(&value.to_string()).expect("a fixture event decodes")
}

fn cloudevent(value: &Value) -> CloudEvent {
    serde_json::from_str(&value.to_string()).expect("a fixture CloudEvent decodes")
}

/// `inverse(forward(e)) == e`, through the JSON text as a broker carries it.
fn assert_round_trip(e: &Event) {
    let ce = forward(e).unwrap_or_else(|err| panic!("{}: {err}", e.id));
    // CloudEvents types Integer as 32-bit; AEP's `seq` and `epoch` are
    // unbounded and B4 has no encoding step, so a larger value is the one
    // thing `check` may flag, and only for the attributes that carry one.
    let beyond: Vec<String> = ce
        .extensions
        .iter()
        .filter(|(_, v)| {
            v.as_i64().is_some_and(|i| i32::try_from(i).is_err())
                || v.is_u64() && v.as_i64().is_none()
        })
        .map(|(name, _)| format!("attribute `{name}` has"))
        .collect();
    let problems = ce.check().err().unwrap_or_default();
    assert_eq!(problems.len(), beyond.len(), "{}: {problems:?}", e.id);
    for (problem, prefix) in problems.iter().zip(&beyond) {
        assert!(
            problem.starts_with(prefix) && problem.ends_with("32-bit integer"),
            "{}: {problem}",
            e.id
        );
    }
    let text = serde_json::to_string(&ce).expect("a CloudEvent encodes");
    let received: CloudEvent = serde_json::from_str(&text).expect("and decodes");
    assert_eq!(received, ce, "{}", e.id);
    let back = inverse(&received).unwrap_or_else(|err| panic!("{}: {err}", e.id));
    assert!(back.dropped.is_empty(), "{}: {:?}", e.id, back.dropped);
    assert_eq!(&back.event, e, "{}", e.id);
    // Bit for bit modulo member order: the re-encoded event has the same
    // members with the same values, `data` text included.
    let original: Value = serde_json::to_value(e).expect("encodes");
    let again: Value = serde_json::to_value(&back.event).expect("encodes");
    assert_eq!(original, again, "{}", e.id);
    assert_eq!(
        e.data.as_ref().map(|d| d.get()),
        back.event.data.as_ref().map(|d| d.get())
    );
}

#[test]
fn forward_follows_the_table() {
    for case in fixtures()["forward"].as_array().expect("forward cases") {
        let name = case["name"].as_str().expect("a name");
        let ce = forward(&event(&case["event"])).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got: Value = serde_json::to_value(&ce).expect("encodes");
        assert_eq!(got, case["expected"], "{name}");
        assert_eq!(ce.check(), Ok(()), "{name}");
        assert_round_trip(&event(&case["event"]));
    }
}

#[test]
fn extension_names_the_bridge_writes_are_refused() {
    for case in fixtures()["reserved"].as_array().expect("reserved cases") {
        let name = case["name"].as_str().expect("a name");
        assert_eq!(
            forward(&event(&case["event"])),
            Err(ForwardError::ReservedName {
                name: name.to_owned()
            }),
            "{name}"
        );
    }
}

fn error_name(error: &InverseError) -> String {
    match error {
        InverseError::SpecVersion(_) => "SpecVersion".to_owned(),
        InverseError::ForeignType(_) => "ForeignType".to_owned(),
        InverseError::Missing(name) => format!("Missing:{name}"),
        InverseError::Invalid { name, .. } => format!("Invalid:{name}"),
        other => format!("{other:?}"),
    }
}

#[test]
fn inbound_cases() {
    for case in fixtures()["inbound"].as_array().expect("inbound cases") {
        let name = case["name"].as_str().expect("a name");
        let result = inverse(&cloudevent(&case["cloudevent"]));
        if let Some(expected) = case.get("error") {
            let error = result.expect_err(name);
            assert_eq!(error_name(&error), expected.as_str().unwrap(), "{name}");
            assert!(!error.to_string().is_empty());
            continue;
        }
        let inbound = result.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(inbound.event, event(&case["event"]), "{name}");
        let dropped: Vec<(String, String)> = inbound
            .dropped
            .iter()
            .map(|d| (d.name.clone(), format!("{:?}", d.reason)))
            .collect();
        let expected: Vec<(String, String)> =
            serde_json::from_value(case["dropped"].clone()).expect("dropped pairs");
        assert_eq!(dropped, expected, "{name}");
        for d in &inbound.dropped {
            assert!(d.to_string().contains(&format!("`{}`", d.name)), "{d}");
        }
    }
}

#[test]
fn a_foreign_type_is_an_error_the_caller_can_match() {
    let ce: CloudEvent = serde_json::from_str(
        r#"{"specversion":"1.0","id":"1","source":"/orders","type":"com.example.order.created"}"#,
    )
    .unwrap();
    match inverse(&ce) {
        Err(InverseError::ForeignType(t)) => assert_eq!(t, "com.example.order.created"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn malformed_cloudevents_do_not_decode() {
    for (text, message) in [
        (
            r#"{"id":"1","source":"/x","type":"t"}"#,
            "missing attribute `specversion`",
        ),
        (
            r#"{"specversion":"1.0","source":"/x","type":"t"}"#,
            "missing attribute `id`",
        ),
        (
            r#"{"specversion":"1.0","id":1,"source":"/x","type":"t"}"#,
            "attribute `id` must be a string",
        ),
        (
            r#"{"specversion":"1.0","id":"1","id":"2","source":"/x","type":"t"}"#,
            "duplicate attribute `id`",
        ),
        (
            r#"{"specversion":"1.0","id":"1","source":"/x","type":"t","x":1,"x":2}"#,
            "duplicate attribute `x`",
        ),
        (r#"[1]"#, "a CloudEvent as a JSON object"),
    ] {
        let error = serde_json::from_str::<CloudEvent>(text).expect_err(text);
        assert!(error.to_string().contains(message), "{text}: {error}");
    }
}

#[test]
fn check_names_what_breaks_cloudevents() {
    let ce: CloudEvent = serde_json::from_str(
        r#"{"specversion":"1.0","id":"","source":"a b","type":"t","time":"yesterday",
            "Bad":"x","big":2147483648,"fine":2147483647,"obj":{},"data":{},"data_base64":""}"#,
    )
    .unwrap();
    let problems = ce.check().expect_err("several problems");
    let expected = [
        "`id` is empty",
        "`source` is not a URI reference",
        "`time` `yesterday`",
        "both `data` and `data_base64`",
        "attribute name `Bad`",
        "attribute `big` has 2147483648",
        "attribute `obj` has {}",
    ];
    assert_eq!(problems.len(), expected.len(), "{problems:#?}");
    for (problem, expected) in problems.iter().zip(expected) {
        assert!(problem.contains(expected), "{problem} / {expected}");
    }
}

#[test]
fn every_corpus_event_round_trips() {
    let events = corpus();
    assert!(events.len() > 100);
    for e in &events {
        assert_round_trip(e);
    }
}

/// A small deterministic generator (xorshift64*), so failures replay.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self) -> bool {
        self.next() & 1 == 1
    }
    fn word(&mut self, alphabet: &[u8], max: u64) -> String {
        let len = 1 + self.below(max) as usize;
        (0..len)
            .map(|_| alphabet[self.below(alphabet.len() as u64) as usize] as char)
            .collect()
    }
}

/// A variation of `e`: optional attributes toggled, extension attributes
/// with random legal names and values, vendor types, data dropped.
fn vary(e: &Event, rng: &mut Rng) -> Event {
    let mut v = e.clone();
    let text = |rng: &mut Rng| Some(rng.word(b"abcXYZ09_-:/ \"\\", 12));
    if rng.chance() {
        v.subject = text(rng);
    }
    if rng.chance() {
        v.session = text(rng);
        v.run = text(rng);
        v.step = text(rng);
        v.cause = text(rng);
    }
    if rng.chance() {
        v.seq = rng.chance().then(|| rng.below(1 << 31));
        v.epoch = rng.chance().then(|| rng.below(1 << 31));
    }
    if rng.chance() {
        v.severity = rng
            .chance()
            .then(|| aep::Severity::ALL[rng.below(6) as usize]);
        v.capture = rng
            .chance()
            .then(|| aep::Capture::ALL[rng.below(4) as usize]);
    }
    if rng.chance() {
        v.traceparent = rng.chance().then(|| {
            format!(
                "00-{:016x}{:016x}-{:016x}-{:02x}",
                rng.next(),
                rng.next(),
                rng.next(),
                rng.below(256)
            )
        });
    }
    if rng.chance() {
        v.type_ = format!(
            "x.{}.tool.{}",
            rng.word(b"acme-9", 6),
            rng.word(b"abc_1", 6)
        );
    }
    if rng.below(4) == 0 {
        v.data = None;
    }
    if rng.chance() {
        v.time = format!(
            "2026-0{}-1{}T0{}:3{}:0{}.{}+0{}:30",
            1 + rng.below(9),
            rng.below(10),
            rng.below(10),
            rng.below(10),
            rng.below(10),
            rng.below(1000),
            rng.below(10)
        );
    }
    for _ in 0..rng.below(4) {
        let name = rng.word(b"abcdefghijklmnopqrstuvwxyz0123456789", 20);
        let Ok(name) = ExtensionName::new(name) else {
            continue;
        };
        let reserved = ATTRIBUTE_TABLE.iter().any(|(_, ce)| *ce == name.as_str())
            || ["specversion", "datacontenttype"].contains(&name.as_str());
        if reserved {
            // Refused by `forward`, as the fixtures pin; the variations
            // stay refusal-free.
            continue;
        }
        let value = match rng.below(3) {
            0 => ExtensionValue::String(rng.word(b"xyz 1", 8)),
            1 => ExtensionValue::Integer(rng.next() as i32 as i64),
            _ => ExtensionValue::Boolean(rng.chance()),
        };
        v.extensions.insert(name, value);
    }
    v
}

#[test]
fn generated_variations_round_trip() {
    let mut rng = Rng(0x0ae0_5eed);
    let mut count = 0;
    for e in corpus() {
        for _ in 0..25 {
            let v = vary(&e, &mut rng);
            assert_round_trip(&v);
            count += 1;
        }
    }
    assert!(count > 3000);
}

/// The `cloudevents-sdk` conversion: the corpus survives the SDK's
/// `Event`, except for the spelling of times not in UTC with milliseconds.
#[cfg(feature = "cloudevents")]
mod sdk {
    use super::*;
    use aep::bridge::cloudevents::{from_sdk, to_sdk, SdkError};
    use cloudevents::event::ExtensionValue as SdkValue;
    use cloudevents::AttributesReader;

    #[test]
    fn the_corpus_survives_the_sdk_event() {
        for e in corpus() {
            let sdk_event = to_sdk(&e).unwrap_or_else(|err| panic!("{}: {err}", e.id));
            assert_eq!(sdk_event.id(), e.id);
            assert_eq!(sdk_event.ty(), format!("dev.aep.{}", e.type_));
            assert_eq!(
                sdk_event.extension("aepagentid"),
                Some(&SdkValue::String(e.agent.clone()))
            );
            if let Some(seq) = e.seq {
                assert_eq!(
                    sdk_event.extension("aepsequence"),
                    Some(&SdkValue::Integer(seq as i64))
                );
            }
            let back = from_sdk(&sdk_event).unwrap_or_else(|err| panic!("{}: {err}", e.id));
            assert!(back.dropped.is_empty());
            // The instant survives, and its spelling when it was UTC with
            // milliseconds, as most of the corpus is.
            let again = to_sdk(&back.event).unwrap();
            assert_eq!(again.time(), sdk_event.time(), "{}", e.id);
            if e.time.ends_with('Z') && e.time.len() == 24 {
                assert_eq!(back.event.time, e.time);
            }
            // `data` comes back as the same JSON value; the SDK does not
            // keep its text (escapes may be spelled differently).
            let value = |d: &Option<aep::Data>| d.as_ref().map(|d| d.to_object().unwrap());
            assert_eq!(value(&back.event.data), value(&e.data), "{}", e.id);
            let mut back = back.event;
            back.time = e.time.clone();
            back.data = e.data.clone();
            assert_eq!(back, e, "{}", e.id);
        }
    }

    #[test]
    fn the_sdk_keeps_the_instant_not_the_spelling_of_time() {
        let e = event(
            &serde_json::json!({"aep":"0.1","id":"t1","type":"agent.idle",
            "time":"2026-11-30T14:00:00.31+02:00","source":"urn:x","agent":"a"}),
        );
        let back = from_sdk(&to_sdk(&e).unwrap()).unwrap().event;
        assert_eq!(back.time, "2026-11-30T12:00:00.310Z");
        let mut e = e;
        e.time = "2026-11-30T12:00:00.000001Z".into();
        let back = from_sdk(&to_sdk(&e).unwrap()).unwrap().event;
        assert_eq!(back.time, "2026-11-30T12:00:00.000001Z");
    }

    #[test]
    fn foreign_sdk_events_are_refused() {
        let foreign = cloudevents::EventBuilderV10::new()
            .id("1")
            .source("/orders")
            .ty("com.example.order.created")
            .build()
            .unwrap();
        use cloudevents::EventBuilder;
        assert!(matches!(
            from_sdk(&foreign),
            Err(SdkError::Inverse(InverseError::ForeignType(_)))
        ));
        let mut sequence_too_large = event(
            &serde_json::json!({"aep":"0.1","id":"t1","type":"session.ended",
            "time":"2026-11-30T12:00:00Z","source":"urn:x","agent":"a","session":"s"}),
        );
        sequence_too_large.seq = Some(u64::MAX);
        assert!(matches!(to_sdk(&sequence_too_large), Err(SdkError::Sdk(_))));
    }
}
