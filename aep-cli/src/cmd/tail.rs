//! `aep tail`: a relay's events as they come, one readable line each
//! (or the raw JSON), resuming across restarts from a state file.

use std::path::PathBuf;
use std::time::Duration;

use aep::{Capture, Severity};
use aep_client::consume::{Item, Notice, Position, Subscribe};
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::Status;
use crate::common::error::{Error, Result};
use crate::common::output::{Stdout, WriteError};
use crate::diag;
use crate::live::RelayArgs;

mod state;

const LONG_ABOUT: &str = "\
Follows a relay's events over SSE (GET /stream) and prints one line per
event: the time, the session, the type, the run and a short summary of the
payload. Event text has its control characters escaped; lines are coloured
by severity when standard output is a terminal (not with NO_COLOR). With
--json each event is printed as the exact JSON line the relay sent.

The filter is an attr-match filter (AEP-0003 §6): --filter gives one as
JSON, and --type (repeatable, `prefix.*` allowed), --session, --agent and
--severity (at least this level) add members to it; a member given twice is
refused. --capture asks the relay to down-level what it sends.

The last position seen in each session is kept in a state file (default
~/.aep/tail-state.json, per relay URL; replaced atomically, 250 ms after the
last event and on exit), and a restarted tail resumes after it: the events
it missed while stopped come first, then live ones. Positions are per
session, whatever the filter: a resume with a narrower filter skips what the
old one did not show. When the relay no longer holds what was missed, a
replay-exhausted warning goes to standard error. Without a state file
(--no-resume) the tail starts live. It runs until SIGTERM or SIGINT.";

const AFTER_HELP: &str = "\
Exit status: 0 after SIGTERM or SIGINT (or when the relay ends the stream
for good), 2 for usage errors, a refused filter or token.

Examples:
  aep tail
  aep tail --type 'attention.*' --severity notice
  aep tail --session s_8f2c --json | jq .data
  aep tail --filter '{\"agent\": [\"claude-code\", \"codex\"]}' --no-resume";

/// The arguments of `aep tail`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Follow a relay's events, one line each, resuming across restarts",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Args {
    #[command(flatten)]
    pub relay: RelayArgs,

    /// An attr-match filter, a JSON object (AEP-0003 §6).
    #[arg(long, value_name = "JSON")]
    pub filter: Option<String>,

    /// Only events of this type (repeatable; `prefix.*` matches a category).
    #[arg(long = "type", value_name = "T")]
    pub types: Vec<String>,

    /// Only events of this session.
    #[arg(long, value_name = "S")]
    pub session: Option<String>,

    /// Only events of this agent.
    #[arg(long, value_name = "A")]
    pub agent: Option<String>,

    /// Only events at this severity or above.
    #[arg(long, value_name = "LEVEL", value_parser = parse_severity)]
    pub severity: Option<Severity>,

    /// The capture ceiling the relay down-levels to.
    #[arg(long, value_name = "LEVEL", value_parser = parse_capture)]
    pub capture: Option<Capture>,

    /// Print each event's JSON line as the relay sent it.
    #[arg(long)]
    pub json: bool,

    /// The state file [default: ~/.aep/tail-state.json].
    #[arg(long, value_name = "FILE", conflicts_with = "no_resume")]
    pub state: Option<PathBuf>,

    /// Start live, and keep no state.
    #[arg(long)]
    pub no_resume: bool,
}

pub(crate) fn parse_severity(text: &str) -> Result<Severity> {
    text.parse()
        .map_err(|_| Error::msg("one of debug, info, notice, warning, error, critical"))
}

pub(crate) fn parse_capture(text: &str) -> Result<Capture> {
    text.parse()
        .map_err(|_| Error::msg("one of none, metadata, redacted, full"))
}

/// How long after the last event the state file is written.
const SAVE_AFTER: Duration = Duration::from_millis(250);

