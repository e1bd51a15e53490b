//! AEP events as OpenTelemetry log records (AEP-0005 §3): the OTel
//! Events model, a LogRecord with an `event_name`.
//!
//! [`to_log_record`] maps one event as §3.2 says, reading its payload only
//! when the event is at or below the exporter's `max_capture` (§3.3,
//! default `metadata`):
//!
//! | AEP | [`LogRecord`] |
//! |---|---|
//! | `time` | `time_unix_nano`, exact integer nanoseconds |
//! | `type` | `event_name`: [`TYPE_ROOT`](super::TYPE_ROOT) + type |
//! | `severity` (default `info`) | `severity_text`, `severity_number` ([`severity`]) |
//! | `traceparent` | `trace_id`, `span_id`, `flags` ([`TraceContext`]) |
//! | `agent` | resource `service.name` (unless overridden) and `aep.agent_id` |
//! | `session`, `run`, `step` | `aep.session_id`, `aep.run_id`, `aep.step` |
//! | `id`, `seq`, `epoch`, `cause`, `capture` | `aep.event_id`, `aep.sequence`, `aep.epoch`, `aep.causation_id`, `aep.capture` |
//! | `subject`, `source` | `aep.subject`, `aep.source` |
//! | `data` members named `gen_ai.*` | attributes, verbatim |
//! | the rest of `data` | `body`, absent when empty |
//!
//! An event at `capture: none`, or above `max_capture`, exports the
//! envelope-derived attributes only: no `body`, nothing hoisted, and
//! `aep.capture` the event's own level (the event is not down-levelled:
//! a `redacted` event at the default ceiling says `redacted` and carries
//! nothing of its payload). Absent attributes give no `aep.*` attribute; an absent
//! `severity` exports as `info`, the protocol default. The table has no
//! row for extension attributes, so they are not exported (the CloudEvents
//! bridge is the lossless one).
//!
//! [`LogRecord`] serializes as the log record data model's JSON object,
//! attributes as a flat map. With the `otlp-proto` cargo feature,
//! `LogRecord::to_proto` (module `proto`) gives the OTLP wire form
//! (`opentelemetry-proto`'s `LogRecord`) and `LogRecord::resource_proto`
//! its resource.
//!
//! ```
//! use aep::bridge::otlp::{severity_from_number, to_log_record, Options};
//! use aep::{Capture, Event, Severity};
//!
//! let event: Event = serde_json::from_str(r#"{"aep":"0.1","id":"e7","type":"tool.completed",
//!     "subject":"Bash","time":"2026-11-30T12:00:00.310Z","source":"aep://host-a/agent/demo",
//!     "agent":"demo","session":"s1","seq":7,"severity":"warning",
//!     "traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
//!     "data":{"tool":{"name":"Bash","call_id":"t_9"},"status":"success",
//!             "gen_ai.usage.input_tokens":142}}"#)?;
//!
//! let record = to_log_record(&event, &Options::default())?;
//! assert_eq!(record.time_unix_nano, 1_796_040_000_310_000_000);
//! assert_eq!(record.event_name, "dev.aep.tool.completed");
//! assert_eq!((record.severity_text, record.severity_number), ("WARN", 13));
//! assert_eq!(record.resource["service.name"], "demo");
//! assert_eq!(record.attributes["aep.sequence"], 7);
//! assert_eq!(record.attributes["gen_ai.usage.input_tokens"], 142);
//! assert_eq!(record.trace_id.as_deref(), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
//! assert_eq!(record.flags, Some(1));
//! let body = record.body.as_ref().expect("a body");
//! assert_eq!(body["status"], "success");
//! assert!(!body.contains_key("gen_ai.usage.input_tokens"));
//!
//! // Above `max_capture` the record is envelope-derived only.
//! let bare = to_log_record(&event, &Options { max_capture: Capture::None, ..Options::default() })?;
//! assert!(bare.body.is_none());
//! assert!(!bare.attributes.contains_key("gen_ai.usage.input_tokens"));
//! assert!(!bare.attributes.contains_key("aep.capture")); // the event states none
//!
//! assert_eq!(severity_from_number(11), Some(Severity::Notice));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

