//! `aep replay`: a capture re-emitted onto a relay as new sessions, at its
//! recorded pace (or faster), so a consumer can be exercised without the
//! agent that made it.

use std::path::PathBuf;
use std::time::Duration;

use aep::reader::EventReader;
use aep::Event;
use aep_client::http::{BatchAnswer, BatchPoster};
use aep_client::Backoff;
use tokio::time::Instant;

use super::Status;
use crate::common::error::{Error, Result};
use crate::common::input::{self, LineLimit};
use crate::common::output::{Stdout, WriteError};
use crate::diag;
use crate::live::RelayArgs;

mod plan;

use plan::{Pace, Plan};

const LONG_ABOUT: &str = "\
Re-emits a capture (an `aep sink` file, an adapter's log) onto a relay as new
sessions. A re-emitter cannot continue a foreign emitter's (epoch, seq)
counter (AEP-0001 §7), so each recorded (source, session) becomes a session
`replay-<ulid>`: redeliveries collapse on (source, id) first, then every
event gets a fresh id, one epoch and seq from 0 without gaps, in recorded
(epoch, seq) order; `cause` and `subject` are rewritten to the new ids, and
the extension attributes aepreplayof, aepreplayid and aepreplaytime carry the
recorded session, id and time. Commands are skipped (a replay must never
drive a live target), and so are agent-scoped events. Sessions interleave by
recorded time. `time` is when each event leaves.

--speed N replays N times faster than recorded; --max-gap MS caps the pause
between two events. --dry-run writes the replayed JSONL to standard output
(times as planned from now) instead of posting it. The replayed stream passes
`aep validate` when the capture does.";

const AFTER_HELP: &str = "\
Exit status:
  0  every event was emitted (or written, with --dry-run)
  1  aborted: the relay refused an event or the token, could not be reached,
     or SIGINT/SIGTERM came first
  2  a usage error or a capture that cannot be read

Examples:
  aep replay captures/s_8f2c-1a2b3c4d5e6f7a8b.jsonl --speed 10 --max-gap 2000
  aep replay capture.jsonl --dry-run | aep validate -";

/// The arguments of `aep replay`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Re-emit a capture onto a relay as new sessions",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    /// The capture (JSONL; `-` reads standard input).
    #[arg(value_name = "CAPTURE")]
    pub capture: PathBuf,

    /// How many times faster than recorded.
    #[arg(long, default_value_t = 1.0, value_name = "N", value_parser = parse_speed)]
    pub speed: f64,

    /// The longest pause between two events, in milliseconds.
    #[arg(long, value_name = "MS")]
    pub max_gap: Option<u64>,

    /// Write the replayed JSONL to standard output instead of posting it.
    #[arg(long)]
    pub dry_run: bool,

    #[command(flatten)]
    pub relay: RelayArgs,

    #[command(flatten)]
    pub limit: LineLimit,
}

fn parse_speed(text: &str) -> Result<f64> {
    match text.parse::<f64>() {
        Ok(speed) if speed.is_finite() && speed > 0.0 => Ok(speed),
        _ => Err(Error::msg("a number above 0, such as 1, 10 or 0.5")),
    }
}

/// Runs `aep replay`.
pub fn run(args: &Args) -> Status {
    let events = match read(args) {
        Ok(events) => events,
        Err(e) => {
            diag!("aep replay: error: {e}");
            return Status::Failure;
        }
    };
    let start = aep_client::session::now_ms();
    let pace = Pace {
        speed: args.speed,
        max_gap: args.max_gap,
    };
    let plan = plan::plan(events, pace, start);
    if plan.commands > 0 || plan.sessionless > 0 || plan.collapsed > 0 {
        diag!(
            "aep replay: {} command(s) and {} agent-scoped event(s) skipped, {} redelivery(ies) collapsed",
            plan.commands,
            plan.sessionless,
            plan.collapsed
        );
    }
    for (source, session, new) in &plan.sessions {
        diag!("aep replay: {session:?} of {source:?} becomes {new}");
    }
    if args.dry_run {
        return dry_run(plan, start);
    }
    let relay = match args.relay.url() {
        Ok(relay) => relay,
        Err(e) => {
            diag!("aep replay: error: {e}");
            return Status::Failure;
        }
    };
    let poster = match BatchPoster::new(&relay, args.relay.token(), Duration::from_secs(30)) {
        Ok(poster) => poster,
        Err(e) => {
            diag!("aep replay: error: {e}");
            return Status::Failure;
        }
    };
    let Some(runtime) = crate::live::runtime("replay") else {
        return Status::Failure;
    };
    let total = plan.events.len();
    match runtime.block_on(emit(&poster, plan)) {
        Ok(()) => {
            diag!("aep replay: {total} event(s) emitted to {relay}");
            Status::Clean
        }
        Err(why) => {
            diag!("aep replay: aborted, posting to {relay}: {why}");
            Status::Findings
        }
    }
}

