//! Reading vendor payloads: typed where the shape is stable, by member
//! where it is not, every error naming the place.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::MapError;

/// `value` decoded as `T`; an error names the member at fault by its
/// JSON Pointer, after `place` (the hook or event it belongs to).
pub fn decode<T: DeserializeOwned>(value: &Value, place: &str) -> Result<T, MapError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            MapError::new(format!("{place}: {inner}"))
        } else {
            MapError::new(format!("{place}: `{path}`: {inner}"))
        }
    })
}

/// The input as a JSON object.
pub fn object<'v>(value: &'v Value, place: &str) -> Result<&'v Map<String, Value>, MapError> {
    value.as_object().ok_or_else(|| {
        MapError::new(format!(
            "{place}: expected a JSON object, got {}",
            kind(value)
        ))
    })
}

/// Member `key` of `value` as a string; absent or `null` is `None`,
/// another JSON type an error.
pub fn opt_str<'v>(value: &'v Value, key: &str, place: &str) -> Result<Option<&'v str>, MapError> {
    match value.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(MapError::new(format!(
            "{place}: `{key}`: expected a string, got {}",
            kind(other)
        ))),
    }
}

/// Member `key` of `value` as a string, required.
pub fn req_str<'v>(value: &'v Value, key: &str, place: &str) -> Result<&'v str, MapError> {
    opt_str(value, key, place)?
        .ok_or_else(|| MapError::new(format!("{place}: missing member `{key}`")))
}

/// The name of a value's JSON type, for messages.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The text of a message content: a string as it is, the `text` of a
/// content part, or the texts of an array of parts joined with `\n`.
/// `None` when there is no text.
pub fn text_of(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Object(part) => part.get("text").and_then(Value::as_str).map(str::to_owned),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// A non-negative integer (`412` or the string `"412"`, as telemetry
/// attributes carry numbers).
pub fn count(value: Option<&Value>) -> Option<u64> {
    match value? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn texts_of_every_content_shape() {
        assert_eq!(text_of(&json!("hi")).as_deref(), Some("hi"));
        assert_eq!(
            text_of(&json!([{"type": "text", "text": "a"}, {"type": "image"}, {"text": "b"}]))
                .as_deref(),
            Some("a\nb")
        );
        assert_eq!(
            text_of(&json!({"type": "text", "text": "c"})).as_deref(),
            Some("c")
        );
        assert_eq!(text_of(&json!([])), None);
        assert_eq!(text_of(&json!(3)), None);
    }

    #[test]
    fn member_errors_name_the_member() {
        let v = json!({"tool_name": 3});
        let e = req_str(&v, "tool_name", "PreToolUse").unwrap_err();
        assert_eq!(
            e.message(),
            "PreToolUse: `tool_name`: expected a string, got a number"
        );
        let e = req_str(&v, "session_id", "Stop").unwrap_err();
        assert_eq!(e.message(), "Stop: missing member `session_id`");
    }

    #[test]
    fn counts_read_numbers_and_numeric_strings() {
        assert_eq!(count(Some(&json!(412))), Some(412));
        assert_eq!(count(Some(&json!("87"))), Some(87));
        assert_eq!(count(Some(&json!(-1))), None);
        assert_eq!(count(Some(&json!("x"))), None);
        assert_eq!(count(None), None);
    }
}
