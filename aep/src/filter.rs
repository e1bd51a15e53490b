//! The `attr-match` filter dialect (AEP-0003 §6): which events a relay,
//! sink or subscriber passes on, decided on the envelope alone.
//!
//! A filter is a JSON object; each member is a predicate on one context
//! attribute or extension attribute, and an event matches when every
//! predicate does (an empty filter matches every event):
//!
//! - a scalar (string, integer, boolean) is equality, without coercion;
//! - a non-empty array of scalars is inclusion: any element matches;
//! - on `type`, a string `prefix.*` (alone or in an array) matches every
//!   type that begins with `prefix.` and goes on; `prefix` is one or more
//!   type segments (lowercase letters, digits, `_`, `-`) joined by dots;
//! - on `severity`, `{"gte": L}`, `{"lte": L}` or both compare by the
//!   severity order, bounds included.
//!
//! An attribute the event omits matches nothing, except `severity`,
//! `capture` and `epoch`, read as `info`, `metadata` and `0` when absent.
//!
//! [`Filter::parse`] refuses what §6 calls an invalid filter (fail closed,
//! never match-all), with a [`FilterError`] naming the key and the
//! [`Reason`]: `time`, `seq`, `aep`, `traceparent` and `data` are not
//! filterable; any other key must be a filterable core attribute or a legal
//! extension-attribute name (AEP-0001 §5.4, `[a-z0-9]{1,20}`). A string
//! holding `*` is a pattern, and patterns exist only on `type`: anywhere
//! else (inclusion arrays and extension attributes too) it is refused,
//! never taken as a literal that would silently match nothing.
//!
//! Matching reads attributes through [`Attributes`], which [`Event`] and
//! the borrowed [`EventRef`] implement; matching allocates nothing.
//!
//! ```
//! use aep::filter::Filter;
//! use aep::Event;
//!
//! let filter = Filter::parse(r#"{"type": ["attention.*", "error.*"], "severity": {"gte": "notice"}}"#)?;
//! let event = Event::from_json(r#"{"aep":"0.1","id":"e1","type":"attention.requested","time":"2026-12-01T10:00:00Z","source":"urn:a","agent":"a","session":"s","seq":0,"severity":"warning"}"#)?;
//! assert!(filter.matches(&event));
//! // `severity` absent reads as `info`, below `notice`.
//! let quiet = Event::from_json(r#"{"aep":"0.1","id":"e2","type":"attention.requested","time":"2026-12-01T10:00:00Z","source":"urn:a","agent":"a","session":"s","seq":1}"#)?;
//! assert!(!filter.matches(&quiet));
//!
//! let error = Filter::parse(r#"{"seq": 4}"#).unwrap_err();
//! assert_eq!(error.key(), Some("seq"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::str::FromStr;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use aep_types::{Event, EventRef, ExtensionValue, ExtensionValueRef, Severity};

/// One attribute value as a filter compares it: the envelope's scalars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttrValue<'a> {
    /// A string.
    Str(&'a str),
    /// An integer (`epoch`, `seq`, an integer extension attribute).
    Int(i128),
    /// A boolean (an extension attribute).
    Bool(bool),
}

/// Read access to an event's envelope attributes, by their wire name.
pub trait Attributes {
    /// The attribute `name` as the event carries it (core or extension),
    /// `None` when absent. No defaults: [`Filter::matches`] applies them.
    fn attr(&self, name: &str) -> Option<AttrValue<'_>>;
}

fn text(s: &Option<String>) -> Option<AttrValue<'_>> {
    s.as_deref().map(AttrValue::Str)
}

impl Attributes for Event {
    fn attr(&self, name: &str) -> Option<AttrValue<'_>> {
        let value = match name {
            "aep" => AttrValue::Str(self.aep.as_str()),
            "id" => AttrValue::Str(&self.id),
            "type" => AttrValue::Str(&self.type_),
            "subject" => return text(&self.subject),
            "time" => AttrValue::Str(&self.time),
            "source" => AttrValue::Str(&self.source),
            "agent" => AttrValue::Str(&self.agent),
            "session" => return text(&self.session),
            "run" => return text(&self.run),
            "step" => return text(&self.step),
            "seq" => AttrValue::Int(self.seq?.into()),
            "epoch" => AttrValue::Int(self.epoch?.into()),
            "cause" => return text(&self.cause),
            "traceparent" => return text(&self.traceparent),
            "severity" => AttrValue::Str(self.severity?.as_str()),
            "capture" => AttrValue::Str(self.capture?.as_str()),
            "data" => return None,
            _ => match self.extensions.get(name)? {
                ExtensionValue::String(s) => AttrValue::Str(s),
                ExtensionValue::Integer(i) => AttrValue::Int((*i).into()),
                ExtensionValue::Boolean(b) => AttrValue::Bool(*b),
            },
        };
        Some(value)
    }
}

