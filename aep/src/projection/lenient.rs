//! Reading a line the way the projection folds it: by the envelope
//! attributes the fold reads, not by the whole envelope's rules.
//!
//! The published SDKs' projection folds any event it can read its
//! attributes from: a `"step": null`, an extension attribute the envelope
//! refuses (an upper-case name, an object value) or a payload that breaks
//! its schema do not stop it from seeing that a run finished. So does
//! [`read`]: a line that decodes as an [`Event`] is that event; one that
//! does not is read again from the members the fold uses (`source`, `id`,
//! `type`, `time`, `agent`, `session`, `run`, `subject`, `seq`, `epoch`,
//! `data`), each taken when it has the type the envelope gives it and
//! left out (and named) otherwise. Only a line that is not a JSON object,
//! or lacks a string `aep`, `id`, `type`, `time`, `source` or `agent`, cannot
//! be folded at all.
//!
//! An event read this way is fingerprinted for deduplication by what was
//! read, so two deliveries that differ only in members the fold does not
//! read count as one event.

use std::fmt;

use serde_json::{Map, Value};

use aep_types::Event;

/// A line read for the fold.
#[derive(Debug)]
pub struct Foldable {
    /// The event, or the part of it the fold reads.
    pub event: Event,
    /// Why the line is not a valid event, when it is not (the strict
    /// decoder's error): the event was read from its attributes.
    pub invalid: Option<String>,
    /// The attributes the fold reads that were left out, with the reason.
    pub left_out: Vec<String>,
}

/// A line the fold cannot read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable(pub String);

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unreadable {}

/// The attributes without which nothing can be folded.
const REQUIRED: [&str; 6] = ["aep", "id", "type", "time", "source", "agent"];
/// The optional string attributes the fold reads.
const STRINGS: [&str; 3] = ["session", "run", "subject"];
/// The optional integer attributes the fold reads.
const POSITIONS: [&str; 2] = ["seq", "epoch"];

/// Reads `line` for the fold: strictly when it is a valid event, else by
/// the attributes the fold reads (see the [`projection`](super) module).
///
/// ```
/// use aep::projection::read;
///
/// // `step` is never null, and an extension name is lower-case: not a
/// // valid event, but the fold can read the run's end.
/// let line = br#"{"aep":"0.1","id":"e2","type":"run.finished","time":"2026-12-03T09:00:05Z",
///   "source":"urn:a","agent":"a","session":"s","run":"r","seq":2,"step":null,"Region":"eu"}"#;
/// let read = read(line)?;
/// assert_eq!(read.event.run.as_deref(), Some("r"));
/// assert!(read.invalid.is_some());
/// assert!(read.left_out.is_empty());
/// assert!(aep::projection::read(b"[1, 2]").is_err());
/// # Ok::<(), aep::projection::Unreadable>(())
/// ```
pub fn read(line: &[u8]) -> Result<Foldable, Unreadable> {
    let strict = match Event::from_slice(line) {
        Ok(event) => {
            return Ok(Foldable {
                event,
                invalid: None,
                left_out: Vec::new(),
            })
        }
        Err(e) => e.to_string(),
    };
    let Ok(Value::Object(mut members)) = serde_json::from_slice::<Value>(line) else {
        return Err(Unreadable(format!("not an event: {strict}")));
    };
    let mut kept = Map::new();
    for name in REQUIRED {
        match members.remove(name) {
            Some(Value::String(text)) => kept.insert(name.to_owned(), Value::String(text)),
            Some(_) => return Err(Unreadable(format!("`{name}` is not a string: {strict}"))),
            None => return Err(Unreadable(format!("no `{name}`: {strict}"))),
        };
    }
    let mut left_out = Vec::new();
    let mut keep = |name: &str, value: Value, fits: bool, what: &str| {
        if fits {
            kept.insert(name.to_owned(), value);
        } else {
            left_out.push(format!("`{name}` ({value} is not {what})"));
        }
    };
    for name in STRINGS {
        if let Some(value) = members.remove(name) {
            let fits = value.is_string();
            keep(name, value, fits, "a string");
        }
    }
    for name in POSITIONS {
        if let Some(value) = members.remove(name) {
            let fits = value.is_u64();
            keep(name, value, fits, "a non-negative integer");
        }
    }
    if let Some(value) = members.remove("data") {
        let fits = value.is_object();
        keep("data", value, fits, "an object");
    }
    let text = Value::Object(kept).to_string();
    let event = Event::from_json(&text).map_err(|e| Unreadable(format!("not an event: {e}")))?;
    Ok(Foldable {
        event,
        invalid: Some(strict),
        left_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str =
        r#""aep":"0.1","time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a","session":"s""#;

    #[test]
    fn a_valid_event_is_read_as_it_is() {
        let line = format!(r#"{{{H},"id":"e1","type":"run.started","run":"r","seq":1,"x":"y"}}"#);
        let read = read(line.as_bytes()).unwrap();
        assert_eq!(read.invalid, None);
        assert_eq!(read.event, Event::from_json(&line).unwrap());
    }

    #[test]
    fn what_the_envelope_refuses_and_the_fold_does_not_read_is_dropped() {
        let line = format!(
            r#"{{{H},"id":"e1","type":"run.started","run":"r","seq":1,"step":null,
                "Region":"eu","meta":{{"a":1}},"severity":"loud","data":{{"trigger":7}}}}"#
        );
        let read = read(line.as_bytes()).unwrap();
        assert!(read.invalid.is_some());
        assert!(read.left_out.is_empty(), "{:?}", read.left_out);
        assert_eq!(read.event.run.as_deref(), Some("r"));
        assert_eq!(read.event.seq, Some(1));
        assert_eq!(read.event.data.as_ref().unwrap().get(), r#"{"trigger":7}"#);
        assert_eq!(read.event.extensions.len(), 0);
    }

    #[test]
    fn an_attribute_the_fold_reads_is_left_out_when_it_has_the_wrong_type() {
        let line = format!(r#"{{{H},"id":"e1","type":"x.v.t","seq":-3,"run":7,"data":[1]}}"#);
        let read = read(line.as_bytes()).unwrap();
        assert_eq!((read.event.seq, read.event.run.as_ref()), (None, None));
        assert_eq!(read.event.data, None);
        assert_eq!(
            read.left_out,
            [
                "`run` (7 is not a string)",
                "`seq` (-3 is not a non-negative integer)",
                "`data` ([1] is not an object)"
            ]
        );
    }

    #[test]
    fn a_line_without_what_the_fold_needs_is_unreadable() {
        for line in [
            "not json".to_owned(),
            "[1]".to_owned(),
            format!(r#"{{{H},"type":"run.started"}}"#),
            format!(r#"{{{H},"id":1,"type":"run.started"}}"#),
        ] {
            assert!(read(line.as_bytes()).is_err(), "{line}");
        }
    }
}
