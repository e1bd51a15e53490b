//! The AEP-0006 stream rules: form answers checked against the request
//! they answer, and the type-dependent capture rule of `answer.values`.
//!
//! Only what the checks need is kept of a `kind: "form"` request: each
//! field's id, type, `multi`, `other` and choice ids (no labels, no
//! prompt), from the request until its `attention.resolved`,
//! `attention.timeout` or the end of its session.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::Value;

use aep_types::attention_requested::Kind as RequestKind;
use aep_types::{Capture, Event, FieldSpec, FieldSpecType, Object, Payload, RegisteredType};

use crate::fingerprint::{self, Key, KeyMap};

/// One field of a pending form request, reduced to what the checks read.
#[derive(Debug)]
struct Field {
    id: String,
    kind: Kind,
}

impl Field {
    fn of(spec: &FieldSpec) -> Field {
        let kind = match spec.type_ {
            FieldSpecType::String => Kind::Text,
            FieldSpecType::Select => Kind::Select {
                other: spec.other == Some(true),
                choices: spec
                    .choices
                    .iter()
                    .flatten()
                    .map(|c| c.id.clone())
                    .collect(),
            },
            // Numbers, booleans, and field types this version does not
            // know: nothing to check.
            _ => Kind::Structural,
        };
        Field {
            id: spec.id.clone(),
            kind,
        }
    }
}

#[derive(Debug)]
enum Kind {
    /// A free-text field.
    Text,
    /// A number or boolean field.
    Structural,
    /// A select.
    Select {
        other: bool,
        /// The choice ids.
        choices: HashSet<String>,
    },
}

/// A problem with one answer value.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Problem {
    /// A non-choice string on a select without `other: true`
    /// (`form-values`).
    NotAChoice {
        /// The answer's `values` key.
        field: String,
        /// The offending string.
        value: String,
    },
    /// Free text at capture `metadata` (`capture`).
    TextAtMetadata {
        /// The answer's `values` key.
        field: String,
        /// Whether the field is a select (the text is `other` free text)
        /// rather than a string field.
        other: bool,
    },
}

/// The pending form requests of a stream. Ids are unique per source and
/// sessions are keyed `(source, session)` (AEP-0001 §5.2, §7), so requests
/// are kept per `(source, session)` session, then by id; an
/// `attention.answered`, `attention.resolved` or `attention.timeout` comes
/// from the request's source. A `control.attention.respond` comes from
/// another source and names only `session` and `subject`: it is checked
/// when exactly one pending request matches them.
#[derive(Debug, Default)]
pub(super) struct Forms {
    /// Per `(source, session)`: the pending requests by id.
    sessions: KeyMap<HashMap<String, Vec<Field>>>,
    /// Per `(session, id)`: the `(source, session)` keys holding such a
    /// request, for commands.
    by_request: KeyMap<Vec<Key>>,
}

impl Forms {
    /// Updates the pending requests with `event`, and checks it if it
    /// answers one.
    pub(super) fn check(&mut self, event: &Event, problems: &mut Vec<Problem>) {
        let Some(session) = &event.session else {
            return;
        };
        let here = fingerprint::key(&event.source, session);
        let Some(registered) = event.registered_type() else {
            return;
        };
        match registered {
            RegisteredType::AttentionRequested => {
                if let Ok(Payload::AttentionRequested(request)) = event.payload() {
                    if request.kind == RequestKind::Form {
                        let fields = request.fields.iter().flatten().map(Field::of).collect();
                        let requests = self.sessions.entry(here).or_default();
                        if requests.insert(event.id.clone(), fields).is_none() {
                            self.by_request
                                .entry(fingerprint::key(session, &event.id))
                                .or_default()
                                .push(here);
                        }
                    }
                }
            }
            RegisteredType::AttentionResolved | RegisteredType::AttentionTimeout => {
                if let Some(subject) = &event.subject {
                    self.remove(here, session, subject);
                }
            }
            RegisteredType::SessionEnded => {
                if let Some(requests) = self.sessions.remove(&here) {
                    for id in requests.keys() {
                        self.unindex(here, session, id);
                    }
                }
            }
            RegisteredType::AttentionAnswered | RegisteredType::ControlAttentionRespond => {
                let Some(subject) = &event.subject else {
                    return;
                };
                let holder = if registered == RegisteredType::AttentionAnswered {
                    Some(here)
                } else {
                    match self.by_request.get(&fingerprint::key(session, subject)) {
                        Some(holders) if holders.len() == 1 => Some(holders[0]),
                        _ => None,
                    }
                };
                let fields = holder
                    .and_then(|key| self.sessions.get(&key))
                    .and_then(|requests| requests.get(subject));
                if let (Some(fields), Some(values)) = (fields, answer_values(event)) {
                    check_values(fields, &values, event.capture_or_default(), problems);
                }
            }
            _ => {}
        }
    }

    /// Forgets request `id` of the session `here` (named `session`).
    fn remove(&mut self, here: Key, session: &str, id: &str) {
        let Some(requests) = self.sessions.get_mut(&here) else {
            return;
        };
        if requests.remove(id).is_some() {
            if requests.is_empty() {
                self.sessions.remove(&here);
            }
            self.unindex(here, session, id);
        }
    }

    /// Removes `here` from the holders of request `(session, id)`.
    fn unindex(&mut self, here: Key, session: &str, id: &str) {
        let request = fingerprint::key(session, id);
        if let Some(holders) = self.by_request.get_mut(&request) {
            holders.retain(|&k| k != here);
            if holders.is_empty() {
                self.by_request.remove(&request);
            }
        }
    }

    /// How many form requests are pending.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.sessions.values().map(HashMap::len).sum()
    }
}

/// `data.answer.values`, when it is an object.
fn answer_values(event: &Event) -> Option<Object> {
    #[derive(Deserialize)]
    struct Data {
        answer: Option<Answer>,
    }
    #[derive(Deserialize)]
    struct Answer {
        values: Option<Value>,
    }
    let data: Data = serde_json::from_str(event.data.as_ref()?.get()).ok()?;
    match data.answer?.values? {
        Value::Object(values) => Some(values),
        _ => None,
    }
}

/// Checks each answer value against its field: non-choice strings on a
/// closed select, and (at `metadata`) free text.
fn check_values(fields: &[Field], values: &Object, capture: Capture, problems: &mut Vec<Problem>) {
    // Each id's first field, as `validate_values` takes it.
    let mut by_id = HashMap::with_capacity(fields.len());
    for field in fields {
        by_id.entry(field.id.as_str()).or_insert(field);
    }
    for (key, value) in values {
        let Some(field) = by_id.get(key.as_str()) else {
            continue;
        };
        let strings: Vec<&str> = match value {
            Value::String(s) => vec![s.as_str()],
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        match &field.kind {
            Kind::Text if capture == Capture::Metadata && value.is_string() => {
                problems.push(Problem::TextAtMetadata {
                    field: key.clone(),
                    other: false,
                });
            }
            Kind::Select { other, choices } => {
                let mut free_text = false;
                for s in strings {
                    if choices.contains(s) {
                        continue;
                    }
                    if *other {
                        free_text = true;
                    } else {
                        problems.push(Problem::NotAChoice {
                            field: key.clone(),
                            value: s.to_owned(),
                        });
                    }
                }
                if free_text && capture == Capture::Metadata {
                    problems.push(Problem::TextAtMetadata {
                        field: key.clone(),
                        other: true,
                    });
                }
            }
            Kind::Text | Kind::Structural => {}
        }
    }
}
