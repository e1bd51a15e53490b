//! Reading a JSONL stream of events in constant memory.

use std::fmt;
use std::io::{self, BufRead};

use crate::{Error, Event};

/// An iterator over the events of a JSONL stream: one event per line,
/// blank lines skipped. A line that does not decode is reported with its
/// line number and the next line is read; only an I/O error ends the
/// stream (after it is reported). One line buffer is reused throughout, so
/// memory does not grow with the stream.
///
/// ```
/// use aep_types::reader::EventReader;
///
/// let stream = concat!(
///     r#"{"aep":"0.1","id":"e1","type":"agent.heartbeat","time":"2026-11-30T12:00:00Z","source":"urn:a:b","agent":"a"}"#, "\n",
///     "not json\n",
///     r#"{"aep":"0.1","id":"e2","type":"agent.heartbeat","time":"2026-11-30T12:00:30Z","source":"urn:a:b","agent":"a"}"#, "\n",
/// );
/// let results: Vec<_> = EventReader::new(stream.as_bytes()).collect();
/// assert_eq!(results.len(), 3);
/// assert_eq!(results[1].as_ref().unwrap_err().line(), 2);
/// assert_eq!(results[2].as_ref().unwrap().id, "e2");
/// ```
pub struct EventReader<R> {
    input: R,
    buffer: Vec<u8>,
    line: usize,
    done: bool,
}

impl<R: BufRead> EventReader<R> {
    /// Reads events from `input`.
    pub fn new(input: R) -> Self {
        EventReader {
            input,
            buffer: Vec::new(),
            line: 0,
            done: false,
        }
    }
}

impl<R: BufRead> Iterator for EventReader<R> {
    type Item = Result<Event, LineError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            self.buffer.clear();
            self.line += 1;
            match self.input.read_until(b'\n', &mut self.buffer) {
                Ok(0) => self.done = true,
                Ok(_) if self.buffer.iter().all(u8::is_ascii_whitespace) => continue,
                Ok(_) => {
                    let line = self.line;
                    return Some(Event::from_slice(&self.buffer).map_err(|e| LineError {
                        line,
                        kind: LineErrorKind::Decode(e),
                    }));
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(LineError {
                        line: self.line,
                        kind: LineErrorKind::Io(e),
                    }));
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
            LineErrorKind::Io(_) => None,
        }
    }

    /// Whether reading failed (which ends the stream), rather than
    /// decoding one line.
    pub fn is_io(&self) -> bool {
        matches!(self.kind, LineErrorKind::Io(_))
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            LineErrorKind::Decode(e) => write!(f, "line {}: {e}", self.line),
            LineErrorKind::Io(e) => write!(f, "line {}: read error: {e}", self.line),
        }
    }
}

impl std::error::Error for LineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            LineErrorKind::Decode(e) => Some(e),
            LineErrorKind::Io(e) => Some(e),
        }
    }
}
