//! `aep project`: the batch state projection of JSONL files, as JSON.

use aep::projection::project;
use aep::reader::EventReader;
use aep::Event;

use super::Status;
use crate::diag;
use crate::input::{self, InputArgs, InputError};
use crate::output::{Stdout, WriteError};

const LONG_ABOUT: &str = "\
Folds the events of JSONL captures into per-session state, as the AEP SDKs'
state projection does, and prints it as JSON on standard output:
{\"sessions\": [...], \"violations\": [...]}, sessions sorted by (source, session).

The projection is the batch one: the events of all FILEs together are grouped
by (source, session) and each group is ordered by (epoch, seq) before the
fold, so the order of lines and files does not matter. Every event is held
in memory until the fold.

A line that does not decode to an event is skipped with a note on standard
error naming its line; run `aep validate` for the full checks.";

const AFTER_HELP: &str = "\
Exit status:
  0  the projection has no violations
  1  the projection has violations (they are in the output)
  2  a usage error, or an input that cannot be read (nothing is printed)

Examples:
  aep project capture.jsonl
  aep project --compact relay-a.jsonl relay-b.jsonl | jq '.sessions[].runs'
  adapter --emit-jsonl | aep project -";

/// The arguments of `aep project`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Print the state projection of JSONL streams of AEP events as JSON",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    /// Print the JSON on one line instead of indented.
    #[arg(long)]
    pub compact: bool,

    #[command(flatten)]
    pub input: InputArgs,
}

/// Runs `aep project`.
pub fn run(args: &Args) -> Status {
    let mut events = Vec::new();
    for path in &args.input.files {
        let input = match input::open(path) {
            Ok(input) => input,
            Err(e) => {
                diag!("aep project: error: {e}");
                return Status::Failure;
            }
        };
        if let Err(e) = read_events(input, args.input.limit.max_line_bytes, &mut events) {
            diag!("aep project: error: {e}");
            return Status::Failure;
        }
    }
    let snapshot = project(&events);
    drop(events);
    let mut out = Stdout::new();
    let written = write_json(&mut out, &snapshot, args.compact).and_then(|()| out.flush());
    match written {
        Ok(()) | Err(WriteError::Closed) => {}
        Err(e) => {
            diag!("aep project: error: {e}");
            return Status::Failure;
        }
    }
    if snapshot.violations.is_empty() {
        Status::Clean
    } else {
        Status::Findings
    }
}

/// Appends the events of `input` to `events`; a line that does not give
/// an event is noted on standard error and skipped.
fn read_events(
    input: input::Input,
    max_line_bytes: usize,
    events: &mut Vec<Event>,
) -> Result<(), InputError> {
    let name = input.name;
    let mut reader = EventReader::with_max_line_bytes(input.reader, max_line_bytes);
    for result in reader.by_ref() {
        match result {
            Ok(event) => events.push(event),
            Err(e) if e.is_io() => {
                return Err(InputError {
                    name,
                    message: e.to_string(),
                })
            }
            // These messages already say the line is skipped.
            Err(e) if e.is_too_long() || e.is_unsupported_version() => {
                diag!("aep project: {name}: {e}");
            }
            Err(e) => diag!("aep project: {name}: {e}; skipped"),
        }
    }
    if reader.skipped() > 1 {
        diag!(
            "aep project: {name}: {} lines of an unsupported version skipped in all",
            reader.skipped()
        );
    }
    Ok(())
}

fn write_json(
    out: &mut Stdout,
    snapshot: &aep::projection::Snapshot,
    compact: bool,
) -> Result<(), WriteError> {
    let json = if compact {
        serde_json::to_vec(snapshot)
    } else {
        serde_json::to_vec_pretty(snapshot)
    };
    out.line(&json.map_err(std::io::Error::from)?, b"\n")
}
