//! `Event::validate_schema` agrees with a real JSON Schema 2020-12 validator (the
//! `jsonschema` crate, formats asserted) over the fixture corpus and
//! thousands of deterministic mutations of it. Decoding is part of the
//! verdict: an event the types refuse counts as invalid.
//!
//! Two more oracles ride on the same instances: `Event::validate_capture`
//! agrees with a walk of the schemas' `x-aep-capture` annotations written
//! here, independently of the generated tables; and every number of a typed
//! payload, made non-finite on its way in, comes out of the encoder as an
//! error or as data both validators accept.

use std::collections::BTreeMap;

use aep_tests::{read_fixture, root, Rng};
use aep_types::{Event, Payload};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{json, Value};

/// How many mutated instances to judge.
const MUTANTS: usize = 20_000;

/// The oracle: the project's schemas compiled by `jsonschema`.
struct Oracle {
    envelope: jsonschema::Validator,
    payloads: BTreeMap<String, jsonschema::Validator>,
    /// The payload schemas as JSON, by event type, for the capture walk.
    documents: BTreeMap<String, Value>,
    common: Value,
}

impl Oracle {
    fn new() -> Oracle {
        let schemas = root().join("schemas");
        let read = |path: &str| -> Value {
            serde_json::from_str(&std::fs::read_to_string(schemas.join(path)).expect(path))
                .expect(path)
        };
        let common = read("common.schema.json");
        let build = |schema: &Value| {
            jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .should_validate_formats(true)
                .with_resource(
                    common["$id"].as_str().expect("common has an $id"),
                    jsonschema::Resource::from_contents(common.clone())
                        .expect("common is a resource"),
                )
                .build(schema)
                .expect("the schema compiles")
        };
        let types = read("registry/types.json");
        let documents: BTreeMap<String, Value> = types["types"]
            .as_array()
            .expect("rows")
            .iter()
            .filter_map(|row| {
                let file = row["schema"].as_str()?;
                Some((
                    row["type"].as_str()?.to_owned(),
                    read(&format!("types/{file}")),
                ))
            })
            .collect();
        let payloads = documents
            .iter()
            .map(|(t, schema)| (t.clone(), build(schema)))
            .collect();
        Oracle {
            envelope: build(&read("aep-event.schema.json")),
            payloads,
            documents,
            common,
        }
    }

    fn valid(&self, event: &Value) -> bool {
        let payload_ok = match (event.get("type").and_then(Value::as_str), event.get("data")) {
            (Some(t), Some(data)) => self.payloads.get(t).is_none_or(|v| v.is_valid(data)),
            _ => true,
        };
        self.envelope.is_valid(event) && payload_ok
    }
}

/// The capture scale, lowest first (AEP-0001 §8.2).
const LEVELS: [&str; 4] = ["none", "metadata", "redacted", "full"];

fn level(name: &str) -> usize {
    LEVELS
        .iter()
        .position(|l| *l == name)
        .expect("a capture level")
}

impl Oracle {
    /// The pointers of the payload members above the event's capture level,
    /// walking the payload schema's `x-aep-capture` annotations (absent
    /// means `metadata`, and so do members the schema does not describe).
    fn capture(&self, event: &Value) -> Vec<String> {
        let (Some(t), Some(data)) = (event["type"].as_str(), event.get("data")) else {
            return Vec::new();
        };
        let Some(document) = self.documents.get(t) else {
            return Vec::new();
        };
        let ceiling = level(event["capture"].as_str().unwrap_or("metadata"));
        let mut out = Vec::new();
        self.walk(document, document, data, ceiling, "/data".into(), &mut out);
        out.sort();
        out
    }

