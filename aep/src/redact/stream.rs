//! Redacting text as it arrives, a line at a time, in bounded memory.
//!
//! Each line is redacted as soon as it is read (a line's redaction
//! depends on what came before only through what the last line left
//! open), and each output line is handed on whole, once it is complete.
//! The output is the one [`Redactor::redact_str`] gives for the whole
//! text, with these exceptions, each reported as a [`Note`]:
//!
//! - A line longer than the limit is not held: it is skipped and written
//!   as `[REDACTED:secret]`.
//! - Bytes that are not UTF-8 become U+FFFD; the line is also scanned with
//!   them removed, and what is secret either way is redacted.
//! - Inside a PEM block nothing is held either: the block's lines are
//!   dropped as they come. The line the block began on is written up to
//!   the block when the block ends, or, once the block has run past the
//!   limit without an END line, then, with a line break; the rest is
//!   dropped up to the END line or the end of the input, however long.
//!
//! Operator values that hold line breaks are the one reason to hold
//! lines: a line is held while what ends it could begin such a value.

use std::collections::VecDeque;

use super::carry::Carry;
use super::lossy::{self, Stripped};
use super::note::Note;
use super::paint::paint;
use super::scan::{Scan, Span};
use super::skip::Skipping;
use super::{Redactor, SECRET};

/// The redaction pipeline over a stream of bytes: [`Stream::write`] what
/// arrives, [`Stream::finish`] at the end; each complete output line is
/// handed to the callback whole.
///
/// ```
/// use aep::redact::{Redactor, Note};
///
/// let redactor = Redactor::default();
/// let mut stream = redactor.stream(1 << 20);
/// let mut out = String::new();
/// stream.write(b"password:\n  hun", &mut |line| out.push_str(line));
/// assert_eq!(out, "password:\n");
/// stream.write(b"ter2\nbad \xff byte\n", &mut |line| out.push_str(line));
/// stream.finish(&mut |line| out.push_str(line));
/// assert_eq!(out, "password:\n  [REDACTED:secret]\nbad \u{fffd} byte\n");
/// assert_eq!(stream.take_notes(), [Note::InvalidUtf8 { line: 3, bytes: 1 }]);
/// ```
#[derive(Debug)]
pub struct Stream<'r> {
    redactor: &'r Redactor,
    max_line: usize,
    /// The bytes of the line being read.
    partial: Vec<u8>,
    /// The line over the limit being skipped.
    skipping: Option<Skipping>,
    /// Lines read.
    lines: u64,
    /// Lines held while an operator value could still span them.
    held: Held,
    carry: Carry,
    /// Whether the output is inside a secret whose marker is written.
    continuing: bool,
    /// Output with no line break yet.
    pending: String,
    block: Option<Block>,
    notes: Vec<Note>,
    work: u64,
}

/// Lines held back, in one text, and the operator values found in it.
#[derive(Debug, Default)]
struct Held {
    text: String,
    lines: VecDeque<HeldLine>,
    /// Where the next search for a value starts.
    next: usize,
    /// The values found, final, in order.
    found: Vec<(usize, usize)>,
}

#[derive(Debug)]
struct HeldLine {
    len: usize,
    number: u64,
    stripped: Option<Stripped>,
}

/// An open PEM block.
#[derive(Debug)]
struct Block {
    line: u64,
    dropped: u64,
    /// Whether the line it began on was written (past the limit).
    released: bool,
}

/// How far a search for operator values may decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// More text may come.
    More,
    /// The input ended.
    Input,
    /// A skipped line follows: what could begin a value goes.
    Break,
}

type Emit<'e> = &'e mut dyn FnMut(&str);

impl<'r> Stream<'r> {
    /// A stream through `redactor` holding no line longer than
    /// `max_line_bytes` (line break excluded).
    pub fn new(redactor: &'r Redactor, max_line_bytes: usize) -> Self {
        Stream {
            redactor,
            max_line: max_line_bytes,
            partial: Vec::new(),
            skipping: None,
            lines: 0,
            held: Held::default(),
            carry: Carry::default(),
            continuing: false,
            pending: String::new(),
            block: None,
            notes: Vec::new(),
            work: 0,
        }
    }

