//! The intermediate representation between schemas and Rust.
//!
//! Everything the generator accepts has a place here, and nothing else
//! does: `lower` builds these values from the registry and refuses any
//! schema that has no representation; `emit` turns them into tokens. All
//! names are already valid, unique Rust names and all collections are in a
//! deterministic order.

use crate::json::Value;

/// The whole registry, lowered.
#[derive(Debug, Clone)]
pub struct Ir {
    /// The registry tables.
    pub registry: RegistryIr,
    /// The envelope.
    pub envelope: Envelope,
    /// One entry per `types.json` row with a schema, in row order.
    pub payloads: Vec<PayloadIr>,
    /// Modules holding named types, in a fixed order (shared definition
    /// files first, then payload modules in row order).
    pub modules: Vec<Module>,
}

/// A Rust module generated from one schema file.
#[derive(Debug, Clone)]
pub struct Module {
    /// Module name (a Rust identifier).
    pub name: String,
    /// The schema file it comes from, relative to the registry.
    pub source: String,
    /// The named types, in discovery order.
    pub items: Vec<Item>,
}

/// A named Rust type.
#[derive(Debug, Clone)]
pub enum Item {
    /// An object with properties.
    Struct(Struct),
    /// A string `enum` or `const`.
    Enum(Enum),
    /// A primitive type list such as `["object", "string"]`.
    Union(Union),
}

/// Where a named type lives: `module::name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypePath {
    /// The module name (`registry`, `envelope`, or a schema module).
    pub module: String,
    /// The type name.
    pub name: String,
}

/// A JSON object schema with `properties`.
#[derive(Debug, Clone)]
pub struct Struct {
    /// Type name.
    pub name: String,
    /// Documentation paragraphs.
    pub doc: Vec<String>,
    /// Where the schema is: `file#pointer`.
    pub origin: String,
    /// Properties, in schema order.
    pub fields: Vec<Field>,
    /// `if`/`then`/`else` rules over the properties.
    pub rules: Vec<Conditional>,
}

/// One property of an object.
#[derive(Debug, Clone)]
pub struct Field {
    /// The JSON member name.
    pub json: String,
    /// The Rust field name.
    pub ident: String,
    /// The value type.
    pub ty: Ty,
    /// Listed in `required`.
    pub required: bool,
    /// The `x-aep-capture` level (`metadata` when absent).
    pub capture: String,
    /// The `default` the schema states, if any.
    pub default: Option<Value>,
    /// Documentation paragraphs.
    pub doc: Vec<String>,
}

/// The type of a value.
#[derive(Debug, Clone)]
pub enum Ty {
    /// `"type": "string"`.
    String(StringRules),
    /// `"type": "integer"`; unsigned when `minimum >= 0`.
    Integer(NumberRules),
    /// `"type": "number"`, as `f64`.
    Number(NumberRules),
    /// `"type": "boolean"`.
    Boolean,
    /// `"type": "object"` without `properties`: any JSON object.
    FreeObject,
    /// `"type": "array"` of `items`, with the items' capture level.
    Array(Box<Ty>, Option<String>),
    /// A named type: struct, enum or union.
    Named(TypePath),
    /// The envelope's `data`: the payload, kept as raw JSON text.
    PayloadSlot,
}

/// Validation keywords of a string.
#[derive(Debug, Clone, Default)]
pub struct StringRules {
    /// `minLength`.
    pub min_length: Option<u64>,
    /// `pattern`.
    pub pattern: Option<String>,
    /// The schema's `description` of a value with a `pattern`: what the
    /// value must be in words, which a refusal says instead of the regex.
    pub meaning: Option<String>,
    /// `format` (`date-time` or `uri`).
    pub format: Option<String>,
}

/// Validation keywords of an integer or number.
#[derive(Debug, Clone, Default)]
pub struct NumberRules {
    /// `minimum`.
    pub minimum: Option<serde_json::Number>,
    /// `maximum`.
    pub maximum: Option<serde_json::Number>,
}

impl NumberRules {
    /// Whether the values can never be negative.
    pub fn unsigned(&self) -> bool {
        self.minimum
            .as_ref()
            .and_then(|m| m.as_f64())
            .is_some_and(|m| m >= 0.0)
    }
}

/// A string `enum` (or a `const`, which is an enum of one value).
#[derive(Debug, Clone)]
pub struct Enum {
    /// Type name.
    pub name: String,
    /// Documentation paragraphs.
    pub doc: Vec<String>,
    /// Where the schema is: `file#pointer`.
    pub origin: String,
    /// `(JSON value, variant name)`, in schema order.
    pub variants: Vec<(String, String)>,
}

/// A primitive type list.
#[derive(Debug, Clone)]
pub struct Union {
    /// Type name.
    pub name: String,
    /// Documentation paragraphs.
    pub doc: Vec<String>,
    /// Where the schema is: `file#pointer`.
    pub origin: String,
    /// The members, in schema order.
    pub members: Vec<Primitive>,
}

/// A member of a primitive type list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Primitive {
    /// Any JSON object.
    Object,
    /// A string.
    String,
    /// An integer (`i64`).
    Integer,
    /// A number (`f64`).
    Number,
    /// A boolean.
    Boolean,
}

