//! Stage 1: read the registry directory and check it is one consistent
//! registry. Knows JSON and the registry's own tables, nothing of Rust.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use crate::json::{Map, Value};

use crate::error::{child, Error};

/// The envelope schema's file name, at the registry root.
pub const ENVELOPE_FILE: &str = "aep-event.schema.json";

/// One parsed JSON file of the registry.
#[derive(Debug, Clone)]
pub struct Document {
    /// Path relative to the registry directory, `/`-separated.
    pub path: String,
    /// The parsed content.
    pub value: Value,
}

/// A registry read from disk: its schema documents and its tables.
#[derive(Debug, Clone)]
pub struct Registry {
    /// `aep-event.schema.json`.
    pub envelope: Document,
    /// Every `*.schema.json` file, keyed by relative path (the envelope,
    /// the payload schemas under `types/` and shared definition files).
    pub documents: BTreeMap<String, Document>,
    /// The `registry/*.json` tables.
    pub tables: Tables,
}

/// The facts of `registry/*.json`.
#[derive(Debug, Clone)]
pub struct Tables {
    /// The protocol version `types.json` is for.
    pub aep: String,
    /// `types.json` rows, in file order.
    pub types: Vec<TypeRow>,
    /// `categories.json` rows, in file order.
    pub categories: Vec<CategoryRow>,
    /// `severity.json`.
    pub severity: Severity,
    /// `capture.json`.
    pub capture: OrderedEnum,
    /// `nack-reasons.json`, in file order.
    pub nack_reasons: Vec<String>,
}

/// One registered event type.
#[derive(Debug, Clone)]
pub struct TypeRow {
    /// The dotted type name, e.g. `tool.requested`.
    pub name: String,
    /// `mandatory`, `optional` or `reserved`.
    pub status: String,
    /// `session`, `agent` or `command`.
    pub scope: String,
    /// The payload schema's relative path (`types/...`), if any.
    pub schema: Option<String>,
    /// One-line summary.
    pub summary: String,
}

/// One event category.
#[derive(Debug, Clone)]
pub struct CategoryRow {
    /// The category, the first segment of a type name.
    pub name: String,
    /// `session`, `agent` or `any`.
    pub scope: String,
    /// One-line summary.
    pub summary: String,
}

/// A totally ordered string enum with a default.
#[derive(Debug, Clone)]
pub struct OrderedEnum {
    /// Values, lowest first.
    pub order: Vec<String>,
    /// The value consumers assume when the attribute is absent.
    pub default: String,
}

/// The severity scale and its bridge mappings.
#[derive(Debug, Clone)]
pub struct Severity {
    /// Order and default.
    pub levels: OrderedEnum,
    /// OTLP `(severity_text, severity_number)` per level, in `order`.
    pub otlp: Vec<(String, u64)>,
    /// OCSF `severity_id` per level, in `order`.
    pub ocsf: Vec<u64>,
}

pub const STATUSES: &[&str] = &["mandatory", "optional", "reserved"];
pub const TYPE_SCOPES: &[&str] = &["session", "agent", "command"];
pub const CATEGORY_SCOPES: &[&str] = &["session", "agent", "any"];

/// Reads and cross-checks the registry under `dir`.
pub fn load(dir: &Path) -> Result<Registry, Error> {
    let mut documents = BTreeMap::new();
    for name in list(dir, "", |n| n.ends_with(".schema.json"))? {
        let doc = read(dir, &name)?;
        documents.insert(name, doc);
    }
    let payload_files = list(dir, "types", |_| true)?;
    for name in &payload_files {
        if !name.ends_with(".schema.json") {
            return Err(Error::new(
                name,
                "",
                "unexpected file in `types/` (payload schemas end in `.schema.json`)",
            ));
        }
        let doc = read(dir, name)?;
        documents.insert(name.clone(), doc);
    }
    let envelope = documents
        .get(ENVELOPE_FILE)
        .cloned()
        .ok_or_else(|| Error::new(ENVELOPE_FILE, "", "missing envelope schema"))?;

    let types = read(dir, "registry/types.json")?;
    let categories = read(dir, "registry/categories.json")?;
    let severity = read(dir, "registry/severity.json")?;
    let capture = read(dir, "registry/capture.json")?;
    let nack = read(dir, "registry/nack-reasons.json")?;

    let categories = categories_table(&categories)?;
    let (aep, types) = types_table(&types, &categories)?;
    let tables = Tables {
        aep,
        types,
        categories,
        severity: severity_table(&severity)?,
        capture: capture_table(&capture)?,
        nack_reasons: nack_table(&nack)?,
    };
    check_rows_and_files(&tables.types, &payload_files)?;
    Ok(Registry {
        envelope,
        documents,
        tables,
    })
}

