//! Stage 2: lower the registry's schemas to the IR.
//!
//! This module is the definition of the accepted subset: every keyword is
//! either given a meaning here or refused with an [`Error`] naming the
//! file, the JSON Pointer and the construct.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::error::{child, Error};
use crate::ir::*;
use crate::load::{Document, Registry, TypeRow, ENVELOPE_FILE};
use crate::naming;

/// Annotation keywords: allowed on every schema, they become documentation.
const ANNOTATIONS: &[&str] = &[
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
const ROOT: &[&str] = &["$schema", "$id"];

/// Names the generated code defines or uses unqualified (its own types,
/// the prelude's, and its local `Visitor`s); a schema may not take them.
const RESERVED_TYPES: &[&str] = &[
    "String",
    "Option",
    "Some",
    "None",
    "Result",
    "Ok",
    "Err",
    "Vec",
    "Box",
    "Default",
    "Visitor",
    // The generic parameters of the generated serde impls.
    "A",
    "D",
    "E",
    "S",
    "BTreeMap",
    "LazyLock",
    "ExtensionName",
    "ExtensionValue",
    "Extensions",
    "Payload",
    "Data",
    "Error",
    "Extra",
    "Untyped",
    "Object",
    "RegisteredType",
    "Status",
    "Scope",
    "Category",
    "CategoryScope",
    "Severity",
    "Capture",
    "NackReason",
];
/// Module names the generated code uses itself, and crate names it uses.
const RESERVED_MODULES: &[&str] = &[
    "runtime",
    "registry",
    "envelope",
    "payload",
    "std",
    "core",
    "alloc",
    "serde",
    "serde_json",
    "serde_path_to_error",
    "regex",
];
/// How deep schemas may nest, counting through `$ref`s: deeper registries
/// are refused rather than risking the stack.
const MAX_DEPTH: usize = 100;
/// How deep generated types may nest (structs in structs and vectors).
const MAX_TYPE_DEPTH: usize = 64;
/// The member that keeps unknown payload members.
const EXTRA_FIELD: &str = "extra";
/// The member that keeps the envelope's extension attributes.
const EXTENSIONS_FIELD: &str = "extensions";

/// Lowers a loaded registry.
pub fn lower(registry: &Registry) -> Result<Ir, Error> {
    let mut lowerer = Lowerer::new(registry);
    let registry_ir = lowerer.registry()?;
    let shared: Vec<&Document> = registry
        .documents
        .values()
        .filter(|d| d.path != ENVELOPE_FILE && !d.path.starts_with("types/"))
        .collect();
    let payloads: Vec<(&TypeRow, &Document)> = registry
        .tables
        .types
        .iter()
        .filter_map(|row| Some((row, &registry.documents[row.schema.as_ref()?])))
        .collect();
    // Every module exists before any schema is lowered, so a `$ref` may
    // point into any file, and the module order is fixed: shared
    // definition files, then payloads in registry row order.
    lowerer.open(&registry.envelope, module_name(ENVELOPE_FILE))?;
    for doc in shared
        .iter()
        .copied()
        .chain(payloads.iter().map(|(_, d)| *d))
    {
        lowerer.open(doc, module_name(&doc.path))?;
    }
    // Shared definitions first, so their types are named after their
    // definitions and not after the first property that refers to them.
    for doc in &shared {
        lowerer.shared(doc)?;
    }
    let mut envelope = lowerer.envelope(&registry.envelope)?;
    let mut payload_irs = Vec::new();
    for (row, doc) in payloads {
        let name = naming::type_name(&row.name);
        lowerer.payload(doc, &name)?;
        payload_irs.push(PayloadIr {
            event_type: row.name.clone(),
            name,
            module: module_name(&doc.path),
        });
    }
    let mut modules = lowerer.finish();
    envelope.items = modules.remove(0).items;
    Ok(Ir {
        registry: registry_ir,
        envelope,
        payloads: payload_irs,
        modules,
    })
}

/// Where a schema is: its file, its JSON Pointer, and the module its
/// anonymous types go to.
#[derive(Clone)]
struct At<'a> {
    file: &'a str,
    pointer: String,
    module: String,
}

impl<'a> At<'a> {
    fn child(&self, token: &str) -> At<'a> {
        At {
            file: self.file,
            pointer: child(&self.pointer, token),
            module: self.module.clone(),
        }
    }

    fn error(&self, message: impl Into<String>) -> Error {
        Error::new(self.file, &self.pointer, message)
    }

    fn origin(&self) -> String {
        format!("{}#{}", self.file, self.pointer)
    }
}

