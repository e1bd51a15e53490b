//! Stage 2: lower the registry's schemas to the IR.
//!
//! This module is the definition of the accepted subset: every keyword is
//! either given a meaning here or refused with an [`Error`] naming the
//! file, the JSON Pointer and the construct.
//!
//! [`lower`] drives one `Lowerer` over the registry; its methods and helpers
//! are split by concern: `registry` (the tables), `documents` (whole schema
//! files), `schema` (one schema to one type), `objects` (structs and their
//! fields), `references` (`$ref` and `$defs`), `conditionals` (`if` /
//! `then` / `else`), `capture` (the digest and redacted siblings and the
//! free-text members), `names` (type, variant and module names) and
//! `keywords` (the subset's keywords and readers for their values).

use std::collections::BTreeMap;

use crate::error::{child, Error};
use crate::ir::*;
use crate::load::{Document, Registry, TypeRow, ENVELOPE_FILE};
use crate::naming;

mod capture;
mod conditionals;
mod documents;
mod keywords;
mod names;
mod objects;
mod references;
mod registry;
mod schema;

use names::{module_name, RESERVED_TYPES};

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
            siblings: Vec::new(),
            free_text: Vec::new(),
        });
    }
    let mut modules = lowerer.finish();
    capture::relations(&modules, &mut payload_irs);
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
}

fn document_at(doc: &Document) -> At<'_> {
    At {
        file: &doc.path,
        pointer: String::new(),
        module: module_name(&doc.path),
    }
}
