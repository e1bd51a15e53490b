//! Support code the generated modules call as `crate::runtime`: the error
//! type, the raw payload slot, the decoding helpers the generated
//! `Deserialize` impls call, and the validation helpers. It is written by
//! hand, not generated; what users name from it is re-exported at the
//! crate root by the generated `mod.rs`.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeOwned, MapAccess};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// A free-form JSON object: what the schemas leave open.
pub type Object = serde_json::Map<String, serde_json::Value>;

/// What can go wrong turning JSON into typed AEP values.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A payload does not have the shape its schema states.
    Payload {
        /// The event type whose schema was applied.
        event_type: String,
        /// JSON Pointer, from the event root, of the offending value.
        pointer: String,
        /// What is wrong there.
        message: String,
    },
    /// An event does not have the shape the envelope schema states.
    Envelope {
        /// JSON Pointer, from the event root, of the offending value
        /// (empty for the event itself).
        pointer: String,
        /// What is wrong there.
        message: String,
    },
    /// An extension attribute name breaks the envelope's naming rule.
    ExtensionName {
        /// The refused name.
        name: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// A string is not one of an enum's values.
    UnknownValue {
        /// The enum.
        expected: &'static str,
        /// The refused string.
        value: String,
    },
}

impl Error {
    /// The JSON Pointer of the offending value, where there is one.
    pub fn pointer(&self) -> Option<&str> {
        match self {
            Error::Payload { pointer, .. } | Error::Envelope { pointer, .. } => Some(pointer),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Payload {
                event_type,
                pointer,
                message,
            } => write!(
                f,
                "invalid `{event_type}` payload at `{pointer}`: {message}"
            ),
            Error::Envelope { pointer, message } if pointer.is_empty() => {
                write!(f, "invalid event: {message}")
            }
            Error::Envelope { pointer, message } => {
                write!(f, "invalid event at `{pointer}`: {message}")
            }
            Error::ExtensionName { name, reason } => {
                write!(f, "invalid extension attribute name `{name}`: {reason}")
            }
            Error::UnknownValue { expected, value } => write!(f, "`{value}` is not a {expected}"),
        }
    }
}

impl std::error::Error for Error {}

/// An event's `data` exactly as it arrived: always a JSON object, decoded
/// into a typed payload only when asked, and written back byte for byte.
#[derive(Debug, Clone)]
pub struct Data(Box<RawValue>);

impl Data {
    /// The empty object, `{}`.
    pub fn empty() -> Data {
        Data::from_json("{}").expect("`{}` is a JSON object")
    }

    /// Data holding `object`.
    pub fn from_object(object: &Object) -> Data {
        Data::from_serialize(object).expect("a JSON object always serialises")
    }

    /// Data holding a serialised value, which must be a JSON object.
    /// A failure names the place by its JSON Pointer from the event root
    /// (`/data/...`), as decoding does.
    pub fn from_serialize<T: Serialize + ?Sized>(value: &T) -> Result<Data, serde_json::Error> {
        let raw = serde_json::value::to_raw_value(value).map_err(|error| at("data", error))?;
        Data::checked(raw).map_err(de::Error::custom)
    }

    /// Data parsed from JSON text, which must be an object.
    pub fn from_json(text: &str) -> Result<Data, serde_json::Error> {
        let raw: Box<RawValue> = serde_json::from_str(text)?;
        Data::checked(raw).map_err(de::Error::custom)
    }

    fn checked(raw: Box<RawValue>) -> Result<Data, &'static str> {
        if raw.get().starts_with('{') {
            Ok(Data(raw))
        } else {
            Err("`data` must be a JSON object")
        }
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// The raw JSON value.
    pub(crate) fn raw(&self) -> &RawValue {
        &self.0
    }

    /// The data as a free-form object. Fails only where a `Value` cannot
    /// hold what the text holds (a number beyond `f64`, nesting beyond
    /// serde_json's limit), which the raw text itself keeps.
    pub fn to_object(&self) -> Result<Object, serde_json::Error> {
        serde_json::from_str(self.get())
    }
}

impl Data {
    /// Data copied from a raw value already checked to be an object
    /// (a [`RawData`] read it).
    pub(crate) fn from_raw(raw: &RawValue) -> Data {
        Data(raw.to_owned())
    }
}

/// An event's `data` borrowed from the input: a JSON object, refused
/// otherwise with [`Data`]'s message.
pub struct RawData<'de>(&'de RawValue);

impl<'de> From<RawData<'de>> for &'de RawValue {
    fn from(value: RawData<'de>) -> &'de RawValue {
        value.0
    }
}

impl<'de> Deserialize<'de> for RawData<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RawData<'de>, D::Error> {
        let raw = <&'de RawValue>::deserialize(deserializer)?;
        if raw.get().starts_with('{') {
            Ok(RawData(raw))
        } else {
            Err(de::Error::custom("`data` must be a JSON object"))
        }
    }
}

/// A JSON string, borrowed from the input when it has no escapes.
pub struct Str<'de>(Cow<'de, str>);

impl<'de> From<Str<'de>> for Cow<'de, str> {
    fn from(value: Str<'de>) -> Cow<'de, str> {
        value.0
    }
}

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Str<'de>, D::Error> {
        struct Visitor;
        impl<'de> de::Visitor<'de> for Visitor {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // What `String` says, so both decoders refuse alike.
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_string(Visitor)
    }
}

impl PartialEq for Data {
    fn eq(&self, other: &Data) -> bool {
        self.get() == other.get()
    }
}