impl Attributes for EventRef<'_> {
    fn attr(&self, name: &str) -> Option<AttrValue<'_>> {
        let value = match name {
            "aep" => AttrValue::Str(self.aep().as_str()),
            "id" => AttrValue::Str(self.id()),
            "type" => AttrValue::Str(self.type_()),
            "subject" => AttrValue::Str(self.subject()?),
            "time" => AttrValue::Str(self.time()),
            "source" => AttrValue::Str(self.source()),
            "agent" => AttrValue::Str(self.agent()),
            "session" => AttrValue::Str(self.session()?),
            "run" => AttrValue::Str(self.run()?),
            "step" => AttrValue::Str(self.step()?),
            "seq" => AttrValue::Int(self.seq()?.into()),
            "epoch" => AttrValue::Int(self.epoch()?.into()),
            "cause" => AttrValue::Str(self.cause()?),
            "traceparent" => AttrValue::Str(self.traceparent()?),
            "severity" => AttrValue::Str(self.severity()?.as_str()),
            "capture" => AttrValue::Str(self.capture()?.as_str()),
            "data" => return None,
            _ => match self.extension(name)? {
                ExtensionValueRef::String(s) => AttrValue::Str(s),
                ExtensionValueRef::Integer(i) => AttrValue::Int((*i).into()),
                ExtensionValueRef::Boolean(b) => AttrValue::Bool(*b),
            },
        };
        Some(value)
    }
}

/// The core attributes a filter may name (AEP-0003 §6.2 rule 1).
const FILTERABLE: [&str; 12] = [
    "id", "type", "subject", "source", "agent", "session", "run", "step", "epoch", "cause",
    "severity", "capture",
];

/// The core attributes that are carried, not filtered, and why.
const NOT_FILTERABLE: [(&str, &str); 5] = [
    ("time", "`time` is display metadata, never a routing key"),
    (
        "seq",
        "positions are the resume mechanism, not filters (resume with a position instead)",
    ),
    ("aep", "`aep` is the format marker, not a routing key"),
    ("traceparent", "trace context is pass-through join metadata"),
    ("data", "routing never parses payloads"),
];

/// A parsed, valid `attr-match` filter.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Filter {
    predicates: Vec<(String, Predicate)>,
}

/// What one member of a filter asks of its attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Predicate {
    /// Any of these (one for plain equality).
    AnyOf(Alternatives),
    /// A severity between the bounds, inclusive.
    Severity {
        gte: Option<Severity>,
        lte: Option<Severity>,
    },
}

/// The alternatives of an equality or inclusion, kept so that matching a
/// value costs a binary search rather than a pass over every alternative:
/// strings and type prefixes sorted, a value's candidate prefixes being
/// its own dotted prefixes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Alternatives {
    strs: Vec<String>,
    ints: Vec<i128>,
    bools: [bool; 2],
    /// `prefix.` of each `prefix.*`, with its dot.
    prefixes: Vec<String>,
}

impl Alternatives {
    fn new(list: Vec<Alternative>) -> Alternatives {
        let mut all = Alternatives::default();
        for alternative in list {
            match alternative {
                Alternative::Str(s) => all.strs.push(s),
                Alternative::Int(i) => all.ints.push(i),
                Alternative::Bool(b) => all.bools[usize::from(b)] = true,
                Alternative::TypePrefix(p) => all.prefixes.push(p),
            }
        }
        for list in [&mut all.strs, &mut all.prefixes] {
            list.sort_unstable();
            list.dedup();
        }
        all.ints.sort_unstable();
        all.ints.dedup();
        all
    }

