//! The `filter` rows: read a line, check an `attr-match` filter on its
//! envelope, pass the line on (copy it to an output buffer) when it
//! matches; and the attribute peeks a faster filter could stand on.

use std::borrow::Cow;
use std::hint::black_box;

use aep::filter::{AttrValue, Attributes, Filter};
use serde::Deserialize;

/// The filter the rows check: a typical subscription (attention, errors
/// and tool traffic at `info` and above).
pub const FILTER: &str =
    r#"{"type": ["attention.*", "error.*", "tool.*"], "severity": {"gte": "info"}}"#;

/// The parsed [`FILTER`].
pub fn filter() -> Filter {
    Filter::parse(FILTER).expect("the bench filter is valid")
}

/// What `aep filter` does per line: the strict envelope decode, the
/// filter, the copy.
pub fn strict(filter: &Filter, line: &str, out: &mut Vec<u8>) {
    if filter.matches_json(line).expect("the corpus decodes") {
        pass(line, out);
    }
}

/// The filterable core attributes only, borrowed where no escape forces a
/// copy; every other member (`data` included) skipped unparsed. Not a
/// decode: nothing else is checked.
#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow)]
    id: Option<Text<'a>>,
    #[serde(borrow, rename = "type")]
    type_: Option<Text<'a>>,
    #[serde(borrow)]
    subject: Option<Text<'a>>,
    #[serde(borrow)]
    source: Option<Text<'a>>,
    #[serde(borrow)]
    agent: Option<Text<'a>>,
    #[serde(borrow)]
    session: Option<Text<'a>>,
    #[serde(borrow)]
    run: Option<Text<'a>>,
    #[serde(borrow)]
    step: Option<Text<'a>>,
    epoch: Option<u64>,
    #[serde(borrow)]
    cause: Option<Text<'a>>,
    #[serde(borrow)]
    severity: Option<Text<'a>>,
    #[serde(borrow)]
    capture: Option<Text<'a>>,
}

impl Attributes for Peek<'_> {
    fn attr(&self, name: &str) -> Option<AttrValue<'_>> {
        let text = match name {
            "id" => &self.id,
            "type" => &self.type_,
            "subject" => &self.subject,
            "source" => &self.source,
            "agent" => &self.agent,
            "session" => &self.session,
            "run" => &self.run,
            "step" => &self.step,
            "cause" => &self.cause,
            "severity" => &self.severity,
            "capture" => &self.capture,
            "epoch" => return self.epoch.map(|e| AttrValue::Int(e.into())),
            _ => return None,
        };
        text.as_ref().map(|t| AttrValue::Str(&t.0))
    }
}

/// A string borrowed from the line unless escapes force a copy (serde's
/// own `Cow` copies inside an `Option`).
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;

        impl<'de> serde::de::Visitor<'de> for TextVisitor {
            type Value = Text<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }

            fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }

            fn visit_string<E>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }

        deserializer.deserialize_str(TextVisitor)
    }
}

/// The filter on a serde_json peek of the attributes.
pub fn peek_serde_json(filter: &Filter, line: &str, out: &mut Vec<u8>) {
    let peek: Peek<'_> = serde_json::from_str(line).expect("the corpus is JSON");
    if filter.matches(&peek) {
        pass(line, out);
    }
}

/// The filter on a sonic-rs (SIMD) peek of the attributes.
pub fn peek_sonic(filter: &Filter, line: &str, out: &mut Vec<u8>) {
    let peek: Peek<'_> = sonic_rs::from_str(line).expect("the corpus is JSON");
    if filter.matches(&peek) {
        pass(line, out);
    }
}

/// sonic-rs skipping a whole line: its parse floor, as `IgnoredAny` is
/// serde_json's.
pub fn sonic_floor(line: &str) {
    black_box(sonic_rs::from_str::<serde::de::IgnoredAny>(line).expect("the corpus is JSON"));
}

fn pass(line: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(line.as_bytes());
    out.push(b'\n');
}
