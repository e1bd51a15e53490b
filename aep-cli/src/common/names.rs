//! File names for sessions. A session is keyed by `(source, session)`
//! (AEP-0001 §5.2), and both are untrusted producer strings (AEP-0003
//! §9.6): they may hold `/`, `..`, NUL, control characters, thousands of
//! bytes, or differ only in case. A file is named
//!
//! ```text
//! <prefix>-<hash>.jsonl            the live file
//! <prefix>-<hash>.<unix-ts>.jsonl  a rotated one
//! ```
//!
//! where `<prefix>` is the session id made safe and readable: at most 32
//! characters, each ASCII letter, digit, `_` and `-` kept and every other
//! character (a `.` and a `/` included) written as `_` (`session` when
//! nothing is left); and `<hash>` is the first 16 hex digits of the
//! SHA-256 of the RFC 8785 form of the JSON array `[source, session]`
//! (`aep::digest`). The prefix is for people, the hash tells sessions
//! apart: two pairs share a name only when 64 bits of SHA-256 collide, and
//! a file's first event is checked against its pair when it is reopened.
//! Names hold no `.`, so a live and a rotated file cannot be mistaken for
//! each other, and never start with `.` (the state file does).

use serde_json::json;

/// The longest readable prefix, in characters.
const PREFIX: usize = 32;

/// The name (without `.jsonl`) of the files of `(source, session)`.
pub fn encode(source: &str, session: &str) -> String {
    let mut prefix: String = session
        .chars()
        .take(PREFIX)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if prefix.is_empty() {
        prefix.push_str("session");
    }
    let hash = aep::digest::digest(&json!([source, session]));
    format!("{prefix}-{}", &hash[..16])
}

/// A file of the sink's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `<name>.jsonl`.
    Live(String),
    /// `<name>.<unix-ts>.jsonl`.
    Rotated(String, u64),
}

/// What the file called `file_name` is, if it is one of the sink's.
pub fn parse(file_name: &str) -> Option<Kind> {
    let stem = file_name.strip_suffix(".jsonl")?;
    if stem.is_empty() || stem.starts_with('.') {
        return None;
    }
    let valid = |name: &str| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    match stem.split_once('.') {
        None if valid(stem) => Some(Kind::Live(stem.to_owned())),
        Some((name, ts))
            if valid(name) && !ts.is_empty() && ts.bytes().all(|b| b.is_ascii_digit()) =>
        {
            Some(Kind::Rotated(name.to_owned(), ts.parse().ok()?))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_ids_make_safe_distinct_names() {
        let hostile = [
            ("urn:a", "../../etc/passwd"),
            ("urn:a", "s\u{0}x"),
            ("urn:a", "S1"),
            ("urn:a", "s1"),
            ("urn:b", "s1"),
            ("urn:a", ""),
            ("urn:a", ".."),
            ("urn:a", "ses/1"),
            ("urn:a", "ses_1"),
            ("urn:a", &"x".repeat(5000)),
            ("urn:a", "\u{202e}\u{1b}[2J"),
            ("urn:a", "con"),
        ];
        let mut names = std::collections::HashSet::new();
        for (source, session) in hostile {
            let name = encode(source, session);
            assert!(name.len() <= PREFIX + 17, "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "{name}"
            );
            assert!(!name.starts_with('.'));
            assert_eq!(
                parse(&format!("{name}.jsonl")),
                Some(Kind::Live(name.clone()))
            );
            assert_eq!(
                parse(&format!("{name}.1700000000.jsonl")),
                Some(Kind::Rotated(name.clone(), 1_700_000_000))
            );
            // Case-insensitive file systems: names differing only in case
            // still differ in the hash.
            assert!(names.insert(name.to_ascii_lowercase()), "{name}");
        }
        assert!(encode("urn:a", "../../etc/passwd").starts_with("______etc_passwd-"));
        assert_eq!(
            encode("urn:a", ""),
            format!(
                "session-{}",
                &aep::digest::digest(&json!(["urn:a", ""]))[..16]
            )
        );
    }

    #[test]
    fn other_files_are_not_the_sinks() {
        for other in [
            ".sink-state.json",
            ".x.jsonl",
            "a.b.c.jsonl",
            "a.12x.jsonl",
            "notes.txt",
            ".jsonl",
            "a..jsonl",
        ] {
            assert_eq!(parse(other), None, "{other}");
        }
    }
}