struct PendingModule {
    name: String,
    source: String,
    items: Vec<Option<Item>>,
}

struct Lowerer<'r> {
    registry: &'r Registry,
    /// Capture levels, lowest first.
    levels: Vec<String>,
    /// Registry enums by their value lists: an enum schema listing exactly
    /// these values is that registry type, not a new one.
    registry_enums: Vec<(Vec<String>, TypePath)>,
    /// Type name -> where it was defined, to refuse collisions.
    names: BTreeMap<String, String>,
    /// Lowered `$defs`, by (file, name); `None` while being lowered.
    defs: BTreeMap<(String, String), Option<Ty>>,
    /// How many schemas are being lowered inside one another.
    depth: usize,
    /// How deeply each struct nests other structs and vectors.
    depths: BTreeMap<String, usize>,
    modules: Vec<PendingModule>,
}

impl<'r> Lowerer<'r> {
    fn new(registry: &'r Registry) -> Self {
        let tables = &registry.tables;
        let path = |name: &str| TypePath {
            module: "registry".to_owned(),
            name: name.to_owned(),
        };
        let names = RESERVED_TYPES
            .iter()
            .map(|n| ((*n).to_owned(), "a type of the generated code".to_owned()))
            .collect();
        Lowerer {
            registry,
            levels: tables.capture.order.clone(),
            registry_enums: vec![
                (tables.severity.levels.order.clone(), path("Severity")),
                (tables.capture.order.clone(), path("Capture")),
                (tables.nack_reasons.clone(), path("NackReason")),
            ],
            names,
            defs: BTreeMap::new(),
            depth: 0,
            depths: BTreeMap::new(),
            modules: Vec::new(),
        }
    }

    fn finish(self) -> Vec<Module> {
        self.modules
            .into_iter()
            .map(|m| Module {
                name: m.name,
                source: m.source,
                items: m.items.into_iter().flatten().collect(),
            })
            .collect()
    }

    /// The registry tables with Rust names.
    fn registry(&self) -> Result<RegistryIr, Error> {
        let t = &self.registry.tables;
        let variants = |file: &str, values: &[String]| {
            let at = At {
                file,
                pointer: String::new(),
                module: "registry".to_owned(),
            };
            enum_variants(&at, values.to_vec())
        };
        let default_of = |values: &[(String, String)], default: &str| {
            values
                .iter()
                .find(|(v, _)| v == default)
                .map(|(_, variant)| variant.clone())
                .unwrap_or_default()
        };
        let type_names: Vec<String> = t.types.iter().map(|r| r.name.clone()).collect();
        let type_variants = variants("registry/types.json", &type_names)?;
        let category_names: Vec<String> = t.categories.iter().map(|c| c.name.clone()).collect();
        let category_variants = variants("registry/categories.json", &category_names)?;
        let severity = variants("registry/severity.json", &t.severity.levels.order)?;
        let capture = variants("registry/capture.json", &t.capture.order)?;
        Ok(RegistryIr {
            aep: t.aep.clone(),
            types: t
                .types
                .iter()
                .cloned()
                .zip(type_variants.into_iter().map(|(_, v)| v))
                .collect(),
            categories: t
                .categories
                .iter()
                .cloned()
                .zip(category_variants.into_iter().map(|(_, v)| v))
                .collect(),
            severity_default: default_of(&severity, &t.severity.levels.default),
            severity,
            severity_otlp: t.severity.otlp.clone(),
            severity_ocsf: t.severity.ocsf.clone(),
            capture_default: default_of(&capture, &t.capture.default),
            capture,
            nack_reasons: variants("registry/nack-reasons.json", &t.nack_reasons)?,
        })
    }

    // ----- documents ---------------------------------------------------

