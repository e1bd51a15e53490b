//! Objects with `properties` as structs: their fields, defaults and
//! nesting depth.

use std::collections::{BTreeMap, BTreeSet};

use crate::json::{Map, Value};

use super::conditionals::conditional;
use super::keywords::{doc_of, only, strings_at, ANNOTATIONS};
use super::names::name_length;
use super::{At, Lowerer};
use crate::error::Error;
use crate::ir::*;
use crate::naming;

/// How deep generated types may nest (structs in structs and vectors).
const MAX_TYPE_DEPTH: usize = 64;

impl<'r> Lowerer<'r> {
    /// An object with `properties`, as a named struct.
    pub(super) fn object(
        &mut self,
        at: &At<'r>,
        map: &'r Map<String, Value>,
        hint: &str,
        extra_keys: &[&[&str]],
        catch_all: &str,
    ) -> Result<String, Error> {
        let mut allowed: Vec<&[&str]> = vec![
            ANNOTATIONS,
            &["type", "properties", "required", "if", "then", "else"],
        ];
        allowed.extend_from_slice(extra_keys);
        only(at, map, &allowed)?;
        // Keep the struct's place so it precedes the types nested in it.
        let items = &mut self.module_mut(at).items;
        items.push(None);
        let slot = items.len() - 1;
        let strukt = self.fields_struct(at, map, hint, catch_all)?;
        let name = strukt.name.clone();
        self.module_mut(at).items[slot] = Some(Item::Struct(strukt));
        Ok(name)
    }

    /// The fields and rules of an object, under a newly claimed name.
    pub(super) fn fields_struct(
        &mut self,
        at: &At<'r>,
        map: &'r Map<String, Value>,
        hint: &str,
        catch_all: &str,
    ) -> Result<Struct, Error> {
        let name = self.claim(at, hint)?;
        let props_at = at.child("properties");
        let properties = match map.get("properties") {
            Some(Value::Object(p)) => p,
            Some(_) => return Err(props_at.error("`properties` must be an object")),
            None => return Err(at.error("object without `properties`")),
        };
        let required = required_list(at, map.get("required"), properties)?;
        let required: BTreeSet<&String> = required.iter().collect();
        let mut idents: BTreeMap<String, &String> = BTreeMap::new();
        let mut fields: Vec<Field> = Vec::new();
        for (json, schema) in properties {
            let field_at = props_at.child(json);
            let ident = naming::field(json);
            if ident == catch_all {
                return Err(field_at.error(format!(
                    "property `{json}` becomes the Rust field `{ident}`, which keeps unknown members"
                )));
            }
            name_length(&field_at, &ident)?;
            if let Some(other) = idents.insert(ident.clone(), json) {
                return Err(field_at.error(format!(
                    "properties `{other}` and `{json}` both become the Rust field `{ident}`"
                )));
            }
            let ty = if at.module == "envelope" && at.pointer.is_empty() && json == "data" {
                self.payload_slot(&field_at, schema)?
            } else {
                self.schema(
                    &field_at,
                    schema,
                    &format!("{name}{}", naming::type_name(json)),
                )?
            };
            if let Some(default) = schema.get("default") {
                self.check_default(&field_at.child("default"), &ty, default)?;
            }
            let capture = match schema.get("x-aep-capture") {
                Some(level) => self.capture(&field_at.child("x-aep-capture"), level)?,
                // Absent means the registry's default level (`metadata`).
                None => self.registry.tables.capture.default.clone(),
            };
            let rank = |level: &str| self.levels.iter().position(|l| l == level);
            if required.contains(json)
                && rank(&capture) > rank(&self.registry.tables.capture.default)
            {
                // Down-levelling could not drop it without breaking the payload.
                return Err(field_at.child("x-aep-capture").error(format!(
                    "a required member cannot have a capture level above `{}`",
                    self.registry.tables.capture.default
                )));
            }
            fields.push(Field {
                json: json.clone(),
                ident,
                ty,
                required: required.contains(json),
                capture,
                default: schema.get("default").cloned(),
                doc: schema.as_object().map(doc_of).unwrap_or_default(),
            });
        }
        let names: Vec<String> = fields.iter().map(|f| f.json.clone()).collect();
        let rules: Vec<Conditional> = conditional(at, map, &names)?.into_iter().collect();
        self.check_tests(at, &rules, &fields)?;
        // rustc's drop checking overflows on deeply nested types; chains of
        // `$defs` can nest deeper than any one file.
        let depth = 1 + fields
            .iter()
            .map(|f| self.type_depth(&f.ty))
            .max()
            .unwrap_or(0);
        if depth > MAX_TYPE_DEPTH {
            return Err(at.error(format!("types nested more than {MAX_TYPE_DEPTH} deep")));
        }
        self.depths.insert(name.clone(), depth);
        Ok(Struct {
            name,
            doc: doc_of(map),
            origin: at.origin(),
            fields,
            rules,
        })
    }