impl Eq for Data {}

impl std::hash::Hash for Data {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.get().hash(state);
    }
}

impl Serialize for Data {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Data {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Data, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Data::checked(raw).map_err(de::Error::custom)
    }
}

/// Decodes `text` (an event's `data`) as `T`, naming the place of a
/// failure by its JSON Pointer from the event root.
pub fn decode<T: DeserializeOwned>(event_type: &str, text: &str) -> Result<T, Error> {
    locate("/data", text.as_bytes(), Some(text)).map_err(|(pointer, error)| {
        // A position inside `data` would mislead: it is not the event's.
        let text = error.to_string();
        let position = format!(" at line {} column {}", error.line(), error.column());
        Error::Payload {
            event_type: event_type.to_owned(),
            pointer,
            message: text.strip_suffix(&position).unwrap_or(&text).to_owned(),
        }
    })
}

/// Decodes `bytes` (a whole event) as `T`, naming the place of a failure
/// by its JSON Pointer.
pub fn decode_event<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, Error> {
    refuse_bom(bytes)?;
    locate("", bytes, None).map_err(event_error)
}

/// Decodes `text` (a whole event) as `T`, as [`decode_event`] does; text
/// known to be UTF-8 is not checked again, which makes it faster.
pub fn decode_event_str<'a, T: Deserialize<'a>>(text: &'a str) -> Result<T, Error> {
    refuse_bom(text.as_bytes())?;
    locate("", text.as_bytes(), Some(text)).map_err(event_error)
}

/// The UTF-8 encoding of U+FEFF, the byte order mark.
pub const BOM: &[u8] = b"\xef\xbb\xbf";

/// A byte order mark before an event is named as one, rather than left to
/// the JSON parser's "expected value".
fn refuse_bom(bytes: &[u8]) -> Result<(), Error> {
    if bytes.starts_with(BOM) {
        return Err(Error::Envelope {
            pointer: String::new(),
            message: "the line starts with a UTF-8 byte order mark (BOM); JSON text and JSONL \
                      lines carry none (RFC 8259 §8.1, AEP-0003 §3.1): save the file without it"
                .to_owned(),
        });
    }
    Ok(())
}

fn event_error((pointer, error): (String, serde_json::Error)) -> Error {
    // An event is usually one line: its column is what helps.
    let text = error.to_string();
    let message = match error.line() {
        1 => {
            let position = format!(" at line 1 column {}", error.column());
            match text.strip_suffix(&position) {
                Some(message) => format!("{message} at column {}", error.column()),
                None => text,
            }
        }
        _ => text,
    };
    Error::Envelope { pointer, message }
}

/// Decodes `text` as `T`; on failure, decodes again tracking the path, so
/// the error can say where (failures are rare, so the common case pays
/// nothing for it). The pointer starts with `prefix`. `text`, when
/// given, is `bytes` as a `str`: the first attempt then skips the UTF-8
/// checks (the second reads `bytes`, with the same outcome on UTF-8).
fn locate<'a, T: Deserialize<'a>>(
    prefix: &str,
    bytes: &'a [u8],
    text: Option<&'a str>,
) -> Result<T, (String, serde_json::Error)> {
    let first = match text {
        Some(text) => serde_json::from_str(text),
        None => serde_json::from_slice(bytes),
    };
    if let Ok(value) = first {
        return Ok(value);
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let error = match serde_path_to_error::deserialize::<_, T>(&mut deserializer) {
        // The value was whole; what follows it is not.
        Ok(value) => {
            return deserializer
                .end()
                .map(|()| value)
                .map_err(|e| (prefix.to_owned(), e))
        }
        Err(error) => error,
    };
    let mut pointer = String::from(prefix);
    for segment in error.path().iter() {
        pointer.push('/');
        match segment {
            serde_path_to_error::Segment::Seq { index } => pointer.push_str(&index.to_string()),
            serde_path_to_error::Segment::Map { key } => {
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"))
            }
            serde_path_to_error::Segment::Enum { variant } => pointer.push_str(variant),
            serde_path_to_error::Segment::Unknown => pointer.push('?'),
        }
    }
    Err((pointer, error.into_inner()))
}

/// An object key, borrowed from the input when it has no escapes.
pub struct Key<'de>(Cow<'de, str>);

impl<'de> Key<'de> {
    /// The key.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key, owned.
    pub fn into_string(self) -> String {
        self.0.into_owned()
    }

    /// The key, borrowed where it could be.
    pub fn into_cow(self) -> Cow<'de, str> {
        self.0
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key<'de>, D::Error> {
        struct Visitor;
        impl<'de> de::Visitor<'de> for Visitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

/// Reads the value of a known member, refusing a second occurrence.
pub fn fill<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
    slot: &mut Option<T>,
    map: &mut A,
    name: &'static str,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

/// Reads the value of a known member through `W`, which says what it
/// expects in words, refusing a second occurrence.
pub fn fill_as<'de, W: Deserialize<'de> + Into<T>, T, A: MapAccess<'de>>(
    slot: &mut Option<T>,
    map: &mut A,
    name: &'static str,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(name));
    }
    *slot = Some(map.next_value::<W>()?.into());
    Ok(())
}

/// A JSON integer that is not negative, read as `u64`.
pub struct Unsigned(u64);

impl From<Unsigned> for u64 {
    fn from(value: Unsigned) -> u64 {
        value.0
    }
}

