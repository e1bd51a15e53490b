//! Comparing JSON values the way the fixtures mean them, and saying what
//! differs.
//!
//! Two values are equal when they are the same JSON value: objects
//! whatever their member order, arrays element by element, numbers by
//! value (`1` and `1.0` are the same number).

use serde_json::{Map, Value};

/// The most differences [`diff`] lists for one comparison.
const MAX_DIFFERENCES: usize = 8;

/// The most characters [`show`] prints of one value.
const MAX_SHOWN: usize = 160;

/// Whether `a` and `b` are the same JSON value.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => same_number(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, a)| y.get(key).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

fn same_number(x: &serde_json::Number, y: &serde_json::Number) -> bool {
    let integer = |n: &serde_json::Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (integer(x), integer(y)) {
        (Some(a), Some(b)) => a == b,
        _ => x.as_f64() == y.as_f64(),
    }
}

/// What differs between `expected` and `got`, one line per difference
/// with its JSON Pointer (`/` is the whole value), members in name order;
/// empty when they are [`same`]. At most a few are listed, then how many more there are.
pub fn diff(expected: &Value, got: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk("", expected, got, &mut out);
    if out.len() > MAX_DIFFERENCES {
        let more = out.len() - MAX_DIFFERENCES;
        out.truncate(MAX_DIFFERENCES);
        out.push(format!("... and {more} more difference(s)"));
    }
    out
}

fn walk(path: &str, expected: &Value, got: &Value, out: &mut Vec<String>) {
    match (expected, got) {
        (Value::Object(e), Value::Object(g)) => objects(path, e, g, out),
        (Value::Array(e), Value::Array(g)) if e.len() == g.len() => {
            for (i, (e, g)) in e.iter().zip(g).enumerate() {
                walk(&format!("{path}/{i}"), e, g, out);
            }
        }
        _ if same(expected, got) => {}
        _ => out.push(format!(
            "{}: expected {}, got {}",
            at(path),
            show(expected),
            show(got)
        )),
    }
}

/// Members in name order, whatever order the map keeps them in.
fn sorted(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut members: Vec<_> = map.iter().collect();
    members.sort_by_key(|(key, _)| *key);
    members
}

fn objects(
    path: &str,
    expected: &Map<String, Value>,
    got: &Map<String, Value>,
    out: &mut Vec<String>,
) {
    for (key, e) in sorted(expected) {
        let here = format!("{path}/{}", escape(key));
        match got.get(key) {
            Some(g) => walk(&here, e, g, out),
            None => out.push(format!("{here}: missing, expected {}", show(e))),
        }
    }
    for (key, g) in sorted(got) {
        if !expected.contains_key(key) {
            out.push(format!(
                "{path}/{}: not expected, got {}",
                escape(key),
                show(g)
            ));
        }
    }
}

fn at(path: &str) -> &str {
    if path.is_empty() {
        "/"
    } else {
        path
    }
}

/// A JSON Pointer reference token (RFC 6901).
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// `value` as compact JSON, cut short when long.
pub fn show(value: &Value) -> String {
    shorten(&value.to_string())
}

/// `text` cut to a readable length, with a mark where it was cut.
pub fn shorten(text: &str) -> String {
    match text.char_indices().nth(MAX_SHOWN) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

/// `value` written the way Python's `json.dumps` writes it by default:
/// `", "` and `": "` between members, non-ASCII characters escaped. The
/// redaction corpus states what a redacted value's text must and must not
/// contain in this form.
pub fn python_dumps(value: &Value) -> String {
    let mut out = String::new();
    dump(value, &mut out);
    out
}

fn dump(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => dump_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                dump(item, out);
            }
            out.push(']');
        }
        Value::Object(members) => {
            out.push('{');
            for (i, (key, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                dump_string(key, out);
                out.push_str(": ");
                dump(item, out);
            }
            out.push('}');
        }
    }
}

fn dump_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_compare_by_value_and_objects_by_members() {
        assert!(same(
            &json!({"a": 1, "b": [1.0, 2]}),
            &json!({"b": [1, 2.0], "a": 1.0})
        ));
        assert!(!same(&json!({"a": 1}), &json!({"a": 1, "b": null})));
        assert!(!same(&json!([1, 2]), &json!([2, 1])));
        assert!(!same(&json!(1), &json!("1")));
        assert!(!same(&json!(u64::MAX), &json!(-1)));
    }

    #[test]
    fn differences_name_their_place() {
        let expected = json!({"a": {"b": 1, "c/d": 2}, "list": [1, 2], "gone": true});
        let got = json!({"a": {"b": 3, "c/d": 2}, "list": [1], "extra": "x"});
        assert_eq!(
            diff(&expected, &got),
            [
                "/a/b: expected 1, got 3",
                "/gone: missing, expected true",
                "/list: expected [1,2], got [1]",
                "/extra: not expected, got \"x\"",
            ]
        );
        assert!(diff(&expected, &expected).is_empty());
        assert_eq!(diff(&json!(1), &json!(2)), ["/: expected 1, got 2"]);
    }

    #[test]
    fn long_lists_of_differences_are_cut() {
        let expected: Value = (0..20)
            .map(|i| (i.to_string(), json!(i)))
            .collect::<Map<_, _>>()
            .into();
        let lines = diff(&expected, &json!({}));
        assert_eq!(lines.len(), MAX_DIFFERENCES + 1);
        assert_eq!(lines[MAX_DIFFERENCES], "... and 12 more difference(s)");
    }

    #[test]
    fn python_text_form() {
        let value = json!({"k": ["a\"b", 1, 0.5, true, null], "é": "日\n"});
        assert_eq!(
            python_dumps(&value),
            r#"{"k": ["a\"b", 1, 0.5, true, null], "\u00e9": "\u65e5\n"}"#
        );
        assert_eq!(python_dumps(&json!("😀")), r#""\ud83d\ude00""#);
    }

    #[test]
    fn shown_values_are_cut_on_a_character_boundary() {
        let long = "é".repeat(400);
        let shown = shorten(&long);
        assert!(shown.ends_with("..."));
        assert_eq!(shown.chars().count(), MAX_SHOWN + 3);
    }
}
