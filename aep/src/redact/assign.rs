//! Values named as credentials: `password=…`, `"token": "…"`,
//! `Authorization: Bearer …`, `--password …`.
//!
//! A credential name is found with a bounded expression; what follows is
//! walked by hand: an optional quote, whitespace, an operator (`=>`, `:=`,
//! `==`, `=`, `:`), whitespace, the value. Whitespace may hold line
//! breaks: a line that ends before the value leaves it owed ([`Carry`]),
//! and the next line starts where this one stopped.
//!
//! The value is a quoted string (up to its closing quote on the line, `\`
//! escaping in double quotes) or a bare run of non-space characters. Under
//! `Authorization`, a scheme word (`Bearer`, `Basic`, `Digest`, `Token`,
//! `Negotiate`) stays and the credentials after it go. Under another name,
//! a scheme word and its credentials go together (`X-Auth-Token: Bearer
//! abc`). A value that starts with `[REDACTED:secret]` was redacted
//! before and stays as it is.
//!
//! [`Carry`]: super::carry::Carry

use super::carry::{OWE_AUTH_OP, OWE_AUTH_VALUE, OWE_CRED, OWE_OP, OWE_VALUE};
use super::heads::{Head, HeadKind};
use super::scan::{Class, Kind, Scan, Slot};
use super::SECRET;

/// Credential names, as a suffix of a longer name too (`GITHUB_TOKEN`).
pub(crate) const NAMES: &str = r"(?i-u:password|passwd|passphrase|secret(?:[_-]?access)?(?:[_-]?key)?|api[_-]?key|access[_-]?key|private[_-]?key|token|(?:proxy-)?authorization)";

/// Command-line flags whose value is a credential.
pub(crate) const FLAGS: &str = r"(?i-u:--?(?:password|passwd|passphrase|token|secret|api[_-]?key|access[_-]?key|auth[_-]?token))";

/// The `Authorization` schemes.
const SCHEMES: &[&str] = &["bearer", "basic", "digest", "token", "negotiate"];

/// Marks the credential values of the line, finishing what the last line
/// owed (`owed`); adds to `owes` what this one leaves open.
pub(crate) fn scan(scan: &mut Scan<'_>, heads: &[Head], owed: u8, owes: &mut u8) {
    for (bit, auth) in [(OWE_OP, false), (OWE_AUTH_OP, true)] {
        if owed & bit != 0 {
            after_name(scan, 0, auth, owes);
        }
    }
    for (bit, auth) in [(OWE_VALUE, false), (OWE_AUTH_VALUE, true)] {
        if owed & bit != 0 {
            after_operator(scan, 0, auth, owes);
        }
    }
    if owed & OWE_CRED != 0 {
        after_scheme(scan, 0, owes);
    }
    for head in heads {
        match head.kind {
            HeadKind::Name => name(scan, head, owes),
            HeadKind::Flag => flag(scan, head),
            _ => {}
        }
    }
}

/// A credential name (heads start one byte apart, so a name that begins
/// inside another, `secretoken=`, is a head too).
fn name(scan: &mut Scan<'_>, head: &Head, owes: &mut u8) {
    let text = &scan.text[head.start..head.end];
    let auth = text.len() >= 13 && text[text.len() - 13..].eq_ignore_ascii_case("authorization");
    let mut at = head.end;
    if matches!(scan.byte(at), Some(b'"' | b'\'')) {
        at += 1;
    }
    after_name(scan, at, auth, owes);
}

/// `--password hunter2`, `-token 'a b'`: a flag after a space or a quote,
/// blanks, and a value that is not another flag.
fn flag(scan: &mut Scan<'_>, head: &Head) {
    let after_space = scan
        .char_before(head.start)
        .is_none_or(|c| c.is_whitespace() || c == '"' || c == '\'');
    let value = scan.blank_end(head.end);
    if !after_space || value == head.end || scan.text[value..].starts_with(SECRET) {
        return;
    }
    match scan.byte(value) {
        Some(quote @ (b'"' | b'\'')) => {
            if let Some(close) = closing_quote(scan, value, quote, false) {
                scan.push(value, close + 1, Kind::Secret);
            }
        }
        Some(b'-') | None => {}
        Some(_) => {
            let end = scan.run_end(Slot::FlagBare, Class::NonSpace, value);
            scan.push(value, end, Kind::Secret);
        }
    }
}

/// After a name (and its quote): whitespace, then an operator.
fn after_name(scan: &mut Scan<'_>, at: usize, auth: bool, owes: &mut u8) {
    let at = scan.space_end(at);
    if at == scan.len() {
        if scan.ends_line() {
            *owes |= if auth { OWE_AUTH_OP } else { OWE_OP };
        }
        return;
    }
    let bytes = scan.text.as_bytes();
    let operator = match (bytes[at], bytes.get(at + 1)) {
        (b'=', Some(b'>' | b'=')) | (b':', Some(b'=')) => 2,
        (b'=' | b':', _) => 1,
        _ => return,
    };
    after_operator(scan, at + operator, auth, owes);
}

