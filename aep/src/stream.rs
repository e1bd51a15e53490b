//! The stream validator.
//!
//! (Skeleton: the rules are being filled in.)

use std::io::BufRead;

use serde::Serialize;

/// A rule the validator checks; each finding names one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// The line is not UTF-8 or not JSON.
    Json,
    /// The envelope breaks its schema.
    Envelope,
    /// The payload breaks its type's schema.
    Payload,
    /// A core-family type the registry does not list.
    UnregisteredType,
    /// A type the registry lists as reserved.
    ReservedType,
    /// A member above the event's declared capture level.
    Capture,
    /// One `(source, id)` names two different events.
    IdCollision,
    /// An identical redelivery of an event.
    Duplicate,
    /// A `seq` that does not advance within an epoch.
    SeqRegression,
    /// An `epoch` that goes back.
    EpochRegression,
    /// A second, different terminal for one run.
    RunTerminalExclusivity,
    /// A second, different `session.ended`.
    SessionTerminalExclusivity,
    /// `session.ended` while attention requests are pending.
    EndedWithPendingAttention,
    /// A form answer that does not fit the request it answers.
    FormValues,
    /// Two different acknowledgements of one command.
    AckExclusivity,
    /// Lines of an unsupported major protocol version.
    UnsupportedVersion,
    /// A line longer than the limit.
    LineTooLong,
}

impl Rule {
    /// Every rule, in documentation order.
    pub const ALL: &'static [Rule] = &[
        Rule::Json,
        Rule::Envelope,
        Rule::Payload,
        Rule::UnregisteredType,
        Rule::ReservedType,
        Rule::Capture,
        Rule::IdCollision,
        Rule::Duplicate,
        Rule::SeqRegression,
        Rule::EpochRegression,
        Rule::RunTerminalExclusivity,
        Rule::SessionTerminalExclusivity,
        Rule::EndedWithPendingAttention,
        Rule::FormValues,
        Rule::AckExclusivity,
        Rule::UnsupportedVersion,
        Rule::LineTooLong,
    ];

    /// The rule's kebab-case name, as findings print it.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Json => "json",
            Rule::Envelope => "envelope",
            Rule::Payload => "payload",
            Rule::UnregisteredType => "unregistered-type",
            Rule::ReservedType => "reserved-type",
            Rule::Capture => "capture",
            Rule::IdCollision => "id-collision",
            Rule::Duplicate => "duplicate",
            Rule::SeqRegression => "seq-regression",
            Rule::EpochRegression => "epoch-regression",
            Rule::RunTerminalExclusivity => "run-terminal-exclusivity",
            Rule::SessionTerminalExclusivity => "session-terminal-exclusivity",
            Rule::EndedWithPendingAttention => "ended-with-pending-attention",
            Rule::FormValues => "form-values",
            Rule::AckExclusivity => "ack-exclusivity",
            Rule::UnsupportedVersion => "unsupported-version",
            Rule::LineTooLong => "line-too-long",
        }
    }

    /// How serious a finding of this rule is.
    pub fn severity(self) -> Level {
        match self {
            Rule::ReservedType | Rule::Duplicate => Level::Warning,
            _ => Level::Error,
        }
    }

    /// One line saying what the rule checks.
    pub fn description(self) -> &'static str {
        match self {
            Rule::Json => "the line is not UTF-8 or not JSON",
            _ => "",
        }
    }
}

impl Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// The severity of a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// The stream is not conformant.
    Error,
    /// Legal, but worth a look.
    Warning,
}

/// One thing the validator found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The 1-based line number.
    pub line: u64,
    /// The rule broken.
    pub rule: Rule,
    /// The rule's severity.
    pub level: Level,
    /// What is wrong, for a person.
    pub message: String,
    /// The event's `id`, when known.
    pub id: Option<String>,
}

/// Validator settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The longest line read, in bytes, without its line ending.
    pub max_line_bytes: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_line_bytes: 4 * 1024 * 1024,
        }
    }
}

/// The totals of a validated stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Lines read.
    pub lines: u64,
    /// Lines that decoded to an event.
    pub events: u64,
    /// Findings of level error.
    pub errors: u64,
    /// Findings of level warning.
    pub warnings: u64,
}

/// The stream state of one validation: no events, only what the rules need.
#[derive(Debug)]
pub struct Validator {
    options: Options,
    summary: Summary,
}

impl Validator {
    /// A validator at the start of a stream.
    pub fn new(options: Options) -> Self {
        Validator {
            options,
            summary: Summary::default(),
        }
    }

    /// Checks one raw line (no trailing newline; a trailing `\r` is
    /// tolerated), numbered from 1.
    pub fn check_line(&mut self, line: u64, bytes: &[u8], findings: &mut Vec<Finding>) {
        let _ = (line, bytes, findings, &self.options);
        self.summary.lines += 1;
    }

    /// Ends the stream: any findings only the end can give, and the totals.
    pub fn finish(self, findings: &mut Vec<Finding>) -> Summary {
        let _ = findings;
        self.summary
    }
}

/// Validates a JSONL stream line by line, calling `on_finding` in line
/// order and `on_progress` with the bytes read so far.
pub fn validate_reader<R: BufRead>(
    mut reader: R,
    options: Options,
    mut on_finding: impl FnMut(Finding),
    mut on_progress: impl FnMut(u64),
) -> std::io::Result<Summary> {
    let mut validator = Validator::new(options);
    let mut findings = Vec::new();
    let mut buffer = Vec::new();
    let mut line = 0;
    let mut read = 0;
    loop {
        buffer.clear();
        let n = reader.read_until(b'\n', &mut buffer)?;
        if n == 0 {
            break;
        }
        read += n as u64;
        line += 1;
        if buffer.last() == Some(&b'\n') {
            buffer.pop();
        }
        validator.check_line(line, &buffer, &mut findings);
        findings.drain(..).for_each(&mut on_finding);
        on_progress(read);
    }
    let summary = validator.finish(&mut findings);
    findings.drain(..).for_each(&mut on_finding);
    Ok(summary)
}
