//! Compact fingerprints: what dedupe remembers instead of events.
//!
//! Two hashes, both SipHash-1-3 (the standard library's hasher) under a
//! key drawn at random once per process, so that nobody outside the process
//! can aim inputs at a table slot or a fingerprint; results differ from run
//! to run and never leave the process:
//!
//! - a [`Key`] of 128 bits names a pair of strings such as `(source, id)`
//!   (two 64-bit hashes, each after its own tag byte); two different pairs share
//!   a key with probability about 2⁻¹²⁸ per pair of pairs;
//! - a [`Canonical`] fingerprint of 64 bits names an event's canonical JSON
//!   form: members in any order, the last of duplicated members, numbers
//!   compared by their exact decimal value whatever their size (`1`, `1.0`,
//!   `1e0` and `10e-1` are one number; `-0` is `0`; `1e400` is not
//!   `1e401`), strings after unescaping. Two events under one key are
//!   compared only with each other, so mistaking a different event for a
//!   redelivery has probability about 2⁻⁶⁴ per repeat.
//!
//! A [`SeenSet`] holds one `(Key, Canonical)` entry per distinct
//! `(source, id)`: 24 bytes plus the hash table's control byte, at a load
//! factor between 7/16 (just after the table doubled) and 7/8, so 29 to 57
//! bytes per seen id (28.6 to 57.1, rounded).

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher, Hash, Hasher, RandomState};
use std::io::Write as _;
use std::sync::OnceLock;

mod json;

/// A fresh hasher under the process's key.
fn hasher() -> DefaultHasher {
    static KEYS: OnceLock<RandomState> = OnceLock::new();
    KEYS.get_or_init(RandomState::new).build_hasher()
}

/// Writes a string's value, as bytes (UTF-8, or WTF-8 where JSON text
/// escapes a lone surrogate), the way `str` hashes itself.
fn write_text(h: &mut impl Hasher, bytes: &[u8]) {
    h.write(bytes);
    h.write_u8(0xff);
}

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
        let mut h = hasher();
        seed.hash(&mut h);
        // `str::hash` is length-delimited, so ("ab", "c") ≠ ("a", "bc").
        a.hash(&mut h);
        b.hash(&mut h);
        h.finish()
    };
    Key(half(1), half(2))
}

/// The fingerprint of the canonical form of a JSON text, or `None` when
/// the text is not JSON.
///
/// The hash is computed while scanning, with no tree built (see the
/// `json` submodule for the encoding). [`canonical_event`] is the same
/// hash, computed from a decoded event.
#[cfg(test)]
pub(crate) fn canonical_json(text: &str) -> Option<Canonical> {
    let mut h = hasher();
    json::feed(text, &mut h)?;
    Some(h.finish())
}

/// The fingerprint of a value's canonical form.
#[cfg(test)]
pub(crate) fn canonical(value: &serde_json::Value) -> Canonical {
    canonical_json(&value.to_string()).expect("a Value is JSON")
}

// The encoding's type tags.
const NULL: u8 = 0;
const BOOL: u8 = 1;
const NUMBER: u8 = 2;
const STRING: u8 = 4;
const ARRAY: u8 = 5;
const OBJECT: u8 = 6;
const ARRAY_END: u8 = 7;

