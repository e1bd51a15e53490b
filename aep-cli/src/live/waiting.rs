//! What waits on a person: the sessions a relay (or a capture) holds and
//! the attention requests still pending in them, folded by the state
//! projection, with the `aep respond` line that answers each request.
//! `aep sessions`, `aep pending` and `aep respond` share it.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, SystemTime};

use aep::attention_requested::Kind;
use aep::projection::project;
use aep::{AttentionRequested, Event, FieldSpec, FieldSpecType, Payload};
use aep_client::consume::{Item, Notice, Subscribe};
use serde_json::{json, Value};

use crate::common::error::{Error, Result};
use crate::common::terminal::{escape, Newlines};

/// The relay the live commands use when neither --relay nor AEP_RELAY
/// names one.
pub const DEFAULT_RELAY: &str = "http://127.0.0.1:8787";

/// How long reading a relay's history may take.
pub const READ: Duration = Duration::from_secs(60);

/// The most events read from a relay's history; past it the rest is left
/// unread, and a warning says so.
pub const MAX_EVENTS: usize = 200_000;

/// One request waiting on a person.
#[derive(Debug, Clone)]
pub struct Waiting {
    /// The request's session.
    pub session: String,
    /// The emitter's `source`.
    pub source: String,
    /// The emitter's `agent`.
    pub agent: String,
    /// The `attention.requested` id.
    pub id: String,
    /// The request's kind (`permission`, `form`, ...).
    pub kind: String,
    /// The request's prompt.
    pub prompt: String,
    /// The request's `time`.
    pub time: String,
    /// A form's fields (none for other kinds).
    pub fields: Vec<FieldSpec>,
    /// The ids of the request's options.
    pub options: Vec<String>,
}

impl Waiting {
    /// The request `event` with its decoded `payload`.
    pub fn of(event: &Event, payload: &AttentionRequested) -> Waiting {
        Waiting {
            session: event.session.clone().unwrap_or_default(),
            source: event.source.clone(),
            agent: event.agent.clone(),
            id: event.id.clone(),
            kind: payload.kind.as_str().to_owned(),
            prompt: payload.prompt.clone(),
            time: event.time.clone(),
            fields: payload.fields.clone().unwrap_or_default(),
            options: payload
                .options
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|o| o.id.clone())
                .collect(),
        }
    }

    /// Whether the request is a form.
    pub fn is_form(&self) -> bool {
        self.kind == Kind::Form.as_str()
    }

    /// The ids of a form's fields, in the form's order, each once.
    pub fn field_ids(&self) -> Vec<&str> {
        let mut seen = BTreeSet::new();
        self.fields
            .iter()
            .map(|f| f.id.as_str())
            .filter(|id| seen.insert(*id))
            .collect()
    }

    /// The answer flag that fits the request, with a value to edit: a
    /// form's `--values` naming every field, the first `--option`, or
    /// `--text`.
    pub fn answer_flag(&self) -> String {
        if self.is_form() {
            format!("--values {}", quote(&example_values(&self.fields)))
        } else if let Some(first) = self.options.first() {
            format!("--option {}", quote(first))
        } else {
            "--text 'your answer'".to_owned()
        }
    }

    /// The `aep respond` line that answers the request from `via`.
    pub fn respond_line(&self, via: &Via) -> String {
        // A line naming an escaped id would name another request.
        let pastable = |text: &str| escape(text, Newlines::Escape) == text;
        if !pastable(&self.session)
            || !pastable(&self.id)
            || !self.options.iter().all(|o| pastable(o))
        {
            return "(its ids hold control characters: answer it in the page, or with \
                    `aep respond` at a terminal)"
                .to_owned();
        }
        let mut line = String::from("aep respond");
        if let Via::Relay(relay) = via {
            if relay.trim_end_matches('/') != DEFAULT_RELAY {
                line.push_str(&format!(" --relay {}", quote(relay)));
            }
        }
        line.push_str(&format!(
            " --session {} --request {} {}",
            quote(&self.session),
            quote(&self.id),
            self.answer_flag()
        ));
        if let Via::File(name) = via {
            line.push(' ');
            line.push_str(&quote(name));
        }
        line
    }

    /// The request as `aep pending --json` prints it.
    pub fn to_json(&self, via: &Via, now: SystemTime) -> Value {
        json!({
            "session": self.session,
            "source": self.source,
            "agent": self.agent,
            "request": self.id,
            "kind": self.kind,
            "prompt": self.prompt,
            "since": self.time,
            "age_seconds": age_seconds(&self.time, now),
            "fields": self.field_ids(),
            "options": self.options,
            "respond": self.respond_line(via),
        })
    }
}

