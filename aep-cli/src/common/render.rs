//! One readable line per event, for `aep tail` and `aep timeline`: the
//! time, the session, the type, the run, and a short summary of the
//! payload. Every piece of event text has its control characters escaped
//! (an event cannot move the cursor or clear the screen), and the line is
//! coloured by severity only when asked (standard output a terminal).

use aep::{Event, Severity};
use serde_json::Value;

use crate::common::terminal::{escape, Newlines};

/// The longest summary, in characters.
const SUMMARY: usize = 120;
/// The longest single value in a summary, in characters.
const VALUE: usize = 60;

/// The payload members a summary shows, in this order, as JSON Pointers
/// into `data` and the name shown.
const MEMBERS: &[(&str, &str)] = &[
    ("/tool/name", "tool"),
    ("/kind", "kind"),
    ("/prompt", "prompt"),
    ("/message", "message"),
    ("/phase", "phase"),
    ("/percent", "percent"),
    ("/status", "status"),
    ("/resolution", "resolution"),
    ("/reason", "reason"),
    ("/scope", "scope"),
    ("/answer/option", "option"),
    ("/answer/text", "text"),
    ("/via", "via"),
    ("/exit_code", "exit"),
    ("/duration_ms", "ms"),
    ("/error/message", "error"),
    ("/error/code", "code"),
    ("/detail", "detail"),
    ("/label", "label"),
    ("/model", "model"),
    ("/tick", "tick"),
];

/// The line for `event`, without a line end; coloured by its severity
/// when `colour`.
pub fn line(event: &Event, colour: bool) -> String {
    let mut out = String::with_capacity(96);
    out.push_str(&short_time(&event.time));
    out.push_str("  ");
    out.push_str(&clean(event.session.as_deref().unwrap_or("-"), VALUE));
    out.push_str("  ");
    out.push_str(&clean(&event.type_, VALUE));
    if let Some(run) = &event.run {
        out.push_str(" [");
        out.push_str(&clean(run, VALUE));
        out.push(']');
    }
    let summary = summary(event);
    if !summary.is_empty() {
        out.push_str("  ");
        out.push_str(&summary);
    }
    match (colour, colour_of(event.severity_or_default())) {
        (true, Some(code)) => format!("\x1b[{code}m{out}\x1b[0m"),
        _ => out,
    }
}

/// The SGR colour of a severity; `info` has none.
fn colour_of(severity: Severity) -> Option<&'static str> {
    match severity {
        Severity::Debug => Some("2"),
        Severity::Info => None,
        Severity::Notice => Some("36"),
        Severity::Warning => Some("33"),
        Severity::Error => Some("31"),
        Severity::Critical => Some("1;31"),
        _ => None,
    }
}

/// `HH:MM:SS` of an RFC 3339 time, or the time escaped as it is.
fn short_time(time: &str) -> String {
    let clock = time.get(11..19).filter(|clock| {
        time.as_bytes()
            .get(10)
            .is_some_and(|b| *b == b'T' || *b == b't')
            && clock.bytes().enumerate().all(|(i, b)| {
                if i == 2 || i == 5 {
                    b == b':'
                } else {
                    b.is_ascii_digit()
                }
            })
    });
    match clock {
        Some(clock) => clock.to_owned(),
        None => clean(time, 32),
    }
}

/// `name=value` for the payload members [`MEMBERS`] names, within
/// [`SUMMARY`] characters; the subject for commands and acks.
pub fn summary(event: &Event) -> String {
    let mut parts = Vec::new();
    if let Some(data) = &event.data {
        if let Ok(data) = serde_json::from_str::<Value>(data.get()) {
            for (pointer, name) in MEMBERS {
                if let Some(value) = data.pointer(pointer).and_then(scalar) {
                    parts.push(format!("{name}={value}"));
                }
            }
        }
    }
    if event.type_.starts_with("control.") {
        if let Some(subject) = &event.subject {
            parts.push(format!("subject={}", clean(subject, VALUE)));
        }
        if let Some(cause) = &event.cause {
            parts.push(format!("cause={}", clean(cause, VALUE)));
        }
    }
    let mut out = String::new();
    for part in parts {
        if out.chars().count() + part.chars().count() + 1 > SUMMARY {
            out.push_str(" …");
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&part);
    }
    out
}

/// A scalar as shown: strings quoted when they hold a space, cut to
/// [`VALUE`] characters and escaped.
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if s.contains(' ') || s.is_empty() => {
            Some(format!("\"{}\"", clean(s, VALUE)))
        }
        Value::String(s) => Some(clean(s, VALUE)),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// `text` cut to `max` characters (with `…`) and escaped onto one line.
fn clean(text: &str, max: usize) -> String {
    let cut: String = if text.chars().count() > max {
        let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    } else {
        text.to_owned()
    };
    escape(&cut, Newlines::Escape).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(line: &str) -> Event {
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn a_line_names_time_session_type_run_and_the_payload() {
        let e = event(
            r#"{"aep":"0.1","id":"e","type":"tool.completed","time":"2026-11-30T09:00:03.120Z","source":"urn:a","agent":"a","session":"ses_1","run":"r1","seq":3,"data":{"tool":{"name":"Bash"},"duration_ms":41,"status":"success"}}"#,
        );
        assert_eq!(
            line(&e, false),
            "09:00:03  ses_1  tool.completed [r1]  tool=Bash status=success ms=41"
        );
    }

    #[test]
    fn hostile_text_is_escaped_and_colour_only_when_asked() {
        let e = event(
            r#"{"aep":"0.1","id":"e","type":"attention.requested","time":"bad\u001b[2J","source":"urn:a","agent":"a","session":"s\u001b]0;x\u0007","seq":3,"severity":"warning","data":{"kind":"permission","prompt":"rm\r\n -rf \u202e/"}}"#,
        );
        let plain = line(&e, false);
        assert!(!plain.chars().any(|c| c.is_control()), "{plain:?}");
        assert!(plain.contains("s\\x1b]0;x\\x07"), "{plain}");
        assert!(
            plain.contains(r#"prompt="rm\r\n -rf \u{202e}/""#),
            "{plain}"
        );
        let coloured = line(&e, true);
        assert!(coloured.starts_with("\x1b[33m") && coloured.ends_with("\x1b[0m"));
    }
}
