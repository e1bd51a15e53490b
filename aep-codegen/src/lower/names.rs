//! Rust names for types, variants and modules, each claimed once and
//! checked against the names the generated code uses itself.

use std::collections::BTreeMap;

use super::{At, Lowerer, PendingModule};
use crate::error::Error;
use crate::ir::*;
use crate::load::{Document, ENVELOPE_FILE};
use crate::naming;

/// Names the generated code defines or uses unqualified (its own types,
/// the prelude's, and its local `Visitor`s); a schema may not take them.
pub(super) const RESERVED_TYPES: &[&str] = &[
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

impl<'r> Lowerer<'r> {
    /// Opens the module a schema file's types go to.
    pub(super) fn open(&mut self, doc: &Document, name: String) -> Result<(), Error> {
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

    /// Takes a type name for the type at `at`, refusing a collision.
    pub(super) fn claim(&mut self, at: &At<'_>, name: &str) -> Result<String, Error> {
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

    pub(super) fn module_mut(&mut self, at: &At<'_>) -> &mut PendingModule {
        let index = self
            .modules
            .iter()
            .position(|m| m.name == at.module)
            .expect("a module is opened before its schemas are lowered");
        &mut self.modules[index]
    }

    pub(super) fn push(&mut self, at: &At<'_>, item: Item) {
        self.module_mut(at).items.push(Some(item));
    }

    pub(super) fn path(&self, at: &At<'_>, name: String) -> Ty {
        Ty::Named(TypePath {
            module: at.module.clone(),
            name,
        })
    }
}

/// The module name of a schema file: its file stem in `snake_case`, and
/// `envelope` for the envelope.
pub(super) fn module_name(path: &str) -> String {
    if path == ENVELOPE_FILE {
        return "envelope".to_owned();
    }
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.strip_suffix(".schema.json").unwrap_or(file);
    naming::field(stem)
}

/// The Rust variant of each enum value, refusing two values that become
/// the same variant.
pub(super) fn enum_variants(
    at: &At<'_>,
    values: Vec<String>,
) -> Result<Vec<(String, String)>, Error> {
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

pub(super) fn name_length(at: &At<'_>, name: &str) -> Result<(), Error> {
    if name.len() > MAX_NAME {
        return Err(at.error(format!(
            "a name becomes a Rust name of {} characters (at most {MAX_NAME})",
            name.len()
        )));
    }
    Ok(())
}