    /// Follows `$ref`s to `#/$defs/..` of `file` or of the common schema.
    fn resolve<'a>(&'a self, schema: &'a Value, file: &'a Value) -> (&'a Value, &'a Value) {
        match schema["$ref"].as_str() {
            Some(reference) => {
                let (target, name) = reference.split_once("#/$defs/").expect("a $defs reference");
                let file = if target.is_empty() {
                    file
                } else {
                    &self.common
                };
                self.resolve(&file["$defs"][name], file)
            }
            None => (schema, file),
        }
    }

    fn walk(
        &self,
        schema: &Value,
        file: &Value,
        data: &Value,
        ceiling: usize,
        at: String,
        out: &mut Vec<String>,
    ) {
        let (schema, file) = self.resolve(schema, file);
        let annotated = |s: &Value| s["x-aep-capture"].as_str().map(level);
        match data {
            Value::Object(members) => {
                for (key, value) in members {
                    let here = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                    match schema["properties"].get(key) {
                        Some(property) if annotated(property).unwrap_or(1) > ceiling => {
                            out.push(here)
                        }
                        Some(property) => self.walk(property, file, value, ceiling, here, out),
                        None if 1 > ceiling => out.push(here),
                        None => {}
                    }
                }
            }
            Value::Array(items) if schema.get("items").is_some() => {
                let item_schema = &schema["items"];
                for (i, item) in items.iter().enumerate() {
                    let here = format!("{at}/{i}");
                    match annotated(item_schema) {
                        Some(l) if l > ceiling => out.push(here),
                        _ => self.walk(item_schema, file, item, ceiling, here, out),
                    }
                }
            }
            _ => {}
        }
    }
}

fn decode(event: &Value) -> Result<Event, String> {
    Event::from_json(&event.to_string()).map_err(|e| format!("decode: {e}"))
}

fn ours(event: &Value) -> Result<(), String> {
    decode(event)?.validate_schema().map_err(|v| v.to_string())
}

fn ours_capture(event: &Event) -> Vec<String> {
    let mut found: Vec<String> = match event.validate_capture() {
        Ok(()) => Vec::new(),
        Err(violations) => violations.0.into_iter().map(|v| v.pointer).collect(),
    };
    found.sort();
    found
}

const TIMES: &[&str] = &[
    "2026-01-01T00:00:00Z",
    "2026-01-01t00:00:00z",
    "2026-01-01T00:00:00.5+05:30",
    "2024-02-29T12:00:00Z",
    "2026-12-31T23:59:60Z",
    "2026-12-31T18:59:60-05:00",
    "2026-12-31T12:59:60Z",
    "2026-02-29T00:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-01-01 00:00:00Z",
    "2026-01-01T00:00:00",
    "2026-01-01T25:00:00Z",
    "2026-01-01T00:60:00Z",
    "2026-01-01T00:00:00+24:00",
    "2026-01-01T00:00:00.Z",
    "",
];
const SOURCES: &[&str] = &[
    "urn:a:b",
    "https://x.example/p?q=1#f",
    "mailto:a@b.c",
    "https://[::1]:8080/x",
    "tag:x,2026:y",
    "",
    "no scheme",
    "/rel",
    "1http://x",
    "http://exa mple.com",
    "http://x/%zz",
    "http://x:port/",
];
const TYPES: &[&str] = &[
    "tool.requested",
    "agent.health",
    "control.cancel",
    "attention.routed",
    "progress.status",
    "x.v.tool.y",
    "x.v.control.stop",
    "x.v",
    "nope.thing",
    "tool",
    "Tool.requested",
    "message.user.submitted",
];
const TRACEPARENTS: &[&str] = &[
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b71-01",
];

fn pool() -> Vec<Value> {
    vec![
        json!(""),
        json!("x"),
        json!("select"),
        json!("2026-01-01T00:00:00Z"),
        json!(0),
        json!(-1),
        json!(7),
        json!(0.5),
        json!(100.5),
        json!(101),
        json!(true),
        json!({}),
        json!([]),
        json!(["x"]),
        json!(null),
    ]
}

