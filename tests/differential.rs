//! `Event::validate_schema` agrees with a real JSON Schema 2020-12 validator (the
//! `jsonschema` crate, formats asserted) over the fixture corpus and
//! thousands of deterministic mutations of it. Decoding is part of the
//! verdict: an event the types refuse counts as invalid.

use std::collections::BTreeMap;

use aep_tests::{read_fixture, root, Rng};
use aep_types::Event;
use serde_json::{json, Value};

/// How many mutated instances to judge.
const MUTANTS: usize = 20_000;

/// The oracle: the project's schemas compiled by `jsonschema`.
struct Oracle {
    envelope: jsonschema::Validator,
    payloads: BTreeMap<String, jsonschema::Validator>,
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
        let payloads = types["types"]
            .as_array()
            .expect("rows")
            .iter()
            .filter_map(|row| {
                let file = row["schema"].as_str()?;
                Some((
                    row["type"].as_str()?.to_owned(),
                    build(&read(&format!("types/{file}"))),
                ))
            })
            .collect();
        Oracle {
            envelope: build(&read("aep-event.schema.json")),
            payloads,
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

fn ours(event: &Value) -> Result<(), String> {
    let text = event.to_string();
    let decoded: Event = serde_json::from_str(&text).map_err(|e| format!("decode: {e}"))?;
    decoded.validate_schema().map_err(|v| v.to_string())
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

fn mutate(rng: &mut Rng, event: &mut Value, pool: &[Value]) {
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
            mutate(&mut rng, &mut event, &pool);
        }
        event
    }));
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
                "schema says valid={expected}, validate says {got:?}:\n  {event}"
            ));
        }
    }
    eprintln!(
        "judged {} instances: {valid} valid, {invalid} invalid",
        valid + invalid
    );
    assert!(
        invalid > MUTANTS / 4 && valid > MUTANTS / 10,
        "the mutations exercise both verdicts"
    );
    assert!(
        disagreements.is_empty(),
        "{} disagreement(s):\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
}
