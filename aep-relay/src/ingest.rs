//! From posted bytes to admitted events (AEP-0003 §3.2): each line (or
//! the one `application/json` body) is UTF-8, JSON, and an envelope that
//! passes the envelope schema; its bytes are kept as received.

use std::fmt;
use std::sync::Arc;

use aep::frame::ErrorCode;
use aep::{EventRef, RegisteredType};
use serde::de::IgnoredAny;

use crate::stored::{compact, Stored};

/// An event that passed the envelope checks, with its delivered form.
/// The envelope stays borrowed from the posted text: fan-out reads only
/// attributes, and an owned copy is made only to down-level.
pub(crate) struct Admitted<'a> {
    pub event: EventRef<'a>,
    pub stored: Arc<Stored>,
}

impl Admitted<'_> {
    /// Whether the event is a command (AEP-0004 §2: a `control.*` verb or
    /// a vendor `x.*.control.*` verb; not the acks).
    pub fn is_command(&self) -> bool {
        is_command(self.event.type_())
    }
}

/// Whether `event_type` names a command.
pub(crate) fn is_command(event_type: &str) -> bool {
    match event_type.parse::<RegisteredType>() {
        Ok(t) => t.scope() == aep::Scope::Command,
        Err(_) => event_type.starts_with("x.") && event_type.split('.').nth(2) == Some("control"),
    }
}

/// Why a line was refused, with the `error` code the HTTP body names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LineError {
    Utf8(String),
    Json(String),
    Envelope(String),
}

impl LineError {
    pub fn code(&self) -> ErrorCode {
        match self {
            LineError::Utf8(_) => ErrorCode::InvalidUtf8,
            LineError::Json(_) => ErrorCode::InvalidJson,
            LineError::Envelope(_) => ErrorCode::InvalidEvent,
        }
    }

    pub fn detail(&self) -> &str {
        match self {
            LineError::Utf8(d) | LineError::Json(d) | LineError::Envelope(d) => d,
        }
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code(), self.detail())
    }
}

/// Checks one event's bytes (a batch line without its terminator, or a
/// whole body) and renders it for delivery. The envelope is checked and
/// rendered as borrowed from the text: no owned `Event` is made.
pub(crate) fn admit(bytes: &[u8]) -> Result<Admitted<'_>, LineError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        LineError::Utf8(format!(
            "not UTF-8: invalid byte at offset {}",
            e.valid_up_to()
        ))
    })?;
    let text = text.strip_suffix('\r').unwrap_or(text);
    let borrowed = match EventRef::from_json(text) {
        Ok(borrowed) => borrowed,
        Err(error) => {
            return Err(match serde_json::from_str::<IgnoredAny>(text) {
                Err(syntax) => LineError::Json(syntax.to_string()),
                Ok(_) => LineError::Envelope(error.to_string()),
            })
        }
    };
    if let Err(violations) = borrowed.validate_envelope() {
        let detail = violations
            .0
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        return Err(LineError::Envelope(detail));
    }
    let stored = if memchr::memchr2(b'\r', b'\n', text.as_bytes()).is_some() {
        Stored::new(&borrowed, &compact(text.as_bytes()))
    } else {
        Stored::new(&borrowed, text.as_bytes())
    };
    Ok(Admitted {
        event: borrowed,
        stored: Arc::new(stored),
    })
}

/// The events of an NDJSON body: its non-blank lines, without
/// terminators, each with its 0-based index in the batch (blank lines are
/// not part of it, as in the published reference relay).
pub(crate) fn lines(body: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut start = 0;
    memchr::memchr_iter(b'\n', body)
        .chain(std::iter::once(body.len()))
        .map(move |end| {
            let line = &body[start..end];
            start = end + 1;
            line
        })
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .enumerate()
}

/// The lines of an NDJSON body, at most `max` of them: counted while
/// split, so a body of many short lines is refused (`Err` with its line
/// count) before more than `max` are collected.
pub(crate) fn batch(body: &[u8], max: usize) -> Result<Vec<(usize, &[u8])>, usize> {
    let mut collected = Vec::new();
    for line in lines(body) {
        if collected.len() == max {
            // Counting the rest holds nothing.
            return Err(lines(body).count());
        }
        collected.push(line);
    }
    Ok(collected)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str = r#""time":"2026-12-03T09:00:00Z","source":"urn:a","agent":"a""#;

    #[test]
    fn keeps_the_bytes_of_a_line() {
        let line = format!(
            r#"{{"aep":"0.1", "id":"e","type":"session.started",{H},"session":"s","seq":0}}"#
        );
        let admitted = admit(line.as_bytes()).unwrap();
        assert_eq!(&admitted.stored.json()[..], line.as_bytes());
        let crlf = format!("{line}\r");
        assert_eq!(
            &admit(crlf.as_bytes()).unwrap().stored.json()[..],
            line.as_bytes()
        );
    }

    #[test]
    fn compacts_a_body_over_several_lines() {
        let body = format!("{{\n\"aep\":\"0.1\",\n\"id\":\"e\",\"type\":\"session.started\",{H},\"session\":\"s\",\"seq\":0}}\n");
        let json = admit(body.trim_end().as_bytes()).unwrap().stored.json();
        assert!(!json.contains(&b'\n'));
        assert!(json.starts_with(b"{\"aep\":\"0.1\",\"id\":\"e\""));
    }

    #[test]
    fn names_what_is_wrong() {
        assert!(matches!(admit(b"\xff{}"), Err(LineError::Utf8(_))));
        assert!(matches!(admit(b"{\"aep\":"), Err(LineError::Json(_))));
        let no_id =
            format!(r#"{{"aep":"0.1","type":"session.started",{H},"session":"s","seq":0}}"#);
        assert!(matches!(
            admit(no_id.as_bytes()),
            Err(LineError::Envelope(_))
        ));
        let unscoped = format!(r#"{{"aep":"0.1","id":"e","type":"session.started",{H}}}"#);
        let err = admit(unscoped.as_bytes())
            .err()
            .expect("a session event needs a session");
        assert_eq!(err.code(), ErrorCode::InvalidEvent);
    }

    #[test]
    fn knows_commands() {
        assert!(is_command("control.cancel"));
        assert!(is_command("control.attention.respond"));
        assert!(is_command("x.acme.control.reboot"));
        assert!(!is_command("control.accepted"));
        assert!(!is_command("x.acme.tool.control"));
        assert!(!is_command("tool.requested"));
    }

    #[test]
    fn blank_lines_are_skipped() {
        let body = b"a\n\n  \r\nb\n";
        assert_eq!(
            lines(body).collect::<Vec<_>>(),
            [(0, &b"a"[..]), (1, &b"b"[..])]
        );
        assert_eq!(lines(b"a\nb").count(), 2);
        assert_eq!(lines(b"\n").count(), 0);
        assert_eq!(lines(b"").count(), 0);
        assert_eq!(lines(b"x\r\n").collect::<Vec<_>>(), [(0, &b"x\r"[..])]);
    }

    #[test]
    fn a_batch_is_refused_before_more_than_max_lines_are_held() {
        let body = "1\n".repeat(100_000);
        assert_eq!(batch(body.as_bytes(), 3), Err(100_000));
        let held = batch(b"a\nb\n\nc", 3).unwrap();
        assert_eq!(held, [(0, &b"a"[..]), (1, &b"b"[..]), (2, &b"c"[..])]);
        assert!(held.capacity() <= 4, "held {}", held.capacity());
        assert_eq!(batch(b"a\nb\nc\nd", 3), Err(4));
    }
}
