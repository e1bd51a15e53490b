//! Content digests (AEP-0003 §9.3): SHA-256 over the RFC 8785 (JSON
//! Canonicalization Scheme) form of a value, hex, first 16 bytes, so two
//! events can be correlated by content they do not carry.
//!
//! ```
//! use aep::digest::{canonical_json, digest};
//! use serde_json::json;
//!
//! let args = json!({"cmd": "ls", "n": 1e21, "a": [true, null, 0.5]});
//! assert_eq!(canonical_json(&args), r#"{"a":[true,null,0.5],"cmd":"ls","n":1e+21}"#);
//! // Member order does not change the digest.
//! assert_eq!(digest(&args), digest(&json!({"n": 1e21, "a": [true, null, 0.5], "cmd": "ls"})));
//! assert_eq!(digest(&args).len(), 32);
//! ```

use std::fmt::Write;

use serde_json::{Number, Value};
use sha2::{Digest, Sha256};

/// The digest of a value: SHA-256 of its canonical JSON, the first 16
/// bytes as 32 lowercase hex digits.
pub fn digest(value: &Value) -> String {
    let hash = Sha256::digest(canonical_json(value).as_bytes());
    hash[..16]
        .iter()
        .fold(String::with_capacity(32), |mut hex, byte| {
            let _ = write!(hex, "{byte:02x}");
            hex
        })
}

/// The RFC 8785 canonical form of a value: no whitespace, object members
/// sorted by the UTF-16 code units of their names, strings with the
/// minimal escapes, numbers as ECMAScript writes an IEEE-754 double.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(members) => {
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            sorted.sort_by(|(a, _), (b, _)| crate::projection::utf16_cmp(a, b));
            out.push('{');
            for (i, (name, member)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, name);
                out.push(':');
                write_value(out, member);
            }
            out.push('}');
        }
    }
}

/// A number as ECMAScript's `Number.prototype.toString` writes the
/// double it denotes (RFC 8785 §3.2.2.3): integers are read as doubles
/// too, so `10000000000000000001` becomes `10000000000000000000`. The
/// crate turns on serde_json's `float_roundtrip`, so a parsed number is
/// the nearest double, as the scheme assumes (the default parser may be
/// one unit in the last place off, and the digest with it).
fn write_number(out: &mut String, n: &Number) {
    // serde_json numbers are finite; an integer beyond 2^53 rounds, as
    // the scheme requires of a parser reading it as a double.
    let double = n.as_f64().unwrap_or(0.0);
    let mut buffer = ryu_js::Buffer::new();
    out.push_str(buffer.format_finite(double));
}

/// A string with the escapes RFC 8785 §3.2.2.2 prescribes: `\"`, `\\`,
/// the short forms `\b \t \n \f \r`, `\u00xx` (lowercase) for the other
/// controls, and every other character as itself.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if c < '\u{20}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
