//! The AEP-0006 form toolkit: typed answers to `kind: "form"` requests,
//! the emitter's validation rule, the type-dependent capture gate, and
//! the mappings from the two input requests the shape was designed
//! against (Claude Code's AskUserQuestion and MCP's `elicitation/create`).
//!
//! Everything here is pure: no I/O, only the generated [`FieldSpec`] and
//! `answer.values` objects in and out.

pub mod claude_code;
pub mod mcp;

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::attention_requested::{Kind, RespondVia};
use crate::{AttentionRequested, Capture, FieldSpec, FieldSpecType, Object};

/// One field's answer, as `answer.values` carries it.
#[derive(Debug, Clone, PartialEq)]
pub enum FormValue {
    /// A `string` field's text, or free text on a select with `other`.
    Text(String),
    /// A `number` field's value.
    Number(f64),
    /// A `boolean` field's value.
    Boolean(bool),
    /// One choice id of a select.
    Choice(String),
    /// Several choice ids of a select with `multi` (with `other`, an entry
    /// may be free text).
    Choices(Vec<String>),
}

impl FormValue {
    /// Reads the JSON answer to `field`, checking its JSON type and, for a
    /// select, that it names choices (or free text where `other` allows).
    pub fn decode(field: &FieldSpec, value: &Value) -> Result<FormValue, FormError> {
        let error = |rule| {
            Err(FormError {
                field: field.id.clone(),
                rule,
            })
        };
        match (field.type_, value) {
            (FieldSpecType::String, Value::String(text)) => Ok(FormValue::Text(text.clone())),
            (FieldSpecType::Number, Value::Number(n)) => {
                Ok(FormValue::Number(n.as_f64().unwrap_or(f64::NAN)))
            }
            (FieldSpecType::Boolean, Value::Bool(b)) => Ok(FormValue::Boolean(*b)),
            // A multi-select answers with an array; with `other`, free text may stand alone.
            (FieldSpecType::Select, Value::String(text))
                if is_multi(field) && takes_other(field) =>
            {
                Ok(FormValue::Text(text.clone()))
            }
            (FieldSpecType::Select, Value::String(_)) if is_multi(field) => {
                error(FormRule::WrongType("an array of choice ids"))
            }
            (FieldSpecType::Select, Value::String(text)) if is_choice(field, text) => {
                Ok(FormValue::Choice(text.clone()))
            }
            (FieldSpecType::Select, Value::String(text)) if takes_other(field) => {
                Ok(FormValue::Text(text.clone()))
            }
            (FieldSpecType::Select, Value::String(text)) => {
                error(FormRule::NotAChoice(text.clone()))
            }
            (FieldSpecType::Select, Value::Array(items)) if is_multi(field) => {
                let choices = choice_ids(field);
                let mut ids = Vec::with_capacity(items.len());
                for item in items {
                    match item {
                        Value::String(id)
                            if choices.contains(id.as_str()) || takes_other(field) =>
                        {
                            ids.push(id.clone())
                        }
                        Value::String(id) => return error(FormRule::NotAChoice(id.clone())),
                        _ => return error(FormRule::WrongType("an array of choice ids")),
                    }
                }
                Ok(FormValue::Choices(ids))
            }
            (FieldSpecType::Select, Value::Array(_)) => error(FormRule::NotMulti),
            (FieldSpecType::String, _) => error(FormRule::WrongType("a string")),
            (FieldSpecType::Number, _) => error(FormRule::WrongType("a number")),
            (FieldSpecType::Boolean, _) => error(FormRule::WrongType("a boolean")),
            (FieldSpecType::Select, _) if is_multi(field) => {
                error(FormRule::WrongType("an array of choice ids"))
            }
            (FieldSpecType::Select, _) => error(FormRule::WrongType("a choice id")),
        }
    }

    /// The JSON `answer.values` carries for this answer. A non-finite
    /// number has no JSON form and gives `null`; serializing a
    /// `FormValue` refuses it instead.
    pub fn to_json(&self) -> Value {
        match self {
            FormValue::Text(text) | FormValue::Choice(text) => Value::String(text.clone()),
            FormValue::Number(n) => json_number(*n),
            FormValue::Boolean(b) => Value::Bool(*b),
            FormValue::Choices(ids) => ids.iter().cloned().map(Value::String).collect(),
        }
    }

    /// Whether the answer is structural (numbers, booleans, choice ids) and
    /// so may appear at capture `metadata`.
    pub fn is_structural(&self, field: &FieldSpec) -> bool {
        match self {
            FormValue::Text(_) => false,
            FormValue::Number(_) | FormValue::Boolean(_) | FormValue::Choice(_) => true,
            FormValue::Choices(ids) => {
                let choices = choice_ids(field);
                ids.iter().all(|id| choices.contains(id.as_str()))
            }
        }
    }
}

