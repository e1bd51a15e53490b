//! One schema to one type: scalars, arrays, type lists and string enums.

use std::collections::BTreeSet;

use crate::json::{Map, Value};

use super::keywords::{doc_of, known, object, only, pattern_at, primitive_list, ANNOTATIONS};
use super::names::enum_variants;
use super::{At, Lowerer, EXTRA_FIELD};
use crate::error::Error;
use crate::ir::*;

/// How deep schemas may nest, counting through `$ref`s: deeper registries
/// are refused rather than risking the stack.
const MAX_DEPTH: usize = 100;

impl<'r> Lowerer<'r> {
    /// Lowers one schema to a type; `hint` names it if it needs a name.
    pub(super) fn schema(
        &mut self,
        at: &At<'r>,
        value: &'r Value,
        hint: &str,
    ) -> Result<Ty, Error> {
        if self.depth >= MAX_DEPTH {
            return Err(at.error(format!(
                "schemas nested more than {MAX_DEPTH} deep (counting through `$ref`s)"
            )));
        }
        self.depth += 1;
        let ty = self.schema_at_depth(at, value, hint);
        self.depth -= 1;
        ty
    }

    fn schema_at_depth(&mut self, at: &At<'r>, value: &'r Value, hint: &str) -> Result<Ty, Error> {
        let map = object(at, value)?;
        known(at, map)?;
        if let Some(level) = map.get("x-aep-capture") {
            self.capture(&at.child("x-aep-capture"), level)?;
        }
        if let Some(reference) = map.get("$ref") {
            only(
                at,
                map,
                &[&["$ref", "title", "description", "$comment", "x-aep-capture"]],
            )?;
            return self.reference(at, reference);
        }
        if map.contains_key("const") || map.contains_key("enum") {
            return self.string_enum(at, map, hint);
        }
        let ty =
            match map.get("type") {
                None => return Err(at.error(
                    "schema without `type` (the subset needs `type`, `enum`, `const` or `$ref`)",
                )),
                Some(Value::Array(_)) => {
                    only(at, map, &[ANNOTATIONS, &["type"]])?;
                    let members = primitive_list(&at.child("type"), map.get("type"))?;
                    if members.len() < 2 {
                        return Err(at
                            .child("type")
                            .error("a type list needs at least two types"));
                    }
                    let name = self.claim(at, hint)?;
                    self.push(
                        at,
                        Item::Union(Union {
                            name: name.clone(),
                            doc: doc_of(map),
                            origin: at.origin(),
                            members,
                        }),
                    );
                    return Ok(self.path(at, name));
                }
                Some(Value::String(ty)) => ty.as_str(),
                Some(_) => {
                    return Err(at
                        .child("type")
                        .error("`type` must be a string or a list of strings"))
                }
            };
        match ty {
            "string" => {
                only(
                    at,
                    map,
                    &[ANNOTATIONS, &["type", "minLength", "pattern", "format"]],
                )?;
                let format = match map.get("format") {
                    None => None,
                    Some(Value::String(f)) if f == "date-time" || f == "uri" => Some(f.clone()),
                    Some(f) => {
                        return Err(at
                            .child("format")
                            .error(format!("unsupported `format` {f}")))
                    }
                };
                let min_length = match map.get("minLength") {
                    None => None,
                    Some(v) => Some(v.as_u64().ok_or_else(|| {
                        at.child("minLength")
                            .error("`minLength` must be a non-negative integer")
                    })?),
                };
                let pattern = match map.get("pattern") {
                    None => None,
                    v => Some(pattern_at(&at.child("pattern"), v)?),
                };
                let meaning = map
                    .get("description")
                    .and_then(Value::as_str)
                    .filter(|_| pattern.is_some())
                    .map(str::to_owned);
                Ok(Ty::String(StringRules {
                    min_length,
                    pattern,
                    meaning,
                    format,
                }))
            }
            "integer" | "number" => {
                only(at, map, &[ANNOTATIONS, &["type", "minimum", "maximum"]])?;
                let bound = |key: &str| match map.get(key) {
                    None => Ok(None),
                    Some(Value::Number(n)) => Ok(Some(n.clone())),
                    Some(_) => Err(at.child(key).error(format!("`{key}` must be a number"))),
                };
                let rules = NumberRules {
                    minimum: bound("minimum")?,
                    maximum: bound("maximum")?,
                };
                Ok(if ty == "integer" {
                    Ty::Integer(rules)
                } else {
                    Ty::Number(rules)
                })
            }
            "boolean" => {
                only(at, map, &[ANNOTATIONS, &["type"]])?;
                Ok(Ty::Boolean)
            }
            "object" if map.contains_key("properties") => {
                let name = self.object(at, map, hint, &[], EXTRA_FIELD)?;
                Ok(self.path(at, name))
            }
            "object" => {
                if map.contains_key("required") {
                    return Err(at
                        .child("required")
                        .error("`required` on an object without `properties`"));
                }
                only(at, map, &[ANNOTATIONS, &["type"]])?;
                Ok(Ty::FreeObject)
            }
            "array" => {
                only(at, map, &[ANNOTATIONS, &["type", "items"]])?;
                let items_at = at.child("items");
                let items = match map.get("items") {
                    None => return Err(at.error("`array` without `items`")),
                    Some(Value::Array(_)) => {
                        return Err(items_at.error("tuple `items` is outside the subset"))
                    }
                    Some(items) => items,
                };
                let capture = match items.get("x-aep-capture") {
                    Some(level) => Some(self.capture(&items_at.child("x-aep-capture"), level)?),
                    None => None,
                };
                let item = self.schema(&items_at, items, &format!("{hint}Item"))?;
                Ok(Ty::Array(Box::new(item), capture))
            }
            "null" => Err(at.child("type").error("type `null` is outside the subset")),
            other => Err(at.child("type").error(format!("unknown type `{other}`"))),
        }
    }

