//! Compact fingerprints: what dedupe remembers instead of events.
//!
//! Two hashes, both SipHash-1-3 (the standard library's default hasher,
//! with fixed keys, so results are stable within a build; they never leave
//! the process):
//!
//! - a [`Key`] of 128 bits names a pair of strings such as `(source, id)`;
//!   two different pairs share a key with probability about 2⁻¹²⁸ per pair
//!   of pairs;
//! - a [`Canonical`] fingerprint of 64 bits names an event's canonical JSON
//!   form: members in any order, numbers compared by value (`1`, `1.0` and
//!   `1e0` are one number; `-0` is `0`). Two events under one key are
//!   compared only with each other, so mistaking a different event for a
//!   redelivery has probability about 2⁻⁶⁴ per repeat.
//!
//! A [`Seen`] set holds one `(Key, Canonical)` entry per distinct
//! `(source, id)`: 24 bytes plus the hash table's control byte, at a load
//! factor between 7/16 and 7/8, so 28 to 57 bytes per seen id.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, DefaultHasher, Hash, Hasher};

use serde_json::Value;

/// A 128-bit name for a pair of strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key(u64, u64);

impl Hash for Key {
    // The key is a hash already: hand its first half to the table as is.
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0);
    }
}

/// A 64-bit fingerprint of a canonical JSON form.
pub(crate) type Canonical = u64;

/// The key of the pair `(a, b)`.
pub(crate) fn key(a: &str, b: &str) -> Key {
    let half = |seed: u8| {
        let mut h = DefaultHasher::new();
        seed.hash(&mut h);
        // `str::hash` is length-delimited, so ("ab", "c") ≠ ("a", "bc").
        a.hash(&mut h);
        b.hash(&mut h);
        h.finish()
    };
    Key(half(1), half(2))
}

/// The fingerprint of `value`'s canonical form.
pub(crate) fn canonical(value: &Value) -> Canonical {
    let mut h = DefaultHasher::new();
    feed(value, &mut h);
    h.finish()
}

/// The fingerprint of an event's canonical form.
pub(crate) fn canonical_event(event: &aep_types::Event) -> Canonical {
    match serde_json::to_value(event) {
        Ok(value) => canonical(&value),
        // A value serde_json cannot hold (nesting beyond its limit in
        // `data`): fall back to the exact text, which still tells a
        // byte-identical redelivery from anything else.
        Err(_) => {
            let mut h = DefaultHasher::new();
            0xffu8.hash(&mut h);
            serde_json::to_string(event)
                .unwrap_or_default()
                .hash(&mut h);
            h.finish()
        }
    }
}

fn feed(value: &Value, h: &mut DefaultHasher) {
    match value {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => {
            1u8.hash(h);
            b.hash(h);
        }
        Value::Number(n) => {
            // Integers exactly; floats by value, an integral float as the
            // integer it equals.
            if let Some(i) = n.as_i64() {
                2u8.hash(h);
                i128::from(i).hash(h);
            } else if let Some(u) = n.as_u64() {
                2u8.hash(h);
                i128::from(u).hash(h);
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if f.fract() == 0.0 && f.abs() < 1.7e38 {
                    2u8.hash(h);
                    (f as i128).hash(h);
                } else {
                    3u8.hash(h);
                    f.to_bits().hash(h);
                }
            }
        }
        Value::String(s) => {
            4u8.hash(h);
            s.hash(h);
        }
        Value::Array(items) => {
            5u8.hash(h);
            items.len().hash(h);
            for item in items {
                feed(item, h);
            }
        }
        Value::Object(map) => {
            6u8.hash(h);
            map.len().hash(h);
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            for (name, member) in members {
                name.hash(h);
                feed(member, h);
            }
        }
    }
}

/// What a dedupe set says about an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// The first event under its key.
    New,
    /// The same event again: a redelivery.
    Repeat,
    /// A different event under a key already seen.
    Collision,
}

/// A hasher for keys that are hashes already.
#[derive(Default)]
pub(crate) struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only `Key`s are hashed here, and they write one `u64`.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A map from [`Key`]s that does not hash them again.
pub(crate) type KeyMap<V> = HashMap<Key, V, BuildHasherDefault<PassThrough>>;

/// The dedupe memory: one canonical fingerprint per key.
#[derive(Debug, Default)]
pub(crate) struct SeenSet {
    first: KeyMap<Canonical>,
}

impl SeenSet {
    /// Records `fingerprint` under `key` if the key is new, and says what
    /// the event is.
    pub(crate) fn check(&mut self, key: Key, fingerprint: Canonical) -> Seen {
        match self.first.entry(key) {
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(fingerprint);
                Seen::New
            }
            std::collections::hash_map::Entry::Occupied(first) if *first.get() == fingerprint => {
                Seen::Repeat
            }
            std::collections::hash_map::Entry::Occupied(_) => Seen::Collision,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn member_order_does_not_matter() {
        assert_eq!(
            canonical(&json!({"a": 1, "b": {"c": [1, 2], "d": null}})),
            canonical(&json!({"b": {"d": null, "c": [1, 2]}, "a": 1}))
        );
    }

    #[test]
    fn numbers_compare_by_value() {
        let one: Value = serde_json::from_str("1").unwrap();
        let one_float: Value = serde_json::from_str("1.0").unwrap();
        let one_exp: Value = serde_json::from_str("1e0").unwrap();
        let zero: Value = serde_json::from_str("0").unwrap();
        let minus_zero: Value = serde_json::from_str("-0.0").unwrap();
        assert_eq!(canonical(&one), canonical(&one_float));
        assert_eq!(canonical(&one), canonical(&one_exp));
        assert_eq!(canonical(&zero), canonical(&minus_zero));
        assert_ne!(canonical(&json!(1.5)), canonical(&json!(1)));
    }

    #[test]
    fn different_values_differ() {
        let values = [
            json!(null),
            json!(false),
            json!(0),
            json!(""),
            json!("0"),
            json!([]),
            json!({}),
            json!([[]]),
            json!({"a": ""}),
            json!({"": "a"}),
            json!(["a", "b"]),
            json!(["ab"]),
        ];
        for (i, a) in values.iter().enumerate() {
            for b in &values[i + 1..] {
                assert_ne!(canonical(a), canonical(b), "{a} vs {b}");
            }
        }
    }

    #[test]
    fn keys_are_length_delimited() {
        assert_ne!(key("ab", "c"), key("a", "bc"));
        assert_eq!(key("a", "b"), key("a", "b"));
    }

    #[test]
    fn seen_set_tells_repeats_from_collisions() {
        let mut seen = SeenSet::default();
        assert_eq!(seen.check(key("s", "1"), 7), Seen::New);
        assert_eq!(seen.check(key("s", "1"), 7), Seen::Repeat);
        assert_eq!(seen.check(key("s", "1"), 8), Seen::Collision);
        assert_eq!(seen.check(key("t", "1"), 8), Seen::New);
    }
}