    fn matches(&self, value: AttrValue<'_>) -> bool {
        match value {
            AttrValue::Str(have) => {
                let listed = |list: &[String], text: &str| {
                    list.binary_search_by(|s| s.as_str().cmp(text)).is_ok()
                };
                listed(&self.strs, have)
                    || (!self.prefixes.is_empty()
                        && have
                            .match_indices('.')
                            // `prefix.` matches what is longer than it.
                            .filter(|(at, _)| at + 1 < have.len())
                            .any(|(at, _)| listed(&self.prefixes, &have[..=at])))
            }
            AttrValue::Int(have) => self.ints.binary_search(&have).is_ok(),
            AttrValue::Bool(have) => self.bools[usize::from(have)],
        }
    }
}

/// One alternative of an equality or inclusion.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Alternative {
    Str(String),
    Int(i128),
    Bool(bool),
    /// `prefix.*` on `type`; holds `prefix.` with its dot.
    TypePrefix(String),
}

/// Why a filter is invalid (`invalid-filter`, AEP-0003 §6.2).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// The text is not JSON.
    NotJson(String),
    /// The filter is not a JSON object.
    NotAnObject,
    /// A key appears twice.
    DuplicateKey,
    /// `time`, `seq`, `aep`, `traceparent` or `data`: carried, not
    /// filtered; the text says why.
    NotFilterable(&'static str),
    /// Neither a filterable core attribute nor a legal extension-attribute
    /// name.
    UnknownKey,
    /// A `*` pattern on `type` other than `prefix.*`.
    BadTypePattern(String),
    /// A string with `*` on an attribute other than `type`: patterns are
    /// only allowed on `type`.
    PatternNotOnType(String),
    /// An operator other than `gte` and `lte` in a severity comparison.
    SeverityOperator(String),
    /// A severity comparison bound that is not a severity level.
    SeverityLevel(String),
    /// A severity comparison without `gte` or `lte`.
    EmptySeverityComparison,
    /// An object predicate on an attribute other than `severity`.
    ComparisonNotOnSeverity,
    /// An empty inclusion array.
    EmptyInclusion,
    /// A predicate (or inclusion element) that is not a string, integer or
    /// boolean; names the JSON kind found.
    NotScalar(&'static str),
}

/// An invalid filter: the key at fault (when one is) and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterError {
    key: Option<String>,
    reason: Reason,
}

impl FilterError {
    fn new(key: &str, reason: Reason) -> Self {
        FilterError {
            key: Some(key.to_owned()),
            reason,
        }
    }

    /// The filter key at fault, if the error is about one.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// Why the filter is invalid.
    pub fn reason(&self) -> &Reason {
        &self.reason
    }
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid filter: ")?;
        if let Some(key) = &self.key {
            write!(f, "key `{key}`: ")?;
        }
        match &self.reason {
            Reason::NotJson(e) => write!(f, "not JSON: {e}"),
            Reason::NotAnObject => f.write_str("a filter is a JSON object (AEP-0003 §6.1)"),
            Reason::DuplicateKey => f.write_str("the key appears twice"),
            Reason::NotFilterable(why) => {
                write!(f, "not filterable: {why} (AEP-0003 §6.2 rule 1)")
            }
            Reason::UnknownKey => f.write_str(
                "neither a filterable core attribute nor a legal extension-attribute name \
                 (`[a-z0-9]{1,20}`, AEP-0001 §5.4; AEP-0003 §6.2 rule 1)",
            ),
            Reason::BadTypePattern(p) => write!(
                f,
                "\"{p}\" is not a type pattern: the only glob is `prefix.*` on `type`, and `*` \
                 alone is none (omit the key instead; AEP-0003 §6.2 rule 3)"
            ),
            Reason::PatternNotOnType(p) => write!(
                f,
                "\"{p}\" is a pattern, and patterns are allowed only on `type` (as \
                 `prefix.*`); `*` is never a literal character in a filter \
                 (AEP-0003 §6.1, §6.2 rule 3)"
            ),
            Reason::SeverityOperator(op) => write!(
                f,
                "`{op}` is not a severity operator: only `gte` and `lte` (AEP-0003 §6.1)"
            ),
            Reason::SeverityLevel(level) => write!(
                f,
                "{level} is not a severity level (debug, info, notice, warning, error, critical)"
            ),
            Reason::EmptySeverityComparison => {
                f.write_str("a severity comparison needs `gte`, `lte` or both (AEP-0003 §6.1)")
            }
            Reason::ComparisonNotOnSeverity => f.write_str(
                "an object predicate (comparison) is only allowed on `severity` (AEP-0003 §6.1)",
            ),
            Reason::EmptyInclusion => {
                f.write_str("an inclusion array needs at least one element (AEP-0003 §6.1)")
            }
            Reason::NotScalar(kind) => write!(
                f,
                "{kind} is not a predicate: a string, integer or boolean, or an array of them \
                 (AEP-0003 §6.1)"
            ),
        }
    }
}

