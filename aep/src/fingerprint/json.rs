//! The canonical-form hash of a JSON text, computed in one pass over its
//! bytes with no tree built and no recursion (nesting costs heap, not
//! stack, so any depth the input holds is fine).
//!
//! The encoding written into the parent's hasher is prefix-free: a type tag,
//! then the value; arrays between a start and an end tag. An object hashes
//! each member (name and value) on its own, keeps the last member of each
//! name (as a JSON parser that keeps the last duplicate does), then writes
//! the member hashes sorted, so member order does not matter. Numbers are
//! hashed from their text, exactly: sign, significant digits and decimal
//! exponent, so value-equal spellings (`1`, `1.0`, `10e-1`; `-0` and `0`)
//! agree and different values differ whatever their magnitude.

use std::borrow::Cow;
use std::hash::{DefaultHasher, Hash, Hasher};

use super::{hasher, write_object, write_text, ARRAY, ARRAY_END, BOOL, NULL, NUMBER, STRING};

/// An open container.
enum Frame<'a> {
    Array,
    /// `(name, member hash)` of the members so far, and the name of the
    /// member whose value is being read (its hasher is on the stack).
    Object(Vec<(Name<'a>, u64)>, Name<'a>),
}

/// A member name's value, unescaped.
type Name<'a> = Cow<'a, [u8]>;

/// Hashes the canonical form of `text` into `root`; `None` when `text` is
/// not one JSON value.
pub(super) fn feed(text: &str, root: &mut DefaultHasher) -> Option<()> {
    let b = text.as_bytes();
    let mut frames: Vec<Frame> = Vec::new();
    // The hashers of the object members being read; the innermost is where
    // values go (`root` when there is none).
    let mut members: Vec<DefaultHasher> = Vec::new();
    let mut i = 0;
    'value: loop {
        i = skip_space(b, i);
        let h = members.last_mut().unwrap_or(&mut *root);
        match *b.get(i)? {
            b'{' => {
                i = skip_space(b, i + 1);
                if b.get(i) == Some(&b'}') {
                    i += 1;
                    write_object(h, &mut []);
                } else {
                    let (next, name, hasher) = member(text, i)?;
                    i = next;
                    frames.push(Frame::Object(Vec::new(), name));
                    members.push(hasher);
                    continue 'value;
                }
            }
            b'[' => {
                ARRAY.hash(h);
                i = skip_space(b, i + 1);
                if b.get(i) == Some(&b']') {
                    i += 1;
                    ARRAY_END.hash(h);
                } else {
                    frames.push(Frame::Array);
                    continue 'value;
                }
            }
            b'"' => {
                let (next, s) = string(text, i)?;
                i = next;
                STRING.hash(h);
                write_text(h, &s);
            }
            b't' => {
                i = literal(b, i, b"true")?;
                BOOL.hash(h);
                true.hash(h);
            }
            b'f' => {
                i = literal(b, i, b"false")?;
                BOOL.hash(h);
                false.hash(h);
            }
            b'n' => {
                i = literal(b, i, b"null")?;
                NULL.hash(h);
            }
            _ => {
                let end = i + b[i..]
                    .iter()
                    .take_while(|c| matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                    .count();
                number(&b[i..end], h)?;
                i = end;
            }
        }
        // A value is complete: close what it completes, up to the next value.
        loop {
            i = skip_space(b, i);
            match frames.last_mut() {
                None => return (i == b.len()).then_some(()),
                Some(Frame::Array) => {
                    let h = members.last_mut().unwrap_or(&mut *root);
                    match b.get(i)? {
                        b',' => {
                            i += 1;
                            continue 'value;
                        }
                        b']' => {
                            i += 1;
                            frames.pop();
                            ARRAY_END.hash(h);
                        }
                        _ => return None,
                    }
                }
                Some(Frame::Object(done, name)) => {
                    let name = std::mem::take(name);
                    done.push((name, members.pop()?.finish()));
                    match b.get(i)? {
                        b',' => {
                            let (next, name, hasher) = member(text, skip_space(b, i + 1))?;
                            i = next;
                            if let Some(Frame::Object(_, current)) = frames.last_mut() {
                                *current = name;
                            }
                            members.push(hasher);
                            continue 'value;
                        }
                        b'}' => {
                            i += 1;
                            let Some(Frame::Object(mut done, _)) = frames.pop() else {
                                unreachable!("the top frame is this object")
                            };
                            let mut hashes = last_of_each_name(&mut done);
                            write_object(members.last_mut().unwrap_or(&mut *root), &mut hashes);
                        }
                        _ => return None,
                    }
                }
            }
        }
    }
}