/// Runs `aep tail`.
pub fn run(args: &Args) -> Status {
    let relay = match args.relay.url() {
        Ok(relay) => relay,
        Err(e) => {
            diag!("aep tail: error: {e}");
            return Status::Failure;
        }
    };
    let filter = match build_filter(args) {
        Ok(filter) => filter,
        Err(e) => {
            diag!("aep tail: error: {e}");
            return Status::Failure;
        }
    };
    let state = if args.no_resume {
        None
    } else {
        match args.state.clone().or_else(state::default_path) {
            Some(path) => Some(path),
            None => {
                diag!("aep tail: no HOME to keep ~/.aep/tail-state.json in: starting live, keeping no state (--state FILE)");
                None
            }
        }
    };
    let positions = match &state {
        Some(path) => state::load(path, &relay),
        None => Vec::new(),
    };
    let Some(runtime) = crate::live::runtime("tail") else {
        return Status::Failure;
    };
    runtime.block_on(follow(args, relay, filter, state, positions))
}

/// A `--type` value that can match an event: a dotted type (`tool.requested`,
/// a vendor's `x.acme.thing`) or a category's `prefix.*`. A bare word
/// matches nothing, so it is refused, naming what was probably meant.
fn check_type(type_: &str) -> Result<()> {
    if type_.contains('.') {
        return Ok(());
    }
    match type_.parse::<aep::Category>() {
        Ok(_) => Err(Error::msg(format_args!(
            "--type {type_}: `{type_}` is a category, not a type; --type '{type_}.*' follows \
             all of its types"
        ))),
        Err(_) => Err(Error::msg(format_args!(
            "--type {type_}: event types are dotted, such as `tool.requested`; \
             `category.*` follows a whole category"
        ))),
    }
}

/// The filter of `--filter` and the flags that add to it.
fn build_filter(args: &Args) -> Result<Option<Value>> {
    let mut members = match &args.filter {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(members)) => members,
            Ok(_) => return Err(Error::msg("--filter must be a JSON object")),
            Err(e) => return Err(Error::from_source(e).context("--filter is not JSON")),
        },
    };
    let mut add = |key: &str, value: Value| {
        if members.contains_key(key) {
            return Err(Error::msg(format_args!(
                "`{key}` is given twice (in --filter and by --{key})"
            )));
        }
        members.insert(key.to_owned(), value);
        Ok(())
    };
    if !args.types.is_empty() {
        for type_ in &args.types {
            check_type(type_)?;
        }
        add("type", Value::from(args.types.clone()))?;
    }
    if let Some(session) = &args.session {
        add("session", session.as_str().into())?;
    }
    if let Some(agent) = &args.agent {
        add("agent", agent.as_str().into())?;
    }
    if let Some(severity) = args.severity {
        add("severity", serde_json::json!({"gte": severity.as_str()}))?;
    }
    Ok((!members.is_empty()).then_some(Value::Object(members)))
}

