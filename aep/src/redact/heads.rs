//! Where the rules' candidates start, found for all rules in one search
//! per line: the markers of an earlier redaction, PEM BEGIN markers,
//! credential names and flags, `bearer`, token prefixes, `://`, home
//! prefixes, `@` and phone numbers.
//!
//! Every head is short (a phone number at most 39 bytes, a marker label
//! aside), and the search starts again one byte after each head's start,
//! so that heads that overlap are all found at the cost of rescanning a
//! head's length. No two patterns match at the same position (their first
//! bytes, or the bytes after, differ), so none hides another.

use regex_automata::meta::Regex;
use regex_automata::Input;

use super::scan::Scan;

/// What a head starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeadKind {
    /// `[REDACTED:secret]` or `[REDACTED:pii]`.
    Marker,
    /// `-----BEGIN <LABEL>-----`.
    Begin,
    /// A credential name (`password`, `token`, `Authorization`, ...).
    Name,
    /// A credential flag (`--password`, `-token`).
    Flag,
    /// `bearer`, any case.
    Bearer,
    /// The prefix of token shape `n` (see `shapes`).
    Shape(usize),
    /// `://`.
    Scheme,
    /// `/home/`, `/Users/`, `X:\Users\`.
    Home,
    /// `@`.
    At,
    /// A phone number.
    Phone,
}

/// A head: its kind and span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    pub kind: HeadKind,
    pub start: usize,
    pub end: usize,
}

/// The compiled heads.
#[derive(Debug, Clone)]
pub(crate) struct Heads {
    regex: Regex,
    kinds: Vec<HeadKind>,
}

impl Heads {
    /// The heads of every rule; `phone` when PII is redacted.
    pub fn new(names: &str, flags: &str, shapes: &[&str], phone: Option<&str>) -> Self {
        let mut patterns: Vec<(HeadKind, String)> = vec![
            (HeadKind::Marker, r"\[REDACTED:(?:secret|pii)\]".to_owned()),
            (HeadKind::Begin, r"-----BEGIN [A-Z0-9 ]+-----".to_owned()),
            (HeadKind::Name, names.to_owned()),
            (HeadKind::Flag, flags.to_owned()),
            (HeadKind::Bearer, "(?i-u:bearer)".to_owned()),
        ];
        patterns.extend(
            shapes
                .iter()
                .enumerate()
                .map(|(i, p)| (HeadKind::Shape(i), (*p).to_owned())),
        );
        patterns.extend([
            (HeadKind::Scheme, "://".to_owned()),
            (
                HeadKind::Home,
                r"(?-u:/home/|/Users/|[A-Za-z]:\\Users\\)".to_owned(),
            ),
            (HeadKind::At, "@".to_owned()),
        ]);
        if let Some(phone) = phone {
            patterns.push((HeadKind::Phone, phone.to_owned()));
        }
        let regex = Regex::new_many(&patterns.iter().map(|(_, p)| p.as_str()).collect::<Vec<_>>())
            .expect("the heads compile");
        Heads {
            regex,
            kinds: patterns.into_iter().map(|(kind, _)| kind).collect(),
        }
    }

    /// Every head of the line, in order.
    pub fn find(&self, scan: &mut Scan<'_>, heads: &mut Vec<Head>) {
        heads.clear();
        let text = scan.text;
        let mut from = 0;
        while from < text.len() {
            let Some(found) = self.regex.search(&Input::new(text).span(from..text.len())) else {
                scan.work += (text.len() - from) as u64 + 1;
                break;
            };
            scan.work += (found.end() - from) as u64 + 1;
            heads.push(Head {
                kind: self.kinds[found.pattern().as_usize()],
                start: found.start(),
                end: found.end(),
            });
            // Every head starts with an ASCII byte.
            from = found.start() + 1;
        }
    }
}
