//! Reading a JSONL stream of events in constant memory.
//!
//! Two layers, one mechanism:
//!
//! - [`LineReader`] splits any [`BufRead`] into lines with a length limit:
//!   a line longer than the limit is reported by its length and skipped in
//!   chunks, never held in memory. `\n` ends a line, a `\r` before it is
//!   dropped (CRLF files read like LF files), and a last line without a
//!   final newline (a torn write) is still a line.
//! - [`EventReader`] decodes each line as an [`Event`], skips blank lines,
//!   and applies the JSONL binding's version rule (AEP-0003 §3.1 rule 3):
//!   a line whose `aep` names an unsupported major version is skipped and
//!   reported once, on the first such line.
//!
//! [`unsupported_version`] is the version test, for other readers.

use std::fmt;
use std::io::{self, BufRead, Read};

use crate::{Error, Event};

/// What to say about a line of `bytes` bytes over the line limit `limit`,
/// which is skipped unread. Every report of a long line uses this text.
pub fn too_long_message(bytes: u64, limit: usize) -> String {
    format!("the line is {bytes} bytes, over the line limit of {limit} bytes; skipped unread")
}

/// The default line limit: 4 MiB, far above any event an emitter sends
/// (payload content is bounded by capture rules, not by the wire) and small
/// enough that one hostile line cannot exhaust memory.
pub const DEFAULT_MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// A line of a [`LineReader`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line<'a> {
    /// The line's bytes, without its `\n` or `\r\n` ending.
    Text(&'a [u8]),
    /// A line over the limit, skipped unread; `bytes` is its length without
    /// the line ending.
    TooLong {
        /// The line's length in bytes.
        bytes: u64,
    },
}

/// Splits a [`BufRead`] into numbered lines no longer than a limit, reusing
/// one buffer (which grows to at most the limit plus two bytes).
///
/// ```
/// use aep_types::reader::{Line, LineReader};
///
/// let mut lines = LineReader::new(&b"ok\r\nmuch too long\nlast"[..], 8);
/// assert_eq!(lines.next_line()?, Some((1, Line::Text(b"ok"))));
/// assert_eq!(lines.next_line()?, Some((2, Line::TooLong { bytes: 13 })));
/// assert_eq!(lines.next_line()?, Some((3, Line::Text(b"last"))));
/// assert_eq!(lines.next_line()?, None);
/// assert_eq!(lines.bytes_read(), 22);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct LineReader<R> {
    input: R,
    max_line_bytes: usize,
    buffer: Vec<u8>,
    line: u64,
    bytes_read: u64,
}

impl<R: BufRead> LineReader<R> {
    /// Reads lines of at most `max_line_bytes` bytes (line ending excluded)
    /// from `input`.
    pub fn new(input: R, max_line_bytes: usize) -> Self {
        LineReader {
            input,
            max_line_bytes,
            buffer: Vec::new(),
            line: 0,
            bytes_read: 0,
        }
    }

    /// The next line and its 1-based number, or `None` at the end of the
    /// input. An I/O error is returned as is; reading may go on after it
    /// only if the input can.
    pub fn next_line(&mut self) -> io::Result<Option<(u64, Line<'_>)>> {
        Ok(self
            .next_line_with_ending()?
            .map(|(number, line, _)| (number, line)))
    }

