//! `aep redact`: the AEP-0003 §9.4 redaction pipeline over standard input.

use std::io::{ErrorKind, Read, Write};

use aep::redact::{Note, Redactor};

use super::Status;
use crate::common::error::{Context, Error, Result};
use crate::common::input::parse_bytes;
use crate::common::output::{Stdout, WriteError};
use crate::common::redaction::PipelineArgs;
use crate::diag;

const LONG_ABOUT: &str = "\
Reads standard input, passes it through the redaction pipeline of AEP-0003
§9.4 and writes the result to standard output: secrets and credentials
(PEM blocks, AWS key ids, Bearer tokens, password/secret/api_key/token
assignments and Authorization values, JWTs, GitHub, GitLab, Slack,
OpenAI-style, Stripe and Google keys) and the --secret values become
[REDACTED:secret], home directories (--home, by default $HOME, and any
/home/<user> or /Users/<user>) become ~, emails and phone numbers become
[REDACTED:pii] unless --no-pii.

Text is redacted as it arrives: each line is written, whole, as soon as it
is read (a PEM block's first line when the block ends), and the output is
flushed whenever the input has nothing more ready, so `tail -f log | aep
redact` keeps up. No line longer than --max-bytes is held: such a line is
replaced by [REDACTED:secret] and reported. Bytes that are not UTF-8 become
U+FFFD (reported); what is secret with them read as U+FFFD or removed is
redacted. A PEM block with no END line is dropped to the end of the input.

With --json the input is one JSON value: every string in it is redacted,
numbers, booleans and null stay, and the value of a credential-named key
(token, password, api_key, Authorization, ...) is replaced whatever it is.";

const AFTER_HELP: &str = "\
Exit status: 0 when the output is written, 1 when a line over --max-bytes
was replaced (reported on standard error with its line), 2 for usage
errors and inputs that cannot be read (with --json: not UTF-8, not JSON,
larger than --max-bytes).

Examples:
  aep redact < transcript.txt
  tail -f agent.log | aep redact --secret-env DB_PASSWORD
  aep redact --json --home \"$HOME\" --secret-env DB_PASSWORD < args.json";

/// The arguments of `aep redact`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Redact secrets, home directories and PII from standard input",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    /// Read one JSON value and redact the strings in it.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub pipeline: PipelineArgs,

    /// The longest line held, in bytes (suffixes KiB, MiB, GiB accepted);
    /// with --json, the most input read.
    #[arg(
        long,
        value_name = "BYTES",
        default_value = "64MiB",
        value_parser = parse_bytes
    )]
    pub max_bytes: usize,
}

/// Runs `aep redact`.
pub fn run(args: &Args) -> Status {
    let redactor = args.pipeline.redactor();
    if args.json {
        json(args, &redactor)
    } else {
        text(args, &redactor)
    }
}

/// Text: a stream, a line at a time.
fn text(args: &Args, redactor: &Redactor) -> Status {
    let mut stream = redactor.stream(args.max_bytes);
    let mut out = Lines {
        stdout: Stdout::new(),
        failed: None,
    };
    let mut status = Status::Clean;
    crate::common::input::say_reading_stdin("text");
    let mut input = std::io::stdin().lock();
    let mut buffer = vec![0; 64 * 1024];
    loop {
        let read = match input.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => {
                diag!("aep redact: error: <stdin>: cannot read: {e}");
                return Status::Failure;
            }
        };
        stream.write(&buffer[..read], &mut |line| out.line(line));
        report(&mut stream, &mut status);
        // Nothing more is ready, or the next read would tell: what is
        // complete goes out now, for a reader waiting on a live stream.
        if let Some(stop) = written(out.flush(), status) {
            return stop;
        }
    }
    stream.finish(&mut |line| out.line(line));
    report(&mut stream, &mut status);
    written(out.flush(), status).unwrap_or(status)
}

/// Standard output taking whole lines, each in one write to its buffer,
/// and keeping the first failure.
struct Lines {
    stdout: Stdout,
    failed: Option<WriteError>,
}

impl Lines {
    fn line(&mut self, line: &str) {
        if self.failed.is_none() {
            if let Err(e) = self.stdout.writer().write_all(line.as_bytes()) {
                self.failed = Some(WriteError::from(e));
            }
        }
    }

    fn flush(&mut self) -> Result<(), WriteError> {
        match self.failed.take() {
            Some(e) => Err(e),
            None => self.stdout.flush(),
        }
    }
}

/// Reports what the stream did besides redacting.
fn report(stream: &mut aep::redact::Stream<'_>, status: &mut Status) {
    for note in stream.take_notes() {
        diag!("aep redact: <stdin>:{}: {note}", note.line());
        if matches!(note, Note::LineTooLong { .. }) {
            *status = Status::Findings;
        }
    }
}

/// The status to stop with after a write, if it failed.
fn written(result: Result<(), WriteError>, status: Status) -> Option<Status> {
    match result {
        Ok(()) => None,
        Err(WriteError::Closed) => Some(status),
        Err(e) => {
            diag!("aep redact: error: {e}");
            Some(Status::Failure)
        }
    }
}

/// One JSON value, read whole.
fn json(args: &Args, redactor: &Redactor) -> Status {
    let text = match read_stdin(args.max_bytes) {
        Ok(text) => text,
        Err(message) => {
            diag!("aep redact: error: <stdin>: {message}");
            return Status::Failure;
        }
    };
    let mut value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(e) => {
            diag!(
                "aep redact: error: <stdin>:{}:{}: not JSON: {e}",
                e.line(),
                e.column()
            );
            return Status::Failure;
        }
    };
    redactor.redact_value(&mut value);
    let mut output = value.to_string();
    output.push('\n');
    let mut out = Stdout::new();
    let result = out
        .writer()
        .write_all(output.as_bytes())
        .map_err(WriteError::from)
        .and_then(|()| out.flush());
    written(result, Status::Clean).unwrap_or(Status::Clean)
}

/// Standard input as text, refusing more than `max` bytes and bytes that
/// are not UTF-8 (naming the offset).
fn read_stdin(max: usize) -> Result<String> {
    let mut bytes = Vec::new();
    crate::common::input::say_reading_stdin("text");
    std::io::stdin()
        .lock()
        .take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .context("cannot read")?;
    if bytes.len() > max {
        return Err(Error::msg(format!("larger than --max-bytes ({max} bytes)")));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::msg(format!(
            "not UTF-8 at byte {} (a JSON text is UTF-8)",
            e.utf8_error().valid_up_to()
        ))
    })
}
