//! `mappings/`: the Annex A source-vocabulary mapping pins, one file per
//! vocabulary (`claude-code.json`, `codex.json`, ...), run through
//! `aep adapter map VOCABULARY`.
//!
//! A *pin* is what a mapping must make of one input: a member named
//! `expected`, `expected_*`, `*_expected`, `primary` or `companion` of an
//! object that holds an `input`, the `expected` of a status transition
//! (`prev`/`next`), or a `companion`/`primary` of an SSE mode entry (whose
//! input is the moment of the same name). Each pin becomes one input line
//! of one `aep adapter map` run; the arguments follow from the pin:
//!
//! | pin | arguments | input line |
//! |---|---|---|
//! | `expected` | none | the entry's `input` |
//! | `deltas_expected` | `--deltas` (acp: and `--ceiling redacted`) | the `input` |
//! | `companion`, `primary` | `--mode M` (under `ws_modes`: `--surface ws`) | the `input` |
//! | `expected_data`, `expected_data_metadata` (claude-code) | `--surface ENTRY --ceiling redacted` / `metadata` | the `input` |
//! | `todos` `expected` | `--surface todos` | `{prev, next}` |
//! | `status_transitions` `expected` | `--surface status` | `{prev, next}` |
//! | `sse_modes` `companion`, `primary` | `--surface sse --mode M` | `moments.NAME.input.event` |
//! | antigravity | as above | `{"hook", "input", "join"?}` |
//!
//! The output line and the pin are both read as a list of events (`null`
//! and `[]` are empty, an object is a list of one) and compared on `type`,
//! `data` and `subject`, and `step` where the vocabulary pins it; the
//! claude-code pins state `data` only. Inputs keep their member order.
//! Pins the runner cannot place are counted as not implemented.

use std::collections::BTreeMap;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::json;
use crate::report::{Case, Category};
use crate::Context;

const DIR: &str = "mappings";

/// The vocabularies whose pins state the envelope `step` too.
const WITH_STEP: &[&str] = &["agui", "antigravity", "cline", "openhands", "pi"];

/// Runs the category.
pub fn run(context: &Context) -> Category {
    let mut category = Category::new("mappings");
    let dir = context.fixtures.path(DIR);
    let mut files: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".json"))
            .collect(),
        Err(e) => {
            return Category::broken("mappings", format!("cannot read {}: {e}", dir.display()))
        }
    };
    files.sort();
    for file in files {
        match vocabulary(context, &file, &mut category.cases) {
            Ok(0) => {}
            Ok(pending) => category.not_implemented.push((file, pending)),
            Err(e) => category
                .cases
                .push(Case::fail(format!("{file}: unreadable"), e)),
        }
    }
    category
}

/// One pin: its name, the arguments and input line that run it, and
/// what it expects.
#[derive(Debug, Clone)]
struct Pin {
    name: String,
    args: Vec<String>,
    line: String,
    expected: Value,
}