impl<'de> Deserialize<'de> for Unsigned {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Unsigned, D::Error> {
        struct Visitor;
        impl de::Visitor<'_> for Visitor {
            type Value = Unsigned;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a non-negative integer")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Unsigned, E> {
                Ok(Unsigned(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Unsigned, E> {
                u64::try_from(v)
                    .map(Unsigned)
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
            }
        }
        deserializer.deserialize_u64(Visitor)
    }
}

/// A JSON integer, read as `i64`.
pub struct Integer(i64);

impl From<Integer> for i64 {
    fn from(value: Integer) -> i64 {
        value.0
    }
}

impl<'de> Deserialize<'de> for Integer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Integer, D::Error> {
        struct Visitor;
        impl de::Visitor<'_> for Visitor {
            type Value = Integer;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer between -2^63 and 2^63-1")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Integer, E> {
                Ok(Integer(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Integer, E> {
                i64::try_from(v)
                    .map(Integer)
                    .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
            }
        }
        deserializer.deserialize_i64(Visitor)
    }
}

/// A string enum's value: a JSON string and nothing else, one of `values`.
pub fn enum_value<'de, D: Deserializer<'de>, T>(
    deserializer: D,
    values: &'static [&'static str],
    parse: fn(&str) -> Option<T>,
) -> Result<T, D::Error> {
    struct Visitor<T> {
        values: &'static [&'static str],
        parse: fn(&str) -> Option<T>,
    }
    impl<T> de::Visitor<'_> for Visitor<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self.values {
                [one] => write!(f, "the string `{one}`"),
                _ => write!(f, "one of the strings `{}`", self.values.join("`, `")),
            }
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            (self.parse)(v).ok_or_else(|| E::unknown_variant(v, self.values))
        }
    }
    deserializer.deserialize_str(Visitor { values, parse })
}

/// A required member's value, or the error naming it.
pub fn required<T, E: de::Error>(slot: Option<T>, name: &'static str) -> Result<T, E> {
    slot.ok_or_else(|| E::missing_field(name))
}

/// Keeps a member the schema does not describe, refusing a duplicate.
pub fn keep<'de, A: MapAccess<'de>>(
    extra: &mut Object,
    key: Key<'de>,
    map: &mut A,
) -> Result<(), A::Error> {
    let value: serde_json::Value = map.next_value()?;
    let key = key.into_string();
    if extra.contains_key(&key) {
        return Err(de::Error::custom(format_args!("duplicate field `{key}`")));
    }
    extra.insert(key, value);
    Ok(())
}

/// Values that hold `f64`s, written so that an integral number comes back
/// as the integer it was read from (`50`, not `50.0`).
pub trait Numbers {
    /// Serialises `self`.
    fn write<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error>;
}

impl Numbers for f64 {
    fn write<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !self.is_finite() {
            // serde_json would write `null`, which no schema number accepts.
            return Err(serde::ser::Error::custom(format_args!(
                "`{self}` is not a JSON number"
            )));
        }
        match integral(*self) {
            Some(n) => serializer.serialize_i64(n),
            None => serializer.serialize_f64(*self),
        }
    }
}

/// The integer an integral `f64` holds, if it is one (`-0.0` is not: it
/// stays a float). Every integral `f64` below 2^63 in magnitude converts
/// exactly; integers beyond 2^53 were already rounded when read.
pub fn integral(x: f64) -> Option<i64> {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    (x.fract() == 0.0 && x.abs() < LIMIT && !(x == 0.0 && x.is_sign_negative())).then_some(x as i64)
}

impl<T: Numbers> Numbers for Option<T> {
    fn write<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Some(value) => value.write(serializer),
            None => serializer.serialize_none(),
        }
    }
}

impl<T: Numbers> Numbers for Vec<T> {
    fn write<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_items(serializer, self.iter().map(AsNumbers))
    }
}

/// Serialises a slice, naming the item in an error from inside it: the
/// message starts with the JSON Pointer of the failing value, index first.
pub struct Items<'a, T>(pub &'a [T]);

impl<T: Serialize> Serialize for Items<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_items(serializer, self.0.iter())
    }
}

/// Serialises a sequence as [`Items`] does.
fn serialize_items<S: Serializer, T: Serialize>(
    serializer: S,
    items: impl ExactSizeIterator<Item = T>,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = serializer.serialize_seq(Some(items.len()))?;
    for (index, item) in items.enumerate() {
        seq.serialize_element(&item)
            .map_err(|error| at(&index.to_string(), error))?;
    }
    seq.end()
}

/// Serialises a value holding `f64`s through [`Numbers`].
pub struct AsNumbers<'a, T>(pub &'a T);

impl<T: Numbers> Serialize for AsNumbers<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.write(serializer)
    }
}

/// Writes one member, naming it in an error from inside its value: the
/// message starts with the JSON Pointer of the failing value.
pub fn entry<M: serde::ser::SerializeMap, T: Serialize + ?Sized>(
    map: &mut M,
    key: &str,
    value: &T,
) -> Result<(), M::Error> {
    map.serialize_entry(key, value)
        .map_err(|error| at(key, error))
}

fn at<E: serde::ser::Error>(key: &str, error: E) -> E {
    let mut pointer = String::new();
    escape_into(&mut pointer, key);
    let text = error.to_string();
    if text.starts_with('/') {
        E::custom(format_args!("{pointer}{text}"))
    } else {
        E::custom(format_args!("{pointer}: {text}"))
    }
}

