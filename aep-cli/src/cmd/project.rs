//! `aep project`: the batch state projection of JSONL files, as JSON.

use aep::projection::{self, project};
use aep::reader::{too_long_message, unsupported_version, Line, LineReader};
use aep::Event;

use super::Status;
use crate::common::input::{self, InputArgs, InputError};
use crate::common::output::{Stdout, WriteError};
use crate::diag;

const LONG_ABOUT: &str = "\
Folds the events of JSONL captures into per-session state, as the AEP SDKs'
state projection does, and prints it as JSON on standard output:
{\"sessions\": [...], \"violations\": [...]}, sessions sorted by (source, session).

The projection is the batch one: the events of all FILEs together are grouped
by (source, session) and each group is ordered by (epoch, seq) before the
fold, so the order of lines and files does not matter. Every event is held
in memory until the fold.

Lines are read as the projection reads them: a line that is not a valid
event but has the attributes the fold reads (source, id, type, time, agent,
session, run, subject, seq, epoch, data) is folded from them, with a note on
standard error naming its line and what was left out; a line that cannot be
read at all (not a JSON object, no string id, type, time, source or agent) is
skipped with a note. Run `aep validate` for the full checks.";

const AFTER_HELP: &str = "\
Exit status:
  0  the projection has no violations and every line was read
  1  the projection has violations (they are in the output), or some line
     could not be read (noted on standard error, the rest is projected)
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
    let mut unreadable = 0;
    for path in &args.input.files {
        let input = match input::open(path) {
            Ok(input) => input,
            Err(e) => {
                diag!("aep project: error: {e}");
                return Status::Failure;
            }
        };
        match read_events(input, args.input.limit.max_line_bytes, &mut events) {
            Ok(n) => unreadable += n,
            Err(e) => {
                diag!("aep project: error: {e}");
                return Status::Failure;
            }
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
    if unreadable > 0 {
        let lines = if unreadable == 1 { "line" } else { "lines" };
        diag!("aep project: {unreadable} {lines} could not be read; the rest is projected");
    }
    if snapshot.violations.is_empty() && unreadable == 0 {
        Status::Clean
    } else {
        Status::Findings
    }
}

/// Appends the events of `input` to `events`, read as the projection reads
/// them ([`aep::projection::read`]): a line that is not a valid event but
/// has what the fold reads is folded, with a note; one that cannot be read
/// at all is noted and skipped. Returns how many lines could not be read.
fn read_events(
    input: input::Input,
    max_line_bytes: usize,
    events: &mut Vec<Event>,
) -> Result<u64, InputError> {
    let name = input.name;
    let mut lines = LineReader::new(input.reader, max_line_bytes);
    let (mut unreadable, mut unsupported) = (0u64, 0u64);
    loop {
        let (number, text) = match lines.next_line() {
            Ok(None) => break,
            Ok(Some((number, Line::TooLong { bytes }))) => {
                unreadable += 1;
                let why = too_long_message(bytes, max_line_bytes);
                diag!("aep project: {name}:{number}: {why}");
                continue;
            }
            Ok(Some((number, Line::Text(text)))) => (number, text),
            Err(e) => return Err(InputError::read(&name, &e)),
        };
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match projection::read(text) {
            Ok(read) => {
                if let Some(invalid) = &read.invalid {
                    let mut note = format!(
                        "aep project: {name}:{number}: not a valid event ({invalid}); \
                         folded from the attributes the projection reads"
                    );
                    if !read.left_out.is_empty() {
                        note.push_str(", without ");
                        note.push_str(&read.left_out.join(", "));
                    }
                    diag!("{note}");
                }
                events.push(read.event);
            }
            Err(e) => match unsupported_version(text) {
                Some(version) => {
                    unsupported += 1;
                    if unsupported == 1 {
                        diag!(
                            "aep project: {name}:{number}: `aep` is \"{version}\", an unsupported \
                             major version: this line and every later one of an unsupported \
                             version are skipped (AEP-0003 §3.1)"
                        );
                    }
                }
                None => {
                    unreadable += 1;
                    diag!("aep project: {name}:{number}: {e}; skipped");
                }
            },
        }
    }
    if unsupported > 1 {
        diag!("aep project: {name}: {unsupported} lines of an unsupported version skipped in all");
    }
    Ok(unreadable)
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