/// Runs the pins of `file` into `cases`; returns how many of its pins
/// could not be placed.
fn vocabulary(context: &Context, file: &str, cases: &mut Vec<Case>) -> Result<usize, String> {
    let relative = format!("{DIR}/{file}");
    let text = context.fixtures.text(&relative)?;
    let root: Box<RawValue> =
        serde_json::from_str(&text).map_err(|e| format!("{relative}: not JSON: {e}"))?;
    let whole: Value =
        serde_json::from_str(&text).map_err(|e| format!("{relative}: not JSON: {e}"))?;
    let stem = file.strip_suffix(".json").unwrap_or(file);
    let mut pins = Vec::new();
    collect(stem, &root, &[], &root, &mut pins)?;
    let total = count_pins(&whole);
    let pending = total.saturating_sub(pins.len());
    // One run per argument list, the inputs in fixture order.
    let mut groups: BTreeMap<Vec<String>, Vec<usize>> = BTreeMap::new();
    for (i, pin) in pins.iter().enumerate() {
        groups.entry(pin.args.clone()).or_default().push(i);
    }
    let mut results: Vec<Option<Case>> = vec![None; pins.len()];
    for (args, members) in &groups {
        let mut command = vec!["adapter".to_owned(), "map".to_owned(), stem.to_owned()];
        command.extend(args.iter().cloned());
        let shown = command.join(" ");
        let input: String = members
            .iter()
            .map(|&i| format!("{}\n", pins[i].line))
            .collect();
        let argv: Vec<&str> = command.iter().map(String::as_str).collect();
        let outcome = context.aep.run(&argv, input.as_bytes());
        let lines: Result<Vec<String>, String> = match outcome {
            Err(e) => Err(e),
            Ok(output) if output.code != Some(0) => {
                Err(format!("`aep {shown}`: {}", output.status_line()))
            }
            Ok(output) => Ok(output.stdout.lines().map(str::to_owned).collect()),
        };
        for (k, &i) in members.iter().enumerate() {
            let pin = &pins[i];
            let case = match &lines {
                Err(e) => Case::fail(pin.name.clone(), e.clone()),
                Ok(lines) => match lines.get(k) {
                    None => Case::fail(
                        pin.name.clone(),
                        format!("`aep {shown}` wrote no line for this input"),
                    ),
                    Some(line) => Case::with(pin.name.clone(), compare(stem, &pin.expected, line)),
                },
            };
            results[i] = Some(case);
        }
    }
    cases.extend(results.into_iter().flatten());
    Ok(pending)
}

/// The members of a JSON object, in the order the text lists them
/// (`None` when the value is not an object).
fn members(raw: &RawValue) -> Option<Vec<(String, Box<RawValue>)>> {
    if !raw.get().trim_start().starts_with('{') {
        return None;
    }
    serde_json::from_str::<Ordered>(raw.get()).ok().map(|o| o.0)
}

/// An object's members in text order.
struct Ordered(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Box<RawValue>>()? {
                    out.push((k, v));
                }
                Ok(Ordered(out))
            }
        }
        deserializer.deserialize_map(V)
    }
}

fn member<'a>(members: &'a [(String, Box<RawValue>)], name: &str) -> Option<&'a RawValue> {
    members
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_ref())
}

