//! `aep sink`: a durable capture of everything a relay carries, one JSONL
//! file per `(source, session)`, that survives being killed: batched
//! writes synced before the resume position is committed, a torn last line
//! cut on restart, the file tails deciding where to resume, rotation.

use std::path::PathBuf;
use std::time::Duration;

use aep_client::consume::{Item, Notice, Subscribe};
use tokio::time::Instant;

use super::Status;
use crate::diag;
use crate::live::RelayArgs;

mod recover;
mod store;

use store::Store;

const LONG_ABOUT: &str = "\
Captures a relay's events durably into DIR: one JSONL file per session,
keyed by (source, session), each line an event as the relay sent it.

File names are safe whatever the ids hold (they are untrusted producer
strings, AEP-0003 §9.6): `<prefix>-<hash>.jsonl`, the prefix the session id
with every character but ASCII letters, digits, `_` and `-` written as `_`
(at most 32), the hash the first 16 hex digits of the SHA-256 of the RFC
8785 form of [source, session]. Each session's source and id are in its
events and in DIR/.sink-state.json.

Writes are batched (500 ms or 64 events, whichever comes first); each batch
is synced to disk before the positions are committed to DIR/.sink-state.json
(replaced atomically), so the state is never ahead of the files. On start,
a torn last line (a write cut by a crash) is cut, and the files, not the
state file, decide what is new: the sink asks the relay for everything it
holds (from=all), and writes only events past each file's last position
(and commands not yet in the files), so a restart leaves no duplicate ids
and no gaps, and sessions that began while the sink was down are captured
too. Agent-scoped events (agent.*, no session) are live liveness signals and
are not kept.

With --rotate-mb N, a file past N MiB is renamed to
`<name>.<unix-ts>.jsonl` and a new one started. SIGTERM or SIGINT writes
what is queued, syncs, commits and exits 0. The files pass `aep validate`.";

const AFTER_HELP: &str = "\
Exit status: 0 after SIGTERM or SIGINT, 2 for usage errors, a directory that
cannot be written, a refused token.

Examples:
  aep sink --out captures
  AEP_TOKEN=$(cat token) aep sink --out /var/lib/aep --rotate-mb 64
  aep timeline s_8f2c --file captures/s_8f2c-1a2b3c4d5e6f7a8b.jsonl";

/// The arguments of `aep sink`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Capture a relay's events durably, one JSONL file per session",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    #[command(flatten)]
    pub relay: RelayArgs,

    /// The directory to write to (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,

    /// Rotate a file once it reaches N MiB.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub rotate_mb: Option<u64>,
}

/// A batch is written this long after its first event at the latest.
const BATCH_WAIT: Duration = Duration::from_millis(500);
/// A batch is written once it holds this many events.
const BATCH_EVENTS: usize = 64;

/// Runs `aep sink`.
pub fn run(args: &Args) -> Status {
    let relay = match args.relay.url() {
        Ok(relay) => relay,
        Err(e) => {
            diag!("aep sink: error: {e}");
            return Status::Failure;
        }
    };
    let store = match Store::open(&args.out, &relay, args.rotate_mb.map(|mb| mb << 20)) {
        Ok(store) => store,
        Err(e) => {
            diag!("aep sink: error: {e}");
            return Status::Failure;
        }
    };
    store.check_state();
    let Some(runtime) = crate::live::runtime("sink") else {
        return Status::Failure;
    };
    runtime.block_on(capture(args, relay, store))
}

async fn capture(args: &Args, relay: String, mut store: Store) -> Status {
    let mut sub = Subscribe::new(relay.clone())
        .token_opt(args.relay.token())
        .identity("aep-sink", format!("aep-sink/{}", std::process::id()))
        .replay_all()
        .start();
    let mut reach = crate::live::reach::Reach::new("sink", &relay);
    let token_given = args.relay.token().is_some();
    let mut stop = std::pin::pin!(crate::live::stop_signal());
    let mut queued = 0usize;
    let mut written = 0u64;
    let mut sessionless = 0u64;
    let mut due: Option<Instant> = None;
    let status = loop {
        let deadline = due.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            _ = &mut stop => break Status::Clean,
            _ = tokio::time::sleep_until(deadline), if due.is_some() => {
                due = None;
                if let Err(e) = store.flush() {
                    diag!("aep sink: error: {e}");
                    return Status::Failure;
                }
                written += queued as u64;
                queued = 0;
            }
            item = sub.recv() => match item {
                None => break Status::Clean,
                Some(Err(e)) => {
                    diag!("aep sink: error: {}", crate::live::reach::explain(&e, &relay, token_given));
                    break Status::Failure;
                }
                Some(Ok(Item::Event(delivered))) => {
                    if delivered.event.session.is_none() {
                        sessionless += 1;
                        continue;
                    }
                    if !store.is_new(&delivered.event) {
                        continue;
                    }
                    store.push(&delivered.event, &delivered.line);
                    queued += 1;
                    due.get_or_insert_with(|| Instant::now() + BATCH_WAIT);
                    if queued >= BATCH_EVENTS {
                        due = None;
                        if let Err(e) = store.flush() {
                            diag!("aep sink: error: {e}");
                            return Status::Failure;
                        }
                        written += queued as u64;
                        queued = 0;
                    }
                }
                Some(Ok(Item::Notice(Notice::Disconnected(why)))) => {
                    if reach.lost(&why.to_string()) {
                        break Status::Failure;
                    }
                }
                Some(Ok(Item::Notice(notice))) => {
                    if matches!(notice, Notice::Connected { .. } | Notice::Reconnected { .. }) {
                        reach.connected();
                    }
                    say(&relay, notice);
                }
            }
        }
    };
    if let Err(e) = store.flush() {
        diag!("aep sink: error: {e}");
        return Status::Failure;
    }
    written += queued as u64;
    diag!(
        "aep sink: {written} event(s) written to {}{}",
        args.out.display(),
        if sessionless > 0 {
            format!(", {sessionless} agent-scoped event(s) not kept")
        } else {
            String::new()
        }
    );
    status
}

fn say(relay: &str, notice: Notice) {
    match notice {
        Notice::Connected { .. } => diag!("aep sink: connected to {relay}"),
        Notice::Reconnected { .. } => diag!("aep sink: reconnected to {relay}"),
        Notice::ReplayExhausted { session, earliest } => diag!(
            "aep sink: warning: replay-exhausted: the relay no longer holds session {session:?} before {}:{}: \
             events it evicted while the sink was away are missing from the capture",
            earliest.epoch,
            earliest.seq
        ),
        Notice::Degraded(what) => diag!("aep sink: warning: {what}"),
        Notice::Skipped { reason, excerpt } => {
            diag!("aep sink: warning: skipped a line ({reason}): {excerpt}")
        }
        Notice::Forgot(position) => diag!(
            "aep sink: warning: too many sessions: the resume position of {:?} is forgotten",
            position.session
        ),
        other => diag!("aep sink: {other:?}"),
    }
}