/// After an operator: whitespace, then the value.
fn after_operator(scan: &mut Scan<'_>, at: usize, auth: bool, owes: &mut u8) {
    let at = scan.space_end(at);
    if at == scan.len() {
        if scan.ends_line() {
            *owes |= if auth { OWE_AUTH_VALUE } else { OWE_VALUE };
        }
        return;
    }
    if scan.text[at..].starts_with(SECRET) {
        return;
    }
    if let Some(quote @ (b'"' | b'\'')) = scan.byte(at) {
        if let Some(close) = closing_quote(scan, at, quote, quote == b'"') {
            quoted(scan, at + 1, close, auth);
            return;
        }
        // An unclosed quote: the credentials of a header start after it,
        // any other value takes the quote along.
        if auth {
            unquoted_auth(scan, at + 1, owes);
            return;
        }
    }
    if auth {
        unquoted_auth(scan, at, owes);
    } else {
        bare(scan, at);
    }
}

/// The position of the quote closing the one at `open`, on the same line.
fn closing_quote(scan: &mut Scan<'_>, open: usize, quote: u8, escapes: bool) -> Option<usize> {
    let bytes = scan.text.as_bytes();
    let mut at = open + 1;
    let found = loop {
        match bytes.get(at) {
            None | Some(b'\n') => break None,
            Some(&b) if b == quote => break Some(at),
            Some(b'\\') if escapes => match bytes.get(at + 1) {
                None | Some(b'\n') => break None,
                Some(_) => at += 2,
            },
            Some(_) => at += 1,
        }
    };
    scan.work += (found.unwrap_or(at) - open) as u64 + 1;
    found
}

/// The contents of a quoted value, `[start, end)`.
fn quoted(scan: &mut Scan<'_>, start: usize, end: usize, auth: bool) {
    if scan.text[start..end].starts_with(SECRET) {
        return;
    }
    if auth {
        if let Some(word) = scheme_at(scan, start) {
            let credentials = scan.blank_end(word).min(end);
            if credentials > word {
                if !scan.text[credentials..end].starts_with(SECRET) {
                    scan.push(credentials, end, Kind::Secret);
                }
                return;
            }
        }
    }
    scan.push(start, end, Kind::Secret);
}

/// A bare value under a credential name other than `Authorization`.
fn bare(scan: &mut Scan<'_>, at: usize) {
    let end = scan.run_end(Slot::AssignBare, Class::NonSpace, at);
    if scheme_at(scan, at) == Some(end) {
        let credentials = scan.blank_end(end);
        if credentials > end && !scan.text[credentials..].starts_with(SECRET) {
            let token = scan.run_end(Slot::AuthCred, Class::Token68, credentials);
            if token > credentials {
                scan.push(at, token, Kind::Secret);
                return;
            }
        }
    }
    scan.push(at, end, Kind::Secret);
}

/// An unquoted `Authorization` value: a scheme and its credentials, or
/// credentials alone.
fn unquoted_auth(scan: &mut Scan<'_>, at: usize, owes: &mut u8) {
    match scheme_at(scan, at) {
        Some(word) if scan.char_at(word).is_some_and(char::is_whitespace) => {
            after_scheme(scan, word, owes);
        }
        // A scheme with nothing after it.
        Some(word) if word == scan.len() => {}
        _ => credentials(scan, at),
    }
}

/// After a scheme: whitespace, then the credentials.
fn after_scheme(scan: &mut Scan<'_>, at: usize, owes: &mut u8) {
    let at = scan.space_end(at);
    if at == scan.len() {
        if scan.ends_line() {
            *owes |= OWE_CRED;
        }
        return;
    }
    credentials(scan, at);
}

/// Credentials: a token68 run, or any run of non-space characters.
fn credentials(scan: &mut Scan<'_>, at: usize) {
    if scan.text[at..].starts_with(SECRET) {
        return;
    }
    let mut end = scan.run_end(Slot::AuthCred, Class::Token68, at);
    if end == at {
        end = scan.run_end(Slot::AssignBare, Class::NonSpace, at);
    }
    scan.push(at, end, Kind::Secret);
}

/// The end of a scheme word starting at `at`, if one does.
fn scheme_at(scan: &mut Scan<'_>, at: usize) -> Option<usize> {
    let bytes = scan.text.as_bytes();
    let mut end = at;
    while end < bytes.len() && end - at < 9 && bytes[end].is_ascii_alphabetic() {
        end += 1;
    }
    scan.work += (end - at) as u64 + 1;
    let word = &scan.text[at..end];
    let whole = bytes.get(end).is_none_or(|b| !b.is_ascii_alphanumeric());
    (whole && SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(word))).then_some(end)
}