/// The fingerprint of an event's canonical form: the same as
/// [`canonical_json`] of any JSON text the event decodes from. The envelope
/// is hashed from its typed attributes; only `data` is parsed.
pub(crate) fn canonical_event(event: &aep_types::Event) -> Canonical {
    use aep_types::ExtensionValue;

    /// A member's hasher, with its name written.
    fn member(name: &str) -> DefaultHasher {
        let mut h = hasher();
        STRING.hash(&mut h);
        write_text(&mut h, name.as_bytes());
        h
    }
    fn text(members: &mut Vec<u64>, name: &str, value: Option<&str>) {
        if let Some(value) = value {
            let mut h = member(name);
            STRING.hash(&mut h);
            write_text(&mut h, value.as_bytes());
            members.push(h.finish());
        }
    }
    fn integer(members: &mut Vec<u64>, name: &str, value: Option<i128>) {
        if let Some(value) = value {
            let mut h = member(name);
            // Hashed as the text it is written as, like any number.
            let mut text = [0u8; 40];
            let mut rest = &mut text[..];
            write!(rest, "{value}").expect("an i128 takes at most 40 bytes");
            let len = 40 - rest.len();
            json::number(&text[..len], &mut h).expect("an integer's text is a JSON number");
            members.push(h.finish());
        }
    }
    let mut members = Vec::with_capacity(20);
    text(&mut members, "aep", Some(event.aep.as_str()));
    text(&mut members, "id", Some(&event.id));
    text(&mut members, "type", Some(&event.type_));
    text(&mut members, "subject", event.subject.as_deref());
    text(&mut members, "time", Some(&event.time));
    text(&mut members, "source", Some(&event.source));
    text(&mut members, "agent", Some(&event.agent));
    text(&mut members, "session", event.session.as_deref());
    text(&mut members, "run", event.run.as_deref());
    text(&mut members, "step", event.step.as_deref());
    integer(&mut members, "seq", event.seq.map(i128::from));
    integer(&mut members, "epoch", event.epoch.map(i128::from));
    text(&mut members, "cause", event.cause.as_deref());
    text(&mut members, "traceparent", event.traceparent.as_deref());
    text(&mut members, "severity", event.severity.map(|s| s.as_str()));
    text(&mut members, "capture", event.capture.map(|c| c.as_str()));
    if let Some(data) = &event.data {
        let mut h = member("data");
        if json::feed(data.get(), &mut h).is_none() {
            // Decoded data is JSON, so this does not happen; the exact text
            // would still tell a byte-identical redelivery from anything else.
            h = member("data");
            0xffu8.hash(&mut h);
            data.get().hash(&mut h);
        }
        members.push(h.finish());
    }
    for (name, value) in &event.extensions {
        match value {
            ExtensionValue::String(s) => text(&mut members, name.as_str(), Some(s)),
            ExtensionValue::Integer(i) => integer(&mut members, name.as_str(), Some((*i).into())),
            ExtensionValue::Boolean(b) => {
                let mut h = member(name.as_str());
                BOOL.hash(&mut h);
                b.hash(&mut h);
                members.push(h.finish());
            }
        }
    }
    let mut h = hasher();
    write_object(&mut h, &mut members);
    h.finish()
}

