//! The answer to a request, and the checks an answer given by flags
//! (`--values`, `--option`, `--text`) goes through before anything is
//! written: the same rules the prompts enforce.

use aep::attention_requested::Kind;
use aep::form::{gate_values, validate_values};
use aep::{AttentionRequested, Capture, FieldSpec, Object};
use serde_json::{json, Value};

use super::{Args, Request};
use crate::common::terminal::{escape, Newlines};
use crate::live::waiting::{Via, Waiting};

/// An answer, as `answer` carries it (AEP-0002 §5.3, AEP-0006).
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The id of one of the request's options.
    Option(String),
    /// Free text.
    Text(String),
    /// A form's values, from field id to value.
    Values(Object),
}

impl Answer {
    /// The `answer` object.
    pub fn to_json(&self) -> Value {
        match self {
            Answer::Option(id) => json!({ "option": id }),
            Answer::Text(text) => json!({ "text": text }),
            Answer::Values(values) => json!({ "values": values }),
        }
    }

    /// Whether the answer carries free text, which needs capture
    /// `redacted`: `text`, or a form value the type-dependent gate drops at
    /// `metadata` (a string field, an "Other" text on a select).
    pub fn carries_free_text(&self, fields: &[FieldSpec]) -> bool {
        match self {
            Answer::Option(_) => false,
            Answer::Text(_) => true,
            Answer::Values(values) => &gate_values(fields, values, Capture::Metadata) != values,
        }
    }
}

/// The fields of a form request (none for other kinds).
pub fn fields(request: &AttentionRequested) -> &[FieldSpec] {
    request.fields.as_deref().unwrap_or_default()
}

/// An answer given on the command line, not yet checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `--values JSON`.
    Values(String),
    /// `--option ID`.
    Option(String),
    /// `--text S`.
    Text(String),
}

impl Reply {
    /// The answer flag given, if any (clap allows at most one).
    pub fn from_args(args: &Args) -> Option<Reply> {
        if let Some(json) = &args.values {
            Some(Reply::Values(json.clone()))
        } else if let Some(id) = &args.option {
            Some(Reply::Option(id.clone()))
        } else {
            args.text.clone().map(Reply::Text)
        }
    }

    /// Checks the reply against the request: `--values` only for a form,
    /// and every form rule (`form::validate_values`); `--option` only where
    /// the request has options, and one of them; `--text` not for a form
    /// and not empty. The error names the field (or flag) and the rule.
    pub fn check(self, asked: &Request, via: &Via) -> Result<Answer, Refusal> {
        let request = &asked.payload;
        let is_form = request.kind == Kind::Form;
        let waiting = Waiting::of(&asked.event, request);
        // The request named, and the line that answers it.
        let named = format!(
            "the request `{}` of session `{}`",
            shown(&waiting.id),
            shown(&waiting.session)
        );
        let use_line = || format!("\n  {}", waiting.respond_line(via));
        match self {
            Reply::Values(_) if !is_form => Err(format!(
                "--values answers a form, and {named} is of kind `{}`: answer with {}:{}",
                request.kind,
                if request.options.is_some() {
                    format!("--option ({}) or --text", waiting.options.join(", "))
                } else {
                    "--text".to_owned()
                },
                use_line()
            )
            .into()),
            Reply::Values(text) => {
                let values = match serde_json::from_str::<Unique>(&text) {
                    Ok(Unique(Value::Object(values))) => values,
                    Ok(_) => {
                        return Err(Refusal::Usage(
                            "--values: expected a JSON object of field values".into(),
                        ))
                    }
                    Err(e) => return Err(Refusal::Usage(format!("--values: not JSON: {e}"))),
                };
                validate_values(fields(request), &values)
                    .map_err(|errors| describe_refusal(&errors))?;
                Ok(Answer::Values(values))
            }
            Reply::Option(_) | Reply::Text(_) if is_form => Err(format!(
                "{named} is a form (fields: {}): answer it with --values, an object from field id to value:{}",
                waiting.field_ids().join(", "),
                use_line()
            )
            .into()),
            Reply::Option(id) => {
                let Some(options) = &request.options else {
                    return Err(format!(
                        "--option `{id}`: {named} offers no options: answer with --text:{}",
                        use_line()
                    )
                    .into());
                };
                if options.iter().any(|o| o.id == id) {
                    Ok(Answer::Option(id))
                } else {
                    let ids: Vec<&str> = options.iter().map(|o| o.id.as_str()).collect();
                    Err(format!(
                        "--option `{id}` is not one of the request's options ({})",
                        ids.join(", ")
                    )
                    .into())
                }
            }
            Reply::Text(text) if text.is_empty() => Err("--text: the answer is empty".into()),
            Reply::Text(text) => Ok(Answer::Text(text)),
        }
    }
}

/// Why a reply is not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The flag's text is not what it takes (not JSON, not an object, a
    /// repeated member): a usage error.
    Usage(String),
    /// The request does not take the answer.
    Rule(String),
}

impl From<String> for Refusal {
    fn from(message: String) -> Self {
        Refusal::Rule(message)
    }
}

impl From<&str> for Refusal {
    fn from(message: &str) -> Self {
        Refusal::Rule(message.to_owned())
    }
}

/// A JSON value with no object that names a member twice: in an answer
/// a repeated field id would be one value silently lost.
struct Unique(Value);

impl<'de> serde::Deserialize<'de> for Unique {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueVisitor).map(Unique)
    }
}

struct UniqueVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(n.into())
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(n.into())
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(n.into())
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(s.into())
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Unique(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Object::new();
        while let Some(key) = map.next_key::<String>()? {
            if members.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "the member `{key}` is given twice"
                )));
            }
            let Unique(value) = map.next_value()?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

/// Event text on one line, without control characters.
fn shown(text: &str) -> String {
    escape(text, Newlines::Escape).into_owned()
}

/// The emitter's refusal of a form answer, one rule broken per line.
fn describe_refusal(errors: &aep::form::FormErrors) -> String {
    let mut message = String::from("the answer breaks the form's rules, nothing written:");
    for error in &errors.0 {
        message.push_str("\n  ");
        message.push_str(&error.to_string());
    }
    message
}
