//! AEP events as CloudEvents 1.0 (JSON format, structured mode) and back
//! (AEP-0005 §1, §2).
//!
//! [`forward`] applies rules B1 to B5: `specversion` `"1.0"`,
//! `datacontenttype` `"application/json"` when there is `data`; `id`,
//! `source`, `subject`, `time` and `data` verbatim; `type` under
//! [`TYPE_ROOT`] (vendor types too); the other envelope attributes as the
//! prefixed extension attributes of [`ATTRIBUTE_TABLE`], `traceparent`
//! unprefixed; AEP extension attributes verbatim. Absent attributes stay
//! absent: defaults are not materialized.
//!
//! [`inverse`] takes a CloudEvent whose `type` begins with the root back
//! to the AEP event, bit for bit modulo member order: `data` is kept as
//! the JSON text it arrived as. Unknown extension attributes are kept as
//! AEP extension attributes when their names are legal ones (AEP-0001
//! §5.4) and their values strings, integers or booleans; the others are
//! [`Dropped`] and listed, and the rest maps. Any other `type` is a
//! foreign CloudEvent, out of the bridge's scope:
//! [`InverseError::ForeignType`].
//!
//! Two edges the tables leave open, and what the bridge does there:
//!
//! - An AEP extension attribute named like an attribute the bridge writes
//!   (`specversion`, `datacontenttype`, a B4 name such as `aepsequence`)
//!   would be overwritten or misread on the way back, so [`forward`]
//!   refuses the event ([`ForwardError::ReservedName`]).
//! - CloudEvents types `Integer` as 32-bit; AEP's `seq` and `epoch` are
//!   unbounded and B4 has no encoding step, so a larger value travels as
//!   the JSON integer it is (losslessly), and [`CloudEvent::check`] names
//!   it for consumers with a strict 32-bit type.
//!
//! ```
//! use aep::bridge::cloudevents::{forward, inverse, CloudEvent};
//! use aep::Event;
//!
//! let line = r#"{"aep":"0.1","id":"e1","type":"tool.requested","subject":"Bash",
//!     "time":"2026-11-30T12:00:00.310Z","source":"aep://host-a/agent/demo","agent":"demo",
//!     "session":"s1","seq":3,"severity":"notice","region":"eu1",
//!     "data":{"tool":{"name":"Bash","call_id":"t_1"}}}"#;
//! let event: Event = serde_json::from_str(line)?;
//!
//! let ce = forward(&event)?;
//! assert_eq!(ce.type_, "dev.aep.tool.requested");
//! assert_eq!(ce.extensions["aepsequence"], 3);
//! assert_eq!(ce.extensions["aepseverity"], "notice");
//! assert_eq!(ce.extensions["region"], "eu1");
//! assert!(!ce.extensions.contains_key("aepepoch")); // absent stays absent
//! let json = serde_json::to_string(&ce)?;
//!
//! // ...across a broker...
//! let received: CloudEvent = serde_json::from_str(&json)?;
//! let back = inverse(&received)?;
//! assert!(back.dropped.is_empty());
//! assert_eq!(back.event, event);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;

use serde::ser::SerializeMap;
use serde_json::value::RawValue;
use serde_json::Value;

use super::TYPE_ROOT;
use crate::{Capture, Data, Event, EventAep, ExtensionName, ExtensionValue, Severity};

#[cfg(feature = "cloudevents")]
pub mod sdk;
#[cfg(feature = "cloudevents")]
pub use sdk::{from_sdk, to_sdk, SdkError};

/// The CloudEvents version the bridge writes and reads.
pub const SPEC_VERSION: &str = "1.0";

/// The `datacontenttype` of an event with `data` (rule B1).
pub const DATA_CONTENT_TYPE: &str = "application/json";

/// Rules B4 and B5: each envelope attribute beside the pass-through ones
/// and the CloudEvents attribute it travels as.
pub const ATTRIBUTE_TABLE: [(&str, &str); 11] = [
    ("aep", "aepversion"),
    ("agent", "aepagentid"),
    ("session", "aepsessionid"),
    ("run", "aeprunid"),
    ("step", "aepstep"),
    ("seq", "aepsequence"),
    ("epoch", "aepepoch"),
    ("cause", "aepcausationid"),
    ("severity", "aepseverity"),
    ("capture", "aepcapture"),
    ("traceparent", "traceparent"),
];

