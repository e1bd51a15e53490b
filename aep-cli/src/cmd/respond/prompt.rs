//! Asking a person: the request's prompt, then one input per form field
//! (or one choice list, or one free-text input), drawn on standard error
//! with `inquire`.
//!
//! Each input checks its answer with the emitter's rule for that field
//! (`form::validate_values` on the one field) and shows a refusal under
//! the input until it is corrected; before the answer is returned the
//! whole form is checked once more, and a field it refuses is shown with
//! the refusal and asked again.

use std::fmt;

use aep::attention_requested::Kind;
use aep::form::{answered_fields, validate_values, FormValue};
use aep::{AttentionRequested, Choice, FieldSpec, FieldSpecType, Object};
use inquire::error::{CustomUserError, InquireError};
use inquire::list_option::ListOption;
use inquire::validator::Validation;
use inquire::{Confirm, MultiSelect, Select, Text};
use serde_json::Value;

use super::answer::{fields, Answer};
use crate::common::terminal::{escape, Newlines};

/// Event text as a prompt shows it: the request is the agent's, and its
/// control characters must not reach the terminal.
fn shown(text: &str) -> String {
    escape(text, Newlines::Escape).into_owned()
}

/// Why no answer was taken.
#[derive(Debug)]
pub enum Error {
    /// The person pressed Ctrl-C or Esc.
    Cancelled,
    /// The terminal failed.
    Terminal(String),
    /// The request cannot be answered at a prompt (a required select
    /// with nothing to pick).
    Unanswerable(String),
}

impl From<InquireError> for Error {
    fn from(error: InquireError) -> Self {
        match error {
            InquireError::OperationCanceled | InquireError::OperationInterrupted => {
                Error::Cancelled
            }
            other => Error::Terminal(format!("the terminal failed: {other}")),
        }
    }
}

/// Shows the request and takes its answer.
pub fn ask(request: &AttentionRequested) -> Result<Answer, Error> {
    if request.kind == Kind::Form {
        let fields = fields(request);
        let required = fields.iter().filter(|f| is_required(f)).count();
        eprintln!("{}", escape(&request.prompt, Newlines::Keep));
        eprintln!(
            "  {} field{}, {required} required; Ctrl-C or Esc cancels, nothing is sent.",
            fields.len(),
            if fields.len() == 1 { "" } else { "s" },
        );
        return ask_form(fields).map(Answer::Values);
    }
    let title = format!(
        "{} ({})",
        shown(&request.prompt),
        shown(request.kind.as_str())
    );
    match &request.options {
        Some(options) if !options.is_empty() => {
            let entries = options.iter().map(Entry::choice).collect();
            let picked = Select::new(&title, entries)
                .with_help_message("↑↓ to move, enter to answer, Ctrl-C or Esc to cancel")
                .prompt()?;
            match picked {
                Entry::Choice { id, .. } => Ok(Answer::Option(id)),
                _ => Err(Error::Terminal("no option picked".into())),
            }
        }
        _ => {
            let text = Text::new(&title)
                .with_help_message("free text; Ctrl-C or Esc to cancel")
                .with_validator(|text: &str| {
                    Ok(if text.trim().is_empty() {
                        Validation::Invalid("an answer is required".into())
                    } else {
                        Validation::Valid
                    })
                })
                .prompt()?;
            Ok(Answer::Text(text))
        }
    }
}

/// Asks every field, then re-asks those the form's check refuses, each
/// after its refusal.
fn ask_form(fields: &[FieldSpec]) -> Result<Object, Error> {
    fill_form(fields, |field, refusal| {
        if let Some(refusal) = refusal {
            eprintln!("✗ {}", shown(refusal));
        }
        ask_field(field)
    })
}