/// Refuses a free-form member named like one of the struct's own fields:
/// writing both would repeat the name, which no reader accepts.
pub fn unclaimed<'a, E: serde::ser::Error>(
    keys: impl Iterator<Item = &'a String>,
    fields: &[&str],
) -> Result<(), E> {
    for key in keys {
        if fields.contains(&key.as_str()) {
            return Err(at(
                key,
                E::custom(format_args!(
                    "`extra` holds `{key}`, which the schema describes; set the field instead"
                )),
            ));
        }
    }
    Ok(())
}

/// One place where a value breaks its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON Pointer, from the event (or payload) root, of the offending value.
    pub pointer: String,
    /// The rule it breaks.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pointer = if self.pointer.is_empty() {
            "(root)"
        } else {
            &self.pointer
        };
        write!(f, "{pointer}: {}", self.message)
    }
}

/// Every violation found by a `validate()`: the schema keywords' in
/// document order, then the capture rule's, by capture level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violations(pub Vec<Violation>);

impl Violations {
    /// `Ok` when there are none.
    pub fn into_result(self) -> Result<(), Violations> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(self)
        }
    }
}

impl fmt::Display for Violations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} violation(s)", self.0.len())?;
        for violation in &self.0 {
            write!(f, "\n  {violation}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Violations {}

/// Collects violations while a value is walked; the pointer is built only
/// when a violation is recorded.
#[derive(Default)]
pub struct Validator {
    path: Vec<Segment>,
    found: Vec<Violation>,
}

enum Segment {
    Key(&'static str),
    Index(usize),
}

impl Validator {
    /// A validator at the root.
    pub fn new() -> Validator {
        Validator {
            path: Vec::new(),
            found: Vec::new(),
        }
    }

    /// Descends into a member.
    pub fn key(&mut self, key: &'static str) {
        self.path.push(Segment::Key(key));
    }

    /// Descends into an array item.
    pub fn index(&mut self, index: usize) {
        self.path.push(Segment::Index(index));
    }

    /// Goes back up one level.
    pub fn up(&mut self) {
        self.path.pop();
    }

    /// Records a violation at the current place, or at its member `key`.
    pub fn report(&mut self, key: Option<&str>, message: String) {
        let mut pointer = String::new();
        for segment in &self.path {
            match segment {
                Segment::Key(k) => escape_into(&mut pointer, k),
                Segment::Index(i) => pointer.push_str(&format!("/{i}")),
            }
        }
        if let Some(key) = key {
            escape_into(&mut pointer, key);
        }
        self.found.push(Violation { pointer, message });
    }

    /// Records member `key`, if `present`, as being above the event's
    /// capture level.
    pub fn capture_member<L: fmt::Display>(
        &mut self,
        present: bool,
        key: &str,
        member: L,
        event: L,
    ) {
        if present {
            self.report(
                Some(key),
                format!("capture `{member}` member present in a `{event}` event"),
            );
        }
    }

    /// Records the current array item as being above the event's capture level.
    #[allow(
        dead_code,
        reason = "called only for registries whose arrays carry a capture level per item \
                  (the AEP registry has none; the oddities registry does)"
    )]
    pub fn capture_item<L: fmt::Display>(&mut self, member: L, event: L) {
        self.report(
            None,
            format!("capture `{member}` item present in a `{event}` event"),
        );
    }

    /// Records a violation at an absolute pointer.
    pub fn report_at(&mut self, pointer: String, message: String) {
        self.found.push(Violation { pointer, message });
    }

    /// Records a violation of the current string value, if it breaks a rule.
    /// A `pattern` comes with its source and, when the schema describes
    /// the value, that description, which a refusal says instead of the
    /// regex.
    pub fn string(
        &mut self,
        value: &str,
        min_length: Option<usize>,
        pattern: Option<(&Regex, &str, Option<&str>)>,
        format: Option<&str>,
    ) {
        if let Some(min) = min_length {
            // A character takes one to four bytes: the length in bytes
            // settles most cases without counting.
            let short = value.len() < min || (value.len() < 4 * min && value.chars().count() < min);
            if short {
                self.report(None, format!("shorter than {min} character(s)"));
            }
        }
        if let Some((regex, source, meaning)) = pattern {
            if !regex.is_match(value) {
                let message = match meaning {
                    Some(meaning) => format!("does not match the pattern: {meaning}"),
                    None => format!("does not match the pattern `{source}`"),
                };
                self.report(None, message);
            }
        }
        match format {
            Some("date-time") if !is_date_time(value) => {
                self.report(None, "not an RFC 3339 date-time".to_owned())
            }
            Some("uri") if !is_uri(value) => {
                self.report(None, "not an absolute URI (RFC 3986)".to_owned())
            }
            _ => {}
        }
    }

    /// Records a violation of the current number, if it is out of bounds.
    #[allow(
        dead_code,
        reason = "called only for registries with numeric bounds \
                  (the AEP registry has some; the oddities registry has none)"
    )]
    pub fn number(&mut self, value: f64, minimum: Option<f64>, maximum: Option<f64>) {
        if let Some(min) = minimum {
            if value < min {
                self.report(None, format!("less than the minimum {min}"));
            }
        }
        if let Some(max) = maximum {
            if value > max {
                self.report(None, format!("greater than the maximum {max}"));
            }
        }
    }

    /// The violations found.
    pub fn finish(self) -> Violations {
        Violations(self.found)
    }
}

/// A member name as one JSON Pointer reference token (RFC 6901 §3): `~`
/// becomes `~0` and `/` becomes `~1`. Every pointer built from keys goes
/// through this.
pub fn pointer_token(key: &str) -> std::borrow::Cow<'_, str> {
    if key.contains(['~', '/']) {
        std::borrow::Cow::Owned(key.replace('~', "~0").replace('/', "~1"))
    } else {
        std::borrow::Cow::Borrowed(key)
    }
}

