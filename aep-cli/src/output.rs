//! Standard output and standard error.
//!
//! Results go to a locked, buffered standard output. When the reader of
//! a pipe goes away (`aep validate big.jsonl | head`), writing fails with
//! a broken pipe: that is [`WriteError::Closed`], and the command stops
//! quietly. Diagnostics go to standard error through [`diagnostic`],
//! which never panics, even when standard error is closed.

use std::fmt;
use std::io::{self, BufWriter, IsTerminal, StdoutLock, Write};

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

/// Locked, buffered standard output.
pub struct Stdout {
    writer: BufWriter<StdoutLock<'static>>,
    terminal: bool,
}

impl Stdout {
    /// Locks standard output for the life of the command.
    pub fn new() -> Self {
        let stdout = io::stdout();
        let terminal = stdout.is_terminal();
        Stdout {
            writer: BufWriter::with_capacity(64 * 1024, stdout.lock()),
            terminal,
        }
    }

    /// Whether standard output is a terminal.
    pub fn is_terminal(&self) -> bool {
        self.terminal
    }

    /// The buffered writer.
    pub fn writer(&mut self) -> &mut impl Write {
        &mut self.writer
    }

    /// Writes out what is buffered.
    pub fn flush(&mut self) -> Result<(), WriteError> {
        Ok(self.writer.flush()?)
    }
}

/// Writes one line to standard error, ignoring failure: a diagnostic that
/// cannot be shown must not turn into a panic.
pub fn diagnostic(args: fmt::Arguments<'_>) {
    let mut stderr = io::stderr().lock();
    let _ = stderr.write_fmt(args);
    let _ = stderr.write_all(b"\n");
}

/// `diagnostic(format_args!(...))`.
#[macro_export]
macro_rules! diag {
    ($($arg:tt)*) => {
        $crate::output::diagnostic(format_args!($($arg)*))
    };
}
