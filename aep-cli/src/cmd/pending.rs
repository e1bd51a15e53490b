//! `aep pending`: the attention requests a relay holds that still wait on
//! a person, each with the `aep respond` line that answers it.

use std::time::SystemTime;

use super::Status;
use crate::common::output::Stdout;
use crate::diag;
use crate::live::waiting::{self, Via, Waiting};
use crate::live::RelayArgs;

const LONG_ABOUT: &str = "\
Lists the attention requests that wait on a person: the relay's history of
every session it holds (GET /stream from the start, live=0; at most 200000
events, within 60 s), folded by the state projection, keeps the requests
neither answered, resolved nor timed out.

Each row gives the session, the request id, its kind (permission, form,
input, ...), its prompt (shortened to fit), its age, and the `aep respond`
line that answers it: `--option` with the first of its options, `--values`
naming every field of a form (with a value of each field's type to edit),
or `--text`. With --json the requests are printed as one JSON array of
objects (session, source, agent, request, kind, prompt, since, age_seconds,
fields, options, respond), oldest first.

When nothing waits, `nothing waits on a person` is printed (with --json,
`[]`).";

const AFTER_HELP: &str = "\
Exit status: 0 when the relay's history was read (whether or not something
waits), 2 for usage errors and a relay that cannot be read.

Examples:
  aep pending
  aep pending --session s_8f2c
  aep pending --json | jq -r '.[0].respond'
  AEP_RELAY=http://127.0.0.1:8787 aep pending";

/// The widest prompt a table row shows.
const PROMPT_WIDTH: usize = 40;

/// The arguments of `aep pending`.
#[derive(Debug, clap::Args)]
#[command(
    about = "List the attention requests waiting on a person, with the line that answers each",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    #[command(flatten)]
    pub relay: RelayArgs,

    /// Only the requests of this session.
    #[arg(long, value_name = "S")]
    pub session: Option<String>,

    /// Print one JSON array instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `aep pending`.
pub fn run(args: &Args) -> Status {
    let Some((relay, events)) = waiting::read_relay(&args.relay, "pending") else {
        return Status::Failure;
    };
    let mut requests = waiting::waiting(&events);
    if let Some(session) = &args.session {
        requests.retain(|w| &w.session == session);
    }
    let via = Via::Relay(relay);
    let text = render(&requests, &via, args.json, SystemTime::now());
    let mut out = Stdout::new();
    match out.line(text.as_bytes(), b"").and_then(|()| out.flush()) {
        Ok(()) => Status::Clean,
        Err(e) => {
            diag!("aep pending: error: {e}");
            Status::Failure
        }
    }
}

/// The requests as a table (or JSON), ending with a newline.
pub fn render(requests: &[Waiting], via: &Via, json: bool, now: SystemTime) -> String {
    if json {
        let rows: Vec<_> = requests.iter().map(|w| w.to_json(via, now)).collect();
        return format!("{}\n", serde_json::Value::Array(rows));
    }
    if requests.is_empty() {
        return "nothing waits on a person\n".to_owned();
    }
    let mut rows = vec![
        ["SESSION", "REQUEST", "KIND", "PROMPT", "AGE", "ANSWER WITH"]
            .map(str::to_owned)
            .to_vec(),
    ];
    for w in requests {
        rows.push(vec![
            waiting::shorten(&w.session, 40),
            waiting::shorten(&w.id, 40),
            waiting::shorten(&w.kind, 20),
            waiting::shorten(&w.prompt, PROMPT_WIDTH),
            waiting::age(&w.time, now),
            w.respond_line(via),
        ]);
    }
    waiting::table(&rows)
}
