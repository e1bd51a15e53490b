//! Standard output and standard error.
//!
//! Results go to a locked standard output that gathers whole lines
//! ([`Stdout`]). When the reader of
//! a pipe goes away (`aep validate big.jsonl | head`), writing fails with
//! a broken pipe: that is [`WriteError::Closed`], and the command stops
//! quietly. Diagnostics go to standard error through [`diagnostic`],
//! which never panics, even when standard error is closed.

use std::fmt;
use std::io::{self, IsTerminal, StdoutLock, Write};

use crate::common::terminal::Newlines;

/// Why a write to standard output failed.
#[derive(Debug)]
pub enum WriteError {
    /// The reader went away: stop without a word.
    Closed,
    /// Any other failure, such as a full disk.
    Failed(io::Error),
}

impl From<io::Error> for WriteError {
    fn from(error: io::Error) -> Self {
        if error.kind() == io::ErrorKind::BrokenPipe {
            WriteError::Closed
        } else {
            WriteError::Failed(error)
        }
    }
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Closed => f.write_str("standard output was closed"),
            WriteError::Failed(e) => write!(f, "cannot write to standard output: {e}"),
        }
    }
}

/// How many bytes of whole lines are gathered before they are written.
const BATCH: usize = 64 * 1024;

/// Past this many bytes without a line end, [`Stdout::writer`] output is
/// written anyway (it is not JSONL).
const MAX_PENDING: usize = 16 << 20;

/// Locked standard output that writes whole lines only.
///
/// Lines are gathered and written in batches, each batch ending at the end
/// of a line with one `write` (AEP-0003 §3.1: a line is written atomically,
/// so that concurrent writers appending to one file, or a reader tailing
/// it, never see a torn line). [`flush`](Self::flush) writes what is
/// gathered; a command that passes a live stream on calls it whenever its
/// input has no more lines ready, so that a line leaves as soon as it is
/// decided.
pub struct Stdout {
    out: Batch<StdoutLock<'static>>,
    terminal: bool,
}

/// The gathered bytes and where they go.
struct Batch<W> {
    out: W,
    pending: Vec<u8>,
}

impl<W: Write> Batch<W> {
    /// Writes the gathered whole lines once they fill a batch.
    fn maybe_write(&mut self) -> io::Result<()> {
        if self.pending.len() < BATCH {
            return Ok(());
        }
        match self.pending.iter().rposition(|&b| b == b'\n') {
            Some(last) => self.write_out(last + 1),
            None if self.pending.len() >= MAX_PENDING => self.write_out(self.pending.len()),
            None => Ok(()),
        }
    }

    /// Writes the first `len` gathered bytes with one `write_all` (one
    /// `write` unless the system takes less) and drops them.
    fn write_out(&mut self, len: usize) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        let result = self.out.write_all(&self.pending[..len]);
        self.pending.drain(..len);
        result?;
        // Standard output's own line buffer is empty after a write that
        // ends with a line end; this pushes a last unended piece too.
        self.out.flush()
    }
}

impl<W: Write> Write for Batch<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        self.maybe_write()?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_out(self.pending.len())?;
        self.out.flush()
    }
}

impl Stdout {
    /// Locks standard output for the life of the command.
    pub fn new() -> Self {
        let stdout = io::stdout();
        let terminal = stdout.is_terminal();
        Stdout {
            out: Batch {
                out: stdout.lock(),
                pending: Vec::with_capacity(BATCH + 4096),
            },
            terminal,
        }
    }

    /// Whether standard output is a terminal.
    pub fn is_terminal(&self) -> bool {
        self.terminal
    }

    /// Queues one line: `text`, then `ending`, then a `\n` unless they
    /// end with one. It is written whole, with the lines before it.
    pub fn line(&mut self, text: &[u8], ending: &[u8]) -> Result<(), WriteError> {
        let pending = &mut self.out.pending;
        pending.extend_from_slice(text);
        pending.extend_from_slice(ending);
        if pending.last() != Some(&b'\n') {
            pending.push(b'\n');
        }
        Ok(self.out.maybe_write()?)
    }

    /// A writer for output that is not made of [`line`](Self::line)s; it
    /// too is written in batches that end at a line end.
    pub fn writer(&mut self) -> &mut impl Write {
        &mut self.out
    }

    /// Writes out what is gathered.
    pub fn flush(&mut self) -> Result<(), WriteError> {
        Ok(self.out.flush()?)
    }
}

/// Writes one line to standard error, ignoring failure: a diagnostic that
/// cannot be shown must not turn into a panic. Control characters other
/// than line ends are escaped: diagnostics quote event text.
pub fn diagnostic(args: fmt::Arguments<'_>) {
    let text = args.to_string();
    let mut line = crate::common::terminal::escape(&text, Newlines::Keep).into_owned();
    line.push('\n');
    // One write, so that lines from several processes do not mix.
    let _ = io::stderr().lock().write_all(line.as_bytes());
}

/// `diagnostic(format_args!(...))`.
#[macro_export]
macro_rules! diag {
    ($($arg:tt)*) => {
        $crate::common::output::diagnostic(format_args!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records each `write` call.
    #[derive(Default)]
    struct Calls(Vec<Vec<u8>>);

    impl Write for Calls {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_write_ends_at_a_line_end() {
        let mut batch = Batch {
            out: Calls::default(),
            pending: Vec::new(),
        };
        // Lines written in small pieces, as an encoder writes them.
        let line = format!("{{\"pad\":\"{}\"}}\n", "x".repeat(999));
        for _ in 0..300 {
            for piece in line.as_bytes().chunks(7) {
                batch.write_all(piece).unwrap();
            }
        }
        batch.flush().unwrap();
        let calls = &batch.out.0;
        assert!(calls.len() > 1, "written in batches");
        for call in calls {
            assert_eq!(call.last(), Some(&b'\n'));
            assert_eq!(call.len() % line.len(), 0, "whole lines");
        }
        assert_eq!(calls.iter().map(Vec::len).sum::<usize>(), 300 * line.len());
    }
}
