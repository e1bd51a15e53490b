//! `mappings/`: the Annex A source-vocabulary mapping pins, one file per
//! vocabulary (`claude-code.json`, `codex.json`, ...).
//!
//! A *pin* is a member named `expected`, `expected_*`, `*_expected`,
//! `primary` or `companion` of an object that has an `input`: what the
//! mapping must make of that input. The project maps some entries of some
//! vocabularies ([`VOCABULARIES`]); each of their pins is a case, run
//! through the project's mapping and compared with the pin. Every other
//! pin is counted as not implemented, by file, neither passed nor failed.
//!
//! To add a vocabulary or an entry: a module under `mappings/` with its
//! [`Entry`] list, and a row in [`VOCABULARIES`].

mod claude_code;

use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::Value;

use crate::json;
use crate::report::{Case, Category};
use crate::Context;

const DIR: &str = "mappings";

/// One pinned output of an entry and how the project makes it: from the
/// vocabulary's agent name and the entry's `input` (as its JSON text, so
/// member order survives) to the output to compare with the pin.
#[derive(Debug, Clone, Copy)]
pub struct Pin {
    /// The pin's member name in the entry (`expected_data`, ...).
    pub key: &'static str,
    /// The mapping.
    pub map: fn(agent: &str, input: &RawValue) -> Result<Value, String>,
}

/// An entry of a vocabulary file the project maps, and its pins.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The entry's member name in the file (`ask_user_question`, ...).
    pub name: &'static str,
    /// The pins the project runs.
    pub pins: &'static [Pin],
}

/// The vocabularies the project maps: file name and entries. The agent
/// name a mapping is given is the file's stem (`claude-code`).
pub const VOCABULARIES: &[(&str, &[Entry])] = &[("claude-code.json", claude_code::ENTRIES)];

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
        let entries = VOCABULARIES
            .iter()
            .find(|(name, _)| *name == file)
            .map_or(&[][..], |(_, entries)| *entries);
        match vocabulary(context, &file, entries, &mut category.cases) {
            Ok(0) => {}
            Ok(pending) => category.not_implemented.push((file, pending)),
            Err(e) => {
                category
                    .cases
                    .push(Case::fail(format!("{file}: unreadable"), e));
            }
        }
    }
    category
}

/// Runs the pins of `file` the project implements (`entries`) into
/// `cases`; returns how many pins of the file are not implemented.
fn vocabulary(
    context: &Context,
    file: &str,
    entries: &[Entry],
    cases: &mut Vec<Case>,
) -> Result<usize, String> {
    let relative = format!("{DIR}/{file}");
    let text = context.fixtures.text(&relative)?;
    let whole: Value =
        serde_json::from_str(&text).map_err(|e| format!("{relative}: not JSON: {e}"))?;
    let raw: HashMap<String, Box<RawValue>> =
        serde_json::from_str(&text).map_err(|e| format!("{relative}: not a JSON object: {e}"))?;
    let agent = file.strip_suffix(".json").unwrap_or(file);
    let mut pending = count_pins(&whole);
    for entry in entries {
        let Some(raw_entry) = raw.get(entry.name) else {
            continue;
        };
        let members: HashMap<String, Box<RawValue>> = match serde_json::from_str(raw_entry.get()) {
            Ok(members) => members,
            Err(e) => {
                cases.push(Case::fail(
                    format!("{file} {}", entry.name),
                    format!("the entry is not a JSON object: {e}"),
                ));
                continue;
            }
        };
        for pin in entry.pins {
            let name = format!("{file} {} {}", entry.name, pin.key);
            let Some(expected) = members.get(pin.key) else {
                continue;
            };
            pending = pending.saturating_sub(1);
            cases.push(run_pin(agent, &members, pin, expected).map_or_else(
                |why| Case::fail(name.clone(), why),
                |failures| Case::with(name.clone(), failures),
            ));
        }
    }
    Ok(pending)
}

fn run_pin(
    agent: &str,
    members: &HashMap<String, Box<RawValue>>,
    pin: &Pin,
    expected: &RawValue,
) -> Result<Vec<String>, String> {
    let input = members
        .get("input")
        .ok_or("malformed entry: no member `input`")?;
    let expected: Value =
        serde_json::from_str(expected.get()).map_err(|e| format!("the pin is not JSON: {e}"))?;
    let got = (pin.map)(agent, input)?;
    Ok(json::diff(&expected, &got))
}

/// Whether member `key` of an object with an `input` is a pin.
fn is_pin(key: &str) -> bool {
    key == "expected"
        || key.starts_with("expected_")
        || key.ends_with("_expected")
        || key == "primary"
        || key == "companion"
}

/// How many pins `value` holds, at any depth.
fn count_pins(value: &Value) -> usize {
    match value {
        Value::Object(members) => {
            let here = if members.contains_key("input") {
                members.keys().filter(|k| is_pin(k)).count()
            } else {
                0
            };
            here + members.values().map(count_pins).sum::<usize>()
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
    fn pins_are_the_expectations_of_inputs_at_any_depth() {
        let fixture = json!({
            "$comment": "x",
            "identity": {"session_from": "session_id", "expected": "not a pin: no input"},
            "hooks": {
                "A": {"input": {"expected": "inside an input"}, "expected": null},
                "B": {"input": {}, "primary": {}, "companion": null, "$comment": "y"},
                "C": {"input": {}, "expected_data": {}, "expected_data_metadata": {},
                      "deltas_expected": {}}
            },
            "todos": [{"input": {}, "expected": []}]
        });
        assert_eq!(count_pins(&fixture), 7);
    }
}