/// Where the requests were read, which the `aep respond` line names.
#[derive(Debug, Clone)]
pub enum Via {
    /// A relay's URL.
    Relay(String),
    /// A capture's path as given (`-` for standard input).
    File(String),
}

/// The requests still pending in `events`, oldest first. One pass
/// indexes the requests (the last of each `(source, session, id)`), so
/// the cost is linear in the events whatever number wait.
pub fn waiting(events: &[Event]) -> Vec<Waiting> {
    let snapshot = project(events);
    let mut requests: HashMap<(&str, &str, &str), usize> = HashMap::new();
    for (at, event) in events.iter().enumerate() {
        if event.type_ == "attention.requested" {
            let session = event.session.as_deref().unwrap_or_default();
            requests.insert((&event.source, session, &event.id), at);
        }
    }
    let mut found = Vec::new();
    for state in &snapshot.sessions {
        for pending in &state.pending {
            let key = (
                state.source.as_str(),
                state.session.as_str(),
                pending.id.as_str(),
            );
            let Some(&at) = requests.get(&key) else {
                continue;
            };
            let event = &events[at];
            if let Ok(Payload::AttentionRequested(payload)) = event.payload() {
                found.push((at, Waiting::of(event, &payload)));
            }
        }
    }
    found.sort_by_key(|(at, _)| *at);
    found.into_iter().map(|(_, w)| w).collect()
}

/// One session of a history.
#[derive(Debug, Clone)]
pub struct Session {
    /// The session id.
    pub session: String,
    /// The emitter's `source`.
    pub source: String,
    /// The emitter's `agent`.
    pub agent: String,
    /// Whether a `session.ended` was seen.
    pub ended: bool,
    /// How many runs it had.
    pub runs: usize,
    /// The `time` of its last event.
    pub last: Option<String>,
    /// How many requests in it wait on a person.
    pub pending: usize,
}

impl Session {
    /// `active` or `ended`.
    pub fn state(&self) -> &'static str {
        if self.ended {
            "ended"
        } else {
            "active"
        }
    }

    /// The session as `aep sessions --json` prints it.
    pub fn to_json(&self, now: SystemTime) -> Value {
        json!({
            "session": self.session,
            "source": self.source,
            "agent": self.agent,
            "state": self.state(),
            "runs": self.runs,
            "last_activity": self.last,
            "age_seconds": self.last.as_deref().and_then(|t| age_seconds(t, now)),
            "pending": self.pending,
        })
    }
}

/// The sessions of `events`, the most recently active first.
pub fn sessions(events: &[Event]) -> Vec<Session> {
    let snapshot = project(events);
    // One pass: each session's last event.
    let mut lasts: HashMap<(&str, &str), usize> = HashMap::new();
    for (at, event) in events.iter().enumerate() {
        if let Some(session) = &event.session {
            lasts.insert((&event.source, session), at);
        }
    }
    let mut sessions: Vec<(Option<usize>, Session)> = snapshot
        .sessions
        .iter()
        .map(|state| {
            let last = lasts
                .get(&(state.source.as_str(), state.session.as_str()))
                .copied();
            let session = Session {
                session: state.session.clone(),
                source: state.source.clone(),
                agent: state.agent.clone(),
                ended: state.ended.is_some(),
                runs: state.runs.len(),
                last: last.map(|at| events[at].time.clone()),
                pending: state.pending.len(),
            };
            (last, session)
        })
        .collect();
    sessions.sort_by_key(|s| std::cmp::Reverse(s.0));
    sessions.into_iter().map(|(_, s)| s).collect()
}