/// Every path to a value inside `value`, as object keys and array indexes.
fn paths(value: &Value, prefix: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                prefix.push(json!(k));
                out.push(prefix.clone());
                paths(v, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                prefix.push(json!(i));
                out.push(prefix.clone());
                paths(v, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

/// Replaces (`Some`) or removes (`None`) the value at `path`.
fn set(value: &mut Value, path: &[Value], new: Option<Value>) {
    let (last, parents) = path.split_last().expect("non-empty path");
    let mut target = value;
    for step in parents {
        target = match step {
            Value::String(k) => &mut target[k.as_str()],
            Value::Number(i) => &mut target[i.as_u64().unwrap_or_default() as usize],
            _ => return,
        };
    }
    match (target, last, new) {
        (Value::Object(map), Value::String(k), Some(v)) => {
            map.insert(k.clone(), v);
        }
        (Value::Object(map), Value::String(k), None) => {
            map.remove(k);
        }
        (Value::Array(items), Value::Number(i), Some(v)) => {
            items[i.as_u64().unwrap_or_default() as usize] = v
        }
        (Value::Array(items), Value::Number(i), None) => {
            items.remove(i.as_u64().unwrap_or_default() as usize);
        }
        _ => {}
    }
}

/// Every path to a string inside `value`.
fn string_paths(value: &Value) -> Vec<Vec<Value>> {
    let mut all = Vec::new();
    paths(value, &mut Vec::new(), &mut all);
    all.retain(|path| {
        let mut target = value;
        for step in path {
            target = match step {
                Value::String(k) => &target[k.as_str()],
                Value::Number(i) => &target[i.as_u64().unwrap_or_default() as usize],
                _ => return false,
            };
        }
        target.is_string()
    });
    all
}

fn mutate(rng: &mut Rng, event: &mut Value, pool: &[Value], corpus: &[Value]) {
    match rng.below(16) {
        // serde's externally tagged form of a string: `"x"` -> `{"x": null}`.
        10 | 11 => {
            let all = string_paths(event);
            if all.is_empty() {
                return;
            }
            let path = rng.pick(&all).clone();
            let mut target: &Value = event;
            for step in &path {
                target = match step {
                    Value::String(k) => &target[k.as_str()],
                    Value::Number(i) => &target[i.as_u64().unwrap_or_default() as usize],
                    _ => return,
                };
            }
            let tagged = json!({ target.as_str().unwrap_or_default(): null });
            set(event, &path, Some(tagged));
            return;
        }
        // The event's level moves under its members.
        12 => {
            event["capture"] = json!(rng.pick(&LEVELS));
            return;
        }
        // A member of another event of the type moves in, whatever its level.
        13 | 14 => {
            let donors: Vec<&Value> = corpus
                .iter()
                .filter(|d| d["type"] == event["type"] && d["data"].is_object())
                .collect();
            if donors.is_empty() || !event["data"].is_object() {
                return;
            }
            let donor = rng.pick(&donors)["data"].as_object().expect("an object");
            let keys: Vec<&String> = donor.keys().collect();
            if keys.is_empty() {
                return;
            }
            let key = *rng.pick(&keys);
            event["data"][key.as_str()] = donor[key].clone();
            return;
        }
        _ => {}
    }
    let object = event.as_object_mut().expect("events are objects");
    match rng.below(10) {
        0 => {
            let key = *rng.pick(&["id", "agent", "subject", "session", "run", "step", "cause"]);
            if rng.below(2) == 0 {
                object.insert(key.into(), json!(""));
            } else {
                object.remove(key);
            }
        }
        1 => {
            object.insert("time".into(), json!(rng.pick(TIMES)));
        }
        2 => {
            object.insert("source".into(), json!(rng.pick(SOURCES)));
        }
        3 => {
            object.insert("type".into(), json!(rng.pick(TYPES)));
        }
        4 => {
            let key = *rng.pick(&["session", "seq", "run", "step"]);
            let value = match key {
                "seq" => {
                    let values = [json!(5), json!(-1), json!(1.5)];
                    rng.pick(&values).clone()
                }
                _ => json!("v1"),
            };
            if object.remove(key).is_none() {
                object.insert(key.into(), value);
            }
        }
        5 => {
            object.insert("traceparent".into(), json!(rng.pick(TRACEPARENTS)));
        }
        6 => {
            let (key, values) = *rng.pick(&[
                ("severity", &["debug", "critical", "loud"][..]),
                ("capture", &["none", "full", "secret"][..]),
            ]);
            object.insert(key.into(), json!(rng.pick(values)));
        }
        7 => {
            let name = *rng.pick(&["zz1", "region", "Zz", "a-b", "toolongname12345678901"]);
            let values = [
                json!("v"),
                json!(3),
                json!(-3),
                json!(true),
                json!(1.5),
                json!({"a": 1}),
                json!(null),
            ];
            object.insert(name.into(), rng.pick(&values).clone());
        }
        _ => {
            let Some(data) = object.get_mut("data") else {
                object.insert("data".into(), json!({}));
                return;
            };
            let mut all = Vec::new();
            paths(data, &mut Vec::new(), &mut all);
            if all.is_empty() || rng.below(8) == 0 {
                let replacements = [json!({}), json!([]), json!("x"), json!({"vendor": 1})];
                *data = rng.pick(&replacements).clone();
                return;
            }
            let path = rng.pick(&all).clone();
            let new = if rng.below(4) == 0 {
                None
            } else {
                Some(rng.pick(pool).clone())
            };
            set(data, &path, new);
        }
    }
}

#[test]
fn validate_agrees_with_a_json_schema_validator() {
    let oracle = Oracle::new();
    let corpus: Vec<Value> = read_fixture("valid.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("fixture is JSON"))
        .collect();
    let pool = pool();
    let mut rng = Rng(0x5EED_AE90_0006_0001);
    let mut disagreements = Vec::new();
    let (mut valid, mut invalid) = (0usize, 0usize);
    let instances = corpus.iter().cloned().chain((0..MUTANTS).map(|_| {
        let mut event = rng.pick(&corpus).clone();
        for _ in 0..=rng.below(2) {
            mutate(&mut rng, &mut event, &pool, &corpus);
        }
        event
    }));
    let mut above = 0usize;
    for event in instances {
        let expected = oracle.valid(&event);
        let got = ours(&event);
        if expected {
            valid += 1
        } else {
            invalid += 1
        }
        if expected != got.is_ok() && disagreements.len() < 20 {
            disagreements.push(format!(
                "schema says valid={expected}, validate_schema says {got:?}:\n  {event}"
            ));
        }
        // The capture rule, where the event is valid otherwise.
        if let (true, Ok(decoded)) = (expected, decode(&event)) {
            let (want, found) = (oracle.capture(&event), ours_capture(&decoded));
            above += usize::from(!want.is_empty());
            if want != found && disagreements.len() < 20 {
                disagreements.push(format!(
                    "capture: x-aep-capture says {want:?}, validate_capture says {found:?}:\n  {event}"
                ));
            }
        }
    }
    eprintln!(
        "judged {} instances: {valid} valid, {invalid} invalid; {above} valid ones with members above their capture",
        valid + invalid
    );
    assert!(
        invalid > MUTANTS / 4 && valid > MUTANTS / 10,
        "the mutations exercise both verdicts"
    );
    assert!(
        above > MUTANTS / 50,
        "the mutations move members above the capture level"
    );
    assert!(
        disagreements.is_empty(),
        "{} disagreement(s):\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
}

/// A deserializer over a `Value` that hands the payload types a non-finite
/// `f64` at one path instead of the number there (JSON text cannot).
struct Poisoned<'a> {
    value: &'a Value,
    /// The remaining path to the poisoned number; `None` off that path.
    path: Option<&'a [Value]>,
    poison: f64,
}

impl<'de> Deserializer<'de> for Poisoned<'de> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        let step = |key: &Value| match self.path {
            Some([first, rest @ ..]) if first == key => Some(rest),
            _ => None,
        };
        match self.value {
            Value::Number(_) if self.path == Some(&[]) => visitor.visit_f64(self.poison),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => visitor.visit_u64(u),
                (_, Some(i)) => visitor.visit_i64(i),
                _ => visitor.visit_f64(n.as_f64().unwrap_or_default()),
            },
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::String(text) => visitor.visit_borrowed_str(text),
            Value::Array(items) => visitor.visit_seq(Items {
                items: items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (v, step(&json!(i))))
                    .collect::<Vec<_>>()
                    .into_iter(),
                poison: self.poison,
            }),
            Value::Object(members) => visitor.visit_map(Members {
                members: members
                    .iter()
                    .map(|(k, v)| (k.as_str(), v, step(&json!(k))))
                    .collect::<Vec<_>>()
                    .into_iter(),
                next: None,
                poison: self.poison,
            }),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

type Entry<'a> = (&'a Value, Option<&'a [Value]>);

struct Items<'a> {
    items: std::vec::IntoIter<Entry<'a>>,
    poison: f64,
}

impl<'de> SeqAccess<'de> for Items<'de> {
    type Error = de::value::Error;
    fn next_element_seed<T: de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        match self.items.next() {
            Some((value, path)) => seed
                .deserialize(Poisoned {
                    value,
                    path,
                    poison: self.poison,
                })
                .map(Some),
            None => Ok(None),
        }
    }
}

