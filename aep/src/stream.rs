//! The stream validator: every per-event check, and the stream rules, over
//! a JSONL stream, reporting every finding with its line number and going
//! on.
//!
//! # Rules
//!
//! Each [`Finding`] names one [`Rule`]; `warning` rules never make a stream
//! fail. The list ([`Rule::description`] is the text):
//!
//! | rule | level | what it reports |
//! |---|---|---|
//! | `json` | error | a line that is blank, not UTF-8 or not JSON |
//! | `envelope` | error | an envelope that breaks the envelope schema: a missing or mistyped attribute, a constraint, a scoping rule |
//! | `payload` | error | a `data` that breaks its type's payload schema |
//! | `unregistered-type` | error | a type in a core category that the registry does not list (vendor `x.*` types are fine) |
//! | `reserved-type` | warning | a type the registry lists as reserved for future use |
//! | `capture` | error | a `data` member above the event's capture level, or at capture `metadata` free text in a form answer |
//! | `id-collision` | error | a `(source, id)` already used by a different event (the second is ignored) |
//! | `duplicate` | warning | an identical redelivery of an event (legal at-least-once delivery, ignored) |
//! | `seq-regression` | error | a `seq` that does not advance within its session's epoch |
//! | `epoch-regression` | error | an `epoch` lower than the session's last |
//! | `run-terminal-exclusivity` | error | a second terminal (`run.finished`, `run.failed`, `run.cancelled`) for one run |
//! | `session-terminal-exclusivity` | error | a second `session.ended` for one session |
//! | `ended-with-pending-attention` | error | `session.ended` while attention requests are unresolved |
//! | `form-values` | error | a form answer with a non-choice string for a select field without `other: true` |
//! | `ack-exclusivity` | error | a second, different acknowledgement of one command from one source |
//! | `unsupported-version` | warning | lines of an unsupported major `aep` version, skipped (reported once) |
//! | `line-too-long` | error | a line over the line limit, skipped unread |
//!
//! # What each check reads
//!
//! Per line: the line must be UTF-8 and JSON, then decode as an
//! [`Event`] (`envelope` otherwise), then pass
//! [`Event::validate_schema`](aep_types::Event::validate_schema)
//! (violations under `/data` are `payload`, the others `envelope`) and
//! [`Event::validate_capture`](aep_types::Event::validate_capture)
//! (`capture`). A type without registry entry is `unregistered-type` when its
//! first segment is a core category.
//!
//! The stream rules are those of the [state projection](crate::projection),
//! folded in file order. Dedupe on `(source, id)` comes first: each
//! redelivery of an event is one `duplicate` finding and is checked no
//! further; an `id-collision` is checked as an event, but folds no state.
//! `id-collision`, `seq-regression`, `epoch-regression`,
//! `run-terminal-exclusivity`, `session-terminal-exclusivity` and
//! `ended-with-pending-attention` mean what the projection's violations of
//! the same name mean (AEP-0001 §7, AEP-0002 §2 convention 5 and §7).
//!
//! `form-values` and the AEP-0006 part of `capture` read the
//! `kind: "form"` request an `attention.answered` or
//! `control.attention.respond` answers: the request with the answer's
//! `subject` as `id` in the same `session`, seen earlier in the stream and
//! not yet resolved or timed out. An answer to a request the stream does
//! not hold is not checked.
//!
//! `ack-exclusivity` (AEP-0004 §3): the first `control.accepted` or
//! `control.rejected` with a given `cause` from a source is the decision; a
//! byte-identical re-ack is a redelivery (`duplicate`), any other ack of the
//! same `cause` from that source is a finding.
//!
//! `unsupported-version` (AEP-0003 §3.1 rule 3): a line whose `aep` names a
//! major version other than 0 is skipped. The first such line is reported
//! (as a warning: the line may be valid in its own version); later ones are
//! only counted, in [`Summary::skipped`].
//!
//! # Memory
//!
//! No event is kept. Per stream the validator holds:
//!
//! - per seen `(source, id)`: a 128-bit key and a 64-bit fingerprint of the
//!   event's canonical JSON form, 24 bytes plus hash-table overhead, **29 to
//!   57 bytes per seen id** (depending on how full the table is);
//! - per `(source, session)`: the projection's state (agent, start and end
//!   times, position, the runs with their times, the pending attention
//!   requests);
//! - per acknowledged `(source, cause)`: a 128-bit key, 20 to 39 bytes;
//! - per pending form request: its fields' ids, types and choice ids;
//! - one line buffer, at most [`Options::max_line_bytes`] plus 2 bytes.
//!
//! [`validate_reader_parallel`] holds in addition two batches of lines
//! (about 256 KiB of input per thread each, 4 MiB and a line at most) and their
//! decoded events.
//!
//! A 64-bit fingerprint can take a different event for a redelivery with
//! probability about 2⁻⁶⁴ per repeated id.