/// CloudEvents context attributes an AEP extension attribute cannot travel
/// as, since the bridge writes them itself.
const CE_RESERVED: [&str; 2] = ["specversion", "datacontenttype"];

/// A CloudEvent in the JSON format, structured mode.
///
/// An attribute whose value is JSON `null` reads as absent, as the JSON
/// format says.
///
/// Decode it with `serde_json::from_str`, `from_slice` or `from_reader`
/// (`data` is kept as raw JSON text, which `serde_json::from_value` cannot
/// give); encode it with `serde_json::to_string` or `to_writer`.
#[derive(Debug, Clone)]
pub struct CloudEvent {
    /// `specversion`.
    pub specversion: String,
    /// `id`.
    pub id: String,
    /// `source`.
    pub source: String,
    /// `type`.
    pub type_: String,
    /// `datacontenttype`.
    pub datacontenttype: Option<String>,
    /// `subject`.
    pub subject: Option<String>,
    /// `time`, as written.
    pub time: Option<String>,
    /// `data`, as the exact JSON text.
    pub data: Option<Box<RawValue>>,
    /// `data_base64`.
    pub data_base64: Option<String>,
    /// Every other attribute by name: extension attributes, and the
    /// optional `dataschema`, which AEP keeps as an extension attribute.
    pub extensions: BTreeMap<String, Value>,
}

impl PartialEq for CloudEvent {
    fn eq(&self, other: &CloudEvent) -> bool {
        self.specversion == other.specversion
            && self.id == other.id
            && self.source == other.source
            && self.type_ == other.type_
            && self.datacontenttype == other.datacontenttype
            && self.subject == other.subject
            && self.time == other.time
            && self.data.as_ref().map(|d| d.get()) == other.data.as_ref().map(|d| d.get())
            && self.data_base64 == other.data_base64
            && self.extensions == other.extensions
    }
}

/// Why [`forward`] refused an event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ForwardError {
    /// An AEP extension attribute has the name of an attribute the bridge
    /// writes itself (`specversion`, `datacontenttype`, or a B4 name such
    /// as `aepsequence`): passing it through would overwrite that
    /// attribute, and the inverse would read it as the other one.
    ReservedName {
        /// The extension attribute's name.
        name: String,
    },
}

impl fmt::Display for ForwardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ForwardError::ReservedName { name } => write!(
                f,
                "extension attribute `{name}` has the name of an attribute the CloudEvents \
                 bridge writes itself"
            ),
        }
    }
}

impl std::error::Error for ForwardError {}

/// Why [`inverse`] refused a CloudEvent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InverseError {
    /// `specversion` is not `1.0`.
    SpecVersion(String),
    /// A `type` outside the AEP root: a foreign CloudEvent, out of the
    /// bridge's scope (AEP-0005 §2 rule 3). Lifting it into AEP is an
    /// adapter's job.
    ForeignType(String),
    /// An attribute every AEP event has is missing (`time`,
    /// `aepversion`, `aepagentid`).
    Missing(&'static str),
    /// An attribute has a value the AEP attribute cannot take.
    Invalid {
        /// The CloudEvents attribute.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl fmt::Display for InverseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InverseError::SpecVersion(v) => {
                write!(f, "specversion `{v}` is not {SPEC_VERSION}")
            }
            InverseError::ForeignType(t) => write!(
                f,
                "type `{t}` is not under `{TYPE_ROOT}`: a foreign CloudEvent is out of scope"
            ),
            InverseError::Missing(name) => write!(f, "missing attribute `{name}`"),
            InverseError::Invalid { name, reason } => write!(f, "attribute `{name}` {reason}"),
        }
    }
}

impl std::error::Error for InverseError {}

/// An inbound attribute the inverse could not keep.
#[derive(Debug, Clone, PartialEq)]
pub struct Dropped {
    /// The attribute's name.
    pub name: String,
    /// Its value.
    pub value: Value,
    /// Why it was dropped.
    pub reason: DropReason,
}

/// Why an inbound attribute was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DropReason {
    /// The name is not a legal AEP extension attribute name (AEP-0001
    /// §5.4): not `[a-z0-9]{1,20}`, or a core attribute's name.
    IllegalName,
    /// The value is not a string, an integer (64-bit) or a boolean.
    IllegalValue,
}

impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason {
            DropReason::IllegalName => write!(
                f,
                "dropped attribute `{}`: not a legal AEP extension attribute name \
                 (`[a-z0-9]{{1,20}}`, not a core attribute)",
                self.name
            ),
            DropReason::IllegalValue => write!(
                f,
                "dropped attribute `{}`: its value {} is not a string, integer or boolean",
                self.name, self.value
            ),
        }
    }
}

/// What [`inverse`] gives: the event, and the attributes it dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct Inbound {
    /// The AEP event. It is not validated: [`Event::validate`] tells
    /// whether a CloudEvent from elsewhere made a valid one.
    pub event: Event,
    /// The attributes dropped, in name order (empty for the output of
    /// [`forward`]).
    pub dropped: Vec<Dropped>,
}

/// The CloudEvent of an AEP event (rules B1 to B5).
///
/// Fails only for an extension attribute named like an attribute the
/// bridge writes ([`ForwardError::ReservedName`]).
pub fn forward(event: &Event) -> Result<CloudEvent, ForwardError> {
    let mut extensions = BTreeMap::new();
    for (name, value) in &event.extensions {
        let name = name.as_str();
        if CE_RESERVED.contains(&name) || ATTRIBUTE_TABLE.iter().any(|(_, ce)| *ce == name) {
            return Err(ForwardError::ReservedName {
                name: name.to_owned(),
            });
        }
        let value = match value {
            ExtensionValue::String(s) => Value::from(s.as_str()),
            ExtensionValue::Integer(i) => Value::from(*i),
            ExtensionValue::Boolean(b) => Value::from(*b),
        };
        extensions.insert(name.to_owned(), value);
    }
    let mut put = |name: &str, value: Value| {
        extensions.insert(name.to_owned(), value);
    };
    put("aepversion", event.aep.as_str().into());
    put("aepagentid", event.agent.as_str().into());
    let strings = [
        ("aepsessionid", &event.session),
        ("aeprunid", &event.run),
        ("aepstep", &event.step),
        ("aepcausationid", &event.cause),
        ("traceparent", &event.traceparent),
    ];
    for (name, value) in strings {
        if let Some(value) = value {
            put(name, value.as_str().into());
        }
    }
    if let Some(seq) = event.seq {
        put("aepsequence", seq.into());
    }
    if let Some(epoch) = event.epoch {
        put("aepepoch", epoch.into());
    }
    if let Some(severity) = event.severity {
        put("aepseverity", severity.as_str().into());
    }
    if let Some(capture) = event.capture {
        put("aepcapture", capture.as_str().into());
    }
    let data = event.data.as_ref().map(|data| raw(data.get()));
    Ok(CloudEvent {
        specversion: SPEC_VERSION.to_owned(),
        id: event.id.clone(),
        source: event.source.clone(),
        type_: format!("{TYPE_ROOT}{}", event.type_),
        datacontenttype: data.as_ref().map(|_| DATA_CONTENT_TYPE.to_owned()),
        subject: event.subject.clone(),
        time: Some(event.time.clone()),
        data,
        data_base64: None,
        extensions,
    })
}

/// `text`, which is the JSON text of a `Data`, as a raw value.
fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).expect("`Data` holds valid JSON")
}

