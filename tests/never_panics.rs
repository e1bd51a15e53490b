//! Property tests with fixed seeds and bounded case counts: whatever the
//! input, decoding, typing, validating, down-levelling and generating end
//! in `Ok` or an error, never a panic (a stack overflow would abort the
//! test binary, so it fails too).

use std::panic::{catch_unwind, AssertUnwindSafe};

use aep_tests::{mutate_bytes, root, valid_lines, Rng, ScratchRegistry};
use aep_types::{Capture, Event};
use serde_json::{json, Map, Value};

/// Everything a consumer does with one line; panics propagate.
fn consume(bytes: &[u8]) -> bool {
    let located = Event::from_slice(bytes);
    let Ok(event) = serde_json::from_slice::<Event>(bytes) else {
        let error = located.expect_err("from_slice refuses what serde_json refuses");
        assert!(
            error.pointer().is_some(),
            "an envelope error has a place: {error}"
        );
        return false;
    };
    assert_eq!(located.as_ref().ok(), Some(&event), "from_slice agrees");
    if let Ok(payload) = event.payload() {
        // What decoded encodes, and reads back the same.
        let data = payload.to_data().expect("a decoded payload encodes");
        let again = aep_types::Payload::from_data(&event.type_, Some(&data));
        assert_eq!(again.as_ref().ok(), Some(&payload), "payload round trip");
    }
    let _ = event.validate();
    for ceiling in Capture::ALL {
        let forwarded = event.down_level(ceiling);
        let _ = forwarded.validate();
    }
    let text = serde_json::to_string(&event).expect("a decoded event encodes");
    let again: Event = serde_json::from_str(&text).expect("an encoded event decodes");
    assert_eq!(again, event, "decode(encode(event)) == event");
    true
}

#[test]
fn mutated_bytes_never_panic() {
    let corpus = valid_lines();
    let mut rng = Rng(0x0BAD_5EED_0000_0001);
    let (mut cases, mut decoded) = (0, 0);
    for _ in 0..20_000 {
        let mut bytes = corpus[rng.below(corpus.len())].clone().into_bytes();
        mutate_bytes(&mut rng, &mut bytes);
        let outcome = catch_unwind(AssertUnwindSafe(|| consume(&bytes)));
        let ok =
            outcome.unwrap_or_else(|_| panic!("panicked on {:?}", String::from_utf8_lossy(&bytes)));
        cases += 1;
        decoded += usize::from(ok);
    }
    for _ in 0..2_000 {
        let bytes: Vec<u8> = (0..rng.below(200)).map(|_| rng.next_u64() as u8).collect();
        catch_unwind(AssertUnwindSafe(|| consume(&bytes)))
            .unwrap_or_else(|_| panic!("panicked on {bytes:?}"));
        cases += 1;
    }
    let deep = format!(
        "{{\"aep\":\"0.1\",\"data\":{}{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    catch_unwind(AssertUnwindSafe(|| consume(deep.as_bytes())))
        .expect("deep nesting is an error, not a crash");
    eprintln!("{cases} byte-level cases, {decoded} of them decoded");
    assert!(
        decoded > 1_000,
        "the mutations keep enough events decodable to reach payload and down_level"
    );
}

/// A random JSON value that leans on schema keywords.
fn random_value(rng: &mut Rng, depth: usize) -> Value {
    const KEYS: &[&str] = &[
        "type",
        "properties",
        "items",
        "$ref",
        "enum",
        "const",
        "required",
        "if",
        "then",
        "else",
        "minimum",
        "maximum",
        "minLength",
        "pattern",
        "format",
        "x-aep-capture",
        "$defs",
        "default",
        "allOf",
        "oneOf",
        "description",
        "a",
        "type ",
        "",
    ];
    const STRINGS: &[&str] = &[
        "object",
        "string",
        "integer",
        "number",
        "boolean",
        "array",
        "null",
        "#/$defs/a",
        "../common.schema.json#/$defs/tool_ref",
        "metadata",
        "full",
        "date-time",
        "^[a-z]+$",
        "(",
        "",
        "é",
    ];
    match (depth, rng.below(8)) {
        (0, _) | (_, 0) => json!(STRINGS[rng.below(STRINGS.len())]),
        (_, 1) => json!(rng.below(3) as i64 - 1),
        (_, 2) => json!(rng.below(2) == 0),
        (_, 3) => Value::Null,
        (_, 4) => (0..rng.below(4))
            .map(|_| random_value(rng, depth - 1))
            .collect(),
        _ => {
            let mut map = Map::new();
            for _ in 0..rng.below(5) {
                map.insert(
                    KEYS[rng.below(KEYS.len())].to_owned(),
                    random_value(rng, depth - 1),
                );
            }
            Value::Object(map)
        }
    }
}

/// A random schema inside the subset, to reach emission and formatting.
fn subset_schema(rng: &mut Rng, depth: usize) -> Value {
    let names = ["a", "type", "b-c", "1x", "self", "gen_ai.x", "Δ", "_u"];
    match (depth, rng.below(8)) {
        (0, _) | (_, 0) => json!({"type": "string", "minLength": 1, "pattern": "^[a-z]*$"}),
        (_, 1) => json!({"type": "integer", "minimum": rng.below(3) as i64 - 1}),
        (_, 2) => json!({"type": "number", "maximum": 10, "x-aep-capture": "all"}),
        (_, 3) => {
            let values = &names[..1 + rng.below(names.len() - 1)];
            json!({ "enum": values })
        }
        (_, 4) => {
            let types = &["object", "string", "boolean"][..2 + rng.below(2)];
            json!({ "type": types })
        }
        (_, 5) => json!({"type": "array", "items": subset_schema(rng, depth - 1)}),
        _ => {
            let mut properties = Map::new();
            for _ in 0..rng.below(4) {
                properties.insert(
                    names[rng.below(names.len())].to_owned(),
                    subset_schema(rng, depth - 1),
                );
            }
            let required: Vec<&String> = properties.keys().take(rng.below(2)).collect();
            json!({"type": "object", "properties": properties, "required": required})
        }
    }
}

#[test]
fn arbitrary_schemas_never_panic_the_generator() {
    let mut rng = Rng(0x0BAD_5EED_0000_0002);
    let base = root().join("tests/oddities/schemas");
    let mut accepted = 0;
    const CASES: usize = 400;
    for _ in 0..CASES {
        let registry = ScratchRegistry::copy_of(&base);
        let schema = if rng.below(2) == 0 {
            random_value(&mut rng, 5)
        } else {
            subset_schema(&mut rng, 4)
        };
        let file = [
            "types/odd.names.schema.json",
            "types/odd.shapes.schema.json",
            "aep-event.schema.json",
        ][rng.below(3)];
        registry.edit(file, |doc| match rng.below(3) {
            0 => *doc = schema.clone(),
            1 => doc["properties"]["fuzzed"] = schema.clone(),
            _ => {
                doc["properties"]["fuzzed"] =
                    json!({"type": "object", "properties": {"inner": schema.clone()}})
            }
        });
        let outcome = catch_unwind(AssertUnwindSafe(|| aep_codegen::generate(registry.path())));
        let result =
            outcome.unwrap_or_else(|_| panic!("the generator panicked on {file} with {schema}"));
        if let Err(e) = &result {
            assert!(
                !e.message.contains("internal error"),
                "emitted code did not parse: {e}"
            );
        }
        accepted += usize::from(result.is_ok());
    }
    eprintln!("{CASES} arbitrary schemas, {accepted} accepted");
    assert!(
        accepted > CASES / 10,
        "enough schemas are accepted to reach emission"
    );
}