mod forms;
mod parallel;
mod rule;

use std::io::BufRead;

use serde::{Deserialize, Serialize};

use aep_types::reader::{
    too_long_message, unsupported_version, Line, LineReader, DEFAULT_MAX_LINE_BYTES,
};
use aep_types::{pointer_token, Category, Event, RegisteredType, Status};

use crate::fingerprint::{self, KeyMap};
use crate::projection::{Folded, Projection, Violation};
use forms::{Forms, Problem};
pub use parallel::{validate_reader_parallel, MAX_JOBS};
pub use rule::{Level, Rule};

/// One thing the validator found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The 1-based line number.
    pub line: u64,
    /// The rule broken.
    pub rule: Rule,
    /// The rule's severity.
    pub level: Level,
    /// What is wrong, for a person: where (a JSON Pointer, an attribute)
    /// and which rule of the protocol.
    pub message: String,
    /// The event's `id`, when known.
    pub id: Option<String>,
}

/// Validator settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The longest line read, in bytes, without its line ending; a longer
    /// line is one `line-too-long` finding. Default
    /// [`DEFAULT_MAX_LINE_BYTES`] (4 MiB).
    pub max_line_bytes: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        }
    }
}

/// The totals of a validated stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Lines read.
    pub lines: u64,
    /// Lines that decoded to an event (redeliveries included).
    pub events: u64,
    /// Findings of level error.
    pub errors: u64,
    /// Findings of level warning.
    pub warnings: u64,
    /// Lines skipped for an unsupported major version.
    pub skipped: u64,
}

/// The state of one stream's validation: no events, only what the rules
/// need (see [Memory](self#memory)). Feed it lines in order, then
/// [`finish`](Validator::finish) it; [`validate_reader`] does both for a
/// [`BufRead`].
///
/// ```
/// use aep::stream::{Options, Rule, Validator};
///
/// let mut validator = Validator::new(Options::default());
/// let mut findings = Vec::new();
/// let started = r#"{"aep":"0.1","id":"e1","type":"session.started","time":"2026-12-01T10:00:00Z","source":"urn:a","agent":"a","session":"s","seq":0}"#;
/// validator.check_line(1, started.as_bytes(), &mut findings);
/// validator.check_line(2, started.as_bytes(), &mut findings);
/// let summary = validator.finish();
/// assert_eq!((findings[0].line, findings[0].rule), (2, Rule::Duplicate));
/// assert_eq!((summary.events, summary.errors, summary.warnings), (2, 0, 1));
/// ```
#[derive(Debug)]
pub struct Validator {
    options: Options,
    summary: Summary,
    projection: Projection,
    acks: KeyMap<()>,
    forms: Forms,
    problems: Vec<Problem>,
}