fn escape_into(pointer: &mut String, key: &str) {
    pointer.push('/');
    pointer.push_str(&pointer_token(key));
}

pub use regex::Regex;

/// RFC 3339 `date-time` (the JSON Schema `format`): `T` and `Z` in either
/// case, a leap second only where it lands on 23:59 UTC.
pub fn is_date_time(value: &str) -> bool {
    let Some(split) = value.find(['T', 't']) else {
        return false;
    };
    let (date, time) = (&value[..split], &value[split + 1..]);
    is_full_date(date) && is_full_time(time)
}

fn digits(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn is_full_date(date: &str) -> bool {
    let b = date.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) =
        (digits(&date[..4]), digits(&date[5..7]), digits(&date[8..]))
    else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

fn is_full_time(time: &str) -> bool {
    let b = time.as_bytes();
    if b.len() < 9 || b[2] != b':' || b[5] != b':' || !time.is_char_boundary(8) {
        return false;
    }
    let (Some(hour), Some(minute), Some(second)) =
        (digits(&time[..2]), digits(&time[3..5]), digits(&time[6..8]))
    else {
        return false;
    };
    if hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    let mut rest = &time[8..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let end = fraction
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(fraction.len());
        if end == 0 {
            return false;
        }
        rest = &fraction[end..];
    }
    // Minutes east of UTC.
    let offset: i64 = match rest.as_bytes().first() {
        Some(b'Z' | b'z') if rest.len() == 1 => 0,
        Some(sign @ (b'+' | b'-')) if rest.len() == 6 && rest.as_bytes()[3] == b':' => {
            let (Some(h), Some(m)) = (digits(&rest[1..3]), digits(&rest[4..6])) else {
                return false;
            };
            if h > 23 || m > 59 {
                return false;
            }
            let minutes = i64::from(h * 60 + m);
            if *sign == b'+' {
                minutes
            } else {
                -minutes
            }
        }
        _ => return false,
    };
    if second == 60 {
        let utc = (i64::from(hour * 60 + minute) - offset).rem_euclid(24 * 60);
        return utc == 23 * 60 + 59;
    }
    true
}

/// RFC 3986 `URI` (the JSON Schema `uri` format): a scheme, then a
/// hierarchical part, query and fragment made of the allowed characters.
pub fn is_uri(value: &str) -> bool {
    let Some((scheme, rest)) = value.split_once(':') else {
        return false;
    };
    let mut scheme_chars = scheme.chars();
    if !scheme_chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        || !scheme_chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return false;
    }
    let (rest, fragment) = match rest.split_once('#') {
        Some((rest, fragment)) => (rest, Some(fragment)),
        None => (rest, None),
    };
    let (hier, query) = match rest.split_once('?') {
        Some((hier, query)) => (hier, Some(query)),
        None => (rest, None),
    };
    let path = match hier.strip_prefix("//") {
        Some(after) => {
            let end = after.find('/').unwrap_or(after.len());
            if !is_authority(&after[..end]) {
                return false;
            }
            &after[end..]
        }
        None => hier,
    };
    const QUERY: &[char] = &[':', '@', '/', '?'];
    chars_ok(path, &[':', '@', '/'])
        && query.is_none_or(|q| chars_ok(q, QUERY))
        && fragment.is_none_or(|f| chars_ok(f, QUERY))
}

