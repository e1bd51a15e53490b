//! The OTLP wire form: `opentelemetry-proto`'s messages (cargo feature
//! `otlp-proto`), ready for an OTLP/gRPC or OTLP/HTTP protobuf exporter.
//!
//! ```
//! use aep::bridge::otlp::{to_log_record, Options};
//! use opentelemetry_proto::tonic::common::v1::any_value::Value;
//!
//! let event: aep::Event = serde_json::from_str(r#"{"aep":"0.1","id":"e1",
//!     "type":"session.started","time":"2026-11-30T12:00:00.310Z",
//!     "source":"aep://host-a/agent/demo","agent":"demo","session":"s1","seq":0,
//!     "traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}"#)?;
//! let record = to_log_record(&event, &Options::default())?;
//! let wire = record.to_proto();
//! assert_eq!(wire.time_unix_nano, 1_796_040_000_310_000_000);
//! assert_eq!(wire.event_name, "dev.aep.session.started");
//! assert_eq!(wire.trace_id.len(), 16);
//! assert_eq!(wire.flags, 1);
//! let resource = record.resource_proto();
//! assert_eq!(resource.attributes[0].key, "service.name");
//! assert!(matches!(
//!     resource.attributes[0].value.as_ref().and_then(|v| v.value.as_ref()),
//!     Some(Value::StringValue(name)) if name == "demo"
//! ));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::logs::v1 as logs;
use opentelemetry_proto::tonic::resource::v1::Resource;
use serde_json::{Map, Value};

use super::LogRecord;

impl LogRecord {
    /// The record as an OTLP `LogRecord` message. JSON values become
    /// `AnyValue`s: strings, booleans, integers (`IntValue`; an integer
    /// beyond `i64` and any other number, `DoubleValue`), arrays,
    /// objects (`KvlistValue`); `null` is an empty `AnyValue`.
    pub fn to_proto(&self) -> logs::LogRecord {
        logs::LogRecord {
            time_unix_nano: self.time_unix_nano,
            severity_number: self.severity_number,
            severity_text: self.severity_text.to_owned(),
            body: self.body.as_ref().map(kvlist),
            attributes: key_values(&self.attributes),
            flags: self.flags.map_or(0, u32::from),
            trace_id: self.trace_id.as_deref().map(hex).unwrap_or_default(),
            span_id: self.span_id.as_deref().map(hex).unwrap_or_default(),
            event_name: self.event_name.clone(),
            ..Default::default()
        }
    }

    /// The record's resource (`service.name`) as an OTLP `Resource`.
    pub fn resource_proto(&self) -> Resource {
        Resource {
            attributes: key_values(&self.resource),
            ..Default::default()
        }
    }
}

/// The bytes of lowercase hex digits (checked when the record was made).
fn hex(digits: &str) -> Vec<u8> {
    digits
        .as_bytes()
        .chunks(2)
        .map(|pair| {
            let text = std::str::from_utf8(pair).unwrap_or("00");
            u8::from_str_radix(text, 16).unwrap_or(0)
        })
        .collect()
}

fn key_values(map: &Map<String, Value>) -> Vec<KeyValue> {
    map.iter()
        .map(|(key, value)| KeyValue {
            key: key.clone(),
            value: Some(any_value(value)),
            ..Default::default()
        })
        .collect()
}

fn kvlist(map: &Map<String, Value>) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::KvlistValue(KeyValueList {
            values: key_values(map),
        })),
    }
}

fn any_value(value: &Value) -> AnyValue {
    use any_value::Value as V;
    let value = match value {
        Value::Null => None,
        Value::Bool(b) => Some(V::BoolValue(*b)),
        Value::Number(n) => Some(match n.as_i64() {
            Some(i) => V::IntValue(i),
            None => V::DoubleValue(n.as_f64().unwrap_or(f64::NAN)),
        }),
        Value::String(s) => Some(V::StringValue(s.clone())),
        Value::Array(items) => Some(V::ArrayValue(ArrayValue {
            values: items.iter().map(any_value).collect(),
        })),
        Value::Object(map) => return kvlist(map),
    };
    AnyValue { value }
}