use serde_json::{Map, Value};

use crate::{Capture, Event, Severity};

#[cfg(feature = "otlp-proto")]
pub mod proto;

/// The exporter's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The capture ceiling: events above it are exported from their
    /// envelope alone (§3.3). Default `metadata`.
    pub max_capture: Capture,
    /// The resource's `service.name`, for relays exporting many agents'
    /// events as one process; `None` (the default) uses each event's
    /// `agent`.
    pub service_name: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_capture: Capture::Metadata,
            service_name: None,
        }
    }
}

/// A log record in the OTLP log data model, as the JSON object the
/// conformance fixtures pin: `time_unix_nano`, `event_name`,
/// `severity_text`, `severity_number`, `resource`, `attributes`,
/// `trace_id`, `span_id`, `flags`, `body`. Absent members are omitted.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LogRecord {
    /// The event's `time` in nanoseconds since the Unix epoch.
    pub time_unix_nano: u64,
    /// `dev.aep.` + the event's type.
    pub event_name: String,
    /// The severity's OTel text (§3.4).
    pub severity_text: &'static str,
    /// The severity's OTel number (§3.4).
    pub severity_number: i32,
    /// The resource attributes: `service.name`.
    pub resource: Map<String, Value>,
    /// The attributes: the `aep.*` ones, then the hoisted `gen_ai.*` ones.
    pub attributes: Map<String, Value>,
    /// The trace id of `traceparent`, 32 lowercase hex digits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The parent span id of `traceparent`, 16 lowercase hex digits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span_id: Option<String>,
    /// The trace flags of `traceparent`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flags: Option<u8>,
    /// What `data` holds beside its `gen_ai.*` members; absent when that
    /// is nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<Map<String, Value>>,
}

/// Why an event cannot be exported.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OtlpError {
    /// `time` is not an RFC 3339 timestamp, or lies outside what
    /// `time_unix_nano` holds (1970 to 2554).
    Time(String),
    /// `traceparent` is not a valid W3C `traceparent` value.
    Traceparent(String),
    /// `data` cannot be read as a JSON object.
    Data(String),
}

impl fmt::Display for OtlpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OtlpError::Time(time) => write!(
                f,
                "`time` `{time}` is not an RFC 3339 timestamp between 1970 and 2554"
            ),
            OtlpError::Traceparent(value) => {
                write!(f, "`traceparent` `{value}` is not a valid W3C traceparent")
            }
            OtlpError::Data(message) => write!(f, "`data` cannot be read: {message}"),
        }
    }
}

impl std::error::Error for OtlpError {}

/// The OTel severity text and number of an AEP severity (§3.4).
pub const fn severity(severity: Severity) -> (&'static str, i32) {
    (
        severity.otlp_severity_text(),
        severity.otlp_severity_number() as i32,
    )
}

/// The AEP severity an OTel severity number falls in (§3.4): 1-8 `debug`,
/// 9 `info`, 10-12 `notice`, 13-16 `warning`, 17-20 `error`, 21-24
/// `critical`. Numbers outside 1-24 (0 is "unspecified") give `None`.
pub const fn severity_from_number(number: i32) -> Option<Severity> {
    Some(match number {
        1..=8 => Severity::Debug,
        9 => Severity::Info,
        10..=12 => Severity::Notice,
        13..=16 => Severity::Warning,
        17..=20 => Severity::Error,
        21..=24 => Severity::Critical,
        _ => return None,
    })
}

/// The fields of a W3C `traceparent` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// The trace id, 32 lowercase hex digits, not all zero.
    pub trace_id: String,
    /// The parent span id, 16 lowercase hex digits, not all zero.
    pub span_id: String,
    /// The trace flags.
    pub flags: u8,
}

