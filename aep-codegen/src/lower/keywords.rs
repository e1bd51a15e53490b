//! The keywords of the subset, and readers for their values that refuse
//! anything else.

use std::collections::BTreeSet;

use crate::json::{Map, Value};

use super::At;
use crate::error::Error;
use crate::ir::Primitive;

/// Annotation keywords: allowed on every schema, they become documentation.
pub(super) const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "$comment",
    "x-aep-capture",
    "default",
];
/// Every keyword the subset knows, wherever it may appear.
const KNOWN: &[&str] = &[
    "title",
    "description",
    "$comment",
    "x-aep-capture",
    "default",
    "$schema",
    "$id",
    "$defs",
    "$ref",
    "type",
    "properties",
    "required",
    "items",
    "enum",
    "const",
    "minLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "if",
    "then",
    "else",
    "allOf",
    "propertyNames",
    "additionalProperties",
];
/// Keywords only a document root may carry.
pub(super) const ROOT: &[&str] = &["$schema", "$id"];

pub(super) fn object<'v>(at: &At<'_>, value: &'v Value) -> Result<&'v Map<String, Value>, Error> {
    match value {
        Value::Object(map) => Ok(map),
        Value::Bool(b) => Err(at.error(format!("boolean schema `{b}` is outside the subset here"))),
        _ => Err(at.error("expected a schema object")),
    }
}

/// Refuses any keyword outside the subset, then any not in `allowed`.
pub(super) fn only(
    at: &At<'_>,
    map: &Map<String, Value>,
    allowed: &[&[&str]],
) -> Result<(), Error> {
    known(at, map)?;
    for key in map.keys() {
        if !allowed.iter().any(|set| set.contains(&key.as_str())) {
            return Err(at
                .child(key)
                .error(format!("keyword `{key}` is not supported here")));
        }
    }
    Ok(())
}

/// Refuses any keyword the subset does not know at all.
pub(super) fn known(at: &At<'_>, map: &Map<String, Value>) -> Result<(), Error> {
    match map.keys().find(|key| !KNOWN.contains(&key.as_str())) {
        Some(key) => Err(at.child(key).error(format!("unsupported keyword `{key}`"))),
        None => Ok(()),
    }
}

fn string_at(at: &At<'_>, value: Option<&Value>) -> Result<String, Error> {
    match value {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(at.error("expected a string")),
    }
}

/// A `pattern`: a string the generated code can compile as a regex.
/// Escapes whose meaning differs between ECMA-262 (ASCII) and the `regex`
/// crate (Unicode) are refused, so a pattern never matches more than the
/// schema says.
pub(super) fn pattern_at(at: &At<'_>, value: Option<&Value>) -> Result<String, Error> {
    let pattern = string_at(at, value)?;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(class @ ('d' | 'D' | 'w' | 'W' | 's' | 'S' | 'b' | 'B')) = chars.next() {
                return Err(at.error(format!(
                    "`\\{class}` means something else in JSON Schema (ECMA-262) than in Rust: write the class out, e.g. `[0-9]`"
                )));
            }
        }
    }
    match regex::Regex::new(&pattern) {
        Ok(_) => Ok(pattern),
        Err(e) => {
            // The regex error draws the pattern over several lines; keep the one-line cause.
            let text = e.to_string();
            let cause = text
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix("error: "))
                .unwrap_or(&text);
            Err(at.error(format!(
                "`pattern` is not a valid regular expression: {}",
                cause.trim()
            )))
        }
    }
}

pub(super) fn strings_at(at: &At<'_>, value: &Value) -> Result<Vec<String>, Error> {
    let Value::Array(items) = value else {
        return Err(at.error("expected an array of strings"));
    };
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        match item {
            Value::String(s) if seen.insert(s) => out.push(s.clone()),
            Value::String(s) => {
                return Err(at.child(&i.to_string()).error(format!("duplicate `{s}`")))
            }
            _ => return Err(at.child(&i.to_string()).error("expected a string")),
        }
    }
    Ok(out)
}

pub(super) fn primitive_list(at: &At<'_>, value: Option<&Value>) -> Result<Vec<Primitive>, Error> {
    let names = strings_at(at, value.unwrap_or(&Value::Null))?;
    names
        .iter()
        .enumerate()
        .map(|(i, name)| match name.as_str() {
            "object" => Ok(Primitive::Object),
            "string" => Ok(Primitive::String),
            "integer" => Ok(Primitive::Integer),
            "number" => Ok(Primitive::Number),
            "boolean" => Ok(Primitive::Boolean),
            "null" => Err(at
                .child(&i.to_string())
                .error("type `null` is outside the subset")),
            other => Err(at
                .child(&i.to_string())
                .error(format!("type list member `{other}` is outside the subset"))),
        })
        .collect()
}

/// Documentation paragraphs of a schema: title, description, `$comment`.
pub(super) fn doc_of(map: &Map<String, Value>) -> Vec<String> {
    ["title", "description", "$comment"]
        .iter()
        .filter_map(|key| map.get(key).and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}
