//! Whole schema files: shared definition files, payload schemas and the
//! envelope.

use crate::json::{Map, Value};

use super::conditionals::conditional;
use super::keywords::{object, only, pattern_at, primitive_list, ANNOTATIONS, ROOT};
use super::{document_at, At, Lowerer, EXTENSIONS_FIELD, EXTRA_FIELD};
use crate::error::Error;
use crate::ir::*;
use crate::load::Document;

impl<'r> Lowerer<'r> {
    /// A shared definition file: only `$defs`, every one lowered.
    pub(super) fn shared(&mut self, doc: &'r Document) -> Result<(), Error> {
        let at = document_at(doc);
        let map = object(&at, &doc.value)?;
        only(
            &at,
            map,
            &[ROOT, &["title", "description", "$comment", "$defs"]],
        )?;
        self.all_defs(&at, map)
    }

    /// A payload schema: an object, named after its event type.
    pub(super) fn payload(&mut self, doc: &'r Document, name: &str) -> Result<(), Error> {
        let at = document_at(doc);
        let map = object(&at, &doc.value)?;
        if map.get("type") != Some(&Value::String("object".into()))
            || !map.contains_key("properties")
        {
            return Err(
                at.error("a payload schema must be `\"type\": \"object\"` with `properties`")
            );
        }
        self.object(&at, map, name, &[ROOT, &["$defs"]], EXTRA_FIELD)?;
        self.all_defs(&at, map)
    }

    /// The envelope: the `Event` struct, its extension rule and scoping rules.
    pub(super) fn envelope(&mut self, doc: &'r Document) -> Result<Envelope, Error> {
        let at = At {
            module: "envelope".to_owned(),
            ..document_at(doc)
        };
        let map = object(&at, &doc.value)?;
        only(
            &at,
            map,
            &[
                ROOT,
                ANNOTATIONS,
                &[
                    "type",
                    "properties",
                    "required",
                    "propertyNames",
                    "additionalProperties",
                    "allOf",
                ],
            ],
        )?;
        if map.get("type") != Some(&Value::String("object".into())) {
            return Err(at.error("the envelope must be `\"type\": \"object\"`"));
        }
        let event = self.fields_struct(&at, map, "Event", EXTENSIONS_FIELD)?;

        let names_at = at.child("propertyNames");
        let names = object(
            &names_at,
            map.get("propertyNames")
                .ok_or_else(|| at.error("missing `propertyNames`"))?,
        )?;
        only(&names_at, names, &[&["pattern", "$comment", "description"]])?;
        let extension_name_pattern = pattern_at(&names_at.child("pattern"), names.get("pattern"))?;

        let values_at = at.child("additionalProperties");
        let values = object(
            &values_at,
            map.get("additionalProperties")
                .ok_or_else(|| at.error("missing `additionalProperties`"))?,
        )?;
        only(&values_at, values, &[&["type", "$comment", "description"]])?;
        let members = primitive_list(&values_at.child("type"), values.get("type"))?;
        if members.contains(&Primitive::Object) {
            return Err(values_at
                .child("type")
                .error("extension attributes must be scalars, not `object`"));
        }
        let extension_value = Union {
            name: "ExtensionValue".to_owned(),
            doc: vec!["The value of an extension attribute.".to_owned()],
            origin: values_at.origin(),
            members,
        };

        let mut rules = event.rules.clone();
        if let Some(all) = map.get("allOf") {
            let all_at = at.child("allOf");
            let Value::Array(items) = all else {
                return Err(all_at.error("`allOf` must be an array"));
            };
            let fields: Vec<String> = event.fields.iter().map(|f| f.json.clone()).collect();
            for (i, item) in items.iter().enumerate() {
                let item_at = all_at.child(&i.to_string());
                let item_map = object(&item_at, item)?;
                only(&item_at, item_map, &[&["$comment", "if", "then", "else"]])?;
                match conditional(&item_at, item_map, &fields)? {
                    Some(rule) => rules.push(rule),
                    None => {
                        return Err(item_at.error("an `allOf` entry must be an `if`/`then` rule"))
                    }
                }
            }
        }
        self.check_tests(&at, &rules, &event.fields)?;
        let mut event = event;
        event.rules = rules;
        self.check_envelope(&at, &event)?;

        Ok(Envelope {
            source: doc.path.clone(),
            event,
            extension_name_pattern,
            extension_value,
            items: Vec::new(),
        })
    }

    /// The envelope attributes the generated code relies on.
    fn check_envelope(&self, at: &At<'_>, event: &Struct) -> Result<(), Error> {
        let field = |name: &str| {
            event.fields.iter().find(|f| f.json == name).ok_or_else(|| {
                at.child("properties")
                    .error(format!("the envelope has no `{name}` attribute"))
            })
        };
        let registry_type = |name: &str, ty: &str, file: &str| -> Result<(), Error> {
            match &field(name)?.ty {
                Ty::Named(p) if p.module == "registry" && p.name == ty => Ok(()),
                _ => Err(at
                    .child("properties")
                    .child(name)
                    .error(format!("`{name}` must list exactly the values of `{file}`"))),
            }
        };
        registry_type("severity", "Severity", "registry/severity.json")?;
        registry_type("capture", "Capture", "registry/capture.json")?;
        // The generated code reads `type` as a string to pick the payload.
        let event_type = field("type")?;
        if !event_type.required || !matches!(event_type.ty, Ty::String(_)) {
            return Err(at
                .child("properties")
                .child("type")
                .error("`type` must be a required string"));
        }
        // Down-levelling to `none` removes `data`, so it cannot be required.
        if field("data")?.required {
            return Err(at.child("required").error("`data` cannot be required"));
        }
        let aep = field("aep")?;
        let version_ok = match &aep.ty {
            Ty::Named(p) => self
                .enum_values(p)
                .is_some_and(|v| v == [self.registry.tables.aep.clone()]),
            _ => false,
        };
        if !version_ok {
            return Err(at.child("properties").child("aep").error(format!(
                "`aep` must be `const` \"{}\", the version of `registry/types.json`",
                self.registry.tables.aep
            )));
        }
        Ok(())
    }

    fn all_defs(&mut self, at: &At<'r>, map: &'r Map<String, Value>) -> Result<(), Error> {
        let Some(defs) = map.get("$defs") else {
            return Ok(());
        };
        let defs_at = at.child("$defs");
        let Value::Object(defs) = defs else {
            return Err(defs_at.error("`$defs` must be an object"));
        };
        for name in defs.keys() {
            self.definition(at.file, name, &defs_at.child(name))?;
        }
        Ok(())
    }
}