    /// The envelope's `data`: a free-form object holding the payload.
    fn payload_slot(&mut self, at: &At<'r>, schema: &'r Value) -> Result<Ty, Error> {
        match self.schema(at, schema, "Data")? {
            Ty::FreeObject => Ok(Ty::PayloadSlot),
            _ => Err(at.error(
                "the envelope's `data` must be `\"type\": \"object\"` without `properties`",
            )),
        }
    }

    /// How deeply a type nests structs and vectors.
    fn type_depth(&self, ty: &Ty) -> usize {
        match ty {
            Ty::Array(item, _) => 1 + self.type_depth(item),
            Ty::Named(path) => self.depths.get(&path.name).copied().unwrap_or(1),
            _ => 0,
        }
    }

    /// A `default` must be a value of the member's (scalar) type.
    fn check_default(&self, at: &At<'_>, ty: &Ty, default: &Value) -> Result<(), Error> {
        let fits = match (ty, default) {
            (Ty::Integer(rules), Value::Number(n)) if rules.unsigned() => n.is_u64(),
            (Ty::Integer(_), Value::Number(n)) => n.is_i64(),
            (Ty::Number(_), Value::Number(_))
            | (Ty::Boolean, Value::Bool(_))
            | (Ty::String(_), Value::String(_)) => true,
            (Ty::Named(path), Value::String(s)) => {
                let registry = self
                    .registry_enums
                    .iter()
                    .find(|(_, p)| p == path)
                    .map(|(v, _)| v.clone());
                match registry.or_else(|| self.enum_values(path)) {
                    Some(values) => values.contains(s),
                    None => {
                        return Err(
                            at.error("`default` is only supported on scalar and enum members")
                        )
                    }
                }
            }
            (Ty::Integer(_) | Ty::Number(_) | Ty::Boolean | Ty::String(_), _) => false,
            _ => return Err(at.error("`default` is only supported on scalar and enum members")),
        };
        if fits {
            Ok(())
        } else {
            Err(at.error(format!(
                "`default` {default} is not a value of the member's type"
            )))
        }
    }

    pub(super) fn enum_values(&self, path: &TypePath) -> Option<Vec<String>> {
        let module = self.modules.iter().find(|m| m.name == path.module)?;
        module.items.iter().flatten().find_map(|item| match item {
            Item::Enum(e) if e.name == path.name => {
                Some(e.variants.iter().map(|(v, _)| v.clone()).collect())
            }
            _ => None,
        })
    }
}

fn required_list(
    at: &At<'_>,
    value: Option<&Value>,
    properties: &Map<String, Value>,
) -> Result<Vec<String>, Error> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let required_at = at.child("required");
    let names = strings_at(&required_at, value)?;
    for (i, name) in names.iter().enumerate() {
        if !properties.contains_key(name) {
            return Err(required_at.child(&i.to_string()).error(format!(
                "`required` names `{name}`, which is not a property"
            )));
        }
    }
    Ok(names)
}
