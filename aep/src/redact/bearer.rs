//! `Bearer` tokens (AEP-0003 §9.4(a): every `Bearer`-prefixed token goes).
//!
//! The scheme is a word (`bearer`, any case, not glued to a word before
//! it), whitespace, then a token68 word. The word goes when:
//!
//! - the scheme is spelled `Bearer` or `BEARER` and the word is on the
//!   same line: the form the floor names, whatever the word;
//! - the scheme sits in a header (`:`, `=` or a quote before it): any word;
//! - otherwise, when the word looks like a token: eight characters or
//!   more, or a digit or a sign in it, or a capital after its first letter.
//!   Prose keeps "the bearer of this letter" and "bearer bonds".
//!
//! A scheme at the end of a line owes its word to the next line.

use super::carry::{OWE_BEARER, OWE_BEARER_ANY};
use super::heads::{Head, HeadKind};
use super::line::Deferred;
use super::scan::{Class, Kind, Scan, Slot};

/// Marks the bearer tokens of the line, finishing what the last line owed;
/// a scheme glued to a word before it waits in `deferred`.
pub(crate) fn scan(
    scan: &mut Scan<'_>,
    heads: &[Head],
    owed: u8,
    owes: &mut u8,
    deferred: &mut Vec<Deferred>,
) {
    if owed & (OWE_BEARER | OWE_BEARER_ANY) != 0 {
        let any = owed & OWE_BEARER_ANY != 0;
        let at = scan.space_end(0);
        if at == scan.len() {
            if scan.ends_line() {
                *owes |= owed & (OWE_BEARER | OWE_BEARER_ANY);
            }
        } else {
            let end = scan.run_end(Slot::BearerWord, Class::Token68, at);
            if end > at && (any || looks_like_token(&scan.text[at..end])) {
                scan.push(at, end, Kind::Secret);
            }
        }
    }
    for head in heads.iter().filter(|h| h.kind == HeadKind::Bearer) {
        let (start, after) = (head.start, head.end);
        let at = scan.space_end(after);
        if at == after {
            continue;
        }
        let header = in_header(scan, start);
        let mut found = Deferred {
            at: start,
            span: None,
            owes: 0,
        };
        if at == scan.len() {
            if scan.ends_line() {
                found.owes = if header { OWE_BEARER_ANY } else { OWE_BEARER };
            }
        } else {
            let end = scan.run_end(Slot::BearerWord, Class::Token68, at);
            let strict = matches!(&scan.text[start..after], "Bearer" | "BEARER");
            if end > at && (strict || header || looks_like_token(&scan.text[at..end])) {
                found.span = Some((at, end));
            }
        }
        if found.span.is_none() && found.owes == 0 {
            continue;
        }
        if scan.word_before(start) {
            deferred.push(found);
        } else {
            found.apply(scan, owes);
        }
    }
}

/// Whether a `:`, `=` or quote comes before `at`, past spaces and tabs.
fn in_header(scan: &mut Scan<'_>, at: usize) -> bool {
    let bytes = scan.text.as_bytes();
    let mut i = at;
    while i > 0 && matches!(bytes[i - 1], b' ' | b'\t') {
        i -= 1;
    }
    scan.work += (at - i) as u64 + 1;
    i > 0 && matches!(bytes[i - 1], b':' | b'=' | b'"' | b'\'')
}

/// Whether the word after a lowercase `bearer` is a credential rather
/// than prose: eight characters or more, or anything but letters in it,
/// or a capital after its first letter. A full stop that ends a sentence
/// does not count.
pub(crate) fn looks_like_token(word: &str) -> bool {
    let word = word.trim_end_matches('.');
    let bytes = word.as_bytes();
    !bytes.is_empty()
        && (bytes.len() >= 8
            || bytes.iter().any(|b| !b.is_ascii_alphabetic())
            || bytes[1..].iter().any(u8::is_ascii_uppercase))
}