/// The AEP event of a CloudEvent under the AEP type root (§2).
pub fn inverse(ce: &CloudEvent) -> Result<Inbound, InverseError> {
    if ce.specversion != SPEC_VERSION {
        return Err(InverseError::SpecVersion(ce.specversion.clone()));
    }
    let type_ = match ce.type_.strip_prefix(TYPE_ROOT) {
        Some(bare) if !bare.is_empty() => bare.to_owned(),
        _ => return Err(InverseError::ForeignType(ce.type_.clone())),
    };
    let time = ce.time.clone().ok_or(InverseError::Missing("time"))?;
    let data = inbound_data(ce)?;

    let mut event = Event::new(ce.id.clone(), type_, time, ce.source.clone(), String::new());
    event.subject = ce.subject.clone();
    event.data = data;
    let (mut aep, mut agent) = (None, None);
    let mut dropped = Vec::new();
    for (name, value) in &ce.extensions {
        match name.as_str() {
            "aepversion" => {
                let text = string(name, value)?;
                aep = Some(text.parse::<EventAep>().map_err(|e| invalid(name, e))?);
            }
            "aepagentid" => agent = Some(string(name, value)?),
            "aepsessionid" => event.session = Some(string(name, value)?),
            "aeprunid" => event.run = Some(string(name, value)?),
            "aepstep" => event.step = Some(string(name, value)?),
            "aepcausationid" => event.cause = Some(string(name, value)?),
            "traceparent" => event.traceparent = Some(string(name, value)?),
            "aepsequence" => event.seq = Some(integer(name, value)?),
            "aepepoch" => event.epoch = Some(integer(name, value)?),
            "aepseverity" => {
                let text = string(name, value)?;
                event.severity = Some(text.parse::<Severity>().map_err(|e| invalid(name, e))?);
            }
            "aepcapture" => {
                let text = string(name, value)?;
                event.capture = Some(text.parse::<Capture>().map_err(|e| invalid(name, e))?);
            }
            _ => match (ExtensionName::new(name.as_str()), scalar(value)) {
                (Ok(key), Some(value)) => {
                    event.extensions.insert(key, value);
                }
                (Err(_), _) => dropped.push(Dropped {
                    name: name.clone(),
                    value: value.clone(),
                    reason: DropReason::IllegalName,
                }),
                (Ok(_), None) => dropped.push(Dropped {
                    name: name.clone(),
                    value: value.clone(),
                    reason: DropReason::IllegalValue,
                }),
            },
        }
    }
    event.aep = aep.ok_or(InverseError::Missing("aepversion"))?;
    event.agent = agent.ok_or(InverseError::Missing("aepagentid"))?;
    Ok(Inbound { event, dropped })
}

/// The AEP `data` of a CloudEvent: its JSON object, verbatim.
fn inbound_data(ce: &CloudEvent) -> Result<Option<Data>, InverseError> {
    if ce.data_base64.is_some() {
        return Err(invalid(
            "data_base64",
            "is binary data; AEP data is a JSON object",
        ));
    }
    if let Some(content_type) = &ce.datacontenttype {
        let essence = content_type.split(';').next().unwrap_or("").trim();
        if !(essence.eq_ignore_ascii_case(DATA_CONTENT_TYPE) || essence.ends_with("+json")) {
            return Err(invalid(
                "datacontenttype",
                format!("`{content_type}` is not JSON; AEP data is a JSON object"),
            ));
        }
    }
    ce.data
        .as_ref()
        .map(|raw| Data::from_json(raw.get()).map_err(|e| invalid("data", e)))
        .transpose()
}

fn invalid(name: &str, reason: impl fmt::Display) -> InverseError {
    InverseError::Invalid {
        name: name.to_owned(),
        reason: reason.to_string(),
    }
}

fn string(name: &str, value: &Value) -> Result<String, InverseError> {
    match value {
        Value::String(s) => Ok(s.clone()),
        other => Err(invalid(name, format!("must be a string, not {other}"))),
    }
}

/// A non-negative integer: a JSON integer, or its decimal digits as a
/// string (as bindings that carry every attribute as text deliver it).
fn integer(name: &str, value: &Value) -> Result<u64, InverseError> {
    let parsed = match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) if s == "0" || (!s.starts_with('0') && !s.starts_with('+')) => {
            s.parse().ok()
        }
        _ => None,
    };
    parsed.ok_or_else(|| invalid(name, format!("must be a non-negative integer, not {value}")))
}

fn scalar(value: &Value) -> Option<ExtensionValue> {
    match value {
        Value::String(s) => Some(ExtensionValue::String(s.clone())),
        Value::Bool(b) => Some(ExtensionValue::Boolean(*b)),
        Value::Number(n) => n.as_i64().map(ExtensionValue::Integer),
        _ => None,
    }
}

