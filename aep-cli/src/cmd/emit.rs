//! `aep emit`: events holding full content in, the events an adapter emits
//! at a capture ceiling out (AEP-0003 §9).

use aep::emit::Emitter;
use aep::reader::{too_long_message, Line, LineReader};
use aep::{Capture, Event};

use super::Status;
use crate::common::error::Error;
use crate::common::input::{self, InputError, OneInputArgs};
use crate::common::output::{Stdout, WriteError};
use crate::common::redaction::PipelineArgs;
use crate::diag;

const LONG_ABOUT: &str = "\
Reads JSONL events whose data holds full content (a tool's real arguments,
a model's real prompt) and writes, one per line, the events an adapter
emits at the capture ceiling --ceiling (AEP-0003 §9): digests of the
original content first; at `redacted`, the *_redacted siblings and every
redacted-level text through the redaction pipeline (see `aep redact`) and
the full-only members dropped; at `metadata`, only structural members, with
the prompt and labels synthesized; at `none`, the envelope alone. `capture`
is set to the ceiling, or to the event's own `capture` where that is lower:
no level is ever raised (AEP-0001 §8.2(b)). An event without `capture` is
taken as the full content it carries; one without `data` is emitted
without it.";

const AFTER_HELP: &str = "\
Exit status: 0 when every line was emitted, 1 when some line was not an
event (reported on standard error with its line, and skipped), 2 for usage
errors and inputs that cannot be read.

Examples:
  aep emit --ceiling redacted full.jsonl > redacted.jsonl
  adapter --full | aep emit --ceiling metadata - | aep validate -";

/// The arguments of `aep emit`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Emit events holding full content at a capture ceiling",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    /// The capture ceiling: none, metadata, redacted or full.
    #[arg(long, value_name = "LEVEL")]
    pub ceiling: Capture,

    #[command(flatten)]
    pub pipeline: PipelineArgs,

    #[command(flatten)]
    pub input: OneInputArgs,
}

/// Runs `aep emit`.
pub fn run(args: &Args) -> Status {
    let input = match input::open(&args.input.file) {
        Ok(input) => input,
        Err(e) => {
            diag!("aep emit: error: {e}");
            return Status::Failure;
        }
    };
    let emitter = Emitter::with_redactor(args.pipeline.redactor());
    let mut out = Stdout::new();
    let name = input.name;
    let mut lines = LineReader::new(input.reader, args.input.limit.max_line_bytes);
    let mut status = Status::Clean;
    loop {
        // Before a read that may wait, what is decided leaves.
        if !input::line_ready(lines.get_ref()) {
            match out.flush() {
                Ok(()) => {}
                Err(WriteError::Closed) => return status,
                Err(e) => {
                    diag!("aep emit: error: {e}");
                    return Status::Failure;
                }
            }
        }
        let (number, line) = match lines.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => {
                diag!("aep emit: error: {}", InputError::read(&name, &e));
                return Status::Failure;
            }
        };
        let text = match line {
            Line::Text(text) => text,
            Line::TooLong { bytes } => {
                diag!(
                    "aep emit: {name}:{number}: {}",
                    too_long_message(bytes, args.input.limit.max_line_bytes)
                );
                status = Status::Findings;
                continue;
            }
        };
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let emitted = Event::from_slice(text)
            .map_err(Error::from_source)
            .and_then(|event| {
                emitter
                    .emit(&event, args.ceiling)
                    .map_err(Error::from_source)
            });
        let event = match emitted {
            Ok(event) => event,
            Err(e) => {
                diag!("aep emit: {name}:{number}: {e}; skipped");
                status = Status::Findings;
                continue;
            }
        };
        let line = match serde_json::to_vec(&event) {
            Ok(line) => line,
            Err(e) => {
                diag!("aep emit: {name}:{number}: cannot encode: {e}; skipped");
                status = Status::Findings;
                continue;
            }
        };
        match out.line(&line, b"\n") {
            Ok(()) => {}
            Err(WriteError::Closed) => return status,
            Err(e) => {
                diag!("aep emit: error: {e}");
                return Status::Failure;
            }
        }
    }
    match out.flush() {
        Ok(()) | Err(WriteError::Closed) => status,
        Err(e) => {
            diag!("aep emit: error: {e}");
            Status::Failure
        }
    }
}