fn read(args: &Args) -> Result<Vec<Event>> {
    let input = input::open(&args.capture).map_err(Error::from_source)?;
    let reader = EventReader::with_max_line_bytes(input.reader, args.limit.max_line_bytes);
    let mut events = Vec::new();
    for result in reader {
        match result {
            Ok(event) => events.push(event),
            Err(e) if e.is_io() => return Err(Error::from_source(e).context(&input.name)),
            Err(e) => diag!("aep replay: {}: {e}; skipped", input.name),
        }
    }
    Ok(events)
}

fn dry_run(plan: Plan, start: u64) -> Status {
    let mut out = Stdout::new();
    for mut planned in plan.events {
        planned.event.time = aep::control::rfc3339(start + planned.at);
        let line = match serde_json::to_vec(&planned.event) {
            Ok(line) => line,
            Err(e) => {
                diag!("aep replay: error: {e}");
                return Status::Failure;
            }
        };
        match out.line(&line, b"\n") {
            Ok(()) => {}
            Err(WriteError::Closed) => return Status::Clean,
            Err(e) => {
                diag!("aep replay: error: {e}");
                return Status::Failure;
            }
        }
    }
    match out.flush() {
        Ok(()) | Err(WriteError::Closed) => Status::Clean,
        Err(e) => {
            diag!("aep replay: error: {e}");
            Status::Failure
        }
    }
}

/// Events due within this much of each other leave in one batch.
const GATHER_MS: u64 = 50;

/// Posts the plan at its pace; stops at the first refusal or a signal.
async fn emit(poster: &BatchPoster, plan: Plan) -> Result<()> {
    let start = Instant::now();
    let mut stop = std::pin::pin!(crate::live::stop_signal());
    let mut events = plan.events.into_iter().peekable();
    while let Some(first) = events.next() {
        let due = start + Duration::from_millis(first.at);
        tokio::select! {
            _ = &mut stop => return Err(Error::msg("stopped by a signal")),
            _ = tokio::time::sleep_until(due) => {}
        }
        let mut batch = vec![first.event];
        while let Some(next) = events.next_if(|p| p.at <= first.at + GATHER_MS && batch.len() < 256)
        {
            batch.push(next.event);
        }
        let now = aep::control::rfc3339(aep_client::session::now_ms());
        let mut lines = Vec::with_capacity(batch.len());
        for mut event in batch {
            event.time = now.clone();
            lines.push(serde_json::to_string(&event)?);
        }
        post(poster, &lines).await?;
    }
    Ok(())
}

/// One batch, retried while the relay cannot be reached.
async fn post(poster: &BatchPoster, lines: &[String]) -> Result<()> {
    let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(3));
    let mut last = String::new();
    for _ in 0..TRIES {
        match poster.post(lines).await {
            BatchAnswer::Accepted => return Ok(()),
            BatchAnswer::Retry(why) => {
                last = why;
                tokio::time::sleep(backoff.next_wait()).await;
            }
            BatchAnswer::BadLine {
                index,
                code,
                detail,
            } => {
                let line = index.and_then(|i| lines.get(i)).map_or("", String::as_str);
                return Err(Error::msg(format!(
                    "the relay refused an event ({code}: {detail}): {}",
                    crate::common::terminal::escape(
                        line,
                        crate::common::terminal::Newlines::Escape
                    )
                )));
            }
            BatchAnswer::TooLarge { code, detail } => {
                return Err(Error::msg(format!(
                    "the relay refused a batch as too large ({code}: {detail})"
                )))
            }
            BatchAnswer::Refused {
                status,
                code,
                detail,
            } => {
                return Err(Error::msg(format!(
                    "the relay refused the request: HTTP {status} {code} {detail}"
                )))
            }
            other => return Err(Error::msg(format!("unexpected answer: {other:?}"))),
        }
    }
    Err(Error::msg(format!(
        "the relay cannot be reached ({last}), {TRIES} tries; `aep doctor` checks the address and the token"
    )))
}

/// How many times one batch is tried while the relay cannot be reached.
const TRIES: u32 = 6;
