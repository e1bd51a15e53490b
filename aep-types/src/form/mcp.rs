//! MCP's `elicitation/create` request as a `kind: "form"` request, and the
//! elicitation result back.

use std::fmt;

use serde_json::{json, Value};

use super::{FormError, FormErrors, FormRule};
use crate::{AttentionRequested, Capture, Choice, FieldSpec, FieldSpecType, Object};

/// Why an elicitation request cannot become a form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappingError {
    /// The `requestedSchema` property at fault, if it is one property.
    pub property: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for MappingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.property {
            Some(property) => write!(f, "property `{property}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for MappingError {}

/// The `attention.requested` payload for an `elicitation/create` request
/// (`params`: `message` and `requestedSchema`).
///
/// The schema must be MCP's flat subset: an object whose properties are
/// strings, string enums (with optional `enumNames`), integers, numbers or
/// booleans, with optional `title`, `description`, `minimum` and `maximum`
/// (string `format`, `minLength` and `maxLength` and `default` are accepted
/// but not carried). Field ids are the property keys in schema order; an
/// enum becomes a select whose choice ids are the values and labels the
/// `enumNames` (or the values), with no `other` since MCP enums are closed;
/// integers and numbers become `number` with `min`/`max` (AEP's
/// `field_spec` has no integer type: use [`map`] to keep integer-ness for
/// checking the answer); a label is the `title` or the key; `required` is
/// stated for every field.
///
/// Below capture `redacted` the prompt is `"{agent} requests input ({n}
/// fields)"` and labels are keys and choice values; from `redacted` up the
/// prompt is the message.
pub fn request(
    params: &Value,
    agent: &str,
    capture: Capture,
) -> Result<AttentionRequested, MappingError> {
    map(params, agent, capture).map(|elicitation| elicitation.request)
}

/// An `elicitation/create` request mapped to a form: the
/// `attention.requested` payload, and what of the requested schema the
/// form cannot state (which properties are JSON Schema `integer`s), to
/// check the answer before it goes back as the elicitation result.
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    /// The `attention.requested` payload, as [`request`] makes it.
    pub request: AttentionRequested,
    /// The properties of type `integer`, in schema order.
    pub integers: Vec<String>,
}

impl Elicitation {
    /// The form's check ([`validate_values`](super::validate_values)), and
    /// that an `integer` property's answer is an integer (`3` or `3.0`,
    /// not `3.5`).
    pub fn validate_values(&self, values: &Object) -> Result<(), FormErrors> {
        let fields = self.request.fields.as_deref().unwrap_or_default();
        let mut errors = match super::validate_values(fields, values) {
            Ok(()) => Vec::new(),
            Err(errors) => errors.0,
        };
        for key in &self.integers {
            let fraction = match values.get(key) {
                Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x.fract() != 0.0),
                _ => false,
            };
            if fraction {
                errors.push(FormError {
                    field: key.clone(),
                    rule: FormRule::WrongType("an integer"),
                });
            }
        }
        FormErrors(errors).into_result()
    }

    /// The elicitation result for an accepted answer: its `values`,
    /// verbatim, as the result's `content`, once they pass
    /// [`validate_values`](Elicitation::validate_values).
    pub fn result(&self, values: &Object) -> Result<Value, FormErrors> {
        self.validate_values(values)?;
        Ok(json!({"action": "accept", "content": values}))
    }
}

/// Maps an `elicitation/create` request (see [`request`]), keeping which
/// properties are integers.
pub fn map(params: &Value, agent: &str, capture: Capture) -> Result<Elicitation, MappingError> {
    let fail = |property: Option<&str>, message: &str| MappingError {
        property: property.map(str::to_owned),
        message: message.to_owned(),
    };
    let message = params["message"]
        .as_str()
        .ok_or_else(|| fail(None, "`message` must be a string"))?;
    let schema = params["requestedSchema"]
        .as_object()
        .ok_or_else(|| fail(None, "`requestedSchema` must be an object"))?;
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(fail(
            None,
            "`requestedSchema` must have `\"type\": \"object\"`",
        ));
    }
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .ok_or_else(|| fail(None, "`requestedSchema` must have `properties`"))?;
    let required: Vec<&str> = match schema.get("required") {
        None => Vec::new(),
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        Some(_) => return Err(fail(None, "`required` must be an array of property names")),
    };
    let content = capture >= Capture::Redacted;
    let mut fields = Vec::new();
    let mut integers = Vec::new();
    for (key, property) in properties {
        let error = |message: &str| fail(Some(key), message);
        let property = property
            .as_object()
            .ok_or_else(|| error("must be a schema object"))?;
        let title = property.get("title").and_then(Value::as_str);
        let mut field = FieldSpec {
            id: key.clone(),
            type_: FieldSpecType::String,
            label: match title {
                Some(title) if content => title.to_owned(),
                _ => key.clone(),
            },
            required: Some(required.contains(&key.as_str())),
            multi: None,
            other: None,
            choices: None,
            min: None,
            max: None,
            extra: Object::new(),
        };
        match property.get("type").and_then(Value::as_str) {
            Some("string") => {
                if let Some(values) = property.get("enum") {
                    field.type_ = FieldSpecType::Select;
                    field.choices =
                        Some(choices(values, property.get("enumNames"), content).map_err(&error)?);
                }
            }
            Some(kind @ ("integer" | "number")) => {
                if kind == "integer" {
                    integers.push(key.clone());
                }
                field.type_ = FieldSpecType::Number;
                field.min = property.get("minimum").and_then(Value::as_f64);
                field.max = property.get("maximum").and_then(Value::as_f64);
            }
            Some("boolean") => field.type_ = FieldSpecType::Boolean,
            Some("object") => {
                return Err(error(
                    "nested objects are outside the flat elicitation subset",
                ))
            }
            Some("array") => return Err(error("arrays are outside the flat elicitation subset")),
            Some(other) => {
                return Err(error(&format!(
                    "type `{other}` is outside the flat elicitation subset"
                )))
            }
            None => return Err(error("needs a `type`")),
        }
        const ALLOWED: &[&str] = &[
            "type",
            "title",
            "description",
            "enum",
            "enumNames",
            "minimum",
            "maximum",
            "format",
            "minLength",
            "maxLength",
            "default",
        ];
        if let Some(keyword) = property.keys().find(|k| !ALLOWED.contains(&k.as_str())) {
            return Err(error(&format!(
                "`{keyword}` is outside the flat elicitation subset"
            )));
        }
        fields.push(field);
    }
    let n = fields.len();
    let prompt = if content {
        message.to_owned()
    } else {
        format!("{agent} requests input ({n} fields)")
    };
    Ok(Elicitation {
        request: super::form_request(prompt, fields),
        integers,
    })
}

fn choices(
    values: &Value,
    names: Option<&Value>,
    content: bool,
) -> Result<Vec<Choice>, &'static str> {
    let values = values
        .as_array()
        .ok_or("`enum` must be an array of strings")?;
    let names = match names {
        None => None,
        Some(Value::Array(names)) if names.len() == values.len() => Some(names),
        Some(_) => return Err("`enumNames` must be an array as long as `enum`"),
    };
    values
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let id = value
                .as_str()
                .ok_or("`enum` must be an array of strings")?
                .to_owned();
            let name = match names {
                Some(names) => Some(names[i].as_str().ok_or("`enumNames` must be strings")?),
                None => None,
            };
            let label = match name {
                Some(name) if content => name.to_owned(),
                _ => id.clone(),
            };
            Ok(Choice {
                id,
                label,
                extra: Object::new(),
            })
        })
        .collect()
}
