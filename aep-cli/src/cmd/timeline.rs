//! `aep timeline`: one session's history, from a relay (`live=0`) or a
//! file, deduplicated and in protocol order; `--dag` draws the `cause`
//! tree.

use std::path::PathBuf;

use aep::reader::EventReader;
use aep::Event;

use super::Status;
use crate::common::error::{Context, Error, Result};
use crate::common::input::{self, LineLimit};
use crate::common::output::{Stdout, WriteError};
use crate::diag;
use crate::live::RelayArgs;

mod dag;

const LONG_ABOUT: &str = "\
Prints the history of one session: what the relay holds of it (a replay-only
read, GET /stream?live=0 with the session as the filter), or the session's
events in a JSONL file (--file, such as an `aep sink` capture). Events are
deduplicated on (source, id) and ordered by (epoch, seq); an event without
seq (a command) keeps its place after the event it followed. One line per
event, as `aep tail` prints them (--json: the JSON lines).

--dag draws the causal tree instead: each event under the event its `cause`
names (AEP-0001 §5.1), events whose cause is not in the history at the root,
e.g. tool.requested -> tool.completed -> attention.requested ->
attention.answered -> attention.resolved.";

const AFTER_HELP: &str = "\
Exit status: 0 when the session has events, 1 when it has none, 2 for usage
errors, unreadable files and relays that cannot be read.

Examples:
  aep timeline s_8f2c
  aep timeline s_8f2c --dag
  aep timeline s_8f2c --file captures/s_8f2c-1a2b3c4d5e6f7a8b.jsonl";

/// The arguments of `aep timeline`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Print a session's history from a relay or a file; --dag for the cause tree",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    /// The session.
    #[arg(value_name = "SESSION")]
    pub session: String,

    /// Draw the `cause` tree.
    #[arg(long)]
    pub dag: bool,

    /// Read this JSONL file instead of the relay (`-`: standard input).
    #[arg(long, value_name = "F")]
    pub file: Option<PathBuf>,

    /// Print the events' JSON lines.
    #[arg(long, conflicts_with = "dag")]
    pub json: bool,

    #[command(flatten)]
    pub relay: RelayArgs,

    #[command(flatten)]
    pub limit: LineLimit,
}

/// The most of a relay's history read.
const MAX_HISTORY: usize = 256 << 20;

/// Runs `aep timeline`.
pub fn run(args: &Args) -> Status {
    let events = match &args.file {
        Some(path) => from_file(args, path),
        None => from_relay(args),
    };
    let events = match events {
        Ok(events) => events,
        Err(e) => {
            diag!("aep timeline: error: {e}");
            return Status::Failure;
        }
    };
    let (events, redelivered) = crate::common::order::dedupe_and_order(events);
    if redelivered > 0 {
        diag!("aep timeline: {redelivered} redelivered event(s) shown once");
    }
    if events.is_empty() {
        diag!(
            "aep timeline: session {:?} has no events here",
            args.session
        );
        return Status::Findings;
    }
    let mut out = Stdout::new();
    let colour = out.is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let lines: Vec<String> = if args.dag {
        dag::draw(&events, colour)
    } else if args.json {
        events
            .iter()
            .filter_map(|e| serde_json::to_string(e).ok())
            .collect()
    } else {
        events
            .iter()
            .map(|e| crate::common::render::line(e, colour))
            .collect()
    };
    for line in lines {
        match out.line(line.as_bytes(), b"\n") {
            Ok(()) => {}
            Err(WriteError::Closed) => return Status::Clean,
            Err(e) => {
                diag!("aep timeline: error: {e}");
                return Status::Failure;
            }
        }
    }
    match out.flush() {
        Ok(()) | Err(WriteError::Closed) => Status::Clean,
        Err(e) => {
            diag!("aep timeline: error: {e}");
            Status::Failure
        }
    }
}

/// The session's events in `path`, bad lines reported and skipped.
fn from_file(args: &Args, path: &std::path::Path) -> Result<Vec<Event>> {
    let input = input::open(path).map_err(Error::from_source)?;
    let reader = EventReader::with_max_line_bytes(input.reader, args.limit.max_line_bytes);
    let mut events = Vec::new();
    for result in reader {
        match result {
            Ok(event) if event.session.as_deref() == Some(args.session.as_str()) => {
                events.push(event)
            }
            Ok(_) => {}
            Err(e) if e.is_io() => return Err(Error::from_source(e).context(&input.name)),
            Err(e) => diag!("aep timeline: {}: {e}; skipped", input.name),
        }
    }
    Ok(events)
}

/// What the relay holds of the session.
fn from_relay(args: &Args) -> Result<Vec<Event>> {
    let relay = args.relay.url()?;
    let runtime = crate::live::runtime("timeline").context("no runtime")?;
    let token = args.relay.token();
    let held = runtime
        .block_on(aep_client::history::history(
            &relay,
            token.as_deref(),
            &args.session,
            MAX_HISTORY,
        ))
        .with_context(|| format!("cannot read the history of {:?} from {relay}", args.session))?;
    for marker in &held.exhausted {
        diag!("aep timeline: warning: {marker}: the relay no longer holds the session's earliest events");
    }
    Ok(decode_history(&args.session, &held.events))
}

/// The events of `lines` (a relay's history) in `session`.
pub(crate) fn decode_history(session: &str, lines: &[String]) -> Vec<Event> {
    let mut events = Vec::with_capacity(lines.len());
    for (n, line) in lines.iter().enumerate() {
        match Event::from_json(line) {
            Ok(event) if event.session.as_deref() == Some(session) => events.push(event),
            Ok(_) => {}
            Err(e) => diag!(
                "aep timeline: event {} of the relay's history: {e}; skipped",
                n + 1
            ),
        }
    }
    events
}