impl Serialize for FormValue {
    /// Refuses a non-finite number, which JSON cannot write (`to_json`
    /// would give `null`, which no `number` field accepts).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            FormValue::Number(n) if !n.is_finite() => Err(serde::ser::Error::custom(format_args!(
                "`{n}` is not a JSON number"
            ))),
            _ => self.to_json().serialize(serializer),
        }
    }
}

/// An integral number as a JSON integer (`50`, not `50.0`), as the
/// generated types write numbers.
fn json_number(n: f64) -> Value {
    match crate::runtime::integral(n) {
        Some(i) => Value::from(i),
        None => serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number),
    }
}

/// Decodes every entry of `values` against its field.
pub fn decode_values(
    fields: &[FieldSpec],
    values: &Object,
) -> Result<Vec<(String, FormValue)>, FormErrors> {
    let mut decoded = Vec::new();
    let mut errors = Vec::new();
    let by_id = first_by_id(fields);
    for (key, value) in values {
        match by_id.get(key.as_str()) {
            Some(field) => match FormValue::decode(field, value) {
                Ok(v) => decoded.push((key.clone(), v)),
                Err(e) => errors.push(e),
            },
            None => errors.push(FormError {
                field: key.clone(),
                rule: FormRule::UnknownField,
            }),
        }
    }
    FormErrors(errors).into_result().map(|()| decoded)
}

/// The emitter's check of a form answer (AEP-0006): every `required` field
/// is answered; each value has its field's JSON type (an array only where
/// `multi`); a select answer is one of its `choices`, or free text only
/// where the field has `other: true`; a number lies within `min`/`max`;
/// and no key names a field the form does not have.
///
/// Every error names the field and the rule, so an emitter can answer
/// `control.rejected{reason: "invalid"}` with a useful `detail`. Errors
/// come in the form's field order, then the keys that name no field.
pub fn validate_values(fields: &[FieldSpec], values: &Object) -> Result<(), FormErrors> {
    let mut errors = Vec::new();
    // In the form's order, then the members that name no field.
    let by_id = first_by_id(fields);
    for field in answered_fields(fields) {
        let Some(value) = values.get(&field.id) else {
            if field.required == Some(true) {
                errors.push(FormError {
                    field: field.id.clone(),
                    rule: FormRule::Required,
                });
            }
            continue;
        };
        match FormValue::decode(field, value) {
            Ok(FormValue::Number(n)) => {
                let below = field.min.is_some_and(|min| n < min);
                let above = field.max.is_some_and(|max| n > max);
                if below || above {
                    let rule = FormRule::OutOfRange {
                        value: n,
                        min: field.min,
                        max: field.max,
                    };
                    errors.push(FormError {
                        field: field.id.clone(),
                        rule,
                    });
                }
            }
            Ok(_) => {}
            Err(e) => errors.push(e),
        }
    }
    for key in values.keys() {
        if !by_id.contains_key(key.as_str()) {
            errors.push(FormError {
                field: key.clone(),
                rule: FormRule::UnknownField,
            });
        }
    }
    FormErrors(errors).into_result()
}

/// The type-dependent capture gate (AEP-0006): the `values` an event at
/// capture `ceiling` may carry.
///
/// The gate implements only the asymmetry between `metadata` and
/// `redacted`: free text needs `redacted`, while numbers, booleans and
/// closed choices are structural. At `redacted` and `full` every answer
/// stays; at `metadata` and `none` numbers, booleans and closed-choice
/// answers stay while `string` fields and `other` free text go (a
/// multi-select keeps only its choice ids, and a value that does not fit
/// its field goes too). Keys that name no field are dropped at every level.
///
/// A `none` ceiling is the envelope's business, not the gate's: an event
/// at capture `none` carries no `data` at all, which
/// [`Event::down_level`](crate::Event::down_level) (and an emitter) applies
/// by dropping `data` whole, so nothing of `values` reaches such an event
/// whatever this function returns.
pub fn gate_values(fields: &[FieldSpec], values: &Object, ceiling: Capture) -> Object {
    let mut gated = Object::new();
    let by_id = first_by_id(fields);
    for (key, value) in values {
        let Some(field) = by_id.get(key.as_str()) else {
            continue;
        };
        let kept = match ceiling {
            Capture::Redacted | Capture::Full => Some(value.clone()),
            Capture::Metadata | Capture::None => match FormValue::decode(field, value) {
                Ok(FormValue::Choices(ids)) => {
                    let choices = choice_ids(field);
                    let closed: Vec<String> = ids
                        .iter()
                        .filter(|id| choices.contains(id.as_str()))
                        .cloned()
                        .collect();
                    match closed.len() {
                        0 => None,
                        n if n == ids.len() => Some(value.clone()),
                        _ => Some(FormValue::Choices(closed).to_json()),
                    }
                }
                Ok(answer) if answer.is_structural(field) => Some(value.clone()),
                Ok(_) | Err(_) => None,
            },
        };
        if let Some(value) = kept {
            gated.insert(key.clone(), value);
        }
    }
    gated
}