impl CloudEvent {
    /// Checks the CloudEvents 1.0 rules a consumer of the JSON format
    /// relies on: `specversion` `1.0`; non-empty `id`, `source` and `type`;
    /// `source` without whitespace or control characters (a URI
    /// reference); `time` an RFC 3339 timestamp; extension attribute names
    /// of lowercase letters and digits, at most 20; extension values
    /// strings, booleans or integers in CloudEvents' 32-bit range; not
    /// both `data` and `data_base64`. Every problem is listed.
    pub fn check(&self) -> Result<(), Vec<String>> {
        let mut problems = Vec::new();
        if self.specversion != SPEC_VERSION {
            problems.push(format!("specversion `{}` is not 1.0", self.specversion));
        }
        for (name, value) in [
            ("id", &self.id),
            ("source", &self.source),
            ("type", &self.type_),
        ] {
            if value.is_empty() {
                problems.push(format!("`{name}` is empty"));
            }
        }
        if self
            .source
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
        {
            problems.push("`source` is not a URI reference".to_owned());
        }
        if let Some(time) = &self.time {
            if super::time::unix_nanos(time).is_none() {
                problems.push(format!("`time` `{time}` is not an RFC 3339 timestamp"));
            }
        }
        if self.data.is_some() && self.data_base64.is_some() {
            problems.push("both `data` and `data_base64`".to_owned());
        }
        for (name, value) in &self.extensions {
            let legal = !name.is_empty()
                && name.len() <= 20
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
            if !legal {
                problems.push(format!("attribute name `{name}` is not [a-z0-9]{{1,20}}"));
            }
            let typed = match value {
                Value::String(_) | Value::Bool(_) => true,
                Value::Number(n) => n.as_i64().and_then(|i| i32::try_from(i).ok()).is_some(),
                _ => false,
            };
            if !typed {
                problems.push(format!(
                    "attribute `{name}` has {value}, not a string, boolean or 32-bit integer"
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }
}

impl serde::Serialize for CloudEvent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("specversion", &self.specversion)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("source", &self.source)?;
        map.serialize_entry("type", &self.type_)?;
        let optional = [
            ("datacontenttype", &self.datacontenttype),
            ("subject", &self.subject),
            ("time", &self.time),
        ];
        for (name, value) in optional {
            if let Some(value) = value {
                map.serialize_entry(name, value)?;
            }
        }
        for (name, value) in &self.extensions {
            map.serialize_entry(name, value)?;
        }
        if let Some(data) = &self.data {
            map.serialize_entry("data", data)?;
        }
        if let Some(data) = &self.data_base64 {
            map.serialize_entry("data_base64", data)?;
        }
        map.end()
    }
}

impl<'de> serde::Deserialize<'de> for CloudEvent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(Visitor)
    }
}

struct Visitor;

impl<'de> serde::de::Visitor<'de> for Visitor {
    type Value = CloudEvent;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a CloudEvent as a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<CloudEvent, A::Error> {
        use serde::de::Error;
        let mut strings: [Option<String>; 8] = Default::default();
        const STRINGS: [&str; 8] = [
            "specversion",
            "id",
            "source",
            "type",
            "datacontenttype",
            "subject",
            "time",
            "data_base64",
        ];
        let mut data: Option<Box<RawValue>> = None;
        let mut extensions = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            let duplicate = || A::Error::custom(format_args!("duplicate attribute `{key}`"));
            if let Some(slot) = STRINGS.iter().position(|s| *s == key) {
                if strings[slot].is_some() {
                    return Err(duplicate());
                }
                match map.next_value::<Value>()? {
                    Value::String(s) => strings[slot] = Some(s),
                    Value::Null => {}
                    other => {
                        return Err(A::Error::custom(format_args!(
                            "attribute `{key}` must be a string, not {other}"
                        )))
                    }
                }
            } else if key == "data" {
                if data.is_some() {
                    return Err(duplicate());
                }
                let raw: Box<RawValue> = map.next_value()?;
                data = (raw.get() != "null").then_some(raw);
            } else {
                if extensions.contains_key(&key) {
                    return Err(duplicate());
                }
                let value = map.next_value::<Value>()?;
                if !value.is_null() {
                    extensions.insert(key, value);
                }
            }
        }
        let [specversion, id, source, type_, datacontenttype, subject, time, data_base64] = strings;
        let required = |value: Option<String>, name: &str| {
            value.ok_or_else(|| A::Error::custom(format_args!("missing attribute `{name}`")))
        };
        Ok(CloudEvent {
            specversion: required(specversion, "specversion")?,
            id: required(id, "id")?,
            source: required(source, "source")?,
            type_: required(type_, "type")?,
            datacontenttype,
            subject,
            time,
            data,
            data_base64,
            extensions,
        })
    }
}
