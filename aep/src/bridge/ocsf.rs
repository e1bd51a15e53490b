//! The OCSF projection (AEP-0005 §4): the security-relevant AEP families
//! as OCSF 1.8.0 records, for SIEM and security-lake pipelines.
//!
//! Ten types project ([`MAPPINGS`], §4.2) onto Authentication (3002),
//! Process Activity (1007) and Detection Finding (2004); every other
//! event gives no record (`Ok(None)`): a scope decision, not a loss.
//! [`project`] builds the record from the envelope and, when the event is
//! at or below `max_capture` (§4.6, default `metadata`), its payload
//! (§4.3); an event above the ceiling gives a record made from its
//! envelope alone, as it is (not down-levelled):
//!
//! - `class_uid`, `category_uid`, `activity_id`, `type_uid` (class × 100 +
//!   activity), and `status_id` where the table has one;
//! - `disposition_id` only where the event itself asserts the outcome
//!   (§4.5): `tool.denied` 2 Blocked, `attention.resolved` with
//!   `resolution: dismissed` and `attention.timeout` 16 No Action, with
//!   `metadata.profiles: ["security_control"]`; an answered resolution
//!   carries none;
//! - `severity_id` per §4.4 ([`severity_id`]), `time` in epoch
//!   milliseconds, `message` the type, `metadata` with [`OCSF_VERSION`];
//! - the class objects: `user`/`session`, `actor`/`process`/`device`
//!   (`hostname` the `source` URI's host, else `name` the `source`),
//!   or `finding_info` (one `uid` per attention lifecycle);
//! - `unmapped.aep`, the envelope without `data`, verbatim (extension
//!   attributes included, `capture` the event's own), and `unmapped.data`,
//!   the payload when it is exported, omitted when empty.
//!
//! The record never invents a value: without a `subject`, `process` has
//! no `name` and a later lifecycle event's `finding_info` no `uid`; without
//! an exported `tool.call_id` (none in the payload, or the payload above
//! the ceiling), `process` has no `uid` (§4.3's documented edge), and
//! without either `process` is left out; an `attention.resolved` above the
//! ceiling claims no disposition, since its `resolution` is not read; the
//! device `hostname` is the host of the authority (never its user
//! information, which may hold a password, nor its port).
//!
//! ```
//! use aep::bridge::ocsf::{project, Options};
//!
//! let event: aep::Event = serde_json::from_str(r#"{"aep":"0.1","id":"e9","type":"tool.denied",
//!     "subject":"Bash","time":"2026-11-30T12:00:00.310Z","source":"aep://host-a/agent/demo",
//!     "agent":"demo","session":"s1","seq":9,"severity":"warning",
//!     "data":{"tool":{"name":"Bash","call_id":"t_9"},"by":"policy"}}"#)?;
//! let record = project(&event, &Options::default())?.expect("tool.denied projects");
//! assert_eq!(record["class_uid"], 1007);
//! assert_eq!(record["type_uid"], 100_701);
//! assert_eq!(record["status_id"], 2);
//! assert_eq!(record["disposition_id"], 2);
//! assert_eq!(record["metadata"]["profiles"][0], "security_control");
//! assert_eq!(record["severity_id"], 3);
//! assert_eq!(record["time"], 1_796_040_000_310_i64);
//! assert_eq!(record["process"]["uid"], "t_9");
//! assert_eq!(record["device"]["hostname"], "host-a");
//! assert_eq!(record["unmapped"]["aep"]["seq"], 9);
//!
//! let progress: aep::Event = serde_json::from_str(r#"{"aep":"0.1","id":"e10",
//!     "type":"progress.status","time":"2026-11-30T12:00:01Z","source":"aep://host-a",
//!     "agent":"demo","session":"s1","seq":10}"#)?;
//! assert_eq!(project(&progress, &Options::default())?, None);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

use serde_json::{json, Map, Value};

use crate::{Capture, Event, Severity};

/// The OCSF version the projection targets (§4.1).
pub const OCSF_VERSION: &str = "1.8.0";

/// The OCSF profile a record declares when it carries `disposition_id`.
pub const SECURITY_CONTROL_PROFILE: &str = "security_control";

/// An OCSF class the projection uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// Authentication (3002), category 3 Identity & Access Management.
    Authentication,
    /// Process Activity (1007), category 1 System Activity.
    ProcessActivity,
    /// Detection Finding (2004), category 2 Findings.
    DetectionFinding,
}

impl Class {
    /// `class_uid`.
    pub const fn uid(self) -> u32 {
        match self {
            Class::Authentication => 3002,
            Class::ProcessActivity => 1007,
            Class::DetectionFinding => 2004,
        }
    }

