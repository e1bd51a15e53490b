//! A line over a stream's limit: skipped without being held, while
//! keeping track of what it leaves open for the next line.
//!
//! Whether it ends inside a PEM block is followed byte by byte, erring
//! towards dropping: any `-----BEGIN ` opens a block, only a whole
//! `-----END <LABEL>-----` closes one. What it leaves owed (a credential
//! whose value comes next) is read from its last bytes; when those could
//! hide the start of such a construct (they begin or hold a long stretch
//! of whitespace), the next line's first word is taken as a value.

use super::carry::{Carry, OWE_VALUE};
use super::line::Rules;
use super::lossy;
use super::scan::Scan;

/// How much of the end of the line is kept.
const TAIL: usize = 8 * 1024;
/// A stretch of whitespace this long in the tail could hide a credential
/// name before it.
const LONG_SPACE: usize = 2 * 1024;

/// A line being skipped.
#[derive(Debug)]
pub(crate) struct Skipping {
    /// Its number.
    pub number: u64,
    /// Its length so far.
    pub bytes: u64,
    tail: Vec<u8>,
    markers: Markers,
}

impl Skipping {
    /// Starts skipping line `number`, `in_block` when it starts inside a
    /// PEM block.
    pub fn new(number: u64, in_block: bool) -> Self {
        Skipping {
            number,
            bytes: 0,
            tail: Vec::new(),
            markers: Markers {
                open: in_block,
                state: State::Idle,
            },
        }
    }

    /// Takes the next bytes of the line.
    pub fn take(&mut self, bytes: &[u8]) {
        self.bytes += bytes.len() as u64;
        for &b in bytes {
            self.markers.feed(b);
        }
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 2 * TAIL {
            self.tail.drain(..self.tail.len() - TAIL);
        }
    }

    /// What the line carries out; `carry` is what it came in with.
    pub fn carry(&self, rules: &Rules, carry: Carry, work: &mut u64) -> Carry {
        let tail = &self.tail[self.tail.len().saturating_sub(TAIL)..];
        let whole = tail.len() as u64 == self.bytes;
        let mut text = lossy::decode(tail).0.into_owned();
        text.push('\n');
        let mut scan = Scan::new(&text);
        let incoming = if whole { carry } else { Carry::default() };
        let mut owed = rules.scan_line(&mut scan, incoming, &[]).owed;
        *work += scan.work;
        let cut_in_space = !whole && text.starts_with(char::is_whitespace);
        if cut_in_space || longest_space(&text) >= LONG_SPACE {
            owed |= OWE_VALUE;
        }
        Carry {
            pem: self.markers.open,
            owed,
        }
    }
}

fn longest_space(text: &str) -> usize {
    let (mut longest, mut run) = (0, 0);
    for c in text.chars() {
        run = if c.is_whitespace() {
            run + c.len_utf8()
        } else {
            0
        };
        longest = longest.max(run);
    }
    longest
}

/// The PEM markers, byte by byte.
#[derive(Debug)]
struct Markers {
    open: bool,
    state: State,
}

#[derive(Debug, Clone, Copy)]
enum State {
    Idle,
    Dashes(u8),
    Word { end: bool, matched: usize },
    Label { any: bool },
    Closing(u8),
}

impl Markers {
    fn feed(&mut self, b: u8) {
        let restart = |b: u8| {
            if b == b'-' {
                State::Dashes(1)
            } else {
                State::Idle
            }
        };
        self.state = match self.state {
            State::Idle => restart(b),
            State::Dashes(n) => match b {
                b'-' => State::Dashes(n.saturating_add(1)),
                b'B' if n >= 5 => State::Word {
                    end: false,
                    matched: 1,
                },
                b'E' if n >= 5 => State::Word {
                    end: true,
                    matched: 1,
                },
                _ => State::Idle,
            },
            State::Word { end, matched } => {
                let word: &[u8] = if end { b"END " } else { b"BEGIN " };
                if b != word[matched] {
                    restart(b)
                } else if matched + 1 < word.len() {
                    State::Word {
                        end,
                        matched: matched + 1,
                    }
                } else if end {
                    State::Label { any: false }
                } else {
                    self.open = true;
                    State::Idle
                }
            }
            State::Label { any } => match b {
                b'A'..=b'Z' | b'0'..=b'9' | b' ' => State::Label { any: true },
                b'-' if any => State::Closing(1),
                _ => restart(b),
            },
            State::Closing(n) => match b {
                b'-' if n == 4 => {
                    self.open = false;
                    State::Idle
                }
                b'-' => State::Closing(n + 1),
                _ => State::Idle,
            },
        };
    }
}