    /// A string `enum`, or a `const` as an enum of one value. An enum with
    /// exactly the values of a registry enum is that registry type.
    fn string_enum(
        &mut self,
        at: &At<'r>,
        map: &'r Map<String, Value>,
        hint: &str,
    ) -> Result<Ty, Error> {
        if map.contains_key("const") && map.contains_key("enum") {
            return Err(at.error("`const` and `enum` together"));
        }
        only(at, map, &[ANNOTATIONS, &["type", "enum", "const"]])?;
        if let Some(ty) = map.get("type") {
            if ty != "string" {
                return Err(at
                    .child("type")
                    .error("only string `enum` and `const` are in the subset"));
            }
        }
        let (values, values_at) = match (map.get("const"), map.get("enum")) {
            (Some(Value::String(c)), _) => (vec![c.clone()], at.child("const")),
            (Some(_), _) => {
                return Err(at
                    .child("const")
                    .error("only a string `const` is in the subset"))
            }
            (_, Some(Value::Array(items))) => {
                let enum_at = at.child("enum");
                let mut values = Vec::new();
                let mut seen = BTreeSet::new();
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) if seen.insert(s) => values.push(s.clone()),
                        Value::String(s) => {
                            return Err(enum_at
                                .child(&i.to_string())
                                .error(format!("duplicate enum value `{s}`")))
                        }
                        _ => {
                            return Err(enum_at
                                .child(&i.to_string())
                                .error("only string enum values are in the subset"))
                        }
                    }
                }
                if values.is_empty() {
                    return Err(enum_at.error("an empty `enum`"));
                }
                (values, enum_at)
            }
            _ => return Err(at.child("enum").error("`enum` must be an array")),
        };
        if let Some((_, path)) = self.registry_enums.iter().find(|(v, _)| *v == values) {
            return Ok(Ty::Named(path.clone()));
        }
        let variants = enum_variants(&values_at, values)?;
        let name = self.claim(at, hint)?;
        self.push(
            at,
            Item::Enum(Enum {
                name: name.clone(),
                doc: doc_of(map),
                origin: at.origin(),
                variants,
            }),
        );
        Ok(self.path(at, name))
    }

    pub(super) fn capture(&self, at: &At<'_>, value: &Value) -> Result<String, Error> {
        match value {
            Value::String(level) if self.levels.contains(level) => Ok(level.clone()),
            other => Err(at.error(format!(
                "`x-aep-capture` {other} is not a capture level ({})",
                self.levels.join(", ")
            ))),
        }
    }
}