/// Lists the file names in `dir/sub` that pass `keep`, sorted, as
/// registry-relative paths. A missing `types/` is an empty list.
fn list(dir: &Path, sub: &str, keep: impl Fn(&str) -> bool) -> Result<Vec<String>, Error> {
    let full = dir.join(sub);
    let shown = if sub.is_empty() { "." } else { sub };
    let entries = match fs::read_dir(&full) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !sub.is_empty() => {
            return Ok(Vec::new())
        }
        Err(e) => return Err(Error::new(shown, "", format!("cannot read directory: {e}"))),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|e| Error::new(shown, "", format!("cannot read directory: {e}")))?;
        if !entry.file_type().map(|t| t.is_file()).unwrap_or(false) {
            continue;
        }
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            return Err(Error::new(shown, "", "file name is not UTF-8"));
        };
        if keep(&name) {
            names.push(if sub.is_empty() {
                name
            } else {
                format!("{sub}/{name}")
            });
        }
    }
    names.sort();
    Ok(names)
}

/// Reads one file as UTF-8 JSON.
fn read(dir: &Path, path: &str) -> Result<Document, Error> {
    let bytes = fs::read(dir.join(path))
        .map_err(|e| Error::new(path, "", format!("cannot read file: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        Error::new(
            path,
            "",
            format!("invalid UTF-8 at byte {}", e.utf8_error().valid_up_to()),
        )
    })?;
    let value = serde_json::from_str(&text)
        .map_err(|e| Error::new(path, "", format!("malformed JSON: {e}")))?;
    Ok(Document {
        path: path.to_owned(),
        value,
    })
}

/// Every row's schema file exists and every payload file has exactly one row.
fn check_rows_and_files(rows: &[TypeRow], files: &[String]) -> Result<(), Error> {
    let files: BTreeSet<&str> = files.iter().map(String::as_str).collect();
    let mut claimed = BTreeMap::new();
    for (i, row) in rows.iter().enumerate() {
        let Some(schema) = &row.schema else { continue };
        let pointer = format!("/types/{i}/schema");
        if !files.contains(schema.as_str()) {
            return Err(Error::new(
                "registry/types.json",
                &pointer,
                format!(
                    "type `{}` names schema `{schema}`, which does not exist",
                    row.name
                ),
            ));
        }
        if let Some(other) = claimed.insert(schema.as_str(), &row.name) {
            return Err(Error::new(
                "registry/types.json",
                &pointer,
                format!(
                    "schema `{schema}` is claimed by both `{other}` and `{}`",
                    row.name
                ),
            ));
        }
    }
    match files.iter().find(|f| !claimed.contains_key(*f)) {
        Some(orphan) => Err(Error::new(
            orphan,
            "",
            "payload schema has no row in `registry/types.json`",
        )),
        None => Ok(()),
    }
}

fn categories_table(doc: &Document) -> Result<Vec<CategoryRow>, Error> {
    let table = Table::new(doc)?;
    table.only(&["$comment", "categories"])?;
    let mut rows = Vec::new();
    let mut seen = BTreeSet::new();
    for (pointer, row) in table.array("categories")? {
        let row = Table::at(doc, &pointer, row)?;
        row.only(&["name", "scope", "summary"])?;
        let name = row.string("name")?;
        if !seen.insert(name.clone()) {
            return Err(row.error("name", format!("duplicate category `{name}`")));
        }
        rows.push(CategoryRow {
            name,
            scope: row.one_of("scope", CATEGORY_SCOPES)?,
            summary: row.string("summary")?,
        });
    }
    Ok(rows)
}

fn types_table(
    doc: &Document,
    categories: &[CategoryRow],
) -> Result<(String, Vec<TypeRow>), Error> {
    let table = Table::new(doc)?;
    table.only(&["$comment", "aep", "types"])?;
    let aep = table.string("aep")?;
    let mut rows: Vec<TypeRow> = Vec::new();
    for (pointer, row) in table.array("types")? {
        let row = Table::at(doc, &pointer, row)?;
        row.only(&["type", "status", "scope", "schema", "summary"])?;
        let name = row.string("type")?;
        let category = name.split('.').next().unwrap_or_default();
        if name.split('.').count() < 2 || !categories.iter().any(|c| c.name == category) {
            return Err(row.error(
                "type",
                format!("type `{name}` is not `{{category}}.{{rest}}` with a registered category"),
            ));
        }
        if rows.iter().any(|r| r.name == name) {
            return Err(row.error("type", format!("duplicate type `{name}`")));
        }
        let schema = match row.get("schema")? {
            Value::Null => None,
            Value::String(file) if !file.is_empty() && !file.contains(['/', '\\']) => {
                Some(format!("types/{file}"))
            }
            _ => return Err(row.error("schema", "expected a file name under `types/` or null")),
        };
        rows.push(TypeRow {
            name,
            status: row.one_of("status", STATUSES)?,
            scope: row.one_of("scope", TYPE_SCOPES)?,
            schema,
            summary: row.string("summary")?,
        });
    }
    Ok((aep, rows))
}