/// The form loop, with the asking of one field (given the refusal of its
/// last answer, if any) left to `ask`: every field in order, then
/// `form::validate_values` on the whole answer, and again only the fields
/// it refuses (in the form's order), until it accepts.
fn fill_form(
    fields: &[FieldSpec],
    mut ask: impl FnMut(&FieldSpec, Option<&str>) -> Result<Option<Value>, Error>,
) -> Result<Object, Error> {
    let mut values = Object::new();
    // One question per field id, as `validate_values` checks them.
    let mut to_ask: Vec<(&FieldSpec, Option<String>)> =
        answered_fields(fields).map(|f| (f, None)).collect();
    loop {
        for (field, refusal) in &to_ask {
            match ask(field, refusal.as_deref())? {
                Some(value) => values.insert(field.id.clone(), value),
                None => values.remove(&field.id),
            };
        }
        let Err(errors) = validate_values(fields, &values) else {
            return Ok(values);
        };
        to_ask.clear();
        for error in errors.0 {
            let Some(field) = fields.iter().find(|f| f.id == error.field) else {
                // A key no field has cannot come from the prompts; drop it.
                values.remove(&error.field);
                continue;
            };
            match to_ask.iter_mut().find(|(f, _)| f.id == field.id) {
                Some((_, Some(refusal))) => {
                    refusal.push_str("; ");
                    refusal.push_str(&error.to_string());
                }
                _ => to_ask.push((field, Some(error.to_string()))),
            }
        }
        // Again in the form's order, whatever the order of the refusals.
        to_ask.sort_by_key(|(field, _)| fields.iter().position(|f| f.id == field.id));
    }
}

/// Asks one field; `None` is a skipped (optional) field.
fn ask_field(field: &FieldSpec) -> Result<Option<Value>, Error> {
    let label = if is_required(field) {
        format!("{} (required)", shown(&field.label))
    } else {
        shown(&field.label)
    };
    match field.type_ {
        FieldSpecType::String => ask_string(field, &label),
        FieldSpecType::Number => ask_number(field, &label),
        FieldSpecType::Boolean if is_required(field) => Ok(Some(Value::Bool(
            Confirm::new(&label).with_help_message("y or n").prompt()?,
        ))),
        FieldSpecType::Boolean => {
            let entries = vec![Entry::Yes, Entry::No, Entry::Skip];
            Ok(match Select::new(&label, entries).prompt()? {
                Entry::Yes => Some(Value::Bool(true)),
                Entry::No => Some(Value::Bool(false)),
                _ => None,
            })
        }
        FieldSpecType::Select if field.multi == Some(true) => ask_multi(field, &label),
        FieldSpecType::Select => ask_select(field, &label),
        other => Err(Error::Unanswerable(format!(
            "field `{}` has type `{other}`, which this version cannot ask for",
            field.id
        ))),
    }
}

fn ask_string(field: &FieldSpec, label: &str) -> Result<Option<Value>, Error> {
    let check = field.clone();
    let help = if is_required(field) {
        "text"
    } else {
        "text, enter to skip"
    };
    let text = Text::new(label)
        .with_help_message(help)
        .with_formatter(&skipped_if_empty)
        .with_validator(move |text: &str| {
            let value = (!text.is_empty()).then(|| Value::String(text.to_owned()));
            verdict(&check, value)
        })
        .prompt()?;
    Ok((!text.is_empty()).then_some(Value::String(text)))
}

fn ask_number(field: &FieldSpec, label: &str) -> Result<Option<Value>, Error> {
    let range = match (field.min, field.max) {
        (Some(min), Some(max)) => format!("a number from {min} to {max}"),
        (Some(min), None) => format!("a number, at least {min}"),
        (None, Some(max)) => format!("a number, at most {max}"),
        (None, None) => "a number".to_owned(),
    };
    let help = if is_required(field) {
        range
    } else {
        format!("{range}, enter to skip")
    };
    let check = field.clone();
    let text = Text::new(label)
        .with_help_message(&help)
        .with_formatter(&skipped_if_empty)
        .with_validator(move |text: &str| match parse_number(text) {
            Ok(value) => verdict(&check, value),
            Err(message) => Ok(Validation::Invalid(message.into())),
        })
        .prompt()?;
    // The validator accepted the text, so it parses.
    parse_number(&text).map_err(|message| Error::Terminal(message.to_owned()))
}

/// An empty input is no answer; anything else must be a finite number.
fn parse_number(text: &str) -> Result<Option<Value>, &'static str> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<f64>() {
        Ok(n) if n.is_finite() => Ok(Some(FormValue::Number(n).to_json())),
        _ => Err("enter a number, such as 42 or 0.5"),
    }
}