/// The relay `args` name and the events it holds, for the command
/// `command` (`aep COMMAND`); `None` once the problem is said.
pub fn read_relay(args: &crate::live::RelayArgs, command: &str) -> Option<(String, Vec<Event>)> {
    let relay = match args.url() {
        Ok(relay) => relay,
        Err(e) => {
            crate::diag!("aep {command}: error: {e}");
            return None;
        }
    };
    let runtime = crate::live::runtime(command)?;
    match runtime.block_on(history(&relay, args.token(), command)) {
        Ok(events) => Some((relay, events)),
        Err(e) => {
            crate::diag!("aep {command}: error: {e}");
            None
        }
    }
}

/// The events a relay holds, of every session (`from=all`, `live=0`):
/// at most [`MAX_EVENTS`], within [`READ`]. `command` names the reader.
pub async fn history(relay: &str, token: Option<String>, command: &str) -> Result<Vec<Event>> {
    let mut sub = Subscribe::new(relay)
        .token_opt(token)
        .identity(
            format!("aep-{command}"),
            format!("aep-{command}/{}", std::process::id()),
        )
        .replay_all()
        .history()
        .start();
    let mut events = Vec::new();
    let read = tokio::time::timeout(READ, async {
        while let Some(item) = sub.recv().await {
            match item {
                Ok(Item::Event(delivered)) => {
                    events.push(delivered.event);
                    if events.len() >= MAX_EVENTS {
                        crate::diag!(
                            "aep {command}: warning: read the first {MAX_EVENTS} events the relay \
                             holds and left the rest unread"
                        );
                        return Ok(());
                    }
                }
                Ok(Item::Notice(Notice::ReplayComplete)) => return Ok(()),
                Ok(Item::Notice(Notice::Disconnected(e))) => return Err(Error::from_source(e)),
                Ok(Item::Notice(Notice::Degraded(what))) => return Err(Error::msg(what)),
                Ok(Item::Notice(_)) => {}
                Err(e) => return Err(Error::from_source(e)),
            }
        }
        Ok(())
    })
    .await;
    match read {
        Ok(Ok(())) => Ok(events),
        Ok(Err(why)) => Err(why.context(format!("cannot read the relay's history from {relay}"))),
        Err(_) => Err(Error::msg(format!(
            "reading the relay's history from {relay} took over {} s",
            READ.as_secs()
        ))),
    }
}

/// Seconds since `time` (RFC 3339), when it parses; 0 for a time ahead
/// of this clock.
pub fn age_seconds(time: &str, now: SystemTime) -> Option<u64> {
    let then = aep::bridge::unix_nanos(time)?;
    let now = now.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos();
    let age = i128::try_from(now).ok()?.saturating_sub(then).max(0);
    u64::try_from(age / 1_000_000_000).ok()
}

/// An age as a table shows it: `42s`, `5m`, `3h`, `2d`; `?` when the
/// time does not parse.
pub fn age(time: &str, now: SystemTime) -> String {
    match age_seconds(time, now) {
        None => "?".to_owned(),
        Some(s) if s < 60 => format!("{s}s"),
        Some(s) if s < 3600 => format!("{}m", s / 60),
        Some(s) if s < 48 * 3600 => format!("{}h", s / 3600),
        Some(s) => format!("{}d", s / 86_400),
    }
}