impl std::error::Error for FilterError {}

impl Filter {
    /// The filter that matches every event, `{}`.
    pub fn all() -> Self {
        Filter::default()
    }

    /// Parses a filter from its JSON text, refusing an invalid one.
    pub fn parse(json: &str) -> Result<Filter, FilterError> {
        let members = match serde_json::from_str::<Members>(json) {
            Ok(members) => members.0?,
            Err(e) => {
                let reason = if serde_json::from_str::<serde::de::IgnoredAny>(json).is_ok() {
                    Reason::NotAnObject
                } else {
                    Reason::NotJson(e.to_string())
                };
                return Err(FilterError { key: None, reason });
            }
        };
        let mut predicates = Vec::with_capacity(members.len());
        for (key, value) in members {
            let predicate = predicate(&key, &value)?;
            predicates.push((key, predicate));
        }
        Ok(Filter { predicates })
    }

    /// Parses a filter from a JSON value, refusing an invalid one. (A
    /// [`Value`] keeps one of two duplicate keys; [`Filter::parse`] refuses
    /// them.)
    pub fn from_value(value: &Value) -> Result<Filter, FilterError> {
        let Value::Object(map) = value else {
            return Err(FilterError {
                key: None,
                reason: Reason::NotAnObject,
            });
        };
        let mut predicates = Vec::with_capacity(map.len());
        for (key, value) in map {
            check_key(key)?;
            predicates.push((key.clone(), predicate(key, value)?));
        }
        Ok(Filter { predicates })
    }

    /// Whether the filter is `{}`, matching every event.
    pub fn is_empty(&self) -> bool {
        self.predicates.is_empty()
    }

    /// The attribute names the filter reads, in filter order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.predicates.iter().map(|(key, _)| key.as_str())
    }

    /// Decodes the envelope of one JSON line as an [`EventRef`] (borrowed,
    /// as strict as [`Event::from_json`]) and tells whether the event
    /// matches. This is what `aep filter` runs per line.
    pub fn matches_json(&self, json: &str) -> Result<bool, aep_types::Error> {
        Ok(self.matches(&EventRef::from_json(json)?))
    }

    /// Whether `event` matches every predicate, with the AEP-0001 defaults
    /// applied to an absent `severity`, `capture` and `epoch`.
    pub fn matches<E: Attributes + ?Sized>(&self, event: &E) -> bool {
        self.predicates.iter().all(|(key, predicate)| {
            let value = event.attr(key).or_else(|| default(key));
            value.is_some_and(|value| predicate.matches(value))
        })
    }
}

impl FromStr for Filter {
    type Err = FilterError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Filter::parse(s)
    }
}

/// The value of an absent attribute, for the three with a default.
fn default(key: &str) -> Option<AttrValue<'static>> {
    match key {
        "severity" => Some(AttrValue::Str("info")),
        "capture" => Some(AttrValue::Str("metadata")),
        "epoch" => Some(AttrValue::Int(0)),
        _ => None,
    }
}

impl Predicate {
    fn matches(&self, value: AttrValue<'_>) -> bool {
        match self {
            Predicate::AnyOf(alternatives) => alternatives.matches(value),
            Predicate::Severity { gte, lte } => {
                let AttrValue::Str(text) = value else {
                    return false;
                };
                let Ok(level) = text.parse::<Severity>() else {
                    return false;
                };
                gte.is_none_or(|low| level >= low) && lte.is_none_or(|high| level <= high)
            }
        }
    }
}

/// Refuses a key that is not filterable.
fn check_key(key: &str) -> Result<(), FilterError> {
    if FILTERABLE.contains(&key) {
        return Ok(());
    }
    if let Some((_, why)) = NOT_FILTERABLE.iter().find(|(name, _)| *name == key) {
        return Err(FilterError::new(key, Reason::NotFilterable(why)));
    }
    let legal = (1..=20).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if legal {
        Ok(())
    } else {
        Err(FilterError::new(key, Reason::UnknownKey))
    }
}