/// A `kind: "form"` request answered through the control channel, as both
/// mappings make it.
fn form_request(prompt: String, fields: Vec<FieldSpec>) -> AttentionRequested {
    AttentionRequested {
        kind: Kind::Form,
        prompt,
        options: None,
        fields: Some(fields),
        expires_at: None,
        respond_via: Some(vec![RespondVia::Control]),
        context: None,
        extra: Object::new(),
    }
}

fn is_choice(field: &FieldSpec, id: &str) -> bool {
    field.choices.iter().flatten().any(|c| c.id == id)
}

/// The choice ids of a field, for answers that name many.
fn choice_ids(field: &FieldSpec) -> HashSet<&str> {
    field
        .choices
        .iter()
        .flatten()
        .map(|c| c.id.as_str())
        .collect()
}

/// The fields a form's answer is checked against, in the form's order:
/// field ids are unique by the schema's word, and where a form repeats one
/// anyway, its first field is the one that counts (in every function of
/// this module).
pub fn answered_fields(fields: &[FieldSpec]) -> impl Iterator<Item = &FieldSpec> {
    let mut ids = HashSet::with_capacity(fields.len());
    fields.iter().filter(move |f| ids.insert(f.id.as_str()))
}

/// Each field id's first field, as [`answered_fields`] takes them.
fn first_by_id(fields: &[FieldSpec]) -> HashMap<&str, &FieldSpec> {
    let mut by_id = HashMap::with_capacity(fields.len());
    for field in fields {
        by_id.entry(field.id.as_str()).or_insert(field);
    }
    by_id
}

fn takes_other(field: &FieldSpec) -> bool {
    field.other == Some(true)
}

fn is_multi(field: &FieldSpec) -> bool {
    field.multi == Some(true)
}

/// One field's answer breaking a form rule.
#[derive(Debug, Clone, PartialEq)]
pub struct FormError {
    /// The field id (or the unknown key).
    pub field: String,
    /// The rule it breaks.
    pub rule: FormRule,
}

/// The rules of a form answer.
#[derive(Debug, Clone, PartialEq)]
pub enum FormRule {
    /// A `required` field has no answer.
    Required,
    /// The key names no field of the form.
    UnknownField,
    /// The value is not of the field's JSON type; says what was expected.
    WrongType(&'static str),
    /// An array answers a select without `multi`.
    NotMulti,
    /// A string is not one of the select's choice ids, and the field has
    /// no `other: true`.
    NotAChoice(String),
    /// A number outside `min`/`max`.
    OutOfRange {
        /// The answer.
        value: f64,
        /// The field's `min`.
        min: Option<f64>,
        /// The field's `max`.
        max: Option<f64>,
    },
}

impl fmt::Display for FormError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field `{}`: ", self.field)?;
        match &self.rule {
            FormRule::Required => f.write_str("required, but not answered"),
            FormRule::UnknownField => f.write_str("the form has no such field"),
            FormRule::WrongType(expected) => write!(f, "expected {expected}"),
            FormRule::NotMulti => f.write_str("an array answers only a select with `multi`"),
            FormRule::NotAChoice(value) => {
                write!(
                    f,
                    "`{value}` is not one of its choices, and the field takes no free text"
                )
            }
            FormRule::OutOfRange { value, min, max } => {
                write!(f, "{value} is outside ")?;
                match (min, max) {
                    (Some(min), Some(max)) => write!(f, "[{min}, {max}]"),
                    (Some(min), None) => write!(f, "[{min}, ∞)"),
                    (None, Some(max)) => write!(f, "(-∞, {max}]"),
                    (None, None) => f.write_str("its range"),
                }
            }
        }
    }
}

impl std::error::Error for FormError {}

/// Every rule a form answer breaks.
#[derive(Debug, Clone, PartialEq)]
pub struct FormErrors(pub Vec<FormError>);

impl FormErrors {
    fn into_result(self) -> Result<(), FormErrors> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(self)
        }
    }
}

impl fmt::Display for FormErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let messages: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        f.write_str(&messages.join("; "))
    }
}

impl std::error::Error for FormErrors {}
