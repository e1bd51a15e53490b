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
    id: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "type")]
    type_: Option<Cow<'a, str>>,
    #[serde(borrow)]
    subject: Option<Cow<'a, str>>,
    #[serde(borrow)]
    source: Option<Cow<'a, str>>,
    #[serde(borrow)]
    agent: Option<Cow<'a, str>>,
    #[serde(borrow)]
    session: Option<Cow<'a, str>>,
    #[serde(borrow)]
    run: Option<Cow<'a, str>>,
    #[serde(borrow)]
    step: Option<Cow<'a, str>>,
    epoch: Option<u64>,
    #[serde(borrow)]
    cause: Option<Cow<'a, str>>,
    #[serde(borrow)]
    severity: Option<Cow<'a, str>>,
    #[serde(borrow)]
    capture: Option<Cow<'a, str>>,
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
        text.as_deref().map(AttrValue::Str)
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
