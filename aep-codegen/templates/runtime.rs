//! Support code shared by the generated modules: the error type, the raw
//! payload slot, and the decoding helpers the generated `Deserialize`
//! impls call.

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
            Error::Payload { pointer, .. } => Some(pointer),
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
            } => write!(f, "invalid `{event_type}` payload at `{pointer}`: {message}"),
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
    /// Data holding `object`.
    pub fn from_object(object: &Object) -> Data {
        Data::from_serialize(object).expect("a JSON object always serialises")
    }

    /// Data holding a serialised value, which must be a JSON object.
    pub fn from_serialize<T: Serialize + ?Sized>(value: &T) -> Result<Data, serde_json::Error> {
        let raw = serde_json::value::to_raw_value(value)?;
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

    /// The data as a free-form object.
    pub fn to_object(&self) -> Object {
        serde_json::from_str(self.get()).expect("data is a JSON object")
    }
}

impl PartialEq for Data {
    fn eq(&self, other: &Data) -> bool {
        self.get() == other.get()
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

/// Decodes `text` (an event's `data`) as `T`; on failure, decodes again
/// tracking the path, so the error can say where (failures are rare, so
/// the common case pays nothing for it).
pub fn decode<T: DeserializeOwned>(event_type: &str, text: &str) -> Result<T, Error> {
    if let Ok(value) = serde_json::from_str(text) {
        return Ok(value);
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let error = match serde_path_to_error::deserialize::<_, T>(&mut deserializer) {
        Ok(value) => return Ok(value),
        Err(error) => error,
    };
    let mut pointer = String::from("/data");
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
    let inner = error.into_inner();
    let text = inner.to_string();
    let position = format!(" at line {} column {}", inner.line(), inner.column());
    Err(Error::Payload {
        event_type: event_type.to_owned(),
        pointer,
        message: text.strip_suffix(&position).unwrap_or(&text).to_owned(),
    })
}

/// An object key, borrowed from the input when it has no escapes.
pub struct Key<'de>(Cow<'de, str>);

impl Key<'_> {
    /// The key.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key, owned.
    pub fn into_string(self) -> String {
        self.0.into_owned()
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

/// A required member's value, or the error naming it.
pub fn required<T, E: de::Error>(slot: Option<T>, name: &'static str) -> Result<T, E> {
    slot.ok_or_else(|| E::missing_field(name))
}

/// Keeps a member the schema does not describe, refusing a duplicate.
pub fn keep<'de, A: MapAccess<'de>>(extra: &mut Object, key: Key<'de>, map: &mut A) -> Result<(), A::Error> {
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
        // Below 2^53 every integral f64 is exactly an i64.
        const EXACT: f64 = 9_007_199_254_740_992.0;
        if self.fract() == 0.0 && self.abs() < EXACT && !(*self == 0.0 && self.is_sign_negative()) {
            serializer.serialize_i64(*self as i64)
        } else {
            serializer.serialize_f64(*self)
        }
    }
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
        serializer.collect_seq(self.iter().map(AsNumbers))
    }
}

struct AsNumbers<'a, T>(&'a T);

impl<T: Numbers> Serialize for AsNumbers<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.write(serializer)
    }
}

/// `serialize_with` target for members holding numbers.
pub fn numbers<T: Numbers, S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
    value.write(serializer)
}
