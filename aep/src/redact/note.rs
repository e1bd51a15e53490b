//! What a [`Stream`](super::Stream) did to its input besides redacting it.

use std::fmt;

use super::SECRET;

/// Something a [`Stream`](super::Stream) did to its input besides
/// redacting it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Note {
    /// Line `line`, of `bytes` bytes, was longer than the limit: it was
    /// not held, and `[REDACTED:secret]` stands in its place.
    LineTooLong {
        /// The line's number, from 1.
        line: u64,
        /// Its length without its line break.
        bytes: u64,
    },
    /// Line `line` held `bytes` bytes that are not UTF-8: each run of them
    /// became U+FFFD.
    InvalidUtf8 {
        /// The line's number, from 1.
        line: u64,
        /// How many bytes were not UTF-8.
        bytes: usize,
    },
    /// A PEM block began on line `line` and ran past the limit with no END
    /// line: that line was written, and the block is dropped up to its END
    /// line or the end of the input.
    BlockPastLimit {
        /// The line the block began on.
        line: u64,
    },
    /// A PEM block began on line `line` and the input ended inside it:
    /// everything after its BEGIN line was redacted.
    BlockUnended {
        /// The line the block began on.
        line: u64,
    },
}

impl Note {
    /// The number of the line it is about, from 1.
    pub fn line(&self) -> u64 {
        match self {
            Note::LineTooLong { line, .. }
            | Note::InvalidUtf8 { line, .. }
            | Note::BlockPastLimit { line }
            | Note::BlockUnended { line } => *line,
        }
    }
}

/// What happened, without the line number.
impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::LineTooLong { bytes, .. } => write!(
                f,
                "the line is {bytes} bytes, over the line limit; replaced by {SECRET}"
            ),
            Note::InvalidUtf8 { bytes, .. } => {
                write!(f, "{bytes} bytes that are not UTF-8, replaced by U+FFFD")
            }
            Note::BlockPastLimit { .. } => f.write_str(
                "a PEM block with no END line within the line limit; \
                 dropped up to its END line",
            ),
            Note::BlockUnended { .. } => {
                f.write_str("a PEM block with no END line; redacted to the end of the input")
            }
        }
    }
}
