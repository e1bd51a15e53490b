//! MCP's `elicitation/create` request as a `kind: "form"` request, and the
//! elicitation result back.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
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
/// (`params`, as JSON text: `message` and `requestedSchema`).
///
/// The schema must be MCP's flat subset: an object whose properties are
/// strings, string enums (with optional `enumNames`), integers, numbers or
/// booleans, with optional `title`, `description`, `minimum` and `maximum`
/// (string `format`, `minLength` and `maxLength` and `default` are accepted
/// but not carried). Field ids are the property keys in schema order; an
/// enum becomes a select whose choice ids are the values and labels the
/// `enumNames` (or the values), with no `other` since MCP enums are closed;
/// The fields follow the properties in the order the text lists them
/// (read from the text itself, whatever serde_json's map order);
/// integers and numbers become `number` with `min`/`max` (AEP's
/// `field_spec` has no integer type: use [`map`] to keep integer-ness for
/// checking the answer); a label is the `title` or the key; `required` is
/// stated for every field.
///
/// Below capture `redacted` the prompt is `"{agent} requests input ({n}
/// fields)"` and labels are keys and choice values; from `redacted` up the
/// prompt is the message.
pub fn request(
    params: &str,
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
pub fn map(params: &str, agent: &str, capture: Capture) -> Result<Elicitation, MappingError> {
    let fail = |property: Option<&str>, message: &str| MappingError {
        property: property.map(str::to_owned),
        message: message.to_owned(),
    };
    let order =
        property_order(params).map_err(|e| fail(None, &format!("`params` is not JSON: {e}")))?;
    let params: Value = serde_json::from_str(params)
        .map_err(|e| fail(None, &format!("`params` is not JSON: {e}")))?;
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
    for key in &order {
        let error = |message: &str| fail(Some(key), message);
        if order.iter().filter(|k| *k == key).count() > 1 {
            return Err(error("is listed twice"));
        }
        let property = &properties[key];
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

/// The keys of `requestedSchema.properties` in the order the text lists
/// them (empty when there are none; the mapping then says what is missing).
fn property_order(params: &str) -> Result<Vec<String>, serde_json::Error> {
    let member = |text: &str, name: &str| -> Result<Option<Box<RawValue>>, serde_json::Error> {
        Ok(match serde_json::from_str::<Members>(text)? {
            Members(Some(members)) => members
                .into_iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v),
            Members(None) => None,
        })
    };
    let Some(schema) = member(params, "requestedSchema")? else {
        return Ok(Vec::new());
    };
    let Some(properties) = member(schema.get(), "properties")? else {
        return Ok(Vec::new());
    };
    Ok(match serde_json::from_str::<Members>(properties.get())? {
        Members(Some(members)) => members.into_iter().map(|(k, _)| k).collect(),
        Members(None) => Vec::new(),
    })
}

/// An object's members in text order, values unparsed; `None` for any
/// other JSON value.
struct Members(Option<Vec<(String, Box<RawValue>)>>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Members, D::Error> {
        struct Ordered;
        impl<'de> Visitor<'de> for Ordered {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    members.push(entry);
                }
                Ok(Members(Some(members)))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Members, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Members(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Members, E> {
                Ok(Members(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Members, E> {
                Ok(Members(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Members, E> {
                Ok(Members(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Members, E> {
                Ok(Members(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Members, E> {
                Ok(Members(None))
            }
            fn visit_unit<E>(self) -> Result<Members, E> {
                Ok(Members(None))
            }
        }
        deserializer.deserialize_any(Ordered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs without serde_json's `preserve_order` by default, where a
    /// `Value` sorts its keys.
    #[test]
    fn fields_follow_the_property_order_of_the_text() {
        let params = r#"{"message": "m", "requestedSchema": {"type": "object", "properties": {
            "zeta": {"type": "string"}, "alpha": {"type": "integer"}, "mid": {"type": "boolean"}}}}"#;
        let elicitation = map(params, "a", Capture::Full).expect("maps");
        let ids: Vec<&str> = elicitation
            .request
            .fields
            .iter()
            .flatten()
            .map(|f| f.id.as_str())
            .collect();
        assert_eq!(ids, ["zeta", "alpha", "mid"]);
        assert_eq!(elicitation.integers, ["alpha"]);
    }

    #[test]
    fn a_property_listed_twice_is_refused() {
        let params = r#"{"message": "m", "requestedSchema": {"type": "object", "properties": {
            "a": {"type": "string"}, "a": {"type": "boolean"}}}}"#;
        let error = map(params, "a", Capture::Full).expect_err("twice");
        assert_eq!(error.property.as_deref(), Some("a"));
    }

    #[test]
    fn text_that_is_not_json_is_an_error() {
        assert!(map("{", "a", Capture::Full).is_err());
    }
}
