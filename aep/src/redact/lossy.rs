//! Lines that are not UTF-8.
//!
//! Passing the bytes through would hand on what the rules could not read
//! (and a reader that drops them would join the halves of a secret they
//! cut), and refusing the input would stop a whole stream over one byte.
//! So each run of invalid bytes becomes U+FFFD, and the line is scanned
//! twice: as decoded, and with those replacement characters removed, a
//! secret found either way being redacted in the decoded line (the
//! invalid bytes inside it too).

use std::borrow::Cow;

/// A line with its invalid bytes removed, and where they were.
#[derive(Debug, Clone)]
pub(crate) struct Stripped {
    /// The text without them.
    pub text: String,
    /// For each U+FFFD removed, the position in `text` it was at.
    removed: Vec<usize>,
}

/// The bytes as text, U+FFFD for each run of invalid bytes (as
/// `String::from_utf8_lossy`), and, when there was one, the stripped view
/// and the number of invalid bytes.
pub(crate) fn decode(bytes: &[u8]) -> (Cow<'_, str>, Option<(Stripped, usize)>) {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return (Cow::Borrowed(text), None);
    }
    let mut text = String::with_capacity(bytes.len() + 8);
    let mut stripped = Stripped {
        text: String::with_capacity(bytes.len()),
        removed: Vec::new(),
    };
    let mut invalid = 0;
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        stripped.text.push_str(chunk.valid());
        if !chunk.invalid().is_empty() {
            invalid += chunk.invalid().len();
            text.push(char::REPLACEMENT_CHARACTER);
            stripped.removed.push(stripped.text.len());
        }
    }
    (Cow::Owned(text), Some((stripped, invalid)))
}

impl Stripped {
    /// The span of the decoded line that the span `[start, end)` of the
    /// stripped text stands for: from the character at `start` to the one
    /// before `end`, the removed characters between them included.
    pub fn to_decoded(&self, start: usize, end: usize) -> (usize, usize) {
        let width = char::REPLACEMENT_CHARACTER.len_utf8();
        let before_start = self.removed.partition_point(|&at| at <= start);
        let before_end = self.removed.partition_point(|&at| at < end);
        (start + width * before_start, end + width * before_end)
    }
}