/// The predicate of member `key: value`.
fn predicate(key: &str, value: &Value) -> Result<Predicate, FilterError> {
    match value {
        Value::Array(elements) if elements.is_empty() => {
            Err(FilterError::new(key, Reason::EmptyInclusion))
        }
        Value::Array(elements) => elements
            .iter()
            .map(|element| alternative(key, element))
            .collect::<Result<_, _>>()
            .map(|list| Predicate::AnyOf(Alternatives::new(list))),
        Value::Object(operators) if key == "severity" => severity_comparison(operators),
        Value::Object(_) => Err(FilterError::new(key, Reason::ComparisonNotOnSeverity)),
        scalar => Ok(Predicate::AnyOf(Alternatives::new(vec![alternative(
            key, scalar,
        )?]))),
    }
}

/// One scalar or type pattern.
fn alternative(key: &str, value: &Value) -> Result<Alternative, FilterError> {
    let not_scalar = |kind| Err(FilterError::new(key, Reason::NotScalar(kind)));
    match value {
        Value::String(s) if s.contains('*') && key != "type" => {
            Err(FilterError::new(key, Reason::PatternNotOnType(s.clone())))
        }
        Value::String(s) if s.contains('*') => match type_prefix(s) {
            Some(prefix) => Ok(Alternative::TypePrefix(prefix.to_owned())),
            None => Err(FilterError::new(key, Reason::BadTypePattern(s.clone()))),
        },
        Value::String(s) => Ok(Alternative::Str(s.clone())),
        Value::Bool(b) => Ok(Alternative::Bool(*b)),
        Value::Number(n) => match n.as_i64().map(i128::from).or(n.as_u64().map(i128::from)) {
            Some(i) => Ok(Alternative::Int(i)),
            None => not_scalar("a number that is not an integer"),
        },
        Value::Null => not_scalar("null"),
        Value::Array(_) => not_scalar("a nested array"),
        Value::Object(_) => not_scalar("an object"),
    }
}

/// The `prefix.` of a type pattern `prefix.*`, dot included: one or more
/// segments of lowercase letters, digits, `_` and `-`, each followed by a
/// dot.
fn type_prefix(pattern: &str) -> Option<&str> {
    let prefix = pattern.strip_suffix('*')?;
    let segments = prefix.strip_suffix('.')?;
    let legal = segments.split('.').all(|segment| {
        !segment.is_empty()
            && segment
                .bytes()
                .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'))
    });
    legal.then_some(prefix)
}

/// `{"gte": L}`, `{"lte": L}` or both.
fn severity_comparison(
    operators: &serde_json::Map<String, Value>,
) -> Result<Predicate, FilterError> {
    const KEY: &str = "severity";
    let mut gte = None;
    let mut lte = None;
    for (operator, level) in operators {
        let slot = match operator.as_str() {
            "gte" => &mut gte,
            "lte" => &mut lte,
            other => {
                return Err(FilterError::new(
                    KEY,
                    Reason::SeverityOperator(other.to_owned()),
                ))
            }
        };
        let parsed = level.as_str().and_then(|s| s.parse::<Severity>().ok());
        match parsed {
            Some(parsed) => *slot = Some(parsed),
            None => {
                return Err(FilterError::new(
                    KEY,
                    Reason::SeverityLevel(level.to_string()),
                ))
            }
        }
    }
    if gte.is_none() && lte.is_none() {
        return Err(FilterError::new(KEY, Reason::EmptySeverityComparison));
    }
    Ok(Predicate::Severity { gte, lte })
}

/// A JSON object's members in order, duplicates refused, keys checked as
/// they come (so the first bad key is the one reported).
struct Members(Result<Vec<(String, Value)>, FilterError>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;

        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut members: Vec<(String, Value)> = Vec::new();
                let mut first_error = None;
                while let Some(key) = map.next_key::<String>()? {
                    let value: Value = map.next_value()?;
                    if first_error.is_some() {
                        continue;
                    }
                    if members.iter().any(|(seen, _)| *seen == key) {
                        first_error = Some(FilterError::new(&key, Reason::DuplicateKey));
                    } else if let Err(e) = check_key(&key) {
                        first_error = Some(e);
                    } else {
                        members.push((key, value));
                    }
                }
                Ok(Members(match first_error {
                    Some(e) => Err(e),
                    None => Ok(members),
                }))
            }
        }

        deserializer.deserialize_map(MembersVisitor)
    }
}

#[cfg(test)]
mod tests;