struct Members<'a> {
    members: std::vec::IntoIter<(&'a str, &'a Value, Option<&'a [Value]>)>,
    next: Option<Entry<'a>>,
    poison: f64,
}

impl<'de> MapAccess<'de> for Members<'de> {
    type Error = de::value::Error;
    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        match self.members.next() {
            Some((key, value, path)) => {
                self.next = Some((value, path));
                let key = de::value::BorrowedStrDeserializer::<Self::Error>::new(key);
                seed.deserialize(key).map(Some)
            }
            None => Ok(None),
        }
    }
    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        let (value, path) = self.next.take().expect("a key came first");
        seed.deserialize(Poisoned {
            value,
            path,
            poison: self.poison,
        })
    }
}

/// Decodes the payload of `event_type` from `data` with the number at
/// `path` replaced by `poison`.
fn poisoned_payload(
    event_type: &str,
    data: &Value,
    path: &[Value],
    poison: f64,
) -> Option<Payload> {
    let deserializer = Poisoned {
        value: data,
        path: Some(path),
        poison,
    };
    // Through the typed payload of the event type: the `Payload` variant.
    let original = aep_types::Data::from_json(&data.to_string()).ok()?;
    let typed = Payload::from_data(event_type, Some(&original)).ok()?;
    macro_rules! decode_as {
        ($($variant:ident),* $(,)?) => {
            match typed {
                $(Payload::$variant(_) => serde::Deserialize::deserialize(deserializer).ok().map(Payload::$variant),)*
                _ => None,
            }
        };
    }
    decode_as!(
        AgentHealth,
        AgentHeartbeat,
        AgentIdle,
        AgentPresence,
        AssessmentEvaluationRecorded,
        AssessmentFeedbackReceived,
        AssessmentGuardrailRecorded,
        AttentionAnswered,
        AttentionRequested,
        AttentionResolved,
        AttentionRouted,
        AttentionTimeout,
        ControlAccepted,
        ControlAttentionRespond,
        ControlCancel,
        ControlPause,
        ControlRejected,
        ControlResume,
        DelegationSubagentStarted,
        DelegationSubagentStopped,
        ErrorRaised,
        ProgressArtifactProduced,
        ProgressStatus,
        ProgressTaskCompleted,
        ProgressTaskPlanned,
        ResourceCitationRecorded,
        ResourceRetrievalRequested,
        ResourceRetrievalReranked,
        ResourceRetrievalReturned,
        RunCancelled,
        RunFailed,
        RunFinished,
        RunStarted,
        RunStepFinished,
        RunStepStarted,
        SessionCompacted,
        SessionEnded,
        SessionStarted,
        StateDelta,
        StateSnapshot,
        ToolCompleted,
        ToolDenied,
        ToolFailed,
        ToolRequested
    )
}

