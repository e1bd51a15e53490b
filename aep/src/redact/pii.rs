//! PII (AEP-0003 §9.4(d)): emails and phone numbers become
//! `[REDACTED:pii]`.

use super::heads::{Head, HeadKind};
use super::line::Cover;
use super::scan::{Kind, Scan};

/// Phone numbers: international, `+` country code, then digit groups; or
/// the North American 3-3-4 with separators. What comes before and after
/// is looked at by hand.
pub(crate) const PHONE: &str = r"(?-u:\+[1-9][0-9]{0,2}(?:[ .\-]?\(?[0-9]{1,4}\)?){2,5}|\(?[2-9][0-9]{2}\)?[ .\-][0-9]{3}[ .\-][0-9]{4})";

/// Marks the emails and phone numbers of the line. A neighbour inside a
/// secret counts as the marker that replaces it; what starts inside one is
/// none.
pub(crate) fn scan(scan: &mut Scan<'_>, heads: &[Head], secrets: &Cover) {
    let mut from = 0;
    for head in heads {
        match head.kind {
            HeadKind::At => email(scan, head.start, secrets),
            // After a phone number, what starts inside it is part of it.
            HeadKind::Phone if head.start >= from && phone(scan, head, secrets) => {
                from = head.end;
            }
            _ => {}
        }
    }
}

/// Whether the phone number candidate `head` is one, and marks it.
fn phone(scan: &mut Scan<'_>, head: &Head, secrets: &Cover) -> bool {
    let (start, end) = (head.start, head.end);
    let digits = scan.text[start..end]
        .bytes()
        .filter(u8::is_ascii_digit)
        .count();
    // Part of a longer number, version or word: not a phone number.
    let before = scan.char_before(start);
    let after = scan.char_at(end);
    let glued_before = before.is_some_and(|c| c.is_alphanumeric() || c == '.' || c == '_')
        && !secrets.contains(start - 1);
    let next_is_digit = scan
        .char_at(end + after.map_or(0, char::len_utf8))
        .is_some_and(|c| c.is_ascii_digit());
    let glued_after = (after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        || (matches!(after, Some('-' | '.')) && next_is_digit))
        && !secrets.contains(end);
    let inside = secrets.contains(start);
    let taken = (7..=15).contains(&digits) && !glued_before && !glued_after && !inside;
    if taken {
        scan.push(start, end, Kind::Pii);
    }
    taken
}

/// An email around the `@` at `at`: the local part before it
/// (`[A-Za-z0-9._%+-]`, after any secret) and a domain after it whose last
/// label starts with two letters.
fn email(scan: &mut Scan<'_>, at: usize, secrets: &Cover) {
    let bytes = scan.text.as_bytes();
    {
        let mut start = at;
        while start > 0 && is_local(bytes[start - 1]) {
            start -= 1;
        }
        let mut domain = at + 1;
        while domain < bytes.len() && is_domain(bytes[domain]) {
            domain += 1;
        }
        scan.work += (domain - start) as u64;
        match secrets.last_end_before(at) {
            Some(end) if end > at => return,
            Some(end) => start = start.max(end),
            None => {}
        }
        if start == at {
            return;
        }
        // The last `.` with two letters after it, a character before it.
        let mut end = None;
        let mut i = at + 2;
        while i < domain {
            if bytes[i] == b'.' {
                let letters = bytes[i + 1..domain]
                    .iter()
                    .take_while(|b| b.is_ascii_alphabetic())
                    .count();
                if letters >= 2 {
                    end = Some(i + 1 + letters);
                }
                i += 1 + letters;
            } else {
                i += 1;
            }
        }
        if let Some(end) = end {
            scan.push(start, end, Kind::Pii);
        }
    }
}

fn is_local(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'%' | b'+' | b'-')
}

fn is_domain(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'-')
}