fn is_authority(authority: &str) -> bool {
    let (userinfo, host_port) = match authority.rsplit_once('@') {
        Some((userinfo, host_port)) => (Some(userinfo), host_port),
        None => (None, authority),
    };
    if userinfo.is_some_and(|u| !chars_ok(u, &[':'])) {
        return false;
    }
    let (host_ok, port) = match host_port.strip_prefix('[') {
        Some(literal) => {
            let Some((inside, after)) = literal.split_once(']') else {
                return false;
            };
            let port = match after {
                "" => None,
                _ => match after.strip_prefix(':') {
                    Some(port) => Some(port),
                    None => return false,
                },
            };
            (is_ip_literal(inside), port)
        }
        None => match host_port.rsplit_once(':') {
            Some((host, port)) => (chars_ok(host, &[]), Some(port)),
            None => (chars_ok(host_port, &[]), None),
        },
    };
    host_ok && port.is_none_or(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

fn is_ip_literal(inside: &str) -> bool {
    if let Some(future) = inside.strip_prefix(['v', 'V']) {
        let Some((version, rest)) = future.split_once('.') else {
            return false;
        };
        return !version.is_empty()
            && version.bytes().all(|b| b.is_ascii_hexdigit())
            && !rest.is_empty()
            && rest
                .chars()
                .all(|c| is_unreserved(c) || is_sub_delim(c) || c == ':');
    }
    inside.parse::<std::net::Ipv6Addr>().is_ok()
}

fn is_unreserved(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~')
}

fn is_sub_delim(c: char) -> bool {
    matches!(
        c,
        '!' | '$' | '&' | '\'' | '(' | ')' | '*' | '+' | ',' | ';' | '='
    )
}

/// Whether `text` is only unreserved characters, sub-delims,
/// percent-encodings and the `extra` characters.
fn chars_ok(text: &str, extra: &[char]) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        if c == '%' {
            if i + 2 >= bytes.len()
                || !bytes[i + 1].is_ascii_hexdigit()
                || !bytes[i + 2].is_ascii_hexdigit()
            {
                return false;
            }
            i += 3;
        } else if c.is_ascii() && (is_unreserved(c) || is_sub_delim(c) || extra.contains(&c)) {
            i += 1;
        } else {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_3339_date_times_accepted() {
        for ok in [
            // RFC 3339 §5.8's examples.
            "1985-04-12T23:20:50.52Z",
            "1996-12-19T16:39:57-08:00",
            "1990-12-31T23:59:60Z",
            "1990-12-31T15:59:60-08:00",
            "1937-01-01T12:00:27.87+00:20",
            // `T` and `Z` in either case (§5.6, NOTE).
            "2026-12-06t10:00:00z",
            "2026-12-06T10:00:00z",
            "2026-12-06t10:00:00Z",
            // Fractions of one digit and of many.
            "2026-12-06T10:00:00.1Z",
            "2026-12-06T10:00:00.123456789+05:30",
            // The unknown local offset (§4.3) and the extreme offsets.
            "2026-12-06T10:00:00-00:00",
            "2026-12-06T10:00:00+23:59",
            "2026-12-06T10:00:00-23:59",
            // February 29th of leap years, the 400-year rule included.
            "2024-02-29T00:00:00Z",
            "2000-02-29T00:00:00Z",
            // The last day of each month length.
            "2026-01-31T00:00:00Z",
            "2026-04-30T00:00:00Z",
            "2026-02-28T23:59:59Z",
            // A leap second is 23:59:60 in UTC, wherever the offset puts it.
            "2016-12-31T23:59:60Z",
            "2017-01-01T00:59:60+01:00",
            "2016-12-31T23:59:60.5Z",
            "0000-01-01T00:00:00Z",
        ] {
            assert!(is_date_time(ok), "refused {ok}");
        }
    }

    #[test]
    fn rfc_3339_date_times_refused() {
        for bad in [
            "",
            "T",
            // A date or a time alone.
            "2026-12-06",
            "10:00:00Z",
            "2026-12-06T",
            // No time zone: a local time is not a date-time.
            "2026-12-06T10:00:00",
            "2026-12-06T10:00:00.5",
            // The separator is `T` (a space is allowed by the NOTE, not
            // by the grammar).
            "2026-12-06 10:00:00Z",
            "2026-12-06_10:00:00Z",
            // Out-of-range date fields.
            "2026-13-06T10:00:00Z",
            "2026-00-06T10:00:00Z",
            "2026-12-32T10:00:00Z",
            "2026-12-00T10:00:00Z",
            "2026-02-30T10:00:00Z",
            "2026-02-29T10:00:00Z",
            "2100-02-29T10:00:00Z",
            "1900-02-29T10:00:00Z",
            "2026-04-31T10:00:00Z",
            "2026-06-31T10:00:00Z",
            // Out-of-range time fields.
            "2026-12-06T24:00:00Z",
            "2026-12-06T10:60:00Z",
            "2026-12-06T10:00:61Z",
            // A leap second anywhere but 23:59 UTC.
            "2026-12-06T12:59:60Z",
            "2016-12-31T23:58:60Z",
            "2016-12-31T22:59:60Z",
            "2016-12-31T23:59:60+01:00",
            // Malformed fields.
            "26-12-06T10:00:00Z",
            "02026-12-06T10:00:00Z",
            "+2026-12-06T10:00:00Z",
            "2026-1-06T10:00:00Z",
            "2026/12/06T10:00:00Z",
            "2026-12-06T1:00:00Z",
            "2026-12-06T10:00Z",
            "2026-12-06T10-00-00Z",
            "2026-12-06T10:00:00.Z",
            "2026-12-06T10:00:00,5Z",
            // Malformed offsets.
            "2026-12-06T10:00:00+05",
            "2026-12-06T10:00:00+0530",
            "2026-12-06T10:00:00+5:30",
            "2026-12-06T10:00:00+24:00",
            "2026-12-06T10:00:00+05:60",
            "2026-12-06T10:00:00 +05:30",
            "2026-12-06T10:00:00ZZ",
            "2026-12-06T10:00:00Z ",
            "2026-12-06T10:00:00UTC",
            // Non-ASCII where a digit goes, on and off char boundaries.
            "2026-12-06T10:00:0\u{e9}Z",
            "2026-12-\u{e9}T10:00:00Z",
            "2026-12-06T10:00:00+0\u{e9}:00",
            "\u{661}\u{669}\u{669}\u{660}-12-06T10:00:00Z",
        ] {
            assert!(!is_date_time(bad), "accepted {bad}");
        }
    }

    #[test]
    fn rfc_3986_uris_accepted() {
        for ok in [
            // RFC 3986 §1.1.2's examples.
            "ftp://ftp.is.co.za/rfc/rfc1808.txt",
            "http://www.ietf.org/rfc/rfc2396.txt",
            "ldap://[2001:db8::7]/c=GB?objectClass?one",
            "mailto:John.Doe@example.com",
            "news:comp.infosystems.www.servers.unix",
            "tel:+1-816-555-1212",
            "telnet://192.0.2.16:80/",
            "urn:oasis:names:specification:docbook:dtd:xml:4.1.2",
            // §3's example, every component present.
            "foo://example.com:8042/over/there?name=ferret#nose",
            "urn:aep:aep-cli",
            "http://user:pw@[::1]:80/",
            "http://[::ffff:192.0.2.1]/",
            "http://[v1.fe80::a+en1]/",
            "file:///tmp/a%20b",
            "http://example.com/%7e%7E",
            // An empty port and an empty path are allowed.
            "http://example.com:/",
            "http://example.com",
            "a:",
            "x-y.z+w:rest",
            "HTTP://EXAMPLE.COM/",
            "http://-.~_!$&'()*+,;=:%40:80%2f::::::@example.com",
            "http://example.com/?q=a/b?c#f/g?h",
        ] {
            assert!(is_uri(ok), "refused {ok}");
        }
    }

    #[test]
    fn rfc_3986_uris_refused() {
        for bad in [
            "",
            // No scheme: relative references are not URIs.
            "no-scheme",
            "example.com",
            "/an/absolute/path",
            "//example.com/path",
            "relative/path:with-colon",
            "\\\\WINDOWS\\fileshare",
            // Bad schemes.
            ":empty-scheme",
            "1http://example.com",
            "+http://example.com",
            "bar,baz:foo",
            "h\u{e9}:x",
            // Bad percent-encodings.
            "urn:bad%",
            "urn:bad%2",
            "urn:bad%zz",
            "urn:bad%g0",
            "urn:bad%%20",
            "http://example.com/?q=%2",
            "http://example.com/#%x1",
            "http://ex%2xmple.com/",
            // Spaces, anywhere.
            "http://exa mple.com/",
            "http:// example.com/",
            "http://example.com/a b",
            "http://example.com/?a b",
            "http://example.com/#a b",
            " http://example.com/",
            "http://example.com/ ",
            // Characters outside the grammar.
            "http://example.com/<a>",
            "http://example.com/a\"b",
            "http://example.com/[x]",
            "http://example.com/a#b#c",
            "http://example.com/\u{e9}",
            // Bad authorities.
            "http://[::1/",
            "http://[not-an-ip]/",
            "http://[::1]x/",
            "http://[v1]/",
            "http://[vz.x]/",
            "http://example.com:80a/",
            "http://example.com:80:90/",
            "http://us[er@example.com/",
        ] {
            assert!(!is_uri(bad), "accepted {bad}");
        }
    }

    #[test]
    fn integral_numbers() {
        assert_eq!(integral(50.0), Some(50));
        assert_eq!(integral(-7.0), Some(-7));
        assert_eq!(integral(0.0), Some(0));
        assert_eq!(integral(4_611_686_018_427_387_904.0), Some(1 << 62));
        // Not integers, or not an `i64`'s.
        assert_eq!(integral(-0.0), None);
        assert_eq!(integral(0.5), None);
        assert_eq!(integral(9_223_372_036_854_775_808.0), None);
        assert_eq!(integral(-9_223_372_036_854_775_808.0), None);
        assert_eq!(integral(f64::NAN), None);
        assert_eq!(integral(f64::INFINITY), None);
    }

    #[test]
    fn numbers_are_written_as_read() {
        let written = serde_json::to_string(&AsNumbers(&vec![50.0, 0.5, -0.0, -3.0])).unwrap();
        assert_eq!(written, "[50,0.5,-0.0,-3]");
        let written = serde_json::to_string(&AsNumbers(&Some(2.0))).unwrap();
        assert_eq!(written, "2");
        // A non-finite number is refused, named by its index.
        let error = serde_json::to_string(&AsNumbers(&vec![1.0, f64::NAN])).unwrap_err();
        assert_eq!(error.to_string(), "/1: `NaN` is not a JSON number");
    }

    #[test]
    fn serialisation_errors_name_their_place() {
        struct Member<'a>(&'a str, Vec<f64>);
        impl Serialize for Member<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(Some(1))?;
                entry(&mut map, self.0, &Items(&[AsNumbers(&self.1)]))?;
                map.end()
            }
        }
        let error = serde_json::to_string(&Member("a/b~c", vec![f64::INFINITY])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "/a~1b~0c/0/0: `inf` is not a JSON number"
        );

        let extra: Object = serde_json::from_str(r#"{"x":1,"a/b":2}"#).unwrap();
        let error = unclaimed::<serde_json::Error>(extra.keys(), &["a/b", "c"]).unwrap_err();
        assert!(
            error.to_string().starts_with("/a~1b: `extra` holds `a/b`"),
            "{error}"
        );
        assert!(unclaimed::<serde_json::Error>(extra.keys(), &["c"]).is_ok());
    }

    #[test]
    fn pointer_tokens_escape_tilde_before_slash() {
        assert_eq!(pointer_token("plain"), "plain");
        assert!(matches!(pointer_token("plain"), Cow::Borrowed(_)));
        assert_eq!(pointer_token("a/b"), "a~1b");
        assert_eq!(pointer_token("a~b"), "a~0b");
        // `~1` in a name is not a slash: it becomes `~01`.
        assert_eq!(pointer_token("~1"), "~01");
        assert_eq!(pointer_token("/~"), "~1~0");
    }

    #[test]
    fn decoding_failures_are_located() {
        type Shape = std::collections::BTreeMap<String, Vec<u8>>;
        let error = decode::<Shape>("x.y", r#"{"ok":[1],"a/b":[1,"two"]}"#).unwrap_err();
        assert_eq!(error.pointer(), Some("/data/a~1b/1"));
        let Error::Payload {
            event_type,
            message,
            ..
        } = &error
        else {
            panic!("{error:?}");
        };
        assert_eq!(event_type, "x.y");
        assert!(!message.contains("line"), "{message}");

        let error = decode_event::<Shape>(br#"{"a":[1, -1]}"#).unwrap_err();
        assert_eq!(error.pointer(), Some("/a/1"));
        // A one-line event's position is its column.
        assert!(error.to_string().ends_with("at column 11"), "{error}");
        // What follows a whole value is refused at the root.
        let error = decode_event_str::<Shape>(r#"{"a":[]} x"#).unwrap_err();
        assert_eq!(error.pointer(), Some(""));
        assert!(decode_event_str::<Shape>(r#"{"a":[1,2]}"#).is_ok());
    }

    #[test]
    fn a_byte_order_mark_is_named() {
        let mut line = BOM.to_vec();
        line.extend_from_slice(b"{}");
        for error in [
            decode_event::<Object>(&line).unwrap_err(),
            decode_event_str::<Object>(std::str::from_utf8(&line).unwrap()).unwrap_err(),
        ] {
            assert!(error.to_string().contains("byte order mark"), "{error}");
        }
        assert!(decode_event::<Object>(b"{}").is_ok());
    }

    #[test]
    fn data_is_an_object_kept_byte_for_byte() {
        let text = r#"{ "b" : 1,"a":[2.50] }"#;
        let data = Data::from_json(text).unwrap();
        assert_eq!(data.get(), text);
        assert_eq!(serde_json::to_string(&data).unwrap(), text);
        assert_eq!(Data::empty().get(), "{}");
        for bad in ["[]", "1", "\"{}\"", "null"] {
            let error = Data::from_json(bad).unwrap_err();
            assert!(error.to_string().contains("must be a JSON object"), "{bad}");
            assert!(serde_json::from_str::<Data>(bad).is_err(), "{bad}");
        }
        let error = Data::from_serialize(&[1]).unwrap_err();
        assert!(
            error.to_string().contains("must be a JSON object"),
            "{error}"
        );
    }

    #[test]
    fn integers_keep_to_their_range() {
        let unsigned = |text: &str| serde_json::from_str::<Unsigned>(text).map(u64::from);
        assert_eq!(unsigned("18446744073709551615").unwrap(), u64::MAX);
        assert_eq!(unsigned("0").unwrap(), 0);
        assert!(unsigned("-1").is_err());
        assert!(unsigned("1.5").is_err());
        let integer = |text: &str| serde_json::from_str::<Integer>(text).map(i64::from);
        assert_eq!(integer("-9223372036854775808").unwrap(), i64::MIN);
        assert_eq!(integer("9223372036854775807").unwrap(), i64::MAX);
        assert!(integer("9223372036854775808").is_err());
        assert!(integer("\"1\"").is_err());
    }

    #[test]
    fn validator_reports() {
        let regex = Regex::new("^[a-z]+$").unwrap();
        let mut v = Validator::new();
        v.key("a/b");
        v.index(2);
        // Lengths count characters, not bytes.
        v.string("\u{e9}\u{e9}", Some(3), None, None);
        v.string("\u{e9}\u{e9}\u{e9}", Some(3), None, None);
        v.string("\u{1f600}", Some(2), None, None);
        v.string("ab", Some(3), None, None);
        v.string("A", None, Some((&regex, "^[a-z]+$", None)), None);
        v.string(
            "A",
            None,
            Some((&regex, "^[a-z]+$", Some("lowercase"))),
            None,
        );
        v.string("ok", None, Some((&regex, "^[a-z]+$", None)), None);
        v.string("2026-12-06", None, None, Some("date-time"));
        v.string("no-scheme", None, None, Some("uri"));
        v.string("anything", None, None, Some("unknown-format"));
        v.up();
        v.number(5.0, Some(1.0), Some(5.0));
        v.number(0.5, Some(1.0), None);
        v.number(5.5, None, Some(5.0));
        v.report(Some("c~d"), "here".to_owned());
        v.up();
        v.capture_member(true, "m", "trace", "metadata");
        v.capture_member(false, "n", "trace", "metadata");
        v.capture_item("trace", "metadata");
        v.report_at("/abs".to_owned(), "there".to_owned());
        let found: Vec<(String, String)> = v
            .finish()
            .0
            .into_iter()
            .map(|v| (v.pointer, v.message))
            .collect();
        let at = |p: &str, m: &str| (p.to_owned(), m.to_owned());
        assert_eq!(
            found,
            [
                at("/a~1b/2", "shorter than 3 character(s)"),
                at("/a~1b/2", "shorter than 2 character(s)"),
                at("/a~1b/2", "shorter than 3 character(s)"),
                at("/a~1b/2", "does not match the pattern `^[a-z]+$`"),
                at("/a~1b/2", "does not match the pattern: lowercase"),
                at("/a~1b/2", "not an RFC 3339 date-time"),
                at("/a~1b/2", "not an absolute URI (RFC 3986)"),
                at("/a~1b", "less than the minimum 1"),
                at("/a~1b", "greater than the maximum 5"),
                at("/a~1b/c~0d", "here"),
                at("/m", "capture `trace` member present in a `metadata` event"),
                at("", "capture `trace` item present in a `metadata` event"),
                at("/abs", "there"),
            ]
        );
    }

    #[test]
    fn violations_display_and_result() {
        assert_eq!(Violations(Vec::new()).into_result(), Ok(()));
        let violations = Violations(vec![
            Violation {
                pointer: String::new(),
                message: "bad".to_owned(),
            },
            Violation {
                pointer: "/a".to_owned(),
                message: "worse".to_owned(),
            },
        ]);
        assert_eq!(
            violations.to_string(),
            "2 violation(s)\n  (root): bad\n  /a: worse"
        );
        assert!(violations.into_result().is_err());
    }
}