impl Validator {
    /// A validator at the start of a stream.
    pub fn new(options: Options) -> Self {
        Validator {
            options,
            summary: Summary::default(),
            projection: Projection::new(),
            acks: KeyMap::default(),
            forms: Forms::default(),
            problems: Vec::new(),
        }
    }

    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Checks one raw line (no trailing newline; a trailing `\r` is
    /// tolerated), numbered `line` from 1, appending its findings.
    pub fn check_line(&mut self, line: u64, bytes: &[u8], findings: &mut Vec<Finding>) {
        let start = findings.len();
        self.check(line, bytes, findings);
        self.count(&findings[start..]);
    }

    /// Takes a line through the per-line part already done, counting its
    /// findings.
    fn check_decoded(&mut self, checked: LineCheck, findings: &mut Vec<Finding>) {
        let start = findings.len();
        self.apply(checked, findings);
        self.count(&findings[start..]);
    }

    /// Counts a line over the limit, which the caller did not read.
    pub fn too_long(&mut self, line: u64, bytes: u64, findings: &mut Vec<Finding>) {
        self.summary.lines += 1;
        let finding = Finding {
            line,
            rule: Rule::LineTooLong,
            level: Rule::LineTooLong.severity(),
            message: too_long_message(bytes, self.options.max_line_bytes),
            id: None,
        };
        self.count(std::slice::from_ref(&finding));
        findings.push(finding);
    }

    fn count(&mut self, findings: &[Finding]) {
        for finding in findings {
            match finding.level {
                Level::Error => self.summary.errors += 1,
                Level::Warning => self.summary.warnings += 1,
            }
        }
    }

    fn check(&mut self, line: u64, bytes: &[u8], findings: &mut Vec<Finding>) {
        let checked = LineCheck::decode(&self.options, line, bytes);
        self.apply(checked, findings);
    }

    /// The stream part of a line's check, in line order: counting, dedupe,
    /// then the event's own findings (computed here if the per-line part
    /// left them out) and the stream rules.
    fn apply(&mut self, checked: LineCheck, findings: &mut Vec<Finding>) {
        self.summary.lines += 1;
        let mut out = Out {
            line: checked.line,
            findings,
        };
        let (event, checks, canonical) = match checked.outcome {
            Outcome::Event {
                event,
                checks,
                canonical,
            } => (event, checks, canonical),
            Outcome::NotEvent { rule, message, id } => {
                return out.report(rule, message, id.as_deref());
            }
            Outcome::Unsupported { version, id } => {
                self.summary.skipped += 1;
                if self.summary.skipped == 1 {
                    let message = format!(
                        "`aep` is \"{version}\", an unsupported major version: this line and every \
                         later line of an unsupported version are skipped (AEP-0003 §3.1); the \
                         summary counts them"
                    );
                    out.report(Rule::UnsupportedVersion, message, id.as_deref());
                }
                return;
            }
        };
        self.summary.events += 1;

        // Dedupe first: a redelivery is one finding and checked no further.
        let canonical = canonical.unwrap_or_else(|| fingerprint::canonical_event(&event));
        let folded = self.projection.fold_fingerprinted(&event, canonical);
        let id = Some(event.id.as_str());
        if folded == Folded::Duplicate {
            let message = format!(
                "a redelivery of event `{}` from `{}` (identical to its first delivery); ignored",
                event.id, event.source
            );
            return out.report(Rule::Duplicate, message, id);
        }
        match checks {
            Some(checks) => out.findings.extend(checks),
            None => check_event(&event, &mut out),
        }
        // The stream rules read only the events the stream keeps.
        if folded == Folded::New {
            self.check_form_answer(&event, &mut out);
        }
        let previous = self.projection.previous_position();
        let violations: Vec<Violation> = self.projection.take_violations().collect();
        for violation in violations {
            let (rule, message) = describe(&violation, &event, &self.projection, previous);
            out.report(rule, message, id);
        }
        if folded == Folded::New {
            self.check_ack(&event, &mut out);
        }
    }

    /// `form-values`, and the AEP-0006 part of `capture`.
    fn check_form_answer(&mut self, event: &Event, out: &mut Out<'_>) {
        self.forms.check(event, &mut self.problems);
        let id = Some(event.id.as_str());
        for problem in self.problems.drain(..) {
            let (rule, message) = match problem {
                Problem::NotAChoice { field, value } => (
                    Rule::FormValues,
                    format!(
                        "/data/answer/values/{token}: \"{value}\" is not a choice id of select \
                         field `{field}` of request `{subject}`, and the field has no \
                         `other: true` (AEP-0006)",
                        token = pointer_token(&field),
                        subject = event.subject.as_deref().unwrap_or_default(),
                    ),
                ),
                Problem::TextAtMetadata { field, other } => (
                    Rule::Capture,
                    format!(
                        "/data/answer/values/{}: {} is above capture `metadata`: free text \
                         needs `redacted` at least (AEP-0006)",
                        pointer_token(&field),
                        if other {
                            "`other` free text of a select field"
                        } else {
                            "the value of a string field"
                        }
                    ),
                ),
            };
            out.report(rule, message, id);
        }
    }

    /// `ack-exclusivity`: one decision per command and target.
    fn check_ack(&mut self, event: &Event, out: &mut Out<'_>) {
        if !matches!(
            event.registered_type(),
            Some(RegisteredType::ControlAccepted | RegisteredType::ControlRejected)
        ) {
            return;
        }
        let Some(cause) = &event.cause else {
            return;
        };
        let first = self
            .acks
            .insert(fingerprint::key(&event.source, cause), ())
            .is_none();
        if !first {
            let message = format!(
                "a second acknowledgement of command `{cause}` from `{}`: a target makes one ack \
                 decision per command and re-sends only that ack, byte-identical (AEP-0004 §3)",
                event.source
            );
            out.report(Rule::AckExclusivity, message, Some(&event.id));
        }
    }

    /// Ends the stream: the totals.
    pub fn finish(self) -> Summary {
        self.summary
    }
}

/// Where one line's findings go.
struct Out<'a> {
    line: u64,
    findings: &'a mut Vec<Finding>,
}