    /// As [`next_line`](Self::next_line), with the line's ending as it was
    /// read (`\n`, `\r\n`, a `\r` or nothing at the end of the input;
    /// nothing for a line over the limit), for writing lines back byte for
    /// byte.
    ///
    /// ```
    /// use aep_types::reader::{Line, LineReader};
    ///
    /// let mut lines = LineReader::new(&b"ok\r\nlast"[..], 8);
    /// assert_eq!(lines.next_line_with_ending()?, Some((1, Line::Text(b"ok"), &b"\r\n"[..])));
    /// assert_eq!(lines.next_line_with_ending()?, Some((2, Line::Text(b"last"), &b""[..])));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn next_line_with_ending(&mut self) -> io::Result<Option<(u64, Line<'_>, &[u8])>> {
        self.buffer.clear();
        // Room for the longest allowed line and its `\r\n`.
        let room = (self.max_line_bytes as u64).saturating_add(2);
        let read = (&mut self.input)
            .take(room)
            .read_until(b'\n', &mut self.buffer);
        // Bytes taken before an error count as read, too.
        self.bytes_read += self.buffer.len() as u64;
        let n = read?;
        if n == 0 {
            return Ok(None);
        }
        let ended = self.buffer.last() == Some(&b'\n');
        if !ended && n as u64 == room {
            // Over the limit with no end in sight: count the rest, keep none.
            // (The line is numbered once it is read, so that an error in
            // between is said of this line.)
            let (skipped, ending) = self.skip_line(self.buffer.last().copied())?;
            self.line += 1;
            let bytes = n as u64 + skipped - ending;
            return Ok(Some((self.line, Line::TooLong { bytes }, &[])));
        }
        self.line += 1;
        let mut end = self.buffer.len() - usize::from(ended);
        if end > 0 && self.buffer[end - 1] == b'\r' {
            end -= 1;
        }
        if end > self.max_line_bytes {
            let bytes = end as u64;
            return Ok(Some((self.line, Line::TooLong { bytes }, &[])));
        }
        let (text, ending) = self.buffer.split_at(end);
        Ok(Some((self.line, Line::Text(text), ending)))
    }

    /// Consumes input up to and including the next `\n`; returns the bytes
    /// consumed and how many of them are the line's ending (`\n`, `\r\n`,
    /// or a `\r` last in the input). `last` is the byte read just before.
    fn skip_line(&mut self, mut last: Option<u8>) -> io::Result<(u64, u64)> {
        let mut skipped = 0u64;
        loop {
            let chunk = match self.input.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                return Ok((skipped, u64::from(last == Some(b'\r'))));
            }
            let newline = chunk.iter().position(|&b| b == b'\n');
            let used = newline.map_or(chunk.len(), |i| i + 1);
            let before_newline = match newline {
                Some(0) => last,
                Some(i) => Some(chunk[i - 1]),
                None => None,
            };
            last = chunk.last().copied();
            self.input.consume(used);
            skipped += used as u64;
            self.bytes_read += used as u64;
            if newline.is_some() {
                return Ok((skipped, 1 + u64::from(before_newline == Some(b'\r'))));
            }
        }
    }

    /// The bytes read so far, line endings and skipped lines included.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// The number of the last line returned (0 before the first).
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The line limit.
    pub fn max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }

    /// The input, to look at what it holds buffered (a
    /// [`BufReader::buffer`](std::io::BufReader::buffer) without a whole
    /// line means the next line waits for a read).
    pub fn get_ref(&self) -> &R {
        &self.input
    }
}

/// The `aep` version a JSON line declares, if it declares one of an
/// unsupported major version (AEP-0003 §3.1 rule 3); such a line is to be
/// skipped, not judged by this version's rules.
///
/// A version is `MAJOR.MINOR` with decimal digits; its major is supported
/// when it is `0`, the major of [`AEP_VERSION`](crate::AEP_VERSION). A line
/// that is not a JSON object, has no string `aep`, or has one that is not of
/// that form is not of an unsupported version: it is judged, and fails, by
/// this version's rules.
///
/// ```
/// use aep_types::reader::unsupported_version;
///
/// assert_eq!(unsupported_version(br#"{"aep":"1.0","id":"e"}"#).as_deref(), Some("1.0"));
/// assert_eq!(unsupported_version(br#"{"aep":"0.2"}"#), None); // same major
/// assert_eq!(unsupported_version(br#"{"aep":"one"}"#), None); // not a version
/// ```
pub fn unsupported_version(line: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Probe {
        aep: Option<serde_json::Value>,
    }
    let serde_json::Value::String(version) = serde_json::from_slice::<Probe>(line).ok()?.aep?
    else {
        return None;
    };
    let (major, minor) = version.split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(major) || !digits(minor) {
        return None;
    }
    let supported = crate::AEP_VERSION
        .split('.')
        .next()
        .and_then(|m| m.parse::<u64>().ok());
    // A major too long for u64 is not the supported one either.
    (major.parse::<u64>().ok() != supported).then_some(version)
}

/// An iterator over the events of a JSONL stream: one event per line,
/// blank lines skipped. A line that does not decode is reported with its
/// line number and the next line is read; only an I/O error ends the
/// stream (after it is reported). Lines are read by a [`LineReader`], so
/// memory does not grow with the stream and a line over the limit
/// ([`DEFAULT_MAX_LINE_BYTES`] unless set) is one error, never held.
///
/// A line of an unsupported major `aep` version ([`unsupported_version`])
/// is skipped: the first one is reported as an error
/// ([`LineError::is_unsupported_version`]), the later ones only counted
/// ([`EventReader::skipped`]).
///
/// ```
/// use aep_types::reader::EventReader;
///
/// let stream = concat!(
///     r#"{"aep":"0.1","id":"e1","type":"agent.heartbeat","time":"2026-11-30T12:00:00Z","source":"urn:a:b","agent":"a"}"#, "\n",
///     "not json\n",
///     r#"{"aep":"1.0","id":"e9"}"#, "\n",
///     r#"{"aep":"1.0","id":"e10"}"#, "\n",
///     r#"{"aep":"0.1","id":"e2","type":"agent.heartbeat","time":"2026-11-30T12:00:30Z","source":"urn:a:b","agent":"a"}"#, "\n",
/// );
/// let mut reader = EventReader::new(stream.as_bytes());
/// let results: Vec<_> = reader.by_ref().collect();
/// assert_eq!(results.len(), 4);
/// assert_eq!(results[1].as_ref().unwrap_err().line(), 2);
/// assert!(results[2].as_ref().unwrap_err().is_unsupported_version());
/// assert_eq!(results[3].as_ref().unwrap().id, "e2");
/// assert_eq!(reader.skipped(), 2);
/// ```
pub struct EventReader<R> {
    lines: LineReader<R>,
    skipped: u64,
    done: bool,
}

