//! The rules of the stream validator and their levels.

use serde::{Deserialize, Serialize};

/// A rule the validator checks; each finding names one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// The line is blank, not UTF-8 or not JSON.
    Json,
    /// The envelope breaks its schema.
    Envelope,
    /// The payload breaks its type's schema.
    Payload,
    /// A core-category type the registry does not list.
    UnregisteredType,
    /// A type the registry lists as reserved (a warning).
    ReservedType,
    /// Content above the event's declared capture level.
    Capture,
    /// One `(source, id)` names two different events.
    IdCollision,
    /// An identical redelivery of an event (a warning).
    Duplicate,
    /// A `seq` that does not advance within an epoch.
    SeqRegression,
    /// An `epoch` that goes back.
    EpochRegression,
    /// A second terminal for one run.
    RunTerminalExclusivity,
    /// A second `session.ended`.
    SessionTerminalExclusivity,
    /// `session.ended` while attention requests are pending.
    EndedWithPendingAttention,
    /// A form answer that does not fit the request it answers.
    FormValues,
    /// Two different acknowledgements of one command.
    AckExclusivity,
    /// Lines of an unsupported major protocol version (a warning).
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

    /// The rule named `name`, if any.
    pub fn from_name(name: &str) -> Option<Rule> {
        Rule::ALL.iter().copied().find(|r| r.name() == name)
    }

    /// How serious a finding of this rule is.
    pub fn severity(self) -> Level {
        match self {
            Rule::ReservedType | Rule::Duplicate | Rule::UnsupportedVersion => Level::Warning,
            _ => Level::Error,
        }
    }

    /// One line saying what the rule reports.
    pub fn description(self) -> &'static str {
        match self {
            Rule::Json => "a line that is blank, not UTF-8 or not JSON",
            Rule::Envelope => "an envelope that breaks the envelope schema: a missing or mistyped attribute, a constraint, a scoping rule",
            Rule::Payload => "a `data` that breaks its type's payload schema",
            Rule::UnregisteredType => "a type in a core category that the registry does not list (vendor `x.*` types are fine)",
            Rule::ReservedType => "a type the registry lists as reserved for future use",
            Rule::Capture => "a `data` member above the event's capture level, or at capture `metadata` free text in a form answer",
            Rule::IdCollision => "a `(source, id)` already used by a different event (the second is ignored)",
            Rule::Duplicate => "an identical redelivery of an event (legal at-least-once delivery, ignored)",
            Rule::SeqRegression => "a `seq` that does not advance within its session's epoch",
            Rule::EpochRegression => "an `epoch` lower than the session's last",
            Rule::RunTerminalExclusivity => "a second terminal (`run.finished`, `run.failed`, `run.cancelled`) for one run",
            Rule::SessionTerminalExclusivity => "a second `session.ended` for one session",
            Rule::EndedWithPendingAttention => "`session.ended` while attention requests are unresolved",
            Rule::FormValues => "a form answer with a non-choice string for a select field without `other: true`",
            Rule::AckExclusivity => "a second, different acknowledgement of one command from one source",
            Rule::UnsupportedVersion => "lines of an unsupported major `aep` version, skipped (reported once)",
            Rule::LineTooLong => "a line over the line limit, skipped unread",
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Rule {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Rule, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Rule::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("`{name}` is not a rule name")))
    }
}

/// The severity of a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// The stream is not conformant.
    Error,
    /// Legal, but worth a look.
    Warning,
}

impl Level {
    /// `error` or `warning`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
        }
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