impl Primitive {
    /// The JSON Schema type name.
    pub fn json_name(self) -> &'static str {
        match self {
            Primitive::Object => "object",
            Primitive::String => "string",
            Primitive::Integer => "integer",
            Primitive::Number => "number",
            Primitive::Boolean => "boolean",
        }
    }
}

/// `if` / `then` / `else` over an object's properties.
#[derive(Debug, Clone)]
pub struct Conditional {
    /// When all tests hold (and the `required` members are present).
    pub when: Predicate,
    /// What must then hold.
    pub then: Assertion,
    /// What must hold otherwise.
    pub otherwise: Option<Assertion>,
}

/// The `if` part of a conditional.
#[derive(Debug, Clone, Default)]
pub struct Predicate {
    /// `(member, test)` pairs.
    pub tests: Vec<(String, Test)>,
    /// Members that must be present for the predicate to hold.
    pub required: Vec<String>,
}

/// A test on one member's string value.
#[derive(Debug, Clone)]
pub enum Test {
    /// Equal to this string.
    Const(String),
    /// Matches this regular expression.
    Pattern(String),
}

/// The `then` or `else` part of a conditional.
#[derive(Debug, Clone, Default)]
pub struct Assertion {
    /// Members that must be present.
    pub required: Vec<String>,
    /// Members that must be absent (`"member": false`).
    pub forbidden: Vec<String>,
    /// A nested conditional.
    pub nested: Option<Box<Conditional>>,
}

/// The envelope schema.
#[derive(Debug, Clone)]
pub struct Envelope {
    /// The schema file it comes from, relative to the registry.
    pub source: String,
    /// The event struct (its fields are the context attributes).
    pub event: Struct,
    /// `propertyNames.pattern`: the extension attribute name rule.
    pub extension_name_pattern: String,
    /// The extension attribute value type (`additionalProperties`).
    pub extension_value: Union,
    /// Other named types the envelope defines (enums, in discovery order).
    pub items: Vec<Item>,
}

/// One payload schema: the `Payload` variant for one event type.
#[derive(Debug, Clone)]
pub struct PayloadIr {
    /// The event type, e.g. `tool.requested`.
    pub event_type: String,
    /// The `Payload` variant name and payload struct name.
    pub name: String,
    /// The module holding the payload struct.
    pub module: String,
    /// The members with a `*_digest` or `*_redacted` sibling, in schema
    /// order, nested ones too.
    pub siblings: Vec<Sibling>,
    /// The members whose `x-aep-capture` is `redacted`, other than the
    /// `*_redacted` siblings, in schema order, nested ones too.
    pub free_text: Vec<FreeText>,
}

/// A member with a digest and/or redacted sibling (AEP-0003 §9.3): the
/// pointers are JSON Pointers into `data`, where `*` stands for every
/// item of an array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sibling {
    /// The member holding the content, e.g. `/args`.
    pub pointer: String,
    /// Its `*_digest` sibling, e.g. `/args_digest`.
    pub digest: Option<String>,
    /// Its `*_redacted` sibling, e.g. `/args_redacted`.
    pub redacted: Option<String>,
}

/// A member carrying `redacted`-level free text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FreeText {
    /// Its JSON Pointer into `data` (`*` for every item of an array).
    pub pointer: String,
}

/// The registry tables, named for Rust.
#[derive(Debug, Clone)]
pub struct RegistryIr {
    /// The protocol version.
    pub aep: String,
    /// The registered event types, in registry order.
    pub types: Vec<TypeEntry>,
    /// The event categories, in registry order.
    pub categories: Vec<CategoryEntry>,
    /// Type statuses `(value, variant)`.
    pub statuses: Vec<(String, String)>,
    /// Type scopes `(value, variant)`.
    pub type_scopes: Vec<(String, String)>,
    /// Category scopes `(value, variant)`.
    pub category_scopes: Vec<(String, String)>,
    /// Severity levels `(value, variant)`, lowest first.
    pub severity: Vec<(String, String)>,
    /// The default severity's variant.
    pub severity_default: String,
    /// OTLP `(severity_text, severity_number)` per level.
    pub severity_otlp: Vec<(String, u64)>,
    /// OCSF `severity_id` per level.
    pub severity_ocsf: Vec<u64>,
    /// Capture levels `(value, variant)`, lowest first.
    pub capture: Vec<(String, String)>,
    /// The default capture level's variant.
    pub capture_default: String,
    /// Nack reasons `(value, variant)`.
    pub nack_reasons: Vec<(String, String)>,
}

/// One registered event type, named for Rust.
#[derive(Debug, Clone)]
pub struct TypeEntry {
    /// The dotted type name, e.g. `tool.requested`.
    pub name: String,
    /// The `RegisteredType` variant.
    pub variant: String,
    /// The `Status` variant.
    pub status: String,
    /// Whether emitters must support the type (status `mandatory`).
    pub mandatory: bool,
    /// The `Scope` variant.
    pub scope: String,
    /// The payload schema's path relative to the registry, if any.
    pub schema: Option<String>,
    /// One-line summary.
    pub summary: String,
}

/// One event category, named for Rust.
#[derive(Debug, Clone)]
pub struct CategoryEntry {
    /// The category, the first segment of a type name.
    pub name: String,
    /// The `Category` variant.
    pub variant: String,
    /// The `CategoryScope` variant.
    pub scope: String,
    /// One-line summary.
    pub summary: String,
}
