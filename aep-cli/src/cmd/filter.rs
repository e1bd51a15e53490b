//! `aep filter`: the lines whose events match an `attr-match` filter
//! (AEP-0003 §6), passed on byte for byte.

use std::io;
use std::path::PathBuf;

use aep::filter::Filter;
use aep::reader::{too_long_message, unsupported_version, Line, LineReader};

use super::Status;
use crate::common::input::{self, InputError, Reader};
use crate::common::output::{Stdout, WriteError};
use crate::diag;

const LONG_ABOUT: &str = "\
Passes on the lines of JSONL streams whose AEP events match a filter, written
byte for byte as they came (line endings included; a last line without one
gets a newline). The filter is an `attr-match` filter (AEP-0003 §6): a JSON
object whose members are predicates on envelope attributes, all of which
must match:

  {\"session\": \"s_8f2c\"}                          equality
  {\"agent\": [\"claude-code\", \"codex\"]}            any of
  {\"type\": [\"attention.*\", \"error.*\"]}           type prefixes
  {\"severity\": {\"gte\": \"notice\"}}                severity range

An absent attribute matches nothing, except severity, capture and epoch,
which read as info, metadata and 0. `time`, `seq`, `aep`, `traceparent` and
`data` are not filterable, and `*` makes a pattern only on `type` (anywhere
else it is refused); an invalid filter is refused with its reason.

Only the envelope is decoded (strictly: a line must be an event); payloads
are not checked, `aep validate` does that. A line that is not an event is
reported on standard error with its line number and not written. Lines of
an unsupported major `aep` version are skipped (AEP-0003 §3.1).";

const AFTER_HELP: &str = "\
Exit status:
  0  every line was an event (matching or not)
  1  some lines were not events (reported on standard error, not written)
  2  an invalid filter, a usage error, or an input that cannot be read

Examples:
  aep filter '{\"session\": \"s_8f2c\"}' capture.jsonl
  adapter --emit-jsonl | aep filter '{\"severity\": {\"gte\": \"warning\"}}' - | notifier
  aep filter '{\"type\": \"tool.*\", \"agent\": \"codex\"}' day1.jsonl day2.jsonl > tools.jsonl";

/// The arguments of `aep filter`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Pass on the lines of JSONL streams whose AEP events match an attr-match filter",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    /// The filter, a JSON object (AEP-0003 §6).
    #[arg(value_name = "FILTER_JSON")]
    pub filter: String,

    #[command(flatten)]
    pub limit: input::LineLimit,

    /// JSONL files to read, one event per line; `-` (the default) reads
    /// standard input.
    #[arg(value_name = "FILE", default_value = "-")]
    pub files: Vec<PathBuf>,
}

/// Runs `aep filter`.
pub fn run(args: &Args) -> Status {
    let filter = match Filter::parse(&args.filter) {
        Ok(filter) => filter,
        Err(e) => {
            diag!("aep filter: error: {e}");
            return Status::Failure;
        }
    };
    let mut out = Stdout::new();
    let mut status = Status::Clean;
    for path in &args.files {
        let input = match input::open(path) {
            Ok(input) => input,
            Err(e) => {
                diag!("aep filter: error: {e}");
                status = status.max(Status::Failure);
                continue;
            }
        };
        let mut lines = LineReader::new(input.reader, args.limit.max_line_bytes);
        match filter_one(&filter, &input.name, &mut lines, &mut out) {
            Ok(bad) if bad > 0 => status = status.max(Status::Findings),
            Ok(_) => {}
            Err(Stop::Read(e)) => {
                diag!("aep filter: error: {}", InputError::read(&input.name, &e));
                status = status.max(Status::Failure);
            }
            Err(Stop::Write(WriteError::Closed)) => return status,
            Err(Stop::Write(e)) => {
                diag!("aep filter: error: {e}");
                return Status::Failure;
            }
        }
    }
    match out.flush() {
        Ok(()) | Err(WriteError::Closed) => status,
        Err(e) => {
            diag!("aep filter: error: {e}");
            Status::Failure
        }
    }
}

/// Why filtering one input stopped early.
enum Stop {
    Read(io::Error),
    Write(WriteError),
}

/// Filters one input; returns how many lines were not events.
fn filter_one(
    filter: &Filter,
    name: &str,
    lines: &mut LineReader<Reader>,
    out: &mut Stdout,
) -> Result<u64, Stop> {
    let mut bad = 0;
    let mut skipped = 0u64;
    loop {
        // Before a read that may wait, what is decided leaves.
        if !input::line_ready(lines.get_ref()) {
            out.flush().map_err(Stop::Write)?;
        }
        let Some((number, line, ending)) = lines.next_line_with_ending().map_err(Stop::Read)?
        else {
            break;
        };
        let text = match line {
            Line::TooLong { bytes } => {
                bad += 1;
                diag!(
                    "aep filter: {name}:{number}: {}",
                    too_long_message(bytes, lines.max_line_bytes())
                );
                continue;
            }
            Line::Text(text) => text,
        };
        match decide(filter, text) {
            Decision::Pass => {
                // The line as it came; a last line without a newline gets one.
                out.line(text, ending).map_err(Stop::Write)?;
            }
            Decision::Drop => {}
            Decision::Unsupported(version) => {
                skipped += 1;
                if skipped == 1 {
                    diag!(
                        "aep filter: {name}:{number}: `aep` is \"{version}\", an unsupported \
                         major version: this line and every later one of an unsupported \
                         version are skipped (AEP-0003 §3.1)"
                    );
                }
            }
            Decision::NotAnEvent(why) => {
                bad += 1;
                diag!("aep filter: {name}:{number}: not an event, not written: {why}");
            }
        }
    }
    if skipped > 1 {
        diag!("aep filter: {name}: {skipped} lines of an unsupported version skipped");
    }
    Ok(bad)
}

/// What happens to one line.
enum Decision {
    Pass,
    Drop,
    Unsupported(String),
    NotAnEvent(String),
}

/// Decodes the envelope of `text` and checks the filter on it.
fn decide(filter: &Filter, text: &[u8]) -> Decision {
    let Ok(json) = std::str::from_utf8(text) else {
        return Decision::NotAnEvent("not UTF-8".to_owned());
    };
    match filter.matches_json(json) {
        Ok(true) => Decision::Pass,
        Ok(false) => Decision::Drop,
        Err(error) => match unsupported_version(text) {
            Some(version) => Decision::Unsupported(version),
            None if json.trim().is_empty() => Decision::NotAnEvent(
                "a blank line (JSONL carries one event per line, AEP-0003 §3.1)".to_owned(),
            ),
            None => Decision::NotAnEvent(error.to_string()),
        },
    }
}