/// Finds the pins under `raw` (at `path` in the file) into `pins`.
fn collect(
    stem: &str,
    raw: &RawValue,
    path: &[String],
    root: &RawValue,
    pins: &mut Vec<Pin>,
) -> Result<(), String> {
    let Some(object) = members(raw) else {
        return Ok(());
    };
    let name = |key: &str| {
        let mut parts = vec![format!("{stem}.json")];
        parts.extend(path.iter().cloned());
        parts.push(key.to_owned());
        parts.join(" ")
    };
    let under = |section: &str| path.iter().any(|p| p == section);
    let entry = path.last().map(String::as_str).unwrap_or_default();
    if let Some(input) = member(&object, "input") {
        let line = if stem == "antigravity" {
            let mut line = String::from("{");
            if let Some(hook) = member(&object, "hook") {
                line.push_str(&format!("\"hook\":{},", minify(hook.get())));
            }
            line.push_str(&format!("\"input\":{}", minify(input.get())));
            if let Some(join) = member(&object, "join") {
                line.push_str(&format!(",\"join\":{}", minify(join.get())));
            }
            line.push('}');
            line
        } else {
            minify(input.get())
        };
        for (key, pinned) in &object {
            let args: Vec<&str> = match key.as_str() {
                "expected" if under("todos") || entry == "todos" => vec!["--surface", "todos"],
                "expected" => vec![],
                "deltas_expected" if stem == "acp" => vec!["--deltas", "--ceiling", "redacted"],
                "deltas_expected" => vec!["--deltas"],
                "companion" | "primary" if under("ws_modes") => {
                    vec!["--surface", "ws", "--mode", key]
                }
                "companion" | "primary" => vec!["--mode", key],
                "expected_data" => vec!["--surface", entry, "--ceiling", "redacted"],
                "expected_data_metadata" => vec!["--surface", entry, "--ceiling", "metadata"],
                _ => continue,
            };
            pins.push(pin(name(key), &args, line.clone(), pinned)?);
        }
        return Ok(());
    }
    if let (Some(prev), Some(next), Some(expected)) = (
        member(&object, "prev"),
        member(&object, "next"),
        member(&object, "expected"),
    ) {
        let line = format!(
            "{{\"prev\":{},\"next\":{}}}",
            minify(prev.get()),
            minify(next.get())
        );
        pins.push(pin(
            name("expected"),
            &["--surface", "status"],
            line,
            expected,
        )?);
        return Ok(());
    }
    if under("sse_modes")
        && (member(&object, "companion").is_some() || member(&object, "primary").is_some())
    {
        // The input is the bare bus event of the moment of the same name.
        let event = members(root)
            .and_then(|top| member(&top, "moments").and_then(members))
            .and_then(|moments| member(&moments, entry).and_then(members))
            .and_then(|moment| member(&moment, "input").and_then(members))
            .and_then(|input| member(&input, "event").map(|e| minify(e.get())));
        let Some(event) = event else {
            return Ok(());
        };
        for key in ["companion", "primary"] {
            if let Some(pinned) = member(&object, key) {
                let args = ["--surface", "sse", "--mode", key];
                pins.push(pin(name(key), &args, event.clone(), pinned)?);
            }
        }
        return Ok(());
    }
    for (key, value) in &object {
        let mut deeper = path.to_vec();
        deeper.push(key.clone());
        collect(stem, value, &deeper, root, pins)?;
    }
    Ok(())
}

fn pin(name: String, args: &[&str], line: String, pinned: &RawValue) -> Result<Pin, String> {
    let expected = serde_json::from_str(pinned.get())
        .map_err(|e| format!("{name}: the pin is not JSON: {e}"))?;
    Ok(Pin {
        name,
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        line,
        expected,
    })
}