    /// Takes the next bytes of the input; hands each output line that is
    /// now complete to `emit`.
    pub fn write(&mut self, input: &[u8], emit: &mut dyn FnMut(&str)) {
        let mut rest = input;
        while !rest.is_empty() {
            let newline = rest.iter().position(|&b| b == b'\n');
            self.work += newline.map_or(rest.len(), |i| i + 1) as u64;
            if let Some(skipping) = &mut self.skipping {
                let Some(i) = newline else {
                    skipping.take(rest);
                    return;
                };
                skipping.take(&rest[..i]);
                rest = &rest[i + 1..];
                self.end_skipping(true, emit);
                continue;
            }
            match newline {
                Some(i) if self.partial.len() + i <= self.max_line => {
                    self.partial.extend_from_slice(&rest[..=i]);
                    rest = &rest[i + 1..];
                    let line = std::mem::take(&mut self.partial);
                    self.line(&line, emit);
                    self.partial = line;
                    self.partial.clear();
                }
                Some(i) => {
                    self.start_skipping(&rest[..i], emit);
                    rest = &rest[i + 1..];
                    self.end_skipping(true, emit);
                }
                None if self.partial.len() + rest.len() <= self.max_line => {
                    self.partial.extend_from_slice(rest);
                    return;
                }
                None => {
                    self.start_skipping(rest, emit);
                    return;
                }
            }
        }
    }