impl Out<'_> {
    fn report(&mut self, rule: Rule, message: String, id: Option<&str>) {
        self.findings.push(Finding {
            line: self.line,
            rule,
            level: rule.severity(),
            message,
            id: id.map(str::to_owned),
        });
    }
}

/// The part of one line's check that reads no other line: decoding and,
/// optionally, the checks of the event alone. Lines can go through it in
/// any order, or in parallel; [`Validator::apply`] then takes them in line
/// order.
struct LineCheck {
    line: u64,
    outcome: Outcome,
}

/// What the per-line part found.
enum Outcome {
    /// An event, and the findings of the event alone when computed.
    Event {
        event: Box<Event>,
        checks: Option<Vec<Finding>>,
        /// The event's canonical fingerprint (for dedupe), when computed.
        canonical: Option<fingerprint::Canonical>,
    },
    /// Not an event: one finding.
    NotEvent {
        rule: Rule,
        message: String,
        id: Option<String>,
    },
    /// A line of an unsupported major version, skipped.
    Unsupported { version: String, id: Option<String> },
}

impl LineCheck {
    /// The line as an event, or why it is not one: over the limit, not
    /// UTF-8, blank, not JSON, not an event, or of an unsupported version.
    fn decode(options: &Options, line: u64, bytes: &[u8]) -> LineCheck {
        let not_event = |rule, message, id| LineCheck {
            line,
            outcome: Outcome::NotEvent { rule, message, id },
        };
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        if bytes.len() > options.max_line_bytes {
            let message = too_long_message(bytes.len() as u64, options.max_line_bytes);
            return not_event(Rule::LineTooLong, message, None);
        }
        if bytes.iter().all(u8::is_ascii_whitespace) {
            let message =
                "blank line: JSONL carries one event per line and no blank lines (AEP-0003 §3.1)";
            return not_event(Rule::Json, message.to_owned(), None);
        }
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                let message = format!(
                    "not UTF-8: invalid byte at column {} (JSONL is UTF-8, AEP-0003 §3.1)",
                    e.valid_up_to() + 1
                );
                return not_event(Rule::Json, message, None);
            }
        };
        let error = match Event::from_json(text) {
            Ok(event) => {
                let outcome = Outcome::Event {
                    event: Box::new(event),
                    checks: None,
                    canonical: None,
                };
                return LineCheck { line, outcome };
            }
            Err(error) => error,
        };
        if let Some(version) = unsupported_version(bytes) {
            let outcome = Outcome::Unsupported {
                version,
                id: probe_id(text),
            };
            LineCheck { line, outcome }
        } else if text.starts_with('\u{feff}') {
            // A byte order mark: named, not "expected value".
            not_event(Rule::Json, format!("not JSON: {error}"), None)
        } else if let Err(syntax) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
            not_event(Rule::Json, format!("not JSON: {}", in_line(&syntax)), None)
        } else {
            not_event(Rule::Envelope, error.to_string(), probe_id(text))
        }
    }

    /// [`decode`](Self::decode), then the checks of the event alone and
    /// its fingerprint.
    fn decode_and_check(options: &Options, line: u64, bytes: &[u8]) -> LineCheck {
        let mut checked = LineCheck::decode(options, line, bytes);
        if let Outcome::Event {
            event,
            checks,
            canonical,
        } = &mut checked.outcome
        {
            *canonical = Some(fingerprint::canonical_event(event));
            let mut findings = Vec::new();
            check_event(
                event,
                &mut Out {
                    line,
                    findings: &mut findings,
                },
            );
            *checks = Some(findings);
        }
        checked
    }
}