    /// `category_uid`.
    pub const fn category_uid(self) -> u32 {
        match self {
            Class::Authentication => 3,
            Class::ProcessActivity => 1,
            Class::DetectionFinding => 2,
        }
    }
}

/// How a row of §4.2 decides `disposition_id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Never one.
    None,
    /// Always this one.
    Always(u32),
    /// 16 No Action when the payload's `resolution` is `dismissed`, none
    /// otherwise (§4.5).
    WhenDismissed,
}

/// One row of the class mapping (§4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    /// The AEP type.
    pub aep_type: &'static str,
    /// The OCSF class.
    pub class: Class,
    /// `activity_id`.
    pub activity_id: u32,
    /// `status_id`, where the class mapping gives one.
    pub status_id: Option<u32>,
    /// The disposition rule.
    pub disposition: Disposition,
}

/// `disposition_id` 16, No Action.
const NO_ACTION: u32 = 16;

/// The class mapping of §4.2, in its order.
pub const MAPPINGS: [Mapping; 10] = {
    use Class::*;
    const fn row(
        aep_type: &'static str,
        class: Class,
        activity_id: u32,
        status_id: Option<u32>,
        disposition: Disposition,
    ) -> Mapping {
        Mapping {
            aep_type,
            class,
            activity_id,
            status_id,
            disposition,
        }
    }
    [
        row(
            "session.started",
            Authentication,
            1,
            Some(1),
            Disposition::None,
        ),
        row(
            "session.ended",
            Authentication,
            2,
            Some(1),
            Disposition::None,
        ),
        row(
            "tool.requested",
            ProcessActivity,
            1,
            None,
            Disposition::None,
        ),
        row(
            "tool.completed",
            ProcessActivity,
            2,
            Some(1),
            Disposition::None,
        ),
        row(
            "tool.failed",
            ProcessActivity,
            2,
            Some(2),
            Disposition::None,
        ),
        row(
            "tool.denied",
            ProcessActivity,
            1,
            Some(2),
            Disposition::Always(2),
        ),
        row(
            "attention.requested",
            DetectionFinding,
            1,
            Some(1),
            Disposition::None,
        ),
        row(
            "attention.answered",
            DetectionFinding,
            2,
            Some(2),
            Disposition::None,
        ),
        row(
            "attention.resolved",
            DetectionFinding,
            3,
            Some(4),
            Disposition::WhenDismissed,
        ),
        row(
            "attention.timeout",
            DetectionFinding,
            3,
            None,
            Disposition::Always(NO_ACTION),
        ),
    ]
};

/// The mapping row of an AEP type, if it projects.
pub fn mapping(aep_type: &str) -> Option<&'static Mapping> {
    MAPPINGS.iter().find(|m| m.aep_type == aep_type)
}

/// The OCSF `severity_id` of an AEP severity (§4.4).
pub const fn severity_id(severity: Severity) -> u32 {
    severity.ocsf_severity_id() as u32
}

/// The projection's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The capture ceiling: events above it are projected from their
    /// envelope alone (§4.6). Default `metadata`.
    pub max_capture: Capture,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_capture: Capture::Metadata,
        }
    }
}

/// Why an event that projects cannot be projected.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OcsfError {
    /// `time` is not an RFC 3339 timestamp.
    Time(String),
    /// `data` cannot be read as a JSON object.
    Data(String),
}

impl fmt::Display for OcsfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OcsfError::Time(time) => write!(f, "`time` `{time}` is not an RFC 3339 timestamp"),
            OcsfError::Data(message) => write!(f, "`data` cannot be read: {message}"),
        }
    }
}

impl std::error::Error for OcsfError {}