    /// Ends the input: the last line (without a line break), the lines
    /// held, and the output not yet handed on.
    pub fn finish(&mut self, emit: &mut dyn FnMut(&str)) {
        if self.skipping.is_some() {
            self.end_skipping(false, emit);
        } else if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&line, emit);
        }
        self.advance(End::Input, emit);
        if let Some(block) = self.block.take() {
            if !block.released {
                self.notes.push(Note::BlockUnended { line: block.line });
            }
        }
        if !self.pending.is_empty() {
            emit(&self.pending);
            self.pending.clear();
        }
    }

    /// What the stream did besides redacting, since the last call.
    pub fn take_notes(&mut self) -> Vec<Note> {
        std::mem::take(&mut self.notes)
    }

    /// The work done so far: bytes looked at and searched.
    #[cfg(test)]
    pub(crate) fn work(&self) -> u64 {
        self.work
    }

    /// One line read, its line break included (but for the last).
    fn line(&mut self, bytes: &[u8], emit: Emit<'_>) {
        self.lines += 1;
        let (text, stripped) = lossy::decode(bytes);
        let stripped = stripped.map(|(stripped, invalid)| {
            self.notes.push(Note::InvalidUtf8 {
                line: self.lines,
                bytes: invalid,
            });
            stripped
        });
        if self.redactor.operator.is_none() {
            self.redact(&text, stripped.as_ref(), &[], self.lines, emit);
            return;
        }
        self.held.text.push_str(&text);
        self.held.lines.push_back(HeldLine {
            len: text.len(),
            number: self.lines,
            stripped,
        });
        self.advance(End::More, emit);
    }

    /// Finds the operator values that are final in the held lines and
    /// redacts the lines no value could still reach.
    fn advance(&mut self, end: End, emit: Emit<'_>) {
        let redactor = self.redactor;
        let Some(operator) = &redactor.operator else {
            return;
        };
        if self.held.lines.is_empty() {
            return;
        }
        let held = &mut self.held;
        let open = if end == End::More && operator.spans_lines() {
            operator.open_positions(&held.text, &mut self.work)
        } else {
            Vec::new()
        };
        let hold_from = loop {
            let first_open = open.iter().copied().find(|&p| p >= held.next);
            match operator.find(&held.text, held.next, &mut self.work) {
                Some((start, end)) if first_open.is_none_or(|p| p > start) => {
                    held.found.push((start, end));
                    held.next = end;
                }
                _ => break first_open,
            }
        };
        if end == End::Break && operator.spans_lines() {
            let open = operator.open_positions(&held.text, &mut self.work);
            if let Some(&start) = open.iter().find(|&&p| p >= held.next) {
                held.found.push((start, held.text.len()));
                held.next = held.text.len();
            }
        }
        let limit = hold_from.unwrap_or(held.text.len());
        let text = std::mem::take(&mut held.text);
        let mut found = std::mem::take(&mut held.found);
        let mut start = 0;
        let mut values = Vec::new();
        while let Some(line) = self.held.lines.front() {
            let end = start + line.len;
            if end > limit {
                break;
            }
            let line = self.held.lines.pop_front().expect("a front line");
            values.clear();
            values.extend(
                found
                    .iter()
                    .filter(|&&(s, e)| s < end && e > start)
                    .map(|&(s, e)| (s.max(start) - start, e.min(end) - start)),
            );
            self.redact(
                &text[start..end],
                line.stripped.as_ref(),
                &values,
                line.number,
                emit,
            );
            start = end;
        }
        found.retain(|&(_, e)| e > start);
        for value in &mut found {
            *value = (value.0.max(start) - start, value.1 - start);
        }
        self.held.found = found;
        self.held.text = text[start..].to_owned();
        self.held.next = self.held.next.max(start) - start;
    }

    /// Redacts one line and hands on the output it completes.
    fn redact(
        &mut self,
        text: &str,
        stripped: Option<&Stripped>,
        values: &[(usize, usize)],
        number: u64,
        emit: Emit<'_>,
    ) {
        let redactor = self.redactor;
        let rules = &redactor.rules;
        let incoming = self.carry;
        let mut scan = Scan::new(text);
        let mut carry = rules.scan_line(&mut scan, incoming, values);
        self.work += scan.work;
        if let Some(stripped) = stripped {
            let values = match &redactor.operator {
                Some(operator) => operator.find_all(&stripped.text, &mut self.work),
                None => Vec::new(),
            };
            let mut other = Scan::new(&stripped.text);
            carry = carry | rules.scan_line(&mut other, incoming, &values);
            self.work += other.work;
            for span in other.spans {
                let (start, end) = stripped.to_decoded(span.start, span.end);
                scan.spans.push(Span { start, end, ..span });
            }
        }
        if scan.spans.is_empty() && self.pending.is_empty() && !incoming.pem && !carry.pem {
            // Nothing to change: the line goes on as it is.
            self.continuing = false;
            self.carry = carry;
            if text.ends_with('\n') {
                emit(text);
            } else {
                self.pending.push_str(text);
            }
            return;
        }
        self.continuing = paint(text, &scan.spans, self.continuing, &mut self.pending);
        self.carry = carry;
        self.after(incoming.pem, text.len() as u64, number, emit);
    }

    /// Follows the PEM block across the line just redacted, and hands on
    /// the output if it ends a line.
    fn after(&mut self, was_open: bool, bytes: u64, number: u64, emit: Emit<'_>) {
        match (was_open, self.carry.pem) {
            (false, true) => {
                self.block = Some(Block {
                    line: number,
                    dropped: 0,
                    released: false,
                })
            }
            (true, true) => {
                if let Some(block) = &mut self.block {
                    block.dropped += bytes;
                    if !block.released && block.dropped > self.max_line as u64 {
                        // Written now, so that a live reader sees it; the
                        // block goes on being dropped.
                        block.released = true;
                        self.notes.push(Note::BlockPastLimit { line: block.line });
                        self.pending.push('\n');
                    }
                }
            }
            (true, false) => {
                if let Some(block) = self.block.take() {
                    // The line break the block's first line was written with.
                    if block.released && self.pending.trim_end_matches(['\r', '\n']).is_empty() {
                        self.pending.clear();
                    }
                }
            }
            (false, false) => {}
        }
        if self.pending.ends_with('\n') {
            emit(&self.pending);
            self.pending.clear();
        }
    }

    /// Starts skipping a line over the limit: `bytes` are its bytes after
    /// those read already.
    fn start_skipping(&mut self, bytes: &[u8], emit: Emit<'_>) {
        self.advance(End::Break, emit);
        self.lines += 1;
        let mut skipping = Skipping::new(self.lines, self.carry.pem);
        skipping.take(&self.partial);
        skipping.take(bytes);
        self.partial.clear();
        self.skipping = Some(skipping);
    }

    /// Ends the line being skipped, `newline` when a line break ended it:
    /// a marker stands in its place.
    fn end_skipping(&mut self, newline: bool, emit: Emit<'_>) {
        let Some(skipping) = self.skipping.take() else {
            return;
        };
        self.notes.push(Note::LineTooLong {
            line: skipping.number,
            bytes: skipping.bytes,
        });
        let incoming = self.carry;
        self.carry = skipping.carry(&self.redactor.rules, incoming, &mut self.work);
        if !(self.continuing && self.carry.pem) {
            self.pending.push_str(SECRET);
        }
        self.continuing = self.carry.pem;
        if newline && !self.carry.pem {
            self.pending.push('\n');
        }
        self.after(incoming.pem, skipping.bytes, skipping.number, emit);
    }
}