/// The member hashes of an object, keeping only the last member of each name.
fn last_of_each_name(members: &mut [(Name<'_>, u64)]) -> Vec<u64> {
    // Stable: members of one name stay in document order.
    members.sort_by(|(a, _), (b, _)| a.cmp(b));
    let mut hashes = Vec::with_capacity(members.len());
    for (k, (name, hash)) in members.iter().enumerate() {
        if members.get(k + 1).is_none_or(|(next, _)| next != name) {
            hashes.push(*hash);
        }
    }
    hashes
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// Reads a member name and its colon at `i`: the index after the colon,
/// the name, and the member's hasher with the name written.
fn member(text: &str, i: usize) -> Option<(usize, Name<'_>, DefaultHasher)> {
    if text.as_bytes().get(i) != Some(&b'"') {
        return None;
    }
    let (next, name) = string(text, i)?;
    let next = skip_space(text.as_bytes(), next);
    if text.as_bytes().get(next) != Some(&b':') {
        return None;
    }
    let mut h = hasher();
    STRING.hash(&mut h);
    write_text(&mut h, &name);
    Some((next + 1, name, h))
}

/// Reads the string starting at `i` (its opening quote): the index after
/// it and its value, unescaped, as bytes (WTF-8: a lone surrogate, which
/// JSON text may escape, becomes its three-byte form).
fn string(text: &str, i: usize) -> Option<(usize, Cow<'_, [u8]>)> {
    let b = text.as_bytes();
    let mut j = i + 1;
    let mut escaped = false;
    loop {
        match *b.get(j)? {
            b'"' => break,
            b'\\' => {
                escaped = true;
                j += 2;
            }
            c if c < 0x20 => return None,
            _ => j += 1,
        }
    }
    let raw = b.get(i + 1..j)?;
    let value = if escaped {
        Cow::Owned(unescape(raw)?)
    } else {
        Cow::Borrowed(raw)
    };
    Some((j + 1, value))
}

/// The value of a string's text between its quotes; `None` on a bad escape.
fn unescape(raw: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(raw.len());
    let mut k = 0;
    while let Some(&c) = raw.get(k) {
        k += 1;
        if c != b'\\' {
            out.push(c);
            continue;
        }
        let escape = *raw.get(k)?;
        k += 1;
        let byte = match escape {
            b'"' | b'\\' | b'/' => escape,
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let unit = hex4(raw.get(k..k + 4)?)?;
                k += 4;
                let mut point = u32::from(unit);
                // A high surrogate followed by an escaped low one is one
                // character; any other surrogate stands alone.
                if (0xd800..0xdc00).contains(&unit) && raw.get(k..k + 2) == Some(b"\\u") {
                    if let Some(low @ 0xdc00..0xe000) = raw.get(k + 2..k + 6).and_then(hex4) {
                        point = 0x10000 + ((point - 0xd800) << 10) + (u32::from(low) - 0xdc00);
                        k += 6;
                    }
                }
                push_wtf8(&mut out, point);
                continue;
            }
            _ => return None,
        };
        out.push(byte);
    }
    Some(out)
}

/// Four hex digits.
fn hex4(digits: &[u8]) -> Option<u16> {
    digits.iter().try_fold(0u16, |n, &d| {
        let v = (d as char).to_digit(16)?;
        Some(n << 4 | v as u16)
    })
}

/// Appends a code point (a surrogate included) in UTF-8's byte layout.
fn push_wtf8(out: &mut Vec<u8>, point: u32) {
    // Each arm's `as u8` keeps the low bits the layout puts in that byte.
    match point {
        0..=0x7f => out.push(point as u8),
        0x80..=0x7ff => out.extend([0xc0 | (point >> 6) as u8, 0x80 | (point & 0x3f) as u8]),
        0x800..=0xffff => out.extend([
            0xe0 | (point >> 12) as u8,
            0x80 | ((point >> 6) & 0x3f) as u8,
            0x80 | (point & 0x3f) as u8,
        ]),
        _ => out.extend([
            0xf0 | (point >> 18) as u8,
            0x80 | ((point >> 12) & 0x3f) as u8,
            0x80 | ((point >> 6) & 0x3f) as u8,
            0x80 | (point & 0x3f) as u8,
        ]),
    }
}

/// The index after `word` if it is at `i`.
fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    b.get(i..i + word.len()).filter(|w| *w == word)?;
    Some(i + word.len())
}

/// Hashes a JSON number's text by its exact value: `NUMBER`, then the sign,
/// the significant digits (no leading or trailing zeros) and the decimal
/// exponent of the last one; zero is unsigned with no digits. `None` when
/// the text is not a JSON number.
///
/// An exponent written with more than 36 digits is past any exact
/// arithmetic here; such a number is hashed from its digits and exponent
/// text, so it matches only spellings of the same shape.
pub(super) fn number(t: &[u8], h: &mut impl Hasher) -> Option<()> {
    let digits_from = |p: usize| p + t[p..].iter().take_while(|c| c.is_ascii_digit()).count();
    let negative = t.first() == Some(&b'-');
    let int_from = usize::from(negative);
    let int_end = digits_from(int_from);
    let int = &t[int_from..int_end];
    if int.is_empty() || (int.len() > 1 && int[0] == b'0') {
        return None;
    }
    let mut p = int_end;
    let mut fraction: &[u8] = &[];
    if t.get(p) == Some(&b'.') {
        let end = digits_from(p + 1);
        fraction = &t[p + 1..end];
        if fraction.is_empty() {
            return None;
        }
        p = end;
    }
    let mut exponent_text: &[u8] = b"0";
    let mut exponent_negative = false;
    if matches!(t.get(p), Some(b'e' | b'E')) {
        p += 1;
        if let Some(sign @ (b'+' | b'-')) = t.get(p) {
            exponent_negative = *sign == b'-';
            p += 1;
        }
        let end = digits_from(p);
        exponent_text = &t[p..end];
        if exponent_text.is_empty() {
            return None;
        }
        p = end;
    }
    if p != t.len() {
        return None;
    }
    // The digits of int and fraction, as one significand.
    let all = int.iter().chain(fraction);
    let leading = all.clone().take_while(|&&c| c == b'0').count();
    let trailing = all.clone().rev().take_while(|&&c| c == b'0').count();
    let count = int.len() + fraction.len();
    NUMBER.hash(h);
    if leading == count {
        // Zero, whatever the sign and exponent.
        false.hash(h);
        0usize.hash(h);
        0i128.hash(h);
        return Some(());
    }
    negative.hash(h);
    let significant = count - leading - trailing;
    significant.hash(h);
    // The digits in chunks of a fixed size, whatever their split between
    // integer and fraction.
    let mut chunk = [0u8; 32];
    let mut filled = 0;
    for &c in all.skip(leading).take(significant) {
        chunk[filled] = c;
        filled += 1;
        if filled == chunk.len() {
            h.write(&chunk);
            filled = 0;
        }
    }
    h.write(&chunk[..filled]);
    // The value is significand × 10^(exponent − fraction digits + trailing zeros).
    let shift = i128::try_from(trailing).ok()? - i128::try_from(fraction.len()).ok()?;
    let exponent_text = &exponent_text[exponent_text.iter().take_while(|&&c| c == b'0').count()..];
    if exponent_text.len() <= 36 {
        let magnitude = exponent_text
            .iter()
            .fold(0i128, |n, &c| n * 10 + i128::from(c - b'0'));
        let exponent = if exponent_negative {
            -magnitude
        } else {
            magnitude
        };
        (exponent + shift).hash(h);
    } else {
        i128::MAX.hash(h);
        exponent_negative.hash(h);
        exponent_text.hash(h);
        shift.hash(h);
    }
    Some(())
}