/// JSON text on one line: the whitespace outside strings removed, member
/// order kept.
fn minify(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

/// What differs between a pin and an output line, both read as lists of
/// events and compared on the members the vocabulary's pins state.
fn compare(stem: &str, expected: &Value, line: &str) -> Vec<String> {
    let got: Value = match serde_json::from_str(line) {
        Ok(got) => got,
        Err(e) => {
            return vec![format!(
                "the output is not JSON ({e}): {}",
                json::shorten(line)
            )]
        }
    };
    if let Some(error) = got.get("error").and_then(Value::as_str) {
        return vec![format!("the input was not mapped: {error}")];
    }
    if stem == "claude-code" {
        // These pins are the `data` of the one event.
        return match got.get("data") {
            Some(data) => json::diff(expected, data),
            None => vec![format!("no event with data: {}", json::shorten(line))],
        };
    }
    let members: &[&str] = if WITH_STEP.contains(&stem) {
        &["type", "data", "subject", "step"]
    } else {
        &["type", "data", "subject"]
    };
    let project = |value: &Value| -> Value {
        let events = match value {
            Value::Null => Vec::new(),
            Value::Array(items) => items.clone(),
            other => vec![other.clone()],
        };
        Value::Array(
            events
                .iter()
                .map(|event| {
                    let mut kept = serde_json::Map::new();
                    for m in members {
                        if let Some(v) = event.get(*m) {
                            kept.insert((*m).to_owned(), v.clone());
                        }
                    }
                    Value::Object(kept)
                })
                .collect(),
        )
    };
    let (expected, got) = (project(expected), project(&got));
    if expected.as_array().map(Vec::len) != got.as_array().map(Vec::len) {
        return vec![format!(
            "expected {} event(s), got {}: {}",
            expected.as_array().map_or(0, Vec::len),
            got.as_array().map_or(0, Vec::len),
            json::shorten(&got.to_string())
        )];
    }
    json::diff(&expected, &got)
}

/// Whether member `key` of an object with an `input` is a pin.
fn is_pin(key: &str) -> bool {
    key == "expected"
        || key.starts_with("expected_")
        || key.ends_with("_expected")
        || key == "primary"
        || key == "companion"
}

/// How many pins `value` holds, at any depth: the pins of every object
/// with an `input`, the `expected` of every status transition
/// (`prev`/`next`), and the `companion`/`primary` of every mode entry.
fn count_pins(value: &Value) -> usize {
    match value {
        Value::Object(members) => {
            let here = if members.contains_key("input") {
                members.keys().filter(|k| is_pin(k)).count()
            } else if members.contains_key("prev") && members.contains_key("next") {
                usize::from(members.contains_key("expected"))
            } else {
                members
                    .keys()
                    .filter(|k| *k == "companion" || *k == "primary")
                    .count()
            };
            here + members
                .iter()
                .filter(|(k, _)| *k != "input")
                .map(|(_, v)| count_pins(v))
                .sum::<usize>()
        }
        Value::Array(items) => items.iter().map(count_pins).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pins_are_the_expectations_of_inputs_transitions_and_modes() {
        let fixture = json!({
            "$comment": "x",
            "identity": {"session_from": "session_id", "expected": "not a pin: no input"},
            "hooks": {
                "A": {"input": {"expected": "inside an input"}, "expected": null},
                "B": {"input": {}, "primary": {}, "companion": null, "$comment": "y"},
                "C": {"input": {}, "expected_data": {}, "expected_data_metadata": {},
                      "deltas_expected": {}}
            },
            "todos": [{"input": {}, "expected": []}],
            "status_transitions": {"a": {"prev": null, "next": "running", "expected": []}},
            "sse_modes": {"modes": {"a": {"companion": null, "primary": {}}}}
        });
        assert_eq!(count_pins(&fixture), 10);
    }

    #[test]
    fn minifying_keeps_strings_and_order() {
        assert_eq!(
            minify("{ \"b\" : [1, 2],\n \"a\": \"x y \\\" z\" }"),
            r#"{"b":[1,2],"a":"x y \" z"}"#
        );
    }

    #[test]
    fn outputs_and_pins_compare_as_lists_of_events() {
        let pin = json!({"type": "run.finished", "data": {}});
        assert!(compare("codex", &pin, r#"{"type":"run.finished","data":{}}"#).is_empty());
        assert!(compare("codex", &pin, r#"[{"type":"run.finished","data":{}}]"#).is_empty());
        assert!(compare("codex", &json!(null), "[]").is_empty());
        assert!(!compare(
            "codex",
            &json!(null),
            r#"{"type":"run.finished","data":{}}"#
        )
        .is_empty());
        // `step` counts only where the vocabulary pins it.
        let stepped = r#"{"type":"run.finished","data":{},"step":"1"}"#;
        assert!(compare("codex", &pin, stepped).is_empty());
        assert!(!compare("cline", &pin, stepped).is_empty());
        // `true` is not `1`.
        let flag = json!({"type": "x.a.b.c", "data": {"f": true}});
        assert!(!compare("codex", &flag, r#"{"type":"x.a.b.c","data":{"f":1}}"#).is_empty());
        // claude-code pins are the data alone.
        assert!(compare(
            "claude-code",
            &json!({"k": 1}),
            r#"{"type":"t","data":{"k":1}}"#
        )
        .is_empty());
        assert!(!compare(
            "claude-code",
            &json!({"k": 1}),
            r#"{"type":"t","data":{"k":2}}"#
        )
        .is_empty());
        let error = compare("codex", &pin, r#"{"error":"bad"}"#);
        assert_eq!(error, ["the input was not mapped: bad"]);
    }
}