#[test]
fn non_finite_numbers_never_encode_to_an_invalid_event() {
    let oracle = Oracle::new();
    let corpus: Vec<Value> = read_fixture("valid.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("fixture is JSON"))
        .collect();
    let mut problems = Vec::new();
    let (mut refused, mut typed) = (0usize, 0usize);
    for event in &corpus {
        let (Some(event_type), Some(data)) = (event["type"].as_str(), event.get("data")) else {
            continue;
        };
        // Off the path nothing is poisoned: every typed payload decodes.
        let untyped = matches!(
            aep_types::Data::from_json(&data.to_string())
                .map(|d| Payload::from_data(event_type, Some(&d))),
            Ok(Ok(Payload::Untyped(_)))
        );
        if !untyped && poisoned_payload(event_type, data, &[json!("-")], 0.0).is_none() {
            problems.push(format!(
                "{event_type}: not decoded through the poisoning deserializer"
            ));
        }
        let mut all = Vec::new();
        paths(data, &mut Vec::new(), &mut all);
        let target = |path: &[Value]| -> bool {
            let mut v = data;
            for step in path {
                v = match step {
                    Value::String(k) => &v[k.as_str()],
                    Value::Number(i) => &v[i.as_u64().unwrap_or_default() as usize],
                    _ => return false,
                };
            }
            v.is_number()
        };
        all.retain(|p| target(p));
        for path in &all {
            for poison in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                let Some(payload) = poisoned_payload(event_type, data, path, poison) else {
                    continue; // an integer member refuses a non-finite number when read
                };
                typed += 1;
                match payload.to_data() {
                    Err(e) if e.to_string().starts_with('/') => refused += 1,
                    Err(e) => {
                        problems.push(format!("{event_type} {path:?}: error without a place: {e}"))
                    }
                    Ok(written) => {
                        let mut again = event.clone();
                        again["data"] = serde_json::from_str(written.get()).expect("JSON");
                        if !oracle.valid(&again) || ours(&again).is_err() {
                            problems.push(format!(
                                "{event_type} {path:?} {poison}: wrote {}",
                                written.get()
                            ));
                        }
                    }
                }
            }
        }
    }
    eprintln!("{typed} poisoned payloads, {refused} refused by the encoder");
    assert!(refused > 20, "the corpus has typed numbers to poison");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