/// The checks of the event alone: envelope and payload schemas, the type
/// registry, capture levels.
fn check_event(event: &Event, out: &mut Out<'_>) {
    let id = Some(event.id.as_str());
    // One check decoding the payload once; only when it fails, the schema
    // and capture checks apart, to tell their rules apart.
    let failed = event.validate().is_err();
    if failed {
        if let Err(violations) = event.validate_schema() {
            for v in violations.0 {
                let rule = if v.pointer == "/data" || v.pointer.starts_with("/data/") {
                    Rule::Payload
                } else {
                    Rule::Envelope
                };
                out.report(rule, violation_message(&v), id);
            }
        }
    }
    match event.registered_type() {
        Some(registered) if registered.status() == Status::Reserved => {
            let message = format!(
                "type `{}` is reserved in the registry: {}",
                event.type_,
                registered.summary()
            );
            out.report(Rule::ReservedType, message, id);
        }
        Some(_) => {}
        None => match Category::of(&event.type_) {
            Some(Category::X) | None => {}
            Some(category) => {
                let message = format!(
                    "type `{}` is in the core category `{}` but the registry does not list it; \
                     unregistered types belong under `x.<vendor>.`",
                    event.type_,
                    category.as_str()
                );
                out.report(Rule::UnregisteredType, message, id);
            }
        },
    }
    if failed {
        if let Err(violations) = event.validate_capture() {
            for v in violations.0 {
                out.report(Rule::Capture, violation_message(&v), id);
            }
        }
    }
}