    /// A shared definition file: only `$defs`, every one lowered.
    fn shared(&mut self, doc: &'r Document) -> Result<(), Error> {
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
    fn payload(&mut self, doc: &'r Document, name: &str) -> Result<(), Error> {
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
    fn envelope(&mut self, doc: &'r Document) -> Result<Envelope, Error> {
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

    /// How deeply a type nests structs and vectors.
    fn type_depth(&self, ty: &Ty) -> usize {
        match ty {
            Ty::Array(item, _) => 1 + self.type_depth(item),
            Ty::Named(path) => self.depths.get(&path.name).copied().unwrap_or(1),
            _ => 0,
        }
    }

    /// An `if` test reads a member as a string: it must be a string or a
    /// string enum.
    fn check_tests(
        &self,
        at: &At<'_>,
        rules: &[Conditional],
        fields: &[Field],
    ) -> Result<(), Error> {
        for rule in rules {
            for (member, _) in &rule.when.tests {
                let stringy =
                    fields
                        .iter()
                        .find(|f| &f.json == member)
                        .is_some_and(|f| match &f.ty {
                            Ty::String(_) => true,
                            Ty::Named(path) => {
                                self.registry_enums.iter().any(|(_, p)| p == path)
                                    || self.enum_values(path).is_some()
                            }
                            _ => false,
                        });
                if !stringy {
                    return Err(at.child("if").error(format!(
                        "an `if` test on `{member}` needs a string or enum member"
                    )));
                }
            }
            let nested: Vec<Conditional> = std::iter::once(&rule.then)
                .chain(rule.otherwise.as_ref())
                .filter_map(|a| a.nested.as_deref().cloned())
                .collect();
            self.check_tests(at, &nested, fields)?;
        }
        Ok(())
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

    fn enum_values(&self, path: &TypePath) -> Option<Vec<String>> {
        let module = self.modules.iter().find(|m| m.name == path.module)?;
        module.items.iter().flatten().find_map(|item| match item {
            Item::Enum(e) if e.name == path.name => {
                Some(e.variants.iter().map(|(v, _)| v.clone()).collect())
            }
            _ => None,
        })
    }

    /// Opens the module a schema file's types go to.
    fn open(&mut self, doc: &Document, name: String) -> Result<(), Error> {
        let fail = |message: String| Err(Error::new(&doc.path, "", message));
        if name != "envelope" && RESERVED_MODULES.contains(&name.as_str()) {
            return fail(format!(
                "the file name becomes the module `{name}`, which the generated code uses"
            ));
        }
        if let Some(other) = self.modules.iter().find(|m| m.name == name) {
            return fail(format!(
                "the file name becomes the module `{name}`, as `{}` does",
                other.source
            ));
        }
        self.modules.push(PendingModule {
            name,
            source: doc.path.clone(),
            items: Vec::new(),
        });
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

    // ----- schemas -----------------------------------------------------

    /// Lowers one schema to a type; `hint` names it if it needs a name.
    fn schema(&mut self, at: &At<'r>, value: &'r Value, hint: &str) -> Result<Ty, Error> {
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
                Ok(Ty::String(StringRules {
                    min_length,
                    pattern,
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

    /// An object with `properties`, as a named struct.
    fn object(
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
    fn fields_struct(
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

    /// Resolves a `$ref` to a definition and lowers it once.
    fn reference(&mut self, at: &At<'r>, value: &Value) -> Result<Ty, Error> {
        let ref_at = at.child("$ref");
        let Value::String(reference) = value else {
            return Err(ref_at.error("`$ref` must be a string"));
        };
        let scheme = reference
            .split_once(':')
            .is_some_and(|(s, _)| !s.contains(['/', '#']));
        if scheme {
            return Err(ref_at.error(format!(
                "remote `$ref` \"{reference}\" is outside the subset"
            )));
        }
        let (file, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let target = if file.is_empty() {
            at.file.to_owned()
        } else {
            resolve(at.file, file)
                .filter(|t| self.registry.documents.contains_key(t))
                .ok_or_else(|| {
                    ref_at.error(format!(
                        "`$ref` \"{reference}\" names no schema file of the registry"
                    ))
                })?
        };
        let name = fragment
            .strip_prefix("/$defs/")
            .filter(|n| !n.is_empty() && !n.contains('/'))
            .ok_or_else(|| {
                ref_at.error(format!(
                    "`$ref` \"{reference}\" must point at `#/$defs/<name>`"
                ))
            })?
            .replace("~1", "/")
            .replace("~0", "~");
        let key = (target.clone(), name.clone());
        match self.defs.get(&key) {
            Some(Some(ty)) => Ok(ty.clone()),
            Some(None) => Err(ref_at.error(format!(
                "recursive `$ref` \"{reference}\": a definition that contains itself is outside the subset"
            ))),
            None => {
                let exists = self.registry.documents[&target]
                    .value
                    .get("$defs")
                    .and_then(|d| d.get(&name))
                    .is_some();
                if !exists {
                    return Err(ref_at.error(format!("`$ref` \"{reference}\" points at no definition")));
                }
                let def_at = At {
                    file: &self.registry.documents[&target].path,
                    pointer: child("/$defs", &name),
                    module: module_name(&target),
                };
                self.definition(def_at.file, &name, &def_at)
            }
        }
    }

    /// Lowers `$defs/<name>` of `file` unless it already is.
    fn definition(&mut self, file: &'r str, name: &str, at: &At<'r>) -> Result<Ty, Error> {
        let key = (file.to_owned(), name.to_owned());
        if let Some(Some(ty)) = self.defs.get(&key) {
            return Ok(ty.clone());
        }
        let doc = &self.registry.documents[file];
        let value = &doc.value["$defs"][name];
        if value.get("x-aep-capture").is_some() {
            // A level is a fact of a use site; one on the definition would apply nowhere.
            return Err(at.child("x-aep-capture").error(
                "`x-aep-capture` belongs where a definition is used, not on the definition",
            ));
        }
        self.defs.insert(key.clone(), None);
        let ty = self.schema(at, value, &naming::type_name(name))?;
        self.defs.insert(key, Some(ty.clone()));
        Ok(ty)
    }

    fn capture(&self, at: &At<'_>, value: &Value) -> Result<String, Error> {
        match value {
            Value::String(level) if self.levels.contains(level) => Ok(level.clone()),
            other => Err(at.error(format!(
                "`x-aep-capture` {other} is not a capture level ({})",
                self.levels.join(", ")
            ))),
        }
    }

    // ----- names and modules -------------------------------------------

    /// Takes a type name for the type at `at`, refusing a collision.
    fn claim(&mut self, at: &At<'_>, name: &str) -> Result<String, Error> {
        name_length(at, name)?;
        let origin = format!("{}#{}", at.file, at.pointer);
        if let Some(other) = self.names.get(name) {
            return Err(at.error(format!(
                "the Rust type name `{name}` is already taken by {other}"
            )));
        }
        self.names.insert(name.to_owned(), origin);
        Ok(name.to_owned())
    }

    fn module_mut(&mut self, at: &At<'_>) -> &mut PendingModule {
        let index = self
            .modules
            .iter()
            .position(|m| m.name == at.module)
            .expect("a module is opened before its schemas are lowered");
        &mut self.modules[index]
    }

    fn push(&mut self, at: &At<'_>, item: Item) {
        self.module_mut(at).items.push(Some(item));
    }

    fn path(&self, at: &At<'_>, name: String) -> Ty {
        Ty::Named(TypePath {
            module: at.module.clone(),
            name,
        })
    }
}

// ----- free helpers ----------------------------------------------------

fn document_at(doc: &Document) -> At<'_> {
    At {
        file: &doc.path,
        pointer: String::new(),
        module: module_name(&doc.path),
    }
}

/// The module name of a schema file: its file stem in `snake_case`, and
/// `envelope` for the envelope.
fn module_name(path: &str) -> String {
    if path == ENVELOPE_FILE {
        return "envelope".to_owned();
    }
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.strip_suffix(".schema.json").unwrap_or(file);
    naming::field(stem)
}

/// Resolves a relative file reference against the referring file.
fn resolve(from: &str, reference: &str) -> Option<String> {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for segment in reference.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

fn object<'v>(at: &At<'_>, value: &'v Value) -> Result<&'v Map<String, Value>, Error> {
    match value {
        Value::Object(map) => Ok(map),
        Value::Bool(b) => Err(at.error(format!("boolean schema `{b}` is outside the subset here"))),
        _ => Err(at.error("expected a schema object")),
    }
}

/// Refuses any keyword outside the subset, then any not in `allowed`.
fn only(at: &At<'_>, map: &Map<String, Value>, allowed: &[&[&str]]) -> Result<(), Error> {
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
fn known(at: &At<'_>, map: &Map<String, Value>) -> Result<(), Error> {
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

/// The Rust variant of each enum value, refusing two values that become
/// the same variant.
fn enum_variants(at: &At<'_>, values: Vec<String>) -> Result<Vec<(String, String)>, Error> {
    let mut variants: Vec<(String, String)> = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for value in values {
        let variant = naming::type_name(&value);
        name_length(at, &variant)?;
        if let Some(&other) = seen.get(&variant) {
            let other = &variants[other].0;
            return Err(at.error(format!(
                "enum values `{other}` and `{value}` both become the Rust variant `{variant}`"
            )));
        }
        seen.insert(variant.clone(), variants.len());
        variants.push((value, variant));
    }
    Ok(variants)
}

/// Longest Rust name the generator makes: far beyond any real schema,
/// short enough that rustc is never asked to digest a megabyte identifier.
const MAX_NAME: usize = 1024;

fn name_length(at: &At<'_>, name: &str) -> Result<(), Error> {
    if name.len() > MAX_NAME {
        return Err(at.error(format!(
            "a name becomes a Rust name of {} characters (at most {MAX_NAME})",
            name.len()
        )));
    }
    Ok(())
}

/// A `pattern`: a string the generated code can compile as a regex.
/// Escapes whose meaning differs between ECMA-262 (ASCII) and the `regex`
/// crate (Unicode) are refused, so a pattern never matches more than the
/// schema says.
fn pattern_at(at: &At<'_>, value: Option<&Value>) -> Result<String, Error> {
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

fn strings_at(at: &At<'_>, value: &Value) -> Result<Vec<String>, Error> {
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

fn primitive_list(at: &At<'_>, value: Option<&Value>) -> Result<Vec<Primitive>, Error> {
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
fn doc_of(map: &Map<String, Value>) -> Vec<String> {
    ["title", "description", "$comment"]
        .iter()
        .filter_map(|key| map.get(*key).and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// The `if`/`then`/`else` of an object schema, if it has one.
fn conditional(
    at: &At<'_>,
    map: &Map<String, Value>,
    fields: &[String],
) -> Result<Option<Conditional>, Error> {
    let Some(when) = map.get("if") else {
        for key in ["then", "else"] {
            if map.contains_key(key) {
                return Err(at.child(key).error(format!("`{key}` without `if`")));
            }
        }
        return Ok(None);
    };
    let if_at = at.child("if");
    let when_map = object(&if_at, when)?;
    only(&if_at, when_map, &[&["properties", "required", "$comment"]])?;
    let mut predicate = Predicate::default();
    if let Some(props) = when_map.get("properties") {
        let props_at = if_at.child("properties");
        let Value::Object(props) = props else {
            return Err(props_at.error("`properties` must be an object"));
        };
        for (name, test) in props {
            let test_at = props_at.child(name);
            known_member(&test_at, name, fields)?;
            let test_map = object(&test_at, test)?;
            only(&test_at, test_map, &[&["const", "pattern", "$comment"]])?;
            let test = match (test_map.get("const"), test_map.get("pattern")) {
                (Some(Value::String(c)), None) => Test::Const(c.clone()),
                (None, Some(p)) => Test::Pattern(pattern_at(&test_at.child("pattern"), Some(p))?),
                _ => {
                    return Err(test_at.error("an `if` test is one string `const` or one `pattern`"))
                }
            };
            predicate.tests.push((name.clone(), test));
        }
    }
    if let Some(required) = when_map.get("required") {
        predicate.required = strings_at(&if_at.child("required"), required)?;
        for name in &predicate.required {
            known_member(&if_at.child("required"), name, fields)?;
        }
    }
    let then = match map.get("then") {
        Some(then) => assertion(&at.child("then"), then, fields)?,
        None => return Err(if_at.error("`if` without `then`")),
    };
    let otherwise = match map.get("else") {
        Some(otherwise) => Some(assertion(&at.child("else"), otherwise, fields)?),
        None => None,
    };
    Ok(Some(Conditional {
        when: predicate,
        then,
        otherwise,
    }))
}

fn assertion(at: &At<'_>, value: &Value, fields: &[String]) -> Result<Assertion, Error> {
    let map = object(at, value)?;
    only(
        at,
        map,
        &[&["required", "properties", "if", "then", "else", "$comment"]],
    )?;
    let mut out = Assertion::default();
    if let Some(required) = map.get("required") {
        out.required = strings_at(&at.child("required"), required)?;
        for name in &out.required {
            known_member(&at.child("required"), name, fields)?;
        }
    }
    if let Some(props) = map.get("properties") {
        let props_at = at.child("properties");
        let Value::Object(props) = props else {
            return Err(props_at.error("`properties` must be an object"));
        };
        for (name, schema) in props {
            let member_at = props_at.child(name);
            known_member(&member_at, name, fields)?;
            if schema != &Value::Bool(false) {
                return Err(
                    member_at.error("only `false` (the member must be absent) is supported here")
                );
            }
            out.forbidden.push(name.clone());
        }
    }
    out.nested = conditional(at, map, fields)?.map(Box::new);
    Ok(out)
}

fn known_member(at: &At<'_>, name: &str, fields: &[String]) -> Result<(), Error> {
    if fields.iter().any(|f| f == name) {
        Ok(())
    } else {
        Err(at.error(format!("`{name}` is not a property of this object")))
    }
}