fn severity_table(doc: &Document) -> Result<Severity, Error> {
    let table = Table::new(doc)?;
    table.only(&["$comment", "order", "default", "otlp", "ocsf"])?;
    let levels = ordered(&table)?;
    let otlp_table = table.object("otlp")?;
    let ocsf_table = table.object("ocsf")?;
    let mut otlp = Vec::new();
    let mut ocsf = Vec::new();
    for level in &levels.order {
        let entry = otlp_table.object(level)?;
        entry.only(&["severity_text", "severity_number"])?;
        otlp.push((
            entry.string("severity_text")?,
            entry.unsigned("severity_number")?,
        ));
        ocsf.push(ocsf_table.unsigned(level)?);
    }
    for (sub, pointer) in [(&otlp_table, "/otlp"), (&ocsf_table, "/ocsf")] {
        if let Some(extra) = sub.map.keys().find(|k| !levels.order.contains(k)) {
            return Err(Error::new(
                &doc.path,
                pointer,
                format!("`{extra}` is not a severity level"),
            ));
        }
    }
    Ok(Severity { levels, otlp, ocsf })
}

fn capture_table(doc: &Document) -> Result<OrderedEnum, Error> {
    let table = Table::new(doc)?;
    table.only(&["$comment", "order", "default"])?;
    ordered(&table)
}

fn ordered(table: &Table<'_>) -> Result<OrderedEnum, Error> {
    let order = table.strings("order")?;
    if order.is_empty() {
        return Err(table.error("order", "the order is empty"));
    }
    let default = table.string("default")?;
    if !order.contains(&default) {
        return Err(table.error(
            "default",
            format!("default `{default}` is not in the order"),
        ));
    }
    Ok(OrderedEnum { order, default })
}

fn nack_table(doc: &Document) -> Result<Vec<String>, Error> {
    let table = Table::new(doc)?;
    table.only(&["$comment", "reasons"])?;
    let reasons = table.strings("reasons")?;
    if reasons.is_empty() {
        return Err(table.error("reasons", "no reasons"));
    }
    Ok(reasons)
}

/// A JSON object of a registry table, with pointer-aware accessors.
struct Table<'a> {
    file: &'a str,
    pointer: String,
    map: &'a Map<String, Value>,
}

impl<'a> Table<'a> {
    fn new(doc: &'a Document) -> Result<Self, Error> {
        Table::at(doc, "", &doc.value)
    }

    fn at(doc: &'a Document, pointer: &str, value: &'a Value) -> Result<Self, Error> {
        match value {
            Value::Object(map) => Ok(Table {
                file: &doc.path,
                pointer: pointer.to_owned(),
                map,
            }),
            _ => Err(Error::new(&doc.path, pointer, "expected an object")),
        }
    }

    fn error(&self, key: &str, message: impl Into<String>) -> Error {
        Error::new(self.file, &child(&self.pointer, key), message)
    }

    /// Refuses members other than `allowed`.
    fn only(&self, allowed: &[&str]) -> Result<(), Error> {
        match self.map.keys().find(|k| !allowed.contains(&k.as_str())) {
            Some(key) => Err(self.error(key, format!("unknown member `{key}`"))),
            None => Ok(()),
        }
    }

    fn get(&self, key: &str) -> Result<&'a Value, Error> {
        self.map
            .get(key)
            .ok_or_else(|| Error::new(self.file, &self.pointer, format!("missing member `{key}`")))
    }

    fn string(&self, key: &str) -> Result<String, Error> {
        match self.get(key)? {
            Value::String(s) => Ok(s.clone()),
            _ => Err(self.error(key, "expected a string")),
        }
    }

    fn unsigned(&self, key: &str) -> Result<u64, Error> {
        self.get(key)?
            .as_u64()
            .ok_or_else(|| self.error(key, "expected a non-negative integer"))
    }

    fn one_of(&self, key: &str, allowed: &[&str]) -> Result<String, Error> {
        let value = self.string(key)?;
        if allowed.contains(&value.as_str()) {
            Ok(value)
        } else {
            Err(self.error(
                key,
                format!("`{value}` is not one of {}", allowed.join(", ")),
            ))
        }
    }

    fn array(&self, key: &str) -> Result<Vec<(String, &'a Value)>, Error> {
        let pointer = child(&self.pointer, key);
        match self.get(key)? {
            Value::Array(items) => Ok(items
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("{pointer}/{i}"), v))
                .collect()),
            _ => Err(self.error(key, "expected an array")),
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, Error> {
        let mut out = Vec::new();
        for (pointer, item) in self.array(key)? {
            match item {
                Value::String(s) if !out.contains(s) => out.push(s.clone()),
                Value::String(s) => {
                    return Err(Error::new(
                        self.file,
                        &pointer,
                        format!("duplicate value `{s}`"),
                    ))
                }
                _ => return Err(Error::new(self.file, &pointer, "expected a string")),
            }
        }
        Ok(out)
    }

    fn object(&self, key: &str) -> Result<Table<'a>, Error> {
        let value = self.get(key)?;
        match value {
            Value::Object(map) => Ok(Table {
                file: self.file,
                pointer: child(&self.pointer, key),
                map,
            }),
            _ => Err(self.error(key, "expected an object")),
        }
    }
}