fn ask_select(field: &FieldSpec, label: &str) -> Result<Option<Value>, Error> {
    let mut entries: Vec<Entry> = choices(field).iter().map(Entry::choice).collect();
    if field.other == Some(true) {
        entries.push(Entry::Other);
    }
    if entries.is_empty() {
        return if is_required(field) {
            Err(nothing_to_pick(field))
        } else {
            Ok(None)
        };
    }
    if !is_required(field) {
        entries.push(Entry::Skip);
    }
    let picked = Select::new(label, entries)
        .with_help_message("↑↓ to move, enter to pick, type to filter")
        .prompt()?;
    match picked {
        Entry::Choice { id, .. } => Ok(Some(Value::String(id))),
        Entry::Other => ask_other(field).map(|text| Some(Value::String(text))),
        _ => Ok(None),
    }
}

fn ask_multi(field: &FieldSpec, label: &str) -> Result<Option<Value>, Error> {
    let mut entries: Vec<Entry> = choices(field).iter().map(Entry::choice).collect();
    if field.other == Some(true) {
        entries.push(Entry::Other);
    }
    let required = is_required(field);
    if entries.is_empty() {
        return if required {
            Err(nothing_to_pick(field))
        } else {
            Ok(None)
        };
    }
    let help = if required {
        "↑↓ to move, space to pick, enter when done (at least one)"
    } else {
        "↑↓ to move, space to pick, enter when done (none to skip)"
    };
    let picked = MultiSelect::new(label, entries)
        .with_help_message(help)
        .with_formatter(&|picked| {
            let labels: Vec<String> = picked.iter().map(|o| o.value.to_string()).collect();
            skipped_if_empty(&labels.join(", "))
        })
        .with_validator(
            move |picked: &[ListOption<&Entry>]| -> Result<Validation, CustomUserError> {
                Ok(if required && picked.is_empty() {
                    Validation::Invalid("required: pick at least one".into())
                } else {
                    Validation::Valid
                })
            },
        )
        .prompt()?;
    if picked.is_empty() {
        return Ok(None);
    }
    let mut ids = Vec::with_capacity(picked.len());
    for entry in picked {
        match entry {
            Entry::Choice { id, .. } => ids.push(Value::String(id)),
            Entry::Other => ids.push(Value::String(ask_other(field)?)),
            _ => {}
        }
    }
    Ok(Some(Value::Array(ids)))
}

/// A select with no choices and no `other` cannot be answered at a prompt.
fn nothing_to_pick(field: &FieldSpec) -> Error {
    Error::Unanswerable(format!(
        "field `{}` offers no choices to pick and takes no free text",
        field.id
    ))
}

/// The free text behind an "Other…" entry.
fn ask_other(field: &FieldSpec) -> Result<String, Error> {
    let label = format!("{}: other, in your words", shown(&field.label));
    Ok(Text::new(&label)
        .with_help_message("free text")
        .with_validator(|text: &str| {
            Ok(if text.trim().is_empty() {
                Validation::Invalid("type the answer, or Esc to cancel".into())
            } else {
                Validation::Valid
            })
        })
        .prompt()?)
}

/// How an answered input is shown: an empty one as skipped.
fn skipped_if_empty(text: &str) -> String {
    if text.trim().is_empty() {
        "(skipped)".to_owned()
    } else {
        text.to_owned()
    }
}

/// The emitter's rule on one field's answer, as an input's verdict.
fn verdict(field: &FieldSpec, value: Option<Value>) -> Result<Validation, CustomUserError> {
    let mut values = Object::new();
    if let Some(value) = value {
        values.insert(field.id.clone(), value);
    }
    Ok(
        match validate_values(std::slice::from_ref(field), &values) {
            Ok(()) => Validation::Valid,
            Err(errors) => Validation::Invalid(shown(&errors.to_string()).into()),
        },
    )
}

fn is_required(field: &FieldSpec) -> bool {
    field.required == Some(true)
}

fn choices(field: &FieldSpec) -> &[Choice] {
    field.choices.as_deref().unwrap_or_default()
}

/// An entry of a choice list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// One of the request's choices or options.
    Choice { id: String, label: String },
    /// Free text instead of a choice.
    Other,
    /// No answer to an optional field.
    Skip,
    /// An optional boolean's yes.
    Yes,
    /// An optional boolean's no.
    No,
}