/// Writes an object, given its member hashes, into its parent's hasher.
fn write_object(h: &mut DefaultHasher, members: &mut [u64]) {
    members.sort_unstable();
    OBJECT.hash(h);
    members.hash(h);
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
    use serde_json::{json, Value};

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
    fn escapes_are_unescaped_and_lone_surrogates_kept() {
        let same = [
            (r#""\u00e9""#, r#""é""#),
            (r#""\ud83d\ude00""#, r#""😀""#),
            (r#""a\/b\n""#, r#""a/b\u000a""#),
            (r#"{"\ud800":1,"b":2}"#, r#"{"b":2,"\ud800":1}"#),
        ];
        for (a, b) in same {
            assert!(canonical_json(a).is_some(), "{a}");
            assert_eq!(canonical_json(a), canonical_json(b), "{a} {b}");
        }
        let different = [
            (r#""\ud800""#, r#""\udc00""#),
            (r#""\ud800\u0041""#, r#""\u0041\ud800""#),
            (r#""\ud83d\ude00""#, r#""\ude00\ud83d""#),
            (r#"["","\u0000"]"#, r#"["\u0000",""]"#),
        ];
        for (a, b) in different {
            assert_ne!(canonical_json(a), canonical_json(b), "{a} {b}");
        }
        for bad in [r#""\x41""#, r#""\u00g1""#, r#""\u+041""#, r#""\"#] {
            assert_eq!(canonical_json(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_duplicated_member_keeps_its_last_value() {
        let last = canonical_json(r#"{"mode":"yolo"}"#);
        assert_eq!(canonical_json(r#"{"mode":"safe","mode":"yolo"}"#), last);
        assert_ne!(canonical_json(r#"{"mode":"yolo","mode":"safe"}"#), last);
        assert_eq!(
            canonical_json(r#"{"a":{"m":1,"m":2},"b":0}"#),
            canonical_json(r#"{"b":0,"a":{"m":2}}"#)
        );
        // Escapes do not hide a duplicate.
        assert_eq!(
            canonical_json(r#"{"m":1,"\u006d":2}"#),
            canonical_json(r#"{"m":2}"#)
        );
    }

    #[test]
    fn number_text_compares_by_exact_value() {
        let same = |a: &str, b: &str| canonical_json(a) == canonical_json(b);
        for (a, b) in [
            ("1", "1.0"),
            ("1", "1e0"),
            ("1", "10e-1"),
            ("0", "-0"),
            ("0", "0e5"),
            ("0.5", "5E-1"),
            ("1e400", "1E400"),
            ("1e400", "10e399"),
            ("-2.50e-400", "-25e-401"),
            ("100", "1e2"),
            (r#"{"a":1e400,"b":1}"#, r#"{"b":1,"a":1e400}"#),
        ] {
            assert!(same(a, b), "{a} ≡ {b}");
        }
        for (a, b) in [
            ("18446744073709551616", "18446744073709551617"),
            ("1e400", "1e401"),
            ("1e400", "-1e400"),
            ("0.1", "0.10000000000000001"),
            ("1", "\"1\""),
            ("12", "21"),
        ] {
            assert!(!same(a, b), "{a} ≢ {b}");
        }
        for bad in ["01", "1.", ".5", "1e", "+1", "-", "1e+", "0x1"] {
            assert_eq!(canonical_json(bad), None, "{bad}");
        }
    }

    #[test]
    fn envelope_integers_hash_as_their_text() {
        let line = r#"{"aep":"0.1","id":"e","type":"agent.heartbeat","time":"2026-12-01T10:00:00Z","source":"urn:a","agent":"a","seq":30,"n":-7,"data":{"big":1e400,"x":12345678901234567890123}}"#;
        let event = aep_types::Event::from_json(line).unwrap();
        assert_eq!(canonical_json(line), Some(canonical_event(&event)));
        let respelled = line.replace("\"seq\":30", "\"seq\":3.0e1");
        assert_eq!(canonical_json(line), canonical_json(&respelled));
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
    fn text_and_events_agree_and_escapes_do_not_matter() {
        let a = r#"{"aep":"0.1","id":"e\u0031","type":"agent.heartbeat","time":"2026-12-01T10:00:00Z","source":"urn:a","agent":"a","data":{"x":[1.0,{"b":2,"a":1}]}}"#;
        let b = r#"{"data":{"x":[1,{"a":1,"b":2}]},"agent":"a","source":"urn:a","time":"2026-12-01T10:00:00Z","type":"agent.heartbeat","id":"e1","aep":"0.1"}"#;
        let event = aep_types::Event::from_json(a).unwrap();
        assert_eq!(canonical_json(a), canonical_json(b));
        assert_eq!(canonical_json(a), Some(canonical_event(&event)));
        assert_eq!(canonical_json("{"), None);
        assert_eq!(canonical_json("{} {}"), None);
    }

    #[test]
    fn a_seen_id_costs_24_bytes_before_table_overhead() {
        assert_eq!(std::mem::size_of::<(Key, Canonical)>(), 24);
        assert_eq!(std::mem::size_of::<(Key, ())>(), 16);
    }

    #[test]
    fn every_envelope_attribute_hashes_as_its_json() {
        let line = r#"{"aep":"0.1","id":"e","type":"tool.requested","subject":"Bash","time":"2026-12-01T10:00:00Z","source":"urn:a","agent":"a","session":"s","run":"r","step":"p","seq":3,"epoch":2,"cause":"c","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","severity":"warning","capture":"full","region":"eu","retries":-2,"sampled":true,"data":{"tool":{"name":"Bash"}}}"#;
        let event = aep_types::Event::from_json(line).unwrap();
        assert_eq!(canonical_json(line), Some(canonical_event(&event)));
        // And each attribute counts: dropping any one changes the hash.
        let value: Value = serde_json::from_str(line).unwrap();
        for name in value.as_object().unwrap().keys() {
            let mut less = value.clone();
            less.as_object_mut().unwrap().remove(name);
            assert_ne!(canonical(&less), canonical(&value), "{name}");
        }
    }

    /// The per-id memory figure the docs state: an entry plus its control
    /// byte, over the table's load factor, as measured on the table itself.
    #[test]
    fn a_seen_id_costs_29_to_57_bytes_and_the_docs_say_so() {
        let slot = std::mem::size_of::<(Key, Canonical)>() + 1;
        let mut table: KeyMap<Canonical> = KeyMap::default();
        let (mut least, mut most) = (f64::MAX, 0f64);
        for n in 0..200_000u32 {
            table.insert(key("s", &n.to_string()), 0);
            if n >= 1000 {
                // hashbrown keeps 1/8 of its buckets free.
                let buckets = table.capacity() as f64 * 8.0 / 7.0;
                let per_id = slot as f64 * buckets / table.len() as f64;
                least = least.min(per_id);
                most = most.max(per_id);
            }
        }
        assert_eq!(
            (least.round(), most.round()),
            (29.0, 57.0),
            "{least} {most}"
        );
        let figure = "29 to 57 bytes";
        for (name, text) in [
            ("docs/cli.md", include_str!("../../docs/cli.md")),
            (
                "docs/performance.md",
                include_str!("../../docs/performance.md"),
            ),
            ("aep/README.md", include_str!("../README.md")),
            ("aep/src/stream.rs", include_str!("stream.rs")),
            ("aep/src/fingerprint.rs", include_str!("fingerprint.rs")),
        ] {
            let flat = text
                .replace("//!", "")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            assert!(flat.contains(figure), "{name} does not say {figure}");
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