/// The rule and message of a projection violation found on `event`.
fn describe(
    violation: &Violation,
    event: &Event,
    projection: &Projection,
    previous: Option<crate::projection::Position>,
) -> (Rule, String) {
    let session = event.session.as_deref().unwrap_or_default();
    let source = &event.source;
    let (last_epoch, last_seq) = previous.map_or((0, 0), |p| (p.epoch, p.seq));
    match violation {
        Violation::IdCollision { source, id } => (
            Rule::IdCollision,
            format!(
                "id `{id}` from `{source}` already names a different event; this one is ignored \
                 (ids are unique per source, AEP-0001 §7)"
            ),
        ),
        Violation::SeqRegression { .. } => (
            Rule::SeqRegression,
            format!(
                "seq {} does not advance past {last_seq} in epoch {last_epoch} of session `{session}` \
                 from `{source}` (AEP-0001 §7)",
                event.seq.unwrap_or_default()
            ),
        ),
        Violation::EpochRegression { .. } => (
            Rule::EpochRegression,
            format!(
                "epoch {} goes back from {last_epoch} in session `{session}` from `{source}` \
                 (AEP-0001 §7)",
                event.epoch.unwrap_or_default()
            ),
        ),
        Violation::RunTerminalExclusivity { run, .. } => (
            Rule::RunTerminalExclusivity,
            format!(
                "`{}`: run `{run}` of session `{session}` already reached a terminal; a run has one \
                 (AEP-0002 §2 convention 5)",
                event.type_
            ),
        ),
        Violation::SessionTerminalExclusivity { .. } => (
            Rule::SessionTerminalExclusivity,
            format!(
                "session `{session}` from `{source}` already ended; a session ends once \
                 (AEP-0002 §2 convention 5)"
            ),
        ),
        Violation::EndedWithPendingAttention { pending, .. } => (
            Rule::EndedWithPendingAttention,
            format!(
                "session `{session}` ends with {pending} attention request(s) unresolved (`{}`); \
                 close each with `attention.resolved` or `attention.timeout` first (AEP-0002 §7)",
                projection.pending_ids(source, session).join("`, `")
            ),
        ),
    }
}

/// A violation as `pointer: message`, or just the message where it names
/// the pointer itself (a payload that does not decode).
fn violation_message(v: &aep_types::Violation) -> String {
    if v.message.contains(&format!("at `{}`", v.pointer)) {
        v.message.clone()
    } else {
        v.to_string()
    }
}

/// A serde_json error placed by column: the line is the stream's line, so
/// its ` at line 1 column N` would mislead.
fn in_line(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let place = format!(" at line {} column {}", error.line(), error.column());
    match text.strip_suffix(&place) {
        Some(message) if error.line() == 1 => format!("{message} (column {})", error.column()),
        _ => text,
    }
}

/// The `id` of a line that is not an event, if it has a string one.
fn probe_id(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Probe {
        id: Option<serde_json::Value>,
    }
    match serde_json::from_str::<Probe>(text).ok()?.id? {
        serde_json::Value::String(id) => Some(id),
        _ => None,
    }
}

/// Validates a JSONL stream, one line at a time: lines are read with the
/// line limit (a longer line is one `line-too-long` finding and is skipped
/// without being held), findings go to `on_finding` in line order, and
/// `on_progress` gets the bytes read so far after each line. Only I/O errors
/// stop the validation; they are returned.
///
/// ```
/// use aep::stream::{validate_reader, Options};
///
/// let stream = concat!(
///     r#"{"aep":"0.1","id":"e1","type":"session.started","time":"2026-12-01T10:00:00Z","source":"urn:a","agent":"a","session":"s","seq":2}"#, "\n",
///     r#"{"aep":"0.1","id":"e2","type":"progress.status","time":"2026-12-01T10:00:01Z","source":"urn:a","agent":"a","session":"s","seq":1,"data":{}}"#, "\n",
/// );
/// let mut findings = Vec::new();
/// let summary = validate_reader(stream.as_bytes(), Options::default(), |f| findings.push(f), |_| {})?;
/// assert_eq!((summary.lines, summary.errors), (2, 1));
/// assert_eq!((findings[0].line, findings[0].rule.name()), (2, "seq-regression"));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn validate_reader<R: BufRead>(
    reader: R,
    options: Options,
    mut on_finding: impl FnMut(Finding),
    mut on_progress: impl FnMut(u64),
) -> std::io::Result<Summary> {
    let mut lines = LineReader::new(reader, options.max_line_bytes);
    let mut validator = Validator::new(options);
    let mut findings = Vec::new();
    while let Some((number, line)) = lines.next_line()? {
        match line {
            Line::Text(text) => validator.check_line(number, text, &mut findings),
            Line::TooLong { bytes } => validator.too_long(number, bytes, &mut findings),
        }
        findings.drain(..).for_each(&mut on_finding);
        on_progress(lines.bytes_read());
    }
    Ok(validator.finish())
}

#[cfg(test)]
mod tests;
