//! The answer to a request, and the checks an answer given by flags
//! (`--values`, `--option`, `--text`) goes through before anything is
//! written: the same rules the prompts enforce.

use aep::attention_requested::Kind;
use aep::form::{gate_values, validate_values};
use aep::{AttentionRequested, Capture, FieldSpec, Object};
use serde_json::{json, Value};

use super::Args;

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
    pub fn check(self, request: &AttentionRequested) -> Result<Answer, String> {
        let is_form = request.kind == Kind::Form;
        match self {
            Reply::Values(_) if !is_form => Err(format!(
                "--values answers a form, and this request is of kind `{}`: answer with {}",
                request.kind,
                if request.options.is_some() {
                    "--option or --text"
                } else {
                    "--text"
                }
            )),
            Reply::Values(text) => {
                let values = match serde_json::from_str::<Value>(&text) {
                    Ok(Value::Object(values)) => values,
                    Ok(_) => return Err("--values: expected a JSON object of field values".into()),
                    Err(e) => return Err(format!("--values: not JSON: {e}")),
                };
                validate_values(fields(request), &values)
                    .map_err(|errors| describe_refusal(&errors))?;
                Ok(Answer::Values(values))
            }
            Reply::Option(_) | Reply::Text(_) if is_form => {
                Err("the request is a form: answer it with --values".into())
            }
            Reply::Option(id) => {
                let Some(options) = &request.options else {
                    return Err(format!(
                        "--option `{id}`: the request offers no options: answer with --text"
                    ));
                };
                if options.iter().any(|o| o.id == id) {
                    Ok(Answer::Option(id))
                } else {
                    let ids: Vec<&str> = options.iter().map(|o| o.id.as_str()).collect();
                    Err(format!(
                        "--option `{id}` is not one of the request's options ({})",
                        ids.join(", ")
                    ))
                }
            }
            Reply::Text(text) if text.is_empty() => Err("--text: the answer is empty".into()),
            Reply::Text(text) => Ok(Answer::Text(text)),
        }
    }
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
