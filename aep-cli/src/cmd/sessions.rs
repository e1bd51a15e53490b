//! `aep sessions`: the sessions a relay holds, whether they ended, and
//! how many requests in each wait on a person.

use std::time::SystemTime;

use super::Status;
use crate::common::output::Stdout;
use crate::diag;
use crate::live::waiting::{self, Session};
use crate::live::RelayArgs;

const LONG_ABOUT: &str = "\
Lists the sessions a relay holds: its history of every session (GET /stream
from the start, live=0; at most 200000 events, within 60 s), folded by the
state projection.

Each row gives the session, its agent, its state (`active`, or `ended` once
a session.ended was seen), how many runs it had, the age of its last event,
and how many attention requests in it wait on a person (see `aep pending`
for those). The most recently active session comes first. With --json the
sessions are printed as one JSON array of objects (session, source, agent,
state, runs, last_activity, age_seconds, pending).";

const AFTER_HELP: &str = "\
Exit status: 0 when the relay's history was read, 2 for usage errors and a
relay that cannot be read.

Examples:
  aep sessions
  aep sessions --json | jq -r '.[] | select(.pending > 0) | .session'
  AEP_RELAY=http://127.0.0.1:8787 aep sessions";

/// The arguments of `aep sessions`.
#[derive(Debug, clap::Args)]
#[command(
    about = "List a relay's sessions: state, runs, last activity, requests waiting",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    #[command(flatten)]
    pub relay: RelayArgs,

    /// Print one JSON array instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `aep sessions`.
pub fn run(args: &Args) -> Status {
    let Some((_, events)) = waiting::read_relay(&args.relay, "sessions") else {
        return Status::Failure;
    };
    let sessions = waiting::sessions(&events);
    let text = render(&sessions, args.json, SystemTime::now());
    let mut out = Stdout::new();
    match out.line(text.as_bytes(), b"").and_then(|()| out.flush()) {
        Ok(()) => Status::Clean,
        Err(e) => {
            diag!("aep sessions: error: {e}");
            Status::Failure
        }
    }
}

/// The sessions as a table (or JSON), ending with a newline.
fn render(sessions: &[Session], json: bool, now: SystemTime) -> String {
    if json {
        let rows: Vec<_> = sessions.iter().map(|s| s.to_json(now)).collect();
        return format!("{}\n", serde_json::Value::Array(rows));
    }
    if sessions.is_empty() {
        return "no sessions\n".to_owned();
    }
    let mut rows = vec![["SESSION", "AGENT", "STATE", "RUNS", "LAST", "PENDING"]
        .map(str::to_owned)
        .to_vec()];
    for s in sessions {
        rows.push(vec![
            waiting::shorten(&s.session, 40),
            waiting::shorten(&s.agent, 30),
            s.state().to_owned(),
            s.runs.to_string(),
            s.last
                .as_deref()
                .map_or_else(|| "-".to_owned(), |t| waiting::age(t, now)),
            s.pending.to_string(),
        ]);
    }
    waiting::table(&rows)
}