impl Entry {
    fn choice(choice: &Choice) -> Entry {
        Entry::Choice {
            id: choice.id.clone(),
            label: shown(&choice.label),
        }
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entry::Choice { label, .. } => f.write_str(label),
            Entry::Other => f.write_str("Other…"),
            Entry::Skip => f.write_str("Skip"),
            Entry::Yes => f.write_str("Yes"),
            Entry::No => f.write_str("No"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(spec: Value) -> FieldSpec {
        serde_json::from_value(spec).expect("a field_spec")
    }

    #[test]
    fn a_refused_field_is_asked_again_with_its_refusal() {
        let fields = [
            field(serde_json::json!({"id": "n", "type": "number", "label": "N", "min": 1})),
            field(serde_json::json!({"id": "s", "type": "string", "label": "S", "required": true})),
        ];
        // The first answers: n below its min, s skipped although required.
        let mut answers = vec![
            Some(Value::from(0)),
            None,
            Some(Value::from(3)),
            Some(Value::from("x")),
        ]
        .into_iter();
        let mut asked = Vec::new();
        let values = fill_form(&fields, |field, refusal| {
            asked.push((field.id.clone(), refusal.map(str::to_owned)));
            Ok(answers.next().expect("no more asks than answers"))
        })
        .expect("the form is filled");
        assert_eq!(
            asked,
            [
                ("n".to_owned(), None),
                ("s".to_owned(), None),
                (
                    "n".to_owned(),
                    Some("field `n`: 0 is outside [1, ∞)".to_owned())
                ),
                (
                    "s".to_owned(),
                    Some("field `s`: required, but not answered".to_owned())
                ),
            ]
        );
        assert_eq!(Value::Object(values), serde_json::json!({"n": 3, "s": "x"}));
    }

    #[test]
    fn a_repeated_field_id_is_asked_once_as_its_first_field() {
        let fields = [
            field(serde_json::json!({"id": "p", "type": "number", "label": "P", "required": true})),
            field(
                serde_json::json!({"id": "p", "type": "boolean", "label": "P2", "required": true}),
            ),
        ];
        let mut asked = Vec::new();
        let values = fill_form(&fields, |field, _| {
            asked.push(field.label.clone());
            assert!(asked.len() < 10, "asked again and again: {asked:?}");
            Ok(Some(Value::from(5)))
        })
        .expect("the form is filled");
        assert_eq!(asked, ["P"]);
        assert_eq!(Value::Object(values), serde_json::json!({"p": 5}));
    }

    #[test]
    fn a_cancelled_field_ends_the_form() {
        let fields = [field(
            serde_json::json!({"id": "s", "type": "string", "label": "S"}),
        )];
        let result = fill_form(&fields, |_, _| Err(Error::Cancelled));
        assert!(matches!(result, Err(Error::Cancelled)));
    }

    #[test]
    fn numbers_are_parsed_as_the_wire_writes_them() {
        assert_eq!(parse_number(""), Ok(None));
        assert_eq!(parse_number(" 42 "), Ok(Some(Value::from(42))));
        assert_eq!(parse_number("0.5"), Ok(Some(Value::from(0.5))));
        assert!(parse_number("forty").is_err());
        assert!(parse_number("inf").is_err());
        assert!(parse_number("NaN").is_err());
    }

    #[test]
    fn a_fields_verdict_is_the_emitters_rule() {
        let field: FieldSpec = serde_json::from_value(serde_json::json!(
            {"id": "port", "type": "number", "label": "Port", "required": true, "min": 1, "max": 65535}
        ))
        .unwrap();
        assert_eq!(
            verdict(&field, Some(Value::from(80))).unwrap(),
            Validation::Valid
        );
        let Validation::Invalid(message) = verdict(&field, Some(Value::from(0))).unwrap() else {
            panic!("0 is below min");
        };
        assert_eq!(message, "field `port`: 0 is outside [1, 65535]".into());
        let Validation::Invalid(message) = verdict(&field, None).unwrap() else {
            panic!("a required field");
        };
        assert_eq!(message, "field `port`: required, but not answered".into());
    }
}