/// The OCSF record of `event`, or `None` for a type outside §4.2.
pub fn project(event: &Event, options: &Options) -> Result<Option<Value>, OcsfError> {
    let Some(mapping) = mapping(&event.type_) else {
        return Ok(None);
    };
    let nanos =
        super::time::unix_nanos(&event.time).ok_or_else(|| OcsfError::Time(event.time.clone()))?;
    let millis = i64::try_from(nanos.div_euclid(1_000_000))
        .map_err(|_| OcsfError::Time(event.time.clone()))?;
    let payload = match super::exported_data(event, options.max_capture) {
        Some(data) => data
            .to_object()
            .map_err(|e| OcsfError::Data(e.to_string()))?,
        None => Map::new(),
    };

    let class = mapping.class;
    let mut record = Map::new();
    record.insert("class_uid".into(), class.uid().into());
    record.insert("category_uid".into(), class.category_uid().into());
    record.insert("activity_id".into(), mapping.activity_id.into());
    record.insert(
        "type_uid".into(),
        (class.uid() * 100 + mapping.activity_id).into(),
    );
    if let Some(status) = mapping.status_id {
        record.insert("status_id".into(), status.into());
    }
    let disposition = match mapping.disposition {
        Disposition::None => None,
        Disposition::Always(id) => Some(id),
        Disposition::WhenDismissed => {
            (payload.get("resolution") == Some(&Value::from("dismissed"))).then_some(NO_ACTION)
        }
    };
    if let Some(id) = disposition {
        record.insert("disposition_id".into(), id.into());
    }
    record.insert(
        "severity_id".into(),
        severity_id(event.severity_or_default()).into(),
    );
    record.insert("time".into(), millis.into());
    record.insert("message".into(), event.type_.as_str().into());

    let mut metadata = Map::new();
    metadata.insert("version".into(), OCSF_VERSION.into());
    metadata.insert("uid".into(), event.id.as_str().into());
    metadata.insert("original_time".into(), event.time.as_str().into());
    metadata.insert("product".into(), json!({ "name": event.agent }));
    if let Some(cause) = &event.cause {
        metadata.insert("correlation_uid".into(), cause.as_str().into());
    }
    if disposition.is_some() {
        metadata.insert("profiles".into(), json!([SECURITY_CONTROL_PROFILE]));
    }
    record.insert("metadata".into(), metadata.into());

    match class {
        Class::Authentication => {
            record.insert("user".into(), json!({ "name": event.agent }));
            if let Some(session) = &event.session {
                record.insert("session".into(), json!({ "uid": session }));
            }
        }
        Class::ProcessActivity => {
            record.insert("actor".into(), json!({ "app_name": event.agent }));
            let mut process = Map::new();
            if let Some(subject) = &event.subject {
                process.insert("name".into(), subject.as_str().into());
            }
            let call_id = payload
                .get("tool")
                .and_then(|tool| tool.get("call_id"))
                .and_then(Value::as_str);
            if let Some(call_id) = call_id {
                process.insert("uid".into(), call_id.into());
            }
            if !process.is_empty() {
                record.insert("process".into(), process.into());
            }
            let device = match host(&event.source) {
                Some(host) => json!({ "type_id": 0, "hostname": host }),
                None => json!({ "type_id": 0, "name": event.source }),
            };
            record.insert("device".into(), device);
        }
        Class::DetectionFinding => {
            let uid = if event.type_ == "attention.requested" {
                Some(event.id.as_str())
            } else {
                event.subject.as_deref()
            };
            let mut info = Map::new();
            if let Some(uid) = uid {
                info.insert("uid".into(), uid.into());
            }
            info.insert("title".into(), event.type_.as_str().into());
            record.insert("finding_info".into(), info.into());
        }
    }

    let envelope =
        serde_json::to_value(event.with_data(None)).map_err(|e| OcsfError::Data(e.to_string()))?;
    let mut unmapped = Map::new();
    unmapped.insert("aep".into(), envelope);
    if !payload.is_empty() {
        unmapped.insert("data".into(), payload.into());
    }
    record.insert("unmapped".into(), unmapped.into());
    Ok(Some(record.into()))
}

/// The host of a URI's authority (`aep://u:pw@host-a:80/agent/x` gives
/// `host-a`), when it has a non-empty one (`urn:aep:agent:x` and
/// `file:///x` have none): the user information and the port are not the
/// device's name.
fn host(uri: &str) -> Option<&str> {
    let (scheme, rest) = uri.split_once(':')?;
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let rest = rest.strip_prefix("//").filter(|_| scheme_ok)?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host_port.starts_with('[') {
        // An IP literal: up to its closing bracket.
        host_port.find(']').map_or(host_port, |i| &host_port[..=i])
    } else {
        host_port.split_once(':').map_or(host_port, |(h, _)| h)
    };
    Some(host).filter(|h| !h.is_empty())
}

#[cfg(test)]
mod tests {
    use super::host;

    #[test]
    fn hosts() {
        assert_eq!(host("aep://host-a/agent/x"), Some("host-a"));
        assert_eq!(host("https://relay.example:8443"), Some("relay.example"));
        // User information may hold a password: never the hostname.
        assert_eq!(host("https://u:pw@host:8080/a"), Some("host"));
        assert_eq!(host("https://a@b:pw@host/a"), Some("host"));
        assert_eq!(host("aep://[2001:db8::1]:9000/a"), Some("[2001:db8::1]"));
        assert_eq!(host("aep://h?x"), Some("h"));
        assert_eq!(host("aep://u:pw@:80/x"), None);
        assert_eq!(host("urn:aep:agent:claude-code"), None);
        assert_eq!(host("file:///var/log/aep"), None);
        assert_eq!(host("relative/path"), None);
        assert_eq!(host("//host/no-scheme"), None);
        assert_eq!(host("1x://host"), None);
    }
}