impl<R: BufRead> EventReader<R> {
    /// Reads events from `input`, with lines of at most
    /// [`DEFAULT_MAX_LINE_BYTES`].
    pub fn new(input: R) -> Self {
        EventReader::with_max_line_bytes(input, DEFAULT_MAX_LINE_BYTES)
    }

    /// Reads events from `input`, with lines of at most `max_line_bytes`
    /// (line ending excluded).
    pub fn with_max_line_bytes(input: R, max_line_bytes: usize) -> Self {
        EventReader {
            lines: LineReader::new(input, max_line_bytes),
            skipped: 0,
            done: false,
        }
    }

    /// How many lines of an unsupported major version were skipped so far
    /// (the reported first one included).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.lines.bytes_read()
    }
}

impl<R: BufRead> Iterator for EventReader<R> {
    type Item = Result<Event, LineError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let limit = self.lines.max_line_bytes();
            let error = |line: u64, kind| LineError {
                line: usize::try_from(line).unwrap_or(usize::MAX),
                kind,
            };
            match self.lines.next_line() {
                Ok(None) => self.done = true,
                Ok(Some((line, Line::TooLong { bytes }))) => {
                    return Some(Err(error(line, LineErrorKind::TooLong { bytes, limit })));
                }
                Ok(Some((_, Line::Text(text)))) if text.iter().all(u8::is_ascii_whitespace) => {}
                Ok(Some((line, Line::Text(text)))) => match Event::from_slice(text) {
                    Ok(event) => return Some(Ok(event)),
                    Err(e) => match unsupported_version(text) {
                        Some(version) => {
                            self.skipped += 1;
                            if self.skipped == 1 {
                                let kind = LineErrorKind::UnsupportedVersion(version);
                                return Some(Err(error(line, kind)));
                            }
                        }
                        None => return Some(Err(error(line, LineErrorKind::Decode(e)))),
                    },
                },
                Err(e) => {
                    self.done = true;
                    let line = self.lines.line() + 1;
                    return Some(Err(error(line, LineErrorKind::Io(e))));
                }
            }
        }
        None
    }
}

/// A line of the stream that did not give an event.
#[derive(Debug)]
pub struct LineError {
    line: usize,
    kind: LineErrorKind,
}

#[derive(Debug)]
enum LineErrorKind {
    Decode(Error),
    TooLong { bytes: u64, limit: usize },
    UnsupportedVersion(String),
    Io(io::Error),
}

impl LineError {
    /// The 1-based line number.
    pub fn line(&self) -> usize {
        self.line
    }

    /// The decoding error, when the line was read but is not an event
    /// (it names the offending attribute by JSON Pointer).
    pub fn decode_error(&self) -> Option<&Error> {
        match &self.kind {
            LineErrorKind::Decode(e) => Some(e),
            _ => None,
        }
    }

    /// Whether reading failed (which ends the stream), rather than
    /// decoding one line.
    pub fn is_io(&self) -> bool {
        matches!(self.kind, LineErrorKind::Io(_))
    }

    /// Whether the line was over the line limit (and skipped unread).
    pub fn is_too_long(&self) -> bool {
        matches!(self.kind, LineErrorKind::TooLong { .. })
    }

    /// Whether the line is the first of an unsupported major version (it
    /// and every later one are skipped).
    pub fn is_unsupported_version(&self) -> bool {
        matches!(self.kind, LineErrorKind::UnsupportedVersion(_))
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            LineErrorKind::Decode(e) => write!(f, "line {}: {e}", self.line),
            LineErrorKind::TooLong { bytes, limit } => {
                write!(
                    f,
                    "line {}: {}",
                    self.line,
                    too_long_message(*bytes, *limit)
                )
            }
            LineErrorKind::UnsupportedVersion(version) => write!(
                f,
                "line {}: `aep` version \"{version}\" has an unsupported major version; \
                 this and every later line of an unsupported version are skipped",
                self.line
            ),
            LineErrorKind::Io(e) => write!(f, "line {}: read error: {e}", self.line),
        }
    }
}

impl std::error::Error for LineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            LineErrorKind::Decode(e) => Some(e),
            LineErrorKind::Io(e) => Some(e),
            LineErrorKind::TooLong { .. } | LineErrorKind::UnsupportedVersion(_) => None,
        }
    }
}

#[cfg(test)]
mod tests;
