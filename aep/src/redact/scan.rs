//! The scanning context of one line: its text, the work done on it, the
//! spans found so far, and the memories that keep every rule linear.
//!
//! A rule's candidates start at heads, found for all rules in one search
//! ([`super::heads`]); the rule measures what follows by hand. A
//! run of token characters can be long and many candidates can start
//! inside the same run (`sk-sk-sk-…`), so the end of a run is remembered
//! per use ([`Slot`]): each use asks from positions that only grow, and
//! asks again inside a known run get its end without a rescan.

use regex::Regex;

/// What a span of text becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    /// A home directory: `~`.
    Home,
    /// An email or a phone number: `[REDACTED:pii]`.
    Pii,
    /// A secret: `[REDACTED:secret]`. Wins over the others where they meet.
    Secret,
}

/// A byte range of the line and what it becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
}

/// A character class of a token run (ASCII only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// `[0-9A-Z]`
    UpperDigit,
    /// `[A-Za-z0-9]`
    Alnum,
    /// `[A-Za-z0-9_]`
    AlnumUnderscore,
    /// `[A-Za-z0-9_-]`
    Base64Url,
    /// `[A-Za-z0-9-]`
    AlnumDash,
    /// RFC 7235 token68, `=` anywhere: `[A-Za-z0-9._~+/=-]`
    Token68,
    /// Anything but whitespace (Unicode), the class of a bare value.
    NonSpace,
}

impl Class {
    fn contains(self, byte: u8) -> bool {
        match self {
            Class::UpperDigit => byte.is_ascii_uppercase() || byte.is_ascii_digit(),
            Class::Alnum => byte.is_ascii_alphanumeric(),
            Class::AlnumUnderscore => byte.is_ascii_alphanumeric() || byte == b'_',
            Class::Base64Url => byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-'),
            Class::AlnumDash => byte.is_ascii_alphanumeric() || byte == b'-',
            Class::Token68 => {
                byte.is_ascii_alphanumeric()
                    || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
            }
            // Measured by characters (Unicode whitespace); this is its
            // ASCII part.
            Class::NonSpace => !byte.is_ascii_whitespace(),
        }
    }
}

/// The uses of a run memory: one per place a rule measures a run, so that
/// each is asked from growing positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    Shape(usize),
    Jwt(usize),
    BearerWord,
    AssignBare,
    AuthCred,
    FlagBare,
}

const SHAPE_SLOTS: usize = 16;
const JWT_SLOTS: usize = 5;
const SLOTS: usize = SHAPE_SLOTS + JWT_SLOTS + 4;

impl Slot {
    fn index(self) -> usize {
        match self {
            Slot::Shape(i) => i.min(SHAPE_SLOTS - 1),
            Slot::Jwt(i) => SHAPE_SLOTS + i.min(JWT_SLOTS - 1),
            Slot::BearerWord => SHAPE_SLOTS + JWT_SLOTS,
            Slot::AssignBare => SHAPE_SLOTS + JWT_SLOTS + 1,
            Slot::AuthCred => SHAPE_SLOTS + JWT_SLOTS + 2,
            Slot::FlagBare => SHAPE_SLOTS + JWT_SLOTS + 3,
        }
    }
}

/// A known stretch `[from, end)` of one run, `end` being the run's end.
#[derive(Debug, Clone, Copy, Default)]
struct Known {
    from: usize,
    end: usize,
    class: Option<Class>,
}

/// One line under scan.
#[derive(Debug)]
pub(crate) struct Scan<'t> {
    /// The line, its `\n` included when it has one.
    pub text: &'t str,
    /// Bytes looked at and bytes searched, the measure of the work.
    pub work: u64,
    /// What the rules found.
    pub spans: Vec<Span>,
    known: [Known; SLOTS],
}

impl<'t> Scan<'t> {
    pub fn new(text: &'t str) -> Self {
        Scan {
            text,
            work: 0,
            spans: Vec::new(),
            known: [Known::default(); SLOTS],
        }
    }

    pub fn len(&self) -> usize {
        self.text.len()
    }

    pub fn byte(&self, at: usize) -> Option<u8> {
        self.text.as_bytes().get(at).copied()
    }

    /// The character starting at `at`.
    pub fn char_at(&self, at: usize) -> Option<char> {
        self.text.get(at..).and_then(|rest| rest.chars().next())
    }

    /// The character ending at `at`.
    pub fn char_before(&self, at: usize) -> Option<char> {
        self.text
            .get(..at)
            .and_then(|head| head.chars().next_back())
    }

    /// The position after the character at `at` (at least `at + 1`).
    pub fn next_boundary(&self, at: usize) -> usize {
        at + self.char_at(at).map_or(1, char::len_utf8)
    }

    /// Whether the line ends with `\n`: a construct still open at its end
    /// may go on in the next line.
    pub fn ends_line(&self) -> bool {
        self.text.ends_with('\n')
    }

    pub fn push(&mut self, start: usize, end: usize, kind: Kind) {
        if start < end {
            self.spans.push(Span { start, end, kind });
        }
    }

    /// The leftmost match of `regex` at or after `from`, counting the bytes
    /// searched.
    pub fn find(&mut self, regex: &Regex, from: usize) -> Option<regex::Match<'t>> {
        if from > self.len() {
            return None;
        }
        let found = regex.find_at(self.text, from);
        self.work += (found.map_or(self.len(), |m| m.end()) - from) as u64 + 1;
        found
    }

    /// The end of the whitespace (Unicode) starting at `at`.
    pub fn space_end(&mut self, at: usize) -> usize {
        let mut end = at;
        for c in self.text[at..].chars() {
            self.work += 1;
            if !c.is_whitespace() {
                break;
            }
            end += c.len_utf8();
        }
        end
    }

    /// The end of the spaces and tabs starting at `at`.
    pub fn blank_end(&mut self, at: usize) -> usize {
        let bytes = self.text.as_bytes();
        let mut end = at;
        while matches!(bytes.get(end), Some(b' ' | b'\t')) {
            end += 1;
        }
        self.work += (end - at) as u64 + 1;
        end
    }

    /// The end of the run of `class` starting at `at`, remembered in `slot`.
    pub fn run_end(&mut self, slot: Slot, class: Class, at: usize) -> usize {
        let known = self.known[slot.index()];
        if known.class == Some(class) && known.from <= at && at <= known.end {
            self.work += 1;
            return known.end;
        }
        let end = self.measure(class, at);
        self.known[slot.index()] = Known {
            from: at,
            end,
            class: Some(class),
        };
        end
    }

    fn measure(&mut self, class: Class, at: usize) -> usize {
        if class == Class::NonSpace {
            let mut end = at;
            for c in self.text[at..].chars() {
                self.work += 1;
                if c.is_whitespace() {
                    break;
                }
                end += c.len_utf8();
            }
            return end;
        }
        let bytes = self.text.as_bytes();
        let mut end = at;
        while end < bytes.len() && class.contains(bytes[end]) {
            end += 1;
        }
        self.work += (end - at) as u64 + 1;
        end
    }

    /// Whether the character before `at` is an ASCII word character (the
    /// test of an ASCII `\b` before a word character).
    pub fn word_before(&self, at: usize) -> bool {
        at > 0 && is_word(self.text.as_bytes()[at - 1])
    }
}

/// An ASCII word character.
pub(crate) fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}