/// Event text on one line, without control characters, at most `max`
/// characters (an ellipsis marks a cut).
pub fn shorten(text: &str, max: usize) -> String {
    let text = escape(text, Newlines::Escape);
    if text.chars().count() <= max {
        return text.into_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Rows as an aligned table: each column as wide as its widest cell, the
/// last one not padded.
pub fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(cell);
                let pad = widths[c] - cell.chars().count() + 2;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `text` as one shell word: as is when it is plain, else single-quoted.
pub fn quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:/@,+=".contains(c));
    if plain {
        text.to_owned()
    } else {
        let escaped = escape(text, Newlines::Escape).replace('\'', r"'\''");
        format!("'{escaped}'")
    }
}

/// A `--values` object naming every field of a form in the form's order,
/// with a value of the field's type to edit: a string's `TEXT`, a
/// number's `min` (or 0), a boolean's `true`, a select's first choice (in
/// a list when `multi`).
pub fn example_values(fields: &[FieldSpec]) -> String {
    let mut seen = std::collections::HashSet::new();
    let mut members = Vec::new();
    for field in fields {
        if !seen.insert(field.id.as_str()) {
            continue;
        }
        let first = field
            .choices
            .as_deref()
            .unwrap_or_default()
            .first()
            .map(|c| Value::from(c.id.as_str()))
            .unwrap_or_else(|| Value::from("TEXT"));
        let value = match field.type_ {
            FieldSpecType::Number => field
                .min
                .and_then(|m| serde_json::Number::from_f64(m.max(0.0)))
                .map(|n| {
                    // A whole number is written without a fraction.
                    match n.as_f64() {
                        Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => Value::from(f as i64),
                        _ => Value::Number(n),
                    }
                })
                .unwrap_or_else(|| Value::from(0)),
            FieldSpecType::Boolean => Value::Bool(true),
            FieldSpecType::Select if field.multi == Some(true) => Value::Array(vec![first]),
            FieldSpecType::Select => first,
            _ => Value::from("TEXT"),
        };
        members.push(format!("{}:{value}", Value::from(field.id.as_str())));
    }
    format!("{{{}}}", members.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_for_a_shell_only_when_needed() {
        assert_eq!(quote("s_8f2c"), "s_8f2c");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(r#"{"a":1}"#), r#"'{"a":1}'"#);
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn ages_read_as_units() {
        let now = humantime::parse_rfc3339("2026-12-01T10:00:00Z").unwrap();
        assert_eq!(age("2026-12-01T09:59:30Z", now), "30s");
        assert_eq!(age("2026-12-01T09:00:00Z", now), "1h");
        assert_eq!(age("2026-11-28T10:00:00Z", now), "3d");
        assert_eq!(age("2026-12-01T11:00:00Z", now), "0s");
        assert_eq!(age("yesterday", now), "?");
        // Any RFC 3339 date-time: an offset, a lowercase z, a fraction.
        assert_eq!(age("2026-12-01T11:59:00+02:00", now), "1m");
        assert_eq!(age("2026-12-01t09:59:30.5z", now), "29s");
        assert_eq!(
            age("2026-12-01T09:59:30", now),
            "?",
            "no zone: not RFC 3339"
        );
    }

    #[test]
    fn a_long_prompt_is_cut_on_one_line() {
        assert_eq!(shorten("a\nb", 10), "a\\nb");
        assert_eq!(shorten("abcdefghij", 5), "abcd…");
    }

    #[test]
    fn a_request_whose_ids_hold_control_characters_gets_no_line_to_paste() {
        let mut waiting = Waiting {
            session: "s".into(),
            source: "urn:a".into(),
            agent: "a".into(),
            id: "r1".into(),
            kind: "permission".into(),
            prompt: "p".into(),
            time: "2026-12-01T10:00:00Z".into(),
            fields: Vec::new(),
            options: vec!["allow".into()],
        };
        let via = Via::Relay(DEFAULT_RELAY.to_owned());
        assert_eq!(
            waiting.respond_line(&via),
            "aep respond --session s --request r1 --option allow"
        );
        waiting.id = "r1\n".into();
        assert!(waiting.respond_line(&via).contains("control characters"));
        waiting.id = "r1".into();
        waiting.session = "s\u{1b}[2J".into();
        assert!(waiting.respond_line(&via).contains("control characters"));
    }
}