async fn follow(
    args: &Args,
    relay: String,
    filter: Option<Value>,
    state: Option<PathBuf>,
    positions: Vec<Position>,
) -> Status {
    let mut subscribe = Subscribe::new(relay.clone())
        .token_opt(args.relay.token())
        .identity("aep-tail", format!("aep-tail/{}", std::process::id()))
        .resume(positions);
    if let Some(filter) = filter {
        subscribe = match subscribe.filter(filter) {
            Ok(subscribe) => subscribe,
            Err(e) => {
                diag!("aep tail: error: {e}");
                return Status::Failure;
            }
        };
    }
    if let Some(capture) = args.capture {
        subscribe = subscribe.capture(capture);
    }
    let mut sub = subscribe.start();
    let mut reach = crate::live::reach::Reach::new("tail", &relay);
    let token_given = args.relay.token().is_some();
    let mut out = Stdout::new();
    let colour = out.is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut stop = std::pin::pin!(crate::live::stop_signal());
    let mut save_at: Option<Instant> = None;
    let status = loop {
        let due = save_at.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            _ = &mut stop => break Status::Clean,
            _ = tokio::time::sleep_until(due), if save_at.is_some() => {
                save_at = None;
                if let Some(path) = &state {
                    state::save(path, &relay, &sub.positions());
                }
            }
            item = sub.recv() => match item {
                None => break Status::Clean,
                Some(Err(e)) => {
                    diag!("aep tail: error: {}", crate::live::reach::explain(&e, &relay, token_given));
                    break Status::Failure;
                }
                Some(Ok(Item::Event(delivered))) => {
                    let text = if args.json {
                        delivered.line
                    } else {
                        crate::common::render::line(&delivered.event, colour)
                    };
                    match out.line(text.as_bytes(), b"\n").and_then(|()| out.flush()) {
                        Ok(()) => {}
                        Err(WriteError::Closed) => break Status::Clean,
                        Err(e) => {
                            diag!("aep tail: error: {e}");
                            break Status::Failure;
                        }
                    }
                    save_at = Some(Instant::now() + SAVE_AFTER);
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
    if let Some(path) = &state {
        state::save(path, &relay, &sub.positions());
    }
    status
}

/// A notice on standard error: the warnings always, connection news too.
fn say(relay: &str, notice: Notice) {
    match notice {
        Notice::Connected { resumed } if resumed > 0 => diag!(
            "aep tail: connected to {relay}, resuming {resumed} session(s)"
        ),
        Notice::Connected { .. } => diag!("aep tail: connected to {relay}"),
        Notice::Reconnected { .. } => diag!("aep tail: reconnected to {relay}"),
        Notice::ReplayExhausted { session, earliest } => diag!(
            "aep tail: warning: replay-exhausted: the relay no longer holds session {session:?} before {}:{}; \
             what came before is missing here (a durable capture such as `aep sink` has it)",
            earliest.epoch,
            earliest.seq
        ),
        Notice::Skipped { reason, excerpt } => {
            diag!("aep tail: warning: skipped a line ({reason}): {excerpt}")
        }
        Notice::Degraded(what) => diag!("aep tail: warning: {what}"),
        Notice::Forgot(position) => diag!(
            "aep tail: warning: too many sessions: the position of {:?} is forgotten",
            position.session
        ),
        Notice::BudgetShrunk { budget } => {
            diag!("aep tail: the relay takes at most {budget} resume positions at once")
        }
        other => diag!("aep tail: {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn filter(argv: &[&str]) -> std::result::Result<Option<Value>, String> {
        let cli = Cli::try_parse_from(std::iter::once("tail").chain(argv.iter().copied()))
            .map_err(|e| e.to_string())?;
        build_filter(&cli.args).map_err(|e| e.to_string())
    }

    #[test]
    fn flags_add_to_the_filter_and_none_is_given_twice() {
        assert_eq!(filter(&[]).unwrap(), None);
        assert_eq!(
            filter(&[
                "--type",
                "tool.*",
                "--type",
                "run.started",
                "--severity",
                "notice",
                "--filter",
                r#"{"agent":"a"}"#
            ])
            .unwrap(),
            Some(
                serde_json::json!({"agent": "a", "type": ["tool.*", "run.started"], "severity": {"gte": "notice"}})
            )
        );
        assert!(filter(&["--agent", "b", "--filter", r#"{"agent":"a"}"#])
            .unwrap_err()
            .contains("given twice"));
        assert!(filter(&["--filter", "[1]"]).unwrap_err().contains("object"));
        assert!(filter(&["--severity", "loud"]).is_err());
    }

    #[test]
    fn a_type_that_can_match_nothing_is_refused_naming_what_was_meant() {
        let category = filter(&["--type", "tool"]).unwrap_err();
        assert!(category.contains("--type 'tool.*'"), "{category}");
        let word = filter(&["--type", "toolz"]).unwrap_err();
        assert!(word.contains("dotted"), "{word}");
        for fine in ["tool.requested", "tool.*", "x.acme.thing"] {
            assert!(filter(&["--type", fine]).is_ok(), "{fine}");
        }
    }
}