impl TraceContext {
    /// Parses a `traceparent` value: `version-traceid-parentid-flags` in
    /// lowercase hex, version not `ff`, ids not all zero (W3C Trace
    /// Context). Version `00` has exactly these four fields; a later
    /// version may append more after a `-`, which are ignored.
    pub fn parse(value: &str) -> Option<TraceContext> {
        let mut fields = value.split('-');
        let version = fields.next()?;
        let trace_id = fields.next()?;
        let span_id = fields.next()?;
        let flags = fields.next()?;
        let rest = fields.next();
        let hex = |s: &str, len: usize| {
            s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        };
        let nonzero = |s: &str| s.bytes().any(|b| b != b'0');
        let valid = hex(version, 2)
            && version != "ff"
            && (rest.is_none() || version != "00")
            && hex(trace_id, 32)
            && nonzero(trace_id)
            && hex(span_id, 16)
            && nonzero(span_id)
            && hex(flags, 2);
        valid.then(|| TraceContext {
            trace_id: trace_id.to_owned(),
            span_id: span_id.to_owned(),
            flags: u8::from_str_radix(flags, 16).expect("two hex digits"),
        })
    }
}

/// The log record of `event` (§3.2); its payload is exported only when
/// the event is at or below `options.max_capture` (§3.3).
pub fn to_log_record(event: &Event, options: &Options) -> Result<LogRecord, OtlpError> {
    let time_unix_nano = super::time::unix_nanos(&event.time)
        .and_then(|nanos| u64::try_from(nanos).ok())
        .ok_or_else(|| OtlpError::Time(event.time.clone()))?;
    let trace = event
        .traceparent
        .as_deref()
        .map(|value| {
            TraceContext::parse(value).ok_or_else(|| OtlpError::Traceparent(value.to_owned()))
        })
        .transpose()?;
    let (severity_text, severity_number) = severity(event.severity_or_default());

    let mut resource = Map::new();
    let service = options.service_name.as_deref().unwrap_or(&event.agent);
    resource.insert("service.name".to_owned(), service.into());

    let mut attributes = Map::new();
    let mut put = |name: &str, value: Option<Value>| {
        if let Some(value) = value {
            attributes.insert(name.to_owned(), value);
        }
    };
    let text = |value: &Option<String>| value.as_deref().map(Value::from);
    put("aep.event_id", Some(event.id.as_str().into()));
    put("aep.source", Some(event.source.as_str().into()));
    put("aep.subject", text(&event.subject));
    put("aep.agent_id", Some(event.agent.as_str().into()));
    put("aep.session_id", text(&event.session));
    put("aep.run_id", text(&event.run));
    put("aep.step", text(&event.step));
    put("aep.sequence", event.seq.map(Value::from));
    put("aep.epoch", event.epoch.map(Value::from));
    put("aep.causation_id", text(&event.cause));
    put("aep.capture", event.capture.map(|c| c.as_str().into()));

    let mut body = Map::new();
    if let Some(data) = super::exported_data(event, options.max_capture) {
        let object = data
            .to_object()
            .map_err(|e| OtlpError::Data(e.to_string()))?;
        for (name, value) in object {
            if name.starts_with("gen_ai.") {
                attributes.insert(name, value);
            } else {
                body.insert(name, value);
            }
        }
    }

    Ok(LogRecord {
        time_unix_nano,
        event_name: format!("{}{}", super::TYPE_ROOT, event.type_),
        severity_text,
        severity_number,
        resource,
        attributes,
        trace_id: trace.as_ref().map(|t| t.trace_id.clone()),
        span_id: trace.as_ref().map(|t| t.span_id.clone()),
        flags: trace.map(|t| t.flags),
        body: (!body.is_empty()).then_some(body),
    })
}
